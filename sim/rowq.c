// SPDX-License-Identifier: MIT
/*
 * The q4 row batches of the GEMV/GEMM lanes, and the q4c records, computed on a second thread.
 *
 * A batch's results are only read when its instruction completes (eng_gemv.c), so the
 * simulation runs on while another thread computes them: a lane posts a batch of complete
 * rows, and before the simulator reads the results, frees the activations or lets host memory
 * under the rows change, it computes the batches the thread has not started itself and waits
 * for the one it has (a busy machine may leave the thread behind). Each batch is one call of
 * the same row kernel on the same rows as before, so the bits do not depend on which thread
 * computed them or when. The thread is started with the first batch if a CPU is spare for it
 * (cpu_spare(), asked again every ROWQ_RETRY_NS while none is); otherwise, and in the
 * bare-metal firmware, batches are computed where they are posted.
 *
 * A q4c GEMV's records (q4c.c) add into one block's INT32 sums and end blocks into FP32
 * accumulators, so their order matters: they come as ordered jobs, which only the thread
 * runs, in the order they were posted (the simulator waits for them rather than take one out
 * of turn).
 */
#include "kernels.h"
#include "sim_int.h"

struct rowq_job {
	void (*fn)(void *arg);         /* an ordered job (NULL: q4 rows) */
	void *arg;
	const struct pccx_kern_q4 *k;
	const uint8_t *w;
	uint64_t row_bytes;
	uint32_t n, m;                 /* rows, activation rows */
	const struct pccx_kern_act *act;
	float *y;                      /* y[r * ystride + i]: row i for activation r */
	size_t ystride;
};

static void job_run(const struct rowq_job *j)
{
	if (j->fn) {
		j->fn(j->arg);
		return;
	}
	pccx__kern_q4_apply(j->k, j->w, j->row_bytes, j->n, j->act, j->m, j->y, j->ystride);
}

#ifdef PCCX_FREESTANDING
/* The bare-metal firmware has no threads: batches are computed where they are posted. */
bool pccx__sim_rowq_active(struct pccx_sim *s)
{
	(void)s;
	return false;
}

void pccx__sim_rowq_post(struct pccx_sim *s, const uint8_t *w, uint64_t row_bytes, uint32_t n,
			 const struct pccx_kern_act *act, uint32_t m, float *y, size_t ystride)
{
	struct rowq_job j = { NULL, NULL, &s->q4, w, row_bytes, n, m, act, y, ystride };

	job_run(&j);
}

void pccx__sim_rowq_post_ordered(struct pccx_sim *s, void (*fn)(void *arg), void *arg)
{
	(void)s;
	fn(arg);
}

void pccx__sim_rowq_wait(struct pccx_sim *s)
{
	(void)s;
}

void pccx__sim_set_row_thread(pccx_sim *s, bool on)
{
	(void)s;
	(void)on;
}

void pccx__sim_rowq_stop(struct pccx_sim *s)
{
	(void)s;
}

#else
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pool.h"

/* Batches posted and not computed yet, at most (two matmuls' lanes with rows ahead, eng_gemv.c,
 * hold up to about 72); a post beyond is computed where it is posted. */
#define ROWQ_JOBS 128u


struct sim_rowq {
	pthread_mutex_t lock;
	pthread_cond_t work;           /* a batch posted, or stopping */
	pthread_cond_t done;           /* a batch computed */
	pthread_t tid;
	struct rowq_job job[ROWQ_JOBS];
	uint32_t head, queued;         /* ring of the batches not started yet */
	uint32_t n;                    /* batches posted and not computed (atomic) */
	bool stop;
	bool idle;                     /* the worker sleeps on `work` */
	bool waiting;                  /* the simulator sleeps on `done` */
};

/* Spins before a thread sleeps, a few tens of microseconds: batches are posted every few
 * microseconds while a GEMV streams, and each wake-up through the kernel costs about as much
 * as a batch (the same trade as reference/pool.c's). */
#define ROWQ_SPINS 1000u

/* Spin (ROWQ_SPINS at most) until no batch is pending, or (worker) one is or it stops. */
static void spin(struct sim_rowq *q, bool until_empty)
{
	uint32_t i;

	for (i = 0; i < ROWQ_SPINS; i++) {
		uint32_t n = __atomic_load_n(&q->n, __ATOMIC_ACQUIRE);

		if (until_empty ? !n : n || __atomic_load_n(&q->stop, __ATOMIC_RELAXED))
			return;
		pccx__pool_relax();
	}
}


/* Take the oldest batch not started (the worker) or the newest (the simulator, waiting). */
static struct rowq_job take(struct sim_rowq *q, bool newest)
{
	struct rowq_job j = q->job[(q->head + (newest ? q->queued - 1 : 0)) % ROWQ_JOBS];

	if (!newest)
		q->head = (q->head + 1) % ROWQ_JOBS;
	q->queued--;
	return j;
}

/* Run a batch taken under the lock (released meanwhile); one batch fewer pending. */
static void run_taken(struct sim_rowq *q, const struct rowq_job *j)
{
	pthread_mutex_unlock(&q->lock);
	job_run(j);
	pthread_mutex_lock(&q->lock);
	/* release: the results are visible to whoever sees the count drop */
	__atomic_sub_fetch(&q->n, 1, __ATOMIC_RELEASE);
}

static void *worker(void *arg)
{
	struct sim_rowq *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct rowq_job j;

		if (!q->queued && !q->stop) {
			pthread_mutex_unlock(&q->lock);
			spin(q, false);
			pthread_mutex_lock(&q->lock);
		}
		while (!q->queued && !q->stop) {
			q->idle = true;
			pthread_cond_wait(&q->work, &q->lock);
			q->idle = false;
		}
		if (!q->queued)
			break;
		j = take(q, false);
		run_taken(q, &j);
		if (q->waiting)
			pthread_cond_broadcast(&q->done);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/*
 * Whether a CPU is spare for the worker: fewer threads runnable right now (this one included)
 * than CPUs, or nothing known. On a machine whose other CPU is busy the worker would only take
 * turns with the simulator on one (measured with one other CPU-bound process on two CPUs:
 * 0.35-0.46 s per E4B step against 0.26 s on one thread).
 */
static bool cpu_spare(void)
{
	unsigned ncpu = pccx__pool_ncpu();

	return ncpu >= 2 && pccx__pool_runnable() < ncpu;
}

/* A CPU found busy is looked at again this much later (ns). */
#define ROWQ_RETRY_NS 100000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The worker, started on first use; NULL: compute on the caller's thread. When no CPU was
 * spare, the question is asked again ROWQ_RETRY_NS later: /proc/loadavg counts what is
 * runnable at one instant, and a process that happened to be runnable then must not keep a
 * whole run on one thread.
 */
static struct sim_rowq *rowq_get(struct pccx_sim *s)
{
	struct sim_rowq *q;

	if (s->rowq)
		return s->rowq;
	if (s->rowq_tried && (s->rowq_mode != 0 || now_ns() < s->rowq_retry_ns))
		return NULL;
	s->rowq_tried = true;
	s->rowq_retry_ns = UINT64_MAX;
	if (s->rowq_mode < 0 || pccx__pool_ncpu() < 2)
		return NULL;
	if (s->rowq_mode == 0 && !cpu_spare()) {
		s->rowq_retry_ns = now_ns() + ROWQ_RETRY_NS;
		return NULL;
	}
	if (!(q = calloc(1, sizeof(*q))))
		return NULL;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->done, NULL);
	if (pccx__thread_start(&q->tid, worker, q)) {
		pthread_cond_destroy(&q->work);
		pthread_cond_destroy(&q->done);
		pthread_mutex_destroy(&q->lock);
		free(q);
		return NULL;
	}
	s->rowq = q;
	return q;
}

bool pccx__sim_rowq_active(struct pccx_sim *s)
{
	return rowq_get(s) != NULL;
}

static void post(struct pccx_sim *s, const struct rowq_job *j)
{
	struct sim_rowq *q = rowq_get(s);

	if (!q) {
		job_run(j);
		return;
	}
	pthread_mutex_lock(&q->lock);
	if (q->queued == ROWQ_JOBS) {
		/* the worker is far behind: this job is computed here, an ordered one after all
		 * the jobs before it */
		pthread_mutex_unlock(&q->lock);
		if (j->fn)
			pccx__sim_rowq_wait(s);
		job_run(j);
		return;
	}
	q->job[(q->head + q->queued++) % ROWQ_JOBS] = *j;
	__atomic_add_fetch(&q->n, 1, __ATOMIC_RELEASE);
	if (q->idle)
		pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
}

void pccx__sim_rowq_post(struct pccx_sim *s, const uint8_t *w, uint64_t row_bytes, uint32_t n,
			 const struct pccx_kern_act *act, uint32_t m, float *y, size_t ystride)
{
	struct rowq_job j = { NULL, NULL, &s->q4, w, row_bytes, n, m, act, y, ystride };

	post(s, &j);
}

void pccx__sim_rowq_post_ordered(struct pccx_sim *s, void (*fn)(void *arg), void *arg)
{
	struct rowq_job j = { .fn = fn, .arg = arg };

	post(s, &j);
}

void pccx__sim_rowq_wait(struct pccx_sim *s)
{
	struct sim_rowq *q = s->rowq;

	/* called for every beat the device writes: no lock when nothing is pending */
	if (!q || !__atomic_load_n(&q->n, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&q->lock);
	/* rather than wait for the worker, compute the batches it has not started (the newest
	 * first: it takes the oldest), up to an ordered job, which is the worker's */
	while (q->queued && !q->job[(q->head + q->queued - 1) % ROWQ_JOBS].fn) {
		struct rowq_job j = take(q, true);

		run_taken(q, &j);
	}
	if (q->n) {
		pthread_mutex_unlock(&q->lock);
		spin(q, true);
		pthread_mutex_lock(&q->lock);
	}
	while (q->n) {
		q->waiting = true;
		pthread_cond_wait(&q->done, &q->lock);
	}
	q->waiting = false;
	pthread_mutex_unlock(&q->lock);
}

void pccx__sim_set_row_thread(pccx_sim *s, bool on)
{
	pccx__sim_rowq_stop(s);
	s->rowq_mode = on ? 1 : -1;
	s->rowq_tried = false;
}

void pccx__sim_rowq_stop(struct pccx_sim *s)
{
	struct sim_rowq *q = s->rowq;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	__atomic_store_n(&q->stop, true, __ATOMIC_RELEASE);
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->tid, NULL);    /* the worker computes what is left first */
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->done);
	pthread_mutex_destroy(&q->lock);
	free(q);
	s->rowq = NULL;
}

#endif /* PCCX_FREESTANDING */
