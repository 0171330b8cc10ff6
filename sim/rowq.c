// SPDX-License-Identifier: MIT
/*
 * The q4 row batches of the GEMV/GEMM lanes, computed on a second thread.
 *
 * A batch's results are only read when its instruction completes (eng_gemv.c), so the
 * simulation runs on while another thread computes them: a lane posts a batch of complete
 * rows and the simulator waits for every posted batch before it reads the results, frees
 * the activations, or lets host memory under the rows change. Each batch is one call of the
 * same row kernel on the same rows as before, so the bits do not depend on which thread
 * computed them or when. The thread is started with the first batch; on a single CPU (or if
 * it cannot be started) batches are computed where they are posted.
 */
#include <pthread.h>
#include <stdlib.h>

#include "kernels.h"
#include "kernels.h"
#include "pool.h"
#include "sim_int.h"

/* Batches posted and not computed yet, at most; a post beyond waits for room. */
#define ROWQ_JOBS 64u

struct rowq_job {
	sim_q4_rows_fn fn;
	const uint8_t *w;
	uint64_t row_bytes;
	uint32_t n, m;                 /* rows, activation rows */
	const struct pccx_kern_act *act;
	float *y;                      /* y[r * ystride + i]: row i for activation r */
	size_t ystride;
};

struct sim_rowq {
	pthread_mutex_t lock;
	pthread_cond_t work;           /* a batch posted, or stopping */
	pthread_cond_t done;           /* a batch computed */
	pthread_t tid;
	struct rowq_job job[ROWQ_JOBS];
	uint32_t head, n;              /* ring of n batches from head; job[head] may be running */
	bool stop;
};

static void job_run(const struct rowq_job *j)
{
	uint32_t r;

	for (r = 0; r < j->m; r++)
		j->fn(j->w, j->row_bytes, j->n, &j->act[r], j->y + (size_t)r * j->ystride);
}

static void *worker(void *arg)
{
	struct sim_rowq *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct rowq_job j;

		while (!q->n && !q->stop)
			pthread_cond_wait(&q->work, &q->lock);
		if (!q->n)
			break;
		j = q->job[q->head];
		pthread_mutex_unlock(&q->lock);
		job_run(&j);
		pthread_mutex_lock(&q->lock);
		q->head = (q->head + 1) % ROWQ_JOBS;
		/* release: the results are visible to whoever sees the count drop */
		__atomic_sub_fetch(&q->n, 1, __ATOMIC_RELEASE);
		pthread_cond_signal(&q->done);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* The worker, started on first use; NULL: compute on the caller's thread. */
static struct sim_rowq *rowq_get(struct pccx_sim *s)
{
	struct sim_rowq *q;

	if (s->rowq || s->rowq_off)
		return s->rowq;
	s->rowq_off = true;
	if (pccx__pool_ncpu() < 2 || !(q = calloc(1, sizeof(*q))))
		return NULL;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->done, NULL);
	if (pthread_create(&q->tid, NULL, worker, q)) {
		pthread_cond_destroy(&q->work);
		pthread_cond_destroy(&q->done);
		pthread_mutex_destroy(&q->lock);
		free(q);
		return NULL;
	}
	s->rowq_off = false;
	s->rowq = q;
	return q;
}

void pccx__sim_rowq_post(struct pccx_sim *s, const uint8_t *w, uint64_t row_bytes, uint32_t n,
			 const struct pccx_kern_act *act, uint32_t m, float *y, size_t ystride)
{
	struct rowq_job j = { s->q4_rows, w, row_bytes, n, m, act, y, ystride };
	struct sim_rowq *q = rowq_get(s);

	if (!q) {
		job_run(&j);
		return;
	}
	pthread_mutex_lock(&q->lock);
	while (q->n == ROWQ_JOBS)
		pthread_cond_wait(&q->done, &q->lock);
	q->job[(q->head + q->n) % ROWQ_JOBS] = j;
	if (__atomic_fetch_add(&q->n, 1, __ATOMIC_RELAXED) == 0)
		pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
}

void pccx__sim_rowq_wait(struct pccx_sim *s)
{
	struct sim_rowq *q = s->rowq;

	/* called for every beat the device writes: no lock when nothing is pending */
	if (!q || !__atomic_load_n(&q->n, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&q->lock);
	while (q->n)
		pthread_cond_wait(&q->done, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

void pccx__sim_set_row_thread(pccx_sim *s, bool on)
{
	pccx__sim_rowq_stop(s);
	s->rowq_off = !on;
}

void pccx__sim_rowq_stop(struct pccx_sim *s)
{
	struct sim_rowq *q = s->rowq;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->tid, NULL);    /* the worker computes what is left first */
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->done);
	pthread_mutex_destroy(&q->lock);
	free(q);
	s->rowq = NULL;
}
