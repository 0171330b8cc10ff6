// SPDX-License-Identifier: MIT
/* Board time: the generic timer's virtual counter, readable at EL1 (start.S allows it at EL2). */
#include "board.h"

uint64_t pccx__bm_now_ns(void)
{
	uint64_t cnt, frq;

	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(cnt));
	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(frq));
	if (!frq)
		return 0;
	return cnt / frq * 1000000000ull + cnt % frq * 1000000000ull / frq;
}

uint64_t pccx__bm_clock_ns(void *clk)
{
	(void)clk;
	return pccx__bm_now_ns();
}
