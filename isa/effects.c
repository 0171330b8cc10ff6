// SPDX-License-Identifier: MIT
/* What one instruction reads, writes and consumes: the semantic half of legality. */
#include "pccx_job.h"

static int fail(struct pccx_isa_fault *f, int err, int field)
{
	if (f) {
		f->err = err;
		f->field = field;
	}
	return err;
}

void pccx__shape_reset(struct pccx_shape_state *st)
{
	unsigned c, e, i;

	st->set[0] = st->set[1] = 0;
	for (c = 0; c < 2; c++)
		for (e = 0; e < PCCX_SHAPE_ENTRIES; e++)
			for (i = 0; i < 3; i++)
				st->v[c][e][i] = 0;
}

void pccx__shape_apply(struct pccx_shape_state *st, const struct pccx_insn *in)
{
	unsigned c = in->f[PCCX_FID_C_cache], e = in->f[PCCX_FID_C_entry];

	if (c > 1 || e >= PCCX_SHAPE_ENTRIES)
		return;
	st->set[c] |= 1ull << e;
	st->v[c][e][0] = (uint16_t)in->f[PCCX_FID_C_a];
	st->v[c][e][1] = (uint16_t)in->f[PCCX_FID_C_b];
	st->v[c][e][2] = (uint16_t)in->f[PCCX_FID_C_c];
}

static bool shape_get(const struct pccx_shape_state *st, unsigned cache, unsigned e,
		      uint32_t v[3])
{
	if (e >= PCCX_SHAPE_ENTRIES || !(st->set[cache] & (1ull << e)))
		return false;
	v[0] = st->v[cache][e][0];
	v[1] = st->v[cache][e][1];
	v[2] = st->v[cache][e][2];
	return true;
}

static struct pccx_l2_range range(uint32_t base, uint64_t words)
{
	struct pccx_l2_range r = { base, (uint32_t)words };

	return r;
}

/* [base, base+words) inside L2; words counted in 64 bits so nothing wraps. */
static bool in_l2(uint32_t base, uint64_t words, uint32_t l2_words)
{
	return words <= l2_words && (uint64_t)base + words <= l2_words;
}

static bool overlaps(struct pccx_l2_range a, struct pccx_l2_range b)
{
	return a.words && b.words && (uint64_t)a.base < (uint64_t)b.base + b.words &&
	       (uint64_t)b.base < (uint64_t)a.base + a.words;
}

static bool same(struct pccx_l2_range a, struct pccx_l2_range b)
{
	return a.base == b.base && a.words == b.words;
}

static void clear_fx(struct pccx_effects *fx)
{
	unsigned p;

	fx->rd[0] = range(0, 0);
	fx->rd[1] = range(0, 0);
	fx->wr = range(0, 0);
	fx->reads_s = fx->writes_s = false;
	fx->dma = -1;
	fx->dma_flags = 0;
	fx->xfer_bytes = 0;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		fx->port_bytes[p] = 0;
	fx->ws.n = fx->ws.k = fx->ws.fmt = 0;
	fx->ws.w_scale = false;
	fx->m = 0;
	fx->rowmask = false;
	fx->window = false;
	fx->shape_cache = fx->shape_entry = -1;
}

static int matmul_effects(const struct pccx_insn *in, const struct pccx_shape_state *st,
			  uint32_t l2, struct pccx_effects *fx, struct pccx_isa_fault *f)
{
	uint32_t fm[3], wt[3];
	uint64_t in_words, out_words;
	unsigned p;

	fx->engine = in->opcode == PCCX_OP_GEMM ? PCCX_ENG_GEMM : PCCX_ENG_GEMV;
	if (!shape_get(st, PCCX_CACHE_FMAP, in->f[PCCX_FID_A_fshape], fm))
		return fail(f, PCCX_ISA_E_SHAPE_UNSET, PCCX_FID_A_fshape);
	if (!shape_get(st, PCCX_CACHE_WEIGHT, in->f[PCCX_FID_A_wshape], wt))
		return fail(f, PCCX_ISA_E_SHAPE_UNSET, PCCX_FID_A_wshape);

	/* fmap entry (K, M, 1); weight entry (N, K, format) */
	if (fm[0] == 0 || fm[1] == 0 || fm[2] != 1)
		return fail(f, PCCX_ISA_E_SHAPE, PCCX_FID_A_fshape);
	if (in->opcode == PCCX_OP_GEMV && fm[1] != 1)
		return fail(f, PCCX_ISA_E_SHAPE, PCCX_FID_A_fshape);
	if (wt[0] == 0 || wt[1] != fm[0] || !pccx__wfmt_name(wt[2]))
		return fail(f, PCCX_ISA_E_SHAPE, PCCX_FID_A_wshape);
	if ((wt[2] == PCCX_WFMT_Q4 || wt[2] == PCCX_WFMT_Q4C) && wt[1] % PCCX_Q4_BLOCK)
		return fail(f, PCCX_ISA_E_SHAPE, PCCX_FID_A_wshape);
	/* q4c: GEMV only, and its column records always come with their scales */
	if (wt[2] == PCCX_WFMT_Q4C && in->opcode != PCCX_OP_GEMV)
		return fail(f, PCCX_ISA_E_SHAPE, PCCX_FID_A_wshape);
	if (wt[2] == PCCX_WFMT_Q4C && !in->f[PCCX_FID_A_w_scale])
		return fail(f, PCCX_ISA_E_FLAGS, PCCX_FID_A_w_scale);
	if (wt[2] != PCCX_WFMT_Q4 && wt[2] != PCCX_WFMT_Q4C && in->f[PCCX_FID_A_w_scale])
		return fail(f, PCCX_ISA_E_FLAGS, PCCX_FID_A_w_scale);
	if (wt[2] != PCCX_WFMT_Q4 && in->f[PCCX_FID_A_rowmask])
		return fail(f, PCCX_ISA_E_FLAGS, PCCX_FID_A_rowmask);

	fx->ws.n = wt[0];
	fx->ws.k = wt[1];
	fx->ws.fmt = wt[2];
	fx->ws.w_scale = in->f[PCCX_FID_A_w_scale] != 0;
	fx->m = fm[1];

	in_words = (uint64_t)fx->m * pccx_words_for(fx->ws.k);
	out_words = (uint64_t)fx->m * pccx_words_for(fx->ws.n);
	if (!in_l2(in->f[PCCX_FID_A_src], in_words, l2))
		return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_A_src);
	if (!in_l2(in->f[PCCX_FID_A_dest], out_words, l2))
		return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_A_dest);
	fx->rd[0] = range(in->f[PCCX_FID_A_src], in_words);
	fx->wr = range(in->f[PCCX_FID_A_dest], out_words);
	if (overlaps(fx->rd[0], fx->wr))
		return fail(f, PCCX_ISA_E_OVERLAP, PCCX_FID_A_dest);
	/* accm adds the old dest; rowmask reads it as its mask (never both: pccx__decode) */
	fx->rowmask = in->f[PCCX_FID_A_rowmask] != 0;
	fx->window = fx->rowmask || fx->ws.fmt == PCCX_WFMT_Q4C;
	if (in->f[PCCX_FID_A_accm] || fx->rowmask)
		fx->rd[1] = fx->wr;
	fx->writes_s = in->f[PCCX_FID_A_findemax] != 0;
	for (p = 0; p < PCCX_WSTREAM_PORTS; p++)
		fx->port_bytes[p] = pccx__wstream_port_bytes(&fx->ws, p);
	return PCCX_ISA_E_OK;
}

static int memcpy_effects(const struct pccx_insn *in, const struct pccx_shape_state *st,
			  uint32_t l2, struct pccx_effects *fx, struct pccx_isa_fault *f)
{
	bool from_host = in->f[PCCX_FID_B_from_host], to_host = in->f[PCCX_FID_B_to_host];
	uint32_t fm[3];
	uint64_t elems, words;

	if (!shape_get(st, PCCX_CACHE_FMAP, in->f[PCCX_FID_B_fshape], fm))
		return fail(f, PCCX_ISA_E_SHAPE_UNSET, PCCX_FID_B_fshape);
	elems = (uint64_t)fm[0] * fm[1] * fm[2];   /* < 2^48: no overflow */
	if (elems == 0)
		return fail(f, PCCX_ISA_E_SHAPE, PCCX_FID_B_fshape);
	words = (elems + PCCX_L2_ELEMS_PER_WORD - 1) / PCCX_L2_ELEMS_PER_WORD;
	fx->xfer_bytes = words * PCCX_BEAT_BYTES;

	if (from_host) {
		fx->engine = PCCX_ENG_DMA_IN;
		if (!in_l2(in->f[PCCX_FID_B_dest], words, l2))
			return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_B_dest);
		fx->wr = range(in->f[PCCX_FID_B_dest], words);
		fx->dma = (int)in->f[PCCX_FID_B_desc];
		fx->dma_flags = PCCX_DMA_TO_DEVICE;
	} else if (to_host) {
		fx->engine = PCCX_ENG_DMA_OUT;
		if (!in_l2(in->f[PCCX_FID_B_src], words, l2))
			return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_B_src);
		fx->rd[0] = range(in->f[PCCX_FID_B_src], words);
		fx->dma = (int)in->f[PCCX_FID_B_desc];
		fx->dma_flags = PCCX_DMA_FROM_DEVICE;
	} else {
		fx->engine = PCCX_ENG_L2COPY;
		if (!in_l2(in->f[PCCX_FID_B_src], words, l2))
			return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_B_src);
		if (!in_l2(in->f[PCCX_FID_B_dest], words, l2))
			return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_B_dest);
		fx->rd[0] = range(in->f[PCCX_FID_B_src], words);
		fx->wr = range(in->f[PCCX_FID_B_dest], words);
		if (overlaps(fx->rd[0], fx->wr))
			return fail(f, PCCX_ISA_E_OVERLAP, PCCX_FID_B_dest);
	}
	return PCCX_ISA_E_OK;
}

static int cvo_effects(const struct pccx_insn *in, uint32_t l2, struct pccx_effects *fx,
		       struct pccx_isa_fault *f)
{
	const struct pccx_cvo_desc *cd = pccx__cvo_desc(in->f[PCCX_FID_D_func]);
	uint32_t src = in->f[PCCX_FID_D_src], dst = in->f[PCCX_FID_D_dst];
	uint32_t len = in->f[PCCX_FID_D_len];
	bool sform = in->f[PCCX_FID_D_sreg] != 0;
	uint64_t words = pccx_words_for(len);

	fx->engine = PCCX_ENG_SFU;
	if (!cd)
		return fail(f, PCCX_ISA_E_CVO_FUNC, PCCX_FID_D_func);

	if (cd->cls == PCCX_CVOC_LOAD) {
		/* element len of the vector at src */
		uint64_t word = src + (uint64_t)len / PCCX_L2_ELEMS_PER_WORD;

		if (word >= l2)
			return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_D_len);
		fx->rd[0] = range((uint32_t)word, 1);
		fx->writes_s = true;
	} else if (sform || cd->cls == PCCX_CVOC_REDUCE) {
		/* scalar result: S and element 0 of dst */
		fx->writes_s = true;
		fx->reads_s = sform || in->f[PCCX_FID_D_sub_emax] || pccx__insn_racc(in);
		if (cd->cls == PCCX_CVOC_REDUCE && !sform) {
			if (!in_l2(src, words, l2))
				return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_D_src);
			fx->rd[0] = range(src, words);
		} else if (cd->cls != PCCX_CVOC_UNARY) {
			if (src >= l2)
				return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_D_src);
			fx->rd[0] = range(src, 1);   /* operand v in element 0 */
		}
	} else {
		/* vector form */
		if (!in_l2(src, words, l2))
			return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_D_src);
		if (!in_l2(dst, words, l2))
			return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_D_dst);
		fx->rd[0] = range(src, words);
		fx->wr = range(dst, words);
		if (!same(fx->rd[0], fx->wr) && overlaps(fx->rd[0], fx->wr))
			return fail(f, PCCX_ISA_E_OVERLAP, PCCX_FID_D_dst);
		if (cd->cls == PCCX_CVOC_BINARY || in->f[PCCX_FID_D_accm])
			fx->rd[1] = fx->wr;
		fx->reads_s = cd->cls == PCCX_CVOC_SCALE || in->f[PCCX_FID_D_sub_emax] ||
			      in->f[PCCX_FID_D_func] == PCCX_CVO_SMUL;
		return PCCX_ISA_E_OK;
	}
	if (dst >= l2)
		return fail(f, PCCX_ISA_E_L2_RANGE, PCCX_FID_D_dst);
	fx->wr = range(dst, 1);
	return PCCX_ISA_E_OK;
}

int pccx__insn_effects(const struct pccx_insn *in, const struct pccx_shape_state *st,
		       uint32_t l2_words, struct pccx_effects *fx, struct pccx_isa_fault *fault)
{
	clear_fx(fx);
	if (fault) {
		fault->err = PCCX_ISA_E_OK;
		fault->field = -1;
	}
	switch (in->opcode) {
	case PCCX_OP_GEMV:
	case PCCX_OP_GEMM:
		return matmul_effects(in, st, l2_words, fx, fault);
	case PCCX_OP_MEMCPY:
		return memcpy_effects(in, st, l2_words, fx, fault);
	case PCCX_OP_MEMSET:
		fx->engine = PCCX_ENG_SHAPE;
		fx->shape_cache = (int)in->f[PCCX_FID_C_cache];
		fx->shape_entry = (int)in->f[PCCX_FID_C_entry];
		return PCCX_ISA_E_OK;
	case PCCX_OP_CVO:
		return cvo_effects(in, l2_words, fx, fault);
	}
	return fail(fault, PCCX_ISA_E_OPCODE, -1);
}
