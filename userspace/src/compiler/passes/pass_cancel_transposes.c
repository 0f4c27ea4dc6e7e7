// SPDX-License-Identifier: MIT
/* Transpose pairs that undo each other are removed. */
#include "compiler/passes/passes.h"

#include <string.h>

static bool get_perm(const struct npu_node *t, int64_t *perm, size_t *rank)
{
	const struct npu_attr *a = npu_node_attr(t, "perm");
	size_t i;

	if (!a || a->type != NPU_ATTR_INTS || a->count > NPU_MAX_RANK)
		return false;	/* default perm reverses: rank from the shape */
	for (i = 0; i < a->count; i++)
		perm[i] = a->ints[i];
	*rank = a->count;
	return true;
}

npu_status npu_pass_cancel_transposes(struct npu_graph *g, void *arg,
				      struct npu_error *err)
{
	size_t i, k;

	(void)arg;
	(void)err;
	for (i = 0; i < g->num_nodes; i++) {
		struct npu_node *t2 = g->nodes[i], *t1;
		int64_t p1[NPU_MAX_RANK], p2[NPU_MAX_RANK];
		size_t r1, r2;
		bool identity = true;

		if (strcmp(t2->op_type, "Transpose") || t2->domain[0] || !t2->inputs[0] ||
		    !(t1 = t2->inputs[0]->producer) || strcmp(t1->op_type, "Transpose") ||
		    t1->domain[0] || !get_perm(t1, p1, &r1) || !get_perm(t2, p2, &r2) ||
		    r1 != r2)
			continue;
		/* y[i] = x[p1[p2[i]]]: identity when p1 o p2 == id. */
		for (k = 0; k < r2; k++)
			identity &= p2[k] >= 0 && p2[k] < (int64_t)r1 && p1[p2[k]] == (int64_t)k;
		if (!identity)
			continue;
		npu_graph_replace_uses(g, t2->outputs[0], t1->inputs[0]);
		npu_graph_remove_node(g, t2);
		i = (size_t)-1;	/* t1 may be dead now; dead_nodes removes it */
	}
	return NPU_OK;
}
