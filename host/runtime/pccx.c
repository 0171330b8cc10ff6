// SPDX-License-Identifier: MIT
/*
 * libpccx: devices, models and sessions.
 *
 * A session runs the Gemma 3n step (reference/gemma_graph.c) through the compiler; the
 * compiler's end() hands each step's job to the device backend, so when a step returns, the
 * device has produced its logits and KV rows in the session's buffers. With verify set, a
 * second session runs the same steps on the bit-exact reference executor and every stage
 * tensor and the logits are compared bit for bit.
 *
 * Backends (struct backend below), one session logic:
 *   sim     the in-process simulator reads and writes the session's host buffers in place
 *           (zero-copy); verify compares every stage in L2 as it retires.
 *   kernel  /dev/pccx: each host buffer is backed by a buffer object (BO) filled from it at
 *           bind; before a job the per-step inputs are copied in, after it the logits are
 *           copied out; the KV cache lives in its BO only. Verify cannot read L2 there: it
 *           compares the logits and the KV rows the step wrote with the reference instead.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backend_kernel.h"
#include "backend_link.h"
#include "backend_sim.h"
#include "transport_usb.h"
#include "chat.h"
#include "compiler.h"
#include "diag.h"
#include "exec_ref.h"
#include "session.h"
#include "gemma_gguf.h"
#include "gemma_pieces.h"
#include "gemma_st.h"
#include "json.h"
#include "pccx/pccx.h"
#include "pccx/tokenizer.h"
#include "pccx_num.h"
#include "pccx_testing.h"
#include "tokenizer_gguf.h"
#include "verify.h"
#include "wpieces.h"

struct backend;

struct pccx_device {
	char backend[16];
	const struct backend *be;
	struct pccx_sim_backend *sim_be;        /* backend "sim" */
	struct pccx_kernel_backend *kernel_be;  /* backend "kernel" */
	struct pccx_link_backend *link_be;      /* backend "serial": a board over a link */
	char trace_path[256];
	struct pccx_sim_backend_opts sim_opts;    /* sim: per-job options (a slow host, pccx_testing.h) */
	bool inject;                       /* sim: arm an error before job number inject_job */
	uint64_t inject_job;
	uint32_t inject_index, inject_cause;
	bool flip;                         /* sim: arm a flipped GEMV result before job flip_job */
	uint64_t flip_job;
	uint32_t flip_index;
};

/*
 * Kernel backend: the weights in BOs, shared by the model's sessions. They are split into
 * pieces (one BO each, at most the driver's max_bo_size) cut where no instruction's read
 * crosses, and only the bytes a decode step reads are copied (gemma_pieces.h). The compiler
 * sees one handle (the first piece's); run_kernel() points each weight descriptor at its piece.
 */
struct kweights {
	struct pccx_wpiece *pieces;
	size_t n;
	uint32_t handle;
};

struct pccx_model {
	pccx_device *dev;
	struct pccx_gemma_model *m;
	pccx_tokenizer *tok;
	const struct pccx_chat_format *chat;	/* its family's (pccx__chat_format_of) */
	int32_t stop[PCCX_CHAT_MAX_STOPS + 1];	/* ids that end generation (with a tokenizer) */
	size_t n_stop;
	struct kweights kw;
};

struct pccx_session {
	pccx_model *model;
	struct pccx_compiler comp;
	struct pccx_gemma_session *dev;     /* the step on the device, through the compiler */
	struct pccx_ref_exec *rx;          /* verify: the reference executor */
	struct pccx_gemma_session *ref;      /* verify: the reference session */
	struct pccx_verify *ver;
	/* prompt chunks (gemma_chunk.h) on the device and the reference; NULL: token by token */
	struct pccx_gemma_chunk *chunk_dev, *chunk_ref;
	uint32_t *chunk_toks;              /* (chunk rows) the tokens of the chunk being run */
	pccx_sampler *smp;
	float *logits, *ref_logits;
	int32_t *hist;
	size_t n_hist, cap_hist;
	uint32_t max_ctx;                  /* positions the context may hold (max_context) */
	struct pccx_stats st;
	uint32_t token;                    /* token of the step in progress (messages) */
	bool have_logits;                  /* s->logits belong to the last history token */
	bool have_pending;                 /* generate: `pending` was sampled and delivered, its */
	int32_t pending;                   /* step failed: the next generate feeds it first */
	bool generating;                   /* inside pccx_session_generate */
	struct pccx_stage_time *prof;      /* stage profile of generation steps */
	size_t n_prof, cap_prof;
	int submit_status;
	pccx_diag submit_diag;
	/* kernel backend: the BO behind each host buffer, and the device time the driver saw */
	struct kbuf {
		uint8_t *host, *map;       /* map: NULL when the buffer is in pieces */
		uint64_t size;
		uint32_t handle;           /* the one the compiler names (piece 0's) */
		bool bound;
		struct pccx_wpiece *pieces; /* KV cache larger than one device buffer */
		uint8_t **piece_map;
		size_t n_pieces;
	} kbuf[PCCX_NPU_NBUF];
	struct pccx_wpieces_out kjob;      /* the job with its weight descriptors in pieces */
	struct pccx_wpieces_out kjob_kv;   /* ... and then its KV descriptors */
	double kdev_seconds;
};

/* What one job cost, as far as the backend can tell. */
struct job_figures {
	uint64_t cycles;           /* simulated core cycles (sim) */
	uint64_t weight_bytes;     /* streamed weights */
	uint64_t dma_bytes;        /* other host DMA */
};

/*
 * A device backend. The session logic (compiler, reference, sampler, statistics) is shared;
 * a backend turns the session's host buffers into device buffers and runs a step's job.
 */
struct backend {
	const char *name;
	int (*open)(pccx_device *dev, const struct pccx_device_opts *opts, pccx_diag *d);
	void (*close)(pccx_device *dev);
	int (*flush)(pccx_device *dev, pccx_diag *d);
	int (*info)(pccx_device *dev, struct pccx_device_info *info);
	/* the compiler's bind: a device buffer for (base, size) */
	int (*bind)(pccx_session *s, uint32_t buf, void *base, uint64_t size, bool dev_write,
		    uint32_t *handle);
	void (*unbind)(pccx_session *s);
	/* run the step's job to completion; with s->ref set, also verify what it can */
	int (*run)(pccx_session *s, const struct pccx_compiler *c,
		   const struct pccx_job_view *job, struct job_figures *fig);
	/* device time of the figures so far */
	double (*device_seconds)(const pccx_session *s, double *ddr_bytes_per_s);
};

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- devices --------------------------------------------------------------------------- */

static const struct backend backends[4];

/* The KV260's nominal DDR peak: the figure the kernel backend reports (the driver has none). */
static uint64_t nominal_ddr_bytes_per_s(void)
{
	struct pccx_sim_config cfg;

	pccx__sim_config_default(&cfg);
	return cfg.ddr_mbps * 1000000ull;
}

static int sim_open(pccx_device *dev, const struct pccx_device_opts *opts, pccx_diag *d)
{
	struct pccx_sim_config cfg;
	int rc;

	pccx__sim_config_default(&cfg);
	if (opts && opts->dtb) {
		rc = pccx__sim_config_from_dtb_file(&cfg, opts->dtb, d);
		if (rc)
			return rc;
	}

	rc = pccx__sim_backend_create(&cfg, &dev->sim_be, d);
	if (rc)
		return rc;
	if (opts && opts->trace_path) {
		rc = pccx__sim_trace_open(pccx__sim_backend_sim(dev->sim_be), opts->trace_path, d);
		if (rc) {
			pccx__sim_backend_destroy(dev->sim_be);
			dev->sim_be = NULL;
			return rc;
		}
	}
	return PCCX_OK;
}

static void sim_close(pccx_device *dev)
{
	/* destroying the simulator completes an open trace; pccx_device_flush reports errors */
	if (dev->sim_be)
		pccx__sim_backend_destroy(dev->sim_be);
}

static int sim_flush(pccx_device *dev, pccx_diag *d)
{
	return pccx__sim_trace_close(pccx__sim_backend_sim(dev->sim_be), d);
}

static int sim_info(pccx_device *dev, struct pccx_device_info *info)
{
	const struct pccx_sim_config *c = pccx__sim_get_config(pccx__sim_backend_sim(dev->sim_be));
	pccx_sim *sim = pccx__sim_backend_sim(dev->sim_be);
	uint64_t id = 0, feat = 0;

	if (pccx__sim_mmio_read64(sim, PCCX_REG_ID, &id) ||
	    pccx__sim_mmio_read64(sim, PCCX_REG_FEATURES, &feat))
		return PCCX_ERR_DEVICE;
	info->hw_version = (uint32_t)id;
	info->features = (uint32_t)feat;
	info->l2_words = c->l2_words;
	info->dma_addr_bits = c->dma_address_bits;
	info->core_hz = c->core_hz;
	info->axi_hz = c->axi_hz;
	info->ddr_bytes_per_s = c->ddr_mbps * 1000000ull;
	return PCCX_OK;
}

/*
 * The kernel backend's buffer and job calls, on /dev/pccx or on a board over a link: the
 * link backend has the same interface (backend_link.h), so both share the session logic
 * below (bind_kernel, run_kernel, verify through the logits and KV rows).
 */
static int kb_info(pccx_device *dev, struct pccx_info *info)
{
	return dev->link_be ? pccx__link_backend_info(dev->link_be, info)
			    : pccx__kernel_backend_info(dev->kernel_be, info);
}

static int kb_alloc(pccx_device *dev, uint64_t size, uint32_t access, uint32_t *handle,
		    pccx_diag *d)
{
	return dev->link_be ? pccx__link_backend_buf_alloc(dev->link_be, size, access, handle, d)
			    : pccx__kernel_backend_buf_alloc(dev->kernel_be, size, access, handle,
							     d);
}

static void *kb_map(pccx_device *dev, uint32_t handle, uint64_t *size)
{
	return dev->link_be ? pccx__link_backend_buf_map(dev->link_be, handle, size)
			    : pccx__kernel_backend_buf_map(dev->kernel_be, handle, size);
}

/* The host wrote a buffer through its map: a board's copy is brought up to date at the job. */
static void kb_touch(pccx_device *dev, uint32_t handle)
{
	if (dev->link_be)
		pccx__link_backend_buf_touch(dev->link_be, handle);
}

static int kb_submit_wait(pccx_device *dev, const struct pccx_job_view *job,
			  const struct pccx_kernel_backend_opts *o,
			  struct pccx_kernel_backend_result *res, pccx_diag *d)
{
	return dev->link_be ? pccx__link_backend_submit_wait(dev->link_be, job, o, res, d)
			    : pccx__kernel_backend_submit_wait(dev->kernel_be, job, o, res, d);
}

static int serial_open(pccx_device *dev, const struct pccx_device_opts *opts, pccx_diag *d)
{
	struct pccx_link_transport t;
	int rc;

	if (opts && (opts->dtb || opts->trace_path))
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "backend 'serial': %s is for the sim backend only",
				  opts->dtb ? "a device tree" : "a trace");
	rc = pccx__serial_transport_open(opts ? opts->path : NULL, &t, d);
	if (rc)
		return rc;
	return pccx__link_backend_create(&t, opts->path, &dev->link_be, d);
}

static void serial_close(pccx_device *dev)
{
	pccx__link_backend_destroy(dev->link_be);
}

/* A board over USB (docs/usb.md): path is its VID:PID, NULL for the board daemon's default. */
static int usb_open(pccx_device *dev, const struct pccx_device_opts *opts, pccx_diag *d)
{
	struct pccx_link_transport t;
	char name[64];
	int rc;

	if (opts && (opts->dtb || opts->trace_path))
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "backend 'usb': %s is for the sim backend only",
				  opts->dtb ? "a device tree" : "a trace");
	rc = pccx__usb_transport_open(opts ? opts->path : NULL, &t, name, sizeof(name), d);
	if (rc)
		return rc;
	return pccx__link_backend_create(&t, name, &dev->link_be, d);
}

static int kernel_open(pccx_device *dev, const struct pccx_device_opts *opts, pccx_diag *d)
{
	if (opts && (opts->dtb || opts->trace_path))
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "backend 'kernel': %s is for the sim backend only",
				  opts->dtb ? "a device tree" : "a trace");
	return pccx__kernel_backend_create(opts ? opts->path : NULL, &dev->kernel_be, d);
}

static void kernel_close(pccx_device *dev)
{
	/* closing the file frees the buffers and jobs the driver holds for this device */
	pccx__kernel_backend_destroy(dev->kernel_be);
}

static int kernel_flush(pccx_device *dev, pccx_diag *d)
{
	(void)dev;
	(void)d;
	return PCCX_OK;
}

static int kernel_info(pccx_device *dev, struct pccx_device_info *info)
{
	struct pccx_info ki;

	if (kb_info(dev, &ki))
		return PCCX_ERR_IO;
	info->hw_version = (uint32_t)ki.hw_id;
	info->features = (uint32_t)ki.features;
	info->l2_words = ki.l2_words;
	info->dma_addr_bits = ki.dma_addr_bits;
	info->core_hz = (ki.clocks & 0xffffffffu) * 1000;    /* CLOCKS: kHz */
	info->axi_hz = (ki.clocks >> 32) * 1000;
	info->ddr_bytes_per_s = nominal_ddr_bytes_per_s();
	return PCCX_OK;
}

int pccx_device_open(const struct pccx_device_opts *opts, pccx_device **out, pccx_diag *d)
{
	const char *backend = opts && opts->backend ? opts->backend : "sim";
	const struct backend *be = NULL;
	pccx_device *dev;
	size_t i;
	int rc;

	*out = NULL;
	if (opts && opts->struct_size && opts->struct_size < sizeof(size_t))
		return pccx__fail(d, PCCX_ERR_INVALID, "device options: struct_size %zu too small",
				  opts->struct_size);
	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(backend, backends[i].name))
			be = &backends[i];
	if (!be)
		return pccx__fail(d, PCCX_ERR_NOT_FOUND, "backend '%s' is not available (this build "
				  "has: sim, kernel, serial, usb)", backend);
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return pccx__fail(d, PCCX_ERR_NOMEM, "device: out of memory");
	snprintf(dev->backend, sizeof(dev->backend), "%s", backend);
	dev->be = be;
	rc = be->open(dev, opts, d);
	if (rc) {
		free(dev);
		return rc;
	}
	*out = dev;
	return PCCX_OK;
}

void pccx_device_close(pccx_device *dev)
{
	if (!dev)
		return;
	dev->be->close(dev);
	free(dev);
}

int pccx_device_flush(pccx_device *dev, pccx_diag *d)
{
	if (!dev)
		return pccx__fail(d, PCCX_ERR_INVALID, "no device");
	return dev->be->flush(dev, d);
}

int pccx_device_info(pccx_device *dev, struct pccx_device_info *info)
{
	if (!dev || !info)
		return PCCX_ERR_INVALID;
	memset(info, 0, sizeof(*info));
	snprintf(info->backend, sizeof(info->backend), "%s", dev->backend);
	return dev->be->info(dev, info);
}

/* ---- test hooks (pccx_testing.h) ---- */

int pccx__device_test_inject_error(pccx_device *dev, uint64_t job, uint32_t index,
				   uint32_t cause)
{
	if (!dev || !dev->sim_be)
		return PCCX_ERR_UNSUPPORTED;
	dev->inject = true;
	dev->inject_job = job;
	dev->inject_index = index;
	dev->inject_cause = cause;
	return PCCX_OK;
}

int pccx__device_test_inject_flip(pccx_device *dev, uint64_t job, uint32_t index)
{
	if (!dev || !dev->sim_be)
		return PCCX_ERR_UNSUPPORTED;
	dev->flip = true;
	dev->flip_job = job;
	dev->flip_index = index;
	return PCCX_OK;
}

int pccx__device_test_slow_host(pccx_device *dev, uint64_t every, uint64_t phase, uint64_t cycles)
{
	if (!dev || !dev->sim_be)
		return PCCX_ERR_UNSUPPORTED;
	dev->sim_opts.stall_every = every;
	dev->sim_opts.stall_phase = phase;
	dev->sim_opts.stall_cycles = cycles;
	return PCCX_OK;
}

/* ---- models ---------------------------------------------------------------------------- */

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !strcmp(s + n - k, tail);
}

/* A directory, a .safetensors file or an index .json: a Hugging Face checkpoint. */
static bool is_safetensors(const char *path)
{
	struct stat sb;

	return ends_with(path, ".safetensors") || ends_with(path, ".json") ||
	       (!stat(path, &sb) && S_ISDIR(sb.st_mode));
}

/* tokenizer.json in the checkpoint directory (or next to the file), when there is one. */
static int sibling_tokenizer(const char *path, pccx_tokenizer **tk, pccx_diag *d)
{
	const char *slash = strrchr(path, '/');
	struct stat sb;
	char buf[4096];
	int n;

	*tk = NULL;
	if (!stat(path, &sb) && S_ISDIR(sb.st_mode))
		n = snprintf(buf, sizeof(buf), "%s/tokenizer.json", path);
	else if (slash)
		n = snprintf(buf, sizeof(buf), "%.*s/tokenizer.json", (int)(slash - path), path);
	else
		n = snprintf(buf, sizeof(buf), "tokenizer.json");
	if (n < 0 || (size_t)n >= sizeof(buf) || stat(buf, &sb) || !S_ISREG(sb.st_mode))
		return PCCX_OK;
	return pccx_tokenizer_load_json(buf, tk, d);
}

int pccx_model_load(pccx_device *dev, const struct pccx_model_opts *opts, pccx_model **out,
		    pccx_diag *d)
{
	struct pccx_gemma_config cfg;
	pccx_model *model;
	int rc;

	*out = NULL;
	if (!dev || !opts)
		return pccx__fail(d, PCCX_ERR_INVALID, "model: no device or options");
	model = calloc(1, sizeof(*model));
	if (!model)
		return pccx__fail(d, PCCX_ERR_NOMEM, "model: out of memory");
	model->dev = dev;
	if (opts->path) {
		pccx_tokenizer *embedded = NULL;

		if (opts->progress)
			opts->progress(opts->user, "loading", 0, 1);
		if (is_safetensors(opts->path)) {
			rc = pccx__gemma_load_safetensors(&model->m, opts->path, 0, NULL, d);
			if (!rc && !opts->tokenizer)
				rc = sibling_tokenizer(opts->path, &embedded, d);
		} else {
			pccx_gguf *g = NULL;

			rc = pccx__gemma_load_gguf(&model->m, opts->path, 0, NULL,
						     opts->tokenizer ? NULL : &g, d);
			if (!rc && g)
				rc = pccx__tokenizer_load_gguf(g, &embedded, d);
			pccx_gguf_close(g);
		}
		if (rc) {
			pccx_tokenizer_free(embedded);
			goto fail;
		}
		model->tok = embedded;
		if (opts->progress)
			opts->progress(opts->user, "loading", 1, 1);
		/*
		 * A checkpoint loader's notice (towers of a multimodal model not read) is left in
		 * the diag with status PCCX_OK; the progress callback shows it once, as a stage of
		 * its own with done == total == 0.
		 */
		if (opts->progress && d && !d->status && d->msg[0])
			opts->progress(opts->user, d->msg, 0, 0);
	} else {
		rc = pccx__gemma_config_preset(opts->synth_config ? opts->synth_config : "tiny", &cfg,
						 d);
		if (!rc)
			rc = pccx__gemma_model_create(&model->m, &cfg, d);
		if (rc)
			goto fail;
		if (opts->progress)
			opts->progress(opts->user, "synthesising", 0, model->m->size);
		rc = pccx__gemma_synth(model->m, opts->synth_seed, 0, d);
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
			rc = pccx__fail(d, PCCX_ERR_INVALID,
					"%s: %zu tokens, more than the model's vocabulary of %u",
					opts->tokenizer, pccx_tokenizer_n_vocab(model->tok),
					model->m->cfg.vocab);
			goto fail;
		}
	}
	model->chat = pccx__chat_format_of(model->m->cfg.family);
	model->n_stop = pccx__chat_stop_ids(model->chat, model->tok, model->stop);
	*out = model;
	return PCCX_OK;
fail:
	pccx_model_free(model);
	return rc;
}

/* A BO no longer needed; a failure leaves it to the close of the device. */
static void kbuf_release(pccx_device *dev, uint32_t handle)
{
	int rc = dev->link_be ? pccx__link_backend_buf_free(dev->link_be, handle)
			      : pccx__kernel_backend_buf_free(dev->kernel_be, handle);

	(void)rc;
}

static void kernel_weights_free(pccx_model *model)
{
	size_t i;

	for (i = 0; i < model->kw.n; i++)
		kbuf_release(model->dev, model->kw.pieces[i].handle);
	free(model->kw.pieces);
	memset(&model->kw, 0, sizeof(model->kw));
}

void pccx_model_free(pccx_model *model)
{
	if (!model)
		return;
	kernel_weights_free(model);
	if (model->tok)
		pccx_tokenizer_free(model->tok);
	if (model->m)
		pccx__gemma_model_free(model->m);
	free(model);
}

/* ---- sessions -------------------------------------------------------------------------- */

/* Compiler bind: the sim backend opens a DMA window onto the session's own host memory. */
static int bind_sim(pccx_session *s, uint32_t buf, void *base, uint64_t size, bool dev_write,
		    uint32_t *handle)
{
	uint32_t access = PCCX_BUF_DEV_READ | (dev_write ? PCCX_BUF_DEV_WRITE : 0);

	(void)buf;
	return pccx__sim_backend_buf_import(s->model->dev->sim_be, base, size, access, handle, NULL);
}

static void unbind_sim(pccx_session *s)
{
	(void)s;   /* the windows stay with the simulator until the device closes */
}

/* The model's weights in BOs on the kernel backend, made by the first session that binds them. */
static int kernel_weights(pccx_session *s, const uint8_t *base, uint32_t *handle)
{
	pccx_model *model = s->model;
	struct kweights *kw = &model->kw;
	pccx_device *kdev = model->dev;
	struct pccx_gemma_piece *pc;
	struct pccx_info info;
	size_t n, i;
	int rc;

	if (kw->n) {
		*handle = kw->handle;
		return PCCX_OK;
	}
	rc = kb_info(kdev, &info);
	if (rc)
		return pccx__fail(&s->submit_diag, rc, "kernel backend: GET_INFO failed");
	rc = pccx__gemma_weight_pieces(model->m, info.max_bo_size ? info.max_bo_size : UINT64_MAX,
					 &pc, &n, &s->submit_diag);
	if (rc)
		return rc;
	kw->pieces = calloc(n ? n : 1, sizeof(*kw->pieces));
	if (!kw->pieces) {
		free(pc);
		return pccx__fail(&s->submit_diag, PCCX_ERR_NOMEM, "kernel backend: out of memory");
	}
	for (i = 0; i < n && !rc; i++) {
		struct pccx_wpiece *k = &kw->pieces[i];
		uint8_t *map;

		rc = kb_alloc(kdev, pc[i].bytes, PCCX_BUF_DEV_READ, &k->handle,
						    &s->submit_diag);
		if (rc)
			break;
		kw->n = i + 1;
		k->offset = pc[i].offset;
		k->bytes = pc[i].bytes;
		map = kb_map(kdev, k->handle, NULL);
		if (!map)
			rc = pccx__fail(&s->submit_diag, PCCX_ERR_IO,
					"kernel backend: weight piece %zu has no mapping", i);
		else
			memcpy(map, base + k->offset, k->bytes);
	}
	free(pc);
	if (!rc && !kw->n)
		rc = pccx__fail(&s->submit_diag, PCCX_ERR_INVALID,
				"kernel backend: the decode step reads no weights");
	if (rc) {
		kernel_weights_free(model);
		return rc;
	}
	kw->handle = kw->pieces[0].handle;
	*handle = kw->handle;
	return PCCX_OK;
}

static void kbuf_pieces_free(pccx_session *s, struct kbuf *k)
{
	size_t i;

	for (i = 0; i < k->n_pieces; i++)
		kbuf_release(s->model->dev, k->pieces[i].handle);
	free(k->pieces);
	free(k->piece_map);
	k->pieces = NULL;
	k->piece_map = NULL;
	k->n_pieces = 0;
}

/*
 * The KV cache as several BOs when it is larger than the driver's max_bo_size (FP32 K and V
 * rows of E4B at 4096 positions are 96 MiB): pieces cut between KV blocks, which no load,
 * store or stream of a step crosses, and jobs rewritten to them like the weights' (run_kernel).
 * PCCX_ERR_NOT_FOUND when one BO holds it.
 */
static int kernel_kv_pieces(pccx_session *s, void *base, uint64_t size, uint32_t *handle)
{
	pccx_device *kdev = s->model->dev;
	struct kbuf *k = &s->kbuf[PCCX_NPU_BUF_KV];
	struct pccx_gemma_piece *pc = NULL;
	struct pccx_gemma_plan plan;
	struct pccx_info info;
	size_t n = 0, i;
	int rc;

	rc = kb_info(kdev, &info);
	if (rc)
		return pccx__fail(&s->submit_diag, rc, "kernel backend: GET_INFO failed");
	if (!info.max_bo_size || size <= info.max_bo_size)
		return PCCX_ERR_NOT_FOUND;
	/* the layout of the buffer being bound: the plan every session of the model has */
	rc = pccx__gemma_plan_build(s->model->m, &plan, &s->submit_diag);
	if (!rc && plan.kv_bytes != size)
		rc = pccx__fail(&s->submit_diag, PCCX_ERR_INTERNAL, "kernel backend: a KV buffer of "
				"%llu bytes, the plan's is %llu", (unsigned long long)size,
				(unsigned long long)plan.kv_bytes);
	if (!rc)
		rc = pccx__gemma_kv_pieces(s->model->m, &plan, info.max_bo_size, &pc, &n,
					     &s->submit_diag);
	if (!rc && !n)
		rc = pccx__fail(&s->submit_diag, PCCX_ERR_INVALID, "kernel backend: an empty KV cache "
				"of %llu bytes", (unsigned long long)size);
	if (!rc) {
		k->pieces = calloc(n, sizeof(*k->pieces));
		k->piece_map = calloc(n, sizeof(*k->piece_map));
		if (!k->pieces || !k->piece_map)
			rc = pccx__fail(&s->submit_diag, PCCX_ERR_NOMEM,
					"kernel backend: out of memory");
	}
	for (i = 0; !rc && i < n; i++) {
		struct pccx_wpiece *w = &k->pieces[i];

		rc = kb_alloc(kdev, pc[i].bytes, PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE,
			      &w->handle, &s->submit_diag);
		if (rc)
			break;
		k->n_pieces = i + 1;
		w->offset = pc[i].offset;
		w->bytes = pc[i].bytes;
		k->piece_map[i] = kb_map(kdev, w->handle, NULL);
		if (!k->piece_map[i])
			rc = pccx__fail(&s->submit_diag, PCCX_ERR_IO,
					"kernel backend: KV piece %zu has no mapping", i);
		else
			memcpy(k->piece_map[i], (uint8_t *)base + w->offset, w->bytes);
	}
	free(pc);
	if (rc) {
		kbuf_pieces_free(s, k);
		return rc;
	}
	k->host = base;
	k->size = size;
	k->handle = k->pieces[0].handle;
	k->map = NULL;
	k->bound = true;
	*handle = k->handle;
	return PCCX_OK;
}

/* The device's bytes at `off` of a bound buffer (len of them inside one piece), or NULL. */
static const uint8_t *kbuf_at(const struct kbuf *k, uint64_t off, uint64_t len)
{
	size_t i;

	if (!k->n_pieces)
		return k->map && off + len <= k->size ? k->map + off : NULL;
	for (i = 0; i < k->n_pieces; i++)
		if (off >= k->pieces[i].offset &&
		    off + len <= k->pieces[i].offset + k->pieces[i].bytes)
			return k->piece_map[i] + (off - k->pieces[i].offset);
	return NULL;
}

/*
 * Compiler bind on the kernel backend: a BO of the buffer's size, filled from the host buffer
 * now (the weights once, the KV cache's zeros). The host keeps writing the per-step inputs in
 * its own buffer and reading the logits from its own; run_kernel() copies both ways. The
 * weights are the model's, shared by its sessions (kernel_weights).
 */
static int bind_kernel(pccx_session *s, uint32_t buf, void *base, uint64_t size,
		       bool dev_write, uint32_t *handle)
{
	pccx_device *kdev = s->model->dev;
	uint32_t access = PCCX_BUF_DEV_READ | (dev_write ? PCCX_BUF_DEV_WRITE : 0);
	struct kbuf *k;
	int rc;

	if (buf >= PCCX_NPU_NBUF || s->kbuf[buf].bound)
		return pccx__fail(&s->submit_diag, PCCX_ERR_INVALID,
				  "kernel backend: buffer %u bound twice or unknown", buf);
	if (buf == PCCX_NPU_BUF_WEIGHTS)
		return kernel_weights(s, base, handle);   /* the model's, not `bound` here */
	if (buf == PCCX_NPU_BUF_KV) {
		rc = kernel_kv_pieces(s, base, size, handle);
		if (rc != PCCX_ERR_NOT_FOUND)
			return rc;
	}
	k = &s->kbuf[buf];
	rc = kb_alloc(kdev, size ? size : 16, access, &k->handle, &s->submit_diag);
	if (rc)
		return rc;
	k->map = kb_map(kdev, k->handle, NULL);
	if (!k->map) {
		kbuf_release(kdev, k->handle);
		return pccx__fail(&s->submit_diag, PCCX_ERR_IO, "kernel backend: buffer %u has no "
				  "mapping", buf);
	}
	k->host = base;
	k->size = size;
	k->bound = true;
	if (size)
		memcpy(k->map, base, size);
	*handle = k->handle;
	return PCCX_OK;
}

static void unbind_kernel(pccx_session *s)
{
	unsigned i;

	for (i = 0; i < PCCX_NPU_NBUF; i++) {
		struct kbuf *k = &s->kbuf[i];

		if (k->n_pieces)
			kbuf_pieces_free(s, k);
		else if (k->bound)
			kbuf_release(s->model->dev, k->handle);
	}
	memset(s->kbuf, 0, sizeof(s->kbuf));
	pccx__wpieces_out_free(&s->kjob);
	pccx__wpieces_out_free(&s->kjob_kv);
}

static int bind_buf(void *user, uint32_t buf, void *base, uint64_t size, bool dev_write,
		    uint32_t *handle)
{
	pccx_session *s = user;

	return s->model->dev->be->bind(s, buf, base, size, dev_write, handle);
}

/* Fold the finished job's stage times into the profile (stage names without "L<n>."). */
static void profile_job(pccx_session *s, const struct pccx_compiler *c)
{
	pccx_sim *sim = pccx__sim_backend_sim(s->model->dev->sim_be);
	const struct pccx_sim_insn_time *t0 = pccx__sim_insn_time(sim, 0);
	uint64_t prev = t0 ? t0->issue : 0;
	uint32_t k;

	for (k = 0; k < c->jb.n_stages; k++) {
		const struct pccx_job_builder_stage *st = &c->jb.stages[k];
		const struct pccx_sim_insn_time *t = pccx__sim_insn_time(sim, st->insn);
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

/* Run the step's job on the simulator; with verify, every stage is compared as it retires. */
static int run_sim(pccx_session *s, const struct pccx_compiler *c,
		   const struct pccx_job_view *job, struct job_figures *fig)
{
	struct pccx_sim_backend_result res;
	pccx_device *dev = s->model->dev;
	struct pccx_sim_backend_opts o = dev->sim_opts;
	unsigned p;
	int rc;

	if (dev->inject && !dev->inject_job--) {
		dev->inject = false;
		pccx__sim_inject_error(pccx__sim_backend_sim(dev->sim_be), dev->inject_index,
				       dev->inject_cause);
	}
	if (dev->flip && !dev->flip_job--) {
		dev->flip = false;
		pccx__sim_inject_flip(pccx__sim_backend_sim(dev->sim_be), dev->flip_index);
	}

	/* statistics are reset at each submit: res.stats covers this job alone */
	if (s->ver)
		rc = pccx__verify_device_job(s->ver, s->model->dev->sim_be, job, c, &o, &res,
					     &s->submit_diag);
	else
		rc = pccx__sim_backend_submit_wait(s->model->dev->sim_be, job, &o, &res, &s->submit_diag);
	if (rc)
		return rc;
	fig->cycles = res.cycles;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		fig->weight_bytes += res.stats.dm_bytes[p];
	fig->dma_bytes = res.stats.dm_bytes[PCCX_DM_FMAP] + res.stats.dm_bytes[PCCX_DM_RESULT];
	if (s->generating)
		profile_job(s, c);
	return PCCX_OK;
}

static double sim_device_seconds(const pccx_session *s, double *ddr_bytes_per_s)
{
	const struct pccx_sim_config *c = pccx__sim_get_config(pccx__sim_backend_sim(s->model->dev->sim_be));

	*ddr_bytes_per_s = (double)c->ddr_mbps * 1e6;
	return (double)s->st.device_cycles / (double)c->core_hz;
}

/*
 * Verify on the kernel backend (L2 is out of reach): the KV rows this job stored, read back
 * from the KV BO, against the reference session's cache. The logits are compared by step().
 */
static int check_kv(pccx_session *s, const struct pccx_job_view *job)
{
	const struct kbuf *kv = &s->kbuf[PCCX_NPU_BUF_KV];
	const struct pccx_gemma_model *m = s->model->m;
	const struct pccx_gemma_plan *p = &s->ref->plan;
	uint32_t i;

	if (!kv->bound)
		return PCCX_OK;
	for (i = 0; i < job->n_dma; i++) {
		const struct pccx_dma_desc *dd = &job->dma[i];
		const uint8_t *dv = kbuf_at(kv, dd->offset, dd->length), *rf = s->ref->kv + dd->offset;
		const struct pccx_layer_desc *ly;
		uint64_t off, e, idx, rows, row_bytes;
		uint32_t l = 0, j;
		uint32_t a, b;

		if (!(dd->flags & PCCX_DMA_FROM_DEVICE) || dd->handle != kv->handle || !dv ||
		    dd->offset + dd->length > kv->size || !memcmp(dv, rf, dd->length))
			continue;
		/* the first differing FP32 element (lengths are multiples of 16 bytes) */
		for (e = 0; e + 4 <= dd->length && !memcmp(dv + e, rf + e, 4); e += 4)
			;
		if (e + 4 > dd->length)
			continue;
		a = (uint32_t)dv[e] | (uint32_t)dv[e + 1] << 8 | (uint32_t)dv[e + 2] << 16 |
		    (uint32_t)dv[e + 3] << 24;
		b = (uint32_t)rf[e] | (uint32_t)rf[e + 1] << 8 | (uint32_t)rf[e + 2] << 16 |
		    (uint32_t)rf[e + 3] << 24;
		off = dd->offset + e;
		/* the cache holding off: the last KV-writing layer's starting at or before it */
		for (j = 0; j < m->cfg.n_layers; j++)
			if (m->layers[j].kv_write && p->kv_off[j] <= off)
				l = j;
		ly = &m->layers[l];
		rows = ly->kv_rows;
		row_bytes = (uint64_t)pccx_words_for(ly->head_dim) * 16;
		idx = (off - p->kv_off[l]) / row_bytes;
		return pccx__fail(&s->submit_diag, PCCX_ERR_MISMATCH,
				  "verify: token %u (position %u): KV cache differs first at layer "
				  "%u, kv head %llu, %s row %llu, element %llu: device 0x%08x (%g), "
				  "reference 0x%08x (%g)",
				  s->token, s->dev->pos, l,
				  (unsigned long long)(idx / rows % ly->n_kv_heads),
				  idx / rows / ly->n_kv_heads ? "V" : "K",
				  (unsigned long long)(idx % rows),
				  (unsigned long long)((off - p->kv_off[l]) % row_bytes / 4), a,
				  (double)pccx_f32_from_bits(a), b, (double)pccx_f32_from_bits(b));
	}
	return PCCX_OK;
}

/* The kernel backend waits at most this long for one step's job (the driver's own per-job
 * no-progress timeout ends a hung job sooner). */
#define KERNEL_WAIT_NS 120000000000ull

/*
 * Run the step's job through /dev/pccx: the per-step inputs into their BO, submit and wait,
 * the logits (what the job stored into the output buffer) back into the host buffer.
 */
static int run_kernel(pccx_session *s, const struct pccx_compiler *c,
		      const struct pccx_job_view *job, struct job_figures *fig)
{
	const struct kbuf *in = &s->kbuf[PCCX_NPU_BUF_IN], *out = &s->kbuf[PCCX_NPU_BUF_OUT];
	const struct kbuf *kv = &s->kbuf[PCCX_NPU_BUF_KV];
	struct pccx_kernel_backend_opts o = { .timeout_ns = 0, .wait_ns = KERNEL_WAIT_NS };
	const struct pccx_job_view *compiled = job;
	struct pccx_job_view split, split_kv;
	struct pccx_kernel_backend_result res;
	uint32_t i;
	int rc;

	(void)c;
	if (in->bound && in->size) {
		memcpy(in->map, in->host, in->size);
		kb_touch(s->model->dev, in->handle);
	}
	if (s->model->kw.n) {
		rc = pccx__wpieces_rewrite(s->model->kw.pieces, s->model->kw.n, s->model->kw.handle,
					   job, &s->kjob, &split, &s->submit_diag);
		if (rc)
			return rc;
		job = &split;
	}
	if (kv->n_pieces) {
		rc = pccx__wpieces_rewrite(kv->pieces, kv->n_pieces, kv->handle, job, &s->kjob_kv,
					   &split_kv, &s->submit_diag);
		if (rc)
			return rc;
		job = &split_kv;
	}
	rc = kb_submit_wait(s->model->dev, job, &o, &res, &s->submit_diag);
	if (rc)
		return rc;
	for (i = 0; i < job->n_dma; i++) {
		const struct pccx_dma_desc *dd = &job->dma[i];

		fig->dma_bytes += dd->length;
		if (out->bound && (dd->flags & PCCX_DMA_FROM_DEVICE) && dd->handle == out->handle &&
		    dd->offset + dd->length <= out->size)
			memcpy(out->host + dd->offset, out->map + dd->offset, dd->length);
	}
	for (i = 0; i < job->n_stream; i++)
		fig->weight_bytes += job->stream[i].length;
	if (res.wait.end_ns > res.wait.start_ns)
		s->kdev_seconds += (double)(res.wait.end_ns - res.wait.start_ns) * 1e-9;
	return s->ref ? check_kv(s, compiled) : PCCX_OK;
}

static double kernel_device_seconds(const pccx_session *s, double *ddr_bytes_per_s)
{
	*ddr_bytes_per_s = (double)nominal_ddr_bytes_per_s();
	return s->kdev_seconds;
}

static const struct backend backends[4] = {
	{
		.name = "sim",
		.open = sim_open,
		.close = sim_close,
		.flush = sim_flush,
		.info = sim_info,
		.bind = bind_sim,
		.unbind = unbind_sim,
		.run = run_sim,
		.device_seconds = sim_device_seconds,
	},
	{
		.name = "kernel",
		.open = kernel_open,
		.close = kernel_close,
		.flush = kernel_flush,
		.info = kernel_info,
		.bind = bind_kernel,
		.unbind = unbind_kernel,
		.run = run_kernel,
		.device_seconds = kernel_device_seconds,
	},
	{
		/* a board over a tty or a Unix socket: the kernel backend's logic, over the link */
		.name = "serial",
		.open = serial_open,
		.close = serial_close,
		.flush = kernel_flush,
		.info = kernel_info,
		.bind = bind_kernel,
		.unbind = unbind_kernel,
		.run = run_kernel,
		.device_seconds = kernel_device_seconds,
	},
	{
		/* a board over USB bulk endpoints (docs/usb.md): the same, another transport */
		.name = "usb",
		.open = usb_open,
		.close = serial_close,
		.flush = kernel_flush,
		.info = kernel_info,
		.bind = bind_kernel,
		.unbind = unbind_kernel,
		.run = run_kernel,
		.device_seconds = kernel_device_seconds,
	},
};

/* Compiler end-of-step: run the job on the device now, so the step's outputs exist. */
static int submit_job(void *user, struct pccx_compiler *c)
{
	pccx_session *s = user;
	struct pccx_job_view job;
	struct job_figures fig = { 0 };
	int rc;

	rc = pccx__compiler_job(c, &job, &s->submit_diag);
	if (!rc)
		rc = s->model->dev->be->run(s, c, &job, &fig);
	if (!rc) {
		s->st.jobs++;
		s->st.device_cycles += fig.cycles;
		if (s->generating) {
			/* a step is one job, or one per mixture-of-experts layer and one more */
			s->st.decode_weight_bytes += fig.weight_bytes;
			s->st.decode_cycles += fig.cycles;
		}
		s->st.weight_bytes += fig.weight_bytes;
		s->st.dma_bytes += fig.dma_bytes;
	}
	s->submit_status = rc;
	return rc;
}

/*
 * Prompt chunks: as many tokens per job as L2 holds (or opts->prompt_chunk, when its
 * struct_size covers it), on the device and on the reference that verifies it. A model that
 * cannot run in chunks (experts), or a chunk of one, prefills token by token.
 */
static int chunk_setup(pccx_session *s, const struct pccx_session_opts *opts, pccx_diag *d)
{
	const struct pccx_gemma_model *m = s->model->m;
	uint32_t rows = s->dev->in_rows;
	int rc;

	if (opts && opts->struct_size >= offsetof(struct pccx_session_opts, prompt_chunk) +
					  sizeof(opts->prompt_chunk) && opts->prompt_chunk)
		rows = opts->prompt_chunk < rows ? opts->prompt_chunk : rows;
	if (rows < 2)
		return PCCX_OK;
	rc = pccx__gemma_chunk_create(&s->chunk_dev, m, &s->dev->plan, rows, d);
	if (!rc && s->ref)
		rc = pccx__gemma_chunk_create(&s->chunk_ref, m, &s->ref->plan, rows, d);
	if (rc)
		return rc;
	s->chunk_toks = malloc(rows * sizeof(*s->chunk_toks));
	if (!s->chunk_toks)
		return pccx__fail(d, PCCX_ERR_NOMEM, "session: out of memory");
	return PCCX_OK;
}

/*
 * The v002 extensions the device reports and the step's ops may use; the reference that
 * verifies the device runs the same ops (their bits equal those of the ops they replace).
 */
static void use_extensions(pccx_session *s, const struct pccx_session_opts *opts)
{
	struct pccx_device_info info;
	bool no_rowmask;

	if (pccx_device_info(s->model->dev, &info))
		return;
	/* sparse streaming unless the caller asks otherwise */
	no_rowmask = opts && opts->struct_size >= offsetof(struct pccx_session_opts, no_rowmask) +
						  sizeof(opts->no_rowmask) && opts->no_rowmask;
	pccx__gemma_plan_use_features(&s->dev->plan, s->model->m, info.features, no_rowmask);
	if (s->ref)
		pccx__gemma_plan_use_features(&s->ref->plan, s->model->m, info.features,
					      no_rowmask);
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
		return pccx__fail(d, PCCX_ERR_INVALID, "session: no model");
	if (opts && opts->max_context > model->m->cfg.max_ctx)
		return pccx__fail(d, PCCX_ERR_INVALID, "session: max_context %u is more than the %u "
				  "positions the model's KV cache holds", opts->max_context,
				  model->m->cfg.max_ctx);
	s = calloc(1, sizeof(*s));
	if (!s)
		return pccx__fail(d, PCCX_ERR_NOMEM, "session: out of memory");
	s->model = model;
	vocab = model->m->cfg.vocab;
	s->max_ctx = opts && opts->max_context ? opts->max_context : model->m->cfg.max_ctx;
	pccx__compiler_init(&s->comp, bind_buf, s);
	pccx__compiler_on_end(&s->comp, submit_job, s);
	s->logits = malloc(vocab * sizeof(float));
	s->ref_logits = malloc(vocab * sizeof(float));
	if (!s->logits || !s->ref_logits) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "session: cannot allocate %zu logits", vocab);
		goto fail;
	}
	if (opts && opts->verify) {
		rc = pccx__ref_exec_create(&s->rx, 0, PCCX_KERN_AUTO, d);
		if (!rc)
			rc = pccx__gemma_session_create(&s->ref, model->m, pccx__ref_exec_ops(), s->rx,
							  d);
		/* stages in L2 are compared on the simulator only (the kernel's L2 is private) */
		if (!rc && model->dev->sim_be)
			rc = pccx__verify_create(&s->ver, s->rx, d);
		if (rc)
			goto fail;
	}
	rc = pccx__gemma_session_create(&s->dev, model->m, pccx__compiler_ops(), &s->comp, d);
	if (rc) {
		if (s->submit_diag.msg[0])   /* the backend's reason (quota, buffer size ...) */
			rc = pccx__fail(d, rc, "session: %s", s->submit_diag.msg);
		goto fail;
	}
	use_extensions(s, opts);
	rc = chunk_setup(s, opts, d);
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
		pccx__gemma_session_free(s->dev);
	s->model->dev->be->unbind(s);
	if (s->ref)
		pccx__gemma_session_free(s->ref);
	if (s->ver)
		pccx__verify_free(s->ver);
	pccx__gemma_chunk_free(s->chunk_dev);
	pccx__gemma_chunk_free(s->chunk_ref);
	free(s->chunk_toks);
	if (s->rx)
		pccx__ref_exec_free(s->rx);
	if (s->smp)
		pccx_sampler_destroy(s->smp);
	pccx__compiler_free(&s->comp);
	free(s->logits);
	free(s->ref_logits);
	free(s->hist);
	free(s->prof);
	free(s);
}

int pccx_session_tokenize(pccx_session *s, const char *text, bool chat, int32_t **ids, size_t *n,
			  pccx_diag *d)
{
	const pccx_tokenizer *tk;
	char *rendered = NULL;
	size_t len;
	int rc;

	if (!s || !text || !ids || !n)
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenize: a NULL argument");
	*ids = NULL;
	*n = 0;
	tk = s->model->tok;
	if (!tk)
		return pccx__fail(d, PCCX_ERR_INVALID, "the model has no tokenizer");
	if (chat) {
		pccx_chat_turn turn = { "user", text };

		rc = pccx__chat_render(s->model->chat, &turn, 1, true, &rendered, &len, d);
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

int pccx_session_tokenize_turn(pccx_session *s, const char *role, const char *content,
			       bool first, int32_t **ids, size_t *n, pccx_diag *d)
{
	char *rendered = NULL;
	size_t len;
	int rc;

	if (!s || !role || !content || !ids || !n)
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenize turn: a NULL argument");
	*ids = NULL;
	*n = 0;
	if (!s->model->tok)
		return pccx__fail(d, PCCX_ERR_INVALID, "the model has no tokenizer");
	rc = pccx__chat_render_turn(s->model->chat, role, content, first, &rendered, &len, d);
	if (!rc)
		rc = pccx_tokenizer_encode(s->model->tok, rendered, len, 0, ids, n, d);
	free(rendered);
	return rc;
}

/* The options a caller's struct_size covers; the rest stay zero. */
static int chat_options(const struct pccx_chat_options *o, struct pccx_chat_options *out,
			pccx_diag *d)
{
	memset(out, 0, sizeof(*out));
	if (!o)
		return 0;
	if (o->struct_size < sizeof(size_t))
		return pccx__fail(d, PCCX_ERR_INVALID, "chat options: struct_size %zu too small "
				  "(set it to sizeof(struct pccx_chat_options))", o->struct_size);
	memcpy(out, o, o->struct_size < sizeof(*out) ? o->struct_size : sizeof(*out));
	return 0;
}

int pccx_session_tokenize_chat(pccx_session *s, const pccx_chat_turn *turns, size_t n,
			       const struct pccx_chat_options *o, int32_t **ids, size_t *n_ids,
			       pccx_diag *d)
{
	struct pccx_chat_opts ro = { .add_generation_prompt = true };
	struct pccx_chat_options co;
	pccx_json_doc *doc = NULL, *mdoc = NULL;
	const pccx_json **msgs = NULL;
	const char *last;
	char *rendered = NULL;
	size_t len, i;
	int rc;

	if (!s || (!turns && n) || !ids || !n_ids)
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenize chat: a NULL argument");
	*ids = NULL;
	*n_ids = 0;
	rc = chat_options(o, &co, d);
	if (rc)
		return rc;
	last = n && turns[n - 1].role ? turns[n - 1].role : "";
	if (strcmp(last, "user") && (!co.messages || strcmp(last, "tool")))
		return pccx__fail(d, PCCX_ERR_INVALID, "tokenize chat: the last turn must be the "
				  "user's%s (the generation prompt opens the reply to it)",
				  co.messages ? " or a tool's result" : "");
	if (!s->model->tok)
		return pccx__fail(d, PCCX_ERR_INVALID, "the model has no tokenizer");
	ro.thinking = co.thinking;
	if (co.tools) {
		rc = pccx__json_parse(co.tools, strlen(co.tools), "tools", NULL, &doc, d);
		if (rc)
			return rc == PCCX_ERR_NOMEM ? rc : PCCX_ERR_INVALID;
		ro.tools_doc = doc;
		ro.tools = pccx__json_root(doc);
	}
	if (co.messages) {
		const pccx_json *arr;

		rc = pccx__json_parse(co.messages, strlen(co.messages), "messages", NULL, &mdoc, d);
		if (rc) {
			rc = rc == PCCX_ERR_NOMEM ? rc : PCCX_ERR_INVALID;
			goto out;
		}
		arr = pccx__json_root(mdoc);
		if (pccx__json_type_of(arr) != PCCX_JSON_ARRAY || pccx__json_count(arr) != n) {
			rc = pccx__fail(d, PCCX_ERR_INVALID, "messages: an array of one entry per "
					"turn (%zu) expected", n);
			goto out;
		}
		msgs = calloc(n, sizeof(*msgs));
		if (!msgs) {
			rc = pccx__fail(d, PCCX_ERR_NOMEM, "tokenize chat: out of memory");
			goto out;
		}
		for (i = 0; i < n; i++) {
			const pccx_json *m = pccx__json_at(arr, i);

			msgs[i] = pccx__json_type_of(m) == PCCX_JSON_OBJECT ? m : NULL;
		}
		ro.msgs_doc = mdoc;
		ro.msgs = msgs;
	}
	rc = pccx__chat_render_opts(s->model->chat, turns, n, &ro, &rendered, &len, d);
	if (!rc)
		rc = pccx_tokenizer_encode(s->model->tok, rendered, len, 0, ids, n_ids, d);
out:
	free(rendered);
	free(msgs);
	pccx__json_free(mdoc);
	pccx__json_free(doc);
	return rc;
}

const struct pccx_chat_format *pccx__session_chat_format(const pccx_session *s)
{
	return s ? s->model->chat : NULL;
}

int pccx_session_context(const pccx_session *s, uint32_t *used, uint32_t *max)
{
	if (!s || !used || !max)
		return PCCX_ERR_INVALID;
	*used = s->dev->pos;
	*max = s->max_ctx;
	return PCCX_OK;
}

const pccx_tokenizer *pccx_session_tokenizer(const pccx_session *s)
{
	return s ? s->model->tok : NULL;
}

int pccx_session_stats(const pccx_session *s, struct pccx_stats *st)
{
	double ceiling, ddr;

	if (!s || !st)
		return PCCX_ERR_INVALID;
	*st = s->st;
	st->device_seconds = s->model->dev->be->device_seconds(s, &ddr);
	ceiling = ddr * st->device_seconds;
	st->ddr_utilisation = ceiling > 0 ? (double)(st->weight_bytes + st->dma_bytes) / ceiling
					  : 0.0;
	return PCCX_OK;
}

/* Room for one more history token, taken before a step so that a step never fails after it ran. */
/* Room for n more tokens of history. */
static int reserve_history(pccx_session *s, size_t n, pccx_diag *d)
{
	if (s->n_hist + n > s->cap_hist) {
		size_t cap = s->cap_hist ? 2 * s->cap_hist : 256;

		while (cap < s->n_hist + n)
			cap *= 2;
		int32_t *h = realloc(s->hist, cap * sizeof(*h));

		if (!h)
			return pccx__fail(d, PCCX_ERR_NOMEM, "session: out of memory");
		s->hist = h;
		s->cap_hist = cap;
	}
	return PCCX_OK;
}

/* One step of both sessions (device, and reference when verifying); logits optional. */
static int step(pccx_session *s, int32_t token, bool logits, pccx_diag *d)
{
	size_t vocab = s->model->m->cfg.vocab;
	uint32_t pos = s->dev->pos;
	int rc;

	if (token < 0 || (size_t)token >= vocab)
		return pccx__fail(d, PCCX_ERR_RANGE, "token %d outside the vocabulary of %zu", token,
				  vocab);
	if (pos >= s->max_ctx)
		return pccx__fail(d, PCCX_ERR_RANGE, "context full: %u positions (max_context)",
				  s->max_ctx);
	rc = reserve_history(s, 1, d);
	if (rc)
		return rc;
	s->token = (uint32_t)token;
	if (s->ref) {
		/* the reference first: its stage tensors are what the device is compared with */
		if (s->ver)
			pccx__verify_begin_step(s->ver, (uint32_t)token, pos);
		rc = pccx__gemma_session_step(s->ref, (uint32_t)token, logits ? s->ref_logits : NULL,
						d);
		if (rc)
			return rc;
	}
	s->submit_status = 0;
	rc = pccx__gemma_session_step(s->dev, (uint32_t)token, logits ? s->logits : NULL, d);
	if (!rc && s->ver) {
		rc = pccx__verify_end_step(s->ver, &s->submit_diag);
		s->submit_status = rc;
	}
	if (rc) {
		/* a failed step is not part of the context: the reference forgets it too */
		if (s->ref)
			s->ref->pos = pos;
		if (s->submit_status && s->submit_diag.msg[0] && d)
			*d = s->submit_diag;
		return s->submit_status ? s->submit_status : rc;
	}
	if (s->ref && logits && memcmp(s->logits, s->ref_logits, vocab * sizeof(float))) {
		size_t i = 0;

		/* not part of the context, and the logits are the device's, not the context's */
		s->dev->pos = s->ref->pos = pos;
		s->have_logits = false;
		while (i < vocab && !memcmp(&s->logits[i], &s->ref_logits[i], sizeof(float)))
			i++;
		return pccx__fail(d, PCCX_ERR_MISMATCH,
				  "verify: token %d (position %u): logits differ first at element "
				  "%zu: device %g, reference %g",
				  token, pos, i, (double)s->logits[i], (double)s->ref_logits[i]);
	}
	s->hist[s->n_hist++] = token;
	if (s->generating)
		s->st.decode_steps++;
	return PCCX_OK;
}

/*
 * Tokens ids[0..k) (2 <= k <= the chunk's rows) at the next positions as one prompt chunk on
 * both sessions, without logits: what k steps without logits give, one job on the device.
 */
static int chunk(pccx_session *s, const int32_t *ids, uint32_t k, pccx_diag *d)
{
	size_t vocab = s->model->m->cfg.vocab;
	uint32_t pos = s->dev->pos, i;
	int rc;

	for (i = 0; i < k; i++) {
		if (ids[i] < 0 || (size_t)ids[i] >= vocab)
			return pccx__fail(d, PCCX_ERR_RANGE, "token %d outside the vocabulary of %zu",
					  ids[i], vocab);
		s->chunk_toks[i] = (uint32_t)ids[i];
	}
	if (k > s->max_ctx - pos)
		return pccx__fail(d, PCCX_ERR_RANGE, "context full: %u positions (max_context)",
				  s->max_ctx);
	rc = reserve_history(s, k, d);
	if (rc)
		return rc;
	s->token = (uint32_t)ids[0];
	if (s->ref) {
		if (s->ver)
			pccx__verify_begin_step(s->ver, (uint32_t)ids[0], pos);
		rc = pccx__gemma_session_chunk(s->ref, s->chunk_ref, s->chunk_toks, k, d);
		if (rc)
			return rc;
	}
	s->submit_status = 0;
	rc = pccx__gemma_session_chunk(s->dev, s->chunk_dev, s->chunk_toks, k, d);
	if (!rc && s->ver) {
		rc = pccx__verify_end_step(s->ver, &s->submit_diag);
		s->submit_status = rc;
	}
	if (rc) {
		/* not part of the context: the positions are filled again by the next steps */
		s->dev->pos = pos;
		if (s->ref)
			s->ref->pos = pos;
		if (s->submit_status && s->submit_diag.msg[0] && d)
			*d = s->submit_diag;
		return s->submit_status ? s->submit_status : rc;
	}
	memcpy(s->hist + s->n_hist, ids, k * sizeof(*ids));
	s->n_hist += k;
	return PCCX_OK;
}

int pccx_session_prefill(pccx_session *s, const int32_t *ids, size_t n, pccx_diag *d)
{
	double t0 = now_seconds();
	uint32_t pos0;
	size_t i, k, hist0;
	int rc = PCCX_OK;

	if (!s || (n && !ids))
		return pccx__fail(d, PCCX_ERR_INVALID, "prefill: no session or no tokens");
	if (s->have_pending)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "prefill: the last generated token is not fed yet (its step failed): "
				  "call generate to retry it first");
	pos0 = s->dev->pos;
	hist0 = s->n_hist;
	/*
	 * Only the last prompt token needs the LM head: its logits give the first sample. The
	 * tokens before it go in chunks when the session has them (one weight pass per chunk).
	 */
	for (i = 0; i + 1 < n && !rc; i += k) {
		k = s->chunk_dev ? s->chunk_dev->rows : 1;
		k = n - 1 - i < k ? n - 1 - i : k;
		rc = k > 1 ? chunk(s, ids + i, (uint32_t)k, d) : step(s, ids[i], false, d);
	}
	if (!rc && n)
		rc = step(s, ids[n - 1], true, d);
	if (rc) {
		/* all or nothing: the positions this call filled are forgotten (their KV rows are
		 * written again by the next steps), so the session is as it was (step() drops
		 * have_logits if it had to overwrite the logits with ones that failed verify) */
		s->dev->pos = pos0;
		if (s->ref)
			s->ref->pos = pos0;
		s->n_hist = hist0;
	} else {
		s->have_logits = s->have_logits || n > 0;
		s->st.prompt_tokens += n;
	}
	s->generating = false;
	s->st.host_seconds += now_seconds() - t0;
	return rc;
}

/* The tokenizer's EOS and the chat format's end of turn (resolved at model load). */
static bool is_stop_token(const pccx_session *s, int32_t tok)
{
	size_t i;

	for (i = 0; i < s->model->n_stop; i++)
		if (tok == s->model->stop[i])
			return true;
	return false;
}

int pccx_session_generate(pccx_session *s, const struct pccx_sampler_config *cfg,
			  size_t max_tokens, pccx_token_fn cb, void *user, pccx_diag *d)
{
	double t0 = now_seconds();
	size_t vocab, i;
	int32_t tok;
	int rc;

	if (!s)
		return pccx__fail(d, PCCX_ERR_INVALID, "generate: no session");
	vocab = s->model->m->cfg.vocab;
	if (s->have_pending) {
		/* the token whose step failed last time: feed it again, then go on sampling */
		s->generating = true;
		rc = step(s, s->pending, true, d);
		s->generating = false;
		if (rc)
			return rc;
		s->have_pending = false;
		s->have_logits = true;
	}
	if (!s->have_logits)
		return pccx__fail(d, PCCX_ERR_INVALID,
				  "generate: prefill at least one token first (the logits of the last "
				  "prompt token give the first sample)");
	if (cfg) {
		rc = pccx_sampler_set_config(s->smp, cfg, d);
		if (rc)
			return rc;
		/* the session's first sample starts the stream of cfg's seed; later calls go on */
		if (!s->st.tokens)
			pccx_sampler_reseed(s->smp, cfg->seed);
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
		if (!rc) {
			s->have_logits = true;
		} else {
			s->pending = tok;
			s->have_pending = true;
		}
	}
	s->generating = false;
	s->st.host_seconds += now_seconds() - t0;
	return rc;
}
