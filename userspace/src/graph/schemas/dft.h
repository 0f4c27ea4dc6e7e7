/* SPDX-License-Identifier: MIT */
/* What op_dft.c's schemas and kernels share (graph/schemas/dft.c). */
#ifndef NPU_SCHEMA_DFT_H
#define NPU_SCHEMA_DFT_H

#include "graph/schemas/schema_common.h"

struct npu_mel_args {
	int64_t bins, dft_len, rate;
	double lo_hz, hi_hz;
};

/* The signal axis (of the squeezed, complex signal) and dft_length. */
npu_status npu_dft_args(const struct npu_node *node, int rank,
			const struct npu_tensor *len_t,
			const struct npu_tensor *axis_t, int64_t in_len,
			int *axis, int64_t *n_fft, struct npu_error *err);

/* frame_length: the input, else the window's length, else the signal's. */
npu_status npu_stft_args(const struct npu_node *node,
			 const struct npu_shape *xs,
			 const struct npu_tensor *step_t,
			 const struct npu_shape *win,
			 const struct npu_tensor *flen_t, int64_t *step,
			 int64_t *flen, int64_t *frames,
			 struct npu_error *err);

npu_status npu_mel_args(const struct npu_node *node,
			const struct npu_tensor *const *t,
			struct npu_mel_args *a, struct npu_error *err);

#endif /* NPU_SCHEMA_DFT_H */
