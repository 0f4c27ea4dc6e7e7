// SPDX-License-Identifier: MIT
/*
 * Recurrent layers: RNN, GRU and LSTM over fp32, forward / reverse /
 * bidirectional, with sequence_lens (steps past a sequence's length give
 * zeros in Y and leave Y_h / Y_c at the last valid step), initial states,
 * biases, LSTM peepholes, clip, GRU linear_before_reset and layout = 1
 * (batch first, opset 14). Activations Sigmoid, Tanh, Relu, Softsign and
 * Softplus; ones that take alpha / beta, and LSTM input_forget, are
 * rejected. The input projections of all steps are one GEMM; a step
 * is one GEMM of the batch's hidden states against R (packed once per
 * direction), then the gates row by row.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"
#include "graph/schemas/rnn.h"

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

static float npu_rnn_clip(const struct npu_rnn *r, float v)
{
	if (r->clip > 0)
		v = v < -r->clip ? -r->clip : v > r->clip ? r->clip : v;
	return v;
}

/* act over n floats in place: Sigmoid and Tanh on the vector path. */
static void npu_rnn_act_vec(enum npu_rnn_act a, float *v, int64_t n)
{
	int64_t i;

	if (a == ACT_SIGMOID) {
		struct npu_cpu_act_params p = { .kind = NPU_CPU_ACT_SIGMOID };

		npu_vec_act_f32(&p, v, v, (size_t)n);
		return;
	}
	if (a == ACT_TANH) {
		npu_vec_tanh_f32(v, v, (size_t)n);
		return;
	}
	for (i = 0; i < n; i++)
		v[i] = npu_rnn_apply(a, v[i]);
}

static void npu_rnn_clip_vec(const struct npu_rnn *r, float *v, int64_t n)
{
	int64_t i;

	if (r->clip > 0)
		for (i = 0; i < n; i++)
			v[i] = npu_rnn_clip(r, v[i]);
}

/*
 * The working memory of one call. The input projections of every step
 * are one GEMM (gx = X W^T + biases, all steps and batch rows at once);
 * each step then needs only h R^T for the whole batch (gh), on R packed
 * once per direction. GRU without linear_before_reset multiplies (r . h)
 * by R_h separately: its R is packed as the z, r rows and the h rows.
 */
struct npu_rnn_buf {
	float *gx, *gh, *h, *c, *pre, *rh, *ghh, *bsum, *rbh, *pk1, *pk2;
};

static void npu_rnn_buf_free(struct npu_rnn_buf *m)
{
	free(m->gx);
	free(m->gh);
	free(m->h);
	free(m->c);
	free(m->pre);
	free(m->rh);
	free(m->ghh);
	free(m->bsum);
	free(m->rbh);
	free(m->pk1);
	free(m->pk2);
}

static float *npu_rnn_alloc(int64_t n)
{
	size_t bytes = ((size_t)(n > 0 ? n : 1) * sizeof(float) + 63) / 64 * 64;
	float *p = aligned_alloc(64, bytes);

	if (p)
		memset(p, 0, bytes);
	return p;
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
	int64_t seq, batch, in, H, G, D, GH, d, b, t, j, rows;
	struct npu_rnn_buf m;
	bool gru_split;
	struct npu_rnn r;
	npu_status st;

	memset(&m, 0, sizeof(m));
	st = npu_rnn_parse(node, kind, &r, ctx->err);
	if (st)
		return st;
	seq = X->shape.dims[r.batch_first ? 1 : 0];
	batch = X->shape.dims[r.batch_first ? 0 : 1];
	in = X->shape.dims[2];
	H = r.hidden;
	G = r.gates;
	D = r.dirs;
	GH = G * H;
	rows = seq * batch;
	gru_split = kind == CELL_GRU && !r.lbr;
	if (Y && npu_op_numel(Y))
		memset(Y->data, 0, (size_t)npu_op_numel(Y) * sizeof(float));
	for (b = 0; b < batch; b++) {
		int64_t len = SL ? ((const int32_t *)SL->data)[b] : seq;

		if (len < 0 || len > seq)
			return npu_op_invalid(ctx->err, node,
					      "sequence_lens[%lld] = %lld is out of range [0, %lld]",
					      (long long)b, (long long)len, (long long)seq);
	}
	m.gx = npu_rnn_alloc(rows * GH);
	m.gh = npu_rnn_alloc(batch * GH);
	m.h = npu_rnn_alloc(batch * H);
	m.c = npu_rnn_alloc(batch * H);
	m.pre = npu_rnn_alloc(GH + H);
	m.rh = npu_rnn_alloc(batch * H);
	m.ghh = npu_rnn_alloc(batch * H);
	m.bsum = npu_rnn_alloc(GH);
	m.rbh = npu_rnn_alloc(H);
	m.pk1 = npu_rnn_alloc((int64_t)npu_sgemm_packed_b_floats((size_t)GH, (size_t)H));
	m.pk2 = npu_rnn_alloc((int64_t)npu_sgemm_packed_b_floats((size_t)H, (size_t)H));
	if (!m.gx || !m.gh || !m.h || !m.c || !m.pre || !m.rh || !m.ghh ||
	    !m.bsum || !m.rbh || !m.pk1 || !m.pk2) {
		st = npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	for (d = 0; d < D; d++) {
		bool rev = r.reverse_only || d == 1;
		const float *w = (const float *)W->data + d * GH * in;
		const float *rw = (const float *)R->data + d * GH * H;
		const float *bias = B ? (const float *)B->data + d * 2 * GH : NULL;
		const float *peep = P ? (const float *)P->data + d * 3 * H : NULL;
		const enum npu_rnn_act *act = r.act + d * (r.n_acts / D);
		int64_t ngh = gru_split ? 2 * H : GH;
		size_t nr1, nr2 = 0;

		/* Wb + Rb, except GRU's h gate, whose Rb is inside r . (...). */
		for (j = 0; j < GH; j++)
			m.bsum[j] = bias ? bias[j] + (kind == CELL_GRU && j >= 2 * H ? 0 :
						      bias[GH + j]) : 0;
		for (j = 0; j < H; j++)
			m.rbh[j] = bias && kind == CELL_GRU ? bias[GH + 2 * H + j] : 0;
		npu_sgemm(false, true, (size_t)rows, (size_t)GH, (size_t)in, 1.0f,
			  X->data, (size_t)in, w, (size_t)in, 0.0f, m.gx, (size_t)GH,
			  ctx->pool);
		for (j = 0; j < rows; j++)
			npu_vec_binary_f32(NPU_VEC_ADD, m.gx + j * GH, 1, m.bsum, 1,
					   m.gx + j * GH, (size_t)GH);
		nr1 = npu_sgemm_pack_b(true, (size_t)ngh, (size_t)H, rw, (size_t)H, m.pk1);
		if (gru_split)
			nr2 = npu_sgemm_pack_b(true, (size_t)H, (size_t)H, rw + 2 * H * H,
					       (size_t)H, m.pk2);
		for (b = 0; b < batch; b++) {
			/* [d][b] or, batch first, [b][d] in the state tensors. */
			int64_t so = (r.batch_first ? b * D + d : d * batch + b) * H;

			for (j = 0; j < H; j++) {
				m.h[b * H + j] = H0 ? ((const float *)H0->data)[so + j] : 0;
				m.c[b * H + j] = C0 ? ((const float *)C0->data)[so + j] : 0;
			}
		}
		for (t = 0; t < seq; t++) {
			npu_sgemm_prepacked(false, true, (size_t)batch, (size_t)ngh, (size_t)H,
					    1.0f, m.h, (size_t)H, rw, (size_t)H, m.pk1, nr1,
					    0.0f, m.gh, (size_t)GH, ctx->pool);
			if (gru_split) {
				/* z, r of every row first: (r . h) R_h^T is one product. */
				for (b = 0; b < batch; b++) {
					int64_t len = SL ? ((const int32_t *)SL->data)[b] : seq;
					int64_t tt = rev ? len - 1 - t : t;
					const float *g = m.gx + (r.batch_first ? b * seq + tt :
								 tt * batch + b) * GH;
					float *q = m.gh + b * GH;

					if (t >= len)
						continue;
					for (j = 0; j < 2 * H; j++)
						q[j] += g[j];
					npu_rnn_clip_vec(&r, q, 2 * H);
					npu_rnn_act_vec(act[0], q, 2 * H);
					for (j = 0; j < H; j++)
						m.rh[b * H + j] = q[H + j] * m.h[b * H + j];
				}
				npu_sgemm_prepacked(false, true, (size_t)batch, (size_t)H,
						    (size_t)H, 1.0f, m.rh, (size_t)H,
						    rw + 2 * H * H, (size_t)H, m.pk2, nr2,
						    0.0f, m.ghh, (size_t)H, ctx->pool);
			}
			for (b = 0; b < batch; b++) {
				int64_t len = SL ? ((const int32_t *)SL->data)[b] : seq;
				int64_t tt = rev ? len - 1 - t : t;
				const float *g = m.gx + (r.batch_first ? b * seq + tt :
							 tt * batch + b) * GH;
				float *q = m.gh + b * GH, *h = m.h + b * H, *c = m.c + b * H;
				float *pre = m.pre;

				if (t >= len)
					continue;
				if (kind == CELL_RNN) {
					for (j = 0; j < H; j++)
						h[j] = g[j] + q[j];
					npu_rnn_clip_vec(&r, h, H);
					npu_rnn_act_vec(act[0], h, H);
				} else if (kind == CELL_GRU) {
					/* Gates z, r, h: rows j, H + j, 2H + j. */
					float *z = q, *rg = q + H, *hh = pre;

					if (!gru_split) {
						for (j = 0; j < 2 * H; j++)
							q[j] += g[j];
						npu_rnn_clip_vec(&r, q, 2 * H);
						npu_rnn_act_vec(act[0], q, 2 * H);
						for (j = 0; j < H; j++)
							hh[j] = g[2 * H + j] + rg[j] *
								(q[2 * H + j] + m.rbh[j]);
					} else {
						for (j = 0; j < H; j++)
							hh[j] = g[2 * H + j] +
								(m.ghh[b * H + j] + m.rbh[j]);
					}
					npu_rnn_clip_vec(&r, hh, H);
					npu_rnn_act_vec(act[1], hh, H);
					for (j = 0; j < H; j++)
						h[j] = (1 - z[j]) * hh[j] + z[j] * h[j];
				} else {
					/* Gates i, o, f, c; peepholes i, o, f. */
					float *gi = q, *go = q + H, *gf = q + 2 * H, *gc = q + 3 * H;

					for (j = 0; j < GH; j++)
						q[j] += g[j];
					if (peep)
						for (j = 0; j < H; j++) {
							gi[j] += peep[j] * c[j];
							gf[j] += peep[2 * H + j] * c[j];
						}
					npu_rnn_clip_vec(&r, gi, H);
					npu_rnn_clip_vec(&r, gf, 2 * H);	/* f and c */
					npu_rnn_act_vec(act[0], gi, H);
					npu_rnn_act_vec(act[0], gf, H);
					npu_rnn_act_vec(act[1], gc, H);
					for (j = 0; j < H; j++) {
						c[j] = gf[j] * c[j] + gi[j] * gc[j];
						pre[j] = c[j];
						if (peep)
							go[j] += peep[H + j] * c[j];
					}
					npu_rnn_clip_vec(&r, go, H);
					npu_rnn_act_vec(act[0], go, H);
					npu_rnn_act_vec(act[2], pre, H);
					for (j = 0; j < H; j++)
						h[j] = go[j] * pre[j];
				}
				if (Y) {
					int64_t yo = r.batch_first ?
						((b * seq + tt) * D + d) * H :
						((tt * D + d) * batch + b) * H;

					memcpy((float *)Y->data + yo, h,
					       (size_t)H * sizeof(float));
				}
			}
		}
		for (b = 0; b < batch; b++) {
			int64_t so = (r.batch_first ? b * D + d : d * batch + b) * H;

			if (YH)
				memcpy((float *)YH->data + so, m.h + b * H,
				       (size_t)H * sizeof(float));
			if (YC)
				memcpy((float *)YC->data + so, m.c + b * H,
				       (size_t)H * sizeof(float));
		}
	}
out:
	npu_rnn_buf_free(&m);
	return st;
}

#define RNN_DEF(sym, name, kind)					\
static npu_status sym##_compute(struct npu_op_ctx *ctx)			\
{									\
	return npu_rnn_compute(ctx, kind);				\
}									\
NPU_CPU_OP_DEF(sym) = {							\
	.op_type = name, .domain = "",					\
	.compute = sym##_compute,					\
};

RNN_DEF(rnn, "RNN", CELL_RNN)
RNN_DEF(gru, "GRU", CELL_GRU)
RNN_DEF(lstm, "LSTM", CELL_LSTM)
