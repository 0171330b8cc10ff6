// SPDX-License-Identifier: MIT
/*
 * Exceptions: the vectors (vectors.S) save the registers and call here. An exception is a bug
 * or a bad access (an MMIO address with no device behind it: a synchronous external abort),
 * so it is reported with what locates it and the image stops with PCCX_BM_EXIT_TRAP. The one
 * expected exception is the semihosting HLT taken as undefined when QEMU runs without
 * -semihosting: the exit then goes on through PSCI.
 */
#include <stdio.h>

#include "board.h"
#include "heap.h"

struct trap_frame {
	uint64_t x[31];
	uint64_t elr, spsr, esr;
};

void pccx__bm_trap(struct trap_frame *f, uint64_t kind);

static const char *const kinds[16] = {
	"sync (SP_EL0)", "IRQ (SP_EL0)", "FIQ (SP_EL0)", "SError (SP_EL0)",
	"sync", "IRQ", "FIQ", "SError",
	"sync from EL0", "IRQ from EL0", "FIQ from EL0", "SError from EL0",
	"sync from AArch32", "IRQ from AArch32", "FIQ from AArch32", "SError from AArch32",
};

static const char *ec_name(unsigned ec)
{
	switch (ec) {
	case 0x00: return "unknown/undefined instruction";
	case 0x07: return "FP/SIMD access trapped";
	case 0x15: return "SVC";
	case 0x16: return "HVC";
	case 0x17: return "SMC";
	case 0x20: case 0x21: return "instruction abort";
	case 0x22: return "PC alignment fault";
	case 0x24: case 0x25: return "data abort";
	case 0x26: return "SP alignment fault";
	case 0x2f: return "SError";
	case 0x3c: return "BRK";
	}
	return "other";
}

void pccx__bm_trap(struct trap_frame *f, uint64_t kind)
{
	static int depth;
	uint64_t far;
	unsigned ec = (unsigned)(f->esr >> 26) & 0x3f;

	if (depth++)
		pccx__bm_exit_psci();       /* a fault while reporting one: stop at once */
	if (f->elr == (uint64_t)(uintptr_t)pccx__bm_semihost_insn && ec == 0x00)
		pccx__bm_exit_psci();       /* no semihosting: the status is on the console */
	__asm__ volatile("mrs %0, far_el1" : "=r"(far));
	printf("pccx-fw: exception: %s, %s (ESR 0x%llx) at ELR 0x%llx, FAR 0x%llx, LR 0x%llx\n",
	       kinds[kind & 15], ec_name(ec), (unsigned long long)f->esr,
	       (unsigned long long)f->elr, (unsigned long long)far, (unsigned long long)f->x[30]);
	pccx__bm_exit(PCCX_BM_EXIT_TRAP);
}

void pccx__bm_heap_corrupt(void *p)
{
	printf("pccx-fw: heap: free or realloc of %p, which the heap did not hand out\n", p);
	pccx__bm_exit(PCCX_BM_EXIT_TRAP);
}

void __stack_chk_fail(void);
uintptr_t __stack_chk_guard = 0x5a17c0de5a17c0deull;   /* libfdt.a is built with the protector */

void __stack_chk_fail(void)
{
	printf("pccx-fw: stack smashing detected\n");
	pccx__bm_exit(PCCX_BM_EXIT_TRAP);
}
