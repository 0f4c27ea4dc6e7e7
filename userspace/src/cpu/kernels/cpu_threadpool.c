// SPDX-License-Identifier: MIT
/*
 * cpu_threadpool.c - a fixed set of worker threads. A run splits its task
 * indices into one contiguous range per thread, in thread order: the
 * caller takes the first, worker i the (i + 1)-th. Consecutive ops that
 * order their tasks the same way (by image rows or pixels) thus hand
 * each thread the part of the tensor it wrote itself, still in its
 * core's cache: on these machines a line another core wrote reads 3 to 4
 * times slower than one's own. A thread works its range front to back
 * and, once done, steals the back half of what another has left
 * (dynamic balance). The caller works too and waits for the tasks to
 * finish, not for the workers to arrive.
 * Between runs the workers spin (yielding now and then) for about a
 * millisecond, so the ops of one run never wait for a wake-up, then sleep
 * on a condition variable, so an idle pool costs no CPU. A worker that
 * fell asleep on the CPU its waker now runs on is kept off that CPU as it
 * wakes (npu_pool_keep_off_my_cpu).
 *
 * Many sessions share one engine's workers through views: a view has its
 * own scratch, and a run on it takes the shared workers when they are
 * free, or runs on the calling thread alone when another view holds them
 * (two sessions on two cores then get a core each, instead of waiting).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_kernels_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#define npu_cpu_relax() __builtin_ia32_pause()
#else
#define npu_cpu_relax() ((void)0)
#endif

/* Polls before the caller sleeps waiting for the workers to finish. */
#define NPU_POOL_SPIN 2000
/*
 * How long an idle worker spins before it sleeps: longer than the gap
 * between two kernels of one run (an op that is not threaded, the
 * runtime's bookkeeping), so a run never pays a wake-up per op; short
 * enough that an idle engine costs nothing measurable.
 */
#define NPU_POOL_SPIN_NS 1000000L
/* An owner's claim takes 1 / this of its range's tasks left, at least one. */
#define NPU_POOL_CLAIM_DIV 4

/* One thread's share of the current run: tasks [begin, end). */
struct npu_pool_slot {
	/* begin in the low 32 bits, end in the high: one compare-and-swap
	 * serves the owner (from the front) and thieves (from the back). */
	_Alignas(64) _Atomic uint64_t range;
	atomic_int cpu;		/* a worker's CPU when it last went to sleep */
};

struct npu_threadpool {
	int threads;			/* including the caller */
	struct npu_threadpool *shared;	/* a view: whose workers it borrows */
	pthread_mutex_t run_lock;	/* held by whoever runs on the workers */
	pthread_t *workers;		/* threads - 1 of them */
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* new run or stop */
	pthread_cond_t done;		/* the last task of a run finished */
	/* The run's generation: the workers wait for it to change. */
	_Alignas(64) atomic_uint gen;
	/* Tasks of the current run done: a line of its own. */
	_Alignas(64) atomic_size_t finished;
	struct npu_pool_slot *slots;	/* one per thread, of the workers' pool */
	cpu_set_t cpus;			/* the CPUs the creating thread could use */

	/* The current run (written before its ranges are published) and the
	 * flags the spinning workers poll: read-mostly, their own line. */
	_Alignas(64) void (*fn)(void *ctx, size_t i);
	void (*fn_tid)(void *ctx, size_t i, int tid);
	void *ctx;
	atomic_size_t count;
	atomic_int sleepers;		/* workers waiting on 'wake' */
	atomic_bool stop;

	/* Kernel scratch kept across calls: fresh pages fault, slowly. */
	void *scratch;
	size_t scratch_size;

	/*
	 * Stats on (npu_threadpool_create_stats): where the threads' time goes. 'tstat' (on the
	 * pool that owns the workers, one slot per thread, under run_lock)
	 * holds the current run's task times; each run folds them into the
	 * 'stats' of the pool it was called on (a view or the pool itself,
	 * only touched by the thread using it).
	 */
	bool stats_on;
	struct npu_pool_tstat {
		uint64_t work_ns, max_ns, tasks;
		char pad[64 - 3 * sizeof(uint64_t)];
	} *tstat;
	struct npu_threadpool_stats stats;
};

/* CPU time of the calling thread: what a task cost, preemption aside. */
static uint64_t npu_pool_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct npu_pool_worker_arg {
	struct npu_threadpool *pool;
	int tid;
};

/* Run tasks [i, i + n) of the current run on thread tid. */
static void npu_pool_tasks(struct npu_threadpool *pool, size_t i, size_t n,
			   int tid)
{
	size_t end = i + n;
	struct npu_pool_tstat *ts = pool->tstat ? &pool->tstat[tid] : NULL;
	uint64_t c0 = ts ? npu_pool_cpu_ns() : 0;

	if (pool->fn_tid)
		for (; i < end; i++)
			pool->fn_tid(pool->ctx, i, tid);
	else
		for (; i < end; i++)
			pool->fn(pool->ctx, i);
	if (ts) {
		/* (A claim of n tasks counts as one for the longest task.) */
		uint64_t d = npu_pool_cpu_ns() - c0;

		ts->work_ns += d;
		ts->tasks += n;
		if (d > ts->max_ns)
			ts->max_ns = d;
	}
}

/*
 * Claim tasks from thread 'victim's range: its owner takes a share of
 * what is left from the front (a run of thousands of small tasks costs
 * tens of atomic operations, and the last claims, single tasks, still
 * balance the threads); a thief takes the back half.
 */
static bool npu_pool_claim(struct npu_threadpool *pool, int victim, bool own,
			   size_t *first, size_t *n)
{
	struct npu_pool_slot *slot = &pool->slots[victim];
	uint64_t r = atomic_load_explicit(&slot->range, memory_order_acquire);

	for (;;) {
		uint32_t begin = (uint32_t)r, end = (uint32_t)(r >> 32), k;
		uint64_t next;

		if (begin >= end)
			return false;
		if (own) {
			k = (end - begin) / NPU_POOL_CLAIM_DIV;
			if (!k)
				k = 1;
			next = (uint64_t)end << 32 | (begin + k);
			*first = begin;
		} else {
			k = (end - begin + 1) / 2;
			next = (uint64_t)(end - k) << 32 | begin;
			*first = end - k;
		}
		/* acq_rel: the run's fn, ctx and count were written before. */
		if (atomic_compare_exchange_weak_explicit(&slot->range, &r, next,
							   memory_order_acq_rel,
							   memory_order_acquire)) {
			*n = k;
			return true;
		}
	}
}

/*
 * Run tasks of the current run on thread tid until none is left: its
 * own range first, then others'. A worker that arrives late, even after
 * its run ended, claims nothing stale: every range of a finished run is
 * empty, and a range it wins of a newer run comes with that run's fn,
 * ctx and count (published before the ranges).
 */
static void npu_pool_work(struct npu_threadpool *pool, int tid)
{
	int threads = pool->threads;

	for (;;) {
		size_t first = 0, n = 0, count;
		int v = 0;

		if (!npu_pool_claim(pool, tid, true, &first, &n)) {
			for (v = 1; v < threads; v++)
				if (npu_pool_claim(pool, (tid + v) % threads, false,
						   &first, &n))
					break;
			if (v == threads)
				return;
		}
		/* Tasks first.. are ours: the run cannot end (nor fn change) before. */
		count = atomic_load_explicit(&pool->count, memory_order_relaxed);
		npu_pool_tasks(pool, first, n, tid);
		if (atomic_fetch_add_explicit(&pool->finished, n,
					      memory_order_acq_rel) + n == count) {
			pthread_mutex_lock(&pool->lock);
			pthread_cond_signal(&pool->done);
			pthread_mutex_unlock(&pool->lock);
		}
	}
}

static long long npu_pool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint32_t npu_pool_gen(struct npu_threadpool *pool)
{
	return atomic_load(&pool->gen);
}

static void *npu_pool_worker(void *p)
{
	struct npu_pool_worker_arg arg = *(struct npu_pool_worker_arg *)p;
	struct npu_threadpool *pool = arg.pool;
	uint32_t seen = 0, gen = 0;

	free(p);
	for (;;) {
		long long until = npu_pool_now_ns() + NPU_POOL_SPIN_NS;
		unsigned spin;

		for (spin = 1;; spin++) {
			gen = npu_pool_gen(pool);
			if (gen != seen || atomic_load(&pool->stop))
				break;
			npu_cpu_relax();
			if (spin & 255)
				continue;
			if (npu_pool_now_ns() > until)
				break;
			/* A core shared with the caller (or others): let it run. */
			sched_yield();
		}
		if (gen == seen && !atomic_load(&pool->stop)) {
			pthread_mutex_lock(&pool->lock);
			atomic_store(&pool->slots[arg.tid].cpu, sched_getcpu());
			atomic_fetch_add(&pool->sleepers, 1);
			while ((gen = npu_pool_gen(pool)) == seen &&
			       !atomic_load(&pool->stop))
				pthread_cond_wait(&pool->wake, &pool->lock);
			atomic_fetch_sub(&pool->sleepers, 1);
			pthread_mutex_unlock(&pool->lock);
		}
		if (atomic_load(&pool->stop))
			return NULL;
		seen = gen;
		npu_pool_work(pool, arg.tid);
	}
}

/* Zeroed, on its own cache lines (the struct's atomics are aligned). */
static struct npu_threadpool *npu_pool_alloc(void)
{
	size_t size = npu_round_up(sizeof(struct npu_threadpool), 64);
	struct npu_threadpool *pool = aligned_alloc(64, size);

	if (pool)
		memset(pool, 0, size);
	return pool;
}

struct npu_threadpool *npu_threadpool_create(int threads)
{
	return npu_threadpool_create_stats(threads, false);
}

struct npu_threadpool *npu_threadpool_create_stats(int threads, bool stats)
{
	struct npu_threadpool *pool;
	int i;

	if (threads < 1)
		return NULL;
	pool = npu_pool_alloc();
	if (!pool)
		return NULL;
	pool->threads = 1;
	pool->stats_on = stats;
	if (pool->stats_on) {
		pool->tstat = aligned_alloc(64, (size_t)threads * sizeof(*pool->tstat));
		if (!pool->tstat) {
			free(pool);
			return NULL;
		}
		memset(pool->tstat, 0, (size_t)threads * sizeof(*pool->tstat));
	}
	pool->slots = aligned_alloc(64, (size_t)threads * sizeof(*pool->slots));
	if (!pool->slots) {
		free(pool->tstat);
		free(pool);
		return NULL;
	}
	memset(pool->slots, 0, (size_t)threads * sizeof(*pool->slots));
	for (i = 0; i < threads; i++)
		atomic_store(&pool->slots[i].cpu, -1);
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
	if (sched_getaffinity(0, sizeof(pool->cpus), &pool->cpus))
		CPU_ZERO(&pool->cpus);
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
	view = npu_pool_alloc();
	if (!view)
		return NULL;
	view->threads = shared->threads;
	view->shared = shared;
	view->stats_on = shared->stats_on;
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
	free(pool->slots);
	free(pool->scratch);
	free(pool->tstat);
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

static uint64_t npu_pool_dispatch(struct npu_threadpool *pool,
				  void (*fn)(void *ctx, size_t i),
				  void (*fn_tid)(void *ctx, size_t i, int tid),
				  void *ctx, size_t count);

/* Stats of a run on the calling thread alone: all of it is serial. */
static void npu_pool_run_inline_counted(struct npu_threadpool *pool,
					void (*fn)(void *ctx, size_t i),
					void (*fn_tid)(void *ctx, size_t i, int tid),
					void *ctx, size_t count)
{
	uint64_t c0, d;

	if (!pool || !pool->stats_on) {
		npu_pool_run_inline(fn, fn_tid, ctx, count);
		return;
	}
	c0 = npu_pool_cpu_ns();
	npu_pool_run_inline(fn, fn_tid, ctx, count);
	d = npu_pool_cpu_ns() - c0;
	pool->stats.inline_runs++;
	pool->stats.tasks += count;
	pool->stats.work_ns += d;
	pool->stats.span_ns += d;
	pool->stats.serial_ns += d;
}

static void npu_pool_run(struct npu_threadpool *pool,
			 void (*fn)(void *ctx, size_t i),
			 void (*fn_tid)(void *ctx, size_t i, int tid),
			 void *ctx, size_t count)
{
	if (!count)
		return;
	/* (A task index must fit a range's 32 bits.) */
	if (!pool || pool->threads == 1 || count == 1 || count >= 0xffffffffu) {
		npu_pool_run_inline_counted(pool, fn, fn_tid, ctx, count);
		return;
	}
	/*
	 * The workers are borrowed only when nobody else has them: another
	 * view, the engine's own pool used directly (a compilation), or a
	 * run nested in one of their tasks. Otherwise this thread runs alone.
	 */
	{
		struct npu_threadpool *workers = pool->shared ? pool->shared : pool;
		long long t0 = 0;
		uint64_t wait;

		if (pthread_mutex_trylock(&workers->run_lock)) {
			npu_pool_run_inline_counted(pool, fn, fn_tid, ctx, count);
			return;
		}
		if (workers->tstat)
			t0 = npu_pool_now_ns();
		wait = npu_pool_dispatch(workers, fn, fn_tid, ctx, count);
		if (workers->tstat) {
			struct npu_threadpool_stats *st = &pool->stats;
			uint64_t work = 0, max = 0;
			int i;

			for (i = 0; i < workers->threads; i++) {
				struct npu_pool_tstat *ts = &workers->tstat[i];

				work += ts->work_ns;
				if (ts->max_ns > max)
					max = ts->max_ns;
				if (i)
					st->worker_tasks += ts->tasks;
				memset(ts, 0, sizeof(*ts));
			}
			st->runs++;
			st->tasks += count;
			st->work_ns += work;
			st->span_ns += work / (uint64_t)workers->threads > max ?
				       work / (uint64_t)workers->threads : max;
			st->wall_ns += (uint64_t)(npu_pool_now_ns() - t0);
			st->wait_ns += wait;
		}
		pthread_mutex_unlock(&workers->run_lock);
	}
}

/*
 * Before waking sleeping workers: one that went to sleep on the CPU this
 * thread now runs on may use every CPU but this one. The scheduler wakes
 * a thread on its last CPU when that one was idle, and after an idle
 * spell the caller has often just woken up there itself: the worker then
 * waits behind the caller, which keeps working, for a time slice or
 * until the load balancer moves one of them (measured here: a median of
 * 1.9 ms from wake-up to the worker's first task, against 80 us on
 * separate CPUs; rec at 2 threads with 30 ms of idle before each run saw
 * the worker do 20 % of its first ops' tasks instead of 50 %). A
 * sleeping thread's new mask applies as it wakes. Under the pool's lock.
 */
static void npu_pool_keep_off_my_cpu(struct npu_threadpool *pool)
{
	int me = sched_getcpu(), i;

	if (me < 0 || CPU_COUNT(&pool->cpus) < 2 || !CPU_ISSET(me, &pool->cpus))
		return;
	for (i = 1; i < pool->threads; i++) {
		cpu_set_t others = pool->cpus;

		if (atomic_load(&pool->slots[i].cpu) != me)
			continue;
		CPU_CLR(me, &others);
		/* Best effort: a worker that stays behind still works. */
		(void)pthread_setaffinity_np(pool->workers[i - 1], sizeof(others),
					     &others);
		atomic_store(&pool->slots[i].cpu, -1);
	}
}

/* Returns the time (stats on) the caller waited for others' tasks. */
static uint64_t npu_pool_dispatch(struct npu_threadpool *pool,
				  void (*fn)(void *ctx, size_t i),
				  void (*fn_tid)(void *ctx, size_t i, int tid),
				  void *ctx, size_t count)
{
	uint32_t gen = npu_pool_gen(pool) + 1;
	size_t threads = (size_t)pool->threads;
	long long t0;
	int spin;
	size_t i;

	/* Every range of the last run is empty: a late worker claims none. */
	pool->fn = fn;
	pool->fn_tid = fn_tid;
	pool->ctx = ctx;
	atomic_store_explicit(&pool->count, count, memory_order_relaxed);
	atomic_store_explicit(&pool->finished, 0, memory_order_relaxed);
	for (i = 0; i < threads; i++)
		atomic_store_explicit(&pool->slots[i].range,
				      (uint64_t)((i + 1) * count / threads) << 32 |
				      (i * count / threads), memory_order_release);
	/* Publish the run (seq_cst: ordered against the sleepers check). */
	atomic_store(&pool->gen, gen);
	if (atomic_load(&pool->sleepers)) {
		pthread_mutex_lock(&pool->lock);
		npu_pool_keep_off_my_cpu(pool);
		pthread_cond_broadcast(&pool->wake);
		pthread_mutex_unlock(&pool->lock);
	}

	npu_pool_work(pool, 0);
	t0 = pool->tstat ? npu_pool_now_ns() : 0;

	for (spin = 0; spin < NPU_POOL_SPIN; spin++) {
		if (atomic_load_explicit(&pool->finished, memory_order_acquire) ==
		    count)
			goto done;
		npu_cpu_relax();
	}
	pthread_mutex_lock(&pool->lock);
	while (atomic_load(&pool->finished) != count)
		pthread_cond_wait(&pool->done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
done:
	return pool->tstat ? (uint64_t)(npu_pool_now_ns() - t0) : 0;
}

bool npu_threadpool_stats_take(struct npu_threadpool *pool,
			       struct npu_threadpool_stats *st)
{
	if (!pool || !pool->stats_on)
		return false;
	*st = pool->stats;
	memset(&pool->stats, 0, sizeof(pool->stats));
	return true;
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

struct npu_pool_range {
	void (*fn)(void *ctx, size_t begin, size_t end);
	void *ctx;
	size_t n, pieces;
};

static void npu_pool_range_task(void *ctx, size_t i)
{
	const struct npu_pool_range *r = ctx;

	r->fn(r->ctx, i * r->n / r->pieces, (i + 1) * r->n / r->pieces);
}

void npu_threadpool_parallel_for(struct npu_threadpool *pool, size_t n,
				 size_t grain,
				 void (*fn)(void *ctx, size_t begin, size_t end),
				 void *ctx)
{
	struct npu_pool_range r = { .fn = fn, .ctx = ctx, .n = n };
	size_t threads = (size_t)npu_threadpool_size(pool);

	if (!n)
		return;
	if (!grain)
		grain = 1;
	r.pieces = n / grain;
	if (r.pieces > 4 * threads)
		r.pieces = 4 * threads;
	if (threads == 1 || r.pieces < 2) {
		fn(ctx, 0, n);
		return;
	}
	npu_threadpool_run(pool, npu_pool_range_task, &r, r.pieces);
}

struct npu_pool_planes {
	void (*fn)(void *ctx, size_t begin, size_t end);
	void *ctx;
	size_t planes, plane, pieces;
};

static void npu_pool_planes_task(void *ctx, size_t i)
{
	const struct npu_pool_planes *r = ctx;
	size_t lo = i * r->plane / r->pieces, hi = (i + 1) * r->plane / r->pieces;
	size_t k;

	for (k = 0; k < r->planes; k++)
		r->fn(r->ctx, k * r->plane + lo, k * r->plane + hi);
}

void npu_threadpool_parallel_for_planes(struct npu_threadpool *pool,
					size_t planes, size_t plane, size_t grain,
					void (*fn)(void *ctx, size_t begin, size_t end),
					void *ctx)
{
	struct npu_pool_planes r = {
		.fn = fn, .ctx = ctx, .planes = planes, .plane = plane,
	};
	size_t threads = (size_t)npu_threadpool_size(pool), n = planes * plane;

	if (!grain)
		grain = 1;
	/* Parts of a plane shorter than a few vectors: plain pieces. */
	if (threads == 1 || planes < 2 || plane < 64 * threads || n < 2 * grain) {
		npu_threadpool_parallel_for(pool, n, grain, fn, ctx);
		return;
	}
	r.pieces = n / grain;
	if (r.pieces > 4 * threads)
		r.pieces = 4 * threads;
	if (r.pieces > plane / 16)
		r.pieces = plane / 16;
	npu_threadpool_run(pool, npu_pool_planes_task, &r, r.pieces);
}
