/* SPDX-License-Identifier: MIT */
/* What op_resize.c's schemas and kernels share (graph/schemas/resize.c). */
#ifndef NPU_SCHEMA_RESIZE_H
#define NPU_SCHEMA_RESIZE_H

#include "graph/schemas/schema_common.h"

enum npu_resize_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum npu_resize_ctm {
	CTM_HALF_PIXEL, CTM_HALF_PIXEL_SYMMETRIC, CTM_PYTORCH_HALF_PIXEL,
	CTM_ALIGN_CORNERS, CTM_ASYMMETRIC, CTM_TF_HALF_PIXEL_FOR_NN,
	CTM_TF_CROP_AND_RESIZE,
};
enum npu_resize_nearest { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL,
			  NM_FLOOR, NM_CEIL };

struct npu_resize {
	enum npu_resize_mode mode;
	enum npu_resize_ctm ctm;
	enum npu_resize_nearest nearest;
	float cubic_a, extrapolation;
	bool exclude_outside;
	int rank;
	int64_t in[NPU_MAX_RANK], out[NPU_MAX_RANK];
	double scale[NPU_MAX_RANK], roi_start[NPU_MAX_RANK], roi_end[NPU_MAX_RANK];
	bool known;		/* out[] known (scales / sizes constant) */
};

/*
 * Fills rs from the node and input 0's shape; 't' holds compute-time
 * tensors (NULL at infer time: constants are used).
 */
npu_status npu_resize_setup(const struct npu_node *node,
			    const struct npu_shape *x,
			    const struct npu_tensor *const *t,
			    struct npu_resize *rs, struct npu_error *err);

#endif /* NPU_SCHEMA_RESIZE_H */
