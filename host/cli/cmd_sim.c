// SPDX-License-Identifier: MIT
/* pccx sim: run a job file on the cycle simulator and print the report. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diag.h"
#include "fileio.h"
#include "jobfile.h"
#include "simjob.h"

#define MAX_JOB_BYTES  (1ull << 30)
#define MAX_BUF_FILE   (1ull << 34)
#define MAX_ARGS       256
/*
 * Default limit on the bytes a job's buffers may declare in total: the KV260's DDR, and the
 * whole of the default 32-bit DMA space. Buffers take memory only where the job touches
 * them, but a job could touch all of them; --max-buffers raises the limit.
 */
#define DEF_MAX_BUFFERS (4ull << 30)

struct hfile {
	uint32_t handle;
	const char *path;
};

/* The --buf or the --out arguments. */
struct hfiles {
	struct hfile v[MAX_ARGS];
	size_t n;
};

struct sim_args {
	const char *job, *dtb, *trace, *stages;
	struct hfiles in, out;
	struct pccx_sim_backend_opts opts;
	uint64_t max_buffers;
};

/* HANDLE=FILE, appended to the struct hfiles at dst. */
static int parse_hfile(const char *arg, void *dst)
{
	struct hfiles *h = dst;
	unsigned long v;
	char *end;

	if (h->n == MAX_ARGS || *arg < '0' || *arg > '9')
		return -1;
	errno = 0;
	v = strtoul(arg, &end, 0);
	if (errno || *end != '=' || !end[1] || v > 0xffffffffu)
		return -1;
	h->v[h->n].handle = (uint32_t)v;
	h->v[h->n].path = end + 1;
	h->n++;
	return 0;
}

#define A(f, type) PCCX_AT(struct sim_args, f, type)
static const struct pccx_opt sim_opts[] = {
	PCCX_OPT(NULL, 0, PCCX_OPT_PATH, A(job, const char *), "JOB",
		 "a job file, or a bare program", .flags = PCCX_OPT_REQUIRED),
	PCCX_OPT("dtb", 0, PCCX_OPT_PATH, A(dtb, const char *), "FILE.dtb",
		 "device parameters (default: the KV260 values)"),
	PCCX_OPT("buf", 0, PCCX_OPT_CUSTOM, A(in, struct hfiles), "HANDLE=FILE",
		 "fill buffer HANDLE from FILE before the run (else zeros)",
		 .parse = parse_hfile),
	PCCX_OPT("out", 0, PCCX_OPT_CUSTOM, A(out, struct hfiles), "HANDLE=FILE",
		 "write buffer HANDLE to FILE after the run", .parse = parse_hfile),
	PCCX_OPT("trace", 0, PCCX_OPT_PATH, A(trace, const char *), "FILE.json",
		 "write a Chrome/Perfetto trace"),
	PCCX_OPT("stages", 0, PCCX_OPT_PATH, A(stages, const char *), "FILE",
		 "stage markers, one 'INDEX NAME' per line: the stage NAME\n"
		 "ends with instruction INDEX"),
	PCCX_OPT("timeout", 0, PCCX_OPT_UINT, A(opts.timeout_cycles, uint64_t), "CYCLES",
		 "no-progress limit in core cycles (default 2^27)", .min = 1),
	PCCX_OPT("max-buffers", 0, PCCX_OPT_BYTES, A(max_buffers, uint64_t), "BYTES",
		 "most bytes the job's buffers may declare in total\n"
		 "(default 4G; suffixes K, M, G, T are powers of 1024)", .min = 1),
	PCCX_OPT("no-validate", 0, PCCX_OPT_FLAG, A(opts.no_validate, bool), NULL,
		 "feed the job unvalidated (tests of device errors)"),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd sim_cmd = {
	.name = "sim",
	.usage = "JOB [options]",
	.about = "Run a job file (or a bare program) on the cycle simulator of the v002 device,\n"
		 "through the command engine, and print the report (docs/sim.md).\n",
	.opts = sim_opts,
};

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
			return pccx__fail(d, PCCX_ERR_RANGE,
					  "%s: buffer %u (handle %u) declares %" PRIu64 " bytes, more "
					  "than the limit of %" PRIu64 " bytes on the job's buffers "
					  "(--max-buffers BYTES raises it)",
					  path, i, bi->handle, bi->size, limit);
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: buffer %u (handle %u) declares %" PRIu64 " bytes, which with "
				  "the %" PRIu64 " bytes of the buffers before it is more than the "
				  "limit of %" PRIu64 " bytes on the job's buffers (--max-buffers "
				  "BYTES raises it)",
				  path, i, bi->handle, bi->size, total, limit);
	}
	return PCCX_OK;
}

/* Everything a run holds. */
struct sim_run {
	struct pccx_sim_config cfg;
	struct pccx_sim_stages stages;
	uint8_t *data;
	struct pccx_jobfile jf;
	struct pccx_sim_backend *b;
	struct pccx_simjob job;
	struct pccx_sim_backend_result res;
};

/* Fill the --buf buffers from their files. */
static int fill_inputs(const struct hfiles *in, const struct pccx_simjob *job, pccx_diag *d)
{
	size_t i;

	for (i = 0; i < in->n; i++) {
		const struct hfile *h = &in->v[i];
		uint64_t size;
		uint8_t *dst = pccx__simjob_buf(job, h->handle, &size), *data;
		size_t len;
		int rc;

		if (!dst)
			return pccx__fail(d, PCCX_ERR_NOT_FOUND, "--buf: the job has no buffer %u",
					  h->handle);
		rc = pccx__read_file(h->path, MAX_BUF_FILE, &data, &len, d);
		if (rc)
			return rc;
		if (len > size) {
			free(data);
			return pccx__fail(d, PCCX_ERR_RANGE,
					  "%s: %zu bytes exceed buffer %u (%" PRIu64 " bytes)",
					  h->path, len, h->handle, size);
		}
		memcpy(dst, data, len);
		free(data);
	}
	return PCCX_OK;
}

/* Write the --out buffers to their files. */
static int write_outputs(const struct hfiles *out, const struct pccx_simjob *job, pccx_diag *d)
{
	size_t i;

	for (i = 0; i < out->n; i++) {
		uint64_t size = 0;
		uint8_t *src = pccx__simjob_buf(job, out->v[i].handle, &size);
		int rc;

		if (!src)
			return pccx__fail(d, PCCX_ERR_NOT_FOUND, "--out: the job has no buffer %u",
					  out->v[i].handle);
		rc = pccx__write_file_atomic(out->v[i].path, src, size, d);
		if (rc)
			return rc;
	}
	return PCCX_OK;
}

/* The job file on a new backend, its buffers filled. */
static int load(const struct sim_args *a, struct sim_run *r, pccx_diag *d)
{
	size_t len;
	int rc;

	rc = pccx__read_file(a->job, MAX_JOB_BYTES, &r->data, &len, d);
	if (!rc)
		rc = pccx__jobfile_parse(r->data, len, a->job, &r->jf, d);
	if (!rc)
		rc = check_buffer_total(&r->jf, a->job, a->max_buffers, d);
	if (!rc)
		rc = pccx__sim_backend_create(&r->cfg, &r->b, d);
	if (!rc)
		rc = pccx__simjob_load(&r->job, r->b, &r->jf, a->job, d);
	if (!rc)
		rc = fill_inputs(&a->in, &r->job, d);
	return rc;
}

/* Submit and wait (with the trace, when asked for); the report comes either way. */
static int run(const struct sim_args *a, struct sim_run *r, pccx_diag *d)
{
	pccx_sim *sim = pccx__sim_backend_sim(r->b);
	int rc;

	if (a->trace && (rc = pccx__sim_trace_open(sim, a->trace, d)))
		return rc;
	rc = pccx__sim_backend_submit_wait(r->b, &r->job.view, &a->opts, &r->res, d);
	if (a->trace) {
		pccx_diag d2 = { 0 };

		if (pccx__sim_trace_close(sim, &d2) && !rc) {
			*d = d2;
			rc = d2.status;
		}
	}
	pccx__sim_report(sim, stdout, r->stages.v, r->stages.n);
	printf("host: %.3f s CPU (%.3f s wall) for %u instructions (%.2f us CPU each), %" PRIu64
	       " engine steps, %" PRIu64 " register accesses\n",
	       r->res.cpu_seconds, r->res.host_seconds, r->jf.n_insn,
	       r->res.cpu_seconds * 1e6 / (r->jf.n_insn ? r->jf.n_insn : 1), r->res.steps,
	       r->res.mmio);
	return rc;
}

int pccx_cmd_sim(int argc, char **argv)
{
	struct sim_args a = { .max_buffers = DEF_MAX_BUFFERS };
	struct sim_run r = { 0 };
	pccx_diag d = { 0 };
	int rc;

	rc = pccx_opt_parse(&sim_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	pccx__sim_config_default(&r.cfg);
	if (a.dtb && (rc = pccx__sim_config_from_dtb_file(&r.cfg, a.dtb, &d)))
		return pccx_cli_fail(rc, &d);
	if (a.stages && (rc = pccx__sim_stages_read(a.stages, &r.stages, &d)))
		return pccx_cli_fail(rc, &d);
	rc = load(&a, &r, &d);
	if (!rc)
		rc = run(&a, &r, &d);
	if (!rc)
		rc = write_outputs(&a.out, &r.job, &d);
	if (rc)
		pccx_cli_fail(rc, &d);
	pccx__sim_backend_destroy(r.b);
	pccx__simjob_free(&r.job);
	pccx__jobfile_free(&r.jf);
	free(r.data);
	pccx__sim_stages_free(&r.stages);
	return rc ? 1 : 0;
}
