// SPDX-License-Identifier: MIT
/*
 * npu_compress_api.c - the public call of model compression
 * (npu/npu_compress.h): options checked, calibration and held-out samples
 * read from directories laid out as npu_model_options.calib_dir reads them,
 * the model run on the CPU executor, and the core (compiler/compress.c).
 * With quantize, the quantizer the core calls: the pruned model loaded
 * for the NPU device through the public load and plan calls (the
 * compile path npu compile takes), run on the held-out samples, saved.
 */
#include "runtime/npu_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/npu_file.h"
#include "compiler/compress.h"
#include "npu/npu_engine.h"
#include "npu/npu_plan.h"
#include "npu/npu_session.h"
#include "runtime/npu_npy.h"

NPU_API void npu_compress_options_init_sized(struct npu_compress_options *o, size_t size)
{
	struct npu_compress_options d = { .struct_size = size, .method = NPU_PRUNE_MAGNITUDE,
					  .sparsity = 0.5 };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

/* A directory of samples: DIR/NAME.npy (one-input models) or DIR/S/INPUT.npy. */
struct sample_dir {
	const char *dir;
	char **names;
	int count;
	bool subdirs;
};

static npu_status dir_count(void *arg, const struct npu_graph *g, size_t *count,
			    struct npu_error *err)
{
	struct sample_dir *d = arg;
	bool one = g->num_inputs == 1;
	struct stat sb;

	*count = 0;
	if (stat(d->dir, &sb) || !S_ISDIR(sb.st_mode))
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "sample directory %s: not a directory",
				     d->dir);
	npu_npy_free_names(d->names, d->count);
	d->names = NULL;
	d->count = npu_npy_list_samples(d->dir, one, &d->names);
	d->subdirs = !one;
	if (d->count == 0 && one) {
		npu_npy_free_names(d->names, 0);
		d->names = NULL;
		d->count = npu_npy_list_samples(d->dir, false, &d->names);
		d->subdirs = true;
	}
	if (d->count < 0) {
		d->count = 0;
		return npu_error_set(err, NPU_ERR_IO, "sample directory %s: cannot read it", d->dir);
	}
	if (d->count == 0)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "sample directory %s: no %s", d->dir,
				     one ? ".npy files or sample subdirectories" : "sample subdirectories");
	*count = (size_t)d->count;
	return NPU_OK;
}

static bool fits(const struct npu_tensor *t, const struct npu_value *in)
{
	int i;

	if (t->dtype != in->dtype || t->shape.rank != in->shape.rank)
		return false;
	for (i = 0; i < in->shape.rank; i++)
		if (in->shape.dims[i] >= 0 && in->shape.dims[i] != t->shape.dims[i])
			return false;
	return true;
}

static npu_status dir_sample(void *arg, const struct npu_graph *g, size_t index,
			     struct npu_tensor **set, struct npu_error *err)
{
	struct sample_dir *d = arg;
	char path[4096], want[128], got[128];
	npu_status st = NPU_OK;
	size_t k;

	if (index >= (size_t)d->count)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "sample %zu of %s does not exist",
				     index, d->dir);
	for (k = 0; !st && k < g->num_inputs; k++) {
		if (!d->subdirs)
			snprintf(path, sizeof(path), "%s/%s", d->dir, d->names[index]);
		else
			snprintf(path, sizeof(path), "%s/%s/%s.npy", d->dir, d->names[index],
				 g->inputs[k]->name);
		st = npu_npy_read(path, &set[k], err);
		if (!st && !fits(set[k], g->inputs[k]))
			st = npu_error_set(err, NPU_ERR_INVALID_ARG,
					   "sample file %s: %s %s does not match input '%s' (%s %s)",
					   path, npu_dtype_name(set[k]->dtype),
					   npu_shape_str(&set[k]->shape, got, sizeof(got)),
					   g->inputs[k]->name, npu_dtype_name(g->inputs[k]->dtype),
					   npu_shape_str(&g->inputs[k]->shape, want, sizeof(want)));
	}
	for (k = 0; st && k < g->num_inputs; k++) {
		npu_tensor_destroy(set[k]);
		set[k] = NULL;
	}
	return st;
}

/* ---- Quantizing the pruned model: the runtime's own load, plan, run ---- */

struct quantizer {
	const struct npu_compress_options *o;
	const char *name;
	struct npu_engine *engine;	/* made on first use */
};

static npu_status api_error(npu_status st, struct npu_error *err, const char *what)
{
	return npu_error_set(err, st, "%s: %s", what, npu_last_error());
}

static npu_status quant_run(void *arg, const void *onnx, size_t size, const struct npu_graph *g,
			    const struct npu_cz_samples *src, size_t count,
			    struct npu_tensor *const *refs, const char *save_path, double *cos,
			    struct npu_error *err)
{
	struct quantizer *q = arg;
	size_t n = g->num_inputs, no = g->num_outputs, i, k;
	struct npu_host_tensor *in = calloc(n + 1, sizeof(*in));
	struct npu_tensor **set = calloc(n + 1, sizeof(*set));
	struct npu_model_options mo;
	struct npu_model *m = NULL;
	struct npu_plan *p = NULL;
	struct npu_session *s = NULL;
	npu_status st = NPU_OK;

	*cos = 1;
	if (!in || !set) {
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	if (!q->engine && (st = npu_engine_create(NULL, &q->engine)))
		goto fail;
	npu_model_options_init(&mo);
	mo.device = q->o->device ? q->o->device : "sim";
	mo.calib_dir = q->o->calib_dir;
	if (!strcmp(q->o->quantize, "int16"))
		mo.precision = "int16";
	else if (!strcmp(q->o->quantize, "mixed"))
		mo.accuracy_target = q->o->accuracy_target;
	/* At the calibration samples' shapes, as the core ran the model. */
	for (i = 0; i < n; i++) {
		in[i].name = g->inputs[i]->name;
		in[i].rank = g->inputs[i]->shape.rank;
		memcpy(in[i].dims, g->inputs[i]->shape.dims,
		       sizeof(int64_t) * (size_t)g->inputs[i]->shape.rank);
	}
	if ((st = npu_model_load_memory(q->engine, onnx, size, q->name, &mo, &m)) ||
	    (st = npu_model_get_plan(m, in, n, &p)) ||
	    (save_path && (st = npu_plan_save_compiled_with(p, save_path, NULL))) ||
	    (st = npu_session_create(m, NULL, &s)))
		goto fail;
	for (k = 0; !st && k < count; k++) {
		st = src->sample(src->arg, g, k, set, err);
		for (i = 0; !st && i < n; i++) {
			in[i].dtype = (enum npu_data_type)set[i]->dtype;
			in[i].data = set[i]->data;
			in[i].nbytes = set[i]->nbytes;
		}
		if (!st && (st = npu_session_run_plan(s, p, in, n)))
			st = api_error(st, err, "the quantized model");
		for (i = 0; !st && i < no; i++) {
			const struct npu_tensor *r = refs[k * no + i];
			struct npu_host_tensor t;
			double v;

			if ((st = npu_session_output(s, i, &t))) {
				st = api_error(st, err, "the quantized model");
				break;
			}
			if (!r || r->dtype != NPU_DTYPE_FLOAT || t.dtype != NPU_TYPE_FLOAT)
				continue;
			v = npu_cz_cosine(t.data, t.nbytes / sizeof(float), r->data,
					  r->nbytes / sizeof(float));
			if (v < *cos)
				*cos = v;
		}
		for (i = 0; i < n; i++) {
			npu_tensor_destroy(set[i]);
			set[i] = NULL;
		}
	}
	goto out;
fail:
	st = api_error(st, err, "quantizing the pruned model");
out:
	npu_session_destroy(s);
	npu_plan_release(p);
	npu_model_destroy(m);
	free(set);
	free(in);
	return st;
}

NPU_API npu_status npu_compress_memory(const void *data, size_t size, const char *name,
				       const struct npu_compress_options *opts,
				       struct npu_compress_result **out)
{
	struct sample_dir cal = { 0 }, ev = { 0 };
	struct quantizer qz = { 0 };
	struct npu_cz_config cfg = { .runner = &npu_exec_graph_runner };
	struct npu_error err = { 0 };
	struct npu_compress_result *r;
	npu_status st;

	if (!data || !out || !opts)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_compress: NULL argument");
	*out = NULL;
	if (!name)
		name = "model";
	npu_compress_options_init(&cfg.o);
	st = npu_api_copy_options(&cfg.o, sizeof(cfg.o), opts, "npu_compress_options");
	if (st)
		return st;
	if (!cfg.o.method)
		cfg.o.method = NPU_PRUNE_MAGNITUDE;
	if (!cfg.o.nm_m) {
		cfg.o.nm_n = 2;
		cfg.o.nm_m = 4;
	}
	if (cfg.o.method == NPU_PRUNE_NM)
		cfg.o.sparsity = 1.0 - (double)cfg.o.nm_n / (cfg.o.nm_m ? cfg.o.nm_m : 1);
	if (!(cfg.o.damping > 0))
		cfg.o.damping = 0.01;
	if (!cfg.o.rows_per_sample)
		cfg.o.rows_per_sample = 256;
	if (!cfg.o.calib_dir)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: npu_compress_options.calib_dir: compression needs calibration samples (npu compress --calib-dir DIR)",
				    name);
	cal.dir = cfg.o.calib_dir;
	cfg.calib = (struct npu_cz_samples){ dir_count, dir_sample, &cal };
	if (cfg.o.eval_dir) {
		ev.dir = cfg.o.eval_dir;
		cfg.eval = (struct npu_cz_samples){ dir_count, dir_sample, &ev };
	}
	if (cfg.o.quantize) {
		qz.o = &cfg.o;
		qz.name = name;
		cfg.quant = (struct npu_cz_quantizer){ quant_run, &qz };
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	st = npu_compress_model(data, size, name, &cfg, r, &err);
	npu_engine_destroy(qz.engine);
	npu_npy_free_names(cal.names, cal.count);
	npu_npy_free_names(ev.names, ev.count);
	if (st) {
		free(r);
		return npu_api_fail_err(&err);
	}
	*out = r;
	return NPU_OK;
}

NPU_API npu_status npu_compress_file(const char *path, const struct npu_compress_options *opts,
				     struct npu_compress_result **out)
{
	struct npu_error err = { 0 };
	void *data = NULL;
	size_t size = 0;
	npu_status st;

	if (!path || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_compress_file: NULL argument");
	*out = NULL;
	st = npu_read_file(path, &data, &size, &err);
	if (st)
		return npu_api_fail_err(&err);
	st = npu_compress_memory(data, size, path, opts, out);
	free(data);
	return st;
}

NPU_API void npu_compress_result_free(struct npu_compress_result *r)
{
	if (!r)
		return;
	npu_compress_result_clear(r);
	free(r);
}
