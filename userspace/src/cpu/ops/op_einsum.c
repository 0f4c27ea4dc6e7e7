// SPDX-License-Identifier: MIT
/*
 * Einsum over float / double: the equation is parsed into labels (a-z,
 * A-Z, and one label per dim an ellipsis stands for, broadcast numpy
 * style), then every combination of label values is visited once - output
 * labels outermost - and the product of the inputs' elements accumulated
 * in double. Direct, not fast: meant for the small contractions models
 * use around their matmuls. A label repeated in one term takes the
 * diagonal; labels missing from the output are summed.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/einsum.h"

static double npu_ein_get(const struct npu_tensor *t, int64_t i)
{
	return t->dtype == NPU_DTYPE_DOUBLE ? ((const double *)t->data)[i] :
					      ((const float *)t->data)[i];
}

static npu_status einsum_compute(struct npu_op_ctx *ctx)
{
	const struct npu_shape *shapes[EIN_MAX_IN];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t stride[EIN_MAX_IN][EIN_LABELS], off[EIN_MAX_IN];
	int64_t val[EIN_LABELS] = { 0 }, out_n = npu_op_numel(y), o;
	int order[EIN_LABELS], n_order = 0, i, d, l;
	bool is_out[EIN_LABELS] = { false };
	struct npu_einsum e;
	npu_status st;

	for (i = 0; i < (int)ctx->num_inputs; i++)
		shapes[i] = &ctx->inputs[i]->shape;
	st = npu_ein_parse(ctx->node, shapes, (int)ctx->num_inputs, &e,
			   ctx->err);
	if (st)
		return st;
	/* Per input, the element stride of each label (summed: diagonal). */
	memset(stride, 0, sizeof(stride));
	for (i = 0; i < e.n_in; i++) {
		int64_t s[NPU_MAX_RANK];

		npu_op_strides(shapes[i], s);
		for (d = 0; d < e.rank[i]; d++)
			if (shapes[i]->dims[d] != 1)	/* broadcast: stride 0 */
				stride[i][e.label[i][d]] += s[d];
	}
	for (d = 0; d < e.out_rank; d++) {
		is_out[e.out_label[d]] = true;
		order[n_order++] = e.out_label[d];
	}
	for (l = 0; l < EIN_LABELS; l++)
		if (e.used[l] && !is_out[l])
			order[n_order++] = l;
	for (l = 0; l < n_order; l++)
		if (e.size[order[l]] == 0) {
			/* An empty summed label leaves zeros; empty output: nothing. */
			for (o = 0; o < out_n; o++)
				if (y->dtype == NPU_DTYPE_DOUBLE)
					((double *)y->data)[o] = 0;
				else
					((float *)y->data)[o] = 0;
			return NPU_OK;
		}
	memset(off, 0, sizeof(off));
	for (o = 0; o < out_n; o++) {
		double acc = 0;

		/* Inner loop: every value of the summed labels. */
		for (;;) {
			double prod = 1;

			for (i = 0; i < e.n_in; i++)
				prod *= npu_ein_get(ctx->inputs[i], off[i]);
			acc += prod;
			for (l = n_order - 1; l >= e.out_rank; l--) {
				int lab = order[l];

				for (i = 0; i < e.n_in; i++)
					off[i] += stride[i][lab];
				if (++val[lab] < e.size[lab])
					break;
				for (i = 0; i < e.n_in; i++)
					off[i] -= stride[i][lab] * val[lab];
				val[lab] = 0;
			}
			if (l < e.out_rank)
				break;
		}
		if (y->dtype == NPU_DTYPE_DOUBLE)
			((double *)y->data)[o] = acc;
		else
			((float *)y->data)[o] = (float)acc;
		/* Next output position (row-major over the output labels). */
		for (l = e.out_rank - 1; l >= 0; l--) {
			int lab = order[l];

			for (i = 0; i < e.n_in; i++)
				off[i] += stride[i][lab];
			if (++val[lab] < e.size[lab])
				break;
			for (i = 0; i < e.n_in; i++)
				off[i] -= stride[i][lab] * val[lab];
			val[lab] = 0;
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(einsum) = {
	.op_type = "Einsum",
	.domain = "",
	.compute = einsum_compute,
};
