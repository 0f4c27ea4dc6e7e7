// SPDX-License-Identifier: MIT
/* npu_exec.c - executes a graph on the CPU (see npu_runtime.h). */
#include "runtime/npu_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/npu_alloc.h"
#include "cpu/kernels/cpu_kernels.h"
#include "compiler/arena.h"
#include "cpu/ops/cpu_ops.h"
#include "graph/npu_op_schema.h"
#include "compiler/compiler.h"	/* a compiled model's runs (NpuSegment state) */
#include "compiler/segment_rt.h"
#include "graph/npu_str.h"

struct rt_buffer {
	void *data;
	size_t cap;
};

/*
 * What every session of one graph shares, read-only once made: each
 * node's op definition and prepared state (packed weights), which nodes
 * infer shapes at run time, liveness, and the host arena layout.
 */
struct npu_exec_schedule {
	struct npu_graph *g;
	struct npu_cpu_options cpu;		/* what prepare() and the ops saw */
	const struct npu_op_def **defs;		/* per node */
	const struct npu_op_schema **schemas;	/* per node */
	bool *dynamic;				/* per node: infer at run time */
	size_t *last_use;			/* per value: last consuming node */
	/* All shapes static: every intermediate lives in one planned arena. */
	uint64_t *arena_off;			/* per value; NULL: reuse pool */
	struct npu_arena_stats mem;
	/* Most inputs or outputs of one node, or inputs of one subgraph. */
	size_t max_io;
	/* The schedules of the nodes' subgraphs (If branches, Loop bodies...). */
	struct npu_exec_sub {
		const struct npu_graph *body;
		struct npu_exec_schedule *schedule;
	} *subs;
	size_t num_subs;
};

struct npu_exec {
	const struct npu_exec_schedule *p;
	struct npu_exec_schedule *own_schedule;		/* made by this session */
	struct npu_graph *g;
	struct npu_threadpool *pool;
	bool own_pool;
	bool profile;
	void (*observe)(void *arg, const struct npu_node *node,
			const struct npu_tensor *const *outputs);
	void *observe_arg;
	bool observe_subgraphs;
	const char *trace_file;			/* opts->trace_file, borrowed */
	struct npu_compiled_run *run;		/* NPU segments' state, if any */
	bool own_run;				/* else the enclosing session's */
	void **node_states;			/* per node, ctx->state */
	/* Control flow: what its ops borrow, and a run state per subgraph. */
	struct npu_op_runtime rt;
	struct npu_exec_child {
		const struct npu_graph *body;
		struct npu_exec *exec;
	} *children;
	size_t num_children;
	const struct npu_op_def **defs;		/* p->defs */
	const struct npu_op_schema **schemas;	/* p->schemas */
	bool *dynamic;
	size_t *last_use;
	const struct npu_tensor **view;		/* per value: what nodes read */
	struct npu_tensor *owned;		/* per value: runtime tensors */
	size_t *owned_cap;			/* per value: buffer capacity */
	struct rt_buffer *free_bufs;		/* the reuse pool */
	size_t num_free, cap_free;
	double *node_ms;
	/* A pool with stats on (npu_engine_options.pool_stats): its stats
	 * per node (see npu_threadpool_stats_take), printed when the session
	 * ends. */
	struct npu_threadpool_stats *node_pool;
	size_t *pending_of;			/* per value: async producer + 1 */
	uint8_t *arena;				/* p->arena_off's memory */
	double *submit_ms;			/* per node: when an async op began */
	size_t inflight;			/* the async node in flight + 1, or 0 */
	int trace_fd;				/* trace_file open, or -1 */
	struct npu_cancel *cancel;		/* borrowed for a run, or NULL */
	/* A timed run (npu_exec_run_timed): its steps, made on first use. */
	bool timed, steps_valid;
	struct npu_exec_step *steps;		/* in the order they started */
	size_t num_steps;
	size_t *step_of;			/* per node: its step */
	uint64_t run_start_ns, run_end_ns;
	uint64_t runs;
	struct npu_op_stat *stats;
	size_t num_stats;
	/*
	 * IO binding (npu_exec_bind_outputs): nodes no chosen output needs,
	 * per value the caller tensor its producer writes into, and which
	 * values hold caller memory now (never returned to the pool).
	 */
	bool skipping;
	bool *skip;				/* per node */
	bool *needed;				/* per value, scratch */
	const struct npu_tensor **bind_of;	/* per value */
	bool *caller_owned;			/* per value */
	struct npu_exec_io iostat;		/* the last run */
	/*
	 * Per-node scratch of p->max_io entries each, so a node's input and
	 * output count has no fixed cap (an If capturing hundreds of outer
	 * values). One set per use: run_nodes, finish_node (called inside
	 * run_nodes), run-time inference and a subgraph's inputs.
	 */
	struct npu_exec_scratch {
		const struct npu_tensor **ins;
		struct npu_tensor **outs;
		struct npu_tensor **fin_outs;
		enum npu_dtype *dtypes;
		struct npu_shape *shapes;
		struct npu_value *tmp;
		struct npu_value **tmpp;
		const struct npu_tensor **sub_ins;
	} io;
};

/*
 * Op spans for the trace file (npu_exec_options.trace_file, the engine's
 * npu_engine_options.trace_file): one complete event per node, on the same
 * CLOCK_MONOTONIC timeline and in the same append-only JSON array as the
 * device layer's job spans (device/trace.c), so Perfetto shows CPU ops and
 * NPU jobs together. Best effort: a failed write turns tracing off.
 */
static void trace_append(struct npu_exec *s, const char *text, size_t len);

static void trace_open(struct npu_exec *s)
{
	const char *path = s->trace_file;
	char meta[160];
	int n;

	s->trace_fd = -1;
	if (!path || !*path)
		return;
	s->trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (s->trace_fd < 0)
		return;
	n = snprintf(meta, sizeof(meta),
		     "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":\"graph ops (host)\"}},\n",
		     (int)getpid());
	trace_append(s, meta, (size_t)n);
}

static void trace_append(struct npu_exec *s, const char *text, size_t len)
{
	struct stat st;

	if (s->trace_fd < 0 || flock(s->trace_fd, LOCK_EX))
		return;
	if ((fstat(s->trace_fd, &st) == 0 && st.st_size == 0 &&
	     write(s->trace_fd, "[\n", 2) != 2) ||
	    write(s->trace_fd, text, len) != (ssize_t)len) {
		flock(s->trace_fd, LOCK_UN);
		close(s->trace_fd);
		s->trace_fd = -1;
		return;
	}
	flock(s->trace_fd, LOCK_UN);
}

static void trace_node(struct npu_exec *s, const struct npu_node *node,
		       double start_ms, double end_ms)
{
	char buf[768];
	int n;

	if (s->trace_fd < 0)
		return;
	n = snprintf(buf, sizeof(buf),
		     "{\"name\":\"%.200s\",\"cat\":\"npu.op\",\"ph\":\"X\",\"pid\":%d,\"tid\":1,"
		     "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"node\":\"%.300s\"}},\n",
		     node->op_type, (int)getpid(), start_ms * 1e3, (end_ms - start_ms) * 1e3,
		     node->name);
	if (n > 0 && (size_t)n < sizeof(buf) && !strpbrk(node->name, "\"\\") &&
	    !strpbrk(node->op_type, "\"\\"))
		trace_append(s, buf, (size_t)n);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void npu_exec_set_cancel(struct npu_exec *s, struct npu_cancel *cancel)
{
	s->cancel = cancel;
}

/* Whether the run was cancelled; 'where' says what it was about to do. */
static npu_status check_cancel(struct npu_exec *s, const char *where, const char *what,
			       struct npu_error *err)
{
	if (!s->cancel)
		return NPU_OK;
	atomic_fetch_add_explicit(&s->cancel->polls, 1, memory_order_relaxed);
	if (!atomic_load_explicit(&s->cancel->triggered, memory_order_acquire))
		return NPU_OK;
	return npu_error_set(err, NPU_ERR_CANCELLED, "%s: run cancelled (npu_cancel_trigger) before %s%s",
			     s->g->source, where, what);
}

/* Profiling, the trace file and timed runs share one clock read per edge. */
static bool clocked(const struct npu_exec *s)
{
	return s->profile || s->trace_fd >= 0 || s->timed;
}

/* A timed run: node i begins its step at t0 (ns). */
static void step_begin(struct npu_exec *s, size_t i, uint64_t t0)
{
	struct npu_exec_step *st;

	if (!s->timed)
		return;
	st = &s->steps[s->num_steps];
	st->node = s->g->nodes[i];
	st->state = s->node_states ? s->node_states[i] : NULL;
	st->start_ns = t0;
	st->end_ns = t0;
	s->step_of[i] = s->num_steps++;
}

/* Best fit from the pool, else a new 64-byte aligned buffer. */
static void *buf_get(struct npu_exec *s, size_t need, size_t *cap)
{
	size_t i, best = SIZE_MAX;
	void *p;

	for (i = 0; i < s->num_free; i++)
		if (s->free_bufs[i].cap >= need &&
		    (best == SIZE_MAX || s->free_bufs[i].cap <
					  s->free_bufs[best].cap))
			best = i;
	if (best != SIZE_MAX) {
		p = s->free_bufs[best].data;
		*cap = s->free_bufs[best].cap;
		s->free_bufs[best] = s->free_bufs[--s->num_free];
		return p;
	}
	*cap = (need + 63) & ~(size_t)63;
	return npu_alloc_aligned(*cap);
}

static bool buf_put(struct npu_exec *s, void *data, size_t cap)
{
	if (!data)
		return true;
	if (s->num_free == s->cap_free) {
		size_t c = s->cap_free ? s->cap_free * 2 : 32;
		struct rt_buffer *nb = realloc(s->free_bufs, c * sizeof(*nb));

		if (!nb) {
			free(data);
			return false;
		}
		s->free_bufs = nb;
		s->cap_free = c;
	}
	s->free_bufs[s->num_free].data = data;
	s->free_bufs[s->num_free].cap = cap;
	s->num_free++;
	return true;
}

static void release_value(struct npu_exec *s, size_t vi)
{
	if (s->caller_owned && s->caller_owned[vi]) {	/* the caller's memory */
		s->caller_owned[vi] = false;
		s->owned[vi].data = NULL;
		s->view[vi] = NULL;
		return;
	}
	if (s->arena) {		/* planned: the arena slot is simply reused */
		s->owned[vi].data = NULL;
		s->view[vi] = NULL;
		return;
	}
	if (s->owned[vi].data) {
		buf_put(s, s->owned[vi].data, s->owned_cap[vi]);
		s->owned[vi].data = NULL;
		s->owned_cap[vi] = 0;
	}
	s->view[vi] = NULL;
}

/*
 * t (dtype, shape, nbytes set) is value vi: place it in the caller memory
 * bound to vi if that has exactly its type and shape.
 */
static bool in_caller_memory(struct npu_exec *s, size_t vi, struct npu_tensor *t)
{
	const struct npu_tensor *c = s->bind_of ? s->bind_of[vi] : NULL;
	int d;

	if (!c || c->dtype != t->dtype || c->nbytes != t->nbytes ||
	    c->shape.rank != t->shape.rank)
		return false;
	for (d = 0; d < t->shape.rank; d++)
		if (c->shape.dims[d] != t->shape.dims[d])
			return false;
	t->data = c->data;
	s->caller_owned[vi] = true;
	return true;
}

npu_status npu_exec_bind_outputs(struct npu_exec *s, const bool *wanted,
				 const struct npu_tensor *const *caller, struct npu_error *err)
{
	struct npu_graph *g = s->g;
	size_t i, j, k;

	s->skipping = false;
	if (!s->skip) {
		if (!wanted && !caller)
			return NPU_OK;
		s->skip = calloc(g->num_nodes + 1, sizeof(*s->skip));
		s->needed = calloc(g->num_values + 1, sizeof(*s->needed));
		s->bind_of = calloc(g->num_values + 1, sizeof(*s->bind_of));
		s->caller_owned = calloc(g->num_values + 1, sizeof(*s->caller_owned));
		if (!s->skip || !s->needed || !s->bind_of || !s->caller_owned) {
			free(s->skip);
			free(s->needed);
			free(s->bind_of);
			free(s->caller_owned);
			s->skip = NULL;
			s->needed = NULL;
			s->bind_of = NULL;
			s->caller_owned = NULL;
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		}
	}
	memset(s->bind_of, 0, g->num_values * sizeof(*s->bind_of));
	/* A value bound twice is written into the first; the session copies the rest. */
	for (i = 0; caller && i < g->num_outputs; i++)
		if (caller[i] && !s->bind_of[g->outputs[i]->index])
			s->bind_of[g->outputs[i]->index] = caller[i];
	memset(s->skip, 0, g->num_nodes * sizeof(*s->skip));
	if (!wanted)
		return NPU_OK;
	/* Backwards from the chosen outputs: a node runs if a needed value is its output. */
	memset(s->needed, 0, g->num_values * sizeof(*s->needed));
	for (i = 0; i < g->num_outputs; i++)
		if (wanted[i])
			s->needed[g->outputs[i]->index] = true;
	for (k = g->num_nodes; k-- > 0;) {
		const struct npu_node *n = g->nodes[k];
		bool need = n->num_outputs == 0;

		for (j = 0; j < n->num_outputs; j++)
			need |= n->outputs[j] && s->needed[n->outputs[j]->index];
		s->skip[k] = !need;
		s->skipping |= !need;
		for (j = 0; need && j < n->num_inputs; j++)
			if (n->inputs[j])
				s->needed[n->inputs[j]->index] = true;
	}
	return NPU_OK;
}

const struct npu_exec_io *npu_exec_io(const struct npu_exec *s)
{
	return &s->iostat;
}

static int cmp_stat(const void *a, const void *b)
{
	const struct npu_op_stat *x = a, *y = b;

	if (x->total_ms != y->total_ms)
		return x->total_ms < y->total_ms ? 1 : -1;
	if (x->nodes != y->nodes)
		return x->nodes < y->nodes ? 1 : -1;
	return strcmp(x->op_type, y->op_type);
}

/* Add the pool's stats since the last take to node i's (SIZE_MAX: drop). */
static void pool_stats_node(struct npu_exec *s, size_t i)
{
	struct npu_threadpool_stats t, *n;

	if (!npu_threadpool_stats_take(s->pool, &t) || i == SIZE_MAX)
		return;
	n = &s->node_pool[i];
	n->runs += t.runs;
	n->inline_runs += t.inline_runs;
	n->tasks += t.tasks;
	n->worker_tasks += t.worker_tasks;
	n->work_ns += t.work_ns;
	n->span_ns += t.span_ns;
	n->serial_ns += t.serial_ns;
	n->wall_ns += t.wall_ns;
	n->wait_ns += t.wait_ns;
}

/* "AxBxC" of value v (inputs of a node, for the stats). */
static const char *pool_stats_shape(const struct npu_value *v, char *buf, size_t n)
{
	size_t o = 0;
	int d;

	buf[0] = 0;
	if (!v)
		return buf;
	for (d = 0; d < v->shape.rank && o + 24 < n; d++)
		o += (size_t)snprintf(buf + o, n - o, "%s%lld", d ? "x" : "",
				      (long long)v->shape.dims[d]);
	return buf;
}

/*
 * Per node and run, in ms: wall (if profiled), the pool's work (CPU time
 * in tasks), span (the time with perfect balance), serial (inline runs),
 * the caller's wait for other threads, tasks per run and the share the
 * workers took. Heaviest span first.
 */
static void pool_stats_print(const struct npu_exec *s)
{
	size_t i, j, n = 0, *order;
	double runs = s->runs ? (double)s->runs : 1.0;
	struct npu_threadpool_stats tot = { 0 };
	double tot_ms = 0;

	order = malloc((s->g->num_nodes + 1) * sizeof(*order));
	if (!order)
		return;
	for (i = 0; i < s->g->num_nodes; i++)
		if (s->node_pool[i].runs || s->node_pool[i].inline_runs)
			order[n++] = i;
	for (i = 1; i < n; i++)	/* insertion sort: by span, descending */
		for (j = i; j > 0 && s->node_pool[order[j]].span_ns >
				     s->node_pool[order[j - 1]].span_ns; j--) {
			size_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	fprintf(stderr, "pool stats, %d thread(s), per run (ms): node op wall work span serial "
		"par_wall wait tasks/run worker%%\n", npu_threadpool_size(s->pool));
	for (i = 0; i < n; i++) {
		const struct npu_threadpool_stats *p = &s->node_pool[order[i]];
		const struct npu_node *node = s->g->nodes[order[i]];

		char s0[128], s1[128];

		fprintf(stderr, "  %-24.24s %-18.18s %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %6.1f %5.1f %s %s\n",
			node->name ? node->name : "?", node->op_type,
			s->node_ms[order[i]] / runs, (double)p->work_ns / 1e6 / runs,
			(double)p->span_ns / 1e6 / runs, (double)p->serial_ns / 1e6 / runs,
			(double)p->wall_ns / 1e6 / runs, (double)p->wait_ns / 1e6 / runs,
			(double)p->tasks / runs,
			p->tasks ? 100.0 * (double)p->worker_tasks / (double)p->tasks : 0.0,
			pool_stats_shape(node->num_inputs ? node->inputs[0] : NULL, s0, sizeof(s0)),
			pool_stats_shape(node->num_inputs > 1 ? node->inputs[1] : NULL, s1, sizeof(s1)));
		tot_ms += s->node_ms[order[i]];
		tot.work_ns += p->work_ns;
		tot.span_ns += p->span_ns;
		tot.serial_ns += p->serial_ns;
		tot.wall_ns += p->wall_ns;
		tot.wait_ns += p->wait_ns;
	}
	fprintf(stderr, "  %-24s %-18s %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f\n", "total", "",
		tot_ms / runs, (double)tot.work_ns / 1e6 / runs, (double)tot.span_ns / 1e6 / runs,
		(double)tot.serial_ns / 1e6 / runs, (double)tot.wall_ns / 1e6 / runs,
		(double)tot.wait_ns / 1e6 / runs);
	free(order);
}

static void build_stats(struct npu_exec *s)
{
	size_t i, j;

	s->num_stats = 0;
	for (i = 0; i < s->g->num_nodes; i++) {
		const struct npu_node *n = s->g->nodes[i];

		for (j = 0; j < s->num_stats; j++)
			if (!strcmp(s->stats[j].op_type, n->op_type))
				break;
		if (j == s->num_stats) {
			s->stats[j].op_type = n->op_type;
			s->stats[j].nodes = 0;
			s->stats[j].calls = 0;
			s->stats[j].total_ms = 0;
			s->num_stats++;
		}
		s->stats[j].nodes++;
		s->stats[j].calls += s->runs;
		s->stats[j].total_ms += s->node_ms[i];
	}
	qsort(s->stats, s->num_stats, sizeof(*s->stats), cmp_stat);
}

void npu_exec_destroy(struct npu_exec *s)
{
	size_t i;

	if (!s)
		return;
	if (s->owned && !s->arena)	/* arena tensors are freed with it */
		for (i = 0; i < s->g->num_values; i++)
			if (!s->caller_owned || !s->caller_owned[i])
				free(s->owned[i].data);
	for (i = 0; i < s->num_free; i++)
		free(s->free_bufs[i].data);
	free(s->free_bufs);
	if (s->trace_fd >= 0)
		close(s->trace_fd);
	if (s->node_pool)
		pool_stats_print(s);
	free(s->node_pool);
	if (s->own_pool)
		npu_threadpool_destroy(s->pool);
	if (s->own_run)
		npu_compiled_run_destroy(s->run);
	free(s->node_states);
	for (i = 0; i < s->num_children; i++)
		npu_exec_destroy(s->children[i].exec);
	free(s->children);
	npu_exec_schedule_destroy(s->own_schedule);
	free(s->view);
	free(s->owned);
	free(s->owned_cap);
	free(s->node_ms);
	free(s->pending_of);
	free(s->arena);
	free(s->submit_ms);
	free(s->steps);
	free(s->step_of);
	free(s->stats);
	free(s->io.ins);
	free(s->io.outs);
	free(s->io.fin_outs);
	free(s->io.dtypes);
	free(s->io.shapes);
	free(s->io.tmp);
	free(s->io.tmpp);
	free(s->io.sub_ins);
	free(s->skip);
	free(s->needed);
	free(s->bind_of);
	free(s->caller_owned);
	free(s);
}

void npu_exec_schedule_destroy(struct npu_exec_schedule *p)
{
	size_t i;

	if (!p)
		return;
	if (p->defs)
		for (i = 0; i < p->g->num_nodes; i++)
			if (p->defs[i] && p->defs[i]->release)
				p->defs[i]->release(p->g->nodes[i]);
	for (i = 0; i < p->num_subs; i++)
		npu_exec_schedule_destroy(p->subs[i].schedule);
	free(p->subs);
	free(p->defs);
	free(p->schemas);
	free(p->dynamic);
	free(p->last_use);
	free(p->arena_off);
	free(p);
}

/*
 * When no node's output shape depends on data, place every tensor the
 * nodes produce in one arena by liveness (compiler/arena.c, as for the
 * device arena): each lives from its node to its last reader; graph
 * outputs and never-read values (an asynchronous node may still write
 * them) to the end of the run. Otherwise tensors come from the reuse pool.
 */
/*
 * Concat in place: an input of a Concat whose slice of the output is one
 * contiguous range (every axis before the Concat axis has size 1), which
 * only that Concat reads last and a synchronous CPU node produces, is
 * placed inside the output instead of in its own slot: its producer
 * writes the output slice directly and the Concat skips that copy
 * (op_shape.c). The output then lives from its first such producer.
 * Returns how many inputs it placed; alias[v] = output index + 1 and
 * at[v] = byte offset in it.
 */
static size_t arena_concat_in_place(struct npu_exec_schedule *p,
				    struct npu_arena_item *items, size_t *alias,
				    uint64_t *at)
{
	struct npu_graph *g = p->g;
	size_t i, j, k, placed = 0;

	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];
		const struct npu_value *y = n->num_outputs == 1 ? n->outputs[0] : NULL;
		int64_t axis = npu_node_attr_int_or(n, "axis", 0);
		size_t es;
		uint64_t pos = 0;
		int d;

		if (!y || n->domain[0] || strcmp(n->op_type, "Concat") ||
		    y->dtype == NPU_DTYPE_STRING || alias[y->index] ||
		    !(es = npu_dtype_size(y->dtype)))
			continue;
		if (axis < 0)
			axis += y->shape.rank;
		if (axis < 0 || axis >= y->shape.rank)
			continue;
		for (d = 0; d < axis && y->shape.dims[d] == 1; d++)
			;
		if (d < axis)
			continue;
		for (j = 0; j < n->num_inputs; j++) {
			const struct npu_value *v = n->inputs[j];
			uint64_t bytes = v ? items[v->index].size : 0;
			size_t uses = 0, pi;
			bool ok;

			if (!v)
				continue;
			for (k = 0; k < n->num_inputs; k++)
				uses += n->inputs[k] == v;
			for (pi = 0; v->producer && pi < i && g->nodes[pi] != v->producer; pi++)
				;
			ok = v->producer && pi < i && uses == 1 && !v->constant &&
			     !v->is_graph_input && !v->is_graph_output &&
			     p->last_use[v->index] == i && v->dtype == y->dtype &&
			     !p->defs[pi]->submit && !alias[v->index] &&
			     bytes && pos % 64 == 0;
			/* An input that is itself a Concat's output keeps its copy. */
			for (k = 0; ok && k < g->num_values; k++)
				ok = alias[k] != v->index + 1;
			if (ok) {
				alias[v->index] = y->index + 1;
				at[v->index] = pos;
				items[v->index].size = 0;
				if (items[y->index].first_step > pi)
					items[y->index].first_step = (uint32_t)pi;
				placed++;
			}
			pos += (uint64_t)npu_shape_numel(&v->shape) * es;
		}
	}
	return placed;
}

static npu_status layout_arena(struct npu_exec_schedule *p, struct npu_error *err)
{
	struct npu_graph *g = p->g;
	struct npu_arena_item *items;
	size_t *alias;
	uint64_t *at;
	size_t i, j;

	for (i = 0; i < g->num_nodes; i++)
		if (p->dynamic[i])
			return NPU_OK;
	items = calloc(g->num_values + 1, sizeof(*items));
	alias = calloc(g->num_values + 1, sizeof(*alias));
	at = calloc(g->num_values + 1, sizeof(*at));
	p->arena_off = calloc(g->num_values + 1, sizeof(*p->arena_off));
	if (!items || !alias || !at || !p->arena_off) {
		free(items);
		free(alias);
		free(at);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < g->num_nodes; i++) {
		for (j = 0; j < g->nodes[i]->num_outputs; j++) {
			const struct npu_value *v = g->nodes[i]->outputs[j];
			size_t last;

			if (!v)
				continue;
			last = p->last_use[v->index];
			items[v->index].size = (uint64_t)npu_shape_numel(&v->shape) *
					       npu_dtype_size(v->dtype);
			items[v->index].first_step = (uint32_t)i;
			items[v->index].last_step = (uint32_t)(v->is_graph_output || last == SIZE_MAX ?
							       g->num_nodes : last);
		}
	}
	arena_concat_in_place(p, items, alias, at);
	if (npu_arena_layout(items, g->num_values, 64, &p->mem)) {
		free(items);
		free(alias);
		free(at);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < g->num_values; i++)
		p->arena_off[i] = items[i].offset;
	for (i = 0; i < g->num_values; i++)
		if (alias[i])
			p->arena_off[i] = p->arena_off[alias[i] - 1] + at[i];
	free(items);
	free(alias);
	free(at);
	return NPU_OK;
}

void npu_exec_schedule_memory(const struct npu_exec_schedule *p, bool *planned,
			      struct npu_arena_stats *stats)
{
	*planned = p->arena_off != NULL;
	*stats = p->mem;
}

void npu_exec_memory(const struct npu_exec *s, bool *planned,
			struct npu_arena_stats *stats)
{
	npu_exec_schedule_memory(s->p, planned, stats);
}

/* Every subgraph attribute gets its schedule now, once, shared by the sessions. */
static npu_status schedule_subgraphs(struct npu_exec_schedule *p, struct npu_error *err)
{
	size_t i, a, n = 0;
	npu_status st;

	for (i = 0; i < p->g->num_nodes; i++)
		for (a = 0; a < p->g->nodes[i]->num_attrs; a++)
			n += p->g->nodes[i]->attrs[a].type == NPU_ATTR_GRAPH &&
			     npu_node_subgraphs_open(p->g, p->g->nodes[i]);
	if (!n)
		return NPU_OK;
	p->subs = calloc(n, sizeof(*p->subs));
	if (!p->subs)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < p->g->num_nodes; i++) {
		const struct npu_node *node = p->g->nodes[i];

		for (a = 0; a < node->num_attrs; a++) {
			if (node->attrs[a].type != NPU_ATTR_GRAPH || !npu_node_subgraphs_open(p->g, node))
				continue;
			st = npu_exec_schedule_create_with(node->attrs[a].g, &p->cpu,
							   &p->subs[p->num_subs].schedule, err);
			if (st != NPU_OK)
				return st;
			p->subs[p->num_subs++].body = node->attrs[a].g;
			if (node->attrs[a].g->num_inputs > p->max_io)
				p->max_io = node->attrs[a].g->num_inputs;
		}
	}
	return NPU_OK;
}

const struct npu_cpu_options *npu_exec_schedule_cpu(const struct npu_exec_schedule *p)
{
	return &p->cpu;
}

npu_status npu_exec_schedule_create(struct npu_graph *g, struct npu_exec_schedule **out,
				    struct npu_error *err)
{
	return npu_exec_schedule_create_with(g, NULL, out, err);
}

npu_status npu_exec_schedule_create_with(struct npu_graph *g, const struct npu_cpu_options *cpu,
					 struct npu_exec_schedule **out, struct npu_error *err)
{
	struct npu_exec_schedule *p;
	size_t i, j, nn = g->num_nodes, nv = g->num_values;
	char label[300];
	npu_status st;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	p->g = g;
	if (cpu)
		p->cpu = *cpu;
	p->defs = calloc(nn + 1, sizeof(*p->defs));
	p->schemas = calloc(nn + 1, sizeof(*p->schemas));
	p->dynamic = calloc(nn + 1, sizeof(*p->dynamic));
	p->last_use = calloc(nv + 1, sizeof(*p->last_use));
	if (!p->defs || !p->schemas || !p->dynamic || !p->last_use) {
		npu_exec_schedule_destroy(p);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < nv; i++)
		p->last_use[i] = SIZE_MAX;
	for (i = 0; i < nn; i++) {
		struct npu_node *node = g->nodes[i];

		if (node->num_inputs > p->max_io)
			p->max_io = node->num_inputs;
		if (node->num_outputs > p->max_io)
			p->max_io = node->num_outputs;
		p->schemas[i] = npu_node_schema(g, node);
		/* Custom ops, a backend's kernels (NPU segments), else the CPU's. */
		p->defs[i] = p->schemas[i] ? npu_kernel_find(g, node) : NULL;
		if (!p->defs[i]) {
			bool described = p->schemas[i] != NULL;

			npu_exec_schedule_destroy(p);
			st = npu_cpu_ops_check(err);
			if (st != NPU_OK)
				return st;
			if (described)	/* the graph knows the op; nothing here runs it */
				return npu_error_set(err, NPU_ERR_UNSUPPORTED,
					"%s: %s: no CPU kernel for op '%s%s%s' (opset %d)",
					g->source, npu_node_label(g, node, label, sizeof(label)),
					node->domain, node->domain[0] ? "." : "",
					node->op_type, node->opset);
			return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				"%s: %s: unsupported op '%s' (opset %d)",
				g->source, npu_node_label(g, node, label,
							  sizeof(label)),
				node->op_type, node->opset);
		}
		for (j = 0; j < node->num_inputs; j++)
			if (node->inputs[j])
				p->last_use[node->inputs[j]->index] = i;
		for (j = 0; j < node->num_outputs; j++) {
			const struct npu_value *v = node->outputs[j];

			if (v && (v->shape.rank < 0 ||
				  npu_shape_numel(&v->shape) < 0 ||
				  v->dtype == NPU_DTYPE_STRING))	/* size depends on the text */
				p->dynamic[i] = true;
		}
		if (p->schemas[i]->dynamic_outputs)
			p->dynamic[i] = true;	/* shapes known only by running it */
	}
	st = schedule_subgraphs(p, err);
	if (st != NPU_OK) {
		npu_exec_schedule_destroy(p);
		return st;
	}
	for (i = 0; i < nn; i++) {
		if (!p->defs[i]->prepare)
			continue;
		st = p->defs[i]->prepare(p->defs[i], g->nodes[i], &p->cpu, err);
		if (st != NPU_OK) {
			/* Only nodes before i were prepared. */
			for (j = i; j < nn; j++)
				p->defs[j] = NULL;
			npu_graph_error_context(g, g->nodes[i], err);
			npu_exec_schedule_destroy(p);
			return st;
		}
	}
	st = layout_arena(p, err);
	if (st != NPU_OK) {
		npu_exec_schedule_destroy(p);
		return st;
	}
	*out = p;
	return NPU_OK;
}

/* ---- Control flow: what If / Loop / Scan borrow (cpu_ops.h) ---- */

static npu_status rt_alloc_bytes(struct npu_op_ctx *ctx, size_t index, enum npu_dtype dtype,
				 const struct npu_shape *shape, size_t nbytes)
{
	struct npu_exec *s = ctx->rt->arg;
	const struct npu_value *v = ctx->node->outputs[index];
	struct npu_tensor *t;
	int64_t n = npu_shape_numel(shape);
	char label[300];

	if (!v)
		return NPU_OK;
	if (n < 0 || shape->rank < 0 || shape->rank > NPU_MAX_RANK)
		return npu_error_set(ctx->err, NPU_ERR_INTERNAL, "%s: %s: output '%s' given no concrete shape",
				     s->g->source, npu_node_label(s->g, ctx->node, label, sizeof(label)),
				     v->name);
	t = &s->owned[v->index];
	if (t->data)
		release_value(s, v->index);
	t->dtype = dtype;
	t->shape = *shape;
	t->nbytes = nbytes;
	t->data = NULL;
	if (t->nbytes && !in_caller_memory(s, v->index, t))
		t->data = buf_get(s, t->nbytes, &s->owned_cap[v->index]);
	if (t->nbytes && !t->data)
		return npu_error_set(ctx->err, NPU_ERR_NO_MEMORY,
				     "%s: %s: out of memory for output '%s' (%zu bytes)", s->g->source,
				     npu_node_label(s->g, ctx->node, label, sizeof(label)), v->name,
				     t->nbytes);
	s->view[v->index] = t;
	return NPU_OK;
}

static npu_status rt_alloc_output(struct npu_op_ctx *ctx, size_t index, enum npu_dtype dtype,
				  const struct npu_shape *shape)
{
	struct npu_exec *s = ctx->rt->arg;
	int64_t n = npu_shape_numel(shape);
	size_t esize = npu_dtype_size(dtype);
	char label[300];

	if (ctx->node->outputs[index] && (n < 0 || !esize))
		return npu_error_set(ctx->err, NPU_ERR_INTERNAL, "%s: %s: output '%s' given no concrete shape",
				     s->g->source, npu_node_label(s->g, ctx->node, label, sizeof(label)),
				     ctx->node->outputs[index]->name);
	return rt_alloc_bytes(ctx, index, dtype, shape, n < 0 ? 0 : (size_t)n * esize);
}

static npu_status rt_run(struct npu_op_ctx *ctx, const struct npu_graph *body,
			 const struct npu_tensor *const *inputs, const struct npu_tensor **outputs)
{
	struct npu_exec *s = ctx->rt->arg;
	const struct npu_node *node = ctx->node;
	size_t declared = node->num_inputs - node->num_implicit_inputs;
	size_t formal = body->num_inputs - body->num_captures, i;
	const struct npu_tensor **all = s->io.sub_ins;
	struct npu_exec *child = NULL;
	npu_status st;

	if (body->num_inputs > s->p->max_io)
		return npu_error_set(ctx->err, NPU_ERR_INTERNAL, "%s: a subgraph that was never planned",
				     s->g->source);
	for (i = 0; i < s->num_children; i++)
		if (s->children[i].body == body)
			child = s->children[i].exec;
	if (!child) {
		struct npu_exec_options eo = { .pool = s->pool, .threads = 1, .profile = s->profile,
					       .segments_run = s->run, .trace_file = s->trace_file };
		struct npu_exec_child *c;

		for (i = 0; i < s->p->num_subs; i++)
			if (s->p->subs[i].body == body)
				eo.schedule = s->p->subs[i].schedule;
		if (!eo.schedule)
			return npu_error_set(ctx->err, NPU_ERR_INTERNAL, "%s: a subgraph that was never planned",
					     s->g->source);
		if (s->observe_subgraphs) {
			eo.observe = s->observe;
			eo.observe_arg = s->observe_arg;
			eo.observe_subgraphs = true;
		}
		c = realloc(s->children, (s->num_children + 1) * sizeof(*c));
		if (!c)
			return npu_error_set(ctx->err, NPU_ERR_NO_MEMORY, "out of memory");
		s->children = c;
		st = npu_exec_create((struct npu_graph *)body, &eo, &child, ctx->err);
		if (st != NPU_OK)
			return st;
		c[s->num_children].body = body;
		c[s->num_children++].exec = child;
	}
	/* Every iteration of a Loop or Scan, every If branch taken. */
	child->cancel = s->cancel;
	if (s->cancel) {
		char label[300];

		st = check_cancel(s, "a subgraph run of ",
				  npu_node_label(s->g, node, label, sizeof(label)), ctx->err);
		if (st != NPU_OK)
			return st;
	}
	for (i = 0; i < body->num_inputs; i++)
		all[i] = i < formal ? inputs[i] : ctx->inputs[declared + body->capture_slot[i - formal]];
	if (s->observe && s->observe_subgraphs) {
		/* What the body reads this time: calibration ranges it. */
		struct npu_node in = { .name = "", .op_type = "", .domain = "",
				       .outputs = body->inputs, .num_outputs = body->num_inputs };

		s->observe(s->observe_arg, &in, all);
	}
	st = npu_exec_run(child, all, ctx->err);
	if (st == NPU_ERR_CANCELLED) {
		/* Cancelled at a body node: say whose body, level by level. */
		char label[300];
		size_t len = strlen(ctx->err->msg);

		snprintf(ctx->err->msg + len, sizeof(ctx->err->msg) - len, ", in a subgraph of %s",
			 npu_node_label(s->g, node, label, sizeof(label)));
	}
	for (i = 0; st == NPU_OK && i < body->num_outputs; i++)
		outputs[i] = npu_exec_output(child, i);
	return st;
}

/*
 * A graph compiled for an NPU has NpuSegment nodes: this session gets its
 * own run of them (device arena, command streams), so sessions on other
 * threads never share run state.
 */
/* The compiled model of g's NpuSegment nodes, its subgraphs' included. */
static struct npu_compiled *compiled_in(const struct npu_graph *g)
{
	struct npu_compiled *c = NULL;
	size_t i, a;

	for (i = 0; i < g->num_nodes && !c; i++) {
		c = npu_segment_node_compiled(g->nodes[i]);
		for (a = 0; a < g->nodes[i]->num_attrs && !c; a++)
			if (g->nodes[i]->attrs[a].type == NPU_ATTR_GRAPH && g->nodes[i]->attrs[a].g)
				c = compiled_in(g->nodes[i]->attrs[a].g);
	}
	return c;
}

static npu_status bind_segments(struct npu_exec *s, struct npu_compiled_run *shared,
				size_t replica, const size_t *seg_replicas,
				struct npu_error *err)
{
	struct npu_compiled *c = shared ? NULL : compiled_in(s->g);
	size_t i;
	npu_status st;

	/* A subgraph's segments run in the enclosing session's run. */
	s->run = shared;
	if (!shared && !c)
		return NPU_OK;
	s->node_states = calloc(s->g->num_nodes + 1, sizeof(*s->node_states));
	if (!s->node_states)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	if (!shared) {
		st = npu_compiled_run_create(c, replica, seg_replicas, &s->run, err);
		if (st != NPU_OK)
			return st;
		s->own_run = true;
	}
	for (i = 0; i < s->g->num_nodes; i++)
		s->node_states[i] = npu_compiled_run_node_state(s->run, s->g->nodes[i]);
	return NPU_OK;
}

npu_status npu_exec_create(struct npu_graph *g,
			      const struct npu_exec_options *opts,
			      struct npu_exec **out, struct npu_error *err)
{
	struct npu_exec *s;
	size_t nn = g->num_nodes, nv = g->num_values;
	int threads = opts ? opts->threads : 0;
	npu_status st;

	*out = NULL;
	if (opts && opts->schedule && opts->schedule->g != g)
		return npu_error_set(err, NPU_ERR_INTERNAL,
				     "session: the execution schedule is of another graph");
	s = calloc(1, sizeof(*s));
	if (!s)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	s->g = g;
	s->trace_fd = -1;
	if (opts && opts->schedule) {
		s->p = opts->schedule;
	} else {
		st = npu_exec_schedule_create_with(g, opts ? opts->cpu : NULL, &s->own_schedule, err);
		if (st != NPU_OK) {
			npu_exec_destroy(s);
			return st;
		}
		s->p = s->own_schedule;
	}
	s->defs = s->p->defs;
	s->schemas = s->p->schemas;
	s->dynamic = s->p->dynamic;
	s->last_use = s->p->last_use;
	s->rt.alloc_output = rt_alloc_output;
	s->rt.alloc_bytes = rt_alloc_bytes;
	s->rt.run = rt_run;
	s->rt.arg = s;
	s->profile = opts && opts->profile;
	s->trace_file = opts ? opts->trace_file : NULL;
	trace_open(s);
	if (opts) {
		s->observe = opts->observe;
		s->observe_arg = opts->observe_arg;
		s->observe_subgraphs = opts->observe_subgraphs;
	}
	s->node_ms = calloc(nn + 1, sizeof(*s->node_ms));
	s->pending_of = calloc(nv + 1, sizeof(*s->pending_of));
	s->submit_ms = calloc(nn + 1, sizeof(*s->submit_ms));
	s->stats = calloc(nn + 1, sizeof(*s->stats));
	s->view = calloc(nv + 1, sizeof(*s->view));
	s->owned = calloc(nv + 1, sizeof(*s->owned));
	s->owned_cap = calloc(nv + 1, sizeof(*s->owned_cap));
	{
		size_t n = s->p->max_io + 1;

		s->io.ins = calloc(n, sizeof(*s->io.ins));
		s->io.outs = calloc(n, sizeof(*s->io.outs));
		s->io.fin_outs = calloc(n, sizeof(*s->io.fin_outs));
		s->io.dtypes = calloc(n, sizeof(*s->io.dtypes));
		s->io.shapes = calloc(n, sizeof(*s->io.shapes));
		s->io.tmp = calloc(n, sizeof(*s->io.tmp));
		s->io.tmpp = calloc(n, sizeof(*s->io.tmpp));
		s->io.sub_ins = calloc(n, sizeof(*s->io.sub_ins));
	}
	if (!s->node_ms || !s->stats || !s->view || !s->owned || !s->owned_cap ||
	    !s->pending_of || !s->submit_ms || !s->io.ins || !s->io.outs || !s->io.fin_outs ||
	    !s->io.dtypes || !s->io.shapes || !s->io.tmp || !s->io.tmpp || !s->io.sub_ins) {
		npu_exec_destroy(s);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	if (opts && opts->pool) {
		s->pool = opts->pool;
	} else {
		if (threads <= 0) {
			long n = sysconf(_SC_NPROCESSORS_ONLN);

			threads = n > 0 ? (int)n : 1;
		}
		/* One thread too: the pool keeps the kernels' scratch across runs. */
		s->pool = npu_threadpool_create(threads);
		s->own_pool = true;
		if (!s->pool) {
			npu_exec_destroy(s);
			return npu_error_set(err, NPU_ERR_NO_MEMORY,
					     "cannot create %d threads", threads);
		}
	}
	{
		struct npu_threadpool_stats t;

		if (npu_threadpool_stats_take(s->pool, &t))
			s->node_pool = calloc(nn + 1, sizeof(*s->node_pool));
	}
	if (s->p->arena_off) {
		uint64_t bytes = s->p->mem.arena_bytes;

		s->arena = bytes <= SIZE_MAX ? npu_alloc_aligned((size_t)bytes) : NULL;
		if (!s->arena) {
			npu_exec_destroy(s);
			return npu_error_set(err, NPU_ERR_NO_MEMORY,
					     "%s: out of memory for a %llu-byte tensor arena",
					     g->source, (unsigned long long)bytes);
		}
	}
	st = bind_segments(s, opts ? opts->segments_run : NULL, opts ? opts->device_replica : 0,
			   opts ? opts->segment_replicas : NULL, err);
	if (st != NPU_OK) {
		npu_exec_destroy(s);
		return st;
	}
	build_stats(s);
	*out = s;
	return NPU_OK;
}

const struct npu_compiled_run *npu_exec_compiled_run(const struct npu_exec *s)
{
	return s->run;
}

/* Infer a node's output shapes from the actual input tensors. */
static npu_status infer_at_run_time(struct npu_exec *s, size_t ni,
				    const struct npu_tensor *const *ins,
				    enum npu_dtype *dtypes,
				    struct npu_shape *shapes,
				    struct npu_error *err)
{
	struct npu_node *node = s->g->nodes[ni], copy = *node;
	struct npu_value *tmp = s->io.tmp, **tmpp = s->io.tmpp;
	struct npu_infer_ctx ctx;
	char label[300], sbuf[160];
	size_t j;
	npu_status st;

	for (j = 0; j < node->num_inputs; j++) {
		tmpp[j] = NULL;
		if (!node->inputs[j])
			continue;
		tmp[j] = *node->inputs[j];
		tmp[j].dtype = ins[j]->dtype;
		tmp[j].shape = ins[j]->shape;
		tmp[j].constant = (struct npu_tensor *)ins[j];
		tmpp[j] = &tmp[j];
	}
	copy.inputs = tmpp;
	ctx.schema = s->schemas[ni];
	ctx.node = &copy;
	ctx.out_dtypes = dtypes;
	ctx.out_shapes = shapes;
	ctx.err = err;
	for (j = 0; j < node->num_outputs; j++) {
		dtypes[j] = NPU_DTYPE_UNDEFINED;
		memset(&shapes[j], 0, sizeof(shapes[j]));
	}
	st = s->schemas[ni]->infer(&ctx);
	if (st != NPU_OK) {
		npu_graph_error_context(s->g, node, err);
		return st;
	}
	for (j = 0; j < node->num_outputs; j++)
		if (node->outputs[j] && (shapes[j].rank < 0 ||
					 shapes[j].rank > NPU_MAX_RANK ||
					 npu_shape_numel(&shapes[j]) < 0))
			return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				"%s: %s: output '%s' has shape %s even with all inputs known",
				s->g->source,
				npu_node_label(s->g, node, label, sizeof(label)),
				node->outputs[j]->name,
				shapes[j].rank < 0 || shapes[j].rank > NPU_MAX_RANK
					? "of unknown rank"
					: npu_shape_str(&shapes[j], sbuf,
							sizeof(sbuf)));
	return NPU_OK;
}

static npu_status check_input(const struct npu_graph *g, size_t i,
			      const struct npu_tensor *t, struct npu_error *err)
{
	const struct npu_value *v = g->inputs[i];
	char a[160], b[160];
	int d;

	if (!t)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: input '%s' is missing", g->source,
				     v->name);
	if (v->dtype != NPU_DTYPE_UNDEFINED && t->dtype != v->dtype)	/* undefined: any */
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: input '%s' must be %s, got %s",
				     g->source, v->name, npu_dtype_name(v->dtype),
				     npu_dtype_name(t->dtype));
	if (v->shape.rank < 0)
		return NPU_OK;
	if (t->shape.rank != v->shape.rank)
		goto mismatch;
	for (d = 0; d < v->shape.rank; d++)
		if (v->shape.dims[d] >= 0 && v->shape.dims[d] != t->shape.dims[d])
			goto mismatch;
	if (t->dtype == NPU_DTYPE_STRING) {
		snprintf(a, sizeof(a), "%s: input '%s'", g->source, v->name);
		return npu_str_check(t, a, err);
	}
	if (t->nbytes != (size_t)npu_shape_numel(&t->shape) *
				 npu_dtype_size(t->dtype) ||
	    (t->nbytes && !t->data))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: input '%s': %zu bytes of data for shape %s",
				     g->source, v->name, t->nbytes,
				     npu_shape_str(&t->shape, a, sizeof(a)));
	return NPU_OK;
mismatch:
	return npu_error_set(err, NPU_ERR_INVALID_ARG,
			     "%s: input '%s' has shape %s, the model needs %s",
			     g->source, v->name,
			     npu_shape_str(&t->shape, a, sizeof(a)),
			     npu_shape_str(&v->shape, b, sizeof(b)));
}

/*
 * Complete asynchronous node k (its wait()), then do what the run loop
 * does after a synchronous compute: timing, trace, observer, and freeing
 * outputs nobody reads.
 */
static npu_status finish_node(struct npu_exec *s, size_t k, struct npu_error *err)
{
	struct npu_graph *g = s->g;
	struct npu_node *node = g->nodes[k];
	struct npu_tensor **outs = s->io.fin_outs;
	struct npu_op_ctx ctx = {
		.node = node, .num_outputs = node->num_outputs, .outputs = outs,
		.pool = s->pool, .cpu = &s->p->cpu, .err = err,
		.state = s->node_states ? s->node_states[k] : NULL,
	};
	npu_status st;
	size_t j;

	for (j = 0; j < node->num_outputs; j++) {
		struct npu_value *v = node->outputs[j];

		outs[j] = v ? &s->owned[v->index] : NULL;
		if (v)
			s->pending_of[v->index] = 0;
	}
	st = s->defs[k]->wait(&ctx);
	if (st != NPU_OK) {
		if (!err->msg[0])
			npu_error_set(err, st, "wait failed");
		npu_graph_error_context(g, node, err);
		return st;
	}
	if (s->inflight == k + 1)
		s->inflight = 0;
	if (clocked(s)) {
		uint64_t t1ns = now_ns();
		double t1 = (double)t1ns / 1e6;

		if (s->profile)
			s->node_ms[k] += t1 - s->submit_ms[k];
		trace_node(s, node, s->submit_ms[k], t1);
		if (s->timed)
			s->steps[s->step_of[k]].end_ns = t1ns;
	}
	if (s->observe)
		s->observe(s->observe_arg, node, (const struct npu_tensor *const *)outs);
	for (j = 0; j < node->num_outputs; j++) {
		struct npu_value *v = node->outputs[j];

		if (v && s->last_use[v->index] == SIZE_MAX && !v->is_graph_output)
			release_value(s, v->index);
	}
	return NPU_OK;
}

/* Finish every asynchronous node still pending, in order; first error wins. */
static npu_status finish_all(struct npu_exec *s, npu_status st, struct npu_error *err)
{
	struct npu_error ignored = { 0 };
	size_t i, j;

	for (i = 0; i < s->g->num_nodes; i++) {
		const struct npu_node *n = s->g->nodes[i];
		bool pending = false;

		for (j = 0; j < n->num_outputs; j++)
			pending |= n->outputs[j] && s->pending_of[n->outputs[j]->index] == i + 1;
		if (!pending)
			continue;
		/* After a failure, still wait: the device may be using the buffers. */
		if (st == NPU_OK)
			st = finish_node(s, i, err);
		else
			finish_node(s, i, &ignored);
	}
	return st;
}

static npu_status run_nodes(struct npu_exec *s,
			    const struct npu_tensor *const *inputs,
			    struct npu_error *err)
{
	struct npu_graph *g = s->g;
	const struct npu_tensor **ins = s->io.ins;
	struct npu_tensor **outs = s->io.outs;
	enum npu_dtype *dtypes = s->io.dtypes;
	struct npu_shape *shapes = s->io.shapes;
	char label[300];
	size_t i, j;
	npu_status st;

	/* Buffers of the previous run's outputs go back to the pool. */
	for (i = 0; i < g->num_values; i++) {
		release_value(s, i);
		if (g->values[i]->constant)
			s->view[i] = g->values[i]->constant;
	}
	for (i = 0; i < g->num_inputs; i++) {
		st = check_input(g, i, inputs[i], err);
		if (st != NPU_OK)
			return st;
		s->view[g->inputs[i]->index] = inputs[i];
	}
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *node = g->nodes[i];
		struct npu_op_ctx ctx;
		uint64_t t0ns;
		double t0;
		bool async = s->defs[i]->submit && s->defs[i]->wait;

		if (s->skipping && s->skip[i]) {	/* no chosen output needs it */
			s->iostat.nodes_skipped++;
			continue;
		}
		s->iostat.nodes_run++;
		/* Before every node, so before every NPU job it would submit. */
		if (s->cancel) {
			st = check_cancel(s, "", npu_node_label(g, node, label, sizeof(label)),
					  err);
			if (st != NPU_OK)
				return st;
		}
		for (j = 0; j < node->num_inputs; j++) {
			ins[j] = NULL;
			if (!node->inputs[j])
				continue;
			/* An input still being computed asynchronously: wait for it. */
			if (s->pending_of[node->inputs[j]->index]) {
				st = finish_node(s, s->pending_of[node->inputs[j]->index] - 1, err);
				if (st != NPU_OK)
					return st;
			}
			ins[j] = s->view[node->inputs[j]->index];
			if (!ins[j])
				return npu_error_set(err, NPU_ERR_INTERNAL,
					"%s: %s: input '%s' has no data",
					g->source,
					npu_node_label(g, node, label,
						       sizeof(label)),
					node->inputs[j]->name);
		}
		/*
		 * One job in flight per session (the segments share its device
		 * arena): the next submit would complete the previous first, so
		 * complete it here, where its end is its own and not this op's.
		 */
		if (async && s->inflight) {
			st = finish_node(s, s->inflight - 1, err);
			if (st != NPU_OK)
				return st;
		}
		/* Timed from here: waiting for an asynchronous input is not this op's. */
		t0ns = clocked(s) ? now_ns() : 0;
		t0 = (double)t0ns / 1e6;
		step_begin(s, i, t0ns);
		if (s->schemas[i]->dynamic_outputs) {
			/* The op gives its outputs their shapes (rt_alloc_output). */
			for (j = 0; j < node->num_outputs; j++) {
				struct npu_value *v = node->outputs[j];

				outs[j] = v ? &s->owned[v->index] : NULL;
				if (v)
					memset(outs[j], 0, sizeof(*outs[j]));
			}
			goto compute;
		}
		if (s->dynamic[i]) {
			st = infer_at_run_time(s, i, ins, dtypes, shapes, err);
			if (st != NPU_OK)
				return st;
		} else {
			for (j = 0; j < node->num_outputs; j++)
				if (node->outputs[j]) {
					dtypes[j] = node->outputs[j]->dtype;
					shapes[j] = node->outputs[j]->shape;
				}
		}
		for (j = 0; j < node->num_outputs; j++) {
			struct npu_value *v = node->outputs[j];
			struct npu_tensor *t;
			size_t esize;

			outs[j] = NULL;
			if (!v)
				continue;
			t = &s->owned[v->index];
			esize = npu_dtype_size(dtypes[j]);
			if (dtypes[j] == NPU_DTYPE_STRING && s->schemas[i]->strings) {
				/* The op allocates it (alloc_bytes) once it knows the text. */
				memset(t, 0, sizeof(*t));
				t->dtype = dtypes[j];
				t->shape = shapes[j];
				outs[j] = t;
				s->view[v->index] = t;
				continue;
			}
			if (!esize)
				return npu_error_set(err, NPU_ERR_UNSUPPORTED,
					"%s: %s: output '%s' has type %s",
					g->source,
					npu_node_label(g, node, label,
						       sizeof(label)),
					v->name, npu_dtype_name(dtypes[j]));
			t->dtype = dtypes[j];
			t->shape = shapes[j];
			t->nbytes = (size_t)npu_shape_numel(&shapes[j]) * esize;
			t->data = NULL;
			if (t->nbytes && in_caller_memory(s, v->index, t)) {
				/* its producer writes the caller's memory */
			} else if (t->nbytes && s->arena) {
				t->data = s->arena + s->p->arena_off[v->index];
			} else if (t->nbytes) {
				t->data = buf_get(s, t->nbytes,
						  &s->owned_cap[v->index]);
				if (!t->data)
					return npu_error_set(err,
						NPU_ERR_NO_MEMORY,
						"%s: %s: out of memory for output '%s' (%zu bytes)",
						g->source,
						npu_node_label(g, node, label,
							       sizeof(label)),
						v->name, t->nbytes);
			}
			outs[j] = t;
			s->view[v->index] = t;
		}
compute:
		ctx.node = node;
		ctx.inputs = ins;
		ctx.num_inputs = node->num_inputs;
		ctx.outputs = outs;
		ctx.num_outputs = node->num_outputs;
		ctx.pool = s->pool;
		ctx.state = s->node_states ? s->node_states[i] : NULL;
		ctx.rt = &s->rt;
		ctx.cpu = &s->p->cpu;
		ctx.err = err;
		npu_error_clear(err);
		if (s->node_pool)
			pool_stats_node(s, SIZE_MAX);	/* not this node's */
		st = async ? s->defs[i]->submit(&ctx) : s->defs[i]->compute(&ctx);
		if (s->node_pool)
			pool_stats_node(s, i);
		if (st != NPU_OK) {
			if (!err->msg[0])
				npu_error_set(err, st, "compute failed");
			npu_graph_error_context(g, node, err);
			return st;
		}
		if (async) {
			/* Runs on while later nodes that don't need it execute. */
			for (j = 0; j < node->num_outputs; j++)
				if (node->outputs[j])
					s->pending_of[node->outputs[j]->index] = i + 1;
			s->submit_ms[i] = t0;
			s->inflight = i + 1;
			goto release_inputs;
		}
		/* An activation the compiler fused into a node that stayed on the CPU. */
		if (node->num_attrs && npu_node_attr(node, "npu_activation")) {
			st = npu_cpu_apply_fused_activation(node, outs[0], err);
			if (st != NPU_OK) {
				npu_error_prefix(err, "%s: %s", g->source,
						 npu_node_label(g, node, label, sizeof(label)));
				return st;
			}
		}
		if (clocked(s)) {
			uint64_t t1ns = now_ns();
			double t1 = (double)t1ns / 1e6;

			if (s->profile)
				s->node_ms[i] += t1 - t0;
			trace_node(s, node, t0, t1);
			if (s->timed)
				s->steps[s->step_of[i]].end_ns = t1ns;
		}
		if (s->observe)
			s->observe(s->observe_arg, node,
				   (const struct npu_tensor *const *)outs);
release_inputs:
		/* Liveness: free what no later node reads. */
		for (j = 0; j < node->num_inputs; j++) {
			struct npu_value *v = node->inputs[j];

			if (v && s->last_use[v->index] == i &&
			    !v->is_graph_output && !v->constant &&
			    !v->is_graph_input)
				release_value(s, v->index);
		}
		for (j = 0; j < node->num_outputs; j++) {
			struct npu_value *v = node->outputs[j];

			if (v && s->last_use[v->index] == SIZE_MAX &&
			    !v->is_graph_output && !s->pending_of[v->index])
				release_value(s, v->index);
		}
	}
	return NPU_OK;
}

npu_status npu_exec_run_timed(struct npu_exec *s,
			      const struct npu_tensor *const *inputs, bool timed,
			      struct npu_error *err)
{
	size_t nn = s->g->num_nodes;
	npu_status st;

	s->steps_valid = false;
	s->num_steps = 0;
	s->timed = timed;
	if (timed && !s->steps) {
		s->steps = calloc(nn + 1, sizeof(*s->steps));
		s->step_of = calloc(nn + 1, sizeof(*s->step_of));
		if (!s->steps || !s->step_of) {
			s->timed = false;
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		}
	}
	s->inflight = 0;
	memset(&s->iostat, 0, sizeof(s->iostat));
	if (s->own_run)		/* a subgraph's iterations count in the enclosing run */
		npu_compiled_run_begin(s->run);
	if (timed)
		s->run_start_ns = now_ns();
	st = finish_all(s, run_nodes(s, inputs, err), err);
	if (timed)
		s->run_end_ns = now_ns();
	s->timed = false;
	if (st != NPU_OK)
		return st;
	s->steps_valid = timed;
	s->runs++;
	build_stats(s);
	return NPU_OK;
}

npu_status npu_exec_run(struct npu_exec *s,
			   const struct npu_tensor *const *inputs,
			   struct npu_error *err)
{
	return npu_exec_run_timed(s, inputs, false, err);
}

size_t npu_exec_steps(const struct npu_exec *s, const struct npu_exec_step **steps,
		      uint64_t *start_ns, uint64_t *end_ns)
{
	*steps = s->steps;
	*start_ns = s->run_start_ns;
	*end_ns = s->run_end_ns;
	return s->steps_valid ? s->num_steps : 0;
}

const struct npu_tensor *npu_exec_output(const struct npu_exec *s,
					    size_t index)
{
	if (index >= s->g->num_outputs)
		return NULL;
	return s->view[s->g->outputs[index]->index];
}

/* A run for the compiler: the schedule is shared by the runs of one graph. */
struct runner_schedule {
	struct npu_exec_schedule *schedule;
	int refs;
};

struct runner_run {
	struct npu_exec *exec;
	struct runner_schedule *rs;
};

static void runner_close(void *run)
{
	struct runner_run *r = run;

	if (!r)
		return;
	npu_exec_destroy(r->exec);
	if (r->rs && --r->rs->refs == 0) {
		npu_exec_schedule_destroy(r->rs->schedule);
		free(r->rs);
	}
	free(r);
}

static npu_status runner_open_as(struct npu_graph *g, int threads, struct npu_threadpool *pool,
				 npu_graph_observe_fn observe, void *observe_arg, void *share,
				 bool nested, void **run, struct npu_error *err)
{
	struct npu_exec_options o = { .threads = threads, .pool = pool,
				      .observe = observe, .observe_arg = observe_arg,
				      .observe_subgraphs = nested };
	struct runner_run *r = calloc(1, sizeof(*r));
	npu_status st;

	*run = NULL;
	if (!r)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	if (share) {
		r->rs = ((struct runner_run *)share)->rs;
		r->rs->refs++;
	} else {
		r->rs = calloc(1, sizeof(*r->rs));
		if (!r->rs) {
			free(r);
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		}
		r->rs->refs = 1;
		st = npu_exec_schedule_create(g, &r->rs->schedule, err);
		if (st) {
			runner_close(r);
			return st;
		}
	}
	o.schedule = r->rs->schedule;
	st = npu_exec_create(g, &o, &r->exec, err);
	if (st) {
		runner_close(r);
		return st;
	}
	*run = r;
	return NPU_OK;
}

static npu_status runner_open(struct npu_graph *g, int threads, struct npu_threadpool *pool,
			      npu_graph_observe_fn observe, void *observe_arg, void *share,
			      void **run, struct npu_error *err)
{
	return runner_open_as(g, threads, pool, observe, observe_arg, share, false, run, err);
}

static npu_status runner_open_nested(struct npu_graph *g, int threads,
				     struct npu_threadpool *pool, npu_graph_observe_fn observe,
				     void *observe_arg, void *share, void **run,
				     struct npu_error *err)
{
	return runner_open_as(g, threads, pool, observe, observe_arg, share, true, run, err);
}

static npu_status runner_run(void *run, const struct npu_tensor *const *inputs,
			     struct npu_error *err)
{
	return npu_exec_run(((struct runner_run *)run)->exec, inputs, err);
}

static const struct npu_tensor *runner_output(void *run, size_t index)
{
	return npu_exec_output(((struct runner_run *)run)->exec, index);
}

static uint64_t runner_npu_cycles(void *run)
{
	const struct npu_compiled_run *cr = npu_exec_compiled_run(((struct runner_run *)run)->exec);
	uint64_t cycles = 0;
	size_t i;

	for (i = 0; cr && i < cr->c->num_segments; i++)
		cycles += npu_segment_rt_run_cycles(cr->rts[i]);
	return cycles;
}

const struct npu_graph_runner npu_exec_graph_runner = {
	.npu_cycles = runner_npu_cycles,
	.open = runner_open,
	.run = runner_run,
	.output = runner_output,
	.close = runner_close,
	.open_nested = runner_open_nested,
};

size_t npu_exec_op_stats(const struct npu_exec *s,
			    const struct npu_op_stat **stats)
{
	*stats = s->stats;
	return s->num_stats;
}
