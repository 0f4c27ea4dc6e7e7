/* SPDX-License-Identifier: MIT */
/*
 * compiler.h - the NPU compiler's pipeline (internal).
 *
 *   passes      fold constants and shape subgraphs, drop dead nodes, fold
 *               BatchNorm, cancel transposes, recognise QDQ     (passes/)
 *   calibrate   run the fp32 graph on the CPU over calibration inputs and
 *               record every float value's range                (calibrate.c)
 *   fuse        activations into their producers                (passes/)
 *   place       every node: NPU when the device supports it with its exact
 *               attributes and shapes, else CPU, with the reason (partition.c)
 *   quantize    int8 parameters per NPU value (quantize.c)
 *   segment     cluster NPU nodes into segments; a cost model sends
 *               segments whose transfers outweigh their gain back to the
 *               CPU                                              (partition.c)
 *   lower       NPU nodes -> lops over NHWC int8 activations     (lower.c)
 *   arena       liveness placement of each segment's tensors     (arena.c)
 *   codegen     command streams and constant blobs               (codegen*.c)
 *   delegate    each segment becomes one "NpuSegment" node (domain
 *               "ai.npu") that the CPU runtime executes like any op: it
 *               quantizes its inputs into the device arena, runs the job
 *               and dequantizes the outputs (compile.c; its kernel:
 *               runtime/npu_segment_op.c, boundary.c)
 *
 * Subgraphs (If branches, Loop / Scan bodies) go through the same stages:
 * the control-flow node stays on the CPU, calibration ranges the values
 * inside bodies on every iteration, and each body's segments are bound in
 * the body as NpuSegment nodes (compile.c, compile_subgraphs()).
 */
#ifndef NPU_COMPILER_H
#define NPU_COMPILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/codegen.h"
#include "compiler/arena.h"
#include "compiler/passes/passes.h"
#include "compiler/quant.h"
#include "compiler/reloc.h"
#include "graph/npu_ir.h"
#include "npu/npu_device.h"

struct npu_threadpool;

#define NPU_SEGMENT_DOMAIN "ai.npu"
#define NPU_SEGMENT_OP "NpuSegment"

struct npu_segment_rt;

/* Storage order of an NPU tensor in the arena. */
enum npu_layout {
	NPU_LAYOUT_ROWS = 0,	/* row-major as ONNX: [rows][last dim] */
	NPU_LAYOUT_NHWC = 1,	/* a rank-4 NCHW value stored channels-last */
	NPU_LAYOUT_IM2COL = 2,	/* a segment input as npu_act.im2col says */
};

/* Calibration statistics of every float value, by value index. */
struct npu_calib_table {
	struct npu_calib_stats *stats;	/* [num_values] */
	bool *seen;
	size_t num_values;
	/* Per channel (dim 1) sums of every rank-4 value, for bias
	 * correction: chan_sum[v][c] over chan_count[v] values each; NULL
	 * where unknown. */
	double **chan_sum;
	uint64_t *chan_count;
	uint32_t *channels;
	/*
	 * The tables of the graph's subgraphs (If branches, Loop / Scan
	 * bodies, nested ones too), each over every time it ran; a body that
	 * never ran has ran == false and nothing seen.
	 */
	struct npu_calib_sub *subs;
	size_t num_subs;
};

struct npu_calib_sub {
	const struct npu_graph *graph;
	bool ran;
	struct npu_calib_table table;
};

/* The table of subgraph 'g' in t (top-level t's subs), or NULL. */
const struct npu_calib_sub *npu_calib_table_sub(const struct npu_calib_table *t,
						const struct npu_graph *g);

/* Mean of channel c of value v, or false when calibration has none. */
bool npu_calib_channel_means(const struct npu_calib_table *t, size_t v, uint32_t channels,
			     const double **sum, uint64_t *count);

/*
 * How the compiler runs a graph (calibration, the quant report, the
 * sensitivity ranking): the caller's executor, handed down in the options
 * so that the compiler never calls up into the runtime. The runtime's is
 * npu_exec_graph_runner. observe (may be NULL) sees every node's outputs
 * (NULL entries for omitted ones) after the node ran, before they may be
 * freed, and may overwrite their data. Two runs of one graph at once must
 * share: 'share' is the open run of the same graph (else NULL), since
 * what ops prepare is kept per node.
 */
typedef void (*npu_graph_observe_fn)(void *arg, const struct npu_node *node,
				     const struct npu_tensor *const *outputs);

struct npu_graph_runner {
	npu_status (*open)(struct npu_graph *graph, int threads,
			   struct npu_threadpool *pool, npu_graph_observe_fn observe,
			   void *observe_arg, void *share, void **run,
			   struct npu_error *err);
	/* inputs[i] feeds graph->inputs[i]; outputs live until the next run. */
	npu_status (*run)(void *run, const struct npu_tensor *const *inputs,
			  struct npu_error *err);
	const struct npu_tensor *(*output)(void *run, size_t index);
	void (*close)(void *run);	/* NULL is fine */
	/* Optional: the modeled NPU cycles of the last run (NPU segments). */
	uint64_t (*npu_cycles)(void *run);
	/*
	 * Optional: open() whose observer also sees every run of a subgraph
	 * (If branches, Loop / Scan bodies, each iteration): first a node with
	 * op_type "" whose outputs are the subgraph's inputs, then its nodes.
	 * Calibration uses it to range the values inside bodies.
	 */
	npu_status (*open_nested)(struct npu_graph *graph, int threads,
				  struct npu_threadpool *pool, npu_graph_observe_fn observe,
				  void *observe_arg, void *share, void **run,
				  struct npu_error *err);
};

struct npu_compile_options {
	struct npu_device *device;	/* code is generated for this device */
	/* Runs graphs for calibration; required when calibration runs. */
	const struct npu_graph_runner *runner;
	enum npu_calib_method calib_method;
	double percentile;		/* for NPU_CALIB_PERCENTILE */
	/*
	 * Calibration data, read in two passes (min / max, then histograms),
	 * one sample at a time, so hundreds of samples never sit in memory
	 * together. Either in memory: sets x graph inputs, fp32, matching
	 * shapes;
	 */
	struct npu_tensor *const *calib_inputs;
	size_t num_calib_sets;
	/*
	 * or streamed (called only when calibration runs: no calib_inputs and
	 * the cache does not cover the graph): the sample count, then sample
	 * 'index' as graph-input tensors the compiler frees;
	 */
	npu_status (*calib_count)(void *arg, const struct npu_graph *graph,
				  size_t *count, struct npu_error *err);
	npu_status (*calib_sample)(void *arg, const struct npu_graph *graph,
				   size_t index, struct npu_tensor **inputs,
				   struct npu_error *err);
	void *calib_arg;
	/*
	 * or, only when asked for (smoke tests): random_calib_sets seeded
	 * standard-normal inputs. Without any of the three, compilation fails
	 * with a message naming the options.
	 */
	bool calib_random;
	uint64_t calib_seed;
	size_t random_calib_sets;	/* default 4 */
	/* Ranges by value name from earlier compilations; filled in here. */
	struct npu_calib_cache *calib_cache;
	int threads;
	struct npu_threadpool *pool;	/* borrowed; NULL: own pool of 'threads' */
	bool cpu_only_placement;	/* explain only: place, generate nothing */
	/* How segments are built and scheduled (zero: the defaults). */
	struct npu_codegen_options codegen;
	/*
	 * How the CPU part runs (zero: the defaults): kept in the result
	 * (npu_compiled.cpu, a .npub stores it) for the executor's plan.
	 */
	struct npu_cpu_options cpu;
	bool keep_small_segments;	/* skip the cost model (tests) */
	bool profile_ops;		/* time every op on the device */
	/*
	 * Correct each convolution's bias for the mean error its int8 weights
	 * make: per output channel, (dequantized - fp32 weights) times the
	 * per-channel mean of its input over the calibration data. > 0: every
	 * convolution; < 0: none; 0 (the default): those in the 16x8 mode,
	 * whose error is mostly the weights' (compiler.md, "int16 activations").
	 */
	int bias_correction;
	/*
	 * Mixed precision: nodes that stay fp32 on the CPU although the NPU
	 * could run them, by name as placement records show them (after the
	 * passes: a fused activation or a folded BatchNormalization is its
	 * producer). A pointwise group goes with any of its nodes. A name no
	 * node has is an error.
	 */
	const struct npu_keep_fp32 *keep_fp32;
	size_t num_keep_fp32;
	/*
	 * The 16x8 mode (NPU_INSN_I16): nodes, named as keep_fp32 names them,
	 * whose output is int16 (symmetric) and whose NPU op reads int16;
	 * int16_all: every node that has an int16 form. Conv (not folded or
	 * transposed), Gemm / MatMul by a constant, Max / Average / Global
	 * pooling, Add, Mul and the LUT activations (fused or not, and
	 * pointwise groups: 513-knot int16 LUTs) have one; other kinds stay
	 * int8 (naming one is an error). ELTWISE requantizes where an int8
	 * value meets an int16 reader. A name no node has is an error.
	 */
	const char *const *int16_nodes;
	size_t num_int16_nodes;
	bool int16_all;
	/* A named node without an int16 form stays int8 instead of failing
	 * (the accuracy-target search names its candidates blindly). */
	bool int16_lenient;
	/*
	 * > 1: cut the top-level graph's NPU work into at least this many
	 * segments of similar modeled cost, at the points where the fewest
	 * elements cross, so that pipeline mode can run consecutive segments
	 * on different devices (Documentation/multi-npu.md).
	 */
	int pipeline_stages;
	/* Bind without uploading the constants (npu_compiled.defer_consts). */
	bool defer_consts;
};

struct npu_keep_fp32 {
	const char *node;
	const char *reason;	/* for the placement record; NULL: generic */
};

void npu_compile_options_init(struct npu_compile_options *o);

/* Why a node ended up where it did, for `npu compile --explain`. */
struct npu_placement_record {
	char *node;		/* name (or "#index") */
	char *op_type;
	enum npu_placement placement;
	char reason[256];
	int segment;		/* -1 on the CPU */
	uint64_t macs;
};

/* One NPU segment, compiled. */
/* A relocatable command stream (reloc.h). */
struct npu_segment_stream {
	uint8_t *data;
	size_t size;
	struct npu_reloc *relocs;
	size_t num_relocs;
};

struct npu_segment {
	int index;
	struct npu_segment_program prog;
	/* Host copies of constants the lops point to (owned). */
	void **owned;
	size_t num_owned, cap_owned;
	/* Graph values crossing the boundary and their act / layout. */
	struct npu_value **inputs, **outputs;
	uint32_t *input_acts, *output_acts;
	enum npu_layout *input_layout, *output_layout;
	size_t num_inputs, num_outputs;
	/* Generated code (constants, counts), made once at bind or read
	 * from a compiled file. */
	struct npu_codegen_result code;
	/* Its command stream at the canonical addresses (reloc.h), and the
	 * same with per-op timestamps when profiling: each session copies one
	 * and relocates it to its own arena. */
	struct npu_segment_stream stream, profile_stream;
	uint32_t code_sram_size;	/* the SRAM the code was generated for */
	struct npu_arena_stats mem;
	uint64_t arena_size;
	size_t num_nodes;
	/* The nodes it replaces, by their first output's (unique) name. */
	char **node_keys;
	/*
	 * Where they are: NULL for the top-level graph, else the subgraph's
	 * path from it (npu_subgraph_at()); 'graph' is that graph once bound.
	 */
	char *graph_path;
	struct npu_graph *graph;
	char *first_node, *last_node;	/* for messages and traces */
	/* Device binding shared by every session (npu_compiled_bind): */
	struct npu_compiled *compiled;	/* the model it belongs to */
	struct npu_device *dev;
	struct npu_buffer *consts;	/* NULL when the segment has none */
};

struct npu_compiled {
	struct npu_placement_record *records;
	size_t num_records;
	struct npu_segment **segments;
	size_t num_segments;
	uint64_t total_macs, npu_macs;
	uint64_t arena_bytes;		/* one device arena, max over segments */
	uint64_t arena_sum_bytes;	/* every NPU tensor in its own buffer */
	uint64_t arena_lower_bound;
	double compile_ms;
	/* Code generations while compiling and binding (0 for a compiled
	 * file loaded without profiling: its code is stored). */
	uint64_t codegen_runs;
	bool profile_ops;		/* bind with per-op device timestamps */
	/*
	 * Bound without the constants on 'dev': the caller puts them there
	 * (npu_compiled_home_consts()), all of them or one pipeline stage's,
	 * once it knows how the model's devices are used.
	 */
	bool defer_consts;
	struct npu_device *dev;		/* bound to (npu_compiled_bind) */
	struct npu_device_info dev_info;
	/* What lost accuracy and could not be avoided, e.g. an int32 bias
	 * that saturated, naming the node (the runtime logs them). */
	char **warnings;
	size_t num_warnings;
	/* The nodes (top-level graph) that run in the 16x8 mode. */
	char **int16_nodes;
	size_t num_int16_nodes;
	/* The CPU options compiled with (npu_compile_options.cpu). */
	struct npu_cpu_options cpu;
	/*
	 * The same code on the other devices of the model's set: replica k
	 * (1 ..) is replica_dev[k] with replica_consts[k][segment], made by
	 * npu_compiled_replicate(). Replica 0 is 'dev' with each segment's
	 * 'consts'.
	 */
	struct npu_device *replica_dev[NPU_DEVICE_SET_MAX];
	struct npu_buffer **replica_consts[NPU_DEVICE_SET_MAX];
};

/* Record a warning on 'c' (dropped when out of memory or c is NULL). */
void npu_compiled_warn(struct npu_compiled *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A segment group's run state for one session: segments of one session
 * share its arena, so at most one is in flight (runtime/npu_segment_op.c).
 */
struct npu_segment_group {
	struct npu_segment_rt *inflight;
	/* Bumped as each run of the session begins (npu_compiled_run_begin):
	 * a segment's per-run totals belong to the run of this number. */
	uint64_t epoch;
};

/*
 * One session's binding of a compiled model: its own device arena and
 * command streams that address it; the constants stay shared. Sessions on
 * different threads therefore run the same compiled model at once.
 */
struct npu_compiled_run {
	struct npu_compiled *c;
	size_t replica;			/* its device (npu_compiled.replica_dev) */
	struct npu_device *dev;
	size_t *seg_replica;		/* per segment: the replica it runs on */
	/* Per replica its segments use: the session's arena there. */
	bool used[NPU_DEVICE_SET_MAX];
	struct npu_buffer *arenas[NPU_DEVICE_SET_MAX];
	void *arena_maps[NPU_DEVICE_SET_MAX];
	uint64_t arena_bytes[NPU_DEVICE_SET_MAX];
	struct npu_segment_group group;
	struct npu_segment_rt **rts;	/* per segment (segment_rt.h) */
};

/*
 * A run on replica 'replica' of c (0: c->dev); with seg_replicas (per
 * segment), segment i runs on replica seg_replicas[i] instead (pipeline
 * mode), with an arena on each device used. The replicas must exist.
 */
npu_status npu_compiled_run_create(struct npu_compiled *c, size_t replica,
				   const size_t *seg_replicas,
				   struct npu_compiled_run **out,
				   struct npu_error *err);
/*
 * Replica 'replica' (1 .. NPU_DEVICE_SET_MAX - 1) of c on 'device': the
 * same command streams, checked against that device as a compiled file's
 * are (once), and the constants of the segments in 'want' (NULL: all)
 * uploaded to it, each once; the caller serializes calls and their runs'
 * creation.
 */
npu_status npu_compiled_replicate(struct npu_compiled *c, size_t replica,
				  struct npu_device *device, const bool *want,
				  struct npu_error *err);
/*
 * The constants on the device compiled for (replica 0), after a bind that
 * deferred them: of the segments in 'want' (NULL: all) that lack them,
 * each uploaded once. Pipeline mode puts one stage's there, and all when
 * a run falls back to that device alone.
 */
npu_status npu_compiled_home_consts(struct npu_compiled *c, const bool *want,
				    struct npu_error *err);
void npu_compiled_run_destroy(struct npu_compiled_run *run);
/* A run of the session begins: per-run totals of its segments start over
 * (a subgraph's segment runs once per iteration). */
void npu_compiled_run_begin(struct npu_compiled_run *run);
/* The compiled model an NpuSegment node belongs to, else NULL. */
struct npu_compiled *npu_segment_node_compiled(const struct npu_node *node);
/* The run state an NpuSegment node's op gets (ctx->state), else NULL. */
void *npu_compiled_run_node_state(const struct npu_compiled_run *run,
				  const struct npu_node *node);

/*
 * Compile 'graph' (already imported, sorted and inferred with fixed input
 * shapes) in place: NPU segments are replaced by NpuSegment nodes bound to
 * opts->device. On error the graph may have been rewritten by passes but
 * is still a valid fp32 graph.
 */
npu_status npu_compile_graph(struct npu_graph *graph,
			     const struct npu_compile_options *opts,
			     struct npu_compiled **out, struct npu_error *err);
void npu_compiled_free(struct npu_compiled *c);

/*
 * The graph rewrites compilation applies around calibration, exposed so
 * that loading a compiled model reproduces the same graph: 'pre' before
 * calibration (QDQ parameters land in *qdq), 'fuse' after it.
 */
npu_status npu_compile_passes_pre(struct npu_graph *graph,
				  struct npu_qdq_table *qdq,
				  struct npu_error *err);
npu_status npu_compile_passes_fuse(struct npu_graph *graph,
				   struct npu_error *err);

/*
 * Bind c's segments to 'device': put their constants on it and replace
 * each segment's nodes in 'graph' by an NpuSegment node. Sessions then
 * make their runs (npu_compiled_run_create).
 */
npu_status npu_compiled_bind(struct npu_compiled *c, struct npu_graph *graph,
			     struct npu_device *device, struct npu_error *err);
/*
 * The device half of npu_compiled_bind(), for segments already bound to
 * their NpuSegment nodes (a compiled file's graph): code (generated only
 * if the segment brought none, or to profile) and constants on 'device'.
 */
npu_status npu_compiled_attach(struct npu_compiled *c, struct npu_device *device,
			       struct npu_error *err);
/*
 * Generate a segment's code once, at the canonical addresses (reloc.h):
 * the constants, the counts and the stream into seg; with 'profile' only
 * the stream with per-op timestamps. Counted in seg->compiled. The
 * runtime-only library has no code generator: NPU_ERR_UNSUPPORTED.
 */
npu_status npu_segment_generate(struct npu_segment *seg, struct npu_device *dev,
				uint32_t sram_size, bool profile, struct npu_error *err);
/*
 * NPU_OK when a device reporting 'info' runs this library's command
 * streams (same ISA major, minor at least ours); else NPU_ERR_UNSUPPORTED
 * naming both versions. npu_compiled_bind() checks it.
 */
npu_status npu_compiled_isa_check(const struct npu_device_info *info,
				  struct npu_error *err);

/*
 * Subgraph paths: for each level, the control-flow node's key (its first
 * output's name) and the graph attribute's name, each followed by '\n'
 * ("loop_out\nbody\n"). NULL or "" is 'top' itself; NULL when the path
 * names no subgraph of 'top'.
 */
struct npu_graph *npu_subgraph_at(struct npu_graph *top, const char *path);
/* A control-flow node's key in a subgraph path: its first output's name. */
const char *npu_subgraph_key(const struct npu_node *n);

/* Free one segment (and its device binding). */
void npu_segment_free(struct npu_segment *seg);
void npu_segment_stream_free(struct npu_segment_stream *s);

/* ---- Stages (one file each) ---- */

/* calibrate.c: run the fp32 graph over the calibration sets. */
npu_status npu_calibrate(struct npu_graph *graph,
			 const struct npu_compile_options *opts,
			 struct npu_calib_table *table, struct npu_error *err);
/*
 * The same, from opts->calib_cache when it holds a range for every float
 * value of the graph (ranges belong to tensors, not to shapes: a model
 * planned at a new shape is not calibrated again); else calibrate and add
 * the ranges to the cache. The caller serializes use of one cache.
 */
npu_status npu_calibrate_cached(struct npu_graph *graph,
				const struct npu_compile_options *opts,
				struct npu_calib_table *table, struct npu_error *err);
/* The calibration samples of 'opts': how many, and sample k ('set' gets
 * one tensor per graph input; the caller frees them when *owned). */
npu_status npu_calib_count_samples(struct npu_graph *graph,
				   const struct npu_compile_options *opts, size_t *count,
				   struct npu_error *err);
npu_status npu_calib_get_sample(struct npu_graph *graph, const struct npu_compile_options *opts,
				size_t k, struct npu_tensor **set, bool *owned,
				struct npu_error *err);
/* After a sample: frees the n tensors of 'set' if they were 'owned'. */
void npu_calib_sample_release(struct npu_tensor **set, size_t n, bool owned);
struct npu_calib_cache;
struct npu_calib_cache *npu_calib_cache_create(void);
void npu_calib_cache_destroy(struct npu_calib_cache *cache);
/* How many calibration runs filled it. */
size_t npu_calib_cache_runs(const struct npu_calib_cache *cache);
void npu_calib_table_free(struct npu_calib_table *t);

/* partition.c: can 'node' run on the NPU as it stands? (reason on false) */
bool npu_node_supported(const struct npu_graph *g, const struct npu_node *n,
			const struct npu_device_info *dev, char *why,
			size_t why_size);

/* The MACs of a node on any backend (0 for non-MAC ops). */
uint64_t npu_node_macs(const struct npu_node *n);

/* The activation function a node applies (fused attribute or its op). */
struct npu_act_fn {
	const char *op;		/* "Relu", "Clip", ... or NULL: none */
	float alpha, beta, min, max;
};

bool npu_node_activation(const struct npu_node *n, struct npu_act_fn *fn);

#endif /* NPU_COMPILER_H */
