// SPDX-License-Identifier: MIT
/*
 * libpccx: devices, models and sessions.
 *
 * A session runs the Gemma 3n step (reference/gemma3n_graph.c) through the compiler; the
 * compiler's end() hands each step's job to the device backend, so when a step returns, the
 * device has produced its logits and KV rows in the session's buffers. With verify set, a
 * second session runs the same steps on the bit-exact reference executor and every stage
 * tensor and the logits are compared bit for bit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_sim.h"
#include "compiler.h"
#include "diag.h"
#include "exec_ref.h"
#include "gemma3n.h"
#include "gemma3n_gguf.h"
#include "pccx/pccx.h"
#include "pccx/tokenizer.h"
#include "pccx_num.h"
#include "verify.h"

struct pccx_device {
	char backend[16];
	struct pccx_simb *simb;
	char trace_path[256];
};

struct pccx_model {
	pccx_device *dev;
	struct pccx_g3n_model *m;
	pccx_tokenizer *tok;
};

struct pccx_session {
	pccx_model *model;
	struct pccx_compiler comp;
	struct pccx_g3n_session *dev;     /* the step on the device, through the compiler */
	struct pccx_ref_exec *rx;          /* verify: the reference executor */
	struct pccx_g3n_session *ref;      /* verify: the reference session */
	struct pccx_verify *ver;
	pccx_sampler *smp;
	float *logits, *ref_logits;
	int32_t *hist;
	size_t n_hist, cap_hist;
	struct pccx_stats st;
	uint32_t token;                    /* token of the step in progress (messages) */
	bool have_logits;                  /* s->logits belong to the last history token */
	bool generating;                   /* inside pccx_session_generate */
	struct pccx_stage_time *prof;      /* stage profile of generation steps */
	size_t n_prof, cap_prof;
	int submit_status;
	pccx_diag submit_diag;
};

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- devices --------------------------------------------------------------------------- */

int pccx_device_open(const struct pccx_device_opts *opts, pccx_device **out, pccx_diag *d)
{
	const char *backend = opts && opts->backend ? opts->backend : "sim";
	struct pccx_sim_config cfg;
	pccx_device *dev;
	int rc;

	*out = NULL;
	if (opts && opts->struct_size && opts->struct_size < sizeof(size_t))
		return pccx_fail(d, PCCX_ERR_INVALID, "device options: struct_size %zu too small",
				 opts->struct_size);
	if (strcmp(backend, "sim"))
		return pccx_fail(d, PCCX_ERR_NOT_FOUND,
				 "backend '%s' is not available (this build has: sim)", backend);
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return pccx_fail(d, PCCX_ERR_NOMEM, "device: out of memory");
	snprintf(dev->backend, sizeof(dev->backend), "%s", backend);
	pccx_sim_config_default(&cfg);
	if (opts && opts->dtb) {
		rc = pccx_sim_config_from_dtb_file(&cfg, opts->dtb, d);
		if (rc) {
			free(dev);
			return rc;
		}
	}
	rc = pccx_simb_create(&cfg, &dev->simb, d);
	if (rc) {
		free(dev);
		return rc;
	}
	if (opts && opts->trace_path) {
		rc = pccx_sim_trace_open(pccx_simb_sim(dev->simb), opts->trace_path, d);
		if (rc) {
			pccx_simb_destroy(dev->simb);
			free(dev);
			return rc;
		}
	}
	*out = dev;
	return PCCX_OK;
}

void pccx_device_close(pccx_device *dev)
{
	if (!dev)
		return;
	/* destroying the simulator completes an open trace; pccx_device_flush reports errors */
	if (dev->simb)
		pccx_simb_destroy(dev->simb);
	free(dev);
}

int pccx_device_flush(pccx_device *dev, pccx_diag *d)
{
	if (!dev)
		return pccx_fail(d, PCCX_ERR_INVALID, "no device");
	return pccx_sim_trace_close(pccx_simb_sim(dev->simb), d);
}

int pccx_device_info(pccx_device *dev, struct pccx_device_info *info)
{
	const struct pccx_sim_config *c;

	if (!dev || !info)
		return PCCX_ERR_INVALID;
	memset(info, 0, sizeof(*info));
	snprintf(info->backend, sizeof(info->backend), "%s", dev->backend);
	c = pccx_sim_get_config(pccx_simb_sim(dev->simb));
	{
		pccx_sim *sim = pccx_simb_sim(dev->simb);
		uint64_t id = 0, feat = 0;

		if (pccx_sim_mmio_read64(sim, PCCX_REG_ID, &id) ||
		    pccx_sim_mmio_read64(sim, PCCX_REG_FEATURES, &feat))
			return PCCX_ERR_DEVICE;
		info->hw_version = (uint32_t)id;
		info->features = (uint32_t)feat;
	}
	info->l2_words = c->l2_words;
	info->dma_addr_bits = c->dma_address_bits;
	info->core_hz = c->core_hz;
	info->axi_hz = c->axi_hz;
	info->ddr_bytes_per_s = c->ddr_mbps * 1000000ull;
	return PCCX_OK;
}

/* ---- models ---------------------------------------------------------------------------- */

int pccx_model_load(pccx_device *dev, const struct pccx_model_opts *opts, pccx_model **out,
		    pccx_diag *d)
{
	struct pccx_g3n_config cfg;
	pccx_model *model;
	int rc;

	*out = NULL;
	if (!dev || !opts)
		return pccx_fail(d, PCCX_ERR_INVALID, "model: no device or options");
	model = calloc(1, sizeof(*model));
	if (!model)
		return pccx_fail(d, PCCX_ERR_NOMEM, "model: out of memory");
	model->dev = dev;
	if (opts->path) {
		pccx_tokenizer *embedded = NULL;

		if (opts->progress)
			opts->progress(opts->user, "loading", 0, 1);
		rc = pccx_g3n_load_gguf(&model->m, opts->path, 0, NULL,
					opts->tokenizer ? NULL : &embedded, d);
		if (rc)
			goto fail;
		model->tok = embedded;
		if (opts->progress)
			opts->progress(opts->user, "loading", 1, 1);
	} else {
		rc = pccx_g3n_config_preset(opts->synth_config ? opts->synth_config : "tiny", &cfg,
					    d);
		if (!rc)
			rc = pccx_g3n_model_create(&model->m, &cfg, d);
		if (rc)
			goto fail;
		if (opts->progress)
			opts->progress(opts->user, "synthesising", 0, model->m->size);
		rc = pccx_g3n_synth(model->m, opts->synth_seed, 0, d);
		if (rc)
			goto fail;
		if (opts->progress)
			opts->progress(opts->user, "synthesising", model->m->size, model->m->size);
	}
	if (opts->tokenizer && !model->tok) {
		rc = pccx_tokenizer_load_json(opts->tokenizer, &model->tok, d);
		if (rc)
			goto fail;
		if (pccx_tokenizer_n_vocab(model->tok) > model->m->cfg.vocab) {
			rc = pccx_fail(d, PCCX_ERR_INVALID,
				       "%s: %zu tokens, more than the model's vocabulary of %u",
				       opts->tokenizer, pccx_tokenizer_n_vocab(model->tok),
				       model->m->cfg.vocab);
			goto fail;
		}
	}
	*out = model;
	return PCCX_OK;
fail:
	pccx_model_free(model);
	return rc;
}

void pccx_model_free(pccx_model *model)
{
	if (!model)
		return;
	if (model->tok)
		pccx_tokenizer_free(model->tok);
	if (model->m)
		pccx_g3n_model_free(model->m);
	free(model);
}

/* ---- sessions -------------------------------------------------------------------------- */

/* Compiler bind: the sim backend opens a DMA window onto the session's own host memory. */
static int bind_sim(void *user, uint32_t buf, void *base, uint64_t size, bool dev_write,
		    uint32_t *handle)
{
	pccx_session *s = user;
	uint32_t access = PCCX_BUF_DEV_READ | (dev_write ? PCCX_BUF_DEV_WRITE : 0);

	(void)buf;
	return pccx_simb_buf_import(s->model->dev->simb, base, size, access, handle, NULL);
}

/* Fold the finished job's stage times into the profile (stage names without "L<n>."). */
static void profile_job(pccx_session *s, const struct pccx_compiler *c)
{
	pccx_sim *sim = pccx_simb_sim(s->model->dev->simb);
	const struct pccx_sim_insn_time *t0 = pccx_sim_insn_time(sim, 0);
	uint64_t prev = t0 ? t0->issue : 0;
	uint32_t k;

	for (k = 0; k < c->jb.n_stages; k++) {
		const struct pccx_jb_stage *st = &c->jb.stages[k];
		const struct pccx_sim_insn_time *t = pccx_sim_insn_time(sim, st->insn);
		const char *name = st->name;
		size_t i;

		if (!t || !t->done)
			continue;
		if (name[0] == 'L') {
			const char *dot = strchr(name, '.');

			if (dot)
				name = dot + 1;
		}
		for (i = 0; i < s->n_prof && strcmp(s->prof[i].name, name); i++)
			;
		if (i == s->n_prof) {
			if (s->n_prof == s->cap_prof) {
				size_t cap = s->cap_prof ? 2 * s->cap_prof : 64;
				struct pccx_stage_time *np = realloc(s->prof, cap * sizeof(*np));

				if (!np)
					return;   /* the profile is best effort: results are unaffected */
				s->prof = np;
				s->cap_prof = cap;
			}
			memset(&s->prof[i], 0, sizeof(s->prof[i]));
			snprintf(s->prof[i].name, sizeof(s->prof[i].name), "%s", name);
			s->n_prof++;
		}
		s->prof[i].cycles += t->done > prev ? t->done - prev : 0;
		s->prof[i].count++;
		if (t->done > prev)
			prev = t->done;
	}
}

static int cmp_prof(const void *a, const void *b)
{
	const struct pccx_stage_time *x = a, *y = b;

	return x->cycles < y->cycles ? 1 : x->cycles > y->cycles ? -1 : strcmp(x->name, y->name);
}

int pccx_session_stage_profile(const pccx_session *s, struct pccx_stage_time **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!s)
		return PCCX_ERR_INVALID;
	*out = malloc((s->n_prof ? s->n_prof : 1) * sizeof(**out));
	if (!*out)
		return PCCX_ERR_NOMEM;
	memcpy(*out, s->prof, s->n_prof * sizeof(**out));
	qsort(*out, s->n_prof, sizeof(**out), cmp_prof);
	*n = s->n_prof;
	return PCCX_OK;
}

/* Compiler end-of-step: run the job on the device now, so the step's outputs exist. */
static int submit_job(void *user, struct pccx_compiler *c)
{
	pccx_session *s = user;
	struct pccx_job_view job;
	struct pccx_simb_result res;
	struct pccx_simb_opts o = { 0 };
	int rc;

	rc = pccx_compiler_job(c, &job, &s->submit_diag);
	if (!rc) {
		/* statistics are reset at each submit: res.stats covers this job alone */
		if (s->ver)
			rc = pccx_verify_device_job(s->ver, s->model->dev->simb, &job, c, &o, &res,
						    &s->submit_diag);
		else
			rc = pccx_simb_submit_wait(s->model->dev->simb, &job, &o, &res,
						   &s->submit_diag);
	}
	if (!rc) {
		unsigned p;

		s->st.jobs++;
		s->st.device_cycles += res.cycles;
		if (s->generating) {
			for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
				s->st.decode_weight_bytes += res.stats.dm_bytes[p];
			s->st.decode_cycles += res.cycles;
			s->st.decode_steps++;
			profile_job(s, c);
		}
		for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
			s->st.weight_bytes += res.stats.dm_bytes[p];
		s->st.dma_bytes += res.stats.dm_bytes[PCCX_DM_FMAP] +
				   res.stats.dm_bytes[PCCX_DM_RESULT];
	}
	s->submit_status = rc;
	return rc;
}

int pccx_session_create(pccx_model *model, const struct pccx_session_opts *opts,
			pccx_session **out, pccx_diag *d)
{
	pccx_sampler_config scfg;
	pccx_session *s;
	size_t vocab;
	int rc;

	*out = NULL;
	if (!model)
		return pccx_fail(d, PCCX_ERR_INVALID, "session: no model");
	s = calloc(1, sizeof(*s));
	if (!s)
		return pccx_fail(d, PCCX_ERR_NOMEM, "session: out of memory");
	s->model = model;
	vocab = model->m->cfg.vocab;
	pccx_compiler_init(&s->comp, bind_sim, s);
	pccx_compiler_on_end(&s->comp, submit_job, s);
	s->logits = malloc(vocab * sizeof(float));
	s->ref_logits = malloc(vocab * sizeof(float));
	if (!s->logits || !s->ref_logits) {
		rc = pccx_fail(d, PCCX_ERR_NOMEM, "session: cannot allocate %zu logits", vocab);
		goto fail;
	}
	if (opts && opts->verify) {
		rc = pccx_ref_exec_create(&s->rx, 0, PCCX_KERN_AUTO, d);
		if (!rc)
			rc = pccx_g3n_session_create(&s->ref, model->m, pccx_ref_exec_ops(), s->rx,
						     d);
		if (!rc)
			rc = pccx_verify_create(&s->ver, s->rx, d);
		if (rc)
			goto fail;
	}
	rc = pccx_g3n_session_create(&s->dev, model->m, pccx_compiler_ops(), &s->comp, d);
	if (rc)
		goto fail;
	pccx_sampler_config_default(&scfg);
	rc = pccx_sampler_create(&s->smp, &scfg, vocab, d);
	if (rc)
		goto fail;
	*out = s;
	return PCCX_OK;
fail:
	pccx_session_free(s);
	return rc;
}

void pccx_session_free(pccx_session *s)
{
	if (!s)
		return;
	if (s->dev)
		pccx_g3n_session_free(s->dev);
	if (s->ref)
		pccx_g3n_session_free(s->ref);
	if (s->ver)
		pccx_verify_free(s->ver);
	if (s->rx)
		pccx_ref_exec_free(s->rx);
	if (s->smp)
		pccx_sampler_destroy(s->smp);
	pccx_compiler_free(&s->comp);
	free(s->logits);
	free(s->ref_logits);
	free(s->hist);
	free(s->prof);
	free(s);
}

int pccx_session_tokenize(pccx_session *s, const char *text, bool chat, int32_t **ids, size_t *n,
			  pccx_diag *d)
{
	const pccx_tokenizer *tk = s->model->tok;
	char *rendered = NULL;
	size_t len;
	int rc;

	*ids = NULL;
	*n = 0;
	if (!tk)
		return pccx_fail(d, PCCX_ERR_INVALID, "the model has no tokenizer");
	if (chat) {
		pccx_chat_turn turn = { "user", text };

		rc = pccx_chat_render_gemma(&turn, 1, true, &rendered, &len, d);
		if (rc)
			return rc;
		rc = pccx_tokenizer_encode(tk, rendered, len, 0, ids, n, d);
		free(rendered);
		return rc;
	}
	return pccx_tokenizer_encode(tk, text, strlen(text),
				     pccx_tokenizer_add_bos_default(tk) ? PCCX_TOK_ADD_BOS : 0, ids,
				     n, d);
}

const pccx_tokenizer *pccx_session_tokenizer(const pccx_session *s)
{
	return s->model->tok;
}

int pccx_session_stats(const pccx_session *s, struct pccx_stats *st)
{
	const struct pccx_sim_config *c;
	double ceiling;

	if (!s || !st)
		return PCCX_ERR_INVALID;
	*st = s->st;
	c = pccx_sim_get_config(pccx_simb_sim(s->model->dev->simb));
	st->device_seconds = (double)st->device_cycles / (double)c->core_hz;
	ceiling = (double)c->ddr_mbps * 1e6 * st->device_seconds;
	st->ddr_utilisation = ceiling > 0 ? (double)(st->weight_bytes + st->dma_bytes) / ceiling
					  : 0.0;
	return PCCX_OK;
}

static int push_history(pccx_session *s, int32_t tok, pccx_diag *d)
{
	if (s->n_hist == s->cap_hist) {
		size_t cap = s->cap_hist ? 2 * s->cap_hist : 256;
		int32_t *h = realloc(s->hist, cap * sizeof(*h));

		if (!h)
			return pccx_fail(d, PCCX_ERR_NOMEM, "session: out of memory");
		s->hist = h;
		s->cap_hist = cap;
	}
	s->hist[s->n_hist++] = tok;
	return PCCX_OK;
}

/* One step of both sessions (device, and reference when verifying); logits optional. */
static int step(pccx_session *s, int32_t token, bool logits, pccx_diag *d)
{
	size_t vocab = s->model->m->cfg.vocab;
	uint32_t pos = s->dev->pos;
	int rc;

	if (token < 0 || (size_t)token >= vocab)
		return pccx_fail(d, PCCX_ERR_RANGE, "token %d outside the vocabulary of %zu", token,
				 vocab);
	s->token = (uint32_t)token;
	if (s->ver) {
		/* the reference first: its stage tensors are what the device is compared with */
		pccx_verify_begin_step(s->ver, (uint32_t)token, pos);
		rc = pccx_g3n_session_step(s->ref, (uint32_t)token, logits ? s->ref_logits : NULL,
					   d);
		if (rc)
			return rc;
	}
	s->submit_status = 0;
	rc = pccx_g3n_session_step(s->dev, (uint32_t)token, logits ? s->logits : NULL, d);
	if (rc) {
		if (s->submit_status && s->submit_diag.msg[0] && d)
			*d = s->submit_diag;
		return s->submit_status ? s->submit_status : rc;
	}
	if (s->ver && logits && memcmp(s->logits, s->ref_logits, vocab * sizeof(float))) {
		size_t i = 0;

		while (i < vocab && !memcmp(&s->logits[i], &s->ref_logits[i], sizeof(float)))
			i++;
		return pccx_fail(d, PCCX_ERR_MISMATCH,
				 "verify: token %d (position %u): logits differ first at element "
				 "%zu: device %g, reference %g",
				 token, pos, i, (double)s->logits[i], (double)s->ref_logits[i]);
	}
	return push_history(s, token, d);
}

int pccx_session_prefill(pccx_session *s, const int32_t *ids, size_t n, pccx_diag *d)
{
	double t0 = now_seconds();
	size_t i;
	int rc = PCCX_OK;

	/* only the last prompt token needs the LM head: its logits give the first sample */
	for (i = 0; i < n && !rc; i++)
		rc = step(s, ids[i], i + 1 == n, d);
	if (!rc)
		s->have_logits = n > 0;
	s->st.prompt_tokens += i - (rc ? 1 : 0);
	s->generating = false;
	s->st.host_seconds += now_seconds() - t0;
	return rc;
}

static bool is_stop_token(const pccx_session *s, int32_t tok)
{
	const pccx_tokenizer *tk = s->model->tok;
	size_t len;
	const char *p;

	if (!tk)
		return false;
	if (tok == pccx_tokenizer_eos(tk))
		return true;
	p = pccx_tokenizer_piece(tk, tok, &len);
	return p && len == 13 && !memcmp(p, "<end_of_turn>", 13);
}

int pccx_session_generate(pccx_session *s, const struct pccx_sampler_config *cfg,
			  size_t max_tokens, pccx_token_fn cb, void *user, pccx_diag *d)
{
	size_t vocab = s->model->m->cfg.vocab;
	double t0 = now_seconds();
	int32_t tok;
	size_t i;
	int rc;

	if (!s->have_logits)
		return pccx_fail(d, PCCX_ERR_INVALID,
				 "generate: prefill at least one token first (the logits of the last "
				 "prompt token give the first sample)");
	if (cfg) {
		rc = pccx_sampler_set_config(s->smp, cfg, d);
		if (rc)
			return rc;
	}
	rc = PCCX_OK;
	s->generating = true;
	for (i = 0; i < max_tokens && !rc; i++) {
		char buf[64];
		const char *piece = "";
		size_t plen = 0;

		rc = pccx_sampler_sample(s->smp, s->logits, vocab, s->hist, s->n_hist, &tok, d);
		if (rc)
			break;
		s->st.tokens++;
		if (s->model->tok) {
			char *text = NULL;

			if (!pccx_tokenizer_decode(s->model->tok, &tok, 1, PCCX_TOK_SKIP_SPECIAL,
						   &text, &plen, NULL) && plen < sizeof(buf)) {
				memcpy(buf, text, plen + 1);
				piece = buf;
			} else {
				plen = 0;
			}
			free(text);
		}
		if (cb && cb(user, tok, piece, plen))
			break;
		if (is_stop_token(s, tok))
			break;
		/* feed the sampled token: its logits give the next sample (and extend the KV) */
		s->have_logits = false;
		rc = step(s, tok, true, d);
		if (!rc)
			s->have_logits = true;
	}
	s->generating = false;
	s->st.host_seconds += now_seconds() - t0;
	return rc;
}
