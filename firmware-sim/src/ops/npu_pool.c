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
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "npu_ops_internal.h"

struct npu_ops_pool {
	pthread_mutex_t lock;
	pthread_cond_t start;		/* a new task, or stop */
	pthread_cond_t done;		/* the task's last item finished */
	unsigned int threads;		/* including the caller */
	unsigned int started;		/* workers created */
	pthread_t *tids;
	/* The current task, written under 'lock' before 'gen' is bumped. */
	uint32_t gen;
	bool stop;
	npu_pool_fn fn;
	void *ctx;
	uint32_t items;
	/*
	 * gen << 32 | the next item to take: a worker that wakes late, after
	 * the caller has finished the task alone and started the next, sees
	 * another generation and takes nothing, so nobody waits for a worker
	 * the host has not scheduled yet.
	 */
	_Atomic uint64_t claim;
	atomic_uint finished;		/* items of the task done */
	/*
	 * Waking a sleeping thread costs tens of microseconds (more in a VM,
	 * where it is an IPI), and one job's large instructions come in
	 * bursts: a worker spins a while on 'gen_pub' before it sleeps, and
	 * the caller signals only when one sleeps.
	 */
	atomic_uint gen_pub;		/* 'gen', readable without the lock */
	atomic_bool stop_pub;
	unsigned int sleepers;		/* workers in pthread_cond_wait */
};

/* Polls before sleeping: 256 pause loops, some 10 to 40 microseconds. */
#define POOL_SPIN	256

static inline void pool_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

struct pool_worker {
	struct npu_ops_pool *pool;
	unsigned int id;
};

/* Runs items of task 'gen' until none is left. */
static void pool_take(struct npu_ops_pool *p, uint32_t gen, npu_pool_fn fn,
		      void *ctx, uint32_t items, unsigned int id)
{
	uint64_t c = atomic_load_explicit(&p->claim, memory_order_relaxed);

	for (;;) {
		if ((uint32_t)(c >> 32) != gen || (uint32_t)c >= items)
			return;
		if (!atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1,
							   memory_order_acquire,
							   memory_order_relaxed))
			continue;
		fn(ctx, (uint32_t)c, id);
		if (atomic_fetch_add_explicit(&p->finished, 1, memory_order_acq_rel) + 1 ==
		    items) {
			pthread_mutex_lock(&p->lock);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->lock);
		}
		c = atomic_load_explicit(&p->claim, memory_order_relaxed);
	}
}

static void *pool_main(void *arg)
{
	struct pool_worker *w = arg;
	struct npu_ops_pool *p = w->pool;
	unsigned int id = w->id;
	uint32_t seen = 0;

	free(w);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (!p->stop && p->gen == seen) {
			pthread_mutex_unlock(&p->lock);
			for (int i = 0; i < POOL_SPIN; i++) {
				if (atomic_load_explicit(&p->gen_pub, memory_order_relaxed) != seen ||
				    atomic_load_explicit(&p->stop_pub, memory_order_relaxed))
					break;
				pool_relax();
			}
			pthread_mutex_lock(&p->lock);
			while (!p->stop && p->gen == seen) {
				p->sleepers++;
				pthread_cond_wait(&p->start, &p->lock);
				p->sleepers--;
			}
		}
		if (p->stop)
			break;
		seen = p->gen;

		npu_pool_fn fn = p->fn;
		void *ctx = p->ctx;
		uint32_t items = p->items;

		pthread_mutex_unlock(&p->lock);
		pool_take(p, seen, fn, ctx, items, id);
		pthread_mutex_lock(&p->lock);
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
	atomic_init(&p->claim, 0);
	atomic_init(&p->finished, 0);
	atomic_init(&p->gen_pub, 0);
	atomic_init(&p->stop_pub, false);
	/*
	 * Workers take no signals: a host such as QEMU handles its
	 * process-directed signals on threads of its own choosing.
	 */
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
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
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return p;
fail:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	npu_ops_pool_destroy(p);
	return NULL;
}

void npu_ops_pool_destroy(struct npu_ops_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	atomic_store_explicit(&p->stop_pub, true, memory_order_relaxed);
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
	uint32_t gen;

	if (!p || p->threads < 2 || items < 2) {
		for (uint32_t i = 0; i < items; i++)
			fn(ctx, i, 0);
		return;
	}
	pthread_mutex_lock(&p->lock);
	gen = ++p->gen;
	p->fn = fn;
	p->ctx = ctx;
	p->items = items;
	atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
	atomic_store_explicit(&p->claim, (uint64_t)gen << 32, memory_order_release);
	atomic_store_explicit(&p->gen_pub, gen, memory_order_relaxed);
	if (p->sleepers)
		pthread_cond_broadcast(&p->start);
	pthread_mutex_unlock(&p->lock);

	pool_take(p, gen, fn, ctx, items, 0);

	/* Only items a worker has taken can be outstanding: wait for those. */
	for (int i = 0; i < POOL_SPIN &&
	     atomic_load_explicit(&p->finished, memory_order_acquire) != items; i++)
		pool_relax();
	if (atomic_load_explicit(&p->finished, memory_order_acquire) != items) {
		pthread_mutex_lock(&p->lock);
		while (atomic_load_explicit(&p->finished, memory_order_acquire) != items)
			pthread_cond_wait(&p->done, &p->lock);
		pthread_mutex_unlock(&p->lock);
	}
}
