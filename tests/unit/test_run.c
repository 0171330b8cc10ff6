// SPDX-License-Identifier: MIT
/*
 * End to end through libpccx: Gemma 3n decode of the test configurations compiled to v002
 * jobs, run on the cycle simulator through the command engine, with every stage of every
 * step compared bit for bit with the reference executor (verify mode).
 */
#include <check.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pccx/pccx.h"
#include "pccx/tokenizer.h"
#include "pccx_testing.h"
#include "pccx_regs.h"

struct run {
	int32_t toks[128];
	size_t n;
};

/* Sessions stream the sparse layers' W_up whole even on a device with FEATURES.ROWMASK. */
static bool no_rowmask;

static int collect(void *user, int32_t token, const char *piece, size_t len)
{
	struct run *r = user;

	(void)piece;
	(void)len;
	if (r->n < 128)
		r->toks[r->n++] = token;
	return 0;
}

/*
 * Prefill a prompt (n_prompt tokens of a fixed sequence; 0: the 5-token one) in chunks of
 * prompt_chunk tokens (0: as L2 holds) and generate n tokens; returns the status of the first
 * failure.
 */
/* The simulated device's description for generate_with (NULL: the built-in one). */
static const char *g_dtb;

static int generate_with(const char *config, bool verify, float temp, uint64_t seed, size_t n,
			 size_t n_prompt, uint32_t prompt_chunk, struct run *out,
			 struct pccx_stats *st, pccx_diag *d)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, g_dtb, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, config, 7, NULL, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = verify,
					  .prompt_chunk = prompt_chunk, .no_rowmask = no_rowmask };
	static const int32_t five[] = { 2, 17, 42, 99, 3 };
	int32_t prompt[640];
	pccx_sampler_config scfg;
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	int rc;

	pccx_sampler_config_default(&scfg);
	scfg.temperature = temp;
	scfg.seed = seed;
	/* no stop tokens without a tokenizer: exactly n tokens come out */
	memset(out, 0, sizeof(*out));
	rc = pccx_device_open(&dopt, &dev, d);
	if (!rc)
		rc = pccx_model_load(dev, &mopt, &model, d);
	if (!rc)
		rc = pccx_session_create(model, &sopt, &s, d);
	if (!n_prompt) {
		n_prompt = sizeof(five) / sizeof(five[0]);
		memcpy(prompt, five, sizeof(five));
	} else {
		size_t i;

		ck_assert_uint_le(n_prompt, sizeof(prompt) / sizeof(prompt[0]));
		for (i = 0; i < n_prompt; i++)
			prompt[i] = (int32_t)(2 + (29 * i + 7) % 200);
	}
	if (!rc)
		rc = pccx_session_prefill(s, prompt, n_prompt, d);
	if (!rc)
		rc = pccx_session_generate(s, &scfg, n, collect, out, d);
	if (!rc && st)
		rc = pccx_session_stats(s, st);
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	return rc;
}

static int generate(const char *config, bool verify, float temp, uint64_t seed, size_t n,
		    struct run *out, struct pccx_stats *st, pccx_diag *d)
{
	return generate_with(config, verify, temp, seed, n, 0, 0, out, st, d);
}

/*
 * jobs_per_step: 1, or 1 + the mixture-of-experts layers (one job ends at each router);
 * prompt_jobs: the prompt's (one chunk for the first four tokens and a step for the last, or
 * a step per token where there are no chunks).
 */
static void check_config_jobs(const char *config, unsigned jobs_per_step, unsigned prompt_jobs)
{
	struct pccx_stats st;
	struct run r;
	pccx_diag d = { 0 };
	int rc = generate(config, true, 0.8f, 11, 64, &r, &st, &d);

	ck_assert_msg(rc == 0, "%s: %s (%s)", config, d.msg, pccx_strerror(rc));
	ck_assert_uint_eq(r.n, 64);
	ck_assert_uint_eq(st.tokens, 64);
	ck_assert_uint_eq(st.prompt_tokens, 5);
	ck_assert_uint_eq(st.jobs, prompt_jobs + 64 * jobs_per_step);
	ck_assert_uint_eq(st.decode_steps, 64);
	ck_assert_uint_gt(st.device_cycles, 0);
	ck_assert_uint_gt(st.weight_bytes, 0);
}

static void check_config(const char *config)
{
	check_config_jobs(config, 1, 2);
}

/*
 * The simulated device reports FEATURES.ROWMASK: the sparse layers' W_up is read only where
 * the activation keeps its rows, every stage verified against the reference running the same
 * ops; the tokens are those of the dense stream and fewer weight bytes are read.
 */
START_TEST(tiny_rowmask_same_tokens)
{
	struct pccx_stats sd, ss;
	struct run rd, rs;
	pccx_diag d = { 0 };
	int rc;

	no_rowmask = true;
	rc = generate("tiny", true, 0.8f, 5, 24, &rd, &sd, &d);
	no_rowmask = false;
	ck_assert_msg(rc == 0, "%s", d.msg);
	rc = generate("tiny", true, 0.8f, 5, 24, &rs, &ss, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_uint_eq(rd.n, 24);
	ck_assert_uint_eq(rs.n, 24);
	ck_assert(!memcmp(rd.toks, rs.toks, sizeof(rd.toks[0]) * rd.n));
	ck_assert_uint_eq(sd.decode_steps, ss.decode_steps);
	ck_assert_uint_lt(ss.decode_weight_bytes, sd.decode_weight_bytes);
}
END_TEST

START_TEST(tiny_64_tokens_bit_exact)
{
	check_config("tiny");
}
END_TEST

START_TEST(tiny_vocab_64_tokens_bit_exact)
{
	check_config("tiny-vocab");
}
END_TEST

/*
 * The tiny shape of every other family: 69 steps, past the 16-key window of the local
 * layers of Gemma 2 and 3 (their rings wrap four times), each stage verified.
 */
static const char *const family_configs[] = { "tiny-gemma", "tiny-gemma2", "tiny-gemma3",
						 "tiny-gemma4" };

START_TEST(family_64_tokens_bit_exact)
{
	check_config(family_configs[_i]);
}
END_TEST

/*
 * Gemma 4's mixture of experts: 6 layers, each ending a job at its router (7 per step); its
 * prompt runs token by token (gemma_chunk.h).
 */
START_TEST(moe_64_tokens_bit_exact)
{
	check_config_jobs("tiny-gemma4-moe", 7, 5 * 7);
}
END_TEST

/*
 * A prompt in chunks gives what one step per token gives: a 37-token prompt (past the
 * 16-key window of the local layers) in chunks of 5 and of all L2 holds, then 24 sampled
 * tokens, the same as with one step per token, every stage verified; fewer jobs and fewer
 * weight bytes streamed for the prompt.
 */
static const char *const chunk_configs[] = { "tiny", "tiny-gemma", "tiny-gemma2", "tiny-gemma3",
						"tiny-gemma4" };

START_TEST(prompt_chunks_same_tokens)
{
	const char *config = chunk_configs[_i / 2];
	uint32_t rows = _i % 2 ? 0 : 5;
	struct pccx_stats st1, stc;
	struct run one, chunked;
	pccx_diag d = { 0 };

	ck_assert_msg(generate_with(config, false, 0.9f, 3, 24, 37, 1, &one, &st1, &d) == 0, "%s",
		      d.msg);
	ck_assert_msg(generate_with(config, true, 0.9f, 3, 24, 37, rows, &chunked, &stc, &d) == 0,
		      "%s: %s", config, d.msg);
	ck_assert_uint_eq(chunked.n, 24);
	ck_assert_mem_eq(one.toks, chunked.toks, sizeof(one.toks));
	ck_assert_uint_eq(st1.jobs, 37 + 24);
	ck_assert_uint_lt(stc.jobs, st1.jobs);
	ck_assert_uint_lt(stc.weight_bytes - stc.decode_weight_bytes,
			  st1.weight_bytes - st1.decode_weight_bytes);
	ck_assert_uint_eq(stc.decode_weight_bytes, st1.decode_weight_bytes);
}
END_TEST

/*
 * A full-size prompt past a local layer's window in chunks, every stage of every job verified
 * against the reference: Gemma 3 1B's local layers keep 512 keys in a ring, and from about
 * position 540 on, the next token of a chunk stores its KV row into a ring slot while the
 * previous token's attention is still streaming that slot from host memory (the command
 * engine holds the store back until the stream has read it: docs/isa.md, "Host memory").
 */
START_TEST(prompt_chunks_past_the_window_full_size)
{
	struct pccx_stats st;
	struct run out;
	pccx_diag d = { 0 };

#ifdef __SANITIZE_ADDRESS__
	/* minutes under the sanitizers for a full-size model; the plain build runs it, and the
	 * engine's rule runs under them in test_sim_bulk (device_write_waits_for_stream_reads) */
	return;
#endif
	ck_assert_msg(generate_with("gemma-3-1b", true, 0.0f, 3, 1, 600, 0, &out, &st, &d) == 0,
		      "%s", d.msg);
	ck_assert_uint_eq(out.n, 1);
	ck_assert_uint_lt(st.jobs, 600 / 4);
}
END_TEST

/*
 * The built-in device description (the build's sim/kv260.dtb) with one property of the
 * pccx,npu-v002 node set, written to a temporary file whose path is returned.
 */
static const char *dtb_with(const char *prop, uint32_t value)
{
	static char out[64];
	static uint8_t blob[1 << 16];
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 64);
	FILE *f;
	size_t len;
	int node, fd;

	ck_assert_int_gt(n, 0);
	path[n] = 0;
	strcpy(strrchr(path, '/'), "/../sim/kv260.dtb");
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	len = fread(blob, 1, sizeof(blob) / 2, f);
	fclose(f);
	ck_assert_uint_gt(len, 0);
	ck_assert_int_eq(fdt_open_into(blob, blob, sizeof(blob)), 0);
	node = fdt_node_offset_by_compatible(blob, -1, "pccx,npu-v002");
	ck_assert_int_ge(node, 0);
	ck_assert_int_eq(fdt_setprop_u32(blob, node, prop, value), 0);
	ck_assert_int_eq(fdt_pack(blob), 0);
	strcpy(out, "/tmp/pccx-test-XXXXXX");
	fd = mkstemp(out);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, blob, fdt_totalsize(blob)), (ssize_t)fdt_totalsize(blob));
	close(fd);
	return out;
}

/*
 * RMSNorm in one smul pass (a device with FEATURES.SMUL, the default) against a device without
 * it (two passes): the same tokens, every step verified against the reference, in fewer cycles.
 */
START_TEST(smul_same_tokens_fewer_cycles)
{
	struct pccx_stats with, without;
	struct run a, b;
	pccx_diag d = { 0 };

	ck_assert_msg(generate_with("tiny", true, 0.9f, 5, 24, 0, 0, &a, &with, &d) == 0, "%s",
		      d.msg);
	g_dtb = dtb_with("pccx,smul", 0);
	ck_assert_msg(generate_with("tiny", true, 0.9f, 5, 24, 0, 0, &b, &without, &d) == 0, "%s",
		      d.msg);
	unlink(g_dtb);
	g_dtb = NULL;
	ck_assert_uint_eq(a.n, 24);
	ck_assert_mem_eq(a.toks, b.toks, sizeof(a.toks));
	ck_assert_uint_lt(with.device_cycles, without.device_cycles);
}
END_TEST

START_TEST(deterministic_and_verify_does_not_change_tokens)
{
	struct run a, b, c;
	pccx_diag d = { 0 };

	ck_assert_msg(generate("tiny", false, 0.9f, 5, 24, &a, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(generate("tiny", false, 0.9f, 5, 24, &b, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(generate("tiny", true, 0.9f, 5, 24, &c, NULL, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(a.n, 24);
	ck_assert_mem_eq(a.toks, b.toks, sizeof(a.toks));
	ck_assert_mem_eq(a.toks, c.toks, sizeof(a.toks));
}
END_TEST

START_TEST(sampler_seed_is_used)
{
	struct run a, b, c;
	pccx_diag d = { 0 };

	ck_assert_msg(generate("tiny", false, 1.0f, 5, 24, &a, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(generate("tiny", false, 1.0f, 6, 24, &b, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(generate("tiny", false, 1.0f, 5, 24, &c, NULL, &d) == 0, "%s", d.msg);
	ck_assert_mem_eq(a.toks, c.toks, sizeof(a.toks));
	ck_assert_msg(memcmp(a.toks, b.toks, sizeof(a.toks)) != 0,
		      "seeds 5 and 6 sample the same 24 tokens");
}
END_TEST

START_TEST(generate_needs_a_prompt)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "tiny", 1, NULL, NULL, NULL };
	pccx_device *dev;
	pccx_model *model;
	pccx_session *s;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_device_open(&dopt, &dev, &d), 0);
	ck_assert_int_eq(pccx_model_load(dev, &mopt, &model, &d), 0);
	ck_assert_int_eq(pccx_session_create(model, NULL, &s, &d), 0);
	ck_assert_int_eq(pccx_session_generate(s, NULL, 4, NULL, NULL, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "prefill"));
	{
		int32_t bad = 1 << 30;

		ck_assert_int_eq(pccx_session_prefill(s, &bad, 1, &d), PCCX_ERR_RANGE);
		ck_assert_ptr_nonnull(strstr(d.msg, "vocabulary"));
	}
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
}
END_TEST

/* A session of the tiny model on the in-process device, and what to do to it. */
struct faulty {
	pccx_device *dev;
	pccx_model *model;
	pccx_session *s;
};

static void faulty_open(struct faulty *f, bool verify)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "tiny", 7, NULL, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = verify };
	pccx_diag d = { 0 };

	ck_assert_msg(pccx_device_open(&dopt, &f->dev, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_model_load(f->dev, &mopt, &f->model, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_create(f->model, &sopt, &f->s, &d) == 0, "%s", d.msg);
}

static void faulty_close(struct faulty *f)
{
	pccx_session_free(f->s);
	pccx_model_free(f->model);
	pccx_device_close(f->dev);
}

static const int32_t fprompt[] = { 2, 17, 42, 99, 3 };
#define FPROMPT (sizeof(fprompt) / sizeof(fprompt[0]))

static void fsampler(pccx_sampler_config *c)
{
	pccx_sampler_config_default(c);
	c->temperature = 0.8f;
	c->seed = 11;
}

/* The tokens of an undisturbed run: the prompt, then n samples. */
static void undisturbed(bool verify, size_t n, struct run *out)
{
	struct faulty f;
	pccx_sampler_config c;
	pccx_diag d = { 0 };

	fsampler(&c);
	memset(out, 0, sizeof(*out));
	faulty_open(&f, verify);
	ck_assert_msg(pccx_session_prefill(f.s, fprompt, FPROMPT, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_generate(f.s, &c, n, collect, out, &d) == 0, "%s", d.msg);
	faulty_close(&f);
}

/*
 * A device fault (here DMA_SLVERR injected at one instruction of one job) reaches the caller
 * as PCCX_ERR_DEVICE naming the cause and the instruction; nothing crashes or leaks (the ASan
 * build checks), and the session is where it was: a failed prefill leaves no position
 * behind, and generate after a failed generate step feeds the token it had delivered and
 * goes on, so the tokens are those of an undisturbed run. The loop index picks where the
 * fault lands (job number, instruction) and whether verify runs alongside.
 */
START_TEST(device_fault_every_session_path)
{
	static const struct {
		uint64_t job;
		uint32_t insn;
		bool in_prefill;
	} at[] = {
		/* prefill: its first four tokens are one chunk, the last a step */
		{ 0, 0, true }, { 0, 5000, true }, { 1, 1600, true },
		{ 0, 0, false }, { 3, 1200, false },                   /* generate steps */
	};
	unsigned which = (unsigned)_i % 5;
	bool verify = _i >= 5;
	struct run want, got;
	struct faulty f;
	pccx_sampler_config c;
	struct pccx_stats st;
	pccx_diag d = { 0 };
	const size_t n = 8;
	int rc;

	undisturbed(verify, n, &want);
	fsampler(&c);
	memset(&got, 0, sizeof(got));
	faulty_open(&f, verify);
	if (at[which].in_prefill) {
		ck_assert_int_eq(pccx__device_test_inject_error(f.dev, at[which].job, at[which].insn,
								PCCX_CAUSE_DMA_SLVERR), 0);
		rc = pccx_session_prefill(f.s, fprompt, FPROMPT, &d);
		ck_assert_msg(rc == PCCX_ERR_DEVICE, "prefill: %d %s", rc, d.msg);
		ck_assert_ptr_nonnull(strstr(d.msg, "DMA_SLVERR"));
		ck_assert_int_eq(pccx_session_stats(f.s, &st), 0);
		ck_assert_uint_eq(st.prompt_tokens, 0);
		/* nothing of the failed prefill stays: generate still wants a prompt */
		ck_assert_int_eq(pccx_session_generate(f.s, &c, 1, collect, &got, &d),
				 PCCX_ERR_INVALID);
		ck_assert_msg(pccx_session_prefill(f.s, fprompt, FPROMPT, &d) == 0, "%s", d.msg);
		ck_assert_msg(pccx_session_generate(f.s, &c, n, collect, &got, &d) == 0, "%s",
			      d.msg);
	} else {
		ck_assert_msg(pccx_session_prefill(f.s, fprompt, FPROMPT, &d) == 0, "%s", d.msg);
		ck_assert_int_eq(pccx__device_test_inject_error(f.dev, at[which].job, at[which].insn,
								PCCX_CAUSE_DMA_SLVERR), 0);
		rc = pccx_session_generate(f.s, &c, n, collect, &got, &d);
		ck_assert_msg(rc == PCCX_ERR_DEVICE, "generate: %d %s", rc, d.msg);
		ck_assert_ptr_nonnull(strstr(d.msg, "DMA_SLVERR"));
		/* the sample whose step failed was delivered; it is fed before the next one */
		ck_assert_uint_eq(got.n, at[which].job + 1);
		/* a prompt cannot jump the queue */
		ck_assert_int_eq(pccx_session_prefill(f.s, fprompt, 1, &d), PCCX_ERR_INVALID);
		ck_assert_msg(pccx_session_generate(f.s, &c, n - got.n, collect, &got, &d) == 0,
			      "%s", d.msg);
	}
	ck_assert_uint_eq(got.n, n);
	ck_assert_mem_eq(got.toks, want.toks, n * sizeof(want.toks[0]));
	faulty_close(&f);
}
END_TEST

/*
 * verify catches a result that is wrong without an error: one GEMV's first output element
 * with its lowest bit flipped (the loop index picks the job and the instruction: the prompt's
 * chunk early and late, the last prompt token's step, a generate step). The call fails with
 * PCCX_ERR_MISMATCH naming the stage and the element; without verify the same job runs on.
 */
START_TEST(verify_catches_a_flipped_result)
{
	static const struct {
		uint64_t job;
		uint32_t insn;
		bool in_prefill;
	} at[] = { { 0, 0, true }, { 0, 4000, true }, { 1, 300, true }, { 1, 200, false } };
	unsigned which = (unsigned)_i % 4;
	bool verify = _i < 4;
	struct faulty f;
	struct run got;
	pccx_sampler_config c;
	pccx_diag d = { 0 };
	int rc;

	fsampler(&c);
	memset(&got, 0, sizeof(got));
	faulty_open(&f, verify);
	if (!at[which].in_prefill)
		ck_assert_msg(pccx_session_prefill(f.s, fprompt, FPROMPT, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx__device_test_inject_flip(f.dev, at[which].job, at[which].insn), 0);
	if (at[which].in_prefill)
		rc = pccx_session_prefill(f.s, fprompt, FPROMPT, &d);
	else
		rc = pccx_session_generate(f.s, &c, 4, collect, &got, &d);
	if (verify) {
		ck_assert_msg(rc == PCCX_ERR_MISMATCH, "%d %s", rc, d.msg);
		ck_assert_msg(strstr(d.msg, "stage '") && strstr(d.msg, "differs: device"), "%s",
			      d.msg);
	} else {
		ck_assert_msg(rc == 0, "%d %s", rc, d.msg);
	}
	faulty_close(&f);
}
END_TEST

/*
 * A slow host changes nothing: every job of the tiny model fed by a host that stalls after
 * every 13th register access (each phase of the 5-access DataMover command and the word
 * push is hit) for 2.5 times the overrun grace, with every stage verified.
 */
START_TEST(slow_host_same_bits)
{
	struct run want, got;
	struct faulty f;
	pccx_sampler_config c;
	pccx_diag d = { 0 };
	const size_t n = 4;

	undisturbed(false, n, &want);
	fsampler(&c);
	memset(&got, 0, sizeof(got));
	faulty_open(&f, true);
	ck_assert_int_eq(pccx__device_test_slow_host(f.dev, 13, (uint64_t)_i, 20480), 0);
	ck_assert_msg(pccx_session_prefill(f.s, fprompt, FPROMPT, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_generate(f.s, &c, n, collect, &got, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(got.n, n);
	ck_assert_mem_eq(got.toks, want.toks, n * sizeof(want.toks[0]));
	faulty_close(&f);
}
END_TEST

/* A tiny model's device and model, and a session on it holding at most max_context positions. */
struct conv {
	pccx_device *dev;
	pccx_model *model;
	pccx_session *s;
};

static int conv_open(struct conv *c, const char *config, const char *tokenizer,
		     uint32_t max_context, pccx_diag *d)
{
	struct pccx_device_opts dopt = { sizeof(dopt), NULL, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, config, 3, tokenizer, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt),
					  .max_context = max_context };
	int rc;

	memset(c, 0, sizeof(*c));
	rc = pccx_device_open(&dopt, &c->dev, d);
	if (!rc)
		rc = pccx_model_load(c->dev, &mopt, &c->model, d);
	if (!rc)
		rc = pccx_session_create(c->model, &sopt, &c->s, d);
	return rc;
}

static void conv_close(struct conv *c)
{
	pccx_session_free(c->s);
	pccx_model_free(c->model);
	pccx_device_close(c->dev);
}

static void assert_context(const pccx_session *s, uint32_t used, uint32_t max)
{
	uint32_t u = 0, m = 0;

	ck_assert_int_eq(pccx_session_context(s, &u, &m), 0);
	ck_assert_uint_eq(u, used);
	ck_assert_uint_eq(m, max);
}

/*
 * A conversation continued in one session (prefill, generate, prefill, generate) samples what a
 * new session given the whole history at once samples (greedy: no RNG position to differ).
 */
START_TEST(session_continues_across_turns)
{
	static const int32_t turn1[] = { 2, 17, 42 }, turn2[] = { 99, 3, 7, 11 };
	int32_t hist[64];
	struct run a = { 0 }, b = { 0 }, c = { 0 };
	pccx_sampler_config sc;
	struct conv x, y;
	pccx_diag d = { 0 };
	size_t n = 0;

	pccx_sampler_config_default(&sc);
	sc.temperature = 0;
	ck_assert_msg(conv_open(&x, "tiny", NULL, 0, &d) == 0, "%s", d.msg);
	assert_context(x.s, 0, 1024);
	ck_assert_msg(pccx_session_prefill(x.s, turn1, 3, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_generate(x.s, &sc, 6, collect, &a, &d) == 0, "%s", d.msg);
	/* no tokenizer, no stop token: the 6 sampled tokens are all fed back */
	assert_context(x.s, 9, 1024);
	ck_assert_msg(pccx_session_prefill(x.s, turn2, 4, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_generate(x.s, &sc, 5, collect, &b, &d) == 0, "%s", d.msg);
	assert_context(x.s, 18, 1024);

	memcpy(hist + n, turn1, sizeof(turn1));
	n += 3;
	memcpy(hist + n, a.toks, 6 * sizeof(hist[0]));
	n += 6;
	memcpy(hist + n, turn2, sizeof(turn2));
	n += 4;
	ck_assert_msg(conv_open(&y, "tiny", NULL, 0, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_prefill(y.s, hist, n, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_generate(y.s, &sc, 5, collect, &c, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(c.n, 5);
	ck_assert_mem_eq(b.toks, c.toks, 5 * sizeof(b.toks[0]));
	conv_close(&x);
	conv_close(&y);
}
END_TEST

/* max_context limits the context: a prefill that does not fit is refused whole. */
START_TEST(max_context_is_the_limit)
{
	static const int32_t p[] = { 2, 17, 42, 99, 3 };
	pccx_sampler_config sc;
	struct conv x;
	struct run r = { 0 };
	pccx_diag d = { 0 };

	pccx_sampler_config_default(&sc);
	ck_assert_msg(conv_open(&x, "tiny", NULL, 8, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_prefill(x.s, p, 5, &d) == 0, "%s", d.msg);
	ck_assert_msg(pccx_session_generate(x.s, &sc, 2, collect, &r, &d) == 0, "%s", d.msg);
	assert_context(x.s, 7, 8);
	ck_assert_int_eq(pccx_session_prefill(x.s, p, 2, &d), PCCX_ERR_RANGE);
	ck_assert_ptr_nonnull(strstr(d.msg, "context full"));
	assert_context(x.s, 7, 8);
	ck_assert_msg(pccx_session_prefill(x.s, p, 1, &d) == 0, "%s", d.msg);
	assert_context(x.s, 8, 8);
	conv_close(&x);

	/* more than the model's KV cache holds */
	ck_assert_int_eq(conv_open(&x, "tiny", NULL, 1025, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "max_context 1025"));
	conv_close(&x);
}
END_TEST

/*
 * Turns tokenized one by one are the whole conversation rendered at once (the Gemma template);
 * the first is what pccx_session_tokenize gives with the chat template.
 */
START_TEST(tokenize_turn_is_the_template)
{
	static const pccx_chat_turn conv[] = {
		{ "user", " Hello there\n" }, { "model", "Hi! How can I help?" },
		{ "user", "Tell me a story." },
	};
	const char *tok = getenv("PCCX_TOKENIZER_JSON");
	int32_t *ids = NULL, *all = NULL, *part;
	size_t n = 0, n_all = 0, got = 0, i;
	char *text = NULL;
	size_t len = 0;
	struct conv x;
	pccx_diag d = { 0 };

	/* no tokenizer: refused */
	ck_assert_msg(conv_open(&x, "tiny", NULL, 0, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx_session_tokenize_turn(x.s, "user", "hi", true, &ids, &n, &d),
			 PCCX_ERR_INVALID);
	conv_close(&x);
	if (!tok) {
		ck_assert_msg(!getenv("PCCX_REQUIRE_ORACLE"), "PCCX_TOKENIZER_JSON is not set");
		return;
	}
	ck_assert_msg(conv_open(&x, "tiny-vocab", tok, 0, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(pccx_chat_render_gemma(conv, 3, true, &text, &len, &d), 0);
	ck_assert_int_eq(pccx_tokenizer_encode(pccx_session_tokenizer(x.s), text, len, 0, &all,
					       &n_all, &d), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_msg(pccx_session_tokenize_turn(x.s, conv[i].role, conv[i].content, i == 0,
							 &part, &n, &d) == 0, "%s", d.msg);
		ck_assert_uint_le(got + n, n_all);
		ck_assert_mem_eq(part, all + got, n * sizeof(*part));
		got += n;
		free(part);
	}
	ck_assert_uint_eq(got, n_all);
	/* the first turn alone is the chat template's prompt */
	ck_assert_int_eq(pccx_session_tokenize(x.s, conv[0].content, true, &ids, &n, &d), 0);
	ck_assert_int_eq(pccx_session_tokenize_turn(x.s, "user", conv[0].content, true, &part,
						    &got, &d), 0);
	ck_assert_uint_eq(n, got);
	ck_assert_mem_eq(ids, part, n * sizeof(*ids));
	free(ids);
	free(part);
	/* a model turn with no content closes a generated reply: the end of turn */
	ck_assert_int_eq(pccx_session_tokenize_turn(x.s, "model", "", false, &part, &n, &d), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(part[0], pccx_tokenizer_find(pccx_session_tokenizer(x.s),
						      "<end_of_turn>", 13));
	free(part);
	ck_assert_int_eq(pccx_session_tokenize_turn(x.s, "system", "be brief", true, &part, &n,
						    &d), PCCX_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "system"));
	free(text);
	free(all);
	conv_close(&x);
}
END_TEST

/* NULL where a session belongs is refused, not followed. */
START_TEST(null_session_refused)
{
	pccx_diag d = { 0 };
	int32_t *ids = NULL;
	size_t n = 0;

	ck_assert_int_eq(pccx_session_generate(NULL, NULL, 4, NULL, NULL, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_session_prefill(NULL, fprompt, 1, &d), PCCX_ERR_INVALID);
	ck_assert_int_eq(pccx_session_tokenize(NULL, "x", false, &ids, &n, &d), PCCX_ERR_INVALID);
	ck_assert_ptr_null(pccx_session_tokenizer(NULL));
	ck_assert_int_eq(pccx_session_tokenize_turn(NULL, "user", "x", true, &ids, &n, &d),
			 PCCX_ERR_INVALID);
	pccx_session_free(NULL);
}
END_TEST

START_TEST(unknown_backend_refused)
{
	struct pccx_device_opts dopt = { sizeof(dopt), "usb", NULL, NULL, NULL };
	pccx_device *dev = NULL;
	pccx_diag d = { 0 };

	ck_assert_int_eq(pccx_device_open(&dopt, &dev, &d), PCCX_ERR_NOT_FOUND);
	ck_assert_ptr_null(dev);
	ck_assert_ptr_nonnull(strstr(d.msg, "usb"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("run");
	TCase *tc = tcase_create("end-to-end");

	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, tiny_64_tokens_bit_exact);
	tcase_add_test(tc, tiny_rowmask_same_tokens);
	tcase_add_test(tc, tiny_vocab_64_tokens_bit_exact);
	tcase_add_loop_test(tc, family_64_tokens_bit_exact, 0,
			    sizeof(family_configs) / sizeof(family_configs[0]));
	tcase_add_test(tc, moe_64_tokens_bit_exact);
	tcase_add_test(tc, smul_same_tokens_fewer_cycles);
	tcase_add_test(tc, prompt_chunks_past_the_window_full_size);
	tcase_add_loop_test(tc, prompt_chunks_same_tokens, 0,
			    2 * sizeof(chunk_configs) / sizeof(chunk_configs[0]));
	tcase_add_test(tc, deterministic_and_verify_does_not_change_tokens);
	tcase_add_test(tc, sampler_seed_is_used);
	tcase_add_test(tc, generate_needs_a_prompt);
	tcase_add_test(tc, unknown_backend_refused);
	tcase_add_loop_test(tc, device_fault_every_session_path, 0, 10);
	tcase_add_loop_test(tc, slow_host_same_bits, 0, 2);
	tcase_add_loop_test(tc, verify_catches_a_flipped_result, 0, 8);
	tcase_add_test(tc, null_session_refused);
	tcase_add_test(tc, session_continues_across_turns);
	tcase_add_test(tc, max_context_is_the_limit);
	tcase_add_test(tc, tokenize_turn_is_the_template);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
