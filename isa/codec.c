// SPDX-License-Identifier: MIT
/* Encoder and word-level decoder, driven by the field table. */
#include "pccx_isa.h"

static int fault_at(struct pccx_isa_fault *f, int err, int field)
{
	if (f) {
		f->err = err;
		f->field = field;
	}
	return err;
}

static uint32_t fval(const struct pccx_insn *in, int fid)
{
	return in->f[fid];
}

/* Word-level rules of one CVO instruction. */
static int check_cvo(const struct pccx_insn *in, struct pccx_isa_fault *fault)
{
	const struct pccx_cvo_desc *cd = pccx__cvo_desc(fval(in, PCCX_FID_D_func));
	uint32_t flags = 0, allowed;
	bool sform;

	if (!cd)
		return fault_at(fault, PCCX_ISA_E_CVO_FUNC, PCCX_FID_D_func);

	if (fval(in, PCCX_FID_D_sub_emax))
		flags |= PCCX_CVOF_SUB;
	if (fval(in, PCCX_FID_D_recip_scale))
		flags |= PCCX_CVOF_RECIP;
	if (fval(in, PCCX_FID_D_accm))
		flags |= PCCX_CVOF_ACCM;
	if (fval(in, PCCX_FID_D_relu))
		flags |= PCCX_CVOF_RELU;
	sform = fval(in, PCCX_FID_D_sreg) != 0;

	if (sform && cd->s_flags == PCCX_CVO_NO_SFORM)
		return fault_at(fault, PCCX_ISA_E_FLAGS, PCCX_FID_D_sreg);
	allowed = sform ? cd->s_flags : cd->vec_flags;
	if (flags & ~allowed) {
		int fid = (flags & ~allowed & PCCX_CVOF_SUB) ? PCCX_FID_D_sub_emax :
			  (flags & ~allowed & PCCX_CVOF_RECIP) ? PCCX_FID_D_recip_scale :
			  (flags & ~allowed & PCCX_CVOF_ACCM) ? PCCX_FID_D_accm : PCCX_FID_D_relu;
		return fault_at(fault, PCCX_ISA_E_FLAGS, fid);
	}

	switch (cd->cls) {
	case PCCX_CVOC_UNARY:
		if (sform) {
			/* S = f(S): no vector operand at all */
			if (fval(in, PCCX_FID_D_src))
				return fault_at(fault, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_D_src);
			if (fval(in, PCCX_FID_D_len))
				return fault_at(fault, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_D_len);
		} else if (!fval(in, PCCX_FID_D_len)) {
			return fault_at(fault, PCCX_ISA_E_LENGTH, PCCX_FID_D_len);
		}
		break;
	case PCCX_CVOC_SCALE:
	case PCCX_CVOC_BINARY:
	case PCCX_CVOC_REDUCE:
		if (sform) {
			if (fval(in, PCCX_FID_D_len))
				return fault_at(fault, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_D_len);
		} else if (!fval(in, PCCX_FID_D_len)) {
			return fault_at(fault, PCCX_ISA_E_LENGTH, PCCX_FID_D_len);
		}
		break;
	case PCCX_CVOC_LOAD:
		break;
	}
	return PCCX_ISA_E_OK;
}

static int check_memcpy(const struct pccx_insn *in, struct pccx_isa_fault *fault)
{
	bool from_host = fval(in, PCCX_FID_B_from_host);
	bool to_host = fval(in, PCCX_FID_B_to_host);

	if (from_host && to_host)
		return fault_at(fault, PCCX_ISA_E_ROUTE, PCCX_FID_B_to_host);
	if (from_host && fval(in, PCCX_FID_B_src))
		return fault_at(fault, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_src);
	if (to_host && fval(in, PCCX_FID_B_dest))
		return fault_at(fault, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_dest);
	if (!from_host && !to_host && fval(in, PCCX_FID_B_desc))
		return fault_at(fault, PCCX_ISA_E_UNUSED_FIELD, PCCX_FID_B_desc);
	return PCCX_ISA_E_OK;
}

int pccx__decode(uint64_t w, struct pccx_insn *out, struct pccx_isa_fault *fault)
{
	const struct pccx_opcode_desc *od;
	int i;

	for (i = 0; i < PCCX_NFIELDS; i++)
		out->f[i] = 0;
	out->opcode = pccx_opcode_of(w);
	fault_at(fault, PCCX_ISA_E_OK, -1);

	od = pccx__opcode_desc(out->opcode);
	if (!od)
		return fault_at(fault, PCCX_ISA_E_OPCODE, -1);

	for (i = 0; i < PCCX_NFIELDS; i++)
		if (pccx__fields[i].layout == od->layout)
			out->f[i] = (uint32_t)pccx_bits(w, pccx__fields[i].msb, pccx__fields[i].lsb);

	/* Reserved bits first: they are the same check for every opcode. */
	for (i = 0; i < PCCX_NFIELDS; i++)
		if (pccx__fields[i].layout == od->layout && pccx__fields[i].kind == PCCX_FK_MBZ &&
		    out->f[i])
			return fault_at(fault, PCCX_ISA_E_RESERVED, i);
	for (i = 0; i < PCCX_NFIELDS; i++)
		if (pccx__fields[i].layout == od->layout && pccx__fields[i].kind == PCCX_FK_ZERO &&
		    out->f[i])
			return fault_at(fault, PCCX_ISA_E_FIELD_VALUE, i);

	switch (od->layout) {
	case PCCX_LAYOUT_A:
		/* rowmask: GEMV only; it reads the old dest as its mask, so no accm, no findemax */
		if (out->f[PCCX_FID_A_rowmask] &&
		    (out->opcode != PCCX_OP_GEMV || out->f[PCCX_FID_A_accm] ||
		     out->f[PCCX_FID_A_findemax]))
			return fault_at(fault, PCCX_ISA_E_FLAGS, PCCX_FID_A_rowmask);
		return PCCX_ISA_E_OK;
	case PCCX_LAYOUT_B:
		return check_memcpy(out, fault);
	case PCCX_LAYOUT_C:
		if (!pccx__cache_name(out->f[PCCX_FID_C_cache]))
			return fault_at(fault, PCCX_ISA_E_FIELD_VALUE, PCCX_FID_C_cache);
		return PCCX_ISA_E_OK;
	case PCCX_LAYOUT_D:
		return check_cvo(out, fault);
	}
	return fault_at(fault, PCCX_ISA_E_OPCODE, -1);
}

int pccx__encode(const struct pccx_insn *in, uint64_t *w, struct pccx_isa_fault *fault)
{
	const struct pccx_opcode_desc *od = pccx__opcode_desc(in->opcode);
	uint64_t word;
	int i;

	fault_at(fault, PCCX_ISA_E_OK, -1);
	if (!od)
		return fault_at(fault, PCCX_ISA_E_OPCODE, -1);
	word = (uint64_t)in->opcode << 60;
	for (i = 0; i < PCCX_NFIELDS; i++) {
		const struct pccx_field_desc *fd = &pccx__fields[i];
		uint64_t mask = pccx_field_mask(fd->msb, fd->lsb) >> fd->lsb;

		if (fd->layout != od->layout)
			continue;
		if ((uint64_t)in->f[i] & ~mask)
			return fault_at(fault, PCCX_ISA_E_FIELD_VALUE, i);
		word |= (uint64_t)in->f[i] << fd->lsb;
	}
	*w = word;
	return PCCX_ISA_E_OK;
}

void pccx__cvo_insn(struct pccx_insn *in, unsigned func, uint32_t src, uint32_t dst,
		    uint32_t len, uint32_t flags)
{
	unsigned i;

	for (i = 0; i < PCCX_NFIELDS; i++)
		in->f[i] = 0;
	in->opcode = PCCX_OP_CVO;
	in->f[PCCX_FID_D_func] = func;
	in->f[PCCX_FID_D_src] = src;
	in->f[PCCX_FID_D_dst] = dst;
	in->f[PCCX_FID_D_len] = len;
	in->f[PCCX_FID_D_sub_emax] = !!(flags & PCCX_CVOF_SUB);
	in->f[PCCX_FID_D_recip_scale] = !!(flags & PCCX_CVOF_RECIP);
	in->f[PCCX_FID_D_accm] = !!(flags & PCCX_CVOF_ACCM);
	in->f[PCCX_FID_D_sreg] = !!(flags & PCCX_CVOF_SREG);
	in->f[PCCX_FID_D_relu] = !!(flags & PCCX_CVOF_RELU);
}
