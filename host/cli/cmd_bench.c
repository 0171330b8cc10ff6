// SPDX-License-Identifier: MIT
/* pccx bench: dispatch to the benchmark asked for. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Remove every `opt` from argv (the benchmark's selector); false if there was none. */
static bool take(int *argc, char **argv, const char *opt)
{
	int i, j;

	for (i = j = 0; i < *argc; i++)
		if (strcmp(argv[i], opt))
			argv[j++] = argv[i];
	if (j == *argc)
		return false;
	*argc = j;
	return true;
}

int pccx_cmd_bench(int argc, char **argv)
{
	int i;

	if (take(&argc, argv, "--ref"))
		return pccx_cmd_bench_ref(argc, argv);
	if (take(&argc, argv, "--sampler"))
		return pccx_cmd_bench_sampler(argc, argv);
	if (take(&argc, argv, "--sparse"))
		return pccx_cmd_bench_sparse(argc, argv);
	if (take(&argc, argv, "--sim"))
		return pccx_cmd_bench_sim(argc, argv);
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--config") || !strncmp(argv[i], "--config=", 9))
			return pccx_cmd_bench_sim(argc, argv);
	printf("usage: pccx bench --config CONFIG [options]   simulated decode on the NPU model\n"
	       "       pccx bench --ref --config CONFIG [...]  host reference decode (tok/s, memory)\n"
	       "       pccx bench --sampler [...]              host sampler (ns per token)\n"
	       "       pccx bench --sparse [--config CONFIG]   a sparse layer's W_up: rowmask or host\n"
	       "'pccx bench --ref --help' etc. describe each.\n");
	return pccx_cli_wants_help(argc, argv) ? 0 : 2;
}
