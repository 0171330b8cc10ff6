/* SPDX-License-Identifier: MIT */
/* pccx command-line tool: sub-command table and shared helpers. */
#ifndef PCCX_CLI_H
#define PCCX_CLI_H

#include <stdbool.h>
#include "pccx/status.h"

struct pccx_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);   /* argv[0] is the sub-command name */
};

/* True if argv holds -h or --help. */
bool pccx_cli_wants_help(int argc, char **argv);
/* Print "pccx: <detail>" (or the status text) to stderr and return 1. */
int pccx_cli_fail(int status, const pccx_diag *d);

int pccx_cmd_asm(int argc, char **argv);
int pccx_cmd_dis(int argc, char **argv);
int pccx_cmd_validate(int argc, char **argv);
int pccx_cmd_isa_table(int argc, char **argv);
int pccx_cmd_numerics(int argc, char **argv);
int pccx_cmd_tokenize(int argc, char **argv);
int pccx_cmd_bench_sampler(int argc, char **argv);
int pccx_cmd_sim(int argc, char **argv);
int pccx_cmd_ref(int argc, char **argv);
int pccx_cmd_bench_ref(int argc, char **argv);
int pccx_cmd_synth(int argc, char **argv);
int pccx_cmd_bench(int argc, char **argv);
int pccx_cmd_bench_sim(int argc, char **argv);
int pccx_cmd_run(int argc, char **argv);
int pccx_cmd_info(int argc, char **argv);

#endif
