// SPDX-License-Identifier: MIT
/* pccx sim: run a job file on the cycle simulator and print the report. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_sim.h"
#include "cli.h"
#include "diag.h"
#include "fileio.h"
#include "jobfile.h"

#define MAX_JOB_BYTES  (1ull << 30)
#define MAX_BUF_FILE   (1ull << 34)
#define MAX_ARGS       256
#define MAX_STAGES     65536
/*
 * Default limit on the bytes a job's buffers may declare in total: the KV260's DDR, and the
 * whole of the default 32-bit DMA space. Buffers take memory only where the job touches
 * them, but a job could touch all of them; --max-buffers raises the limit.
 */
#define DEF_MAX_BUFFERS (4ull << 30)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pccx sim JOB [options]\n\n"
		"Run a job file (or a bare program) on the cycle simulator of the v002 device,\n"
		"through the command engine, and print the report (docs/sim.md).\n\n"
		"options:\n"
		"  --dtb FILE.dtb        device parameters (default: the KV260 values)\n"
		"  --buf HANDLE=FILE     fill buffer HANDLE from FILE before the run (else zeros)\n"
		"  --out HANDLE=FILE     write buffer HANDLE to FILE after the run\n"
		"  --trace FILE.json     write a Chrome/Perfetto trace\n"
		"  --stages FILE         stage markers, one 'INDEX NAME' per line: the stage NAME\n"
		"                        ends with instruction INDEX\n"
		"  --timeout CYCLES      no-progress limit in core cycles (default 2^27)\n"
		"  --max-buffers BYTES   most bytes the job's buffers may declare in total\n"
		"                        (default 4G; suffixes K, M, G, T are powers of 1024)\n"
		"  --no-validate         feed the job unvalidated (tests of device errors)\n");
}

struct hfile {
	uint32_t handle;
	const char *path;
};

static int parse_hfile(const char *arg, struct hfile *h)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 0);
	if (errno || end == arg || *end != '=' || !end[1] || v > 0xffffffffu)
		return -1;
	h->handle = (uint32_t)v;
	h->path = end + 1;
	return 0;
}

/* A byte count: a number (decimal, 0x hex) with an optional K, M, G or T suffix; not 0. */
static int parse_bytes(const char *s, uint64_t *v)
{
	static const char units[] = "KMGT";
	const char *u;
	unsigned shift = 0;
	char *end;

	if (*s < '0' || *s > '9')   /* strtoull would take " -1" as 2^64 - 1 */
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno)
		return -1;
	if (*end && (u = strchr(units, *end)) != NULL) {
		shift = 10 * (unsigned)(u - units + 1);
		end++;
	}
	if (*end || !*v || *v > UINT64_MAX >> shift)
		return -1;
	*v <<= shift;
	return 0;
}

/*
 * Refuse, before anything is allocated, a job whose buffers declare more than `limit` bytes
 * in total, naming the buffer that crosses it.
 */
static int check_buffer_total(const struct pccx_jobfile *jf, const char *path, uint64_t limit,
			      pccx_diag *d)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < jf->n_buf; i++) {
		const struct pccx_buf_info *bi = &jf->buf[i];

		if (bi->size <= limit - total) {
			total += bi->size;
			continue;
		}
		if (!total)
			return pccx_fail(d, PCCX_ERR_RANGE,
					 "%s: buffer %u (handle %u) declares %" PRIu64 " bytes, more "
					 "than the limit of %" PRIu64 " bytes on the job's buffers "
					 "(--max-buffers BYTES raises it)",
					 path, i, bi->handle, bi->size, limit);
		return pccx_fail(d, PCCX_ERR_RANGE,
				 "%s: buffer %u (handle %u) declares %" PRIu64 " bytes, which with "
				 "the %" PRIu64 " bytes of the buffers before it is more than the "
				 "limit of %" PRIu64 " bytes on the job's buffers (--max-buffers "
				 "BYTES raises it)",
				 path, i, bi->handle, bi->size, total, limit);
	}
	return PCCX_OK;
}

static int read_stages(const char *path, struct pccx_sim_stage **out, size_t *n, char **store,
		       pccx_diag *d)
{
	uint8_t *data;
	size_t len, i, cap = 0, line = 0;
	struct pccx_sim_stage *st = NULL;
	char *p;
	int rc = pccx_read_file(path, 16u << 20, &data, &len, d);

	*out = NULL;
	*n = 0;
	if (rc)
		return rc;
	*store = realloc(data, len + 1);
	if (!*store) {
		free(data);
		return pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	}
	(*store)[len] = 0;
	p = *store;
	while (*p) {
		char *eol = strchr(p, '\n'), *end, *name;
		unsigned long idx;

		line++;
		if (eol)
			*eol = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != '#') {
			errno = 0;
			idx = strtoul(p, &end, 10);
			if (errno || end == p || idx > 0xffffffffu ||
			    (*end != ' ' && *end != '\t')) {
				free(st);
				return pccx_fail(d, PCCX_ERR_FORMAT,
						 "%s:%zu: expected 'INDEX NAME'", path, line);
			}
			name = end;
			while (*name == ' ' || *name == '\t')
				name++;
			i = strlen(name);
			while (i && (name[i - 1] == '\r' || name[i - 1] == ' '))
				name[--i] = 0;
			if (*n == cap) {
				struct pccx_sim_stage *ns;

				cap = cap ? 2 * cap : 64;
				if (cap > MAX_STAGES) {
					free(st);
					return pccx_fail(d, PCCX_ERR_RANGE, "%s: too many stages",
							 path);
				}
				ns = realloc(st, cap * sizeof(*ns));
				if (!ns) {
					free(st);
					return pccx_fail(d, PCCX_ERR_NOMEM, "%s: out of memory",
							 path);
				}
				st = ns;
			}
			st[*n].insn = (uint32_t)idx;
			st[*n].name = name;
			if (*n && st[*n - 1].insn >= idx) {
				free(st);
				return pccx_fail(d, PCCX_ERR_FORMAT,
						 "%s:%zu: stage indices must increase", path, line);
			}
			(*n)++;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	*out = st;
	return 0;
}

int pccx_cmd_sim(int argc, char **argv)
{
	const char *job_path = NULL, *dtb = NULL, *trace = NULL, *stages_path = NULL;
	struct hfile in[MAX_ARGS], out[MAX_ARGS];
	size_t n_in = 0, n_out = 0, n_stages = 0, len, i;
	struct pccx_sim_stage *stages = NULL;
	char *stage_store = NULL;
	struct pccx_simb_opts opts = { 0 };
	uint64_t max_buffers = DEF_MAX_BUFFERS;
	struct pccx_simb_result res;
	struct pccx_sim_config cfg;
	struct pccx_jobfile jf = { 0 };
	struct pccx_simb *b = NULL;
	struct pccx_stream_desc *sd = NULL;
	struct pccx_dma_desc *dd = NULL;
	uint32_t *map = NULL;
	struct pccx_job_view v;
	uint8_t *data = NULL;
	pccx_diag d = { 0 };
	int a, st, rc = 1;

	if (pccx_cli_wants_help(argc, argv)) {
		usage(stdout);
		return 0;
	}
	for (a = 1; a < argc; a++) {
		const char *o = argv[a];
		bool has = a + 1 < argc;

		if (!strcmp(o, "--dtb") && has) {
			dtb = argv[++a];
		} else if (!strcmp(o, "--trace") && has) {
			trace = argv[++a];
		} else if (!strcmp(o, "--stages") && has) {
			stages_path = argv[++a];
		} else if (!strcmp(o, "--timeout") && has) {
			char *end;

			errno = 0;
			opts.timeout_cycles = strtoull(argv[++a], &end, 0);
			if (errno || *end || !opts.timeout_cycles) {
				fprintf(stderr, "pccx sim: bad --timeout '%s'\n", argv[a]);
				return 2;
			}
		} else if (!strcmp(o, "--max-buffers") && has) {
			if (parse_bytes(argv[++a], &max_buffers)) {
				fprintf(stderr, "pccx sim: bad --max-buffers '%s'\n", argv[a]);
				return 2;
			}
		} else if (!strcmp(o, "--no-validate")) {
			opts.no_validate = true;
		} else if ((!strcmp(o, "--buf") || !strcmp(o, "--out")) && has) {
			bool isin = !strcmp(o, "--buf");
			struct hfile *h = isin ? &in[n_in] : &out[n_out];

			if ((isin ? n_in : n_out) == MAX_ARGS || parse_hfile(argv[++a], h)) {
				fprintf(stderr, "pccx sim: bad %s '%s' (HANDLE=FILE)\n", o,
					argv[a]);
				return 2;
			}
			if (isin)
				n_in++;
			else
				n_out++;
		} else if (o[0] == '-') {
			fprintf(stderr, "pccx sim: unknown option '%s'\n", o);
			usage(stderr);
			return 2;
		} else if (!job_path) {
			job_path = o;
		} else {
			fprintf(stderr, "pccx sim: more than one job file\n");
			return 2;
		}
	}
	if (!job_path) {
		usage(stderr);
		return 2;
	}

	pccx_sim_config_default(&cfg);
	if (dtb && (st = pccx_sim_config_from_dtb_file(&cfg, dtb, &d)))
		return pccx_cli_fail(st, &d);
	if (stages_path && (st = read_stages(stages_path, &stages, &n_stages, &stage_store, &d)))
		return pccx_cli_fail(st, &d);
	st = pccx_read_file(job_path, MAX_JOB_BYTES, &data, &len, &d);
	if (!st)
		st = pccx_jobfile_parse(data, len, job_path, &jf, &d);
	if (!st)
		st = check_buffer_total(&jf, job_path, max_buffers, &d);
	if (!st)
		st = pccx_simb_create(&cfg, &b, &d);
	if (st)
		goto fail;

	/* The job's handles name the file's buffers; the backend has its own. */
	map = calloc(jf.n_buf + 1, sizeof(*map));
	sd = calloc(jf.n_stream + 1, sizeof(*sd));
	dd = calloc(jf.n_dma + 1, sizeof(*dd));
	if (!map || !sd || !dd) {
		st = pccx_fail(&d, PCCX_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (i = 0; i < jf.n_buf; i++) {
		st = pccx_simb_buf_alloc(b, jf.buf[i].size, jf.buf[i].access, &map[i], &d);
		if (st) {
			char why[sizeof(d.msg)];

			snprintf(why, sizeof(why), "%s", d.msg);
			pccx_fail(&d, st, "%s: buffer %zu (handle %u): %s", job_path, i,
				  jf.buf[i].handle, why);
			goto fail;
		}
	}
	for (i = 0; i < n_in; i++) {
		size_t k, flen;
		uint8_t *fd;
		uint64_t size;
		uint8_t *dst = NULL;

		for (k = 0; k < jf.n_buf; k++)
			if (jf.buf[k].handle == in[i].handle)
				dst = pccx_simb_buf_map(b, map[k], &size);
		if (!dst) {
			st = pccx_fail(&d, PCCX_ERR_NOT_FOUND, "--buf: the job has no buffer %u",
				       in[i].handle);
			goto fail;
		}
		st = pccx_read_file(in[i].path, MAX_BUF_FILE, &fd, &flen, &d);
		if (st)
			goto fail;
		if (flen > size) {
			free(fd);
			st = pccx_fail(&d, PCCX_ERR_RANGE,
				       "%s: %zu bytes exceed buffer %u (%" PRIu64 " bytes)",
				       in[i].path, flen, in[i].handle, size);
			goto fail;
		}
		memcpy(dst, fd, flen);
		free(fd);
	}
	/* Translate handles; an unknown one maps to 0, which the validator refuses. */
	for (i = 0; i < jf.n_stream; i++) {
		size_t k;

		sd[i] = jf.stream[i];
		sd[i].handle = 0;
		for (k = 0; k < jf.n_buf; k++)
			if (jf.buf[k].handle == jf.stream[i].handle)
				sd[i].handle = map[k];
	}
	for (i = 0; i < jf.n_dma; i++) {
		size_t k;

		dd[i] = jf.dma[i];
		dd[i].handle = 0;
		for (k = 0; k < jf.n_buf; k++)
			if (jf.buf[k].handle == jf.dma[i].handle)
				dd[i].handle = map[k];
	}
	v.insn = jf.insn;
	v.n_insn = jf.n_insn;
	v.dma = dd;
	v.n_dma = jf.n_dma;
	v.stream = sd;
	v.n_stream = jf.n_stream;

	if (trace && (st = pccx_sim_trace_open(pccx_simb_sim(b), trace, &d)))
		goto fail;
	st = pccx_simb_submit_wait(b, &v, &opts, &res, &d);
	if (trace) {
		pccx_diag d2 = { 0 };

		if (pccx_sim_trace_close(pccx_simb_sim(b), &d2) && !st) {
			d = d2;
			st = d2.status;
		}
	}
	pccx_sim_report(pccx_simb_sim(b), stdout, stages, n_stages);
	printf("host: %.3f s CPU (%.3f s wall) for %u instructions (%.2f us CPU each), %" PRIu64
	       " engine steps, %" PRIu64 " register accesses\n",
	       res.cpu_seconds, res.host_seconds, jf.n_insn,
	       res.cpu_seconds * 1e6 / (jf.n_insn ? jf.n_insn : 1), res.steps, res.mmio);
	if (st)
		goto fail;
	for (i = 0; i < n_out; i++) {
		size_t k;
		uint64_t size = 0;
		uint8_t *src = NULL;

		for (k = 0; k < jf.n_buf; k++)
			if (jf.buf[k].handle == out[i].handle)
				src = pccx_simb_buf_map(b, map[k], &size);
		if (!src) {
			st = pccx_fail(&d, PCCX_ERR_NOT_FOUND, "--out: the job has no buffer %u",
				       out[i].handle);
			goto fail;
		}
		st = pccx_write_file_atomic(out[i].path, src, size, &d);
		if (st)
			goto fail;
	}
	rc = 0;
fail:
	if (st)
		rc = pccx_cli_fail(st, &d);
	pccx_simb_destroy(b);
	pccx_jobfile_free(&jf);
	free(data);
	free(map);
	free(sd);
	free(dd);
	free(stages);
	free(stage_store);
	return rc;
}
