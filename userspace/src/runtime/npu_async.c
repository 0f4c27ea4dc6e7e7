// SPDX-License-Identifier: MIT
/*
 * npu_async.c - the engine's run workers (npu_session_run_async) and the
 * cancel object (npu_cancel_*).
 *
 * Async runs get threads of their own, not tasks of the engine's CPU pool:
 * a run's kernels split their loops over that pool, and a pool task that
 * ran a whole model would wait inside the pool for the pool (its runs are
 * not reentrant). A worker is to the pool what an application thread is:
 * its session's view borrows the pool's workers when they are free.
 *
 * The workers start with the first async run, take jobs from a bounded
 * FIFO, and stop when the engine's last reference goes. That may happen
 * on a worker itself (a callback destroying the last session of a
 * destroyed engine): that worker is detached, not joined, and the queue
 * lives until its last worker leaves (the references below).
 */
#include "runtime/npu_api.h"

#include <stdlib.h>
#include <string.h>

#define NPU_ASYNC_DEFAULT_QUEUE 256

struct npu_async_job {
	void (*fn)(void *arg);
	void *arg;
};

struct npu_async {
	atomic_int refs;		/* the engine's + one per running worker */
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a job queued, or stop */
	struct npu_async_job *ring;
	size_t cap, head, count;
	pthread_t *threads;
	int num_threads;
	bool stop;
};

static void async_unref(struct npu_async *a)
{
	if (atomic_fetch_sub(&a->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->work);
	free(a->ring);
	free(a->threads);
	free(a);
}

static void *worker(void *arg)
{
	struct npu_async *a = arg;

	for (;;) {
		struct npu_async_job job;

		pthread_mutex_lock(&a->lock);
		while (!a->count && !a->stop)
			pthread_cond_wait(&a->work, &a->lock);
		if (!a->count) {	/* stopping, and nothing left */
			pthread_mutex_unlock(&a->lock);
			break;
		}
		job = a->ring[a->head];
		a->head = (a->head + 1) % a->cap;
		a->count--;
		pthread_mutex_unlock(&a->lock);
		job.fn(job.arg);
	}
	async_unref(a);
	return NULL;
}

/* The engine's workers, started on first use (under e->lock). */
static npu_status async_start(struct npu_engine *e, struct npu_async **out)
{
	struct npu_async *a;
	int n = e->opts.async_threads > 0 ? e->opts.async_threads : e->threads, i;

	a = calloc(1, sizeof(*a));
	if (!a)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "npu_session_run_async: out of memory");
	a->cap = e->opts.async_queue ? e->opts.async_queue : NPU_ASYNC_DEFAULT_QUEUE;
	a->ring = calloc(a->cap, sizeof(*a->ring));
	a->threads = calloc((size_t)n, sizeof(*a->threads));
	if (!a->ring || !a->threads) {
		free(a->ring);
		free(a->threads);
		free(a);
		return npu_api_fail(NPU_ERR_NO_MEMORY, "npu_session_run_async: out of memory");
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	atomic_init(&a->refs, 1);
	for (i = 0; i < n; i++) {
		atomic_fetch_add(&a->refs, 1);
		if (pthread_create(&a->threads[i], NULL, worker, a)) {
			atomic_fetch_sub(&a->refs, 1);
			break;
		}
		a->num_threads++;
	}
	if (!a->num_threads) {
		async_unref(a);
		return npu_api_fail(NPU_ERR_NO_MEMORY,
				    "npu_session_run_async: cannot start a worker thread");
	}
	if (a->num_threads < n)
		npu_engine_log(e, NPU_LOG_WARNING, "async runs: started %d of %d worker threads",
			       a->num_threads, n);
	*out = a;
	return NPU_OK;
}

npu_status npu_async_submit(struct npu_engine *e, void (*fn)(void *arg), void *arg)
{
	struct npu_async *a;
	npu_status st = NPU_OK;

	pthread_mutex_lock(&e->lock);
	if (!e->async)
		st = async_start(e, &e->async);
	a = e->async;
	pthread_mutex_unlock(&e->lock);
	if (st)
		return st;
	pthread_mutex_lock(&a->lock);
	if (a->count == a->cap) {
		pthread_mutex_unlock(&a->lock);
		return npu_api_fail(NPU_ERR_BUSY,
				    "npu_session_run_async: the engine's queue holds %zu runs already (npu_engine_options.async_queue)",
				    a->cap);
	}
	a->ring[(a->head + a->count) % a->cap] = (struct npu_async_job){ fn, arg };
	a->count++;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	return NPU_OK;
}

void npu_async_shutdown(struct npu_async *a)
{
	pthread_t self = pthread_self();
	int i;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_broadcast(&a->work);
	pthread_mutex_unlock(&a->lock);
	for (i = 0; i < a->num_threads; i++) {
		if (pthread_equal(a->threads[i], self))
			pthread_detach(self);	/* it returns to its loop and leaves */
		else
			pthread_join(a->threads[i], NULL);
	}
	async_unref(a);
}

/* ---- Cancellation ---- */

NPU_API npu_status npu_cancel_create(struct npu_cancel **out)
{
	struct npu_cancel *c;

	if (!out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_cancel_create: out is NULL");
	c = calloc(1, sizeof(*c));
	if (!c) {
		*out = NULL;
		return npu_api_fail(NPU_ERR_NO_MEMORY, "npu_cancel_create: out of memory");
	}
	atomic_init(&c->triggered, 0);
	atomic_init(&c->polls, 0);
	*out = c;
	return NPU_OK;
}

/* Lock-free atomics only: callable from a signal handler. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "npu_cancel_trigger must be async-signal-safe");

NPU_API void npu_cancel_trigger(struct npu_cancel *c)
{
	if (c)
		atomic_store_explicit(&c->triggered, 1, memory_order_release);
}

NPU_API void npu_cancel_reset(struct npu_cancel *c)
{
	if (c)
		atomic_store_explicit(&c->triggered, 0, memory_order_release);
}

NPU_API int npu_cancel_is_triggered(const struct npu_cancel *c)
{
	return c && atomic_load_explicit(&((struct npu_cancel *)c)->triggered,
					 memory_order_acquire);
}

NPU_API void npu_cancel_destroy(struct npu_cancel *c)
{
	free(c);
}
