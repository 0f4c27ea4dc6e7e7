/* SPDX-License-Identifier: MIT */
/* What op_detect.c's schemas and kernels share (graph/schemas/detect.c). */
#ifndef NPU_SCHEMA_DETECT_H
#define NPU_SCHEMA_DETECT_H

#include "graph/schemas/schema_common.h"

struct npu_nms_args {
	const float *boxes, *scores;
	int64_t batches, classes, nboxes;
	int64_t max_out;
	float iou_th, score_th;
	bool center;
};

struct npu_roi_args {
	bool half_pixel, max_mode;
	int64_t out_h, out_w, ratio;
	float scale;
};

/*
 * Runs the selection; writes rows to 'out' (may be NULL to count) and
 * returns the number of selected boxes, or -1 when out of memory.
 */
int64_t npu_nms_run(const struct npu_nms_args *a, int64_t *out);

/* Reads the arguments from the tensors t[0..4] (t[2..4] may be NULL). */
npu_status npu_nms_args(const struct npu_node *node,
			const struct npu_tensor *const *t,
			struct npu_nms_args *a, struct npu_error *err);

npu_status npu_roi_args(const struct npu_node *node,
			struct npu_roi_args *a, struct npu_error *err);

#endif /* NPU_SCHEMA_DETECT_H */
