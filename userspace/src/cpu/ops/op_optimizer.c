// SPDX-License-Identifier: MIT
/*
 * The training optimizers of domain ai.onnx.preview.training, as plain
 * tensor arithmetic: Adagrad, Momentum (standard / nesterov) and Adam.
 * Inputs are R (learning rate), T (update count), then the n tensors X,
 * the n gradients G and the n state tensors (H; V; or V and H for Adam);
 * outputs are the new X and the new states, in the ONNX reference's
 * formulas, computed in double per element. float and double.
 *
 * libonnx-testdata's test_adam_multiple omits the node's epsilon yet
 * expects epsilon = 1e-2 (onnx issue #7749): `npu onnx-test` lists it as a
 * defect of the test data.
 */
#include <math.h>
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/optimizer.h"

#define NPU_TRAINING_DOMAIN "ai.onnx.preview.training"

static double npu_opt_get(const struct npu_tensor *t, int64_t i)
{
	return t->dtype == NPU_DTYPE_DOUBLE ? ((const double *)t->data)[i] :
					      ((const float *)t->data)[i];
}

static void npu_opt_set(struct npu_tensor *t, int64_t i, double v)
{
	if (t->dtype == NPU_DTYPE_DOUBLE)
		((double *)t->data)[i] = v;
	else
		((float *)t->data)[i] = (float)v;
}

static npu_status npu_opt_compute(struct npu_op_ctx *ctx, enum npu_opt_kind k)
{
	const struct npu_node *node = ctx->node;
	size_t n = (ctx->num_inputs - 2) / (k == OPT_ADAM ? 4 : 3), i;
	double r = npu_opt_get(ctx->inputs[0], 0);
	double t = (double)((const int64_t *)ctx->inputs[1]->data)[0];
	double norm = npu_node_attr_float_or(node, "norm_coefficient", 0.0f);
	double alpha = npu_node_attr_float_or(node, "alpha", k == OPT_ADAM ? 0.9f : 0.0f);
	double beta = npu_node_attr_float_or(node, "beta", k == OPT_ADAM ? 0.999f : 0.0f);
	double norm_post = npu_node_attr_float_or(node, "norm_coefficient_post", 0.0f);
	double eps = npu_node_attr_float_or(node, "epsilon", 0.0f);
	double decay = npu_node_attr_float_or(node, "decay_factor", 0.0f);
	bool nesterov = !strcmp(npu_node_attr_string_or(node, "mode", ""),
				"nesterov");
	int64_t e, cnt;

	for (i = 0; i < n; i++) {
		const struct npu_tensor *x = ctx->inputs[2 + i];
		const struct npu_tensor *g = ctx->inputs[2 + n + i];
		const struct npu_tensor *s1 = ctx->inputs[2 + 2 * n + i];
		const struct npu_tensor *s2 = k == OPT_ADAM ? ctx->inputs[2 + 3 * n + i] : s1;
		struct npu_tensor *xo = ctx->outputs[i];
		struct npu_tensor *s1o = ctx->outputs[n + i];
		struct npu_tensor *s2o = k == OPT_ADAM ? ctx->outputs[2 * n + i] : NULL;

		cnt = npu_op_numel(x);
		if (npu_op_numel(g) != cnt || npu_op_numel(s1) != cnt || npu_op_numel(s2) != cnt)
			return npu_op_invalid(ctx->err, node,
					      "input %zu and its gradient / state differ in size",
					      2 + i);
		for (e = 0; e < cnt; e++) {
			double xv = npu_opt_get(x, e);
			double gr = norm * xv + npu_opt_get(g, e);

			if (k == OPT_ADAM) {
				/* V and H, then the bias-corrected step (none at T = 0). */
				double v = alpha * npu_opt_get(s1, e) + (1 - alpha) * gr;
				double h = beta * npu_opt_get(s2, e) + (1 - beta) * gr * gr;
				double ra = t > 0 ? r * sqrt(1 - pow(beta, t)) / (1 - pow(alpha, t)) : r;
				double xn = xv - ra * v / (sqrt(h) + eps);

				npu_opt_set(s1o, e, v);
				npu_opt_set(s2o, e, h);
				npu_opt_set(xo, e, (1 - norm_post) * xn);
			} else if (k == OPT_ADAGRAD) {
				double rr = r / (1 + t * decay);
				double h = npu_opt_get(s1, e) + gr * gr;

				npu_opt_set(s1o, e, h);
				npu_opt_set(xo, e, xv - rr * gr / (sqrt(h) + eps));
			} else {
				/* The first update (T = 0) takes beta = 1. */
				double bb = t > 0 ? beta : 1;
				double v = alpha * npu_opt_get(s1, e) + bb * gr;

				npu_opt_set(s1o, e, v);
				npu_opt_set(xo, e, nesterov ? xv - r * (gr + alpha * v) :
							      xv - r * v);
			}
		}
	}
	return NPU_OK;
}

#define OPT_DEF(sym, name, kind)					\
static npu_status sym##_compute(struct npu_op_ctx *ctx)			\
{									\
	return npu_opt_compute(ctx, kind);				\
}									\
NPU_CPU_OP_DEF(sym) = {							\
	.op_type = name, .domain = NPU_TRAINING_DOMAIN,			\
	.compute = sym##_compute,					\
};

OPT_DEF(adagrad, "Adagrad", OPT_ADAGRAD)
OPT_DEF(momentum, "Momentum", OPT_MOMENTUM)
OPT_DEF(adam, "Adam", OPT_ADAM)
