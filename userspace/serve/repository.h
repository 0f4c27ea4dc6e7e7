/* SPDX-License-Identifier: MIT */
/*
 * repository: the model repository in Triton's layout,
 *   <repo>/<model>/config.pbtxt            (optional: completed from the model)
 *   <repo>/<model>/<version>/model.onnx    (or model.npub, or default_model_filename)
 * and the lifecycle of its models: every selected version is loaded and
 * warmed up before an atomic swap; requests already queued finish on the
 * version they were queued on; a failed load leaves what served serving,
 * with the reason in the index; unload drains. Poll mode loads a change
 * only once the files are stable across two polls. Knows nothing of HTTP.
 */
#ifndef NPU_SERVE_REPOSITORY_H
#define NPU_SERVE_REPOSITORY_H

#include <jansson.h>

#include "batcher.h"

enum control_mode { CONTROL_NONE, CONTROL_EXPLICIT, CONTROL_POLL };

struct repo_options {
	const char *path;
	const char *device;		/* for KIND_AUTO; default "cpu" */
	int threads;			/* engine CPU threads; 0: all cores */
	enum control_mode mode;
	int poll_secs;
	int strict_readiness;
	size_t num_load;		/* --load-model (explicit mode; "*" all) */
	const char *backend_dir;	/* --backend-directory: backend libraries (NULL: none) */
	char **load_models;
	/* Limits (Documentation/serving.md, "Limits and hardening"); 0: the default. */
	size_t max_json_bytes;		/* JSON part of an inference body (8 MiB) */
	size_t json_value_slack;	/* JSON values beyond a model's tensor elements (4096) */
	uint64_t default_max_queue_size;	/* each priority level's queue when the
						 * config sets no max_queue_size (1024) */
	/* Models with a variable dim: new input shapes (plans to compile) a
	 * version takes per minute; 0: the default (60), -1: no limit. */
	int max_new_shapes_per_minute;
	/* Sequence models: live sequences and their state bytes per version
	 * (0: SEQ_DEFAULT_MAX_SEQUENCES, SEQ_DEFAULT_MAX_STATE_BYTES). */
	size_t max_sequences, max_sequence_state_bytes;
};

#define REPO_DEFAULT_MAX_QUEUE_SIZE 1024
#define REPO_DEFAULT_MAX_NEW_SHAPES_PER_MINUTE 60

struct repository;

int repository_create(const struct repo_options *o, struct repository **out, char *err);
/* The startup loads (all models, or --load-model ones) and the poll thread. */
void repository_start(struct repository *r);
/* Stop polling, drain and unload every model. */
void repository_destroy(struct repository *r);

/*
 * Load (or reload) a model: config_override is a ModelConfig as JSON or
 * NULL; version > 0 loads that version besides those loaded (our
 * extension), -1 applies the version policy.
 */
int repository_load(struct repository *r, const char *name, const json_t *config_override,
		    int64_t version, char *err);
/* version -1: the whole model. Drains before returning. */
int repository_unload(struct repository *r, const char *name, int64_t version, char *err);
/* Explicit load/unload requests are refused in modes none and poll. */
enum control_mode repository_mode(const struct repository *r);

json_t *repository_index(struct repository *r, int ready_only);
int repository_ready(struct repository *r);	/* server readiness */
int repository_model_ready(struct repository *r, const char *name, int64_t version);

/*
 * Decode an inference request for model 'name' (version -1: the latest
 * loaded) and queue it on that version; 'done' is called when it finishes.
 * On an error nothing is queued and 'done' is not called.
 */
int repository_infer(struct repository *r, const char *name, int64_t version,
		     const char *body, size_t len, long long json_len,
		     struct infer_request *req, char *err);

/* A loaded ensemble version's step models, in order (NULL: not an ensemble). */
json_t *repository_ensemble_steps(struct repository *r, const char *name, int64_t version);

json_t *repository_model_metadata(struct repository *r, const char *name,
				  int64_t version, char *err, int *status);
json_t *repository_model_config(struct repository *r, const char *name,
				int64_t version, char *err, int *status);

#endif /* NPU_SERVE_REPOSITORY_H */
