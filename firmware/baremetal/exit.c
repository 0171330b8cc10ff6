// SPDX-License-Identifier: MIT
/*
 * Ending the image: semihosting SYS_EXIT when asked for (QEMU then exits with our status),
 * else PSCI SYSTEM_OFF through the device tree's conduit (QEMU exits 0; the status is on the
 * console). If neither works the CPU parks.
 */
#include <stdio.h>

#include "board.h"

#define SEMIHOST_SYS_EXIT        0x18
#define ADP_STOPPED_APP_EXIT     0x20026
#define PSCI_SYSTEM_OFF          0x84000008u

static bool use_semihosting;
static int psci_conduit = PCCX_BM_PSCI_HVC;      /* QEMU virt's without EL2 */

void pccx__bm_exit_config(bool semihosting, int psci)
{
	use_semihosting = semihosting;
	if (psci != PCCX_BM_PSCI_NONE)
		psci_conduit = psci;
}

void pccx__bm_exit_psci(void)
{
	if (psci_conduit == PCCX_BM_PSCI_SMC)
		pccx__bm_psci_smc(PSCI_SYSTEM_OFF);
	else
		pccx__bm_psci_hvc(PSCI_SYSTEM_OFF);
	for (;;)
		__asm__ volatile("wfe");
}

void pccx__bm_exit(int status)
{
	printf("pccx-fw: exit status %d\n", status);
	if (use_semihosting) {
		uint64_t block[2] = { ADP_STOPPED_APP_EXIT, (uint64_t)(unsigned)status };

		pccx__bm_semihost(SEMIHOST_SYS_EXIT, block);
	}
	pccx__bm_exit_psci();
}
