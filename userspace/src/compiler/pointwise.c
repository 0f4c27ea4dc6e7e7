// SPDX-License-Identifier: MIT
/*
 * Pointwise groups: a closed subgraph of elementwise nodes with one
 * activation input x and one value y escaping it computes y = F(x) element
 * by element — HardSwish exported as x * Clip(x + 3, 0, 6) / 6, SiLU as
 * x * Sigmoid(x), GELU's Erf form. On the NPU the whole group is one
 * 256-entry LUT from x's int8 domain to y's, built by running the group's
 * own CPU ops on all 256 input values, so the semantics are the model's.
 */
#include "compiler/pointwise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/cpu_ops.h"

static bool is_unary_pointwise(const struct npu_node *n)
{
	static const char *const ops[] = {
		"Relu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
		"LeakyRelu", "Erf", "Exp", "Neg", "Abs", "Softplus", "Elu",
		"Selu", "Celu", "Softsign", "Reciprocal", "Identity",
	};
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(n->op_type, ops[i]))
			return true;
	return false;
}

static bool is_binary_pointwise(const struct npu_node *n)
{
	static const char *const ops[] = { "Add", "Sub", "Mul", "Div", "Max", "Min", "Pow" };
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(n->op_type, ops[i]))
			return true;
	return false;
}

static bool scalar_constant(const struct npu_value *v)
{
	return v && v->constant && v->dtype == NPU_DTYPE_FLOAT &&
	       npu_shape_numel(&v->shape) == 1;
}

static bool in_set(struct npu_value *const *set, size_t n, const struct npu_value *v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == v)
			return true;
	return false;
}

/*
 * Whether 'n' can join a group whose known values are 'vals' (x first):
 * elementwise, float, each non-constant input known, every other input a
 * scalar constant (or Clip's optional bounds), and - unless it is the
 * group's first node - reading at least one value the group produced.
 */
static bool joins(const struct npu_node *n, struct npu_value *const *vals,
		  size_t nvals, bool first)
{
	bool reads_group = false, unary = is_unary_pointwise(n);
	size_t i;

	if (n->domain[0] || n->num_outputs != 1 || !n->outputs[0] ||
	    n->outputs[0]->dtype != NPU_DTYPE_FLOAT)
		return false;
	if (!unary && !is_binary_pointwise(n))
		return false;
	for (i = 0; i < n->num_inputs; i++) {
		const struct npu_value *v = n->inputs[i];

		if (!v)
			continue;
		if (in_set(vals, nvals, v)) {
			reads_group |= v != vals[0];
			continue;
		}
		if (scalar_constant(v) && (i > 0 || !unary))
			continue;
		return false;
	}
	/* Shapes: elementwise over x's shape, nothing broadcast up. */
	if (npu_shape_numel(&n->outputs[0]->shape) != npu_shape_numel(&vals[0]->shape))
		return false;
	return first || reads_group;
}

static size_t users_outside(const struct npu_graph *g, const struct npu_value *v,
			    struct npu_node *const *members, size_t count)
{
	size_t i, j, k, users = v->is_graph_output;

	for (i = 0; i < g->num_nodes; i++) {
		bool member = false;

		for (k = 0; k < count; k++)
			member |= g->nodes[i] == members[k];
		if (member)
			continue;
		for (j = 0; j < g->nodes[i]->num_inputs; j++)
			users += g->nodes[i]->inputs[j] == v;
	}
	return users;
}

/* Grow a group from 'start' in topological order; keep it if it is closed. */
static bool grow(const struct npu_graph *g, size_t start, struct npu_pw_group *grp)
{
	struct npu_node *n0 = g->nodes[start];
	struct npu_value **vals = calloc(g->num_nodes + 2, sizeof(*vals));
	struct npu_node **members = calloc(g->num_nodes + 1, sizeof(*members));
	size_t nvals = 0, count = 0, i, escaping = 0;
	struct npu_value *x = NULL, *y = NULL;

	if (!vals || !members)
		goto reject;
	for (i = 0; i < n0->num_inputs && !x; i++)
		if (n0->inputs[i] && !n0->inputs[i]->constant)
			x = n0->inputs[i];
	if (!x || x->dtype != NPU_DTYPE_FLOAT)
		goto reject;
	vals[nvals++] = x;
	for (i = start; i < g->num_nodes; i++) {
		struct npu_node *n = g->nodes[i];

		if (!joins(n, vals, nvals, i == start))
			continue;
		members[count++] = n;
		vals[nvals++] = n->outputs[0];
	}
	if (count < 2)
		goto reject;
	for (i = 0; i < count; i++) {
		if (users_outside(g, members[i]->outputs[0], members, count)) {
			escaping++;
			y = members[i]->outputs[0];
		}
	}
	if (escaping != 1)
		goto reject;
	free(vals);
	grp->nodes = members;
	grp->count = count;
	grp->x = x;
	grp->y = y;
	return true;
reject:
	free(vals);
	free(members);
	return false;
}

npu_status npu_find_pointwise_groups(const struct npu_graph *g,
				     struct npu_pw_groups *out,
				     struct npu_error *err)
{
	bool *taken = calloc(g->num_nodes + 1, sizeof(*taken));
	size_t i, j, k;

	memset(out, 0, sizeof(*out));
	out->groups = calloc(g->num_nodes + 1, sizeof(*out->groups));
	if (!taken || !out->groups) {
		free(taken);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	}
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_pw_group grp;
		bool overlap = false;

		if (taken[i] || !grow(g, i, &grp))
			continue;
		for (j = 0; j < grp.count; j++)
			for (k = 0; k < g->num_nodes; k++)
				overlap |= g->nodes[k] == grp.nodes[j] && taken[k];
		if (overlap) {
			free(grp.nodes);
			continue;
		}
		for (j = 0; j < grp.count; j++)
			for (k = 0; k < g->num_nodes; k++)
				if (g->nodes[k] == grp.nodes[j])
					taken[k] = true;
		out->groups[out->count++] = grp;
	}
	free(taken);
	return NPU_OK;
}

void npu_pointwise_groups_free(struct npu_pw_groups *gs)
{
	size_t i;

	for (i = 0; i < gs->count; i++)
		free(gs->groups[i].nodes);
	free(gs->groups);
	memset(gs, 0, sizeof(*gs));
}

const struct npu_pw_group *npu_pointwise_group_of(const struct npu_pw_groups *gs,
						  const struct npu_node *n)
{
	size_t i, j;

	for (i = 0; gs && i < gs->count; i++)
		for (j = 0; j < gs->groups[i].count; j++)
			if (gs->groups[i].nodes[j] == n)
				return &gs->groups[i];
	return NULL;
}

/* The tensor holding value 'v' while evaluating a group (NULL: none yet). */
static const struct npu_tensor *lookup(const struct npu_pw_group *grp,
				       struct npu_tensor *const *outs,
				       const struct npu_tensor *xt,
				       const struct npu_value *v)
{
	size_t i;

	if (v == grp->x)
		return xt;
	if (v->constant)
		return v->constant;
	for (i = 0; i < grp->count; i++)
		if (grp->nodes[i]->outputs[0] == v)
			return outs[i];
	return NULL;
}

/* Every value of the int8 domain 'in', as a 1x1x1x256 float tensor. */
static const struct npu_shape lut_shape = { .rank = 4, .dims = { 1, 1, 1, 256 } };

static struct npu_tensor *lut_domain(struct npu_qparams in)
{
	struct npu_tensor *t = npu_tensor_create(NPU_DTYPE_FLOAT, &lut_shape);
	int i;

	for (i = 0; t && i < 256; i++)
		((float *)t->data)[i] = npu_dequantize_value((int8_t)(i - 128), in);
	return t;
}

static void lut_quantize(const float *y, struct npu_qparams out, int8_t table[256])
{
	int i;

	for (i = 0; i < 256; i++)
		table[i] = npu_quantize_value(y[i], out);
}

npu_status npu_fused_activation_table(const struct npu_node *n, struct npu_qparams in,
				      struct npu_qparams out, int8_t table[256],
				      struct npu_error *err)
{
	struct npu_tensor *t = lut_domain(in);
	npu_status st;

	if (!t)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	st = npu_cpu_apply_fused_activation(n, t, err);
	if (!st)
		lut_quantize(t->data, out, table);
	npu_tensor_destroy(t);
	return st;
}

/* y = F(x) over xt (shape [1,1,1,n]) with the group's own CPU ops. */
static npu_status group_eval(const struct npu_pw_group *grp, struct npu_tensor *xt,
			     float *y, struct npu_error *err)
{
	struct npu_tensor **outs = calloc(grp->count, sizeof(*outs));
	npu_status st = NPU_OK;
	size_t i, j;

	if (!outs)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	for (i = 0; i < grp->count && !st; i++) {
		struct npu_node *n = grp->nodes[i];
		const struct npu_op_def *def = npu_cpu_op_find(n->domain, n->op_type, n->opset);
		const struct npu_tensor *ins[8] = { 0 };
		struct npu_op_ctx ctx = {
			.node = n, .inputs = ins, .num_inputs = n->num_inputs,
			.outputs = &outs[i], .num_outputs = 1, .err = err,
		};

		outs[i] = npu_tensor_create(NPU_DTYPE_FLOAT, &xt->shape);
		if (!def || def->prepare || n->num_inputs > 8 || !outs[i]) {
			st = npu_error_set(err, NPU_ERR_UNSUPPORTED, "%s: cannot evaluate for a LUT",
					   n->name);
			break;
		}
		for (j = 0; j < n->num_inputs; j++)
			ins[j] = n->inputs[j] ? lookup(grp, outs, xt, n->inputs[j]) : NULL;
		st = def->compute(&ctx);
		if (!st)
			st = npu_cpu_apply_fused_activation(n, outs[i], err);
	}
	if (!st)
		memcpy(y, lookup(grp, outs, xt, grp->y)->data, xt->nbytes);
	for (i = 0; i < grp->count; i++)
		npu_tensor_destroy(outs[i]);
	free(outs);
	return st;
}

npu_status npu_pointwise_table(const struct npu_pw_group *grp,
			       struct npu_qparams in, struct npu_qparams out,
			       int8_t table[256], struct npu_error *err)
{
	struct npu_tensor *xt = lut_domain(in);
	float y[256];
	npu_status st;

	if (!xt)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	st = group_eval(grp, xt, y, err);
	if (!st)
		lut_quantize(y, out, table);
	npu_tensor_destroy(xt);
	return st;
}

npu_status npu_pointwise_table16(const struct npu_pw_group *grp, const struct npu_node *fused,
				 struct npu_qparams in, struct npu_qparams out,
				 int16_t table[513], struct npu_error *err)
{
	static const struct npu_shape shape = { .rank = 4, .dims = { 1, 1, 1, 513 } };
	struct npu_tensor *xt = npu_tensor_create(NPU_DTYPE_FLOAT, &shape);
	float y[513];
	npu_status st;
	int j;

	if (!xt)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	for (j = 0; j < 513; j++)
		((float *)xt->data)[j] = npu_lut16_knot(j, in);
	if (grp) {
		st = group_eval(grp, xt, y, err);
	} else {
		st = npu_cpu_apply_fused_activation(fused, xt, err);
		if (!st)
			memcpy(y, xt->data, sizeof(y));
	}
	if (!st)
		npu_lut16_table(y, out, table);
	npu_tensor_destroy(xt);
	return st;
}

/*
 * The narrowest [lo', hi'] inside [lo, hi] outside which F stays within
 * 'tol' of F(lo) (below) and of F(hi) (above), on a grid of 'n' points,
 * widened by one int8 step of the result so that the clamped extreme
 * levels still land where F is flat. F from the group or, with grp NULL,
 * node n's fused activation.
 */
#define TIGHTEN_POINTS 4096

static npu_status tighten(const struct npu_pw_group *grp, const struct npu_node *fused,
			  float *lo, float *hi, double tol, struct npu_error *err)
{
	struct npu_shape shape = { .rank = 4, .dims = { 1, 1, 1, TIGHTEN_POINTS } };
	struct npu_tensor *xt = npu_tensor_create(NPU_DTYPE_FLOAT, &shape);
	float *x, *y = malloc(sizeof(float) * TIGHTEN_POINTS);
	double a = *lo, b = *hi, step;
	size_t i, ia = 0, ib = TIGHTEN_POINTS - 1;
	npu_status st;

	if (!xt || !y) {
		npu_tensor_destroy(xt);
		free(y);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	}
	x = xt->data;
	for (i = 0; i < TIGHTEN_POINTS; i++)
		x[i] = (float)(a + (b - a) * (double)i / (TIGHTEN_POINTS - 1));
	if (grp) {
		st = group_eval(grp, xt, y, err);
	} else {
		st = npu_cpu_apply_fused_activation(fused, xt, err);
		memcpy(y, x, sizeof(float) * TIGHTEN_POINTS);
		for (i = 0; i < TIGHTEN_POINTS; i++)	/* x again, for the ends */
			x[i] = (float)(a + (b - a) * (double)i / (TIGHTEN_POINTS - 1));
	}
	if (!st) {
		while (ia + 1 < TIGHTEN_POINTS && fabs((double)y[ia + 1] - y[0]) <= tol &&
		       isfinite(y[ia + 1]))
			ia++;
		while (ib > ia && fabs((double)y[ib - 1] - y[TIGHTEN_POINTS - 1]) <= tol &&
		       isfinite(y[ib - 1]))
			ib--;
		if (ib > ia) {
			step = ((double)x[ib] - x[ia]) / 255.0;
			*lo = (float)fmax(a, x[ia] - step);
			*hi = (float)fmin(b, x[ib] + step);
		}
	}
	npu_tensor_destroy(xt);
	free(y);
	return st;
}

npu_status npu_pointwise_tighten_input(const struct npu_pw_group *grp,
				       struct npu_qparams *in, struct npu_qparams out,
				       struct npu_error *err)
{
	float lo = npu_dequantize_value(-128, *in), hi = npu_dequantize_value(127, *in);
	npu_status st = tighten(grp, NULL, &lo, &hi, 0.25 * out.scale, err);

	if (!st)
		*in = npu_qparams_from_range(lo, hi);
	return st;
}

npu_status npu_fused_activation_tighten_input(const struct npu_node *n,
					      struct npu_qparams *in, struct npu_qparams out,
					      struct npu_error *err)
{
	float lo = npu_dequantize_value(-128, *in), hi = npu_dequantize_value(127, *in);
	npu_status st = tighten(NULL, n, &lo, &hi, 0.25 * out.scale, err);

	if (!st)
		*in = npu_qparams_from_range(lo, hi);
	return st;
}
