// SPDX-License-Identifier: MIT
/*
 * The firmware's calls out of EL1: semihosting (the HLT #0xf000 of the Arm semihosting spec;
 * undefined when QEMU runs without -semihosting: the trap handler knows this instruction's
 * address and falls back to PSCI) and PSCI through HVC or SMC.
 */
	.text
	.global	pccx__bm_semihost
	.global	pccx__bm_semihost_insn
	.type	pccx__bm_semihost, %function
pccx__bm_semihost:			// x0 = operation, x1 = parameter block
pccx__bm_semihost_insn:
	hlt	#0xf000
	ret

	.global	pccx__bm_psci_hvc
	.type	pccx__bm_psci_hvc, %function
pccx__bm_psci_hvc:			// x0 = function id
	hvc	#0
	ret

	.global	pccx__bm_psci_smc
	.type	pccx__bm_psci_smc, %function
pccx__bm_psci_smc:
	smc	#0
	ret
