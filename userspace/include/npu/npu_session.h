/* SPDX-License-Identifier: MIT */
/*
 * npu_session.h - the run state of one thread (npu_model.h explains the
 * objects): runs, sync and async, cancellation, IO binding, outputs, and
 * what a run measured (timings, per-op and NPU statistics).
 */
#ifndef NPU_SESSION_H
#define NPU_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* memset in the *_init() macros */

#include "npu/npu_status.h"
#include "npu/npu_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_model;
struct npu_plan;
struct npu_buffer;

/* ---- Session ----------------------------------------------------------------- */

struct npu_session;

struct npu_session_options {
	size_t struct_size;	/* sizeof(struct npu_session_options) */
	/* Run states of plans kept for a switch back (0: 4). */
	size_t max_plan_states;
	/*
	 * Since 2.3, for a model on several devices (npu_model_num_devices):
	 * bit k lets this session's runs use device k. Each run goes to the
	 * allowed device with the least modeled work outstanding. 0: any.
	 * Device inputs (npu_run_options.device_inputs) pin a run to their
	 * device. In pipeline mode, a mask without every stage's device
	 * runs the session data parallel.
	 */
	uint64_t device_mask;
};

NPU_API void npu_session_options_init_sized(struct npu_session_options *opts,
					    size_t struct_size);
#define npu_session_options_init(opts) \
	npu_session_options_init_sized((opts), sizeof(*(opts)))

NPU_API npu_status npu_session_create(struct npu_model *model,
				      const struct npu_session_options *opts,
				      struct npu_session **out);
NPU_API void npu_session_destroy(struct npu_session *session);

/*
 * Run with 'count' inputs (by name, or by position when name is NULL) on
 * the plan for their shapes, made on first use of those shapes. For a
 * model whose first dimension is dynamic, N requests stacked along it run
 * at once on the plan for N.
 */
NPU_API npu_status npu_session_run(struct npu_session *session,
				   const struct npu_host_tensor *inputs,
				   size_t count);
/* The same on a given plan of the session's model; shapes must match it. */
NPU_API npu_status npu_session_run_plan(struct npu_session *session,
					struct npu_plan *plan,
					const struct npu_host_tensor *inputs,
					size_t count);
/* Output 'index' of the last run; data is valid until the next run. */
NPU_API npu_status npu_session_output(const struct npu_session *session,
				      size_t index,
				      struct npu_host_tensor *out);
/* The plan of the last run (borrowed; valid until the next run). */
NPU_API const struct npu_plan *npu_session_plan(const struct npu_session *session);
/*
 * Since 2.3: which of the model's devices the last run went to (0 before
 * a run); in pipeline mode, the device of its first stage (0).
 */
NPU_API size_t npu_session_last_device(const struct npu_session *session);
/* Seconds of the last run. */
NPU_API double npu_session_last_run_seconds(const struct npu_session *session);

/*
 * Per-op-type statistics of the last plan run, by decreasing time when
 * profiling (counts of nodes otherwise): op type, nodes, calls, total ms.
 */
NPU_API size_t npu_session_num_op_stats(const struct npu_session *session);
NPU_API npu_status npu_session_op_stat(const struct npu_session *session,
				       size_t index, const char **op_type,
				       size_t *nodes, uint64_t *calls,
				       double *total_ms);

/* NPU figures of the session's current plan and its last run. */
struct npu_npu_stats {
	size_t struct_size;		/* sizeof(struct npu_npu_stats) */
	size_t segments;		/* NPU segments (jobs per run) */
	uint64_t total_macs;		/* MACs of the whole model */
	uint64_t npu_macs;		/* MACs placed on the NPU */
	uint64_t arena_bytes;		/* device memory for activations */
	uint64_t arena_sum_bytes;	/* ... if every tensor had its own */
	uint64_t arena_lower_bound;	/* max bytes live at once */
	uint64_t host_arena_bytes;	/* the same three for the host tensors (one
					 * arena when all shapes are static; 0 when
					 * they come from a reuse pool) */
	uint64_t host_sum_bytes;
	uint64_t host_lower_bound;
	double compile_ms;
	uint32_t clock_mhz;		/* what modeled cycles count */
	uint64_t ideal_mac_cycles;	/* per run: NPU MACs / MAC array size */
	/* The last run: */
	uint64_t last_cycles;		/* modeled NPU cycles, all segments */
	double last_npu_wall_ms;	/* host time inside NPU segment ops */
};

#define npu_npu_stats_init(st) \
	((void)memset((st), 0, sizeof(*(st))), (st)->struct_size = sizeof(*(st)))

NPU_API npu_status npu_session_npu_stats(const struct npu_session *session,
					 struct npu_npu_stats *stats);
/* The same for a plan before any run (the last_* fields stay 0). */
NPU_API npu_status npu_plan_npu_stats(const struct npu_plan *plan,
				      struct npu_npu_stats *stats);

/*
 * One NPU segment (one job per run; a segment inside a Loop or Scan body
 * runs once per iteration, and its figures cover the whole run): its
 * share of the work, last run.
 */
struct npu_segment_stats {
	size_t struct_size;		/* sizeof(struct npu_segment_stats) */
	size_t nodes;			/* source nodes it replaces */
	const char *first_node, *last_node;
	uint64_t macs;
	uint64_t ideal_mac_cycles;	/* macs / MAC array size: the roofline */
	uint64_t instructions;
	uint64_t last_cycles;		/* modeled cycles of the last run */
	uint64_t dram_bytes;		/* DMA to and from DRAM per run */
};

NPU_API npu_status npu_session_npu_segment(const struct npu_session *session,
					   size_t index,
					   struct npu_segment_stats *stats);

/*
 * One NPU op (a lowered node) of the last run. Its modeled cycles come
 * from device timestamps around it, taken when the model was loaded with
 * 'profile' set (0 otherwise); ideal_mac_cycles / cycles is its roofline.
 */
struct npu_op_stats {
	size_t struct_size;		/* sizeof(struct npu_op_stats) */
	int segment;
	const char *node;		/* source node name */
	const char *kind;		/* "conv", "matmul", "pool", "eltwise", "lut", "resize", "copy", "softmax", "layernorm", "reduce" */
	uint64_t macs;
	uint64_t ideal_mac_cycles;	/* macs / MAC array size */
	uint64_t cycles;
	/*
	 * Bytes its DMA moves to and from DRAM (device VA) per run, both
	 * directions: inputs, weights and outputs that leave SRAM. 0 for a
	 * model loaded from .npub, which keeps no per-op accounting.
	 */
	uint64_t dram_bytes;
	/*
	 * The compiler's cost model: the cycles it predicted for the op
	 * before generating code (Documentation/compiler.md); 0 for a .npub.
	 */
	uint64_t predicted_cycles;
	/*
	 * 1: the op runs inside the previous op's tile loop (cross-layer
	 * fusion, its output never leaves SRAM): that op's MACs, cycles,
	 * DRAM bytes and prediction cover both; this one has none (its
	 * cycles are the profiling timestamp's).
	 */
	int fused;
};

NPU_API size_t npu_session_npu_num_ops(const struct npu_session *session);
NPU_API npu_status npu_session_npu_op(const struct npu_session *session,
				      size_t index, struct npu_op_stats *stats);

/* ---- Run options, cancellation, async runs ------------------------------------------ */

/*
 * A cancel flag for runs (ONNX Runtime's RunOptions terminate): runs that
 * borrow it through npu_run_options.cancel check it before every node,
 * every If branch and every Loop and Scan iteration (so before every NPU
 * job they submit), and end with NPU_ERR_CANCELLED once it is triggered:
 * every job they submitted completed, nothing leaked, and the session
 * runs normally afterwards. A run that starts with it triggered runs
 * nothing. It stays triggered until reset. Thread-safe: trigger, reset and
 * is_triggered from any thread while runs check it; trigger also from a
 * signal handler (async-signal-safe). Destroy it once no run uses it.
 */
struct npu_cancel;

NPU_API npu_status npu_cancel_create(struct npu_cancel **out);
NPU_API void npu_cancel_destroy(struct npu_cancel *cancel);
NPU_API void npu_cancel_trigger(struct npu_cancel *cancel);
NPU_API void npu_cancel_reset(struct npu_cancel *cancel);
/* 1 if triggered (and not reset since), else 0. */
NPU_API int npu_cancel_is_triggered(const struct npu_cancel *cancel);

struct npu_run_options {
	size_t struct_size;	/* sizeof(struct npu_run_options) */
	/*
	 * 1: measure every step of this run (each CPU node, each NPU segment)
	 * for npu_session_run_timing() / npu_session_step_timing(). 0: no
	 * clock is read per node and nothing is recorded.
	 */
	int timings;
	/* Borrowed for the run (an async run's: until its callback); NULL: none. */
	struct npu_cancel *cancel;
	/*
	 * IO binding (ONNX Runtime's IoBinding, TFLite's custom allocations);
	 * the arrays, their names and memory are borrowed for the run (an
	 * async run's: until its callback). See "IO binding" below.
	 *
	 * outputs: the outputs to compute, by name (0: all of them). Only the
	 * nodes these need run; npu_session_output() of any other output
	 * fails. An entry with data set is caller memory the output is
	 * written to: dtype, rank and dims must be the output's and nbytes
	 * exactly its size, data aligned to its element size. An entry with
	 * data NULL (dtype 0, nbytes 0) only chooses the output, which then
	 * lives in the session as usual.
	 */
	const struct npu_host_tensor *outputs;
	size_t num_outputs;
	/*
	 * Inputs in buffers of the model's NPU device (npu_buffer_alloc or
	 * npu_buffer_import_dmabuf on the device npu_engine_get_device()
	 * gives for the model's device name), by name, in place of entries of
	 * the run's 'inputs' (each model input given once, either way).
	 */
	const struct npu_device_tensor *device_inputs;
	size_t num_device_inputs;
};

/*
 * A model input in a device buffer (frozen layout): the tensor is nbytes
 * of dense C-order data of dtype and shape at 'offset' in 'buffer'.
 */
struct npu_device_tensor {
	const char *name;
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
	struct npu_buffer *buffer;
	uint64_t offset;
	size_t nbytes;
};

NPU_API void npu_run_options_init_sized(struct npu_run_options *opts, size_t struct_size);
#define npu_run_options_init(opts) \
	npu_run_options_init_sized((opts), sizeof(*(opts)))

/*
 * npu_session_run() (plan NULL) or npu_session_run_plan() with options;
 * opts may be NULL (the defaults).
 */
NPU_API npu_status npu_session_run_with(struct npu_session *session,
					struct npu_plan *plan,
					const struct npu_host_tensor *inputs,
					size_t count,
					const struct npu_run_options *opts);

/*
 * Called exactly once per accepted npu_session_run_async(), on one of the
 * engine's run workers, when the run ended: 'status' is what
 * npu_session_run_with() would have returned, npu_last_error() (on this
 * thread) its message. Inside it the run's outputs are read with
 * npu_session_output(); the session counts as running until it returns,
 * so another run of the session started here fails with NPU_ERR_BUSY and
 * npu_session_wait() here too; npu_session_destroy() here is allowed (it
 * takes effect once the callback returned). Do not wait here for another
 * session's run (npu_session_wait, npu_session_destroy of a session with
 * a run queued): with every worker in such a callback, the queue stalls.
 */
typedef void (*npu_run_callback)(npu_status status, struct npu_session *session, void *arg);

/*
 * npu_session_run_with() on a library thread (ONNX Runtime's RunAsync):
 * queues the run and returns at once; done(status, session, arg) reports
 * its end. The 'inputs' array is copied, but the tensors' data and names,
 * 'plan' and opts->cancel are borrowed until the callback. One run per
 * session at a time: while it is queued or running, any other run of the
 * session (sync or async) fails with NPU_ERR_BUSY. A run that is refused
 * (bad arguments, busy session, full queue) returns an error and never
 * calls done. Read the outputs with npu_session_output() in or after the
 * callback (after: once npu_session_wait() returned, or the callback told
 * the thread). The run holds the session's model, and so its engine: both
 * may be destroyed while it runs.
 */
NPU_API npu_status npu_session_run_async(struct npu_session *session,
					 struct npu_plan *plan,
					 const struct npu_host_tensor *inputs,
					 size_t count,
					 const struct npu_run_options *opts,
					 npu_run_callback done, void *arg);
/*
 * Block until the session has no async run in flight (its callback
 * returned); NPU_OK at once if it has none. npu_session_destroy() waits
 * the same way. NPU_ERR_BUSY when called from the session's own callback.
 */
NPU_API npu_status npu_session_wait(struct npu_session *session);

/* ---- IO binding: copies counted ----------------------------------------------- */

/*
 * Where the last run's data went (npu_run_options.outputs and
 * device_inputs). A host copy is a memcpy of a whole tensor by the
 * library: of an input whose data is not aligned to its element size (the
 * kernels read whole elements), of an output whose producer could not
 * write into the caller's memory (an output that is a model input or a
 * constant, or the same value bound twice). Quantizing a float input into
 * an NPU segment's device arena and dequantizing its outputs are
 * conversions every run needs, not copies: they are not counted.
 */
struct npu_io_stats {
	size_t struct_size;		/* sizeof(struct npu_io_stats) */
	uint64_t input_copies, input_copy_bytes;
	uint64_t output_copies, output_copy_bytes;
	/* Zero-copy bindings: */
	uint64_t inputs_in_place;	/* read where the caller put them */
	uint64_t device_inputs;		/* ... of those, in device buffers */
	uint64_t outputs_in_place;	/* written by their producer straight into
					 * the caller's memory */
	/* Nodes of the model's top-level graph that ran, and that did not
	 * because no chosen output needs them. */
	uint64_t nodes_run, nodes_skipped;
};

#define npu_io_stats_init(st) \
	((void)memset((st), 0, sizeof(*(st))), (st)->struct_size = sizeof(*(st)))

/* NPU_ERR_INVALID_ARG until a run succeeded. */
NPU_API npu_status npu_session_io_stats(const struct npu_session *session,
					struct npu_io_stats *stats);

/* ---- Measured steps of a run ---------------------------------------------------- */

enum npu_step_kind {
	NPU_STEP_CPU = 0,	/* one node on the host (If / Loop / Scan with their bodies) */
	NPU_STEP_NPU = 1,	/* one NPU segment: quantize, one job, dequantize */
};

/*
 * The last run, when it asked for timings. Times are ns of CLOCK_MONOTONIC
 * (start_ns) or from start_ns (steps), measured on the calling thread.
 */
struct npu_run_timing {
	size_t struct_size;	/* sizeof(struct npu_run_timing) */
	uint64_t start_ns;	/* the session began running the plan */
	uint64_t total_ns;	/* ... and had every output */
	size_t steps;		/* in the order they started */
	uint32_t clock_mhz;	/* what NPU cycles count (0: no NPU segment) */
};

/*
 * One step. The host runs CPU steps that do not need a segment's outputs
 * while its job is in flight, so a CPU step may lie inside an NPU step;
 * CPU steps never overlap each other, nor NPU steps each other (a
 * session has at most one job in flight). Strings live until the next run.
 */
struct npu_step_timing {
	size_t struct_size;	/* sizeof(struct npu_step_timing) */
	enum npu_step_kind kind;
	const char *name;	/* CPU: the node's name; NPU: its node, "npu_segment_N" */
	const char *op_type;	/* CPU: its op type; NPU: "NpuSegment" */
	int segment;		/* NPU: segment index; CPU: -1 */
	size_t nodes;		/* source nodes it runs (CPU: 1) */
	const char *first_node, *last_node;	/* NPU: what the segment spans */
	uint64_t start_ns;	/* began (NPU: quantizing its inputs) */
	uint64_t end_ns;	/* outputs ready (NPU: dequantized) */
	uint64_t submit_ns;	/* NPU: the job submitted ... */
	uint64_t done_ns;	/* ... and seen complete by the device layer */
	uint64_t cycles;	/* NPU: modeled device cycles of this job */
};

/* NPU_ERR_INVALID_ARG if the last run did not ask for timings or failed. */
NPU_API npu_status npu_session_run_timing(const struct npu_session *session,
					  struct npu_run_timing *timing);
NPU_API npu_status npu_session_step_timing(const struct npu_session *session,
					   size_t index,
					   struct npu_step_timing *step);

#define npu_run_timing_init(t) \
	((void)memset((t), 0, sizeof(*(t))), (t)->struct_size = sizeof(*(t)))
#define npu_step_timing_init(t) \
	((void)memset((t), 0, sizeof(*(t))), (t)->struct_size = sizeof(*(t)))

#ifdef __cplusplus
}
#endif

#endif /* NPU_SESSION_H */
