// SPDX-License-Identifier: MIT
/*
 * npu_pool.c - the host threads one simulated NPU splits an instruction's
 * independent work over (npu_ops.h). The calling thread takes part: a pool
 * of n threads starts n - 1 workers once, which sleep on a condition
 * variable between tasks. A task is 'items' calls of fn(ctx, item,
 * worker); the threads take items from one atomic counter, so which
 * thread runs an item varies from run to run: every item must write
 * only its own outputs, and then the result does not depend on it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "npu_ops_internal.h"

struct npu_ops_pool {
	pthread_mutex_t lock;
	pthread_cond_t start;		/* a new task, or stop */
	pthread_cond_t done;		/* the last worker left the task */
	unsigned int threads;		/* including the caller */
	unsigned int started;		/* workers created */
	pthread_t *tids;
	/* The current task, written under 'lock' before 'gen' is bumped. */
	uint64_t gen;
	bool stop;
	npu_pool_fn fn;
	void *ctx;
	uint32_t items;
	atomic_uint next;
	unsigned int busy;		/* workers not yet done with 'gen' */
};

struct pool_worker {
	struct npu_ops_pool *pool;
	unsigned int id;
};

static void pool_take(struct npu_ops_pool *p, npu_pool_fn fn, void *ctx,
		      uint32_t items, unsigned int id)
{
	for (;;) {
		uint32_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);

		if (i >= items)
			return;
		fn(ctx, i, id);
	}
}

static void *pool_main(void *arg)
{
	struct pool_worker *w = arg;
	struct npu_ops_pool *p = w->pool;
	unsigned int id = w->id;
	uint64_t seen = 0;

	free(w);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->start, &p->lock);
		if (p->stop)
			break;
		seen = p->gen;

		npu_pool_fn fn = p->fn;
		void *ctx = p->ctx;
		uint32_t items = p->items;

		pthread_mutex_unlock(&p->lock);
		pool_take(p, fn, ctx, items, id);
		pthread_mutex_lock(&p->lock);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct npu_ops_pool *npu_ops_pool_create(unsigned int threads)
{
	struct npu_ops_pool *p;

	if (threads < 1 || threads > NPU_OPS_MAX_THREADS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->threads = threads;
	p->tids = calloc(threads, sizeof(*p->tids));
	if (!p->tids) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->start, NULL);
	pthread_cond_init(&p->done, NULL);
	atomic_init(&p->next, 0);
	for (unsigned int i = 1; i < threads; i++) {
		struct pool_worker *w = malloc(sizeof(*w));

		if (!w)
			goto fail;
		w->pool = p;
		w->id = i;
		if (pthread_create(&p->tids[i], NULL, pool_main, w)) {
			free(w);
			goto fail;
		}
		p->started++;
	}
	return p;
fail:
	npu_ops_pool_destroy(p);
	return NULL;
}

void npu_ops_pool_destroy(struct npu_ops_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->start);
	pthread_mutex_unlock(&p->lock);
	for (unsigned int i = 1; i <= p->started; i++)
		pthread_join(p->tids[i], NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->start);
	pthread_mutex_destroy(&p->lock);
	free(p->tids);
	free(p);
}

unsigned int npu_ops_pool_threads(const struct npu_ops_pool *p)
{
	return p ? p->threads : 1;
}

void npu_pool_run(struct npu_ops_pool *p, uint32_t items, npu_pool_fn fn,
		  void *ctx)
{
	if (!p || p->threads < 2 || items < 2) {
		for (uint32_t i = 0; i < items; i++)
			fn(ctx, i, 0);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->fn = fn;
	p->ctx = ctx;
	p->items = items;
	atomic_store_explicit(&p->next, 0, memory_order_relaxed);
	p->busy = p->threads - 1;
	p->gen++;
	pthread_cond_broadcast(&p->start);
	pthread_mutex_unlock(&p->lock);

	pool_take(p, fn, ctx, items, 0);

	pthread_mutex_lock(&p->lock);
	while (p->busy)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}
