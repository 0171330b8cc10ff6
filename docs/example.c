// SPDX-License-Identifier: MIT
/*
 * The smallest libpccx program: synthesise a tiny Gemma 3n model, run it on the simulated
 * NPU with every stage verified against the reference, and print the sampled token ids.
 *
 *   cc example.c $(pkg-config --cflags --libs pccx) -o example && ./example   (libpccx.so)
 *   cc -static example.c $(pkg-config --cflags --libs --static pccx) -o example   (static)
 */
#include <stdio.h>

#include <pccx/pccx.h>

static int on_token(void *user, int32_t token, const char *piece, size_t len)
{
	(void)user;
	(void)piece;
	(void)len;
	printf("%d ", token);
	return 0;
}

int main(void)
{
	struct pccx_device_opts dopt = { .struct_size = sizeof(dopt), .backend = "sim" };
	struct pccx_model_opts mopt = { .struct_size = sizeof(mopt), .synth_config = "tiny",
					.synth_seed = 1 };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = true };
	const int32_t prompt[] = { 2, 10, 20, 30 };
	pccx_sampler_config cfg;
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	struct pccx_stats st;
	pccx_diag d = { 0 };
	int rc;

	pccx_sampler_config_default(&cfg);
	rc = pccx_device_open(&dopt, &dev, &d);
	if (!rc)
		rc = pccx_model_load(dev, &mopt, &model, &d);
	if (!rc)
		rc = pccx_session_create(model, &sopt, &s, &d);
	if (!rc)
		rc = pccx_session_prefill(s, prompt, 4, &d);
	if (!rc)
		rc = pccx_session_generate(s, &cfg, 8, on_token, NULL, &d);
	if (!rc)
		rc = pccx_session_stats(s, &st);
	if (rc)
		fprintf(stderr, "example: %s: %s\n", pccx_strerror(rc), d.msg);
	else
		printf("\n%llu tokens, %llu simulated cycles, all stages bit-exact\n",
		       (unsigned long long)st.tokens, (unsigned long long)st.device_cycles);
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	return rc ? 1 : 0;
}
