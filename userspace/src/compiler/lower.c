// SPDX-License-Identifier: MIT
/*
 * Lowering: graph nodes to lops. Weights become per-output-channel
 * symmetric int8 in the NPU's [oc][kh][kw][ic] order, biases int32 in the
 * accumulator's scale, requantization fixed-point pairs exactly as
 * firmware-sim consumes them, fused activations a clamp or a LUT.
 */
#include "compiler/lower.h"
#include "compiler/pointwise.h"
#include "compiler/codegen.h"

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

bool npu_is_data_movement(const struct npu_node *n)
{
	static const char *const ops[] = {
		"Concat", "Split", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
		"Transpose", "Slice",
	};
	size_t i;

	for (i = 0; !n->domain[0] && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(n->op_type, ops[i]))
			return true;
	return false;
}

static bool is_reduce(const struct npu_node *n)
{
	return is_op(n, "ReduceMean") || is_op(n, "ReduceMax") || is_op(n, "ReduceSum");
}

bool npu_rows_op(const struct npu_node *n)
{
	return is_op(n, "Softmax") || is_op(n, "LayerNormalization") || is_reduce(n);
}

/* A reduction's one axis (attribute, or constant input from opset 13/18). */
static bool reduce_axis(const struct npu_node *n, int64_t *axis)
{
	const struct npu_attr *a = npu_node_attr(n, "axes");
	const struct npu_value *v = n->num_inputs > 1 ? n->inputs[1] : NULL;

	if (a)
		return a->type == NPU_ATTR_INTS && a->count == 1 && (*axis = a->ints[0], true);
	if (!v || !v->constant || v->constant->dtype != NPU_DTYPE_INT64 ||
	    npu_shape_numel(&v->shape) != 1)
		return false;
	*axis = ((const int64_t *)v->constant->data)[0];
	return true;
}

bool npu_rows_op_geometry(const struct npu_node *n, char *why, size_t why_size)
{
	const struct npu_value *x = n->inputs[0];
	int rank = x->shape.rank;
	int64_t axis, c;
	int k;

	if (rank < 1 || npu_value_layout(x) == NPU_LAYOUT_NHWC ||
	    npu_value_layout(n->outputs[0]) == NPU_LAYOUT_NHWC)
		return WHY("rank-%d input: the NPU keeps it as NHWC, so the rows %s "
			   "reduces are not contiguous", rank, n->op_type);
	if (is_reduce(n)) {
		if (!reduce_axis(n, &axis))
			return WHY("not a reduction over exactly one constant axis");
	} else {
		/* Softmax before opset 13 flattens at 'axis' (default 1): the
		 * same rows exactly when that axis is the last. */
		axis = npu_node_attr_int_or(n, "axis",
					    is_op(n, "Softmax") && n->opset < 13 ? 1 : -1);
	}
	if (axis < 0)
		axis += rank;
	if (axis != rank - 1)
		return WHY("axis %lld is not the last axis", (long long)axis);
	c = x->shape.dims[rank - 1];
	if (c < 1 || c > 65535)
		return WHY("last axis of %lld elements is outside 1..65535", (long long)c);
	if (is_op(n, "LayerNormalization")) {
		if (n->num_outputs > 1 && (n->outputs[1] || (n->num_outputs > 2 && n->outputs[2])))
			return WHY("Mean / InvStdDev outputs have no NPU form");
		for (k = 1; k < 3; k++) {
			const struct npu_value *v = k < (int)n->num_inputs ? n->inputs[k] : NULL;

			if (k == 2 && !v)
				continue;
			if (!v || !v->constant || v->dtype != NPU_DTYPE_FLOAT ||
			    npu_shape_numel(&v->shape) != c)
				return WHY("%s is not a constant of %lld floats",
					   k == 1 ? "scale" : "bias", (long long)c);
		}
	}
	return true;
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

/* A node the NPU runs the same whichever order a rank-4 value it reads
 * or writes is stored in (its lowering asks npu_value_layout()). */
static bool layout_free_use(const struct npu_node *n)
{
	size_t i;

	if (n->domain[0])
		return false;
	if (npu_rows_op(n) || is_op(n, "Transpose") || is_op(n, "Slice") ||
	    is_op(n, "Reshape") || is_op(n, "Flatten") || is_op(n, "Squeeze") ||
	    is_op(n, "Unsqueeze") || is_op(n, "Identity"))
		return true;
	if (is_op(n, "MatMul"))		/* of two activations */
		return n->num_inputs == 2 && n->inputs[0] && n->inputs[1] &&
		       !n->inputs[0]->constant && !n->inputs[1]->constant;
	if (is_op(n, "Add") || is_op(n, "Mul")) {	/* by a scalar constant */
		size_t acts = 0;

		for (i = 0; i < n->num_inputs; i++)
			acts += n->inputs[i] && !(n->inputs[i]->constant &&
						  npu_shape_numel(&n->inputs[i]->shape) == 1);
		return n->num_inputs == 2 && acts == 1;
	}
	return false;
}

void npu_mark_rows_layout(struct npu_graph *g)
{
	size_t i, j, k;

	for (i = 0; i < g->num_values; i++) {
		struct npu_value *v = g->values[i];
		bool ok;

		v->rows_layout = false;
		if (v->shape.rank != 4 || v->constant || v->is_graph_input ||
		    v->is_graph_output || !v->producer || !layout_free_use(v->producer))
			continue;
		ok = true;
		for (j = 0; ok && j < g->num_nodes; j++)
			for (k = 0; ok && k < g->nodes[j]->num_inputs; k++)
				if (g->nodes[j]->inputs[k] == v)
					ok = layout_free_use(g->nodes[j]);
		v->rows_layout = ok;
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

bool npu_conv_transpose_geometry(const struct npu_graph *g, const struct npu_node *n,
				 struct npu_conv_geom *geo, char *why, size_t why_size)
{
	const struct npu_value *x = n->inputs[0], *y = n->outputs[0];
	const struct npu_value *w = n->num_inputs > 1 ? n->inputs[1] : NULL;
	const char *auto_pad = npu_node_attr_string_or(n, "auto_pad", "NOTSET");
	int64_t k[2], s[2], d[2], p[4], op[2], in[2], out[2], i, ext, pad0, pad1;

	(void)g;
	memset(geo, 0, sizeof(*geo));
	if (x->shape.rank != 4 || y->shape.rank != 4)
		return WHY("only 2-D (rank-4 NCHW) tensors have an NPU form");
	if (!w || !w->constant || w->dtype != NPU_DTYPE_FLOAT || w->shape.rank != 4)
		return WHY("weights are not a constant rank-4 float tensor");
	if (n->num_inputs > 2 && n->inputs[2] &&
	    (!n->inputs[2]->constant || n->inputs[2]->dtype != NPU_DTYPE_FLOAT))
		return WHY("bias is not a constant float tensor");
	if (strcmp(auto_pad, "NOTSET"))
		return WHY("auto_pad=%s has no NPU form", auto_pad);
	geo->n = (uint32_t)x->shape.dims[0];
	geo->c = (uint32_t)x->shape.dims[1];
	geo->oc = (uint32_t)y->shape.dims[1];
	geo->groups = (uint32_t)npu_node_attr_int_or(n, "group", 1);
	if (!geo->groups || w->shape.dims[0] != geo->c || geo->c % geo->groups ||
	    w->shape.dims[1] * geo->groups != geo->oc)
		return WHY("group=%u does not divide the channels", geo->groups);
	k[0] = w->shape.dims[2];
	k[1] = w->shape.dims[3];
	if (!ints_attr(n, "strides", 2, s, 1) || !ints_attr(n, "dilations", 2, d, 1) ||
	    !ints_attr(n, "pads", 4, p, 0) || !ints_attr(n, "output_padding", 2, op, 0))
		return WHY("attributes strides / dilations / pads / output_padding are not 2, 2, 4 and 2 ints");
	for (i = 0; i < 2; i++) {
		in[i] = x->shape.dims[2 + i];
		out[i] = y->shape.dims[2 + i];
		if (k[i] < 1 || k[i] > 255 || s[i] < 1 || s[i] > 256 || d[i] < 1 || d[i] > 255)
			return WHY("kernel %lld, stride %lld or dilation %lld outside the ISA's range",
				   (long long)k[i], (long long)s[i], (long long)d[i]);
		ext = d[i] * (k[i] - 1) + 1;
		if ((in[i] - 1) * s[i] - p[i] - p[i + 2] + ext + op[i] != out[i])
			return WHY("output size %lld does not follow from the attributes",
				   (long long)out[i]);
		pad0 = ext - 1 - p[i];
		pad1 = ext - 1 - p[i + 2] + op[i];
		if (pad0 < 0 || pad1 < 0 || pad0 > 255 || pad1 > 255)
			return WHY("pads %lld, %lld have no NPU form", (long long)p[i],
				   (long long)p[i + 2]);
		/* Every window must hold a real input pixel (codegen tiles by rows). */
		if (ext < s[i] || op[i] > p[i + 2])
			return WHY("kernel extent %lld below stride %lld (or output_padding) has no NPU form",
				   (long long)ext, (long long)s[i]);
		p[i] = pad0;
		p[i + 2] = pad1;
	}
	if (in[0] > 65535 || in[1] > 65535 || out[0] > 65535 || out[1] > 65535 ||
	    geo->c > 65535 || geo->oc > 65535)
		return WHY("a dimension exceeds the ISA's 16-bit fields");
	geo->h = (uint32_t)in[0];
	geo->w = (uint32_t)in[1];
	geo->oh = (uint32_t)out[0];
	geo->ow = (uint32_t)out[1];
	geo->k_h = (uint32_t)k[0];
	geo->k_w = (uint32_t)k[1];
	geo->stride_h = geo->stride_w = 1;
	geo->dil_h = (uint32_t)d[0];
	geo->dil_w = (uint32_t)d[1];
	geo->pad_top = (uint32_t)p[0];
	geo->pad_left = (uint32_t)p[1];
	geo->pad_bottom = (uint32_t)p[2];
	geo->pad_right = (uint32_t)p[3];
	geo->ins_h = (uint32_t)(s[0] - 1);
	geo->ins_w = (uint32_t)(s[1] - 1);
	return true;
}

/*
 * One axis of Resize as n / den with n = o * step + offset (npu_hw.h):
 * the coordinate transformation, then nearest rounding folded in.
 */
static bool resize_axis(const char *ctm, const char *nearest, bool linear,
			int64_t in, int64_t out, uint32_t *step, int32_t *offset,
			uint32_t *den, char *why, size_t why_size)
{
	int64_t st, off, dn;

	if (!strcmp(ctm, "asymmetric")) {
		st = in, off = 0, dn = out;
	} else if (!strcmp(ctm, "half_pixel") ||
		   (!strcmp(ctm, "pytorch_half_pixel") && out > 1)) {
		st = 2 * in, off = in - out, dn = 2 * out;
	} else if (!strcmp(ctm, "pytorch_half_pixel") ||
		   (!strcmp(ctm, "align_corners") && out == 1)) {
		st = 0, off = 0, dn = 1;
	} else if (!strcmp(ctm, "align_corners")) {
		st = in - 1, off = 0, dn = out - 1;
	} else {
		return WHY("coordinate_transformation_mode=%s has no NPU form", ctm);
	}
	if (!linear) {
		if (!strcmp(nearest, "floor")) {
			/* floor(n / den) as is */
		} else if (!strcmp(nearest, "ceil")) {
			off += dn - 1;
		} else if (!strcmp(nearest, "round_prefer_floor")) {
			/* ceil(x - 1/2) = floor((2n - den + 2den - 1) / 2den) */
			st *= 2, off = 2 * off + dn - 1, dn *= 2;
		} else if (!strcmp(nearest, "round_prefer_ceil")) {
			/* floor(x + 1/2) = floor((2n + den) / 2den) */
			st *= 2, off = 2 * off + dn, dn *= 2;
		} else {
			return WHY("nearest_mode=%s has no NPU form", nearest);
		}
	}
	if (st > UINT32_MAX || dn < 1 || dn > UINT32_MAX || off < INT32_MIN || off > INT32_MAX)
		return WHY("resize coordinates outside the ISA's range");
	*step = (uint32_t)st;
	*offset = (int32_t)off;
	*den = (uint32_t)dn;
	return true;
}

bool npu_resize_geometry(const struct npu_node *n, struct npu_resize_geom *rg,
			 char *why, size_t why_size)
{
	const struct npu_value *x = n->inputs[0], *y = n->outputs[0];
	const char *mode = npu_node_attr_string_or(n, "mode", "nearest");
	const char *ctm = npu_node_attr_string_or(n, "coordinate_transformation_mode",
						  n->opset < 11 ? "asymmetric" : "half_pixel");
	const char *nearest = npu_node_attr_string_or(n, "nearest_mode", "round_prefer_floor");
	const struct npu_value *scales = NULL;
	bool linear;
	int i;

	memset(rg, 0, sizeof(*rg));
	if (x->shape.rank != 4 || y->shape.rank != 4)
		return WHY("only rank-4 NCHW tensors have an NPU form");
	if (x->shape.dims[0] != y->shape.dims[0] || x->shape.dims[1] != y->shape.dims[1])
		return WHY("resizing N or C has no NPU form");
	if (!strcmp(mode, "nearest"))
		linear = false;
	else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear"))
		linear = true;
	else
		return WHY("mode=%s has no NPU form", mode);
	if (npu_node_attr_int_or(n, "antialias", 0) &&
	    (y->shape.dims[2] < x->shape.dims[2] || y->shape.dims[3] < x->shape.dims[3]))
		return WHY("antialias when downsampling has no NPU form");
	if (npu_node_attr(n, "axes") || strcmp(npu_node_attr_string_or(n,
			"keep_aspect_ratio_policy", "stretch"), "stretch"))
		return WHY("axes / keep_aspect_ratio_policy have no NPU form");
	/* With scales (no sizes), ONNX maps by 1/scale: it must be in/out exactly. */
	if (n->opset < 11)
		scales = n->num_inputs > 1 ? n->inputs[1] : NULL;
	else if (!(n->num_inputs > 3 && n->inputs[3]))
		scales = n->num_inputs > 2 ? n->inputs[2] : NULL;
	if (scales) {
		int64_t count;
		const float *sv = scales->constant && scales->dtype == NPU_DTYPE_FLOAT ?
				  scales->constant->data : NULL;

		count = sv ? npu_shape_numel(&scales->shape) : 0;
		if (count && count != 4)
			return WHY("scales are not 4 constant floats");
		for (i = 0; sv && i < 4; i++)
			if ((double)sv[i] * (double)x->shape.dims[i] != (double)y->shape.dims[i])
				return WHY("scale %g is not output / input exactly", (double)sv[i]);
		if (!sv && !scales->constant && npu_shape_numel(&scales->shape) != 0)
			return WHY("scales are not constant");
	}
	if (x->shape.dims[2] > 65535 || x->shape.dims[3] > 65535 ||
	    y->shape.dims[2] > 65535 || y->shape.dims[3] > 65535 || x->shape.dims[1] > 65535)
		return WHY("a dimension exceeds the ISA's 16-bit fields");
	rg->mode = linear ? NPU_RESIZE_BILINEAR : NPU_RESIZE_NEAREST;
	return resize_axis(ctm, nearest, linear, x->shape.dims[2], y->shape.dims[2],
			   &rg->step_h, &rg->offset_h, &rg->den_h, why, why_size) &&
	       resize_axis(ctm, nearest, linear, x->shape.dims[3], y->shape.dims[3],
			   &rg->step_w, &rg->offset_w, &rg->den_w, why, why_size);
}

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

/* The parameters of v's form the node being lowered reads (lc->want16). */
static const struct npu_qparams *value_q(const struct npu_lower_ctx *lc,
					 const struct npu_value *v)
{
	if (!v || v->index >= lc->qmap->count || !lc->qmap->set[v->index])
		return NULL;
	return lc->want16 && lc->qmap->q16 ? &lc->qmap->q16[v->index] : &lc->qmap->q[v->index];
}

static bool value_i16(const struct npu_lower_ctx *lc, const struct npu_value *v)
{
	return lc->qmap->i16 && v->index < lc->qmap->count && lc->qmap->i16[v->index];
}

static bool native_act(struct npu_lower_ctx *lc, struct npu_value *v, int *out);
static bool lower_node(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		       size_t why_size);
static bool requant_act(struct npu_lower_ctx *lc, struct npu_value *v, int native, int *out);
static bool requant_to(struct npu_lower_ctx *lc, struct npu_value *v, int native,
		       const struct npu_qparams *to, const char *suffix, int *out);

/*
 * The act of v in the precision the node being lowered uses: its own
 * (what its producer writes, int16 when that runs in the 16x8 mode), or
 * a copy in the other precision that an ELTWISE requantizes to, made once.
 */
int npu_lower_act(struct npu_lower_ctx *lc, struct npu_value *v)
{
	int a, alt;

	if (!native_act(lc, v, &a))
		return -1;
	if (lc->seg->prog.acts[a].i16 == lc->want16)
		return a;
	if (lc->alt_of && lc->alt_of[v->index])
		return (int)lc->alt_of[v->index] - 1;
	if (!lc->alt_of || !requant_act(lc, v, a, &alt))
		return -1;
	lc->alt_of[v->index] = (uint32_t)alt + 1;
	return alt;
}

/* A new act of v's dims with parameters 'q' (int16 when i16). */
static int add_act(struct npu_lower_ctx *lc, struct npu_value *v, const struct npu_qparams *q,
		   bool i16)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	struct npu_act *acts;

	acts = realloc(prog->acts, (prog->num_acts + 1) * sizeof(*acts));
	if (!acts)
		return -1;
	prog->acts = acts;
	memset(&acts[prog->num_acts], 0, sizeof(acts[0]));
	npu_value_act_dims(v, &acts[prog->num_acts]);
	acts[prog->num_acts].rows_layout = v->shape.rank == 4 &&
					   npu_value_layout(v) == NPU_LAYOUT_ROWS;
	acts[prog->num_acts].q = *q;
	acts[prog->num_acts].i16 = i16;
	acts[prog->num_acts].flat_clamped = !i16 && lc->qmap->flat_clamped &&
					    lc->qmap->flat_clamped[v->index];
	/* Named for the quantization report; the graph value may go away. */
	acts[prog->num_acts].name = seg_own(lc->seg, strlen(v->name) + 1);
	if (acts[prog->num_acts].name)
		memcpy((char *)acts[prog->num_acts].name, v->name, strlen(v->name) + 1);
	return (int)prog->num_acts++;
}

/* int8 <-> int16 at a precision boundary: ADD of a scalar 0 with types. */
static bool requant_act(struct npu_lower_ctx *lc, struct npu_value *v, int native, int *out)
{
	return requant_to(lc, v, native, lc->want16 ? &lc->qmap->q16[v->index] :
				      &lc->qmap->q[v->index], lc->want16 ? "to_int16" : "to_int8",
			  out);
}

/* A new act of v in the precision lc->want16 at 'to', which an ELTWISE fills from 'native'. */
static bool requant_to(struct npu_lower_ctx *lc, struct npu_value *v, int native,
		       const struct npu_qparams *to, const char *suffix, int *out)
{
	static const int8_t zero;
	struct npu_segment_program *prog = &lc->seg->prog;
	struct npu_qparams from = prog->acts[native].q;
	double r = from.scale / to->scale;
	int shift = (int)floor(log2((double)(1 << 30) / r));
	struct npu_lop *l, *lops;
	char *name;
	int a;

	if (shift > 62)
		shift = 62;
	if (shift < 1)
		return false;
	a = add_act(lc, v, to, lc->want16);
	lops = a < 0 ? NULL : realloc(prog->lops, (prog->num_lops + 1) * sizeof(*lops));
	name = lops ? seg_own(lc->seg, strlen(v->name) + strlen(suffix) + 2) : NULL;
	if (lops)
		prog->lops = lops;
	if (!name)
		return false;
	sprintf(name, "%s/%s", v->name, suffix);
	l = &prog->lops[prog->num_lops++];
	memset(l, 0, sizeof(*l));
	l->kind = NPU_LOP_ELTWISE;
	l->name = name;
	l->in = (uint32_t)native;
	l->out = (uint32_t)a;
	l->elt.mode = NPU_ELT_ADD;
	l->elt.bcast = NPU_BCAST_SCALAR;
	l->elt.b_const = &zero;
	l->elt.b_count = 1;
	l->elt.shift = (uint8_t)shift;
	l->elt.mult_a = (int32_t)llround(ldexp(r, shift));
	l->elt.mult_b = 0;
	l->elt.act_min = -128;
	l->elt.act_max = 127;
	*out = a;
	return true;
}

/* v's own act: int16 when its producer runs in the 16x8 mode. */
static bool native_act(struct npu_lower_ctx *lc, struct npu_value *v, int *out)
{
	bool i16 = value_i16(lc, v);
	const struct npu_qparams *q;
	int a;

	if (lc->act_of[v->index]) {
		*out = (int)lc->act_of[v->index] - 1;
		return true;
	}
	if (!v || v->index >= lc->qmap->count || !lc->qmap->set[v->index])
		return false;
	q = i16 ? &lc->qmap->q16[v->index] : &lc->qmap->q[v->index];
	a = add_act(lc, v, q, i16);
	if (a < 0)
		return false;
	lc->act_of[v->index] = (uint32_t)a + 1;
	*out = a;
	return true;
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

/* A lop that reads n's first input and writes its output; NULL: no memory. */
static struct npu_lop *new_unary_lop(struct npu_lower_ctx *lc, enum npu_lop_kind kind,
				     const struct npu_node *n)
{
	int in = npu_lower_act(lc, n->inputs[0]);
	int out = npu_lower_act(lc, n->outputs[0]);
	struct npu_lop *l = in < 0 || out < 0 ? NULL : new_lop(lc, kind, n);

	if (l) {
		l->in = (uint32_t)in;
		l->out = (uint32_t)out;
	}
	return l;
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
	/* Only the activation reads it: keep where the function is not flat. */
	if (value_q(lc, n->outputs[0])) {
		struct npu_error err = { 0 };

		npu_fused_activation_tighten_input(n, q, *value_q(lc, n->outputs[0]), &err);
	}
	return true;
}

/*
 * Output stage of a MAC or eltwise op: clamp bounds for Relu / Clip, or a
 * LUT from the pre-activation domain for the rest. 'out_scale' gets the
 * scale the requantization must target.
 */
static bool output_stage(struct npu_lower_ctx *lc, const struct npu_node *n,
			 const struct npu_qparams *out, int8_t *act_min,
			 int8_t *act_max, const int8_t **lut, const int16_t **lut16,
			 int16_t *pre_zp, struct npu_qparams *target, char *why,
			 size_t why_size)
{
	struct npu_act_fn fn;

	*act_min = -128;
	*act_max = 127;
	*lut = NULL;
	*lut16 = NULL;
	*pre_zp = 0;
	*target = *out;
	if (!npu_node_activation(n, &fn))
		return true;
	if ((!strcmp(fn.op, "Relu") || !strcmp(fn.op, "Clip")) && lc->want16) {
		/* int16 clamps in steps of 256 (isa.md): the rails nearest outside. */
		if (fn.min > -FLT_MAX)
			*act_min = (int8_t)(npu_quantize_value16(fn.min, *out) >> 8);
		if (fn.max < FLT_MAX)
			*act_max = (int8_t)(npu_quantize_value16(fn.max, *out) >> 8);
		return true;
	}
	if (lc->want16) {
		/* 513 int16 knots over the symmetric pre-activation range. */
		struct npu_qparams pre;
		int16_t *table = seg_own(lc->seg, 513 * sizeof(*table));
		struct npu_error err = { 0 };
		float lo, hi;

		if (!npu_pre_activation_qparams(lc, n, &pre))
			return WHY("no calibration range for the value before %s", fn.op);
		if (!table)
			return WHY("out of memory");
		lo = (float)(-128 - pre.zero_point) * pre.scale;
		hi = (float)(127 - pre.zero_point) * pre.scale;
		*target = npu_qparams16_from_range(lo, hi);
		if (npu_pointwise_table16(NULL, n, *target, *out, table, &err))
			return WHY("%s", err.msg);
		*lut16 = table;
		return true;
	}
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
static bool requant_arrays(struct npu_lower_ctx *lc, const char *name, uint32_t oc,
			   float in_scale,
			   const float *w_scale, const struct npu_qparams *target,
			   const float *bias, float bias_mul, struct npu_lop_quant *q,
			   char *why, size_t why_size)
{
	int32_t *mult = seg_own(lc->seg, oc * sizeof(*mult));
	uint8_t *shift = seg_own(lc->seg, oc);
	/* The 16x8 mode's accumulator is int64, and so is its bias. */
	int64_t *b64 = bias && lc->want16 ? seg_own(lc->seg, oc * sizeof(*b64)) : NULL;
	int32_t *b = bias && !lc->want16 ? seg_own(lc->seg, oc * sizeof(*b)) : NULL;
	uint32_t c, saturated = 0, first = 0;
	double worst = 0.0;

	if (!mult || !shift || (bias && !b && !b64))
		return WHY("out of memory");
	for (c = 0; c < oc; c++) {
		struct npu_requant rq;
		double real = (double)in_scale * w_scale[c] / target->scale;

		if (!npu_requant_from_real(real, &rq))
			return WHY("requantization multiplier %g of channel %u out of range", real, c);
		mult[c] = rq.mult;
		shift[c] = rq.shift;
		if (b || b64) {
			double exact = (double)bias[c] * bias_mul / ((double)in_scale * w_scale[c]);

			if (b64)
				b64[c] = npu_quantize_bias64(bias[c] * bias_mul, in_scale, w_scale[c]);
			else
				b[c] = npu_quantize_bias(bias[c] * bias_mul, in_scale, w_scale[c]);
			/* The accumulator cannot hold it: the channel gets a wrong offset. */
			if (!b64 && fabs(exact) > 2147483647.0) {
				if (!saturated++)
					first = c;
				worst = fmax(worst, fabs(exact) / 2147483647.0);
			}
		}
	}
	/* One line per node, not per channel. */
	if (saturated)
		npu_compiled_warn(lc->compiled,
				  "node '%s': the bias of %u of %u channels (first: %u) saturates int32 (up to %.3g x the accumulator's range): input scale %g is too fine for those biases",
				  name, saturated, oc, first, worst, in_scale);
	q->mult = mult;
	q->shift = shift;
	q->bias = b;
	q->bias64 = b64;
	return true;
}

/*
 * A bias must fit the int32 accumulator in units of s_in * s_w[c], with
 * room left for the products it adds to: when a channel's weight scale is
 * so fine that it would not (a near-zero weight row with a large bias, as
 * BatchNorm folding leaves behind), coarsen that channel's weight scale
 * until it does. The weights of that row lose precision they could not use
 * anyway; the bias, which would otherwise saturate to a wrong offset, stays
 * exact. A dead channel (every weight under 1e-6 of the layer's largest:
 * its output is its bias) loses nothing worth a warning.
 */
static void widen_for_bias(struct npu_lower_ctx *lc, const char *name, const float *w,
			   size_t oc, size_t per, float in_scale, const float *bias,
			   float bias_mul, int8_t *wq, float *scales)
{
	const double limit = 1073741824.0;	/* 2^30: half the accumulator */
	size_t c, i, widened = 0, first = 0;
	double worst = 1.0;
	float layer_max = 0;

	if (lc->want16)
		return;	/* the 16x8 mode's int64 accumulator holds any bias */
	for (i = 0; bias && i < oc * per; i++)
		layer_max = fmaxf(layer_max, fabsf(w[i]));

	for (c = 0; bias && c < oc; c++) {
		double need = fabs((double)bias[c] * bias_mul) / ((double)in_scale * limit);

		float row_max = 0;

		if (!(need > scales[c]) || !isfinite(need))
			continue;
		for (i = 0; i < per; i++)
			row_max = fmaxf(row_max, fabsf(w[c * per + i]));
		if (row_max > 1e-6f * layer_max) {
			if (!widened++)
				first = c;
			worst = fmax(worst, need / scales[c]);
		}
		scales[c] = (float)need;
		for (i = 0; i < per; i++) {
			float v = nearbyintf(w[c * per + i] / scales[c]);

			wq[c * per + i] = (int8_t)fminf(fmaxf(v, -127.0f), 127.0f);
		}
	}
	if (widened)
		npu_compiled_warn(lc->compiled,
				  "node '%s': %zu of %zu channels (first: %zu) had their weight scale widened (up to %.3g x) so that the bias fits the int32 accumulator",
				  name, widened, oc, first, worst);
}

/*
 * A conv over few input channels uses ceil(c / 32) of the MAC array's rows
 * per tap: folding F pixels of a row into one wide pixel of F * c channels
 * (the same bytes, read with a wider pixel stride) runs F / stride column
 * phases with fewer taps each (codegen.h, npu_lop.conv.fold_w). The fold
 * with the fewest modeled cycles per output pixel, or 0 for none.
 */
static uint32_t choose_fold(const struct npu_codegen_options *o, const struct npu_conv_geom *g)
{
	/* cycles of one output row, plain and per fold, in the array mode
	 * each CONV2D gets */
	uint64_t best = npu_conv_insn_cycles(o, g->ow, (uint64_t)g->k_h * g->k_w, 1, g->c, g->oc,
					     false);
	uint32_t fold = 0, R, r, F;

	if (g->groups != 1 || g->dil_w != 1 || g->ins_w || g->ins_h)
		return 0;
	for (R = 2; (F = g->stride_w * R) * g->c <= NPU_MAC_ROWS && F <= 255; R++) {
		struct npu_fold_phase ph;
		uint64_t cycles = 0;

		if (g->w % F || g->ow % R)
			continue;
		for (r = 0; r < R; r++) {
			if (!npu_conv_fold_phase(g->w, g->ow, g->c, g->oc, g->k_h, g->k_w,
						 g->stride_w, g->pad_left, F, r, &ph))
				break;
			cycles += npu_conv_insn_cycles(o, g->ow / R, (uint64_t)g->k_h * ph.k_w, 1,
						       F * g->c, g->oc, false);
		}
		if (r < R)
			continue;
		if (cycles < best) {
			best = cycles;
			fold = F;
		}
	}
	return fold;
}

/* The folded weight of choose_fold(): per phase [oc][kh][k_w of the phase][F][c]. */
static int8_t *fold_weights(struct npu_lower_ctx *lc, const struct npu_conv_geom *g,
			    uint32_t F, const int8_t *w)
{
	uint32_t R = F / g->stride_w, r, o, kh, t, q, ci;
	struct npu_fold_phase ph;
	int8_t *out;
	uint64_t total;

	npu_conv_fold_phase(g->w, g->ow, g->c, g->oc, g->k_h, g->k_w, g->stride_w,
			    g->pad_left, F, R - 1, &ph);
	total = ph.weight_off + (uint64_t)g->oc * g->k_h * ph.k_w * F * g->c;
	out = seg_own(lc->seg, total);
	if (!out)
		return NULL;
	for (r = 0; r < R; r++) {
		int64_t start = (int64_t)g->stride_w * r - g->pad_left;
		int8_t *p;

		npu_conv_fold_phase(g->w, g->ow, g->c, g->oc, g->k_h, g->k_w, g->stride_w,
				    g->pad_left, F, r, &ph);
		p = out + ph.weight_off;
		for (o = 0; o < g->oc; o++)
			for (kh = 0; kh < g->k_h; kh++)
				for (t = 0; t < ph.k_w; t++)
					for (q = 0; q < F; q++) {
						/* Tap of the original kernel this byte lands on. */
						int64_t kw = ((int64_t)ph.first + t) * F + q - start;

						for (ci = 0; ci < g->c; ci++, p++)
							*p = kw >= 0 && kw < g->k_w ?
							     w[(((size_t)o * g->k_h + kh) * g->k_w + kw) *
							       g->c + ci] : 0;
					}
	}
	return out;
}

/*
 * With opts->bias_correction, the bias less the mean shift the int8
 * weights make on this input (quant.h); else, or without the input's
 * channel means (or with zero insertion, which changes them), 'bias'.
 */
static const float *corrected_bias(struct npu_lower_ctx *lc, const struct npu_node *n,
				   const struct npu_conv_geom *geo, const float *w,
				   const int8_t *wq, const float *scales, const float *bias)
{
	const double *sum;
	double *mean;
	uint64_t count;
	float *b;
	uint32_t c;

	/* Default: the 16x8 mode only, where the weights' error dominates. */
	if (!(lc->opts->bias_correction > 0 || (!lc->opts->bias_correction && lc->want16)) ||
	    geo->ins_h || geo->ins_w ||
	    !npu_calib_channel_means(lc->calib, n->inputs[0]->index, geo->c, &sum, &count))
		return bias;
	b = seg_own(lc->seg, geo->oc * sizeof(*b));
	mean = malloc(geo->c * sizeof(*mean));
	if (!b || !mean) {
		free(mean);
		return bias;
	}
	for (c = 0; c < geo->c; c++)
		mean[c] = sum[c] / (double)count;
	for (c = 0; c < geo->oc; c++)
		b[c] = bias ? bias[c] : 0.0f;
	npu_bias_correct(w, wq, scales, geo->oc, geo->c, geo->groups, geo->k_h * geo->k_w, mean, b);
	free(mean);
	return b;
}

/*
 * A conv over few channels straight from a graph input (the first layer:
 * 3 channels on 32 MAC rows) reads that input as im2col, which the host
 * gathers while quantizing it (npu_act.im2col): a 1x1 conv whose K =
 * k_h * k_w * c fills the MAC rows, one cycle per output pixel instead of
 * a tap per kernel row or column. Only for an input that nothing else
 * reads and whose window fits one pass of the rows. Makes the act.
 */
static bool im2col_input(struct npu_lower_ctx *lc, const struct npu_node *n,
			 const struct npu_conv_geom *g)
{
	struct npu_value *x = n->inputs[0];
	uint64_t k = (uint64_t)g->k_h * g->k_w * g->c;
	size_t uses = 0, i, j;
	struct npu_act *act;
	int a;

	if (lc->want16 || !x->is_graph_input || x->is_graph_output || x->producer ||
	    lc->act_of[x->index] || value_i16(lc, x) || npu_value_layout(x) != NPU_LAYOUT_NHWC ||
	    g->groups != 1 || g->dil_h != 1 || g->dil_w != 1 || g->ins_h || g->ins_w ||
	    g->k_h * g->k_w < 2 || k > NPU_MAC_ROWS || g->k_h > 15 || g->k_w > 15 ||
	    g->stride_h > 15 || g->stride_w > 15 || g->pad_top > 15 || g->pad_left > 15)
		return false;
	for (i = 0; i < lc->graph->num_nodes; i++)
		for (j = 0; j < lc->graph->nodes[i]->num_inputs; j++)
			uses += lc->graph->nodes[i]->inputs[j] == x;
	if (uses != 1 || !native_act(lc, x, &a))
		return false;
	act = &lc->seg->prog.acts[a];
	act->h = g->oh;
	act->w = g->ow;
	act->c = (uint32_t)k;
	act->im2col.k_h = (uint8_t)g->k_h;
	act->im2col.k_w = (uint8_t)g->k_w;
	act->im2col.stride_h = (uint8_t)g->stride_h;
	act->im2col.stride_w = (uint8_t)g->stride_w;
	act->im2col.pad_top = (uint8_t)g->pad_top;
	act->im2col.pad_left = (uint8_t)g->pad_left;
	return true;
}

/* A Conv (or the CONV2D of a ConvTranspose): w is [oc][ic/groups][kh][kw]. */
static bool lower_conv_with(struct npu_lower_ctx *lc, struct npu_node *n,
			    const struct npu_conv_geom *gp, const float *w,
			    char *why, size_t why_size)
{
	struct npu_conv_geom geo = *gp;
	const float *bias = n->num_inputs > 2 && n->inputs[2] ? n->inputs[2]->constant->data : NULL;
	const struct npu_qparams *qin = value_q(lc, n->inputs[0]), *qout = value_q(lc, n->outputs[0]);
	struct npu_qparams target;
	uint32_t per, oc, ic, kh, kw;
	int8_t *wq, *wnhwc;
	float *scales;
	struct npu_lop *l;

	if (!qin || !qout)
		return WHY("no quantization parameters (not calibrated)");
	per = geo.c / geo.groups * geo.k_h * geo.k_w;
	wq = seg_own(lc->seg, (size_t)geo.oc * per);
	wnhwc = seg_own(lc->seg, (size_t)geo.oc * per);
	scales = seg_own(lc->seg, geo.oc * sizeof(*scales));
	if (!wq || !wnhwc || !scales)
		return WHY("out of memory");
	npu_quantize_weights_per_channel(w, geo.oc, per, wq, scales);
	widen_for_bias(lc, n->name, w, geo.oc, per, qin->scale, bias, 1.0f, wq, scales);
	bias = corrected_bias(lc, n, &geo, w, wq, scales, bias);
	/* [oc][ic][kh][kw] -> [oc][kh][kw][ic] */
	for (oc = 0; oc < geo.oc; oc++)
		for (ic = 0; ic < geo.c / geo.groups; ic++)
			for (kh = 0; kh < geo.k_h; kh++)
				for (kw = 0; kw < geo.k_w; kw++)
					wnhwc[(((size_t)oc * geo.k_h + kh) * geo.k_w + kw) * (geo.c / geo.groups) + ic] =
						wq[(((size_t)oc * (geo.c / geo.groups) + ic) * geo.k_h + kh) * geo.k_w + kw];
	if (im2col_input(lc, n, &geo)) {
		/* [oc][kh][kw][ic] is the 1x1 weight over the window's channels. */
		geo.c = per;
		geo.k_h = geo.k_w = geo.stride_h = geo.stride_w = 1;
		geo.pad_top = geo.pad_left = geo.pad_bottom = geo.pad_right = 0;
		geo.h = geo.oh;
		geo.w = geo.ow;
	}
	l = new_unary_lop(lc, NPU_LOP_CONV, n);
	if (!l)
		return WHY("out of memory");
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
	l->conv.ins_h = (uint8_t)geo.ins_h;
	l->conv.ins_w = (uint8_t)geo.ins_w;
	l->conv.fold_w = lc->want16 ? 0 : (uint8_t)choose_fold(&lc->seg->prog.opts, &geo);
	if (l->conv.fold_w) {
		l->conv.weight = fold_weights(lc, &geo, l->conv.fold_w, wnhwc);
		if (!l->conv.weight) {
			snprintf(why, why_size, "out of memory");
			goto undo;
		}
	}
	if (!output_stage(lc, n, qout, &l->conv.q.act_min, &l->conv.q.act_max, &l->conv.q.lut,
			  &l->conv.q.lut16,
			  &l->conv.q.pre_act_zp, &target, why, why_size))
		goto undo;
	if (!requant_arrays(lc, n->name, geo.oc, qin->scale, scales, &target, bias, 1.0f, &l->conv.q,
			    why, why_size))
		goto undo;
	if (l->conv.fold_w) {
		char tmp[160];

		/* A folded conv is never sliced: too big for SRAM, run it plain. */
		if (!npu_lop_fits(&lc->seg->prog, l, lc->sram_size ? lc->sram_size : NPU_SRAM_SIZE,
				  tmp, sizeof(tmp))) {
			l->conv.fold_w = 0;
			l->conv.weight = wnhwc;
		}
	}
	return true;
undo:
	lc->seg->prog.num_lops--;
	return false;
}

static bool lower_conv(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		       size_t why_size)
{
	struct npu_conv_geom geo;

	if (!npu_conv_geometry(lc->graph, n, &geo, why, why_size))
		return false;
	return lower_conv_with(lc, n, &geo, n->inputs[1]->constant->data, why, why_size);
}

/*
 * A ConvTranspose whose kernel equals its stride, without padding or
 * dilation, places one k_h x k_w block per input pixel: output row
 * s * i + dy is a 1x1 convolution of input row i to the (dx, oc) channels,
 * weight [dy][dx][oc][ic] = w[ic][oc][dy][dx]. Worth it when the output
 * has few channels: phase_h convolutions of phase_w * oc channels fill the
 * MAC columns that zero insertion (one output channel per column) leaves idle.
 */
/* Modeled cycles per input row of the phase form with input fold f. */
static uint64_t phase_cost(const struct npu_codegen_options *o, const struct npu_conv_geom *g,
			   uint64_t f)
{
	bool joined;

	return npu_phase_row_cycles(o, g->w, g->c, g->oc, g->ins_h + 1u, g->ins_w + 1u,
				    (uint32_t)f, &joined);
}

/*
 * The input fold F of the phase form (1: none) when it beats zero
 * insertion, else 0. Folding F input pixels into one wide pixel fills the
 * MAC rows and columns a narrow layer leaves idle (codegen.h).
 */
static uint32_t phases_pay(const struct npu_codegen_options *o, const struct npu_conv_geom *g)
{
	uint64_t s_h = g->ins_h + 1u, s_w = g->ins_w + 1u, best, f, fold = 1;

	if (g->groups != 1 || g->k_h != s_h || g->k_w != s_w || s_h * s_w < 2 ||
	    g->dil_h != 1 || g->dil_w != 1 || g->pad_top != g->k_h - 1 ||
	    g->pad_bottom != g->k_h - 1 || g->pad_left != g->k_w - 1 ||
	    g->pad_right != g->k_w - 1 || s_w * g->oc > UINT16_MAX)
		return 0;
	best = phase_cost(o, g, 1);
	for (f = 2; f <= 255 && f * s_w * g->oc <= UINT16_MAX && f * g->c <= UINT16_MAX; f++)
		if (g->w % f == 0 && phase_cost(o, g, f) < best) {
			best = phase_cost(o, g, f);
			fold = f;
		}
	/* zero insertion: one tap per output pixel in the densest phase */
	if (best >= npu_conv_insn_cycles(o, s_h * s_w * g->w, 1, 1, g->c, g->oc, false))
		return 0;
	return (uint32_t)fold;
}

static bool lower_conv_transpose_phases(struct npu_lower_ctx *lc, struct npu_node *n,
					const struct npu_conv_geom *geo, uint32_t fold,
					char *why, size_t why_size)
{
	const float *w = n->inputs[1]->constant->data;
	const float *bias = n->num_inputs > 2 && n->inputs[2] ? n->inputs[2]->constant->data : NULL;
	const struct npu_qparams *qin = value_q(lc, n->inputs[0]), *qout = value_q(lc, n->outputs[0]);
	uint32_t ph = geo->k_h, pw = geo->k_w, rows = ph * fold * pw * geo->oc, per = fold * geo->c;
	uint32_t dy, dx, o, ci, f;
	float *wf, *scales, *brep = NULL;
	struct npu_qparams target;
	struct npu_lop *l;
	int8_t *wq;

	if (!qin || !qout)
		return WHY("no quantization parameters (not calibrated)");
	wf = calloc((size_t)rows * per, sizeof(*wf));
	wq = seg_own(lc->seg, (size_t)rows * per);
	scales = seg_own(lc->seg, rows * sizeof(*scales));
	if (bias)
		brep = seg_own(lc->seg, rows * sizeof(*brep));
	if (!wf || !wq || !scales || (bias && !brep)) {
		free(wf);
		return WHY("out of memory");
	}
	/* Row (dy, f, dx, o) reads only input pixel f of the wide pixel. */
	for (dy = 0; dy < ph; dy++)
		for (f = 0; f < fold; f++)
			for (dx = 0; dx < pw; dx++)
				for (o = 0; o < geo->oc; o++) {
					size_t r = (((size_t)dy * fold + f) * pw + dx) * geo->oc + o;

					for (ci = 0; ci < geo->c; ci++)
						wf[r * per + (size_t)f * geo->c + ci] =
							w[(((size_t)ci * geo->oc + o) * ph + dy) * pw + dx];
					if (brep)
						brep[r] = bias[o];
				}
	npu_quantize_weights_per_channel(wf, rows, per, wq, scales);
	widen_for_bias(lc, n->name, wf, rows, per, qin->scale, brep, 1.0f, wq, scales);
	free(wf);
	l = new_unary_lop(lc, NPU_LOP_CONV, n);
	if (!l)
		return WHY("out of memory");
	l->conv.weight = wq;
	l->conv.k_h = l->conv.k_w = 1;
	l->conv.stride_h = l->conv.stride_w = 1;
	l->conv.dil_h = l->conv.dil_w = 1;
	l->conv.groups = 1;
	l->conv.phase_h = (uint8_t)ph;
	l->conv.phase_w = (uint8_t)pw;
	l->conv.fold_w = (uint8_t)(fold > 1 ? fold : 0);
	if (!output_stage(lc, n, qout, &l->conv.q.act_min, &l->conv.q.act_max, &l->conv.q.lut,
			  &l->conv.q.lut16,
			  &l->conv.q.pre_act_zp, &target, why, why_size) ||
	    !requant_arrays(lc, n->name, rows, qin->scale, scales, &target, brep, 1.0f,
			    &l->conv.q, why, why_size)) {
		lc->seg->prog.num_lops--;
		return false;
	}
	return true;
}

/*
 * ConvTranspose: ONNX weights [C_in][C_out / g][kh][kw] become the flipped
 * Conv kernel [C_out][C_in / g][kh][kw] over the zero-inserted input.
 */
static bool lower_conv_transpose(struct npu_lower_ctx *lc, struct npu_node *n,
				 char *why, size_t why_size)
{
	const float *w = n->inputs[1]->constant->data;
	struct npu_conv_geom geo;
	uint32_t cin_g, cout_g, g, i, j, kh, kw;
	float *wc;

	if (!npu_conv_transpose_geometry(lc->graph, n, &geo, why, why_size))
		return false;
	if (!lc->want16 && phases_pay(&lc->seg->prog.opts, &geo)) {	/* the phase form is int8 only */
		char tmp[160];

		if (!lower_conv_transpose_phases(lc, n, &geo, phases_pay(&lc->seg->prog.opts, &geo), why, why_size))
			return false;
		if (npu_lop_fits(&lc->seg->prog, &lc->seg->prog.lops[lc->seg->prog.num_lops - 1],
				 lc->sram_size ? lc->sram_size : NPU_SRAM_SIZE, tmp, sizeof(tmp)))
			return true;
		lc->seg->prog.num_lops--;	/* too big for SRAM: zero insertion tiles */
	}
	cin_g = geo.c / geo.groups;
	cout_g = geo.oc / geo.groups;
	wc = seg_own(lc->seg, (size_t)geo.oc * cin_g * geo.k_h * geo.k_w * sizeof(*wc));
	if (!wc)
		return WHY("out of memory");
	for (g = 0; g < geo.groups; g++)
		for (j = 0; j < cout_g; j++)
			for (i = 0; i < cin_g; i++)
				for (kh = 0; kh < geo.k_h; kh++)
					for (kw = 0; kw < geo.k_w; kw++)
						wc[((((size_t)g * cout_g + j) * cin_g + i) * geo.k_h + kh) *
						   geo.k_w + kw] =
							w[((((size_t)g * cin_g + i) * cout_g + j) * geo.k_h +
							   (geo.k_h - 1 - kh)) * geo.k_w + (geo.k_w - 1 - kw)];
	return lower_conv_with(lc, n, &geo, wc, why, why_size);
}

/* Resize: input and output share their quantization (quantize.c ties them). */
static bool lower_resize(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
			 size_t why_size)
{
	const struct npu_qparams *qin = value_q(lc, n->inputs[0]), *qout = value_q(lc, n->outputs[0]);
	struct npu_resize_geom rg;
	struct npu_lop *l;

	if (!npu_resize_geometry(n, &rg, why, why_size))
		return false;
	if (!qin || !qout || qin->scale != qout->scale || qin->zero_point != qout->zero_point)
		return WHY("resize needs equal input and output quantization");
	l = new_unary_lop(lc, NPU_LOP_RESIZE, n);
	if (!l)
		return WHY("out of memory");
	l->resize.mode = rg.mode;
	l->resize.step_h = rg.step_h;
	l->resize.step_w = rg.step_w;
	l->resize.den_h = rg.den_h;
	l->resize.den_w = rg.den_w;
	l->resize.offset_h = rg.offset_h;
	l->resize.offset_w = rg.offset_w;
	return true;
}

bool npu_matmul_act_geometry(const struct npu_node *n, uint32_t *batch, char *why,
			     size_t why_size)
{
	const struct npu_value *a = n->inputs[0], *b = n->inputs[1], *y = n->outputs[0];
	const struct npu_value *v[3] = { a, b, y };
	int r = a->shape.rank, i, j;
	uint64_t bt = 1, m, k, cols;

	if (!is_op(n, "MatMul") || n->num_inputs != 2 || a->constant || b->constant)
		return WHY("not a MatMul of two activations");
	if (r < 2 || b->shape.rank != r || y->shape.rank != r)
		return WHY("operands of ranks %d and %d: broadcasting has no NPU form", r,
			   b->shape.rank);
	for (i = 0; i < 3; i++)
		if (npu_value_layout(v[i]) == NPU_LAYOUT_NHWC)
			return WHY("'%s' is stored NHWC (a convolution touches it): its rows are "
				   "not contiguous", v[i]->name);
	for (i = 0; i < r - 2; i++) {
		for (j = 1; j < 3; j++)
			if (v[j]->shape.dims[i] != a->shape.dims[i])
				return WHY("batch dims differ (broadcasting has no NPU form)");
		bt *= (uint64_t)a->shape.dims[i];
	}
	m = (uint64_t)a->shape.dims[r - 2];
	k = (uint64_t)a->shape.dims[r - 1];
	cols = (uint64_t)b->shape.dims[r - 1];
	if (b->shape.dims[r - 2] != (int64_t)k || y->shape.dims[r - 2] != (int64_t)m ||
	    y->shape.dims[r - 1] != (int64_t)cols)
		return WHY("inner dimensions differ");
	if (!bt || !m || !k || !cols || bt > 65536 || k > UINT16_MAX || cols > UINT16_MAX ||
	    m * k > (1u << 20) || k * cols > (1u << 20) || m * cols > (1u << 20))
		return WHY("product of %llu x %llu x %llu (batch %llu) too large for one "
			   "MATMUL per batch", (unsigned long long)m, (unsigned long long)k,
			   (unsigned long long)cols, (unsigned long long)bt);
	*batch = (uint32_t)bt;
	return true;
}

/*
 * B = Transpose(x) swapping the last two axes, lowered into this segment as
 * plain copies (same quantization) that nothing else reads: x is B as
 * MATMUL reads it, [n][k]. Drop those copies and return x (its act exists),
 * else NULL.
 */
static const struct npu_value *absorbed_transpose(struct npu_lower_ctx *lc,
						  const struct npu_node *n)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	const struct npu_value *b = n->inputs[1], *x;
	const struct npu_node *t = b->producer;
	const struct npu_attr *perm;
	uint32_t ba, xa;
	size_t i, j, kept;
	int r = b->shape.rank, k;

	if (!t || !is_op(t, "Transpose") || b->is_graph_output || !lc->act_of[b->index])
		return NULL;
	x = t->inputs[0];
	perm = npu_node_attr(t, "perm");
	if (!perm || perm->type != NPU_ATTR_INTS || perm->count != (size_t)r ||
	    !lc->act_of[x->index] || npu_value_layout(x) != NPU_LAYOUT_ROWS ||
	    npu_value_layout(b) != NPU_LAYOUT_ROWS)
		return NULL;
	for (k = 0; k < r; k++)
		if (perm->ints[k] != (k < r - 2 ? k : k == r - 2 ? r - 1 : r - 2))
			return NULL;
	for (i = 0; i < lc->graph->num_nodes; i++)
		for (j = 0; j < lc->graph->nodes[i]->num_inputs; j++)
			if (lc->graph->nodes[i]->inputs[j] == b && lc->graph->nodes[i] != n)
				return NULL;
	ba = lc->act_of[b->index] - 1;
	xa = lc->act_of[x->index] - 1;
	for (i = 0; i < prog->num_lops; i++) {
		const struct npu_lop *l = &prog->lops[i];

		if (npu_lop_reads_in2(l) ? l->in2 == ba || l->in == ba : l->in == ba)
			return NULL;
		if (l->out == ba && (l->kind != NPU_LOP_COPY || l->in != xa || l->copy.lut))
			return NULL;
	}
	for (i = 0, kept = 0; i < prog->num_lops; i++)
		if (prog->lops[i].out != ba)
			prog->lops[kept++] = prog->lops[i];
	prog->num_lops = kept;	/* b's act goes in drop_unused_acts() */
	return x;
}

/*
 * Activation x activation (attention scores and context): one MATMUL per
 * batch with B read from SRAM, zero points of both sides, requantized per
 * tensor by s_a * s_b / s_out.
 */
static bool lower_matmul_act(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
			     size_t why_size)
{
	const struct npu_qparams *qa = value_q(lc, n->inputs[0]), *qb = value_q(lc, n->inputs[1]);
	const struct npu_qparams *qout = value_q(lc, n->outputs[0]);
	struct npu_qparams target;
	const struct npu_value *nk;
	struct npu_lop *l;
	uint32_t batch;
	int in2;

	if (!npu_matmul_act_geometry(n, &batch, why, why_size))
		return false;
	if (!qa || !qb || !qout)
		return WHY("no quantization parameters (not calibrated)");
	nk = absorbed_transpose(lc, n);
	in2 = nk ? (int)lc->act_of[nk->index] - 1 : npu_lower_act(lc, n->inputs[1]);
	l = in2 < 0 ? NULL : new_unary_lop(lc, NPU_LOP_MATMUL, n);
	if (!l)
		return WHY("out of memory");
	l->in2 = (uint32_t)in2;
	l->matmul.batch = batch;
	l->matmul.b_nk = nk != NULL;
	/* The caller's fit check may not see it (absorbed copies went). */
	if (!output_stage(lc, n, qout, &l->matmul.q.act_min, &l->matmul.q.act_max,
			  &l->matmul.q.lut, &l->matmul.q.lut16, &l->matmul.q.pre_act_zp, &target,
			  why, why_size) ||
	    !requant_arrays(lc, n->name, 1, qa->scale, &qb->scale, &target, NULL, 1.0f,
			    &l->matmul.q, why, why_size) ||
	    !npu_lop_fits(&lc->seg->prog, l, lc->sram_size ? lc->sram_size : NPU_SRAM_SIZE,
			  why, why_size)) {
		lc->seg->prog.num_lops--;
		return false;
	}
	return true;
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
	if (cv) {
		const float *cd = cv->constant->data;
		bool scalar = npu_shape_numel(&cv->shape) == 1;

		for (c = 0; c < cols; c++)
			bias[c] = beta * cd[scalar ? 0 : c];
	}
	widen_for_bias(lc, n->name, wt, cols, k, qin->scale, bias, 1.0f, wq, scales);
	free(wt);
	l = new_unary_lop(lc, NPU_LOP_MATMUL, n);
	if (!l)
		return WHY("out of memory");
	l->matmul.weight = wq;
	if (!output_stage(lc, n, qout, &l->matmul.q.act_min, &l->matmul.q.act_max,
			  &l->matmul.q.lut, &l->matmul.q.lut16, &l->matmul.q.pre_act_zp, &target,
			  why, why_size) ||
	    !requant_arrays(lc, n->name, cols, qin->scale, scales, &target, bias, 1.0f, &l->matmul.q,
			    why, why_size)) {
		lc->seg->prog.num_lops--;
		return false;
	}
	return true;
}

/*
 * A mean over windows as a depthwise CONV2D whose k_h x k_w weights are
 * all 127 at scale 1 / (127 div) (div: the window's area, or what stands
 * for it): unlike POOL, a convolution requantizes, so the mean gets its
 * own, much narrower range instead of its input's (squeeze-and-excitation
 * blocks lost 20 dB there). Padded taps read zp_in: they add 0.
 */
static bool lower_mean_conv(struct npu_lower_ctx *lc, struct npu_node *n, uint32_t c,
			    uint32_t k_h, uint32_t k_w, uint32_t pad_bottom, uint32_t pad_right,
			    double div, int in_act, int out_act, const struct npu_qparams *qin,
			    const struct npu_qparams *qout, char *why, size_t why_size)
{
	size_t per = (size_t)k_h * k_w;
	int8_t *w = seg_own(lc->seg, (size_t)c * per);
	float *scales = seg_own(lc->seg, c * sizeof(*scales));
	struct npu_lop *l;
	uint32_t i;

	if (!w || !scales || in_act < 0 || out_act < 0)
		return WHY("out of memory");
	memset(w, 127, (size_t)c * per);
	for (i = 0; i < c; i++)
		scales[i] = (float)(1.0 / (div * 127.0));
	l = new_lop(lc, NPU_LOP_CONV, n);
	if (!l)
		return WHY("out of memory");
	l->in = (uint32_t)in_act;
	l->out = (uint32_t)out_act;
	l->conv.weight = w;
	l->conv.k_h = (uint8_t)k_h;
	l->conv.k_w = (uint8_t)k_w;
	/* Windows tile the input (a global mean has one). */
	l->conv.stride_h = (uint8_t)k_h;
	l->conv.stride_w = (uint8_t)k_w;
	l->conv.pad_bottom = (uint8_t)pad_bottom;
	l->conv.pad_right = (uint8_t)pad_right;
	l->conv.dil_h = l->conv.dil_w = 1;
	l->conv.groups = (uint16_t)c;
	l->conv.q.act_min = -128;
	l->conv.q.act_max = 127;
	if (!requant_arrays(lc, n->name, c, qin->scale, scales, qout, NULL, 1.0f,
			    &l->conv.q, why, why_size)) {
		lc->seg->prog.num_lops--;
		return false;
	}
	return true;
}

/*
 * A new act at the end of the program for a pool's intermediate means:
 * h x w of geo's images and channels at the input's quantization, named
 * "<node>/<what>". False: out of memory.
 */
static bool temp_mean_act(struct npu_lower_ctx *lc, const struct npu_node *n,
			  const struct npu_conv_geom *geo, uint32_t h, uint32_t w,
			  const struct npu_qparams *qin, const char *what)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	size_t len = strlen(n->name) + strlen(what) + 2;
	struct npu_act *na = realloc(prog->acts, (prog->num_acts + 1) * sizeof(*na));
	char *name = seg_own(lc->seg, len);
	struct npu_act *t;

	if (!na || !name)
		return false;
	prog->acts = na;
	t = &na[prog->num_acts];
	memset(t, 0, sizeof(*t));
	t->n = geo->n;
	t->h = h;
	t->w = w;
	t->c = geo->c;
	t->q = *qin;
	t->i16 = lc->want16;
	snprintf(name, len, "%s/%s", n->name, what);
	t->name = name;
	prog->num_acts++;
	return true;
}

/* GlobalAveragePool as one depthwise CONV2D with an H x W kernel of 1 / HW. */
static bool lower_global_pool_as_conv(struct npu_lower_ctx *lc, struct npu_node *n,
				      const struct npu_conv_geom *geo, int in_act,
				      const struct npu_qparams *qin,
				      const struct npu_qparams *qout, char *why,
				      size_t why_size)
{
	return lower_mean_conv(lc, n, geo->c, geo->k_h, geo->k_w, 0, 0,
			       (double)geo->k_h * geo->k_w, in_act,
			       npu_lower_act(lc, n->outputs[0]), qin, qout, why, why_size);
}

/*
 * Modeled cycles of a GlobalAveragePool over h x w split into out_h x
 * out_w bands of k_h x k_w (isa.md, depthwise CONV2D: the array works on
 * 'lanes' pixels x 'lanes' channels per tap): stage 1 the band means,
 * stage 2 their mean. One band (1 x 1) is the one-stage form.
 */
static uint64_t gap_split_cycles(uint32_t c, uint32_t out_h, uint32_t out_w, uint32_t k_h,
				 uint32_t k_w, uint32_t lanes)
{
	uint64_t cb = (c + lanes - 1) / lanes, p = (uint64_t)out_h * out_w;

	return ((p + lanes - 1) / lanes) * k_h * k_w * cb + (p > 1 ? p * cb : 0);
}

/*
 * What a grid costs: its two stages, plus the DMA of one band row of the
 * input. Stage 1 joins its producer's conv chain (codegen_fusion.c, the input
 * teed), whose tiles are whole band rows, and the last tile's store is
 * not overlapped: a grid of a few tall bands serializes a large part of
 * the input's store.
 */
static uint64_t gap_grid_score(uint32_t c, uint32_t oh, uint32_t ow, uint32_t h, uint32_t w,
			       uint32_t lanes)
{
	return gap_split_cycles(c, oh, ow, (h + oh - 1) / oh, (w + ow - 1) / ow, lanes) +
	       (uint64_t)h * w * c / oh / NPU_DMA_BYTES_PER_CYCLE;
}

/*
 * The next band grid for a two-stage GlobalAveragePool after (*out_h,
 * *out_w) in the order of modeled cycles (0 x 0: the first): out_h x
 * out_w bands of ceil(h / out_h) x ceil(w / out_w), the last row and
 * column padded. r is the input's step over the output's: each band
 * mean is rounded to half an input step (uniform, sd 0.289 r output
 * steps) and stage 2 weighs the P bands by k_h k_w / HW, so the output
 * moves by sd 0.289 r sqrt(P) k_h k_w / HW; grids where four of those
 * reach one output step are left out (more bands average the rounding
 * away). False when none is left that beats the one-stage form by a
 * quarter.
 */
static bool gap_next_split(uint32_t h, uint32_t w, uint32_t c, uint32_t lanes, double r,
			   uint32_t *out_h, uint32_t *out_w)
{
	uint64_t one = gap_split_cycles(c, 1, 1, h, w, lanes), prev = 0, best = UINT64_MAX;
	uint64_t best_cy = 0;
	uint32_t oh, ow, bh = 0, bw = 0;

	if (*out_h)
		prev = gap_grid_score(c, *out_h, *out_w, h, w, lanes);
	for (oh = 1; oh <= h; oh++) {
		uint32_t kh = (h + oh - 1) / oh;

		/* Only grids without an all-padding row or column. */
		if (kh > 255 || (h + kh - 1) / kh != oh)
			continue;
		for (ow = 1; ow <= w; ow++) {
			uint32_t kw = (w + ow - 1) / ow;
			uint64_t cy;

			if (kw > 255 || (w + kw - 1) / kw != ow || (oh == 1 && ow == 1) ||
			    4 * 0.289 * r * sqrt((double)oh * ow) * kh * kw > (double)h * w)
				continue;
			cy = gap_grid_score(c, oh, ow, h, w, lanes);
			/* Strictly after the previous grid: (score, oh, ow). */
			if (*out_h && (cy < prev || (cy == prev && (oh < *out_h ||
			    (oh == *out_h && ow <= *out_w)))))
				continue;
			if (cy < best) {
				best = cy;
				best_cy = gap_split_cycles(c, oh, ow, kh, kw, lanes);
				bh = oh;
				bw = ow;
			}
		}
	}
	if (!bh || best_cy * 4 > one * 3)
		return false;
	*out_h = bh;
	*out_w = bw;
	return true;
}

/*
 * GlobalAveragePool in two depthwise CONV2Ds when the cycle model says it
 * pays: the one-stage form's output is one pixel, so 31 of the array's 32
 * pixel lanes idle for H x W taps. Stage 1 writes the means of ~32 bands
 * (one pixel each, every lane busy) into an int8 temporary at the input's
 * quantization (a band mean lies in the input's range; zero padding pulls
 * it toward 0, which is in range too); stage 2 averages them with the
 * true 1 / HW and requantizes to the output. The ISA has no int8 -> int16
 * CONV2D, so the temporary is int8: each band mean is rounded once (half
 * a step of the input), and the weighted mean of those errors is what
 * the output may differ by; gap_next_split() keeps it under an output
 * step (test_compiler_gap_split checks 1 LSB). opts.no_gap_split
 * keeps the one-stage form. *done stays false, nothing lowered, when no
 * split pays, fits SRAM or requantizes; false only when out of memory.
 */
static bool lower_global_pool_split(struct npu_lower_ctx *lc, struct npu_node *n,
				    const struct npu_conv_geom *geo,
				    const struct npu_qparams *qin,
				    const struct npu_qparams *qout, bool *done, char *why,
				    size_t why_size)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	uint32_t sram = lc->sram_size ? lc->sram_size : NPU_SRAM_SIZE;
	size_t lops, acts;
	uint32_t oh = 0, ow = 0, tries;
	int in, out;
	char tmp[160];

	*done = false;
	if (prog->opts.no_gap_split)
		return true;
	in = npu_lower_act(lc, n->inputs[0]);
	out = npu_lower_act(lc, n->outputs[0]);
	if (in < 0 || out < 0)
		return WHY("out of memory");
	lops = prog->num_lops;
	acts = prog->num_acts;
	for (tries = 0; tries < 8 && gap_next_split(geo->h, geo->w, geo->c,
						    lc->want16 ? 16 : 32,
						    qin->scale / qout->scale, &oh, &ow); tries++) {
		uint32_t kh = (geo->h + oh - 1) / oh, kw = (geo->w + ow - 1) / ow;

		prog->num_lops = lops;
		prog->num_acts = acts;
		if (!temp_mean_act(lc, n, geo, oh, ow, qin, "band_mean"))
			return WHY("out of memory");
		/* A stage that cannot be requantized leaves the other forms. */
		if (!lower_mean_conv(lc, n, geo->c, kh, kw, oh * kh - geo->h, ow * kw - geo->w,
				     (double)kh * kw, in, (int)acts, qin, qin, why, why_size))
			break;
		if (!npu_lop_fits(prog, &prog->lops[prog->num_lops - 1], sram, tmp, sizeof(tmp)))
			continue;
		/* Stage 1 divided by kh kw; the whole by h w. */
		if (!lower_mean_conv(lc, n, geo->c, oh, ow, 0, 0,
				     (double)geo->h * geo->w / ((double)kh * kw), (int)acts, out,
				     qin, qout, why, why_size))
			break;
		if (npu_lop_fits(prog, &prog->lops[prog->num_lops - 1], sram, tmp, sizeof(tmp))) {
			*done = true;
			return true;
		}
	}
	prog->num_lops = lops;
	prog->num_acts = acts;
	return true;
}

/*
 * A GlobalAveragePool whose input does not fit SRAM at once: an average
 * POOL over a x b blocks (a, b dividing H, W: every block counts the same,
 * so the mean of the block means is the mean; it keeps the input's
 * quantization) into a temporary tensor, then the requantizing mean over
 * what is left. The one extra rounding is half a step of the input.
 */
static bool lower_global_pool_banded(struct npu_lower_ctx *lc, struct npu_node *n,
				     const struct npu_conv_geom *geo,
				     const struct npu_qparams *qin,
				     const struct npu_qparams *qout, char *why,
				     size_t why_size)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	uint32_t sram = lc->sram_size ? lc->sram_size : NPU_SRAM_SIZE;
	size_t lops = prog->num_lops, acts = prog->num_acts;
	int in = npu_lower_act(lc, n->inputs[0]);
	uint32_t a, b = geo->w;
	char tmp[160];

	if (in < 0)
		return WHY("out of memory");
	while (b > 255 || geo->w % b)
		b--;
	if (geo->w / b > 255)
		return WHY("global pool of width %u has no banded NPU form", geo->w);
	for (a = geo->h < 255 ? geo->h : 255; a >= 1; a--) {
		struct npu_conv_geom g2 = *geo;
		struct npu_lop *pl;

		if (geo->h % a || geo->h / a > 255 || (a == geo->h && b == geo->w))
			continue;
		prog->num_lops = lops;
		prog->num_acts = acts;
		if (!temp_mean_act(lc, n, geo, geo->h / a, geo->w / b, qin, "block_mean"))
			return WHY("out of memory");
		pl = new_lop(lc, NPU_LOP_POOL, n);
		if (!pl)
			return WHY("out of memory");
		pl->in = (uint32_t)in;
		pl->out = (uint32_t)acts;
		pl->pool.mode = NPU_POOL_AVG;
		pl->pool.k_h = pl->pool.stride_h = (uint8_t)a;
		pl->pool.k_w = pl->pool.stride_w = (uint8_t)b;
		pl->pool.act_min = -128;
		pl->pool.act_max = 127;
		if (!npu_lop_fits(prog, pl, sram, tmp, sizeof(tmp)))
			continue;
		g2.h = g2.k_h = geo->h / a;
		g2.w = g2.k_w = geo->w / b;
		if (!lower_global_pool_as_conv(lc, n, &g2, (int)acts, qin, qout, why, why_size))
			return false;
		if (npu_lop_fits(prog, &prog->lops[prog->num_lops - 1], sram, tmp, sizeof(tmp)))
			return true;
	}
	prog->num_lops = lops;
	prog->num_acts = acts;
	return WHY("no block size of %ux%u fits SRAM for a banded global pool", geo->h, geo->w);
}

static bool lower_pool(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		       size_t why_size)
{
	const struct npu_qparams *qin = value_q(lc, n->inputs[0]), *qout = value_q(lc, n->outputs[0]);
	struct npu_conv_geom geo;
	struct npu_lop *l;

	if (!npu_conv_geometry(lc->graph, n, &geo, why, why_size))
		return false;
	if (qin && qout && is_op(n, "GlobalAveragePool") && geo.c <= 65535) {
		char tmp[160];
		bool done;

		if (!lower_global_pool_split(lc, n, &geo, qin, qout, &done, why, why_size))
			return false;
		if (done)
			return true;
		if (!lower_global_pool_as_conv(lc, n, &geo, npu_lower_act(lc, n->inputs[0]),
					       qin, qout, why, why_size))
			return false;
		if (npu_lop_fits(&lc->seg->prog, &lc->seg->prog.lops[lc->seg->prog.num_lops - 1],
				 lc->sram_size ? lc->sram_size : NPU_SRAM_SIZE, tmp, sizeof(tmp)))
			return true;
		lc->seg->prog.num_lops--;
		return lower_global_pool_banded(lc, n, &geo, qin, qout, why, why_size);
	}
	if (!qin || !qout || qin->scale != qout->scale)
		return WHY("pooling needs equal input and output scales");
	l = new_unary_lop(lc, NPU_LOP_POOL, n);
	if (!l)
		return WHY("out of memory");
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
			  &l->elt.lut16,
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

/*
 * SOFTMAX: the exp table in Q30 from the input scale; out = p / s_out
 * as e * floor(2^62 / sum) * mult >> shift, mult < 2^31.
 * LAYERNORM: gamma / s_out in Q15 units and beta / s_out at 2^shift, the
 * largest shift that keeps both in int32; eps in units of (s_in / c)^2.
 */
static bool lower_rows(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		       size_t why_size)
{
	const struct npu_qparams *qin = value_q(lc, n->inputs[0]);
	const struct npu_qparams *qout = value_q(lc, n->outputs[0]);
	uint32_t c = (uint32_t)n->inputs[0]->shape.dims[n->inputs[0]->shape.rank - 1];
	struct npu_lop *l;
	uint8_t *consts;
	uint32_t k;

	if (!npu_rows_op_geometry(n, why, why_size))
		return false;
	if (!qin || !qout)
		return WHY("no quantization parameters (not calibrated)");
	if (is_reduce(n)) {
		/* acc = sum or max of (x - zp_in); a mean divides by c too */
		double real = (double)qin->scale / qout->scale / (is_op(n, "ReduceMean") ? c : 1);
		struct npu_requant rq;

		if (!npu_requant_from_real(real, &rq))
			return WHY("requantization multiplier %g out of range", real);
		l = new_unary_lop(lc, NPU_LOP_ROWS, n);
		if (!l)
			return WHY("out of memory");
		l->rows.opcode = NPU_OP_REDUCE;
		l->rows.mode = is_op(n, "ReduceMax") ? NPU_REDUCE_MAX : NPU_REDUCE_SUM;
		l->rows.mult = rq.mult;
		l->rows.shift = rq.shift;
		return true;
	}
	if (is_op(n, "Softmax")) {
		int e2 = (int)floor(log2(2147483647.0 * qout->scale));

		/* Beyond this one int8 step multiplies a probability by more
		 * than e: inputs that differ by less than a step (ONNX's
		 * large_number test: rows 0..3 and 10000..10003) collapse. */
		if (qin->scale > 1.0f)
			return WHY("input scale %g: one int8 step is a factor e^%.3g in "
				   "probability, too coarse for SOFTMAX", qin->scale, qin->scale);
		if (e2 + 62 < 1 || e2 + 62 > 126)
			return WHY("output scale %g out of range", qout->scale);
		consts = seg_own(lc->seg, 1024);
		l = consts ? new_unary_lop(lc, NPU_LOP_ROWS, n) : NULL;
		if (!l)
			return WHY("out of memory");
		for (k = 0; k < 256; k++) {
			uint32_t t = (uint32_t)llround(ldexp(exp(-(double)k * qin->scale), 30));

			memcpy(consts + 4 * k, &t, 4);
		}
		l->rows.opcode = NPU_OP_SOFTMAX;
		l->rows.shift = (uint8_t)(62 + e2);
		l->rows.mult = (int32_t)llround(ldexp(1.0, e2) / qout->scale);
		l->rows.consts = consts;
		l->rows.consts_size = 1024;
		return true;
	} else {
		const float *gamma = n->inputs[1]->constant->data;
		const float *beta = n->num_inputs > 2 && n->inputs[2] ?
				    n->inputs[2]->constant->data : NULL;
		double eps = npu_node_attr_float_or(n, "epsilon", 1e-5f);
		double gmax = 0, bmax = 0, e;
		int shift = 62;

		for (k = 0; k < c; k++) {
			gmax = fmax(gmax, fabs(gamma[k]) / qout->scale);
			if (beta)
				bmax = fmax(bmax, fabs(beta[k]) / qout->scale);
		}
		/* gmax * 2^(shift - 15) and bmax * 2^shift below 2^30 */
		if (gmax > 0)
			shift = (int)fmin(shift, floor(45 - log2(gmax)));
		if (bmax > 0)
			shift = (int)fmin(shift, floor(30 - log2(bmax)));
		if (shift < 16)
			return WHY("scale / bias over output scale %g too large", qout->scale);
		consts = seg_own(lc->seg, 8 * (size_t)c);
		l = consts ? new_unary_lop(lc, NPU_LOP_ROWS, n) : NULL;
		if (!l)
			return WHY("out of memory");
		for (k = 0; k < c; k++) {
			int32_t m = (int32_t)llround(ldexp(gamma[k] / qout->scale, shift - 15));
			int32_t b = beta ? (int32_t)llround(ldexp(beta[k] / qout->scale, shift)) : 0;

			memcpy(consts + 4 * k, &m, 4);
			memcpy(consts + 4 * ((size_t)c + k), &b, 4);
		}
		e = eps * c * (double)c / ((double)qin->scale * qin->scale);
		l->rows.opcode = NPU_OP_LAYERNORM;
		l->rows.shift = (uint8_t)shift;
		l->rows.eps = e >= 4294967295.0 ? UINT32_MAX : (uint32_t)llround(e);
		l->rows.consts = consts;
		l->rows.consts_size = 8 * c;
		return true;
	}
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

/* Whether the group's nodes are the only readers of its input x. */
static bool group_alone_reads_x(const struct npu_lower_ctx *lc, const struct npu_pw_group *grp)
{
	size_t i, j, k;

	if (grp->x->is_graph_output)
		return false;
	for (i = 0; i < lc->graph->num_nodes; i++) {
		const struct npu_node *n = lc->graph->nodes[i];
		bool member = false;

		for (k = 0; k < grp->count; k++)
			member |= grp->nodes[k] == n;
		for (j = 0; !member && j < n->num_inputs; j++)
			if (n->inputs[j] == grp->x)
				return false;
	}
	return true;
}

/*
 * The LUT of a pointwise group right after the op producing its input x
 * (a conv, matmul or eltwise with no LUT of its own, whose output only the
 * group reads) becomes that op's output stage: the op requantizes to x's
 * parameters and applies the table in SRAM, so x never goes to DRAM and
 * back. Returns true when it merged.
 */
static bool fuse_lut_into_producer(struct npu_lower_ctx *lc, const struct npu_pw_group *grp,
				   const int8_t *table)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	const struct npu_qparams *qx = value_q(lc, grp->x);
	struct npu_lop *prev = NULL;
	int x = lc->act_of[grp->x->index] ? (int)lc->act_of[grp->x->index] - 1 : -1;
	size_t j, at = 0, writers = 0;
	int y;

	/*
	 * The producer need not be the lop lowered last (graph order may put
	 * other branches between, e.g. det's LCNet blocks before an FPN
	 * lateral): the LUT's input x has no other reader, so the producer
	 * writes y instead of x wherever it runs. opts.lut_last_producer_only
	 * (tests) takes only the last lop.
	 */
	bool last_only = prog->opts.lut_last_producer_only;

	for (j = last_only && prog->num_lops ? prog->num_lops - 1 : 0; x >= 0 && j < prog->num_lops; j++)
		if (prog->lops[j].out == (uint32_t)x) {
			at = j;
			writers++;
		}
	if (writers == 1)
		prev = &prog->lops[at];
	/* Only a producer of the LUT's precision takes it as its output stage. */
	if (!prev || !qx || x < 0 || prev->out != (uint32_t)x || prog->acts[x].i16 != lc->want16 ||
	    !group_alone_reads_x(lc, grp))
		return false;
	if (!((prev->kind == NPU_LOP_CONV && !prev->conv.q.lut && !prev->conv.q.lut16) ||
	      (prev->kind == NPU_LOP_MATMUL && !prev->matmul.q.lut && !prev->matmul.q.lut16) ||
	      (prev->kind == NPU_LOP_ELTWISE && !prev->elt.lut && !prev->elt.lut16)))
		return false;
	y = npu_lower_act(lc, grp->y);
	if (y < 0)
		return false;
	prev = &prog->lops[at];	/* acts moved, lops did not */
	if (lc->want16) {
		const int16_t *t16 = (const int16_t *)(const void *)table;

		if (prev->kind == NPU_LOP_CONV)
			prev->conv.q.lut16 = t16;
		else if (prev->kind == NPU_LOP_MATMUL)
			prev->matmul.q.lut16 = t16;
		else
			prev->elt.lut16 = t16;
	} else if (prev->kind == NPU_LOP_CONV) {
		prev->conv.q.lut = table;
		prev->conv.q.pre_act_zp = (int16_t)qx->zero_point;
	} else if (prev->kind == NPU_LOP_MATMUL) {
		prev->matmul.q.lut = table;
		prev->matmul.q.pre_act_zp = (int16_t)qx->zero_point;
	} else {
		prev->elt.lut = table;
		prev->elt.pre_act_zp = (int16_t)qx->zero_point;
	}
	prev->out = (uint32_t)y;
	return true;
}

static bool lower_pointwise(struct npu_lower_ctx *lc, const struct npu_pw_group *grp,
			    char *why, size_t why_size)
{
	const struct npu_qparams *qin = value_q(lc, grp->x), *qout = value_q(lc, grp->y);
	struct npu_error err = { 0 };
	struct npu_lop *l;
	int8_t *table;
	int in, out;

	if (!qin || !qout)
		return WHY("no quantization parameters (not calibrated)");
	/* int16: 513 int16 knots (1026 bytes), handed around as bytes. */
	table = seg_own(lc->seg, lc->want16 ? 1026 : 256);
	if (!table)
		return WHY("out of memory");
	if (lc->want16 ? npu_pointwise_table16(grp, NULL, *qin, *qout,
					       (int16_t *)(void *)table, &err) != NPU_OK :
			 npu_pointwise_table(grp, *qin, *qout, table, &err) != NPU_OK)
		return WHY("%s", err.msg);
	if (fuse_lut_into_producer(lc, grp, table))
		return true;
	in = npu_lower_act(lc, grp->x);
	out = npu_lower_act(lc, grp->y);
	l = in < 0 || out < 0 ? NULL : new_lop(lc, NPU_LOP_LUT, grp->y->producer);
	if (!l)
		return WHY("out of memory");
	l->in = (uint32_t)in;
	l->out = (uint32_t)out;
	if (lc->want16)
		l->lut.table16 = (const int16_t *)(const void *)table;
	else
		l->lut.table = table;
	return true;
}

bool npu_lower_pointwise(struct npu_lower_ctx *lc, const struct npu_pw_group *grp,
			 char *why, size_t why_size)
{
	bool ok, saved = lc->want16;

	/* A group of 2+ nodes decides here; one LUT node in npu_lower_node(). */
	if (grp->count > 1)
		lc->want16 = npu_group_int16(lc->opts, grp);
	ok = lower_pointwise(lc, grp, why, why_size);
	lc->want16 = saved;
	return ok;
}

/* ---- Data movement: Concat, Split, Slice, Reshape as COPY lops ---- */

/*
 * Where ONNX axis 'axis' of v lies in its arena storage order (NHWC for a
 * rank-4 value, row-major otherwise), and the bytes of one step along it
 * ('unit': the storage dims inside it) and of everything outside it.
 */
static bool storage_axis(const struct npu_value *v, int64_t axis, uint64_t *outer,
			 uint64_t *dim, uint64_t *unit)
{
	int64_t d[NPU_MAX_RANK];
	int rank = v->shape.rank, i, sa;

	if (axis < 0)
		axis += rank;
	if (axis < 0 || axis >= rank || rank > NPU_MAX_RANK)
		return false;
	for (i = 0; i < rank; i++)
		d[i] = v->shape.dims[i];
	sa = (int)axis;
	if (npu_value_layout(v) == NPU_LAYOUT_NHWC) {
		static const int to_nhwc[4] = { 0, 3, 1, 2 };

		d[0] = v->shape.dims[0];
		d[1] = v->shape.dims[2];
		d[2] = v->shape.dims[3];
		d[3] = v->shape.dims[1];
		sa = to_nhwc[axis];
	}
	*outer = 1;
	*unit = 1;
	for (i = 0; i < sa; i++)
		*outer *= (uint64_t)d[i];
	for (i = sa + 1; i < rank; i++)
		*unit *= (uint64_t)d[i];
	*dim = (uint64_t)d[sa];
	return *outer <= UINT32_MAX && *dim * *unit <= UINT32_MAX;
}

/*
 * Transposes as DMA: the storage order of a value (NHWC for rank 4) as
 * canonical axis ids, unit dims dropped. A movement maps x's storage to
 * y's: [b][p][q][k] -> [b][q][p][k] (bytes; p = q = 1 is a plain copy),
 * found by merging the axes that stay adjacent.
 */
struct movement {
	uint64_t b, p, q, k;
};

static int storage_seq(const struct npu_value *v, const int *ids, int *seq, uint64_t *dims)
{
	static const int nhwc[4] = { 0, 2, 3, 1 };
	int r = v->shape.rank, k, n = 0;

	for (k = 0; k < r; k++) {
		int a = npu_value_layout(v) == NPU_LAYOUT_NHWC ? nhwc[k] : k;

		if (v->shape.dims[a] == 1)
			continue;
		seq[n] = ids[a];
		dims[n++] = (uint64_t)v->shape.dims[a];
	}
	return n;
}

static bool movement_of(const struct npu_value *x, const struct npu_value *y, const int *yids,
			struct movement *mv)
{
	int xids[NPU_MAX_RANK], sa[NPU_MAX_RANK], sb[NPU_MAX_RANK], pos[NPU_MAX_RANK];
	int start[NPU_MAX_RANK], order[NPU_MAX_RANK], na, nb, g = 0, i, j;
	uint64_t da[NPU_MAX_RANK], db[NPU_MAX_RANK], size[NPU_MAX_RANK];

	if (x->shape.rank > NPU_MAX_RANK || y->shape.rank > NPU_MAX_RANK)
		return false;
	for (i = 0; i < x->shape.rank; i++)
		xids[i] = i;
	na = storage_seq(x, xids, sa, da);
	nb = storage_seq(y, yids, sb, db);
	if (na != nb)
		return false;
	for (j = 0; j < nb; j++) {
		for (i = 0; i < na && !(sa[i] == sb[j] && da[i] == db[j]); i++)
			;
		if (i == na)
			return false;
		pos[j] = i;
		/* Groups in y's order: a new one where x's order breaks. */
		if (!j || pos[j] != pos[j - 1] + 1) {
			start[g] = i;
			size[g++] = 1;
		}
		size[g - 1] *= db[j];
	}
	mv->b = mv->p = mv->q = 1;
	mv->k = (uint64_t)npu_shape_numel(&x->shape);
	if (g <= 1)
		return true;
	/* order: the groups sorted by where they sit in x's storage. */
	for (i = 0; i < g; i++)
		order[i] = i;
	for (i = 1; i < g; i++)
		for (j = i; j > 0 && start[order[j]] < start[order[j - 1]]; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	mv->k = 1;
	if (g == 2 && order[0] == 1) {			/* [G1][G0] -> [G0][G1] */
		mv->p = size[1], mv->q = size[0];
	} else if (g == 3 && order[0] == 0 && order[1] == 2) {	/* batch G0 */
		mv->b = size[0], mv->p = size[2], mv->q = size[1];
	} else if (g == 3 && order[0] == 1 && order[1] == 0) {	/* inner G2 */
		mv->p = size[1], mv->q = size[0], mv->k = size[2];
	} else if (g == 4 && order[0] == 0 && order[1] == 2 && order[2] == 1) {
		mv->b = size[0], mv->p = size[2], mv->q = size[1], mv->k = size[3];
	} else {
		return false;
	}
	return mv->b <= 4096 && mv->b * mv->p * mv->q * mv->k <= UINT32_MAX;
}

/* y's canonical axes as x's: Transpose by 'perm', reshapes by unit dims. */
static bool movement_ids(const struct npu_node *n, int *yids)
{
	const struct npu_value *x = n->inputs[0], *y = n->outputs[0];
	int r = y->shape.rank, i, j;

	if (r > NPU_MAX_RANK || x->shape.rank > NPU_MAX_RANK)
		return false;
	if (is_op(n, "Transpose")) {
		const struct npu_attr *a = npu_node_attr(n, "perm");

		if (x->shape.rank != r)
			return false;
		for (i = 0; i < r; i++)
			yids[i] = r - 1 - i;
		if (a && (a->type != NPU_ATTR_INTS || a->count != (size_t)r))
			return false;
		for (i = 0; a && i < r; i++) {
			if (a->ints[i] < 0 || a->ints[i] >= r)
				return false;
			yids[i] = (int)a->ints[i];
		}
		return true;
	}
	/* A reshape that only adds or drops unit dims keeps the others in order. */
	for (i = 0, j = 0; i < r; i++) {
		if (y->shape.dims[i] == 1) {
			yids[i] = -1;
			continue;
		}
		while (j < x->shape.rank && x->shape.dims[j] == 1)
			j++;
		if (j == x->shape.rank || x->shape.dims[j] != y->shape.dims[i])
			return false;
		yids[i] = j++;
	}
	while (j < x->shape.rank && x->shape.dims[j] == 1)
		j++;
	return j == x->shape.rank;
}

/* Slice's starts / ends / axes / steps: attribute (opset < 10) or constant input. */
static bool slice_ints(const struct npu_node *n, const char *name, size_t input,
		       int64_t *v, size_t *count, bool *present)
{
	const struct npu_attr *a = n->opset < 10 ? npu_node_attr(n, name) : NULL;
	const struct npu_value *c = n->opset >= 10 && input < n->num_inputs ? n->inputs[input] : NULL;
	int64_t i, cnt;

	*present = a || c;
	*count = 0;
	if (a) {
		if (a->type != NPU_ATTR_INTS || a->count > NPU_MAX_RANK)
			return false;
		for (i = 0; i < (int64_t)a->count; i++)
			v[i] = a->ints[i];
		*count = a->count;
		return true;
	}
	if (!c)
		return true;
	if (!c->constant || c->shape.rank != 1)
		return false;
	cnt = npu_shape_numel(&c->shape);
	if (cnt < 0 || cnt > NPU_MAX_RANK)
		return false;
	for (i = 0; i < cnt; i++) {
		if (c->constant->dtype == NPU_DTYPE_INT64)
			v[i] = ((const int64_t *)c->constant->data)[i];
		else if (c->constant->dtype == NPU_DTYPE_INT32)
			v[i] = ((const int32_t *)c->constant->data)[i];
		else
			return false;
	}
	*count = (size_t)cnt;
	return true;
}

/*
 * A Slice with step 1 that cuts at most one axis: the elements
 * [start, start + len) of 'axis' (a plain block of storage rows, by DMA).
 */
static bool slice_geometry(const struct npu_node *n, int64_t *axis, int64_t *start,
			   int64_t *len, char *why, size_t why_size)
{
	const struct npu_value *x = n->inputs[0], *y = n->outputs[0];
	int64_t st[NPU_MAX_RANK], en[NPU_MAX_RANK], ax[NPU_MAX_RANK], sp[NPU_MAX_RANK];
	size_t ns, ne, na, np, i;
	bool has_s, has_e, has_a, has_p, cut = false;
	int r = x->shape.rank;

	if (!slice_ints(n, "starts", 1, st, &ns, &has_s) ||
	    !slice_ints(n, "ends", 2, en, &ne, &has_e) ||
	    !slice_ints(n, "axes", 3, ax, &na, &has_a) ||
	    !slice_ints(n, "steps", 4, sp, &np, &has_p) || !has_s || !has_e || ns != ne ||
	    (has_a && na != ns) || (has_p && np != ns))
		return WHY("starts / ends / axes / steps are not constants of one length");
	if (y->shape.rank != r)
		return WHY("output rank differs");
	*axis = 0, *start = 0, *len = r ? x->shape.dims[0] : 1;
	for (i = 0; i < ns; i++) {
		int64_t a = has_a ? ax[i] : (int64_t)i, d, b, e;

		if (a < 0)
			a += r;
		if (a < 0 || a >= r)
			return WHY("axis %lld out of range", (long long)(has_a ? ax[i] : (int64_t)i));
		if (has_p && sp[i] != 1)
			return WHY("step %lld on axis %lld: only step 1 is a block copy",
				   (long long)sp[i], (long long)a);
		d = x->shape.dims[a];
		b = st[i] < 0 ? st[i] + d : st[i];
		e = en[i] < 0 ? en[i] + d : en[i];
		b = b < 0 ? 0 : b > d ? d : b;
		e = e < 0 ? 0 : e > d ? d : e;
		if (e <= b)
			return WHY("empty slice of axis %lld", (long long)a);
		if (b == 0 && e == d)
			continue;
		if (cut)
			return WHY("it cuts more than one axis");
		cut = true;
		*axis = a, *start = b, *len = e - b;
	}
	if (!r || y->shape.dims[*axis] != *len)
		return WHY("output shape does not match the slice");
	if (npu_value_layout(x) != npu_value_layout(y))
		return WHY("input and output are stored in different orders (NHWC and rows)");
	return true;
}

bool npu_data_movement_geometry(const struct npu_node *n, char *why, size_t why_size)
{
	const struct npu_value *y = n->outputs[0];
	uint64_t outer, dim, unit, o2, d2, u2;
	size_t i;

	if (is_op(n, "Concat")) {
		int64_t axis = npu_node_attr_int_or(n, "axis", 0);

		if (!storage_axis(y, axis, &outer, &dim, &unit))
			return WHY("axis %lld has no NPU form", (long long)axis);
		for (i = 0; i < n->num_inputs; i++) {
			const struct npu_value *x = n->inputs[i];

			if (!x || x->constant || x->dtype != NPU_DTYPE_FLOAT ||
			    x->shape.rank != y->shape.rank)
				return WHY("input %zu is not a float activation of rank %d", i,
					   y->shape.rank);
			if (!storage_axis(x, axis, &o2, &d2, &u2) || o2 != outer || u2 != unit)
				return WHY("input %zu does not match the output outside the axis", i);
		}
		return true;
	}
	if (is_op(n, "Split")) {
		int64_t axis = npu_node_attr_int_or(n, "axis", 0);
		const struct npu_value *x = n->inputs[0];

		if (!storage_axis(x, axis, &outer, &dim, &unit))
			return WHY("axis %lld has no NPU form", (long long)axis);
		for (i = 0; i < n->num_outputs; i++) {
			const struct npu_value *o = n->outputs[i];
			int k;

			if (!o || o->dtype != NPU_DTYPE_FLOAT || o->shape.rank != x->shape.rank)
				return WHY("output %zu is not a float tensor of rank %d", i,
					   x->shape.rank);
			for (k = 0; k < o->shape.rank; k++)
				if (o->shape.dims[k] <= 0)
					return WHY("output %zu has no static shape", i);
			if (!storage_axis(o, axis, &o2, &d2, &u2) || o2 != outer || u2 != unit)
				return WHY("output %zu does not match the input outside the axis", i);
		}
		return true;
	}
	if (is_op(n, "Slice")) {
		int64_t axis, start, len;

		if (!slice_geometry(n, &axis, &start, &len, why, why_size))
			return false;
		if (!storage_axis(n->inputs[0], axis, &outer, &dim, &unit))
			return WHY("axis %lld has no NPU form", (long long)axis);
		return true;
	}
	/* Reshape and friends: the same bytes in the same order, or nothing. */
	{
		const struct npu_value *x = n->inputs[0];
		struct npu_act a, b;

		npu_value_act_dims(x, &a);
		npu_value_act_dims(y, &b);
		if (npu_shape_numel(&x->shape) != npu_shape_numel(&y->shape))
			return WHY("element counts differ");
		/* Both sides stored row-major (NHWC with C = 1 or H = W = 1 is),
		 * or the same NHWC tensor: not a byte moves. */
		if (!is_op(n, "Transpose") && npu_value_layout(x) == NPU_LAYOUT_NHWC &&
		    npu_value_layout(y) == NPU_LAYOUT_NHWC &&
		    a.n == b.n && a.h == b.h && a.w == b.w && a.c == b.c)
			return true;
		if (!is_op(n, "Transpose") &&
		    (npu_value_layout(x) == NPU_LAYOUT_ROWS || a.c == 1 || a.h * a.w == 1) &&
		    (npu_value_layout(y) == NPU_LAYOUT_ROWS || b.c == 1 || b.h * b.w == 1))
			return true;
		/* Else a transpose of two blocks of storage axes, by DMA. */
		{
			int yids[NPU_MAX_RANK];
			struct movement mv;

			if (movement_ids(n, yids) && movement_of(x, y, yids, &mv))
				return true;
		}
		return WHY("the byte order it needs is not one transpose of two axis groups");
	}
}

/* A reshape whose bytes stay where they are (npu_data_movement_geometry). */
static bool identity_reshape(const struct npu_value *x, const struct npu_value *y)
{
	struct npu_act a, b;

	npu_value_act_dims(x, &a);
	npu_value_act_dims(y, &b);
	if (npu_value_layout(x) == NPU_LAYOUT_NHWC && npu_value_layout(y) == NPU_LAYOUT_NHWC)
		return a.n == b.n && a.h == b.h && a.w == b.w && a.c == b.c;
	return (npu_value_layout(x) == NPU_LAYOUT_ROWS || a.c == 1 || a.h * a.w == 1) &&
	       (npu_value_layout(y) == NPU_LAYOUT_ROWS || b.c == 1 || b.h * b.w == 1);
}

/* A LUT from one int8 quantization to another, or NULL when they agree. */
static const int8_t *requant_table(struct npu_lower_ctx *lc, const struct npu_qparams *from,
				   const struct npu_qparams *to, bool *oom)
{
	int8_t *t;
	int i;

	*oom = false;
	if (from->scale == to->scale && from->zero_point == to->zero_point)
		return NULL;
	t = seg_own(lc->seg, 256);
	if (!t) {
		*oom = true;
		return NULL;
	}
	for (i = 0; i < 256; i++)
		t[i] = npu_quantize_value(npu_dequantize_value((int8_t)(i - 128), *from), *to);
	return t;
}

static bool add_copy(struct npu_lower_ctx *lc, const struct npu_node *n,
		     struct npu_value *x, struct npu_value *y, uint32_t rows,
		     uint32_t row_bytes, uint64_t src_off, uint64_t src_stride,
		     uint64_t dst_off, uint64_t dst_stride, char *why, size_t why_size)
{
	const struct npu_qparams *qx = value_q(lc, x), *qy = value_q(lc, y);
	int in, out;
	struct npu_lop *l;
	bool oom = false;

	if (!qx || !qy)
		return WHY("no quantization parameters (not calibrated)");
	in = npu_lower_act(lc, x);
	out = npu_lower_act(lc, y);
	if (lc->want16 && in >= 0 && qx->scale != qy->scale) {
		/* int16 has no LUT copy: an ELTWISE rescales x to y's scale first. */
		int native = in;

		if (!requant_to(lc, x, native, qy, "to_concat16", &in))
			return WHY("cannot rescale '%s' to the int16 scale of '%s'", x->name,
				   y->name);
		qx = qy;
	}
	if (lc->want16) {	/* the geometry counts elements of 2 bytes */
		row_bytes *= 2;
		src_off *= 2;
		src_stride *= 2;
		dst_off *= 2;
		dst_stride *= 2;
	}
	l = in < 0 || out < 0 ? NULL : new_lop(lc, NPU_LOP_COPY, n);
	if (!l)
		return WHY("out of memory");
	l->in = (uint32_t)in;
	l->out = (uint32_t)out;
	l->copy.rows = rows;
	l->copy.row_bytes = row_bytes;
	l->copy.src_off = src_off;
	l->copy.src_stride = rows > 1 ? src_stride : row_bytes;
	l->copy.dst_off = dst_off;
	l->copy.dst_stride = rows > 1 ? dst_stride : row_bytes;
	l->copy.lut = lc->want16 ? NULL : requant_table(lc, qx, qy, &oom);
	if (!lc->want16 && oom) {
		lc->seg->prog.num_lops--;
		return WHY("out of memory");
	}
	return true;
}

/*
 * A transpose right after the copies that made its input x, when the two
 * together put every byte back where it was (a Reshape NCHW -> rows and
 * the Transpose that undoes it, as exporters write them): one plain copy
 * from their source instead of two passes of one-byte DMA rows. x must be
 * written only by those plain copies (the last lops) and read only by n.
 */
static bool undo_transpose_pair(struct npu_lower_ctx *lc, struct npu_node *n,
				const struct movement *mv)
{
	struct npu_segment_program *prog = &lc->seg->prog;
	struct npu_value *x = n->inputs[0];
	const struct npu_qparams *qy = value_q(lc, n->outputs[0]);
	uint64_t bytes = (uint64_t)npu_shape_numel(&x->shape), i, b, p, q, k;
	uint32_t xa, src = 0, *from, r, j, t;
	size_t first = prog->num_lops, m;
	const int8_t *lut;
	struct npu_lop *l;
	int y;
	bool ok = true, oom;

	if (!lc->act_of[x->index] || !qy || x->is_graph_output || bytes > (1u << 20))
		return false;
	xa = lc->act_of[x->index] - 1;
	while (first > 0 && prog->lops[first - 1].out == xa)
		first--;
	if (first == prog->num_lops)
		return false;
	for (m = first; m < prog->num_lops; m++)
		if (prog->lops[m].kind != NPU_LOP_COPY || prog->lops[m].copy.lut ||
		    prog->lops[m].in != prog->lops[first].in)
			return false;
	for (m = 0; m < first; m++)
		if (prog->lops[m].out == xa)
			return false;
	for (i = 0; i < lc->graph->num_nodes; i++)
		for (j = 0; j < lc->graph->nodes[i]->num_inputs; j++)
			if (lc->graph->nodes[i]->inputs[j] == x && lc->graph->nodes[i] != n)
				return false;
	src = prog->lops[first].in;
	if (npu_act_bytes(&prog->acts[src]) != bytes)
		return false;
	/* from[i]: the byte of the source that lands on byte i of x. */
	from = malloc(bytes * sizeof(*from));
	if (!from)
		return false;
	for (i = 0; i < bytes; i++)
		from[i] = UINT32_MAX;
	for (m = first; m < prog->num_lops; m++) {
		const struct npu_lop *c = &prog->lops[m];

		for (t = 0; t < (c->copy.count > 1 ? c->copy.count : 1); t++)
			for (r = 0; r < c->copy.rows; r++)
				for (j = 0; j < c->copy.row_bytes; j++)
					from[c->copy.dst_off + t * c->copy.dst_step +
					     (uint64_t)r * c->copy.dst_stride + j] =
						(uint32_t)(c->copy.src_off + t * c->copy.src_step +
							   (uint64_t)r * c->copy.src_stride + j);
	}
	/* y[b][q][p][k] = x[b][p][q][k]: the pair is the identity if that
	 * byte of x came from the same offset of the source. */
	for (b = 0; ok && b < mv->b; b++)
		for (p = 0; ok && p < mv->p; p++)
			for (q = 0; ok && q < mv->q; q++)
				for (k = 0; ok && k < mv->k; k++) {
					uint64_t yi = ((b * mv->q + q) * mv->p + p) * mv->k + k;
					uint64_t xi = ((b * mv->p + p) * mv->q + q) * mv->k + k;

					ok = from[xi] == yi;
				}
	free(from);
	if (!ok)
		return false;
	lut = requant_table(lc, &prog->acts[src].q, qy, &oom);
	y = npu_lower_act(lc, n->outputs[0]);
	if (oom || y < 0)
		return false;
	{
		/* Out of memory must leave the copies as they were. */
		size_t had = prog->num_lops;
		struct npu_lop *keep = malloc((had - first) * sizeof(*keep));

		if (!keep)
			return false;
		memcpy(keep, &prog->lops[first], (had - first) * sizeof(*keep));
		prog->num_lops = first;	/* x is no longer made: drop_unused_acts() */
		l = new_lop(lc, NPU_LOP_COPY, n);
		if (!l) {
			memcpy(&prog->lops[first], keep, (had - first) * sizeof(*keep));
			prog->num_lops = had;
			free(keep);
			return false;
		}
		free(keep);
	}
	l->in = src;
	l->out = (uint32_t)y;
	l->copy.rows = 1;
	l->copy.row_bytes = (uint32_t)bytes;
	l->copy.src_stride = l->copy.dst_stride = bytes;
	l->copy.lut = lut;
	return true;
}

/*
 * Concat / Split along any axis: in storage order each input (output) is
 * 'outer' rows of dim_i * unit bytes, a column block of the wide side.
 */
static bool lower_data_movement(struct npu_lower_ctx *lc, struct npu_node *n,
				char *why, size_t why_size)
{
	size_t lops = lc->seg->prog.num_lops, i;
	uint64_t outer, dim, unit, wide, off = 0, o2, d2, u2;
	int64_t axis = npu_node_attr_int_or(n, "axis", 0);

	if (!npu_data_movement_geometry(n, why, why_size))
		return false;
	if (is_op(n, "Concat")) {
		storage_axis(n->outputs[0], axis, &outer, &dim, &unit);
		wide = dim * unit;
		for (i = 0; i < n->num_inputs; i++) {
			storage_axis(n->inputs[i], axis, &o2, &d2, &u2);
			if (!add_copy(lc, n, n->inputs[i], n->outputs[0], (uint32_t)outer,
				      (uint32_t)(d2 * u2), 0, d2 * u2, off, wide, why, why_size))
				goto undo;
			off += d2 * u2;
		}
		return true;
	}
	if (is_op(n, "Slice")) {	/* outer rows of len * unit bytes at start */
		int64_t start, len;

		slice_geometry(n, &axis, &start, &len, why, why_size);
		storage_axis(n->inputs[0], axis, &outer, &dim, &unit);
		return add_copy(lc, n, n->inputs[0], n->outputs[0], (uint32_t)outer,
				(uint32_t)(len * unit), (uint64_t)start * unit, dim * unit, 0,
				len * unit, why, why_size);
	}
	if (is_op(n, "Split")) {
		storage_axis(n->inputs[0], axis, &outer, &dim, &unit);
		wide = dim * unit;
		for (i = 0; i < n->num_outputs; i++) {
			storage_axis(n->outputs[i], axis, &o2, &d2, &u2);
			if (!add_copy(lc, n, n->inputs[0], n->outputs[i], (uint32_t)outer,
				      (uint32_t)(d2 * u2), off, wide, 0, d2 * u2, why, why_size))
				goto undo;
			off += d2 * u2;
		}
		return true;
	}
	{
		struct npu_value *x = n->inputs[0], *y = n->outputs[0];
		uint64_t bytes = (uint64_t)npu_shape_numel(&x->shape), b;
		int yids[NPU_MAX_RANK];
		struct movement mv = { .b = 1, .p = 1, .q = 1, .k = bytes };

		if (bytes > UINT32_MAX)
			return WHY("tensor too large for one copy");
		/* Not byte-preserving (npu_data_movement_geometry said which): a transpose. */
		if (is_op(n, "Transpose") || !identity_reshape(x, y))
			if (!movement_ids(n, yids) || !movement_of(x, y, yids, &mv))
				return WHY("the byte order it needs is not one transpose of two axis groups");
		if (mv.p == 1 || mv.q == 1)
			return add_copy(lc, n, x, y, 1, (uint32_t)bytes, 0, bytes, 0, bytes,
					why, why_size);
		if (undo_transpose_pair(lc, n, &mv))
			return true;
		/* Per batch b: [p][q][k] -> [q][p][k], one DMA per row of the
		 * smaller side (each DMA costs a setup). */
		for (b = 0; b < mv.b; b++) {
			uint64_t base = b * mv.p * mv.q * mv.k;
			struct npu_lop *l;
			bool ok;

			if (mv.q <= mv.p)	/* DMA q gathers column q: p rows */
				ok = add_copy(lc, n, x, y, (uint32_t)mv.p, (uint32_t)mv.k, base,
					      mv.q * mv.k, base, mv.k, why, why_size);
			else			/* DMA p scatters row p: q rows */
				ok = add_copy(lc, n, x, y, (uint32_t)mv.q, (uint32_t)mv.k, base, mv.k,
					      base, mv.p * mv.k, why, why_size);
			if (!ok)
				goto undo;
			l = &lc->seg->prog.lops[lc->seg->prog.num_lops - 1];
			l->copy.count = (uint32_t)(mv.q <= mv.p ? mv.q : mv.p);
			l->copy.src_step = mv.q <= mv.p ? mv.k : mv.q * mv.k;
			l->copy.dst_step = mv.q <= mv.p ? mv.p * mv.k : mv.k;
		}
		return true;
	}
undo:
	lc->seg->prog.num_lops = lops;
	return false;
}

bool npu_node_int16(const struct npu_compile_options *opts, const struct npu_pw_groups *pw,
		    const struct npu_node *n, char *why, size_t why_size)
{
	bool named = false;
	size_t i;

	for (i = 0; i < opts->num_int16_nodes && !named; i++)
		named = !strcmp(opts->int16_nodes[i], n->name);
	if (!named && !opts->int16_all)
		return false;
	/* A pointwise group is one LUT: npu_group_int16() decides for it. */
	if (pw && npu_pointwise_group_of(pw, n))
		return false;
	if (n->domain[0] ||
	    !(is_op(n, "Conv") || is_op(n, "Gemm") ||
	      (is_op(n, "MatMul") && n->num_inputs == 2 && n->inputs[1] && n->inputs[1]->constant) ||
	      is_op(n, "MaxPool") || is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool") ||
	      is_op(n, "Add") || is_op(n, "Mul") ||
	      /* 2-byte elements: RESIZE's I16 form, DMA copies, zero insertion */
	      is_op(n, "Resize") || is_op(n, "Concat") || is_op(n, "ConvTranspose") ||
	      (npu_lut_function_known(n->op_type) && !npu_is_data_movement(n) &&
	       !npu_rows_op(n)))) {
		if (why && named)
			snprintf(why, why_size, "%s has no int16 form in the compiler", n->op_type);
		return false;
	}
	return true;
}

bool npu_group_int16(const struct npu_compile_options *opts, const struct npu_pw_group *grp)
{
	size_t i, j;

	if (opts->int16_all)
		return true;
	for (i = 0; i < grp->count; i++)
		for (j = 0; j < opts->num_int16_nodes; j++)
			if (!strcmp(opts->int16_nodes[j], grp->nodes[i]->name))
				return true;
	return false;
}

bool npu_lower_node(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		    size_t why_size)
{
	bool ok;

	/* Pointwise groups go to npu_lower_pointwise(), never here. */
	lc->want16 = npu_node_int16(lc->opts, NULL, n, NULL, 0);
	ok = lower_node(lc, n, why, why_size);
	lc->want16 = false;
	return ok;
}

static bool lower_node(struct npu_lower_ctx *lc, struct npu_node *n, char *why,
		       size_t why_size)
{
	if (is_op(n, "Conv"))
		return lower_conv(lc, n, why, why_size);
	if (is_op(n, "ConvTranspose"))
		return lower_conv_transpose(lc, n, why, why_size);
	if (is_op(n, "Resize"))
		return lower_resize(lc, n, why, why_size);
	if (is_op(n, "MatMul") && n->num_inputs == 2 && !n->inputs[1]->constant)
		return lower_matmul_act(lc, n, why, why_size);
	if (is_op(n, "Gemm") || is_op(n, "MatMul"))
		return lower_gemm(lc, n, why, why_size);
	if (is_op(n, "MaxPool") || is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool"))
		return lower_pool(lc, n, why, why_size);
	if (is_op(n, "Add") || is_op(n, "Mul"))
		return lower_binary(lc, n, why, why_size);
	if (npu_is_data_movement(n))
		return lower_data_movement(lc, n, why, why_size);
	if (npu_rows_op(n))
		return lower_rows(lc, n, why, why_size);
	return lower_lut(lc, n, why, why_size);
}
