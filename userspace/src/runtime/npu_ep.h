/* SPDX-License-Identifier: MIT */
/*
 * npu_ep.h - execution providers as a plan sees them (internal; the
 * public side is npu/npu_provider.h).
 *
 * A model holds its providers in priority order, "cpu" last. Making a plan,
 * the runtime asks each in turn to assign() itself the nodes no earlier one
 * took; it knows none of them by name. The built-in ones: "npu" (the NPU
 * compiler's placement, segments and code, or a compiled file's) and "cpu"
 * (its graph passes; its kernels run whatever is left). An application's
 * provider takes nodes through its can_run() and runs each connected group
 * as one node of domain ai.npu.provider (npu_provider.c).
 */
#ifndef NPU_EP_H
#define NPU_EP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/npu_error.h"

struct npu_engine;
struct npu_graph;
struct npu_model;
struct npu_plan;
struct npu_provider_record;

/* Why providers left nodes while a plan is made: one entry per refusal. */
struct npu_ep_note {
	char *node, *why;
	const char *provider;	/* the ep's name */
};

struct npu_ep_notes {
	struct npu_ep_note *list;
	size_t count;
};

struct npu_ep_ctx {
	struct npu_model *m;
	struct npu_plan *p;
	/* The plan runs a compiled file's graph as compiled: nothing to take. */
	bool finished;
	struct npu_ep_notes notes;
	struct npu_error *err;
};

/* Providers in one model's list, "cpu" included. */
#define NPU_PROVIDERS_MAX 16

struct npu_ep {
	const char *name;
	/* Runs on the model's NPU device, which the model opens at load. */
	bool uses_device;
	npu_status (*assign)(const struct npu_ep *ep, struct npu_ep_ctx *ctx);
	const struct npu_provider_record *rec;	/* an application's; NULL built in */
};

/* Where one node runs and why (npu_plan_placement()). */
struct npu_plan_placement {
	char *node, *op_type, *reason;
	const char *provider;	/* the ep's name: lives as long as the engine */
	bool on_npu;
	int segment;		/* NPU segment, else -1 */
	uint64_t macs;
};

/*
 * At load: m->eps from m->opts.providers (NULL: "npu,cpu" for an NPU
 * device, else "cpu"), and the device that implies (m->device_name:
 * "sim" when "npu" is named and the device is "cpu"; "cpu" when "npu" is
 * not named).
 * The message names the option and the provider.
 */
npu_status npu_model_providers(struct npu_model *m);
/* Each provider assigns itself its nodes of p->g in turn; then the placements. */
npu_status npu_plan_assign(struct npu_model *m, struct npu_plan *p, bool finished,
			   struct npu_error *err);
void npu_plan_placements_free(struct npu_plan *p);
/* A compiled file: every provider its graph names is registered on the engine. */
npu_status npu_providers_check_graph(const struct npu_graph *g, struct npu_error *err);
/* At the engine's end. */
void npu_providers_free(struct npu_engine *e);

/* What the built-in providers run (npu_model.c): a plan's NPU compilation. */
npu_status npu_plan_compile_npu(struct npu_model *m, struct npu_plan *p, struct npu_error *err);

#endif /* NPU_EP_H */
