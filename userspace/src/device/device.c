// SPDX-License-Identifier: MIT
/*
 * device.c - the backend-independent half of the device layer: opening,
 * buffers and their reference counts, job objects, dependencies (sim),
 * waiting, and the completion queue of asynchronous jobs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "device/device_internal.h"
#include "npu_sim.h"

uint64_t npu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void npu_device_options_init(struct npu_device_options *opts)
{
	memset(opts, 0, sizeof(*opts));
}

/* Decimal digits [lo, hi] from s up to 'end'; false if anything else. */
static bool parse_count(const char *s, const char *end, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t n = 0;

	if (s == end)
		return false;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return false;
		n = n * 10 + (uint64_t)(*s - '0');
		if (n > hi)
			return false;
	}
	*out = n;
	return n >= lo;
}

npu_status npu_device_options_parse(struct npu_device_options *opts,
				    const char *spec)
{
	if (!opts || !spec)
		return NPU_ERR_INVALID_ARG;
	if (!strcmp(spec, "sim")) {
		opts->backend = NPU_BACKEND_SIM;
	} else if (!strncmp(spec, "sim:threads=", 12)) {
		/* decimal digits only, 1 .. UINT32_MAX; npu_device_open checks the range */
		uint64_t n;

		if (!parse_count(spec + 12, spec + strlen(spec), 1, UINT32_MAX, &n))
			return NPU_ERR_INVALID_ARG;
		opts->backend = NPU_BACKEND_SIM;
		opts->sim_threads = (uint32_t)n;
		opts->flags |= NPU_DEVICE_SIM_THREADS;
	} else if (!strcmp(spec, "accel")) {
		opts->backend = NPU_BACKEND_ACCEL;
	} else if (!strcmp(spec, "auto")) {
		opts->backend = NPU_BACKEND_AUTO;
	} else if (spec[0] == '/') {
		opts->backend = NPU_BACKEND_ACCEL;
		opts->path = spec;
	} else {
		return NPU_ERR_INVALID_ARG;
	}
	return NPU_OK;
}

static npu_status open_fail(char *errmsg, size_t errmsg_size, npu_status st,
			    const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static npu_status open_fail(char *errmsg, size_t errmsg_size, npu_status st,
			    const char *fmt, ...)
{
	va_list ap;

	if (errmsg && errmsg_size) {
		va_start(ap, fmt);
		vsnprintf(errmsg, errmsg_size, fmt, ap);
		va_end(ap);
	}
	return st;
}


/* "sim", "sim:N", "sim:threads=T", "sim:N:threads=T". */
static npu_status resolve_sim(const char *spec, struct npu_device_spec_entry *entries,
			      size_t max, size_t *count, char *errmsg, size_t errmsg_size)
{
	const char *p = spec + 3, *colon;
	uint64_t n = 1, first = 0, threads = 0;
	size_t i;

	if (*p == '#') {	/* one of them, by index: a name resolve gave */
		colon = strchr(p + 1, ':');
		if (!colon)
			colon = p + strlen(p);
		if (!parse_count(p + 1, colon, 0, NPU_DEVICE_SET_MAX - 1, &first))
			return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
					 "device '%s': sim#K takes an index 0..%d",
					 spec, NPU_DEVICE_SET_MAX - 1);
		p = colon;
	} else if (*p == ':' && p[1] >= '0' && p[1] <= '9') {
		colon = strchr(p + 1, ':');
		if (!colon)
			colon = p + strlen(p);
		if (!parse_count(p + 1, colon, 1, NPU_DEVICE_SET_MAX, &n))
			return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
					 "device '%s': the simulated NPU count must be 1..%d",
					 spec, NPU_DEVICE_SET_MAX);
		p = colon;
	}
	if (!strncmp(p, ":threads=", 9)) {
		if (!parse_count(p + 9, p + strlen(p), 1, UINT32_MAX, &threads))
			return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
					 "device '%s': threads= takes a count of host threads, 1 or more",
					 spec);
		p += strlen(p);
	}
	if (*p)
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "device '%s': expected sim, sim:N, sim#K, sim:threads=T or sim:N:threads=T",
				 spec);
	*count = (size_t)n;
	for (i = 0; i < n && i < max; i++) {
		struct npu_device_spec_entry *e = &entries[i];
		char index[24] = "";

		memset(e, 0, sizeof(*e));
		npu_device_options_init(&e->options);
		e->options.backend = NPU_BACKEND_SIM;
		if (first + i)
			snprintf(index, sizeof(index), "#%zu", (size_t)first + i);
		if (threads) {
			e->options.sim_threads = (uint32_t)threads;
			e->options.flags |= NPU_DEVICE_SIM_THREADS;
			snprintf(e->name, sizeof(e->name), "sim%s:threads=%u", index,
				 (unsigned int)threads);
		} else {
			snprintf(e->name, sizeof(e->name), "sim%s", index);
		}
	}
	return NPU_OK;
}

static npu_status add_accel(const char *spec, const char *path, struct npu_device_spec_entry *entries,
			    size_t max, size_t *count, char *errmsg, size_t errmsg_size)
{
	size_t i;

	if (strlen(path) >= NPU_DEVICE_PATH_MAX)
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "device '%s': the path is longer than %d bytes", spec,
				 NPU_DEVICE_PATH_MAX - 1);
	for (i = 0; i < *count && i < max; i++)
		if (!strcmp(entries[i].name, path))
			return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
					 "device '%s': %s is named twice", spec, path);
	if (*count >= NPU_DEVICE_SET_MAX)
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "device '%s': more than %d devices", spec, NPU_DEVICE_SET_MAX);
	if (*count < max) {
		struct npu_device_spec_entry *e = &entries[*count];

		memset(e, 0, sizeof(*e));
		npu_device_options_init(&e->options);
		e->options.backend = NPU_BACKEND_ACCEL;
		snprintf(e->name, sizeof(e->name), "%s", path);
	}
	(*count)++;
	return NPU_OK;
}

/* One item of an accel list: "accel", "accel:K", "accel:*" or a path. */
static npu_status resolve_accel_item(const char *spec, const char *item, size_t len,
				     struct npu_device_spec_entry *entries, size_t max,
				     size_t *count, char *errmsg, size_t errmsg_size)
{
	char nodes[NPU_DEVICE_SET_MAX][NPU_DEVICE_PATH_MAX], path[NPU_DEVICE_PATH_MAX];
	size_t found, i;
	uint64_t k = 0;
	npu_status st;

	if (len >= sizeof(path))
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "device '%s': '%.*s...' is too long", spec, 32, item);
	memcpy(path, item, len);
	path[len] = '\0';
	if (path[0] == '/')
		return add_accel(spec, path, entries, max, count, errmsg, errmsg_size);
	found = npu_device_list_accel(nodes, NPU_DEVICE_SET_MAX);
	if (found > NPU_DEVICE_SET_MAX)
		found = NPU_DEVICE_SET_MAX;
	if (!strcmp(path, "accel:*")) {
		if (!found)
			return open_fail(errmsg, errmsg_size, NPU_ERR_NOT_FOUND,
					 "device '%s': no /dev/accel/accel* node is driven by \"npu\" (is the npu module loaded? use sim for the simulator)",
					 spec);
		for (i = 0, st = NPU_OK; i < found && !st; i++)
			st = add_accel(spec, nodes[i], entries, max, count, errmsg, errmsg_size);
		return st;
	}
	if (strcmp(path, "accel") &&
	    (strncmp(path, "accel:", 6) || !parse_count(path + 6, path + len, 0, 1000, &k)))
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "device '%s': '%s' is not a device (sim, sim:N, accel, accel:K, accel:* or /dev/accel/accelN)",
				 spec, path);
	if (k >= found)
		return open_fail(errmsg, errmsg_size, NPU_ERR_NOT_FOUND,
				 "device '%s': there is no npu accel device %llu (%zu found%s)",
				 spec, (unsigned long long)k, found,
				 found ? "" : "; is the npu module loaded? use sim for the simulator");
	return add_accel(spec, nodes[k], entries, max, count, errmsg, errmsg_size);
}

NPU_API npu_status npu_device_spec_resolve(const char *spec, struct npu_device_spec_entry *entries,
					   size_t max, size_t *count, char *errmsg,
					   size_t errmsg_size)
{
	const char *item;
	npu_status st;

	if (errmsg && errmsg_size)
		errmsg[0] = '\0';
	if (!spec || !count || (max && !entries))
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "npu_device_spec_resolve: NULL argument");
	*count = 0;
	if (!strncmp(spec, "sim", 3) && (!spec[3] || spec[3] == ':' || spec[3] == '#'))
		return resolve_sim(spec, entries, max, count, errmsg, errmsg_size);
	/* The list's form first: a typo is reported before a missing device. */
	if (!*spec || spec[0] == ',' || spec[strlen(spec) - 1] == ',' || strstr(spec, ",,"))
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "device '%s': an empty name in the list", spec);
	for (item = spec;; ) {
		const char *end = strchr(item, ',');
		size_t len = end ? (size_t)(end - item) : strlen(item);

		st = resolve_accel_item(spec, item, len, entries, max, count, errmsg, errmsg_size);
		if (st)
			return st;
		if (!end)
			break;
		item = end + 1;
	}
	return NPU_OK;
}

const char *npu_backend_name(enum npu_backend backend)
{
	switch (backend) {
	case NPU_BACKEND_AUTO: return "auto";
	case NPU_BACKEND_SIM: return "sim";
	case NPU_BACKEND_ACCEL: return "accel";
	}
	return "unknown";
}

const char *npu_job_status_str(uint32_t device_status)
{
	const char *n = npu_job_status_name(device_status);

	return n ? n : "UNKNOWN";
}

/*
 * The message of a thread's last failed call, with the device it was on:
 * a device is used from many threads, and a message another thread is
 * rewriting must never be what a caller reads.
 */
static _Thread_local struct {
	const struct npu_device *dev;
	struct npu_error err;
} last_failure;

npu_status npu_dev_error(struct npu_device *dev, npu_status status,
			 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	npu_error_vset(&last_failure.err, status, fmt, ap);
	va_end(ap);
	last_failure.dev = dev;
	return status;
}

void npu_dev_error_prefix(struct npu_device *dev, const char *fmt, ...)
{
	char prefix[256];
	va_list ap;

	if (last_failure.dev != dev)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	npu_error_prefix(&last_failure.err, "%s", prefix);
}

const char *npu_device_last_error(const struct npu_device *dev)
{
	if (!dev)
		return "no device";
	return last_failure.dev == dev ? npu_error_msg(&last_failure.err) : "";
}


/* Resolve backend + path from the options, else by auto-detection. */
static npu_status pick_backend(const struct npu_device_options *o,
			       enum npu_backend *backend, char *path,
			       size_t path_size, char *errmsg, size_t errmsg_size)
{
	enum npu_backend b = o->backend;

	path[0] = '\0';
	if (o->path) {
		snprintf(path, path_size, "%s", o->path);
		if (b == NPU_BACKEND_AUTO)
			b = NPU_BACKEND_ACCEL;
	}
	if (b == NPU_BACKEND_AUTO)
		b = npu_accel_find_node(path, path_size) ? NPU_BACKEND_ACCEL :
							   NPU_BACKEND_SIM;
	if (b == NPU_BACKEND_ACCEL && !path[0] &&
	    !npu_accel_find_node(path, path_size))
		return open_fail(errmsg, errmsg_size, NPU_ERR_NOT_FOUND,
				 "npu_device_open: no NPU accel device: no /dev/accel/accel* node is driven by \"npu\" (is the npu module loaded? use --device sim for the simulator)");
	if (b != NPU_BACKEND_SIM && b != NPU_BACKEND_ACCEL)
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "npu_device_open: unknown backend %d", (int)b);
	*backend = b;
	return NPU_OK;
}

npu_status npu_device_open(const struct npu_device_options *opts,
			   struct npu_device **out, char *errmsg,
			   size_t errmsg_size)
{
	struct npu_device_options defaults;
	pthread_condattr_t ca;
	struct npu_device *dev;
	char path[256];
	const char *trace;
	npu_status st;

	if (!out)
		return open_fail(errmsg, errmsg_size, NPU_ERR_INVALID_ARG,
				 "npu_device_open: out is NULL");
	*out = NULL;
	if (!opts) {
		npu_device_options_init(&defaults);
		opts = &defaults;
	}
	if (errmsg && errmsg_size)
		errmsg[0] = '\0';
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return open_fail(errmsg, errmsg_size, NPU_ERR_NO_MEMORY,
				 "npu_device_open: out of memory");
	st = pick_backend(opts, &dev->backend, path, sizeof(path), errmsg,
			  errmsg_size);
	if (st) {
		free(dev);
		return st;
	}
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->trace_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dev->cond, &ca);
	pthread_condattr_destroy(&ca);
	dev->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	dev->ops = dev->backend == NPU_BACKEND_SIM ? &npu_sim_backend_ops :
						     &npu_accel_backend_ops;
	dev->info.backend = dev->backend;
	if (dev->event_fd < 0) {
		st = npu_dev_error(dev, NPU_ERR_IO, "eventfd: %s", strerror(errno));
	} else {
		st = dev->ops->open(dev, opts, path);
	}
	if (st) {
		open_fail(errmsg, errmsg_size, st, "npu_device_open: %s",
			  npu_device_last_error(dev));
		if (dev->ops->release)
			dev->ops->release(dev);
		free(dev->be);
		if (dev->event_fd >= 0)
			close(dev->event_fd);
		pthread_cond_destroy(&dev->cond);
		pthread_mutex_destroy(&dev->lock);
		pthread_mutex_destroy(&dev->trace_lock);
		free(dev);
		return st;
	}
	trace = opts->trace_file;
	if (trace && *trace)
		npu_trace_open(dev, trace);
	*out = dev;
	return NPU_OK;
}

static void job_free(struct npu_job *job)
{
	free(job->bufs);
	free(job->deps);
	free(job->accel_submit);
	free(job);
}

/* Drop one job reference; dev->lock held. Returns true if freed. */
static bool job_put_locked(struct npu_device *dev, struct npu_job *job)
{
	if (--job->refs)
		return false;
	if (job->prev)
		job->prev->next = job->next;
	else
		dev->jobs = job->next;
	if (job->next)
		job->next->prev = job->prev;
	if (dev->ops->job_release)
		dev->ops->job_release(dev, job);
	job_free(job);
	return true;
}

static void buffer_put_locked(struct npu_device *dev, struct npu_buffer *buf)
{
	if (--buf->refs)
		return;
	if (buf->prev)
		buf->prev->next = buf->next;
	else
		dev->buffers = buf->next;
	if (buf->next)
		buf->next->prev = buf->prev;
	dev->mem_bytes -= buf->size;
	dev->ops->buffer_free(dev, buf);
	free(buf);
}

NPU_API void npu_device_memory(struct npu_device *dev, uint64_t *in_use, uint64_t *peak)
{
	uint64_t now = 0, most = 0;

	if (dev) {
		pthread_mutex_lock(&dev->lock);
		now = dev->mem_bytes;
		most = dev->mem_peak;
		pthread_mutex_unlock(&dev->lock);
	}
	if (in_use)
		*in_use = now;
	if (peak)
		*peak = most;
}

void npu_device_close(struct npu_device *dev)
{
	uint64_t give_up = npu_now_ns() + 60ull * 1000000000ull;
	struct npu_job *job;

	if (!dev)
		return;
	/* Let everything queued finish (the backend aborts what cannot). */
	pthread_mutex_lock(&dev->lock);
	while (dev->inflight && !dev->ops->wait && npu_now_ns() < give_up) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&dev->cond, &dev->lock, &ts);
	}
	pthread_mutex_unlock(&dev->lock);
	dev->ops->close(dev);	/* completes (aborts) anything left */
	pthread_mutex_lock(&dev->lock);
	/* Free jobs the user never released and every buffer left. */
	while ((job = dev->jobs)) {
		job->refs = 1;
		job_put_locked(dev, job);
	}
	while (dev->buffers) {
		dev->buffers->refs = 1;
		buffer_put_locked(dev, dev->buffers);
	}
	pthread_mutex_unlock(&dev->lock);
	if (dev->ops->release)
		dev->ops->release(dev);
	npu_trace_close(dev);
	close(dev->event_fd);
	pthread_cond_destroy(&dev->cond);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->trace_lock);
	free(dev->be);
	free(dev);
}

npu_status npu_device_get_info(struct npu_device *dev,
			       struct npu_device_info *info)
{
	if (!dev || !info)
		return NPU_ERR_INVALID_ARG;
	*info = dev->info;
	return NPU_OK;
}

/* ---- Buffers ---- */

npu_status npu_buffer_alloc(struct npu_device *dev, uint64_t size,
			    uint32_t flags, struct npu_buffer **out)
{
	struct npu_buffer *buf;
	npu_status st;

	if (!dev || !out)
		return NPU_ERR_INVALID_ARG;
	*out = NULL;
	if (!size)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_buffer_alloc: size is 0");
	if (flags & ~NPU_BUFFER_DEVICE_READ_ONLY)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_buffer_alloc: unknown flags 0x%x",
				     flags & ~NPU_BUFFER_DEVICE_READ_ONLY);
	if (size > (1ull << NPU_VA_BITS))
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_buffer_alloc: size %" PRIu64 " exceeds the %d-bit device VA space",
				     size, NPU_VA_BITS);
	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY,
				     "npu_buffer_alloc: out of memory");
	buf->dev = dev;
	buf->size = (size + NPU_PAGE_SIZE - 1) & ~(NPU_PAGE_SIZE - 1);
	buf->flags = flags;
	buf->refs = 1;
	st = dev->ops->buffer_alloc(dev, buf);
	if (st) {
		npu_dev_error_prefix(dev, "npu_buffer_alloc(%" PRIu64 " bytes)", size);
		free(buf);
		return st;
	}
	pthread_mutex_lock(&dev->lock);
	buf->next = dev->buffers;
	if (dev->buffers)
		dev->buffers->prev = buf;
	dev->buffers = buf;
	dev->mem_bytes += buf->size;
	if (dev->mem_bytes > dev->mem_peak)
		dev->mem_peak = dev->mem_bytes;
	pthread_mutex_unlock(&dev->lock);
	*out = buf;
	return NPU_OK;
}

void npu_buffer_free(struct npu_buffer *buf)
{
	struct npu_device *dev;

	if (!buf)
		return;
	dev = buf->dev;
	pthread_mutex_lock(&dev->lock);
	if (!buf->user_freed) {
		buf->user_freed = true;
		buffer_put_locked(dev, buf);
	}
	pthread_mutex_unlock(&dev->lock);
}

npu_status npu_buffer_map(struct npu_buffer *buf, void **ptr)
{
	if (!buf || !ptr)
		return NPU_ERR_INVALID_ARG;
	*ptr = buf->cpu;
	return NPU_OK;
}

uint64_t npu_buffer_va(const struct npu_buffer *buf)
{
	return buf ? buf->va : 0;
}

uint64_t npu_buffer_size(const struct npu_buffer *buf)
{
	return buf ? buf->size : 0;
}

struct npu_device *npu_buffer_device(const struct npu_buffer *buf)
{
	return buf ? buf->dev : NULL;
}

npu_status npu_buffer_export_dmabuf(struct npu_buffer *buf, int *fd)
{
	if (!buf || !fd)
		return NPU_ERR_INVALID_ARG;
	if (!buf->dev->ops->buffer_export)
		return npu_dev_error(buf->dev, NPU_ERR_UNSUPPORTED,
				     "npu_buffer_export_dmabuf: the %s backend has no dma-bufs (use the accel backend)",
				     buf->dev->ops->name);
	return buf->dev->ops->buffer_export(buf->dev, buf, fd);
}

npu_status npu_buffer_import_dmabuf(struct npu_device *dev, int fd,
				    struct npu_buffer **out)
{
	struct npu_buffer *buf;
	npu_status st;

	if (!dev || !out)
		return NPU_ERR_INVALID_ARG;
	*out = NULL;
	if (!dev->ops->buffer_import)
		return npu_dev_error(dev, NPU_ERR_UNSUPPORTED,
				     "npu_buffer_import_dmabuf: the %s backend has no dma-bufs (use the accel backend)",
				     dev->ops->name);
	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY,
				     "npu_buffer_import_dmabuf: out of memory");
	buf->dev = dev;
	buf->refs = 1;
	st = dev->ops->buffer_import(dev, fd, buf);
	if (st) {
		free(buf);
		return st;
	}
	pthread_mutex_lock(&dev->lock);
	buf->next = dev->buffers;
	if (dev->buffers)
		dev->buffers->prev = buf;
	dev->buffers = buf;
	dev->mem_bytes += buf->size;
	if (dev->mem_bytes > dev->mem_peak)
		dev->mem_peak = dev->mem_bytes;
	pthread_mutex_unlock(&dev->lock);
	*out = buf;
	return NPU_OK;
}

/* ---- Jobs ---- */

static void job_set_failure_msg(struct npu_job *job)
{
	const struct npu_job_result *r = &job->result;

	if (r->device_status == NPU_JOB_OK)
		return;
	if (job->err.status != NPU_OK)
		return;	/* the backend already said why */
	if (r->device_status == NPU_JOB_ERR_MMU_UNMAPPED ||
	    r->device_status == NPU_JOB_ERR_MMU_PERM ||
	    r->device_status == NPU_JOB_ERR_DMA)
		npu_error_set(&job->err, NPU_ERR_JOB_FAILED,
			      "job %" PRIu64 " on queue %u failed: %s at command offset %u, fault address 0x%" PRIx64,
			      r->job_id, r->queue,
			      npu_job_status_str(r->device_status),
			      r->error_offset, r->fault_addr);
	else
		npu_error_set(&job->err, NPU_ERR_JOB_FAILED,
			      "job %" PRIu64 " on queue %u failed: %s at command offset %u",
			      r->job_id, r->queue,
			      npu_job_status_str(r->device_status),
			      r->error_offset);
}

static npu_status job_status(const struct npu_job *job)
{
	return job->result.device_status == NPU_JOB_OK ? NPU_OK :
							 NPU_ERR_JOB_FAILED;
}

static void eventfd_signal(struct npu_device *dev)
{
	uint64_t one = 1;

	if (write(dev->event_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already huge, it is readable anyway */
	}
}

static void eventfd_drain(struct npu_device *dev)
{
	uint64_t v;

	if (read(dev->event_fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
}

void npu_dev_job_complete_locked(struct npu_device *dev, struct npu_job *job)
{
	unsigned int i;

	if (job->state == NPU_JOBST_DONE)
		return;
	job->state = NPU_JOBST_DONE;
	job->result.host_complete_ns = npu_now_ns();
	job_set_failure_msg(job);
	dev->inflight--;
	for (i = 0; i < job->num_bufs; i++)
		buffer_put_locked(dev, job->bufs[i]);
	job->num_bufs = 0;
	if (job->async && !job->user_released) {
		job->cq_next = NULL;
		if (dev->cq_tail)
			dev->cq_tail->cq_next = job;
		else
			dev->cq_head = job;
		dev->cq_tail = job;
		job->refs++;	/* the queue's reference, dropped by reap */
		eventfd_signal(dev);
	}
	npu_trace_job(dev, job);
	pthread_cond_broadcast(&dev->cond);
	job_put_locked(dev, job);	/* the in-flight reference */
}

/* Pending (sim) jobs whose dependencies are all done: run or abort them. */
static void kick_pending(struct npu_device *dev)
{
	for (;;) {
		struct npu_job *job, **pp;
		bool failed = false;
		unsigned int i;

		pthread_mutex_lock(&dev->lock);
		for (pp = &dev->pending; (job = *pp); pp = &job->pend_next) {
			bool ready = true;

			for (i = 0; i < job->num_deps; i++)
				if (job->deps[i]->state != NPU_JOBST_DONE)
					ready = false;
			if (ready)
				break;
		}
		if (!job) {
			pthread_mutex_unlock(&dev->lock);
			return;
		}
		*pp = job->pend_next;
		for (i = 0; i < job->num_deps; i++) {
			if (job->deps[i]->result.device_status != NPU_JOB_OK)
				failed = true;
			job_put_locked(dev, job->deps[i]);
		}
		job->num_deps = 0;
		job->state = NPU_JOBST_QUEUED;
		if (failed) {
			job->result.device_status = NPU_JOB_ERR_ABORTED;
			npu_error_set(&job->err, NPU_ERR_JOB_FAILED,
				      "job on queue %u not run: a job it depends on failed",
				      job->queue);
			npu_dev_job_complete_locked(dev, job);
			pthread_mutex_unlock(&dev->lock);
			continue;
		}
		job->refs++;	/* keep it while the backend takes it */
		pthread_mutex_unlock(&dev->lock);
		if (dev->ops->submit(dev, job, NULL)) {
			pthread_mutex_lock(&dev->lock);
			job->result.device_status = NPU_JOB_ERR_ABORTED;
			npu_error_set(&job->err, NPU_ERR_DEVICE, "%s",
				      npu_device_last_error(dev));
			npu_dev_job_complete_locked(dev, job);
			pthread_mutex_unlock(&dev->lock);
		}
		pthread_mutex_lock(&dev->lock);
		job_put_locked(dev, job);
		pthread_mutex_unlock(&dev->lock);
	}
}

void npu_dev_job_complete(struct npu_device *dev, struct npu_job *job)
{
	bool have_pending;

	pthread_mutex_lock(&dev->lock);
	npu_dev_job_complete_locked(dev, job);
	have_pending = dev->pending != NULL;
	pthread_mutex_unlock(&dev->lock);
	if (have_pending)
		kick_pending(dev);
}

static npu_status check_submit(struct npu_device *dev, const struct npu_submit *s)
{
	unsigned int i;

	if (!s)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: submit description is NULL");
	if (!s->cmd)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: no command buffer");
	if (s->cmd->dev != dev)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: command buffer belongs to another device");
	if (s->cmd->user_freed)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: command buffer was freed");
	if (s->cmd_offset > s->cmd->size ||
	    s->cmd_size > s->cmd->size - s->cmd_offset)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: command offset %" PRIu64 " + size %" PRIu64 " exceeds BO size %" PRIu64,
				     s->cmd_offset, s->cmd_size, s->cmd->size);
	if (s->cmd_offset % NPU_CS_ALIGN)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: command offset %" PRIu64 " is not %d-byte aligned",
				     s->cmd_offset, NPU_CS_ALIGN);
	if (!s->cmd_size || s->cmd_size % NPU_CS_ALIGN ||
	    s->cmd_size > NPU_CS_MAX_SIZE)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: command size %" PRIu64 " is not a non-zero multiple of %d up to %u",
				     s->cmd_size, NPU_CS_ALIGN, NPU_CS_MAX_SIZE);
	if (s->queue >= dev->info.num_queues)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: queue %u does not exist (the device has %u)",
				     s->queue, dev->info.num_queues);
	if (s->num_buffers && !s->buffers)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: %u buffers but no buffer list",
				     s->num_buffers);
	for (i = 0; i < s->num_buffers; i++) {
		const struct npu_buffer_use *u = &s->buffers[i];

		if (!u->buffer || u->buffer->dev != dev)
			return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
					     "npu_submit: buffer %u is %s", i,
					     u->buffer ? "from another device" : "NULL");
		if (u->buffer->user_freed)
			return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
					     "npu_submit: buffer %u (VA 0x%" PRIx64 ") was freed",
					     i, u->buffer->va);
		if (u->access != NPU_ACCESS_READ_ONLY &&
		    u->access != NPU_ACCESS_READ_WRITE)
			return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
					     "npu_submit: buffer %u access %u is not NPU_ACCESS_READ_ONLY or NPU_ACCESS_READ_WRITE",
					     i, u->access);
	}
	if (s->num_buffers > 1024)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: %u buffers, at most 1024",
				     s->num_buffers);
	if (s->num_deps > 64)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: %u dependencies, at most 64",
				     s->num_deps);
	if (s->num_deps && !s->deps)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "npu_submit: %u dependencies but no list",
				     s->num_deps);
	for (i = 0; i < s->num_deps; i++)
		if (!s->deps[i] || s->deps[i]->dev != dev ||
		    s->deps[i]->user_released)
			return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
					     "npu_submit: dependency %u is not a live job of this device",
					     i);
	return NPU_OK;
}

static npu_status submit_common(struct npu_device *dev,
				const struct npu_submit *s, bool async,
				struct npu_job **out)
{
	struct npu_job *job;
	unsigned int i, pending = 0;
	npu_status st;

	if (!dev || !out)
		return NPU_ERR_INVALID_ARG;
	*out = NULL;
	st = check_submit(dev, s);
	if (st)
		return st;
	job = calloc(1, sizeof(*job));
	if (!job)
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY, "npu_submit: out of memory");
	job->bufs = calloc(s->num_buffers + 1, sizeof(*job->bufs));
	job->deps = s->num_deps ? calloc(s->num_deps, sizeof(*job->deps)) : NULL;
	if (!job->bufs || (s->num_deps && !job->deps)) {
		job_free(job);
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY, "npu_submit: out of memory");
	}
	job->dev = dev;
	job->async = async;
	job->user_data = s->user_data;
	job->queue = s->queue;
	job->cmd_va = s->cmd->va + s->cmd_offset;
	job->cmd_size = (uint32_t)s->cmd_size;
	job->result.queue = s->queue;
	job->result.context = dev->info.context_id;
	job->refs = 2;		/* the caller's handle + in flight */
	job->state = NPU_JOBST_QUEUED;

	pthread_mutex_lock(&dev->lock);
	job->bufs[job->num_bufs++] = s->cmd;
	s->cmd->refs++;
	for (i = 0; i < s->num_buffers; i++) {
		job->bufs[job->num_bufs++] = s->buffers[i].buffer;
		s->buffers[i].buffer->refs++;
	}
	job->next = dev->jobs;
	if (dev->jobs)
		dev->jobs->prev = job;
	dev->jobs = job;
	dev->inflight++;
	if (async)
		dev->inflight_async++;
	job->result.host_submit_ns = npu_now_ns();
	/* sim resolves dependencies here; accel hands them to the kernel */
	if (!dev->ops->wait) {
		for (i = 0; i < s->num_deps; i++) {
			if (s->deps[i]->state == NPU_JOBST_DONE &&
			    s->deps[i]->result.device_status == NPU_JOB_OK)
				continue;
			s->deps[i]->refs++;
			job->deps[job->num_deps++] = s->deps[i];
			pending++;
		}
		if (pending) {
			job->state = NPU_JOBST_PENDING;
			struct npu_job **pp = &dev->pending;

			while (*pp)	/* FIFO: jobs become ready in order */
				pp = &(*pp)->pend_next;
			job->pend_next = NULL;
			*pp = job;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	*out = job;
	if (pending) {
		/* a dependency may have completed meanwhile */
		kick_pending(dev);
		return NPU_OK;
	}
	st = dev->ops->submit(dev, job, s);
	if (st) {
		npu_dev_error_prefix(dev, "npu_submit");
		pthread_mutex_lock(&dev->lock);
		if (async)
			dev->inflight_async--;
		job->async = false;	/* no completion event for a refused job */
		job->result.device_status = NPU_JOB_ERR_ABORTED;
		npu_error_set(&job->err, st, "%s", npu_device_last_error(dev));
		npu_dev_job_complete_locked(dev, job);
		job->user_released = true;
		job_put_locked(dev, job);
		pthread_mutex_unlock(&dev->lock);
		*out = NULL;
		return st;
	}
	return NPU_OK;
}

npu_status npu_job_submit(struct npu_device *dev, const struct npu_submit *s,
			  struct npu_job **out)
{
	return submit_common(dev, s, false, out);
}

npu_status npu_job_submit_async(struct npu_device *dev,
				const struct npu_submit *s, struct npu_job **out)
{
	return submit_common(dev, s, true, out);
}

npu_status npu_job_wait(struct npu_job *job, uint64_t timeout_ns)
{
	struct npu_device *dev;
	uint64_t deadline;
	npu_status st = NPU_OK;

	if (!job)
		return NPU_ERR_INVALID_ARG;
	dev = job->dev;
	if (dev->ops->wait && job->state != NPU_JOBST_DONE) {
		st = dev->ops->wait(dev, job, timeout_ns);
		if (st)
			return st;
	}
	deadline = timeout_ns > UINT64_MAX - npu_now_ns() ? UINT64_MAX :
							   npu_now_ns() + timeout_ns;
	pthread_mutex_lock(&dev->lock);
	while (job->state != NPU_JOBST_DONE) {
		struct timespec ts;
		int rc;

		if (!timeout_ns) {
			st = NPU_ERR_TIMEOUT;
			break;
		}
		if (deadline == UINT64_MAX) {
			rc = pthread_cond_wait(&dev->cond, &dev->lock);
		} else {
			ts.tv_sec = (time_t)(deadline / 1000000000ull);
			ts.tv_nsec = (long)(deadline % 1000000000ull);
			rc = pthread_cond_timedwait(&dev->cond, &dev->lock, &ts);
		}
		if (rc == ETIMEDOUT && job->state != NPU_JOBST_DONE) {
			st = NPU_ERR_TIMEOUT;
			break;
		}
	}
	if (st == NPU_ERR_TIMEOUT)
		npu_error_set(&job->err, NPU_ERR_TIMEOUT,
			      "npu_job_wait: job on queue %u still running after %" PRIu64 " ns",
			      job->queue, timeout_ns);
	else
		st = job_status(job);
	pthread_mutex_unlock(&dev->lock);
	return st;
}

bool npu_job_done(struct npu_job *job)
{
	bool done;

	if (!job)
		return false;
	pthread_mutex_lock(&job->dev->lock);
	done = job->state == NPU_JOBST_DONE;
	pthread_mutex_unlock(&job->dev->lock);
	/* accel learns of completions only when asked: poll the syncobj. */
	if (!done && job->dev->ops->wait && !job->async) {
		struct npu_error saved = job->err;

		done = job->dev->ops->wait(job->dev, job, 0) == NPU_OK;
		if (!done)
			job->err = saved;	/* "still running" is no error */
	}
	return done;
}

npu_status npu_job_get_result(const struct npu_job *job,
			      struct npu_job_result *result)
{
	npu_status st = NPU_OK;

	if (!job || !result)
		return NPU_ERR_INVALID_ARG;
	pthread_mutex_lock(&job->dev->lock);
	if (job->state != NPU_JOBST_DONE)
		st = NPU_ERR_BUSY;
	else
		*result = job->result;
	pthread_mutex_unlock(&job->dev->lock);
	return st;
}

const char *npu_job_last_error(const struct npu_job *job)
{
	return job ? npu_error_msg(&job->err) : "no job";
}

uint64_t npu_job_user_data(const struct npu_job *job)
{
	return job ? job->user_data : 0;
}

void npu_job_release(struct npu_job *job)
{
	struct npu_device *dev;
	struct npu_job **pp;

	if (!job)
		return;
	dev = job->dev;
	pthread_mutex_lock(&dev->lock);
	if (job->user_released) {
		pthread_mutex_unlock(&dev->lock);
		return;
	}
	job->user_released = true;
	/* An unreaped completion event of this job is dropped with it. */
	for (pp = &dev->cq_head; *pp; pp = &(*pp)->cq_next) {
		if (*pp == job) {
			struct npu_job *prev = NULL, *j;

			*pp = job->cq_next;
			for (j = dev->cq_head; j; j = j->cq_next)
				prev = j;
			dev->cq_tail = prev;
			dev->inflight_async--;
			/* The queue's ref: never the last (the caller's is held). */
			if (job_put_locked(dev, job)) {
				pthread_mutex_unlock(&dev->lock);
				return;
			}
			break;
		}
	}
	if (job->async && job->state != NPU_JOBST_DONE)
		dev->inflight_async--;
	job_put_locked(dev, job);
	pthread_mutex_unlock(&dev->lock);
}

npu_status npu_job_run(struct npu_device *dev, const struct npu_submit *s,
		       struct npu_job_result *result)
{
	struct npu_job *job;
	npu_status st;

	st = npu_job_submit(dev, s, &job);
	if (st)
		return st;
	st = npu_job_wait(job, UINT64_MAX);
	if (result)
		npu_job_get_result(job, result);
	if (st)
		npu_dev_error(dev, st, "%s", npu_job_last_error(job));
	npu_job_release(job);
	return st;
}

/* ---- Completion queue ---- */

npu_status npu_device_reap(struct npu_device *dev,
			   struct npu_completion_event *events,
			   unsigned int max, unsigned int *count,
			   uint64_t timeout_ns)
{
	uint64_t deadline;
	unsigned int n = 0;

	if (!dev || !count || (max && !events))
		return NPU_ERR_INVALID_ARG;
	*count = 0;
	if (!max)
		return NPU_OK;
	deadline = timeout_ns > UINT64_MAX - npu_now_ns() ? UINT64_MAX :
							   npu_now_ns() + timeout_ns;
	for (;;) {
		uint64_t now;

		if (dev->ops->reap)
			dev->ops->reap(dev, 0);	/* pump what has arrived */
		pthread_mutex_lock(&dev->lock);
		eventfd_drain(dev);
		while (n < max && dev->cq_head) {
			struct npu_job *job = dev->cq_head;

			dev->cq_head = job->cq_next;
			if (!dev->cq_head)
				dev->cq_tail = NULL;
			events[n].job = job;
			events[n].user_data = job->user_data;
			events[n].status = job_status(job);
			events[n].device_status = job->result.device_status;
			dev->inflight_async--;
			job_put_locked(dev, job);	/* the queue's ref */
			n++;
		}
		if (dev->cq_head)
			eventfd_signal(dev);	/* more left: stay readable */
		if (n) {
			pthread_mutex_unlock(&dev->lock);
			*count = n;
			return NPU_OK;
		}
		now = npu_now_ns();
		if (!timeout_ns || now >= deadline) {
			pthread_mutex_unlock(&dev->lock);
			return NPU_ERR_TIMEOUT;
		}
		if (!dev->inflight_async) {
			pthread_mutex_unlock(&dev->lock);
			return npu_dev_error(dev, NPU_ERR_TIMEOUT,
					     "npu_device_reap: no asynchronous job in flight");
		}
		if (dev->ops->reap) {
			pthread_mutex_unlock(&dev->lock);
			dev->ops->reap(dev, deadline - now);
		} else {
			struct timespec ts;

			if (deadline == UINT64_MAX) {
				pthread_cond_wait(&dev->cond, &dev->lock);
			} else {
				ts.tv_sec = (time_t)(deadline / 1000000000ull);
				ts.tv_nsec = (long)(deadline % 1000000000ull);
				pthread_cond_timedwait(&dev->cond, &dev->lock, &ts);
			}
			pthread_mutex_unlock(&dev->lock);
		}
	}
}

int npu_device_poll_fd(struct npu_device *dev)
{
	if (!dev)
		return -1;
	return dev->event_fd;
}

unsigned int npu_device_inflight(struct npu_device *dev)
{
	unsigned int n;

	pthread_mutex_lock(&dev->lock);
	n = dev->inflight_async;
	pthread_mutex_unlock(&dev->lock);
	return n;
}
