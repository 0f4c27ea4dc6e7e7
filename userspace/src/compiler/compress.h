/* SPDX-License-Identifier: MIT */
/*
 * compress.h - model compression (npu compress, issue 35): pruning with
 * one-shot reconstruction from calibration data (internal).
 * compress.c chooses what to prune (layers, masks, channel groups, the
 * per-layer search for an accuracy target) and writes the model;
 * compress_reconstruct.c re-solves the kept weights.
 */
#ifndef NPU_COMPRESS_INTERNAL_H
#define NPU_COMPRESS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler/compiler.h"
#include "npu/npu_compress.h"

/* Samples as the compiler's calibration reads them (npu_compile_options). */
struct npu_cz_samples {
	npu_status (*count)(void *arg, const struct npu_graph *graph, size_t *count,
			    struct npu_error *err);
	npu_status (*sample)(void *arg, const struct npu_graph *graph, size_t index,
			     struct npu_tensor **inputs, struct npu_error *err);
	void *arg;
};

/*
 * With o.quantize: compile the pruned model (its ONNX bytes) for the NPU
 * the way the runtime loads a model (calibrated on o.calib_dir), run it
 * on 'count' samples of src at g's input shapes, and set *cos to the
 * lowest cosine of its float outputs against refs[k * g->num_outputs + i]
 * (the original fp32 model's). save_path non-NULL: write the .npub there.
 */
struct npu_cz_quantizer {
	npu_status (*run)(void *arg, const void *onnx, size_t size, const struct npu_graph *g,
			  const struct npu_cz_samples *src, size_t count,
			  struct npu_tensor *const *refs, const char *save_path, double *cos,
			  struct npu_error *err);
	void *arg;
};

struct npu_cz_config {
	struct npu_compress_options o;	/* defaults filled in, checked */
	const struct npu_graph_runner *runner;
	struct npu_cz_samples calib;
	struct npu_cz_samples eval;	/* count NULL: the calibration set */
	struct npu_cz_quantizer quant;	/* run NULL: no quantization */
};

/*
 * Compress the serialized model; fills res (layers, notes, the new
 * model). Errors name the layer, the option or the file.
 */
npu_status npu_compress_model(const void *data, size_t size, const char *source,
			      const struct npu_cz_config *cfg,
			      struct npu_compress_result *res, struct npu_error *err);
void npu_compress_result_clear(struct npu_compress_result *res);
/* Cosine of two float tensors' data (0 when their sizes differ; 1 if both are 0). */
double npu_cz_cosine(const float *a, size_t na, const float *b, size_t nb);

/* ---- compress_reconstruct.c: H is n x n (X^T X), weights rows x n ---- */

double npu_cz_mean_diag(const double *h, size_t n);
/* One mask keep[n] for all rows: exact ridge least squares into out. */
npu_status npu_cz_solve_shared(const double *h, size_t n, const float *w, size_t rows,
			       const bool *keep, double damping, float *out);
/* A mask per row keep[rows * n]: the OBS sweep, in place on w. */
npu_status npu_cz_solve_masked(const double *h, size_t n, float *w, size_t rows,
			       const bool *keep, double damping);
/*
 * The sequential pass: Hp = Xp^T Xp of the pruned model's inputs, targets
 * t = Xp^T X w (the original outputs): out = (Hp + lambda I)^-1 (t +
 * lambda w0), then the mask keep[rows * n] (NULL: none) by the OBS sweep.
 */
npu_status npu_cz_solve_cross(const double *hp, size_t n, const double *t, const float *w0,
			      size_t rows, const bool *keep, double damping, float *out);
/* SQNR of Xp q against X w: sum w'Hw / sum (q'Hp q - 2 q't + w'Hw). */
double npu_cz_sqnr_cross_db(const double *h, size_t n, const float *w, const double *hp,
			    size_t n1, const double *t, const float *q, size_t rows,
			    const bool *row_used);
/* 10 log10(sum w'Hw / sum (w-q)'H(w-q)) over the rows used (NULL: all). */
double npu_cz_sqnr_db(const double *h, size_t n, const float *w, const float *q, size_t rows,
		      const bool *row_used);

#endif /* NPU_COMPRESS_INTERNAL_H */
