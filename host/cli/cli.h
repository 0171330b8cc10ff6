/* SPDX-License-Identifier: MIT */
/* pccx command-line tool: sub-command table and what several commands share. */
#ifndef PCCX_CLI_H
#define PCCX_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "options.h"
#include "pccx/pccx.h"
#include "pccx/status.h"

struct pccx_gemma_config;
struct pccx_gemma_model;
struct pccx_tokenizer;

struct pccx_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);   /* argv[0] is the sub-command name */
};

/* True if argv holds -h or --help. */
bool pccx_cli_wants_help(int argc, char **argv);
/* Print "pccx: <detail>" (or the status text) to stderr and return 1. */
int pccx_cli_fail(int status, const pccx_diag *d);
/* Monotonic wall-clock time in seconds, for the figures commands print. */
double pccx_cli_now(void);

/* The sampler's options (--temp, --top-k, ...): offsets in a pccx_sampler_config. */
extern const struct pccx_opt pccx_cli_sampler_opts[];
/* --kernel: the value is an enum pccx_kern_impl. */
int pccx_cli_parse_kernel(const char *value, void *dst);
const char *pccx_cli_kernel_names(void);

/* A libpccx device with a model loaded and a session on it. */
struct pccx_cli_session {
	pccx_device *dev;
	pccx_model *model;
	pccx_session *s;
};

PCCX_MUST_CHECK int pccx_cli_session_open(const struct pccx_device_opts *dopt,
					  const struct pccx_model_opts *mopt,
					  const struct pccx_session_opts *sopt,
					  struct pccx_cli_session *cs, pccx_diag *d);
void pccx_cli_session_close(struct pccx_cli_session *cs);
/* Simulated decode rate: generation steps per second of device time at the modelled clock. */
double pccx_cli_decode_tok_s(const struct pccx_stats *st, const struct pccx_device_info *info);
/*
 * Simulated prompt figures: the device time of every job that was not a generation step (the
 * prompt's chunks and steps, the last with the logits of the first token), and the prompt
 * tokens per second of it. 0 when the backend counts no cycles.
 */
double pccx_cli_first_token_s(const struct pccx_stats *st, const struct pccx_device_info *info);
double pccx_cli_prompt_tok_s(const struct pccx_stats *st, const struct pccx_device_info *info);

/* The preset `name`, with max_ctx KV positions of global layers unless max_ctx is 0. */
PCCX_MUST_CHECK int pccx_cli_config(const char *name, uint64_t max_ctx,
				    struct pccx_gemma_config *cfg, pccx_diag *d);
/* A reference model of shape cfg with synthetic weights of `seed` (n_threads 0: all CPUs). */
PCCX_MUST_CHECK int pccx_cli_synth(const struct pccx_gemma_config *cfg, uint64_t seed,
				   unsigned n_threads, struct pccx_gemma_model **m, pccx_diag *d);
/* Write m as a gemma3n GGUF, with the tokenizer's keys when tk is not NULL (cmd_ref.c). */
PCCX_MUST_CHECK int pccx_cli_save_gguf(const struct pccx_gemma_model *m,
				       const struct pccx_tokenizer *tk, const char *path,
				       pccx_diag *d);

int pccx_cmd_asm(int argc, char **argv);
int pccx_cmd_dis(int argc, char **argv);
int pccx_cmd_validate(int argc, char **argv);
int pccx_cmd_isa_table(int argc, char **argv);
int pccx_cmd_numerics(int argc, char **argv);
int pccx_cmd_tokenize(int argc, char **argv);
int pccx_cmd_bench_sampler(int argc, char **argv);
int pccx_cmd_sim(int argc, char **argv);
int pccx_cmd_ref(int argc, char **argv);
int pccx_cmd_fidelity(int argc, char **argv);
int pccx_cmd_bench_ref(int argc, char **argv);
int pccx_cmd_synth(int argc, char **argv);
int pccx_cmd_bench(int argc, char **argv);
int pccx_cmd_bench_sim(int argc, char **argv);
int pccx_cmd_bench_sparse(int argc, char **argv);
int pccx_cmd_run(int argc, char **argv);
int pccx_cmd_chat(int argc, char **argv);
int pccx_cmd_info(int argc, char **argv);
int pccx_cmd_check(int argc, char **argv);
int pccx_cmd_serve(int argc, char **argv);

#endif
