// SPDX-License-Identifier: MIT
/* model_config: Triton's ModelConfig subset (see model_config.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_config.h"
#include "pbtxt.h"

void config_init(struct model_config *c, const char *name)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
	c->vp_kind = VP_LATEST;
	c->vp_latest = 1;
	c->instance_count = 1;
}

const char *config_param(const struct model_config *c, const char *key)
{
	size_t i;

	for (i = 0; i < c->num_params; i++)
		if (!strcmp(c->param_key[i], key))
			return c->param_value[i];
	return NULL;
}

/* ---- From the field tree ------------------------------------------------ */

/* Fields Triton's ModelConfig has that we accept and ignore. */
static const char *const ignored_fields[] = {
	"optimization", "model_warmup",
	"model_transaction_policy", "model_repository_agents",
	"metric_tags", "cc_model_filenames", "runtime",
	"batch_input", "batch_output",
};

static int parse_tensor(struct pbtxt_ctx *x, const struct pbtxt_node *n,
			struct config_tensor *t)
{
	const struct pbtxt_node *f;
	int have_name = 0, have_type = 0, have_dims = 0;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	memset(t, 0, sizeof(*t));
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "name")) {
			if (pbtxt_str(x, f, t->name, sizeof(t->name)))
				return SERVE_INVALID;
			have_name = 1;
		} else if (!strcmp(f->name, "data_type")) {
			if (pbtxt_want(x, f, 0))
				return SERVE_INVALID;
			t->dtype = serve_config_dtype_parse(f->text);
			if (t->dtype == NPU_TYPE_UNDEFINED)
				return pbtxt_bad(x, f, "'data_type': '%s' is not a supported type (TYPE_FP32, TYPE_INT64, ...)",
					   f->text);
			have_type = 1;
		} else if (!strcmp(f->name, "dims")) {
			int64_t v;

			if (t->rank >= NPU_MODEL_MAX_RANK)
				return pbtxt_bad(x, f, "'dims': more than %d dims", NPU_MODEL_MAX_RANK);
			if (pbtxt_int(x, f, -1, INT32_MAX, &v))
				return SERVE_INVALID;
			if (v == 0)
				return pbtxt_bad(x, f, "'dims': 0 is not a valid dim (-1 means any)");
			t->dims[t->rank++] = v;
			have_dims = 1;
		} else if (!strcmp(f->name, "format") || !strcmp(f->name, "optional") ||
			   !strcmp(f->name, "allow_ragged_batch") ||
			   !strcmp(f->name, "label_filename")) {
			/* accepted, no effect */
		} else if (!strcmp(f->name, "reshape") || !strcmp(f->name, "is_shape_tensor")) {
			return pbtxt_bad(x, f, "'%s' is not supported", f->name);
		} else {
			return pbtxt_bad(x, f, "unknown field '%s' in '%s'", f->name, n->name);
		}
	}
	if (!have_name)
		return pbtxt_bad(x, n, "'%s' without a 'name'", n->name);
	if (!have_type)
		return pbtxt_bad(x, n, "'%s' '%s' without a 'data_type'", n->name, t->name);
	(void)have_dims;	/* no dims: a scalar (or only the batch dim) */
	return 0;
}

static int parse_queue_policy(struct pbtxt_ctx *x, const struct pbtxt_node *n,
			      struct queue_policy *q)
{
	const struct pbtxt_node *f;
	int64_t v;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "max_queue_size")) {
			if (pbtxt_int(x, f, 0, INT32_MAX, &v))
				return SERVE_INVALID;
			q->max_queue_size = (uint64_t)v;
		} else if (!strcmp(f->name, "default_timeout_microseconds")) {
			if (pbtxt_int(x, f, 0, INT64_MAX, &v))
				return SERVE_INVALID;
			q->default_timeout_us = (uint64_t)v;
		} else if (!strcmp(f->name, "allow_timeout_override")) {
			if (pbtxt_bool(x, f, &q->allow_timeout_override))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "timeout_action")) {
			if (pbtxt_want(x, f, 0))
				return SERVE_INVALID;
			if (!strcmp(f->text, "REJECT"))
				q->timeout_action_delay = 0;
			else if (!strcmp(f->text, "DELAY"))
				q->timeout_action_delay = 1;
			else
				return pbtxt_bad(x, f, "'timeout_action': '%s' is not REJECT or DELAY", f->text);
		} else {
			return pbtxt_bad(x, f, "unknown field '%s' in '%s'", f->name, n->name);
		}
	}
	return 0;
}

static int parse_dynamic_batching(struct pbtxt_ctx *x, const struct pbtxt_node *n,
				  struct model_config *c)
{
	const struct pbtxt_node *f, *g;
	int64_t v;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	c->dynamic_batching = 1;
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "preferred_batch_size")) {
			if (c->num_preferred >= CONFIG_MAX_PREFERRED)
				return pbtxt_bad(x, f, "more than %d preferred_batch_size", CONFIG_MAX_PREFERRED);
			if (pbtxt_int(x, f, 1, INT32_MAX, &v))
				return SERVE_INVALID;
			c->preferred[c->num_preferred++] = v;
		} else if (!strcmp(f->name, "max_queue_delay_microseconds")) {
			if (pbtxt_int(x, f, 0, INT64_MAX / 1000, &v))
				return SERVE_INVALID;
			c->max_queue_delay_us = (uint64_t)v;
		} else if (!strcmp(f->name, "preserve_ordering")) {
			if (pbtxt_bool(x, f, &c->preserve_ordering))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "priority_levels")) {
			if (pbtxt_int(x, f, 0, CONFIG_MAX_LEVELS, &v))
				return SERVE_INVALID;
			c->priority_levels = (int)v;
		} else if (!strcmp(f->name, "default_priority_level")) {
			if (pbtxt_int(x, f, 0, CONFIG_MAX_LEVELS, &v))
				return SERVE_INVALID;
			c->default_priority_level = (int)v;
		} else if (!strcmp(f->name, "default_queue_policy")) {
			if (parse_queue_policy(x, f, &c->default_queue_policy))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "priority_queue_policy")) {
			/* map<uint64, ModelQueuePolicy>: { key: 1 value { ... } } */
			int64_t key = -1;
			const struct pbtxt_node *val = NULL;

			if (pbtxt_want(x, f, 1))
				return SERVE_INVALID;
			for (g = f->child; g; g = g->next) {
				if (!strcmp(g->name, "key")) {
					if (pbtxt_int(x, g, 1, CONFIG_MAX_LEVELS, &key))
						return SERVE_INVALID;
				} else if (!strcmp(g->name, "value")) {
					val = g;
				} else {
					return pbtxt_bad(x, g, "unknown field '%s' in 'priority_queue_policy'", g->name);
				}
			}
			if (key < 0 || !val)
				return pbtxt_bad(x, f, "'priority_queue_policy' needs a 'key' and a 'value'");
			memset(&c->level_policy[key], 0, sizeof(c->level_policy[key]));
			if (parse_queue_policy(x, val, &c->level_policy[key]))
				return SERVE_INVALID;
			c->level_policy_set[key] = 1;
		} else {
			return pbtxt_bad(x, f, "unknown field '%s' in 'dynamic_batching'", f->name);
		}
	}
	if (c->priority_levels && (c->default_priority_level < 1 ||
				   c->default_priority_level > c->priority_levels))
		return pbtxt_bad(x, n, "'default_priority_level' %d must be in [1, priority_levels %d]",
			   c->default_priority_level, c->priority_levels);
	return 0;
}

static int parse_version_policy(struct pbtxt_ctx *x, const struct pbtxt_node *n,
				struct model_config *c)
{
	const struct pbtxt_node *f, *g;
	int64_t v;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	for (f = n->child; f; f = f->next) {
		if (pbtxt_want(x, f, 1))
			return SERVE_INVALID;
		if (!strcmp(f->name, "latest")) {
			c->vp_kind = VP_LATEST;
			c->vp_latest = 1;
			for (g = f->child; g; g = g->next) {
				if (strcmp(g->name, "num_versions"))
					return pbtxt_bad(x, g, "unknown field '%s' in 'latest'", g->name);
				if (pbtxt_int(x, g, 1, 1000, &v))
					return SERVE_INVALID;
				c->vp_latest = (int)v;
			}
		} else if (!strcmp(f->name, "all")) {
			c->vp_kind = VP_ALL;
			if (f->child)
				return pbtxt_bad(x, f->child, "unknown field '%s' in 'all'", f->child->name);
		} else if (!strcmp(f->name, "specific")) {
			c->vp_kind = VP_SPECIFIC;
			c->vp_count = 0;
			for (g = f->child; g; g = g->next) {
				if (strcmp(g->name, "versions"))
					return pbtxt_bad(x, g, "unknown field '%s' in 'specific'", g->name);
				if (c->vp_count >= CONFIG_MAX_VERSIONS)
					return pbtxt_bad(x, g, "more than %d versions", CONFIG_MAX_VERSIONS);
				if (pbtxt_int(x, g, 1, INT64_MAX, &v))
					return SERVE_INVALID;
				c->vp_versions[c->vp_count++] = v;
			}
			if (!c->vp_count)
				return pbtxt_bad(x, f, "'specific' lists no 'versions'");
		} else {
			return pbtxt_bad(x, f, "unknown version policy '%s' (latest, all, specific)", f->name);
		}
	}
	return 0;
}

/* instance_group's rate_limiter { resources { name count global } priority } */
static int parse_rate_limiter(struct pbtxt_ctx *x, const struct pbtxt_node *n,
			      struct model_config *c, int g)
{
	const struct pbtxt_node *f, *r;
	int64_t v;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "priority")) {
			if (pbtxt_int(x, f, 0, UINT32_MAX, &v))
				return SERVE_INVALID;
			c->group_priority[g] = (uint32_t)v;
		} else if (!strcmp(f->name, "resources")) {
			struct config_resource *res;
			int k, have_count = 0;

			if (pbtxt_want(x, f, 1))
				return SERVE_INVALID;
			if (c->group_num_resources[g] == CONFIG_MAX_RESOURCES)
				return pbtxt_bad(x, f, "more than %d rate_limiter resources", CONFIG_MAX_RESOURCES);
			res = &c->group_resources[g][c->group_num_resources[g]];
			memset(res, 0, sizeof(*res));
			for (r = f->child; r; r = r->next) {
				if (!strcmp(r->name, "name")) {
					if (pbtxt_str(x, r, res->name, sizeof(res->name)))
						return SERVE_INVALID;
				} else if (!strcmp(r->name, "global")) {
					if (pbtxt_bool(x, r, &res->global))
						return SERVE_INVALID;
				} else if (!strcmp(r->name, "count")) {
					if (pbtxt_int(x, r, 0, UINT32_MAX, &v))
						return SERVE_INVALID;
					res->count = (uint32_t)v;
					have_count = 1;
				} else {
					return pbtxt_bad(x, r, "unknown field '%s' in 'resources'", r->name);
				}
			}
			if (!res->name[0])
				return pbtxt_bad(x, f, "a rate_limiter resource without a 'name'");
			if (!have_count)
				return pbtxt_bad(x, f, "rate_limiter resource '%s' without a 'count'", res->name);
			for (k = 0; k < c->group_num_resources[g]; k++)
				if (!strcmp(c->group_resources[g][k].name, res->name))
					return pbtxt_bad(x, f, "rate_limiter resource '%s' is listed twice",
						   res->name);
			c->group_num_resources[g]++;
		} else {
			return pbtxt_bad(x, f, "unknown field '%s' in 'rate_limiter'", f->name);
		}
	}
	return 0;
}

static int parse_instance_group(struct pbtxt_ctx *x, const struct pbtxt_node *n,
				struct model_config *c, int *groups)
{
	const struct pbtxt_node *f;
	int64_t count = 1, gpu;
	uint64_t gpus = 0;
	enum instance_kind kind = KIND_AUTO;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	if (*groups == CONFIG_MAX_GROUPS)
		return pbtxt_bad(x, n, "more than %d instance groups", CONFIG_MAX_GROUPS);
	c->group_num_resources[*groups] = 0;
	c->group_priority[*groups] = 0;
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "count")) {
			if (pbtxt_int(x, f, 1, 64, &count))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "gpus")) {
			/* The NPUs of the server's --device set, by index. */
			if (pbtxt_int(x, f, 0, NPU_DEVICE_SET_MAX - 1, &gpu))
				return SERVE_INVALID;
			if (gpus >> gpu & 1)
				return pbtxt_bad(x, f, "'gpus': device %" PRId64 " is listed twice", gpu);
			gpus |= 1ull << gpu;
		} else if (!strcmp(f->name, "rate_limiter")) {
			if (parse_rate_limiter(x, f, c, *groups))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "kind")) {
			if (pbtxt_want(x, f, 0))
				return SERVE_INVALID;
			if (!strcmp(f->text, "KIND_CPU"))
				kind = KIND_CPU;
			else if (!strcmp(f->text, "KIND_NPU"))
				kind = KIND_NPU;
			else if (!strcmp(f->text, "KIND_AUTO"))
				kind = KIND_AUTO;
			else if (!strcmp(f->text, "KIND_GPU") || !strcmp(f->text, "KIND_MODEL")) {
				/* A Triton repository loads unchanged. */
				serve_log(SERVE_LOG_WARN, "%s:%d:%d: '%s' is taken as KIND_AUTO (--device)",
					  x->origin, f->line, f->col, f->text);
				kind = KIND_AUTO;
			} else
				return pbtxt_bad(x, f, "'kind': '%s' is not supported (KIND_CPU, KIND_NPU, KIND_AUTO, KIND_GPU)",
					   f->text);
		} else if (!strcmp(f->name, "name") ||
			   !strcmp(f->name, "profile") || !strcmp(f->name, "passive") ||
			   !strcmp(f->name, "host_policy") ||
			   !strcmp(f->name, "secondary_devices")) {
			/* accepted, no effect */
		} else {
			return pbtxt_bad(x, f, "unknown field '%s' in 'instance_group'", f->name);
		}
	}
	if (*groups && kind != c->kind)
		return pbtxt_bad(x, n, "instance groups of different kinds are not supported");
	if (gpus && kind == KIND_CPU)
		return pbtxt_bad(x, n, "'gpus' places instances on NPUs: not with KIND_CPU");
	c->kind = kind;
	c->instance_count = (*groups ? c->instance_count : 0) + (int)count;
	if (c->instance_count > 64)
		return pbtxt_bad(x, n, "more than 64 instances");
	c->group_count[*groups] = (int)count;
	c->group_gpus[*groups] = gpus;
	(*groups)++;
	c->num_groups = *groups;
	return 0;
}

static int parse_parameter(struct pbtxt_ctx *x, const struct pbtxt_node *n,
			   struct model_config *c)
{
	const struct pbtxt_node *f, *g;
	char key[64] = "", value[256] = "";
	int have_value = 0;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "key")) {
			if (pbtxt_str(x, f, key, sizeof(key)))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "value")) {
			if (pbtxt_want(x, f, 1))
				return SERVE_INVALID;
			for (g = f->child; g; g = g->next) {
				if (strcmp(g->name, "string_value"))
					return pbtxt_bad(x, g, "unknown field '%s' in a parameter value (string_value)",
						   g->name);
				if (pbtxt_str(x, g, value, sizeof(value)))
					return SERVE_INVALID;
				have_value = 1;
			}
		} else {
			return pbtxt_bad(x, f, "unknown field '%s' in 'parameters'", f->name);
		}
	}
	if (!key[0] || !have_value)
		return pbtxt_bad(x, n, "'parameters' needs a 'key' and a 'value { string_value: ... }'");
	if (c->num_params >= CONFIG_MAX_PARAMS)
		return pbtxt_bad(x, n, "more than %d parameters", CONFIG_MAX_PARAMS);
	snprintf(c->param_key[c->num_params], sizeof(c->param_key[0]), "%s", key);
	snprintf(c->param_value[c->num_params], sizeof(c->param_value[0]), "%s", value);
	c->num_params++;
	return 0;
}

/* Entry (key, value) into map 'm': both given, the key once, within the bound. */
static int map_add(struct pbtxt_ctx *x, const struct pbtxt_node *at, const char *map,
		   struct ensemble_map *m, size_t *num, const char *key, const char *value)
{
	size_t i;

	if (!key[0] || !value[0])
		return pbtxt_bad(x, at, "'%s' needs a 'key' and a 'value'", map);
	for (i = 0; i < *num; i++)
		if (!strcmp(m[i].key, key))
			return pbtxt_bad(x, at, "'%s': '%s' is mapped twice", map, key);
	if (*num >= SERVE_MAX_IO)
		return pbtxt_bad(x, at, "'%s': more than %d entries", map, SERVE_MAX_IO);
	snprintf(m[*num].key, sizeof(m[0].key), "%s", key);
	snprintf(m[*num].value, sizeof(m[0].value), "%s", value);
	(*num)++;
	return 0;
}

/*
 * An input_map / output_map: one entry { key: "k" value: "v" } in text
 * format, or {"k": "v", ...} as a map in JSON.
 */
static int parse_map(struct pbtxt_ctx *x, const struct pbtxt_node *n, struct ensemble_map *m,
		     size_t *num)
{
	const struct pbtxt_node *f;
	char key[SERVE_NAME_MAX] = "", value[SERVE_NAME_MAX] = "";
	int text_form = 0;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	for (f = n->child; f; f = f->next)
		text_form |= !strcmp(f->name, "key") || !strcmp(f->name, "value");
	if (text_form) {
		for (f = n->child; f; f = f->next) {
			if (strcmp(f->name, "key") && strcmp(f->name, "value"))
				return pbtxt_bad(x, f, "unknown field '%s' in '%s'", f->name, n->name);
			if (pbtxt_str(x, f, f->name[0] == 'k' ? key : value, sizeof(key)))
				return SERVE_INVALID;
		}
		return map_add(x, n, n->name, m, num, key, value);
	}
	for (f = n->child; f; f = f->next)
		if (pbtxt_str(x, f, value, sizeof(value)) ||
		    map_add(x, f, n->name, m, num, f->name, value))
			return SERVE_INVALID;
	return SERVE_OK;
}

/* model_operations { op_library_filename: [ "libops.so", ... ] } */
static int parse_model_operations(struct pbtxt_ctx *x, const struct pbtxt_node *n,
				  struct model_config *c)
{
	const struct pbtxt_node *f;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	for (f = n->child; f; f = f->next) {
		char *lib;

		if (strcmp(f->name, "op_library_filename"))
			return pbtxt_bad(x, f, "unknown field '%s' in 'model_operations'", f->name);
		if (c->num_op_libraries == CONFIG_MAX_OP_LIBRARIES)
			return pbtxt_bad(x, f, "more than %d op libraries", CONFIG_MAX_OP_LIBRARIES);
		lib = c->op_libraries[c->num_op_libraries];
		if (pbtxt_str(x, f, lib, SERVE_NAME_MAX))
			return SERVE_INVALID;
		if (!lib[0] || strchr(lib, '/') || lib[0] == '.')
			return pbtxt_bad(x, f, "'op_library_filename' '%s' must be a plain file name (the model's directories and --backend-directory are searched)",
					 lib);
		c->num_op_libraries++;
	}
	return 0;
}

/* ensemble_scheduling { step [ { model_name model_version input_map output_map } ] } */
static int parse_ensemble(struct pbtxt_ctx *x, const struct pbtxt_node *n, struct model_config *c)
{
	const struct pbtxt_node *f, *g;
	int64_t v;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	c->num_steps = 0;
	for (f = n->child; f; f = f->next) {
		struct ensemble_step *st;

		if (strcmp(f->name, "step"))
			return pbtxt_bad(x, f, "unknown field '%s' in 'ensemble_scheduling'", f->name);
		if (pbtxt_want(x, f, 1))
			return SERVE_INVALID;
		if (c->num_steps == CONFIG_MAX_STEPS)
			return pbtxt_bad(x, f, "more than %d ensemble steps", CONFIG_MAX_STEPS);
		st = &c->steps[c->num_steps];
		memset(st, 0, sizeof(*st));
		st->version = -1;
		for (g = f->child; g; g = g->next) {
			if (!strcmp(g->name, "model_name")) {
				if (pbtxt_str(x, g, st->model, sizeof(st->model)))
					return SERVE_INVALID;
			} else if (!strcmp(g->name, "model_version")) {
				if (pbtxt_int(x, g, -1, INT64_MAX, &v))
					return SERVE_INVALID;
				st->version = v ? v : -1;
			} else if (!strcmp(g->name, "input_map")) {
				if (parse_map(x, g, st->in, &st->num_in))
					return SERVE_INVALID;
			} else if (!strcmp(g->name, "output_map")) {
				if (parse_map(x, g, st->out, &st->num_out))
					return SERVE_INVALID;
			} else {
				return pbtxt_bad(x, g, "unknown field '%s' in an ensemble 'step'", g->name);
			}
		}
		if (!st->model[0])
			return pbtxt_bad(x, f, "ensemble step %zu has no 'model_name'", c->num_steps);
		if (!st->num_out)
			return pbtxt_bad(x, f, "ensemble step %zu ('%s') has no 'output_map'", c->num_steps,
				   st->model);
		c->num_steps++;
	}
	if (!c->num_steps)
		return pbtxt_bad(x, n, "'ensemble_scheduling' has no 'step'");
	return SERVE_OK;
}

static int parse_response_cache(struct pbtxt_ctx *x, const struct pbtxt_node *n,
				struct model_config *c)
{
	const struct pbtxt_node *f;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	for (f = n->child; f; f = f->next) {
		if (strcmp(f->name, "enable"))
			return pbtxt_bad(x, f, "unknown field '%s' in 'response_cache'", f->name);
		if (pbtxt_bool(x, f, &c->response_cache))
			return SERVE_INVALID;
	}
	return 0;
}

/*
 * As Triton: a response cache is refused where a response depends on more
 * than the request's inputs (a sequence's state) or is made by other models
 * (an ensemble's steps cache their own).
 */
static int check_response_cache(struct pbtxt_ctx *x, const struct pbtxt_node *root)
{
	const struct pbtxt_node *f, *cache = NULL, *seq = NULL, *ens = NULL;
	int enable = 0;

	for (f = root->child; f; f = f->next) {
		if (!strcmp(f->name, "response_cache"))
			cache = f;
		else if (!strcmp(f->name, "sequence_batching"))
			seq = f;
		else if (!strcmp(f->name, "platform") && f->kind != PBTXT_MESSAGE && f->text &&
			 !strcmp(f->text, "ensemble"))
			ens = f;
		else if (!strcmp(f->name, "ensemble_scheduling") && !ens)
			ens = f;
	}
	if (!cache || cache->kind != PBTXT_MESSAGE)
		return 0;
	for (f = cache->child; f; f = f->next)
		if (!strcmp(f->name, "enable") && f->kind != PBTXT_MESSAGE && f->text &&
		    (!strcmp(f->text, "true") || !strcmp(f->text, "True") || !strcmp(f->text, "1")))
			enable = 1;
	if (enable && seq)
		return pbtxt_bad(x, cache, "'response_cache' is not supported for models with 'sequence_batching' (a response depends on the sequence's state, not only on the request)");
	if (enable && ens)
		return pbtxt_bad(x, cache, "'response_cache' is not supported for ensembles (platform \"ensemble\"): enable it on the steps' models");
	return 0;
}

static int config_from_tree(struct model_config *c, const struct pbtxt_node *root,
			    struct pbtxt_ctx *x)
{
	const struct pbtxt_node *f;
	int64_t v;
	int groups = 0, have_inputs = 0, have_outputs = 0;
	size_t i;

	if (check_response_cache(x, root))
		return SERVE_INVALID;
	for (f = root->child; f; f = f->next) {
		if (!strcmp(f->name, "name")) {
			char name[SERVE_NAME_MAX];

			if (pbtxt_str(x, f, name, sizeof(name)))
				return SERVE_INVALID;
			if (name[0] && c->name[0] && strcmp(name, c->name))
				return pbtxt_bad(x, f, "'name' is '%s' but the model directory is '%s'",
					   name, c->name);
		} else if (!strcmp(f->name, "platform")) {
			if (pbtxt_str(x, f, c->platform, sizeof(c->platform)))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "backend")) {
			if (pbtxt_str(x, f, c->backend, sizeof(c->backend)))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "default_model_filename")) {
			if (pbtxt_str(x, f, c->default_model_filename, sizeof(c->default_model_filename)))
				return SERVE_INVALID;
			if (strchr(c->default_model_filename, '/') || c->default_model_filename[0] == '.')
				return pbtxt_bad(x, f, "'default_model_filename' must be a plain file name");
		} else if (!strcmp(f->name, "max_batch_size")) {
			if (pbtxt_int(x, f, 0, 1 << 20, &v))
				return SERVE_INVALID;
			c->max_batch_size = (int)v;
		} else if (!strcmp(f->name, "input") || !strcmp(f->name, "output")) {
			int is_in = f->name[0] == 'i';
			size_t *num = is_in ? &c->num_inputs : &c->num_outputs;

			if (is_in && !have_inputs) {
				c->num_inputs = 0;
				have_inputs = 1;
			}
			if (!is_in && !have_outputs) {
				c->num_outputs = 0;
				have_outputs = 1;
			}
			if (*num >= SERVE_MAX_IO)
				return pbtxt_bad(x, f, "more than %d '%s' tensors", SERVE_MAX_IO, f->name);
			if (parse_tensor(x, f, is_in ? &c->inputs[*num] : &c->outputs[*num]))
				return SERVE_INVALID;
			for (i = 0; i < *num; i++)
				if (!strcmp((is_in ? c->inputs : c->outputs)[i].name,
					    (is_in ? c->inputs : c->outputs)[*num].name))
					return pbtxt_bad(x, f, "%s '%s' is listed twice", f->name,
						   (is_in ? c->inputs : c->outputs)[i].name);
			(*num)++;
		} else if (!strcmp(f->name, "version_policy")) {
			if (parse_version_policy(x, f, c))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "dynamic_batching")) {
			if (parse_dynamic_batching(x, f, c))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "instance_group")) {
			if (parse_instance_group(x, f, c, &groups))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "parameters")) {
			if (parse_parameter(x, f, c))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "ensemble_scheduling")) {
			if (parse_ensemble(x, f, c))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "model_operations")) {
			if (parse_model_operations(x, f, c))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "response_cache")) {
			if (parse_response_cache(x, f, c))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "sequence_batching")) {
			if (sequence_config_parse(c, f, x->origin, x->err))
				return SERVE_INVALID;
		} else {
			int known = 0;

			for (i = 0; i < sizeof(ignored_fields) / sizeof(ignored_fields[0]); i++)
				if (!strcmp(f->name, ignored_fields[i]))
					known = 1;
			if (!known)
				return pbtxt_bad(x, f, "unknown field '%s'", f->name);
			serve_log(SERVE_LOG_WARN, "%s:%d:%d: '%s' is ignored", x->origin,
				  f->line, f->col, f->name);
		}
	}
	if (c->platform[0] && strcmp(c->platform, "onnxruntime_onnx") &&
	    strcmp(c->platform, "npu") && strcmp(c->platform, "ensemble"))
		return pbtxt_bad(x, NULL, "'platform' '%s' is not supported (onnxruntime_onnx, npu, ensemble)",
			   c->platform);
	if (!strcmp(c->platform, "ensemble") != (c->num_steps > 0))
		return pbtxt_bad(x, NULL, c->num_steps ? "'ensemble_scheduling' needs platform \"ensemble\""
						 : "platform \"ensemble\" needs 'ensemble_scheduling'");
	/* Any other backend is a library of C steps (npu_serve_backend.h). */
	if (c->backend[0] && c->num_steps)
		return pbtxt_bad(x, NULL, "an ensemble has no 'backend'");
	for (i = 0; i < c->num_preferred; i++)
		if (c->max_batch_size && c->preferred[i] > c->max_batch_size)
			return pbtxt_bad(x, NULL, "'preferred_batch_size' %" PRId64 " exceeds max_batch_size %d",
				   c->preferred[i], c->max_batch_size);
	for (i = 1; i <= CONFIG_MAX_LEVELS; i++)
		if (c->level_policy_set[i] && (int)i > c->priority_levels)
			return pbtxt_bad(x, NULL, "'priority_queue_policy' for level %zu but priority_levels is %d",
				   i, c->priority_levels);
	return SERVE_OK;
}

int config_parse_pbtxt(struct model_config *c, const char *text, size_t len,
		       const char *origin, char *err)
{
	char perr[256];
	struct pbtxt_node *root = pbtxt_parse(text, len, perr, sizeof(perr));
	struct pbtxt_ctx x = { origin, NULL, err };
	int r;

	if (!root)
		return serve_err(err, SERVE_INVALID, "%s:%s", origin, perr);
	r = config_from_tree(c, root, &x);
	pbtxt_free(root);
	return r;
}

/* JSON -> the same field tree (objects are messages, arrays repeat). */
static struct pbtxt_node *json_to_nodes(const char *name, const json_t *j, int depth);

static struct pbtxt_node *json_node(const char *name, const json_t *j, int depth)
{
	struct pbtxt_node *n = calloc(1, sizeof(*n));
	char buf[64];

	if (!n)
		return NULL;
	n->name = strdup(name ? name : "");
	if (json_is_object(j)) {
		const char *k;
		json_t *v;
		struct pbtxt_node *tail = NULL;

		n->kind = PBTXT_MESSAGE;
		if (depth > 16)
			return n;
		json_object_foreach((json_t *)j, k, v) {
			struct pbtxt_node *c = json_to_nodes(k, v, depth + 1), *last;

			if (!c)
				continue;
			for (last = c; last->next; last = last->next)
				;
			if (tail)
				tail->next = c;
			else
				n->child = c;
			tail = last;
		}
		return n;
	}
	if (json_is_string(j)) {
		n->kind = PBTXT_STRING;
		n->text = strdup(json_string_value(j));
		n->text_len = json_string_length(j);
	} else {
		n->kind = PBTXT_SCALAR;
		if (json_is_integer(j))
			snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		else if (json_is_real(j))
			snprintf(buf, sizeof(buf), "%.17g", json_real_value(j));
		else if (json_is_true(j))
			snprintf(buf, sizeof(buf), "true");
		else if (json_is_false(j))
			snprintf(buf, sizeof(buf), "false");
		else
			snprintf(buf, sizeof(buf), "null");
		n->text = strdup(buf);
		n->text_len = strlen(buf);
	}
	return n;
}

static struct pbtxt_node *json_to_nodes(const char *name, const json_t *j, int depth)
{
	struct pbtxt_node *head = NULL, *tail = NULL;
	size_t i;
	json_t *v;

	if (!json_is_array(j))
		return json_node(name, j, depth);
	json_array_foreach((json_t *)j, i, v) {
		struct pbtxt_node *n = json_node(name, v, depth);

		if (!n)
			break;
		if (tail)
			tail->next = n;
		else
			head = n;
		tail = n;
	}
	return head;
}

int config_parse_json(struct model_config *c, const json_t *json, char *err)
{
	struct pbtxt_node *root;
	struct pbtxt_ctx x = { "config override", NULL, err };
	int r;

	if (!json_is_object(json))
		return serve_err(err, SERVE_INVALID, "config override: must be a JSON object");
	root = json_node(NULL, json, 0);
	if (!root)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	r = config_from_tree(c, root, &x);
	pbtxt_free(root);
	return r;
}

/* ---- Against the model -------------------------------------------------- */

/*
 * An output as the model declares it. The importer leaves an output's
 * type to shape inference when it has a producer, so a model with dynamic
 * dims may report it undefined: then take it from the plan for the inputs
 * with every unknown dim at 1 (dims that were dynamic in inputs' first
 * dim stay -1).
 */
static npu_status output_info(const struct npu_model *cm, size_t index,
			      struct npu_tensor_info *info)
{
	struct npu_model *m = (struct npu_model *)cm;	/* plans are cached in it */
	struct npu_host_tensor shapes[SERVE_MAX_IO];
	struct npu_plan *plan;
	size_t n = npu_model_num_inputs(m), i;
	int batch_dynamic = 1, d;
	npu_status st = npu_model_output_info(m, index, info);

	if (st != NPU_OK || (info->dtype != NPU_TYPE_UNDEFINED && info->rank >= 0))
		return st;
	if (n > SERVE_MAX_IO)
		return NPU_OK;
	for (i = 0; i < n; i++) {
		struct npu_tensor_info in;

		if (npu_model_input_info(m, i, &in) != NPU_OK || in.rank < 0)
			return NPU_OK;
		memset(&shapes[i], 0, sizeof(shapes[i]));
		shapes[i].name = in.name;
		shapes[i].dtype = in.dtype;
		shapes[i].rank = in.rank;
		for (d = 0; d < in.rank; d++)
			shapes[i].dims[d] = in.dims[d] > 0 ? in.dims[d] : 1;
		if (in.rank < 1 || in.dims[0] > 0)
			batch_dynamic = 0;
	}
	if (npu_model_get_plan(m, shapes, n, &plan) != NPU_OK)
		return NPU_OK;
	if (npu_plan_output_info(plan, index, info) == NPU_OK && batch_dynamic &&
	    info->rank >= 1)
		info->dims[0] = -1;
	npu_plan_release(plan);
	return NPU_OK;
}

static int complete_side(struct model_config *c, const struct npu_model *m,
			 int inputs, int given, char *err)
{
	size_t n = inputs ? npu_model_num_inputs(m) : npu_model_num_outputs(m);
	size_t *num = inputs ? &c->num_inputs : &c->num_outputs;
	struct config_tensor *t = inputs ? c->inputs : c->outputs;
	const char *what = inputs ? "input" : "output";
	size_t i, j;
	int b = c->max_batch_size > 0;

	if (n > SERVE_MAX_IO)
		return serve_err(err, SERVE_INVALID, "the model has %zu %ss, more than %d",
				 n, what, SERVE_MAX_IO);
	if (!given || !*num) {
		*num = 0;
		for (i = 0; i < n; i++) {
			struct npu_tensor_info info;
			struct config_tensor *x = &t[*num];
			int k;

			if ((inputs ? npu_model_input_info(m, i, &info)
				    : output_info(m, i, &info)) != NPU_OK)
				return serve_err(err, SERVE_INTERNAL, "%s", npu_last_error());
			/* The server feeds sequence controls and states itself. */
			if (sequence_implicit_tensor(c, info.name, inputs))
				continue;
			(*num)++;
			memset(x, 0, sizeof(*x));
			snprintf(x->name, sizeof(x->name), "%s", info.name);
			x->dtype = info.dtype;
			if (info.rank < 0) {
				x->rank = 1;
				x->dims[0] = -1;
				continue;
			}
			if (b && info.rank < 1)
				return serve_err(err, SERVE_INVALID,
						 "max_batch_size is %d but %s '%s' has no batch dim",
						 c->max_batch_size, what, info.name);
			x->rank = info.rank - b;
			for (k = 0; k < x->rank; k++)
				x->dims[k] = info.dims[k + b];
		}
		return SERVE_OK;
	}
	/* Given: every tensor must exist in the model and agree. */
	for (j = 0; j < *num; j++) {
		struct npu_tensor_info info;
		int found = 0, k;

		for (i = 0; i < n && !found; i++) {
			if ((inputs ? npu_model_input_info(m, i, &info)
				    : output_info(m, i, &info)) != NPU_OK)
				return serve_err(err, SERVE_INTERNAL, "%s", npu_last_error());
			found = !strcmp(info.name, t[j].name);
		}
		if (!found)
			return serve_err(err, SERVE_INVALID,
					 "config %s '%s' is not a %s of the model", what,
					 t[j].name, what);
		if (info.dtype != NPU_TYPE_UNDEFINED && info.dtype != t[j].dtype)
			return serve_err(err, SERVE_INVALID,
					 "config %s '%s': data_type %s but the model has %s",
					 what, t[j].name, serve_config_dtype_name(t[j].dtype),
					 serve_config_dtype_name(info.dtype));
		if (info.rank < 0)
			continue;
		if (info.rank != t[j].rank + b)
			return serve_err(err, SERVE_INVALID,
					 "config %s '%s': %d dims%s but the model has %d",
					 what, t[j].name, t[j].rank,
					 b ? " plus the batch dim" : "", info.rank);
		if (b && info.dims[0] > 0 && c->max_batch_size > 1)
			return serve_err(err, SERVE_INVALID,
					 "config %s '%s': max_batch_size %d but the model's first dim is fixed at %" PRId64,
					 what, t[j].name, c->max_batch_size, info.dims[0]);
		for (k = 0; k < t[j].rank; k++)
			if (info.dims[k + b] > 0 && t[j].dims[k] > 0 &&
			    info.dims[k + b] != t[j].dims[k])
				return serve_err(err, SERVE_INVALID,
						 "config %s '%s': dims[%d] is %" PRId64 " but the model has %" PRId64,
						 what, t[j].name, k, t[j].dims[k], info.dims[k + b]);
	}
	if (inputs) {
		size_t implicit = 0;

		for (i = 0; i < n; i++) {
			struct npu_tensor_info info;

			if (npu_model_input_info(m, i, &info) == NPU_OK &&
			    sequence_implicit_tensor(c, info.name, 1))
				implicit++;
		}
		if (*num + implicit != n)
			return serve_err(err, SERVE_INVALID,
					 "the config lists %zu inputs but the model has %zu%s", *num,
					 n - implicit, implicit ? " besides the sequence controls and states" : "");
	}
	return SERVE_OK;
}

int config_complete(struct model_config *c, const struct npu_model *m,
		    int config_given, char *err)
{
	int r;

	if (!config_given || (!c->num_inputs && !c->max_batch_size)) {
		/* Triton's ONNX auto-complete: batching when every input
		 * and output has a dynamic first dim (default max 4). */
		size_t i, n_in = npu_model_num_inputs(m), n_out = npu_model_num_outputs(m);
		int batchable = n_in > 0;

		for (i = 0; i < n_in + n_out && batchable; i++) {
			struct npu_tensor_info info;

			if ((i < n_in ? npu_model_input_info(m, i, &info)
				      : output_info(m, i - n_in, &info)) != NPU_OK ||
			    info.rank < 1 || info.dims[0] > 0)
				batchable = 0;
		}
		if (batchable && !c->num_inputs) {
			c->max_batch_size = 4;
			if (!config_given)
				c->dynamic_batching = 1;
		}
	}
	/* First: a control or state the model lacks says more than an input count. */
	r = sequence_config_check(c, m, err);
	if (r)
		return r;
	r = complete_side(c, m, 1, config_given, err);
	if (r)
		return r;
	return complete_side(c, m, 0, config_given, err);
}

/* ---- To JSON -------------------------------------------------------------- */

static json_t *tensors_json(const struct config_tensor *t, size_t n)
{
	json_t *a = json_array();
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		json_t *dims = json_array();

		for (k = 0; k < t[i].rank; k++)
			json_array_append_new(dims, json_integer(t[i].dims[k]));
		json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "name", t[i].name,
						   "data_type", serve_config_dtype_name(t[i].dtype),
						   "dims", dims));
	}
	return a;
}

static json_t *queue_policy_json(const struct queue_policy *q)
{
	return json_pack("{s:I, s:I, s:b, s:s}",
			 "max_queue_size", (json_int_t)q->max_queue_size,
			 "default_timeout_microseconds", (json_int_t)q->default_timeout_us,
			 "allow_timeout_override", q->allow_timeout_override,
			 "timeout_action", q->timeout_action_delay ? "DELAY" : "REJECT");
}

json_t *config_to_json(const struct model_config *c)
{
	json_t *o = json_object(), *vp, *ig, *params;
	size_t i;

	json_object_set_new(o, "name", json_string(c->name));
	json_object_set_new(o, "platform", json_string(c->platform[0] ? c->platform : "onnxruntime_onnx"));
	json_object_set_new(o, "backend", json_string(c->backend[0] ? c->backend : "npu"));
	if (c->vp_kind == VP_LATEST) {
		vp = json_pack("{s:{s:i}}", "latest", "num_versions", c->vp_latest);
	} else if (c->vp_kind == VP_ALL) {
		vp = json_pack("{s:{}}", "all");
	} else {
		json_t *v = json_array();

		for (i = 0; i < c->vp_count; i++)
			json_array_append_new(v, json_integer(c->vp_versions[i]));
		vp = json_pack("{s:{s:o}}", "specific", "versions", v);
	}
	json_object_set_new(o, "version_policy", vp);
	json_object_set_new(o, "max_batch_size", json_integer(c->max_batch_size));
	json_object_set_new(o, "input", tensors_json(c->inputs, c->num_inputs));
	json_object_set_new(o, "output", tensors_json(c->outputs, c->num_outputs));
	if (c->dynamic_batching) {
		json_t *db = json_object(), *pref = json_array(), *levels = json_object();

		for (i = 0; i < c->num_preferred; i++)
			json_array_append_new(pref, json_integer(c->preferred[i]));
		json_object_set_new(db, "preferred_batch_size", pref);
		json_object_set_new(db, "max_queue_delay_microseconds",
				    json_integer((json_int_t)c->max_queue_delay_us));
		json_object_set_new(db, "preserve_ordering", json_boolean(c->preserve_ordering));
		json_object_set_new(db, "priority_levels", json_integer(c->priority_levels));
		json_object_set_new(db, "default_priority_level",
				    json_integer(c->default_priority_level));
		json_object_set_new(db, "default_queue_policy",
				    queue_policy_json(&c->default_queue_policy));
		for (i = 1; i <= CONFIG_MAX_LEVELS; i++) {
			char key[16];

			if (!c->level_policy_set[i])
				continue;
			snprintf(key, sizeof(key), "%zu", i);
			json_object_set_new(levels, key, queue_policy_json(&c->level_policy[i]));
		}
		json_object_set_new(db, "priority_queue_policy", levels);
		json_object_set_new(o, "dynamic_batching", db);
	}
	if (c->sequence.enabled)
		json_object_set_new(o, "sequence_batching", sequence_config_json(&c->sequence));
	ig = json_array();
	for (i = 0; i < (size_t)(c->num_groups ? c->num_groups : 1); i++) {
		json_t *g = json_pack("{s:i, s:s}", "count",
				      c->num_groups ? c->group_count[i] : c->instance_count, "kind",
				      c->kind == KIND_CPU ? "KIND_CPU" :
				      c->kind == KIND_NPU ? "KIND_NPU" : "KIND_AUTO");
		uint64_t gpus = c->num_groups ? c->group_gpus[i] : 0;
		json_t *list = json_array();
		int k;

		for (k = 0; k < 64; k++)
			if (gpus >> k & 1)
				json_array_append_new(list, json_integer(k));
		if (json_array_size(list))
			json_object_set_new(g, "gpus", list);
		else
			json_decref(list);
		if (c->num_groups && (c->group_num_resources[i] || c->group_priority[i])) {
			json_t *res = json_array();
			int r;

			for (r = 0; r < c->group_num_resources[i]; r++)
				json_array_append_new(res, json_pack("{s:s, s:b, s:I}",
					"name", c->group_resources[i][r].name,
					"global", c->group_resources[i][r].global,
					"count", (json_int_t)c->group_resources[i][r].count));
			json_object_set_new(g, "rate_limiter", json_pack("{s:o, s:I}", "resources", res,
					    "priority", (json_int_t)c->group_priority[i]));
		}
		json_array_append_new(ig, g);
	}
	json_object_set_new(o, "instance_group", ig);
	params = json_object();
	for (i = 0; i < c->num_params; i++)
		json_object_set_new(params, c->param_key[i],
				    json_pack("{s:s}", "string_value", c->param_value[i]));
	json_object_set_new(o, "parameters", params);
	if (c->response_cache)
		json_object_set_new(o, "response_cache", json_pack("{s:b}", "enable", 1));
	if (c->default_model_filename[0])
		json_object_set_new(o, "default_model_filename",
				    json_string(c->default_model_filename));
	if (c->num_op_libraries) {
		json_t *libs = json_array();

		for (i = 0; i < c->num_op_libraries; i++)
			json_array_append_new(libs, json_string(c->op_libraries[i]));
		json_object_set_new(o, "model_operations",
				    json_pack("{s:o}", "op_library_filename", libs));
	}
	if (c->num_steps) {
		json_t *steps = json_array();

		for (i = 0; i < c->num_steps; i++) {
			const struct ensemble_step *st = &c->steps[i];
			json_t *in = json_object(), *out = json_object();
			size_t k;

			for (k = 0; k < st->num_in; k++)
				json_object_set_new(in, st->in[k].key, json_string(st->in[k].value));
			for (k = 0; k < st->num_out; k++)
				json_object_set_new(out, st->out[k].key, json_string(st->out[k].value));
			json_array_append_new(steps, json_pack("{s:s, s:I, s:o, s:o}",
							       "model_name", st->model,
							       "model_version", (json_int_t)st->version,
							       "input_map", in, "output_map", out));
		}
		json_object_set_new(o, "ensemble_scheduling", json_pack("{s:o}", "step", steps));
	}
	return o;
}
