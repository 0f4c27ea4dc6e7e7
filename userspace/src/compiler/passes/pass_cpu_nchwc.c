// SPDX-License-Identifier: MIT
/*
 * The CPU layout pass: runs of convolutions keep their activations in the
 * blocked NCHW16c layout (cpu/kernels/cpu_kernels.h), where one pixel's
 * channels are one vector, and convert only at the edges, the way ONNX
 * Runtime's NCHWc transformer does for MLAS.
 *
 * In topological order, a node whose inputs are blocked (or that can
 * take them blocked) is rewritten in place to read the blocked twins of
 * its inputs and write a blocked twin of its output:
 *  - Conv / FusedConv, 2-D, constant W and B, group 1 or depthwise:
 *    NchwcConv. A group-1 conv reads a plain NCHW input as it is when
 *    blocking would pad it by more than half (the model's first layer
 *    keeps its 3 channels); a wider one, a depthwise one, or a residual
 *    Z, gets an NchwcReorderInput. A conv on a plain input whose
 *    output no blocked op would read stays plain, and so does one the
 *    NCHW kernels run as Winograd (fewer multiplies than direct);
 *  - GlobalAveragePool: NchwcGlobalAveragePool;
 *  - Resize, nearest, by integer factors whose every output pixel reads
 *    input pixel (i / f), when a blocked op reads its output:
 *    NchwcUpsample (else the smaller input is reordered, not the output);
 *  - Concat on the channels, when every input but the last fills whole
 *    blocks: Concat on the blocks;
 *  - elementwise ops that act lane by lane (activations; Add, Sub, Mul,
 *    Div, Max, Min of two blocked values with the same channels, or of one and a
 *    scalar constant, or of one and a plain value shaped as the output,
 *    which is reordered): the same op on the rank-5 values.
 * The original output value is then written by an NchwcReorderOutput of
 * the twin, which the dead-node pass removes when nothing plain reads it.
 * Pad lanes never reach a real channel (cpu_kernels.h), so every rewrite
 * computes the same values as the plain graph up to the kernels' rounding.
 *
 * It runs by default where the blocked kernels have their fast path
 * (AVX-512); the option nchwc=0 / 1 (struct npu_cpu_options, the pass's
 * argument) turns it off / on whatever the ISA (A/B measurements, the
 * other ISAs' tests).
 */
#include "compiler/passes/passes.h"
#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/cpu_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nchwc {
	struct npu_graph *g;
	const struct npu_cpu_options *opts;	/* never NULL */
	struct npu_value **twin;	/* by value index: the blocked twin */
	size_t cap;
	/* The readers of each value of the graph as it came in (value index
	 * v: reader[reader_at[v] .. reader_at[v + 1]]); the pass only retargets
	 * readers it has not reached yet, so a later lookup still holds. */
	size_t *reader_at, num_values;
	const struct npu_node **reader;
	struct npu_error *err;
};

static bool is_onnx(const struct npu_node *n, const char *op)
{
	return !n->domain[0] && !strcmp(n->op_type, op);
}

/* A float rank-4 value with every dim known. */
static bool plain4(const struct npu_value *v)
{
	int i;

	if (!v || v->dtype != NPU_DTYPE_FLOAT || v->shape.rank != 4)
		return false;
	for (i = 0; i < 4; i++)
		if (v->shape.dims[i] < 1)
			return false;
	return true;
}

static struct npu_value *twin_of(const struct nchwc *c, const struct npu_value *v)
{
	return v && v->index < c->cap ? c->twin[v->index] : NULL;
}

static npu_status set_twin(struct nchwc *c, const struct npu_value *v,
			   struct npu_value *twin)
{
	if (v->index >= c->cap) {
		size_t cap = (v->index + 1) * 2;
		struct npu_value **t = realloc(c->twin, cap * sizeof(*t));

		if (!t)
			return npu_error_set(c->err, NPU_ERR_NO_MEMORY,
					     "nchwc: out of memory");
		memset(t + c->cap, 0, (cap - c->cap) * sizeof(*t));
		c->twin = t;
		c->cap = cap;
	}
	c->twin[v->index] = twin;
	return NPU_OK;
}

/* A new blocked value for the NCHW shape of 'like'. */
static struct npu_value *new_blocked(struct nchwc *c, const struct npu_value *like)
{
	struct npu_value *v = npu_graph_new_value(c->g, like->name, c->err);

	if (!v)
		return NULL;
	v->dtype = NPU_DTYPE_FLOAT;
	v->shape.rank = 5;
	v->shape.dims[0] = like->shape.dims[0];
	v->shape.dims[1] = (int64_t)npu_nchwc_blocks((size_t)like->shape.dims[1]);
	v->shape.dims[2] = like->shape.dims[2];
	v->shape.dims[3] = like->shape.dims[3];
	v->shape.dims[4] = NPU_NCHWC_BLOCK;
	return v;
}

/* A reorder node of 'in' into 'out', named "<value>/<suffix>". */
static struct npu_node *add_reorder(struct nchwc *c, const char *op,
				    const char *suffix, struct npu_value *in,
				    struct npu_value *out)
{
	const char *value = !strcmp(suffix, "to_nchw") ? out->name : in->name;
	char *name = malloc(strlen(value) + strlen(suffix) + 2);
	struct npu_node *n;

	if (!name) {
		npu_error_set(c->err, NPU_ERR_NO_MEMORY, "nchwc: out of memory");
		return NULL;
	}
	sprintf(name, "%s/%s", value, suffix);
	n = npu_graph_add_node(c->g, op, NPU_CPU_FUSED_DOMAIN, name, 1, 1, c->err);
	free(name);
	if (!n)
		return NULL;
	n->opset = 1;
	n->inputs[0] = in;
	n->outputs[0] = out;
	out->producer = n;
	return n;
}

/* The blocked twin of plain v, made by an NchwcReorderInput if needed. */
static struct npu_value *blocked_input(struct nchwc *c, struct npu_value *v)
{
	struct npu_value *b = twin_of(c, v);

	if (b)
		return b;
	b = new_blocked(c, v);
	if (!b || !add_reorder(c, "NchwcReorderInput", "to_nchwc", v, b) ||
	    set_twin(c, v, b))
		return NULL;
	return b;
}

/*
 * Node n now writes a blocked twin of its output y; y is written by an
 * NchwcReorderOutput of it (for any reader left plain).
 */
static npu_status retarget_output(struct nchwc *c, struct npu_node *n)
{
	struct npu_value *y = n->outputs[0], *yb = new_blocked(c, y);
	struct npu_node *r;

	if (!yb)
		return c->err->status;
	n->outputs[0] = yb;
	yb->producer = n;
	r = add_reorder(c, "NchwcReorderOutput", "to_nchw", yb, y);
	if (!r)
		return c->err->status;
	if (npu_node_set_attr_int(r, "channels", y->shape.dims[1]))
		return npu_error_set(c->err, NPU_ERR_NO_MEMORY, "nchwc: out of memory");
	return set_twin(c, y, yb);
}

static npu_status set_op(struct nchwc *c, struct npu_node *n, const char *op)
{
	if (npu_node_set_op(n, NPU_CPU_FUSED_DOMAIN, op, 1))
		return npu_error_set(c->err, NPU_ERR_NO_MEMORY, "nchwc: out of memory");
	return NPU_OK;
}

/* ---- Convolution ---- */

static bool conv_fits(const struct nchwc *c, const struct npu_node *n)
{
	const struct npu_value *x, *w, *b;
	int64_t group;

	if (!is_onnx(n, "Conv") &&
	    !(!strcmp(n->domain, NPU_CPU_FUSED_DOMAIN) && !strcmp(n->op_type, "FusedConv")))
		return false;
	if (n->num_inputs < 2 || n->num_outputs != 1 || !plain4(n->outputs[0]))
		return false;
	x = n->inputs[0];
	w = n->inputs[1];
	b = n->num_inputs > 2 ? n->inputs[2] : NULL;
	group = npu_node_attr_int_or(n, "group", 1);
	if (!plain4(x) || !w || !w->constant || w->dtype != NPU_DTYPE_FLOAT ||
	    w->shape.rank != 4 || (b && (!b->constant || b->dtype != NPU_DTYPE_FLOAT)))
		return false;
	if (group != 1 && !(group == x->shape.dims[1] && group == w->shape.dims[0] &&
			    w->shape.dims[1] == 1))
		return false;
	return npu_nchwc_conv_preferred(n, c->opts);
}

static bool is_lanewise_unary(const struct npu_node *n);
static bool is_lanewise_binary(const struct npu_node *n);
static bool concat_aligned(const struct npu_node *n);

/*
 * Whether a node reading y could take it blocked: a convolution, or an op
 * that runs blocked when its input is. An isolated conv on a plain input
 * stays plain, since a blocked one would buy nothing but a reorder.
 */
static bool has_blocked_reader(const struct nchwc *c, const struct npu_value *y)
{
	size_t i;

	if (y->index >= c->num_values)
		return false;
	for (i = c->reader_at[y->index]; i < c->reader_at[y->index + 1]; i++) {
		const struct npu_node *n = c->reader[i];

		if (conv_fits(c, n) || is_lanewise_unary(n) || is_lanewise_binary(n) ||
		    is_onnx(n, "GlobalAveragePool") || is_onnx(n, "Resize") ||
		    (is_onnx(n, "Concat") && concat_aligned(n)))
			return true;
	}
	return false;
}

/* c->reader_at / c->reader from the graph's nodes (a node once per input). */
static npu_status index_readers(struct nchwc *c)
{
	struct npu_graph *g = c->g;
	size_t i, j, total = 0;

	c->num_values = g->num_values;
	c->reader_at = calloc(g->num_values + 2, sizeof(*c->reader_at));
	if (!c->reader_at)
		return npu_error_set(c->err, NPU_ERR_NO_MEMORY, "nchwc: out of memory");
	for (i = 0; i < g->num_nodes; i++)
		for (j = 0; j < g->nodes[i]->num_inputs; j++) {
			const struct npu_value *v = g->nodes[i]->inputs[j];

			if (v && v->index < g->num_values)
				c->reader_at[v->index + 2]++;
		}
	for (i = 0; i < g->num_values; i++) {
		c->reader_at[i + 2] += c->reader_at[i + 1];
		total = c->reader_at[i + 2];
	}
	c->reader = malloc((total ? total : 1) * sizeof(*c->reader));
	if (!c->reader)
		return npu_error_set(c->err, NPU_ERR_NO_MEMORY, "nchwc: out of memory");
	/* counts went to v + 2, so after the sums reader_at[v + 1] is where v's
	 * readers start: fill from there; it ends at v + 1's start */
	for (i = 0; i < g->num_nodes; i++)
		for (j = 0; j < g->nodes[i]->num_inputs; j++) {
			const struct npu_value *v = g->nodes[i]->inputs[j];

			if (v && v->index < g->num_values)
				c->reader[c->reader_at[v->index + 1]++] = g->nodes[i];
		}
	return NPU_OK;
}

/*
 * Whether a group-1 conv on plain x runs faster on a reordered copy:
 * reading NCHW, a tile loads each pixel's channels one by one, planes
 * apart; blocked, it pays for the pad lanes of the last block. On
 * AVX-512 (cpu-conv-bench --nchwc --nchw-in, batch 8, one
 * thread) the NCHW read took 1.4-2.3x the blocked one's time (1x1 58,
 * 116, 232 channels; 3x3 16 and 64), the reorder moves the input once:
 * reorder when the pad lanes add at most half the work, so the 3
 * channels of a first layer still read NCHW.
 */
static bool reorder_pays(const struct npu_value *x)
{
	int64_t ch = x->shape.rank == 4 ? x->shape.dims[1] : -1;

	return ch > 0 && 2 * npu_nchwc_blocks((size_t)ch) * NPU_NCHWC_BLOCK <=
			 3 * (size_t)ch;
}

static npu_status convert_conv(struct nchwc *c, struct npu_node *n)
{
	struct npu_value *x = n->inputs[0], *xb = twin_of(c, x);
	npu_status st;

	if (!xb && !has_blocked_reader(c, n->outputs[0]) &&
	    !npu_nchwc_conv_alone_pays(n, c->opts))
		return NPU_OK;
	if (!xb && (npu_node_attr_int_or(n, "group", 1) > 1 || reorder_pays(x))) {
		xb = blocked_input(c, x);
		if (!xb)
			return c->err->status;
	}
	if (xb)
		n->inputs[0] = xb;	/* else: a group-1 conv reads NCHW */
	if (n->num_inputs > 3 && n->inputs[3]) {
		struct npu_value *zb = blocked_input(c, n->inputs[3]);

		if (!zb)
			return c->err->status;
		n->inputs[3] = zb;
	}
	st = set_op(c, n, "NchwcConv");
	return st ? st : retarget_output(c, n);
}

/* ---- Elementwise ---- */

static bool is_lanewise_unary(const struct npu_node *n)
{
	static const char *const ops[] = {
		"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
		"Clip", "Elu", "Selu", "Softplus", "Neg", "Abs", "Identity",
	};
	size_t i, k;

	if (n->domain[0] || n->num_outputs != 1 || n->num_inputs < 1)
		return false;
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(n->op_type, ops[i]))
			continue;
		/* Clip's bounds: absent or scalar constants. */
		for (k = 1; k < n->num_inputs; k++)
			if (n->inputs[k] && (!n->inputs[k]->constant ||
					     npu_shape_numel(&n->inputs[k]->shape) != 1))
				return false;
		return true;
	}
	return false;
}

static bool is_lanewise_binary(const struct npu_node *n)
{
	return (is_onnx(n, "Add") || is_onnx(n, "Sub") || is_onnx(n, "Mul") ||
		is_onnx(n, "Div") || is_onnx(n, "Max") || is_onnx(n, "Min")) &&
	       n->num_inputs == 2 && n->num_outputs == 1 &&
	       n->inputs[0] && n->inputs[1];
}

static bool scalar_constant(const struct npu_value *v)
{
	return v->constant && npu_shape_numel(&v->shape) == 1 && v->shape.rank <= 5;
}

/*
 * How operand v of a binary node writing y can be read blocked: its twin
 * (same channels, other dims 1 or y's), a scalar constant as it is, or a
 * plain value shaped as y (reordered). 0: not at all.
 */
enum operand { OPERAND_NO, OPERAND_TWIN, OPERAND_SCALAR, OPERAND_REORDER };

static enum operand binary_operand(const struct nchwc *c, const struct npu_value *v,
				   const struct npu_value *y)
{
	int i;

	if (twin_of(c, v)) {
		if (v->shape.dims[1] != y->shape.dims[1])
			return OPERAND_NO;
		for (i = 0; i < 4; i++)
			if (v->shape.dims[i] != 1 && v->shape.dims[i] != y->shape.dims[i])
				return OPERAND_NO;
		return OPERAND_TWIN;
	}
	if (scalar_constant(v))
		return OPERAND_SCALAR;
	if (plain4(v) && !memcmp(v->shape.dims, y->shape.dims, 4 * sizeof(int64_t)))
		return OPERAND_REORDER;
	return OPERAND_NO;
}

static npu_status convert_binary(struct nchwc *c, struct npu_node *n, bool *done)
{
	struct npu_value *y = n->outputs[0];
	enum operand a, b;
	size_t i;

	*done = false;
	if (!plain4(y))
		return NPU_OK;
	a = binary_operand(c, n->inputs[0], y);
	b = binary_operand(c, n->inputs[1], y);
	if (!a || !b || (a != OPERAND_TWIN && b != OPERAND_TWIN))
		return NPU_OK;
	for (i = 0; i < 2; i++) {
		struct npu_value *v = n->inputs[i];

		if ((i ? b : a) == OPERAND_SCALAR)
			continue;
		v = blocked_input(c, v);
		if (!v)
			return c->err->status;
		n->inputs[i] = v;
	}
	*done = true;
	return retarget_output(c, n);
}

/* ---- GlobalAveragePool, Resize, Concat ---- */

/*
 * Resize of x to y that is nearest by integer factors f with output pixel
 * i reading input pixel i / f: with half_pixel (or pytorch_half_pixel)
 * coordinates, i maps to i / f + (1 / f - 1) / 2, within half a pixel of
 * floor(i / f) and never on the tie, whichever way the ties round; with
 * asymmetric coordinates, i / f, rounded down.
 */
static bool upsample_factors(const struct npu_node *n, int64_t *f)
{
	const struct npu_value *x = n->inputs[0], *y = n->outputs[0];
	const char *mode = npu_node_attr_string_or(n, "mode", "nearest");
	const char *ctm = npu_node_attr_string_or(n, "coordinate_transformation_mode",
						  "half_pixel");
	const char *nm = npu_node_attr_string_or(n, "nearest_mode", "round_prefer_floor");
	const struct npu_value *scales = n->num_inputs > 2 ? n->inputs[2] : NULL;
	bool half = !strcmp(ctm, "half_pixel") || !strcmp(ctm, "pytorch_half_pixel");
	int i;

	if (!is_onnx(n, "Resize") || n->opset < 11 || n->num_outputs != 1 ||
	    !plain4(x) || !plain4(y) || strcmp(mode, "nearest") ||
	    npu_node_attr_int_or(n, "antialias", 0))
		return false;
	if (!(half && (!strcmp(nm, "round_prefer_floor") || !strcmp(nm, "round_prefer_ceil"))) &&
	    !(!strcmp(ctm, "asymmetric") && !strcmp(nm, "floor")))
		return false;
	if (y->shape.dims[0] != x->shape.dims[0] || y->shape.dims[1] != x->shape.dims[1])
		return false;
	for (i = 0; i < 2; i++) {
		if (y->shape.dims[2 + i] % x->shape.dims[2 + i])
			return false;
		f[i] = y->shape.dims[2 + i] / x->shape.dims[2 + i];
		if (f[i] > NPU_NCHWC_MAX_FACTOR)
			return false;
	}
	/* Scales given: the coordinates use them, so they must be f exactly. */
	if (scales && npu_shape_numel(&scales->shape) > 0) {
		int64_t count;
		const float *s = npu_const_floats(scales, &count);

		if (!s || count != 4 || s[0] != 1.0f || s[1] != 1.0f ||
		    s[2] != (float)f[0] || s[3] != (float)f[1])
			return false;
	}
	return true;
}

/* A Concat on the channels whose inputs but the last fill whole blocks. */
static bool concat_aligned(const struct npu_node *n)
{
	int64_t axis = npu_node_attr_int_or(n, "axis", 0);
	size_t i;

	if (!is_onnx(n, "Concat") || n->num_outputs != 1 || !plain4(n->outputs[0]) ||
	    (axis != 1 && axis != -3) || !n->num_inputs)
		return false;
	for (i = 0; i < n->num_inputs; i++)
		if (!plain4(n->inputs[i]) ||
		    (i + 1 < n->num_inputs && n->inputs[i]->shape.dims[1] % NPU_NCHWC_BLOCK))
			return false;
	return true;
}

static bool concat_fits(const struct nchwc *c, const struct npu_node *n)
{
	size_t i;

	if (!concat_aligned(n))
		return false;
	for (i = 0; i < n->num_inputs; i++)
		if (!twin_of(c, n->inputs[i]))
			return false;
	return true;
}

/* Resize n becomes a new NchwcUpsample of xb (Resize's attributes go). */
static npu_status convert_resize(struct nchwc *c, struct npu_node *n,
				 struct npu_value *xb, const int64_t *f)
{
	struct npu_value *y = n->outputs[0];
	struct npu_node *u = npu_graph_add_node(c->g, "NchwcUpsample", NPU_CPU_FUSED_DOMAIN,
						n->name, 1, 1, c->err);

	if (!u)
		return c->err->status;
	u->opset = 1;
	u->inputs[0] = xb;
	u->outputs[0] = y;
	if (npu_node_set_attr_ints(u, "factors", f, 2))
		return npu_error_set(c->err, NPU_ERR_NO_MEMORY, "nchwc: out of memory");
	npu_graph_remove_node(c->g, n);
	y->producer = u;
	return retarget_output(c, u);
}

static npu_status convert_node(struct nchwc *c, struct npu_node *n)
{
	struct npu_value *xb = n->num_inputs ? twin_of(c, n->inputs[0]) : NULL;
	int64_t f[2];
	bool done;
	size_t i;
	npu_status st;

	if (conv_fits(c, n))
		return convert_conv(c, n);
	if (is_lanewise_binary(n))
		return convert_binary(c, n, &done);
	if (xb && is_lanewise_unary(n) && plain4(n->outputs[0])) {
		n->inputs[0] = xb;
		return retarget_output(c, n);
	}
	if (xb && is_onnx(n, "GlobalAveragePool") && n->num_outputs == 1 &&
	    plain4(n->outputs[0])) {
		st = set_op(c, n, "NchwcGlobalAveragePool");
		n->inputs[0] = xb;
		return st ? st : retarget_output(c, n);
	}
	/* Upsampled only for plain readers: reorder the smaller input instead. */
	if (xb && upsample_factors(n, f) && has_blocked_reader(c, n->outputs[0]))
		return convert_resize(c, n, xb, f);
	if (concat_fits(c, n)) {
		for (i = 0; i < n->num_inputs; i++)
			n->inputs[i] = twin_of(c, n->inputs[i]);
		/* Axis 1 of the blocks; -3 would be H in rank 5. */
		if (npu_node_set_attr_int(n, "axis", 1))
			return npu_error_set(c->err, NPU_ERR_NO_MEMORY, "nchwc: out of memory");
		return retarget_output(c, n);
	}
	return NPU_OK;
}

npu_status npu_pass_cpu_nchwc(struct npu_graph *g, void *arg, struct npu_error *err)
{
	static const struct npu_cpu_options defaults;
	const struct npu_cpu_options *o = arg ? arg : &defaults;
	struct nchwc c = { .g = g, .opts = o, .err = err };
	struct npu_node **order;
	size_t count = g->num_nodes, i;
	npu_status st = NPU_OK;

	if (o->nchwc == NPU_CPU_OFF ||
	    (o->nchwc == NPU_CPU_AUTO && strcmp(npu_cpu_kernels_isa(), "avx512")))
		return NPU_OK;
	/* The nodes as sorted now: the pass appends reorders behind them. */
	order = malloc((count ? count : 1) * sizeof(*order));
	if (!order)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "nchwc: out of memory");
	if (count)	/* an empty graph has no node array */
		memcpy(order, g->nodes, count * sizeof(*order));
	st = index_readers(&c);
	for (i = 0; !st && i < count; i++)
		st = convert_node(&c, order[i]);
	free(order);
	free(c.twin);
	free(c.reader_at);
	free(c.reader);
	return st;
}
