// SPDX-License-Identifier: MIT
/* QDQ recognition: QuantizeLinear -> DequantizeLinear pairs on activations. */
#include "compiler/passes/passes.h"

#include <stdlib.h>
#include <string.h>

void npu_qdq_table_free(struct npu_qdq_table *t)
{
	size_t i;

	for (i = 0; i < t->count; i++)
		free(t->entries[i].value);
	free(t->entries);
	memset(t, 0, sizeof(*t));
}

const struct npu_qparams *npu_qdq_lookup(const struct npu_qdq_table *t,
					 const char *value)
{
	size_t i;

	for (i = 0; t && i < t->count; i++)
		if (!strcmp(t->entries[i].value, value))
			return &t->entries[i].q;
	return NULL;
}

static int qdq_add(struct npu_qdq_table *t, const char *value,
		   struct npu_qparams q)
{
	if (npu_qdq_lookup(t, value))
		return 0;
	if (t->count == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct npu_qdq_entry *e = realloc(t->entries, cap * sizeof(*e));

		if (!e)
			return -1;
		t->entries = e;
		t->cap = cap;
	}
	t->entries[t->count].value = strdup(value);
	if (!t->entries[t->count].value)
		return -1;
	t->entries[t->count++].q = q;
	return 0;
}

/* Per-tensor scale and zero point of a Q or DQ node, as int8 parameters. */
static bool node_qparams(const struct npu_node *n, struct npu_qparams *q)
{
	const struct npu_value *s = n->num_inputs > 1 ? n->inputs[1] : NULL;
	const struct npu_value *z = n->num_inputs > 2 ? n->inputs[2] : NULL;
	int64_t count;
	const float *scale = npu_const_floats(s, &count);

	if (!scale || count != 1 || !(scale[0] > 0.0f))
		return false;
	q->scale = scale[0];
	q->zero_point = 0;
	if (!z)
		return true;	/* default zero point: uint8 0 */
	if (!z->constant || npu_shape_numel(&z->constant->shape) != 1)
		return false;
	if (z->constant->dtype == NPU_DTYPE_INT8)
		q->zero_point = *(const int8_t *)z->constant->data;
	else if (z->constant->dtype == NPU_DTYPE_UINT8)
		q->zero_point = (int32_t)*(const uint8_t *)z->constant->data - 128;
	else
		return false;
	return true;
}

npu_status npu_pass_qdq(struct npu_graph *g, void *arg, struct npu_error *err)
{
	struct npu_qdq_table *table = arg;
	size_t i;

	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *dq = g->nodes[i], *q;
		struct npu_qparams qp, dqp;
		struct npu_value *x;

		if (strcmp(dq->op_type, "DequantizeLinear") || dq->domain[0] ||
		    !dq->inputs[0] || !(q = dq->inputs[0]->producer) ||
		    strcmp(q->op_type, "QuantizeLinear") || q->domain[0] ||
		    !(x = q->inputs[0]) || x->constant ||
		    npu_value_single_user(g, dq->inputs[0]) != dq ||
		    !node_qparams(q, &qp) || !node_qparams(dq, &dqp) ||
		    qp.scale != dqp.scale || qp.zero_point != dqp.zero_point)
			continue;
		/* uint8 uses zp - 128 above: the same reals, in int8. */
		if (table && qdq_add(table, x->name, qp))
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "qdq: out of memory");
		npu_graph_replace_uses(g, dq->outputs[0], x);
		npu_graph_remove_node(g, dq);
		npu_graph_remove_node(g, q);
		i = (size_t)-1;
	}
	return NPU_OK;
}
