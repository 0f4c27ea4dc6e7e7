// SPDX-License-Identifier: MIT
/*
 * Ops that keep, zero or rearrange elements by position alone, for any
 * fixed-size type: Trilu (triangle of the last two dims), DepthToSpace
 * and SpaceToDepth (a 6-D transpose), ReverseSequence.
 */
#include <string.h>

#include "cpu/ops/op_common.h"

/* ---- Trilu ---- */

static npu_status trilu_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *kt = npu_op_in(ctx, 1);
	struct npu_tensor *y = ctx->outputs[0];
	bool upper = npu_node_attr_int_or(ctx->node, "upper", 1) != 0;
	int rank = x->shape.rank;
	int64_t rows = x->shape.dims[rank - 2], cols = x->shape.dims[rank - 1];
	int64_t mats = npu_op_dims_prod(&x->shape, 0, rank - 2), m, i, k = 0;
	size_t es = npu_dtype_size(x->dtype), row_bytes = (size_t)cols * es;

	if (kt && npu_op_numel(kt) == 1)
		k = npu_op_index_get(kt, 0);
	/* Clamp so that i + k cannot overflow for any k. */
	if (k > cols)
		k = cols;
	if (k < -rows)
		k = -rows;
	for (m = 0; m < mats; m++)
		for (i = 0; i < rows; i++) {
			size_t off = (size_t)((m * rows + i) * cols) * es;
			const char *src = (const char *)x->data + off;
			char *dst = (char *)y->data + off;
			/* upper keeps j >= i + k; lower keeps j <= i + k. */
			int64_t edge = upper ? i + k : i + k + 1;
			size_t cut;

			edge = edge < 0 ? 0 : edge > cols ? cols : edge;
			cut = (size_t)edge * es;
			if (upper) {
				memset(dst, 0, cut);
				memcpy(dst + cut, src + cut, row_bytes - cut);
			} else {
				memcpy(dst, src, cut);
				memset(dst + cut, 0, row_bytes - cut);
			}
		}
	return NPU_OK;
}

NPU_CPU_OP_DEF(trilu) = {
	.op_type = "Trilu",
	.domain = "",
	.compute = trilu_compute,
};

/* ---- DepthToSpace / SpaceToDepth ---- */

/*
 * Both are a reshape of NCHW to 6-D, a transpose and a reshape back: the
 * 6-D view's dims and the permutation, for 'b' = blocksize.
 */
static void npu_d2s_view(const struct npu_shape *x, int64_t b, bool to_space,
			 bool crd, int64_t *dims6, int *perm)
{
	int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
	static const int dcr[6] = { 0, 3, 4, 1, 5, 2 };
	static const int crd_p[6] = { 0, 1, 4, 2, 5, 3 };
	static const int s2d[6] = { 0, 3, 5, 1, 2, 4 };
	const int *p;
	int i;

	if (to_space && crd) {
		int64_t d[6] = { n, c / (b * b), b, b, h, w };

		memcpy(dims6, d, sizeof(d));
		p = crd_p;
	} else if (to_space) {
		int64_t d[6] = { n, b, b, c / (b * b), h, w };

		memcpy(dims6, d, sizeof(d));
		p = dcr;
	} else {
		int64_t d[6] = { n, c, h / b, b, w / b, b };

		memcpy(dims6, d, sizeof(d));
		p = s2d;
	}
	for (i = 0; i < 6; i++)
		perm[i] = p[i];
}

static npu_status npu_d2s_compute(struct npu_op_ctx *ctx, bool to_space)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t b = npu_node_attr_int_or(ctx->node, "blocksize", 1);
	bool crd = !strcmp(npu_node_attr_string_or(ctx->node, "mode", "DCR"),
			   "CRD");
	int64_t dims6[6], dst_dims[6], strides6[6], src_strides[6], acc = 1;
	int perm[6], i;

	if (!npu_op_numel(x))
		return NPU_OK;
	npu_d2s_view(&x->shape, b, to_space, crd, dims6, perm);
	for (i = 5; i >= 0; i--) {
		strides6[i] = acc;
		acc *= dims6[i];
	}
	for (i = 0; i < 6; i++) {
		dst_dims[i] = dims6[perm[i]];
		src_strides[i] = strides6[perm[i]];
	}
	npu_op_strided_copy(y->data, x->data, 6, dst_dims, src_strides,
			    npu_dtype_size(x->dtype));
	return NPU_OK;
}

static npu_status depth_to_space_compute(struct npu_op_ctx *ctx)
{
	return npu_d2s_compute(ctx, true);
}

NPU_CPU_OP_DEF(depth_to_space) = {
	.op_type = "DepthToSpace",
	.domain = "",
	.compute = depth_to_space_compute,
};

static npu_status space_to_depth_compute(struct npu_op_ctx *ctx)
{
	return npu_d2s_compute(ctx, false);
}

NPU_CPU_OP_DEF(space_to_depth) = {
	.op_type = "SpaceToDepth",
	.domain = "",
	.compute = space_to_depth_compute,
};

/* ---- ReverseSequence ---- */

static npu_status reverse_sequence_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *lens = ctx->inputs[1];
	struct npu_tensor *y = ctx->outputs[0];
	int bax = (int)npu_node_attr_int_or(ctx->node, "batch_axis", 1);
	int tax = 1 - bax;
	int64_t nb = x->shape.dims[bax], nt = x->shape.dims[tax];
	int64_t inner = npu_op_dims_prod(&x->shape, 2, x->shape.rank);
	int64_t strides[NPU_MAX_RANK], b, t;
	size_t es = npu_dtype_size(x->dtype), chunk = (size_t)inner * es;

	npu_op_strides(&x->shape, strides);
	for (b = 0; b < nb; b++) {
		int64_t len = ((const int64_t *)lens->data)[b];

		if (len < 0 || len > nt)
			return npu_op_invalid(ctx->err, ctx->node,
					      "sequence_lens[%lld] = %lld is out of range [0, %lld]",
					      (long long)b, (long long)len,
					      (long long)nt);
		for (t = 0; t < nt; t++) {
			int64_t st = t < len ? len - 1 - t : t;
			size_t dst = (size_t)(b * strides[bax] + t * strides[tax]);
			size_t src = (size_t)(b * strides[bax] + st * strides[tax]);

			memcpy((char *)y->data + dst * es,
			       (const char *)x->data + src * es, chunk);
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(reverse_sequence) = {
	.op_type = "ReverseSequence",
	.domain = "",
	.compute = reverse_sequence_compute,
};
