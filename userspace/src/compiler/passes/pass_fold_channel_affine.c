// SPDX-License-Identifier: MIT
/*
 * Per-channel constant Mul / Add folding: Conv (constant W, B) followed by
 * Mul or Add with a constant that is a scalar or holds one value per output
 * channel becomes the convolution with W' = W * k, B' = B * k (Mul) or
 * B' = B + k (Add). Folded, the constant never meets int8: on the NPU an
 * ELTWISE would quantize it per tensor (one large channel crushes the
 * others to 0) and requantize the output once more.
 */
#include "compiler/passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* A Conv with constant weights (and bias) whose output only 'user' reads. */
static bool foldable_conv(const struct npu_graph *g, const struct npu_node *conv,
			  const struct npu_node *user)
{
	const struct npu_value *wv;
	int64_t n;

	if (!conv || conv->domain[0] || strcmp(conv->op_type, "Conv") ||
	    conv->num_outputs != 1 || conv->num_inputs < 2 ||
	    npu_value_single_user(g, conv->outputs[0]) != user ||
	    npu_node_attr(conv, "npu_activation"))
		return false;
	wv = conv->inputs[1];
	if (!npu_const_floats(wv, &n) || wv->constant->shape.rank < 3 ||
	    (conv->num_inputs > 2 && conv->inputs[2] && !npu_const_floats(conv->inputs[2], &n)))
		return false;
	return conv->outputs[0]->shape.rank >= 3 &&
	       conv->outputs[0]->shape.dims[1] == wv->constant->shape.dims[0];
}

/*
 * The constant operand of 'n' as one value per output channel of 'act'
 * (a scalar, or a constant whose only non-1 dim lands on axis 1 when
 * right-aligned against act's shape), into per[oc]; false otherwise.
 */
static bool channel_constant(const struct npu_node *n, const struct npu_value *act,
			     int64_t oc, float *per)
{
	const struct npu_value *k = n->inputs[0] == act ? n->inputs[1] : n->inputs[0];
	int rank = act->shape.rank, r, i;
	int64_t count, c;
	const float *d = npu_const_floats(k, &count);

	if (!d || (count != 1 && count != oc))
		return false;
	r = k->constant->shape.rank;
	if (r > rank)
		return false;
	for (i = 0; i < r; i++)
		if (k->constant->shape.dims[i] != 1 && rank - r + i != 1)
			return false;
	for (c = 0; c < oc; c++)
		per[c] = d[count == 1 ? 0 : c];
	return true;
}

static npu_status fold_one(struct npu_graph *g, struct npu_node *conv, struct npu_node *n,
			   bool mul, const float *k, struct npu_error *err)
{
	const struct npu_value *wv = conv->inputs[1];
	int64_t oc = wv->constant->shape.dims[0], numel = npu_shape_numel(&wv->shape), c, i, cnt;
	const float *w = wv->constant->data;
	const float *b = conv->num_inputs > 2 ? npu_const_floats(conv->inputs[2], &cnt) : NULL;
	struct npu_shape bshape = { .rank = 1, .dims = { oc } };
	struct npu_tensor *nw = mul ? npu_tensor_create(NPU_DTYPE_FLOAT, &wv->shape) : NULL;
	struct npu_tensor *nb = npu_tensor_create(NPU_DTYPE_FLOAT, &bshape);
	struct npu_value *wval = NULL, *bval, *y = n->outputs[0], **inputs;

	if ((mul && !nw) || !nb) {
		npu_tensor_destroy(nw);
		npu_tensor_destroy(nb);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "fold_channel_affine: out of memory");
	}
	for (i = 0; mul && i < numel; i++)
		((float *)nw->data)[i] = w[i] * k[i / (numel / oc)];
	for (c = 0; c < oc; c++)
		((float *)nb->data)[c] = mul ? (b ? b[c] : 0.0f) * k[c] : (b ? b[c] : 0.0f) + k[c];
	if (mul) {
		wval = npu_graph_add_constant(g, wv->name, nw, err);
		if (!wval) {
			npu_tensor_destroy(nb);
			return err->status ? err->status : NPU_ERR_NO_MEMORY;
		}
	}
	bval = npu_graph_add_constant(g, "affine_folded_bias", nb, err);
	if (!bval)
		return err->status ? err->status : NPU_ERR_NO_MEMORY;
	if (conv->num_inputs < 3) {
		inputs = realloc(conv->inputs, 3 * sizeof(*inputs));
		if (!inputs)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "fold_channel_affine: out of memory");
		conv->inputs = inputs;
		conv->num_inputs = 3;
	}
	if (wval)
		conv->inputs[1] = wval;
	conv->inputs[2] = bval;
	/* The conv now writes the Mul / Add output; its own is orphaned. */
	conv->outputs[0] = y;
	y->producer = conv;
	npu_graph_remove_node(g, n);
	return NPU_OK;
}

npu_status npu_pass_fold_channel_affine(struct npu_graph *g, void *arg,
					struct npu_error *err)
{
	size_t i;

	(void)arg;
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *n = g->nodes[i], *conv = NULL;
		struct npu_value *act = NULL;
		bool mul = !strcmp(n->op_type, "Mul");
		int64_t oc;
		float *k;
		npu_status st;
		size_t j;

		if ((!mul && strcmp(n->op_type, "Add")) || n->domain[0] || n->num_inputs != 2 ||
		    !n->inputs[0] || !n->inputs[1] || n->num_outputs != 1 || !n->outputs[0])
			continue;
		for (j = 0; j < 2 && !conv; j++)
			if (!n->inputs[j]->constant && n->inputs[1 - j]->constant) {
				act = n->inputs[j];
				conv = act->producer;
			}
		if (!conv || !foldable_conv(g, conv, n) || n->outputs[0]->dtype != NPU_DTYPE_FLOAT ||
		    n->outputs[0]->shape.rank != act->shape.rank)
			continue;
		oc = conv->inputs[1]->constant->shape.dims[0];
		k = malloc(sizeof(*k) * (size_t)oc);
		if (!k)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "fold_channel_affine: out of memory");
		if (!channel_constant(n, act, oc, k)) {
			free(k);
			continue;
		}
		st = fold_one(g, conv, n, mul, k, err);
		free(k);
		if (st)
			return st;
		i = (size_t)-1;	/* the node list changed: rescan */
	}
	return NPU_OK;
}
