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
	struct npu_exec_options so = {
		.threads = opts->threads,
		.pool = opts->pool,
		.observe = observe_node,
		.observe_arg = table,
	};
	struct npu_tensor *const *calib_inputs = opts->calib_inputs;
	size_t num_calib_sets = opts->num_calib_sets;
	struct npu_tensor **loaded = NULL;
	size_t sets;
	struct npu_tensor **random = NULL;
	struct npu_exec *s = NULL;
	uint64_t seed = opts->calib_seed;
	npu_status st;
	size_t i, k;

	memset(table, 0, sizeof(*table));
	if (!num_calib_sets && opts->load_calib) {
		st = opts->load_calib(opts->load_calib_arg, graph, &loaded, &num_calib_sets, err);
		if (st)
			return st;
		calib_inputs = loaded;
	}
	sets = num_calib_sets ? num_calib_sets : opts->random_calib_sets;
	table->num_values = graph->num_values;
	table->stats = malloc(table->num_values * sizeof(*table->stats) + 1);
	table->seen = calloc(table->num_values + 1, sizeof(*table->seen));
	random = calloc(graph->num_inputs + 1, sizeof(*random));
	if (!table->stats || !table->seen || !random) {
		free(random);
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
		goto out;
	}
	for (i = 0; i < table->num_values; i++)
		npu_calib_init(&table->stats[i]);
	st = npu_exec_create(graph, &so, &s, err);
	for (k = 0; st == NPU_OK && k < sets; k++) {
		struct npu_tensor *const *in;

		if (num_calib_sets) {
			in = calib_inputs + k * graph->num_inputs;
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
		st = npu_exec_run(s, (const struct npu_tensor *const *)in, err);
		if (st)
			npu_error_prefix(err, "calibration set %zu", k);
	}
	for (i = 0; i < graph->num_inputs; i++)
		npu_tensor_destroy(random[i]);
	free(random);
	npu_exec_destroy(s);
out:
	for (k = 0; loaded && k < num_calib_sets * graph->num_inputs; k++)
		npu_tensor_destroy(loaded[k]);
	free(loaded);
	return st;
}

/* ---- Calibration statistics by value name, across a model's plans ---- */

struct calib_entry {
	char *name;
	bool seen;
	struct npu_calib_stats stats;
};

struct npu_calib_cache {
	struct calib_entry *e;		/* sorted by name */
	size_t count;
	size_t runs;
};

struct npu_calib_cache *npu_calib_cache_create(void)
{
	return calloc(1, sizeof(struct npu_calib_cache));
}

void npu_calib_cache_destroy(struct npu_calib_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->count; i++)
		free(c->e[i].name);
	free(c->e);
	free(c);
}

size_t npu_calib_cache_runs(const struct npu_calib_cache *c)
{
	return c ? c->runs : 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct calib_entry *)a)->name,
		      ((const struct calib_entry *)b)->name);
}

static struct calib_entry *cache_find(const struct npu_calib_cache *c, const char *name)
{
	struct calib_entry key = { .name = (char *)name };

	return c->count ? bsearch(&key, c->e, c->count, sizeof(key), cmp_entry) : NULL;
}

/* The float values calibration gives a range to: inputs and computed ones. */
static bool needs_range(const struct npu_value *v)
{
	return v->dtype == NPU_DTYPE_FLOAT && !v->constant &&
	       (v->producer || v->is_graph_input);
}

static npu_status cache_store(struct npu_calib_cache *c, const struct npu_graph *g,
			      const struct npu_calib_table *t, struct npu_error *err)
{
	size_t i, n = 0;
	struct calib_entry *e;

	for (i = 0; i < g->num_values; i++)
		n += needs_range(g->values[i]) && !cache_find(c, g->values[i]->name);
	if (!n)
		return NPU_OK;
	e = realloc(c->e, (c->count + n) * sizeof(*e));
	if (!e)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
	c->e = e;
	n = c->count;
	for (i = 0; i < g->num_values; i++) {
		const struct npu_value *v = g->values[i];
		size_t k;

		if (!needs_range(v))
			continue;
		for (k = c->count; k < n; k++)	/* duplicates within this store */
			if (!strcmp(e[k].name, v->name))
				break;
		if (k < n || cache_find(c, v->name))
			continue;
		e[n].name = strdup(v->name);
		if (!e[n].name) {
			c->count = n;
			qsort(c->e, c->count, sizeof(*c->e), cmp_entry);
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
		}
		e[n].seen = t->seen[v->index];
		e[n].stats = t->stats[v->index];
		n++;
	}
	c->count = n;
	qsort(c->e, c->count, sizeof(*c->e), cmp_entry);
	return NPU_OK;
}

npu_status npu_calibrate_cached(struct npu_graph *graph,
				const struct npu_compile_options *opts,
				struct npu_calib_table *table, struct npu_error *err)
{
	struct npu_calib_cache *c = opts->calib_cache;
	npu_status st;
	size_t i;

	if (!c)
		return npu_calibrate(graph, opts, table, err);
	for (i = 0; i < graph->num_values; i++)
		if (needs_range(graph->values[i]) && !cache_find(c, graph->values[i]->name))
			break;
	if (i < graph->num_values || !c->count) {
		st = npu_calibrate(graph, opts, table, err);
		if (st == NPU_OK) {
			c->runs++;
			st = cache_store(c, graph, table, err);
		}
		return st;
	}
	/* Every range is known from an earlier plan: no calibration run. */
	memset(table, 0, sizeof(*table));
	table->num_values = graph->num_values;
	table->stats = malloc(table->num_values * sizeof(*table->stats) + 1);
	table->seen = calloc(table->num_values + 1, sizeof(*table->seen));
	if (!table->stats || !table->seen) {
		npu_calib_table_free(table);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
	}
	for (i = 0; i < graph->num_values; i++) {
		const struct calib_entry *e = needs_range(graph->values[i])
					      ? cache_find(c, graph->values[i]->name) : NULL;

		npu_calib_init(&table->stats[i]);
		if (e) {
			table->stats[i] = e->stats;
			table->seen[i] = e->seen;
		}
	}
	return NPU_OK;
}

void npu_calib_table_free(struct npu_calib_table *t)
{
	free(t->stats);
	free(t->seen);
	memset(t, 0, sizeof(*t));
}
