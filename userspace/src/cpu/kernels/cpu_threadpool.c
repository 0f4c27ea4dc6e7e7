// SPDX-License-Identifier: MIT
/*
 * cpu_threadpool.c - a fixed set of worker threads. A run hands out task
 * indices from one atomic counter (dynamic balance); the caller works too.
 * Between runs the workers spin briefly, then sleep on a condition
 * variable, so an idle pool costs no CPU.
 *
 * Many sessions share one engine's workers through views: a view has its
 * own scratch, and a run on it takes the shared workers when they are
 * free, or runs on the calling thread alone when another view holds them
 * (two sessions on two cores then get a core each, instead of waiting).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu_kernels_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#define npu_cpu_relax() __builtin_ia32_pause()
#else
#define npu_cpu_relax() ((void)0)
#endif

/* Polls before sleeping: about the gap between two layers' kernels. */
#define NPU_POOL_SPIN 2000

struct npu_threadpool {
	int threads;			/* including the caller */
	struct npu_threadpool *shared;	/* a view: whose workers it borrows */
	pthread_mutex_t run_lock;	/* held by the view running on the workers */
	pthread_t *workers;		/* threads - 1 of them */
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* new run or stop */
	pthread_cond_t done;		/* last worker finished a run */
	_Atomic unsigned long generation; /* bumped per run (release) */
	atomic_bool stop;

	/* The current run; written before generation is bumped. */
	void (*fn)(void *ctx, size_t i);
	void (*fn_tid)(void *ctx, size_t i, int tid);
	void *ctx;
	size_t count;
	atomic_size_t next;
	atomic_int pending;		/* workers not yet done with the run */

	/* Kernel scratch kept across calls: fresh pages fault, slowly. */
	void *scratch;
	size_t scratch_size;
};

struct npu_pool_worker_arg {
	struct npu_threadpool *pool;
	int tid;
};

static void npu_pool_work(struct npu_threadpool *pool, int tid)
{
	size_t i;

	while ((i = atomic_fetch_add_explicit(&pool->next, 1,
					      memory_order_relaxed)) <
	       pool->count) {
		if (pool->fn_tid)
			pool->fn_tid(pool->ctx, i, tid);
		else
			pool->fn(pool->ctx, i);
	}
}

static void *npu_pool_worker(void *p)
{
	struct npu_pool_worker_arg arg = *(struct npu_pool_worker_arg *)p;
	struct npu_threadpool *pool = arg.pool;
	unsigned long seen = 0;

	free(p);
	for (;;) {
		unsigned long gen = 0;
		int spin;

		for (spin = 0; spin < NPU_POOL_SPIN; spin++) {
			gen = atomic_load_explicit(&pool->generation,
						   memory_order_acquire);
			if (gen != seen || atomic_load(&pool->stop))
				break;
			npu_cpu_relax();
		}
		if (gen == seen && !atomic_load(&pool->stop)) {
			pthread_mutex_lock(&pool->lock);
			while ((gen = atomic_load(&pool->generation)) == seen &&
			       !atomic_load(&pool->stop))
				pthread_cond_wait(&pool->wake, &pool->lock);
			pthread_mutex_unlock(&pool->lock);
		}
		if (atomic_load(&pool->stop))
			return NULL;
		seen = gen;
		npu_pool_work(pool, arg.tid);
		if (atomic_fetch_sub(&pool->pending, 1) == 1) {
			pthread_mutex_lock(&pool->lock);
			pthread_cond_signal(&pool->done);
			pthread_mutex_unlock(&pool->lock);
		}
	}
}

struct npu_threadpool *npu_threadpool_create(int threads)
{
	struct npu_threadpool *pool;
	int i;

	if (threads < 1)
		return NULL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->threads = 1;
	pthread_mutex_init(&pool->run_lock, NULL);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->wake, NULL);
	pthread_cond_init(&pool->done, NULL);
	if (threads > 1) {
		pool->workers = calloc((size_t)threads - 1,
				       sizeof(*pool->workers));
		if (!pool->workers)
			goto fail;
	}
	for (i = 1; i < threads; i++) {
		struct npu_pool_worker_arg *arg = malloc(sizeof(*arg));

		if (!arg)
			goto fail;
		arg->pool = pool;
		arg->tid = i;
		if (pthread_create(&pool->workers[i - 1], NULL,
				   npu_pool_worker, arg)) {
			free(arg);
			goto fail;
		}
		pool->threads++;
	}
	return pool;
fail:
	npu_threadpool_destroy(pool);
	return NULL;
}

struct npu_threadpool *npu_threadpool_create_view(struct npu_threadpool *shared)
{
	struct npu_threadpool *view;

	if (!shared || shared->shared)
		return NULL;
	view = calloc(1, sizeof(*view));
	if (!view)
		return NULL;
	view->threads = shared->threads;
	view->shared = shared;
	return view;
}

void npu_threadpool_destroy(struct npu_threadpool *pool)
{
	int i;

	if (!pool)
		return;
	if (pool->shared) {
		free(pool->scratch);
		free(pool);
		return;
	}
	pthread_mutex_lock(&pool->lock);
	atomic_store(&pool->stop, true);
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->threads - 1; i++)
		pthread_join(pool->workers[i], NULL);
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->wake);
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->run_lock);
	free(pool->workers);
	free(pool->scratch);
	free(pool);
}

int npu_threadpool_size(const struct npu_threadpool *pool)
{
	return pool ? pool->threads : 1;
}

static void npu_pool_run_inline(void (*fn)(void *ctx, size_t i),
				void (*fn_tid)(void *ctx, size_t i, int tid),
				void *ctx, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (fn_tid)
			fn_tid(ctx, i, 0);
		else
			fn(ctx, i);
	}
}

static void npu_pool_dispatch(struct npu_threadpool *pool,
			      void (*fn)(void *ctx, size_t i),
			      void (*fn_tid)(void *ctx, size_t i, int tid),
			      void *ctx, size_t count);

static void npu_pool_run(struct npu_threadpool *pool,
			 void (*fn)(void *ctx, size_t i),
			 void (*fn_tid)(void *ctx, size_t i, int tid),
			 void *ctx, size_t count)
{
	if (!count)
		return;
	if (!pool || pool->threads == 1 || count == 1) {
		npu_pool_run_inline(fn, fn_tid, ctx, count);
		return;
	}
	if (!pool->shared) {
		npu_pool_dispatch(pool, fn, fn_tid, ctx, count);
		return;
	}
	/* A view: borrow the workers if no other view has them. */
	if (pthread_mutex_trylock(&pool->shared->run_lock)) {
		npu_pool_run_inline(fn, fn_tid, ctx, count);
		return;
	}
	npu_pool_dispatch(pool->shared, fn, fn_tid, ctx, count);
	pthread_mutex_unlock(&pool->shared->run_lock);
}

static void npu_pool_dispatch(struct npu_threadpool *pool,
			      void (*fn)(void *ctx, size_t i),
			      void (*fn_tid)(void *ctx, size_t i, int tid),
			      void *ctx, size_t count)
{
	int spin;

	pool->fn = fn;
	pool->fn_tid = fn_tid;
	pool->ctx = ctx;
	pool->count = count;
	atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
	atomic_store_explicit(&pool->pending, pool->threads - 1,
			      memory_order_relaxed);
	pthread_mutex_lock(&pool->lock);
	atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);

	npu_pool_work(pool, 0);

	for (spin = 0; spin < NPU_POOL_SPIN; spin++) {
		if (!atomic_load_explicit(&pool->pending, memory_order_acquire))
			return;
		npu_cpu_relax();
	}
	pthread_mutex_lock(&pool->lock);
	while (atomic_load(&pool->pending))
		pthread_cond_wait(&pool->done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
}

void npu_threadpool_run(struct npu_threadpool *pool,
			void (*fn)(void *ctx, size_t i), void *ctx,
			size_t count)
{
	npu_pool_run(pool, fn, NULL, ctx, count);
}

void npu_threadpool_run_tid(struct npu_threadpool *pool,
			    void (*fn)(void *ctx, size_t i, int tid),
			    void *ctx, size_t count)
{
	npu_pool_run(pool, NULL, fn, ctx, count);
}

void *npu_threadpool_scratch(struct npu_threadpool *pool, size_t size)
{
	void *buf;

	if (!pool)
		return NULL;
	if (size <= pool->scratch_size)
		return pool->scratch;
	size = npu_round_up(size + size / 4, 4096);
	buf = aligned_alloc(64, size);
	if (!buf)
		return NULL;
	free(pool->scratch);
	pool->scratch = buf;
	pool->scratch_size = size;
	return buf;
}
