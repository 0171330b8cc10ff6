// SPDX-License-Identifier: MIT
/* The in-process backend: simulator + buffers + command engine (backend_sim.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "backend_sim.h"
#include "diag.h"
#include "jobfile.h"

#define DEV_BASE     0x10000000ull
#define DEV_PAGE     4096ull

struct simb_buf {
	uint8_t *host;
	uint64_t size, dev;
	uint32_t access;
	bool used;
	bool owned;     /* allocated here (freed here), or imported caller memory */
};

struct pccx_sim_backend {
	pccx_sim *sim;
	struct simb_buf *buf;
	uint32_t n_buf, cap_buf;
	uint64_t next_dev;
};

/* ---- register access for the engine -------------------------------------------------- */

static uint32_t io_rd32(void *io, uint32_t off)
{
	uint32_t v = 0;

	if (pccx__sim_mmio_read32(io, off, &v))
		return 0;
	return v;
}

static void io_wr32(void *io, uint32_t off, uint32_t v)
{
	if (pccx__sim_mmio_write32(io, off, v))
		return;
}

static uint64_t io_rd64(void *io, uint32_t off)
{
	uint64_t v = 0;

	if (pccx__sim_mmio_read64(io, off, &v))
		return 0;
	return v;
}

static void io_wr64(void *io, uint32_t off, uint64_t v)
{
	if (pccx__sim_mmio_write64(io, off, v))
		return;
}

static const struct pccx_engine_ops sim_ops = { io_rd32, io_wr32, io_rd64, io_wr64 };

/* The same accesses by a host that stalls after some of them (pccx_sim_backend_opts.stall_*). */
struct slow_io {
	pccx_sim *sim;
	uint64_t n, every, phase, cycles;
};

static void slow_after(struct slow_io *h)
{
	if (h->n++ % h->every == h->phase)
		pccx__sim_advance(h->sim, h->cycles);
}

static uint32_t slow_rd32(void *io, uint32_t off)
{
	struct slow_io *h = io;
	uint32_t v = io_rd32(h->sim, off);

	slow_after(h);
	return v;
}

static void slow_wr32(void *io, uint32_t off, uint32_t v)
{
	struct slow_io *h = io;

	io_wr32(h->sim, off, v);
	slow_after(h);
}

static uint64_t slow_rd64(void *io, uint32_t off)
{
	struct slow_io *h = io;
	uint64_t v = io_rd64(h->sim, off);

	slow_after(h);
	return v;
}

static void slow_wr64(void *io, uint32_t off, uint64_t v)
{
	struct slow_io *h = io;

	io_wr64(h->sim, off, v);
	slow_after(h);
}

static const struct pccx_engine_ops slow_ops = { slow_rd32, slow_wr32, slow_rd64, slow_wr64 };

/* ---- buffers ----------------------------------------------------------------------------- */

static struct simb_buf *find(const struct pccx_sim_backend *b, uint32_t handle)
{
	if (handle == 0 || handle > b->n_buf || !b->buf[handle - 1].used)
		return NULL;
	return &b->buf[handle - 1];
}

/* The validator's lookup over this backend's buffers (ctx = the backend). */
static int buf_lookup(void *ctx, uint32_t handle, uint64_t *size, uint32_t *access)
{
	struct simb_buf *bf = find(ctx, handle);

	if (!bf)
		return -1;
	*size = bf->size;
	*access = bf->access;
	return 0;
}

static int xlate(void *ctx, uint32_t handle, uint64_t offset, uint64_t len, uint64_t *dev_addr,
		 uint64_t *contig)
{
	struct simb_buf *bf = find(ctx, handle);

	if (!bf || offset > bf->size || len > bf->size - offset)
		return -1;
	*dev_addr = bf->dev + offset;
	*contig = len;
	return 0;
}

/* Register host memory p (size bytes) as a buffer at the next device address. */
static int add_buf(struct pccx_sim_backend *b, void *p, uint64_t size, uint32_t access, bool owned,
		   uint32_t *handle, pccx_diag *d)
{
	const struct pccx_sim_config *c = pccx__sim_get_config(b->sim);
	uint64_t span, limit = c->dma_address_bits >= 64 ? ~0ull : 1ull << c->dma_address_bits;
	uint32_t win = 0;
	struct simb_buf *bf;
	int rc;

	span = (size + DEV_PAGE - 1) / DEV_PAGE * DEV_PAGE;
	if (b->next_dev + span > limit)
		return pccx__fail(d, PCCX_ERR_NOMEM,
				  "sim buffer: %llu bytes do not fit below the %u-bit DMA limit",
				  (unsigned long long)size, c->dma_address_bits);
	if (b->n_buf == b->cap_buf) {
		uint32_t cap = b->cap_buf ? 2 * b->cap_buf : 16;
		struct simb_buf *nb = realloc(b->buf, cap * sizeof(*nb));

		if (!nb)
			return pccx__fail(d, PCCX_ERR_NOMEM, "sim buffer: out of memory");
		b->buf = nb;
		b->cap_buf = cap;
	}
	if (access & PCCX_BUF_DEV_READ)
		win |= PCCX_SIM_WIN_READ;
	if (access & PCCX_BUF_DEV_WRITE)
		win |= PCCX_SIM_WIN_WRITE;
	/* The window covers exactly the buffer; the page after it stays unmapped. */
	rc = pccx__sim_dma_window_add(b->sim, b->next_dev, size, p, win);
	if (rc)
		return pccx__fail(d, rc, "sim buffer: cannot open a DMA window");
	bf = &b->buf[b->n_buf++];
	bf->host = p;
	bf->size = size;
	bf->dev = b->next_dev;
	bf->access = access;
	bf->used = true;
	bf->owned = owned;
	b->next_dev += span + DEV_PAGE;
	*handle = b->n_buf;
	return 0;
}

/* A buffer request is held to the rule job files are (pccx__buf_decl_check). */
static int check_request(const char *what, uint64_t size, uint32_t access, pccx_diag *d)
{
	char why[160];

	if (pccx__buf_decl_check(size, access, why, sizeof(why)))
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: %s", what, why);
	return 0;
}

/* Bytes of the mapping behind an owned buffer of `size` bytes. */
static size_t owned_span(uint64_t size)
{
	return (size_t)((size + DEV_PAGE - 1) / DEV_PAGE * DEV_PAGE);
}

/*
 * Owned buffers are private anonymous mappings, not malloc'd and cleared: the kernel hands
 * out zero pages as they are first touched, so the parts of a buffer no instruction reaches
 * cost no memory (a job file may declare gigabytes and use a few pages of them), and
 * MAP_NORESERVE keeps such a declaration from being refused by overcommit accounting.
 */
int pccx__sim_backend_buf_alloc(struct pccx_sim_backend *b, uint64_t size, uint32_t access,
				uint32_t *handle,
				pccx_diag *d)
{
	void *p;
	int rc;

	rc = check_request("sim buffer", size, access, d);
	if (rc)
		return rc;
	p = mmap(NULL, owned_span(size), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return pccx__fail(d, PCCX_ERR_NOMEM, "sim buffer: cannot allocate %llu bytes",
				  (unsigned long long)size);
	rc = add_buf(b, p, size, access, true, handle, d);
	if (rc)
		munmap(p, owned_span(size));
	return rc;
}

int pccx__sim_backend_buf_import(struct pccx_sim_backend *b, void *host, uint64_t size,
				 uint32_t access,
				 uint32_t *handle, pccx_diag *d)
{
	if (!host)
		return pccx__fail(d, PCCX_ERR_INVALID, "sim buffer import: no memory given");
	if (check_request("sim buffer import", size, access, d))
		return PCCX_ERR_INVALID;
	return add_buf(b, host, size, access, false, handle, d);
}

int pccx__sim_backend_buf_free(struct pccx_sim_backend *b, uint32_t handle)
{
	struct simb_buf *bf = find(b, handle);

	if (!bf)
		return PCCX_ERR_NOT_FOUND;
	if (pccx__sim_dma_window_remove(b->sim, bf->dev))
		return PCCX_ERR_INTERNAL;
	if (bf->owned)
		munmap(bf->host, owned_span(bf->size));
	bf->host = NULL;
	bf->used = false;
	return 0;
}

void *pccx__sim_backend_buf_map(struct pccx_sim_backend *b, uint32_t handle, uint64_t *size)
{
	struct simb_buf *bf = find(b, handle);

	if (!bf)
		return NULL;
	if (size)
		*size = bf->size;
	return bf->host;
}

uint64_t pccx__sim_backend_buf_devaddr(const struct pccx_sim_backend *b, uint32_t handle)
{
	struct simb_buf *bf = find(b, handle);

	return bf ? bf->dev : 0;
}

/* ---- lifetime ------------------------------------------------------------------------------ */

int pccx__sim_backend_create(const struct pccx_sim_config *cfg, struct pccx_sim_backend **out,
			     pccx_diag *d)
{
	struct pccx_sim_backend *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b)
		return pccx__fail(d, PCCX_ERR_NOMEM, "sim backend: out of memory");
	rc = pccx__sim_create(cfg, &b->sim, d);
	if (rc) {
		free(b);
		return rc;
	}
	b->next_dev = DEV_BASE;
	*out = b;
	return 0;
}

void pccx__sim_backend_destroy(struct pccx_sim_backend *b)
{
	uint32_t i;

	if (!b)
		return;
	for (i = 0; i < b->n_buf; i++)
		if (b->buf[i].used && b->buf[i].owned)
			munmap(b->buf[i].host, owned_span(b->buf[i].size));
	free(b->buf);
	pccx__sim_destroy(b->sim);
	free(b);
}

pccx_sim *pccx__sim_backend_sim(struct pccx_sim_backend *b)
{
	return b->sim;
}

void pccx__sim_backend_reset(struct pccx_sim_backend *b)
{
	uint64_t v = 1;
	int i;

	if (pccx__sim_mmio_write64(b->sim, PCCX_REG_RESET, 1))
		return;
	for (i = 0; i < 1000 && v; i++)
		if (pccx__sim_mmio_read64(b->sim, PCCX_REG_RESET, &v))
			return;
}

/* ---- submit ---------------------------------------------------------------------------------- */

static const char *cause_name(uint64_t cause)
{
	static const char *const names[] = { "?", "ILLEGAL_INSN", "BAD_OPERANDS", "DMA_SLVERR",
					     "DMA_DECERR", "DMA_INTERR", "STREAM_OVERRUN",
					     "DMA_WINDOW" };

	return cause < sizeof(names) / sizeof(names[0]) ? names[cause] : "?";
}

static int describe(const struct pccx_engine_ctx *e, pccx_diag *d)
{
	const struct pccx_engine_error *er = &e->err;

	if (er->kind == PCCX_EF_DEVICE) {
		uint64_t cause = er->error & PCCX_ERROR_CAUSE_MASK;
		unsigned isa = (unsigned)((er->error & PCCX_ERROR_ISA_MASK) >>
					  PCCX_ERROR_ISA_SHIFT);

		return pccx__fail(d, PCCX_ERR_DEVICE,
				  "device error %s at instruction %llu%s%s, info 0x%llx",
				  cause_name(cause),
				  (unsigned long long)(er->error >> PCCX_ERROR_INDEX_SHIFT),
				  isa ? ": " : "", isa ? pccx__isa_errname((int)isa) : "",
				  (unsigned long long)er->info);
	}
	return pccx__fail(d, PCCX_ERR_DEVICE,
			  "command engine: %s (channel %u, instruction %u, info 0x%llx)",
			  pccx__engine_fail_name(er->kind), er->channel, er->insn,
			  (unsigned long long)er->info);
}

int pccx__sim_backend_submit_wait(struct pccx_sim_backend *b, const struct pccx_job_view *job,
				  const struct pccx_sim_backend_opts *opts, struct pccx_sim_backend_result *res,
				  pccx_diag *d)
{
	struct pccx_sim_backend_opts defo = { 0 };
	struct pccx_sim_backend_result dummy;
	struct pccx_engine_ctx e;
	struct slow_io slow = { b->sim, 0, 0, 0, 0 };
	const struct pccx_engine_ops *ops = &sim_ops;
	void *io = b->sim;
	struct timespec t0, t1, c0, c1;
	uint64_t start, last_cycle, last_prog, timeout, poll;
	int rc = 0;

	if (!opts)
		opts = &defo;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	timeout = opts->timeout_cycles ? opts->timeout_cycles : 1ull << 27;
	poll = opts->poll_cycles ? opts->poll_cycles : 64;

	if (!opts->no_validate) {
		struct pccx_vresult vr;
		struct pccx_vlimits lim;
		uint8_t *used = malloc(PCCX_DMA_BITMAP_BYTES(job->n_dma));
		int err;

		if (!used)
			return pccx__fail(d, PCCX_ERR_NOMEM, "sim backend: out of memory");
		pccx__vlimits_default(&lim);
		lim.l2_words = pccx__sim_get_config(b->sim)->l2_words;
		lim.features = pccx__sim_features(b->sim);
		err = pccx__validate(job, buf_lookup, b, &lim, used, &vr);
		free(used);
		if (err) {
			char msg[400];

			pccx__vresult_describe(&vr, job->insn, job->n_insn, msg, sizeof(msg));
			return pccx__fail(d, PCCX_ERR_VALIDATE, "job refused: %s", msg);
		}
	}
	if (!opts->keep_stats)
		pccx__sim_stats_reset(b->sim);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	start = pccx__sim_cycles(b->sim);
	if (opts->stall_every && opts->stall_cycles) {
		slow.every = opts->stall_every;
		slow.phase = opts->stall_phase % opts->stall_every;
		slow.cycles = opts->stall_cycles;
		ops = &slow_ops;
		io = &slow;
	}
	res->state = pccx__engine_start(&e, job, ops, io, xlate, b);
	last_cycle = pccx__sim_cycles(b->sim);
	last_prog = e.progress;
	while (res->state == PCCX_ENGINE_RUNNING) {
		uint64_t now;

		pccx__sim_set_host_backlog(b->sim, e.next < job->n_insn);
		res->state = pccx__engine_step(&e);
		res->steps++;
		now = pccx__sim_cycles(b->sim);
		if (e.progress != last_prog) {
			last_prog = e.progress;
			last_cycle = now;
		} else if (res->state == PCCX_ENGINE_RUNNING) {
			if (now - last_cycle > timeout) {
				res->timed_out = true;
				break;
			}
			pccx__sim_advance(b->sim, poll);
		}
	}
	pccx__sim_set_host_backlog(b->sim, false);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	res->err = e.err;
	res->mmio = e.mmio;
	res->cycles = pccx__sim_cycles(b->sim) - start;
	res->host_seconds = (double)(t1.tv_sec - t0.tv_sec) +
			    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	res->cpu_seconds = (double)(c1.tv_sec - c0.tv_sec) +
			   (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
	pccx__sim_get_stats(b->sim, &res->stats);
	if (res->timed_out) {
		rc = pccx__fail(d, PCCX_ERR_TIMEOUT,
				"device made no progress for %llu cycles (%u of %u words pushed, "
				"RETIRED %llu)",
				(unsigned long long)timeout, pccx__engine_words_pushed(&e), job->n_insn,
				(unsigned long long)e.retired);
		pccx__sim_backend_reset(b);
	} else if (res->state == PCCX_ENGINE_ERROR) {
		rc = describe(&e, d);
		pccx__sim_backend_reset(b);
	}
	return rc;
}
