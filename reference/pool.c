// SPDX-License-Identifier: MIT
/*
 * Fork-join thread pool: a generation counter and a count of pending parts, read with atomics
 * so that the threads spin a while before they sleep on a condition variable (waking a sleeping
 * thread costs more than a short matmul; a decode step runs hundreds of them). Every change a
 * sleeper waits for is made under the mutex, so no wake-up is lost.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "pool.h"

struct pccx_pool {
	pthread_mutex_t lock;	/* held to change gen, stop, or to sleep */
	pthread_cond_t go;	/* generation advanced or stopping */
	pthread_cond_t done;	/* pending reached 0 */
	unsigned long long gen;	/* atomic: the run being done */
	unsigned pending;	/* atomic: workers' parts of the run not done yet */
	int stop;		/* atomic */
	pccx_pool_fn fn;
	void *ctx;
	unsigned n;		/* parts = threads, the caller included */
	pthread_t *tid;		/* n - 1 workers */
	unsigned started;
	long long spin_ns;	/* atomic: how long a waiting thread spins (see crowd_check) */
	long long crowd_at;	/* when the caller last looked at the machine's runnable threads */
};

struct worker_arg {
	struct pccx_pool *p;
	unsigned part;
};

/*
 * How long a waiting thread spins before it sleeps: 0.8 ms, timed (a pause lasts 26 ns on
 * the AMD EPYC VMs the figures come from, about 40 on Intel cores, and is no instruction at
 * all elsewhere), the clock read once every SPIN_STRIDE pauses. A decode step's serial work
 * between two matmuls is mostly shorter, so the worker is still spinning when the next one
 * comes instead of asleep on a futex (waking it took tens of microseconds there); E4B's
 * decode, 0.8 ms of spins against 1500 pauses (about 40 us) alternated step by step in one
 * process: 3.4-6.5 % less time a step.
 */
#define SPIN_NS 800000ll
#define SPIN_STRIDE 64u

/*
 * On a machine with more runnable threads than CPUs a spinning thread only takes turns with
 * the one it waits for (or another process's), so there the spin is short: the end-to-end
 * tests (test_run) with two busy-looping processes on the two CPUs took 260-284 s with 0.8 ms
 * spins and 159-162 s with 20 us ones. The caller of a run looks every CROWD_CHECK_NS.
 */
#define SPIN_CROWDED_NS 20000ll
#define CROWD_CHECK_NS 100000000ll

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

void pccx__pool_relax(void)
{
	relax();
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* Pause until done(arg) or the pool's spin time has passed; returns done(arg). */
static bool spin_until(bool (*done)(struct pccx_pool *p, unsigned long long v),
		       struct pccx_pool *p, unsigned long long v)
{
	long long t0 = now_ns(), spin = __atomic_load_n(&p->spin_ns, __ATOMIC_RELAXED);
	unsigned i;

	for (i = 1; !done(p, v); i++) {
		relax();
		if (i % SPIN_STRIDE == 0 && now_ns() - t0 >= spin)
			return done(p, v);
	}
	return true;
}

static unsigned long long gen_now(struct pccx_pool *p)
{
	return __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
}

static int stopping(struct pccx_pool *p)
{
	return __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE);
}

static bool run_or_stop(struct pccx_pool *p, unsigned long long seen)
{
	return gen_now(p) != seen || stopping(p);
}

static bool parts_done(struct pccx_pool *p, unsigned long long unused)
{
	(void)unused;
	return !__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE);
}

/* Wait until a run after `seen` is published or the pool stops. */
static void wait_run(struct pccx_pool *p, unsigned long long seen)
{
	if (spin_until(run_or_stop, p, seen))
		return;
	pthread_mutex_lock(&p->lock);
	while (!stopping(p) && gen_now(p) == seen)
		pthread_cond_wait(&p->go, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

static void *worker(void *arg)
{
	struct worker_arg *wa = arg;
	struct pccx_pool *p = wa->p;
	unsigned part = wa->part;
	unsigned long long seen = 0;

	free(wa);
	for (;;) {
		wait_run(p, seen);
		if (stopping(p))
			break;
		seen = gen_now(p);
		p->fn(p->ctx, part, p->n);
		if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL) == 0) {
			pthread_mutex_lock(&p->lock);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->lock);
		}
	}
	return NULL;
}

int pccx__thread_start(pthread_t *tid, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(tid, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int pccx__pool_create(struct pccx_pool **out, unsigned n_threads, pccx_diag *d)
{
	struct pccx_pool *p;
	unsigned i;

	*out = NULL;
	if (n_threads == 0 || n_threads > 256)
		return pccx__fail(d, PCCX_ERR_INVALID, "thread pool: %u threads (1..256)",
				  n_threads);
	p = calloc(1, sizeof(*p));
	if (!p)
		return pccx__fail(d, PCCX_ERR_NOMEM, "thread pool: out of memory");
	p->n = n_threads;
	p->spin_ns = SPIN_NS;
	p->crowd_at = now_ns();
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	if (n_threads > 1) {
		p->tid = calloc(n_threads - 1, sizeof(*p->tid));
		if (!p->tid) {
			pccx__pool_destroy(p);
			return pccx__fail(d, PCCX_ERR_NOMEM, "thread pool: out of memory");
		}
	}
	for (i = 1; i < n_threads; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));

		if (!wa) {
			pccx__pool_destroy(p);
			return pccx__fail(d, PCCX_ERR_NOMEM, "thread pool: out of memory");
		}
		wa->p = p;
		wa->part = i;
		if (pccx__thread_start(&p->tid[i - 1], worker, wa)) {
			free(wa);
			pccx__pool_destroy(p);
			return pccx__fail(d, PCCX_ERR_INTERNAL,
					  "thread pool: cannot start thread %u", i);
		}
		p->started++;
	}
	*out = p;
	return PCCX_OK;
}

void pccx__pool_destroy(struct pccx_pool *p)
{
	unsigned i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->started; i++)
		pthread_join(p->tid[i], NULL);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	free(p->tid);
	free(p);
}

unsigned pccx__pool_threads(const struct pccx_pool *p)
{
	return p ? p->n : 1;
}

/* Every CROWD_CHECK_NS, the spin for the machine's load of the moment (called by the caller). */
static void crowd_check(struct pccx_pool *p)
{
	long long t = now_ns();
	unsigned run;

	if (t - p->crowd_at < CROWD_CHECK_NS)
		return;
	p->crowd_at = t;
	run = pccx__pool_runnable();
	__atomic_store_n(&p->spin_ns, run > pccx__pool_ncpu() ? SPIN_CROWDED_NS : SPIN_NS,
			 __ATOMIC_RELAXED);
}

void pccx__pool_start(struct pccx_pool *p, pccx_pool_fn fn, void *ctx)
{
	crowd_check(p);
	/* fn, ctx and pending are published by the release store of gen */
	p->fn = fn;
	p->ctx = ctx;
	__atomic_store_n(&p->pending, p->n - 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->gen, gen_now(p) + 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->lock);
}

void pccx__pool_join(struct pccx_pool *p)
{
	p->fn(p->ctx, 0, p->n);
	if (spin_until(parts_done, p, 0))
		return;
	pthread_mutex_lock(&p->lock);
	while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void pccx__pool_run(struct pccx_pool *p, pccx_pool_fn fn, void *ctx)
{
	if (!p || p->n == 1) {
		fn(ctx, 0, 1);
		return;
	}
	pccx__pool_start(p, fn, ctx);
	pccx__pool_join(p);
}

unsigned pccx__pool_runnable(void)
{
	unsigned run = 0;
	FILE *f = fopen("/proc/loadavg", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%*f %*f %*f %u", &run) != 1)
		run = 0;
	fclose(f);
	return run;
}

unsigned pccx__pool_ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1u : n > 256 ? 256u : (unsigned)n;
}

void pccx__pool_split(unsigned long long n, unsigned align, unsigned part, unsigned nparts,
		      unsigned long long *lo, unsigned long long *hi)
{
	unsigned long long units = (n + align - 1) / align;
	unsigned long long a = units * part / nparts, b = units * (part + 1) / nparts;

	*lo = a * align < n ? a * align : n;
	*hi = b * align < n ? b * align : n;
}
