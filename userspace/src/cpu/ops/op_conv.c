// SPDX-License-Identifier: MIT
/*
 * Conv and ConvTranspose, fp32, 1-D, 2-D and 3-D (3-D as direct loops,
 * ConvTranspose's in op_convt3d.c); float16 (and bfloat16 for Conv) widened
 * to float, double as direct double loops. Conv runs
 * on npu_conv2d_f32_prepacked (1-D as height 1) with its weights packed
 * once per plan in prepare(). ConvTranspose with stride == kernel (no
 * overlap) runs on npu_convtranspose2d_f32_tiled; any other is a GEMM per
 * group (W^T x X into columns) followed by a col2im scatter-add, split by
 * output channel over the pool.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/op_common.h"
#include "cpu/ops/op_convt3d.h"
#include "graph/schemas/conv.h"

/* ---- Conv ---- */

/*
 * FusedConv's epilogue from its attributes: 'activation' (Relu, Clip,
 * LeakyRelu, HardSigmoid, HardSwish, Sigmoid) with 'activation_params'
 * (Clip: min, max; LeakyRelu: alpha; HardSigmoid: alpha, beta), then
 * y = post_scale * y + post_shift when either is present.
 */
npu_status npu_fused_conv_epilogue(const struct npu_node *node,
				   struct npu_cpu_act_params *act,
				   struct npu_error *err)
{
	const char *kind = npu_node_attr_string_or(node, "activation", NULL);
	const struct npu_attr *ap = npu_node_attr(node, "activation_params");
	const struct npu_attr *ps = npu_node_attr(node, "post_scale");
	const struct npu_attr *pb = npu_node_attr(node, "post_shift");
	size_t want = 0, have = ap && ap->type == NPU_ATTR_FLOATS ? ap->count : 0;

	memset(act, 0, sizeof(*act));
	if (ap && ap->type != NPU_ATTR_FLOATS)
		return npu_op_invalid(err, node, "activation_params is not a list of floats");
	if (!kind) {
		act->kind = NPU_CPU_ACT_NONE;
	} else if (!strcmp(kind, "Relu")) {
		act->kind = NPU_CPU_ACT_RELU;
	} else if (!strcmp(kind, "Clip")) {
		act->kind = NPU_CPU_ACT_CLIP;
		want = 2;
	} else if (!strcmp(kind, "LeakyRelu")) {
		act->kind = NPU_CPU_ACT_LEAKY_RELU;
		want = 1;
	} else if (!strcmp(kind, "HardSigmoid")) {
		act->kind = NPU_CPU_ACT_HARD_SIGMOID;
		want = 2;
	} else if (!strcmp(kind, "HardSwish")) {
		act->kind = NPU_CPU_ACT_HARD_SWISH;
	} else if (!strcmp(kind, "Sigmoid")) {
		act->kind = NPU_CPU_ACT_SIGMOID;
	} else {
		return npu_op_unsupported(err, node, "activation '%s' has no fused form", kind);
	}
	if (have != want)
		return npu_op_invalid(err, node,
				      "activation %s takes %zu activation_params, not %zu",
				      kind ? kind : "(none)", want, have);
	if (act->kind == NPU_CPU_ACT_CLIP) {
		act->act_min = ap->floats[0];
		act->act_max = ap->floats[1];
	} else if (want) {
		act->alpha = ap->floats[0];
		act->beta = want > 1 ? ap->floats[1] : 0.0f;
	}
	if ((ps && ps->type != NPU_ATTR_FLOAT) || (pb && pb->type != NPU_ATTR_FLOAT))
		return npu_op_invalid(err, node, "post_scale / post_shift must be floats");
	act->post = ps || pb;
	act->post_scale = ps ? ps->f : 1.0f;
	act->post_shift = pb ? pb->f : 0.0f;
	return NPU_OK;
}

/*
 * Weights packed at plan time (constant W): the GEMM panels of
 * npu_conv2d_f32_prepacked, which depend only on W's shape and group.
 * Shared read-only by every session running the plan.
 */
struct npu_conv_state {
	int64_t wdims[4];	/* W's shape when packed (rank 3: k_h 1) */
	int64_t group;
	enum npu_conv_winograd winograd;	/* packed with Winograd's weights if allowed */
	float *packed;
};

/* The params that fix the packed layout, from W alone (spatial dims 1). */
static void npu_conv_weight_params(const int64_t *wd, int rank, int64_t group,
				   struct npu_conv2d_params *p)
{
	memset(p, 0, sizeof(*p));
	p->batch = 1;
	p->groups = (size_t)group;
	p->out_c = (size_t)wd[0];
	p->in_c = (size_t)(wd[1] * group);
	p->k_h = rank == 4 ? (size_t)wd[2] : 1;
	p->k_w = (size_t)wd[rank - 1];
	p->in_h = p->in_w = p->out_h = p->out_w = 1;
	p->stride_h = p->stride_w = p->dil_h = p->dil_w = 1;
}

static size_t npu_op_round_up_64(size_t n)
{
	return (n + 63) / 64 * 64;
}

int npu_conv_winograd_of(const struct npu_cpu_options *cpu)
{
	if (!cpu || cpu->winograd == NPU_CPU_AUTO)
		return NPU_CONV_WINOGRAD_AUTO;
	return cpu->winograd == NPU_CPU_OFF ? NPU_CONV_WINOGRAD_OFF : NPU_CONV_WINOGRAD_ALL;
}

static npu_status conv_prepare(const struct npu_op_def *def, struct npu_node *node,
			       const struct npu_cpu_options *cpu, struct npu_error *err)
{
	const struct npu_value *wv = node->num_inputs > 1 ? node->inputs[1] : NULL;
	const struct npu_tensor *w = wv ? wv->constant : NULL;
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	struct npu_conv2d_params p;
	struct npu_conv_state *st;
	size_t n;
	int i;

	(void)def;
	node->op_state = NULL;
	if (!w || w->dtype != NPU_DTYPE_FLOAT ||
	    (w->shape.rank != 3 && w->shape.rank != 4) || group < 1)
		return NPU_OK;	/* packed per call */
	for (i = 0; i < w->shape.rank; i++)
		if (w->shape.dims[i] <= 0)
			return NPU_OK;
	npu_conv_weight_params(w->shape.dims, w->shape.rank, group, &p);
	p.winograd = (enum npu_conv_winograd)npu_conv_winograd_of(cpu);
	n = npu_conv2d_f32_packed_floats(&p);
	if (!n)
		return NPU_OK;
	st = calloc(1, sizeof(*st));
	if (st)
		st->packed = aligned_alloc(64, npu_op_round_up_64(n * sizeof(float)));
	if (!st || !st->packed) {
		free(st);
		return npu_op_error(err, node, NPU_ERR_NO_MEMORY,
				    "out of memory (%zu bytes of packed weights)",
				    n * sizeof(float));
	}
	for (i = 0; i < w->shape.rank; i++)
		st->wdims[i] = w->shape.dims[i];
	st->group = group;
	st->winograd = p.winograd;
	npu_conv2d_f32_pack_weights(&p, w->data, st->packed, NULL);
	node->op_state = st;
	return NPU_OK;
}

static void conv_release(struct npu_node *node)
{
	struct npu_conv_state *st = node->op_state;

	if (st) {
		free(st->packed);
		free(st);
	}
	node->op_state = NULL;
}

/* 3-D convolution: a direct loop, one task per (image, output channel). */
struct conv3d_job {
	const struct npu_tensor *x, *w, *b;
	struct npu_tensor *y;
	const struct npu_window *win;
	int64_t group;
};

static void conv3d_task(void *arg, size_t task)
{
	const struct conv3d_job *j = arg;
	const int64_t *xd = j->x->shape.dims, *wd = j->w->shape.dims;
	const struct npu_window *win = j->win;
	int64_t m_total = wd[0], c_per = wd[1], m_per = m_total / j->group;
	int64_t n = (int64_t)task / m_total, m = (int64_t)task % m_total, g = m / m_per;
	int64_t od, oh, ow, c, kd, kh, kw;
	const float *x = j->x->data, *w = j->w->data;
	float *y = (float *)j->y->data +
		   (n * m_total + m) * win->out[0] * win->out[1] * win->out[2];
	float bias = j->b ? ((const float *)j->b->data)[m] : 0.0f;

	for (od = 0; od < win->out[0]; od++)
		for (oh = 0; oh < win->out[1]; oh++)
			for (ow = 0; ow < win->out[2]; ow++) {
				double acc = bias;

				for (c = 0; c < c_per; c++) {
					const float *xc = x + ((n * xd[1] + g * c_per + c) * xd[2]) *
							      xd[3] * xd[4];
					const float *wc = w + ((m * c_per + c) * wd[2]) * wd[3] * wd[4];

					for (kd = 0; kd < wd[2]; kd++) {
						int64_t id = od * win->stride[0] - win->pad_begin[0] +
							     kd * win->dil[0];

						if (id < 0 || id >= xd[2])
							continue;
						for (kh = 0; kh < wd[3]; kh++) {
							int64_t ih = oh * win->stride[1] - win->pad_begin[1] +
								     kh * win->dil[1];

							if (ih < 0 || ih >= xd[3])
								continue;
							for (kw = 0; kw < wd[4]; kw++) {
								int64_t iw = ow * win->stride[2] -
									     win->pad_begin[2] + kw * win->dil[2];

								if (iw < 0 || iw >= xd[4])
									continue;
								acc += (double)xc[(id * xd[3] + ih) * xd[4] + iw] *
								       wc[(kd * wd[3] + kh) * wd[4] + kw];
							}
						}
					}
				}
				y[(od * win->out[1] + oh) * win->out[2] + ow] = (float)acc;
			}
}

static npu_status conv3d_compute(struct npu_op_ctx *ctx)
{
	struct npu_window win;
	struct conv3d_job job = {
		.x = ctx->inputs[0], .w = ctx->inputs[1], .b = npu_op_in(ctx, 2),
		.y = ctx->outputs[0], .win = &win,
		.group = npu_node_attr_int_or(ctx->node, "group", 1),
	};
	npu_status st = npu_op_window(ctx->node, &job.x->shape, &job.w->shape.dims[2], 3, false,
				      &win, ctx->err);

	if (st != NPU_OK || !npu_op_numel(job.y))
		return st;
	npu_threadpool_run(ctx->pool, conv3d_task, &job,
			   (size_t)(job.x->shape.dims[0] * job.w->shape.dims[0]));
	return NPU_OK;
}

static npu_status conv_compute_common(struct npu_op_ctx *ctx, bool fused)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
	const struct npu_tensor *b = npu_op_in(ctx, 2);
	const struct npu_conv_state *st = node->op_state;
	const float *packed = NULL;
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_conv2d_params p;
	void *scratch = NULL;
	struct npu_window win;
	bool one_d = x->shape.rank == 3;
	npu_status st_;
	int i;

	if (x->shape.rank == 5)
		return conv3d_compute(ctx);
	st_ = npu_op_window(node, &x->shape, &w->shape.dims[2], x->shape.rank - 2,
			    false, &win, ctx->err);
	if (st_)
		return st_;
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	memset(&p, 0, sizeof(p));
	p.winograd = (enum npu_conv_winograd)npu_conv_winograd_of(ctx->cpu);	/* as prepare() packed */
	p.batch = (size_t)x->shape.dims[0];
	p.in_c = (size_t)x->shape.dims[1];
	p.out_c = (size_t)w->shape.dims[0];
	p.groups = (size_t)npu_node_attr_int_or(node, "group", 1);
	p.in_h = one_d ? 1 : (size_t)win.in[0];
	p.in_w = (size_t)win.in[one_d ? 0 : 1];
	p.out_h = one_d ? 1 : (size_t)win.out[0];
	p.out_w = (size_t)win.out[one_d ? 0 : 1];
	p.k_h = one_d ? 1 : (size_t)win.k[0];
	p.k_w = (size_t)win.k[one_d ? 0 : 1];
	p.stride_h = one_d ? 1 : (size_t)win.stride[0];
	p.stride_w = (size_t)win.stride[one_d ? 0 : 1];
	p.dil_h = one_d ? 1 : (size_t)win.dil[0];
	p.dil_w = (size_t)win.dil[one_d ? 0 : 1];
	p.pad_top = one_d ? 0 : (size_t)win.pad_begin[0];
	p.pad_left = (size_t)win.pad_begin[one_d ? 0 : 1];
	p.act.kind = NPU_CPU_ACT_NONE;
	if (fused) {
		const struct npu_tensor *z = npu_op_in(ctx, 3);

		st_ = npu_fused_conv_epilogue(node, &p.act, ctx->err);
		if (st_)
			return st_;
		p.residual = z ? z->data : NULL;
	}
	/* The packed weights, if prepare() packed this very W shape. */
	if (st && st->group == (int64_t)p.groups && st->winograd == p.winograd) {
		packed = st->packed;
		for (i = 0; i < w->shape.rank; i++)
			if (st->wdims[i] != w->shape.dims[i])
				packed = NULL;
	}
	/*
	 * With a pool, scratch NULL: the pool's, kept across calls (no page
	 * faults per run). Without one (constant folding), our own.
	 */
	if (!ctx->pool) {
		size_t size = npu_conv2d_f32_scratch_size(&p, 1);

		scratch = size ? malloc(size) : NULL;
		if (size && !scratch)
			return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
					    "out of memory (%zu bytes scratch)",
					    size);
	}
	if (!npu_conv2d_f32_prepacked(&p, x->data, w->data, packed,
				      b ? b->data : NULL, y->data, scratch, ctx->pool)) {
		free(scratch);
		return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
				    "out of memory for the convolution's working buffers");
	}
	free(scratch);
	return NPU_OK;
}

/*
 * Conv in double: the direct loop (1-D to 3-D, groups, strides, dilations,
 * pads); the fast kernels are float only, and double inputs stay exact.
 */
static npu_status conv_direct_f64(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
	const struct npu_tensor *b = npu_op_in(ctx, 2);
	const double *xv = x->data, *wv = w->data, *bv = b ? b->data : NULL;
	double *yv = ctx->outputs[0]->data;
	int64_t in[3] = { 1, 1, 1 }, out[3] = { 1, 1, 1 }, k[3] = { 1, 1, 1 };
	int64_t st[3] = { 1, 1, 1 }, dl[3] = { 1, 1, 1 }, pb[3] = { 0 };
	int64_t group = npu_node_attr_int_or(ctx->node, "group", 1);
	int64_t nb = x->shape.dims[0], cin = x->shape.dims[1], m = w->shape.dims[0];
	int64_t cg = cin / group, mg = m / group, in_sz, k_sz, yi = 0;
	int64_t bn, oc, c, o0, o1, o2, k0, k1, k2;
	struct npu_window win;
	npu_status s;
	int d, off;

	s = npu_op_window(ctx->node, &x->shape, &w->shape.dims[2], x->shape.rank - 2,
			  false, &win, ctx->err);
	if (s)
		return s;
	off = 3 - win.n;
	for (d = 0; d < win.n; d++) {	/* spatial dims right-aligned into three */
		in[off + d] = win.in[d];
		out[off + d] = win.out[d];
		k[off + d] = win.k[d];
		st[off + d] = win.stride[d];
		dl[off + d] = win.dil[d];
		pb[off + d] = win.pad_begin[d];
	}
	in_sz = in[0] * in[1] * in[2];
	k_sz = k[0] * k[1] * k[2];
	for (bn = 0; bn < nb; bn++)
		for (oc = 0; oc < m; oc++)
			for (o0 = 0; o0 < out[0]; o0++)
				for (o1 = 0; o1 < out[1]; o1++)
					for (o2 = 0; o2 < out[2]; o2++, yi++) {
						double sum = bv ? bv[oc] : 0;
						const double *xc = xv + (bn * cin + oc / mg * cg) * in_sz;

						for (c = 0; c < cg; c++)
						for (k0 = 0; k0 < k[0]; k0++)
						for (k1 = 0; k1 < k[1]; k1++)
						for (k2 = 0; k2 < k[2]; k2++) {
							int64_t i0 = o0 * st[0] - pb[0] + k0 * dl[0];
							int64_t i1 = o1 * st[1] - pb[1] + k1 * dl[1];
							int64_t i2 = o2 * st[2] - pb[2] + k2 * dl[2];

							if (i0 < 0 || i0 >= in[0] || i1 < 0 ||
							    i1 >= in[1] || i2 < 0 || i2 >= in[2])
								continue;
							sum += xc[c * in_sz + (i0 * in[1] + i1) * in[2] + i2] *
							       wv[(oc * cg + c) * k_sz +
								  (k0 * k[1] + k1) * k[2] + k2];
						}
						yv[yi] = sum;
					}
	return NPU_OK;
}

static npu_status conv_compute(struct npu_op_ctx *ctx)
{
	if (ctx->inputs[0]->dtype == NPU_DTYPE_DOUBLE)
		return conv_direct_f64(ctx);
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, conv_compute);
	return conv_compute_common(ctx, false);
}

static npu_status fused_conv_compute(struct npu_op_ctx *ctx)
{
	return conv_compute_common(ctx, true);
}

NPU_CPU_OP_DEF(conv) = {
	.op_type = "Conv", .domain = "", .prepare = conv_prepare,
	.release = conv_release, .compute = conv_compute,
};

/*
 * The CPU fusion pass's Conv (compiler/passes/pass_cpu_fuse.c): Conv's
 * inputs and attributes, an optional 4th input Z shaped as Y, and
 *   Y = post(act(conv(X, W) + B + Z))
 * computed in the convolution's output epilogue (see
 * npu_fused_conv_epilogue for the attributes).
 */
NPU_CPU_OP_DEF(fused_conv) = {
	.op_type = "FusedConv", .domain = NPU_CPU_FUSED_DOMAIN, .prepare = conv_prepare,
	.release = conv_release, .compute = fused_conv_compute,
};

/* ---- ConvTranspose ---- */

/* FusedConvTranspose: the node the CPU fusion pass made (see FusedConv). */
static bool convt_fused(const struct npu_node *node)
{
	return node->domain && !strcmp(node->domain, NPU_CPU_FUSED_DOMAIN);
}

/*
 * col2im of ConvTranspose: output plane mi (of one image and group) gets
 * every column row (mi, ki, kj) scattered and added, then its bias.
 */
struct npu_col2im_job {
	const float *col;
	float *y;
	int64_t in_h, in_w, out_h, out_w, k_h, k_w, s_h, s_w, d_h, d_w, p_t, p_l;
	const float *bias;
};

static void npu_col2im_planes(void *ctx, size_t begin, size_t end)
{
	const struct npu_col2im_job *j = ctx;
	int64_t hw = j->in_h * j->in_w, ohw = j->out_h * j->out_w;
	size_t mi;

	for (mi = begin; mi < end; mi++) {
		float *yo = j->y + (int64_t)mi * ohw;
		int64_t ki, kj, ih, iw, i;

		for (ki = 0; ki < j->k_h; ki++)
			for (kj = 0; kj < j->k_w; kj++) {
				const float *cr = j->col +
					(((int64_t)mi * j->k_h + ki) * j->k_w + kj) * hw;
				int64_t off = kj * j->d_w - j->p_l, lo = 0, hi = j->in_w;

				/* The input columns whose output column is inside. */
				while (lo < hi && lo * j->s_w + off < 0)
					lo++;
				while (hi > lo && (hi - 1) * j->s_w + off >= j->out_w)
					hi--;
				for (ih = 0; ih < j->in_h; ih++) {
					int64_t oh = ih * j->s_h - j->p_t + ki * j->d_h;
					const float *cri = cr + ih * j->in_w;
					float *yr;

					if (oh < 0 || oh >= j->out_h)
						continue;
					yr = yo + oh * j->out_w + off;
					for (iw = lo; iw < hi; iw++)
						yr[iw * j->s_w] += cri[iw];
				}
			}
		if (j->bias)
			for (i = 0; i < ohw; i++)
				yo[i] += j->bias[mi];
	}
}

/* FusedConvTranspose's activation / affine where the kernel has none. */
static npu_status convt_epilogue(const struct npu_cpu_act_params *act,
				 struct npu_tensor *y)
{
	if (act->kind != NPU_CPU_ACT_NONE || act->post)
		npu_vec_act_f32(act, y->data, y->data,
				(size_t)npu_op_numel(y));
	return NPU_OK;
}

/*
 * ConvTranspose in double: the direct scatter loop (1-D to 3-D, groups,
 * strides, dilations, pads); the fast kernels are float only, and double
 * inputs stay exact. Input element (c, i) adds x * W[c][m] at output
 * i * stride - pad_begin + k * dilation of each channel m of c's group.
 */
static npu_status convt_direct_f64(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
	const struct npu_tensor *b = npu_op_in(ctx, 2);
	struct npu_tensor *y = ctx->outputs[0];
	const double *xv = x->data, *wv = w->data, *bv = b ? b->data : NULL;
	double *yv = y->data;
	int64_t in[3] = { 1, 1, 1 }, out[3] = { 1, 1, 1 }, k[3] = { 1, 1, 1 };
	int64_t st[3] = { 1, 1, 1 }, dl[3] = { 1, 1, 1 }, pb[3] = { 0 };
	int64_t group = npu_node_attr_int_or(ctx->node, "group", 1);
	int64_t nb = x->shape.dims[0], cin = x->shape.dims[1], mg = w->shape.dims[1];
	int64_t cg = cin / group, m = mg * group, out_sz, k_sz, xi = 0;
	int64_t bn, c, oc, i0, i1, i2, k0, k1, k2, o;
	struct npu_convt_geom g;
	npu_status s;
	int d, off;

	s = npu_convt_geom(ctx->node, &x->shape, &w->shape, &g, ctx->err);
	if (s)
		return s;
	off = 3 - g.n;
	for (d = 0; d < g.n; d++) {	/* spatial dims right-aligned into three */
		in[off + d] = g.in[d];
		out[off + d] = g.out[d];
		k[off + d] = g.k[d];
		st[off + d] = g.stride[d];
		dl[off + d] = g.dil[d];
		pb[off + d] = g.pad_begin[d];
	}
	out_sz = out[0] * out[1] * out[2];
	k_sz = k[0] * k[1] * k[2];
	for (bn = 0; bn < nb; bn++)
		for (oc = 0; oc < m; oc++)
			for (o = 0; o < out_sz; o++)
				yv[(bn * m + oc) * out_sz + o] = bv ? bv[oc] : 0;
	for (bn = 0; bn < nb; bn++)
		for (c = 0; c < cin; c++)
			for (i0 = 0; i0 < in[0]; i0++)
			for (i1 = 0; i1 < in[1]; i1++)
			for (i2 = 0; i2 < in[2]; i2++, xi++) {
				double xe = xv[xi];
				int64_t oc0 = c / cg * mg, ml;

				for (ml = 0; ml < mg; ml++) {
					const double *wk = wv + (c * mg + ml) * k_sz;
					double *yc = yv + (bn * m + oc0 + ml) * out_sz;

					for (k0 = 0; k0 < k[0]; k0++)
					for (k1 = 0; k1 < k[1]; k1++)
					for (k2 = 0; k2 < k[2]; k2++) {
						int64_t o0 = i0 * st[0] - pb[0] + k0 * dl[0];
						int64_t o1 = i1 * st[1] - pb[1] + k1 * dl[1];
						int64_t o2 = i2 * st[2] - pb[2] + k2 * dl[2];

						if (o0 < 0 || o0 >= out[0] || o1 < 0 ||
						    o1 >= out[1] || o2 < 0 || o2 >= out[2])
							continue;
						yc[(o0 * out[1] + o1) * out[2] + o2] +=
							xe * wk[(k0 * k[1] + k1) * k[2] + k2];
					}
				}
			}
	return NPU_OK;
}

static npu_status convt_compute(struct npu_op_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
	const struct npu_tensor *b = npu_op_in(ctx, 2);
	struct npu_tensor *y = ctx->outputs[0];
	int64_t group = npu_node_attr_int_or(node, "group", 1);
	int64_t in_h, in_w, out_h, out_w, k_h, k_w, s_h, s_w, d_h, d_w, p_t, p_l;
	int64_t batch, c, cg, mg, m, hw, ohw, kk, nb, gi;
	struct npu_convt_geom g;
	struct npu_cpu_act_params act = { .kind = NPU_CPU_ACT_NONE };
	float *col, *yv = y->data;
	bool one_d = x->shape.rank == 3;
	npu_status st;

	/* float16 widened to float; double computed in double. */
	if (x->dtype == NPU_DTYPE_DOUBLE)
		return convt_direct_f64(ctx);
	if (npu_op_needs_widening(ctx, false))
		return npu_op_compute_widened(ctx, false, convt_compute);
	st = npu_convt_geom(node, &x->shape, &w->shape, &g, ctx->err);
	if (!st && convt_fused(node))
		st = npu_fused_conv_epilogue(node, &act, ctx->err);
	if (st)
		return st;
	batch = x->shape.dims[0];
	c = x->shape.dims[1];
	cg = c / group;
	mg = w->shape.dims[1];
	m = mg * group;
	in_h = one_d ? 1 : g.in[0];
	in_w = g.in[one_d ? 0 : 1];
	out_h = one_d ? 1 : g.out[0];
	out_w = g.out[one_d ? 0 : 1];
	k_h = one_d ? 1 : g.k[0];
	k_w = g.k[one_d ? 0 : 1];
	s_h = one_d ? 1 : g.stride[0];
	s_w = g.stride[one_d ? 0 : 1];
	d_h = one_d ? 1 : g.dil[0];
	d_w = g.dil[one_d ? 0 : 1];
	p_t = one_d ? 0 : g.pad_begin[0];
	p_l = g.pad_begin[one_d ? 0 : 1];
	hw = in_h * in_w;
	ohw = out_h * out_w;
	kk = k_h * k_w;
	if (npu_op_numel(y) == 0)
		return NPU_OK;
	if (g.n == 3) {
		struct npu_convt3d_params p = {
			.batch = batch, .in_c = c, .out_c = m, .groups = group,
		};
		int d;

		for (d = 0; d < 3; d++) {
			p.in[d] = g.in[d];
			p.out[d] = g.out[d];
			p.k[d] = g.k[d];
			p.stride[d] = g.stride[d];
			p.dil[d] = g.dil[d];
			p.pad_begin[d] = g.pad_begin[d];
		}
		npu_convt3d_f32(&p, x->data, w->data, b ? b->data : NULL, yv, ctx->pool);
		return convt_epilogue(&act, y);
	}
	if (s_h == k_h && s_w == k_w && d_h == 1 && d_w == 1 && !p_t && !p_l &&
	    out_h == in_h * k_h && out_w == in_w * k_w && cg > 0) {
		/* Non-overlapping tiles: multiply-add rows, no col2im. */
		struct npu_convt2d_params tp = {
			.batch = (size_t)batch, .in_c = (size_t)c,
			.in_h = (size_t)in_h, .in_w = (size_t)in_w,
			.out_c = (size_t)m, .k_h = (size_t)k_h, .k_w = (size_t)k_w,
			.groups = (size_t)group, .act = act,
		};

		if (!npu_convtranspose2d_f32_tiled(&tp, x->data, w->data,
						   b ? b->data : NULL, yv, ctx->pool))
			return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
					    "out of memory for the transposed convolution's rows");
		return NPU_OK;
	}
	memset(yv, 0, (size_t)npu_op_numel(y) * sizeof(float));
	col = malloc((size_t)(mg * kk * (hw ? hw : 1)) * sizeof(float));
	if (!col)
		return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY,
				    "out of memory");
	for (nb = 0; nb < batch; nb++)
		for (gi = 0; gi < group; gi++) {
			const float *xg = (const float *)x->data + (nb * c + gi * cg) * hw;
			const float *wg = (const float *)w->data + gi * cg * mg * kk;
			float *yg = yv + (nb * m + gi * mg) * ohw;

			/* col[mg * kk][hw] = W_g^T (cg x mg*kk)^T * X_g (cg x hw) */
			if (hw && cg)
				npu_sgemm(true, false, (size_t)(mg * kk), (size_t)hw,
					  (size_t)cg, 1.0f, wg, (size_t)(mg * kk), xg,
					  (size_t)hw, 0.0f, col, (size_t)hw, ctx->pool);
			else if (hw)
				memset(col, 0, (size_t)(mg * kk * hw) * sizeof(float));
			/* (hw == 0: nothing to scatter; the bias still applies.) */
			{
				struct npu_col2im_job job = {
					.col = col, .y = yg, .in_h = in_h, .in_w = in_w,
					.out_h = out_h, .out_w = out_w, .k_h = k_h, .k_w = k_w,
					.s_h = s_h, .s_w = s_w, .d_h = d_h, .d_w = d_w,
					.p_t = p_t, .p_l = p_l,
					.bias = b ? (const float *)b->data + gi * mg : NULL,
				};

				/* Output channels over the pool: disjoint planes. */
				npu_threadpool_parallel_for(ctx->pool, (size_t)mg,
							    1 + (size_t)(NPU_VEC_GRAIN / (kk * hw + 1)),
							    npu_col2im_planes, &job);
			}
		}
	free(col);
	return convt_epilogue(&act, y);
}

NPU_CPU_OP_DEF(conv_transpose) = {
	.op_type = "ConvTranspose", .domain = "", .compute = convt_compute,
};

/*
 * The CPU fusion pass's ConvTranspose: its inputs and attributes plus
 * FusedConv's activation / post affine attributes (no residual input).
 */
NPU_CPU_OP_DEF(fused_conv_transpose) = {
	.op_type = "FusedConvTranspose", .domain = NPU_CPU_FUSED_DOMAIN,
	.compute = convt_compute,
};
