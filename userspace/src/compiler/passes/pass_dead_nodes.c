// SPDX-License-Identifier: MIT
/* Dead-node elimination: keep only what reaches a graph output. */
#include "compiler/passes/passes.h"

#include <stdbool.h>
#include <stdlib.h>

npu_status npu_pass_dead_nodes(struct npu_graph *g, void *arg,
			       struct npu_error *err)
{
	bool *live = calloc(g->num_values ? g->num_values : 1, sizeof(*live));
	size_t i, j;

	(void)arg;
	if (!live)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "dead_nodes: out of memory");
	for (i = 0; i < g->num_outputs; i++)
		live[g->outputs[i]->index] = true;
	/* Nodes are topologically sorted: walk users before producers. */
	for (i = g->num_nodes; i-- > 0;) {
		struct npu_node *n = g->nodes[i];
		bool needed = false;

		for (j = 0; j < n->num_outputs; j++)
			needed |= n->outputs[j] && live[n->outputs[j]->index];
		if (!needed) {
			npu_graph_remove_node(g, n);
			continue;
		}
		for (j = 0; j < n->num_inputs; j++)
			if (n->inputs[j])
				live[n->inputs[j]->index] = true;
	}
	free(live);
	return NPU_OK;
}
