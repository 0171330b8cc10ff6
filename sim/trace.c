// SPDX-License-Identifier: MIT
/*
 * Chrome/Perfetto trace output: {"traceEvents":[...]} with one complete ("X") event per
 * instruction on its unit's track and per DataMover command on its channel's track, and a
 * thread_name record for each track. Timestamps are microseconds with picosecond digits.
 */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "fileio.h"
#include "sim_int.h"

#define MAX_TRACKS 32

struct sim_trace {
	FILE *f;
	char *path;
	bool first;
	unsigned n_tracks;
	const char *tracks[MAX_TRACKS];   /* static strings */
	uint64_t events;
};

static void put_us(FILE *f, uint64_t ps)
{
	fprintf(f, "%llu.%06llu", (unsigned long long)(ps / 1000000u),
		(unsigned long long)(ps % 1000000u));
}

static void sep(struct sim_trace *t)
{
	fputs(t->first ? "\n" : ",\n", t->f);
	t->first = false;
}

static unsigned track_id(struct sim_trace *t, const char *track)
{
	unsigned i;

	for (i = 0; i < t->n_tracks; i++)
		if (t->tracks[i] == track || !strcmp(t->tracks[i], track))
			return i + 1;
	if (t->n_tracks == MAX_TRACKS)
		return MAX_TRACKS;
	t->tracks[t->n_tracks++] = track;
	sep(t);
	fprintf(t->f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
		      "\"args\":{\"name\":\"%s\"}}", t->n_tracks, track);
	return t->n_tracks;
}

void pccx__sim_trace_event(struct pccx_sim *s, const char *track, const char *name,
			   uint64_t start_ps,
			   uint64_t end_ps, uint64_t arg)
{
	struct sim_trace *t = s->trace;
	unsigned tid;

	if (!t)
		return;
	tid = track_id(t, track);
	sep(t);
	fprintf(t->f, "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":", name, tid);
	put_us(t->f, start_ps);
	fputs(",\"dur\":", t->f);
	put_us(t->f, end_ps > start_ps ? end_ps - start_ps : 0);
	fprintf(t->f, ",\"args\":{\"v\":%llu}}", (unsigned long long)arg);
	t->events++;
}

int pccx__sim_trace_open(pccx_sim *s, const char *path, pccx_diag *d)
{
	struct sim_trace *t;
	int rc;

	pccx__sim_sync(s);
	if (s->trace) {
		rc = pccx__sim_trace_close(s, d);
		if (rc)
			return rc;
	}
	t = calloc(1, sizeof(*t));
	if (t)
		t->path = strdup(path);
	if (!t || !t->path) {
		free(t);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	}
	rc = pccx__output_open(path, &t->f, d);
	if (rc) {
		free(t->path);
		free(t);
		return rc;
	}
	t->first = true;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", t->f);
	s->trace = t;
	track_id(t, "frontend");
	track_id(t, "gemv");
	track_id(t, "gemm");
	track_id(t, "sfu");
	track_id(t, "dma_in");
	track_id(t, "dma_out");
	track_id(t, "l2copy");
	track_id(t, "dm0 hp0");
	track_id(t, "dm1 hp1");
	track_id(t, "dm2 hp2");
	track_id(t, "dm3 hp3");
	track_id(t, "dm4 fmap");
	track_id(t, "dm5 result");
	track_id(t, "host mmio");
	return 0;
}

int pccx__sim_trace_close(pccx_sim *s, pccx_diag *d)
{
	struct sim_trace *t = s->trace;
	int rc;

	if (!t)
		return 0;
	fputs("\n]}\n", t->f);
	rc = pccx__output_close(t->f, t->path, false, d);
	free(t->path);
	free(t);
	s->trace = NULL;
	return rc;
}

void pccx__sim_trace_free(struct pccx_sim *s)
{
	if (s->trace && pccx__sim_trace_close(s, NULL))
		return;
}
