/* SPDX-License-Identifier: MIT */
/*
 * batcher: Triton's dynamic batcher over npu sessions. One scheduler per
 * loaded model version: priority queues (FIFO within a level, level 1
 * first), and 'instance_count' instances, each a thread with its own
 * npu_session. A batch stacks requests of the same shape along dim 0 and
 * runs once on the plan for their total size; preferred sizes send early,
 * max_queue_delay bounds the wait, queue size and timeouts reject. Knows
 * nothing of HTTP: a request carries a completion callback.
 */
#ifndef NPU_SERVE_BATCHER_H
#define NPU_SERVE_BATCHER_H

#include <stdatomic.h>

#include "metrics.h"
#include "model_config.h"

/* A request whose client went away before it ran (HTTP has no code for it: nginx's 499). */
#define SERVE_CANCELLED 499

/*
 * A tensor of a request or a response. BYTES tensors (dtype
 * NPU_TYPE_STRING) hold their elements as Triton serializes them on the
 * wire, each a 4-byte little-endian length then that many bytes, in row-
 * major order; nbytes is their total, so a binary or gRPC raw input is
 * used in place.
 */
struct infer_tensor {
	char name[SERVE_NAME_MAX];
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
	void *data;
	size_t nbytes;
	int owned;		/* data is malloc'd and freed with the request */
	int binary;		/* outputs: send in the binary section */
	/*
	 * System shared memory (shm.h): an input read from, an output asked
	 * into (data, nbytes: the room there) or a result written into region
	 * 'shm' at 'shm_offset'. Inputs and outputs hold a reference, released
	 * by infer_request_clear(); results point at their output's.
	 */
	struct shm_region *shm;
	uint64_t shm_offset;
};

struct infer_request {
	char id[SERVE_NAME_MAX];
	/* Inputs in the config's order; outputs asked for (none: all). */
	size_t num_inputs;
	struct infer_tensor inputs[SERVE_MAX_IO];
	size_t num_outputs;
	struct infer_tensor outputs[SERVE_MAX_IO];	/* name, binary */
	int binary_output;	/* parameters.binary_data_output */
	int priority;		/* 0: the default level */
	uint64_t timeout_us;	/* 0: the queue policy's */
	int64_t batch;		/* dim 0 when batching, else 1 */
	/* parameters.sequence_id (a uint64, or a string in seq_str), _start, _end. */
	uint64_t seq_id;
	char seq_str[SERVE_NAME_MAX];
	int seq_start, seq_end;

	/* Set by the scheduler: */
	char model[SERVE_NAME_MAX];
	int64_t version;
	uint64_t t_arrive, t_enqueue, t_deadline;
	/* Its batch's phases, set by the instance that ran it (0: not reached):
	 * Triton's COMPUTE_START, COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END. */
	uint64_t t_compute_start, t_input_end, t_output_start, t_compute_end;
	uint64_t seq;		/* order of arrival (preserve_ordering) */
	struct sequence *sequence;	/* a sequence model's: its live sequence */
	int status;		/* SERVE_OK or an error */
	char err[SERVE_ERR_MAX];
	size_t num_results;
	struct infer_tensor results[SERVE_MAX_IO];
	void (*done)(struct infer_request *req, void *arg);
	void *done_arg;
	/*
	 * Set by a front end when the client is gone (HTTP disconnect, gRPC
	 * RST_STREAM). A request still queued is then dropped, never run, and
	 * completes with SERVE_CANCELLED; one already running finishes. Either
	 * way 'done' is called exactly once, so the front end frees the
	 * request only after it.
	 */
	atomic_bool cancelled;
	struct infer_request *next;
};

void infer_request_clear(struct infer_request *req);	/* frees owned data */
/* Whether 'r' asks for output 'name' (no outputs named: all), and in binary. */
int infer_request_asks(const struct infer_request *r, const char *name, int *binary);

struct scheduler;

/* What a scheduler bounds (repo_options documents the defaults). */
struct scheduler_limits {
	uint64_t default_max_queue_size;	/* a level whose policy sets none */
	/*
	 * A model with a variable dim: input shapes (the batch dim aside)
	 * not among the last 'shape_memory' seen may compile a plan each;
	 * at most this many per minute (-1: no limit).
	 */
	int max_new_shapes_per_minute;
	size_t shape_memory;
	/* Sequence models: live sequences and their state bytes (0: the defaults). */
	size_t max_sequences, max_sequence_state_bytes;
};

/*
 * Sessions for the instances on 'model' (device named for logs and
 * metrics), warm-up on the config's shapes when they are fully known, and
 * the instance threads. The config must outlive the scheduler. A queue
 * whose policy sets no max_queue_size holds default_max_queue_size.
 */
int scheduler_create(const struct model_config *cfg, struct npu_model *model,
		     const char *device, struct model_stats *stats,
		     const struct scheduler_limits *limits, struct scheduler **out, char *err);
/*
 * The same for a model of a backend library (backend.h): each instance
 * gets its own step state, on the CPU; no warm-up. The backend model must
 * outlive the scheduler.
 */
struct backend_model;
int scheduler_create_backend(const struct model_config *cfg, struct backend_model *backend,
			     struct model_stats *stats, const struct scheduler_limits *limits,
			     struct scheduler **out, char *err);
/*
 * Queue a validated request. One whose 'cancelled' is set while it waits
 * is dropped before the next batch is formed and completes with
 * SERVE_CANCELLED, never run. On an error the request is not queued and
 * 'done' is not called: SERVE_UNAVAILABLE for a full queue, a scheduler
 * that is draining or a new input shape over the budget, SERVE_INVALID
 * for a bad priority.
 */
int scheduler_enqueue(struct scheduler *s, struct infer_request *req, char *err);
/* Its instances: the groups' counts, times the NPUs each group spans. */
int scheduler_num_instances(const struct scheduler *s);
/* Stop taking requests, run everything queued, join, free. */
void scheduler_drain_destroy(struct scheduler *s);

#endif /* NPU_SERVE_BATCHER_H */
