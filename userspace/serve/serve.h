/* SPDX-License-Identifier: MIT */
/*
 * npu-serve: what every unit of the server shares. The server is a program
 * on top of the public API (<npu/npu.h>); one file per concern:
 *   pbtxt.c         protobuf text format (config.pbtxt) parser
 *   model_config.c  the ModelConfig subset, from pbtxt, JSON or the model
 *   repository.c    the model repository: versions, load, swap, unload, poll
 *   batcher.c       the dynamic batcher and the instances (sessions)
 *   backend.c       models run by a backend library of C steps
 *                   (<npu/npu_serve_backend.h>) instead of the engine
 *   ensemble.c      ensemble_scheduling: steps run through their models' batchers
 *   sequence.c      the sequence batcher's config, live sequences and state
 *   infer_codec.c   inference requests and responses (JSON + binary)
 *   bytes.c         BYTES tensors: Triton's serialized form, the engine's strings
 *   shm.c           the system shared-memory extension's regions
 *   metrics.c       statistics and the Prometheus text format
 *   http.c          the HTTP/REST front end (libmicrohttpd)
 *   grpc.c          the gRPC front end (nghttp2 + protobuf-c)
 *   response_cache.c  Triton's response cache (LRU by bytes, XXH3 keys)
 *   rate_limiter.c  Triton's rate limiter: resources shared by instances
 *   trace.c         Triton's trace extension: settings, sampling, trace files
 *   logging.c       serve_log() and Triton's logging extension
 *   serve_main.c    flags, signals, start and drain
 */
#ifndef NPU_SERVE_H
#define NPU_SERVE_H

#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>

#include <npu/npu.h>

#define SERVE_NAME_MAX 128
#define SERVE_MAX_IO 16
#define SERVE_ERR_MAX 512

/* Error categories, valued as the HTTP status Triton maps them to. */
enum serve_status {
	SERVE_OK = 0,
	SERVE_INVALID = 400,
	SERVE_NOT_FOUND = 404,
	SERVE_INTERNAL = 500,
	SERVE_UNSUPPORTED = 501,
	SERVE_UNAVAILABLE = 503,
};

enum serve_log_level { SERVE_LOG_ERROR, SERVE_LOG_WARN, SERVE_LOG_INFO, SERVE_LOG_DEBUG };

extern int serve_verbose;	/* log level printed (default SERVE_LOG_INFO) */
void serve_log(enum serve_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* snprintf into an error buffer of SERVE_ERR_MAX; returns 'status'. */
int serve_err(char *err, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The TLS versions and suites HTTPS and gRPC-TLS accept (GnuTLS priority
 * syntax): TLS 1.2 and 1.3 only, as RFC 7540 section 9.2 requires of h2.
 */
#define SERVE_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE"

uint64_t serve_now_ns(void);	/* CLOCK_MONOTONIC */

/* Triton datatype names ("FP32") and config names ("TYPE_FP32"). */
const char *serve_dtype_name(enum npu_data_type t);
enum npu_data_type serve_dtype_parse(const char *name);	/* "FP32" */
const char *serve_config_dtype_name(enum npu_data_type t);	/* "TYPE_FP32" */
enum npu_data_type serve_config_dtype_parse(const char *name);

#endif /* NPU_SERVE_H */
