/* SPDX-License-Identifier: MIT */
/*
 * npu_plan.h - a model prepared for one concrete set of input shapes
 * (npu_model.h explains the objects): its inputs and outputs, where every
 * node runs and why, the quantization report, the mixed-precision search's
 * result, and saving it as a compiled model (.npub).
 */
#ifndef NPU_PLAN_H
#define NPU_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* memset in the *_init() macros */

#include "npu/npu_status.h"
#include "npu/npu_tensor.h"
#include "npu/npu_model.h"	/* enum npu_parallel_mode */

#ifdef __cplusplus
extern "C" {
#endif

struct npu_model;

/* ---- Plan ------------------------------------------------------------------ */

struct npu_plan;

/*
 * The plan for these input shapes (by name, or by position when name is
 * NULL; only rank and dims are read), made now if it is not cached. Every
 * input must be given with every dim known. Returns a reference: release
 * it with npu_plan_release().
 */
NPU_API npu_status npu_model_get_plan(struct npu_model *model,
				      const struct npu_host_tensor *shapes,
				      size_t count, struct npu_plan **out);
NPU_API void npu_plan_release(struct npu_plan *plan);
NPU_API const struct npu_model *npu_plan_model(const struct npu_plan *plan);

/* Concrete shapes of the plan's inputs and outputs. */
NPU_API npu_status npu_plan_input_info(const struct npu_plan *plan,
				       size_t index,
				       struct npu_tensor_info *info);
NPU_API npu_status npu_plan_output_info(const struct npu_plan *plan,
					size_t index,
					struct npu_tensor_info *info);

/* Where a node of the source model runs, and why (frozen layout). */
struct npu_node_placement {
	const char *node;	/* node name ("#index" if unnamed) */
	const char *op_type;
	int on_npu;		/* 1: NPU segment, 0: CPU */
	int segment;		/* NPU segment index, -1 on the CPU */
	uint64_t macs;		/* multiply-accumulates of the node */
	const char *reason;	/* "CONV2D on the MAC array", "op not in the NPU ISA" */
};

/*
 * Placements of every node of the plan, by the provider that runs it
 * (npu/npu_provider.h; since 2.2 also on "cpu", where all are the CPU's).
 */
NPU_API size_t npu_plan_num_placements(const struct npu_plan *plan);
NPU_API npu_status npu_plan_placement(const struct npu_plan *plan,
				      size_t index,
				      struct npu_node_placement *placement);
/*
 * Since 2.2: the execution provider that runs placement 'index' ("npu",
 * "cpu" or an application's), or NULL when there is no such placement.
 */
NPU_API const char *npu_plan_placement_provider(const struct npu_plan *plan, size_t index);

/*
 * Since 2.2: what compiling the plan lost and could not avoid (a bias that
 * saturates int32, weight scales widened for a bias), one line per node;
 * the engine's log says the count once per model, at warning level.
 */
/*
 * How a plan's runs use the model's devices, and the cost model's figures
 * (modeled NPU cycles: the compiler's prediction per segment).
 */
struct npu_parallel_info {
	size_t struct_size;		/* sizeof(struct npu_parallel_info) */
	enum npu_parallel_mode mode;	/* DATA or PIPELINE, as resolved */
	size_t devices;			/* of the model's set */
	size_t stages;			/* pipeline stages (1 in data mode) */
	uint64_t run_cycles;		/* one run, all of its NPU work */
	/* The slowest device's share of one run: the modeled interval
	 * between runs at full load in pipeline mode. */
	uint64_t stage_cycles_max;
	/* Modeled throughput against one device: data parallel,
	 * 'devices'; pipeline, run_cycles / stage_cycles_max. */
	double data_speedup, pipeline_speedup;
	/* Bytes that cross from one stage's device to the next per run
	 * (through the host); 0 in data mode. */
	uint64_t crossing_bytes;
	/* Device memory of the fullest device: constants and one session's
	 * arena; and the same for the whole model on one device. */
	uint64_t device_bytes_max, model_bytes;
	char why[256];			/* the cost model's reasoning, one line */
};

NPU_API void npu_parallel_info_init_sized(struct npu_parallel_info *info, size_t struct_size);
#define npu_parallel_info_init(info) npu_parallel_info_init_sized((info), sizeof(*(info)))
NPU_API npu_status npu_plan_parallel_info(const struct npu_plan *plan,
					  struct npu_parallel_info *out);

NPU_API size_t npu_plan_num_warnings(const struct npu_plan *plan);
NPU_API const char *npu_plan_warning(const struct npu_plan *plan, size_t index);

/*
 * The quantization report of a plan compiled for an NPU device: per NPU
 * node, SQNR (dB) and cosine of its int8 output (dequantized) against the
 * fp32 output, 'local' (the node alone, on fp32 inputs quantized with its
 * input parameters: the error it adds) and 'e2e' (the compiled model run
 * on the device: the error accumulated up to it), over at most
 * max_samples (0: all) of the model's calibration samples. Layers are
 * sorted worst local SQNR first; NAN where the fp32 value is unknown.
 */
struct npu_quant_layer {
	const char *node;	/* a pointwise group: its last node */
	const char *op_type;
	const char *value;	/* the node's output */
	int segment;
	double local_sqnr_db, local_cosine;
	double e2e_sqnr_db, e2e_cosine;
};

struct npu_quant_report {
	size_t num_layers;
	struct npu_quant_layer *layers;
	/* The model's outputs, compiled run against fp32 (e2e_* only;
	 * node and value are the output's name, segment -1). */
	size_t num_outputs;
	struct npu_quant_layer *outputs;
	size_t samples;
	/* Segment output elements the host's int8 emulation (firmware-sim's
	 * reference kernels) reproduced, and of those how many differed from
	 * what the device computed: 0 unless something is broken. */
	uint64_t compared, mismatches;
};

NPU_API npu_status npu_plan_quant_report(struct npu_plan *plan, size_t max_samples,
					 struct npu_quant_report **out);
NPU_API void npu_quant_report_free(struct npu_quant_report *report);

/*
 * What npu_model_options.accuracy_target did to a plan. Cosines are
 * against fp32 on the held-out samples, the lowest over the float
 * outputs: with every NPU-capable node in int8 (only keep_fp32 on the
 * CPU) and as planned. Costs per run, before and after: NPU segments,
 * modeled NPU cycles (mean over the hold-out), MACs left to the CPU.
 */
struct npu_mixed_precision {
	size_t struct_size;		/* sizeof(struct npu_mixed_precision) */
	double target;			/* 0: the plan had no target */
	size_t calib_samples, holdout_samples;
	double holdout_cosine_int8, holdout_cosine;
	int reached;			/* holdout_cosine >= target */
	size_t compilations;		/* the search's trial compilations */
	size_t num_kept;		/* nodes the search kept in fp32 */
	const char *const *kept;	/* their names, most sensitive first */
	const double *kept_sqnr_db;	/* output SQNR (dB) with only that node
					 * in int8: what ranked it */
	size_t segments_int8, segments;
	uint64_t npu_cycles_int8, npu_cycles;
	uint64_t cpu_macs_int8, cpu_macs;
	uint32_t clock_mhz;		/* what the cycles count */
	/* The search promotes nodes to int16 (16x8 mode) before it keeps
	 * any in fp32: the nodes that run in int16, in graph order. */
	size_t num_int16;
	const char *const *int16;
	double holdout_cosine_int16;	/* best with int16 alone (0: not tried) */
};

#define npu_mixed_precision_init(mp) \
	((void)memset((mp), 0, sizeof(*(mp))), (mp)->struct_size = sizeof(*(mp)))

/* Pointers in *out live as long as the plan. */
NPU_API npu_status npu_plan_mixed_precision(const struct npu_plan *plan,
					    struct npu_mixed_precision *out);

/*
 * Save a plan compiled for an NPU device as a finished compiled model
 * (.npub: 'npu run FILE.npub'): its graph as compiled and each NPU
 * segment's generated code, so that loading it imports nothing, runs no
 * graph pass and generates no code (npu_model_stats counts them). Its
 * inputs are fixed to the shapes it was compiled for.
 */
NPU_API npu_status npu_plan_save_compiled(const struct npu_plan *plan,
					  const char *path);

/* Since 2.1: how npu_plan_save_compiled_with() writes the file. */
struct npu_save_options {
	size_t struct_size;	/* sizeof(struct npu_save_options) */
	/*
	 * 1 (the default): keep the source ONNX model in the file, so that
	 * the loaded model can also run on the CPU device or give a
	 * quantization report (each imports it once). 0: only what running
	 * on an NPU device needs; those other uses are then an error
	 * (NPU_ERR_UNSUPPORTED) naming the compiled shapes.
	 */
	int keep_source;
};

NPU_API void npu_save_options_init_sized(struct npu_save_options *opts, size_t struct_size);
#define npu_save_options_init(opts) \
	npu_save_options_init_sized((opts), sizeof(*(opts)))

/* npu_plan_save_compiled() with options; opts may be NULL (the defaults). */
NPU_API npu_status npu_plan_save_compiled_with(const struct npu_plan *plan, const char *path,
					       const struct npu_save_options *opts);

#ifdef __cplusplus
}
#endif

#endif /* NPU_PLAN_H */
