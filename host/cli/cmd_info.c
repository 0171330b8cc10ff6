// SPDX-License-Identifier: MIT
/* pccx info: what a device reports (pccx_device_info). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pccx/pccx.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pccx info [--backend sim|kernel] [--path /dev/pccx] [--dtb F]\n\n"
		"Opens the device (the in-process simulator by default; --backend kernel opens\n"
		"/dev/pccx or --path) and prints its ID, features, L2 size, DMA address width,\n"
		"clocks and DDR peak (modelled on sim, the KV260's nominal figure on kernel).\n");
}

/* FEATURES register bits (docs/registers.md). */
static const char *const feature_names[] = {
	"STATUS_REGS", "ERROR_REG", "IRQ", "SOFT_RESET", "RETIRED", "CVO_EXT", "WSTREAM4",
	"WIDE_DMA", "PERF",
};

int pccx_cmd_info(int argc, char **argv)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_device_info info;
	pccx_device *dev = NULL;
	pccx_diag d = { 0 };
	unsigned i;
	int a, rc;

	if (pccx_cli_wants_help(argc, argv)) {
		usage(stdout);
		return 0;
	}
	for (a = 1; a < argc; a++) {
		const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;

		if (!v) {
			fprintf(stderr, "pccx info: option '%s' needs a value (or is unknown)\n", o);
			return 2;
		}
		a++;
		if (!strcmp(o, "--backend")) {
			dopt.backend = v;
		} else if (!strcmp(o, "--path")) {
			dopt.path = v;
		} else if (!strcmp(o, "--dtb")) {
			dopt.dtb = v;
		} else {
			fprintf(stderr, "pccx info: unknown option: %s\n", o);
			usage(stderr);
			return 2;
		}
	}
	rc = pccx_device_open(&dopt, &dev, &d);
	if (rc)
		return pccx_cli_fail(rc, &d);
	rc = pccx_device_info(dev, &info);
	pccx_device_close(dev);
	if (rc)
		return pccx_cli_fail(rc, NULL);
	printf("backend        %s%s%s\n", info.backend,
	       !strcmp(info.backend, "kernel") ? " " : "",
	       !strcmp(info.backend, "kernel") ? (dopt.path ? dopt.path : "/dev/pccx") : "");
	printf("id             0x%08" PRIx32 " (v%u.%u, build %u)\n", info.hw_version,
	       info.hw_version >> 24, (info.hw_version >> 16) & 0xff, info.hw_version & 0xffff);
	printf("features       0x%08" PRIx32, info.features);
	for (i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++)
		if (info.features & (1u << i))
			printf(" %s", feature_names[i]);
	printf("\n");
	printf("l2 words       %" PRIu32 " (%" PRIu32 " KiB)\n", info.l2_words,
	       info.l2_words / 64);
	printf("dma addr bits  %" PRIu32 "\n", info.dma_addr_bits);
	printf("core clock     %.1f MHz\n", (double)info.core_hz / 1e6);
	printf("axi clock      %.1f MHz\n", (double)info.axi_hz / 1e6);
	printf("ddr peak       %.1f GB/s%s\n", (double)info.ddr_bytes_per_s / 1e9,
	       !strcmp(info.backend, "kernel") ? " (nominal)" : " (modelled)");
	return 0;
}
