// SPDX-License-Identifier: MIT
/*
 * The reference NPU: executes each op directly on a host L2 with the isa/num primitives.
 * Semantics are those of docs/isa.md; the arithmetic is entirely in isa/num.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cvo_sfu.h"
#include "diag.h"
#include "exec_ref.h"
#include "pccx_job.h"
#include "pccx_num.h"

#define L2_ELEMS ((size_t)PCCX_L2_WORDS * PCCX_L2_ELEMS_PER_WORD)
/* Below this many weights (n * k) a q4c GEMV's ports run on the calling thread. */
#define Q4C_MT_MIN (1u << 20)
/*
 * Blocks a q4c GEMV's port has on their way to L2 ahead of the one it reads (E4B's W_down on
 * two threads: 0.44 ms with 2 blocks into L1, 0.25-0.31 ms with 8 into L2; 4-16 alike).
 */
#define Q4C_AHEAD 8

/*
 * A step's matmuls follow each other in the same order every token, with the SFU's serial
 * work between them, during which no weights stream. So each matmul notes the weights that
 * followed it last time (a table keyed by its weights' address), and the ops between it and
 * the next matmul each fetch the next WNEXT_STEP bytes of those weights towards L2, up to
 * WNEXT_MAX: the next matmul starts on weights in cache. A wrong guess costs bandwidth only.
 */
#define WNEXT_SLOTS 4096u		/* a power of two, several steps' matmuls */
#define WNEXT_PROBE 8u
#define WNEXT_STEP (8u << 10)
#define WNEXT_MAX (512u << 10)

struct wnext {
	const uint8_t *w;		/* a matmul's weights (NULL: a free slot) */
	const uint8_t *next;		/* the weights of the matmul that followed it */
	uint64_t next_bytes;		/* read whole from next; 0: not worth fetching ahead */
};

enum { OP_MATMUL, OP_CVO, OP_COPY, OP_LOAD, OP_STORE, OP_STAGE, OP_BEGIN, OP_END };

struct hostbuf {
	uint8_t *base;
	uint64_t size;
	bool dev_write;
};

struct pccx_ref_exec {
	float *l2;			/* (PCCX_L2_WORDS, 4) */
	float S;			/* the SFU scalar register */
	struct hostbuf buf[PCCX_NPU_NBUF];
	struct pccx_pool *pool;
	enum pccx_kern_impl impl;
	pccx_ref_stage_fn on_stage;
	void *stage_user;
	struct pccx_ref_counters cnt;
	pccx_diag err;
	/* scratch of a matmul: x and y lie in L2, so m * k and m * n are at most L2_ELEMS */
	int8_t *q8;			/* (L2_ELEMS) the m rows of x quantised */
	int8_t *xp;			/* (L2_ELEMS) */
	float *sx;			/* (L2_ELEMS / 32) */
	int32_t *xsum;			/* (L2_ELEMS / 32) */
	struct pccx_kern_act *act;	/* (L2_ELEMS / 32) one per row of x */
	float *y;			/* (L2_ELEMS) y[r * n + i] */
	uint32_t *idx;			/* (L2_ELEMS, at the first use) a rowmask GEMV's kept rows */
	int32_t *sum;			/* (L2_ELEMS, at the first use) a q4c GEMV's INT32 sums */
	uint8_t *gather;		/* (gather_bytes) pccx__kern_q4_gemv_gather's scratch */
	size_t gather_bytes;
	/* the weights each matmul was followed by last time, and those fetched ahead now */
	struct wnext *wnext;		/* (WNEXT_SLOTS) */
	const uint8_t *last_w;		/* the last matmul's weights */
	const uint8_t *ahead_at, *ahead_end;
	/* a Q4 matmul the pool's workers run while the caller goes on (see settle) */
	struct {
		bool on;
		struct pccx_kern_q4_job job;
		struct pccx_npu_matmul mm;
		struct pccx_l2_range wr;	/* its outputs in L2, written when it is joined */
		const uint8_t *w;		/* the host bytes it streams until it is joined */
		uint64_t wbytes;
	} pend;
};

static struct pccx_ref_exec *X(void *ctx)
{
	return ctx;
}

static float *word(struct pccx_ref_exec *x, uint32_t w)
{
	return x->l2 + (size_t)w * PCCX_L2_ELEMS_PER_WORD;
}

/* ------------------------------------------------------------------------------------- */
/* Legality: each op is encoded as the instructions it stands for and checked by isa/.   */

/* what, or "what name" when name is not NULL (formatted only here, on the way out) */
static int isa_fail(struct pccx_ref_exec *x, const char *what, const char *name,
		    const struct pccx_isa_fault *f)
{
	const char *field =
		f->field >= 0 && f->field < PCCX_NFIELDS ? pccx__fields[f->field].name : "-";

	return pccx__fail(&x->err, PCCX_ERR_INVALID, "%s%s%s: %s (field %s)", what,
			  name ? " " : "", name ? name : "", pccx__isa_strerror(f->err), field);
}

/*
 * Encode, decode (word-level legality) and compute effects against the shape state; *fx (not
 * for a MEMSET) says what the instruction reads and writes.
 */
static int check_insn_fx(struct pccx_ref_exec *x, const char *what, const char *name,
			 struct pccx_insn *in, struct pccx_shape_state *st, struct pccx_effects *fx)
{
	struct pccx_isa_fault f = { 0, -1 };
	struct pccx_insn dec;
	uint64_t w;

	if (pccx__encode(in, &w, &f) || pccx__decode(w, &dec, &f))
		return isa_fail(x, what, name, &f);
	if (dec.opcode == PCCX_OP_MEMSET) {
		pccx__shape_apply(st, &dec);
		return PCCX_OK;
	}
	if (pccx__insn_effects(&dec, st, PCCX_L2_WORDS, fx, &f))
		return isa_fail(x, what, name, &f);
	return PCCX_OK;
}

static int check_insn(struct pccx_ref_exec *x, const char *what, struct pccx_insn *in,
		      struct pccx_shape_state *st)
{
	struct pccx_effects fx;

	return check_insn_fx(x, what, NULL, in, st, &fx);
}

/* ------------------------------------------------------------------------------------- */
/* A matmul behind the caller's back.                                                    */

static float *word(struct pccx_ref_exec *x, uint32_t w);

/* y (the kernel's output rows) into L2 at the matmul's destination, and its max into S. */
static void matmul_store(struct pccx_ref_exec *x, const struct pccx_npu_matmul *mm)
{
	float smax = 0.0f;
	uint32_t r;

	for (r = 0; r < mm->m; r++) {
		float *out = word(x, mm->dst + r * pccx_words_for(mm->n));
		const float *y = x->y + (size_t)r * mm->n;

		pccx__kern_out_store(y, out, mm->n, mm->accm);
		if (mm->findemax) {
			float rmax = pccx__sfu_reduce(PCCX_SFU_MAX, 0, 0.0f, out, mm->n);

			smax = r ? pccx__sfu_scalar(PCCX_SFU_MAX, 0, smax, rmax) : rmax;
		}
	}
	if (mm->findemax)
		x->S = smax;
}

/* The pending matmul finished (the caller taking its share of the rows left) and stored. */
static void join(struct pccx_ref_exec *x)
{
	if (!x->pend.on)
		return;
	pccx__kern_q4_gemm_join(x->pool);
	x->pend.on = false;
	matmul_store(x, &x->pend.mm);
}

static bool overlap(struct pccx_l2_range a, struct pccx_l2_range b)
{
	return a.words && b.words && a.base < b.base + b.words && b.base < a.base + a.words;
}

/*
 * Before an instruction with effects fx runs: join the pending matmul if the instruction reads
 * or writes the words it will write, or S when it finds a max (the device's interlocks on L2
 * and S, docs/isa.md). Its input was quantised when it started, so later writes there are free
 * to go ahead, and an op that waits for nothing here computes what it would have after the
 * matmul. Host memory is the other dependency: see settle_host.
 */
static void settle(struct pccx_ref_exec *x, const struct pccx_effects *fx)
{
	if (x->pend.on &&
	    (overlap(fx->rd[0], x->pend.wr) || overlap(fx->rd[1], x->pend.wr) ||
	     overlap(fx->wr, x->pend.wr) ||
	     (x->pend.mm.findemax && (fx->reads_s || fx->writes_s))))
		join(x);
}

/*
 * Before n bytes at host address at are written (a MEMCPY to the host): join the pending
 * matmul if it streams any of them, since in program order it read them before (docs/isa.md,
 * host memory: the engine holds such a MEMCPY until the stream's reads are done). Compared as
 * addresses, so two bindings of the same memory are one.
 */
static void settle_host(struct pccx_ref_exec *x, const uint8_t *at, uint64_t n)
{
	uintptr_t a = (uintptr_t)at, w = (uintptr_t)x->pend.w;

	if (x->pend.on && a < w + x->pend.wbytes && w < a + n)
		join(x);
}

static int memset_fmap(struct pccx_ref_exec *x, const char *what, struct pccx_shape_state *st,
		       uint32_t k, uint32_t m)
{
	struct pccx_insn in = { .opcode = PCCX_OP_MEMSET };

	in.f[PCCX_FID_C_cache] = PCCX_CACHE_FMAP;
	in.f[PCCX_FID_C_a] = k;
	in.f[PCCX_FID_C_b] = m;
	in.f[PCCX_FID_C_c] = 1;
	return check_insn(x, what, &in, st);
}

/* The fmap shape of a transfer of n elements: (n, 1) when it fits, else (4, words). */
static int memset_xfer(struct pccx_ref_exec *x, const char *what, struct pccx_shape_state *st,
		       uint32_t n)
{
	if (n <= 0xFFFFu)
		return memset_fmap(x, what, st, n, 1);
	return memset_fmap(x, what, st, PCCX_L2_ELEMS_PER_WORD, pccx_words_for(n));
}

static int check_host(struct pccx_ref_exec *x, const char *what, uint32_t buf, uint64_t off,
		      uint64_t bytes, bool write)
{
	const struct hostbuf *b;

	if (buf >= PCCX_NPU_NBUF || !x->buf[buf].base)
		return pccx__fail(&x->err, PCCX_ERR_INVALID, "%s: host buffer %u is not bound", what,
				  buf);
	b = &x->buf[buf];
	if (off % 16)
		return pccx__fail(&x->err, PCCX_ERR_INVALID,
				  "%s: host offset %llu not a multiple of 16", what,
				  (unsigned long long)off);
	if (off > b->size || bytes > b->size - off)
		return pccx__fail(&x->err, PCCX_ERR_RANGE,
				  "%s: host range %llu+%llu outside buffer %u (%llu bytes)", what,
				  (unsigned long long)off, (unsigned long long)bytes, buf,
				  (unsigned long long)b->size);
	if (write && !b->dev_write)
		return pccx__fail(&x->err, PCCX_ERR_INVALID, "%s: buffer %u is read-only", what,
				  buf);
	return PCCX_OK;
}

/* ------------------------------------------------------------------------------------- */
/* Ops.                                                                                  */

static int op_bind(void *ctx, uint32_t buf, void *base, uint64_t size, bool dev_write)
{
	struct pccx_ref_exec *x = X(ctx);

	join(x);	/* its weights may lie in the buffer bound before */
	if (buf >= PCCX_NPU_NBUF)
		return pccx__fail(&x->err, PCCX_ERR_INVALID, "bind: buffer %u", buf);
	x->buf[buf].base = base;
	x->buf[buf].size = size;
	x->buf[buf].dev_write = dev_write;
	/* what followed what lay in the buffers bound before */
	memset(x->wnext, 0, WNEXT_SLOTS * sizeof(*x->wnext));
	x->last_w = x->ahead_at = x->ahead_end = NULL;
	return PCCX_OK;
}

static int op_begin(void *ctx, uint32_t pos)
{
	(void)pos;
	join(X(ctx));
	X(ctx)->cnt.ops[OP_BEGIN]++;
	return PCCX_OK;
}

static int op_end(void *ctx)
{
	join(X(ctx));	/* the job's results are all in L2 when it ends */
	X(ctx)->cnt.ops[OP_END]++;
	return PCCX_OK;
}

/*
 * Q4: every row of x quantised, then all m rows against W at once (pccx__kern_q4_gemm reads each
 * weight block once for all rows, with the bits of m GEMVs); y[r * n + i].
 */
static void matmul_q4(struct pccx_ref_exec *x, const struct pccx_npu_matmul *mm,
		      const uint8_t *w, uint64_t rb)
{
	uint32_t nb = mm->k / 32, r;

	for (r = 0; r < mm->m; r++) {
		struct pccx_kern_act *a = &x->act[r];

		*a = (struct pccx_kern_act){ mm->k, x->q8 + (size_t)r * mm->k,
					     x->sx + (size_t)r * nb, x->xp + (size_t)r * mm->k,
					     x->xsum + (size_t)r * nb };
		pccx__kern_q8_quantize(word(x, mm->src + r * pccx_words_for(mm->k)), mm->k,
				       x->q8 + (size_t)r * mm->k, x->sx + (size_t)r * nb);
		pccx__kern_act_prepare(a);
	}
	if (pccx__pool_threads(x->pool) > 1) {
		/* the workers start on it; the caller goes on until an op needs it (settle) */
		pccx__kern_q4_gemm_start(x->pool, &x->pend.job, x->impl, w, rb, mm->n, x->act,
					 mm->m, x->y, mm->n);
		x->pend.on = true;
	} else if (mm->m == 1) {
		pccx__kern_q4_gemv(x->pool, x->impl, w, rb, mm->n, x->act, x->y);
	} else {
		pccx__kern_q4_gemm(x->pool, x->impl, w, rb, mm->n, x->act, mm->m, x->y, mm->n);
	}
}

/* A rowmask element keeps its row unless it is +-0 (a NaN keeps it). */
static bool row_kept(float v)
{
	return (pccx_f32_bits(v) & 0x7fffffffu) != 0;
}

/*
 * GEMV rowmask (docs/isa.md): the mask is the old destination; the kept rows are computed
 * from their own rows of W (the same bits as the whole GEMV gives them), gathered across the
 * pool's threads; the others are +0. *bytes: the stream bytes the kept rows take.
 */
static int matmul_q4_rowmask(struct pccx_ref_exec *x, const struct pccx_npu_matmul *mm,
			     const uint8_t *w, uint64_t rb, uint64_t *bytes)
{
	const float *mask = word(x, mm->dst);
	size_t need = pccx__kern_gather_bytes(x->pool, rb);
	uint32_t i, kept = 0;

	if (!x->idx)
		x->idx = malloc(L2_ELEMS * sizeof(*x->idx));
	if (!x->idx)
		return pccx__fail(&x->err, PCCX_ERR_NOMEM, "gemv rowmask: out of memory");
	if (need > x->gather_bytes) {
		uint8_t *g = realloc(x->gather, need);

		if (!g)
			return pccx__fail(&x->err, PCCX_ERR_NOMEM, "gemv rowmask: out of memory");
		x->gather = g;
		x->gather_bytes = need;
	}
	x->act[0] = (struct pccx_kern_act){ mm->k, x->q8, x->sx, x->xp, x->xsum };
	pccx__kern_q8_quantize(word(x, mm->src), mm->k, x->q8, x->sx);
	pccx__kern_act_prepare(&x->act[0]);
	for (i = 0; i < mm->n; i++) {
		if (row_kept(mask[i]))
			x->idx[kept++] = i;
		x->y[i] = 0.0f;
	}
	pccx__kern_q4_gemv_gather(x->pool, x->impl, w, rb, x->idx, kept, x->act, x->y,
				  x->gather);
	*bytes = (uint64_t)kept * rb;
	return PCCX_OK;
}

/*
 * GEMV on q4c weights (FEATURES.COLSKIP, docs/isa.md): per port, its rows from the column
 * records of the inputs whose INT8 value is not 0, block by block (isa/num: the dense GEMV's
 * bits when the weights' scales are finite). The ports are independent (their own rows, sums
 * and outputs), so the pool's threads take them in turn.
 */
struct q4c_job {
	struct pccx_ref_exec *x;
	const uint8_t *w;
	struct pccx_wshape ws;
	uint32_t nb;			/* blocks of 32 inputs */
	uint32_t next;			/* atomic: the next port not taken */
	uint64_t bytes[PCCX_WSTREAM_PORTS];
};

/*
 * The records block b reads (its inputs' columns that are not 0, its scales) on their way to
 * L2 (into L1 they crowd out the block being read). Inlined: GCC takes a function of
 * prefetches alone for one without effects and drops its calls.
 */
static inline __attribute__((always_inline)) void
q4c_prefetch(const struct pccx_ref_exec *x, const uint8_t *blk, uint64_t cb, uint64_t bb,
	     uint32_t b)
{
	const int8_t *q = x->q8 + (size_t)b * PCCX_Q4_BLOCK;
	uint64_t off;
	uint32_t c;

	for (c = 0; c < PCCX_Q4_BLOCK; c++)
		if (q[c])
			for (off = 0; off < cb; off += 64)
				__builtin_prefetch(blk + c * cb + off, 0, 2);
	for (off = PCCX_Q4_BLOCK * cb; off < bb; off += 64)
		__builtin_prefetch(blk + off, 0, 2);
}

static void q4c_port(struct q4c_job *j, unsigned p)
{
	struct pccx_ref_exec *x = j->x;
	const uint8_t *base = j->w + pccx__wstream_port_offset(&j->ws, p);
	uint32_t first, rows, b, c, ahead = 0;
	int32_t *sum;
	uint64_t cb, bb, bytes = 0;

	pccx__wstream_port_rows(&j->ws, p, &first, &rows);
	if (!rows)
		return;
	sum = x->sum + first;
	cb = pccx__wstream_q4c_col_bytes(rows);
	bb = pccx__wstream_q4c_block_bytes(rows);
	memset(sum, 0, (size_t)rows * sizeof(*sum));
	for (b = 0; b < j->nb; b++) {
		const int8_t *q = x->q8 + (size_t)b * PCCX_Q4_BLOCK;

		if (!pccx__q4c_block_read(q, x->sx[b]))
			continue;
		/* the blocks after it on their way: a port's block records lie 9 KiB apart
		 * (E4B's W_down), too far for the CPU's own prefetch to follow */
		for (ahead = ahead > b ? ahead : b + 1; ahead < j->nb && ahead <= b + Q4C_AHEAD;
		     ahead++)
			if (pccx__q4c_block_read(x->q8 + (size_t)ahead * PCCX_Q4_BLOCK,
						 x->sx[ahead]))
				q4c_prefetch(x, base + ahead * bb, cb, bb, ahead);
		for (c = 0; c < PCCX_Q4_BLOCK; c++)
			if (q[c]) {
				pccx__kern_q4c_column(x->impl, base + b * bb + c * cb, rows, q[c],
						      sum);
				bytes += cb;
			}
		pccx__kern_q4c_block_end(x->impl, base + b * bb + PCCX_Q4_BLOCK * cb, rows,
					 x->sx[b], sum, x->y + first);
		bytes += bb - PCCX_Q4_BLOCK * cb;
	}
	j->bytes[p] = bytes;
}

static void q4c_part(void *ctx, unsigned part, unsigned nparts)
{
	struct q4c_job *j = ctx;
	uint32_t lo, hi;

	(void)part;
	(void)nparts;
	while (pccx__kern_take(&j->next, 1, 0, PCCX_WSTREAM_PORTS, &lo, &hi))
		q4c_port(j, lo);
}

/* *bytes: the stream bytes the records read take. */
static int matmul_q4c(struct pccx_ref_exec *x, const struct pccx_npu_matmul *mm,
		      const uint8_t *w, uint64_t *bytes)
{
	struct q4c_job j = { x, w, { mm->n, mm->k, PCCX_WFMT_Q4C, true }, mm->k / PCCX_Q4_BLOCK,
			     0, { 0 } };
	unsigned p;

	if (!x->sum)
		x->sum = malloc(L2_ELEMS * sizeof(*x->sum));
	if (!x->sum)
		return pccx__fail(&x->err, PCCX_ERR_NOMEM, "gemv q4c: out of memory");

	pccx__kern_q8_quantize(word(x, mm->src), mm->k, x->q8, x->sx);
	memset(x->y, 0, (size_t)mm->n * sizeof(*x->y));
	/* a port's rows of a short GEMV are not worth a second thread's wake-up */
	pccx__pool_run((uint64_t)mm->n * mm->k >= Q4C_MT_MIN ? x->pool : NULL, q4c_part, &j);
	for (*bytes = 0, p = 0; p < PCCX_WSTREAM_PORTS; p++)
		*bytes += j.bytes[p];
	return PCCX_OK;
}

/*
 * F32 / F32T: all m rows of x against W (rows of W padded to 16 bytes are read in place),
 * y[r * n + i].
 */
static void matmul_f32(struct pccx_ref_exec *x, const struct pccx_npu_matmul *mm,
		       const uint8_t *w, uint64_t rb)
{
	const float *wf = (const float *)(const void *)w, *xin = word(x, mm->src);
	size_t xs = (size_t)pccx_words_for(mm->k) * PCCX_L2_ELEMS_PER_WORD;

	if (mm->fmt == PCCX_WFMT_F32)
		pccx__kern_f32_gemm(x->pool, x->impl, wf, rb, mm->n, mm->k, xin, xs, mm->m, x->y,
				    mm->n);
	else
		pccx__kern_f32t_gemm(x->pool, x->impl, wf, rb, mm->k, mm->n, xin, xs, mm->m, x->y,
				     mm->n);
}

static struct wnext *wnext_slot(struct pccx_ref_exec *x, const uint8_t *w)
{
	uint64_t h = ((uint64_t)(uintptr_t)w >> 4) * 0x9E3779B97F4A7C15ull;
	uint32_t i = (uint32_t)(h >> 40) & (WNEXT_SLOTS - 1), k;

	for (k = 0; k < WNEXT_PROBE; k++) {
		struct wnext *e = &x->wnext[(i + k) & (WNEXT_SLOTS - 1)];

		if (e->w == w || !e->w)
			return e;
	}
	return &x->wnext[i];	/* full around it: the newest wins */
}

/* The next WNEXT_STEP bytes of the weights guessed to come next, towards L2. */
static void fetch_ahead(struct pccx_ref_exec *x)
{
	size_t n, off;

	if (x->ahead_at >= x->ahead_end)
		return;
	n = (size_t)(x->ahead_end - x->ahead_at);
	n = n < WNEXT_STEP ? n : WNEXT_STEP;
	for (off = 0; off < n; off += 64)
		__builtin_prefetch(x->ahead_at + off, 0, 2);
	x->ahead_at += n;
}

/*
 * Matmul w (reading `bytes` from it whole, or 0 for the sparse GEMVs' scattered reads) is
 * done: note it as what followed the previous one, and start on the weights that followed it
 * last time.
 */
static void matmul_done(struct pccx_ref_exec *x, const uint8_t *w, uint64_t bytes)
{
	struct wnext *e;

	if (x->last_w) {
		e = wnext_slot(x, x->last_w);
		*e = (struct wnext){ x->last_w, w, bytes };
	}
	x->last_w = w;
	e = wnext_slot(x, w);
	x->ahead_at = x->ahead_end = NULL;
	if (e->w == w && e->next_bytes) {
		x->ahead_at = e->next;
		x->ahead_end = e->next + (e->next_bytes < WNEXT_MAX ? e->next_bytes : WNEXT_MAX);
		fetch_ahead(x);
	}
}

/* GEMV/GEMM y[m][n] = x[m][:] . W[n][:] (Q4, F32) or x[m][:] . W[:][n] (F32T). */
static int op_matmul(void *ctx, const struct pccx_npu_matmul *mm)
{
	struct pccx_ref_exec *x = X(ctx);
	struct pccx_shape_state st;
	struct pccx_insn in = { .opcode = mm->m == 1 ? PCCX_OP_GEMV : PCCX_OP_GEMM };
	struct pccx_wshape ws = { mm->n, mm->k, mm->fmt,
				  mm->fmt == PCCX_WFMT_Q4 || mm->fmt == PCCX_WFMT_Q4C };
	struct pccx_effects fx;
	uint64_t rb, bytes;
	const uint8_t *w;
	int rc;

	x->cnt.ops[OP_MATMUL]++;
	join(x);	/* one matmul at a time: they share the pool and the scratch */
	pccx__shape_reset(&st);
	rc = memset_fmap(x, "matmul fmap shape", &st, mm->k, mm->m);
	if (!rc) {
		struct pccx_insn ms = { .opcode = PCCX_OP_MEMSET };

		ms.f[PCCX_FID_C_cache] = PCCX_CACHE_WEIGHT;
		ms.f[PCCX_FID_C_a] = mm->n;
		ms.f[PCCX_FID_C_b] = mm->k;
		ms.f[PCCX_FID_C_c] = mm->fmt;
		rc = check_insn(x, "matmul weight shape", &ms, &st);
	}
	if (rc)
		return rc;
	in.f[PCCX_FID_A_dest] = mm->dst;
	in.f[PCCX_FID_A_src] = mm->src;
	in.f[PCCX_FID_A_findemax] = mm->findemax;
	in.f[PCCX_FID_A_accm] = mm->accm;
	in.f[PCCX_FID_A_w_scale] = ws.w_scale;
	in.f[PCCX_FID_A_rowmask] = mm->rowmask;
	rc = check_insn_fx(x, mm->m == 1 ? "gemv" : "gemm", NULL, &in, &st, &fx);
	if (rc)
		return rc;
	/* the effects check kept x and y inside L2: m * k and m * n fit the scratch */
	rb = pccx__wstream_row_bytes(&ws);
	bytes = pccx__wstream_port_offset(&ws, PCCX_WSTREAM_PORTS);
	rc = check_host(x, "matmul weights", mm->w.buf, mm->w.offset, bytes, false);
	if (rc)
		return rc;
	w = x->buf[mm->w.buf].base + mm->w.offset;

	if (mm->rowmask)
		rc = matmul_q4_rowmask(x, mm, w, rb, &bytes);
	else if (mm->fmt == PCCX_WFMT_Q4C)
		rc = matmul_q4c(x, mm, w, &bytes);
	else if (mm->fmt == PCCX_WFMT_Q4)
		matmul_q4(x, mm, w, rb);
	else
		matmul_f32(x, mm, w, rb);
	if (rc)
		return rc;
	x->cnt.stream_bytes += bytes;
	/* the next weights are fetched ahead by the ops from here, while this one runs */
	matmul_done(x, w, mm->rowmask || mm->fmt == PCCX_WFMT_Q4C ? 0 : bytes);
	if (x->pend.on) {
		x->pend.mm = *mm;
		x->pend.wr = fx.wr;
		x->pend.w = w;
		x->pend.wbytes = bytes;
		return PCCX_OK;
	}
	matmul_store(x, mm);
	return PCCX_OK;
}

/* ISA CVO function -> isa/num SFU operation; -1 for LDS (no arithmetic). */
/* A scalar result: S and element 0 of word dst. */
static void scalar_out(struct pccx_ref_exec *x, uint32_t dst, float s)
{
	x->S = s;
	word(x, dst)[0] = s;
}

/* Element-wise CVOs are independent per element: long ones are split across the threads. */
struct vec_job {
	int fn;
	unsigned flags;
	float S;
	const float *src;
	float *dst;
	uint32_t n;
};

static void vec_part(void *ctx, unsigned part, unsigned nparts)
{
	const struct vec_job *j = ctx;
	unsigned long long lo, hi;

	pccx__pool_split(j->n, 64, part, nparts, &lo, &hi);
	if (lo < hi)
		pccx__kern_sfu_vector(j->fn, j->flags, j->S, j->src + lo, j->dst + lo,
				      (size_t)(hi - lo));
}

/*
 * Shortest vectors split across the threads: the cheap functions (one or two IEEE operations,
 * vectorised) are bound by memory, where a second thread gains less than waking it costs.
 */
#define MT_MIN_ELEMS 2048u
#define MT_MIN_ELEMS_CHEAP (1u << 18)

static int op_cvo(void *ctx, const struct pccx_npu_cvo *op)
{
	struct pccx_ref_exec *x = X(ctx);
	const struct pccx_cvo_desc *cd = pccx__cvo_desc(op->func);
	struct pccx_insn in = { .opcode = PCCX_OP_CVO };
	struct pccx_effects fx;
	struct pccx_shape_state st;
	bool sform = op->flags & PCCX_CVOF_SREG;
	int fn = pccx__cvo_sfu_fn(op->func), rc;
	unsigned f = pccx__cvo_sfu_flags(op->func, op->flags);

	x->cnt.ops[OP_CVO]++;
	fetch_ahead(x);
	pccx__shape_reset(&st);
	in.f[PCCX_FID_D_func] = op->func;
	in.f[PCCX_FID_D_src] = op->src;
	in.f[PCCX_FID_D_dst] = op->dst;
	in.f[PCCX_FID_D_len] = op->len;
	in.f[PCCX_FID_D_sub_emax] = !!(op->flags & PCCX_CVOF_SUB);
	in.f[PCCX_FID_D_recip_scale] = !!(op->flags & PCCX_CVOF_RECIP);
	in.f[PCCX_FID_D_accm] = !!(op->flags & PCCX_CVOF_ACCM);
	in.f[PCCX_FID_D_sreg] = sform;
	in.f[PCCX_FID_D_relu] = !!(op->flags & PCCX_CVOF_RELU);
	rc = check_insn_fx(x, "cvo", cd ? cd->name : "?", &in, &st, &fx);
	if (rc)
		return rc;
	settle(x, &fx);

	if (cd->cls == PCCX_CVOC_LOAD) {
		/* a unit store like any other: a NaN from host data becomes the canonical one */
		scalar_out(x, op->dst, pccx_f32_canon(word(x, op->src)[op->len]));
	} else if (sform) {
		if (cd->cls == PCCX_CVOC_UNARY)
			scalar_out(x, op->dst, pccx__sfu_elem(fn, f, x->S, x->S, 0.0f));
		else
			scalar_out(x, op->dst,
				   pccx__sfu_scalar(fn, f, x->S, word(x, op->src)[0]));
	} else if (cd->cls == PCCX_CVOC_REDUCE) {
		scalar_out(x, op->dst, pccx__sfu_reduce(fn, f, x->S, word(x, op->src), op->len));
	} else {
		struct vec_job j = { fn, f, x->S, word(x, op->src), word(x, op->dst), op->len };
		uint32_t mt = pccx__kern_sfu_cheap(fn) ? MT_MIN_ELEMS_CHEAP : MT_MIN_ELEMS;

		/* the pool is the pending matmul's until it is joined */
		pccx__pool_run(op->len >= mt && !x->pend.on ? x->pool : NULL, vec_part, &j);
	}
	return PCCX_OK;
}

static int op_copy(void *ctx, uint32_t dst, uint32_t src, uint32_t words)
{
	struct pccx_ref_exec *x = X(ctx);
	struct pccx_insn in = { .opcode = PCCX_OP_MEMCPY };
	struct pccx_effects fx;
	struct pccx_shape_state st;
	int rc;

	x->cnt.ops[OP_COPY]++;
	fetch_ahead(x);
	pccx__shape_reset(&st);
	rc = memset_fmap(x, "copy shape", &st, PCCX_L2_ELEMS_PER_WORD, words);
	in.f[PCCX_FID_B_dest] = dst;
	in.f[PCCX_FID_B_src] = src;
	if (!rc)
		rc = check_insn_fx(x, "copy", NULL, &in, &st, &fx);
	if (rc)
		return rc;
	settle(x, &fx);
	memcpy(word(x, dst), word(x, src), (size_t)words * 16);
	return PCCX_OK;
}

/*
 * MEMCPY between L2 and a host buffer: n elements from/to L2 word `word`, as instructions of
 * at most 65,535 words (the fmap-shape field), each checked by isa/ like any other.
 */
static int xfer(struct pccx_ref_exec *x, const char *what, bool to_host, uint32_t at,
		uint32_t buf, uint64_t off, uint32_t n)
{
	uint64_t words = pccx_words_for(n), bytes = words * 16;
	int rc = check_host(x, what, buf, off, bytes, to_host);

	while (!rc && words) {
		uint32_t chunk = words < 0xFFFFu ? (uint32_t)words : 0xFFFFu;
		struct pccx_insn in = { .opcode = PCCX_OP_MEMCPY };
		struct pccx_effects fx;
		struct pccx_shape_state st;
		uint64_t cb = (uint64_t)chunk * 16;

		pccx__shape_reset(&st);
		rc = memset_xfer(x, what, &st, chunk == words ? n : chunk * PCCX_L2_ELEMS_PER_WORD);
		in.f[to_host ? PCCX_FID_B_to_host : PCCX_FID_B_from_host] = 1;
		in.f[to_host ? PCCX_FID_B_src : PCCX_FID_B_dest] = at;
		if (!rc)
			rc = check_insn_fx(x, what, NULL, &in, &st, &fx);
		if (rc)
			break;
		settle(x, &fx);
		if (to_host) {
			settle_host(x, x->buf[buf].base + off, cb);
			memcpy(x->buf[buf].base + off, word(x, at), cb);
		} else {
			memcpy(word(x, at), x->buf[buf].base + off, cb);
		}
		at += chunk;
		off += cb;
		n -= chunk * PCCX_L2_ELEMS_PER_WORD;
		words -= chunk;
	}
	if (!rc) {
		if (to_host)
			x->cnt.store_bytes += bytes;
		else
			x->cnt.load_bytes += bytes;
	}
	return rc;
}

static int op_load(void *ctx, uint32_t dst, uint32_t buf, uint64_t off, uint32_t n)
{
	struct pccx_ref_exec *x = X(ctx);

	x->cnt.ops[OP_LOAD]++;
	fetch_ahead(x);
	return xfer(x, "load", false, dst, buf, off, n);
}

static int op_store(void *ctx, uint32_t buf, uint64_t off, uint32_t src, uint32_t n)
{
	struct pccx_ref_exec *x = X(ctx);

	x->cnt.ops[OP_STORE]++;
	fetch_ahead(x);
	return xfer(x, "store", true, src, buf, off, n);
}

static int op_stage(void *ctx, const char *name, uint32_t addr, uint32_t rows, uint32_t cols)
{
	struct pccx_ref_exec *x = X(ctx);
	uint32_t stride = pccx_words_for(cols);

	x->cnt.ops[OP_STAGE]++;
	if ((uint64_t)addr + (uint64_t)rows * stride > PCCX_L2_WORDS)
		return pccx__fail(&x->err, PCCX_ERR_RANGE, "stage %s: outside L2", name);
	if (!x->on_stage)
		return PCCX_OK;
	join(x);
	return x->on_stage(x->stage_user, name, word(x, addr), rows, cols,
			   stride * PCCX_L2_ELEMS_PER_WORD);
}

static const char *op_error(void *ctx)
{
	return X(ctx)->err.msg;
}

static const struct pccx_npu_ops ref_ops = {
	.name = "reference",
	.bind = op_bind,
	.begin = op_begin,
	.end = op_end,
	.matmul = op_matmul,
	.cvo = op_cvo,
	.copy = op_copy,
	.load = op_load,
	.store = op_store,
	.stage = op_stage,
	.error = op_error,
};

const struct pccx_npu_ops *pccx__ref_exec_ops(void)
{
	return &ref_ops;
}

/* ------------------------------------------------------------------------------------- */

int pccx__ref_exec_create(struct pccx_ref_exec **out, unsigned n_threads, enum pccx_kern_impl impl,
			  pccx_diag *d)
{
	struct pccx_ref_exec *x;
	int rc;

	*out = NULL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return pccx__fail(d, PCCX_ERR_NOMEM, "reference NPU: out of memory");
	x->l2 = calloc(L2_ELEMS, sizeof(float));
	x->q8 = malloc(L2_ELEMS);
	x->xp = malloc(L2_ELEMS);
	x->sx = malloc(L2_ELEMS / 32 * sizeof(float));
	x->xsum = malloc(L2_ELEMS / 32 * sizeof(int32_t));
	x->act = malloc(L2_ELEMS / 32 * sizeof(*x->act));
	x->y = malloc(L2_ELEMS * sizeof(float));
	x->wnext = calloc(WNEXT_SLOTS, sizeof(*x->wnext));
	if (!x->l2 || !x->q8 || !x->xp || !x->sx || !x->xsum || !x->act || !x->y || !x->wnext) {
		pccx__ref_exec_free(x);
		return pccx__fail(d, PCCX_ERR_NOMEM, "reference NPU: out of memory");
	}
	if (!pccx__kern_supported(impl)) {
		pccx__ref_exec_free(x);
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "reference NPU: this CPU cannot run the "
				  "%s kernel", pccx__kern_name(impl));
	}
	x->impl = pccx__kern_resolve(impl);
	rc = pccx__pool_create(&x->pool, n_threads ? n_threads : pccx__pool_ncpu(), d);
	if (rc) {
		pccx__ref_exec_free(x);
		return rc;
	}
	*out = x;
	return PCCX_OK;
}

void pccx__ref_exec_free(struct pccx_ref_exec *x)
{
	if (!x)
		return;
	join(x);
	pccx__pool_destroy(x->pool);
	free(x->l2);
	free(x->q8);
	free(x->xp);
	free(x->sx);
	free(x->xsum);
	free(x->act);
	free(x->y);
	free(x->idx);
	free(x->sum);
	free(x->gather);
	free(x->wnext);
	free(x);
}

void pccx__ref_exec_on_stage(struct pccx_ref_exec *x, pccx_ref_stage_fn fn, void *user)
{
	x->on_stage = fn;
	x->stage_user = user;
}

const char *pccx__ref_exec_error(const struct pccx_ref_exec *x)
{
	return x->err.msg;
}

const struct pccx_ref_counters *pccx__ref_exec_counters(const struct pccx_ref_exec *x)
{
	return &x->cnt;
}

void pccx__ref_exec_reset_counters(struct pccx_ref_exec *x)
{
	memset(&x->cnt, 0, sizeof(x->cnt));
}

float *pccx__ref_exec_l2(struct pccx_ref_exec *x)
{
	join(x);
	return x->l2;
}

float pccx__ref_exec_sreg(struct pccx_ref_exec *x)
{
	join(x);
	return x->S;
}

unsigned pccx__ref_exec_threads(const struct pccx_ref_exec *x)
{
	return pccx__pool_threads(x->pool);
}

enum pccx_kern_impl pccx__ref_exec_kernel(const struct pccx_ref_exec *x)
{
	return x->impl;
}
