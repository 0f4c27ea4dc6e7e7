// SPDX-License-Identifier: MIT
/*
 * npu_model.c - the public model API (npu/npu_model.h) over the importer,
 * shape inference and the CPU session. The model keeps its serialized
 * bytes: a new set of input shapes re-imports and re-plans it, so shape
 * folding (Shape -> Gather -> Concat -> Reshape) sees the concrete dims.
 */
#include "npu/npu_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/npu_ir.h"
#include "onnx/npu_onnx.h"
#include "runtime/npu_runtime.h"

#include "runtime/npu_model_internal.h"

size_t npu_data_type_size(enum npu_data_type type)
{
	return npu_dtype_size((enum npu_dtype)type);
}

const char *npu_data_type_name(enum npu_data_type type)
{
	return npu_dtype_name((enum npu_dtype)type);
}

void npu_model_options_init(struct npu_model_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->device = "cpu";
}

npu_status npu_model_create(const struct npu_model_options *opts,
			    struct npu_model **out)
{
	struct npu_model *m;

	if (!out)
		return NPU_ERR_INVALID_ARG;
	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NPU_ERR_NO_MEMORY;
	if (opts)
		m->opts = *opts;
	else
		npu_model_options_init(&m->opts);
	snprintf(m->device, sizeof(m->device), "%s",
		 m->opts.device ? m->opts.device : "cpu");
	m->opts.device = m->device;
	*out = m;
	if (strcmp(m->device, "cpu") && strcmp(m->device, "sim") &&
	    strcmp(m->device, "accel"))
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "unknown device '%s' (cpu, sim or accel)",
				     m->device);
	return NPU_OK;
}

static void free_io(struct io_info *io, size_t n)
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

static void unload(struct npu_model *m)
{
	npu_session_destroy(m->s);
	npu_graph_destroy(m->g);
	m->s = NULL;
	m->g = NULL;
	npu_model_npu_release(m);
	free(m->npub);
	m->npub = NULL;
	m->npub_size = 0;
	free_io(m->inputs, m->num_inputs);
	free_io(m->outputs, m->num_outputs);
	m->inputs = m->outputs = NULL;
	m->num_inputs = m->num_outputs = 0;
	free(m->bound);
	m->bound = NULL;
	free(m->bytes);
	free(m->source);
	m->bytes = NULL;
	m->source = NULL;
}

void npu_model_destroy(struct npu_model *m)
{
	if (!m)
		return;
	unload(m);
	npu_model_npu_close(m);
	free(m);
}

const char *npu_model_last_error(const struct npu_model *m)
{
	return m ? npu_error_msg(&m->err) : "no model";
}

static npu_status copy_io(struct npu_model *m, struct io_info **out,
			  struct npu_value *const *vals, size_t n)
{
	struct io_info *io = calloc(n ? n : 1, sizeof(*io));
	size_t i;
	int d;

	*out = io;
	if (!io)
		return npu_error_set(&m->err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < n; i++) {
		io[i].name = strdup(vals[i]->name);
		if (!io[i].name)
			return npu_error_set(&m->err, NPU_ERR_NO_MEMORY,
					     "out of memory");
		for (d = 0; d < NPU_MAX_RANK; d++)
			if (vals[i]->dim_params[d]) {
				io[i].dim_names[d] = strdup(vals[i]->dim_params[d]);
				if (!io[i].dim_names[d])
					return npu_error_set(&m->err,
						NPU_ERR_NO_MEMORY, "out of memory");
			}
	}
	return NPU_OK;
}

/* Import, bind the input shapes, infer + fold, prepare a session. */
npu_status npu_model_plan(struct npu_model *m)
{
	struct npu_session_options so = { 0 };
	struct npu_graph *g;
	size_t i;
	npu_status st;

	npu_session_destroy(m->s);
	npu_graph_destroy(m->g);
	m->s = NULL;
	m->g = NULL;
	npu_model_npu_release(m);
	st = npu_onnx_import(m->bytes, m->size, m->source, &g, &m->err);
	if (st != NPU_OK)
		return st;
	if (m->bound)
		for (i = 0; i < g->num_inputs; i++)
			g->inputs[i]->shape = m->bound[i];
	st = npu_graph_infer(g, true, &m->err);
	if (st == NPU_OK && npu_model_on_npu(m))
		st = npu_model_npu_prepare(m, g);
	if (st != NPU_OK) {
		npu_graph_destroy(g);
		npu_model_npu_release(m);
		return st;
	}
	so.threads = m->opts.threads;
	so.profile = m->opts.profile != 0;
	st = npu_session_create(g, &so, &m->s, &m->err);
	if (st != NPU_OK) {
		npu_graph_destroy(g);
		return st;
	}
	m->g = g;
	return NPU_OK;
}

static npu_status load(struct npu_model *m)
{
	struct npu_graph *g;
	size_t i;
	npu_status st;

	/* First import: the declared interface. */
	st = npu_onnx_import(m->bytes, m->size, m->source, &g, &m->err);
	if (st != NPU_OK)
		return st;
	m->num_inputs = g->num_inputs;
	m->num_outputs = g->num_outputs;
	st = copy_io(m, &m->inputs, g->inputs, g->num_inputs);
	if (st == NPU_OK)
		st = copy_io(m, &m->outputs, g->outputs, g->num_outputs);
	m->bound = calloc(g->num_inputs ? g->num_inputs : 1, sizeof(*m->bound));
	if (st == NPU_OK && !m->bound)
		st = npu_error_set(&m->err, NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; st == NPU_OK && i < g->num_inputs; i++) {
		m->inputs[i].info.dtype = (enum npu_data_type)g->inputs[i]->dtype;
		m->bound[i] = g->inputs[i]->shape;
		m->inputs[i].info.rank = g->inputs[i]->shape.rank;
		memcpy(m->inputs[i].info.dims, g->inputs[i]->shape.dims,
		       sizeof(m->inputs[i].info.dims));
	}
	npu_graph_destroy(g);
	if (st == NPU_OK && m->npub)
		st = npu_model_npu_bind_npub_shapes(m);
	if (st != NPU_OK)
		return st;
	return npu_model_plan(m);
}

npu_status npu_model_load_memory(struct npu_model *m, const void *data,
				 size_t size, const char *name)
{
	npu_status st;

	if (!m)
		return NPU_ERR_INVALID_ARG;
	if (m->err.status == NPU_ERR_UNSUPPORTED && strcmp(m->device, "cpu"))
		return m->err.status;	/* device refused at create */
	npu_error_clear(&m->err);
	unload(m);
	m->source = strdup(name ? name : "<memory>");
	if (!m->source)
		return npu_error_set(&m->err, NPU_ERR_NO_MEMORY, "out of memory");
	/* A compiled model (.npub) carries its source model inside. */
	st = npu_model_npu_take_npub(m, data, size);
	if (st == NPU_OK && !m->bytes) {
		m->bytes = malloc(size ? size : 1);
		if (!m->bytes)
			st = npu_error_set(&m->err, NPU_ERR_NO_MEMORY, "out of memory");
		else if (size)
			memcpy(m->bytes, data, size);
		m->size = size;
	}
	if (st == NPU_OK)
		st = load(m);
	if (st != NPU_OK) {
		char msg[NPU_ERROR_MSG_MAX];

		memcpy(msg, m->err.msg, sizeof(msg));
		unload(m);
		memcpy(m->err.msg, msg, sizeof(msg));
		m->err.status = st;
	}
	return st;
}

npu_status npu_model_load_file(struct npu_model *m, const char *path)
{
	void *data;
	size_t size;
	npu_status st;

	if (!m || !path)
		return NPU_ERR_INVALID_ARG;
	st = npu_read_file(path, &data, &size, &m->err);
	if (st != NPU_OK)
		return st;
	st = npu_model_load_memory(m, data, size, path);
	free(data);
	return st;
}

size_t npu_model_num_inputs(const struct npu_model *m)
{
	return m ? m->num_inputs : 0;
}

size_t npu_model_num_outputs(const struct npu_model *m)
{
	return m ? m->num_outputs : 0;
}

static void fill_info(struct npu_tensor_info *info, const struct io_info *io)
{
	int d;

	*info = io->info;
	info->name = io->name;
	for (d = 0; d < NPU_MODEL_MAX_RANK; d++)
		info->dim_names[d] = io->dim_names[d];
}

npu_status npu_model_input_info(const struct npu_model *m, size_t index,
				struct npu_tensor_info *info)
{
	int d;

	if (!m || !info || index >= m->num_inputs)
		return NPU_ERR_INVALID_ARG;
	fill_info(info, &m->inputs[index]);
	/* Dims fixed since loading (set_input_shape, a .npub) are reported. */
	if (m->bound && m->bound[index].rank == info->rank)
		for (d = 0; d < info->rank; d++)
			if (info->dims[d] < 0 && m->bound[index].dims[d] >= 0)
				info->dims[d] = m->bound[index].dims[d];
	return NPU_OK;
}

npu_status npu_model_output_info(const struct npu_model *m, size_t index,
				 struct npu_tensor_info *info)
{
	const struct npu_value *v;

	if (!m || !info || index >= m->num_outputs || !m->g)
		return NPU_ERR_INVALID_ARG;
	fill_info(info, &m->outputs[index]);
	v = m->g->outputs[index];
	info->dtype = (enum npu_data_type)v->dtype;
	info->rank = v->shape.rank;
	memcpy(info->dims, v->shape.dims, sizeof(info->dims));
	return NPU_OK;
}

static npu_status bind_shape(struct npu_model *m, size_t i, int rank,
			     const int64_t *dims, bool *changed)
{
	const struct npu_tensor_info *decl = &m->inputs[i].info;
	struct npu_shape s = { 0 };
	int d;

	if (rank < 0 || rank > NPU_MAX_RANK)
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "input '%s': rank %d is out of range",
				     m->inputs[i].name, rank);
	if (decl->rank >= 0 && rank != decl->rank)
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "input '%s': rank %d, the model declares rank %d",
				     m->inputs[i].name, rank, decl->rank);
	s.rank = rank;
	for (d = 0; d < rank; d++) {
		if (dims[d] < 0)
			return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
					     "input '%s': dim %d is negative",
					     m->inputs[i].name, d);
		if (decl->rank >= 0 && decl->dims[d] >= 0 &&
		    decl->dims[d] != dims[d])
			return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				"input '%s': dim %d is %lld, the model fixes it to %lld",
				m->inputs[i].name, d, (long long)dims[d],
				(long long)decl->dims[d]);
		s.dims[d] = dims[d];
	}
	if (memcmp(&s, &m->bound[i], sizeof(s))) {
		m->bound[i] = s;
		*changed = true;
	}
	return NPU_OK;
}

static npu_status find_input(struct npu_model *m, const char *name,
			     size_t *index)
{
	size_t i;

	for (i = 0; i < m->num_inputs; i++)
		if (!strcmp(m->inputs[i].name, name)) {
			*index = i;
			return NPU_OK;
		}
	return npu_error_set(&m->err, NPU_ERR_NOT_FOUND,
			     "%s: the model has no input '%s'", m->source,
			     name);
}

npu_status npu_model_set_input_shape(struct npu_model *m, const char *name,
				     int rank, const int64_t *dims)
{
	bool changed = false;
	size_t i;
	npu_status st;

	if (!m || !name || (rank > 0 && !dims))
		return NPU_ERR_INVALID_ARG;
	if (!m->bytes)
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "no model loaded");
	st = find_input(m, name, &i);
	if (st == NPU_OK)
		st = bind_shape(m, i, rank, dims, &changed);
	if (st == NPU_OK && changed)
		st = npu_model_plan(m);
	return st;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

npu_status npu_model_run(struct npu_model *m,
			 const struct npu_host_tensor *inputs, size_t count)
{
	struct npu_tensor *ts = NULL;
	const struct npu_tensor **ptrs = NULL;
	bool changed = false;
	size_t i, k;
	double t0;
	npu_status st = NPU_OK;

	if (!m)
		return NPU_ERR_INVALID_ARG;
	if (!m->bytes)
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "no model loaded");
	if (count != m->num_inputs || (count && !inputs))
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "%s: %zu inputs given, the model has %zu",
				     m->source, count, m->num_inputs);
	ts = calloc(count ? count : 1, sizeof(*ts));
	ptrs = calloc(count ? count : 1, sizeof(*ptrs));
	if (!ts || !ptrs) {
		st = npu_error_set(&m->err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	for (k = 0; k < count; k++) {
		const struct npu_host_tensor *h = &inputs[k];

		i = k;
		if (h->name) {
			st = find_input(m, h->name, &i);
			if (st != NPU_OK)
				goto out;
		}
		if (ptrs[i]) {
			st = npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
					   "input '%s' is given twice",
					   m->inputs[i].name);
			goto out;
		}
		if (h->rank < 0 || h->rank > NPU_MAX_RANK) {
			st = npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
					   "input '%s': rank %d is out of range",
					   m->inputs[i].name, h->rank);
			goto out;
		}
		ts[i].dtype = (enum npu_dtype)h->dtype;
		ts[i].shape.rank = h->rank;
		memcpy(ts[i].shape.dims, h->dims,
		       sizeof(int64_t) * (size_t)h->rank);
		ts[i].data = h->data;
		ts[i].nbytes = h->nbytes;
		ptrs[i] = &ts[i];
		st = bind_shape(m, i, h->rank, h->dims, &changed);
		if (st != NPU_OK)
			goto out;
	}
	if (npu_model_on_npu(m) && !m->compiled && !m->compile_requested) {
		m->compile_requested = true;	/* defer_compile: first run compiles */
		changed = true;
	}
	if (changed || !m->s) {
		st = npu_model_plan(m);
		if (st != NPU_OK)
			goto out;
	}
	t0 = now_s();
	st = npu_session_run(m->s, ptrs, &m->err);
	m->last_run_s = now_s() - t0;
out:
	free(ts);
	free(ptrs);
	return st;
}

npu_status npu_model_output(const struct npu_model *m, size_t index,
			    struct npu_host_tensor *out)
{
	const struct npu_tensor *t;

	if (!m || !out || !m->s || index >= m->num_outputs)
		return NPU_ERR_INVALID_ARG;
	t = npu_session_output(m->s, index);
	if (!t)
		return NPU_ERR_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	out->name = m->outputs[index].name;
	out->dtype = (enum npu_data_type)t->dtype;
	out->rank = t->shape.rank;
	memcpy(out->dims, t->shape.dims, sizeof(out->dims));
	out->data = t->data;
	out->nbytes = t->nbytes;
	return NPU_OK;
}

double npu_model_last_run_seconds(const struct npu_model *m)
{
	return m ? m->last_run_s : 0;
}

size_t npu_model_num_op_stats(const struct npu_model *m)
{
	const struct npu_op_stat *stats;

	if (!m || !m->s)
		return 0;
	return npu_session_op_stats(m->s, &stats);
}

npu_status npu_model_op_stat(const struct npu_model *m, size_t index,
			     const char **op_type, size_t *nodes,
			     uint64_t *calls, double *total_ms)
{
	const struct npu_op_stat *stats;
	size_t n;

	if (!m || !m->s)
		return NPU_ERR_INVALID_ARG;
	n = npu_session_op_stats(m->s, &stats);
	if (index >= n)
		return NPU_ERR_INVALID_ARG;
	if (op_type)
		*op_type = stats[index].op_type;
	if (nodes)
		*nodes = stats[index].nodes;
	if (calls)
		*calls = stats[index].calls;
	if (total_ms)
		*total_ms = stats[index].total_ms;
	return NPU_OK;
}
