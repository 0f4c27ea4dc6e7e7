// SPDX-License-Identifier: MIT
/*
 * npu_engine.c - the engine (devices opened once, the shared CPU thread
 * pool, logging), the library's version, per-thread error messages and
 * the struct_size rules of the option and statistics structs.
 */
#include "runtime/npu_api.h"
#include "common/npu_struct_size.h"
#include "runtime/npu_ep.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/kernels/cpu_kernels.h"
#include "graph/npu_op_schema.h"

#define NPU_STR_(x) #x
#define NPU_STR(x) NPU_STR_(x)

NPU_API const char *npu_version(void)
{
	return NPU_STR(NPU_API_VERSION_MAJOR) "." NPU_STR(NPU_API_VERSION_MINOR) "."
	       NPU_STR(NPU_API_VERSION_PATCH);
}

NPU_API int npu_api_version(void)
{
	return NPU_API_VERSION;
}

/* ---- Per-thread errors ---- */

static _Thread_local struct npu_error last_error;

NPU_API const char *npu_last_error(void)
{
	return last_error.msg;
}

npu_status npu_api_fail(npu_status status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	npu_error_vset(&last_error, status, fmt, ap);
	va_end(ap);
	return status;
}

NPU_API npu_status npu_last_error_set(npu_status status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	npu_error_vset(&last_error, status, fmt ? fmt : "", ap);
	va_end(ap);
	return status;
}

npu_status npu_api_fail_err(const struct npu_error *err)
{
	npu_status st = err->status ? err->status : NPU_ERR_INTERNAL;

	return npu_api_fail(st, "%s", err->msg[0] ? err->msg : npu_status_str(st));
}

npu_status npu_api_copy_options(void *dst, size_t size, const void *src,
				const char *what)
{
	size_t given, byte = 0;

	switch (npu_struct_copy_in(dst, size, src, &given, &byte)) {
	case NPU_STRUCT_UNSIZED:
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: struct_size is %zu: initialise the struct with %s_init()",
				    what, given, what);
	case NPU_STRUCT_NEWER:
		return npu_api_fail(NPU_ERR_UNSUPPORTED,
				    "%s: struct_size %zu is larger than this library's %zu and byte %zu is set: the application was built against a newer libnpu-user (%s here)",
				    what, given, size, byte, npu_version());
	case NPU_STRUCT_FITS:
		break;
	}
	return NPU_OK;
}

npu_status npu_api_copy_stats(void *dst, const void *src, size_t size,
			      const char *what)
{
	size_t given;

	if (npu_struct_copy_out(dst, src, size, &given) == NPU_STRUCT_UNSIZED)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: struct_size is %zu: initialise the struct with %s_init()",
				    what, given, what);
	return NPU_OK;
}

/* ---- Engine ---- */

NPU_API void npu_engine_options_init_sized(struct npu_engine_options *o, size_t size)
{
	struct npu_engine_options d = { .struct_size = size, .log_level = NPU_LOG_WARNING };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

void npu_engine_log(const struct npu_engine *e, enum npu_log_level level,
		    const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char msg[1024];
	va_list ap;

	if (level > e->opts.log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (e->opts.log)
		e->opts.log(e->opts.log_arg, level, msg);
	else
		fprintf(stderr, "libnpu-user %s: %s\n", names[level], msg);
}

/* The numeric engine options within their ranges; the first one outside is named. */
static npu_status check_ranges(const struct npu_engine_options *o)
{
	if (o->threads < 0 || o->threads > 1024)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_options: threads %d is out of range", o->threads);
	if (o->log_level < NPU_LOG_ERROR || o->log_level > NPU_LOG_DEBUG)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_options: log_level %d is out of range", (int)o->log_level);
	if (o->async_threads < 0 || o->async_threads > 1024)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_options: async_threads %d is out of range (0 to 1024)",
				    o->async_threads);
	if (o->async_queue > (size_t)1 << 20)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_options: async_queue %zu is out of range (at most 1048576)",
				    o->async_queue);
	return NPU_OK;
}

NPU_API npu_status npu_engine_create(const struct npu_engine_options *opts,
				     struct npu_engine **out)
{
	struct npu_engine *e;
	npu_status st;

	if (!out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_engine_create: out is NULL");
	*out = NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "npu_engine_create: out of memory");
	npu_engine_options_init(&e->opts);
	if (opts) {
		st = npu_api_copy_options(&e->opts, sizeof(e->opts), opts, "npu_engine_options");
		if (st) {
			free(e);
			return st;
		}
	}
	st = check_ranges(&e->opts);
	if (st) {
		free(e);
		return st;
	}
	/* The one environment variable the library reads (npu_model.h). */
	if (!e->opts.trace_file)
		e->opts.trace_file = getenv("NPU_TRACE_FILE");
	if (e->opts.trace_file && *e->opts.trace_file) {
		e->opts.trace_file = strdup(e->opts.trace_file);
		if (!e->opts.trace_file) {
			free(e);
			return npu_api_fail(NPU_ERR_NO_MEMORY, "npu_engine_create: out of memory");
		}
	} else {
		e->opts.trace_file = NULL;
	}
	if (e->opts.cpu_isa) {	/* the caller's string: applied now, not kept */
		int r = npu_cpu_kernels_cap_isa(e->opts.cpu_isa);

		if (r) {
			st = npu_api_fail(r == -EINVAL ? NPU_ERR_INVALID_ARG : NPU_ERR_BUSY,
					  r == -EINVAL ?
					  "npu_engine_options.cpu_isa '%s': expected portable, avx2 or avx512" :
					  "npu_engine_options.cpu_isa '%s': this process already runs the %s kernels (the path is chosen once per process)",
					  e->opts.cpu_isa, npu_cpu_kernels_isa());
			free((char *)e->opts.trace_file);
			free(e);
			return st;
		}
		e->opts.cpu_isa = NULL;
	}
	e->threads = e->opts.threads;
	if (e->threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		e->threads = n > 0 ? (int)n : 1;
	}
	/* One thread too: the pool keeps the kernels' scratch across runs. */
	e->pool = npu_threadpool_create_stats(e->threads, e->opts.pool_stats != 0);
	if (!e->pool) {
		st = npu_api_fail(NPU_ERR_NO_MEMORY,
				  "npu_engine_create: cannot start %d threads", e->threads);
		free((char *)e->opts.trace_file);
		free(e);
		return st;
	}
	e->ops = npu_op_registry_create();
	if (!e->ops) {
		npu_threadpool_destroy(e->pool);
		free((char *)e->opts.trace_file);
		free(e);
		return npu_api_fail(NPU_ERR_NO_MEMORY, "npu_engine_create: out of memory");
	}
	pthread_mutex_init(&e->lock, NULL);
	atomic_init(&e->refs, 1);
	*out = e;
	return NPU_OK;
}

void npu_engine_ref(struct npu_engine *e)
{
	atomic_fetch_add(&e->refs, 1);
}

void npu_engine_unref(struct npu_engine *e)
{
	size_t i;

	if (!e || atomic_fetch_sub(&e->refs, 1) != 1)
		return;
	/* No run is queued: each holds a session, hence a model of this engine. */
	npu_async_shutdown(e->async);
	for (i = 0; i < e->num_devs; i++) {
		if (e->devs[i].owned)
			npu_device_close(e->devs[i].dev);
		free(e->devs[i].name);
	}
	npu_threadpool_destroy(e->pool);
	npu_op_registry_destroy(e->ops);
	npu_custom_ops_free(e);
	npu_providers_free(e);
	free((char *)e->opts.trace_file);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

NPU_API void npu_engine_destroy(struct npu_engine *e)
{
	npu_engine_unref(e);
}

NPU_API int npu_engine_threads(const struct npu_engine *e)
{
	return e ? e->threads : 0;
}

static struct npu_engine_device *find_device(struct npu_engine *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->num_devs; i++)
		if (!strcmp(e->devs[i].name, name))
			return &e->devs[i];
	return NULL;
}

static npu_status add_device(struct npu_engine *e, const char *name,
			     struct npu_device *dev, bool owned)
{
	struct npu_engine_device *d;

	if (e->num_devs == sizeof(e->devs) / sizeof(e->devs[0]))
		return npu_api_fail(NPU_ERR_BUSY, "engine: at most %zu devices",
				    sizeof(e->devs) / sizeof(e->devs[0]));
	d = &e->devs[e->num_devs];
	d->name = strdup(name);
	if (!d->name)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "engine: out of memory");
	d->dev = dev;
	d->owned = owned;
	e->num_devs++;
	return NPU_OK;
}

npu_status npu_engine_open_devices(struct npu_engine *e, const char *spec,
				   struct npu_device **devs, const char **names, size_t max,
				   size_t *count)
{
	struct npu_device_spec_entry entries[NPU_DEVICE_SET_MAX];
	struct npu_engine_device *d;
	char msg[512];
	size_t n, i;
	npu_status st;

	*count = 0;
	if (!spec || !strcmp(spec, "auto") || !strcmp(spec, "cpu"))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "unknown NPU device '%s' (sim, sim:N, accel, accel:K, accel:* or /dev/accel/accelN)",
				    spec ? spec : "(null)");
	pthread_mutex_lock(&e->lock);
	d = find_device(e, spec);
	if (d) {
		pthread_mutex_unlock(&e->lock);
		if (max) {
			devs[0] = d->dev;
			if (names)
				names[0] = d->name;
		}
		*count = 1;
		return NPU_OK;
	}
	pthread_mutex_unlock(&e->lock);
	st = npu_device_spec_resolve(spec, entries, NPU_DEVICE_SET_MAX, &n, msg, sizeof(msg));
	if (st)
		return npu_api_fail(st, "%s", msg);
	if (n > max)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "device '%s' names %zu devices; %zu fit here",
				    spec, n, max);
	pthread_mutex_lock(&e->lock);
	for (i = 0; i < n && !st; i++) {
		struct npu_device_options *o = &entries[i].options;
		struct npu_device *dev;

		d = find_device(e, entries[i].name);
		if (d) {
			devs[i] = d->dev;
			if (names)
				names[i] = d->name;
			continue;
		}
		if (o->backend == NPU_BACKEND_ACCEL)
			o->path = entries[i].name;
		o->trace_file = e->opts.trace_file;	/* the engine's, for its devices */
		st = npu_device_open(o, &dev, msg, sizeof(msg));
		if (st) {
			st = npu_api_fail(st, "device '%s': %s", entries[i].name, msg);
			break;
		}
		st = add_device(e, entries[i].name, dev, true);
		if (st) {
			npu_device_close(dev);
			break;
		}
		devs[i] = dev;
		if (names)
			names[i] = e->devs[e->num_devs - 1].name;
		npu_engine_log(e, NPU_LOG_INFO, "opened device '%s'", entries[i].name);
	}
	pthread_mutex_unlock(&e->lock);
	if (!st)
		*count = n;
	return st;
}

NPU_API npu_status npu_engine_get_devices(struct npu_engine *e, const char *spec,
					  struct npu_device **devs, size_t max, size_t *count)
{
	if (count)
		*count = 0;
	if (!e || !count || (max && !devs))
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_engine_get_devices: NULL argument");
	return npu_engine_open_devices(e, spec, devs, NULL, max, count);
}

NPU_API npu_status npu_engine_get_device(struct npu_engine *e, const char *name,
					 struct npu_device **out)
{
	struct npu_device *devs[NPU_DEVICE_SET_MAX];
	size_t n;
	npu_status st;

	if (!e || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_engine_get_device: NULL argument");
	*out = NULL;
	st = npu_engine_open_devices(e, name, devs, NULL, NPU_DEVICE_SET_MAX, &n);
	if (st)
		return st;
	if (n != 1)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "device '%s' names %zu devices: npu_engine_get_device takes one (npu_engine_get_devices takes a set)",
				    name, n);
	*out = devs[0];
	return NPU_OK;
}

NPU_API npu_status npu_engine_attach_device(struct npu_engine *e, const char *name,
					    struct npu_device *dev)
{
	struct npu_device_spec_entry entry;
	char msg[256];
	size_t n = 0;
	npu_status st;

	if (!e || !dev || !name)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_engine_attach_device: NULL argument");
	/* One device's name; an accel name need not exist on this machine. */
	st = npu_device_spec_resolve(name, &entry, 1, &n, msg, sizeof(msg));
	if ((st && st != NPU_ERR_NOT_FOUND) || (!st && n != 1) || !strcmp(name, "cpu") ||
	    !strcmp(name, "auto"))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_attach_device: '%s' does not name one device (sim, sim#K, accel, accel:K or /dev/accel/accelN)",
				    name);
	pthread_mutex_lock(&e->lock);
	if (find_device(e, name) || (!st && find_device(e, entry.name)))
		st = npu_api_fail(NPU_ERR_BUSY,
				  "npu_engine_attach_device: the engine has a device '%s' already",
				  name);
	else
		st = add_device(e, !st ? entry.name : name, dev, false);
	pthread_mutex_unlock(&e->lock);
	return st;
}
