// SPDX-License-Identifier: MIT
/* trace: Triton's trace extension (see trace.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define LEVEL_TIMESTAMPS 1
#define LEVEL_TENSORS 2
#define FILE_NAME_MAX 128

enum { S_LEVEL, S_RATE, S_COUNT, S_FREQ, S_FILE, S_NUM };
static const char *const setting_names[S_NUM] = {
	"trace_level", "trace_rate", "trace_count", "log_frequency", "trace_file",
};

struct settings {
	int set[S_NUM];			/* a model's: given (else the server's) */
	int level;			/* LEVEL_* bits; 0: OFF */
	uint64_t rate;			/* >= 1 */
	int64_t count;			/* traces left; -1: no limit */
	uint64_t log_frequency;
	char file[FILE_NAME_MAX];	/* "": none */
	uint64_t seen;			/* requests counted for the sampling */
};

struct model_settings {
	char model[SERVE_NAME_MAX];
	struct settings s;
};

/* The traces collected for one file. */
struct sink {
	char file[FILE_NAME_MAX];
	json_t *traces;			/* array */
	size_t num;			/* traces in it */
	uint64_t index;			/* the next ${file}.${index} */
	uint64_t dropped;
};

/* A sampled request, chained in front of its done. */
struct trace_ctx {
	void (*done)(struct infer_request *req, void *arg);
	void *done_arg;
	uint64_t id;
	int level;
	char file[FILE_NAME_MAX];
};

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static int trace_dir_fd = -1;
static struct settings global = { .rate = 1000, .count = -1 };
static struct model_settings *models;
static size_t num_models;
static struct sink sinks[TRACE_MAX_FILES];
static size_t num_sinks;
static _Atomic uint64_t next_id = 1;
static atomic_int any_on;	/* some scope's level is not OFF: a cheap test per request */

int trace_dir_arg(const char *dir, char *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		serve_err(err, -1, "--trace-dir: cannot open directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (trace_dir_fd >= 0)
		close(trace_dir_fd);
	trace_dir_fd = fd;
	return 0;
}

/* ---- Settings ------------------------------------------------------------------- */

/* Under trace_lock. */
static struct model_settings *model_of(const char *model, int create)
{
	size_t i;

	for (i = 0; i < num_models; i++)
		if (!strcmp(models[i].model, model))
			return &models[i];
	if (!create || num_models == TRACE_MAX_MODELS)
		return NULL;
	if (!(num_models & (num_models - 1)) || !num_models) {
		size_t cap = num_models ? num_models * 2 : 8;
		struct model_settings *m = realloc(models, cap * sizeof(*m));

		if (!m)
			return NULL;
		models = m;
	}
	memset(&models[num_models], 0, sizeof(models[0]));
	snprintf(models[num_models].model, sizeof(models[0].model), "%s", model);
	return &models[num_models++];
}

/* Under trace_lock: the settings in force for 'm' (NULL: the server's). */
static struct settings effective(const struct model_settings *m)
{
	struct settings e = global;

	if (!m)
		return e;
	if (m->s.set[S_LEVEL])
		e.level = m->s.level;
	if (m->s.set[S_RATE])
		e.rate = m->s.rate;
	if (m->s.set[S_COUNT])
		e.count = m->s.count;
	if (m->s.set[S_FREQ])
		e.log_frequency = m->s.log_frequency;
	if (m->s.set[S_FILE])
		memcpy(e.file, m->s.file, sizeof(e.file));
	return e;
}

static json_t *settings_json(const struct settings *s)
{
	json_t *levels = json_array();
	char buf[32];
	json_t *o;

	if (!s->level)
		json_array_append_new(levels, json_string("OFF"));
	if (s->level & LEVEL_TIMESTAMPS)
		json_array_append_new(levels, json_string("TIMESTAMPS"));
	if (s->level & LEVEL_TENSORS)
		json_array_append_new(levels, json_string("TENSORS"));
	o = json_object();
	json_object_set_new(o, "trace_level", levels);
	snprintf(buf, sizeof(buf), "%" PRIu64, s->rate);
	json_object_set_new(o, "trace_rate", json_string(buf));
	snprintf(buf, sizeof(buf), "%" PRId64, s->count);
	json_object_set_new(o, "trace_count", json_string(buf));
	snprintf(buf, sizeof(buf), "%" PRIu64, s->log_frequency);
	json_object_set_new(o, "log_frequency", json_string(buf));
	json_object_set_new(o, "trace_file", json_string(s->file));
	json_object_set_new(o, "trace_mode", json_string("triton"));
	return o;
}

json_t *trace_settings_json(const char *model)
{
	struct settings e;
	json_t *j;

	pthread_mutex_lock(&trace_lock);
	e = effective(model ? model_of(model, 0) : NULL);
	j = settings_json(&e);
	pthread_mutex_unlock(&trace_lock);
	return j;
}

/* A setting's value as Triton sends it (a string) or as a JSON integer. */
static int int_value(const json_t *v, const char *name, int64_t lo, int64_t *out, char *err)
{
	char *end;
	long long x;

	if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else if (json_is_string(v)) {
		const char *t = json_string_value(v);

		errno = 0;
		x = strtoll(t, &end, 10);
		if (errno || end == t || *end)
			return serve_err(err, SERVE_INVALID, "trace setting '%s': '%.64s' is not an integer",
					 name, t);
	} else {
		return serve_err(err, SERVE_INVALID, "trace setting '%s' must be a string holding an integer",
				 name);
	}
	if (x < lo)
		return serve_err(err, SERVE_INVALID, "trace setting '%s': %lld is less than %" PRId64,
				 name, x, lo);
	*out = x;
	return SERVE_OK;
}

/* A file name the server may create under --trace-dir: one plain name. */
int trace_file_name_ok(const char *name, char *err, const char *what, int dir_given)
{
	size_t i, n = strlen(name);

	if (!dir_given)
		return serve_err(err, SERVE_INVALID,
				 "%s: the server writes files only under a directory its operator gives (start it with --%s-dir DIR)",
				 what, !strcmp(what, "log_file") ? "log" : "trace");
	if (!n || n >= FILE_NAME_MAX - 24)
		return serve_err(err, SERVE_INVALID, "%s: a file name of 1 to %d bytes", what,
				 FILE_NAME_MAX - 25);
	if (strchr(name, '/') || strstr(name, "..") || name[0] == '.')
		return serve_err(err, SERVE_INVALID,
				 "%s '%.64s': a plain file name in the server's directory (no '/', no '..', not hidden)",
				 what, name);
	for (i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return serve_err(err, SERVE_INVALID, "%s: control characters in the name", what);
	return SERVE_OK;
}

static int parse_level(const json_t *v, int *level, char *err)
{
	const json_t *x;
	size_t i, n;
	int off = 0;

	*level = 0;
	if (json_is_string(v))
		n = 1;
	else if (json_is_array(v) && json_array_size(v))
		n = json_array_size(v);
	else
		return serve_err(err, SERVE_INVALID,
				 "trace setting 'trace_level' must be a list of OFF, TIMESTAMPS, TENSORS");
	for (i = 0; i < n; i++) {
		const char *t;

		x = json_is_string(v) ? v : json_array_get(v, i);
		t = json_string_value(x);
		if (!t)
			return serve_err(err, SERVE_INVALID, "trace setting 'trace_level': a value is not a string");
		if (!strcmp(t, "OFF"))
			off = 1;
		else if (!strcmp(t, "TIMESTAMPS"))
			*level |= LEVEL_TIMESTAMPS;
		else if (!strcmp(t, "TENSORS"))
			*level |= LEVEL_TENSORS;
		else
			return serve_err(err, SERVE_INVALID,
					 "trace setting 'trace_level': '%.32s' is not OFF, TIMESTAMPS or TENSORS", t);
	}
	if (off && *level)
		return serve_err(err, SERVE_INVALID, "trace setting 'trace_level': OFF with another level");
	return SERVE_OK;
}

static void recount_on(void)
{
	size_t i;
	int on = global.level != 0;

	for (i = 0; i < num_models && !on; i++)
		on = models[i].s.set[S_LEVEL] && models[i].s.level;
	atomic_store(&any_on, on);
}

/* Under trace_lock: the sink of a file, made on first use (NULL: too many files). */
static struct sink *sink_of(const char *file, int create)
{
	size_t i;

	for (i = 0; i < num_sinks; i++)
		if (!strcmp(sinks[i].file, file))
			return &sinks[i];
	if (!create || num_sinks == TRACE_MAX_FILES)
		return NULL;
	memset(&sinks[num_sinks], 0, sizeof(sinks[0]));
	snprintf(sinks[num_sinks].file, sizeof(sinks[0].file), "%s", file);
	return &sinks[num_sinks++];
}

int trace_settings_update(const char *model, const json_t *settings, json_t **out, char *err)
{
	struct settings next, e;
	struct model_settings *m = NULL;
	const char *key;
	json_t *v;
	int k, st;

	*out = NULL;
	if (!json_is_object(settings))
		return serve_err(err, SERVE_INVALID, "the trace settings must be a JSON object");
	json_object_foreach((json_t *)settings, key, v) {
		for (k = 0; k < S_NUM && strcmp(key, setting_names[k]); k++)
			;
		if (k == S_NUM && strcmp(key, "trace_mode"))
			return serve_err(err, SERVE_INVALID,
					 "unknown trace setting '%.64s' (trace_level, trace_rate, trace_count, log_frequency, trace_file)",
					 key);
	}
	pthread_mutex_lock(&trace_lock);
	if (model) {
		m = model_of(model, 1);
		if (!m) {
			pthread_mutex_unlock(&trace_lock);
			return serve_err(err, SERVE_UNAVAILABLE, "more than %d models with their own trace settings",
					 TRACE_MAX_MODELS);
		}
		next = m->s;
	} else {
		next = global;
	}
	st = SERVE_OK;
	json_object_foreach((json_t *)settings, key, v) {
		int64_t x;

		for (k = 0; k < S_NUM && strcmp(key, setting_names[k]); k++)
			;
		if (k == S_NUM) {	/* trace_mode: only Triton's own */
			if (!json_is_string(v) || strcmp(json_string_value(v), "triton"))
				st = serve_err(err, SERVE_INVALID, "trace setting 'trace_mode': only \"triton\"");
			if (st)
				break;
			continue;
		}
		if (json_is_null(v)) {
			if (!model) {
				st = serve_err(err, SERVE_INVALID,
					       "trace setting '%s': null clears a model's setting, the server's cannot be cleared",
					       key);
				break;
			}
			next.set[k] = 0;
			continue;
		}
		switch (k) {
		case S_LEVEL:
			st = parse_level(v, &next.level, err);
			break;
		case S_RATE:
			st = int_value(v, key, 1, &x, err);
			next.rate = (uint64_t)x;
			break;
		case S_COUNT:
			st = int_value(v, key, -1, &x, err);
			next.count = x;
			break;
		case S_FREQ:
			st = int_value(v, key, 0, &x, err);
			next.log_frequency = (uint64_t)x;
			break;
		case S_FILE:
			if (!json_is_string(v)) {
				st = serve_err(err, SERVE_INVALID, "trace setting 'trace_file' must be a string");
				break;
			}
			st = trace_file_name_ok(json_string_value(v), err, "trace_file",
						trace_dir_fd >= 0);
			if (!st)
				snprintf(next.file, sizeof(next.file), "%s", json_string_value(v));
			break;
		}
		if (st)
			break;
		next.set[k] = 1;
	}
	if (!st) {
		struct settings saved = model ? m->s : global;

		if (model)
			m->s = next;
		else
			global = next;
		e = effective(m);
		if (e.level && trace_dir_fd < 0)
			st = serve_err(err, SERVE_INVALID,
				       "trace_level %s: traces are written only under a directory the operator gives: start the server with --trace-dir DIR",
				       e.level & LEVEL_TENSORS ? "TENSORS" : "TIMESTAMPS");
		else if (e.level && !e.file[0])
			st = serve_err(err, SERVE_INVALID,
				       "trace_level: set a 'trace_file' (a file name under --trace-dir) first or with it");
		else if (e.file[0] && !sink_of(e.file, 1))
			st = serve_err(err, SERVE_INVALID, "more than %d trace files", TRACE_MAX_FILES);
		if (st) {
			if (model)
				m->s = saved;
			else
				global = saved;
		} else {
			struct sink *sk = e.file[0] ? sink_of(e.file, 0) : NULL;

			/* A new trace_file starts its index again (as Triton). */
			if (sk && json_object_get(settings, "trace_file"))
				sk->index = 0;
			*out = settings_json(&e);
		}
	}
	recount_on();
	pthread_mutex_unlock(&trace_lock);
	return st;
}

/* ---- Traces ------------------------------------------------------------------------ */

/* Under trace_lock: write the sink's traces to its next file. */
static void flush(struct sink *sk, int final)
{
	char name[FILE_NAME_MAX + 24];
	FILE *f;
	int fd;

	if (!sk->num || trace_dir_fd < 0)
		return;
	if (final && !sk->index)
		snprintf(name, sizeof(name), "%s", sk->file);
	else
		snprintf(name, sizeof(name), "%s.%" PRIu64, sk->file, sk->index++);
	/* Never through a link planted in the directory; only the owner reads traces. */
	fd = openat(trace_dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		serve_log(SERVE_LOG_WARN, "trace file '%s': %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
	} else {
		json_dumpf(sk->traces, f, JSON_INDENT(1));
		fputc('\n', f);
		fclose(f);
	}
	json_decref(sk->traces);
	sk->traces = NULL;
	sk->num = 0;
}

static json_t *tensor_json(const struct infer_tensor *t)
{
	char shape[256] = "", *data = NULL;
	size_t size = 0, esize = npu_data_type_size(t->dtype), n, i;
	FILE *f;
	int k, off = 0;
	json_t *o;

	for (k = 0; k < t->rank && off < (int)sizeof(shape) - 24; k++)
		off += snprintf(shape + off, sizeof(shape) - (size_t)off, "%s%" PRId64, k ? "," : "",
				t->dims[k]);
	f = open_memstream(&data, &size);
	if (!f)
		return NULL;
	n = esize && t->dtype != NPU_TYPE_STRING ? t->nbytes / esize : 0;
	for (i = 0; i < n && i < TRACE_MAX_ELEMENTS; i++) {
		const void *p = (const char *)t->data + i * esize;

		if (i)
			fputc(',', f);
		switch (t->dtype) {
		case NPU_TYPE_FLOAT: fprintf(f, "%.9g", *(const float *)p); break;
		case NPU_TYPE_DOUBLE: fprintf(f, "%.17g", *(const double *)p); break;
		case NPU_TYPE_INT8: fprintf(f, "%d", *(const int8_t *)p); break;
		case NPU_TYPE_INT16: fprintf(f, "%d", *(const int16_t *)p); break;
		case NPU_TYPE_INT32: fprintf(f, "%d", *(const int32_t *)p); break;
		case NPU_TYPE_INT64: fprintf(f, "%" PRId64, *(const int64_t *)p); break;
		case NPU_TYPE_UINT8: case NPU_TYPE_BOOL: fprintf(f, "%u", *(const uint8_t *)p); break;
		case NPU_TYPE_UINT16: fprintf(f, "%u", *(const uint16_t *)p); break;
		case NPU_TYPE_UINT32: fprintf(f, "%u", *(const uint32_t *)p); break;
		case NPU_TYPE_UINT64: fprintf(f, "%" PRIu64, *(const uint64_t *)p); break;
		default: fprintf(f, "0x%04x", *(const uint16_t *)p); break;	/* FP16 bits */
		}
	}
	fclose(f);
	o = json_pack("{s:s, s:s, s:s, s:s}", "name", t->name, "data", data ? data : "",
		      "shape", shape, "dtype", serve_dtype_name(t->dtype));
	if (o && (n > TRACE_MAX_ELEMENTS || t->dtype == NPU_TYPE_STRING))
		json_object_set_new(o, "truncated", json_true());
	free(data);
	return o;
}

static void add_ts(json_t *a, const char *name, uint64_t ns)
{
	if (ns)
		json_array_append_new(a, json_pack("{s:s, s:I}", "name", name, "ns", (json_int_t)ns));
}

static void trace_done(struct infer_request *req, void *arg)
{
	struct trace_ctx *c = arg;
	uint64_t end = serve_now_ns();
	json_t *ts = json_array(), *rec;
	struct sink *sk;
	size_t i;

	req->done = c->done;
	req->done_arg = c->done_arg;
	add_ts(ts, "REQUEST_START", req->t_arrive);
	add_ts(ts, "QUEUE_START", req->t_enqueue);
	add_ts(ts, "COMPUTE_START", req->t_compute_start);
	add_ts(ts, "COMPUTE_INPUT_END", req->t_input_end);
	add_ts(ts, "COMPUTE_OUTPUT_START", req->t_output_start);
	add_ts(ts, "COMPUTE_END", req->t_compute_end);
	add_ts(ts, "REQUEST_END", end);
	rec = json_pack("{s:I, s:s, s:I, s:s, s:o}", "id", (json_int_t)c->id,
			"model_name", req->model, "model_version", (json_int_t)req->version,
			"request_id", req->id, "timestamps", ts);
	if (rec && req->status)
		json_object_set_new(rec, "error", json_string(req->err));
	if (rec && !req->t_enqueue)
		json_object_set_new(rec, "cache_hit", json_true());
	if (rec && (c->level & LEVEL_TENSORS)) {
		json_t *ins = json_array(), *outs = json_array();

		for (i = 0; i < req->num_inputs; i++)
			json_array_append_new(ins, tensor_json(&req->inputs[i]));
		for (i = 0; !req->status && i < req->num_results; i++)
			json_array_append_new(outs, tensor_json(&req->results[i]));
		json_object_set_new(rec, "TENSOR_QUEUE_INPUT", ins);
		json_object_set_new(rec, "TENSOR_BACKEND_OUTPUT", outs);
	}
	pthread_mutex_lock(&trace_lock);
	sk = sink_of(c->file, 0);
	if (rec && sk) {
		struct settings e = effective(model_of(req->model, 0));

		if (sk->num >= TRACE_MAX_BUFFERED && !e.log_frequency) {
			sk->dropped++;	/* held for the exit: bounded */
			json_decref(rec);
		} else {
			if (!sk->traces)
				sk->traces = json_array();
			json_array_append_new(sk->traces, rec);
			sk->num++;
			if ((e.log_frequency && sk->num >= e.log_frequency) ||
			    sk->num >= TRACE_MAX_BUFFERED)
				flush(sk, 0);
		}
	} else {
		json_decref(rec);
	}
	pthread_mutex_unlock(&trace_lock);
	free(c);
	req->done(req, req->done_arg);
}

void trace_begin(struct infer_request *req)
{
	struct model_settings *m;
	struct settings *s;
	struct trace_ctx *c;
	struct settings e;

	if (!atomic_load(&any_on))
		return;
	pthread_mutex_lock(&trace_lock);
	m = model_of(req->model, 0);
	e = effective(m);
	/* The sampling counters belong to the settings in force. */
	s = m && m->s.set[S_LEVEL] ? &m->s : &global;
	if (!e.level || !e.file[0] || !e.count || s->seen++ % e.rate) {
		pthread_mutex_unlock(&trace_lock);
		return;
	}
	if (e.count > 0) {
		if (m && m->s.set[S_COUNT])
			m->s.count--;
		else
			global.count--;
	}
	pthread_mutex_unlock(&trace_lock);
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->done = req->done;
	c->done_arg = req->done_arg;
	c->id = atomic_fetch_add(&next_id, 1);
	c->level = e.level;
	snprintf(c->file, sizeof(c->file), "%s", e.file);
	req->done = trace_done;
	req->done_arg = c;
}

void trace_abandon(struct infer_request *req)
{
	struct trace_ctx *c;

	if (req->done != trace_done)
		return;
	c = req->done_arg;
	req->done = c->done;
	req->done_arg = c->done_arg;
	free(c);
}

void trace_shutdown(void)
{
	size_t i;

	pthread_mutex_lock(&trace_lock);
	for (i = 0; i < num_sinks; i++) {
		flush(&sinks[i], 1);
		if (sinks[i].dropped)
			serve_log(SERVE_LOG_WARN, "trace file '%s': %" PRIu64 " traces dropped (more than %d held: set log_frequency)",
				  sinks[i].file, sinks[i].dropped, TRACE_MAX_BUFFERED);
	}
	free(models);
	models = NULL;
	num_models = 0;
	pthread_mutex_unlock(&trace_lock);
}
