// SPDX-License-Identifier: MIT
/*
 * EL1 exception vectors: every entry saves the registers and calls pccx__bm_trap(frame, kind),
 * which reports the exception (kind, ESR, ELR, FAR) on the console and stops the image with a
 * failure status. The image runs with interrupts masked and polls, so no entry returns,
 * except the one exception that is part of the design: the semihosting HLT taken as
 * undefined when QEMU runs without -semihosting, which pccx__bm_trap turns into a PSCI power-off.
 */
	.macro	entry kind
	.balign	0x80
	sub	sp, sp, #(34 * 8)
	stp	x0, x1, [sp, #0]
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	stp	x6, x7, [sp, #48]
	stp	x8, x9, [sp, #64]
	stp	x10, x11, [sp, #80]
	stp	x12, x13, [sp, #96]
	stp	x14, x15, [sp, #112]
	mov	x0, #\kind
	b	save_rest
	.endm

	.section .text.vectors, "ax"
	.balign	0x800
	.global	pccx__bm_vectors
pccx__bm_vectors:
	entry	0		// current EL, SP_EL0: sync
	entry	1		// irq
	entry	2		// fiq
	entry	3		// serror
	entry	4		// current EL, SP_ELx: sync
	entry	5
	entry	6
	entry	7
	entry	8		// lower EL, AArch64
	entry	9
	entry	10
	entry	11
	entry	12		// lower EL, AArch32
	entry	13
	entry	14
	entry	15

save_rest:
	stp	x16, x17, [sp, #128]
	stp	x18, x19, [sp, #144]
	stp	x20, x21, [sp, #160]
	stp	x22, x23, [sp, #176]
	stp	x24, x25, [sp, #192]
	stp	x26, x27, [sp, #208]
	stp	x28, x29, [sp, #224]
	mrs	x1, elr_el1
	stp	x30, x1, [sp, #240]
	mrs	x1, spsr_el1
	mrs	x2, esr_el1
	stp	x1, x2, [sp, #256]
	mov	x1, x0
	mov	x0, sp
	bl	pccx__bm_trap
1:	wfe
	b	1b
