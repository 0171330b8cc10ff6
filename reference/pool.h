/* SPDX-License-Identifier: MIT */
/*
 * A minimal fork-join thread pool for the host kernels and the weight synthesiser.
 *
 * pccx__pool_run(p, fn, ctx) calls fn(ctx, part, nparts) once for every part in [0, nparts)
 * (nparts = the pool's thread count, the caller's thread doing part 0) and returns when all
 * parts are done. Users split their work statically by part, so results never depend on
 * scheduling; kernels are written so that they do not depend on nparts either.
 */
#ifndef PCCX_GEMMA_POOL_H
#define PCCX_GEMMA_POOL_H

#include "pccx/status.h"

struct pccx_pool;

typedef void (*pccx_pool_fn)(void *ctx, unsigned part, unsigned nparts);

/* n_threads >= 1 (1 = no worker threads; everything runs on the caller). */
PCCX_MUST_CHECK int pccx__pool_create(struct pccx_pool **out, unsigned n_threads, pccx_diag *d);
void pccx__pool_destroy(struct pccx_pool *p);
unsigned pccx__pool_threads(const struct pccx_pool *p);
/* Not reentrant: one run at a time per pool. p == NULL runs fn(ctx, 0, 1). */
void pccx__pool_run(struct pccx_pool *p, pccx_pool_fn fn, void *ctx);
/*
 * pccx__pool_run in two halves, for a pool of two or more threads: _start hands parts
 * 1 .. nparts-1 to the workers and returns at once; _join runs part 0 on the caller and returns
 * when every part is done. In between the caller may do other work, but no other run of this
 * pool, and fn must not depend on part 0 starting early (work taken from a shared counter).
 */
void pccx__pool_start(struct pccx_pool *p, pccx_pool_fn fn, void *ctx);
void pccx__pool_join(struct pccx_pool *p);
/* (pccx__pool_destroy after a _start without its _join: the workers skip their parts.) */
/* One step of a spin-wait (a pause where the CPU has one). */
void pccx__pool_relax(void);
/*
 * pthread_create for the library's own threads: they start with every signal blocked, so a
 * signal meant for the application (Ctrl-C at `pccx chat`'s prompt, SIGTERM to a server) is
 * taken by one of its threads, which waits for it, never by a worker that would run the
 * handler and leave the waiting thread asleep. Returns pthread_create's result.
 */
#ifndef PCCX_FREESTANDING	/* the bare-metal firmware has no threads */
#include <pthread.h>
int pccx__thread_start(pthread_t *tid, void *(*fn)(void *), void *arg);
#endif
/* Online CPUs (>= 1). */
unsigned pccx__pool_ncpu(void);
/*
 * Threads runnable on the machine at this instant, the caller included (/proc/loadavg's
 * fourth field); 0 when unknown. The load average itself cannot tell other work from this
 * process's own recent runs.
 */
unsigned pccx__pool_runnable(void);

/* The contiguous share [*lo, *hi) of n items for `part` of `nparts`, in units of `align`. */
void pccx__pool_split(unsigned long long n, unsigned align, unsigned part, unsigned nparts,
		      unsigned long long *lo, unsigned long long *hi);

#endif /* PCCX_GEMMA_POOL_H */
