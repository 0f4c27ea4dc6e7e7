/* SPDX-License-Identifier: MIT */
/*
 * metrics: the statistics of every (model, version) and device, kept for
 * the life of the process (a reloaded version continues its series), read
 * by GET .../stats (Triton's statistics extension) and rendered in the
 * Prometheus text format for /metrics.
 */
#ifndef NPU_SERVE_METRICS_H
#define NPU_SERVE_METRICS_H

#include <jansson.h>
#include <pthread.h>

#include "serve.h"

#define METRICS_TIME_BUCKETS 16
#define METRICS_SIZE_BUCKETS 9
#define METRICS_MAX_BATCH_STATS 64

struct histogram {
	uint64_t counts[METRICS_TIME_BUCKETS + 1];	/* last: +Inf */
	uint64_t count;
	double sum;
};

struct duration_stat {
	uint64_t count, ns;
};

struct model_stats {
	char model[SERVE_NAME_MAX];
	int64_t version;
	pthread_mutex_t lock;
	struct duration_stat success, fail, queue, compute_input, compute_infer,
		compute_output;
	uint64_t inference_count;	/* batch elements */
	uint64_t execution_count;	/* batches run */
	uint64_t rejected_queue_full, rejected_timeout;
	uint64_t cancelled;		/* dropped from the queue: the client left */
	/* Host copies of whole tensors between the request and the response
	 * (stacking a batch, scattering outputs, the library's own). */
	uint64_t copies, copy_bytes;
	/* The response cache (response_cache.h): lookups that hit and missed,
	 * and the entries and bytes the version holds in it now. */
	struct duration_stat cache_hit, cache_miss;
	int64_t cache_entries, cache_bytes;
	uint64_t cache_evictions;
	uint64_t last_inference_ms;	/* Unix ms */
	int64_t pending;		/* queued now */
	int64_t executing;		/* taken by an instance, not answered */
	struct histogram h_request, h_queue, h_input, h_infer, h_output;
	struct histogram h_batch;	/* batch sizes */
	struct duration_stat batch_infer[METRICS_MAX_BATCH_STATS + 1];	/* [size] */
	/* Sequence models (sequence.c): live now, and since the start. */
	int64_t seq_active;
	uint64_t seq_started, seq_ended, seq_timed_out, seq_rejected;
	struct model_stats *next;
};

/* The series of (model, version), made on first use; never freed. */
struct model_stats *metrics_model(const char *model, int64_t version);

void metrics_pending(struct model_stats *s, int delta);
void metrics_executing(struct model_stats *s, int delta);
void metrics_rejected(struct model_stats *s, int timeout);
void metrics_cancelled(struct model_stats *s);
/* Host copies of tensors a batch made (see model_stats.copies). */
void metrics_copies(struct model_stats *s, uint64_t copies, uint64_t bytes);
/* Sequences: live ones more (or fewer), started, ended, timed out, requests refused. */
void metrics_sequence(struct model_stats *s, int active_delta, unsigned started, unsigned ended,
		      unsigned timed_out, unsigned rejected);
/* One request finished: queue and whole-request times. */
void metrics_request(struct model_stats *s, int success, uint64_t queue_ns,
		     uint64_t request_ns);
/* A response cache lookup: a hit, or a miss (lookup and insertion time). */
void metrics_cache(struct model_stats *s, int hit, uint64_t ns);
/* Entries and bytes the version holds in the cache changed; an eviction. */
void metrics_cache_usage(struct model_stats *s, int64_t entries, int64_t bytes, int evicted);
/* One batch ran: its size and compute phases. */
void metrics_batch(struct model_stats *s, int64_t batch, uint64_t input_ns,
		   uint64_t infer_ns, uint64_t output_ns);
/* A device was busy for 'ns' (and 'cycles' modeled NPU cycles). */
void metrics_device(const char *device, uint64_t ns, uint64_t cycles);
/*
 * A device's runs that failed there and ran again on another NPU of the
 * set ('failovers' more), and whether a model took it out of rotation.
 */
void metrics_device_health(const char *device, uint64_t failovers, int out_of_rotation);
/* Requests that failed before reaching a model (bad input, unknown model). */
void metrics_http_request(int status);

/* A limit the server enforced against a client (Documentation/serving.md, "Limits and hardening"). */
enum serve_limit {
	LIMIT_HTTP_HEADER_TIMEOUT,	/* headers not complete in time: closed */
	LIMIT_HTTP_BODY_TIMEOUT,	/* body not complete in time: closed */
	LIMIT_HTTP_BODY_BUDGET,		/* every body byte the server allows is held: 503 */
	LIMIT_GRPC_PREFACE_TIMEOUT,	/* no HTTP/2 preface or TLS handshake in time: closed */
	LIMIT_GRPC_IDLE_TIMEOUT,	/* no stream for too long: closed */
	LIMIT_GRPC_CONNECTIONS,		/* at a connection cap: closed or refused */
	LIMIT_GRPC_BODY_TIMEOUT,	/* a call's message not complete in time: reset */
	LIMIT_COUNT
};
void metrics_limit_hit(enum serve_limit which);

/* Call fn for every (model, version) series, in creation order (the panel's sampler). */
void metrics_foreach(void (*fn)(struct model_stats *s, void *arg), void *arg);

/* GET .../stats: model NULL for all; version -1 for every version. */
json_t *metrics_stats_json(const char *model, int64_t version);
/* The Prometheus text; free() it. */
char *metrics_render(size_t *len);

#endif /* NPU_SERVE_METRICS_H */
