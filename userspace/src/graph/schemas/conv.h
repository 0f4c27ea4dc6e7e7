/* SPDX-License-Identifier: MIT */
/* What the Conv-family schemas and kernels share (graph/schemas/conv.c). */
#ifndef NPU_SCHEMA_CONV_H
#define NPU_SCHEMA_CONV_H

#include "graph/schemas/schema_common.h"

/*
 * Conv-family arity, attributes ('attrs'), types and W's shape: float, with
 * 'others' float16 / bfloat16 (widened to float by the kernel) and double too.
 */
npu_status npu_conv_check_common(struct npu_infer_ctx *ctx, const char *const *attrs,
				 size_t max_inputs, bool others);
/*
 * Conv's output; with 'fused_attrs' (FusedConv's attributes) the fused
 * form's: float only, a 4th input Z shaped as the output, 1-D or 2-D.
 */
npu_status npu_conv_infer_common(struct npu_infer_ctx *ctx, const char *const *fused_attrs);
/* ConvTranspose's output; with 'fused_attrs' the fused form's (float only). */
npu_status npu_convt_infer_common(struct npu_infer_ctx *ctx, const char *const *fused_attrs);

struct npu_convt_geom {
	int n;
	int64_t in[3], k[3], stride[3], dil[3], pad_begin[3], out[3];
};

/* ConvTranspose's geometry: strides, dilations, pads and output dims. */
npu_status npu_convt_geom(const struct npu_node *node, const struct npu_shape *x,
			  const struct npu_shape *w, struct npu_convt_geom *g,
			  struct npu_error *err);

#endif /* NPU_SCHEMA_CONV_H */
