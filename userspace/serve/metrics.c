// SPDX-License-Identifier: MIT
/* metrics: statistics and the Prometheus text format (see metrics.h). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "shm.h"
#include "sequence.h"

/* Seconds; the last bucket is +Inf. */
static const double time_bounds[METRICS_TIME_BUCKETS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
static const double size_bounds[METRICS_SIZE_BUCKETS] = {
	1, 2, 4, 8, 16, 32, 64, 128, 256,
};

struct device_stats {
	char name[SERVE_NAME_MAX];
	uint64_t busy_ns, cycles, runs;
	uint64_t failovers;
	int out_of_rotation;
	struct device_stats *next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct model_stats *models;
static struct device_stats *devices;
static uint64_t http_status_counts[6];	/* 2xx 4xx(400) 404 5xx(500) 501 503 */
static _Atomic uint64_t limit_hits[LIMIT_COUNT];
static const char *const limit_names[LIMIT_COUNT] = {
	[LIMIT_HTTP_HEADER_TIMEOUT] = "http_header_timeout",
	[LIMIT_HTTP_BODY_TIMEOUT] = "http_body_timeout",
	[LIMIT_HTTP_BODY_BUDGET] = "http_body_budget",
	[LIMIT_GRPC_PREFACE_TIMEOUT] = "grpc_preface_timeout",
	[LIMIT_GRPC_IDLE_TIMEOUT] = "grpc_idle_timeout",
	[LIMIT_GRPC_CONNECTIONS] = "grpc_connections",
	[LIMIT_GRPC_BODY_TIMEOUT] = "grpc_body_timeout",
};
static uint64_t start_ns;

struct model_stats *metrics_model(const char *model, int64_t version)
{
	struct model_stats *s, **tail;

	pthread_mutex_lock(&registry_lock);
	if (!start_ns)
		start_ns = serve_now_ns();
	for (tail = &models; (s = *tail); tail = &s->next)
		if (s->version == version && !strcmp(s->model, model))
			break;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (s) {
			snprintf(s->model, sizeof(s->model), "%s", model);
			s->version = version;
			pthread_mutex_init(&s->lock, NULL);
			__atomic_store_n(tail, s, __ATOMIC_RELEASE);	/* read unlocked by metrics_foreach */
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return s;
}

static void observe(struct histogram *h, const double *bounds, int n, double v)
{
	int i;

	for (i = 0; i < n && v > bounds[i]; i++)
		;
	h->counts[i]++;
	h->count++;
	h->sum += v;
}

void metrics_pending(struct model_stats *s, int delta)
{
	pthread_mutex_lock(&s->lock);
	s->pending += delta;
	pthread_mutex_unlock(&s->lock);
}

void metrics_executing(struct model_stats *s, int delta)
{
	pthread_mutex_lock(&s->lock);
	s->executing += delta;
	pthread_mutex_unlock(&s->lock);
}

void metrics_rejected(struct model_stats *s, int timeout)
{
	pthread_mutex_lock(&s->lock);
	if (timeout)
		s->rejected_timeout++;
	else
		s->rejected_queue_full++;
	pthread_mutex_unlock(&s->lock);
}

void metrics_sequence(struct model_stats *s, int active_delta, unsigned started, unsigned ended,
		      unsigned timed_out, unsigned rejected)
{
	pthread_mutex_lock(&s->lock);
	s->seq_active += active_delta;
	s->seq_started += started;
	s->seq_ended += ended;
	s->seq_timed_out += timed_out;
	s->seq_rejected += rejected;
	pthread_mutex_unlock(&s->lock);
}

void metrics_cancelled(struct model_stats *s)
{
	pthread_mutex_lock(&s->lock);
	s->cancelled++;
	pthread_mutex_unlock(&s->lock);
}

void metrics_request(struct model_stats *s, int success, uint64_t queue_ns,
		     uint64_t request_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&s->lock);
	if (success) {
		s->success.count++;
		s->success.ns += request_ns;
		s->queue.count++;
		s->queue.ns += queue_ns;
		observe(&s->h_queue, time_bounds, METRICS_TIME_BUCKETS, queue_ns / 1e9);
	} else {
		s->fail.count++;
		s->fail.ns += request_ns;
	}
	observe(&s->h_request, time_bounds, METRICS_TIME_BUCKETS, request_ns / 1e9);
	s->last_inference_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	pthread_mutex_unlock(&s->lock);
}

void metrics_batch(struct model_stats *s, int64_t batch, uint64_t input_ns,
		   uint64_t infer_ns, uint64_t output_ns)
{
	int64_t k = batch < METRICS_MAX_BATCH_STATS ? batch : METRICS_MAX_BATCH_STATS;

	pthread_mutex_lock(&s->lock);
	s->execution_count++;
	s->inference_count += (uint64_t)batch;
	/* Triton counts compute times once per request of the batch. */
	s->compute_input.count++;
	s->compute_input.ns += input_ns;
	s->compute_infer.count++;
	s->compute_infer.ns += infer_ns;
	s->compute_output.count++;
	s->compute_output.ns += output_ns;
	observe(&s->h_input, time_bounds, METRICS_TIME_BUCKETS, input_ns / 1e9);
	observe(&s->h_infer, time_bounds, METRICS_TIME_BUCKETS, infer_ns / 1e9);
	observe(&s->h_output, time_bounds, METRICS_TIME_BUCKETS, output_ns / 1e9);
	observe(&s->h_batch, size_bounds, METRICS_SIZE_BUCKETS, (double)batch);
	if (k > 0) {
		s->batch_infer[k].count++;
		s->batch_infer[k].ns += infer_ns;
	}
	pthread_mutex_unlock(&s->lock);
}

void metrics_copies(struct model_stats *s, uint64_t copies, uint64_t bytes)
{
	pthread_mutex_lock(&s->lock);
	s->copies += copies;
	s->copy_bytes += bytes;
	pthread_mutex_unlock(&s->lock);
}

/* The device's entry, made on first use; NULL when out of memory. Registry lock held. */
static struct device_stats *device_entry(const char *device)
{
	struct device_stats *d;

	for (d = devices; d; d = d->next)
		if (!strcmp(d->name, device))
			return d;
	d = calloc(1, sizeof(*d));
	if (d) {
		snprintf(d->name, sizeof(d->name), "%s", device);
		d->next = devices;
		devices = d;
	}
	return d;
}

void metrics_device(const char *device, uint64_t ns, uint64_t cycles)
{
	struct device_stats *d;

	pthread_mutex_lock(&registry_lock);
	d = device_entry(device);
	if (d) {
		d->busy_ns += ns;
		d->cycles += cycles;
		d->runs++;
	}
	pthread_mutex_unlock(&registry_lock);
}

void metrics_device_health(const char *device, uint64_t failovers, int out_of_rotation)
{
	struct device_stats *d;

	pthread_mutex_lock(&registry_lock);
	d = device_entry(device);
	if (d) {
		d->failovers += failovers;
		d->out_of_rotation |= out_of_rotation;
	}
	pthread_mutex_unlock(&registry_lock);
}

void metrics_http_request(int status)
{
	int k = status < 300 ? 0 : status == 404 ? 2 : status < 500 ? 1 :
		status == 501 ? 4 : status == 503 ? 5 : 3;

	pthread_mutex_lock(&registry_lock);
	http_status_counts[k]++;
	pthread_mutex_unlock(&registry_lock);
}

void metrics_limit_hit(enum serve_limit which)
{
	if ((unsigned int)which < LIMIT_COUNT)
		atomic_fetch_add(&limit_hits[which], 1);
}

void metrics_foreach(void (*fn)(struct model_stats *s, void *arg), void *arg)
{
	struct model_stats *s, *first;

	/* The list only grows at its tail and is never freed: walk it unlocked. */
	pthread_mutex_lock(&registry_lock);
	first = models;
	pthread_mutex_unlock(&registry_lock);
	for (s = first; s; s = __atomic_load_n(&s->next, __ATOMIC_ACQUIRE))
		fn(s, arg);
}

/* ---- Statistics extension (JSON) ----------------------------------------- */

void metrics_cache(struct model_stats *s, int hit, uint64_t ns)
{
	struct duration_stat *d = hit ? &s->cache_hit : &s->cache_miss;

	pthread_mutex_lock(&s->lock);
	d->count++;
	d->ns += ns;
	if (hit) {
		/* A hit is a successful request that never reached the model. */
		s->success.count++;
		s->success.ns += ns;
	}
	pthread_mutex_unlock(&s->lock);
}

void metrics_cache_usage(struct model_stats *s, int64_t entries, int64_t bytes, int evicted)
{
	pthread_mutex_lock(&s->lock);
	s->cache_entries += entries;
	s->cache_bytes += bytes;
	s->cache_evictions += evicted != 0;
	pthread_mutex_unlock(&s->lock);
}

static json_t *dur(const struct duration_stat *d)
{
	return json_pack("{s:I, s:I}", "count", (json_int_t)d->count, "ns", (json_int_t)d->ns);
}

json_t *metrics_stats_json(const char *model, int64_t version)
{
	json_t *arr = json_array();
	struct model_stats *s;

	pthread_mutex_lock(&registry_lock);
	for (s = models; s; s = s->next) {
		json_t *o, *batches, *seq;
		json_int_t seq_counts[5];
		char v[32];
		int k;

		if (model && strcmp(model, s->model))
			continue;
		if (version >= 0 && version != s->version)
			continue;
		snprintf(v, sizeof(v), "%" PRId64, s->version);
		pthread_mutex_lock(&s->lock);
		batches = json_array();
		for (k = 1; k <= METRICS_MAX_BATCH_STATS; k++) {
			struct duration_stat zero = { 0, 0 };

			if (!s->batch_infer[k].count)
				continue;
			json_array_append_new(batches, json_pack(
				"{s:i, s:o, s:o, s:o}", "batch_size", k,
				"compute_input", dur(&zero),
				"compute_infer", dur(&s->batch_infer[k]),
				"compute_output", dur(&zero)));
		}
		o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:{s:o, s:o, s:o, s:o, s:o, s:o},"
			      " s:o, s:{s:I, s:I}, s:I, s:I, s:I}",
			      "name", s->model, "version", v,
			      "last_inference", (json_int_t)s->last_inference_ms,
			      "inference_count", (json_int_t)s->inference_count,
			      "execution_count", (json_int_t)s->execution_count,
			      "inference_stats",
			      "success", dur(&s->success), "fail", dur(&s->fail),
			      "queue", dur(&s->queue), "compute_input", dur(&s->compute_input),
			      "compute_infer", dur(&s->compute_infer),
			      "compute_output", dur(&s->compute_output),
			      "batch_stats", batches,
			      "rejected", "queue_full", (json_int_t)s->rejected_queue_full,
			      "timeout", (json_int_t)s->rejected_timeout,
			      "cancelled", (json_int_t)s->cancelled,
			      "pending", (json_int_t)s->pending,
			      "executing", (json_int_t)s->executing);
		if (o) {
			/* Triton's InferStatistics cache_hit / cache_miss. */
			json_t *is = json_object_get(o, "inference_stats");

			json_object_set_new(is, "cache_hit", dur(&s->cache_hit));
			json_object_set_new(is, "cache_miss", dur(&s->cache_miss));
		}
		seq_counts[0] = (json_int_t)(s->seq_active > 0 ? s->seq_active : 0);
		seq_counts[1] = (json_int_t)s->seq_started;
		seq_counts[2] = (json_int_t)s->seq_ended;
		seq_counts[3] = (json_int_t)s->seq_timed_out;
		seq_counts[4] = (json_int_t)s->seq_rejected;
		pthread_mutex_unlock(&s->lock);
		/* A sequence model's counters and live correlation ids (outside s->lock). */
		seq = sequence_stats_json(s);
		if (!seq && (seq_counts[1] || seq_counts[4]))
			seq = json_object();
		if (seq) {
			json_object_set_new(seq, "active", json_integer(seq_counts[0]));
			json_object_set_new(seq, "started", json_integer(seq_counts[1]));
			json_object_set_new(seq, "ended", json_integer(seq_counts[2]));
			json_object_set_new(seq, "timed_out", json_integer(seq_counts[3]));
			json_object_set_new(seq, "rejected", json_integer(seq_counts[4]));
			if (o)
				json_object_set_new(o, "sequence_stats", seq);
			else
				json_decref(seq);
		}
		if (o)
			json_array_append_new(arr, o);
	}
	pthread_mutex_unlock(&registry_lock);
	return json_pack("{s:o}", "model_stats", arr);
}

/* ---- Prometheus text ------------------------------------------------------- */

/* A label value with \ " and newlines escaped. */
static void label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void labels(FILE *f, const struct model_stats *s)
{
	fputs("model=\"", f);
	label(f, s->model);
	fprintf(f, "\",version=\"%" PRId64 "\"", s->version);
}

static void help(FILE *f, const char *name, const char *type, const char *text)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

enum field { F_SUCCESS, F_FAIL, F_INFER_COUNT, F_EXEC_COUNT, F_REJ_FULL, F_REJ_TIMEOUT,
	     F_CANCELLED, F_PENDING, F_COPIES, F_COPY_BYTES, F_CACHE_HITS, F_CACHE_MISSES,
	     F_CACHE_ENTRIES, F_CACHE_BYTES, F_CACHE_EVICTIONS,
	     F_SEQ_ACTIVE, F_SEQ_STARTED, F_SEQ_ENDED, F_SEQ_TIMED_OUT, F_SEQ_REJECTED };

static uint64_t field(const struct model_stats *s, enum field f)
{
	switch (f) {
	case F_SUCCESS: return s->success.count;
	case F_FAIL: return s->fail.count;
	case F_INFER_COUNT: return s->inference_count;
	case F_EXEC_COUNT: return s->execution_count;
	case F_REJ_FULL: return s->rejected_queue_full;
	case F_REJ_TIMEOUT: return s->rejected_timeout;
	case F_CANCELLED: return s->cancelled;
	case F_PENDING: return (uint64_t)(s->pending > 0 ? s->pending : 0);
	case F_COPIES: return s->copies;
	case F_COPY_BYTES: return s->copy_bytes;
	case F_CACHE_HITS: return s->cache_hit.count;
	case F_CACHE_MISSES: return s->cache_miss.count;
	case F_CACHE_ENTRIES: return (uint64_t)(s->cache_entries > 0 ? s->cache_entries : 0);
	case F_CACHE_BYTES: return (uint64_t)(s->cache_bytes > 0 ? s->cache_bytes : 0);
	case F_CACHE_EVICTIONS: return s->cache_evictions;
	case F_SEQ_ACTIVE: return (uint64_t)(s->seq_active > 0 ? s->seq_active : 0);
	case F_SEQ_STARTED: return s->seq_started;
	case F_SEQ_ENDED: return s->seq_ended;
	case F_SEQ_TIMED_OUT: return s->seq_timed_out;
	case F_SEQ_REJECTED: return s->seq_rejected;
	}
	return 0;
}

static void model_series(FILE *f, const char *name, const char *type,
			 const char *text, enum field fld)
{
	struct model_stats *s;

	help(f, name, type, text);
	for (s = models; s; s = s->next) {
		fprintf(f, "%s{", name);
		labels(f, s);
		pthread_mutex_lock(&s->lock);
		fprintf(f, "} %" PRIu64 "\n", field(s, fld));
		pthread_mutex_unlock(&s->lock);
	}
}

static void histogram_series(FILE *f, const char *name, const char *text,
			     size_t offset, const double *bounds, int n)
{
	struct model_stats *s;
	int i;

	help(f, name, "histogram", text);
	for (s = models; s; s = s->next) {
		struct histogram h;
		uint64_t cum = 0;

		pthread_mutex_lock(&s->lock);
		h = *(const struct histogram *)((const char *)s + offset);
		pthread_mutex_unlock(&s->lock);
		for (i = 0; i <= n; i++) {
			cum += h.counts[i];
			fprintf(f, "%s_bucket{", name);
			labels(f, s);
			if (i < n)
				fprintf(f, ",le=\"%g\"} %" PRIu64 "\n", bounds[i], cum);
			else
				fprintf(f, ",le=\"+Inf\"} %" PRIu64 "\n", cum);
		}
		fprintf(f, "%s_sum{", name);
		labels(f, s);
		fprintf(f, "} %.9g\n%s_count{", h.sum, name);
		labels(f, s);
		fprintf(f, "} %" PRIu64 "\n", h.count);
	}
}

enum device_field {
	DEVICE_BUSY, DEVICE_UTILIZATION, DEVICE_CYCLES, DEVICE_FAILOVERS, DEVICE_OUT_OF_ROTATION,
};

/* One per-device series; the registry lock held. */
static void device_series(FILE *f, const char *name, const char *type, const char *text,
			  enum device_field which, double up)
{
	struct device_stats *d;

	help(f, name, type, text);
	for (d = devices; d; d = d->next) {
		fprintf(f, "%s{device=\"", name);
		label(f, d->name);
		fputs("\"} ", f);
		switch (which) {
		case DEVICE_BUSY:
			fprintf(f, "%.9g\n", d->busy_ns / 1e9);
			break;
		case DEVICE_UTILIZATION:
			fprintf(f, "%.6f\n", up > 0 ? d->busy_ns / 1e9 / up : 0.0);
			break;
		case DEVICE_CYCLES:
			fprintf(f, "%" PRIu64 "\n", d->cycles);
			break;
		case DEVICE_FAILOVERS:
			fprintf(f, "%" PRIu64 "\n", d->failovers);
			break;
		case DEVICE_OUT_OF_ROTATION:
			fprintf(f, "%d\n", d->out_of_rotation);
			break;
		}
	}
}

char *metrics_render(size_t *len)
{
	static const char *const status_names[] = { "2xx", "4xx", "404", "5xx", "501", "503" };
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	double up;
	int i;

	if (!f)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	if (!start_ns)
		start_ns = serve_now_ns();
	up = (serve_now_ns() - start_ns) / 1e9;
	model_series(f, "npu_serve_inference_request_success_total", "counter",
		     "Inference requests that succeeded.", F_SUCCESS);
	model_series(f, "npu_serve_inference_request_failure_total", "counter",
		     "Inference requests that failed after reaching the model (rejections included).",
		     F_FAIL);
	model_series(f, "npu_serve_inference_count_total", "counter",
		     "Inferences performed (a batch of N counts N).", F_INFER_COUNT);
	model_series(f, "npu_serve_inference_exec_count_total", "counter",
		     "Batches executed.", F_EXEC_COUNT);
	model_series(f, "npu_serve_queue_rejected_full_total", "counter",
		     "Requests rejected because the queue was full.", F_REJ_FULL);
	model_series(f, "npu_serve_queue_rejected_timeout_total", "counter",
		     "Requests rejected because their queue timeout expired.", F_REJ_TIMEOUT);
	model_series(f, "npu_serve_inference_request_cancelled_total", "counter",
		     "Queued requests dropped unrun because their client went away.", F_CANCELLED);
	model_series(f, "npu_serve_pending_requests", "gauge",
		     "Requests waiting in the scheduler queue.", F_PENDING);
	model_series(f, "npu_serve_tensor_copies_total", "counter",
		     "Host copies of whole tensors between requests and responses: batch stacking, output scattering, the library's (npu_io_stats).",
		     F_COPIES);
	model_series(f, "npu_serve_tensor_copy_bytes_total", "counter",
		     "Bytes of those copies.", F_COPY_BYTES);
	model_series(f, "npu_serve_cache_hits_total", "counter",
		     "Requests answered from the response cache (Triton's nv_cache_num_hits_per_model).",
		     F_CACHE_HITS);
	model_series(f, "npu_serve_cache_misses_total", "counter",
		     "Response cache lookups that missed (Triton's nv_cache_num_misses_per_model).",
		     F_CACHE_MISSES);
	model_series(f, "npu_serve_cache_entries", "gauge",
		     "Responses of the version held in the response cache.", F_CACHE_ENTRIES);
	model_series(f, "npu_serve_cache_bytes", "gauge",
		     "Bytes the version's responses take in the response cache (keys included).",
		     F_CACHE_BYTES);
	model_series(f, "npu_serve_cache_evictions_total", "counter",
		     "The version's responses evicted from the response cache to make room.",
		     F_CACHE_EVICTIONS);
	model_series(f, "npu_serve_sequences_active", "gauge",
		     "Live sequences of a sequence-batched model (correlation ids with state).",
		     F_SEQ_ACTIVE);
	model_series(f, "npu_serve_sequences_started_total", "counter",
		     "Sequences started (requests with sequence_start).", F_SEQ_STARTED);
	model_series(f, "npu_serve_sequences_ended_total", "counter",
		     "Sequences ended by a request with sequence_end.", F_SEQ_ENDED);
	model_series(f, "npu_serve_sequences_timed_out_total", "counter",
		     "Sequences freed after max_sequence_idle_microseconds without a request.",
		     F_SEQ_TIMED_OUT);
	model_series(f, "npu_serve_sequence_requests_rejected_total", "counter",
		     "Sequence requests refused: no or unknown correlation id, a START for a live one, the sequence or state bound.",
		     F_SEQ_REJECTED);
	histogram_series(f, "npu_serve_request_duration_seconds",
			 "Whole request time, from arrival to the response.",
			 offsetof(struct model_stats, h_request), time_bounds, METRICS_TIME_BUCKETS);
	histogram_series(f, "npu_serve_queue_duration_seconds",
			 "Time requests waited in the queue.",
			 offsetof(struct model_stats, h_queue), time_bounds, METRICS_TIME_BUCKETS);
	histogram_series(f, "npu_serve_compute_input_duration_seconds",
			 "Time to gather a batch's inputs.",
			 offsetof(struct model_stats, h_input), time_bounds, METRICS_TIME_BUCKETS);
	histogram_series(f, "npu_serve_compute_infer_duration_seconds",
			 "Time the model ran for a batch.",
			 offsetof(struct model_stats, h_infer), time_bounds, METRICS_TIME_BUCKETS);
	histogram_series(f, "npu_serve_compute_output_duration_seconds",
			 "Time to scatter a batch's outputs.",
			 offsetof(struct model_stats, h_output), time_bounds, METRICS_TIME_BUCKETS);
	histogram_series(f, "npu_serve_batch_size", "Requests (batch elements) per executed batch.",
			 offsetof(struct model_stats, h_batch), size_bounds, METRICS_SIZE_BUCKETS);
	device_series(f, "npu_serve_device_busy_seconds_total", "counter",
		      "Time the device spent running batches.", DEVICE_BUSY, up);
	device_series(f, "npu_serve_device_utilization_ratio", "gauge",
		      "Busy time of the device over the server's uptime (instances add up).",
		      DEVICE_UTILIZATION, up);
	device_series(f, "npu_serve_device_cycles_total", "counter",
		      "Modeled NPU cycles of the device's batches (0 on the CPU).", DEVICE_CYCLES, up);
	device_series(f, "npu_serve_device_failovers_total", "counter",
		      "Runs that failed on the device as a device fails and ran again on another NPU of the set.",
		      DEVICE_FAILOVERS, up);
	device_series(f, "npu_serve_device_out_of_rotation", "gauge",
		      "1 once a model took the device out of rotation (a run failed there and succeeded on another NPU).",
		      DEVICE_OUT_OF_ROTATION, up);
	help(f, "npu_serve_http_responses_total", "counter",
	     "HTTP responses by status class.");
	for (i = 0; i < 6; i++)
		fprintf(f, "npu_serve_http_responses_total{status=\"%s\"} %" PRIu64 "\n",
			status_names[i], http_status_counts[i]);
	help(f, "npu_serve_limit_hits_total", "counter",
	     "Connections closed and requests refused by a hardening limit.");
	for (i = 0; i < LIMIT_COUNT; i++)
		fprintf(f, "npu_serve_limit_hits_total{limit=\"%s\"} %" PRIu64 "\n",
			limit_names[i], atomic_load(&limit_hits[i]));
	shm_metrics(f);
	help(f, "npu_serve_uptime_seconds", "gauge", "Seconds since the server started.");
	fprintf(f, "npu_serve_uptime_seconds %.3f\n", up);
	pthread_mutex_unlock(&registry_lock);
	if (fclose(f))
		return NULL;
	*len = size;
	return buf;
}
