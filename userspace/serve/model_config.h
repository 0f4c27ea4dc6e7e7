/* SPDX-License-Identifier: MIT */
/*
 * model_config: the subset of Triton's ModelConfig npu-serve supports, read
 * from config.pbtxt (or the JSON of a load request's config override),
 * completed from the model when fields are missing, and written as JSON
 * for GET .../config.
 */
#ifndef NPU_SERVE_MODEL_CONFIG_H
#define NPU_SERVE_MODEL_CONFIG_H

#include <jansson.h>

#include "serve.h"
#include "sequence.h"

#define CONFIG_MAX_PREFERRED 16
#define CONFIG_MAX_LEVELS 16
#define CONFIG_MAX_VERSIONS 32
#define CONFIG_MAX_PARAMS 16

struct config_tensor {
	char name[SERVE_NAME_MAX];
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];	/* -1: any; without the batch dim */
};

enum version_policy_kind { VP_LATEST, VP_ALL, VP_SPECIFIC };

struct queue_policy {
	uint64_t max_queue_size;	/* 0: unbounded */
	uint64_t default_timeout_us;	/* 0: none */
	int allow_timeout_override;
	int timeout_action_delay;	/* 0: REJECT, 1: DELAY */
};

enum instance_kind { KIND_AUTO, KIND_CPU, KIND_NPU };

#define CONFIG_MAX_GROUPS 8
#define CONFIG_MAX_STEPS 8
#define CONFIG_MAX_OP_LIBRARIES 4

/* One input_map / output_map entry: the step model's tensor, the ensemble's. */
struct ensemble_map {
	char key[SERVE_NAME_MAX];
	char value[SERVE_NAME_MAX];
};

/* A step of ensemble_scheduling. */
struct ensemble_step {
	char model[SERVE_NAME_MAX];
	int64_t version;		/* -1: the latest loaded */
	size_t num_in, num_out;
	struct ensemble_map in[SERVE_MAX_IO], out[SERVE_MAX_IO];
};

#define CONFIG_MAX_RESOURCES 8

/* A rate_limiter resource an instance holds while it runs a batch (rate_limiter.h). */
struct config_resource {
	char name[64];
	int global;		/* shared by every device, not per device */
	uint32_t count;
};

struct model_config {
	char name[SERVE_NAME_MAX];
	char platform[64];
	char backend[64];
	char default_model_filename[SERVE_NAME_MAX];
	int max_batch_size;
	size_t num_inputs, num_outputs;
	struct config_tensor inputs[SERVE_MAX_IO], outputs[SERVE_MAX_IO];

	enum version_policy_kind vp_kind;
	int vp_latest;			/* VP_LATEST: how many */
	size_t vp_count;		/* VP_SPECIFIC */
	int64_t vp_versions[CONFIG_MAX_VERSIONS];

	int dynamic_batching;		/* a dynamic_batching block is present */
	size_t num_preferred;
	int64_t preferred[CONFIG_MAX_PREFERRED];
	uint64_t max_queue_delay_us;
	int preserve_ordering;
	int priority_levels;		/* 0: one level */
	int default_priority_level;
	struct queue_policy default_queue_policy;
	struct queue_policy level_policy[CONFIG_MAX_LEVELS + 1];	/* [level] */
	int level_policy_set[CONFIG_MAX_LEVELS + 1];

	enum instance_kind kind;
	int instance_count;		/* total over the instance groups, per device */
	/*
	 * Each group's count and 'gpus' (bit k: device k of the model's
	 * set, the server's --device; 0: every device). As Triton places
	 * 'count' instances on each listed GPU, a group places 'count'
	 * instances on each of its NPUs (scheduler_create()).
	 */
	int num_groups;
	int group_count[CONFIG_MAX_GROUPS];
	uint64_t group_gpus[CONFIG_MAX_GROUPS];
	/* Each group's rate_limiter { resources [...] priority }. */
	int group_num_resources[CONFIG_MAX_GROUPS];
	struct config_resource group_resources[CONFIG_MAX_GROUPS][CONFIG_MAX_RESOURCES];
	uint32_t group_priority[CONFIG_MAX_GROUPS];

	int response_cache;		/* response_cache { enable: true } */

	/* platform "ensemble": its steps (ensemble.c runs them). */
	size_t num_steps;
	struct ensemble_step steps[CONFIG_MAX_STEPS];

	struct sequence_config sequence;	/* sequence_batching (sequence.c) */

	/* model_operations { op_library_filename }: custom-op libraries. */
	size_t num_op_libraries;
	char op_libraries[CONFIG_MAX_OP_LIBRARIES][SERVE_NAME_MAX];

	size_t num_params;
	char param_key[CONFIG_MAX_PARAMS][64];
	char param_value[CONFIG_MAX_PARAMS][256];
};

/* Defaults: name 'name', latest 1, one instance. */
void config_init(struct model_config *c, const char *name);

/*
 * Parse config.pbtxt text over the defaults in 'c'. Returns SERVE_OK or
 * SERVE_INVALID with "config.pbtxt:line:col: reason" in err.
 */
int config_parse_pbtxt(struct model_config *c, const char *text, size_t len,
		       const char *origin, char *err);
/* The same from a ModelConfig as JSON (a load request's override). */
int config_parse_json(struct model_config *c, const json_t *json, char *err);

/* A parameter's value or NULL. */
const char *config_param(const struct model_config *c, const char *key);

/*
 * Check the config against a loaded model and fill in what it leaves out
 * (inputs, outputs, max_batch_size as Triton's auto-complete does for
 * ONNX). Returns SERVE_OK or SERVE_INVALID naming the field.
 */
int config_complete(struct model_config *c, const struct npu_model *m,
		    int config_given, char *err);

/* GET .../config */
json_t *config_to_json(const struct model_config *c);

#endif /* NPU_SERVE_MODEL_CONFIG_H */
