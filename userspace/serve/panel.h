/* SPDX-License-Identifier: MIT */
/*
 * panel: what the web panel (GET /, userspace/serve/panel/) shows, kept in
 * the server: a ring of per-second samples of every (model, version)
 * (throughput, latency percentiles of that second, queue depth, failures,
 * rejections) and of every device (busy time, modeled NPU time, jobs in
 * flight, memory), and the timeline of a recent request (queue, input
 * copy, each NPU segment, the CPU ops between them, output), also as a
 * Chrome / Perfetto trace. The batcher reports into it; a sampler thread
 * closes a sample every second; GET /v2/panel/state and /v2/panel/trace
 * read it. Thread-safe: one lock.
 */
#ifndef NPU_SERVE_PANEL_H
#define NPU_SERVE_PANEL_H

#include <jansson.h>

#include "batcher.h"

#define PANEL_SAMPLES 180	/* seconds of history */

/* Batcher hooks. */
void panel_request_done(struct model_stats *s, uint64_t request_ns);
void panel_device_begin(const char *device);
void panel_device_end(const char *device, struct npu_session *session, uint64_t wall_ns);
/*
 * 1 when the next batch of this model should measure its run's steps
 * (npu_run_options.timings): the last timeline kept is older than a fifth
 * of a second, so measuring costs nothing on most runs.
 */
int panel_timeline_due(struct model_stats *s);
/*
 * A batch finished: keep its first request's timeline if it is due; the
 * run's part comes from the session's measured steps (a run that did not
 * measure them is not kept).
 */
void panel_batch_timeline(struct model_stats *s, const char *device,
			  struct npu_session *session, const struct infer_request *r,
			  int64_t batch, size_t requests, uint64_t t_start, uint64_t t_input,
			  uint64_t t_infer, uint64_t t_output);

/* The sampler thread (once per second). */
int panel_start(void);
void panel_stop(void);

/* GET /v2/panel/state without "models" (the caller adds the repository index). */
json_t *panel_state_json(void);
/* The latest timeline of 'model' (NULL: of any) as a Chrome trace; NULL if none. */
json_t *panel_trace_json(const char *model);

/* The assets of the panel, embedded at build time (panel_assets.c). */
struct panel_asset {
	const char *path;	/* "index.html", "panel.js", "panel.css" */
	const char *content_type;
	const unsigned char *data;
	size_t len;
};

extern const struct panel_asset panel_assets[];
extern const size_t panel_num_assets;

#endif /* NPU_SERVE_PANEL_H */
