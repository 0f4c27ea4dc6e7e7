// SPDX-License-Identifier: MIT
/*
 * CPU fusion: what the CPU kernels can do in a convolution's output
 * epilogue is taken out of the graph, so that the data is not read and
 * written again by one elementwise node after another.
 *
 *  - x * Clip(x + 3, 0, 6) / 6 (either order of the Mul and the Div; the
 *    Div may be a Mul by 1/6) becomes one HardSwish node;
 *  - a Conv, then in this order and each optional: an Add of a tensor
 *    shaped as its output (a residual), an activation (Relu, Clip,
 *    LeakyRelu, HardSigmoid, HardSwish, Sigmoid), Mul / Div / Add by
 *    scalar constants, becomes one FusedConv (domain ai.npu.cpu, see
 *    cpu/ops/op_conv.c): Y = post(act(conv + B + Z)); a ConvTranspose
 *    the same without the residual (FusedConvTranspose);
 *  - x + x * s, s a conv's output (squeeze-excitation with a shortcut),
 *    becomes x * (s + 1), the + 1 in that conv's epilogue.
 * Each fused node's output is read by that next node alone. The rewrites
 * change rounding only (x / 6 as one multiply-add inside HardSwish).
 */
#include "compiler/passes/passes.h"
#include "cpu/ops/cpu_ops.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_op(const struct npu_node *n, const char *op)
{
	return n && !n->domain[0] && !strcmp(n->op_type, op);
}

/* A float constant with one element and rank <= 'rank' (so a binary op
 * with it keeps the other operand's shape). */
static bool scalar_const(const struct npu_value *v, int rank, float *out)
{
	int64_t count;
	const float *f = npu_const_floats(v, &count);

	if (!f || count != 1 || v->constant->shape.rank > rank)
		return false;
	*out = f[0];
	return true;
}

/* Binary node n with x as one input: the other one, or NULL. */
static struct npu_value *other_input(const struct npu_node *n,
				     const struct npu_value *x)
{
	if (n->num_inputs != 2 || !n->inputs[0] || !n->inputs[1] ||
	    n->inputs[0] == n->inputs[1])
		return NULL;
	if (n->inputs[0] == x)
		return n->inputs[1];
	return n->inputs[1] == x ? n->inputs[0] : NULL;
}

static bool near(float v, float want)
{
	return fabsf(v - want) <= 1e-6f * fabsf(want);
}

/* Clip n's bounds (attributes before opset 11, inputs after). */
static bool clip_bounds(const struct npu_node *n, float *lo, float *hi)
{
	*lo = -FLT_MAX;
	*hi = FLT_MAX;
	if (n->opset < 11) {
		*lo = npu_node_attr_float_or(n, "min", -FLT_MAX);
		*hi = npu_node_attr_float_or(n, "max", FLT_MAX);
		return true;
	}
	if (n->num_inputs > 1 && n->inputs[1] && !scalar_const(n->inputs[1], 0x7f, lo))
		return false;
	if (n->num_inputs > 2 && n->inputs[2] && !scalar_const(n->inputs[2], 0x7f, hi))
		return false;
	return true;
}

/* n divides 'v' by 6 (Div by 6 or Mul by 1/6) and nothing else. */
static bool is_div6(const struct npu_node *n, const struct npu_value *v, int rank)
{
	struct npu_value *c;
	float f;

	if (!n || n->num_outputs != 1 || n->domain[0] || !(c = other_input(n, v)) ||
	    !scalar_const(c, rank, &f))
		return false;
	if (!strcmp(n->op_type, "Div"))
		return n->inputs[0] == v && f == 6.0f;
	return !strcmp(n->op_type, "Mul") && near(f, 1.0f / 6.0f);
}

/* Node 'keep' now writes 'out' (made by 'last'); the nodes in between go. */
static void take_output(struct npu_graph *g, struct npu_node *keep,
			struct npu_node *const *drop, size_t ndrop,
			struct npu_value *out)
{
	size_t i;

	keep->outputs[0] = out;
	out->producer = keep;
	for (i = 0; i < ndrop; i++)
		npu_graph_remove_node(g, drop[i]);
}

/* x * Clip(x + 3, 0, 6) / 6 -> HardSwish(x), rewriting the Add in place. */
static npu_status fuse_hardswish(struct npu_graph *g, struct npu_node *a,
				 bool *done)
{
	struct npu_node *clip, *n1, *n2, *drop[3];
	struct npu_value *x, *c, *out;
	float three, lo, hi;
	int rank;
	size_t k;

	*done = false;
	if (!is_op(a, "Add") || a->num_inputs != 2 || a->num_outputs != 1 ||
	    !a->inputs[0] || !a->inputs[1])
		return NPU_OK;
	for (k = 0; k < 2; k++) {
		x = a->inputs[k];
		c = a->inputs[1 - k];
		rank = x->shape.rank;
		if (x->dtype == NPU_DTYPE_FLOAT && !x->constant && rank > 0 &&
		    scalar_const(c, rank, &three) && three == 3.0f)
			break;
	}
	if (k == 2)
		return NPU_OK;
	clip = npu_value_single_user(g, a->outputs[0]);
	if (!is_op(clip, "Clip") || clip->num_outputs != 1 || clip->inputs[0] != a->outputs[0] ||
	    !clip_bounds(clip, &lo, &hi) || lo != 0.0f || hi != 6.0f)
		return NPU_OK;
	n1 = npu_value_single_user(g, clip->outputs[0]);
	if (!n1 || n1->num_outputs != 1 || !n1->outputs[0])
		return NPU_OK;
	if (is_op(n1, "Mul") && other_input(n1, clip->outputs[0]) == x) {
		/* (x * clip) / 6 */
		n2 = npu_value_single_user(g, n1->outputs[0]);
		if (!is_div6(n2, n1->outputs[0], rank))
			return NPU_OK;
	} else if (is_div6(n1, clip->outputs[0], rank)) {
		/* x * (clip / 6) */
		n2 = npu_value_single_user(g, n1->outputs[0]);
		if (!is_op(n2, "Mul") || n2->num_outputs != 1 ||
		    other_input(n2, n1->outputs[0]) != x)
			return NPU_OK;
	} else {
		return NPU_OK;
	}
	out = n2->outputs[0];
	if (!out || out->dtype != NPU_DTYPE_FLOAT)
		return NPU_OK;
	/* HardSwish's first opset, whatever the model's */
	if (npu_node_set_op(a, "", "HardSwish", 14))
		return NPU_ERR_NO_MEMORY;
	a->inputs[0] = x;
	a->inputs[1] = NULL;
	a->num_inputs = 1;
	drop[0] = clip;
	drop[1] = n1;
	drop[2] = n2;
	take_output(g, a, drop, 3, out);
	*done = true;
	return NPU_OK;
}

/* The activation node 'a' as FusedConv attributes: kind, params. */
static bool activation_of(const struct npu_node *a, float params[2], size_t *np)
{
	*np = 0;
	if (a->num_outputs != 1 || a->domain[0])
		return false;
	if (!strcmp(a->op_type, "Relu") || !strcmp(a->op_type, "HardSwish") ||
	    !strcmp(a->op_type, "Sigmoid"))
		return a->num_inputs == 1;
	if (!strcmp(a->op_type, "Clip")) {
		*np = 2;
		return clip_bounds(a, &params[0], &params[1]);
	}
	if (!strcmp(a->op_type, "LeakyRelu")) {
		*np = 1;
		params[0] = npu_node_attr_float_or(a, "alpha", 0.01f);
		return true;
	}
	if (!strcmp(a->op_type, "HardSigmoid")) {
		*np = 2;
		params[0] = npu_node_attr_float_or(a, "alpha", 0.2f);
		params[1] = npu_node_attr_float_or(a, "beta", 0.5f);
		return true;
	}
	return false;
}

static bool is_transposed(const struct npu_node *p)
{
	return !strcmp(p->op_type, "ConvTranspose") ||
	       !strcmp(p->op_type, "FusedConvTranspose");
}

/*
 * Conv -> FusedConv (the op renamed in place, room for the 4th input),
 * ConvTranspose -> FusedConvTranspose.
 */
static npu_status make_fused(struct npu_node *p)
{
	struct npu_value **in;
	size_t i;

	if (!strcmp(p->op_type, "FusedConv") || !strcmp(p->op_type, "FusedConvTranspose"))
		return NPU_OK;
	if (!strcmp(p->op_type, "ConvTranspose"))
		return npu_node_set_op(p, NPU_CPU_FUSED_DOMAIN, "FusedConvTranspose", 1);
	in = realloc(p->inputs, 4 * sizeof(*in));
	if (!in)
		return NPU_ERR_NO_MEMORY;
	p->inputs = in;
	for (i = p->num_inputs; i < 4; i++)
		in[i] = NULL;
	p->num_inputs = 4;
	return npu_node_set_op(p, NPU_CPU_FUSED_DOMAIN, "FusedConv", 1);
}

/* One more node fused into Conv / FusedConv p, if its output allows. */
static npu_status fuse_one(struct npu_graph *g, struct npu_node *p, bool *done)
{
	struct npu_value *x = p->outputs[0], *z;
	struct npu_node *u = npu_value_single_user(g, x);
	bool has_act = npu_node_attr(p, "activation") != NULL;
	bool has_post = npu_node_attr(p, "post_scale") != NULL;
	bool has_res = p->num_inputs > 3 && p->inputs[3];
	float params[2], scale = npu_node_attr_float_or(p, "post_scale", 1.0f);
	float shift = npu_node_attr_float_or(p, "post_shift", 0.0f), f;
	int rank = x->shape.rank;
	size_t np, i;
	npu_status st = NPU_OK;

	*done = false;
	if (!u || u->num_outputs != 1 || !u->outputs[0] || u->domain[0] ||
	    u->outputs[0]->dtype != NPU_DTYPE_FLOAT || u->inputs[0] == NULL)
		return NPU_OK;
	z = other_input(u, x);
	if ((is_op(u, "Mul") || is_op(u, "Add") || is_op(u, "Div")) && z &&
	    scalar_const(z, rank, &f) && (!is_op(u, "Div") || (u->inputs[0] == x && f != 0.0f))) {
		/* An affine after everything so far. */
		if (is_op(u, "Mul")) {
			scale *= f;
			shift *= f;
		} else if (is_op(u, "Div")) {
			scale /= f;
			shift /= f;
		} else {
			shift += f;
		}
		st = make_fused(p);
		if (!st)
			st = npu_node_set_attr_float(p, "post_scale", scale);
		if (!st)
			st = npu_node_set_attr_float(p, "post_shift", shift);
	} else if (is_op(u, "Add") && z && !z->constant && !has_act && !has_post &&
		   !has_res && !is_transposed(p) && z->dtype == NPU_DTYPE_FLOAT &&
		   z->shape.rank == rank) {
		/* A residual: only of exactly the output's (known) shape. */
		for (i = 0; i < (size_t)rank; i++)
			if (z->shape.dims[i] != x->shape.dims[i] || x->shape.dims[i] < 0)
				return NPU_OK;
		st = make_fused(p);
		if (!st)
			p->inputs[3] = z;
	} else if (!has_act && !has_post && u->inputs[0] == x &&
		   activation_of(u, params, &np)) {
		for (i = 1; i < u->num_inputs; i++)
			if (u->inputs[i] && !u->inputs[i]->constant)
				return NPU_OK;
		st = make_fused(p);
		if (!st)
			st = npu_node_set_attr_string(p, "activation", u->op_type);
		if (!st && np)
			st = npu_node_set_attr_floats(p, "activation_params", params, np);
	} else {
		return NPU_OK;
	}
	if (st)
		return st;
	take_output(g, p, &u, 1, u->outputs[0]);
	*done = true;
	return NPU_OK;
}

static bool is_conv(const struct npu_node *p)
{
	const struct npu_value *x;

	if (p->num_outputs != 1 || !p->outputs[0] || p->num_inputs < 2 ||
	    !(x = p->inputs[0]) || npu_node_attr(p, "npu_activation"))
		return false;
	if (!strcmp(p->domain, NPU_CPU_FUSED_DOMAIN) &&
	    (!strcmp(p->op_type, "FusedConv") || !strcmp(p->op_type, "FusedConvTranspose")))
		return true;
	/* 1-D or 2-D, float: what conv2d runs (3-D is a direct loop). */
	return (is_op(p, "Conv") || is_op(p, "ConvTranspose")) &&
	       x->dtype == NPU_DTYPE_FLOAT &&
	       (x->shape.rank == 3 || x->shape.rank == 4) &&
	       p->outputs[0]->dtype == NPU_DTYPE_FLOAT;
}

/*
 * x + x * s -> x * (s + 1) when s is a Conv's output read by that Mul
 * alone (squeeze-excitation with a shortcut, PP-OCR's RSE layers): the
 * + 1 goes into the conv's epilogue, and a full-size Add pass goes.
 */
static npu_status fuse_se_shortcut(struct npu_graph *g, struct npu_node *a,
				   bool *done)
{
	struct npu_value *x = NULL, *mv = NULL, *sv = NULL;
	struct npu_node *m = NULL, *p;
	float shift;
	size_t k;
	npu_status st;

	*done = false;
	if (!is_op(a, "Add") || a->num_inputs != 2 || a->num_outputs != 1 ||
	    !a->outputs[0] || !a->inputs[0] || !a->inputs[1])
		return NPU_OK;
	for (k = 0; k < 2; k++) {
		x = a->inputs[k];
		mv = a->inputs[1 - k];
		m = mv->producer;
		if (is_op(m, "Mul") && m->num_outputs == 1 &&
		    npu_value_single_user(g, mv) == a && (sv = other_input(m, x)))
			break;
	}
	if (k == 2)
		return NPU_OK;
	p = sv->producer;
	/* s + 1 must not change the product's shape: s no larger than x. */
	if (!p || !is_conv(p) || npu_value_single_user(g, sv) != m ||
	    sv->shape.rank != x->shape.rank || mv->dtype != NPU_DTYPE_FLOAT)
		return NPU_OK;
	for (k = 0; k < (size_t)x->shape.rank; k++)
		if (sv->shape.dims[k] < 0 || x->shape.dims[k] < 0 ||
		    (sv->shape.dims[k] != 1 && sv->shape.dims[k] != x->shape.dims[k]) ||
		    mv->shape.dims[k] != x->shape.dims[k])
			return NPU_OK;
	shift = npu_node_attr_float_or(p, "post_shift", 0.0f) + 1.0f;
	st = make_fused(p);
	if (!st)
		st = npu_node_set_attr_float(p, "post_scale",
					     npu_node_attr_float_or(p, "post_scale", 1.0f));
	if (!st)
		st = npu_node_set_attr_float(p, "post_shift", shift);
	if (st)
		return st;
	take_output(g, m, &a, 1, a->outputs[0]);
	*done = true;
	return NPU_OK;
}

npu_status npu_pass_cpu_fuse(struct npu_graph *g, void *arg,
			     struct npu_error *err)
{
	size_t i;
	bool done;
	npu_status st;

	(void)arg;
	/* HardSwish first, so that the Conv loop below takes it in. */
	for (i = 0; i < g->num_nodes; i++) {
		st = fuse_hardswish(g, g->nodes[i], &done);
		if (st)
			return npu_error_set(err, st, "cpu_fuse: out of memory");
	}
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *p = g->nodes[i];

		if (!is_conv(p))
			continue;
		do {
			st = fuse_one(g, p, &done);
			if (st)
				return npu_error_set(err, st, "cpu_fuse: out of memory");
		} while (done);
		/* Removed nodes may have come before p: find it again. */
		for (i = 0; g->nodes[i] != p; i++)
			;
	}
	/* After the Conv loop: the squeeze-excitation convs are fused. */
	for (i = 0; i < g->num_nodes; i++) {
		st = fuse_se_shortcut(g, g->nodes[i], &done);
		if (st)
			return npu_error_set(err, st, "cpu_fuse: out of memory");
		if (done)
			i--;	/* the Add is gone: slot i holds the next node */
	}
	return NPU_OK;
}

npu_status npu_cpu_passes(struct npu_graph *g, const struct npu_cpu_options *o,
			  struct npu_error *err)
{
	const struct npu_pass passes[] = {
		{ "dead_nodes", npu_pass_dead_nodes, NULL },
		{ "fold_batchnorm", npu_pass_fold_batchnorm, NULL },
		{ "fold_channel_affine", npu_pass_fold_channel_affine, NULL },
		/* Before cpu_fuse: a Conv's activation behind a Transpose comes next to it. */
		{ "cancel_transposes", npu_pass_cancel_transposes, NULL },
		{ "dead_nodes", npu_pass_dead_nodes, NULL },
		{ "cpu_fuse", npu_pass_cpu_fuse, NULL },
		{ "cpu_nchwc", npu_pass_cpu_nchwc, (void *)o },
		{ "dead_nodes", npu_pass_dead_nodes, NULL },
	};

	/* fuse=0: the graph as imported (A/B measurements, bisecting). */
	if (o && o->no_fuse)
		return NPU_OK;
	return npu_graph_run_passes(g, passes, sizeof(passes) / sizeof(passes[0]), err);
}
