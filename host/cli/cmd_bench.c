// SPDX-License-Identifier: MIT
/* pccx bench: dispatch to the benchmark asked for. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static bool has(int argc, char **argv, const char *opt)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], opt))
			return true;
	return false;
}

int pccx_cmd_bench(int argc, char **argv)
{
	int i, j;

	if (has(argc, argv, "--ref"))
		return pccx_cmd_bench_ref(argc, argv);
	if (has(argc, argv, "--sampler")) {
		/* the sampler benchmark does not know --sampler: drop it */
		for (i = j = 0; i < argc; i++)
			if (strcmp(argv[i], "--sampler"))
				argv[j++] = argv[i];
		return pccx_cmd_bench_sampler(j, argv);
	}
	if (has(argc, argv, "--sim") || has(argc, argv, "--config"))
		return pccx_cmd_bench_sim(argc, argv);
	printf("usage: pccx bench --config CONFIG [options]   simulated decode on the NPU model\n"
	       "       pccx bench --ref --config CONFIG [...]  host reference decode (tok/s, memory)\n"
	       "       pccx bench --sampler [...]              host sampler (ns per token)\n"
	       "'pccx bench --ref --help' etc. describe each.\n");
	return pccx_cli_wants_help(argc, argv) ? 0 : 2;
}
