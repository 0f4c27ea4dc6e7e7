// SPDX-License-Identifier: MIT
/*
 * npu_model.c - models and their plans (npu/npu_model.h). A model imports
 * its ONNX bytes once into a base graph that is never modified; a plan is
 * a copy of it with the input shapes bound, shapes inferred and folded,
 * compiled for the model's NPU device, and the CPU execution plan made.
 * Plans live in a least-recently-used cache bounded by count and bytes;
 * calibration ranges live in the model, by value name, for every plan.
 */
#include "runtime/npu_api.h"
#include "runtime/npu_ep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "compiler/npub.h"
#include "graph/npu_str.h"
#include "onnx/npu_onnx.h"
#include "runtime/npu_npy.h"

#define NPU_DEFAULT_MAX_PLANS 8
#define NPU_DEFAULT_MAX_PLAN_BYTES (1ull << 30)

NPU_API size_t npu_data_type_size(enum npu_data_type type)
{
	return npu_dtype_size((enum npu_dtype)type);
}

NPU_API const char *npu_data_type_name(enum npu_data_type type)
{
	return npu_dtype_name((enum npu_dtype)type);
}

NPU_API void npu_model_options_init_sized(struct npu_model_options *o, size_t size)
{
	struct npu_model_options d = { .struct_size = size, .device = "cpu" };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

static bool on_npu(const struct npu_model *m)
{
	return m->dev != NULL;
}

/* ---- Interface ---- */

static void free_io(struct npu_io_info *io, size_t n)
{
	size_t i;
	int d;

	if (!io)
		return;
	for (i = 0; i < n; i++) {
		free(io[i].name);
		for (d = 0; d < NPU_MAX_RANK; d++)
			free(io[i].dim_names[d]);
	}
	free(io);
}

static npu_status copy_io(struct npu_io_info **out, struct npu_value *const *vals, size_t n)
{
	struct npu_io_info *io = calloc(n ? n : 1, sizeof(*io));
	size_t i;
	int d;

	*out = io;
	if (!io)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < n; i++) {
		const struct npu_value *v = vals[i];

		io[i].name = strdup(v->name);
		if (!io[i].name)
			return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
		io[i].info.dtype = (enum npu_data_type)v->dtype;
		io[i].info.rank = v->shape.rank;
		memcpy(io[i].info.dims, v->shape.dims, sizeof(io[i].info.dims));
		for (d = 0; d < NPU_MAX_RANK; d++)
			if (v->dim_params[d] && !(io[i].dim_names[d] = strdup(v->dim_params[d])))
				return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	}
	return NPU_OK;
}

static void fill_info(struct npu_tensor_info *info, const struct npu_io_info *io)
{
	int d;

	*info = io->info;
	info->name = io->name;
	for (d = 0; d < NPU_MODEL_MAX_RANK; d++)
		info->dim_names[d] = io->dim_names[d];
}

/* ---- Plans ---- */

void npu_plan_ref(struct npu_plan *p)
{
	atomic_fetch_add(&p->refs, 1);
}

static void plan_free(struct npu_plan *p)
{
	pthread_mutex_destroy(&p->replica_lock);
	npu_exec_schedule_destroy(p->exec);
	npu_graph_destroy(p->g);
	npu_compiled_free(p->compiled);
	npu_plan_mixed_free(p);
	npu_plan_placements_free(p);
	free_io(p->outputs, p->model->num_outputs);
	free(p->seg_device);
	free(p->shapes);
	free(p);
}

void npu_plan_unref(struct npu_plan *p)
{
	if (p && atomic_fetch_sub(&p->refs, 1) == 1)
		plan_free(p);
}

NPU_API void npu_plan_release(struct npu_plan *p)
{
	struct npu_model *m;

	if (!p)
		return;
	m = p->model;
	npu_plan_unref(p);
	npu_model_unref(m);	/* the reference npu_model_get_plan() took */
}

NPU_API const struct npu_model *npu_plan_model(const struct npu_plan *p)
{
	return p ? p->model : NULL;
}

static bool same_shapes(const struct npu_shape *a, const struct npu_shape *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i].rank != b[i].rank ||
		    memcmp(a[i].dims, b[i].dims, sizeof(int64_t) * (size_t)a[i].rank))
			return false;
	return true;
}

/* The npu provider's work on a plan: a compiled file's segments, or the compiler's. */
npu_status npu_plan_compile_npu(struct npu_model *m, struct npu_plan *p, struct npu_error *err)
{
	npu_status st;

	if (m->npub && same_shapes(p->shapes, m->npub_shapes, m->num_inputs)) {
		struct npu_npub *f = m->npub_open;

		m->npub_open = NULL;	/* the first plan takes the file as parsed at load */
		st = f ? NPU_OK : npu_npub_open_view(m->npub, m->npub_size, true, m->source, &f, err);
		/* Before version 3 the file holds the source: replay its passes. */
		if (!st && !npu_npub_finished(f))
			st = npu_model_replay_passes(p->g, err);
		if (!st)
			st = npu_npub_instantiate(f, p->g, m->dev,
						  (m->opts.profile ? NPU_NPUB_PROFILE_OPS : 0) |
						  (npu_plan_defers_consts(p) ? NPU_NPUB_DEFER_CONSTS : 0),
						  &p->compiled, err);
		npu_npub_close(f);
	} else {
		st = npu_model_compile(m, p, err);
	}
	if (st && !strstr(err->msg, m->source))
		npu_error_prefix(err, "%s", m->source);
	return st;
}

static uint64_t graph_bytes(const struct npu_graph *g)
{
	uint64_t bytes = 0;
	size_t i;

	for (i = 0; i < g->num_values; i++)
		if (g->values[i]->constant)
			bytes += g->values[i]->constant->nbytes;
	return bytes;
}

/*
 * The source graph (m->base): imported at load from an ONNX file or a
 * compiled file before version 3; from a version 3 file only when first
 * needed (the CPU device, a quantization report). Under build_lock, or at
 * load.
 */
npu_status npu_model_source(struct npu_model *m, struct npu_error *err)
{
	char buf[160];

	if (m->base)
		return NPU_OK;
	if (!m->size)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: this compiled model keeps no source model, so it runs only on an NPU device at the input shapes it was compiled for (%s%s)",
				     m->source,
				     m->num_inputs ? npu_shape_str(&m->npub_shapes[0], buf, sizeof(buf)) : "no inputs",
				     m->num_inputs > 1 ? ", ..." : "");
	if (npu_model_import(m, false, err))
		return err->status;
	npu_graph_set_ops(m->base, m->engine->ops);	/* the engine's custom ops */
	return npu_custom_ops_check_graph(m->base, err);
}

static npu_status build_plan(struct npu_model *m, const struct npu_shape *shapes,
			     bool auto_pipeline, bool *retry_pipeline, struct npu_plan **out)
{
	struct npu_error err = { 0 };
	struct npu_plan *p;
	bool finished;
	size_t i;
	npu_status st;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	p->model = m;
	p->auto_pipeline = auto_pipeline;
	atomic_init(&p->refs, 1);
	pthread_mutex_init(&p->replica_lock, NULL);
	p->shapes = malloc(sizeof(*p->shapes) * (m->num_inputs + 1));
	/* A compiled file at its shapes runs its graph as compiled: no import,
	 * no inference, no pass, no code generation. */
	finished = m->finished && on_npu(m) && same_shapes(shapes, m->npub_shapes, m->num_inputs);
	st = finished ? NPU_OK : npu_model_source(m, &err);
	if (!st)
		p->g = npu_graph_clone(finished ? m->finished : m->base, &err);
	if (!p->shapes || !p->g) {
		st = !p->shapes ? NPU_ERR_NO_MEMORY : err.status ? err.status : NPU_ERR_NO_MEMORY;
		goto fail;
	}
	memcpy(p->shapes, shapes, sizeof(*shapes) * m->num_inputs);
	for (i = 0; i < m->num_inputs; i++)
		p->g->inputs[i]->shape = shapes[i];
	if (!finished)
		st = npu_graph_infer(p->g, true, &err);
	/* Each provider takes its nodes in turn, the CPU what is left. */
	if (!st)
		st = npu_plan_assign(m, p, finished, &err);
	/* One line per model; each warning at info level (npu compile --explain). */
	for (i = 0; !st && p->compiled && i < p->compiled->num_warnings; i++)
		npu_engine_log(m->engine, NPU_LOG_INFO, "%s: %s", m->source,
			       p->compiled->warnings[i]);
	if (!st && p->compiled && p->compiled->num_warnings && !atomic_exchange(&m->warned, true))
		npu_engine_log(m->engine, NPU_LOG_WARNING,
			       "%s: %zu compile warning%s, the first: %s (npu compile --explain lists them)",
			       m->source, p->compiled->num_warnings,
			       p->compiled->num_warnings > 1 ? "s" : "", p->compiled->warnings[0]);
	/* A compiled model's CPU part as compiled (a .npub: as recorded). */
	if (!st)
		st = npu_exec_schedule_create_with(p->g, p->compiled ? &p->compiled->cpu : &m->cpu_opts,
						   &p->exec, &err);
	if (!st)
		st = copy_io(&p->outputs, p->g->outputs, p->g->num_outputs) ? NPU_ERR_NO_MEMORY
									     : NPU_OK;
	if (st)
		goto fail;
	p->bytes = graph_bytes(p->g);
	for (i = 0; p->compiled && i < p->compiled->num_segments; i++) {
		const struct npu_codegen_result *code = &p->compiled->segments[i]->code;
		uint64_t predicted = 0;
		size_t k;

		p->bytes += code->consts_size;
		for (k = 0; code->lop_pred_cycles && k < p->compiled->segments[i]->prog.num_lops; k++)
			predicted += code->lop_pred_cycles[k];
		atomic_fetch_add(&p->work_cycles, predicted ? predicted : code->ideal_mac_cycles);
	}
	if (p->compiled)
		atomic_fetch_add(&m->codegens, p->compiled->codegen_runs);
	st = npu_plan_parallel_setup(p, retry_pipeline);
	if (st) {
		plan_free(p);
		return st;
	}
	atomic_fetch_add(&m->plans_built, 1);
	*out = p;
	return NPU_OK;
fail:
	plan_free(p);
	return err.status ? npu_api_fail_err(&err) : npu_api_fail(st, "%s: planning failed",
								    m->source);
}

/* The cached plan for 'shapes' with a new reference, or NULL. Cache lock held. */
static struct npu_plan *cache_find(struct npu_model *m, const struct npu_shape *shapes)
{
	size_t i;

	for (i = 0; i < m->num_plans; i++) {
		struct npu_plan *p = m->plans[i];

		if (same_shapes(p->shapes, shapes, m->num_inputs)) {
			memmove(&m->plans[1], &m->plans[0], i * sizeof(m->plans[0]));
			m->plans[0] = p;
			npu_plan_ref(p);
			return p;
		}
	}
	return NULL;
}

static void cache_insert(struct npu_model *m, struct npu_plan *p)
{
	memmove(&m->plans[1], &m->plans[0], m->num_plans * sizeof(m->plans[0]));
	m->plans[0] = p;	/* the cache's reference: p's initial one */
	m->num_plans++;
	m->plan_bytes += p->bytes;
	/* Least recently used first out; the newest always stays. */
	while (m->num_plans > 1 &&
	       (m->num_plans > m->max_plans || m->plan_bytes > m->max_plan_bytes)) {
		struct npu_plan *old = m->plans[--m->num_plans];

		m->plan_bytes -= old->bytes;
		atomic_fetch_add(&m->plans_evicted, 1);
		npu_plan_unref(old);	/* sessions still running it keep it */
	}
}

npu_status npu_model_plan_for(struct npu_model *m, const struct npu_shape *shapes,
			      struct npu_plan **out)
{
	struct npu_plan *p;
	npu_status st;

	pthread_mutex_lock(&m->cache_lock);
	p = cache_find(m, shapes);
	pthread_mutex_unlock(&m->cache_lock);
	if (p) {
		atomic_fetch_add(&m->plan_hits, 1);
		*out = p;
		return NPU_OK;
	}
	/* One build at a time per model; another thread may have made it meanwhile. */
	pthread_mutex_lock(&m->build_lock);
	pthread_mutex_lock(&m->cache_lock);
	p = cache_find(m, shapes);
	pthread_mutex_unlock(&m->cache_lock);
	if (p) {
		pthread_mutex_unlock(&m->build_lock);
		atomic_fetch_add(&m->plan_hits, 1);
		*out = p;
		return NPU_OK;
	}
	atomic_fetch_add(&m->plan_misses, 1);
	{
		bool retry = false;

		st = build_plan(m, shapes, false, &retry, &p);
		/* auto: the model does not fit one device, so it is cut in stages. */
		if (st == NPU_ERR_NO_MEMORY && retry) {
			npu_engine_log(m->engine, NPU_LOG_INFO, "%s", npu_last_error());
			st = build_plan(m, shapes, true, NULL, &p);
		}
	}
	if (st == NPU_OK) {
		char buf[160];

		npu_plan_ref(p);	/* the caller's */
		pthread_mutex_lock(&m->cache_lock);
		cache_insert(m, p);
		pthread_mutex_unlock(&m->cache_lock);
		npu_engine_log(m->engine, NPU_LOG_INFO, "%s: planned for %s%s", m->source,
			       m->num_inputs ? npu_shape_str(&shapes[0], buf, sizeof(buf)) : "no inputs",
			       m->num_inputs > 1 ? ", ..." : "");
	}
	pthread_mutex_unlock(&m->build_lock);
	*out = p;
	return st;
}

/* ---- Inputs ---- */

static npu_status find_input(const struct npu_model *m, const char *name, size_t *index)
{
	size_t i;

	for (i = 0; i < m->num_inputs; i++)
		if (!strcmp(m->inputs[i].name, name)) {
			*index = i;
			return NPU_OK;
		}
	return npu_api_fail(NPU_ERR_NOT_FOUND, "%s: the model has no input '%s'", m->source, name);
}

static npu_status check_shape(const struct npu_model *m, size_t i, int rank,
			      const int64_t *dims, struct npu_shape *out)
{
	const struct npu_tensor_info *decl = &m->inputs[i].info;
	const char *name = m->inputs[i].name;
	int d;

	if (rank < 0 || rank > NPU_MAX_RANK)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: input '%s': rank %d is out of range",
				    m->source, name, rank);
	if (decl->rank >= 0 && rank != decl->rank)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: input '%s': rank %d, the model declares rank %d",
				    m->source, name, rank, decl->rank);
	memset(out, 0, sizeof(*out));
	out->rank = rank;
	for (d = 0; d < rank; d++) {
		if (dims[d] < 0)
			return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: input '%s': dim %d is %lld",
					    m->source, name, d, (long long)dims[d]);
		if (decl->rank >= 0 && decl->dims[d] >= 0 && decl->dims[d] != dims[d])
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: input '%s': dim %d is %lld, the model fixes it to %lld",
					    m->source, name, d, (long long)dims[d],
					    (long long)decl->dims[d]);
		out->dims[d] = dims[d];
	}
	return NPU_OK;
}

npu_status npu_model_bind_inputs(const struct npu_model *m,
				 const struct npu_host_tensor *inputs, size_t count,
				 bool shapes_only, struct npu_tensor *ts,
				 const struct npu_tensor **ptrs)
{
	size_t i, k;
	npu_status st;

	if (count != m->num_inputs || (count && !inputs))
		return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: %zu inputs given, the model has %zu",
				    m->source, count, m->num_inputs);
	for (k = 0; k < count; k++)
		ptrs[k] = NULL;
	for (k = 0; k < count; k++) {
		const struct npu_host_tensor *h = &inputs[k];

		i = k;
		if (h->name) {
			st = find_input(m, h->name, &i);
			if (st)
				return st;
		}
		if (ptrs[i])
			return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: input '%s' is given twice",
					    m->source, m->inputs[i].name);
		st = check_shape(m, i, h->rank, h->dims, &ts[i].shape);
		if (st)
			return st;
		ts[i].dtype = (enum npu_dtype)h->dtype;
		ts[i].data = h->data;
		ts[i].nbytes = h->nbytes;
		ptrs[i] = &ts[i];
		if (shapes_only)
			continue;
		if ((enum npu_dtype)h->dtype != (enum npu_dtype)m->inputs[i].info.dtype)
			return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: input '%s' must be %s, got %s",
					    m->source, m->inputs[i].name,
					    npu_dtype_name((enum npu_dtype)m->inputs[i].info.dtype),
					    npu_dtype_name((enum npu_dtype)h->dtype));
		if (h->dtype == NPU_TYPE_STRING) {
			struct npu_error err = { 0 };
			char what[300];

			snprintf(what, sizeof(what), "%s: input '%s'", m->source, m->inputs[i].name);
			if (npu_str_check(&ts[i], what, &err) != NPU_OK)
				return npu_api_fail_err(&err);
			continue;
		}
		if (h->nbytes != (size_t)npu_shape_numel(&ts[i].shape) *
				 npu_dtype_size((enum npu_dtype)h->dtype) ||
		    (h->nbytes && !h->data)) {
			char buf[160];

			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: input '%s': %zu bytes of data for %s %s",
					    m->source, m->inputs[i].name, h->nbytes,
					    npu_dtype_name((enum npu_dtype)h->dtype),
					    npu_shape_str(&ts[i].shape, buf, sizeof(buf)));
		}
	}
	return NPU_OK;
}

NPU_API npu_status npu_model_get_plan(struct npu_model *m, const struct npu_host_tensor *shapes,
				      size_t count, struct npu_plan **out)
{
	struct npu_tensor *ts;
	const struct npu_tensor **ptrs;
	struct npu_shape *s;
	size_t i;
	npu_status st;

	if (!m || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_get_plan: NULL argument");
	*out = NULL;
	if (atomic_load(&m->destroyed))
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_get_plan: the model was destroyed");
	ts = calloc(m->num_inputs + 1, sizeof(*ts));
	ptrs = calloc(m->num_inputs + 1, sizeof(*ptrs));
	s = calloc(m->num_inputs + 1, sizeof(*s));
	if (!ts || !ptrs || !s) {
		st = npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	st = npu_model_bind_inputs(m, shapes, count, true, ts, ptrs);
	if (st)
		goto out;
	for (i = 0; i < m->num_inputs; i++)
		s[i] = ptrs[i]->shape;
	npu_model_ref(m);
	st = npu_model_plan_for(m, s, out);
	if (st)
		npu_model_unref(m);
out:
	free(ts);
	free(ptrs);
	free(s);
	return st;
}

NPU_API npu_status npu_plan_input_info(const struct npu_plan *p, size_t index,
				       struct npu_tensor_info *info)
{
	if (!p || !info || index >= p->model->num_inputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_input_info: no input %zu", index);
	fill_info(info, &p->model->inputs[index]);
	info->rank = p->shapes[index].rank;
	memcpy(info->dims, p->shapes[index].dims, sizeof(info->dims));
	return NPU_OK;
}

NPU_API npu_status npu_plan_output_info(const struct npu_plan *p, size_t index,
					struct npu_tensor_info *info)
{
	if (!p || !info || index >= p->model->num_outputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_output_info: no output %zu", index);
	fill_info(info, &p->outputs[index]);
	return NPU_OK;
}

NPU_API size_t npu_plan_num_warnings(const struct npu_plan *p)
{
	return p && p->compiled ? p->compiled->num_warnings : 0;
}

NPU_API const char *npu_plan_warning(const struct npu_plan *p, size_t index)
{
	return p && p->compiled && index < p->compiled->num_warnings ? p->compiled->warnings[index]
								       : NULL;
}

NPU_API void npu_save_options_init_sized(struct npu_save_options *o, size_t size)
{
	struct npu_save_options d = { .struct_size = size, .keep_source = 1 };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

NPU_API npu_status npu_plan_save_compiled(const struct npu_plan *p, const char *path)
{
	return npu_plan_save_compiled_with(p, path, NULL);
}

NPU_API npu_status npu_plan_save_compiled_with(const struct npu_plan *p, const char *path,
					       const struct npu_save_options *opts)
{
	struct npu_error err = { 0 };
	struct npu_npub_source src = { 0 };
	struct npu_save_options o;
	npu_status st;

	if (!p || !path)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_save_compiled: NULL argument");
	npu_save_options_init(&o);
	if (opts) {
		st = npu_api_copy_options(&o, sizeof(o), opts, "npu_save_options");
		if (st)
			return st;
	}
	if (o.keep_source != 0 && o.keep_source != 1)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_plan_save_compiled: npu_save_options.keep_source is %d, must be 0 or 1",
				    o.keep_source);
	if (!p->compiled)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: only a model loaded for an NPU device (sim, accel) can be saved compiled",
				    p->model->source);
	if (o.keep_source) {
		src.onnx = p->model->bytes;
		src.onnx_size = p->model->size;
	}
	src.meta = p->model->meta;

	if (npu_npub_save(path, &src, p->g, p->compiled, &err))
		return npu_api_fail_err(&err);
	return NPU_OK;
}

/* ---- Models ---- */

void npu_model_ref(struct npu_model *m)
{
	atomic_fetch_add(&m->refs, 1);
}

void npu_model_unref(struct npu_model *m)
{
	size_t i;

	if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	for (i = 0; i < m->num_plans; i++)
		npu_plan_unref(m->plans[i]);
	free(m->plans);
	npu_model_compile_free(m);
	npu_graph_destroy(m->base);
	npu_onnx_meta_free(m->meta);
	free_io(m->inputs, m->num_inputs);
	free_io(m->outputs, m->num_outputs);
	free(m->npub_shapes);
	if (m->npub_mapped)
		munmap(m->npub, m->npub_size);
	else
		free(m->npub);
	npu_npub_close(m->npub_open);
	npu_graph_destroy(m->finished);
	if (!m->bytes_in_npub)
		free(m->bytes);
	free(m->source);
	free(m->device_name);
	npu_npy_free_names(m->calib_names, m->num_calib_names);
	free(m->calib_dir);
	free(m->calib_method);
	free(m->keep_fp32);
	free(m->keep);
	free(m->int16);
	free(m->int16_names);
	free(m->precision);
	free(m->codegen);
	free(m->cpu);
	free(m->providers);
	free(m->eps);
	pthread_mutex_destroy(&m->build_lock);
	pthread_mutex_destroy(&m->cache_lock);
	pthread_mutex_destroy(&m->load_lock);
	npu_engine_unref(m->engine);
	free(m);
}

NPU_API void npu_model_destroy(struct npu_model *m)
{
	if (!m)
		return;
	atomic_store(&m->destroyed, true);
	npu_model_unref(m);
}

static char *dup_opt(const char *s, bool *nomem)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*nomem = true;
	return d;
}

static npu_status check_options(struct npu_model *m)
{
	const char *dev = m->device_name;
	struct stat sb;

	npu_status st = npu_model_compile_options(m);

	if (st)
		return st;
	if (m->opts.calib_percentile < 0 || m->opts.calib_percentile > 100)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_model_options.calib_percentile %g: expected (0, 100]",
				    m->opts.calib_percentile);
	if (m->opts.parallel < NPU_PARALLEL_AUTO || m->opts.parallel > NPU_PARALLEL_PIPELINE)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_model_options.parallel %d: expected NPU_PARALLEL_AUTO, _DATA or _PIPELINE",
				    (int)m->opts.parallel);
	if (m->opts.calib_samples < 0)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_options.calib_samples %d is negative",
				    m->opts.calib_samples);
	if (!(m->opts.accuracy_target >= 0.0 && m->opts.accuracy_target <= 1.0))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_model_options.accuracy_target %g: expected a cosine in (0, 1], or 0 for none",
				    m->opts.accuracy_target);
	if (m->precision && strcmp(m->precision, "int8") && strcmp(m->precision, "int16"))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_model_options.precision '%s': expected int8 or int16",
				    m->precision);
	if (m->cpu) {
		struct npu_error err = { 0 };

		if (npu_cpu_options_parse(&m->cpu_opts, m->cpu, &err) != NPU_OK)
			return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_options.cpu: %s",
					    err.msg);
	}
	if (strcmp(dev, "cpu") && m->calib_dir &&
	    (stat(m->calib_dir, &sb) || !S_ISDIR(sb.st_mode)))
		return npu_api_fail(NPU_ERR_NOT_FOUND,
				    "npu_model_options.calib_dir '%s': not a directory", m->calib_dir);
	return NPU_OK;
}

/* "a,b,c" -> keep entries pointing into m->keep_fp32 (cut at the commas). */
static npu_status split_keep_fp32(struct npu_model *m)
{
	size_t n = 1;
	char *p, *name;

	if (!m->keep_fp32)
		return NPU_OK;
	for (p = m->keep_fp32; *p; p++)
		n += *p == ',';
	m->keep = calloc(n, sizeof(*m->keep));
	if (!m->keep)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	for (name = m->keep_fp32; name; name = p) {
		p = strchr(name, ',');
		if (p)
			*p++ = 0;
		if (!*name)
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "npu_model_options.keep_fp32: an empty node name (expected NODE[,NODE...])");
		m->keep[m->num_keep++].node = name;
	}
	return NPU_OK;
}

/* "a,b" -> int16 node names pointing into m->int16 (cut at the commas). */
static npu_status split_int16(struct npu_model *m)
{
	size_t n = 1;
	char *p, *name;

	if (!m->int16)
		return NPU_OK;
	for (p = m->int16; *p; p++)
		n += *p == ',';
	m->int16_names = calloc(n, sizeof(*m->int16_names));
	if (!m->int16_names)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	for (name = m->int16; name; name = p) {
		p = strchr(name, ',');
		if (p)
			*p++ = 0;
		if (!*name)
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "npu_model_options.int16: an empty node name (expected NODE[,NODE...])");
		m->int16_names[m->num_int16++] = name;
	}
	return NPU_OK;
}

static npu_status take_npub(struct npu_model *m, const void *data, size_t size)
{
	struct npu_error err = { 0 };
	struct npu_npub *f = NULL;
	const void *model;
	npu_status st;
	size_t i;

	/* One copy of the file (none when it is mapped: npu_model_load_file),
	 * which the parse and the source model view. */
	if (!m->npub_mapped) {
		m->npub = malloc(size ? size : 1);
		if (!m->npub)
			return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
		memcpy(m->npub, data, size);
	}
	m->npub_size = size;
	st = npu_npub_open_view(m->npub, size, true, m->source, &f, &err);
	if (st)
		return npu_api_fail_err(&err);
	if (npu_npub_finished(f)) {
		m->finished = npu_npub_take_graph(f);
		m->meta = npu_npub_take_metadata(f);
	}
	model = npu_npub_model(f, &m->size);
	m->bytes = (void *)model;	/* inside m->npub */
	m->bytes_in_npub = true;
	/* Recompiled for other shapes with the file's CPU options, unless given. */
	if (!m->cpu)
		m->cpu_opts = *npu_npub_cpu_options(f);
	m->npub_shapes = calloc(npu_npub_num_inputs(f) + 1, sizeof(*m->npub_shapes));
	if (!m->npub_shapes)
		st = npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; !st && i < npu_npub_num_inputs(f); i++)
		npu_npub_input(f, i, &m->npub_shapes[i]);
	if (!st && m->finished)
		m->npub_open = f;	/* the first plan binds it without parsing again */
	else
		npu_npub_close(f);
	return st;
}

/* The .npub's shapes, in the order of the embedded model's inputs. */
static npu_status order_npub_shapes(struct npu_model *m, const void *data, size_t size)
{
	struct npu_error err = { 0 };
	struct npu_npub *f = NULL;
	struct npu_shape *by_input = calloc(m->num_inputs + 1, sizeof(*by_input));
	npu_status st = by_input ? NPU_OK : npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	size_t i, k;

	if (!st && npu_npub_open_view(data, size, true, m->source, &f, &err))
		st = npu_api_fail_err(&err);
	if (!st && npu_npub_num_inputs(f) != m->num_inputs)
		st = npu_api_fail(NPU_ERR_MODEL,
				  "%s: compiled for %zu inputs, the embedded model has %zu",
				  m->source, npu_npub_num_inputs(f), m->num_inputs);
	for (i = 0; !st && i < npu_npub_num_inputs(f); i++) {
		struct npu_shape shape;
		const char *name = npu_npub_input(f, i, &shape);

		for (k = 0; k < m->num_inputs; k++)
			if (!strcmp(m->inputs[k].name, name))
				break;
		if (k == m->num_inputs)
			st = npu_api_fail(NPU_ERR_MODEL,
					  "%s: compiled for input '%s', which the embedded model lacks",
					  m->source, name);
		else
			by_input[k] = shape;
	}
	npu_npub_close(f);
	if (st) {
		free(by_input);
		return st;
	}
	free(m->npub_shapes);
	m->npub_shapes = by_input;
	for (k = 0; k < m->num_inputs; k++) {	/* shown as the model's inputs */
		m->inputs[k].info.rank = by_input[k].rank;
		memcpy(m->inputs[k].info.dims, by_input[k].dims, sizeof(by_input[k].dims));
	}
	return NPU_OK;
}

/*
 * Output types the file leaves to its nodes: inferred on a copy with the
 * declared (possibly symbolic) input shapes. Best effort: a model whose
 * outputs cannot be typed before shapes are fixed keeps them undefined.
 */
static void declared_output_types(struct npu_model *m)
{
	struct npu_error err = { 0 };
	struct npu_graph *g;
	size_t i;

	for (i = 0; i < m->num_outputs; i++)
		if (m->outputs[i].info.dtype == NPU_TYPE_UNDEFINED)
			break;
	if (i == m->num_outputs)
		return;
	g = npu_graph_clone(m->base, &err);
	if (g && npu_graph_infer(g, false, &err) == NPU_OK) {
		for (i = 0; i < m->num_outputs; i++) {
			struct npu_io_info *io = &m->outputs[i];
			const struct npu_value *v = g->outputs[i];

			if (io->info.dtype != NPU_TYPE_UNDEFINED)
				continue;
			io->info.dtype = (enum npu_data_type)v->dtype;
			io->info.rank = v->shape.rank;
			memcpy(io->info.dims, v->shape.dims, sizeof(io->info.dims));
		}
	}
	npu_graph_destroy(g);
}

/*
 * A version 3 compiled file: its inputs and outputs are its graph's, at
 * the shapes it was compiled for (in the graph's input order), and nothing
 * is imported.
 */
static npu_status load_finished(struct npu_model *m)
{
	struct npu_graph *g = m->finished;
	struct npu_error err = { 0 };
	npu_status st;
	size_t i;

	npu_graph_set_ops(g, m->engine->ops);	/* the engine's custom ops */
	if (npu_providers_check_graph(g, &err) || npu_custom_ops_check_graph(g, &err))
		return npu_api_fail_err(&err);
	m->num_inputs = g->num_inputs;
	m->num_outputs = g->num_outputs;
	st = copy_io(&m->inputs, g->inputs, m->num_inputs);
	if (!st)
		st = copy_io(&m->outputs, g->outputs, m->num_outputs);
	if (st)
		return npu_api_fail(st, "out of memory");
	free(m->npub_shapes);
	m->npub_shapes = calloc(m->num_inputs + 1, sizeof(*m->npub_shapes));
	if (!m->npub_shapes)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < m->num_inputs; i++) {
		m->npub_shapes[i] = g->inputs[i]->shape;
		if (npu_shape_numel(&g->inputs[i]->shape) < 0)
			return npu_api_fail(NPU_ERR_MODEL, "%s: input '%s' has no fixed shape in the compiled graph",
					    m->source, g->inputs[i]->name);
	}
	return NPU_OK;
}

static npu_status load(struct npu_model *m, const void *data, size_t size)
{
	struct npu_error err = { 0 };
	npu_status st = NPU_OK;

	if (npu_npub_detect(data, size)) {
		st = take_npub(m, data, size);
	} else {
		m->bytes = malloc(size ? size : 1);
		if (!m->bytes)
			return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
		if (size)
			memcpy(m->bytes, data, size);
		m->size = size;
	}
	if (st)
		return st;
	if (m->finished)
		return load_finished(m);
	if (npu_model_import(m, true, &err))
		return npu_api_fail_err(&err);
	npu_graph_set_ops(m->base, m->engine->ops);	/* the engine's custom ops */
	if (npu_custom_ops_check_graph(m->base, &err))
		return npu_api_fail_err(&err);
	m->num_inputs = m->base->num_inputs;
	m->num_outputs = m->base->num_outputs;
	st = copy_io(&m->inputs, m->base->inputs, m->num_inputs);
	if (!st)
		st = copy_io(&m->outputs, m->base->outputs, m->num_outputs);
	if (!st)
		declared_output_types(m);
	if (!st && m->npub)
		st = order_npub_shapes(m, data, size);
	return st;
}

/*
 * npu_model_load_memory(); 'mapped': data is a private read-only mapping
 * of a compiled file (of exactly size bytes) that the model adopts, even
 * when loading fails, and unmaps when freed.
 */
static npu_status load_model(struct npu_engine *e, const void *data, size_t size, bool mapped,
			     const char *name, const struct npu_model_options *opts,
			     struct npu_model **out)
{
	struct npu_model *m;
	bool nomem = false;
	npu_status st;

	if (!out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_load: out is NULL");
	*out = NULL;
	if (!e || (!data && size))
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_load: %s is NULL",
				    !e ? "engine" : "data");
	m = calloc(1, sizeof(*m));
	if (!m) {
		if (mapped)
			munmap((void *)data, size);
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	}
	if (mapped) {
		m->npub = (void *)data;
		m->npub_size = size;
		m->npub_mapped = true;
	}
	atomic_init(&m->refs, 1);
	npu_engine_ref(e);
	m->engine = e;
	pthread_mutex_init(&m->build_lock, NULL);
	pthread_mutex_init(&m->cache_lock, NULL);
	pthread_mutex_init(&m->load_lock, NULL);
	npu_model_options_init(&m->opts);
	st = opts ? npu_api_copy_options(&m->opts, sizeof(m->opts), opts, "npu_model_options")
		  : NPU_OK;
	if (!st) {
		m->source = dup_opt(name ? name : "<memory>", &nomem);
		m->device_name = dup_opt(m->opts.device ? m->opts.device : "cpu", &nomem);
		m->calib_dir = dup_opt(m->opts.calib_dir, &nomem);
		m->calib_method = dup_opt(m->opts.calib_method, &nomem);
		m->keep_fp32 = dup_opt(m->opts.keep_fp32, &nomem);
		m->opts.keep_fp32 = m->keep_fp32;
		m->int16 = dup_opt(m->opts.int16, &nomem);
		m->opts.int16 = m->int16;
		m->precision = dup_opt(m->opts.precision, &nomem);
		m->opts.precision = m->precision;
		m->codegen = dup_opt(m->opts.codegen, &nomem);
		m->opts.codegen = m->codegen;
		m->cpu = dup_opt(m->opts.cpu, &nomem);
		m->opts.cpu = m->cpu;
		m->providers = dup_opt(m->opts.providers, &nomem);
		m->opts.providers = m->providers;
		m->opts.device = m->device_name;
		m->opts.calib_dir = m->calib_dir;
		m->opts.calib_method = m->calib_method;
		m->max_plans = m->opts.max_plans ? m->opts.max_plans : NPU_DEFAULT_MAX_PLANS;
		m->max_plan_bytes = m->opts.max_plan_bytes ? m->opts.max_plan_bytes
							   : NPU_DEFAULT_MAX_PLAN_BYTES;
		m->plans = calloc(m->max_plans + 2, sizeof(*m->plans));
		if (nomem || !m->plans)
			st = npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	}
	if (!st)
		st = npu_model_providers(m);	/* may set the device */
	if (!st)
		st = check_options(m);
	if (!st)
		st = split_keep_fp32(m);
	if (!st)
		st = split_int16(m);
	if (!st && strcmp(m->device_name, "cpu")) {
		st = npu_engine_open_devices(e, m->device_name, m->devs, m->dev_names,
					     NPU_DEVICE_SET_MAX, &m->num_devs);
		if (!st)
			m->dev = m->devs[0];
	}
	if (!st)
		st = load(m, data, size);
	/* int8 ranges from noise are poor: an NPU model needs real samples,
	 * or to ask for noise by name. A .npub carries its ranges. */
	if (!st && strcmp(m->device_name, "cpu") && !m->npub && !m->calib_dir &&
	    !m->opts.calib_random)
		st = npu_api_fail(NPU_ERR_INVALID_ARG,
				  "%s: device '%s' compiles to int8 and needs calibration samples: set npu_model_options.calib_dir (npu: --calib-dir DIR), or calib_random = 1 for random inputs (smoke tests only)",
				  m->source, m->device_name);
	if (st) {
		char msg[NPU_ERROR_MSG_MAX];

		/* Keep the message naming the failure: freeing may not touch it. */
		snprintf(msg, sizeof(msg), "%s", npu_last_error());
		npu_model_unref(m);
		npu_api_fail(st, "%s", msg);
		return st;
	}
	npu_engine_log(e, NPU_LOG_INFO, "loaded %s (%zu inputs, %zu outputs) for %s", m->source,
		       m->num_inputs, m->num_outputs, m->device_name);
	*out = m;
	return NPU_OK;
}

NPU_API npu_status npu_model_load_memory(struct npu_engine *e, const void *data, size_t size,
					 const char *name, const struct npu_model_options *opts,
					 struct npu_model **out)
{
	return load_model(e, data, size, false, name, opts, out);
}

/* 'path' mapped read-only (a regular file of at least 32 bytes), else NULL. */
static void *map_file(const char *path, size_t *size)
{
	struct stat sb;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size < 32) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	*size = (size_t)sb.st_size;
	return p;
}

NPU_API npu_status npu_model_load_file(struct npu_engine *e, const char *path,
				       const struct npu_model_options *opts,
				       struct npu_model **out)
{
	struct npu_error err = { 0 };
	void *data;
	size_t size;
	npu_status st;

	if (out)
		*out = NULL;
	if (!path)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_load_file: path is NULL");
	/*
	 * Mapped, read once: a compiled file is used where it lies (the model
	 * keeps the mapping); an ONNX file is loaded from the mapping, which
	 * copies it. npu_read_file names what is wrong with a file that
	 * does not map.
	 */
	data = map_file(path, &size);
	if (data && npu_npub_detect(data, size))
		return load_model(e, data, size, true, path, opts, out);
	if (data && size <= (1ull << 31)) {	/* larger: npu_read_file's error */
		st = npu_model_load_memory(e, data, size, path, opts, out);
		munmap(data, size);
		return st;
	}
	if (data)
		munmap(data, size);
	if (npu_read_file(path, &data, &size, &err))
		return npu_api_fail_err(&err);
	st = npu_model_load_memory(e, data, size, path, opts, out);
	free(data);
	return st;
}

NPU_API const char *npu_model_name(const struct npu_model *m)
{
	return m ? m->source : "";
}

NPU_API const char *npu_model_device(const struct npu_model *m)
{
	return m ? m->device_name : "";
}

NPU_API size_t npu_model_num_devices(const struct npu_model *m)
{
	return m ? m->num_devs : 0;
}

NPU_API void npu_model_device_stats_init_sized(struct npu_model_device_stats *o, size_t size)
{
	struct npu_model_device_stats d = { .struct_size = size };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

NPU_API npu_status npu_model_device_stats(const struct npu_model *m, size_t index,
					  struct npu_model_device_stats *out)
{
	struct npu_model_device_stats st = { .struct_size = sizeof(st) };
	struct npu_device_info info;

	if (!m || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_device_stats: NULL argument");
	if (index >= m->num_devs)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_model_device_stats: %s has %zu device%s, no device %zu",
				    m->source, m->num_devs, m->num_devs == 1 ? "" : "s", index);
	st.name = m->dev_names[index];
	st.runs = atomic_load(&m->load[index].runs);
	st.inflight = atomic_load(&m->load[index].inflight);
	st.modeled_cycles = atomic_load(&m->load[index].modeled_cycles);
	st.failovers = atomic_load(&m->load[index].failovers);
	st.out_of_rotation = atomic_load(&m->load[index].out_of_rotation);
	npu_device_memory(m->devs[index], &st.memory_bytes, &st.memory_peak_bytes);
	if (npu_device_get_info(m->devs[index], &info) == NPU_OK)
		st.clock_mhz = info.clock_mhz;
	return npu_api_copy_stats(out, &st, sizeof(st), "npu_model_device_stats");
}

/* Every device of a pipeline holds its stage's constants (replica_lock held). */
static npu_status pipeline_ready(struct npu_plan *p, size_t *failed, struct npu_error *err)
{
	const struct npu_compiled *c = p->compiled;
	bool *want = calloc(c->num_segments + 1, sizeof(*want));
	npu_status st = NPU_OK;
	size_t k, i;

	if (!want)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	for (k = 1; k < p->parallel.stages && !st; k++) {
		for (i = 0; i < c->num_segments; i++)
			want[i] = p->seg_device[i] == k;
		*failed = k;
		st = npu_compiled_replicate(p->compiled, k, p->model->devs[k], want, err);
	}
	free(want);
	p->pipeline_ready = !st;
	return st;
}

npu_status npu_plan_on_device(struct npu_plan *p, size_t index)
{
	struct npu_error err = { 0 };
	npu_status st = NPU_OK;
	size_t failed = index;

	if (!p->compiled || (!index && !p->seg_device))
		return NPU_OK;
	pthread_mutex_lock(&p->replica_lock);
	if (index == NPU_PLAN_PIPELINE)
		st = p->pipeline_ready ? NPU_OK : pipeline_ready(p, &failed, &err);
	else if (!index)	/* a pipeline's run on device 0 alone */
		st = npu_compiled_home_consts(p->compiled, NULL, &err);
	else
		st = npu_compiled_replicate(p->compiled, index, p->model->devs[index], NULL, &err);
	pthread_mutex_unlock(&p->replica_lock);
	if (st) {
		npu_error_prefix(&err, "%s on device '%s'", p->model->source,
				 p->model->dev_names[failed]);
		return npu_api_fail_err(&err);
	}
	return NPU_OK;
}

NPU_API size_t npu_model_num_inputs(const struct npu_model *m)
{
	return m ? m->num_inputs : 0;
}

NPU_API size_t npu_model_num_outputs(const struct npu_model *m)
{
	return m ? m->num_outputs : 0;
}

NPU_API npu_status npu_model_input_info(const struct npu_model *m, size_t index,
					struct npu_tensor_info *info)
{
	if (!m || !info || index >= m->num_inputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_input_info: no input %zu", index);
	fill_info(info, &m->inputs[index]);
	return NPU_OK;
}

NPU_API npu_status npu_model_output_info(const struct npu_model *m, size_t index,
					 struct npu_tensor_info *info)
{
	if (!m || !info || index >= m->num_outputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_output_info: no output %zu",
				    index);
	fill_info(info, &m->outputs[index]);
	return NPU_OK;
}

NPU_API npu_status npu_model_get_stats(const struct npu_model *cm, struct npu_model_stats *out)
{
	struct npu_model *m = (struct npu_model *)cm;	/* the locks only */
	struct npu_model_stats st = { .struct_size = sizeof(st) };

	if (!m || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_model_get_stats: NULL argument");
	st.plans_built = atomic_load(&m->plans_built);
	st.plan_hits = atomic_load(&m->plan_hits);
	st.plan_misses = atomic_load(&m->plan_misses);
	st.plans_evicted = atomic_load(&m->plans_evicted);
	st.calibrations = atomic_load(&m->calibrations);
	st.imports = atomic_load(&m->imports);
	st.compilations = atomic_load(&m->compilations);
	st.codegens = atomic_load(&m->codegens);
	pthread_mutex_lock(&m->cache_lock);
	st.plans_cached = m->num_plans;
	st.plan_bytes = m->plan_bytes;
	pthread_mutex_unlock(&m->cache_lock);
	return npu_api_copy_stats(out, &st, sizeof(st), "npu_model_stats");
}
