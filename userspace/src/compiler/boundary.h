/* SPDX-License-Identifier: MIT */
/*
 * boundary.h - a segment's boundary conversions (internal): fp32 NCHW (or
 * rows) <-> int8 NHWC (or rows) with act's parameters. The NpuSegment
 * kernel runs them on every job; the quantization report reuses them so
 * that its emulation quantizes exactly as a run does.
 */
#ifndef NPU_COMPILER_BOUNDARY_H
#define NPU_COMPILER_BOUNDARY_H

#include "compiler/compiler.h"

void npu_segment_quantize_in(const struct npu_tensor *t, const struct npu_act *a,
			     enum npu_layout layout, int8_t *dst);
void npu_segment_dequantize_out(const int8_t *src, const struct npu_act *a,
				enum npu_layout layout, struct npu_tensor *t);

#endif /* NPU_COMPILER_BOUNDARY_H */
