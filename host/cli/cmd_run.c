// SPDX-License-Identifier: MIT
/* pccx run: generate text with Gemma 3n on the NPU (the simulated device by default). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pccx/pccx.h"
#include "pccx/tokenizer.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pccx run (-m MODEL.gguf | --config NAME [--seed S]) -p PROMPT [-n N]\n"
		"                [--tokenizer tokenizer.json] [--chat] [--backend sim] [--dtb F]\n"
		"                [--verify] [--trace F.json] [--temp T] [--top-p P] [--top-k K]\n"
		"                [--min-p P] [--rep-penalty R] [--sample-seed S] [--max-ctx N]\n\n"
		"Tokenizes PROMPT, runs every decode step as a v002 job on the device, samples each\n"
		"token on the host and streams the text. --config synthesises a model (tiny,\n"
		"tiny-vocab, e2b, e4b) instead of loading one. --chat wraps the prompt in the Gemma\n"
		"chat template. --verify runs the bit-exact reference alongside and stops at the first\n"
		"stage whose bits differ. Without a tokenizer the prompt's bytes are the token ids and\n"
		"ids are printed. Ends with a statistics line.\n");
}

static void progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
	int width = 30, fill = total ? (int)(done * (uint64_t)width / total) : width;

	(void)user;
	fprintf(stderr, "\r%-14s [%.*s%*s] %3d%%", stage, fill,
		"##############################", width - fill, "",
		total ? (int)(done * 100 / total) : 100);
	if (done >= total)
		fputc('\n', stderr);
}

static int on_token(void *user, int32_t token, const char *piece, size_t len)
{
	bool has_tok = *(bool *)user;

	if (has_tok)
		fwrite(piece, 1, len, stdout);
	else
		printf("[%d]", token);
	fflush(stdout);
	return 0;
}

static bool num_arg(const char *s, double *v)
{
	char *end;

	*v = strtod(s, &end);
	return end != s && *end == '\0';
}

int pccx_cmd_run(int argc, char **argv)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, NULL, 1, NULL, progress, NULL };
	struct pccx_session_opts sopt = { sizeof(sopt), 0, false };
	pccx_sampler_config scfg;
	const char *prompt = NULL;
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	struct pccx_stats st;
	struct pccx_device_info info;
	pccx_diag d = { 0 };
	int32_t *ids = NULL;
	size_t n_ids = 0, n_gen = 32, i;
	bool chat = false, has_tok;
	int rc = 1, st_rc, a;

	if (pccx_cli_wants_help(argc, argv)) {
		usage(stdout);
		return 0;
	}
	pccx_sampler_config_default(&scfg);
	for (a = 1; a < argc; a++) {
		const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
		double x;

		if (!strcmp(o, "--chat")) {
			chat = true;
			continue;
		}
		if (!strcmp(o, "--verify")) {
			sopt.verify = true;
			continue;
		}
		if (!v) {
			fprintf(stderr, "pccx run: option '%s' needs a value (or is unknown)\n", o);
			return 2;
		}
		a++;
		if (!strcmp(o, "-m"))
			mopt.path = v;
		else if (!strcmp(o, "--config"))
			mopt.synth_config = v;
		else if (!strcmp(o, "--seed") && num_arg(v, &x) && x >= 0)
			mopt.synth_seed = (uint64_t)x;
		else if (!strcmp(o, "-p"))
			prompt = v;
		else if (!strcmp(o, "-n") && num_arg(v, &x) && x >= 0 && x <= 1e6)
			n_gen = (size_t)x;
		else if (!strcmp(o, "--tokenizer"))
			mopt.tokenizer = v;
		else if (!strcmp(o, "--backend"))
			dopt.backend = v;
		else if (!strcmp(o, "--dtb"))
			dopt.dtb = v;
		else if (!strcmp(o, "--trace"))
			dopt.trace_path = v;
		else if (!strcmp(o, "--temp") && num_arg(v, &x))
			scfg.temperature = (float)x;
		else if (!strcmp(o, "--top-p") && num_arg(v, &x))
			scfg.top_p = (float)x;
		else if (!strcmp(o, "--top-k") && num_arg(v, &x))
			scfg.top_k = (int32_t)x;
		else if (!strcmp(o, "--min-p") && num_arg(v, &x))
			scfg.min_p = (float)x;
		else if (!strcmp(o, "--rep-penalty") && num_arg(v, &x))
			scfg.repetition_penalty = (float)x;
		else if (!strcmp(o, "--sample-seed") && num_arg(v, &x) && x >= 0)
			scfg.seed = (uint64_t)x;
		else if (!strcmp(o, "--max-ctx") && num_arg(v, &x) && x >= 1 && x <= 65535)
			sopt.max_context = (uint32_t)x;
		else {
			fprintf(stderr, "pccx run: bad option or value: %s %s\n", o, v);
			return 2;
		}
	}
	if (!prompt || (!mopt.path && !mopt.synth_config)) {
		usage(stderr);
		return 2;
	}
	if (pccx_sampler_config_check(&scfg, &d))
		return pccx_cli_fail(PCCX_ERR_INVALID, &d);

	st_rc = pccx_device_open(&dopt, &dev, &d);
	if (!st_rc)
		st_rc = pccx_model_load(dev, &mopt, &model, &d);
	if (!st_rc)
		st_rc = pccx_session_create(model, &sopt, &s, &d);
	if (st_rc)
		goto out;
	has_tok = pccx_session_tokenizer(s) != NULL;
	if (has_tok) {
		st_rc = pccx_session_tokenize(s, prompt, chat, &ids, &n_ids, &d);
		if (st_rc)
			goto out;
	} else {
		n_ids = strlen(prompt);
		ids = malloc((n_ids ? n_ids : 1) * sizeof(*ids));
		if (!ids) {
			st_rc = PCCX_ERR_NOMEM;
			goto out;
		}
		for (i = 0; i < n_ids; i++)
			ids[i] = (unsigned char)prompt[i];
	}
	if (!n_ids) {
		fprintf(stderr, "pccx run: the prompt gives no tokens\n");
		goto out;
	}
	fprintf(stderr, "prompt: %zu tokens%s\n", n_ids, sopt.verify ? " (verifying every stage)" : "");
	st_rc = pccx_session_prefill(s, ids, n_ids, &d);
	if (!st_rc)
		st_rc = pccx_session_generate(s, &scfg, n_gen, on_token, &has_tok, &d);
	putchar('\n');
	fflush(stdout);
	if (!st_rc)
		st_rc = pccx_device_flush(dev, &d);
	if (!pccx_session_stats(s, &st) && !pccx_device_info(dev, &info)) {
		double dev_tps = st.decode_cycles ?
			(double)st.decode_steps * (double)info.core_hz / (double)st.decode_cycles :
			0.0;

		fprintf(stderr,
			"stats: %llu tokens generated, %llu prompt tokens, host %.2f tok/s, %llu "
			"simulated cycles (%.3f ms at the modelled clock), simulated decode %.2f "
			"tok/s, DDR %.1f%% of the bandwidth ceiling%s\n",
			(unsigned long long)st.tokens, (unsigned long long)st.prompt_tokens,
			st.host_seconds > 0 ? (double)(st.tokens + st.prompt_tokens) /
			st.host_seconds : 0.0,
			(unsigned long long)st.device_cycles, st.device_seconds * 1e3, dev_tps,
			100.0 * st.ddr_utilisation, sopt.verify && !st_rc ?
			", verified: 0 differing bits" : "");
	}
out:
	if (st_rc)
		pccx_cli_fail(st_rc, &d);
	else
		rc = 0;
	free(ids);
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	return rc;
}
