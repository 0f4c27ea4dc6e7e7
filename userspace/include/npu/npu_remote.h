/* SPDX-License-Identifier: MIT */
/*
 * npu_remote.h - split computing: the first layers of a model run here
 * (the head, an ordinary npu_model on any device), the rest on a server
 * (the tail, a model of an `npu serve` or any KServe v2 / Triton server
 * with the binary tensor extension). `npu split` cuts a model in two.
 *
 *	struct npu_remote_options ro;
 *	struct npu_remote *r;
 *
 *	npu_remote_options_init(&ro);
 *	ro.url = "http://127.0.0.1:8000";
 *	ro.model = "det_tail";
 *	npu_remote_create(&ro, &r);
 *	npu_remote_run_split(r, head_session, inputs, 1);   head here, tail there
 *	npu_remote_output(r, 0, &out);
 *
 * Only the head's outputs (the cut tensors) are sent: the head's inputs,
 * the raw data, never leave the process. Before the first request the
 * tail's metadata (GET /v2/models/NAME[/versions/V]) is checked against
 * what will be sent, by name, datatype and shape, so a head and a tail
 * that drifted apart (a new version of one of them) are an error naming
 * the tensor, not a wrong result.
 *
 * Errors: npu_last_error() of the calling thread, as the engine API:
 * the server that could not be reached, the timeout, the server's own
 * message with its HTTP status, the tensor that does not match.
 *
 * A remote is single-threaded (one connection, kept alive); use one per
 * thread.
 *
 * Its own library, libnpu-remote (pkg-config --cflags --libs npu-remote),
 * so that libnpu-user itself needs no HTTP client.
 */
#ifndef NPU_REMOTE_H
#define NPU_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "npu/npu_model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_remote;

struct npu_remote_options {
	size_t struct_size;	/* sizeof(struct npu_remote_options) */
	const char *url;	/* "http://HOST:PORT" of the server */
	const char *model;	/* the tail's model name */
	const char *version;	/* NULL: the server's version policy picks */
	double timeout_s;	/* per request, connecting included; 0: 30 */
	/*
	 * Link emulation, for honest measurements on loopback: a paced
	 * sender (a token bucket at link_mbit in each direction, the
	 * round-trip time added once per request). 0: no shaping.
	 */
	double link_mbit;
	double link_rtt_ms;
};

NPU_API void npu_remote_options_init_sized(struct npu_remote_options *opts,
					   size_t struct_size);
#define npu_remote_options_init(opts) \
	npu_remote_options_init_sized((opts), sizeof(*(opts)))

/* Copies the strings; connects on first use. */
NPU_API npu_status npu_remote_create(const struct npu_remote_options *opts,
				     struct npu_remote **out);
NPU_API void npu_remote_destroy(struct npu_remote *remote);

/*
 * Check that the tail takes exactly these tensors (name, dtype, rank and
 * every dim the tail fixes; -1 dims in 'sent' match anything): fetches
 * the tail's metadata once. Done by npu_remote_run_split() before its
 * first request; call it to fail early.
 */
NPU_API npu_status npu_remote_check(struct npu_remote *remote,
				    const struct npu_tensor_info *sent, size_t count);

/* Send 'inputs' (by name) to the tail and receive its outputs. */
NPU_API npu_status npu_remote_infer(struct npu_remote *remote,
				    const struct npu_host_tensor *inputs, size_t count);

/*
 * Run the head session on 'inputs', then send every head output to the
 * tail (checked against the tail's metadata on the first call).
 */
NPU_API npu_status npu_remote_run_split(struct npu_remote *remote,
					struct npu_session *head,
					const struct npu_host_tensor *inputs,
					size_t count);

/*
 * Split computing as an execution provider: register "remote" on the
 * engine, taking every node downstream of 'cut' (comma-separated tensor
 * names of the model, where `npu split --at` cut it) and running them as
 * one request to opts->model on the server. A model loaded with providers
 * "remote,npu,cpu" (or "remote,cpu") then runs its head here and its tail
 * there, as one model: npu_session_run() does both. When a plan is made,
 * the tail's metadata is checked against the tensors the head will send
 * (as npu_remote_check()); requests of one plan go one at a time. The
 * engine keeps the options (copied) until it is destroyed.
 */
NPU_API npu_status npu_remote_register_provider(struct npu_engine *engine,
						const struct npu_remote_options *opts,
						const char *cut);

/* The tail's outputs of the last request; valid until the next one. */
NPU_API size_t npu_remote_num_outputs(const struct npu_remote *remote);
NPU_API npu_status npu_remote_output(const struct npu_remote *remote, size_t index,
				     struct npu_host_tensor *out);

struct npu_remote_stats {
	size_t struct_size;	/* sizeof(struct npu_remote_stats) */
	uint64_t requests;
	uint64_t bytes_sent;	/* request bodies: JSON header + tensors */
	uint64_t bytes_received;	/* response bodies */
	/* The last request: */
	double last_head_ms;	/* npu_remote_run_split: the head's run */
	double last_request_ms;	/* send, tail on the server, receive */
	uint64_t last_bytes_sent;
	uint64_t last_bytes_received;
};

#define npu_remote_stats_init(st) \
	((void)memset((st), 0, sizeof(*(st))), (st)->struct_size = sizeof(*(st)))

NPU_API npu_status npu_remote_get_stats(const struct npu_remote *remote,
					struct npu_remote_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* NPU_REMOTE_H */
