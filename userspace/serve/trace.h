/* SPDX-License-Identifier: MIT */
/*
 * trace: Triton's trace extension. Settings (trace_level OFF, TIMESTAMPS,
 * TENSORS; trace_rate, trace_count, log_frequency, trace_file) for the
 * server and per model, read and changed by GET/POST
 * /v2[/models/M]/trace/setting and the TraceSetting RPC (management
 * calls). A sampled request's trace is Triton's JSON: its timestamps
 * REQUEST_START, QUEUE_START, COMPUTE_START, COMPUTE_INPUT_END,
 * COMPUTE_OUTPUT_START, COMPUTE_END, REQUEST_END (CLOCK_MONOTONIC ns) and
 * at TENSORS its inputs and outputs (the first TRACE_MAX_ELEMENTS values
 * of each). Traces are written only under the operator's --trace-dir, to
 * a trace_file that is a plain name there (opened O_NOFOLLOW, mode 0600):
 * ${trace_file}.${i} every log_frequency traces, or ${trace_file} at exit
 * when log_frequency is 0. Without --trace-dir tracing cannot be turned on.
 */
#ifndef NPU_SERVE_TRACE_H
#define NPU_SERVE_TRACE_H

#include <jansson.h>

#include "batcher.h"

#define TRACE_MAX_ELEMENTS 1024		/* values of a tensor in a TENSORS trace */
#define TRACE_MAX_BUFFERED 10000	/* traces held for one file before it is written */
#define TRACE_MAX_MODELS 1024		/* models with their own settings */
#define TRACE_MAX_FILES 64

/* --trace-dir DIR: opened once; 0 or -1 with err. */
int trace_dir_arg(const char *dir, char *err);
/* The settings of a model (NULL: the server's) as Triton's JSON. */
json_t *trace_settings_json(const char *model);
/*
 * POST: update from a JSON object of settings (null: a model's setting
 * falls back to the server's). SERVE_OK and the new settings in *out, or
 * SERVE_INVALID naming the setting.
 */
int trace_settings_update(const char *model, const json_t *settings, json_t **out, char *err);

/* A decoded request: sample it; a sampled one records its trace when done (chains req->done). */
void trace_begin(struct infer_request *req);
/* A request that was not queued after all: undo trace_begin. */
void trace_abandon(struct infer_request *req);
/*
 * A file a client names for the server to write (trace_file, log_file):
 * one plain name under the operator's directory (dir_given), no '/', no
 * '..', not hidden. SERVE_OK or SERVE_INVALID naming 'what'.
 */
int trace_file_name_ok(const char *name, char *err, const char *what, int dir_given);
/* At exit: write what is held. */
void trace_shutdown(void);

#endif /* NPU_SERVE_TRACE_H */
