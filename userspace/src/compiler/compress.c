// SPDX-License-Identifier: MIT
/*
 * compress.c - npu compress (issue 35): prune a model's Conv / Gemm /
 * MatMul weights, re-solve what is kept from calibration data, and write
 * the same ONNX model with the new initializers.
 *
 * 1. The model runs on the CPU path over the calibration samples; each
 *    prunable layer accumulates H = X^T X of its inputs (im2col rows of a
 *    conv, sampled to a bound per sample; a ones column for the bias).
 * 2. Masks: unstructured magnitude or N:M per layer; or channel groups:
 *    every output channel of a (groups 1) Conv is a class, classes that
 *    must go together (residual Add, SE Mul, depthwise convs, BatchNorm,
 *    activations, Concat at offsets) are united by walking the graph, and
 *    a class any other reader sees (Reshape, a model output, ...) is
 *    pinned; a group is pruned by its weakest free classes.
 * 3. Reconstruction (compress_reconstruct.c), report, and the model
 *    written back; its outputs are compared with the original's.
 * 4. The sequential pass: wave by wave (layers that do not feed each
 *    other), each re-solved layer again on the inputs the model pruned so
 *    far gives it, toward the original outputs; kept when the held-out
 *    cosine is at least the one-shot model's.
 * --accuracy-target: each unit (layer, or channel group) is tried at a
 * few levels alone on the calibration set, a greedy assignment spends
 * the cosine budget on the best MACs per cosine lost, and the result is
 * checked on the held-out set (the budget halved until it holds).
 * quantize: the pruned model is compiled for the NPU by the caller's
 * quantizer (the runtime's load and plan); the target's held-out check
 * then judges the quantized model against the original fp32 one, and the
 * model chosen (the sequential pass kept or not on its fp32 cosine, which
 * predicts OCR accuracy better than the int8 one: compress.md) is
 * compiled once more into the .npub.
 */
#include "compiler/compress.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/npu_onnx.h"

enum cz_kind { CZ_CONV, CZ_GEMM, CZ_MATMUL };

struct cz_layer {
	struct npu_node *node;
	char label[160];
	enum cz_kind kind;
	struct npu_value *x, *wv, *bv;
	int64_t O, I, kh, kw, K, group;
	bool transb;
	int64_t N, C, H, W, Ho, Wo, sh, sw, dh, dw, pt, pl;
	uint64_t positions;	/* output rows per run */
	float *w;		/* [O][K] */
	float *b;		/* [O] (zeros without a bias) */
	double *h;		/* [(K+1)^2], ones column last */
	uint64_t rows;
	const char *skip;	/* not pruned: why (static) */
	int next_reader;	/* next layer reading the same value, -1 */
	/* channels */
	int32_t out_base;	/* first class of its outputs; -1: not a producer */
	int32_t *in_cls;	/* class of each input channel (-1: fixed); NULL: none */
	int group_id;		/* channel group (a unit), -1 */
	/* The sequential pass: statistics on the inputs the pruned layers
	 * before it give. */
	bool refine;		/* re-solved in pass 1: refined in its wave */
	int wave;		/* refined layers on the longest path before it */
	int64_t K1;		/* inputs per output in the pruned model */
	double *hp;		/* [(K1+1)^2] Xp^T Xp */
	double *cx;		/* [(K1+1) x (K+1)] Xp^T X */
	float *memo_q;		/* the last solve, while the levels stay */
	bool memo_hp;
	double memo_mag, memo_db;
	const char *memo_note;
};

/* A constant sliced along 'axis' by channel classes (BN, depthwise, Mul). */
struct cz_slice {
	struct npu_value *c;
	int axis;
	int32_t *cls;		/* [dims[axis]] */
	const char *group_of;	/* depthwise: the node output whose 'group' follows */
};

struct cz_ctx {
	const struct npu_cz_config *cfg;
	const char *source;
	const void *data;
	size_t size;
	struct npu_graph *base, *g;
	struct cz_layer *L;
	size_t nl;
	int *reader;		/* per value: first layer reading it, -1 */
	/* channel classes (union-find) */
	int32_t **cmap;		/* per value: class of each channel, NULL */
	int32_t *parent;
	bool *pinned;
	int32_t *owner;		/* class -> producing layer */
	size_t ncls;
	struct cz_slice *sl;
	size_t nsl;
	int ngroups;
	char **notes;
	size_t nnotes;
	/* samples */
	size_t ncal, neval;
	struct npu_tensor **ref;	/* neval x outputs: the original's outputs */
	uint64_t seed;
	bool memo;		/* reuse each layer's last solve (fixed levels) */
};

static const struct npu_cz_samples *eval_src(const struct cz_ctx *c)
{
	return c->cfg->eval.count ? &c->cfg->eval : &c->cfg->calib;
}

static npu_status note(struct cz_ctx *c, struct npu_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static npu_status note(struct cz_ctx *c, struct npu_error *err, const char *fmt, ...)
{
	char buf[512], **n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = realloc(c->notes, sizeof(*n) * (c->nnotes + 1));
	if (!n || !(n[c->nnotes] = strdup(buf))) {
		if (n)
			c->notes = n;
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	c->notes = n;
	c->nnotes++;
	return NPU_OK;
}

/* ---- Layers ---- */

/* An initializer of the file (a Constant node's output counts): it can be rewritten. */
static bool file_constant(const struct cz_ctx *c, const struct npu_value *v)
{
	const struct npu_value *b = v ? npu_graph_find_value(c->base, v->name) : NULL;

	return b && b->constant && !b->producer && v->constant &&
	       v->constant->dtype == NPU_DTYPE_FLOAT;
}

static size_t readers(const struct npu_graph *g, const struct npu_value *v)
{
	size_t i, k, n = 0;

	for (i = 0; i < g->num_nodes; i++)
		for (k = 0; k < g->nodes[i]->num_inputs; k++)
			n += g->nodes[i]->inputs[k] == v;
	for (i = 0; i < g->num_outputs; i++)
		n += g->outputs[i] == v;
	return n;
}

static void conv_pads(struct cz_layer *l, const struct npu_node *n)
{
	const struct npu_attr *p = npu_node_attr(n, "pads");
	const char *ap = npu_node_attr_string_or(n, "auto_pad", "NOTSET");

	l->pt = l->pl = 0;
	if (p && p->count == 4) {
		l->pt = p->ints[0];
		l->pl = p->ints[1];
	} else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
		int64_t th = (l->Ho - 1) * l->sh + (l->kh - 1) * l->dh + 1 - l->H;
		int64_t tw = (l->Wo - 1) * l->sw + (l->kw - 1) * l->dw + 1 - l->W;

		th = th > 0 ? th : 0;
		tw = tw > 0 ? tw : 0;
		l->pt = !strcmp(ap, "SAME_UPPER") ? th / 2 : th - th / 2;
		l->pl = !strcmp(ap, "SAME_UPPER") ? tw / 2 : tw - tw / 2;
	}
}

static int64_t attr_ints_at(const struct npu_node *n, const char *name, size_t k, int64_t dflt)
{
	const struct npu_attr *a = npu_node_attr(n, name);

	return a && a->count > k ? a->ints[k] : dflt;
}

/* Fill l from a Conv node; false (l->skip set) when it cannot be pruned. */
static bool conv_layer(struct cz_ctx *c, struct cz_layer *l, struct npu_node *n)
{
	const struct npu_value *y = n->outputs[0];
	const struct npu_shape *ws;

	l->kind = CZ_CONV;
	l->x = n->inputs[0];
	l->wv = n->inputs[1];
	l->bv = n->num_inputs > 2 ? n->inputs[2] : NULL;
	l->group = npu_node_attr_int_or(n, "group", 1);
	if (!file_constant(c, l->wv) || l->wv->constant->shape.rank != 4)
		return l->skip = "weights are not a 4-D float initializer", false;
	ws = &l->wv->constant->shape;
	l->O = ws->dims[0];
	l->I = ws->dims[1];
	l->kh = ws->dims[2];
	l->kw = ws->dims[3];
	l->K = l->I * l->kh * l->kw;
	if (!l->x || l->x->shape.rank != 4 || npu_shape_numel(&l->x->shape) <= 0 || !y ||
	    y->shape.rank != 4 || npu_shape_numel(&y->shape) <= 0)
		return l->skip = "input or output shape unknown (not 2-D conv)", false;
	l->N = l->x->shape.dims[0];
	l->C = l->x->shape.dims[1];
	l->H = l->x->shape.dims[2];
	l->W = l->x->shape.dims[3];
	l->Ho = y->shape.dims[2];
	l->Wo = y->shape.dims[3];
	l->sh = attr_ints_at(n, "strides", 0, 1);
	l->sw = attr_ints_at(n, "strides", 1, 1);
	l->dh = attr_ints_at(n, "dilations", 0, 1);
	l->dw = attr_ints_at(n, "dilations", 1, 1);
	conv_pads(l, n);
	l->positions = (uint64_t)(l->N * l->Ho * l->Wo);
	if (l->bv && (!file_constant(c, l->bv) || npu_shape_numel(&l->bv->constant->shape) != l->O))
		return l->skip = "bias is not a float initializer", false;
	if (readers(c->g, l->wv) != 1 || (l->bv && readers(c->g, l->bv) != 1))
		return l->skip = "weights shared with another node", false;
	if (l->group != 1)
		return l->skip = l->group == l->C && l->I == 1 ? "depthwise (one input per output)"
							       : "grouped convolution", false;
	return true;
}

static bool matmul_layer(struct cz_ctx *c, struct cz_layer *l, struct npu_node *n)
{
	const struct npu_tensor *t;

	l->kind = !strcmp(n->op_type, "Gemm") ? CZ_GEMM : CZ_MATMUL;
	l->x = n->inputs[0];
	l->wv = n->inputs[1];
	l->bv = NULL;
	l->group = 1;
	l->kh = l->kw = 1;
	if (!file_constant(c, l->wv) || l->wv->constant->shape.rank != 2)
		return l->skip = "weights are not a 2-D float initializer", false;
	t = l->wv->constant;
	l->transb = l->kind == CZ_GEMM && npu_node_attr_int_or(n, "transB", 0);
	l->O = t->shape.dims[l->transb ? 0 : 1];
	l->K = l->I = t->shape.dims[l->transb ? 1 : 0];
	if (!l->x || l->x->shape.rank < 2 || npu_shape_numel(&l->x->shape) <= 0 ||
	    l->x->shape.dims[l->x->shape.rank - 1] != l->K)
		return l->skip = "input shape unknown", false;
	l->positions = (uint64_t)(npu_shape_numel(&l->x->shape) / l->K);
	if (readers(c->g, l->wv) != 1)
		return l->skip = "weights shared with another node", false;
	if (l->kind == CZ_GEMM) {
		if (npu_node_attr_int_or(n, "transA", 0) || npu_node_attr_float_or(n, "alpha", 1) != 1)
			return l->skip = "Gemm with transA or alpha != 1", false;
		if (n->num_inputs > 2 && n->inputs[2]) {
			l->bv = n->inputs[2];
			if (!file_constant(c, l->bv) || npu_shape_numel(&l->bv->constant->shape) != l->O ||
			    npu_node_attr_float_or(n, "beta", 1) != 1 || readers(c->g, l->bv) != 1)
				return l->skip = "bias C is not a per-output initializer with beta 1", false;
		}
	}
	return true;
}

/* Weights [O][K] and bias [O] out of the initializers. */
static bool load_weights(struct cz_layer *l)
{
	const float *w = l->wv->constant->data;
	int64_t o, k;

	l->w = malloc(sizeof(float) * (size_t)(l->O * l->K) + 1);
	l->b = calloc((size_t)l->O + 1, sizeof(float));
	if (!l->w || !l->b)
		return false;
	for (o = 0; o < l->O; o++)
		for (k = 0; k < l->K; k++)
			l->w[o * l->K + k] = l->kind == CZ_CONV || l->transb ? w[o * l->K + k]
									  : w[k * l->O + o];
	if (l->bv)
		memcpy(l->b, l->bv->constant->data, sizeof(float) * (size_t)l->O);
	return true;
}

static npu_status find_layers(struct cz_ctx *c, struct npu_error *err)
{
	size_t i;

	c->L = calloc(c->g->num_nodes + 1, sizeof(*c->L));
	c->reader = malloc(sizeof(int) * (c->g->num_values + 1));
	if (!c->L || !c->reader)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < c->g->num_values; i++)
		c->reader[i] = -1;
	for (i = 0; i < c->g->num_nodes; i++) {
		struct npu_node *n = c->g->nodes[i];
		struct cz_layer *l = &c->L[c->nl];
		bool ok;

		if (strcmp(n->domain, "") || n->num_inputs < 2 || !n->num_outputs || !n->outputs[0] ||
		    (strcmp(n->op_type, "Conv") && strcmp(n->op_type, "Gemm") &&
		     strcmp(n->op_type, "MatMul")))
			continue;
		memset(l, 0, sizeof(*l));
		l->node = n;
		l->out_base = -1;
		l->group_id = -1;
		npu_node_label(c->g, n, l->label, sizeof(l->label));
		ok = !strcmp(n->op_type, "Conv") ? conv_layer(c, l, n) : matmul_layer(c, l, n);
		if (!l->wv || !l->wv->constant)
			continue;	/* a MatMul of two activations: not a layer */
		if (ok && !load_weights(l))
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		if (ok && (size_t)l->K + 1 > 4096)
			l->skip = "more than 4095 inputs per output (reconstruction bound)";
		if (ok && !l->skip) {
			l->h = calloc((size_t)(l->K + 1) * (size_t)(l->K + 1), sizeof(double));
			if (!l->h)
				return npu_error_set(err, NPU_ERR_NO_MEMORY,
						     "%s: %s: out of memory for X^T X (%lld inputs)",
						     c->source, l->label, (long long)l->K);
			l->next_reader = c->reader[l->x->index];
			c->reader[l->x->index] = (int)c->nl;
		}
		c->nl++;
	}
	return NPU_OK;
}

/* ---- Statistics: H += x x^T over sampled rows ---- */

#define CZ_BLOCK 32

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 11;
}

/* The t-th of 'want' row positions among P: all of them, or one drawn
 * from each of 'want' equal strides. */
static uint64_t sample_position(struct cz_ctx *c, uint64_t t, uint64_t want, uint64_t P)
{
	return want == P ? t : (t * P + lcg(&c->seed) % (P / want)) / want;
}

/* Row p of layer l's im2col / matrix input into v[0..K), v[K] = 1. */
static bool input_row(const struct cz_layer *l, const float *x, uint64_t p, float *v)
{
	int64_t k;

	if (l->kind == CZ_CONV) {
		int64_t n = (int64_t)(p / (uint64_t)(l->Ho * l->Wo)), r = (int64_t)(p % (uint64_t)(l->Ho * l->Wo));
		int64_t oy = r / l->Wo, ox = r % l->Wo, ci, ky, kx;

		k = 0;
		for (ci = 0; ci < l->I; ci++)
			for (ky = 0; ky < l->kh; ky++)
				for (kx = 0; kx < l->kw; kx++, k++) {
					int64_t iy = oy * l->sh - l->pt + ky * l->dh;
					int64_t ix = ox * l->sw - l->pl + kx * l->dw;

					v[k] = iy < 0 || iy >= l->H || ix < 0 || ix >= l->W ? 0.0f
						: x[((n * l->C + ci) * l->H + iy) * l->W + ix];
				}
	} else {
		memcpy(v, x + p * (uint64_t)l->K, sizeof(float) * (size_t)l->K);
	}
	v[l->K] = 1.0f;
	for (k = 0; k < l->K; k++)
		if (!isfinite(v[k]))
			return false;
	return true;
}

static void add_block(struct cz_layer *l, const float *blk, size_t rows)
{
	size_t n = (size_t)l->K + 1, i, j, r;

	for (i = 0; i < n; i++)
		for (j = i; j < n; j++) {
			float s = 0;

			for (r = 0; r < rows; r++)
				s += blk[i * CZ_BLOCK + r] * blk[j * CZ_BLOCK + r];
			l->h[i * n + j] += s;
		}
}

/* x is layer l's float input, whole. */
static bool input_fits(const struct cz_layer *l, const struct npu_tensor *x)
{
	return x && x->dtype == NPU_DTYPE_FLOAT &&
	       x->nbytes / sizeof(float) >=
	       (l->kind == CZ_CONV ? (uint64_t)(l->N * l->C * l->H * l->W)
				   : l->positions * (uint64_t)l->K);
}

/* Rows sampled per calibration sample: enough over the set for a
 * well-posed solve, at least rows_per_sample, at most every position. */
static size_t rows_wanted(const struct cz_ctx *c, const struct cz_layer *l)
{
	size_t n = (size_t)l->K + 1, per = (2 * n + c->ncal - 1) / (c->ncal ? c->ncal : 1);
	size_t want = c->cfg->o.rows_per_sample > per ? c->cfg->o.rows_per_sample : per;

	return want > l->positions ? (size_t)l->positions : want;
}

static void accumulate(struct cz_ctx *c, struct cz_layer *l, const struct npu_tensor *x)
{
	size_t n = (size_t)l->K + 1, want, t, fill = 0, i;
	uint64_t P = l->positions;
	float *v, *blk;

	if (!input_fits(l, x))
		return;
	want = rows_wanted(c, l);
	v = malloc(sizeof(float) * n);
	blk = malloc(sizeof(float) * n * CZ_BLOCK);
	if (!v || !blk) {
		free(v);
		free(blk);
		return;
	}
	for (t = 0; t < want; t++) {
		uint64_t p = sample_position(c, t, want, P);

		if (p >= P || !input_row(l, x->data, p, v))
			continue;
		for (i = 0; i < n; i++)
			blk[i * CZ_BLOCK + fill] = v[i];
		if (++fill == CZ_BLOCK) {
			add_block(l, blk, fill);
			fill = 0;
		}
		l->rows++;
	}
	if (fill)
		add_block(l, blk, fill);
	free(v);
	free(blk);
}

static void observe(void *arg, const struct npu_node *node, const struct npu_tensor *const *outs)
{
	struct cz_ctx *c = arg;
	size_t i;
	int k;

	for (i = 0; i < node->num_outputs; i++)
		if (node->outputs[i] && node->outputs[i]->index < c->g->num_values)
			for (k = c->reader[node->outputs[i]->index]; k >= 0; k = c->L[k].next_reader)
				accumulate(c, &c->L[k], outs[i]);
}

static void release(struct npu_tensor **set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		npu_tensor_destroy(set[i]);
		set[i] = NULL;
	}
}

static npu_status statistics(struct cz_ctx *c, struct npu_error *err)
{
	const struct npu_graph_runner *r = c->cfg->runner;
	struct npu_tensor **set = calloc(c->g->num_inputs + 1, sizeof(*set));
	void *run = NULL;
	npu_status st;
	size_t k, i, n, j;
	int q;

	if (!set)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	st = r->open(c->g, 1, NULL, observe, c, NULL, &run, err);
	for (k = 0; !st && k < c->ncal; k++) {
		st = c->cfg->calib.sample(c->cfg->calib.arg, c->g, k, set, err);
		for (i = 0; !st && i < c->g->num_inputs; i++)
			for (q = c->reader[c->g->inputs[i]->index]; q >= 0; q = c->L[q].next_reader)
				accumulate(c, &c->L[q], set[i]);
		if (!st)
			st = r->run(run, (const struct npu_tensor *const *)set, err);
		if (st)
			npu_error_prefix(err, "%s: calibration sample %zu", c->source, k);
		release(set, c->g->num_inputs);
	}
	if (run && r->close)
		r->close(run);
	free(set);
	for (i = 0; !st && i < c->nl; i++) {	/* mirror the upper triangle */
		struct cz_layer *l = &c->L[i];

		n = (size_t)l->K + 1;
		for (k = 0; l->h && k < n; k++)
			for (j = k + 1; j < n; j++)
				l->h[j * n + k] = l->h[k * n + j];
	}
	return st;
}

/* ---- Channel groups ---- */

static int32_t cls_find(struct cz_ctx *c, int32_t a)
{
	while (c->parent[a] != a)
		a = c->parent[a] = c->parent[c->parent[a]];
	return a;
}

static void cls_union(struct cz_ctx *c, int32_t a, int32_t b)
{
	if (a < 0 || b < 0) {
		if (a >= 0 || b >= 0)
			c->pinned[cls_find(c, a >= 0 ? a : b)] = true;
		return;
	}
	a = cls_find(c, a);
	b = cls_find(c, b);
	if (a != b) {
		c->parent[b] = a;
		c->pinned[a] |= c->pinned[b];
	}
}

static npu_status pin_map(struct cz_ctx *c, const struct npu_value *v, const char *why,
			  const struct npu_node *n, struct npu_error *err)
{
	char lab[160];
	int64_t i, len = v->shape.dims[1];
	bool any = false;

	for (i = 0; i < len; i++)
		if (c->cmap[v->index][i] >= 0) {
			any |= !c->pinned[cls_find(c, c->cmap[v->index][i])];
			c->pinned[cls_find(c, c->cmap[v->index][i])] = true;
		}
	if (!any)
		return NPU_OK;
	if (n)
		npu_node_label(c->g, n, lab, sizeof(lab));
	return note(c, err, "channels of '%s' kept: %s%s%s", v->name, why, n ? " " : "",
		    n ? lab : "");
}

static int32_t *map_new(struct cz_ctx *c, struct npu_value *v, int64_t len)
{
	if (!v || v->index >= c->g->num_values)
		return NULL;
	free(c->cmap[v->index]);
	c->cmap[v->index] = malloc(sizeof(int32_t) * (size_t)(len > 0 ? len : 1));
	return c->cmap[v->index];
}

static bool is_nchw(const struct npu_value *v)
{
	return v && v->shape.rank == 4 && v->shape.dims[1] > 0;
}

static const char *const passthrough_ops[] = {
	"Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Clip", "LeakyRelu", "Tanh", "Elu",
	"Selu", "Softplus", "Identity", "Dropout", "MaxPool", "AveragePool", "GlobalAveragePool",
	"GlobalMaxPool", "Resize", "Upsample", "Mish", "Gelu", "Neg", "Abs", NULL,
};

static bool passthrough(const char *op)
{
	size_t i;

	for (i = 0; passthrough_ops[i]; i++)
		if (!strcmp(op, passthrough_ops[i]))
			return true;
	return false;
}

static npu_status add_slice(struct cz_ctx *c, struct npu_value *k, int axis, const int32_t *cls,
			    const char *group_of, struct npu_error *err)
{
	struct cz_slice *s = realloc(c->sl, sizeof(*s) * (c->nsl + 1));
	int64_t len = k->constant->shape.dims[axis];

	if (!s)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	c->sl = s;
	s[c->nsl].c = k;
	s[c->nsl].axis = axis;
	s[c->nsl].group_of = group_of;
	s[c->nsl].cls = malloc(sizeof(int32_t) * (size_t)len);
	if (!s[c->nsl].cls)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	memcpy(s[c->nsl].cls, cls, sizeof(int32_t) * (size_t)len);
	c->nsl++;
	return NPU_OK;
}

/* A constant per-channel operand: sliced with the channels (or fine as it is). */
static npu_status channel_constant(struct cz_ctx *c, struct npu_value *k, const int32_t *cls,
				   int64_t C, bool *ok, struct npu_error *err)
{
	const struct npu_shape *s;
	int axis;

	*ok = true;
	if (!k || !k->constant)
		return *ok = false, NPU_OK;
	s = &k->constant->shape;
	axis = s->rank - 3;	/* NCHW broadcast: C is the third dim from the end */
	if (npu_shape_numel(s) == 1 || axis < 0 || s->dims[axis] == 1)
		return NPU_OK;
	if (s->dims[axis] != C || !file_constant(c, k) || readers(c->g, k) != 1)
		return *ok = false, NPU_OK;
	return add_slice(c, k, axis, cls, NULL, err);
}

static npu_status walk_node(struct cz_ctx *c, struct npu_node *n, int layer, struct npu_error *err)
{
	struct npu_value *y = n->num_outputs ? n->outputs[0] : NULL;
	int32_t *m;
	size_t i;
	int64_t ch;
	bool ok;
	npu_status st = NPU_OK;

	if (layer >= 0 && !c->L[layer].skip && c->L[layer].kind == CZ_CONV) {
		struct cz_layer *l = &c->L[layer];

		if (c->cmap[l->x->index]) {
			l->in_cls = malloc(sizeof(int32_t) * (size_t)l->C);
			if (!l->in_cls)
				return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
			memcpy(l->in_cls, c->cmap[l->x->index], sizeof(int32_t) * (size_t)l->C);
		}
		if (!is_nchw(y) || !(m = map_new(c, y, l->O)))
			return NPU_OK;
		l->out_base = (int32_t)c->ncls;
		for (ch = 0; ch < l->O; ch++) {
			c->parent[c->ncls] = (int32_t)c->ncls;
			c->pinned[c->ncls] = false;
			c->owner[c->ncls] = layer;
			m[ch] = (int32_t)c->ncls++;
		}
		return NPU_OK;
	}
	/* Depthwise: channel c in, channel c out; weights and bias follow. */
	if (layer >= 0 && !strcmp(n->op_type, "Conv") && c->L[layer].group > 1 &&
	    c->L[layer].group == c->L[layer].C && c->L[layer].I == 1 &&
	    c->L[layer].O == c->L[layer].C && c->cmap[n->inputs[0]->index] && is_nchw(y) &&
	    file_constant(c, c->L[layer].wv) && readers(c->g, c->L[layer].wv) == 1 &&
	    (!c->L[layer].bv || (file_constant(c, c->L[layer].bv) && readers(c->g, c->L[layer].bv) == 1))) {
		const int32_t *in = c->cmap[n->inputs[0]->index];

		st = add_slice(c, c->L[layer].wv, 0, in, y->name, err);
		if (!st && c->L[layer].bv)
			st = add_slice(c, c->L[layer].bv, 0, in, NULL, err);
		if (!st && (m = map_new(c, y, c->L[layer].O)))
			memcpy(m, c->cmap[n->inputs[0]->index], sizeof(int32_t) * (size_t)c->L[layer].O);
		return st;
	}
	if (!strcmp(n->op_type, "BatchNormalization") && n->num_inputs >= 5 && is_nchw(y) &&
	    n->inputs[0] && c->cmap[n->inputs[0]->index]) {
		const int32_t *in = c->cmap[n->inputs[0]->index];

		ch = n->inputs[0]->shape.dims[1];
		for (i = 1, ok = true; i < 5; i++)
			ok &= n->inputs[i] && file_constant(c, n->inputs[i]) &&
			      npu_shape_numel(&n->inputs[i]->constant->shape) == ch &&
			      readers(c->g, n->inputs[i]) == 1;
		if (!ok)
			return pin_map(c, n->inputs[0], "its BatchNormalization has shared or non-constant parameters:", n, err);
		for (i = 1; !st && i < 5; i++)
			st = add_slice(c, n->inputs[i], 0, in, NULL, err);
		if (!st && (m = map_new(c, y, ch)))
			memcpy(m, in, sizeof(int32_t) * (size_t)ch);
		return st;
	}
	if (passthrough(n->op_type) && n->inputs[0] && c->cmap[n->inputs[0]->index]) {
		const struct npu_value *x = n->inputs[0];

		for (i = 1; i < n->num_inputs; i++)	/* Clip's min / max, Resize's scales */
			if (n->inputs[i] && !n->inputs[i]->constant)
				return pin_map(c, x, "read with a computed parameter by", n, err);
		if (!is_nchw(y) || y->shape.dims[1] != x->shape.dims[1])
			return pin_map(c, x, "its channel count changes in", n, err);
		if ((m = map_new(c, y, x->shape.dims[1])))
			memcpy(m, c->cmap[x->index], sizeof(int32_t) * (size_t)x->shape.dims[1]);
		return NPU_OK;
	}
	if ((!strcmp(n->op_type, "Add") || !strcmp(n->op_type, "Mul") || !strcmp(n->op_type, "Sub") ||
	     !strcmp(n->op_type, "Div") || !strcmp(n->op_type, "PRelu")) &&
	    n->num_inputs == 2 && n->inputs[0] && n->inputs[1] &&
	    (c->cmap[n->inputs[0]->index] || c->cmap[n->inputs[1]->index])) {
		struct npu_value *a = n->inputs[0], *b = n->inputs[1];
		int32_t *ma = c->cmap[a->index], *mb = c->cmap[b->index];

		if (!is_nchw(y))
			return pin_map(c, ma ? a : b, "broadcast off the channel axis in", n, err);
		ch = y->shape.dims[1];
		if ((ma && a->shape.dims[1] != ch) || (mb && b->shape.dims[1] != ch))
			return pin_map(c, ma ? a : b, "broadcast along channels in", n, err);
		if (ma && mb) {	/* residual Add, SE Mul: the same channels on both sides */
			for (i = 0; i < (size_t)ch; i++)
				cls_union(c, ma[i], mb[i]);
		} else {
			struct npu_value *other = ma ? b : a;

			st = channel_constant(c, other, ma ? ma : mb, ch, &ok, err);
			if (!st && !ok)
				return pin_map(c, ma ? a : b, "combined with a tensor of fixed channels in", n, err);
		}
		if (!st && (m = map_new(c, y, ch)))
			memcpy(m, ma ? ma : mb, sizeof(int32_t) * (size_t)ch);
		return st;
	}
	if (!strcmp(n->op_type, "Concat") && is_nchw(y) &&
	    (npu_node_attr_int_or(n, "axis", 0) == 1 || npu_node_attr_int_or(n, "axis", 0) == -3)) {
		int64_t off = 0;

		for (i = 0, ok = false; i < n->num_inputs; i++)
			ok |= n->inputs[i] && c->cmap[n->inputs[i]->index];
		if (!ok)
			return NPU_OK;
		if (!(m = map_new(c, y, y->shape.dims[1])))
			return NPU_OK;
		for (i = 0; i < n->num_inputs; i++) {
			struct npu_value *x = n->inputs[i];
			int64_t k, len = is_nchw(x) ? x->shape.dims[1] : 0;

			for (k = 0; k < len && off + k < y->shape.dims[1]; k++)
				m[off + k] = c->cmap[x->index] ? c->cmap[x->index][k] : -1;
			off += len;
		}
		return NPU_OK;
	}
	/* Anything else that reads pruned channels keeps them. */
	for (i = 0; i < n->num_inputs; i++)
		if (n->inputs[i] && n->inputs[i]->index < c->g->num_values && c->cmap[n->inputs[i]->index]) {
			st = pin_map(c, n->inputs[i], layer >= 0 ? "read by a layer that cannot change:"
								 : "read by", n, err);
			if (st)
				return st;
		}
	return NPU_OK;
}

static npu_status channel_groups(struct cz_ctx *c, struct npu_error *err)
{
	size_t total = 0, i, li;
	int *layer_of = malloc(sizeof(int) * (c->g->num_nodes + 1));
	int32_t *gid;
	npu_status st = NPU_OK;

	for (i = 0; i < c->nl; i++)
		if (!c->L[i].skip)
			total += (size_t)c->L[i].O;
	c->cmap = calloc(c->g->num_values + 1, sizeof(*c->cmap));
	c->parent = malloc(sizeof(int32_t) * (total + 1));
	c->pinned = calloc(total + 1, sizeof(bool));
	c->owner = malloc(sizeof(int32_t) * (total + 1));
	if (!layer_of || !c->cmap || !c->parent || !c->pinned || !c->owner) {
		free(layer_of);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < c->g->num_nodes; i++)
		layer_of[i] = -1;
	for (li = 0; li < c->nl; li++)
		for (i = 0; i < c->g->num_nodes; i++)
			if (c->g->nodes[i] == c->L[li].node)
				layer_of[i] = (int)li;
	for (i = 0; !st && i < c->g->num_nodes; i++)
		st = walk_node(c, c->g->nodes[i], layer_of[i], err);
	for (i = 0; !st && i < c->g->num_outputs; i++)
		if (c->cmap[c->g->outputs[i]->index])
			st = pin_map(c, c->g->outputs[i], "a model output", NULL, err);
	free(layer_of);
	if (st)
		return st;
	/* Groups: producers whose classes were united. */
	gid = malloc(sizeof(int32_t) * (total + 1));
	if (!gid)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < c->ncls; i++)
		gid[i] = -1;
	c->ngroups = 0;
	for (li = 0; li < c->nl; li++) {
		struct cz_layer *l = &c->L[li];
		int64_t o;

		if (l->out_base < 0)
			continue;
		for (o = 0; o < l->O && l->group_id < 0; o++)
			l->group_id = gid[cls_find(c, l->out_base + (int32_t)o)];
		if (l->group_id < 0)
			l->group_id = c->ngroups++;
		for (o = 0; o < l->O; o++) {
			int32_t r = cls_find(c, l->out_base + (int32_t)o);

			if (gid[r] >= 0 && gid[r] != l->group_id) {	/* merge two groups */
				int old = gid[r];
				size_t q;

				for (q = 0; q < c->ncls; q++)
					if (gid[q] == old)
						gid[q] = l->group_id;
				for (q = 0; q < c->nl; q++)
					if (c->L[q].group_id == old)
						c->L[q].group_id = l->group_id;
			}
			gid[r] = l->group_id;
		}
	}
	free(gid);
	return NPU_OK;
}

/* Remove the weakest free classes of group 'grp' at fraction s; removed[root]. */
static void choose_channels(struct cz_ctx *c, int grp, double s, bool *removed)
{
	double *score = calloc(c->ncls + 1, sizeof(double));
	int32_t *roots = malloc(sizeof(int32_t) * (c->ncls + 1));
	size_t nr = 0, i, j, nfree = 0, cut;
	int64_t o, k;

	if (!score || !roots)
		goto out;
	for (i = 0; i < c->nl; i++) {
		struct cz_layer *l = &c->L[i];
		double mean = 0;

		if (l->group_id != grp || l->out_base < 0)
			continue;
		for (o = 0; o < l->O * l->K; o++)
			mean += (double)l->w[o] * l->w[o];
		mean = sqrt(mean / (double)l->O) + 1e-30;
		/* A class's weight: its filters' norms, each relative to its layer's. */
		for (o = 0; o < l->O; o++) {
			double n2 = 0;

			for (k = 0; k < l->K; k++)
				n2 += (double)l->w[o * l->K + k] * l->w[o * l->K + k];
			score[cls_find(c, l->out_base + (int32_t)o)] += sqrt(n2) / mean;
		}
	}
	for (i = 0; i < c->ncls; i++)
		if (cls_find(c, (int32_t)i) == (int32_t)i && c->L[c->owner[i]].group_id == grp) {
			roots[nr++] = (int32_t)i;
			nfree += !c->pinned[i];
		}
	/* ascending score, free classes only */
	for (i = 1; i < nr; i++)
		for (j = i; j > 0 && score[roots[j]] < score[roots[j - 1]]; j--) {
			int32_t t = roots[j];

			roots[j] = roots[j - 1];
			roots[j - 1] = t;
		}
	cut = (size_t)floor(s * (double)nr);
	if (cut >= nfree && nfree)
		cut = nfree - 1;
	for (i = 0, j = 0; i < nr && j < cut; i++)
		if (!c->pinned[roots[i]]) {
			removed[roots[i]] = true;
			j++;
		}
out:
	free(score);
	free(roots);
}

/* ---- A candidate model: new constants, attributes, the report ---- */

struct cz_out {
	const char **names;
	struct npu_tensor **t;
	size_t n;
	struct npu_onnx_int_attr *attrs;
	size_t na;
	struct npu_compress_layer *layers;
	size_t nlayers;
	uint64_t macs_b, macs_a, bytes_b, bytes_a;
	size_t n_rec, n_lack;		/* layers re-solved, layers short of rows */
	const struct cz_layer *lack;	/* the first short one */
};

static void out_free(struct cz_out *o)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		npu_tensor_destroy(o->t[i]);
	free(o->names);
	free(o->t);
	free(o->attrs);
	free(o->layers);
	memset(o, 0, sizeof(*o));
}

static struct npu_tensor *out_tensor(struct cz_out *o, const char *name, const struct npu_shape *s)
{
	const char **nm = realloc(o->names, sizeof(*nm) * (o->n + 1));
	struct npu_tensor **t;

	if (!nm)
		return NULL;
	o->names = nm;
	t = realloc(o->t, sizeof(*t) * (o->n + 1));
	if (!t)
		return NULL;
	o->t = t;
	if (!(t[o->n] = npu_tensor_create(NPU_DTYPE_FLOAT, s)))
		return NULL;
	nm[o->n] = name;
	return t[o->n++];
}

static struct npu_compress_layer *out_layer(struct cz_out *o, const struct cz_layer *l)
{
	struct npu_compress_layer *r = realloc(o->layers, sizeof(*r) * (o->nlayers + 1));

	if (!r)
		return NULL;
	o->layers = r;
	r += o->nlayers++;
	memset(r, 0, sizeof(*r));
	r->node = l->label;
	r->op_type = l->node->op_type;
	r->pattern = "dense";
	r->note = "";
	r->macs_before = r->macs_after = l->positions * (uint64_t)(l->O * l->K);
	r->weight_bytes_before = r->weight_bytes_after = sizeof(float) * (uint64_t)(l->O * l->K);
	r->sqnr_magnitude_db = r->sqnr_db = INFINITY;
	return r;
}

/* The n x n block of l's H (bias column included when the layer has a bias). */
static double *layer_h(const struct cz_layer *l, size_t *n)
{
	size_t full = (size_t)l->K + 1, i, j;
	double *h;

	*n = l->bv ? full : full - 1;
	if (l->bv)
		return l->h;
	h = malloc(sizeof(*h) * *n * *n + 1);
	for (i = 0; h && i < *n; i++)
		for (j = 0; j < *n; j++)
			h[i * *n + j] = l->h[i * full + j];
	return h;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* keep[O][n] for magnitude (fraction s of the weights) or N:M. */
static bool choose_mask(const struct cz_ctx *c, const struct cz_layer *l, double s, size_t n,
			bool *keep)
{
	int64_t O = l->O, K = l->K, o, k;

	for (o = 0; o < O; o++)
		for (k = 0; k < (int64_t)n; k++)
			keep[o * (int64_t)n + k] = true;
	if (c->cfg->o.method == NPU_PRUNE_MAGNITUDE) {
		size_t cnt = (size_t)floor(s * (double)(O * K)), done = 0;
		float *a = malloc(sizeof(float) * (size_t)(O * K) + 1), thr;

		if (!a)
			return false;
		if (!cnt) {
			free(a);
			return true;
		}
		for (k = 0; k < O * K; k++)
			a[k] = fabsf(l->w[k]);
		qsort(a, (size_t)(O * K), sizeof(float), cmp_float);
		thr = a[cnt - 1];
		free(a);
		for (k = 0; k < O * K && done < cnt; k++)
			if (fabsf(l->w[k]) < thr)
				keep[(k / K) * (int64_t)n + k % K] = false, done++;
		for (k = 0; k < O * K && done < cnt; k++)
			if (fabsf(l->w[k]) == thr)
				keep[(k / K) * (int64_t)n + k % K] = false, done++;
		return true;
	}
	/* N:M along the input channels: (o, ky, kx) fixed, M channels in a row. */
	{
		int N = c->cfg->o.nm_n, M = c->cfg->o.nm_m, i, j;
		int64_t sp = l->kh * l->kw, gi, pos;

		for (o = 0; o < O; o++)
			for (pos = 0; pos < sp; pos++)
				for (gi = 0; gi < l->I; gi += M) {
					int idx[64];

					for (i = 0; i < M; i++)
						idx[i] = (int)((gi + i) * sp + pos);
					for (i = 1; i < M; i++)	/* by |w|, largest first */
						for (j = i; j > 0 && fabsf(l->w[o * K + idx[j]]) >
								      fabsf(l->w[o * K + idx[j - 1]]); j--) {
							int t = idx[j];

							idx[j] = idx[j - 1];
							idx[j - 1] = t;
						}
					for (i = N; i < M; i++)
						keep[o * (int64_t)n + idx[i]] = false;
				}
	}
	return true;
}

static npu_status too_few(const struct cz_ctx *c, const struct cz_layer *l, struct npu_error *err)
{
	return npu_error_set(err, NPU_ERR_INVALID_ARG,
			     "%s: %s: too few calibration samples for reconstruction: %lld unknowns per output, but the %zu sample%s give%s only %llu input rows (at least %lld needed), and no pruned layer has enough: give more samples or turn reconstruction off",
			     c->source, l->label, (long long)l->K + 1, c->ncal, c->ncal == 1 ? "" : "s",
			     c->ncal == 1 ? "s" : "", (unsigned long long)l->rows, (long long)l->K + 1);
}

/*
 * A layer with fewer sampled input rows than unknowns is not re-solved (a
 * note names it); a model where no pruned layer has enough is an error
 * (too_few, after the whole model is done).
 */
static bool short_of_rows(struct cz_out *o, const struct cz_layer *l, struct npu_compress_layer *r)
{
	if (l->rows >= (uint64_t)l->K + 1) {
		o->n_rec++;
		return false;
	}
	if (!o->n_lack++)
		o->lack = l;
	r->note = "too few calibration rows for reconstruction: not re-solved";
	return true;
}

/* Write weights q[O][n] (bias in column K) back in the initializers' layout. */
static npu_status emit_weights(struct cz_out *o, const struct cz_layer *l, const float *q,
			       size_t n, const bool *row_keep, const bool *col_keep,
			       struct npu_error *err)
{
	struct npu_shape s = l->wv->constant->shape, bs;
	int64_t O2 = 0, I2 = 0, r, ci, k, sp = l->kh * l->kw, oi = 0;
	struct npu_tensor *w, *b = NULL;
	float *wd;

	for (r = 0; r < l->O; r++)
		O2 += !row_keep || row_keep[r];
	for (ci = 0; ci < l->I; ci++)
		I2 += !col_keep || col_keep[ci * sp];
	if (l->kind == CZ_CONV) {
		s.dims[0] = O2;
		s.dims[1] = I2;
	}
	if (!(w = out_tensor(o, l->wv->name, &s)))
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	if (l->bv) {
		bs = l->bv->constant->shape;
		bs.dims[bs.rank - 1] = O2;
		if (!(b = out_tensor(o, l->bv->name, &bs)))
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	wd = w->data;
	for (r = 0; r < l->O; r++) {
		int64_t kk = 0;

		if (row_keep && !row_keep[r])
			continue;
		for (k = 0; k < l->K; k++) {
			if (col_keep && !col_keep[k])
				continue;
			if (l->kind == CZ_CONV || l->transb)
				wd[oi * (l->kind == CZ_CONV ? I2 * sp : l->K) + kk] = q[r * (int64_t)n + k];
			else
				wd[k * l->O + r] = q[r * (int64_t)n + k];
			kk++;
		}
		if (b)
			((float *)b->data)[oi] = q[r * (int64_t)n + l->K];
		oi++;
	}
	return NPU_OK;
}

static uint64_t nonzeros(const float *q, int64_t rows, size_t n, int64_t K)
{
	uint64_t z = 0;
	int64_t r, k;

	for (r = 0; r < rows; r++)
		for (k = 0; k < K; k++)
			z += q[r * (int64_t)n + k] != 0;
	return z;
}

/* The layer's last solve, when the levels and its statistics are the same. */
static bool memo_get(struct cz_ctx *c, struct cz_layer *l, float *q, size_t n,
		     struct npu_compress_layer *r)
{
	if (!c->memo || !l->memo_q || l->memo_hp != (l->hp != NULL))
		return false;
	memcpy(q, l->memo_q, sizeof(float) * (size_t)l->O * n);
	r->sqnr_magnitude_db = l->memo_mag;
	r->sqnr_db = l->memo_db;
	r->note = l->memo_note;
	return true;
}

static void memo_put(struct cz_ctx *c, struct cz_layer *l, const float *q, size_t n,
		     const struct npu_compress_layer *r)
{
	if (!c->memo)
		return;
	free(l->memo_q);
	l->memo_q = malloc(sizeof(float) * (size_t)l->O * n + 1);
	if (!l->memo_q)
		return;
	memcpy(l->memo_q, q, sizeof(float) * (size_t)l->O * n);
	l->memo_hp = l->hp != NULL;
	l->memo_mag = r->sqnr_magnitude_db;
	l->memo_db = r->sqnr_db;
	l->memo_note = r->note;
}

/*
 * The sequential pass for layer l (l->hp set): re-solve toward the
 * original outputs from the inputs the already-pruned layers before it
 * give. wa, qm (plain mask), q (pass 1) are rows of n (the original
 * columns); idx[m] are the columns the pruned model still feeds. q becomes
 * the better of the two solves; both SQNRs of the report are then measured
 * on those inputs against the original outputs.
 */
static npu_status refine_layer(struct cz_ctx *c, struct cz_layer *l, size_t n, const float *wa,
			       const float *qm, float *q, const size_t *idx, size_t m,
			       const bool *keep, const bool *rk, struct npu_compress_layer *r,
			       struct npu_error *err)
{
	size_t k1f = (size_t)l->K1 + 1, full = (size_t)l->K + 1, O = (size_t)l->O, i, j, row, nn;
	double *hpm = malloc(sizeof(double) * m * m + 1), *t = malloc(sizeof(double) * O * m + 1);
	float *w0 = malloc(sizeof(float) * O * m + 1), *qm_m = malloc(sizeof(float) * O * m + 1);
	float *q1 = malloc(sizeof(float) * O * m + 1), *q2 = malloc(sizeof(float) * O * m + 1);
	bool *km = keep ? malloc(sizeof(bool) * O * m + 1) : NULL;
	double *h = layer_h(l, &nn), s_mag, s1, s2;
	npu_status st = NPU_OK;

	if (!hpm || !t || !w0 || !qm_m || !q1 || !q2 || (keep && !km) || !h) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	for (i = 0; i < m; i++)
		for (j = 0; j < m; j++)
			hpm[i * m + j] = l->hp[i * k1f + j];
	for (row = 0; row < O; row++)
		for (i = 0; i < m; i++) {
			double a = 0;

			for (j = 0; j < n; j++)
				a += l->cx[i * full + j] * wa[row * n + j];
			t[row * m + i] = a;
			w0[row * m + i] = wa[row * n + idx[i]];
			qm_m[row * m + i] = qm[row * n + idx[i]];
			q1[row * m + i] = q[row * n + idx[i]];
			if (km)
				km[row * m + i] = keep[row * n + idx[i]];
		}
	st = npu_cz_solve_cross(hpm, m, t, w0, O, km, c->cfg->o.damping, q2);
	if (st) {
		st = npu_error_set(err, st, "%s: %s: reconstruction failed (%s)", c->source, l->label,
				   npu_status_str(st));
		goto out;
	}
	s_mag = npu_cz_sqnr_cross_db(h, n, wa, hpm, m, t, qm_m, O, rk);
	s1 = npu_cz_sqnr_cross_db(h, n, wa, hpm, m, t, q1, O, rk);
	s2 = npu_cz_sqnr_cross_db(h, n, wa, hpm, m, t, q2, O, rk);
	if (s2 >= s1) {
		for (row = 0; row < O; row++) {
			for (j = 0; j < n; j++)
				q[row * n + j] = 0;
			for (i = 0; i < m; i++)
				q[row * n + idx[i]] = q2[row * m + i];
		}
	}
	r->sqnr_magnitude_db = s_mag;
	r->sqnr_db = s2 >= s1 ? s2 : s1;
	r->note = r->sqnr_db >= s_mag ? "" : "reconstruction did not help on the pruned model's inputs";
out:
	if (h != l->h)
		free(h);
	free(hpm);
	free(t);
	free(w0);
	free(qm_m);
	free(q1);
	free(q2);
	free(km);
	return st;
}

static npu_status apply_mask(struct cz_ctx *c, struct cz_layer *l, double s, struct cz_out *o,
			     struct npu_error *err)
{
	struct npu_compress_layer *r = out_layer(o, l);
	size_t n, i;
	double *h = NULL;
	bool *keep = NULL;
	float *wa = NULL, *qm = NULL, *q = NULL;
	npu_status st = NPU_OK;
	int64_t k, row;

	if (!r)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	if (s <= 0)
		return NPU_OK;
	h = layer_h(l, &n);
	keep = malloc(sizeof(bool) * (size_t)l->O * n + 1);
	wa = malloc(sizeof(float) * (size_t)l->O * n + 1);
	qm = malloc(sizeof(float) * (size_t)l->O * n + 1);
	q = malloc(sizeof(float) * (size_t)l->O * n + 1);
	if (!h || !keep || !wa || !qm || !q || !choose_mask(c, l, s, n, keep)) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	for (row = 0; row < l->O; row++) {
		for (k = 0; k < l->K; k++)
			wa[row * (int64_t)n + k] = l->w[row * l->K + k];
		if (n > (size_t)l->K)
			wa[row * (int64_t)n + l->K] = l->b[row];
	}
	for (i = 0; i < (size_t)l->O * n; i++)
		qm[i] = q[i] = keep[i] ? wa[i] : 0.0f;
	if (!c->cfg->o.no_reconstruct && memo_get(c, l, q, n, r))
		goto emit;	/* solved in an earlier wave */
	r->sqnr_magnitude_db = r->sqnr_db = npu_cz_sqnr_db(h, n, wa, qm, (size_t)l->O, NULL);
	if (!c->cfg->o.no_reconstruct && short_of_rows(o, l, r)) {
		/* magnitude only */
	} else if (!c->cfg->o.no_reconstruct) {
		memcpy(q, wa, sizeof(float) * (size_t)l->O * n);
		st = npu_cz_solve_masked(h, n, q, (size_t)l->O, keep, c->cfg->o.damping);
		if (st) {
			st = npu_error_set(err, st, "%s: %s: reconstruction failed (%s)", c->source,
					   l->label, npu_status_str(st));
			goto out;
		}
		r->sqnr_db = npu_cz_sqnr_db(h, n, wa, q, (size_t)l->O, NULL);
		if (!(r->sqnr_db >= r->sqnr_magnitude_db)) {	/* never worse than the mask alone */
			memcpy(q, qm, sizeof(float) * (size_t)l->O * n);
			r->sqnr_db = r->sqnr_magnitude_db;
			r->note = "reconstruction did not help: magnitude weights kept";
		}
		l->refine = true;
		if (l->hp) {
			size_t *idx = malloc(sizeof(size_t) * n + 1);

			for (i = 0; idx && i < n; i++)
				idx[i] = i;
			st = idx ? refine_layer(c, l, n, wa, qm, q, idx, n, keep, NULL, r, err)
				 : npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
			free(idx);
			if (st)
				goto out;
		}
		memo_put(c, l, q, n, r);
	}
emit:
	r->pattern = c->cfg->o.method == NPU_PRUNE_NM ? "N:M" : "unstructured";
	r->macs_after = l->positions * nonzeros(q, l->O, n, l->K);
	r->weight_bytes_after = sizeof(float) * nonzeros(q, l->O, n, l->K);
	r->sparsity = 1.0 - (double)nonzeros(q, l->O, n, l->K) / (double)(l->O * l->K);
	st = emit_weights(o, l, q, n, NULL, NULL, err);
out:
	if (h != l->h)
		free(h);
	free(keep);
	free(wa);
	free(qm);
	free(q);
	return st;
}

static bool kept(struct cz_ctx *c, const bool *removed, int32_t cls)
{
	return cls < 0 || !removed[cls_find(c, cls)];
}

static npu_status apply_channels_layer(struct cz_ctx *c, struct cz_layer *l, const bool *removed,
				       struct cz_out *o, struct npu_error *err)
{
	struct npu_compress_layer *r;
	size_t n, i, rows_left = 0;
	int64_t row, k, sp = l->kh * l->kw;
	bool *rk = malloc(sizeof(bool) * (size_t)l->O + 1), *ck = NULL, any_col = false, any_row = false;
	double *h = NULL;
	float *wa = NULL, *qm = NULL, *q = NULL;
	npu_status st = NPU_OK;

	if (!rk)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	for (row = 0; row < l->O; row++) {
		rk[row] = l->out_base < 0 || kept(c, removed, l->out_base + (int32_t)row);
		any_row |= !rk[row];
		rows_left += rk[row];
	}
	n = (size_t)l->K + (l->bv ? 1 : 0);
	ck = malloc(sizeof(bool) * n + 1);
	if (!ck) {
		free(rk);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (k = 0; k < (int64_t)n; k++) {
		ck[k] = k >= l->K || !l->in_cls || kept(c, removed, l->in_cls[k / sp]);
		any_col |= !ck[k];
	}
	r = out_layer(o, l);
	if (!r) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	if (!any_row && !any_col)
		goto out;
	r->pattern = "channels";
	wa = malloc(sizeof(float) * (size_t)l->O * n + 1);
	qm = malloc(sizeof(float) * (size_t)l->O * n + 1);
	q = malloc(sizeof(float) * (size_t)l->O * n + 1);
	if (!wa || !qm || !q) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	for (row = 0; row < l->O; row++) {
		for (k = 0; k < l->K; k++)
			wa[row * (int64_t)n + k] = l->w[row * l->K + k];
		if (l->bv)
			wa[row * (int64_t)n + l->K] = l->b[row];
	}
	for (i = 0; i < (size_t)l->O * n; i++)
		qm[i] = q[i] = ck[i % n] ? wa[i] : 0.0f;
	if (!c->cfg->o.no_reconstruct && memo_get(c, l, q, n, r))
		goto counted;
	if (any_col) {
		/* Its inputs lost channels: re-solve from what is left. */
		h = layer_h(l, &n);
		if (!h) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
			goto out;
		}
		r->sqnr_magnitude_db = r->sqnr_db = npu_cz_sqnr_db(h, n, wa, qm, (size_t)l->O, rk);
		if (!c->cfg->o.no_reconstruct && short_of_rows(o, l, r)) {
			/* the channels dropped only */
		} else if (!c->cfg->o.no_reconstruct) {
			st = npu_cz_solve_shared(h, n, wa, (size_t)l->O, ck, c->cfg->o.damping, q);
			if (st) {
				st = npu_error_set(err, st, "%s: %s: reconstruction failed (%s)",
						   c->source, l->label, npu_status_str(st));
				goto out;
			}
			r->sqnr_db = npu_cz_sqnr_db(h, n, wa, q, (size_t)l->O, rk);
			if (!(r->sqnr_db >= r->sqnr_magnitude_db)) {
				memcpy(q, qm, sizeof(float) * (size_t)l->O * n);
				r->sqnr_db = r->sqnr_magnitude_db;
				r->note = "reconstruction did not help: weights kept";
			}
		}
	}
	if (!c->cfg->o.no_reconstruct && l->rows >= (uint64_t)l->K + 1) {
		l->refine = true;
		if (l->hp) {
			size_t *idx = malloc(sizeof(size_t) * n + 1), m = 0;

			for (i = 0; idx && i < n; i++)
				if (ck[i])
					idx[m++] = i;
			st = idx ? refine_layer(c, l, n, wa, qm, q, idx, m, NULL, rk, r, err)
				 : npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
			free(idx);
			if (st)
				goto out;
		}
	}
	if (!c->cfg->o.no_reconstruct)
		memo_put(c, l, q, n, r);
counted:
	{
		uint64_t cols = 0;

		for (k = 0; k < l->K; k++)
			cols += ck[k];
		r->macs_after = l->positions * rows_left * cols;
		r->weight_bytes_after = sizeof(float) * rows_left * cols;
		r->sparsity = 1.0 - (double)(rows_left * cols) / (double)(l->O * l->K);
	}
	st = emit_weights(o, l, q, n, rk, ck, err);
out:
	if (h && h != l->h)
		free(h);
	free(rk);
	free(ck);
	free(wa);
	free(qm);
	free(q);
	return st;
}

static npu_status apply_slice(struct cz_ctx *c, const struct cz_slice *s, const bool *removed,
			      struct cz_out *o, struct npu_error *err)
{
	const struct npu_tensor *src = s->c->constant;
	struct npu_shape sh = src->shape;
	int64_t len = sh.dims[s->axis], outer = 1, inner = 1, a, k, j, kk = 0, kept_n = 0;
	struct npu_tensor *t;
	size_t i;

	for (k = 0; k < len; k++)
		kept_n += kept(c, removed, s->cls[k]);
	if (kept_n == len)
		return NPU_OK;
	for (a = 0; a < s->axis; a++)
		outer *= sh.dims[a];
	for (a = s->axis + 1; a < sh.rank; a++)
		inner *= sh.dims[a];
	sh.dims[s->axis] = kept_n;
	if (!(t = out_tensor(o, s->c->name, &sh)))
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	for (a = 0; a < outer; a++)
		for (k = 0, kk = 0; k < len; k++) {
			if (!kept(c, removed, s->cls[k]))
				continue;
			for (j = 0; j < inner; j++)
				((float *)t->data)[(a * kept_n + kk) * inner + j] =
					((const float *)src->data)[(a * len + k) * inner + j];
			kk++;
		}
	if (s->group_of) {
		struct npu_onnx_int_attr *at = realloc(o->attrs, sizeof(*at) * (o->na + 1));

		if (!at)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		o->attrs = at;
		at[o->na].node_output = s->group_of;
		at[o->na].attr = "group";
		at[o->na++].value = kept_n;
		/* the depthwise layer's own report line */
		for (i = 0; i < c->nl; i++)
			if (c->L[i].wv == s->c) {
				struct npu_compress_layer *r = out_layer(o, &c->L[i]);

				if (!r)
					return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
				r->pattern = "channels";
				r->note = "depthwise: follows its input's channels";
				r->macs_after = c->L[i].positions * (uint64_t)(kept_n * c->L[i].K);
				r->weight_bytes_after = sizeof(float) * (uint64_t)(kept_n * c->L[i].K);
				r->sparsity = 1.0 - (double)kept_n / (double)len;
			}
	}
	return NPU_OK;
}

/* The model at 'level' per unit (layers, or channel groups). */
static npu_status apply(struct cz_ctx *c, const double *level, struct cz_out *o,
			struct npu_error *err)
{
	npu_status st = NPU_OK;
	size_t i;

	memset(o, 0, sizeof(*o));
	if (c->cfg->o.method == NPU_PRUNE_CHANNELS) {
		bool *removed = calloc(c->ncls + 1, sizeof(bool));
		bool *sliced = calloc(c->nl + 1, sizeof(bool));
		int gi;

		if (!removed || !sliced) {
			free(removed);
			free(sliced);
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		}
		for (gi = 0; gi < c->ngroups; gi++)
			if (level[gi] > 0)
				choose_channels(c, gi, level[gi], removed);
		for (i = 0; !st && i < c->nl; i++)
			if (!c->L[i].skip)
				st = apply_channels_layer(c, &c->L[i], removed, o, err);
		for (i = 0; !st && i < c->nsl; i++)
			st = apply_slice(c, &c->sl[i], removed, o, err);
		/* Layers no pass above reported (skipped, depthwise untouched). */
		for (i = 0; !st && i < c->nl; i++) {
			size_t q;
			bool seen = false;

			for (q = 0; q < o->nlayers; q++)
				seen |= o->layers[q].node == c->L[i].label;
			if (!seen && c->L[i].skip) {
				struct npu_compress_layer *r = out_layer(o, &c->L[i]);

				if (!r)
					st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
				else
					r->pattern = "skipped", r->note = c->L[i].skip;
			}
		}
		free(removed);
		free(sliced);
	} else {
		for (i = 0; !st && i < c->nl; i++) {
			if (c->L[i].skip) {
				struct npu_compress_layer *r = out_layer(o, &c->L[i]);

				if (!r)
					return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
				r->pattern = "skipped";
				r->note = c->L[i].skip;
				continue;
			}
			st = apply_mask(c, &c->L[i], level[i], o, err);
		}
	}
	for (i = 0; i < o->nlayers; i++) {
		o->macs_b += o->layers[i].macs_before;
		o->macs_a += o->layers[i].macs_after;
		o->bytes_b += o->layers[i].weight_bytes_before;
		o->bytes_a += o->layers[i].weight_bytes_after;
	}
	return st;
}

/* ---- Running models: the original's outputs, a candidate's cosine ---- */

double npu_cz_cosine(const float *x, size_t na, const float *y, size_t nb)
{
	size_t n = na, i;
	double xy = 0, xx = 0, yy = 0;

	if (na != nb)
		return 0;
	for (i = 0; i < n; i++) {
		xy += (double)x[i] * y[i];
		xx += (double)x[i] * x[i];
		yy += (double)y[i] * y[i];
	}
	if (xx == 0 && yy == 0)
		return 1;
	return xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : 0;
}

static double cosine(const struct npu_tensor *a, const struct npu_tensor *b)
{
	return npu_cz_cosine(a->data, a->nbytes / sizeof(float), b->data,
			     b->nbytes / sizeof(float));
}

/* Run g over 'count' samples of src; refs (NULL) stores the outputs, else
 * *cos gets the lowest cosine against them. */
static npu_status run_set(struct cz_ctx *c, struct npu_graph *g, const struct npu_cz_samples *src,
			  size_t count, struct npu_tensor **refs, bool store, double *cos,
			  struct npu_error *err)
{
	const struct npu_graph_runner *r = c->cfg->runner;
	struct npu_tensor **set = calloc(g->num_inputs + 1, sizeof(*set));
	void *run = NULL;
	npu_status st;
	size_t k, i, no = g->num_outputs;

	if (cos)
		*cos = 1;
	if (!set)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	st = r->open(g, 1, NULL, NULL, NULL, NULL, &run, err);
	for (k = 0; !st && k < count; k++) {
		st = src->sample(src->arg, g, k, set, err);
		if (!st)
			st = r->run(run, (const struct npu_tensor *const *)set, err);
		for (i = 0; !st && i < no; i++) {
			const struct npu_tensor *t = r->output(run, i);

			if (store) {
				if (!(refs[k * no + i] = t ? npu_tensor_dup(t) : NULL) && t)
					st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
			} else if (t && refs[k * no + i] && t->dtype == NPU_DTYPE_FLOAT) {
				double v = cosine(refs[k * no + i], t);

				if (v < *cos)
					*cos = v;
			}
		}
		release(set, g->num_inputs);
	}
	if (run && r->close)
		r->close(run);
	free(set);
	return st;
}

/* The candidate as bytes and as a graph at the calibration shapes. */
static npu_status load_model(struct cz_ctx *c, const struct cz_out *o, struct npu_graph **g,
			     void **data, size_t *len, struct npu_error *err)
{
	npu_status st;
	size_t i;

	*g = NULL;
	st = npu_onnx_replace_constants(c->data, c->size, c->source, o->names,
					(const struct npu_tensor *const *)o->t, o->n, o->attrs,
					o->na, c->cfg->o.method == NPU_PRUNE_CHANNELS, data, len,
					err);
	if (!st)
		st = npu_onnx_import(*data, *len, c->source, g, err);
	for (i = 0; !st && i < (*g)->num_inputs && i < c->g->num_inputs; i++)
		(*g)->inputs[i]->shape = c->g->inputs[i]->shape;
	if (!st)
		st = npu_graph_infer(*g, true, err);
	if (st)
		npu_error_prefix(err, "the compressed model does not load (a bug: please report)");
	return st;
}

/* The candidate as bytes only. */
static npu_status load_bytes(struct cz_ctx *c, const struct cz_out *o, void **data, size_t *len,
			     struct npu_error *err)
{
	return npu_onnx_replace_constants(c->data, c->size, c->source, o->names,
					  (const struct npu_tensor *const *)o->t, o->n, o->attrs,
					  o->na, c->cfg->o.method == NPU_PRUNE_CHANNELS, data, len,
					  err);
}

/* The candidate's bytes (*bytes, *size: may be NULL) and its lowest cosine on a set. */
static npu_status evaluate(struct cz_ctx *c, const struct cz_out *o, bool held_out, size_t max,
			   double *cos, void **bytes, size_t *size, struct npu_error *err)
{
	struct npu_graph *g = NULL;
	void *data = NULL;
	size_t len = 0, count;
	npu_status st;
	struct npu_tensor **refs = held_out ? c->ref + c->ncal * c->g->num_outputs : c->ref;

	st = load_model(c, o, &g, &data, &len, err);
	count = held_out ? c->neval : c->ncal;
	if (max && count > max)
		count = max;
	if (!st)
		st = run_set(c, g, held_out ? eval_src(c) : &c->cfg->calib, count, refs, false, cos,
			     err);
	npu_graph_destroy(g);
	if (!st && bytes) {
		*bytes = data;
		*size = len;
	} else {
		free(data);
	}
	return st;
}

/*
 * With quantize: the candidate (its ONNX bytes) compiled for the NPU,
 * its lowest cosine on the held-out set against the original fp32
 * outputs, and (save_path non-NULL) its .npub written there.
 */
static npu_status quantized(struct cz_ctx *c, const void *bytes, size_t len, const char *save_path,
			    double *cos, struct npu_error *err)
{
	const struct npu_cz_quantizer *q = &c->cfg->quant;

	return q->run(q->arg, bytes, len, c->g, eval_src(c), c->neval,
		      c->ref + c->ncal * c->g->num_outputs, save_path, cos, err);
}

/* The candidate's held-out cosine: of the quantized model with quantize, else fp32. */
static npu_status check_cosine(struct cz_ctx *c, const struct cz_out *o, double *cos,
			       struct npu_error *err)
{
	void *bytes = NULL;
	size_t len = 0;
	npu_status st;

	if (!c->cfg->o.quantize)
		return evaluate(c, o, true, 0, cos, NULL, NULL, err);
	st = load_bytes(c, o, &bytes, &len, err);
	if (!st)
		st = quantized(c, bytes, len, NULL, cos, err);
	free(bytes);
	return st;
}

/* ---- The sequential pass: layer by layer on the pruned model's inputs ---- */

struct cz_ref {
	struct cz_layer *l;
	struct cz_layer g1;	/* its geometry in the pruned model */
	const struct npu_value *x1;
	uint64_t *pos;
	float *xt;		/* original rows, transposed: (K+1) x cap */
	size_t nrows, cap;
};

struct cz_p2 {
	struct cz_ctx *c;
	struct cz_ref *e;
	size_t ne;
};

/* Sample rows of the original input (positions kept for the pruned one). */
static void p2_take(struct cz_ctx *c, struct cz_ref *e, const struct npu_tensor *x)
{
	const struct cz_layer *l = e->l;
	size_t n = (size_t)l->K + 1, want = e->cap, t, i;
	uint64_t P = l->positions;
	float *v = malloc(sizeof(float) * n);

	e->nrows = 0;
	if (!v || !input_fits(l, x)) {
		free(v);
		return;
	}
	for (t = 0; t < want; t++) {
		uint64_t p = sample_position(c, t, want, P);

		if (p >= P || !input_row(l, x->data, p, v))
			continue;
		for (i = 0; i < n; i++)
			e->xt[i * e->cap + e->nrows] = v[i];
		e->pos[e->nrows++] = p;
	}
	free(v);
}

/* The same positions of the pruned model's input: Hp and Cx. */
static void p2_pruned(struct cz_ref *e, const struct npu_tensor *x)
{
	const struct cz_layer *l1 = &e->g1;
	size_t n1 = (size_t)l1->K + 1, n = (size_t)e->l->K + 1, R = e->nrows, t, i, j, k;
	float *pt = malloc(sizeof(float) * n1 * (R ? R : 1)), *v = malloc(sizeof(float) * n1);

	if (!pt || !v || !R || !input_fits(l1, x)) {
		free(pt);
		free(v);
		return;
	}
	for (t = 0; t < R; t++) {
		if (!input_row(l1, x->data, e->pos[t], v))
			memset(v, 0, sizeof(float) * n1);
		for (i = 0; i < n1; i++)
			pt[i * R + t] = v[i];
	}
	for (i = 0; i < n1; i++) {
		const float *a = pt + i * R;

		for (j = i; j < n1; j++) {
			const float *b = pt + j * R;
			float s = 0;

			for (k = 0; k < R; k++)
				s += a[k] * b[k];
			e->l->hp[i * n1 + j] += s;
		}
		for (j = 0; j < n; j++) {
			const float *b = e->xt + j * e->cap;
			float s = 0;

			for (k = 0; k < R; k++)
				s += a[k] * b[k];
			e->l->cx[i * n + j] += s;
		}
	}
	free(pt);
	free(v);
}

static void p2_observe_orig(void *arg, const struct npu_node *node,
			    const struct npu_tensor *const *outs)
{
	struct cz_p2 *p = arg;
	size_t i, k;

	for (i = 0; i < node->num_outputs; i++)
		for (k = 0; k < p->ne; k++)
			if (node->outputs[i] && node->outputs[i] == p->e[k].l->x)
				p2_take(p->c, &p->e[k], outs[i]);
}

static void p2_observe_pruned(void *arg, const struct npu_node *node,
			      const struct npu_tensor *const *outs)
{
	struct cz_p2 *p = arg;
	size_t i, k;

	for (i = 0; i < node->num_outputs; i++)
		for (k = 0; k < p->ne; k++)
			if (node->outputs[i] && node->outputs[i] == p->e[k].x1)
				p2_pruned(&p->e[k], outs[i]);
}

/* Find a refined layer in g1 and its input there; its statistics allocated. */
static bool p2_layer(struct cz_ctx *c, struct npu_graph *g1, struct cz_ref *e)
{
	const struct cz_layer *l = e->l;
	const struct npu_value *x1;
	size_t i;

	for (i = 0; i < g1->num_nodes; i++)
		if (g1->nodes[i]->num_outputs && g1->nodes[i]->outputs[0] &&
		    !strcmp(g1->nodes[i]->outputs[0]->name, l->node->outputs[0]->name))
			break;
	if (i == g1->num_nodes || !g1->nodes[i]->inputs[0])
		return false;
	e->x1 = x1 = g1->nodes[i]->inputs[0];
	e->g1 = *l;
	if (l->kind == CZ_CONV) {
		if (x1->shape.rank != 4 || x1->shape.dims[0] != l->N || x1->shape.dims[2] != l->H ||
		    x1->shape.dims[3] != l->W || x1->shape.dims[1] <= 0)
			return false;
		e->g1.C = e->g1.I = x1->shape.dims[1];
		e->g1.K = e->g1.I * l->kh * l->kw;
	} else if (npu_shape_numel(&x1->shape) != npu_shape_numel(&l->x->shape)) {
		return false;
	}
	e->cap = rows_wanted(c, l);
	e->pos = malloc(sizeof(uint64_t) * (e->cap + 1));
	e->xt = malloc(sizeof(float) * ((size_t)l->K + 1) * (e->cap + 1));
	e->l->K1 = e->g1.K;
	e->l->hp = calloc(((size_t)e->g1.K + 1) * ((size_t)e->g1.K + 1), sizeof(double));
	e->l->cx = calloc(((size_t)e->g1.K + 1) * ((size_t)l->K + 1), sizeof(double));
	return e->pos && e->xt && e->l->hp && e->l->cx;
}

/* Hp and Cx of the layers of 'wave', on the model o1 (earlier waves refined). */
static npu_status wave_statistics(struct cz_ctx *c, const struct cz_out *o1, int wave,
				  struct npu_error *err)
{
	const struct npu_graph_runner *r = c->cfg->runner;
	struct cz_p2 p = { .c = c };
	struct npu_graph *g1 = NULL;
	struct npu_tensor **set = NULL;
	void *data = NULL, *run0 = NULL, *run1 = NULL;
	size_t len, i, k, q, j;
	npu_status st;

	st = load_model(c, o1, &g1, &data, &len, err);
	free(data);
	if (!st && (!(p.e = calloc(c->nl + 1, sizeof(*p.e))) ||
		    !(set = calloc(c->g->num_inputs + 1, sizeof(*set)))))
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; !st && i < c->nl; i++) {
		if (!c->L[i].refine || c->L[i].wave != wave)
			continue;
		p.e[p.ne].l = &c->L[i];
		if (p2_layer(c, g1, &p.e[p.ne])) {
			p.ne++;
			continue;
		}
		free(p.e[p.ne].pos);
		free(p.e[p.ne].xt);
		free(c->L[i].hp);
		free(c->L[i].cx);
		c->L[i].hp = c->L[i].cx = NULL;
		memset(&p.e[p.ne], 0, sizeof(p.e[p.ne]));
	}
	if (!st && p.ne)
		st = r->open(c->g, 1, NULL, p2_observe_orig, &p, NULL, &run0, err);
	if (!st && p.ne)
		st = r->open(g1, 1, NULL, p2_observe_pruned, &p, NULL, &run1, err);
	for (k = 0; !st && p.ne && k < c->ncal; k++) {
		st = c->cfg->calib.sample(c->cfg->calib.arg, c->g, k, set, err);
		for (i = 0; !st && i < c->g->num_inputs; i++)
			for (q = 0; q < p.ne; q++)
				if (p.e[q].l->x == c->g->inputs[i])
					p2_take(c, &p.e[q], set[i]);
		if (!st)
			st = r->run(run0, (const struct npu_tensor *const *)set, err);
		for (i = 0; !st && i < g1->num_inputs; i++)
			for (q = 0; q < p.ne; q++)
				if (p.e[q].x1 == g1->inputs[i])
					p2_pruned(&p.e[q], set[i]);
		if (!st)
			st = r->run(run1, (const struct npu_tensor *const *)set, err);
		if (st)
			npu_error_prefix(err, "%s: calibration sample %zu (sequential pass)", c->source, k);
		release(set, c->g->num_inputs);
	}
	if (run0 && r->close)
		r->close(run0);
	if (run1 && r->close)
		r->close(run1);
	for (q = 0; q < p.ne; q++) {	/* mirror Hp's upper triangle */
		size_t n1 = (size_t)p.e[q].g1.K + 1;

		for (i = 0; i < n1; i++)
			for (j = i + 1; j < n1; j++)
				p.e[q].l->hp[j * n1 + i] = p.e[q].l->hp[i * n1 + j];
		free(p.e[q].pos);
		free(p.e[q].xt);
	}
	free(p.e);
	free(set);
	npu_graph_destroy(g1);
	return st;
}

/* Each refined layer's wave: refined layers on the longest path before it. */
static int layer_waves(struct cz_ctx *c)
{
	int *d = calloc(c->g->num_values + 1, sizeof(int)), top = -1;
	size_t i, k, li;

	if (!d)
		return -1;
	for (i = 0; i < c->g->num_nodes; i++) {
		const struct npu_node *n = c->g->nodes[i];
		int din = 0;

		for (k = 0; k < n->num_inputs; k++)
			if (n->inputs[k] && n->inputs[k]->index < c->g->num_values &&
			    d[n->inputs[k]->index] > din)
				din = d[n->inputs[k]->index];
		for (li = 0; li < c->nl; li++)
			if (c->L[li].node == n && c->L[li].refine) {
				c->L[li].wave = din;
				top = din > top ? din : top;
				din++;
				break;
			}
		for (k = 0; k < n->num_outputs; k++)
			if (n->outputs[k] && n->outputs[k]->index < c->g->num_values)
				d[n->outputs[k]->index] = din;
	}
	free(d);
	return top;
}

/*
 * Wave by wave, each refined layer re-solved on the inputs the model
 * pruned so far gives it, toward the original outputs (SparseGPT's
 * sequential order; layers of one wave do not feed each other). *o is
 * replaced by the result.
 */
static npu_status sequential(struct cz_ctx *c, const double *level, struct cz_out *o,
			     struct npu_error *err)
{
	int top = layer_waves(c), w;
	npu_status st = NPU_OK;

	c->memo = true;
	for (w = 0; !st && w <= top; w++) {
		struct cz_out next = { 0 };

		st = wave_statistics(c, o, w, err);
		if (!st)
			st = apply(c, level, &next, err);
		if (!st) {
			out_free(o);
			*o = next;
		} else {
			out_free(&next);
		}
	}
	c->memo = false;
	return st;
}

/* ---- The per-unit search for an accuracy target ---- */

#define CZ_LEVELS 3
#define CZ_SENS_SAMPLES 4

static size_t num_units(const struct cz_ctx *c)
{
	return c->cfg->o.method == NPU_PRUNE_CHANNELS ? (size_t)c->ngroups : c->nl;
}

static bool unit_prunable(struct cz_ctx *c, size_t u)
{
	size_t i;

	if (c->cfg->o.method != NPU_PRUNE_CHANNELS)
		return !c->L[u].skip;
	for (i = 0; i < c->ncls; i++)
		if (cls_find(c, (int32_t)i) == (int32_t)i && !c->pinned[i] &&
		    c->L[c->owner[i]].group_id == (int)u)
			return true;
	return false;
}

static double level_value(const struct cz_ctx *c, int lv)
{
	if (c->cfg->o.method == NPU_PRUNE_NM)
		return lv > 0 ? 1 : 0;
	return c->cfg->o.sparsity * lv / CZ_LEVELS;
}

static npu_status search(struct cz_ctx *c, double *level, struct npu_error *err)
{
	size_t nu = num_units(c), u, tries;
	int nlv = c->cfg->o.method == NPU_PRUNE_NM ? 1 : CZ_LEVELS, lv;
	double *cost = calloc(nu * (CZ_LEVELS + 1) + 1, sizeof(double));
	double *gain = calloc(nu * (CZ_LEVELS + 1) + 1, sizeof(double));
	double *one = calloc(nu + 1, sizeof(double));
	int *at = calloc(nu + 1, sizeof(int));
	double target = c->cfg->o.accuracy_target, budget = 1 - target, best_cos = -2;
	const char *best_unit = "";
	double best_level = 0;
	npu_status st = NPU_OK;

	if (!cost || !gain || !one || !at) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	/* Sensitivity: each unit alone at each level, on the calibration set. */
	for (u = 0; !st && u < nu; u++) {
		if (!unit_prunable(c, u))
			continue;
		for (lv = 1; !st && lv <= nlv; lv++) {
			struct cz_out o;
			double cs = 1;

			one[u] = level_value(c, lv);
			st = apply(c, one, &o, err);
			if (!st)
				st = evaluate(c, &o, false, CZ_SENS_SAMPLES, &cs, NULL, NULL, err);
			cost[u * (CZ_LEVELS + 1) + lv] = 1 - cs;
			gain[u * (CZ_LEVELS + 1) + lv] = (double)(o.macs_b - o.macs_a);
			if (!st && lv == 1 && cs > best_cos) {
				size_t q;

				best_cos = cs;
				best_level = one[u];
				for (q = 0; q < c->nl; q++)
					if (c->cfg->o.method == NPU_PRUNE_CHANNELS
					    ? c->L[q].group_id == (int)u : q == u) {
						best_unit = c->L[q].label;
						break;
					}
			}
			out_free(&o);
		}
		one[u] = 0;
	}
	/* Greedy: the most MACs per cosine lost, within the budget; halve it
	 * until the held-out set agrees. */
	for (tries = 0; !st && tries < 10; tries++, budget /= 2) {
		double spent = 0, cs = 1;
		struct cz_out o;
		bool any = false;

		memset(at, 0, sizeof(int) * nu);
		for (;;) {
			double best = -1, dc_best = 0;
			size_t bu = nu;

			for (u = 0; u < nu; u++) {
				double dc, dg;

				if (at[u] >= nlv || !unit_prunable(c, u))
					continue;
				dc = cost[u * (CZ_LEVELS + 1) + at[u] + 1] - cost[u * (CZ_LEVELS + 1) + at[u]];
				dg = gain[u * (CZ_LEVELS + 1) + at[u] + 1] - gain[u * (CZ_LEVELS + 1) + at[u]];
				if (dc < 1e-12)
					dc = 1e-12;
				if (spent + dc <= budget && dg / dc > best) {
					best = dg / dc;
					bu = u;
					dc_best = dc;
				}
			}
			if (bu == nu)
				break;
			at[bu]++;
			spent += dc_best;
			any = true;
		}
		if (!any)
			break;
		for (u = 0; u < nu; u++)
			level[u] = level_value(c, at[u]);
		st = apply(c, level, &o, err);
		if (!st)	/* with quantize: the quantized model's cosine */
			st = check_cosine(c, &o, &cs, err);
		out_free(&o);
		if (!st && cs >= target)
			goto out;
	}
	if (!st) {
		if (best_cos > -2)
			st = npu_error_set(err, NPU_ERR_INVALID_ARG,
					   "%s: accuracy target %g: no pruning meets it on the held-out samples; the least sensitive layer, %s, alone at sparsity %.2f gives cosine %.6f on the calibration set",
					   c->source, target, best_unit, best_level, best_cos);
		else
			st = npu_error_set(err, NPU_ERR_INVALID_ARG,
					   "%s: accuracy target %g: no pruning meets it", c->source, target);
	}
out:
	free(cost);
	free(gain);
	free(one);
	free(at);
	return st;
}

/* ---- The whole run ---- */

static npu_status check_options(const struct npu_cz_config *cfg, const char *source,
				struct npu_error *err)
{
	const struct npu_compress_options *o = &cfg->o;

	if (o->method != NPU_PRUNE_MAGNITUDE && o->method != NPU_PRUNE_NM &&
	    o->method != NPU_PRUNE_CHANNELS)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "npu_compress_options.method %d: expected magnitude (1), N:M (2) or channels (3)",
				     (int)o->method);
	if (!(o->sparsity >= 0 && o->sparsity < 1))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "npu_compress_options.sparsity %g: outside [0, 1)", o->sparsity);
	if (o->method == NPU_PRUNE_NM && (o->nm_m < 2 || o->nm_m > 64 || o->nm_n < 1 || o->nm_n >= o->nm_m))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "N:M %d:%d: expected 1 <= N < M <= 64", o->nm_n, o->nm_m);
	if (o->accuracy_target < 0 || o->accuracy_target > 1 || isnan(o->accuracy_target))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "accuracy target %g: a cosine in (0, 1]", o->accuracy_target);
	if (o->quantize && strcmp(o->quantize, "int8") && strcmp(o->quantize, "int16") &&
	    strcmp(o->quantize, "mixed"))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "npu_compress_options.quantize '%s': expected int8, int16 or mixed",
				     o->quantize);
	if (o->quantize && !o->npub_path)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "npu_compress_options.npub_path: quantize '%s' writes a compiled model (.npub) and needs its path",
				     o->quantize);
	if (o->quantize && !strcmp(o->quantize, "mixed") && !(o->accuracy_target > 0))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "npu_compress_options.quantize 'mixed' needs accuracy_target (the cosine mixed precision keeps)");
	if (o->quantize && o->device && !strcmp(o->device, "cpu"))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "npu_compress_options.device 'cpu': quantize compiles for an NPU device (sim, accel)");
	if (o->quantize && !cfg->quant.run)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "npu_compress_options.quantize: no compiler to quantize with");
	if (!(o->damping > 0) || !cfg->runner || !cfg->calib.count || !cfg->calib.sample)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "%s: compression needs calibration samples",
				     source);
	return NPU_OK;
}

static void ctx_free(struct cz_ctx *c)
{
	size_t i;

	for (i = 0; i < c->nl; i++) {
		free(c->L[i].w);
		free(c->L[i].b);
		free(c->L[i].h);
		free(c->L[i].in_cls);
		free(c->L[i].hp);
		free(c->L[i].cx);
		free(c->L[i].memo_q);
	}
	free(c->L);
	free(c->reader);
	for (i = 0; c->cmap && i < c->g->num_values; i++)
		free(c->cmap[i]);
	free(c->cmap);
	free(c->parent);
	free(c->pinned);
	free(c->owner);
	for (i = 0; i < c->nsl; i++)
		free(c->sl[i].cls);
	free(c->sl);
	for (i = 0; c->ref && i < (c->ncal + c->neval) * c->g->num_outputs; i++)
		npu_tensor_destroy(c->ref[i]);
	free(c->ref);
	for (i = 0; i < c->nnotes; i++)
		free(c->notes[i]);
	free(c->notes);
	npu_graph_destroy(c->g);
	npu_graph_destroy(c->base);
}

/* The graph at the calibration samples' shapes (the first sample's). */
static npu_status shaped_graph(struct cz_ctx *c, struct npu_error *err)
{
	struct npu_tensor **set = calloc(c->base->num_inputs + 1, sizeof(*set));
	npu_status st;
	size_t i;

	if (!set)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	c->g = npu_graph_clone(c->base, err);
	st = c->g ? c->cfg->calib.sample(c->cfg->calib.arg, c->base, 0, set, err) : err->status;
	for (i = 0; !st && i < c->g->num_inputs; i++)
		c->g->inputs[i]->shape = set[i]->shape;
	release(set, c->base->num_inputs);
	free(set);
	if (!st)
		st = npu_graph_infer(c->g, true, err);
	return st;
}

static npu_status fill_result(struct cz_ctx *c, struct cz_out *o, struct npu_compress_result *res,
			      struct npu_error *err)
{
	size_t i;

	res->layers = calloc(o->nlayers + 1, sizeof(*res->layers));
	res->notes = calloc(c->nnotes + 1, sizeof(*res->notes));
	if (!res->layers || !res->notes)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < o->nlayers; i++) {
		res->layers[i] = o->layers[i];
		res->layers[i].node = strdup(o->layers[i].node);
		res->layers[i].op_type = strdup(o->layers[i].op_type);
		res->layers[i].pattern = strdup(o->layers[i].pattern);
		res->layers[i].note = strdup(o->layers[i].note);
		res->num_layers++;
		if (!res->layers[i].node || !res->layers[i].op_type || !res->layers[i].pattern ||
		    !res->layers[i].note)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < c->nnotes; i++) {
		res->notes[i] = c->notes[i];
		c->notes[i] = NULL;
	}
	res->num_notes = c->nnotes;
	res->macs_before = o->macs_b;
	res->macs_after = o->macs_a;
	res->weight_bytes_before = o->bytes_b;
	res->weight_bytes_after = o->bytes_a;
	res->calib_samples = c->ncal;
	res->eval_samples = c->neval;
	return NPU_OK;
}

npu_status npu_compress_model(const void *data, size_t size, const char *source,
			      const struct npu_cz_config *cfg,
			      struct npu_compress_result *res, struct npu_error *err)
{
	struct cz_ctx c = { .cfg = cfg, .source = source, .data = data, .size = size,
			    .seed = 0x243f6a8885a308d3ull };
	struct cz_out o = { 0 };
	double *level = NULL;
	size_t i, prunable = 0, nu, nm_bad = 0;
	char nm_msg[400];
	npu_status st;

	memset(res, 0, sizeof(*res));
	st = check_options(cfg, source, err);
	if (!st)
		st = npu_onnx_import(data, size, source, &c.base, err);
	if (!st)
		st = cfg->calib.count(cfg->calib.arg, c.base, &c.ncal, err);
	if (!st && !c.ncal)
		st = npu_error_set(err, NPU_ERR_INVALID_ARG, "%s: no calibration samples", source);
	if (!st)
		st = cfg->eval.count ? cfg->eval.count(cfg->eval.arg, c.base, &c.neval, err)
				     : (c.neval = c.ncal, NPU_OK);
	if (!st && !c.neval)
		st = npu_error_set(err, NPU_ERR_INVALID_ARG, "%s: no held-out samples", source);
	if (!st)
		st = shaped_graph(&c, err);
	if (!st)
		st = find_layers(&c, err);
	/* N:M: a layer M does not divide is skipped (named in the report); a
	 * model where none is left is an error naming the first. */
	for (i = 0; !st && i < c.nl; i++) {
		struct cz_layer *l = &c.L[i];
		int64_t in = l->kind == CZ_CONV ? l->I : l->K;

		if (!l->skip && cfg->o.method == NPU_PRUNE_NM && in % cfg->o.nm_m) {
			if (!nm_bad)
				snprintf(nm_msg, sizeof(nm_msg), "%s: %s: N:M %d:%d does not divide its %lld input channels",
					 source, l->label, cfg->o.nm_n, cfg->o.nm_m, (long long)in);
			nm_bad++;
			l->skip = "N:M does not divide its input channels";
		}
		prunable += !l->skip;
	}
	if (!st && !prunable && nm_bad)
		st = npu_error_set(err, NPU_ERR_INVALID_ARG, "%s", nm_msg);
	if (!st && !prunable)
		st = npu_error_set(err, NPU_ERR_INVALID_ARG,
				   "%s: no prunable layer: no Conv (groups 1), Gemm or MatMul with float initializer weights%s",
				   source, c.nl ? " (every candidate is skipped: see the report)" : "");
	if (!st && cfg->o.method == NPU_PRUNE_CHANNELS)
		st = channel_groups(&c, err);
	if (!st) {
		nu = num_units(&c);
		for (i = 0, prunable = 0; i < nu; i++)
			prunable += unit_prunable(&c, i);
		if (!prunable)
			st = npu_error_set(err, NPU_ERR_INVALID_ARG,
					   "%s: no prunable layer: every channel group is refused%s%s",
					   source, c.nnotes ? ", e.g. " : "", c.nnotes ? c.notes[0] : "");
	}
	/* The original's outputs (calibration set, then held-out set). */
	if (!st && !(c.ref = calloc((c.ncal + c.neval) * c.g->num_outputs + 1, sizeof(*c.ref))))
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	if (!st && cfg->o.accuracy_target > 0)
		st = run_set(&c, c.g, &cfg->calib, c.ncal, c.ref, true, NULL, err);
	if (!st)
		st = run_set(&c, c.g, eval_src(&c), c.neval, c.ref + c.ncal * c.g->num_outputs, true,
			     NULL, err);
	if (!st)
		st = statistics(&c, err);
	if (!st && !(level = calloc(num_units(&c) + 1, sizeof(double))))
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	if (!st && cfg->o.accuracy_target > 0) {
		st = search(&c, level, err);
	} else if (!st) {
		for (i = 0; i < num_units(&c); i++)
			level[i] = cfg->o.method == NPU_PRUNE_NM ? 1 : cfg->o.sparsity;
	}
	for (i = 0; i < c.nl; i++)	/* the search's trials refine nothing */
		c.L[i].refine = false;
	if (!st)
		st = apply(&c, level, &o, err);
	if (!st && o.n_lack && !o.n_rec)
		st = too_few(&c, o.lack, err);
	if (!st)
		st = evaluate(&c, &o, true, 0, &res->cosine, &res->onnx, &res->onnx_size, err);
	/* The sequential pass, kept when the held-out cosine (fp32) agrees. */
	if (!st && !cfg->o.no_reconstruct) {
		struct cz_out seq = { 0 };
		void *bytes = NULL;
		size_t len = 0;
		double cos = -2;

		st = apply(&c, level, &seq, err);	/* a copy of pass 1 to refine */
		if (!st)
			st = sequential(&c, level, &seq, err);
		if (!st)
			st = evaluate(&c, &seq, true, 0, &cos, &bytes, &len, err);
		if (!st && cos >= res->cosine) {
			out_free(&o);
			o = seq;
			free(res->onnx);
			res->onnx = bytes;
			res->onnx_size = len;
			res->cosine = cos;
			res->sequential = 1;
		} else {
			out_free(&seq);
			free(bytes);
		}
	}
	/* With quantize: the chosen model compiled, its cosine, its .npub. */
	if (!st && cfg->o.quantize)
		st = quantized(&c, res->onnx, res->onnx_size, cfg->o.npub_path,
			       &res->quantized_cosine, err);
	if (!st)
		st = fill_result(&c, &o, res, err);
	if (st)
		npu_compress_result_clear(res);
	out_free(&o);
	free(level);
	ctx_free(&c);
	return st;
}

void npu_compress_result_clear(struct npu_compress_result *res)
{
	size_t i;

	for (i = 0; i < res->num_layers; i++) {
		free((char *)res->layers[i].node);
		free((char *)res->layers[i].op_type);
		free((char *)res->layers[i].pattern);
		free((char *)res->layers[i].note);
	}
	free(res->layers);
	for (i = 0; i < res->num_notes; i++)
		free(res->notes[i]);
	free(res->notes);
	free(res->onnx);
	memset(res, 0, sizeof(*res));
}
