// SPDX-License-Identifier: MIT
/* pccx info: what a device reports (pccx_device_info). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pccx/pccx.h"
#include "kernel_dev.h"
#include "pccx_regs.h"

#define A(f) PCCX_AT(struct pccx_device_opts, f, const char *)
static const struct pccx_opt info_opts[] = {
	PCCX_OPT("backend", 0, PCCX_OPT_STR, A(backend), "NAME",
		 "sim (default), kernel, serial or usb"),
	PCCX_OPT("path", 0, PCCX_OPT_STR, A(path), "WHERE",
		 "kernel: the device node; serial: a tty or a Unix socket; usb:\nVID:PID"),
	PCCX_OPT("dtb", 0, PCCX_OPT_PATH, A(dtb), "FILE", "sim: device parameters"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd info_cmd = {
	.name = "info",
	.usage = "[--backend sim|kernel|serial|usb] [--path WHERE] [--dtb F]",
	.about = "Opens the device (the in-process simulator by default; --backend kernel opens\n"
		 PCCX_KERNEL_DEV_PATH " or --path; serial and usb a board over a link) and prints "
		 "its ID,\nfeatures, L2 size, DMA address width, clocks and DDR peak (modelled on "
		 "sim, the\nKV260's nominal figure otherwise).\n",
	.opts = info_opts,
};

#define FEATURE(name) { PCCX_FEAT_##name, #name }
static const struct {
	uint32_t bit;
	const char *name;
} features[] = {
	FEATURE(STATUS_REGS), FEATURE(ERROR_REG), FEATURE(IRQ), FEATURE(SOFT_RESET),
	FEATURE(RETIRED), FEATURE(CVO_EXT), FEATURE(WSTREAM4), FEATURE(WIDE_DMA), FEATURE(PERF),
	FEATURE(ROWMASK), FEATURE(SMUL), FEATURE(COLSKIP), FEATURE(RACC),
};
#undef FEATURE

static void print_info(const struct pccx_device_info *info, const char *path)
{
	bool kernel = !strcmp(info->backend, "kernel"), sim = !strcmp(info->backend, "sim");
	unsigned i;

	printf("backend        %s%s%s\n", info->backend, sim ? "" : " ",
	       sim ? "" : path ? path : kernel ? PCCX_KERNEL_DEV_PATH : "(default)");
	printf("id             0x%08" PRIx32 " (v%u.%u, build %u)\n", info->hw_version,
	       info->hw_version >> 24, (info->hw_version >> 16) & 0xff, info->hw_version & 0xffff);
	printf("features       0x%08" PRIx32, info->features);
	for (i = 0; i < sizeof(features) / sizeof(features[0]); i++)
		if (info->features & features[i].bit)
			printf(" %s", features[i].name);
	printf("\n");
	printf("l2 words       %" PRIu32 " (%" PRIu32 " KiB)\n", info->l2_words,
	       info->l2_words / 64);
	printf("dma addr bits  %" PRIu32 "\n", info->dma_addr_bits);
	printf("core clock     %.1f MHz\n", (double)info->core_hz / 1e6);
	printf("axi clock      %.1f MHz\n", (double)info->axi_hz / 1e6);
	printf("ddr peak       %.1f GB/s%s\n", (double)info->ddr_bytes_per_s / 1e9,
	       kernel ? " (nominal)" : " (modelled)");
}

int pccx_cmd_info(int argc, char **argv)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_device_info info;
	pccx_device *dev = NULL;
	pccx_diag d = { 0 };
	int rc;

	rc = pccx_opt_parse(&info_cmd, argc, argv, &dopt);
	if (rc != PCCX_OPT_RUN)
		return rc;
	rc = pccx_device_open(&dopt, &dev, &d);
	if (rc)
		return pccx_cli_fail(rc, &d);
	rc = pccx_device_info(dev, &info);
	pccx_device_close(dev);
	if (rc)
		return pccx_cli_fail(rc, NULL);
	print_info(&info, dopt.path);
	return 0;
}
