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

#include <stdbool.h>
#include <stdint.h>

#include "graph/npu_ir.h"

struct npu_threadpool;

struct npu_session_options {
	int threads;		/* 0: all online cores */
	bool profile;
	/*
	 * Optional: called after every node with its outputs (NULL entries
	 * for omitted ones), before they may be freed: calibration, debug.
	 */
	void (*observe)(void *arg, const struct npu_node *node,
			const struct npu_tensor *const *outputs);
	void *observe_arg;
};

struct npu_op_stat {
	const char *op_type;
	size_t nodes;
	uint64_t calls;
	double total_ms;
};

struct npu_session;

/* Prepares every node (op prepare()); the graph must outlive the session. */
npu_status npu_session_create(struct npu_graph *graph,
			      const struct npu_session_options *opts,
			      struct npu_session **out, struct npu_error *err);
void npu_session_destroy(struct npu_session *s);

/*
 * Run once; inputs[i] feeds graph->inputs[i] (dtype and rank must match,
 * fixed dims too). Outputs stay valid until the next run.
 */
npu_status npu_session_run(struct npu_session *s,
			   const struct npu_tensor *const *inputs,
			   struct npu_error *err);
const struct npu_tensor *npu_session_output(const struct npu_session *s,
					    size_t index);

struct npu_memplan_stats;

/*
 * The host tensor memory: with every shape static, one arena planned by
 * liveness (*planned, and its peak / sum / lower bound in *stats); else a
 * reuse pool (*planned false).
 */
void npu_session_memory(const struct npu_session *s, bool *planned,
			struct npu_memplan_stats *stats);

/* Aggregated per op type, sorted by time (profiling) or node count. */
size_t npu_session_op_stats(const struct npu_session *s,
			    const struct npu_op_stat **stats);

#endif /* NPU_RUNTIME_H */
