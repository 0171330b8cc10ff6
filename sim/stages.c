// SPDX-License-Identifier: MIT
/* Stage markers from a file, for the report (pccx_sim.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "fileio.h"
#include "pccx_sim.h"

#define MAX_STAGES_BYTES (16u << 20)
#define MAX_STAGES       65536

/* Parse one line (p, NUL-terminated) that is not blank or a comment, appending its marker. */
static int add_line(struct pccx_sim_stages *s, size_t *cap, char *p, const char *path,
		    size_t line, pccx_diag *d)
{
	char *end, *name;
	unsigned long idx;
	size_t i;

	errno = 0;
	idx = strtoul(p, &end, 10);
	if (errno || end == p || idx > 0xffffffffu || (*end != ' ' && *end != '\t'))
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s:%zu: expected 'INDEX NAME'", path, line);
	name = end;
	while (*name == ' ' || *name == '\t')
		name++;
	i = strlen(name);
	while (i && (name[i - 1] == '\r' || name[i - 1] == ' '))
		name[--i] = 0;
	if (s->n == *cap) {
		struct pccx_sim_stage *nv;

		*cap = *cap ? 2 * *cap : 64;
		if (*cap > MAX_STAGES)
			return pccx__fail(d, PCCX_ERR_RANGE, "%s: too many stages", path);
		nv = realloc(s->v, *cap * sizeof(*nv));
		if (!nv)
			return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
		s->v = nv;
	}
	if (s->n && s->v[s->n - 1].insn >= idx)
		return pccx__fail(d, PCCX_ERR_FORMAT, "%s:%zu: stage indices must increase", path,
				  line);
	s->v[s->n].insn = (uint32_t)idx;
	s->v[s->n].name = name;
	s->n++;
	return PCCX_OK;
}

int pccx__sim_stages_read(const char *path, struct pccx_sim_stages *s, pccx_diag *d)
{
	size_t len, cap = 0, line = 0;
	uint8_t *data;
	char *p;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = pccx__read_file(path, MAX_STAGES_BYTES, &data, &len, d);
	if (rc)
		return rc;
	s->text = realloc(data, len + 1);
	if (!s->text) {
		free(data);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	}
	s->text[len] = 0;
	for (p = s->text; *p; ) {
		char *eol = strchr(p, '\n');

		line++;
		if (eol)
			*eol = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != '#' && (rc = add_line(s, &cap, p, path, line, d))) {
			pccx__sim_stages_free(s);
			return rc;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	return PCCX_OK;
}

void pccx__sim_stages_free(struct pccx_sim_stages *s)
{
	free(s->v);
	free(s->text);
	memset(s, 0, sizeof(*s));
}
