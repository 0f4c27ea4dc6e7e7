// SPDX-License-Identifier: MIT
/*
 * Lowering: graph nodes to lops. Weights become per-output-channel
 * symmetric int8 in the NPU's [oc][kh][kw][ic] order, biases int32 in the
 * accumulator's scale, requantization fixed-point pairs exactly as
 * firmware-sim consumes them, fused activations a clamp or a LUT.
 */
#include "compiler/lower.h"
#include "compiler/pointwise.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHY(...) (snprintf(why, why_size, __VA_ARGS__), false)

static bool is_op(const struct npu_node *n, const char *op)
{
	return !n->domain[0] && !strcmp(n->op_type, op);
}

bool npu_lut_function_known(const char *op)
{
	static const char *const fns[] = {
		"Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish",
		"Sigmoid", "Tanh", "Erf",
	};
	size_t i;

	for (i = 0; op && i < sizeof(fns) / sizeof(fns[0]); i++)
		if (!strcmp(op, fns[i]))
			return true;
	return false;
}

enum npu_layout npu_value_layout(const struct npu_value *v)
{
	return v->shape.rank == 4 ? NPU_LAYOUT_NHWC : NPU_LAYOUT_ROWS;
}

void npu_value_act_dims(const struct npu_value *v, struct npu_act *act)
{
	const int64_t *d = v->shape.dims;

	memset(act, 0, sizeof(*act));
	if (npu_value_layout(v) == NPU_LAYOUT_NHWC) {
		act->n = (uint32_t)d[0];
		act->c = (uint32_t)d[1];
		act->h = (uint32_t)d[2];
		act->w = (uint32_t)d[3];
	} else {
		int64_t numel = npu_shape_numel(&v->shape);

		act->n = act->h = 1;
		act->c = v->shape.rank ? (uint32_t)d[v->shape.rank - 1] : 1;
		act->w = (uint32_t)(numel / (act->c ? act->c : 1));
	}
}

int npu_bcast_kind(const struct npu_value *a, const struct npu_value *b)
{
	int64_t numel = npu_shape_numel(&b->shape), channels;
	int i, axis;

	if (numel == 1)
		return NPU_BCAST_SCALAR;
	if (npu_value_layout(a) == NPU_LAYOUT_NHWC) {
		channels = a->shape.dims[1];
		axis = 1;
	} else {
		channels = a->shape.dims[a->shape.rank - 1];
		axis = a->shape.rank - 1;
	}
	if (numel != channels || b->shape.rank > a->shape.rank)
		return -1;
	/* Right-aligned: b's only non-1 dim must sit on a's channel axis. */
	for (i = 0; i < b->shape.rank; i++) {
		int a_axis = a->shape.rank - b->shape.rank + i;

		if (b->shape.dims[i] != 1 && a_axis != axis)
			return -1;
	}
	return NPU_BCAST_CHANNEL;
}

static bool ints_attr(const struct npu_node *n, const char *name, size_t count,
		      int64_t *out, int64_t fallback)
{
	const struct npu_attr *a = npu_node_attr(n, name);
	size_t i;

	for (i = 0; i < count; i++)
		out[i] = fallback;
	if (!a)
		return true;
	if (a->type != NPU_ATTR_INTS || a->count != count)
		return false;
	for (i = 0; i < count; i++)
		out[i] = a->ints[i];
	return true;
}

bool npu_conv_geometry(const struct npu_graph *g, const struct npu_node *n,
		       struct npu_conv_geom *geo, char *why, size_t why_size)
{
	const struct npu_value *x = n->inputs[0], *y = n->outputs[0];
	const struct npu_value *w = n->num_inputs > 1 ? n->inputs[1] : NULL;
	bool conv = is_op(n, "Conv"), global = is_op(n, "GlobalAveragePool");
	const char *auto_pad = npu_node_attr_string_or(n, "auto_pad", "NOTSET");
	int64_t k[2], s[2], d[2], p[4];
	int64_t in[2], out[2], ext, need, i;

	(void)g;
	memset(geo, 0, sizeof(*geo));
	if (x->shape.rank != 4 || y->shape.rank != 4)
		return WHY("only 2-D (rank-4 NCHW) tensors have an NPU form");
	geo->n = (uint32_t)x->shape.dims[0];
	geo->c = (uint32_t)x->shape.dims[1];
	in[0] = x->shape.dims[2];
	in[1] = x->shape.dims[3];
	geo->oc = (uint32_t)y->shape.dims[1];
	out[0] = y->shape.dims[2];
	out[1] = y->shape.dims[3];
	geo->groups = 1;
	if (conv) {
		if (!w || !w->constant || w->dtype != NPU_DTYPE_FLOAT || w->shape.rank != 4)
			return WHY("weights are not a constant rank-4 float tensor");
		if (n->num_inputs > 2 && n->inputs[2] &&
		    (!n->inputs[2]->constant || n->inputs[2]->dtype != NPU_DTYPE_FLOAT))
			return WHY("bias is not a constant float tensor");
		geo->groups = (uint32_t)npu_node_attr_int_or(n, "group", 1);
		k[0] = w->shape.dims[2];
		k[1] = w->shape.dims[3];
		if (!geo->groups || geo->c % geo->groups || geo->oc % geo->groups ||
		    w->shape.dims[1] * geo->groups != geo->c)
			return WHY("group=%u does not divide the channels", geo->groups);
	} else if (global) {
		k[0] = in[0];
		k[1] = in[1];
		geo->oc = geo->c;
	} else {
		geo->oc = geo->c;
		if (!ints_attr(n, "kernel_shape", 2, k, 0) || !k[0])
			return WHY("attribute kernel_shape is not 2 ints");
		if (npu_node_attr_int_or(n, "ceil_mode", 0) && is_op(n, "AveragePool") &&
		    npu_node_attr_int_or(n, "count_include_pad", 0))
			return WHY("ceil_mode with count_include_pad has no NPU form");
		geo->count_include_pad = npu_node_attr_int_or(n, "count_include_pad", 0);
	}
	if (!ints_attr(n, "strides", 2, s, 1) || !ints_attr(n, "dilations", 2, d, 1) ||
	    !ints_attr(n, "pads", 4, p, 0))
		return WHY("attributes strides / dilations / pads are not 2, 2 and 4 ints");
	if (!conv && (d[0] != 1 || d[1] != 1))
		return WHY("pooling dilations have no NPU form");
	for (i = 0; i < 2; i++) {
		ext = d[i] * (k[i] - 1) + 1;
		if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID")) {
			int64_t total = (out[i] - 1) * s[i] + ext - in[i];

			total = total < 0 ? 0 : total;
			p[i] = !strcmp(auto_pad, "SAME_LOWER") ? total - total / 2 : total / 2;
			p[i + 2] = total - p[i];
		} else if (!strcmp(auto_pad, "VALID")) {
			p[i] = p[i + 2] = 0;
		}
		/* The ISA takes exact pads: derive the far side from the output. */
		need = (out[i] - 1) * s[i] + ext;
		if (in[i] + p[i] + p[i + 2] < need)
			p[i + 2] = need - in[i] - p[i];	/* ceil_mode rows */
		else if ((in[i] + p[i] + p[i + 2] - ext) / s[i] + 1 != out[i])
			return WHY("output size %lld does not follow from the attributes",
				   (long long)out[i]);
		if (k[i] < 1 || k[i] > 255 || s[i] < 1 || s[i] > 255 || d[i] < 1 || d[i] > 255)
			return WHY("kernel %lld, stride %lld or dilation %lld outside 1..255",
				   (long long)k[i], (long long)s[i], (long long)d[i]);
		if (p[i] < 0 || p[i] > 255 || p[i + 2] < 0 || p[i + 2] > 255)
			return WHY("padding outside 0..255");
		if (p[i] >= ext || (out[i] - 1) * s[i] - p[i] >= in[i])
			return WHY("padding wider than the kernel window");
	}
	if (in[0] > 65535 || in[1] > 65535 || geo->c > 65535 || geo->oc > 65535)
		return WHY("a dimension exceeds the ISA's 16-bit fields");
	geo->h = (uint32_t)in[0];
	geo->w = (uint32_t)in[1];
	geo->oh = (uint32_t)out[0];
	geo->ow = (uint32_t)out[1];
	geo->k_h = (uint32_t)k[0];
	geo->k_w = (uint32_t)k[1];
	geo->stride_h = (uint32_t)s[0];
	geo->stride_w = (uint32_t)s[1];
	geo->dil_h = (uint32_t)d[0];
	geo->dil_w = (uint32_t)d[1];
	geo->pad_top = (uint32_t)p[0];
	geo->pad_left = (uint32_t)p[1];
	geo->pad_bottom = (uint32_t)p[2];
	geo->pad_right = (uint32_t)p[3];
	return true;
}

/* ---- Segment building blocks ---- */

static void *seg_own(struct npu_segment *seg, size_t bytes)
{
	void *p = calloc(1, bytes ? bytes : 1);

	if (!p)
		return NULL;
	if (seg->num_owned == seg->cap_owned) {
		size_t cap = seg->cap_owned ? seg->cap_owned * 2 : 32;
		void **o = realloc(seg->owned, cap * sizeof(*o));

		if (!o) {
			free(p);
			return NULL;
		}
		seg->owned = o;
		seg->cap_owned = cap;
	}
	seg->owned[seg->num_owned++] = p;
	return p;
}

static const struct npu_qparams *value_q(const struct npu_lower_ctx *lc,
					 const struct npu_value *v)
{
	if (!v || v->index >= lc->qmap->count || !lc->qmap->set[v->index])
		return NULL;
	return &lc->qmap->q[v->index];
}

int npu_lower_act(struct npu_lower_ctx *lc, struct npu_value *v)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	const struct npu_qparams *q = value_q(lc, v);
	struct npu_act *acts;

	if (lc->act_of[v->index])
		return (int)lc->act_of[v->index] - 1;
	if (!q)
		return -1;
	acts = realloc(prog->acts, (prog->num_acts + 1) * sizeof(*acts));
	if (!acts)
		return -1;
	prog->acts = acts;
	npu_value_act_dims(v, &acts[prog->num_acts]);
	acts[prog->num_acts].q = *q;
	lc->act_of[v->index] = (uint32_t)++prog->num_acts;
	return (int)prog->num_acts - 1;
}

static struct npu_lop *new_lop(struct npu_lower_ctx *lc, enum npu_lop_kind kind,
			       const struct npu_node *n)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	struct npu_lop *lops = realloc(prog->lops, (prog->num_lops + 1) * sizeof(*lops));
	char *name;

	if (!lops)
		return NULL;
	prog->lops = lops;
	memset(&lops[prog->num_lops], 0, sizeof(lops[0]));
	lops[prog->num_lops].kind = kind;
	/* The node goes away when the segment replaces it: keep its name. */
	name = seg_own(lc->seg, strlen(n->name) + 1);
	if (!name)
		return NULL;
	memcpy(name, n->name, strlen(n->name) + 1);
	lops[prog->num_lops].name = name;
	return &lops[prog->num_lops++];
}

bool npu_pre_activation_qparams(const struct npu_lower_ctx *lc,
				const struct npu_node *n, struct npu_qparams *q)
{
	const char *pre = npu_node_attr_string_or(n, "npu_pre_activation", NULL);
	const struct npu_value *v = pre ? npu_graph_find_value(lc->graph, pre) : NULL;
	float lo, hi;

	if (!v || v->index >= lc->calib->num_values || !lc->calib->seen[v->index])
		return false;
	npu_calib_range(&lc->calib->stats[v->index], lc->opts->calib_method,
			lc->opts->percentile, &lo, &hi);
	*q = npu_qparams_from_range(lo, hi);
	return true;
}

/*
 * Output stage of a MAC or eltwise op: clamp bounds for Relu / Clip, or a
 * LUT from the pre-activation domain for the rest. 'out_scale' gets the
 * scale the requantization must target.
 */
static bool output_stage(struct npu_lower_ctx *lc, const struct npu_node *n,
			 const struct npu_qparams *out, int8_t *act_min,
			 int8_t *act_max, const int8_t **lut, int16_t *pre_zp,
			 struct npu_qparams *target, char *why, size_t why_size)
{
	struct npu_act_fn fn;

	*act_min = -128;
	*act_max = 127;
	*lut = NULL;
	*pre_zp = 0;
	*target = *out;
	if (!npu_node_activation(n, &fn))
		return true;
	if (!strcmp(fn.op, "Relu") || !strcmp(fn.op, "Clip")) {
		if (fn.min > -FLT_MAX)
			*act_min = npu_quantize_value(fn.min, *out);
		if (fn.max < FLT_MAX)
			*act_max = npu_quantize_value(fn.max, *out);
		if (*act_min > *act_max)
			return WHY("clip bounds collapse after quantization");
		return true;
	}
	if (!npu_pre_activation_qparams(lc, n, target))
		return WHY("no calibration range for the value before %s", fn.op);
	{
		int8_t *table = seg_own(lc->seg, 256);
		struct npu_error err = { 0 };

		if (!table)
			return WHY("out of memory");
		if (npu_fused_activation_table(n, *target, *out, table, &err))
			return WHY("%s", err.msg);
		*lut = table;
		*pre_zp = (int16_t)target->zero_point;
	}
	return true;
}

/* Per-channel requantization arrays for 'oc' channels of weight scales. */
static bool requant_arrays(struct npu_lower_ctx *lc, uint32_t oc, float in_scale,
			   const float *w_scale, const struct npu_qparams *target,
			   const float *bias, float bias_mul, struct npu_lop_quant *q,
			   char *why, size_t why_size)
{
	int32_t *mult = seg_own(lc->seg, oc * sizeof(*mult));
	uint8_t *shift = seg_own(lc->seg, oc);
	int32_t *b = bias ? seg_own(lc->seg, oc * sizeof(*b)) : NULL;
	uint32_t c;

	if (!mult || !shift || (bias && !b))
		return WHY("out of memory");
	for (c = 0; c < oc; c++) {
		struct npu_requant rq;
		double real = (double)in_scale * w_scale[c] / target->scale;

		if (!npu_requant_from_real(real, &rq))
			return WHY("requantization multiplier %g of channel %u out of range", real, c);
		mult[c] = rq.mult;
		shift[c] = rq.shift;
		if (b)
			b[c] = npu_quantize_bias(bias[c] * bias_mul, in_scale, w_scale[c]);
	}
	q->mult = mult;
	q->shift = shift;
	q->bias = b;
	return true;
}

static bool lower_conv(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		       size_t why_size)
{
	struct npu_conv_geom geo;
	const struct npu_value *wv = n->inputs[1];
	const float *w = wv->constant->data;
	const float *bias = n->num_inputs > 2 && n->inputs[2] ? n->inputs[2]->constant->data : NULL;
	const struct npu_qparams *qin = value_q(lc, n->inputs[0]), *qout = value_q(lc, n->outputs[0]);
	struct npu_qparams target;
	uint32_t per, oc, ic, kh, kw;
	int8_t *wq, *wnhwc;
	float *scales;
	struct npu_lop *l;
	int in, out;

	if (!npu_conv_geometry(lc->graph, n, &geo, why, why_size))
		return false;
	if (!qin || !qout)
		return WHY("no quantization parameters (not calibrated)");
	per = geo.c / geo.groups * geo.k_h * geo.k_w;
	wq = seg_own(lc->seg, (size_t)geo.oc * per);
	wnhwc = seg_own(lc->seg, (size_t)geo.oc * per);
	scales = seg_own(lc->seg, geo.oc * sizeof(*scales));
	if (!wq || !wnhwc || !scales)
		return WHY("out of memory");
	npu_quantize_weights_per_channel(w, geo.oc, per, wq, scales);
	/* [oc][ic][kh][kw] -> [oc][kh][kw][ic] */
	for (oc = 0; oc < geo.oc; oc++)
		for (ic = 0; ic < geo.c / geo.groups; ic++)
			for (kh = 0; kh < geo.k_h; kh++)
				for (kw = 0; kw < geo.k_w; kw++)
					wnhwc[(((size_t)oc * geo.k_h + kh) * geo.k_w + kw) * (geo.c / geo.groups) + ic] =
						wq[(((size_t)oc * (geo.c / geo.groups) + ic) * geo.k_h + kh) * geo.k_w + kw];
	in = npu_lower_act(lc, n->inputs[0]);
	out = npu_lower_act(lc, n->outputs[0]);
	l = in < 0 || out < 0 ? NULL : new_lop(lc, NPU_LOP_CONV, n);
	if (!l)
		return WHY("out of memory");
	l->in = (uint32_t)in;
	l->out = (uint32_t)out;
	l->conv.weight = wnhwc;
	l->conv.k_h = (uint8_t)geo.k_h;
	l->conv.k_w = (uint8_t)geo.k_w;
	l->conv.stride_h = (uint8_t)geo.stride_h;
	l->conv.stride_w = (uint8_t)geo.stride_w;
	l->conv.dil_h = (uint8_t)geo.dil_h;
	l->conv.dil_w = (uint8_t)geo.dil_w;
	l->conv.pad_top = (uint8_t)geo.pad_top;
	l->conv.pad_left = (uint8_t)geo.pad_left;
	l->conv.pad_bottom = (uint8_t)geo.pad_bottom;
	l->conv.pad_right = (uint8_t)geo.pad_right;
	l->conv.groups = (uint16_t)geo.groups;
	if (!output_stage(lc, n, qout, &l->conv.q.act_min, &l->conv.q.act_max, &l->conv.q.lut,
			  &l->conv.q.pre_act_zp, &target, why, why_size))
		goto undo;
	if (!requant_arrays(lc, geo.oc, qin->scale, scales, &target, bias, 1.0f, &l->conv.q,
			    why, why_size))
		goto undo;
	return true;
undo:
	lc->seg->prog.num_lops--;
	return false;
}

static bool lower_gemm(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		       size_t why_size)
{
	const struct npu_value *a = n->inputs[0], *bv = n->inputs[1];
	const struct npu_value *cv = n->num_inputs > 2 ? n->inputs[2] : NULL;
	bool gemm = is_op(n, "Gemm"), trans_b = gemm && npu_node_attr_int_or(n, "transB", 0);
	float alpha = gemm ? npu_node_attr_float_or(n, "alpha", 1.0f) : 1.0f;
	float beta = gemm ? npu_node_attr_float_or(n, "beta", 1.0f) : 1.0f;
	const struct npu_qparams *qin = value_q(lc, a), *qout = value_q(lc, n->outputs[0]);
	const float *b = bv->constant->data;
	uint32_t k = (uint32_t)a->shape.dims[a->shape.rank - 1];
	uint32_t cols = (uint32_t)(trans_b ? bv->shape.dims[0] : bv->shape.dims[1]);
	struct npu_qparams target;
	float *wt, *scales, *bias = NULL;
	int8_t *wq;
	struct npu_lop *l;
	uint32_t r, c;
	int in, out;

	if (!qin || !qout)
		return WHY("no quantization parameters (not calibrated)");
	wt = malloc((size_t)cols * k * sizeof(*wt));
	wq = seg_own(lc->seg, (size_t)cols * k);
	scales = seg_own(lc->seg, cols * sizeof(*scales));
	if (cv)
		bias = seg_own(lc->seg, cols * sizeof(*bias));
	if (!wt || !wq || !scales || (cv && !bias)) {
		free(wt);
		return WHY("out of memory");
	}
	for (c = 0; c < cols; c++)	/* W[n][k] = alpha * B^T */
		for (r = 0; r < k; r++)
			wt[(size_t)c * k + r] = alpha * (trans_b ? b[(size_t)c * k + r] : b[(size_t)r * cols + c]);
	npu_quantize_weights_per_channel(wt, cols, k, wq, scales);
	free(wt);
	if (cv) {
		const float *cd = cv->constant->data;
		bool scalar = npu_shape_numel(&cv->shape) == 1;

		for (c = 0; c < cols; c++)
			bias[c] = beta * cd[scalar ? 0 : c];
	}
	in = npu_lower_act(lc, n->inputs[0]);
	out = npu_lower_act(lc, n->outputs[0]);
	l = in < 0 || out < 0 ? NULL : new_lop(lc, NPU_LOP_MATMUL, n);
	if (!l)
		return WHY("out of memory");
	l->in = (uint32_t)in;
	l->out = (uint32_t)out;
	l->matmul.weight = wq;
	if (!output_stage(lc, n, qout, &l->matmul.q.act_min, &l->matmul.q.act_max,
			  &l->matmul.q.lut, &l->matmul.q.pre_act_zp, &target, why, why_size) ||
	    !requant_arrays(lc, cols, qin->scale, scales, &target, bias, 1.0f, &l->matmul.q,
			    why, why_size)) {
		lc->seg->prog.num_lops--;
		return false;
	}
	return true;
}

static bool lower_pool(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		       size_t why_size)
{
	const struct npu_qparams *qin = value_q(lc, n->inputs[0]), *qout = value_q(lc, n->outputs[0]);
	struct npu_conv_geom geo;
	struct npu_lop *l;
	int in, out;

	if (!npu_conv_geometry(lc->graph, n, &geo, why, why_size))
		return false;
	if (!qin || !qout || qin->scale != qout->scale)
		return WHY("pooling needs equal input and output scales");
	in = npu_lower_act(lc, n->inputs[0]);
	out = npu_lower_act(lc, n->outputs[0]);
	l = in < 0 || out < 0 ? NULL : new_lop(lc, NPU_LOP_POOL, n);
	if (!l)
		return WHY("out of memory");
	l->in = (uint32_t)in;
	l->out = (uint32_t)out;
	l->pool.mode = is_op(n, "MaxPool") ? NPU_POOL_MAX : NPU_POOL_AVG;
	l->pool.flags = geo.count_include_pad ? NPU_POOL_COUNT_PAD : 0;
	l->pool.k_h = (uint8_t)geo.k_h;
	l->pool.k_w = (uint8_t)geo.k_w;
	l->pool.stride_h = (uint8_t)geo.stride_h;
	l->pool.stride_w = (uint8_t)geo.stride_w;
	l->pool.pad_top = (uint8_t)geo.pad_top;
	l->pool.pad_left = (uint8_t)geo.pad_left;
	l->pool.pad_bottom = (uint8_t)geo.pad_bottom;
	l->pool.pad_right = (uint8_t)geo.pad_right;
	l->pool.act_min = -128;
	l->pool.act_max = 127;
	return true;
}

/* The constant operand of an eltwise op, quantized with its own range. */
static const int8_t *quantize_const(struct npu_lower_ctx *lc, const struct npu_value *b,
				    struct npu_qparams *q, uint32_t *count)
{
	const float *d = b->constant->data;
	int64_t n = npu_shape_numel(&b->shape), i;
	float lo = FLT_MAX, hi = -FLT_MAX;
	int8_t *out = seg_own(lc->seg, (size_t)n);

	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		lo = fminf(lo, d[i]);
		hi = fmaxf(hi, d[i]);
	}
	*q = npu_qparams_from_range(lo, hi);
	for (i = 0; i < n; i++)
		out[i] = npu_quantize_value(d[i], *q);
	*count = (uint32_t)n;
	return out;
}

static bool lower_binary(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
			 size_t why_size)
{
	struct npu_value *a = n->inputs[0], *b = n->inputs[1];
	const struct npu_qparams *qout = value_q(lc, n->outputs[0]), *qa, *qb;
	struct npu_qparams target, bconst_q;
	bool add = is_op(n, "Add");
	struct npu_lop *l;
	int ia, ib = 0, out;

	if (a->constant || (!b->constant && npu_shape_numel(&a->shape) < npu_shape_numel(&b->shape))) {
		struct npu_value *t = a;

		a = b;
		b = t;
	}
	qa = value_q(lc, a);
	if (!qa || !qout)
		return WHY("no quantization parameters (not calibrated)");
	ia = npu_lower_act(lc, a);
	if (!b->constant)
		ib = npu_lower_act(lc, b);
	out = npu_lower_act(lc, n->outputs[0]);
	l = ia < 0 || ib < 0 || out < 0 ? NULL : new_lop(lc, NPU_LOP_ELTWISE, n);
	if (!l)
		return WHY("out of memory");
	l->in = (uint32_t)ia;
	l->in2 = (uint32_t)ib;
	l->out = (uint32_t)out;
	l->elt.mode = add ? NPU_ELT_ADD : NPU_ELT_MUL;
	l->elt.bcast = NPU_BCAST_NONE;
	if (b->constant) {
		l->elt.b_const = quantize_const(lc, b, &bconst_q, &l->elt.b_count);
		if (!l->elt.b_const)
			goto fail_oom;
		l->elt.bcast = (uint8_t)npu_bcast_kind(a, b);
		l->elt.zp_b = (int16_t)bconst_q.zero_point;
		qb = &bconst_q;
	} else {
		qb = value_q(lc, b);
		if (!qb)
			goto fail_q;
		if (npu_shape_numel(&b->shape) != npu_shape_numel(&a->shape)) {
			l->elt.bcast = (uint8_t)npu_bcast_kind(a, b);
			l->elt.b_count = (uint32_t)npu_shape_numel(&b->shape);
		}
	}
	if (!output_stage(lc, n, qout, &l->elt.act_min, &l->elt.act_max, &l->elt.lut,
			  &l->elt.pre_act_zp, &target, why, why_size))
		goto fail;
	if (add) {
		double ra = qa->scale / target.scale, rb = qb->scale / target.scale;
		double r = ra > rb ? ra : rb;
		int shift = (int)floor(log2((double)(1 << 30) / r));

		if (shift > 62)
			shift = 62;
		if (shift < 1) {
			snprintf(why, why_size, "input/output scale ratio %g too large", r);
			goto fail;
		}
		l->elt.shift = (uint8_t)shift;
		l->elt.mult_a = (int32_t)llround(ldexp(ra, shift));
		l->elt.mult_b = (int32_t)llround(ldexp(rb, shift));
	} else {
		struct npu_requant rq;
		double real = (double)qa->scale * qb->scale / target.scale;

		if (!npu_requant_from_real(real, &rq)) {
			snprintf(why, why_size, "requantization multiplier %g out of range", real);
			goto fail;
		}
		l->elt.mult_a = rq.mult;
		l->elt.shift = rq.shift;
	}
	return true;
fail_q:
	snprintf(why, why_size, "no quantization parameters (not calibrated)");
	goto fail;
fail_oom:
	snprintf(why, why_size, "out of memory");
fail:
	lc->seg->prog.num_lops--;
	return false;
}

/* A standalone activation is a one-node pointwise group: one LUT. */
static bool lower_lut(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		      size_t why_size)
{
	struct npu_node *nodes[1] = { n };
	struct npu_pw_group one = {
		.nodes = nodes, .count = 1, .x = n->inputs[0], .y = n->outputs[0],
	};

	if (!npu_lut_function_known(n->op_type))
		return WHY("op not in the NPU ISA");
	return npu_lower_pointwise(lc, &one, why, why_size);
}

bool npu_lower_pointwise(struct npu_lower_ctx *lc, const struct npu_pw_group *grp,
			 char *why, size_t why_size)
{
	const struct npu_qparams *qin = value_q(lc, grp->x), *qout = value_q(lc, grp->y);
	struct npu_error err = { 0 };
	struct npu_lop *l;
	int8_t *table;
	int in, out;

	if (!qin || !qout)
		return WHY("no quantization parameters (not calibrated)");
	table = seg_own(lc->seg, 256);
	if (!table)
		return WHY("out of memory");
	if (npu_pointwise_table(grp, *qin, *qout, table, &err) != NPU_OK)
		return WHY("%s", err.msg);
	in = npu_lower_act(lc, grp->x);
	out = npu_lower_act(lc, grp->y);
	l = in < 0 || out < 0 ? NULL : new_lop(lc, NPU_LOP_LUT, grp->y->producer);
	if (!l)
		return WHY("out of memory");
	l->in = (uint32_t)in;
	l->out = (uint32_t)out;
	l->lut.table = table;
	return true;
}

bool npu_lower_node(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		    size_t why_size)
{
	if (is_op(n, "Conv"))
		return lower_conv(lc, n, why, why_size);
	if (is_op(n, "Gemm") || is_op(n, "MatMul"))
		return lower_gemm(lc, n, why, why_size);
	if (is_op(n, "MaxPool") || is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool"))
		return lower_pool(lc, n, why, why_size);
	if (is_op(n, "Add") || is_op(n, "Mul"))
		return lower_binary(lc, n, why, why_size);
	return lower_lut(lc, n, why, why_size);
}
