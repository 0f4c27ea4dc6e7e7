/* SPDX-License-Identifier: MIT */
/*
 * npu_compress.h - model compression: prune an ONNX model's weights with
 * one-shot reconstruction from calibration data (issue 35; `npu compress`).
 *
 *	struct npu_compress_options o;
 *	struct npu_compress_result *r;
 *
 *	npu_compress_options_init(&o);
 *	o.method = NPU_PRUNE_CHANNELS;
 *	o.sparsity = 0.25;
 *	o.calib_dir = "calib";
 *	if (npu_compress_file("det.onnx", &o, &r) != NPU_OK)
 *		fprintf(stderr, "%s\n", npu_last_error());
 *	... r->onnx, r->onnx_size: the compressed model; r->layers: the report
 *	npu_compress_result_free(r);
 *
 * The output is a standard ONNX model: the same nodes, with new weight
 * initializers (and, for channel pruning, smaller ones). Pruned layers:
 * Conv (groups 1; channel pruning also carries depthwise convs along)
 * and MatMul / Gemm whose weights are initializers. Documentation/compress.md.
 */
#ifndef NPU_COMPRESS_H
#define NPU_COMPRESS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* memset in the *_init() macro */

#include "npu/npu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum npu_prune_method {
	NPU_PRUNE_MAGNITUDE = 1,	/* unstructured: the smallest |w| of each layer */
	NPU_PRUNE_NM = 2,		/* N:M: keep N of every M along the input channels */
	NPU_PRUNE_CHANNELS = 3,		/* remove output channels and what reads them */
};

struct npu_compress_options {
	size_t struct_size;	/* sizeof(struct npu_compress_options) */
	enum npu_prune_method method;	/* 0: NPU_PRUNE_MAGNITUDE */
	/* Fraction removed, in [0, 1): weights (magnitude) or output channels
	 * (channels); ignored by N:M (1 - N/M). Default 0.5. */
	double sparsity;
	int nm_n, nm_m;		/* N:M; 0: 2:4 */
	/* Calibration samples, as npu_model_options.calib_dir reads them. Required. */
	const char *calib_dir;
	/* Held-out samples for accuracy_target (NULL: the calibration set). */
	const char *eval_dir;
	/* > 0: per-layer sparsity by sensitivity so that the lowest output
	 * cosine against the original stays >= this on the held-out set
	 * (sparsity is then the most any layer gets). */
	double accuracy_target;
	int no_reconstruct;	/* 1: plain magnitude masks, no re-solve */
	/* Ridge term of the least squares, relative to the mean diagonal of
	 * X^T X; 0: 0.01. */
	double damping;
	/* im2col rows sampled per calibration sample and layer; 0: 256. */
	size_t rows_per_sample;
	/*
	 * Prune, then quantize and compile in one step. quantize:
	 * NULL (only prune), "int8", "int16" (npu_model_options.precision)
	 * or "mixed" (npu_model_options.accuracy_target = accuracy_target,
	 * which it then needs). The pruned model is calibrated on calib_dir
	 * and compiled for 'device' (NULL: "sim") exactly as
	 * npu_model_load_memory() + npu_model_get_plan() do at the
	 * calibration samples' shapes, and saved as a .npub at npub_path
	 * (required with quantize). With accuracy_target, the held-out check
	 * judges the quantized model against the original fp32 one.
	 */
	const char *quantize;
	const char *device;
	const char *npub_path;
};

NPU_API void npu_compress_options_init_sized(struct npu_compress_options *opts,
					     size_t struct_size);
#define npu_compress_options_init(opts) \
	npu_compress_options_init_sized((opts), sizeof(*(opts)))

/* One pruned (or skipped) layer; strings live as long as the result. */
struct npu_compress_layer {
	const char *node;	/* node name ("#i" when unnamed) */
	const char *op_type;	/* Conv, MatMul, Gemm */
	const char *pattern;	/* "unstructured", "2:4", "channels", "skipped" */
	const char *note;	/* why skipped or refused, or "" */
	double sparsity;	/* zero (or removed) weights / original weights */
	/* Local SQNR (dB) of the layer's output on the calibration inputs:
	 * plain magnitude pruning, and after reconstruction (equal when off). */
	double sqnr_magnitude_db, sqnr_db;
	uint64_t macs_before, macs_after;	/* per run at the calibration shapes */
	uint64_t weight_bytes_before, weight_bytes_after;	/* nonzero fp32 weights */
};

struct npu_compress_result {
	void *onnx;		/* the compressed ModelProto */
	size_t onnx_size;
	size_t num_layers;
	struct npu_compress_layer *layers;
	/* Channel groups refused (channels): one message each naming why. */
	size_t num_notes;
	char **notes;
	uint64_t macs_before, macs_after;	/* whole model, counted layers */
	uint64_t weight_bytes_before, weight_bytes_after;
	size_t calib_samples, eval_samples;
	/* Lowest output cosine, compressed against original, over the float
	 * outputs and the held-out (else calibration) samples. */
	double cosine;
	/* 1: the sequential pass was kept: each layer re-solved, in order, on
	 * the inputs the layers pruned before it give, toward the original
	 * outputs; the layers' SQNRs are then measured that way. 0: one-shot
	 * only (no_reconstruct, or the sequential pass did not raise the
	 * held-out cosine). */
	int sequential;
	/*
	 * With npu_compress_options.quantize: the lowest output
	 * cosine of the compiled (quantized) model on the device against the
	 * ORIGINAL fp32 model, over the held-out (else calibration) samples;
	 * the .npub is at npu_compress_options.npub_path. 0 without quantize.
	 */
	double quantized_cosine;
};

NPU_API npu_status npu_compress_file(const char *path, const struct npu_compress_options *opts,
				     struct npu_compress_result **out);
NPU_API npu_status npu_compress_memory(const void *data, size_t size, const char *name,
				       const struct npu_compress_options *opts,
				       struct npu_compress_result **out);
NPU_API void npu_compress_result_free(struct npu_compress_result *result);

#ifdef __cplusplus
}
#endif

#endif /* NPU_COMPRESS_H */
