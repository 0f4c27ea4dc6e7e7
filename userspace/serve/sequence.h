/* SPDX-License-Identifier: MIT */
/*
 * sequence: Triton's sequence batcher for stateful models. The config's
 * sequence_batching block (control inputs, implicit state, the direct or
 * oldest strategy, the idle timeout); the request parameters sequence_id,
 * sequence_start and sequence_end; and per scheduler a table of the live
 * sequences, bounded in count and state bytes. The scheduler (batcher.c)
 * keeps its one queue and its instances: it asks this table which queued
 * requests may run (at most one request of a sequence at a time, in
 * order, each sequence in a batch slot), lets it add the control and state
 * inputs before the run, and hands it the state outputs after. Every
 * table call but the JSON ones is made under the scheduler's lock.
 */
#ifndef NPU_SERVE_SEQUENCE_H
#define NPU_SERVE_SEQUENCE_H

#include <jansson.h>
#include <pthread.h>

#include "serve.h"

#define SEQ_MAX_CONTROLS 8
#define SEQ_MAX_STATES 8
#define SEQ_MAX_PREFERRED 16
#define SEQ_DEFAULT_IDLE_US 1000000ull		/* Triton's default: 1 s */
#define SEQ_DEFAULT_MAX_SEQUENCES 1024		/* per model version */
#define SEQ_DEFAULT_MAX_STATE_BYTES (64u << 20)	/* per model version */

enum seq_control_kind {
	SEQ_CONTROL_START, SEQ_CONTROL_READY, SEQ_CONTROL_END, SEQ_CONTROL_CORRID,
};
enum seq_strategy { SEQ_DIRECT, SEQ_OLDEST };

/* A model input the server sets: [1] per batch element. */
struct seq_control {
	char input[SERVE_NAME_MAX];
	enum seq_control_kind kind;
	enum npu_data_type dtype;	/* INT32, FP32 or BOOL; CORRID: its data_type */
	double false_true[2];		/* the values for false and true */
};

/* Implicit state: output 'output' of a request is input 'input' of the next. */
struct seq_state {
	char input[SERVE_NAME_MAX], output[SERVE_NAME_MAX];
	enum npu_data_type dtype;
	int rank;			/* dims without the batch dim; -1 dims: any */
	int64_t dims[NPU_MODEL_MAX_RANK];
	/* initial_state { zero_data: true, data_type, dims, name }: the START shape. */
	int has_initial;
	char initial_name[SERVE_NAME_MAX];
	int initial_rank;
	int64_t initial_dims[NPU_MODEL_MAX_RANK];
};

struct sequence_config {
	int enabled;			/* a sequence_batching block is present */
	enum seq_strategy strategy;
	uint64_t max_idle_us;		/* max_sequence_idle_microseconds (0: 1 s) */
	uint64_t max_queue_delay_us;	/* the strategy's */
	double minimum_slot_utilization;	/* direct: accepted, written back */
	int max_candidates;		/* oldest: 0: as many as --max-sequences */
	size_t num_preferred;		/* oldest */
	int64_t preferred[SEQ_MAX_PREFERRED];
	int preserve_ordering;		/* oldest: accepted (one sequence is always in order) */
	size_t num_controls;
	struct seq_control controls[SEQ_MAX_CONTROLS];
	size_t num_states;
	struct seq_state states[SEQ_MAX_STATES];
};

struct pbtxt_node;
struct model_config;
struct npu_model;
struct npu_session;
struct infer_request;
struct model_stats;

/* ---- Config ---- */

/*
 * The sequence_batching message 'n' into c->sequence. origin names the
 * file in errors ("config.pbtxt:line:col: reason").
 */
int sequence_config_parse(struct model_config *c, const struct pbtxt_node *n,
			  const char *origin, char *err);
/* Whether 'name' is a control or state input (inputs) or a state output. */
int sequence_implicit_tensor(const struct model_config *c, const char *name, int inputs);
/*
 * Check the controls and states against the model (config_complete); m
 * NULL (a backend model): only what needs no model.
 */
int sequence_config_check(const struct model_config *c, const struct npu_model *m, char *err);
/* "sequence_batching" for GET .../config. */
json_t *sequence_config_json(const struct sequence_config *sc);

/* ---- Requests ---- */

/* parameters.sequence_id / sequence_start / sequence_end of a request into req. */
int sequence_parse_params(const json_t *params, struct infer_request *req, char *err);

/* ---- The table of live sequences (one per scheduler) ---- */

struct seq_table;
struct sequence;

struct seq_limits {
	size_t max_sequences;		/* live sequences */
	size_t max_state_bytes;		/* their state tensors */
};

/* sched_lock: the scheduler's lock, which the JSON takes to read the table. */
int sequence_table_create(const struct model_config *cfg, struct npu_model *model,
			  struct model_stats *stats, const struct seq_limits *lim,
			  int num_instances, pthread_mutex_t *sched_lock, struct seq_table **out,
			  char *err);
void sequence_table_destroy(struct seq_table *t);

/*
 * A decoded request arrives: check its sequence parameters against the
 * live sequences (a START makes one) and attach it. SERVE_INVALID or
 * SERVE_UNAVAILABLE with the reason: then it is not queued.
 */
int sequence_admit(struct seq_table *t, struct infer_request *req, uint64_t now, char *err);
/* A queued request left unrun (timeout, cancel). */
void sequence_dropped(struct seq_table *t, struct infer_request *req, uint64_t now);
/* Free the sequences idle too long; returns the next such deadline (0: none). */
uint64_t sequence_reap(struct seq_table *t, uint64_t now);

/*
 * The next batch for instance 'inst' from the queue 'head' (linked by
 * ->next, oldest first): at most one request of a sequence, each sequence
 * in a slot (direct: of this instance), the control and state inputs
 * added. Returns the count (0: none now; *wake: when to look again, 0:
 * on a signal). 'stopping' sends at once and ignores the slot bound.
 */
size_t sequence_form_batch(struct seq_table *t, int inst, struct infer_request *head,
			   uint64_t now, int stopping, struct infer_request **out, size_t max,
			   uint64_t *wake);
/* The names of state outputs the run must compute (besides the asked ones). */
size_t sequence_state_outputs(const struct seq_table *t, const char **names, size_t max);
/*
 * After the run of batch 'reqs' (before their completion): keep each
 * successful request's state output as its sequence's next state (from
 * the session, or for a backend model (session NULL) from its outputs
 * 'outs', found by name), take out the inputs the table added.
 */
void sequence_batch_ran(struct seq_table *t, struct npu_session *session,
			const struct npu_host_tensor *outs, size_t num_outs,
			struct infer_request **reqs, size_t n);
/* After a request of 'seq' completed: the sequence may run its next one. */
void sequence_release(struct seq_table *t, struct sequence *seq, uint64_t now);

/*
 * The "sequence_stats" object of model 'stats' (live ids; metrics.c adds
 * the counters); NULL: none. Takes the scheduler's lock: call it holding
 * no scheduler lock.
 */
json_t *sequence_stats_json(const struct model_stats *stats);

#endif /* NPU_SERVE_SEQUENCE_H */
