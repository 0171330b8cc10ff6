// SPDX-License-Identifier: MIT
/* pccx: the command-line front end of libpccx. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct pccx_cmd commands[] = {
	{ "asm", "assemble a program: pccx asm FILE.s -o FILE.bin", pccx_cmd_asm },
	{ "dis", "disassemble a program or job file: pccx dis FILE", pccx_cmd_dis },
	{ "validate", "validate a program or job file: pccx validate FILE", pccx_cmd_validate },
	{ "isa-table", "print the ISA reference tables (docs/isa.md is checked against it)",
	  pccx_cmd_isa_table },
	{ "tokenize", "tokenize text with a tokenizer.json: pccx tokenize --tokenizer F TEXT",
	  pccx_cmd_tokenize },
	{ "info", "device ID, features and figures: pccx info [--backend kernel]", pccx_cmd_info },
	{ "check", "one job on every path (sim, kernel, a board): where they differ, latency",
	  pccx_cmd_check },
	{ "run", "generate text on the NPU (simulated by default): pccx run -m MODEL -p TEXT",
	  pccx_cmd_run },
	{ "serve", "an HTTP server for the model, OpenAI-style chat completions: pccx serve -m MODEL",
	  pccx_cmd_serve },
	{ "chat", "a conversation with the model in the terminal: pccx chat -m MODEL",
	  pccx_cmd_chat },
	{ "ref", "run the bit-exact reference model (and the float oracle)", pccx_cmd_ref },
	{ "fidelity", "error of the reference against the FP64 oracle, stage by stage",
	  pccx_cmd_fidelity },
	{ "synth", "write a gemma3n GGUF with synthetic weights: pccx synth --config NAME -o F",
	  pccx_cmd_synth },
	{ "sim", "run a job file on the cycle simulator", pccx_cmd_sim },
	{ "bench", "benchmarks: simulated decode, host reference, sampler", pccx_cmd_bench },
	{ "numerics", "measure the numerics module's functions against double precision",
	  pccx_cmd_numerics },
};

#define NCMDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: pccx <command> [options]\n\n"
		   "The pccx v002 NPU toolchain.\n\ncommands:\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'pccx <command> --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < NCMDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "pccx: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
