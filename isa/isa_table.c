// SPDX-License-Identifier: MIT
/* Descriptor arrays generated from pccx_isa_table.h. */
#include "pccx_isa.h"

const struct pccx_field_desc pccx__fields[PCCX_NFIELDS] = {
#define PCCX_FDESC(l, name, up, msb, lsb, kind, desc) \
	{ PCCX_LAYOUT_##l, #name, #up, msb, lsb, PCCX_FK_##kind, desc },
	PCCX_FIELD_LIST(PCCX_FDESC)
#undef PCCX_FDESC
};

static const struct pccx_opcode_desc opcodes[] = {
#define PCCX_ODESC(name, val, mnem, layout) { val, mnem, PCCX_LAYOUT_##layout },
	PCCX_OPCODE_LIST(PCCX_ODESC)
#undef PCCX_ODESC
};

static const struct pccx_cvo_desc cvo_funcs[] = {
#define PCCX_CDESC(name, code, mnem, cls, vf, sf, up, stage) \
	{ code, mnem, PCCX_CVOC_##cls, vf, sf, up, stage },
	PCCX_CVO_FUNC_LIST(PCCX_CDESC)
#undef PCCX_CDESC
};

const struct pccx_opcode_desc *pccx__opcode_desc(unsigned opcode)
{
	size_t i;

	for (i = 0; i < sizeof(opcodes) / sizeof(opcodes[0]); i++)
		if (opcodes[i].value == opcode)
			return &opcodes[i];
	return NULL;
}

const struct pccx_cvo_desc *pccx__cvo_desc(unsigned func)
{
	size_t i;

	for (i = 0; i < sizeof(cvo_funcs) / sizeof(cvo_funcs[0]); i++)
		if (cvo_funcs[i].code == func)
			return &cvo_funcs[i];
	return NULL;
}

const char *pccx__cache_name(unsigned v)
{
	switch (v) {
#define PCCX_CACHE_NAME(name, val, str) case val: return str;
	PCCX_CACHE_LIST(PCCX_CACHE_NAME)
#undef PCCX_CACHE_NAME
	}
	return NULL;
}

const char *pccx__wfmt_name(unsigned v)
{
	switch (v) {
#define PCCX_WFMT_NAME(name, val, str, desc) case val: return str;
	PCCX_WFMT_LIST(PCCX_WFMT_NAME)
#undef PCCX_WFMT_NAME
	}
	return NULL;
}

const char *pccx__wfmt_desc(unsigned v)
{
	switch (v) {
#define PCCX_WFMT_DESC(name, val, str, desc) case val: return desc;
	PCCX_WFMT_LIST(PCCX_WFMT_DESC)
#undef PCCX_WFMT_DESC
	}
	return NULL;
}

static const char *const isa_errtext[PCCX_ISA_E_COUNT] = {
#define PCCX_ISA_ERR_TEXT(name, text) [PCCX_ISA_E_##name] = text,
	PCCX_ISA_ERR_LIST(PCCX_ISA_ERR_TEXT)
#undef PCCX_ISA_ERR_TEXT
};

static const char *const isa_errname[PCCX_ISA_E_COUNT] = {
#define PCCX_ISA_ERR_NAME(name, text) [PCCX_ISA_E_##name] = #name,
	PCCX_ISA_ERR_LIST(PCCX_ISA_ERR_NAME)
#undef PCCX_ISA_ERR_NAME
};

const char *pccx__isa_strerror(int err)
{
	if (err < 0 || err >= PCCX_ISA_E_COUNT)
		return "unknown ISA error";
	return isa_errtext[err];
}

const char *pccx__isa_errname(int err)
{
	if (err < 0 || err >= PCCX_ISA_E_COUNT)
		return "UNKNOWN";
	return isa_errname[err];
}

int pccx__field_find(enum pccx_layout layout, const char *name, size_t len)
{
	int i;

	for (i = 0; i < PCCX_NFIELDS; i++) {
		const char *n = pccx__fields[i].name;
		size_t j;

		if (pccx__fields[i].layout != layout)
			continue;
		for (j = 0; j < len && n[j] && n[j] == name[j]; j++)
			;
		if (j == len && n[j] == '\0')
			return i;
	}
	return -1;
}
