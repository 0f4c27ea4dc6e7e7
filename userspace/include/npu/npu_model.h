/* SPDX-License-Identifier: MIT */
/*
 * npu_model.h - load an ONNX model and run it.
 *
 *	struct npu_model *m;
 *	npu_model_create(NULL, &m);
 *	if (npu_model_load_file(m, "det.onnx") != NPU_OK)
 *		fprintf(stderr, "%s\n", npu_model_last_error(m));
 *	npu_model_run(m, inputs, 1);
 *	npu_model_output(m, 0, &out);
 *	npu_model_destroy(m);
 *
 * Inputs may have symbolic dimensions ("batch", "H"): fix them with
 * npu_model_set_input_shape() or just run with concrete tensors, which
 * re-plans the model for the new shapes. Every call returns an npu_status;
 * npu_model_last_error() says what failed, naming the file, the node, the
 * attribute or input and the reason. A model is not thread-safe; use one
 * per thread.
 */
#ifndef NPU_MODEL_H
#define NPU_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "npu/npu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_MODEL_MAX_RANK 8

/* Element types; the values are ONNX's TensorProto.DataType. */
enum npu_data_type {
	NPU_TYPE_UNDEFINED = 0,
	NPU_TYPE_FLOAT = 1,
	NPU_TYPE_UINT8 = 2,
	NPU_TYPE_INT8 = 3,
	NPU_TYPE_UINT16 = 4,
	NPU_TYPE_INT16 = 5,
	NPU_TYPE_INT32 = 6,
	NPU_TYPE_INT64 = 7,
	NPU_TYPE_BOOL = 9,
	NPU_TYPE_FLOAT16 = 10,
	NPU_TYPE_DOUBLE = 11,
	NPU_TYPE_UINT32 = 12,
	NPU_TYPE_UINT64 = 13,
};

/* Bytes per element (0 for undefined) and a name ("float", "int64"). */
size_t npu_data_type_size(enum npu_data_type type);
const char *npu_data_type_name(enum npu_data_type type);

struct npu_model_options {
	int threads;		/* CPU threads including the caller; 0: all cores */
	/*
	 * "cpu" (default): everything in fp32 on the CPU. "sim" (the NPU
	 * simulator in-process) or "accel" (/dev/accel through the driver):
	 * the model is compiled, NPU-capable parts run int8 on the NPU.
	 */
	const char *device;
	int profile;		/* non-zero: time every node (npu_model_op_stat) */
	/* Compilation for NPU devices (ignored on "cpu"): */
	const char *calib_dir;	/* calibration .npy files; NULL: random inputs */
	const char *calib_method;	/* "minmax" (default), "percentile", "entropy" */
	double calib_percentile;	/* 0: 99.99 */
	uint64_t calib_seed;	/* random calibration inputs; 0: 1 */
	int calib_samples;	/* number of random sets; 0: 4 */
	/*
	 * Non-zero: compile only in npu_model_compile() or the first run, not
	 * at load or npu_model_set_input_shape() (saves compiling twice when
	 * shapes are fixed after loading). Without it, a model compiles as
	 * soon as every input dimension is known.
	 */
	int defer_compile;
	/*
	 * Non-zero: keep every NPU-capable node on the NPU, even segments the
	 * cost model finds too small to pay for their transfers (conformance
	 * tests of the NPU's arithmetic on one-op models use this).
	 */
	int keep_small_segments;
};

void npu_model_options_init(struct npu_model_options *opts);

/* What a model input or output looks like. */
struct npu_tensor_info {
	const char *name;
	enum npu_data_type dtype;
	int rank;		/* -1: unknown rank */
	int64_t dims[NPU_MODEL_MAX_RANK];	/* -1: not fixed */
	const char *dim_names[NPU_MODEL_MAX_RANK];	/* symbolic name or NULL */
};

/* A dense, C-order tensor in host memory. */
struct npu_host_tensor {
	const char *name;	/* input name; NULL: by position */
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
	void *data;
	size_t nbytes;
};

struct npu_model;

/* opts may be NULL (defaults). The model holds its last error. */
npu_status npu_model_create(const struct npu_model_options *opts,
			    struct npu_model **out);
void npu_model_destroy(struct npu_model *model);
const char *npu_model_last_error(const struct npu_model *model);

npu_status npu_model_load_file(struct npu_model *model, const char *path);
/* 'name' names the model in messages; the bytes are copied. */
npu_status npu_model_load_memory(struct npu_model *model, const void *data,
				 size_t size, const char *name);

size_t npu_model_num_inputs(const struct npu_model *model);
size_t npu_model_num_outputs(const struct npu_model *model);
/* Pointers in 'info' live as long as the model. Shapes reflect the current
 * plan: input dims fixed by set_input_shape / a run / a .npub are shown
 * (dim_names keep the symbolic names), outputs follow from them. */
npu_status npu_model_input_info(const struct npu_model *model, size_t index,
				struct npu_tensor_info *info);
npu_status npu_model_output_info(const struct npu_model *model, size_t index,
				 struct npu_tensor_info *info);

/* Fix the dims of input 'name'; dims the model fixes must match. */
npu_status npu_model_set_input_shape(struct npu_model *model, const char *name,
				     int rank, const int64_t *dims);

/* Run with 'count' inputs (by name, or by position when name is NULL). */
npu_status npu_model_run(struct npu_model *model,
			 const struct npu_host_tensor *inputs, size_t count);
/* Output 'index' of the last run; data is valid until the next run. */
npu_status npu_model_output(const struct npu_model *model, size_t index,
			    struct npu_host_tensor *out);

/* Seconds of the last npu_model_run(). */
double npu_model_last_run_seconds(const struct npu_model *model);

/*
 * Per-op-type statistics, by decreasing time when profiling (counts of
 * nodes in the plan otherwise): op type, nodes, calls, total milliseconds.
 */
size_t npu_model_num_op_stats(const struct npu_model *model);
npu_status npu_model_op_stat(const struct npu_model *model, size_t index,
			     const char **op_type, size_t *nodes,
			     uint64_t *calls, double *total_ms);

/* ---- NPU compilation (devices "sim" and "accel") ---- */

/*
 * Compile now for the current input shapes (every dim must be known).
 * A no-op on "cpu" and for a model already compiled for these shapes.
 */
npu_status npu_model_compile(struct npu_model *model);

/* Where a node of the source model runs, and why. */
struct npu_node_placement {
	const char *node;	/* node name ("#index" if unnamed) */
	const char *op_type;
	int on_npu;		/* 1: NPU segment, 0: CPU */
	int segment;		/* NPU segment index, -1 on the CPU */
	uint64_t macs;		/* multiply-accumulates of the node */
	const char *reason;	/* "CONV2D on the MAC array", "op not in the NPU ISA" */
};

/* Placements of the compiled model's nodes (0 before compilation). */
size_t npu_model_num_placements(const struct npu_model *model);
npu_status npu_model_placement(const struct npu_model *model, size_t index,
			       struct npu_node_placement *placement);

struct npu_model_npu_stats {
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
	double last_npu_wall_ms;	/* host time inside NPU segment ops: quantize,
					 * submit, wait, dequantize (CPU ops that ran
					 * meanwhile are not counted) */
};

npu_status npu_model_npu_stats(const struct npu_model *model,
			       struct npu_model_npu_stats *stats);

/* One NPU segment (one job per run): its share of the work, last run. */
struct npu_model_segment_stats {
	size_t nodes;			/* source nodes it replaces */
	const char *first_node, *last_node;
	uint64_t macs;
	uint64_t ideal_mac_cycles;	/* macs / MAC array size: the roofline */
	uint64_t instructions;
	uint64_t last_cycles;		/* modeled cycles of the last run */
};

npu_status npu_model_npu_segment(const struct npu_model *model, size_t index,
				 struct npu_model_segment_stats *stats);

/*
 * One NPU op (a lowered node) of the last run. Its modeled cycles come
 * from device timestamps around it, taken when the model was opened with
 * 'profile' set (0 otherwise); ideal_mac_cycles / cycles is its roofline.
 */
struct npu_model_op_stats {
	int segment;
	const char *node;		/* source node name */
	const char *kind;		/* "conv", "matmul", "pool", "eltwise", "lut" */
	uint64_t macs;
	uint64_t ideal_mac_cycles;	/* macs / MAC array size */
	uint64_t cycles;
};

size_t npu_model_npu_num_ops(const struct npu_model *model);
npu_status npu_model_npu_op(const struct npu_model *model, size_t index,
			    struct npu_model_op_stats *stats);

/* Save the compiled model (.npub): 'npu run FILE.npub' runs it. */
npu_status npu_model_save_compiled(struct npu_model *model, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* NPU_MODEL_H */
