/* SPDX-License-Identifier: MIT */
/*
 * ensemble: Triton's ensemble_scheduling. An ensemble is a model whose
 * config lists steps, each another model of the repository (an ONNX
 * model, a backend library's step, or an ensemble) with input_map and
 * output_map tying the step's tensors to the ensemble's. A request runs
 * each step as soon as the tensors it reads exist, through that model's
 * own scheduler and batcher, so steps of different requests overlap and
 * steps run on their models' devices. Knows nothing of HTTP.
 */
#ifndef NPU_SERVE_ENSEMBLE_H
#define NPU_SERVE_ENSEMBLE_H

#include "batcher.h"

/* What an ensemble needs of the repository. */
struct ensemble_host {
	void *arg;
	/*
	 * The config of a loaded version of 'model' (-1: the latest), valid
	 * while the ensemble is being created. SERVE_NOT_FOUND when it is
	 * not loaded.
	 */
	int (*step_config)(void *arg, const char *model, int64_t version,
			   const struct model_config **cfg, char *err);
	/*
	 * Check a request built by the ensemble against the model's config
	 * and queue it there ('done' called when it finishes); on an error
	 * nothing is queued.
	 */
	int (*submit)(void *arg, const char *model, int64_t version, struct infer_request *req,
		      char *err);
};

struct ensemble;

/*
 * Check the steps against each other and the loaded step models' configs
 * (every tensor made once, read after it is made, no cycle, datatypes and
 * shapes that agree) and prepare to run them. The config and host must
 * outlive the ensemble.
 */
int ensemble_create(const struct model_config *cfg, const struct ensemble_host *host,
		    struct model_stats *stats, struct ensemble **out, char *err);
/*
 * Run a decoded request: 'done' is called once, when the last step has
 * finished or one failed. On an error nothing runs and 'done' is not
 * called.
 */
int ensemble_enqueue(struct ensemble *e, struct infer_request *req, char *err);
/* Wait for the requests in flight, then free. */
void ensemble_drain_destroy(struct ensemble *e);

#endif /* NPU_SERVE_ENSEMBLE_H */
