// SPDX-License-Identifier: MIT
/*
 * backend: models run by a C backend library (npu_serve_backend.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <npu/npu_custom_op.h>

#include "backend.h"
#include "sequence.h"

struct backend_model {
	void *lib;
	const struct npu_serve_step *step;
	char model_dir[4096];
	const struct model_config *cfg;
};

struct npu_serve_context {
	struct backend_model *m;
	const struct npu_serve_tensor *inputs;	/* the step's order; NULL in create() */
	struct npu_host_tensor *outs;		/* the step's order */
	char *err;
};

struct backend_instance {
	struct backend_model *m;
	void *state;
};

int backend_is_library(const struct model_config *cfg)
{
	return cfg->backend[0] && strcmp(cfg->backend, "onnxruntime") &&
	       strcmp(cfg->backend, "npu");
}

static int is_regular(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int backend_resolve_file(const char *model_dir, const char *ref, char *path, size_t size,
			 char *err)
{
	const char *rel = ref, *p;
	int n;

	if (!strncmp(ref, "cache:", 6))
		rel = ref + 6;
	if (!rel[0] || rel[0] == '/')
		return serve_err(err, SERVE_INVALID,
				 "'%s': a file must be relative to the model directory or 'cache:PATH'",
				 ref);
	for (p = rel; p; p = strchr(p, '/')) {
		p += *p == '/';
		if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2]))
			return serve_err(err, SERVE_INVALID, "'%s': '..' is not allowed in a file name",
					 ref);
	}
	if (rel != ref) {
		const char *cache = getenv("NPU_CACHE"), *home = getenv("HOME");

		if (cache && cache[0])
			n = snprintf(path, size, "%s/%s", cache, rel);
		else
			n = snprintf(path, size, "%s/.cache/npu-stack/%s", home ? home : "", rel);
	} else {
		n = snprintf(path, size, "%s/%s", model_dir, rel);
	}
	if (n < 0 || (size_t)n >= size)
		return serve_err(err, SERVE_INVALID, "'%s': the path is too long", ref);
	if (!is_regular(path))
		return serve_err(err, SERVE_NOT_FOUND, "'%s': no such file (%s)%s", ref, path,
				 rel != ref ? ": run tools/fetch-models (or make demo) to fill the model cache"
					    : "");
	return SERVE_OK;
}

/*
 * A library file found where a model's libraries are looked for: its
 * version directory, its directory, then the backend directory (each may
 * be NULL). Returns 0 with the path, or -1 when none holds it.
 */
static int find_library(const char *version_dir, const char *model_dir,
			const char *backend_dir, const char *file, char *path, size_t size)
{
	const char *dirs[3] = { version_dir, model_dir, backend_dir };
	size_t i;

	for (i = 0; i < 3; i++) {
		if (!dirs[i])
			continue;
		snprintf(path, size, "%s/%s", dirs[i], file);
		if (is_regular(path))
			return 0;
	}
	path[0] = '\0';
	return -1;
}

/* ---- Custom-op libraries ------------------------------------------------- */

struct op_library {
	char path[PATH_MAX];
	void *lib;
	int status;			/* its registration's, repeated to every model */
	char err[SERVE_ERR_MAX];
	struct op_library *next;
};

static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;
static struct op_library *op_libraries;

int backend_load_op_library(struct npu_engine *engine, const char *file, const char *model_dir,
			    const char *version_dir, const char *backend_dir, char *err)
{
	npu_custom_ops_register_fn entry;
	struct op_library *l;
	char path[8192], real[PATH_MAX];
	int st;

	if (find_library(version_dir, model_dir, backend_dir, file, path, sizeof(path)) ||
	    !realpath(path, real))
		return serve_err(err, SERVE_NOT_FOUND,
				 "model_operations: no op library '%s' in the version directory, the model directory or the backend directory (%s)",
				 file, backend_dir ? backend_dir : "none");
	pthread_mutex_lock(&op_lock);
	for (l = op_libraries; l; l = l->next)
		if (!strcmp(l->path, real))
			break;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l) {
			pthread_mutex_unlock(&op_lock);
			return serve_err(err, SERVE_INTERNAL, "out of memory");
		}
		snprintf(l->path, sizeof(l->path), "%s", real);
		l->lib = dlopen(real, RTLD_NOW | RTLD_LOCAL);
		if (!l->lib) {
			st = serve_err(err, SERVE_INVALID, "model_operations: %s", dlerror());
			free(l);
			pthread_mutex_unlock(&op_lock);
			return st;
		}
		*(void **)&entry = dlsym(l->lib, NPU_CUSTOM_OPS_ENTRY);
		if (!entry)
			l->status = serve_err(l->err, SERVE_INVALID,
					      "model_operations: %s exports no %s", file,
					      NPU_CUSTOM_OPS_ENTRY);
		else if (entry(engine) != NPU_OK)
			l->status = serve_err(l->err, SERVE_INVALID, "model_operations: %s: %s",
					      file, npu_last_error());
		else
			serve_log(SERVE_LOG_INFO, "custom-op library %s registered its ops", real);
		/* Kept even when it failed: ops it registered are the engine's. */
		l->next = op_libraries;
		op_libraries = l;
	}
	st = l->status;
	if (st)
		snprintf(err, SERVE_ERR_MAX, "%s", l->err);
	pthread_mutex_unlock(&op_lock);
	return st;
}

void backend_op_libraries_close(void)
{
	struct op_library *l, *next;

	pthread_mutex_lock(&op_lock);
	for (l = op_libraries; l; l = next) {
		next = l->next;
		dlclose(l->lib);
		free(l);
	}
	op_libraries = NULL;
	pthread_mutex_unlock(&op_lock);
}

/* ---- The host table a step calls back through -------------------------- */

static const char *host_param(struct npu_serve_context *ctx, const char *key)
{
	return config_param(ctx->m->cfg, key);
}

static void host_error(struct npu_serve_context *ctx, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(ctx->err, SERVE_ERR_MAX, "step '%s': ", ctx->m->step->name);

	if (k < 0 || k >= SERVE_ERR_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(ctx->err + k, SERVE_ERR_MAX - (size_t)k, fmt, ap);
	va_end(ap);
}

static int host_file(struct npu_serve_context *ctx, const char *key, char *path, size_t size)
{
	const char *ref = config_param(ctx->m->cfg, key);
	char err[SERVE_ERR_MAX];

	if (!ref) {
		host_error(ctx, "parameter '%s' is missing", key);
		return -1;
	}
	if (backend_resolve_file(ctx->m->model_dir, ref, path, size, err)) {
		host_error(ctx, "parameter '%s': %s", key, err);
		return -1;
	}
	return 0;
}

static const struct npu_serve_tensor *host_input(struct npu_serve_context *ctx, size_t index)
{
	if (!ctx->inputs || index >= ctx->m->step->num_inputs)
		return NULL;
	return &ctx->inputs[index];
}

static void *host_output(struct npu_serve_context *ctx, size_t index, int rank,
			 const int64_t *dims, size_t nbytes)
{
	const struct npu_serve_step *st = ctx->m->step;
	struct npu_host_tensor *o;
	size_t elems = 1, es;
	int d;

	if (!ctx->outs || index >= st->num_outputs) {
		host_error(ctx, "output %zu: there is no such output", index);
		return NULL;
	}
	o = &ctx->outs[index];
	if (o->data) {
		host_error(ctx, "output '%s' is allocated twice", st->outputs[index].name);
		return NULL;
	}
	if (rank < 0 || rank > NPU_MODEL_MAX_RANK ||
	    (st->outputs[index].rank >= 0 && rank != st->outputs[index].rank)) {
		host_error(ctx, "output '%s': rank %d", st->outputs[index].name, rank);
		return NULL;
	}
	for (d = 0; d < rank; d++) {
		if (dims[d] < 0 || (dims[d] && elems > SIZE_MAX / (size_t)dims[d])) {
			host_error(ctx, "output '%s': dim %d is %lld", st->outputs[index].name, d,
				   (long long)dims[d]);
			return NULL;
		}
		elems *= (size_t)dims[d];
	}
	es = npu_data_type_size(st->outputs[index].dtype);
	if (st->outputs[index].dtype == NPU_TYPE_STRING ? nbytes < 4 * elems
							 : (es && nbytes != es * elems)) {
		host_error(ctx, "output '%s': %zu bytes for %zu elements", st->outputs[index].name,
			   nbytes, elems);
		return NULL;
	}
	o->data = calloc(1, nbytes ? nbytes : 1);
	if (!o->data) {
		host_error(ctx, "output '%s': out of memory (%zu bytes)", st->outputs[index].name,
			   nbytes);
		return NULL;
	}
	o->name = st->outputs[index].name;
	o->dtype = st->outputs[index].dtype;
	o->rank = rank;
	memset(o->dims, 0, sizeof(o->dims));
	memcpy(o->dims, dims, sizeof(int64_t) * (size_t)rank);
	o->nbytes = nbytes;
	return o->data;
}

static const struct npu_serve_host host = {
	.abi = NPU_SERVE_BACKEND_ABI,
	.param = host_param,
	.file = host_file,
	.input = host_input,
	.output = host_output,
	.error = host_error,
};

/* ---- Opening -------------------------------------------------------------- */

static int valid_backend_name(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return 0;
	return i > 0 && i <= 48;
}

/*
 * The config's tensors against the step's: complete them, or match them
 * by name. A sequence model's control and state tensors are the step's
 * but not the config's (the server sets them).
 */
static int match_side(struct model_config *cfg, const struct npu_serve_step *st, int inputs,
		      char *err)
{
	const struct npu_serve_io *io = inputs ? st->inputs : st->outputs;
	size_t nio = inputs ? st->num_inputs : st->num_outputs;
	size_t *num = inputs ? &cfg->num_inputs : &cfg->num_outputs;
	struct config_tensor *t = inputs ? cfg->inputs : cfg->outputs;
	const char *what = inputs ? "input" : "output";
	size_t i, j;

	if (nio > SERVE_MAX_IO)
		return serve_err(err, SERVE_INVALID, "step '%s' has more than %d %ss", st->name,
				 SERVE_MAX_IO, what);
	if (!*num) {
		/* Completed from the step: any dims of its rank. */
		for (i = 0; i < nio; i++) {
			struct config_tensor *c = &t[*num];

			if (sequence_implicit_tensor(cfg, io[i].name, inputs))
				continue;
			if (io[i].rank < 0)
				return serve_err(err, SERVE_INVALID,
						 "step '%s': %s '%s' takes any rank, so the config must list it with its dims",
						 st->name, what, io[i].name);
			memset(c, 0, sizeof(*c));
			snprintf(c->name, sizeof(c->name), "%s", io[i].name);
			c->dtype = io[i].dtype;
			c->rank = io[i].rank - (cfg->max_batch_size > 0);
			for (j = 0; j < (size_t)c->rank; j++)
				c->dims[j] = -1;
			(*num)++;
		}
		return SERVE_OK;
	}
	for (i = j = 0; i < nio; i++)
		j += !sequence_implicit_tensor(cfg, io[i].name, inputs);
	if (*num != j)
		return serve_err(err, SERVE_INVALID, "the config lists %zu %ss, step '%s' has %zu",
				 *num, what, st->name, j);
	for (i = 0; i < *num; i++) {
		for (j = 0; j < nio && strcmp(io[j].name, t[i].name); j++)
			;
		if (j == nio)
			return serve_err(err, SERVE_INVALID, "%s '%s' is not an %s of step '%s'", what,
					 t[i].name, what, st->name);
		if (io[j].dtype != t[i].dtype)
			return serve_err(err, SERVE_INVALID, "%s '%s' is %s in the config but %s in step '%s'",
					 what, t[i].name, serve_config_dtype_name(t[i].dtype),
					 serve_config_dtype_name(io[j].dtype), st->name);
		if (io[j].rank >= 0 && io[j].rank != t[i].rank + (cfg->max_batch_size > 0))
			return serve_err(err, SERVE_INVALID,
					 "%s '%s' has rank %d in the config (with the batch dim) but %d in step '%s'",
					 what, t[i].name, t[i].rank + (cfg->max_batch_size > 0),
					 io[j].rank, st->name);
	}
	return SERVE_OK;
}

static const struct npu_serve_io *find_io(const struct npu_serve_io *io, size_t n,
					  const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(io[i].name, name))
			return &io[i];
	return NULL;
}

/* A sequence model's controls and states are the step's inputs and outputs. */
static int match_sequence(const struct model_config *cfg, const struct npu_serve_step *st,
			  char *err)
{
	const struct sequence_config *sc = &cfg->sequence;
	const struct npu_serve_io *io;
	size_t i;

	for (i = 0; sc->enabled && i < sc->num_controls; i++) {
		io = find_io(st->inputs, st->num_inputs, sc->controls[i].input);
		if (!io || io->dtype != sc->controls[i].dtype)
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching control input '%s': step '%s' has no %s input of that name",
					 sc->controls[i].input, st->name,
					 serve_config_dtype_name(sc->controls[i].dtype));
	}
	for (i = 0; sc->enabled && i < sc->num_states; i++) {
		const struct seq_state *s = &sc->states[i];

		io = find_io(st->inputs, st->num_inputs, s->input);
		if (!io || io->dtype != s->dtype)
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching state input '%s': step '%s' has no %s input of that name",
					 s->input, st->name, serve_config_dtype_name(s->dtype));
		io = find_io(st->outputs, st->num_outputs, s->output);
		if (!io || io->dtype != s->dtype)
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching state output '%s': step '%s' has no %s output of that name",
					 s->output, st->name, serve_config_dtype_name(s->dtype));
	}
	return SERVE_OK;
}

int backend_output_index(const struct backend_model *m, const char *name)
{
	const struct npu_serve_io *io = find_io(m->step->outputs, m->step->num_outputs, name);

	return io ? (int)(io - m->step->outputs) : -1;
}

int backend_model_open(struct model_config *cfg, const char *model_dir, const char *version_dir,
		       const char *backend_dir, struct backend_model **out, char *err)
{
	const char *want = config_param(cfg, "step");
	npu_serve_backend_steps_fn entry;
	const struct npu_serve_step *steps;
	struct backend_model *m;
	char path[8192], file[SERVE_NAME_MAX];
	size_t i, count = 0;
	int st;

	*out = NULL;
	if (!valid_backend_name(cfg->backend))
		return serve_err(err, SERVE_INVALID,
				 "'backend' '%s': a backend name is 1 to 48 of a-z, 0-9, '_' and '-'",
				 cfg->backend);
	path[0] = '\0';
	snprintf(file, sizeof(file), "libnpu_serve_%s.so", cfg->backend);
	if (find_library(version_dir, model_dir, backend_dir, file, path, sizeof(path)))
		return serve_err(err, SERVE_NOT_FOUND,
				 "backend '%s': no libnpu_serve_%s.so in the version directory, the model directory or the backend directory (%s)",
				 cfg->backend, cfg->backend, backend_dir ? backend_dir : "none");
	m = calloc(1, sizeof(*m));
	if (!m)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	m->cfg = cfg;
	snprintf(m->model_dir, sizeof(m->model_dir), "%s", model_dir);
	m->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!m->lib) {
		st = serve_err(err, SERVE_INVALID, "backend '%s': %s", cfg->backend, dlerror());
		goto fail;
	}
	*(void **)&entry = dlsym(m->lib, NPU_SERVE_BACKEND_ENTRY);
	if (!entry) {
		st = serve_err(err, SERVE_INVALID, "backend '%s': %s exports no %s", cfg->backend,
			       path, NPU_SERVE_BACKEND_ENTRY);
		goto fail;
	}
	steps = entry(NPU_SERVE_BACKEND_ABI, &count);
	if (!steps || !count) {
		st = serve_err(err, SERVE_INVALID, "backend '%s' has no steps for ABI %d",
			       cfg->backend, NPU_SERVE_BACKEND_ABI);
		goto fail;
	}
	for (i = 0; i < count; i++)
		if (want ? !strcmp(steps[i].name, want) : count == 1)
			m->step = &steps[i];
	if (!m->step) {
		char names[256] = "";
		size_t k = 0;

		for (i = 0; i < count && k < sizeof(names) - 1; i++)
			k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", i ? ", " : "",
					      steps[i].name);
		st = serve_err(err, SERVE_INVALID, want ? "backend '%s' has no step '%s' (it has: %s)"
						      : "backend '%s' has several steps: parameter 'step' picks one of %s%s",
			       cfg->backend, want ? want : "", names);
		goto fail;
	}
	if (!m->step->execute || !m->step->create) {
		st = serve_err(err, SERVE_INVALID, "backend '%s' step '%s' has no create or execute",
			       cfg->backend, m->step->name);
		goto fail;
	}
	st = sequence_config_check(cfg, NULL, err);
	if (!st)
		st = match_side(cfg, m->step, 1, err);
	if (!st)
		st = match_side(cfg, m->step, 0, err);
	if (!st)
		st = match_sequence(cfg, m->step, err);
	if (st)
		goto fail;
	/* A batch's BYTES outputs would have to be split element by element. */
	for (i = 0; cfg->max_batch_size > 0 && i < cfg->num_outputs; i++)
		if (cfg->outputs[i].dtype == NPU_TYPE_STRING) {
			st = serve_err(err, SERVE_INVALID,
				       "output '%s' is BYTES: a backend model with BYTES outputs takes max_batch_size 0",
				       cfg->outputs[i].name);
			goto fail;
		}
	*out = m;
	return SERVE_OK;
fail:
	backend_model_close(m);
	return st;
}

void backend_model_close(struct backend_model *m)
{
	if (!m)
		return;
	if (m->lib)
		dlclose(m->lib);
	free(m);
}

int backend_instance_create(struct backend_model *m, struct backend_instance **out, char *err)
{
	struct backend_instance *in = calloc(1, sizeof(*in));
	struct npu_serve_context ctx = { m, NULL, NULL, err };

	*out = NULL;
	if (!in)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	in->m = m;
	err[0] = '\0';
	if (m->step->create(&host, &ctx, &in->state)) {
		if (!err[0])
			host_error(&ctx, "create failed");
		free(in);
		return SERVE_INVALID;
	}
	*out = in;
	return SERVE_OK;
}

void backend_instance_destroy(struct backend_instance *in)
{
	if (!in)
		return;
	if (in->m->step->destroy)
		in->m->step->destroy(in->state);
	free(in);
}

int backend_execute(struct backend_instance *in, const struct npu_host_tensor *inputs,
		    size_t num_inputs, struct npu_host_tensor *outs, char *err)
{
	struct backend_model *m = in->m;
	const struct npu_serve_step *st = m->step;
	struct npu_serve_tensor tin[SERVE_MAX_IO];
	struct npu_host_tensor tout[SERVE_MAX_IO];
	struct npu_serve_context ctx = { m, tin, tout, err };
	size_t i;
	int r;

	if (num_inputs != st->num_inputs)
		return serve_err(err, SERVE_INTERNAL, "step '%s' takes %zu inputs, not %zu", st->name,
				 st->num_inputs, num_inputs);
	memset(tin, 0, sizeof(tin));
	memset(tout, 0, sizeof(tout));
	for (i = 0; i < num_inputs; i++) {
		const struct npu_serve_io *io = find_io(st->inputs, st->num_inputs, inputs[i].name);
		struct npu_serve_tensor *t;

		if (!io)
			return serve_err(err, SERVE_INTERNAL, "step '%s' has no input '%s'", st->name,
					 inputs[i].name);
		t = &tin[io - st->inputs];
		t->name = io->name;
		t->dtype = inputs[i].dtype;
		t->rank = inputs[i].rank;
		memcpy(t->dims, inputs[i].dims, sizeof(t->dims));
		t->data = inputs[i].data;
		t->nbytes = inputs[i].nbytes;
	}
	err[0] = '\0';
	r = st->execute(in->state, &host, &ctx);
	for (i = 0; !r && i < st->num_outputs; i++)
		if (!tout[i].data) {
			host_error(&ctx, "output '%s' was not written", st->outputs[i].name);
			r = NPU_SERVE_STEP_FAILED;
		}
	if (r) {
		for (i = 0; i < st->num_outputs; i++)
			free(tout[i].data);
		if (!err[0])
			host_error(&ctx, "failed");
		return r == NPU_SERVE_STEP_BAD_INPUT ? SERVE_INVALID : SERVE_INTERNAL;
	}
	memcpy(outs, tout, sizeof(tout[0]) * st->num_outputs);
	return SERVE_OK;
}
