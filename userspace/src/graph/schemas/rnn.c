// SPDX-License-Identifier: MIT
/* The schemas of op_rnn.c's ops: RNN, GRU, LSTM. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/rnn.h"

static const char *const npu_rnn_default_acts[3][3] = {
	{ "Tanh" }, { "Sigmoid", "Tanh" }, { "Sigmoid", "Tanh", "Tanh" },
};

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

npu_status npu_rnn_parse(const struct npu_node *node,
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

#define RNN_SCHEMA(sym, name, kind, since)				\
static npu_status sym##_infer(struct npu_infer_ctx *ctx)		\
{									\
	return npu_rnn_infer(ctx, kind);				\
}									\
NPU_OP_SCHEMA_DEF(sym) = {						\
	.op_type = name, .domain = "",					\
	.since_version = since, .max_version = 21,			\
	.infer = sym##_infer,						\
};

RNN_SCHEMA(rnn, "RNN", CELL_RNN, 7)
RNN_SCHEMA(gru, "GRU", CELL_GRU, 7)
RNN_SCHEMA(lstm, "LSTM", CELL_LSTM, 7)
