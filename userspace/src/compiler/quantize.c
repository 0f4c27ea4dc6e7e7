// SPDX-License-Identifier: MIT
/*
 * Quantization parameters of every NPU value: the model's own (QDQ) where
 * it has them, else asymmetric int8 over the calibrated range. Pooling
 * cannot rescale, so its output takes its input's parameters.
 */
#include "compiler/compiler.h"
#include "compiler/lower.h"

#include <stdlib.h>
#include <string.h>

npu_status npu_build_qmap(struct npu_graph *g, const struct npu_calib_table *calib,
			  const struct npu_qdq_table *qdq,
			  const struct npu_compile_options *opts,
			  struct npu_qmap *qmap, struct npu_error *err)
{
	size_t i;

	qmap->count = g->num_values;
	qmap->q = calloc(qmap->count ? qmap->count : 1, sizeof(*qmap->q));
	qmap->set = calloc(qmap->count ? qmap->count : 1, sizeof(*qmap->set));
	if (!qmap->q || !qmap->set)
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
		qmap->set[i] = true;
	}
	/* Max / average pooling keep their input's scale (nodes are sorted). */
	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];
		const struct npu_value *x, *y;

		if (n->domain[0] || (strcmp(n->op_type, "MaxPool") &&
				     strcmp(n->op_type, "AveragePool") &&
				     strcmp(n->op_type, "GlobalAveragePool")))
			continue;
		x = n->inputs[0];
		y = n->outputs[0];
		if (x && y && qmap->set[x->index]) {
			qmap->q[y->index] = qmap->q[x->index];
			qmap->set[y->index] = true;
		}
	}
	return NPU_OK;
}

void npu_qmap_free(struct npu_qmap *qmap)
{
	free(qmap->q);
	free(qmap->set);
	memset(qmap, 0, sizeof(*qmap));
}
