// SPDX-License-Identifier: MIT
/*
 * Recurrent layers: RNN, GRU and LSTM over fp32, forward / reverse /
 * bidirectional, with sequence_lens (steps past a sequence's length give
 * zeros in Y and leave Y_h / Y_c at the last valid step), initial states,
 * biases, LSTM peepholes, clip, GRU linear_before_reset and layout = 1
 * (batch first, opset 14). Activations Sigmoid, Tanh, Relu, Softsign and
 * Softplus; ones that take alpha / beta, and LSTM input_forget, are
 * rejected. A direct per-step loop: the gates are small matrix-vector
 * products.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/op_common.h"

enum npu_rnn_kind { CELL_RNN, CELL_GRU, CELL_LSTM };
enum npu_rnn_act { ACT_SIGMOID, ACT_TANH, ACT_RELU, ACT_SOFTSIGN, ACT_SOFTPLUS };

#define RNN_MAX_ACTS 6		/* 3 per direction */

struct npu_rnn {
	enum npu_rnn_kind kind;
	int gates, n_acts, dirs;
	bool reverse_only, batch_first, lbr;
	float clip;
	int64_t hidden;
	enum npu_rnn_act act[RNN_MAX_ACTS];
};

static const char *const npu_rnn_default_acts[3][3] = {
	{ "Tanh" }, { "Sigmoid", "Tanh" }, { "Sigmoid", "Tanh", "Tanh" },
};

static npu_status npu_rnn_act_parse(const struct npu_node *node,
				    const char *s, enum npu_rnn_act *a,
				    struct npu_error *err)
{
	static const char *const names[] = {
		"Sigmoid", "Tanh", "Relu", "Softsign", "Softplus",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*a = (enum npu_rnn_act)i;
			return NPU_OK;
		}
	return npu_op_unsupported(err, node,
				  "activation '%s' is not supported", s);
}

static float npu_rnn_apply(enum npu_rnn_act a, float v)
{
	switch (a) {
	case ACT_SIGMOID: return 1.0f / (1.0f + expf(-v));
	case ACT_TANH: return tanhf(v);
	case ACT_RELU: return v > 0 ? v : 0;
	case ACT_SOFTSIGN: return v / (1 + fabsf(v));
	default: return log1pf(expf(v));
	}
}

static npu_status npu_rnn_parse(const struct npu_node *node,
				enum npu_rnn_kind kind, struct npu_rnn *r,
				struct npu_error *err)
{
	const char *dir = npu_node_attr_string_or(node, "direction", "forward");
	const struct npu_attr *acts = npu_node_attr(node, "activations");
	const struct npu_attr *hs = npu_node_attr(node, "hidden_size");
	int per_dir = kind == CELL_RNN ? 1 : kind == CELL_GRU ? 2 : 3, i;
	npu_status st;

	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->gates = kind == CELL_RNN ? 1 : kind == CELL_GRU ? 3 : 4;
	if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) {
		r->dirs = 1;
		r->reverse_only = dir[0] == 'r';
	} else if (!strcmp(dir, "bidirectional")) {
		r->dirs = 2;
	} else {
		return npu_op_invalid(err, node,
				      "attribute 'direction' = '%s' is not forward, reverse or bidirectional",
				      dir);
	}
	if (!hs || hs->type != NPU_ATTR_INT || hs->i <= 0)
		return npu_op_invalid(err, node,
				      "attribute 'hidden_size' is missing or not positive");
	r->hidden = hs->i;
	r->batch_first = npu_node_attr_int_or(node, "layout", 0) != 0;
	r->lbr = npu_node_attr_int_or(node, "linear_before_reset", 0) != 0;
	r->clip = npu_node_attr_float_or(node, "clip", 0.0f);
	if (r->clip < 0)
		return npu_op_invalid(err, node, "attribute 'clip' = %g is negative",
				      r->clip);
	if (npu_node_attr_int_or(node, "input_forget", 0))
		return npu_op_unsupported(err, node,
					  "attribute 'input_forget' = 1 is not supported");
	r->n_acts = per_dir * r->dirs;
	if (acts) {
		if (acts->type != NPU_ATTR_STRINGS ||
		    acts->count != (size_t)r->n_acts)
			return npu_op_invalid(err, node,
					      "attribute 'activations' must list %d activations",
					      r->n_acts);
		for (i = 0; i < r->n_acts; i++) {
			st = npu_rnn_act_parse(node, acts->strings[i], &r->act[i],
					       err);
			if (st)
				return st;
		}
	} else {
		for (i = 0; i < r->n_acts; i++) {
			st = npu_rnn_act_parse(node,
					       npu_rnn_default_acts[kind][i % per_dir],
					       &r->act[i], err);
			if (st)
				return st;
		}
	}
	return NPU_OK;
}

/* Checks input i has rank 'rank' and the given dims (-1: any). */
static npu_status npu_rnn_check(const struct npu_infer_ctx *ctx, size_t i,
				const char *what, int rank, int64_t d0,
				int64_t d1, int64_t d2)
{
	const struct npu_value *v = npu_op_input(ctx->node, i);
	const int64_t want[3] = { d0, d1, d2 };
	int d;

	if (!v)
		return NPU_OK;
	if (v->dtype != NPU_DTYPE_FLOAT &&
	    !(i == 4 && v->dtype == NPU_DTYPE_INT32))
		return npu_op_unsupported(ctx->err, ctx->node,
					  "input %zu '%s' (%s) has type %s, not supported",
					  i, v->name, what, npu_dtype_name(v->dtype));
	if (v->shape.rank != rank)
		return npu_op_invalid(ctx->err, ctx->node,
				      "input %zu '%s' (%s) has rank %d, expected %d",
				      i, v->name, what, v->shape.rank, rank);
	for (d = 0; d < rank; d++)
		if (want[d] >= 0 && v->shape.dims[d] >= 0 &&
		    v->shape.dims[d] != want[d])
			return npu_op_invalid(ctx->err, ctx->node,
					      "input %zu '%s' (%s) dim %d is %lld, expected %lld",
					      i, v->name, what, d,
					      (long long)v->shape.dims[d],
					      (long long)want[d]);
	return NPU_OK;
}

static npu_status npu_rnn_infer(struct npu_infer_ctx *ctx,
				enum npu_rnn_kind kind)
{
	const struct npu_node *node = ctx->node;
	const struct npu_shape *xs;
	size_t max_in = kind == CELL_LSTM ? 8 : 6, max_out = kind == CELL_LSTM ? 3 : 2;
	int64_t seq, batch, in, H, G, D;
	struct npu_rnn r;
	size_t i;
	npu_status st;

	st = npu_op_check_arity(ctx, 3, max_in);
	if (!st)
		st = kind == CELL_GRU ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("activations", "clip",
							  "direction", "hidden_size",
							  "layout",
							  "linear_before_reset")) :
		     kind == CELL_LSTM ?
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("activations", "clip",
							  "direction", "hidden_size",
							  "layout", "input_forget")) :
		     npu_op_check_attrs(ctx, NPU_OP_ATTRS("activations", "clip",
							  "direction", "hidden_size",
							  "layout"));
	if (!st)
		st = npu_rnn_parse(node, kind, &r, ctx->err);
	if (st)
		return st;
	if (node->num_outputs > max_out)
		return npu_op_invalid(ctx->err, node, "%zu outputs, expected at most %zu",
				      node->num_outputs, max_out);
	xs = &node->inputs[0]->shape;
	st = npu_rnn_check(ctx, 0, "X", 3, -1, -1, -1);
	if (st)
		return st;
	seq = xs->dims[r.batch_first ? 1 : 0];
	batch = xs->dims[r.batch_first ? 0 : 1];
	in = xs->dims[2];
	H = r.hidden;
	G = r.gates;
	D = r.dirs;
	st = npu_rnn_check(ctx, 1, "W", 3, D, G * H, in);
	if (!st)
		st = npu_rnn_check(ctx, 2, "R", 3, D, G * H, H);
	if (!st)
		st = npu_rnn_check(ctx, 3, "B", 2, D, 2 * G * H, -1);
	if (!st) {
		const struct npu_value *sl = npu_op_input(node, 4);

		if (sl && sl->dtype != NPU_DTYPE_INT32)
			st = npu_op_invalid(ctx->err, node,
					    "input 4 '%s' (sequence_lens) has type %s, expected int32",
					    sl->name, npu_dtype_name(sl->dtype));
		else
			st = npu_rnn_check(ctx, 4, "sequence_lens", 1, batch,
					   -1, -1);
	}
	if (!st)
		st = r.batch_first ?
		     npu_rnn_check(ctx, 5, "initial_h", 3, batch, D, H) :
		     npu_rnn_check(ctx, 5, "initial_h", 3, D, batch, H);
	if (!st && kind == CELL_LSTM)
		st = r.batch_first ?
		     npu_rnn_check(ctx, 6, "initial_c", 3, batch, D, H) :
		     npu_rnn_check(ctx, 6, "initial_c", 3, D, batch, H);
	if (!st && kind == CELL_LSTM)
		st = npu_rnn_check(ctx, 7, "P", 2, D, 3 * H, -1);
	if (st)
		return st;
	for (i = 0; i < node->num_outputs; i++) {
		struct npu_shape *s = &ctx->out_shapes[i];

		ctx->out_dtypes[i] = NPU_DTYPE_FLOAT;
		if (i == 0) {
			s->rank = 4;
			if (r.batch_first) {
				s->dims[0] = batch;
				s->dims[1] = seq;
				s->dims[2] = D;
			} else {
				s->dims[0] = seq;
				s->dims[1] = D;
				s->dims[2] = batch;
			}
			s->dims[3] = H;
		} else {
			s->rank = 3;
			s->dims[0] = r.batch_first ? batch : D;
			s->dims[1] = r.batch_first ? D : batch;
			s->dims[2] = H;
		}
	}
	return NPU_OK;
}

static float npu_rnn_clip(const struct npu_rnn *r, float v)
{
	if (r->clip > 0)
		v = v < -r->clip ? -r->clip : v > r->clip ? r->clip : v;
	return v;
}

/* out[g] = W[g] . x + R[g] . h + Wb[g] + Rb[g] for gate rows of one dir. */
static void npu_rnn_gates(const float *w, const float *rw, const float *bias,
			  const float *x, const float *h, int64_t rows,
			  int64_t in, int64_t hid, float *out_x, float *out_h)
{
	int64_t j, k;

	for (j = 0; j < rows; j++) {
		float ax = bias ? bias[j] : 0, ah = bias ? bias[rows + j] : 0;

		for (k = 0; k < in; k++)
			ax += w[j * in + k] * x[k];
		for (k = 0; k < hid; k++)
			ah += rw[j * hid + k] * h[k];
		out_x[j] = ax;
		out_h[j] = ah;
	}
}

static npu_status npu_rnn_compute(struct npu_op_ctx *ctx,
				  enum npu_rnn_kind kind)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *X = ctx->inputs[0], *W = ctx->inputs[1];
	const struct npu_tensor *R = ctx->inputs[2], *B = npu_op_in(ctx, 3);
	const struct npu_tensor *SL = npu_op_in(ctx, 4), *H0 = npu_op_in(ctx, 5);
	const struct npu_tensor *C0 = kind == CELL_LSTM ? npu_op_in(ctx, 6) : NULL;
	const struct npu_tensor *P = kind == CELL_LSTM ? npu_op_in(ctx, 7) : NULL;
	struct npu_tensor *Y = npu_op_out(ctx, 0), *YH = npu_op_out(ctx, 1);
	struct npu_tensor *YC = kind == CELL_LSTM ? npu_op_out(ctx, 2) : NULL;
	int64_t seq, batch, in, H, G, D, d, b, t, j;
	float *gx = NULL, *gh = NULL, *h = NULL, *c = NULL, *tmp = NULL;
	struct npu_rnn r;
	npu_status st;

	st = npu_rnn_parse(node, kind, &r, ctx->err);
	if (st)
		return st;
	seq = X->shape.dims[r.batch_first ? 1 : 0];
	batch = X->shape.dims[r.batch_first ? 0 : 1];
	in = X->shape.dims[2];
	H = r.hidden;
	G = r.gates;
	D = r.dirs;
	if (Y && npu_op_numel(Y))
		memset(Y->data, 0, (size_t)npu_op_numel(Y) * sizeof(float));
	gx = malloc((size_t)(G * H) * sizeof(float));
	gh = malloc((size_t)(G * H) * sizeof(float));
	h = malloc((size_t)H * sizeof(float));
	c = malloc((size_t)H * sizeof(float));
	tmp = malloc((size_t)(4 * H) * sizeof(float));
	if (!gx || !gh || !h || !c || !tmp) {
		st = npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	for (d = 0; d < D; d++) {
		bool rev = r.reverse_only || d == 1;
		const float *w = (const float *)W->data + d * G * H * in;
		const float *rw = (const float *)R->data + d * G * H * H;
		const float *bias = B ? (const float *)B->data + d * 2 * G * H : NULL;
		const float *peep = P ? (const float *)P->data + d * 3 * H : NULL;
		const enum npu_rnn_act *act = r.act + d * (r.n_acts / D);

		for (b = 0; b < batch; b++) {
			int64_t len = SL ? ((const int32_t *)SL->data)[b] : seq;
			/* [d][b] or, batch first, [b][d] in the state tensors. */
			int64_t so = (r.batch_first ? b * D + d : d * batch + b) * H;

			if (len < 0 || len > seq) {
				st = npu_op_invalid(ctx->err, node,
						    "sequence_lens[%lld] = %lld is out of range [0, %lld]",
						    (long long)b, (long long)len,
						    (long long)seq);
				goto out;
			}
			for (j = 0; j < H; j++) {
				h[j] = H0 ? ((const float *)H0->data)[so + j] : 0;
				c[j] = C0 ? ((const float *)C0->data)[so + j] : 0;
			}
			for (t = 0; t < len; t++) {
				int64_t tt = rev ? len - 1 - t : t;
				const float *x = (const float *)X->data +
					(r.batch_first ? b * seq + tt : tt * batch + b) * in;

				npu_rnn_gates(w, rw, bias, x, h, G * H, in, H, gx, gh);
				if (kind == CELL_RNN) {
					for (j = 0; j < H; j++)
						h[j] = npu_rnn_apply(act[0],
								     npu_rnn_clip(&r, gx[j] + gh[j]));
				} else if (kind == CELL_GRU) {
					/* Gates z, r, h: rows j, H + j, 2H + j. */
					float *z = tmp, *rg = tmp + H, *rh = tmp + 2 * H;
					float *nh = tmp + 3 * H;

					for (j = 0; j < H; j++) {
						z[j] = npu_rnn_apply(act[0],
							npu_rnn_clip(&r, gx[j] + gh[j]));
						rg[j] = npu_rnn_apply(act[0],
							npu_rnn_clip(&r, gx[H + j] + gh[H + j]));
						rh[j] = rg[j] * h[j];
					}
					for (j = 0; j < H; j++) {
						float hh;

						if (r.lbr) {
							hh = gx[2 * H + j] + rg[j] * gh[2 * H + j];
						} else {
							/* (r . h) R_h^T + Rb_h */
							const float *rr = rw + (2 * H + j) * H;
							int64_t k;

							hh = gx[2 * H + j] +
							     (bias ? bias[G * H + 2 * H + j] : 0);
							for (k = 0; k < H; k++)
								hh += rr[k] * rh[k];
						}
						hh = npu_rnn_apply(act[1], npu_rnn_clip(&r, hh));
						nh[j] = (1 - z[j]) * hh + z[j] * h[j];
					}
					memcpy(h, nh, (size_t)H * sizeof(float));
				} else {
					/* Gates i, o, f, c; peepholes i, o, f. */
					for (j = 0; j < H; j++) {
						float gi = gx[j] + gh[j];
						float go = gx[H + j] + gh[H + j];
						float gf = gx[2 * H + j] + gh[2 * H + j];
						float gc = gx[3 * H + j] + gh[3 * H + j];
						float ct;

						if (peep) {
							gi += peep[j] * c[j];
							gf += peep[2 * H + j] * c[j];
						}
						gi = npu_rnn_apply(act[0], npu_rnn_clip(&r, gi));
						gf = npu_rnn_apply(act[0], npu_rnn_clip(&r, gf));
						gc = npu_rnn_apply(act[1], npu_rnn_clip(&r, gc));
						ct = gf * c[j] + gi * gc;
						if (peep)
							go += peep[H + j] * ct;
						go = npu_rnn_apply(act[0], npu_rnn_clip(&r, go));
						c[j] = ct;
						tmp[j] = go * npu_rnn_apply(act[2], ct);
					}
					memcpy(h, tmp, (size_t)H * sizeof(float));
				}
				if (Y) {
					int64_t yo = r.batch_first ?
						((b * seq + tt) * D + d) * H :
						((tt * D + d) * batch + b) * H;

					memcpy((float *)Y->data + yo, h,
					       (size_t)H * sizeof(float));
				}
			}
			if (YH)
				memcpy((float *)YH->data + so, h, (size_t)H * sizeof(float));
			if (YC)
				memcpy((float *)YC->data + so, c, (size_t)H * sizeof(float));
		}
	}
out:
	free(gx);
	free(gh);
	free(h);
	free(c);
	free(tmp);
	return st;
}

#define RNN_DEF(sym, name, kind, since)					\
static npu_status sym##_infer(struct npu_infer_ctx *ctx)		\
{									\
	return npu_rnn_infer(ctx, kind);				\
}									\
static npu_status sym##_compute(struct npu_op_ctx *ctx)		\
{									\
	return npu_rnn_compute(ctx, kind);				\
}									\
NPU_CPU_OP_DEF(sym) = {							\
	.op_type = name, .domain = "", .since_version = since,		\
	.max_version = 21, .infer = sym##_infer,			\
	.compute = sym##_compute,					\
};

RNN_DEF(rnn, "RNN", CELL_RNN, 7)
RNN_DEF(gru, "GRU", CELL_GRU, 7)
RNN_DEF(lstm, "LSTM", CELL_LSTM, 7)
