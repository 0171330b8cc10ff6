// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "jobbuild.h"

void pccx__job_builder_init(struct pccx_job_builder *jb)
{
	memset(jb, 0, sizeof(*jb));
	jb->async = true;
}

void pccx__job_builder_free(struct pccx_job_builder *jb)
{
	free(jb->insn);
	free(jb->wr);
	free(jb->dma);
	free(jb->stream);
	free(jb->stages);
	memset(jb, 0, sizeof(*jb));
}

void pccx__job_builder_reset(struct pccx_job_builder *jb)
{
	jb->n_insn = jb->n_dma = jb->n_stream = jb->n_stages = 0;
	jb->valid[0] = jb->valid[1] = 0;
	jb->next_victim[0] = jb->next_victim[1] = 0;
	jb->status = PCCX_OK;
	pccx__diag_clear(&jb->diag);
}

static bool failed(struct pccx_job_builder *jb)
{
	return jb->status != PCCX_OK;
}

static int jb_fail(struct pccx_job_builder *jb, int status, const char *what)
{
	if (!failed(jb))
		jb->status = pccx__fail(&jb->diag, status, "job builder: %s", what);
	return jb->status;
}

/* Grow *arr (n used, *cap slots of `each` bytes) to hold one more. */
static bool grow(struct pccx_job_builder *jb, void **arr, uint32_t n, uint32_t *cap, size_t each,
		 uint32_t limit)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return true;
	if (n >= limit) {
		jb_fail(jb, PCCX_ERR_RANGE, "job exceeds the validator's size limits");
		return false;
	}
	ncap = *cap ? *cap * 2 : 256;
	if (ncap > limit)
		ncap = limit;
	p = realloc(*arr, (size_t)ncap * each);
	if (!p) {
		jb_fail(jb, PCCX_ERR_NOMEM, "out of memory");
		return false;
	}
	*arr = p;
	*cap = ncap;
	return true;
}

static void emit(struct pccx_job_builder *jb, const struct pccx_insn *in)
{
	struct pccx_isa_fault f;
	struct pccx_insn chk;
	uint64_t w;

	if (failed(jb))
		return;
	if (pccx__encode(in, &w, &f) || pccx__decode(w, &chk, &f)) {
		pccx__fail(&jb->diag, PCCX_ERR_INTERNAL, "job builder: illegal %s (field %s): %s",
			   pccx__opcode_desc(in->opcode) ? pccx__opcode_desc(in->opcode)->mnemonic : "?",
			   f.field >= 0 ? pccx__fields[f.field].name : "-", pccx__isa_strerror(f.err));
		jb->status = PCCX_ERR_INTERNAL;
		return;
	}
	if (jb->n_insn == jb->cap_insn) {
		uint32_t cap = jb->cap_insn;

		if (!grow(jb, (void **)&jb->insn, jb->n_insn, &cap, sizeof(uint64_t), 1u << 20))
			return;
		if (!grow(jb, (void **)&jb->wr, jb->n_insn, &jb->cap_insn,
			  sizeof(struct pccx_l2_range), 1u << 20))
			return;
	}
	{
		struct pccx_shape_state st;
		struct pccx_effects fx;

		memcpy(st.set, jb->valid, sizeof(st.set));
		memcpy(st.v, jb->v, sizeof(st.v));
		if (pccx__insn_effects(&chk, &st, PCCX_L2_WORDS, &fx, &f)) {
			pccx__fail(&jb->diag, PCCX_ERR_INTERNAL,
				   "job builder: instruction %u (%s): %s", jb->n_insn,
				   pccx__isa_errname(f.err), pccx__isa_strerror(f.err));
			jb->status = PCCX_ERR_INTERNAL;
			return;
		}
		jb->wr[jb->n_insn] = fx.wr;
	}
	jb->insn[jb->n_insn++] = w;
}

static void insn_init(struct pccx_insn *in, unsigned opcode)
{
	memset(in, 0, sizeof(*in));
	in->opcode = opcode;
}

/* Shape entry holding (a, b, c) in `cache` (emits a MEMSET unless one already does). */
static int shape_entry(struct pccx_job_builder *jb, unsigned cache, uint32_t a, uint32_t b,
		       uint32_t c)
{
	struct pccx_insn in;
	unsigned e;

	if (failed(jb))
		return 0;
	if (cache > 1 || a > 0xffff || b > 0xffff || c > 0xffff) {
		jb_fail(jb, PCCX_ERR_RANGE, "shape value does not fit 16 bits");
		return 0;
	}
	for (e = 0; e < PCCX_SHAPE_ENTRIES; e++)
		if ((jb->valid[cache] >> e & 1) && jb->v[cache][e][0] == a &&
		    jb->v[cache][e][1] == b && jb->v[cache][e][2] == c)
			return (int)e;
	/* round-robin replacement: the entry was consumed by earlier instructions already,
	 * and the device's interlocks order the MEMSET after them */
	e = jb->next_victim[cache]++ % PCCX_SHAPE_ENTRIES;
	insn_init(&in, PCCX_OP_MEMSET);
	in.f[PCCX_FID_C_cache] = cache;
	in.f[PCCX_FID_C_entry] = e;
	in.f[PCCX_FID_C_a] = a;
	in.f[PCCX_FID_C_b] = b;
	in.f[PCCX_FID_C_c] = c;
	emit(jb, &in);
	jb->valid[cache] |= 1ull << e;
	jb->v[cache][e][0] = (uint16_t)a;
	jb->v[cache][e][1] = (uint16_t)b;
	jb->v[cache][e][2] = (uint16_t)c;
	return (int)e;
}

static void add_stream(struct pccx_job_builder *jb, uint32_t handle, unsigned port, uint64_t offset,
		       uint64_t length)
{
	struct pccx_stream_desc *last = NULL;
	uint32_t i;

	if (failed(jb) || !length)
		return;
	/* extend the port's previous descriptor when this one continues it */
	for (i = jb->n_stream; i-- > 0;)
		if (jb->stream[i].port == port) {
			last = &jb->stream[i];
			break;
		}
	if (last && last->handle == handle && last->offset + last->length == offset &&
	    last->length + length < (1ull << 32) - PCCX_BEAT_BYTES) {
		last->length += length;
		return;
	}
	if (!grow(jb, (void **)&jb->stream, jb->n_stream, &jb->cap_stream, sizeof(*jb->stream),
		  1u << 16))
		return;
	jb->stream[jb->n_stream].handle = handle;
	jb->stream[jb->n_stream].port = port;
	jb->stream[jb->n_stream].offset = offset;
	jb->stream[jb->n_stream].length = length;
	jb->n_stream++;
}

void pccx__job_builder_matmul(struct pccx_job_builder *jb, unsigned opcode, uint32_t dest,
			      uint32_t src, uint32_t m,
			      const struct pccx_job_builder_weights *w, bool accm, bool findemax)
{
	struct pccx_wshape ws = { w->n, w->k, w->fmt, w->w_scale };
	struct pccx_insn in;
	int fe, we;
	unsigned p;

	fe = shape_entry(jb, PCCX_CACHE_FMAP, w->k, m, 1);
	we = shape_entry(jb, PCCX_CACHE_WEIGHT, w->n, w->k, w->fmt);
	insn_init(&in, opcode);
	in.f[PCCX_FID_A_dest] = dest;
	in.f[PCCX_FID_A_src] = src;
	in.f[PCCX_FID_A_wshape] = (uint32_t)we;
	in.f[PCCX_FID_A_fshape] = (uint32_t)fe;
	in.f[PCCX_FID_A_w_scale] = w->w_scale;
	in.f[PCCX_FID_A_accm] = accm;
	in.f[PCCX_FID_A_findemax] = findemax;
	in.f[PCCX_FID_A_rowmask] = w->rowmask;
	emit(jb, &in);
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		add_stream(jb, w->handle, p, w->offset + pccx__wstream_port_offset(&ws, p),
			   pccx__wstream_port_bytes(&ws, p));
}

void pccx__job_builder_cvo(struct pccx_job_builder *jb, unsigned func, uint32_t src, uint32_t dst,
			   uint32_t len,
			   uint32_t flags)
{
	struct pccx_insn in;

	pccx__cvo_insn(&in, func, src, dst, len, flags);
	in.f[PCCX_FID_D_async] = jb->async;
	emit(jb, &in);
}

/* Largest transfer of one MEMCPY: the shape (4, words, 1) needs words < 2^16. */
#define MAX_XFER_WORDS 0xffffu

static void memcpy_host_one(struct pccx_job_builder *jb, bool from_host, uint32_t word,
			    uint32_t handle,
			    uint64_t offset, uint32_t words)
{
	struct pccx_insn in;
	int fe;

	if (failed(jb))
		return;
	if (!grow(jb, (void **)&jb->dma, jb->n_dma, &jb->cap_dma, sizeof(*jb->dma), 1u << 17))
		return;
	/* a shape of whole words so the descriptor length is exactly the transfer */
	fe = shape_entry(jb, PCCX_CACHE_FMAP, PCCX_L2_ELEMS_PER_WORD, words, 1);
	jb->dma[jb->n_dma].handle = handle;
	jb->dma[jb->n_dma].flags = from_host ? PCCX_DMA_TO_DEVICE : PCCX_DMA_FROM_DEVICE;
	jb->dma[jb->n_dma].offset = offset;
	jb->dma[jb->n_dma].length = (uint64_t)words * PCCX_BEAT_BYTES;
	insn_init(&in, PCCX_OP_MEMCPY);
	in.f[PCCX_FID_B_from_host] = from_host;
	in.f[PCCX_FID_B_to_host] = !from_host;
	in.f[from_host ? PCCX_FID_B_dest : PCCX_FID_B_src] = word;
	in.f[PCCX_FID_B_desc] = jb->n_dma;
	in.f[PCCX_FID_B_fshape] = (uint32_t)fe;
	in.f[PCCX_FID_B_async] = jb->async;
	jb->n_dma++;
	emit(jb, &in);
}

static void memcpy_host(struct pccx_job_builder *jb, bool from_host, uint32_t word, uint32_t handle,
			uint64_t offset, uint32_t n)
{
	uint32_t words = pccx_words_for(n);

	while (words) {
		uint32_t chunk = words < MAX_XFER_WORDS ? words : MAX_XFER_WORDS;

		memcpy_host_one(jb, from_host, word, handle, offset, chunk);
		word += chunk;
		offset += (uint64_t)chunk * PCCX_BEAT_BYTES;
		words -= chunk;
	}
}

void pccx__job_builder_load(struct pccx_job_builder *jb, uint32_t dst, uint32_t handle,
			    uint64_t offset, uint32_t n)
{
	memcpy_host(jb, true, dst, handle, offset, n);
}

void pccx__job_builder_store(struct pccx_job_builder *jb, uint32_t src, uint32_t handle,
			     uint64_t offset, uint32_t n)
{
	memcpy_host(jb, false, src, handle, offset, n);
}

void pccx__job_builder_copy(struct pccx_job_builder *jb, uint32_t dst, uint32_t src, uint32_t n)
{
	uint32_t words = pccx_words_for(n);

	while (words && !failed(jb)) {
		uint32_t chunk = words < MAX_XFER_WORDS ? words : MAX_XFER_WORDS;
		struct pccx_insn in;
		int fe = shape_entry(jb, PCCX_CACHE_FMAP, PCCX_L2_ELEMS_PER_WORD, chunk, 1);

		insn_init(&in, PCCX_OP_MEMCPY);
		in.f[PCCX_FID_B_dest] = dst;
		in.f[PCCX_FID_B_src] = src;
		in.f[PCCX_FID_B_fshape] = (uint32_t)fe;
		in.f[PCCX_FID_B_async] = jb->async;
		emit(jb, &in);
		dst += chunk;
		src += chunk;
		words -= chunk;
	}
}

void pccx__job_builder_stage(struct pccx_job_builder *jb, const char *name, uint32_t word,
			     uint32_t rows,
			     uint32_t cols)
{
	struct pccx_job_builder_stage *s;
	uint32_t last_writer;

	if (failed(jb))
		return;
	{
		uint64_t lo = word, hi = word + (uint64_t)rows * pccx_words_for(cols);
		uint32_t i = jb->n_insn;

		while (i > 0) {
			const struct pccx_l2_range *r = &jb->wr[i - 1];

			if (r->words && r->base < hi && lo < (uint64_t)r->base + r->words)
				break;
			i--;
		}
		if (!i) {
			jb_fail(jb, PCCX_ERR_INVALID, "stage marker on a range nothing wrote");
			return;
		}
		last_writer = i - 1;
	}
	if (!grow(jb, (void **)&jb->stages, jb->n_stages, &jb->cap_stages, sizeof(*jb->stages),
		  1u << 20))
		return;
	s = &jb->stages[jb->n_stages++];
	s->insn = last_writer;
	s->word = word;
	s->rows = rows;
	s->cols = cols;
	strncpy(s->name, name, sizeof(s->name) - 1);
	s->name[sizeof(s->name) - 1] = '\0';
}

int pccx__job_builder_finish(struct pccx_job_builder *jb, struct pccx_job_view *view, pccx_diag *d)
{
	if (failed(jb)) {
		if (d)
			*d = jb->diag;
		return jb->status;
	}
	view->insn = jb->insn;
	view->n_insn = jb->n_insn;
	view->dma = jb->dma;
	view->n_dma = jb->n_dma;
	view->stream = jb->stream;
	view->n_stream = jb->n_stream;
	return PCCX_OK;
}
