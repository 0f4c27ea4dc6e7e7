/* SPDX-License-Identifier: MIT */
/*
 * quant_report.h - per-layer error of the int8 NPU segments against fp32
 * (internal; public form: npu_plan_quant_report() in <npu/npu_model.h>).
 *
 * For every lop (one per NPU node; a pointwise group is its last node) the
 * report gives SQNR and cosine of its dequantized int8 output against the
 * fp32 value of the same name:
 *
 *   local  the lop alone, its inputs the fp32 values quantized with its
 *          input parameters: the error this layer adds;
 *   e2e    the whole compiled graph run on the device, each segment's
 *          internal values recomputed on the host from the segment's
 *          actual inputs: the error accumulated up to this layer.
 *
 * The int8 arithmetic is firmware-sim's reference kernels (npu_ref_*), which
 * every device path equals bit for bit; the report checks it against the
 * segment outputs the device itself produced (mismatches counts elements
 * that differ, and should be 0).
 */
#ifndef NPU_COMPILER_QUANT_REPORT_H
#define NPU_COMPILER_QUANT_REPORT_H

#include "compiler/compiler.h"

/* Sums over every compared element: SQNR and cosine follow from them. */
struct npu_err_acc {
	double rr, ee, rq, qq;	/* sum ref^2, (ref - q)^2, ref * q, q^2 */
	uint64_t n;
};

struct npu_qr_layer {
	char *node, *op_type, *value;
	int segment;
	struct npu_err_acc local, e2e;
};

struct npu_qr {
	struct npu_qr_layer *layers;	/* sorted: worst local SQNR first */
	size_t count;
	/* The graph outputs, compiled run against fp32 (e2e only). */
	struct npu_qr_layer *outputs;
	size_t num_outputs;
	size_t samples;
	uint64_t compared;		/* segment output elements checked */
	uint64_t mismatches;		/* of which the host emulation differed */
};

/* 10 log10(sum ref^2 / sum err^2) (inf: no error), and the cosine. */
double npu_err_sqnr_db(const struct npu_err_acc *a);
double npu_err_cosine(const struct npu_err_acc *a);

/*
 * 'ref': the model's fp32 graph with the same input shapes, after
 * npu_compile_passes_pre() (the graph calibration runs, so every value a
 * segment holds exists there by name). 'compiled': the plan's graph with
 * its NpuSegment nodes bound to a device, 'c' its compilation. Samples are
 * the calibration source of 'opts' (at most max_samples; 0: all).
 */
npu_status npu_quant_report_build(struct npu_graph *ref, struct npu_graph *compiled,
				  const struct npu_compiled *c,
				  const struct npu_compile_options *opts, size_t max_samples,
				  struct npu_qr *out, struct npu_error *err);
/*
 * Sensitivity of the model's outputs to each NPU layer: per layer, the
 * fp32 graph 'ref' (as for the report) runs with that one layer's output
 * replaced by its int8 result on quantized fp32 inputs (its local error),
 * and 'e2e' accumulates the graph outputs against fp32 ('local' stays
 * empty). Sorted worst output SQNR first. 'c' only needs its segments
 * (bound or not).
 */
npu_status npu_quant_sensitivity(struct npu_graph *ref, const struct npu_compiled *c,
				 const struct npu_compile_options *opts, size_t max_samples,
				 struct npu_qr *out, struct npu_error *err);
void npu_quant_report_clear(struct npu_qr *r);

#endif /* NPU_COMPILER_QUANT_REPORT_H */
