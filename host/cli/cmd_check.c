// SPDX-License-Identifier: MIT
/*
 * pccx check: one job, every path. The same model, prompt and sampler run on every backend
 * that can be opened (the in-process simulator always; /dev/pccx when it exists; a board over
 * a link when its path is given), each session verified against the bit-exact reference
 * (stage by stage on the simulator; logits and KV rows on the others). The paths' tokens are
 * compared step by step; a path whose verification failed names its step, stage or element.
 * Then the latency of each path, side by side.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "gen_run.h"
#include "kernel_dev.h"

#define MAX_TOKENS 4096
#define MAX_PATHS 4

struct check_args {
	struct pccx_model_opts mopt;
	const char *prompt;
	uint64_t n;
	uint64_t sample_seed;
	float temp;
	const char *kernel_path;
	const char *serial;
	const char *usb;
	bool no_kernel;
	bool no_verify;
};

#define A(f, t) PCCX_AT(struct check_args, f, t)
static const struct pccx_opt check_opts[] = {
	PCCX_OPT(NULL, 'm', PCCX_OPT_PATH, A(mopt.path, const char *), "MODEL",
		 "a GGUF, or a Hugging Face checkpoint"),
	PCCX_OPT("config", 0, PCCX_OPT_STR, A(mopt.synth_config, const char *), "NAME",
		 "synthesise a model of this shape instead (default tiny)",
		 .values = pccx__gemma_config_names),
	PCCX_OPT("seed", 0, PCCX_OPT_UINT, A(mopt.synth_seed, uint64_t), "S",
		 "seed of the synthetic weights (default 1)"),
	PCCX_OPT(NULL, 'p', PCCX_OPT_STR, A(prompt, const char *), "PROMPT",
		 "the prompt (default \"The quick brown fox\"; its bytes are the ids without a "
		 "tokenizer)"),
	PCCX_OPT(NULL, 'n', PCCX_OPT_UINT, A(n, uint64_t), "N", "decode steps (default 17)",
		 .min = 1, .max = MAX_TOKENS),
	PCCX_OPT("sample-seed", 0, PCCX_OPT_UINT, A(sample_seed, uint64_t), "S",
		 "seed of the sampler (default 11)"),
	PCCX_OPT("temp", 0, PCCX_OPT_FLOAT, A(temp, float), "T",
		 "sampling temperature (default 0.8; 0 = greedy)"),
	PCCX_OPT("kernel-path", 0, PCCX_OPT_PATH, A(kernel_path, const char *), "NODE",
		 "the kernel path's device node (default " PCCX_KERNEL_DEV_PATH ", run when it "
		 "exists)"),
	PCCX_OPT("no-kernel", 0, PCCX_OPT_FLAG, A(no_kernel, bool), NULL,
		 "leave /dev/pccx out"),
	PCCX_OPT("serial", 0, PCCX_OPT_PATH, A(serial, const char *), "PATH",
		 "a board on this tty or Unix socket (backend serial, docs/link.md)"),
	PCCX_OPT("usb", 0, PCCX_OPT_STR, A(usb, const char *), "ID",
		 "a board over USB (backend usb)"),
	PCCX_OPT("no-verify", 0, PCCX_OPT_FLAG, A(no_verify, bool), NULL,
		 "compare the paths only, without the reference"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd check_cmd = {
	.name = "check",
	.usage = "[-m MODEL | --config NAME [--seed S]] [-p PROMPT] [-n N] [--serial PATH] "
		 "[--usb ID]",
	.about = "Runs the same decode steps on every path that can be opened (the in-process\n"
		 "simulator; /dev/pccx when it exists; a board over --serial or --usb), each\n"
		 "verified against the bit-exact reference, compares the paths' tokens step by\n"
		 "step, names the first step where two differ (and a path's first differing\n"
		 "stage or element), and prints each path's latency side by side. Exit status 1\n"
		 "when any path fails or two differ.\n",
	.opts = check_opts,
};

/* What one path did. */
struct path {
	const char *name, *backend, *path;
	int status;
	pccx_diag d;
	int32_t toks[MAX_TOKENS];
	size_t n;
	size_t prompt;
	double prefill_s, decode_s;
	struct pccx_stats st;
};

static int collect(void *user, int32_t token, const char *piece, size_t len)
{
	struct path *p = user;

	(void)piece;
	(void)len;
	if (p->n < MAX_TOKENS)
		p->toks[p->n++] = token;
	return 0;
}

static void run_path(const struct check_args *a, struct path *p)
{
	struct pccx_device_opts dopt = { sizeof(dopt), p->backend, p->path, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt),
					  .verify = !a->no_verify };
	struct pccx_cli_session cs;
	pccx_sampler_config sc;
	int32_t *ids = NULL;
	size_t n_ids = 0;
	double t0;
	int rc;

	pccx_sampler_config_default(&sc);
	sc.temperature = a->temp;
	sc.seed = a->sample_seed;
	rc = pccx_cli_session_open(&dopt, &a->mopt, &sopt, &cs, &p->d);
	if (!rc)
		rc = pccx_cli_gen_ids(cs.s, a->prompt, false, false, &ids, &n_ids, &p->d);
	if (!rc) {
		p->prompt = n_ids;
		t0 = pccx_cli_now();
		rc = pccx_session_prefill(cs.s, ids, n_ids, &p->d);
		p->prefill_s = pccx_cli_now() - t0;
	}
	if (!rc) {
		t0 = pccx_cli_now();
		rc = pccx_session_generate(cs.s, &sc, a->n, collect, p, &p->d);
		p->decode_s = pccx_cli_now() - t0;
	}
	if (!rc)
		rc = pccx_session_stats(cs.s, &p->st);
	free(ids);
	pccx_cli_session_close(&cs);
	p->status = rc;
}

/* The first step where two finished paths' tokens differ; 0 when they all agree. */
static int compare(struct path *paths, int n_paths)
{
	const struct path *base = NULL;
	int i, bad = 0;

	for (i = 0; i < n_paths; i++) {
		const struct path *p = &paths[i];
		size_t k;

		if (p->status)
			continue;
		if (!base) {
			base = p;
			continue;
		}
		for (k = 0; k < base->n && k < p->n && base->toks[k] == p->toks[k]; k++)
			;
		if (k == base->n && k == p->n)
			continue;
		bad = 1;
		if (k < base->n && k < p->n)
			printf("paths differ: %s and %s first at decode step %zu: token %" PRId32
			       " against %" PRId32 "\n", base->name, p->name, k, base->toks[k],
			       p->toks[k]);
		else
			printf("paths differ: %s made %zu tokens, %s %zu\n", base->name, base->n,
			       p->name, p->n);
	}
	return bad;
}

static void print_table(const struct check_args *a, const struct path *paths, int n_paths)
{
	int i;

	printf("%-8s %-9s %6s %15s %14s %14s %6s\n", "path", "result", "tokens", "prefill ms/tok",
	       "decode ms/tok", "device ms/job", "jobs");
	for (i = 0; i < n_paths; i++) {
		const struct path *p = &paths[i];
		double dev_ms = p->st.jobs ? p->st.device_seconds * 1e3 / (double)p->st.jobs : 0;

		if (p->status) {
			printf("%-8s %-9s %s\n", p->name, "FAILED", p->d.msg[0] ? p->d.msg :
			       pccx_strerror(p->status));
			continue;
		}
		printf("%-8s %-9s %6zu %15.3f %14.3f %14.3f %6" PRIu64 "\n", p->name,
		       a->no_verify ? "ran" : "verified", p->n,
		       p->prompt ? p->prefill_s * 1e3 / (double)p->prompt : 0.0,
		       p->n ? p->decode_s * 1e3 / (double)p->n : 0.0, dev_ms, p->st.jobs);
	}
}

/* The paths to run: sim, kernel when its node exists, the links given. */
static int plan(const struct check_args *a, struct path *paths)
{
	const char *node = a->kernel_path ? a->kernel_path : PCCX_KERNEL_DEV_PATH;
	struct stat sb;
	int n = 0;

	paths[n++] = (struct path){ .name = "sim", .backend = "sim" };
	if (!a->no_kernel && (a->kernel_path || !stat(node, &sb)))
		paths[n++] = (struct path){ .name = "kernel", .backend = "kernel", .path = node };
	if (a->serial)
		paths[n++] = (struct path){ .name = "serial", .backend = "serial",
					    .path = a->serial };
	if (a->usb)
		paths[n++] = (struct path){ .name = "usb", .backend = "usb", .path = a->usb };
	return n;
}

int pccx_cmd_check(int argc, char **argv)
{
	struct check_args a = { .mopt = { sizeof(a.mopt), NULL, NULL, 1, NULL, NULL, NULL },
				.prompt = "The quick brown fox", .n = 17, .sample_seed = 11,
				.temp = 0.8f };
	struct path *paths;
	int i, n_paths, failed = 0, rc;

	rc = pccx_opt_parse(&check_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	if (!a.mopt.path && !a.mopt.synth_config)
		a.mopt.synth_config = "tiny";
	paths = calloc(MAX_PATHS, sizeof(*paths));
	if (!paths)
		return pccx_cli_fail(PCCX_ERR_NOMEM, NULL);
	n_paths = plan(&a, paths);
	for (i = 0; i < n_paths; i++) {
		run_path(&a, &paths[i]);
		if (paths[i].status) {
			failed = 1;
			fprintf(stderr, "pccx check: %s: %s\n", paths[i].name,
				paths[i].d.msg[0] ? paths[i].d.msg : pccx_strerror(paths[i].status));
		}
	}
	failed |= compare(paths, n_paths);
	print_table(&a, paths, n_paths);
	if (!failed)
		printf("all %d paths agree on %zu tokens (%zu prompt tokens, %zu decode steps%s)\n",
		       n_paths, paths[0].n, paths[0].prompt, paths[0].n,
		       a.no_verify ? "" : ", each verified against the reference");
	free(paths);
	return failed;
}
