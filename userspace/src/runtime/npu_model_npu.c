// SPDX-License-Identifier: MIT
/*
 * npu_model_npu.c - models on NPU devices: open the device, compile the
 * planned graph (or instantiate a .npub), expose placement and NPU stats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/compiler.h"
#include "compiler/npub.h"
#include "compiler/segment_rt.h"
#include "runtime/npu_model_internal.h"
#include "runtime/npu_npy.h"

bool npu_model_on_npu(const struct npu_model *m)
{
	return strcmp(m->device, "cpu") != 0;
}

static npu_status open_device(struct npu_model *m)
{
	struct npu_device_options o;
	char msg[NPU_ERROR_MSG_MAX];
	npu_status st;

	if (m->dev)
		return NPU_OK;
	npu_device_options_init(&o);
	o.backend = !strcmp(m->device, "accel") ? NPU_BACKEND_ACCEL : NPU_BACKEND_SIM;
	st = npu_device_open(&o, &m->dev, msg, sizeof(msg));
	if (st)
		return npu_error_set(&m->err, st, "device '%s': %s", m->device, msg);
	return NPU_OK;
}

static bool shapes_known(const struct npu_graph *g)
{
	size_t i;

	for (i = 0; i < g->num_inputs; i++)
		if (npu_shape_numel(&g->inputs[i]->shape) < 0)
			return false;
	return true;
}

/* One calibration tensor, checked against the input it feeds. */
static npu_status calib_tensor(struct npu_model *m, const char *path,
			       const struct npu_value *in, struct npu_tensor **out)
{
	char want[128], got[128];
	npu_status st = npu_npy_read(path, out, &m->err);

	if (st)
		return st;
	if ((*out)->dtype != in->dtype || (*out)->shape.rank != in->shape.rank ||
	    memcmp((*out)->shape.dims, in->shape.dims, sizeof(int64_t) * (size_t)in->shape.rank))
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "calibration file %s: %s %s does not match input '%s' (%s %s)",
				     path, npu_dtype_name((*out)->dtype),
				     npu_shape_str(&(*out)->shape, got, sizeof(got)), in->name,
				     npu_dtype_name(in->dtype),
				     npu_shape_str(&in->shape, want, sizeof(want)));
	return NPU_OK;
}

/*
 * --calib DIR: DIR/NAME.npy, one sample each, for a one-input model; else
 * DIR/<sample>/<input name>.npy. Sorted by name, so runs are repeatable.
 */
static npu_status load_calibration(struct npu_model *m, const struct npu_graph *g,
				   struct npu_tensor ***sets, size_t *count)
{
	const char *dir = m->opts.calib_dir;
	bool one_input = g->num_inputs == 1;
	char **names = NULL;
	struct npu_tensor **t = NULL;
	char path[4096];
	npu_status st = NPU_OK;
	int n, i;
	size_t k;

	n = npu_npy_list_samples(dir, one_input, &names);
	if (n < 0)
		return npu_error_set(&m->err, NPU_ERR_IO, "calibration directory %s: cannot read it", dir);
	if (n == 0)
		st = npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				   "calibration directory %s: no %s", dir,
				   one_input ? ".npy files" : "sample subdirectories");
	if (!st) {
		t = calloc((size_t)n * g->num_inputs + 1, sizeof(*t));
		if (!t)
			st = npu_error_set(&m->err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; !st && i < n; i++) {
		for (k = 0; !st && k < g->num_inputs; k++) {
			if (one_input)
				snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			else
				snprintf(path, sizeof(path), "%s/%s/%s.npy", dir, names[i],
					 g->inputs[k]->name);
			st = calib_tensor(m, path, g->inputs[k], &t[(size_t)i * g->num_inputs + k]);
		}
	}
	npu_npy_free_names(names, n);
	if (st && t) {
		for (k = 0; k < (size_t)(n > 0 ? n : 0) * g->num_inputs; k++)
			npu_tensor_destroy(t[k]);
		free(t);
		return st;
	}
	*sets = t;
	*count = (size_t)n;
	return st;
}

static npu_status compile_options(struct npu_model *m, struct npu_compile_options *o)
{
	const char *method = m->opts.calib_method;

	npu_compile_options_init(o);
	o->device = m->dev;
	o->threads = m->opts.threads;
	o->keep_small_segments = m->opts.keep_small_segments != 0;
	o->profile_ops = m->opts.profile != 0;
	if (m->opts.calib_percentile > 0)
		o->percentile = m->opts.calib_percentile;
	if (m->opts.calib_seed)
		o->calib_seed = m->opts.calib_seed;
	if (m->opts.calib_samples > 0)
		o->random_calib_sets = (size_t)m->opts.calib_samples;
	if (!method || !strcmp(method, "minmax"))
		o->calib_method = NPU_CALIB_MINMAX;
	else if (!strcmp(method, "percentile"))
		o->calib_method = NPU_CALIB_PERCENTILE;
	else if (!strcmp(method, "entropy"))
		o->calib_method = NPU_CALIB_ENTROPY;
	else
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "calibration method '%s': expected minmax, percentile or entropy",
				     method);
	return NPU_OK;
}

static npu_status instantiate_npub(struct npu_model *m, struct npu_graph *g)
{
	struct npu_qdq_table qdq = { 0 };
	struct npu_npub *f = NULL;
	npu_status st;

	st = npu_npub_open(m->npub, m->npub_size, m->source, &f, &m->err);
	if (!st)
		st = npu_compile_passes_pre(g, &qdq, &m->err);
	if (!st)
		st = npu_compile_passes_fuse(g, &m->err);
	if (!st)
		st = npu_npub_instantiate(f, g, m->dev, m->opts.profile != 0, &m->compiled,
					  &m->err);
	if (st && !strstr(m->err.msg, m->source))
		npu_error_prefix(&m->err, "%s", m->source);
	npu_qdq_table_free(&qdq);
	npu_npub_close(f);
	return st;
}

npu_status npu_model_npu_prepare(struct npu_model *m, struct npu_graph *g)
{
	struct npu_compile_options o;
	struct npu_tensor **calib = NULL;
	size_t sets = 0, k;
	npu_status st;

	/* Compile once every input dim is known (and, deferred, when asked). */
	if (!shapes_known(g) || (m->opts.defer_compile && !m->compile_requested))
		return NPU_OK;
	st = open_device(m);
	if (st)
		return st;
	if (m->npub)
		return instantiate_npub(m, g);
	st = compile_options(m, &o);
	/* A model without inputs has nothing to calibrate from but its run. */
	if (!st && m->opts.calib_dir && g->num_inputs)
		st = load_calibration(m, g, &calib, &sets);
	if (st)
		return st;
	o.calib_inputs = calib;
	o.num_calib_sets = sets;
	st = npu_compile_graph(g, &o, &m->compiled, &m->err);
	if (st && !strstr(m->err.msg, m->source))
		npu_error_prefix(&m->err, "%s", m->source);
	for (k = 0; k < sets * g->num_inputs; k++)
		npu_tensor_destroy(calib[k]);
	free(calib);
	return st;
}

npu_status npu_model_compile(struct npu_model *m)
{
	size_t i;

	if (!m)
		return NPU_ERR_INVALID_ARG;
	if (!m->bytes)
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG, "no model loaded");
	if (!npu_model_on_npu(m) || m->compiled)
		return NPU_OK;
	for (i = 0; i < m->num_inputs; i++)
		if (npu_shape_numel(&m->bound[i]) < 0)
			return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
					     "%s: input '%s' has unknown dimensions: fix them first (npu_model_set_input_shape, --shape %s=...)",
					     m->source, m->inputs[i].name, m->inputs[i].name);
	m->compile_requested = true;
	return npu_model_plan(m);
}

npu_status npu_model_npu_take_npub(struct npu_model *m, const void *data,
				   size_t size)
{
	struct npu_npub *f = NULL;
	const void *model;
	npu_status st;

	if (!npu_npub_detect(data, size))
		return NPU_OK;
	st = npu_npub_open(data, size, m->source, &f, &m->err);
	if (st)
		return st;
	model = npu_npub_model(f, &m->size);
	m->bytes = malloc(m->size ? m->size : 1);
	m->npub = malloc(size);
	if (!m->bytes || !m->npub) {
		npu_npub_close(f);
		return npu_error_set(&m->err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	memcpy(m->bytes, model, m->size);
	memcpy(m->npub, data, size);
	m->npub_size = size;
	npu_npub_close(f);
	return NPU_OK;
}

npu_status npu_model_npu_bind_npub_shapes(struct npu_model *m)
{
	struct npu_npub *f = NULL;
	npu_status st = npu_npub_open(m->npub, m->npub_size, m->source, &f, &m->err);
	size_t i, k;

	for (i = 0; !st && i < npu_npub_num_inputs(f); i++) {
		struct npu_shape shape;
		const char *name = npu_npub_input(f, i, &shape);

		for (k = 0; k < m->num_inputs; k++)
			if (!strcmp(m->inputs[k].name, name))
				break;
		if (k == m->num_inputs)
			st = npu_error_set(&m->err, NPU_ERR_MODEL,
					   "%s: compiled for input '%s', which the embedded model lacks",
					   m->source, name);
		else
			m->bound[k] = shape;
	}
	npu_npub_close(f);
	return st;
}

void npu_model_npu_release(struct npu_model *m)
{
	npu_compiled_free(m->compiled);
	m->compiled = NULL;
}

void npu_model_npu_close(struct npu_model *m)
{
	npu_model_npu_release(m);
	npu_device_close(m->dev);
	m->dev = NULL;
}

size_t npu_model_num_placements(const struct npu_model *m)
{
	return m && m->compiled ? m->compiled->num_records : 0;
}

npu_status npu_model_placement(const struct npu_model *m, size_t index,
			       struct npu_node_placement *p)
{
	const struct npu_placement_record *r;

	if (!m || !p || !m->compiled || index >= m->compiled->num_records)
		return NPU_ERR_INVALID_ARG;
	r = &m->compiled->records[index];
	p->node = r->node;
	p->op_type = r->op_type;
	p->on_npu = r->placement == NPU_PLACE_NPU;
	p->segment = r->segment;
	p->macs = r->macs;
	p->reason = r->reason;
	return NPU_OK;
}

npu_status npu_model_npu_stats(const struct npu_model *m,
			       struct npu_model_npu_stats *s)
{
	const struct npu_compiled *c;
	struct npu_device_info info;
	size_t i;

	if (!m || !s)
		return NPU_ERR_INVALID_ARG;
	memset(s, 0, sizeof(*s));
	if (m->s) {
		struct npu_memplan_stats host;
		bool planned;

		npu_session_memory(m->s, &planned, &host);
		s->host_arena_bytes = host.arena_bytes;
		s->host_sum_bytes = host.sum_bytes;
		s->host_lower_bound = host.lower_bound;
	}
	c = m->compiled;
	if (!c)
		return NPU_OK;
	s->segments = c->num_segments;
	s->total_macs = c->total_macs;
	s->npu_macs = c->npu_macs;
	s->arena_bytes = c->arena_bytes;
	s->arena_sum_bytes = c->arena_sum_bytes;
	s->arena_lower_bound = c->arena_lower_bound;
	s->compile_ms = c->compile_ms;
	if (m->dev && !npu_device_get_info(m->dev, &info))
		s->clock_mhz = info.clock_mhz;
	for (i = 0; i < c->num_segments; i++) {
		const struct npu_segment *seg = c->segments[i];

		s->ideal_mac_cycles += seg->code.ideal_mac_cycles;
		if (seg->rt && seg->rt->runs) {
			s->last_cycles += seg->rt->last.cycles;
			s->last_npu_wall_ms += seg->rt->last_wall_ms;
		}
	}
	return NPU_OK;
}

npu_status npu_model_npu_segment(const struct npu_model *m, size_t index,
				 struct npu_model_segment_stats *s)
{
	const struct npu_segment *seg;

	if (!m || !s || !m->compiled || index >= m->compiled->num_segments)
		return NPU_ERR_INVALID_ARG;
	seg = m->compiled->segments[index];
	memset(s, 0, sizeof(*s));
	s->nodes = seg->num_nodes;
	s->first_node = seg->first_node;
	s->last_node = seg->last_node;
	s->macs = seg->code.macs;
	s->ideal_mac_cycles = seg->code.ideal_mac_cycles;
	s->instructions = seg->code.instructions;
	if (seg->rt && seg->rt->runs)
		s->last_cycles = seg->rt->last.cycles;
	return NPU_OK;
}

size_t npu_model_npu_num_ops(const struct npu_model *m)
{
	size_t i, n = 0;

	for (i = 0; m && m->compiled && i < m->compiled->num_segments; i++)
		n += m->compiled->segments[i]->prog.num_lops;
	return n;
}

npu_status npu_model_npu_op(const struct npu_model *m, size_t index,
			    struct npu_model_op_stats *s)
{
	static const char *const kinds[] = { "conv", "matmul", "pool", "eltwise", "lut" };
	size_t i;

	if (!m || !s || !m->compiled)
		return NPU_ERR_INVALID_ARG;
	for (i = 0; i < m->compiled->num_segments; i++) {
		const struct npu_segment *seg = m->compiled->segments[i];
		const struct npu_lop *l;

		if (index >= seg->prog.num_lops) {
			index -= seg->prog.num_lops;
			continue;
		}
		l = &seg->prog.lops[index];
		memset(s, 0, sizeof(*s));
		s->segment = seg->index;
		s->node = l->name;
		s->kind = kinds[l->kind];
		s->macs = seg->code.lop_macs ? seg->code.lop_macs[index] : 0;
		s->ideal_mac_cycles = (s->macs + NPU_MAC_ROWS * NPU_MAC_COLS - 1) /
				      (NPU_MAC_ROWS * NPU_MAC_COLS);
		if (seg->rt && seg->rt->lop_cycles)
			s->cycles = seg->rt->lop_cycles[index];
		return NPU_OK;
	}
	return NPU_ERR_INVALID_ARG;
}

npu_status npu_model_save_compiled(struct npu_model *m, const char *path)
{
	npu_status st;

	if (!m || !path)
		return NPU_ERR_INVALID_ARG;
	if (!npu_model_on_npu(m))
		return npu_error_set(&m->err, NPU_ERR_INVALID_ARG,
				     "%s: only a model opened on an NPU device (sim, accel) can be saved compiled",
				     m->source ? m->source : "model");
	st = npu_model_compile(m);
	if (!st && !m->compiled)
		st = npu_error_set(&m->err, NPU_ERR_INTERNAL, "%s: not compiled", m->source);
	if (!st)
		st = npu_npub_save(path, m->bytes, m->size, m->g, m->compiled, &m->err);
	return st;
}
