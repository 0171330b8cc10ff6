// SPDX-License-Identifier: MIT
/*
 * Entry of the bare-metal image, loaded as a raw binary at its link address: the boot loader
 * (QEMU's, or U-Boot's booti on a board) enters at EL2 or EL1 with the MMU off and x0 = the
 * device tree's address. At EL2 we drop to EL1 (AArch64, interrupts masked); then the stack,
 * BSS, FP/SIMD (compiled C may use the FP registers anywhere, so before any C), the vectors,
 * and pccx__bm_main(dtb, entry EL). The MMU stays off: every access is then Device-nGnRnE, which
 * keeps DMA coherent without cache maintenance and is why the image is built -mstrict-align.
 */
	.section .text.boot, "ax"
	.global _start
_start:
	mov	x19, x0				// the device tree, kept across the EL change
	mrs	x20, CurrentEL
	lsr	x20, x20, #2
	and	x20, x20, #3
	cmp	x20, #2
	b.eq	from_el2
	cmp	x20, #1
	b.eq	el1_entry
	b	park				// EL3 or EL0: nothing to report through yet

from_el2:
	mov	x1, #(1 << 31)			// HCR_EL2.RW: EL1 is AArch64, no traps to EL2
	msr	hcr_el2, x1
	mov	x1, #3				// CNTHCTL_EL2: EL1 may read the counter and timer
	msr	cnthctl_el2, x1
	msr	cntvoff_el2, xzr
	mov	x1, #0x33ff			// CPTR_EL2: no FP/SIMD trap to EL2 (TFP = 0)
	msr	cptr_el2, x1
	ldr	x1, =0x30d00800			// SCTLR_EL1: RES1 bits, MMU and caches off
	msr	sctlr_el1, x1
	mov	x1, #0x3c5			// SPSR: EL1h, D A I F masked
	msr	spsr_el2, x1
	adr	x1, el1_entry
	msr	elr_el2, x1
	eret

el1_entry:
	ldr	x1, =__stack_top
	mov	sp, x1
	ldr	x1, =__bss_start
	ldr	x2, =__bss_end
1:	cmp	x1, x2
	b.hs	2f
	str	xzr, [x1], #8
	b	1b
2:	mov	x1, #(3 << 20)			// CPACR_EL1.FPEN: FP/SIMD at EL1 and EL0 untrapped
	msr	cpacr_el1, x1
	isb
	ldr	x1, =pccx__bm_vectors
	msr	vbar_el1, x1
	isb
	mov	x0, x19
	mov	x1, x20
	bl	pccx__bm_main
park:
	wfe
	b	park
