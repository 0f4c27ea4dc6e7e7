// SPDX-License-Identifier: MIT
/*
 * Conv + BatchNormalization folding: BN(conv(x, W) + B) is the convolution
 * with W' = W * f and B' = (B - mean) * f + beta, f = gamma / sqrt(var + eps),
 * per output channel. ConvTranspose too (its output channel is weight axis
 * 1 within a group), and a per-channel constant Add right after a
 * ConvTranspose (how exporters write its bias) becomes its bias first, so
 * ConvTranspose -> Add -> BatchNormalization is one node.
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

/* Output channels of a Conv / ConvTranspose with constant weights. */
static int64_t npu_conv_out_channels(const struct npu_node *conv)
{
	const struct npu_shape *ws = &conv->inputs[1]->constant->shape;

	if (!strcmp(conv->op_type, "ConvTranspose"))
		return npu_node_attr_int_or(conv, "group", 1) * ws->dims[1];
	return ws->dims[0];
}

static npu_status fold_one(struct npu_graph *g, struct npu_node *conv,
			   struct npu_node *bn, const float *p[4],
			   struct npu_error *err)
{
	const struct npu_value *wv = conv->inputs[1];
	int64_t oc = npu_conv_out_channels(conv), per = npu_shape_numel(&wv->shape) / oc, n;
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
	if (!strcmp(conv->op_type, "ConvTranspose")) {
		/* W [C_in][C_out / g][k...]: output channel (ic / cin_g) * cout_g + j. */
		int64_t groups = npu_node_attr_int_or(conv, "group", 1);
		int64_t cin = wv->constant->shape.dims[0], cout_g = wv->constant->shape.dims[1];
		int64_t ks = npu_shape_numel(&wv->shape) / (cin * cout_g);

		oc = groups * cout_g;
		for (i = 0; i < npu_shape_numel(&wv->shape); i++) {
			int64_t ic = i / (cout_g * ks), j = i / ks % cout_g;

			c = ic / (cin / groups) * cout_g + j;
			((float *)nw->data)[i] = (float)(w[i] * (p[0][c] / sqrt((double)p[3][c] + eps)));
		}
		for (c = 0; c < oc; c++)
			((float *)nb->data)[c] = (float)(((b ? b[c] : 0.0) - p[2][c]) *
							 (p[0][c] / sqrt((double)p[3][c] + eps)) + p[1][c]);
	} else {
		for (c = 0; c < oc; c++) {
			double f = p[0][c] / sqrt((double)p[3][c] + eps);

			for (i = 0; i < per; i++)
				((float *)nw->data)[c * per + i] = (float)(w[c * per + i] * f);
			((float *)nb->data)[c] = (float)(((b ? b[c] : 0.0) - p[2][c]) * f + p[1][c]);
		}
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

/*
 * ConvTranspose -> Add(constant of C values on the channel axis): the
 * constant becomes (or adds to) the ConvTranspose's bias.
 */
static npu_status fold_bias_adds(struct npu_graph *g, struct npu_error *err)
{
	size_t i;

	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *add = g->nodes[i], *ct;
		const struct npu_value *k;
		const float *kv, *b = NULL;
		struct npu_tensor *nb;
		struct npu_value *bval, **inputs;
		struct npu_shape bshape;
		int64_t oc, n, d;

		if (strcmp(add->op_type, "Add") || add->domain[0] || add->num_inputs != 2)
			continue;
		ct = add->inputs[0] ? add->inputs[0]->producer : NULL;
		k = add->inputs[1];
		if (!ct || !k || !k->constant) {
			ct = add->inputs[1] ? add->inputs[1]->producer : NULL;
			k = add->inputs[0];
		}
		if (!ct || !k || !k->constant || strcmp(ct->op_type, "ConvTranspose") ||
		    ct->domain[0] || ct->num_outputs != 1 || ct->num_inputs < 2 ||
		    !ct->inputs[1] || !npu_const_floats(ct->inputs[1], &n) ||
		    ct->inputs[1]->constant->shape.rank != 4 ||
		    npu_value_single_user(g, ct->outputs[0]) != add ||
		    npu_node_attr(ct, "npu_activation"))
			continue;
		oc = npu_conv_out_channels(ct);
		kv = npu_const_floats(k, &n);
		/* [C, 1, 1] or [1, C, 1, 1]: per channel of the NCHW output. */
		if (!kv || n != oc || k->shape.rank < 3 || k->shape.rank > 4 ||
		    k->shape.dims[k->shape.rank - 3] != oc)
			continue;
		for (d = 0; d < k->shape.rank; d++)
			if (d != k->shape.rank - 3 && k->shape.dims[d] != 1)
				break;
		if (d < k->shape.rank)
			continue;
		if (ct->num_inputs > 2 && ct->inputs[2] &&
		    !(b = npu_const_floats(ct->inputs[2], &n)))
			continue;
		bshape = (struct npu_shape){ .rank = 1, .dims = { oc } };
		nb = npu_tensor_create(NPU_DTYPE_FLOAT, &bshape);
		if (!nb)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "fold_batchnorm: out of memory");
		for (d = 0; d < oc; d++)
			((float *)nb->data)[d] = (b ? b[d] : 0.0f) + kv[d];
		bval = npu_graph_add_constant(g, "convtranspose_folded_bias", nb, err);
		if (!bval)
			return err->status ? err->status : NPU_ERR_NO_MEMORY;
		if (ct->num_inputs < 3) {
			inputs = realloc(ct->inputs, 3 * sizeof(*inputs));
			if (!inputs)
				return npu_error_set(err, NPU_ERR_NO_MEMORY, "fold_batchnorm: out of memory");
			ct->inputs = inputs;
			ct->num_inputs = 3;
		}
		ct->inputs[2] = bval;
		ct->outputs[0] = add->outputs[0];
		add->outputs[0]->producer = ct;
		npu_graph_remove_node(g, add);
		i = (size_t)-1;
	}
	return NPU_OK;
}

npu_status npu_pass_fold_batchnorm(struct npu_graph *g, void *arg,
				   struct npu_error *err)
{
	npu_status st0;
	size_t i;

	(void)arg;
	st0 = fold_bias_adds(g, err);
	if (st0)
		return st0;
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *bn = g->nodes[i], *conv;
		const struct npu_value *wv;
		const float *p[4];
		int64_t n;
		npu_status st;

		if (strcmp(bn->op_type, "BatchNormalization") || bn->domain[0] ||
		    !bn->inputs[0] || !(conv = bn->inputs[0]->producer))
			continue;
		if ((strcmp(conv->op_type, "Conv") && strcmp(conv->op_type, "ConvTranspose")) ||
		    conv->num_outputs != 1 ||
		    npu_value_single_user(g, conv->outputs[0]) != bn ||
		    npu_node_attr(conv, "npu_activation"))
			continue;
		wv = conv->inputs[1];
		if (!npu_const_floats(wv, &n) || wv->constant->shape.rank < 3 ||
		    (conv->num_inputs > 2 && conv->inputs[2] &&
		     !npu_const_floats(conv->inputs[2], &n)))
			continue;
		if (!bn_params(bn, npu_conv_out_channels(conv), p))
			continue;
		st = fold_one(g, conv, bn, p, err);
		if (st)
			return st;
		i = (size_t)-1;	/* the node list changed: rescan */
	}
	return NPU_OK;
}
