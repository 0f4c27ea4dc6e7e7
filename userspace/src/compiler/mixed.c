// SPDX-License-Identifier: MIT
/*
 * mixed.c - mixed precision: keep the most sensitive layers in fp32 on
 * the CPU until held-out samples reach an accuracy target (mixed.h).
 */
#include "compiler/mixed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/quant_report.h"

/* ---- The calibration samples, split: [first, first + count) ---- */

struct subset {
	const struct npu_compile_options *src;
	size_t first, count;
};

static npu_status subset_count(void *arg, const struct npu_graph *g, size_t *count,
			       struct npu_error *err)
{
	struct subset *s = arg;
	size_t all = 0;
	npu_status st;

	(void)g;
	/* The source may re-list its samples here (a directory). */
	st = npu_calib_count_samples((struct npu_graph *)g, s->src, &all, err);
	*count = st || all < s->first + s->count ? 0 : s->count;
	if (!st && !*count)
		st = npu_error_set(err, NPU_ERR_INVALID_ARG,
				   "accuracy target: the calibration samples changed while compiling");
	return st;
}

static npu_status subset_sample(void *arg, const struct npu_graph *g, size_t index,
				struct npu_tensor **set, struct npu_error *err)
{
	struct subset *s = arg;
	bool owned = false;
	npu_status st;
	size_t i;

	if (index >= s->count)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "calibration sample %zu does not exist",
				     index);
	st = npu_calib_get_sample((struct npu_graph *)g, s->src, s->first + index, set, &owned,
				  err);
	/* Callers of this callback free what it gives: copy borrowed inputs. */
	for (i = 0; !st && !owned && i < g->num_inputs; i++) {
		struct npu_tensor *c = npu_tensor_create(set[i]->dtype, &set[i]->shape);

		if (!c) {
			while (i--)
				npu_tensor_destroy(set[i]);
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
		}
		memcpy(c->data, set[i]->data, set[i]->nbytes);
		set[i] = c;
	}
	return st;
}

static void subset_options(struct npu_compile_options *o, struct subset *s)
{
	o->calib_inputs = NULL;
	o->num_calib_sets = 0;
	o->calib_random = false;
	o->calib_count = subset_count;
	o->calib_sample = subset_sample;
	o->calib_arg = s;
}

/* ---- One trial: compile with a keep list, run the hold-out ---- */

struct search {
	struct npu_graph *graph;	/* the caller's, uncompiled */
	const struct npu_compile_options *opts;
	struct npu_compile_options cal;	/* calibrate on the first part */
	struct subset cal_set, hold_set;
	struct npu_tensor ***ref;	/* [holdout][output] fp32 outputs */
	size_t num_outputs;
	struct npu_keep_fp32 *keep;	/* the caller's, then candidates */
	size_t num_fixed;
	/* Candidates, most sensitive first, and their reasons. */
	char **cand;
	/* The node whose output the candidate's NPU op writes, when another
	 * (a pointwise group the op took as its output stage): it goes too. */
	char **cand_also;
	double *cand_sqnr;
	char **cand_reason;
	size_t num_cand;
	/* int16_nodes of a trial: the caller's, then candidates. */
	const char **i16;
	struct npu_error *err;
};

struct trial {
	double cosine;
	size_t segments;
	uint64_t cycles, cpu_macs;
	uint32_t clock_mhz;
};

static void acc(double *d, const float *a, const float *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!isfinite(a[i]) || !isfinite(b[i]))
			continue;
		d[0] += (double)a[i] * b[i];
		d[1] += (double)a[i] * a[i];
		d[2] += (double)b[i] * b[i];
	}
}

static double cosine_of(const double *d)
{
	if (d[1] <= 0.0 || d[2] <= 0.0)
		return d[1] == d[2] ? 1.0 : 0.0;
	return d[0] / sqrt(d[1] * d[2]);
}

/* Run 'g' (compiled or not) over the hold-out samples; each output's
 * accumulator against s->ref, or fill s->ref when it is NULL. */
static npu_status run_holdout(struct search *s, struct npu_graph *g, double (*dots)[3],
			      struct trial *t)
{
	const struct npu_graph_runner *runner = s->opts->runner;
	struct npu_tensor **set = calloc(g->num_inputs + 1, sizeof(*set));
	void *ex = NULL;
	bool fill = dots == NULL;
	npu_status st;
	size_t k, i;

	if (!set)
		return npu_error_set(s->err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
	st = runner->open(g, s->opts->threads, s->opts->pool, NULL, NULL, NULL, &ex, s->err);
	for (k = 0; !st && k < s->hold_set.count; k++) {
		bool owned = false;

		st = npu_calib_get_sample(g, s->opts, s->hold_set.first + k, set, &owned, s->err);
		if (!st)
			st = runner->run(ex, (const struct npu_tensor *const *)set, s->err);
		for (i = 0; !st && i < s->num_outputs; i++) {
			const struct npu_tensor *y = runner->output(ex, i);

			if (!y || y->dtype != NPU_DTYPE_FLOAT)
				continue;
			if (fill) {
				s->ref[k][i] = npu_tensor_create(y->dtype, &y->shape);
				if (!s->ref[k][i])
					st = npu_error_set(s->err, NPU_ERR_NO_MEMORY,
							   "accuracy target: out of memory");
				else
					memcpy(s->ref[k][i]->data, y->data, y->nbytes);
			} else if (s->ref[k][i] && s->ref[k][i]->nbytes == y->nbytes) {
				acc(dots[i], s->ref[k][i]->data, y->data, y->nbytes / sizeof(float));
			}
		}
		if (!st && t && runner->npu_cycles)
			t->cycles += runner->npu_cycles(ex);
		npu_calib_sample_release(set, g->num_inputs, owned);
		if (st)
			npu_error_prefix(s->err, "accuracy target, held-out sample %zu", k);
	}
	if (t && s->hold_set.count)
		t->cycles /= s->hold_set.count;
	if (ex && runner->close)
		runner->close(ex);
	free(set);
	return st;
}

/* The caller's keep list and the first k candidates; the entry count. */
static size_t fill_keep(struct search *s, size_t k)
{
	size_t n = s->num_fixed, i;

	for (i = 0; i < k; i++) {
		s->keep[n].node = s->cand[i];
		s->keep[n++].reason = s->cand_reason[i];
		if (s->cand_also[i]) {
			s->keep[n].node = s->cand_also[i];
			s->keep[n++].reason = s->cand_reason[i];
		}
	}
	return n;
}

/* The caller's int16 nodes and the first k16 candidates; the count. */
static size_t fill_int16(struct search *s, size_t k16)
{
	size_t n = s->opts->num_int16_nodes, i;

	for (i = 0; i < n; i++)
		s->i16[i] = s->opts->int16_nodes[i];
	for (i = 0; i < k16 && i < s->num_cand; i++) {
		s->i16[n++] = s->cand[i];
		/* its output-stage group too, or the group stays an int8 LUT */
		if (s->cand_also[i])
			s->i16[n++] = s->cand_also[i];
	}
	return n;
}

/* Options of a trial: the first k16 candidates in int16 (those with an
 * int16 form; the rest stay int8), the first k in fp32 (which wins). */
static void trial_options(struct search *s, size_t k16, size_t k, struct npu_compile_options *o)
{
	*o = s->cal;
	o->keep_fp32 = s->keep;
	o->num_keep_fp32 = fill_keep(s, k);
	o->int16_nodes = s->i16;
	o->num_int16_nodes = fill_int16(s, k16);
	o->int16_lenient = k16 > 0;
}

/*
 * Compile a copy of the graph with the first 'k16' candidates in int16
 * and the fixed nodes and the first 'k' candidates in fp32, and measure
 * it on the hold-out. With 'keep_c', the compiled copy is handed back
 * (*keep_g, *keep_c) instead of freed.
 */
static npu_status trial(struct search *s, size_t k16, size_t k, struct trial *t,
			struct npu_graph **keep_g, struct npu_compiled **keep_c)
{
	struct npu_compile_options o;
	struct npu_graph *g = npu_graph_clone(s->graph, s->err);
	struct npu_compiled *c = NULL;
	double (*dots)[3] = calloc(s->num_outputs + 1, sizeof(*dots));
	npu_status st;
	size_t i;

	memset(t, 0, sizeof(*t));
	if (!g || !dots) {
		npu_graph_destroy(g);
		free(dots);
		return s->err->status ? s->err->status
				      : npu_error_set(s->err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
	}
	trial_options(s, k16, k, &o);
	st = npu_compile_graph(g, &o, &c, s->err);
	if (!st)
		st = run_holdout(s, g, dots, t);
	if (!st) {
		t->cosine = 1.0;
		for (i = 0; i < s->num_outputs; i++)
			if (dots[i][1] > 0 || dots[i][2] > 0)
				t->cosine = fmin(t->cosine, cosine_of(dots[i]));
		t->segments = c->num_segments;
		t->cpu_macs = c->total_macs - c->npu_macs;
		t->clock_mhz = c->dev_info.clock_mhz;
	}
	free(dots);
	if (!st && keep_c) {
		*keep_g = g;
		*keep_c = c;
		return NPU_OK;
	}
	npu_graph_destroy(g);	/* as a plan: its NpuSegment nodes point to c */
	npu_compiled_free(c);
	return st;
}

/*
 * Doubling finds a k that reaches the target, bisection the smallest (the
 * cosine grows with k as a rule, not always). Without a k that does, the
 * best cosine seen wins. int16: k candidates in int16 (none in fp32);
 * else every candidate in int16 (where it has a form) and k in fp32.
 */
static npu_status search(struct search *s, double target, bool int16, struct trial *best,
			 size_t *best_k16, size_t *best_k, struct npu_mixed_result *res)
{
	size_t lo = 0, hi = 0, k;
	struct trial t;
	npu_status st = NPU_OK;

	for (k = 1; !st && s->num_cand && !hi; k *= 2) {
		if (k > s->num_cand)
			k = s->num_cand;
		st = trial(s, int16 ? k : s->num_cand, int16 ? 0 : k, &t, NULL, NULL);
		res->compilations++;
		if (st)
			break;
		if (int16 && t.cosine > res->cosine_int16)
			res->cosine_int16 = t.cosine;
		if (t.cosine >= target || t.cosine > best->cosine) {
			*best = t;
			*best_k16 = int16 ? k : s->num_cand;
			*best_k = int16 ? 0 : k;
		}
		if (t.cosine >= target)
			hi = k;
		else
			lo = k;
		if (k == s->num_cand)
			break;
	}
	while (!st && hi && hi - lo > 1) {
		k = lo + (hi - lo) / 2;
		st = trial(s, int16 ? k : s->num_cand, int16 ? 0 : k, &t, NULL, NULL);
		res->compilations++;
		if (!st && int16 && t.cosine > res->cosine_int16)
			res->cosine_int16 = t.cosine;
		if (!st && t.cosine >= target) {
			hi = k;
			*best = t;
			*best_k16 = int16 ? k : s->num_cand;
			*best_k = int16 ? 0 : k;
		} else {
			lo = k;
		}
	}
	return st;
}

/*
 * After search() kept the k worst in fp32 with every candidate in int16:
 * most of the gain may come from those k, so bisect how many candidates
 * (the first k16) int16 still needs beside them. k16 <= k adds no int16
 * node (the first k are in fp32, which wins), so the first trial is k
 * alone in fp32; then bisection over (k, num_cand]. At most
 * ceil(log2(num_cand - k)) + 1 trials; only a trial that reaches the
 * target replaces *best, so the plan never falls below it.
 */
static npu_status trim_int16(struct search *s, double target, struct trial *best,
			     size_t *best_k16, size_t best_k, struct npu_mixed_result *res)
{
	size_t lo = best_k, hi = *best_k16, k16;
	struct trial t;
	npu_status st;

	if (best->cosine < target || !best_k || hi <= lo)
		return NPU_OK;
	st = trial(s, 0, best_k, &t, NULL, NULL);
	res->compilations++;
	if (!st && t.cosine >= target) {
		*best = t;
		*best_k16 = 0;
		return NPU_OK;
	}
	while (!st && hi - lo > 1) {
		k16 = lo + (hi - lo) / 2;
		st = trial(s, k16, best_k, &t, NULL, NULL);
		res->compilations++;
		if (!st && t.cosine >= target) {
			hi = k16;
			*best = t;
			*best_k16 = k16;
		} else {
			lo = k16;
		}
	}
	return st;
}

/* ---- Ranking: the per-layer analysis of the all-int8 compilation ---- */

static npu_status rank(struct search *s, struct npu_compiled *c, double target)
{
	struct npu_compile_options o = s->cal;
	struct npu_qdq_table qdq = { 0 };
	struct npu_graph *ref = npu_graph_clone(s->graph, s->err);
	struct npu_qr qr = { 0 };
	npu_status st = ref ? NPU_OK : s->err->status ? s->err->status : NPU_ERR_NO_MEMORY;
	size_t i, j;

	if (!st)
		st = npu_compile_passes_pre(ref, &qdq, s->err);
	if (!st)
		st = npu_quant_sensitivity(ref, c, &o, NPU_MIXED_RANK_SAMPLES, &qr, s->err);
	npu_qdq_table_free(&qdq);
	if (st) {
		npu_graph_destroy(ref);
		return st;
	}
	s->cand = calloc(qr.count + 1, sizeof(*s->cand));
	s->cand_also = calloc(qr.count + 1, sizeof(*s->cand_also));
	s->cand_reason = calloc(qr.count + 1, sizeof(*s->cand_reason));
	s->cand_sqnr = calloc(qr.count + 1, sizeof(*s->cand_sqnr));
	free(s->keep);
	s->keep = calloc(s->num_fixed + 2 * qr.count + 1, sizeof(*s->keep));
	free(s->i16);
	s->i16 = calloc(s->opts->num_int16_nodes + 2 * qr.count + 1, sizeof(*s->i16));
	if (!s->cand || !s->cand_also || !s->cand_reason || !s->cand_sqnr || !s->keep || !s->i16) {
		npu_quant_report_clear(&qr);
		npu_graph_destroy(ref);
		return npu_error_set(s->err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
	}
	if (s->num_fixed)
		memcpy(s->keep, s->opts->keep_fp32, s->num_fixed * sizeof(*s->keep));
	/* qr.layers is sorted worst first; layers with no fp32 reference
	 * (NAN) come last and are still candidates. */
	for (i = 0; i < qr.count; i++) {
		const struct npu_qr_layer *l = &qr.layers[i];
		const struct npu_value *v = npu_graph_find_value(ref, l->value);
		const char *also = v && v->producer ? v->producer->name : NULL;
		char why[160];

		for (j = 0; j < s->num_cand; j++)
			if (!strcmp(s->cand[j], l->node))
				break;
		if (j < s->num_cand || !l->node[0])
			continue;
		snprintf(why, sizeof(why),
			 "kept in fp32 on the CPU for accuracy target %g (alone in int8: output SQNR %.1f dB)",
			 target, npu_err_sqnr_db(&l->e2e));
		/* Only a node the compiled graph still has (a fused Relu is not). */
		for (j = 0; also && j < c->num_records; j++)
			if (!strcmp(c->records[j].node, also))
				break;
		if (also && (j == c->num_records || !strcmp(also, l->node)))
			also = NULL;
		s->cand[s->num_cand] = strdup(l->node);
		s->cand_also[s->num_cand] = also ? strdup(also) : NULL;
		s->cand_reason[s->num_cand] = strdup(why);
		s->cand_sqnr[s->num_cand] = npu_err_sqnr_db(&l->e2e);
		if (!s->cand[s->num_cand] || !s->cand_reason[s->num_cand] ||
		    (also && !s->cand_also[s->num_cand])) {
			free(s->cand[s->num_cand]);
			free(s->cand_also[s->num_cand]);
			free(s->cand_reason[s->num_cand]);
			npu_quant_report_clear(&qr);
			npu_graph_destroy(ref);
			return npu_error_set(s->err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
		}
		s->num_cand++;
	}
	npu_quant_report_clear(&qr);
	npu_graph_destroy(ref);
	return NPU_OK;
}

static void search_free(struct search *s)
{
	size_t i, k;

	for (k = 0; s->ref && k < s->hold_set.count; k++) {
		for (i = 0; s->ref[k] && i < s->num_outputs; i++)
			npu_tensor_destroy(s->ref[k][i]);
		free(s->ref[k]);
	}
	free(s->ref);
	for (i = 0; i < s->num_cand; i++) {
		free(s->cand[i]);
		free(s->cand_also[i]);
		free(s->cand_reason[i]);
	}
	free(s->cand);
	free(s->cand_also);
	free(s->cand_reason);
	free(s->cand_sqnr);
	free(s->keep);
	free(s->i16);
}

void npu_mixed_result_free(struct npu_mixed_result *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->num_kept; i++)
		free(r->kept[i]);
	free(r->kept);
	for (i = 0; i < r->num_int16; i++)
		free(r->int16[i]);
	free(r->int16);
	free(r->kept_sqnr_db);
	memset(r, 0, sizeof(*r));
}

/* The fp32 outputs of the hold-out samples, once. */
static npu_status reference_outputs(struct search *s)
{
	struct npu_graph *g;
	npu_status st;
	size_t k;

	s->num_outputs = s->graph->num_outputs;
	s->ref = calloc(s->hold_set.count + 1, sizeof(*s->ref));
	if (!s->ref)
		return npu_error_set(s->err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
	for (k = 0; k < s->hold_set.count; k++) {
		s->ref[k] = calloc(s->num_outputs + 1, sizeof(**s->ref));
		if (!s->ref[k])
			return npu_error_set(s->err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
	}
	g = npu_graph_clone(s->graph, s->err);
	if (!g)
		return s->err->status ? s->err->status : NPU_ERR_NO_MEMORY;
	st = run_holdout(s, g, NULL, NULL);
	npu_graph_destroy(g);
	return st;
}

npu_status npu_mixed_compile(struct npu_graph *graph, const struct npu_compile_options *opts,
			     double target, struct npu_compiled **out,
			     struct npu_mixed_result *res, struct npu_error *err)
{
	struct search s = { .graph = graph, .opts = opts, .err = err,
			    .num_fixed = opts->num_keep_fp32 };
	struct npu_calib_cache *own_cache = NULL;
	struct npu_graph *g0 = NULL;
	struct npu_compiled *c0 = NULL;
	struct trial t0, best;
	size_t n = 0, best_k = 0, best_k16 = 0, i;
	npu_status st;

	*out = NULL;
	memset(res, 0, sizeof(*res));
	res->target = target;
	if (!(target > 0.0 && target <= 1.0))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "accuracy target %g: expected a cosine in (0, 1]", target);
	st = npu_calib_count_samples(graph, opts, &n, err);
	if (st)
		return st;
	if (n < 2)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "accuracy target: %zu calibration sample(s); at least 2 are needed (a quarter is held out to measure the accuracy)",
				     n);
	s.hold_set.src = s.cal_set.src = opts;
	s.hold_set.count = n / 4 ? n / 4 : 1;
	if (s.hold_set.count > NPU_MIXED_MAX_HOLDOUT)
		s.hold_set.count = NPU_MIXED_MAX_HOLDOUT;
	s.cal_set.count = n - s.hold_set.count;
	s.hold_set.first = s.cal_set.count;
	res->calib_samples = s.cal_set.count;
	res->holdout_samples = s.hold_set.count;
	s.cal = *opts;
	subset_options(&s.cal, &s.cal_set);
	/* Every trial calibrates the same fp32 graph: once is enough. */
	if (!s.cal.calib_cache) {
		own_cache = npu_calib_cache_create();
		if (!own_cache)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
		s.cal.calib_cache = own_cache;
	}
	s.keep = calloc(s.num_fixed + 1, sizeof(*s.keep));
	s.i16 = calloc(opts->num_int16_nodes + 1, sizeof(*s.i16));
	if (!s.keep || !s.i16) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
		goto done;
	}
	if (s.num_fixed)
		memcpy(s.keep, opts->keep_fp32, s.num_fixed * sizeof(*s.keep));
	st = reference_outputs(&s);
	if (!st)
		st = trial(&s, 0, 0, &t0, &g0, &c0);
	if (st)
		goto done;
	res->compilations = 1;
	res->cosine_int8 = t0.cosine;
	res->segments_int8 = t0.segments;
	res->cycles_int8 = t0.cycles;
	res->cpu_macs_int8 = t0.cpu_macs;
	res->clock_mhz = t0.clock_mhz;
	best = t0;
	if (t0.cosine < target) {
		st = rank(&s, c0, target);
		/* int16 first: cheaper than the CPU, and it stays on the NPU. */
		if (!st)
			st = search(&s, target, true, &best, &best_k16, &best_k, res);
		if (!st && best.cosine < target)
			st = search(&s, target, false, &best, &best_k16, &best_k, res);
		/* Then only as much int16 as the fp32 nodes still need. */
		if (!st && best_k)
			st = trim_int16(&s, target, &best, &best_k16, best_k, res);
	}
	if (st)
		goto done;
	/* The plan's graph, compiled with what the search chose. */
	{
		struct npu_compile_options o;

		trial_options(&s, best_k16, best_k, &o);
		st = npu_compile_graph(graph, &o, out, err);
	}
	if (st)
		goto done;
	res->int16 = calloc((*out)->num_int16_nodes + 1, sizeof(*res->int16));
	if (!res->int16) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
		goto done;
	}
	for (i = 0; i < (*out)->num_int16_nodes; i++) {
		const char *name = (*out)->int16_nodes[i];
		size_t j;

		/* Only what runs on the NPU is int16 (not a node kept in fp32,
		 * nor a member of a group that went with one). */
		for (j = 0; j < (*out)->num_records && strcmp((*out)->records[j].node, name); j++)
			;
		if (j == (*out)->num_records || (*out)->records[j].placement != NPU_PLACE_NPU)
			continue;
		res->int16[res->num_int16] = strdup(name);
		if (!res->int16[res->num_int16]) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
			goto done;
		}
		res->num_int16++;
	}
	res->cosine = best.cosine;
	res->reached = best.cosine >= target;
	res->segments = best.segments;
	res->cycles = best.cycles;
	res->cpu_macs = best.cpu_macs;
	res->kept = calloc(best_k + 1, sizeof(*res->kept));
	res->kept_sqnr_db = calloc(best_k + 1, sizeof(*res->kept_sqnr_db));
	if (!res->kept || !res->kept_sqnr_db) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
		goto done;
	}
	for (i = 0; i < best_k; i++) {
		res->kept[i] = strdup(s.cand[i]);
		res->kept_sqnr_db[i] = s.cand_sqnr[i];
		if (!res->kept[i]) {
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "accuracy target: out of memory");
			goto done;
		}
		res->num_kept++;
	}
done:
	npu_graph_destroy(g0);
	npu_compiled_free(c0);
	search_free(&s);
	npu_calib_cache_destroy(own_cache);
	if (st) {
		npu_compiled_free(*out);
		*out = NULL;
		npu_mixed_result_free(res);
	}
	return st;
}
