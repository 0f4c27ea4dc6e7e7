/* SPDX-License-Identifier: MIT */
/*
 * npu_runtime.h - CPU execution of an inferred graph (internal).
 *
 * A session executes the graph's nodes in topological order with the ops
 * of cpu/ops/. Output tensors are allocated from the inferred shapes;
 * nodes whose shapes depend on data (a Reshape fed by a computed shape)
 * are re-inferred at run time with the actual tensors as constants.
 * Intermediate buffers return to a best-fit pool after their last use.
 */
#ifndef NPU_RUNTIME_H
#define NPU_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpu/cpu_options.h"
#include "graph/npu_ir.h"

struct npu_graph_runner;

struct npu_threadpool;
struct npu_exec_schedule;
struct npu_arena_stats;

/*
 * What every session of one graph shares (op definitions, prepared op
 * state such as packed weights, liveness, the host arena layout); built
 * once, read-only afterwards, so sessions on many threads may use it.
 * The graph must outlive it.
 */
npu_status npu_exec_schedule_create(struct npu_graph *graph,
				    struct npu_exec_schedule **out,
				    struct npu_error *err);
/* The same with the model's CPU options (NULL: the defaults): ops prepare
 * and run by them (the convolutions' Winograd choice). */
npu_status npu_exec_schedule_create_with(struct npu_graph *graph,
					 const struct npu_cpu_options *cpu,
					 struct npu_exec_schedule **out,
					 struct npu_error *err);
void npu_exec_schedule_destroy(struct npu_exec_schedule *schedule);
/* The CPU options the schedule's ops were prepared with. */
const struct npu_cpu_options *npu_exec_schedule_cpu(const struct npu_exec_schedule *schedule);
/* The host tensor memory of every session of the schedule (see below). */
void npu_exec_schedule_memory(const struct npu_exec_schedule *schedule, bool *planned,
			      struct npu_arena_stats *stats);

struct npu_exec_options {
	int threads;		/* own pool when 'pool' is NULL; 0: all cores */
	struct npu_threadpool *pool;	/* borrowed (a view of the engine's) */
	/* Shared schedule of the same graph; NULL: the session makes its own. */
	const struct npu_exec_schedule *schedule;
	bool profile;
	/*
	 * Optional: called after every node with its outputs (NULL entries
	 * for omitted ones), before they may be freed: calibration, debug.
	 */
	void (*observe)(void *arg, const struct npu_node *node,
			const struct npu_tensor *const *outputs);
	void *observe_arg;
	/*
	 * observe sees subgraph runs too (If branches, Loop / Scan bodies,
	 * every iteration): first a node with op_type "" whose outputs are the
	 * subgraph's inputs, then its nodes (npu_graph_runner.open_nested).
	 */
	bool observe_subgraphs;
	/*
	 * Borrowed: the NPU segments' run of the enclosing session, which a
	 * subgraph's session shares (one device arena, one run state per
	 * segment); NULL: the session makes its own when its graph (or a
	 * subgraph) has NpuSegment nodes.
	 */
	struct npu_compiled_run *segments_run;
	/* Without segments_run: which device of the model's set the session's
	 * own run of the segments is on (a replica npu_compiled_replicate()
	 * made; 0: the one compiled for). */
	size_t device_replica;
	/* Pipeline mode: per NPU segment of the compiled model, the device
	 * of the set it runs on (NULL: all on device_replica). Borrowed. */
	const size_t *segment_replicas;
	/* Without 'schedule': the CPU options of the session's own (NULL: defaults). */
	const struct npu_cpu_options *cpu;
	/*
	 * Append a Chrome trace span per node to this file (the engine's
	 * npu_engine_options.trace_file); NULL: none. Borrowed.
	 */
	const char *trace_file;
};

struct npu_op_stat {
	const char *op_type;
	size_t nodes;
	uint64_t calls;
	double total_ms;
};

struct npu_exec;

/*
 * Run state for one thread: tensors, arena, async bookkeeping, and for a
 * graph compiled for an NPU its own run of the segments (device arena and
 * command streams). Without opts->schedule it prepares every node itself. The
 * graph must outlive it.
 */
npu_status npu_exec_create(struct npu_graph *graph,
			      const struct npu_exec_options *opts,
			      struct npu_exec **out, struct npu_error *err);
void npu_exec_destroy(struct npu_exec *s);

/*
 * Run once; inputs[i] feeds graph->inputs[i] (dtype and rank must match,
 * fixed dims too). Outputs stay valid until the next run.
 */
npu_status npu_exec_run(struct npu_exec *s,
			   const struct npu_tensor *const *inputs,
			   struct npu_error *err);
const struct npu_tensor *npu_exec_output(const struct npu_exec *s,
					    size_t index);

/*
 * IO binding for the following runs (npu_session.c): wanted[i] says
 * whether graph output i is computed (NULL: all; nodes no wanted output
 * needs are skipped), caller[i] is memory output i's producer writes into
 * when its dtype and shape match (NULL, or a NULL entry: the executor's
 * own). The caller tensors are borrowed until the next bind.
 */
npu_status npu_exec_bind_outputs(struct npu_exec *s, const bool *wanted,
				 const struct npu_tensor *const *caller, struct npu_error *err);
/* What the last run did with its top-level nodes. */
struct npu_exec_io {
	uint64_t nodes_run, nodes_skipped;
};
const struct npu_exec_io *npu_exec_io(const struct npu_exec *s);

/* npu_exec as the compiler's graph runner (npu_compile_options.runner). */
extern const struct npu_graph_runner npu_exec_graph_runner;

/*
 * The host tensor memory: with every shape static, one arena planned by
 * liveness (*planned, and its peak / sum / lower bound in *stats); else a
 * reuse pool (*planned false).
 */
void npu_exec_memory(const struct npu_exec *s, bool *planned,
			struct npu_arena_stats *stats);

/* This session's run of the NPU segments (NULL without any). */
struct npu_compiled_run;
const struct npu_compiled_run *npu_exec_compiled_run(const struct npu_exec *s);

/*
 * One step of a timed run: a node as the run loop executed it, times in
 * CLOCK_MONOTONIC ns. For an NpuSegment node 'state' is its run state
 * (segment_rt.h), whose last job result holds the device layer's times.
 */
struct npu_exec_step {
	const struct npu_node *node;
	void *state;			/* NpuSegment: struct npu_segment_rt */
	uint64_t start_ns, end_ns;
};

/*
 * npu_exec_run() that, with 'timed', also records every node's step (the
 * same clock reads that profiling and the trace file use). Untimed it
 * reads no clock per node.
 */
npu_status npu_exec_run_timed(struct npu_exec *s,
			      const struct npu_tensor *const *inputs, bool timed,
			      struct npu_error *err);
/*
 * The steps of the last run, in the order they started, if it was timed
 * and succeeded (else 0); *start_ns / *end_ns bound the run.
 */
size_t npu_exec_steps(const struct npu_exec *s, const struct npu_exec_step **steps,
		      uint64_t *start_ns, uint64_t *end_ns);

/*
 * Cancellation (npu_cancel in npu/npu_model.h): a flag any thread, or a
 * signal handler, sets; a run that borrows it polls it before every node,
 * every subgraph run (each If branch, Loop and Scan iteration) and so
 * before every NPU job it submits, and stops with NPU_ERR_CANCELLED.
 * 'polls' counts those checks (tests wait on it to know a run is inside).
 */
struct npu_cancel {
	atomic_int triggered;
	atomic_uint_least64_t polls;
};

/* Borrow 'cancel' (NULL: none) for this session's runs, its subgraphs' too. */
void npu_exec_set_cancel(struct npu_exec *s, struct npu_cancel *cancel);

/* Aggregated per op type, sorted by time (profiling) or node count. */
size_t npu_exec_op_stats(const struct npu_exec *s,
			    const struct npu_op_stat **stats);

#endif /* NPU_RUNTIME_H */
