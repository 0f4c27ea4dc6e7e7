// SPDX-License-Identifier: MIT
/*
 * Conv + BatchNormalization folding: BN(conv(x, W) + B) is the convolution
 * with W' = W * f and B' = (B - mean) * f + beta, f = gamma / sqrt(var + eps),
 * per output channel.
 */
#include "compiler/passes/passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool bn_params(const struct npu_node *bn, int64_t channels,
		      const float *p[4])
{
	size_t i;

	if (bn->num_inputs < 5 || bn->num_outputs < 1)
		return false;
	for (i = 1; i < bn->num_outputs; i++)	/* training outputs unused */
		if (bn->outputs[i])
			return false;
	if (npu_node_attr_int_or(bn, "training_mode", 0))
		return false;
	for (i = 0; i < 4; i++) {
		int64_t n;

		p[i] = npu_const_floats(bn->inputs[i + 1], &n);
		if (!p[i] || n != channels)
			return false;
	}
	return true;
}

static npu_status fold_one(struct npu_graph *g, struct npu_node *conv,
			   struct npu_node *bn, const float *p[4],
			   struct npu_error *err)
{
	const struct npu_value *wv = conv->inputs[1];
	int64_t oc = wv->constant->shape.dims[0], per = npu_shape_numel(&wv->shape) / oc, n;
	const float *w = wv->constant->data;
	const float *b = conv->num_inputs > 2 ? npu_const_floats(conv->inputs[2], &n) : NULL;
	float eps = npu_node_attr_float_or(bn, "epsilon", 1e-5f);
	struct npu_shape bshape = { .rank = 1, .dims = { oc } };
	struct npu_tensor *nw = npu_tensor_create(NPU_DTYPE_FLOAT, &wv->shape);
	struct npu_tensor *nb = npu_tensor_create(NPU_DTYPE_FLOAT, &bshape);
	struct npu_value *wval, *bval, *y = bn->outputs[0];
	struct npu_value **inputs;
	int64_t c, i;

	if (!nw || !nb) {
		npu_tensor_destroy(nw);
		npu_tensor_destroy(nb);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "fold_batchnorm: out of memory");
	}
	for (c = 0; c < oc; c++) {
		double f = p[0][c] / sqrt((double)p[3][c] + eps);

		for (i = 0; i < per; i++)
			((float *)nw->data)[c * per + i] = (float)(w[c * per + i] * f);
		((float *)nb->data)[c] = (float)(((b ? b[c] : 0.0) - p[2][c]) * f + p[1][c]);
	}
	wval = npu_graph_add_constant(g, conv->inputs[1]->name, nw, err);
	bval = wval ? npu_graph_add_constant(g, "bn_folded_bias", nb, err) : NULL;
	if (!bval) {
		if (!wval)
			npu_tensor_destroy(nb);
		return err->status ? err->status : NPU_ERR_NO_MEMORY;
	}
	if (conv->num_inputs < 3) {
		inputs = realloc(conv->inputs, 3 * sizeof(*inputs));
		if (!inputs)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "fold_batchnorm: out of memory");
		conv->inputs = inputs;
		conv->num_inputs = 3;
	}
	conv->inputs[1] = wval;
	conv->inputs[2] = bval;
	/* The conv now writes the BN's output; its own output is orphaned. */
	conv->outputs[0] = y;
	y->producer = conv;
	npu_graph_remove_node(g, bn);
	return NPU_OK;
}

npu_status npu_pass_fold_batchnorm(struct npu_graph *g, void *arg,
				   struct npu_error *err)
{
	size_t i;

	(void)arg;
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *bn = g->nodes[i], *conv;
		const struct npu_value *wv;
		const float *p[4];
		int64_t n;
		npu_status st;

		if (strcmp(bn->op_type, "BatchNormalization") || bn->domain[0] ||
		    !bn->inputs[0] || !(conv = bn->inputs[0]->producer))
			continue;
		if (strcmp(conv->op_type, "Conv") || conv->num_outputs != 1 ||
		    npu_value_single_user(g, conv->outputs[0]) != bn ||
		    npu_node_attr(conv, "npu_activation"))
			continue;
		wv = conv->inputs[1];
		if (!npu_const_floats(wv, &n) || wv->constant->shape.rank < 3 ||
		    (conv->num_inputs > 2 && conv->inputs[2] &&
		     !npu_const_floats(conv->inputs[2], &n)))
			continue;
		if (!bn_params(bn, wv->constant->shape.dims[0], p))
			continue;
		st = fold_one(g, conv, bn, p, err);
		if (st)
			return st;
		i = (size_t)-1;	/* the node list changed: rescan */
	}
	return NPU_OK;
}
