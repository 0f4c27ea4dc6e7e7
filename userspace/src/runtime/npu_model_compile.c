// SPDX-License-Identifier: MIT
/*
 * npu_model_compile.c - how a model is imported and compiled from its
 * source (libnpu-user only; libnpu-runtime has npu_no_compiler.c in its
 * place): the ONNX import, the compile options from the model options,
 * calibration samples from a directory, the mixed-precision search, the
 * CPU passes, and the quantization report and mixed-precision results.
 */
#include "runtime/npu_api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/passes/passes.h"
#include "compiler/quant_report.h"
#include "onnx/npu_onnx.h"
#include "compiler/mixed.h"
#include "runtime/npu_npy.h"

/* Calibration .npy files for the plan's graph (see npu_compile_options). */
static npu_status calib_tensor(const char *path, const struct npu_value *in,
			       struct npu_tensor **out, struct npu_error *err)
{
	char want[128], got[128];
	npu_status st = npu_npy_read(path, out, err);

	if (st)
		return st;
	if ((*out)->dtype != in->dtype || (*out)->shape.rank != in->shape.rank ||
	    memcmp((*out)->shape.dims, in->shape.dims, sizeof(int64_t) * (size_t)in->shape.rank))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "calibration file %s: %s %s does not match input '%s' (%s %s)",
				     path, npu_dtype_name((*out)->dtype),
				     npu_shape_str(&(*out)->shape, got, sizeof(got)), in->name,
				     npu_dtype_name(in->dtype),
				     npu_shape_str(&in->shape, want, sizeof(want)));
	return NPU_OK;
}

/*
 * calib_dir: DIR/NAME.npy, one sample each, for a one-input model; else
 * (and for a one-input model without such files) DIR/<sample>/<input
 * name>.npy. Sorted by name, so runs are repeatable.
 * The compiler asks for the count, then for each sample as it needs it
 * (twice), so no more than one sample is in memory.
 */
static npu_status calib_count(void *arg, const struct npu_graph *g, size_t *count,
			      struct npu_error *err)
{
	struct npu_model *m = arg;
	const char *dir = m->calib_dir;
	bool one_input = g->num_inputs == 1;
	int n;

	*count = 0;
	npu_npy_free_names(m->calib_names, m->num_calib_names);
	m->calib_names = NULL;
	m->num_calib_names = 0;
	if (!dir || !g->num_inputs)
		return NPU_OK;
	n = npu_npy_list_samples(dir, one_input, &m->calib_names);
	m->calib_subdirs = !one_input;
	if (n == 0 && one_input) {
		npu_npy_free_names(m->calib_names, 0);
		m->calib_names = NULL;
		n = npu_npy_list_samples(dir, false, &m->calib_names);
		m->calib_subdirs = true;
	}
	if (n < 0)
		return npu_error_set(err, NPU_ERR_IO, "calibration directory %s: cannot read it", dir);
	m->num_calib_names = n;
	if (n == 0)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "calibration directory %s: no %s", dir,
				     one_input ? ".npy files or sample subdirectories"
					       : "sample subdirectories");
	*count = (size_t)n;
	return NPU_OK;
}

static npu_status calib_sample(void *arg, const struct npu_graph *g, size_t index,
			       struct npu_tensor **set, struct npu_error *err)
{
	struct npu_model *m = arg;
	char path[4096];
	npu_status st = NPU_OK;
	size_t k;

	if (index >= (size_t)m->num_calib_names)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "calibration sample %zu does not exist", index);
	for (k = 0; !st && k < g->num_inputs; k++) {
		if (!m->calib_subdirs)
			snprintf(path, sizeof(path), "%s/%s", m->calib_dir, m->calib_names[index]);
		else
			snprintf(path, sizeof(path), "%s/%s/%s.npy", m->calib_dir,
				 m->calib_names[index], g->inputs[k]->name);
		st = calib_tensor(path, g->inputs[k], &set[k], err);
	}
	return st;
}

static enum npu_calib_method calib_method(const char *name)
{
	enum npu_calib_method m = NPU_CALIB_MINMAX;	/* the default: compiler.md */

	if (name)
		npu_calib_method_parse(name, &m);	/* checked at load */
	return m;
}

npu_status npu_model_compile_options(struct npu_model *m)
{
	enum npu_calib_method cm;

	if (m->calib_method && !npu_calib_method_parse(m->calib_method, &cm))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_model_options.calib_method '%s': expected mse, minmax, percentile or entropy",
				    m->calib_method);
	if (m->codegen) {
		struct npu_error err = { 0 };

		if (npu_codegen_options_parse(&m->codegen_opts, m->codegen, &err) != NPU_OK)
			return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_options.codegen: %s",
					    err.msg);
	}
	return NPU_OK;
}

npu_status npu_model_import(struct npu_model *m, bool meta, struct npu_error *err)
{
	atomic_fetch_add(&m->imports, 1);
	return npu_onnx_import_meta(m->bytes, m->size, m->source, &m->base, meta ? &m->meta : NULL,
				    err);
}

npu_status npu_model_cpu_passes(struct npu_model *m, struct npu_graph *g, struct npu_error *err)
{
	return npu_cpu_passes(g, &m->cpu_opts, err);
}

npu_status npu_model_replay_passes(struct npu_graph *g, struct npu_error *err)
{
	struct npu_qdq_table qdq = { 0 };
	npu_status st = npu_compile_passes_pre(g, &qdq, err);

	if (!st)
		st = npu_compile_passes_fuse(g, err);
	npu_qdq_table_free(&qdq);
	return st;
}

npu_status npu_model_compile(struct npu_model *m, struct npu_plan *p, struct npu_error *err)
{
	struct npu_compile_options o;
	npu_status st;

	/* Calibration ranges belong to tensors: one cache per model, made on first use. */
	if (!m->calib && !(m->calib = npu_calib_cache_create()))
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	atomic_fetch_add(&m->compilations, 1);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = m->dev;
	o.pool = m->engine->pool;
	o.threads = 1;
	o.keep_small_segments = m->opts.keep_small_segments != 0;
	o.profile_ops = m->opts.profile != 0;
	if (m->opts.calib_percentile > 0)
		o.percentile = m->opts.calib_percentile;
	if (m->opts.calib_seed)
		o.calib_seed = m->opts.calib_seed;
	if (m->opts.calib_samples > 0)
		o.random_calib_sets = (size_t)m->opts.calib_samples;
	o.calib_method = calib_method(m->calib_method);
	if (m->calib_dir) {
		o.calib_count = calib_count;
		o.calib_sample = calib_sample;
		o.calib_arg = m;
	}
	o.calib_random = m->opts.calib_random != 0;
	o.calib_cache = m->calib;
	o.keep_fp32 = m->keep;
	o.num_keep_fp32 = m->num_keep;
	o.int16_nodes = m->int16_names;
	o.num_int16_nodes = m->num_int16;
	o.int16_all = m->precision && !strcmp(m->precision, "int16");
	o.codegen = m->codegen_opts;
	o.cpu = m->cpu_opts;
	o.bias_correction = m->opts.bias_correction;
	o.pipeline_stages = npu_plan_pipeline_stages(p);
	/* The accuracy search runs its candidates on the device: they need theirs. */
	o.defer_consts = npu_plan_defers_consts(p) && !(m->opts.accuracy_target > 0);
	if (m->opts.accuracy_target > 0) {
		p->mixed = calloc(1, sizeof(*p->mixed));
		st = p->mixed ? npu_mixed_compile(p->g, &o, m->opts.accuracy_target,
						  &p->compiled, p->mixed, err)
			      : npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	} else {
		st = npu_compile_graph(p->g, &o, &p->compiled, err);
	}
	atomic_store(&m->calibrations, npu_calib_cache_runs(m->calib));
	return st;
}

void npu_model_compile_free(struct npu_model *m)
{
	npu_calib_cache_destroy(m->calib);
}

void npu_plan_mixed_free(struct npu_plan *p)
{
	npu_mixed_result_free(p->mixed);
	free(p->mixed);
}

/* The options npu_model_compile() calibrated with: the same samples. */
static void report_options(struct npu_model *m, struct npu_compile_options *o)
{
	npu_compile_options_init(o);
	o->runner = &npu_exec_graph_runner;
	o->device = m->dev;
	o->pool = m->engine->pool;
	o->threads = 1;
	if (m->opts.calib_seed)
		o->calib_seed = m->opts.calib_seed;
	if (m->opts.calib_samples > 0)
		o->random_calib_sets = (size_t)m->opts.calib_samples;
	if (m->calib_dir) {
		o->calib_count = calib_count;
		o->calib_sample = calib_sample;
		o->calib_arg = m;
	}
	o->calib_random = m->opts.calib_random != 0;
	o->codegen = m->codegen_opts;
	o->cpu = m->cpu_opts;
}

NPU_API npu_status npu_plan_quant_report(struct npu_plan *p, size_t max_samples,
					 struct npu_quant_report **out)
{
	struct npu_error err = { 0 };
	struct npu_compile_options o;
	struct npu_quant_report *r;
	struct npu_qdq_table qdq = { 0 };
	struct npu_graph *ref = NULL;
	struct npu_qr qr = { 0 };
	npu_status st;
	size_t i;

	if (!p || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_quant_report: NULL argument");
	*out = NULL;
	if (!p->compiled)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: the quantization report needs a model loaded for an NPU device (sim, accel)",
				    p->model->source);
	report_options(p->model, &o);
	/* The fp32 reference: the graph calibration runs, at the plan's shapes. */
	pthread_mutex_lock(&p->model->build_lock);
	st = npu_model_source(p->model, &err);
	pthread_mutex_unlock(&p->model->build_lock);
	if (st)
		return npu_api_fail_err(&err);
	ref = npu_graph_clone(p->model->base, &err);
	st = ref ? NPU_OK : err.status ? err.status : NPU_ERR_NO_MEMORY;
	for (i = 0; !st && i < p->model->num_inputs; i++)
		ref->inputs[i]->shape = p->shapes[i];
	if (!st)
		st = npu_graph_infer(ref, true, &err);
	if (!st)
		st = npu_compile_passes_pre(ref, &qdq, &err);
	pthread_mutex_lock(&p->model->build_lock);	/* calib_names */
	if (!st)
		st = npu_quant_report_build(ref, p->g, p->compiled, &o, max_samples, &qr, &err);
	pthread_mutex_unlock(&p->model->build_lock);
	npu_qdq_table_free(&qdq);
	npu_graph_destroy(ref);
	if (st)
		return err.msg[0] ? npu_api_fail_err(&err) : npu_api_fail(st, "quant report failed");
	r = calloc(1, sizeof(*r));
	if (r) {
		r->layers = calloc(qr.count + 1, sizeof(*r->layers));
		r->outputs = calloc(qr.num_outputs + 1, sizeof(*r->outputs));
	}
	if (!r || !r->layers || !r->outputs) {
		if (r) {
			free(r->layers);
			free(r->outputs);
		}
		free(r);
		npu_quant_report_clear(&qr);
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	}
	/* The strings move to the report; layers[num_layers] keeps the array. */
	r->num_layers = qr.count;
	r->samples = qr.samples;
	r->compared = qr.compared;
	r->mismatches = qr.mismatches;
	for (i = 0; i < qr.count; i++) {
		struct npu_qr_layer *l = &qr.layers[i];

		r->layers[i] = (struct npu_quant_layer){
			.node = l->node, .op_type = l->op_type, .value = l->value,
			.segment = l->segment,
			.local_sqnr_db = npu_err_sqnr_db(&l->local),
			.local_cosine = npu_err_cosine(&l->local),
			.e2e_sqnr_db = npu_err_sqnr_db(&l->e2e),
			.e2e_cosine = npu_err_cosine(&l->e2e),
		};
		l->node = l->op_type = l->value = NULL;
	}
	r->num_outputs = qr.num_outputs;
	for (i = 0; i < qr.num_outputs; i++) {
		struct npu_qr_layer *l = &qr.outputs[i];

		r->outputs[i] = (struct npu_quant_layer){
			.node = l->node, .op_type = l->op_type, .value = l->value,
			.segment = -1, .local_sqnr_db = NAN, .local_cosine = NAN,
			.e2e_sqnr_db = npu_err_sqnr_db(&l->e2e),
			.e2e_cosine = npu_err_cosine(&l->e2e),
		};
		l->node = l->op_type = l->value = NULL;
	}
	npu_quant_report_clear(&qr);
	*out = r;
	return NPU_OK;
}

NPU_API void npu_quant_report_free(struct npu_quant_report *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->num_layers; i++) {
		free((char *)r->layers[i].node);
		free((char *)r->layers[i].op_type);
		free((char *)r->layers[i].value);
	}
	for (i = 0; i < r->num_outputs; i++) {
		free((char *)r->outputs[i].node);
		free((char *)r->outputs[i].op_type);
		free((char *)r->outputs[i].value);
	}
	free(r->layers);
	free(r->outputs);
	free(r);
}

NPU_API npu_status npu_plan_mixed_precision(const struct npu_plan *p,
					    struct npu_mixed_precision *out)
{
	struct npu_mixed_precision mp = { .struct_size = sizeof(mp) };
	const struct npu_mixed_result *r = p ? p->mixed : NULL;

	if (!p || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_mixed_precision: NULL argument");
	if (r) {
		mp.target = r->target;
		mp.calib_samples = r->calib_samples;
		mp.holdout_samples = r->holdout_samples;
		mp.holdout_cosine_int8 = r->cosine_int8;
		mp.holdout_cosine = r->cosine;
		mp.reached = r->reached;
		mp.compilations = r->compilations;
		mp.num_kept = r->num_kept;
		mp.kept = (const char *const *)r->kept;
		mp.kept_sqnr_db = r->kept_sqnr_db;
		mp.segments_int8 = r->segments_int8;
		mp.segments = r->segments;
		mp.npu_cycles_int8 = r->cycles_int8;
		mp.npu_cycles = r->cycles;
		mp.cpu_macs_int8 = r->cpu_macs_int8;
		mp.cpu_macs = r->cpu_macs;
		mp.clock_mhz = r->clock_mhz;
		mp.num_int16 = r->num_int16;
		mp.int16 = (const char *const *)r->int16;
		mp.holdout_cosine_int16 = r->cosine_int16;
	}
	return npu_api_copy_stats(out, &mp, sizeof(mp), "npu_mixed_precision");
}
