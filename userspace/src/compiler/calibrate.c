// SPDX-License-Identifier: MIT
/*
 * Calibration: run the fp32 graph on the CPU over the calibration inputs
 * and record the range (and histogram) of every float value it computes.
 */
#include "compiler/compiler.h"
#include "graph/npu_op_schema.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/*
 * Pass 1 records min / max, pass 2 fills the histograms over that range.
 * Nodes of subgraphs (observed when the runner can) go to their graph's
 * table: graphs[0] is the top-level one, tables[k] the table of graphs[k].
 */
struct observe_ctx {
	struct npu_calib_table *t;
	int pass;
	const struct npu_graph **graphs;
	struct npu_calib_table **tables;
	bool **ran;
	size_t num_graphs;
};

/* Per-channel sums of an NCHW value (bias correction); dropped on OOM. */
static void observe_channels(struct npu_calib_table *t, size_t v, const struct npu_tensor *x)
{
	const float *d = x->data;
	uint64_t hw, n, c, k;

	if (x->shape.rank != 4 || x->shape.dims[1] <= 0 || x->shape.dims[1] > 65536 ||
	    !t->chan_sum)
		return;
	if (!t->chan_sum[v]) {
		t->chan_sum[v] = calloc((size_t)x->shape.dims[1], sizeof(double));
		if (!t->chan_sum[v])
			return;
		t->channels[v] = (uint32_t)x->shape.dims[1];
	}
	if (t->channels[v] != x->shape.dims[1])
		return;
	hw = (uint64_t)(x->shape.dims[2] * x->shape.dims[3]);
	for (n = 0; n < (uint64_t)x->shape.dims[0]; n++)
		for (c = 0; c < t->channels[v]; c++) {
			double s = 0;

			for (k = 0; k < hw; k++, d++)
				if (isfinite(*d))
					s += *d;
			t->chan_sum[v][c] += s;
		}
	t->chan_count[v] += (uint64_t)x->shape.dims[0] * hw;
}

bool npu_calib_channel_means(const struct npu_calib_table *t, size_t v, uint32_t channels,
			     const double **sum, uint64_t *count)
{
	if (!t->chan_sum || v >= t->num_values || !t->chan_sum[v] || t->channels[v] != channels ||
	    !t->chan_count[v])
		return false;
	*sum = t->chan_sum[v];
	*count = t->chan_count[v];
	return true;
}

static void observe_in(struct observe_ctx *c, struct npu_calib_table *t,
		       const struct npu_value *v, const struct npu_tensor *x)
{
	if (!v || !x || x->dtype != NPU_DTYPE_FLOAT || v->index >= t->num_values)
		return;
	if (c->pass == 1) {
		npu_calib_observe_minmax(&t->stats[v->index], x->data, x->nbytes / sizeof(float));
		observe_channels(t, v->index, x);
	} else
		npu_calib_observe_hist(&t->stats[v->index], x->data, x->nbytes / sizeof(float));
	t->seen[v->index] = true;
}

static void observe_tensor(struct observe_ctx *c, const struct npu_value *v,
			   const struct npu_tensor *x)
{
	observe_in(c, c->t, v, x);
}

/* The table of the graph that owns v (values sit at their index). */
static struct npu_calib_table *owner_table(struct observe_ctx *c, const struct npu_value *v)
{
	size_t k;

	for (k = 0; k < c->num_graphs; k++)
		if (v->index < c->graphs[k]->num_values && c->graphs[k]->values[v->index] == v) {
			if (c->ran[k])
				*c->ran[k] = true;
			return c->tables[k];
		}
	return NULL;
}

static void observe_node(void *arg, const struct npu_node *n,
			 const struct npu_tensor *const *outputs)
{
	struct observe_ctx *c = arg;
	struct npu_calib_table *t = NULL;
	size_t i;

	for (i = 0; i < n->num_outputs && !t; i++)
		if (n->outputs[i])
			t = owner_table(c, n->outputs[i]);
	for (i = 0; t && i < n->num_outputs; i++)
		observe_in(c, t, n->outputs[i], outputs[i]);
}

/* Every subgraph below g, depth first, appended to subs[*n] (NULL: count). */
static size_t walk_subgraphs(const struct npu_graph *g, struct npu_calib_sub *subs, size_t n)
{
	size_t i, a;

	for (i = 0; i < g->num_nodes; i++)
		for (a = 0; a < g->nodes[i]->num_attrs && npu_node_subgraphs_open(g, g->nodes[i]); a++) {
			const struct npu_graph *body = g->nodes[i]->attrs[a].g;

			if (g->nodes[i]->attrs[a].type != NPU_ATTR_GRAPH || !body)
				continue;
			if (subs)
				subs[n].graph = body;
			n = walk_subgraphs(body, subs, n + 1);
		}
	return n;
}

static npu_status table_alloc(struct npu_calib_table *t, size_t num_values)
{
	size_t i;

	t->num_values = num_values;
	t->stats = malloc(t->num_values * sizeof(*t->stats) + 1);
	t->seen = calloc(t->num_values + 1, sizeof(*t->seen));
	t->chan_sum = calloc(t->num_values + 1, sizeof(*t->chan_sum));
	t->chan_count = calloc(t->num_values + 1, sizeof(*t->chan_count));
	t->channels = calloc(t->num_values + 1, sizeof(*t->channels));
	if (!t->stats || !t->seen || !t->chan_sum || !t->chan_count || !t->channels)
		return NPU_ERR_NO_MEMORY;
	for (i = 0; i < t->num_values; i++)
		npu_calib_init(&t->stats[i]);
	return NPU_OK;
}

/* t->subs for every subgraph of g, allocated (nothing seen yet). */
static npu_status subs_alloc(struct npu_calib_table *t, const struct npu_graph *g)
{
	size_t n = walk_subgraphs(g, NULL, 0), k;

	if (!n)
		return NPU_OK;
	t->subs = calloc(n, sizeof(*t->subs));
	if (!t->subs)
		return NPU_ERR_NO_MEMORY;
	t->num_subs = n;
	walk_subgraphs(g, t->subs, 0);
	for (k = 0; k < n; k++)
		if (table_alloc(&t->subs[k].table, t->subs[k].graph->num_values))
			return NPU_ERR_NO_MEMORY;
	return NPU_OK;
}

const struct npu_calib_sub *npu_calib_table_sub(const struct npu_calib_table *t,
						const struct npu_graph *g)
{
	size_t k;

	for (k = 0; t && k < t->num_subs; k++)
		if (t->subs[k].graph == g)
			return &t->subs[k];
	return NULL;
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
		if (v->dtype == NPU_DTYPE_STRING)
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "calibration: input '%s' is a string tensor: random inputs cannot be made for it (give samples: --calib-dir DIR)",
					     v->name);
		set[i] = npu_tensor_create(v->dtype, &v->shape);
		if (!set[i])
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
		if (v->dtype == NPU_DTYPE_FLOAT)
			for (j = 0; j < npu_shape_numel(&v->shape); j++)
				((float *)set[i]->data)[j] = normal_sample(seed);
	}
	return NPU_OK;
}

void npu_calib_sample_release(struct npu_tensor **set, size_t n, bool owned)
{
	size_t i;

	for (i = 0; owned && i < n; i++) {
		npu_tensor_destroy(set[i]);
		set[i] = NULL;
	}
}

/* Sample k of the calibration data in 'set' (owned when *owned). */
npu_status npu_calib_get_sample(struct npu_graph *graph, const struct npu_compile_options *opts,
			     size_t k, struct npu_tensor **set, bool *owned,
			     struct npu_error *err)
{
	uint64_t seed;
	size_t i, j;

	*owned = false;
	if (opts->num_calib_sets) {
		for (i = 0; i < graph->num_inputs; i++)
			set[i] = opts->calib_inputs[k * graph->num_inputs + i];
		return NPU_OK;
	}
	*owned = true;
	if (opts->calib_sample)
		return opts->calib_sample(opts->calib_arg, graph, k, set, err);
	/* Random set k is the same in both passes: its own seed. */
	seed = opts->calib_seed;
	for (j = 0; j < k; j++)
		seed = seed * 6364136223846793005ull + 1442695040888963407ull + 0x9e3779b97f4a7c15ull;
	return random_set(graph, &seed, set, err);
}

npu_status npu_calib_count_samples(struct npu_graph *graph,
				   const struct npu_compile_options *opts, size_t *count,
				   struct npu_error *err)
{
	*count = 0;
	if (opts->num_calib_sets)
		*count = opts->num_calib_sets;
	else if (opts->calib_sample && opts->calib_count)
		return opts->calib_count(opts->calib_arg, graph, count, err);
	else if (opts->calib_random)
		*count = opts->random_calib_sets ? opts->random_calib_sets : 4;
	return NPU_OK;
}

npu_status npu_calibrate(struct npu_graph *graph,
			 const struct npu_compile_options *opts,
			 struct npu_calib_table *table, struct npu_error *err)
{
	struct observe_ctx ctx = { .t = table };
	const struct npu_graph_runner *r = opts->runner;
	struct npu_tensor **set = NULL;
	void *s = NULL;
	size_t sets = 0, i, k;
	npu_status st = NPU_OK;
	bool owned = false;

	memset(table, 0, sizeof(*table));
	st = npu_calib_count_samples(graph, opts, &sets, err);
	if (st)
		return st;
	if (!sets && graph->num_inputs)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "calibration: no calibration data for the int8 compilation: give a directory of samples (npu: --calib-dir DIR; API: npu_model_options.calib_dir), or ask for random inputs explicitly (npu: --calib random; API: npu_model_options.calib_random = 1; smoke tests only: noise gives poor int8 ranges)");
	if (!r)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "calibration: no graph runner (npu_compile_options.runner)");
	set = calloc(graph->num_inputs + 1, sizeof(*set));
	if (!set || table_alloc(table, graph->num_values) ||
	    (r->open_nested && subs_alloc(table, graph)) ||
	    !(ctx.graphs = calloc(table->num_subs + 1, sizeof(*ctx.graphs))) ||
	    !(ctx.tables = calloc(table->num_subs + 1, sizeof(*ctx.tables))) ||
	    !(ctx.ran = calloc(table->num_subs + 1, sizeof(*ctx.ran)))) {
		free(set);
		free(ctx.graphs);
		free(ctx.tables);
		npu_calib_table_free(table);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
	}
	ctx.graphs[0] = graph;
	ctx.tables[0] = table;
	for (k = 0; k < table->num_subs; k++) {
		ctx.graphs[k + 1] = table->subs[k].graph;
		ctx.tables[k + 1] = &table->subs[k].table;
		ctx.ran[k + 1] = &table->subs[k].ran;
	}
	ctx.num_graphs = table->num_subs + 1;
	/* With subgraphs, their values are ranged too, every time they run. */
	st = (table->num_subs ? r->open_nested : r->open)(graph, opts->threads, opts->pool,
							   observe_node, &ctx, NULL, &s, err);
	for (ctx.pass = 1; st == NPU_OK && ctx.pass <= 2; ctx.pass++) {
		if (ctx.pass == 2)
			for (k = 0; k < ctx.num_graphs; k++)
				for (i = 0; i < ctx.tables[k]->num_values; i++)
					npu_calib_hist_begin(&ctx.tables[k]->stats[i]);
		for (k = 0; st == NPU_OK && k < sets; k++) {
			st = npu_calib_get_sample(graph, opts, k, set, &owned, err);
			for (i = 0; !st && i < graph->num_inputs; i++)
				observe_tensor(&ctx, graph->inputs[i], set[i]);
			if (!st)
				st = r->run(s, (const struct npu_tensor *const *)set, err);
			if (st)
				npu_error_prefix(err, "calibration sample %zu (pass %d of 2)", k, ctx.pass);
			npu_calib_sample_release(set, graph->num_inputs, owned);
		}
	}
	if (s)
		r->close(s);
	free(set);
	free(ctx.graphs);
	free(ctx.tables);
	free(ctx.ran);
	if (st)
		npu_calib_table_free(table);
	return st;
}

/* ---- Calibration statistics by value name, across a model's plans ---- */

struct calib_entry {
	char *name;
	bool seen;
	struct npu_calib_stats stats;
	double *chan_sum;	/* owned; NULL: none */
	uint64_t chan_count;
	uint32_t channels;
};

static double *dup_sums(const double *s, uint32_t n)
{
	double *d = s && n ? malloc(n * sizeof(*d)) : NULL;

	if (d)
		memcpy(d, s, n * sizeof(*d));
	return d;
}

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
	for (i = 0; i < c->count; i++) {
		free(c->e[i].name);
		free(c->e[i].chan_sum);
	}
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
		e[n].chan_sum = NULL;
		e[n].chan_count = 0;
		e[n].channels = 0;
		if (t->chan_sum && t->chan_sum[v->index]) {	/* dropped on OOM */
			e[n].chan_sum = dup_sums(t->chan_sum[v->index], t->channels[v->index]);
			e[n].channels = e[n].chan_sum ? t->channels[v->index] : 0;
			e[n].chan_count = t->chan_count[v->index];
		}
		n++;
	}
	c->count = n;
	qsort(c->e, c->count, sizeof(*c->e), cmp_entry);
	return NPU_OK;
}

static bool all_cached(const struct npu_calib_cache *c, const struct npu_graph *g)
{
	size_t i;

	for (i = 0; i < g->num_values; i++)
		if (needs_range(g->values[i]) && !cache_find(c, g->values[i]->name))
			return false;
	return true;
}

static void table_from_cache(const struct npu_calib_cache *c, const struct npu_graph *g,
			     struct npu_calib_table *table, bool *ran)
{
	size_t i;

	for (i = 0; i < g->num_values; i++) {
		const struct calib_entry *e = needs_range(g->values[i])
					      ? cache_find(c, g->values[i]->name) : NULL;

		if (e) {
			table->stats[i] = e->stats;
			table->seen[i] = e->seen;
			table->chan_sum[i] = dup_sums(e->chan_sum, e->channels);
			table->channels[i] = table->chan_sum[i] ? e->channels : 0;
			table->chan_count[i] = e->chan_count;
			*ran |= e->seen && g->values[i]->producer;
		}
	}
}

npu_status npu_calibrate_cached(struct npu_graph *graph,
				const struct npu_compile_options *opts,
				struct npu_calib_table *table, struct npu_error *err)
{
	struct npu_calib_cache *c = opts->calib_cache;
	bool ran = false, hit;
	npu_status st;
	size_t k;

	if (!c)
		return npu_calibrate(graph, opts, table, err);
	/* Subgraph values are cached only when the runner ranges them. */
	memset(table, 0, sizeof(*table));
	hit = c->count && all_cached(c, graph);
	if (hit && opts->runner && opts->runner->open_nested) {
		if (subs_alloc(table, graph)) {
			npu_calib_table_free(table);
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
		}
		for (k = 0; k < table->num_subs && hit; k++)
			hit = all_cached(c, table->subs[k].graph);
		npu_calib_table_free(table);
	}
	if (!hit) {
		st = npu_calibrate(graph, opts, table, err);
		if (st == NPU_OK) {
			c->runs++;
			st = cache_store(c, graph, table, err);
		}
		for (k = 0; st == NPU_OK && k < table->num_subs; k++)
			st = cache_store(c, table->subs[k].graph, &table->subs[k].table, err);
		return st;
	}
	/* Every range is known from an earlier plan: no calibration run. */
	if (table_alloc(table, graph->num_values) ||
	    (opts->runner && opts->runner->open_nested && subs_alloc(table, graph))) {
		npu_calib_table_free(table);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "calibration: out of memory");
	}
	table_from_cache(c, graph, table, &ran);
	for (k = 0; k < table->num_subs; k++)
		table_from_cache(c, table->subs[k].graph, &table->subs[k].table,
				 &table->subs[k].ran);
	return NPU_OK;
}

void npu_calib_table_free(struct npu_calib_table *t)
{
	size_t i;

	for (i = 0; i < t->num_subs; i++)
		npu_calib_table_free(&t->subs[i].table);
	free(t->subs);
	for (i = 0; t->chan_sum && i < t->num_values; i++)
		free(t->chan_sum[i]);
	free(t->chan_sum);
	free(t->chan_count);
	free(t->channels);
	free(t->stats);
	free(t->seen);
	memset(t, 0, sizeof(*t));
}
