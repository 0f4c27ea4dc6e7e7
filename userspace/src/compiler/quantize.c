// SPDX-License-Identifier: MIT
/*
 * Quantization parameters of every NPU value: the model's own (QDQ) where
 * it has them, else asymmetric int8 over the calibrated range. Max and
 * average pooling cannot rescale, so their output takes their input's
 * parameters (GlobalAveragePool becomes a convolution, which can); so
 * does Resize.
 */
#include "compiler/compiler.h"
#include "compiler/lower.h"
#include "compiler/pointwise.h"

#include <stdlib.h>
#include <string.h>

/* Whether every reader of 'v' is one of the group's nodes. */
static bool read_only_by(const struct npu_graph *g, const struct npu_value *v,
			 const struct npu_pw_group *grp)
{
	size_t i, j, k;

	if (v->is_graph_output)
		return false;
	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];

		for (j = 0; j < n->num_inputs; j++) {
			if (n->inputs[j] != v)
				continue;
			for (k = 0; k < grp->count && grp->nodes[k] != n; k++)
				;
			if (k == grp->count)
				return false;
		}
	}
	return true;
}

/*
 * The input of a LUT (a pointwise group, or one activation node) keeps
 * only the part of its range where the function is not flat
 * (npu_pointwise_tighten_input). QDQ parameters are the model's: kept.
 */
static void tighten_lut_inputs(struct npu_graph *g, const struct npu_qdq_table *qdq,
			       const struct npu_pw_groups *pw, struct npu_qmap *qmap)
{
	size_t i;

	for (i = 0; i < pw->count + g->num_nodes; i++) {
		struct npu_node *one[1];
		struct npu_pw_group single = { .nodes = one, .count = 1 };
		const struct npu_pw_group *grp = i < pw->count ? &pw->groups[i] : &single;
		struct npu_error err = { 0 };
		struct npu_qparams before;

		if (i >= pw->count) {
			struct npu_node *n = g->nodes[i - pw->count];

			if (n->domain[0] || !npu_lut_function_known(n->op_type) ||
			    !strcmp(n->op_type, "Relu") || !strcmp(n->op_type, "Clip") ||
			    npu_pointwise_group_of(pw, n) || !n->num_inputs || !n->inputs[0] ||
			    n->num_outputs != 1 || !n->outputs[0])
				continue;
			one[0] = n;
			single.x = n->inputs[0];
			single.y = n->outputs[0];
		}
		if (!qmap->set[grp->x->index] || !qmap->set[grp->y->index] ||
		    npu_qdq_lookup(qdq, grp->x->name) || !read_only_by(g, grp->x, grp))
			continue;
		/* A function the CPU cannot evaluate here keeps its range. */
		before = qmap->q[grp->x->index];
		if (npu_pointwise_tighten_input(grp, &qmap->q[grp->x->index],
						qmap->q[grp->y->index], &err) == NPU_OK)
			qmap->flat_clamped[grp->x->index] =
				qmap->q[grp->x->index].scale < before.scale;
	}
}

/*
 * A graph input read only by nodes in the 16x8 mode is quantized to int16
 * on the host: as int8 (and an ELTWISE to int16) it would cap the whole
 * model at the input's int8 precision.
 */
static bool all_readers_int16(const struct npu_graph *g, const struct npu_compile_options *opts,
			      const struct npu_pw_groups *pw, const struct npu_value *v)
{
	size_t i, j;
	bool any = false;

	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];
		const struct npu_pw_group *grp = pw ? npu_pointwise_group_of(pw, n) : NULL;

		for (j = 0; j < n->num_inputs; j++) {
			if (n->inputs[j] != v)
				continue;
			if (grp ? !npu_group_int16(opts, grp) : !npu_node_int16(opts, pw, n, NULL, 0))
				return false;
			any = true;
		}
	}
	return any;
}

npu_status npu_build_qmap(struct npu_graph *g, const struct npu_calib_table *calib,
			  const struct npu_qdq_table *qdq,
			  const struct npu_compile_options *opts,
			  const struct npu_pw_groups *pw,
			  struct npu_qmap *qmap, struct npu_error *err)
{
	size_t i;

	qmap->count = g->num_values;
	qmap->q = calloc(qmap->count ? qmap->count : 1, sizeof(*qmap->q));
	qmap->set = calloc(qmap->count ? qmap->count : 1, sizeof(*qmap->set));
	qmap->flat_clamped = calloc(qmap->count ? qmap->count : 1, sizeof(*qmap->flat_clamped));
	qmap->i16 = calloc(qmap->count ? qmap->count : 1, sizeof(*qmap->i16));
	qmap->q16 = calloc(qmap->count ? qmap->count : 1, sizeof(*qmap->q16));
	if (!qmap->q || !qmap->set || !qmap->flat_clamped || !qmap->i16 || !qmap->q16)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "quantize: out of memory");
	for (i = 0; i < g->num_values; i++) {
		const struct npu_value *v = g->values[i];
		const struct npu_qparams *fixed = npu_qdq_lookup(qdq, v->name);
		float lo, hi;

		if (v->dtype != NPU_DTYPE_FLOAT || v->constant)
			continue;
		if (fixed) {
			qmap->q[i] = *fixed;
		} else if (i < calib->num_values && calib->seen[i]) {
			npu_calib_range(&calib->stats[i], opts->calib_method, opts->percentile,
					&lo, &hi);
			qmap->q[i] = npu_qparams_from_range(lo, hi);
		} else {
			continue;
		}
		/*
		 * The int16 form: symmetric. A calibrated value spans everything
		 * observed (TFLite's 16x8: 16 bits need no clipping, which the
		 * percentile / entropy / MSE ranges do for int8); a QDQ value its
		 * given int8 range.
		 */
		if (!fixed)
			npu_calib_range(&calib->stats[i], NPU_CALIB_MINMAX, 0.0, &lo, &hi);
		else {
			lo = (0 - qmap->q[i].zero_point - 128) * qmap->q[i].scale;
			hi = (127 - qmap->q[i].zero_point) * qmap->q[i].scale;
		}
		qmap->q16[i] = npu_qparams16_from_range(lo, hi);
		qmap->set[i] = true;
	}
	/* Outputs of the nodes in the 16x8 mode are int16 (npu_node_int16()). */
	for (i = 0; (opts->int16_all || opts->num_int16_nodes) && i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];
		size_t j;

		if (!npu_node_int16(opts, pw, n, NULL, 0))
			continue;
		for (j = 0; j < n->num_outputs; j++)
			if (n->outputs[j] && qmap->set[n->outputs[j]->index])
				qmap->i16[n->outputs[j]->index] = true;
	}
	for (i = 0; pw && (opts->int16_all || opts->num_int16_nodes) && i < pw->count; i++)
		if (npu_group_int16(opts, &pw->groups[i]) && qmap->set[pw->groups[i].y->index])
			qmap->i16[pw->groups[i].y->index] = true;
	for (i = 0; (opts->int16_all || opts->num_int16_nodes) && i < g->num_values; i++)
		if (qmap->set[i] && !g->values[i]->producer && all_readers_int16(g, opts, pw, g->values[i]))
			qmap->i16[i] = true;
	if (pw)
		tighten_lut_inputs(g, qdq, pw, qmap);
	/* Max / average pooling keep their input's scale (nodes are sorted). */
	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];
		const struct npu_value *x, *y;

		/* GlobalAveragePool is lowered as a convolution: it rescales. */
		if (n->domain[0] || (strcmp(n->op_type, "MaxPool") &&
				     strcmp(n->op_type, "AveragePool") &&
				     strcmp(n->op_type, "Resize")))	/* RESIZE cannot either */
			continue;
		x = n->inputs[0];
		y = n->outputs[0];
		if (x && y && qmap->set[x->index]) {
			qmap->q[y->index] = qmap->q[x->index];
			qmap->q16[y->index] = qmap->q16[x->index];
			qmap->set[y->index] = true;
			qmap->flat_clamped[y->index] = false;	/* its own narrowing is gone */
		}
	}
	return NPU_OK;
}

void npu_qmap_free(struct npu_qmap *qmap)
{
	free(qmap->q);
	free(qmap->set);
	free(qmap->flat_clamped);
	free(qmap->i16);
	free(qmap->q16);
	memset(qmap, 0, sizeof(*qmap));
}
