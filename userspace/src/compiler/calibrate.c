// SPDX-License-Identifier: MIT
/*
 * Calibration: run the fp32 graph on the CPU over the calibration inputs
 * and record the range (and histogram) of every float value it computes.
 */
#include "compiler/compiler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/npu_runtime.h"

static void observe_tensor(struct npu_calib_table *t, const struct npu_value *v,
			   const struct npu_tensor *x)
{
	if (!v || !x || x->dtype != NPU_DTYPE_FLOAT || v->index >= t->num_values)
		return;
	npu_calib_observe(&t->stats[v->index], x->data, x->nbytes / sizeof(float));
	t->seen[v->index] = true;
}

static void observe_node(void *arg, const struct npu_node *n,
			 const struct npu_tensor *const *outputs)
{
	size_t i;

	for (i = 0; i < n->num_outputs; i++)
		observe_tensor(arg, n->outputs[i], outputs[i]);
}

/* Standard normal samples (Box-Muller) from a 64-bit LCG: reproducible. */
static float normal_sample(uint64_t *s)
{
	double u1, u2;

	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	u1 = ((*s >> 11) + 1.0) / 9007199254740993.0;
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	u2 = (*s >> 11) / 9007199254740992.0;
	return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static npu_status random_set(const struct npu_graph *g, uint64_t *seed,
			     struct npu_tensor **set, struct npu_error *err)
{
	size_t i;
	int64_t j;

	for (i = 0; i < g->num_inputs; i++) {
		const struct npu_value *v = g->inputs[i];

		if (npu_shape_numel(&v->shape) < 0)
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "calibration: input '%s' has unknown dimensions: fix them (e.g. --shape %s=1x3x640x640)",
					     v->name, v->name);
		set[i] = npu_tensor_create(v->dtype, &v->shape);
		if (!set[i])
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
		if (v->dtype == NPU_DTYPE_FLOAT)
			for (j = 0; j < npu_shape_numel(&v->shape); j++)
				((float *)set[i]->data)[j] = normal_sample(seed);
	}
	return NPU_OK;
}

npu_status npu_calibrate(struct npu_graph *graph,
			 const struct npu_compile_options *opts,
			 struct npu_calib_table *table, struct npu_error *err)
{
	struct npu_session_options so = {
		.threads = opts->threads,
		.observe = observe_node,
		.observe_arg = table,
	};
	size_t sets = opts->num_calib_sets ? opts->num_calib_sets : opts->random_calib_sets;
	struct npu_tensor **random = NULL;
	struct npu_session *s = NULL;
	uint64_t seed = opts->calib_seed;
	npu_status st;
	size_t i, k;

	memset(table, 0, sizeof(*table));
	table->num_values = graph->num_values;
	table->stats = malloc(table->num_values * sizeof(*table->stats) + 1);
	table->seen = calloc(table->num_values + 1, sizeof(*table->seen));
	random = calloc(graph->num_inputs + 1, sizeof(*random));
	if (!table->stats || !table->seen || !random) {
		free(random);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
	}
	for (i = 0; i < table->num_values; i++)
		npu_calib_init(&table->stats[i]);
	st = npu_session_create(graph, &so, &s, err);
	for (k = 0; st == NPU_OK && k < sets; k++) {
		struct npu_tensor *const *in;

		if (opts->num_calib_sets) {
			in = opts->calib_inputs + k * graph->num_inputs;
		} else {
			for (i = 0; i < graph->num_inputs; i++) {
				npu_tensor_destroy(random[i]);
				random[i] = NULL;
			}
			st = random_set(graph, &seed, random, err);
			if (st)
				break;
			in = random;
		}
		for (i = 0; i < graph->num_inputs; i++)
			observe_tensor(table, graph->inputs[i], in[i]);
		st = npu_session_run(s, (const struct npu_tensor *const *)in, err);
		if (st)
			npu_error_prefix(err, "calibration set %zu", k);
	}
	for (i = 0; i < graph->num_inputs; i++)
		npu_tensor_destroy(random[i]);
	free(random);
	npu_session_destroy(s);
	return st;
}

void npu_calib_table_free(struct npu_calib_table *t)
{
	free(t->stats);
	free(t->seen);
	memset(t, 0, sizeof(*t));
}
