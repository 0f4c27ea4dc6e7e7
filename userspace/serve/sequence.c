// SPDX-License-Identifier: MIT
/* sequence: Triton's sequence batcher (see sequence.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batcher.h"
#include "metrics.h"
#include "model_config.h"
#include "pbtxt.h"
#include "sequence.h"

/* ---- Config ------------------------------------------------------------------ */

static int name_of(const struct pbtxt_ctx *x, const struct pbtxt_node *n, char *out)
{
	if (pbtxt_want(x, n, 0))
		return SERVE_INVALID;
	if (n->text_len >= SERVE_NAME_MAX || strlen(n->text) != n->text_len || !n->text_len)
		return pbtxt_bad(x, n, "'%s': empty, too long or holding a NUL", n->name);
	memcpy(out, n->text, n->text_len + 1);
	return 0;
}

static int dtype_of(const struct pbtxt_ctx *x, const struct pbtxt_node *n, enum npu_data_type *out)
{
	if (pbtxt_want(x, n, 0))
		return SERVE_INVALID;
	*out = serve_config_dtype_parse(n->text);
	if (*out == NPU_TYPE_UNDEFINED)
		return pbtxt_bad(x, n, "'%s': '%s' is not a supported type (TYPE_FP32, TYPE_INT32, ...)",
			   n->name, n->text);
	return 0;
}

static int dim_of(const struct pbtxt_ctx *x, const struct pbtxt_node *n, int *rank, int64_t *dims)
{
	int64_t v;

	if (*rank >= NPU_MODEL_MAX_RANK)
		return pbtxt_bad(x, n, "'dims': more than %d dims", NPU_MODEL_MAX_RANK);
	if (pbtxt_int(x, n, -1, INT32_MAX, &v))
		return SERVE_INVALID;
	if (v == 0)
		return pbtxt_bad(x, n, "'dims': 0 is not a valid dim (-1 means any)");
	dims[(*rank)++] = v;
	return 0;
}

static const char *const control_kinds[] = {
	"CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_READY", "CONTROL_SEQUENCE_END",
	"CONTROL_SEQUENCE_CORRID",
};

/* control_input { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } ] } */
static int parse_control_input(const struct pbtxt_ctx *x, const struct pbtxt_node *n, struct sequence_config *sc)
{
	struct seq_control *ctl;
	const struct pbtxt_node *f, *g;
	int have_control = 0, have_kind = 0, values = 0, have_type = 0;
	size_t i;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	if (sc->num_controls == SEQ_MAX_CONTROLS)
		return pbtxt_bad(x, n, "more than %d control inputs", SEQ_MAX_CONTROLS);
	ctl = &sc->controls[sc->num_controls];
	memset(ctl, 0, sizeof(*ctl));
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "name")) {
			if (name_of(x, f, ctl->input))
				return SERVE_INVALID;
			continue;
		}
		if (strcmp(f->name, "control"))
			return pbtxt_bad(x, f, "unknown field '%s' in 'control_input'", f->name);
		if (pbtxt_want(x, f, 1))
			return SERVE_INVALID;
		if (have_control++)
			return pbtxt_bad(x, f, "control input '%s' has more than one 'control' (one each)",
				   ctl->input);
		for (g = f->child; g; g = g->next) {
			if (!strcmp(g->name, "kind")) {
				if (pbtxt_want(x, g, 0))
					return SERVE_INVALID;
				for (i = 0; i < 4 && strcmp(g->text, control_kinds[i]); i++)
					;
				if (i == 4)
					return pbtxt_bad(x, g, "'kind': '%s' is not CONTROL_SEQUENCE_START, _READY, _END or _CORRID",
						   g->text);
				ctl->kind = (enum seq_control_kind)i;
				have_kind = 1;
			} else if (!strcmp(g->name, "int32_false_true") ||
				   !strcmp(g->name, "fp32_false_true") ||
				   !strcmp(g->name, "bool_false_true")) {
				enum npu_data_type t = g->name[0] == 'i' ? NPU_TYPE_INT32 :
						       g->name[0] == 'f' ? NPU_TYPE_FLOAT : NPU_TYPE_BOOL;
				double v;
				int b;

				if (values && ctl->dtype != t)
					return pbtxt_bad(x, g, "control input '%s' mixes int32_false_true, fp32_false_true and bool_false_true",
						   ctl->input);
				if (values == 2)
					return pbtxt_bad(x, g, "'%s' takes two values: false, then true", g->name);
				if (t == NPU_TYPE_BOOL) {
					if (pbtxt_bool(x, g, &b))
						return SERVE_INVALID;
					v = b;
				} else if (pbtxt_double(x, g, &v)) {
					return SERVE_INVALID;
				}
				ctl->dtype = t;
				ctl->false_true[values++] = v;
			} else if (!strcmp(g->name, "data_type")) {
				if (dtype_of(x, g, &ctl->dtype))
					return SERVE_INVALID;
				have_type = 1;
			} else {
				return pbtxt_bad(x, g, "unknown field '%s' in 'control'", g->name);
			}
		}
	}
	if (!ctl->input[0])
		return pbtxt_bad(x, n, "a 'control_input' without a 'name'");
	if (!have_control || !have_kind)
		return pbtxt_bad(x, n, "control input '%s' needs a 'control { kind: ... }'", ctl->input);
	if (ctl->kind == SEQ_CONTROL_CORRID) {
		if (!have_type || values)
			return pbtxt_bad(x, n, "control input '%s': CONTROL_SEQUENCE_CORRID takes a 'data_type' (TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING) and no false/true values",
				   ctl->input);
		if (ctl->dtype != NPU_TYPE_UINT64 && ctl->dtype != NPU_TYPE_INT64 &&
		    ctl->dtype != NPU_TYPE_UINT32 && ctl->dtype != NPU_TYPE_INT32 &&
		    ctl->dtype != NPU_TYPE_STRING)
			return pbtxt_bad(x, n, "control input '%s': CONTROL_SEQUENCE_CORRID's data_type must be TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING",
				   ctl->input);
	} else if (values != 2 || have_type) {
		return pbtxt_bad(x, n, "control input '%s': %s takes two values (false, true) in int32_false_true, fp32_false_true or bool_false_true, and no data_type",
			   ctl->input, control_kinds[ctl->kind]);
	}
	for (i = 0; i < sc->num_controls; i++) {
		if (!strcmp(sc->controls[i].input, ctl->input))
			return pbtxt_bad(x, n, "control input '%s' is listed twice", ctl->input);
		if (sc->controls[i].kind == ctl->kind)
			return pbtxt_bad(x, n, "two control inputs of kind %s", control_kinds[ctl->kind]);
	}
	sc->num_controls++;
	return 0;
}

static int parse_state(const struct pbtxt_ctx *x, const struct pbtxt_node *n, struct sequence_config *sc)
{
	struct seq_state *st;
	const struct pbtxt_node *f, *g;
	int have_type = 0, have_dims = 0, have_init = 0;
	size_t i;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	if (sc->num_states == SEQ_MAX_STATES)
		return pbtxt_bad(x, n, "more than %d states", SEQ_MAX_STATES);
	st = &sc->states[sc->num_states];
	memset(st, 0, sizeof(*st));
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "input_name")) {
			if (name_of(x, f, st->input))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "output_name")) {
			if (name_of(x, f, st->output))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "data_type")) {
			if (dtype_of(x, f, &st->dtype))
				return SERVE_INVALID;
			have_type = 1;
		} else if (!strcmp(f->name, "dims")) {
			if (dim_of(x, f, &st->rank, st->dims))
				return SERVE_INVALID;
			have_dims = 1;
		} else if (!strcmp(f->name, "initial_state")) {
			int zero = 0, init_type = 0;
			enum npu_data_type t = NPU_TYPE_UNDEFINED;

			if (pbtxt_want(x, f, 1))
				return SERVE_INVALID;
			if (have_init++)
				return pbtxt_bad(x, f, "state '%s' has more than one 'initial_state'", st->input);
			for (g = f->child; g; g = g->next) {
				if (!strcmp(g->name, "zero_data")) {
					if (pbtxt_bool(x, g, &zero))
						return SERVE_INVALID;
				} else if (!strcmp(g->name, "data_type")) {
					if (dtype_of(x, g, &t))
						return SERVE_INVALID;
					init_type = 1;
				} else if (!strcmp(g->name, "dims")) {
					int64_t v;

					if (pbtxt_int(x, g, 1, INT32_MAX, &v))
						return SERVE_INVALID;
					if (st->initial_rank >= NPU_MODEL_MAX_RANK)
						return pbtxt_bad(x, g, "'dims': more than %d dims", NPU_MODEL_MAX_RANK);
					st->initial_dims[st->initial_rank++] = v;
				} else if (!strcmp(g->name, "name")) {
					if (name_of(x, g, st->initial_name))
						return SERVE_INVALID;
				} else if (!strcmp(g->name, "data_file")) {
					return pbtxt_bad(x, g, "state '%s': initial_state 'data_file' is not supported (zero_data: true)",
						   st->input);
				} else {
					return pbtxt_bad(x, g, "unknown field '%s' in 'initial_state'", g->name);
				}
			}
			if (!zero)
				return pbtxt_bad(x, f, "state '%s': initial_state needs 'zero_data: true'",
					   st->input);
			if (init_type && t != st->dtype && have_type)
				return pbtxt_bad(x, f, "state '%s': initial_state data_type %s but the state is %s",
					   st->input, serve_config_dtype_name(t),
					   serve_config_dtype_name(st->dtype));
			st->has_initial = 1;
		} else if (!strcmp(f->name, "use_same_buffer_for_input_output") ||
			   !strcmp(f->name, "use_growable_memory")) {
			/* GPU memory hints: nothing to do on the host */
		} else {
			return pbtxt_bad(x, f, "unknown field '%s' in 'state'", f->name);
		}
	}
	if (!st->input[0] || !st->output[0] || !have_type)
		return pbtxt_bad(x, n, "a 'state' needs 'input_name', 'output_name' and 'data_type'");
	if (!have_dims)
		return pbtxt_bad(x, n, "state '%s' needs 'dims' (without the batch dim)", st->input);
	if (st->has_initial) {
		if (st->initial_rank != st->rank)
			return pbtxt_bad(x, n, "state '%s': initial_state has %d dims but the state has %d",
				   st->input, st->initial_rank, st->rank);
		for (i = 0; i < (size_t)st->rank; i++)
			if (st->dims[i] > 0 && st->initial_dims[i] != st->dims[i])
				return pbtxt_bad(x, n, "state '%s': initial_state dims[%zu] is %" PRId64 " but the state's is %" PRId64,
					   st->input, i, st->initial_dims[i], st->dims[i]);
	} else {
		for (i = 0; i < (size_t)st->rank; i++)
			if (st->dims[i] < 0)
				return pbtxt_bad(x, n, "state '%s' has a variable dim: give its START shape in initial_state { zero_data: true dims: [...] }",
					   st->input);
		st->initial_rank = st->rank;
		memcpy(st->initial_dims, st->dims, sizeof(st->dims));
	}
	if (st->dtype == NPU_TYPE_STRING)
		return pbtxt_bad(x, n, "state '%s': TYPE_STRING state is not supported", st->input);
	for (i = 0; i < sc->num_states; i++)
		if (!strcmp(sc->states[i].input, st->input) ||
		    !strcmp(sc->states[i].output, st->output))
			return pbtxt_bad(x, n, "state '%s' / '%s' is listed twice", st->input, st->output);
	sc->num_states++;
	return 0;
}

static int parse_strategy(const struct pbtxt_ctx *x, const struct pbtxt_node *n, struct sequence_config *sc,
			  int *have_strategy)
{
	const struct pbtxt_node *f;
	int64_t v;

	if (pbtxt_want(x, n, 1))
		return SERVE_INVALID;
	if ((*have_strategy)++)
		return pbtxt_bad(x, n, "give one strategy: 'direct' or 'oldest'");
	sc->strategy = n->name[0] == 'd' ? SEQ_DIRECT : SEQ_OLDEST;
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "max_queue_delay_microseconds")) {
			if (pbtxt_int(x, f, 0, INT64_MAX / 1000, &v))
				return SERVE_INVALID;
			sc->max_queue_delay_us = (uint64_t)v;
		} else if (sc->strategy == SEQ_DIRECT && !strcmp(f->name, "minimum_slot_utilization")) {
			if (pbtxt_double(x, f, &sc->minimum_slot_utilization))
				return SERVE_INVALID;
		} else if (sc->strategy == SEQ_OLDEST && !strcmp(f->name, "max_candidate_sequences")) {
			if (pbtxt_int(x, f, 1, INT32_MAX, &v))
				return SERVE_INVALID;
			sc->max_candidates = (int)v;
		} else if (sc->strategy == SEQ_OLDEST && !strcmp(f->name, "preferred_batch_size")) {
			if (sc->num_preferred == SEQ_MAX_PREFERRED)
				return pbtxt_bad(x, f, "more than %d preferred_batch_size", SEQ_MAX_PREFERRED);
			if (pbtxt_int(x, f, 1, INT32_MAX, &v))
				return SERVE_INVALID;
			sc->preferred[sc->num_preferred++] = v;
		} else if (sc->strategy == SEQ_OLDEST && !strcmp(f->name, "preserve_ordering")) {
			if (pbtxt_bool(x, f, &sc->preserve_ordering))
				return SERVE_INVALID;
		} else {
			return pbtxt_bad(x, f, "unknown field '%s' in '%s'", f->name, n->name);
		}
	}
	return 0;
}

int sequence_config_parse(struct model_config *c, const struct pbtxt_node *n,
			  const char *origin, char *err)
{
	struct sequence_config *sc = &c->sequence;
	struct pbtxt_ctx x = { origin, "sequence_batching", err };
	const struct pbtxt_node *f;
	int have_strategy = 0;
	int64_t v;
	size_t i, k;

	if (pbtxt_want(&x, n, 1))
		return SERVE_INVALID;
	memset(sc, 0, sizeof(*sc));
	sc->enabled = 1;
	sc->strategy = SEQ_DIRECT;	/* Triton's default */
	for (f = n->child; f; f = f->next) {
		if (!strcmp(f->name, "max_sequence_idle_microseconds")) {
			if (pbtxt_int(&x, f, 0, INT64_MAX / 1000, &v))
				return SERVE_INVALID;
			sc->max_idle_us = (uint64_t)v;
		} else if (!strcmp(f->name, "control_input")) {
			if (parse_control_input(&x, f, sc))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "state")) {
			if (parse_state(&x, f, sc))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "direct") || !strcmp(f->name, "oldest")) {
			if (parse_strategy(&x, f, sc, &have_strategy))
				return SERVE_INVALID;
		} else if (!strcmp(f->name, "iterative_sequence")) {
			int it;

			if (pbtxt_bool(&x, f, &it))
				return SERVE_INVALID;
			if (it)
				return pbtxt_bad(&x, f, "'iterative_sequence' is not supported");
		} else {
			return pbtxt_bad(&x, f, "unknown field '%s'", f->name);
		}
	}
	if (!sc->max_idle_us)
		sc->max_idle_us = SEQ_DEFAULT_IDLE_US;
	for (i = 0; i < sc->num_controls; i++)
		for (k = 0; k < sc->num_states; k++)
			if (!strcmp(sc->controls[i].input, sc->states[k].input))
				return pbtxt_bad(&x, n, "'%s' is both a control input and a state input",
					   sc->controls[i].input);
	return SERVE_OK;
}

int sequence_implicit_tensor(const struct model_config *c, const char *name, int inputs)
{
	const struct sequence_config *sc = &c->sequence;
	size_t i;

	if (!sc->enabled)
		return 0;
	for (i = 0; inputs && i < sc->num_controls; i++)
		if (!strcmp(sc->controls[i].input, name))
			return 1;
	for (i = 0; i < sc->num_states; i++)
		if (!strcmp(inputs ? sc->states[i].input : sc->states[i].output, name))
			return 1;
	return 0;
}

static int find_tensor(const struct npu_model *m, int inputs, const char *name,
		       struct npu_tensor_info *info)
{
	size_t n = inputs ? npu_model_num_inputs(m) : npu_model_num_outputs(m), i;

	for (i = 0; i < n; i++)
		if ((inputs ? npu_model_input_info(m, i, info) : npu_model_output_info(m, i, info)) ==
		    NPU_OK && !strcmp(info->name, name))
			return (int)i;
	return -1;
}

/* A state tensor of the model against the config's dims (b: the batch dim first). */
static int check_state_tensor(const struct model_config *c, const struct seq_state *st,
			      const struct npu_tensor_info *info, const char *what, char *err)
{
	int b = c->max_batch_size > 0, k;

	if (info->dtype != NPU_TYPE_UNDEFINED && info->dtype != st->dtype)
		return serve_err(err, SERVE_INVALID,
				 "sequence_batching state %s '%s': data_type %s but the model has %s",
				 what, info->name, serve_config_dtype_name(st->dtype),
				 serve_config_dtype_name(info->dtype));
	if (info->rank < 0)
		return SERVE_OK;
	if (info->rank != st->rank + b)
		return serve_err(err, SERVE_INVALID,
				 "sequence_batching state %s '%s': %d dims%s but the model has %d",
				 what, info->name, st->rank, b ? " plus the batch dim" : "", info->rank);
	for (k = 0; k < st->rank; k++)
		if (info->dims[k + b] > 0 && st->dims[k] > 0 && info->dims[k + b] != st->dims[k])
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching state %s '%s': dims[%d] is %" PRId64 " but the model has %" PRId64,
					 what, info->name, k, st->dims[k], info->dims[k + b]);
	for (k = 0; k < st->rank; k++)
		if (info->dims[k + b] > 0 && st->initial_dims[k] != info->dims[k + b])
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching state %s '%s': initial_state dims[%d] is %" PRId64 " but the model has %" PRId64,
					 what, info->name, k, st->initial_dims[k], info->dims[k + b]);
	return SERVE_OK;
}

int sequence_config_check(const struct model_config *c, const struct npu_model *m, char *err)
{
	const struct sequence_config *sc = &c->sequence;
	struct npu_tensor_info info;
	int b = c->max_batch_size > 0;
	size_t i;

	if (!sc->enabled)
		return SERVE_OK;
	if (c->dynamic_batching)
		return serve_err(err, SERVE_INVALID,
				 "'dynamic_batching' and 'sequence_batching' are one choice of scheduler: give one");
	if (c->num_inputs + sc->num_controls + sc->num_states > SERVE_MAX_IO)
		return serve_err(err, SERVE_INVALID,
				 "inputs, control inputs and state inputs are more than %d", SERVE_MAX_IO);
	for (i = 0; i < sc->num_preferred; i++)
		if (c->max_batch_size > 0 && sc->preferred[i] > c->max_batch_size)
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching oldest: preferred_batch_size %" PRId64 " exceeds max_batch_size %d",
					 sc->preferred[i], c->max_batch_size);
	/* A backend model (m NULL) is checked against its step (backend.c). */
	for (i = 0; m && i < sc->num_controls; i++) {
		const struct seq_control *ctl = &sc->controls[i];

		if (find_tensor(m, 1, ctl->input, &info) < 0)
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching control input '%s' (%s) is not an input of the model",
					 ctl->input, control_kinds[ctl->kind]);
		if (info.dtype != NPU_TYPE_UNDEFINED && info.dtype != ctl->dtype)
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching control input '%s': the config gives it %s but the model has %s",
					 ctl->input, serve_config_dtype_name(ctl->dtype),
					 serve_config_dtype_name(info.dtype));
		if (info.rank >= 0 && (info.rank != 1 + b || (info.dims[b] > 0 && info.dims[b] != 1)))
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching control input '%s' must have shape [1]%s in the model",
					 ctl->input, b ? " after the batch dim" : "");
	}
	for (i = 0; m && i < sc->num_states; i++) {
		const struct seq_state *st = &sc->states[i];
		int r;

		if (find_tensor(m, 1, st->input, &info) < 0)
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching state input '%s' is not an input of the model",
					 st->input);
		if ((r = check_state_tensor(c, st, &info, "input", err)))
			return r;
		if (find_tensor(m, 0, st->output, &info) < 0)
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching state output '%s' is not an output of the model",
					 st->output);
		if ((r = check_state_tensor(c, st, &info, "output", err)))
			return r;
	}
	for (i = 0; i < c->num_inputs; i++)
		if (sequence_implicit_tensor(c, c->inputs[i].name, 1))
			return serve_err(err, SERVE_INVALID,
					 "input '%s' is a sequence_batching control or state input: the server sets it, leave it out of 'input'",
					 c->inputs[i].name);
	return SERVE_OK;
}

static json_t *dims_json(const int64_t *dims, int rank)
{
	json_t *a = json_array();
	int k;

	for (k = 0; k < rank; k++)
		json_array_append_new(a, json_integer(dims[k]));
	return a;
}

json_t *sequence_config_json(const struct sequence_config *sc)
{
	json_t *o = json_object(), *ctls = json_array(), *states = json_array(), *strat;
	size_t i;

	json_object_set_new(o, "max_sequence_idle_microseconds",
			    json_integer((json_int_t)sc->max_idle_us));
	for (i = 0; i < sc->num_controls; i++) {
		const struct seq_control *ctl = &sc->controls[i];
		json_t *c = json_pack("{s:s}", "kind", control_kinds[ctl->kind]);

		if (ctl->kind == SEQ_CONTROL_CORRID)
			json_object_set_new(c, "data_type",
					    json_string(serve_config_dtype_name(ctl->dtype)));
		else if (ctl->dtype == NPU_TYPE_BOOL)
			json_object_set_new(c, "bool_false_true",
					    json_pack("[b, b]", ctl->false_true[0] != 0,
						      ctl->false_true[1] != 0));
		else if (ctl->dtype == NPU_TYPE_INT32)
			json_object_set_new(c, "int32_false_true",
					    json_pack("[I, I]", (json_int_t)ctl->false_true[0],
						      (json_int_t)ctl->false_true[1]));
		else
			json_object_set_new(c, "fp32_false_true",
					    json_pack("[f, f]", ctl->false_true[0], ctl->false_true[1]));
		json_array_append_new(ctls, json_pack("{s:s, s:[o]}", "name", ctl->input,
						      "control", c));
	}
	json_object_set_new(o, "control_input", ctls);
	for (i = 0; i < sc->num_states; i++) {
		const struct seq_state *st = &sc->states[i];
		json_t *init = json_pack("{s:s, s:o, s:b}", "data_type",
					 serve_config_dtype_name(st->dtype), "dims",
					 dims_json(st->initial_dims, st->initial_rank), "zero_data", 1);

		if (st->initial_name[0])
			json_object_set_new(init, "name", json_string(st->initial_name));
		json_array_append_new(states, json_pack("{s:s, s:s, s:s, s:o, s:[o]}",
			"input_name", st->input, "output_name", st->output,
			"data_type", serve_config_dtype_name(st->dtype),
			"dims", dims_json(st->dims, st->rank), "initial_state", init));
	}
	json_object_set_new(o, "state", states);
	if (sc->strategy == SEQ_DIRECT) {
		strat = json_pack("{s:I, s:f}", "max_queue_delay_microseconds",
				  (json_int_t)sc->max_queue_delay_us, "minimum_slot_utilization",
				  sc->minimum_slot_utilization);
		json_object_set_new(o, "direct", strat);
	} else {
		json_t *pref = json_array();

		for (i = 0; i < sc->num_preferred; i++)
			json_array_append_new(pref, json_integer(sc->preferred[i]));
		strat = json_pack("{s:i, s:o, s:I, s:b}", "max_candidate_sequences",
				  sc->max_candidates, "preferred_batch_size", pref,
				  "max_queue_delay_microseconds", (json_int_t)sc->max_queue_delay_us,
				  "preserve_ordering", sc->preserve_ordering);
		json_object_set_new(o, "oldest", strat);
	}
	return o;
}

/* ---- Request parameters --------------------------------------------------------- */

int sequence_parse_params(const json_t *params, struct infer_request *req, char *err)
{
	const json_t *v;
	const char *flags[2] = { "sequence_start", "sequence_end" };
	int *dst[2] = { &req->seq_start, &req->seq_end };
	int i;

	v = json_object_get(params, "sequence_id");
	if (v) {
		if (json_is_integer(v) && json_integer_value(v) >= 0) {
			req->seq_id = (uint64_t)json_integer_value(v);
		} else if (json_is_string(v)) {
			if (json_string_length(v) >= sizeof(req->seq_str) ||
			    strlen(json_string_value(v)) != json_string_length(v))
				return serve_err(err, SERVE_INVALID,
						 "parameters.sequence_id: a string id is at most %zu bytes, without NUL",
						 sizeof(req->seq_str) - 1);
			memcpy(req->seq_str, json_string_value(v), json_string_length(v) + 1);
		} else {
			return serve_err(err, SERVE_INVALID,
					 "parameters.sequence_id must be an unsigned integer or a string");
		}
	}
	for (i = 0; i < 2; i++) {
		v = json_object_get(params, flags[i]);
		if (v && !json_is_boolean(v))
			return serve_err(err, SERVE_INVALID, "parameters.%s must be true or false",
					 flags[i]);
		*dst[i] = json_is_true(v);
	}
	return SERVE_OK;
}

/* ---- The table -------------------------------------------------------------- */

#define RECENT_GONE 64		/* ids remembered after a timeout or an end, for the error */

struct sequence {
	uint64_t id;
	char str[SERVE_NAME_MAX];	/* a string id ("": a number) */
	uint64_t t_start, t_last;	/* ns: started; last request admitted or done */
	unsigned queued;		/* its requests in the scheduler's queue */
	int busy;			/* one of its requests is in a batch */
	int ended;			/* its END request is queued: it takes no more */
	int slot;			/* -1: waiting for one (the backlog) */
	uint64_t requests;		/* run */
	uint64_t pass;			/* the batch being formed saw it */
	void *state[SEQ_MAX_STATES];
	size_t state_bytes[SEQ_MAX_STATES];
	int state_rank[SEQ_MAX_STATES];
	int64_t state_dims[SEQ_MAX_STATES][NPU_MODEL_MAX_RANK];
	struct sequence *prev, *next;
};

struct gone {
	uint64_t id;
	char str[SERVE_NAME_MAX];
	int timed_out;			/* else ended */
};

struct seq_table {
	const struct model_config *cfg;
	const struct sequence_config *sc;
	struct model_stats *stats;
	struct seq_limits lim;
	size_t state_out[SEQ_MAX_STATES];	/* model output index of each state */
	int num_instances, slots_per_instance, num_slots;
	unsigned char *slot_used;
	uint64_t pass;
	/* Live sequences, oldest first. Everything here is under the scheduler's lock. */
	struct sequence *head, *tail;
	size_t live, state_bytes;
	pthread_mutex_t *lock;		/* the scheduler's */
	struct gone gone[RECENT_GONE];
	size_t gone_next;
	struct seq_table *next_table;
};

/* Every table, for the statistics JSON (lock order: tables_lock, then a scheduler's lock). */
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct seq_table *tables;

static int same_id(const struct sequence *s, const struct infer_request *r)
{
	return r->seq_str[0] ? !strcmp(s->str, r->seq_str) : !s->str[0] && s->id == r->seq_id;
}

/* "sequence 7" or "sequence 'abc'" into buf. */
static const char *id_text(char *buf, size_t size, uint64_t id, const char *str)
{
	if (str[0])
		snprintf(buf, size, "sequence '%.100s'", str);
	else
		snprintf(buf, size, "sequence %" PRIu64, id);
	return buf;
}

static size_t type_size(enum npu_data_type t)
{
	return npu_data_type_size(t);
}

int sequence_table_create(const struct model_config *cfg, struct npu_model *model,
			  struct model_stats *stats, const struct seq_limits *lim,
			  int num_instances, pthread_mutex_t *sched_lock, struct seq_table **out,
			  char *err)
{
	const struct sequence_config *sc = &cfg->sequence;
	struct seq_table *t = calloc(1, sizeof(*t));
	struct npu_tensor_info info;
	size_t i;
	int idx;

	*out = NULL;
	if (!t)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	t->cfg = cfg;
	t->sc = sc;
	t->stats = stats;
	t->lim = *lim;
	if (!t->lim.max_sequences)
		t->lim.max_sequences = SEQ_DEFAULT_MAX_SEQUENCES;
	if (!t->lim.max_state_bytes)
		t->lim.max_state_bytes = SEQ_DEFAULT_MAX_STATE_BYTES;
	/* A backend's states are checked against its step (backend.c). */
	for (i = 0; model && i < sc->num_states; i++) {
		idx = find_tensor(model, 0, sc->states[i].output, &info);
		if (idx < 0) {
			free(t);
			return serve_err(err, SERVE_INVALID,
					 "sequence_batching state output '%s' is not an output of the model",
					 sc->states[i].output);
		}
		t->state_out[i] = (size_t)idx;
	}
	/*
	 * Batch slots: direct gives each instance max_batch_size of them (a
	 * sequence keeps its instance); oldest has max_candidate_sequences
	 * for all instances. A sequence without one waits in the backlog.
	 */
	t->num_instances = num_instances > 0 ? num_instances : 1;
	t->slots_per_instance = cfg->max_batch_size > 0 ? cfg->max_batch_size : 1;
	if (sc->strategy == SEQ_DIRECT)
		t->num_slots = t->num_instances * t->slots_per_instance;
	else
		t->num_slots = sc->max_candidates > 0 ? sc->max_candidates
						      : (int)t->lim.max_sequences;
	t->slot_used = calloc((size_t)t->num_slots, 1);
	if (!t->slot_used) {
		free(t);
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	}
	t->lock = sched_lock;
	pthread_mutex_lock(&tables_lock);
	t->next_table = tables;
	tables = t;
	pthread_mutex_unlock(&tables_lock);
	*out = t;
	return SERVE_OK;
}

static void seq_free_state(struct seq_table *t, struct sequence *s)
{
	size_t i;

	for (i = 0; i < SEQ_MAX_STATES; i++) {
		t->state_bytes -= s->state_bytes[i];
		free(s->state[i]);
		s->state[i] = NULL;
		s->state_bytes[i] = 0;
	}
}

/* Unlink and free: 'how' 0 ended, 1 timed out, 2 the table goes. */
static void seq_remove(struct seq_table *t, struct sequence *s, int how)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		t->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		t->tail = s->prev;
	t->live--;
	seq_free_state(t, s);
	if (s->slot >= 0)
		t->slot_used[s->slot] = 0;
	if (how < 2) {
		struct gone *g = &t->gone[t->gone_next++ % RECENT_GONE];

		g->id = s->id;
		snprintf(g->str, sizeof(g->str), "%s", s->str);
		g->timed_out = how == 1;
	}
	metrics_sequence(t->stats, -1, 0, how == 0, how == 1, 0);
	free(s);
}

void sequence_table_destroy(struct seq_table *t)
{
	struct seq_table **pp;

	if (!t)
		return;
	pthread_mutex_lock(&tables_lock);
	for (pp = &tables; *pp; pp = &(*pp)->next_table)
		if (*pp == t) {
			*pp = t->next_table;
			break;
		}
	pthread_mutex_unlock(&tables_lock);
	while (t->head)
		seq_remove(t, t->head, 2);
	free(t->slot_used);
	free(t);
}

static int refuse(struct seq_table *t, char *err, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int refuse(struct seq_table *t, char *err, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, SERVE_ERR_MAX, fmt, ap);
	va_end(ap);
	metrics_sequence(t->stats, 0, 0, 0, 0, 1);
	return status;
}

/* Bytes of a state of 'rank' dims (no batch dim); 0 on overflow. */
static size_t state_size(enum npu_data_type dt, int rank, const int64_t *dims)
{
	size_t n = type_size(dt);
	int k;

	for (k = 0; k < rank; k++) {
		if (dims[k] <= 0 || (size_t)dims[k] > SIZE_MAX / (n ? n : 1))
			return 0;
		n *= (size_t)dims[k];
	}
	return n;
}

int sequence_admit(struct seq_table *t, struct infer_request *req, uint64_t now, char *err)
{
	const struct sequence_config *sc = t->sc;
	struct sequence *s;
	char idb[160];
	size_t i, bytes = 0;
	const char *corrid_str = NULL;

	sequence_reap(t, now);
	if (!req->seq_id && !req->seq_str[0])
		return refuse(t, err, SERVE_INVALID,
			      "model '%s' uses sequence batching: the request needs parameters.sequence_id (a non-zero unsigned integer or a non-empty string)",
			      req->model);
	id_text(idb, sizeof(idb), req->seq_id, req->seq_str);
	if (t->cfg->max_batch_size > 0 && req->batch != 1)
		return refuse(t, err, SERVE_INVALID,
			      "%s of model '%s': a request of a sequence holds one batch element, not %" PRId64,
			      idb, req->model, req->batch);
	for (i = 0; i < sc->num_controls; i++)
		if (sc->controls[i].kind == SEQ_CONTROL_CORRID)
			corrid_str = sc->controls[i].dtype == NPU_TYPE_STRING ? "" : NULL;
	for (i = 0; i < sc->num_controls; i++)
		if (sc->controls[i].kind == SEQ_CONTROL_CORRID &&
		    (corrid_str != NULL) != (req->seq_str[0] != 0))
			return refuse(t, err, SERVE_INVALID,
				      "%s of model '%s': parameters.sequence_id must be %s (its CONTROL_SEQUENCE_CORRID input '%s' is %s)",
				      idb, req->model, corrid_str ? "a string" : "an unsigned integer",
				      sc->controls[i].input,
				      serve_config_dtype_name(sc->controls[i].dtype));
	for (s = t->head; s; s = s->next)
		if (!s->ended && same_id(s, req))
			break;
	if (req->seq_start) {
		if (s)
			return refuse(t, err, SERVE_INVALID,
				      "%s of model '%s' is already live (started %" PRIu64 " ms ago, %" PRIu64 " requests): end it with sequence_end before starting it again",
				      idb, req->model, (now - s->t_start) / 1000000, s->requests);
		if (t->live >= t->lim.max_sequences)
			return refuse(t, err, SERVE_UNAVAILABLE,
				      "model '%s' version %" PRId64 " already has %zu live sequences, the maximum (--max-sequences): end one or retry later",
				      req->model, req->version, t->live);
		for (i = 0; i < sc->num_states; i++)
			bytes += state_size(sc->states[i].dtype, sc->states[i].initial_rank,
					    sc->states[i].initial_dims);
		if (t->state_bytes + bytes > t->lim.max_state_bytes)
			return refuse(t, err, SERVE_UNAVAILABLE,
				      "model '%s' version %" PRId64 ": the state of another sequence (%zu bytes) would pass the %zu bytes of --max-sequence-state-bytes (%zu held)",
				      req->model, req->version, bytes, t->lim.max_state_bytes,
				      t->state_bytes);
		s = calloc(1, sizeof(*s));
		if (!s)
			return serve_err(err, SERVE_INTERNAL, "out of memory");
		s->id = req->seq_id;
		snprintf(s->str, sizeof(s->str), "%s", req->seq_str);
		s->t_start = now;
		s->slot = -1;
		for (i = 0; i < sc->num_states; i++) {
			const struct seq_state *st = &sc->states[i];
			size_t n = state_size(st->dtype, st->initial_rank, st->initial_dims);

			s->state[i] = calloc(1, n ? n : 1);	/* zero_data */
			if (!s->state[i]) {
				while (i--)
					free(s->state[i]);
				free(s);
				return serve_err(err, SERVE_INTERNAL, "out of memory");
			}
			s->state_bytes[i] = n;
			s->state_rank[i] = st->initial_rank;
			memcpy(s->state_dims[i], st->initial_dims, sizeof(st->initial_dims));
		}
		s->prev = t->tail;
		if (t->tail)
			t->tail->next = s;
		else
			t->head = s;
		t->tail = s;
		t->live++;
		t->state_bytes += bytes;
		metrics_sequence(t->stats, 1, 1, 0, 0, 0);
	} else if (!s) {
		for (i = 0; i < RECENT_GONE; i++) {
			const struct gone *g = &t->gone[(t->gone_next + RECENT_GONE - 1 - i) % RECENT_GONE];

			if (!(g->str[0] ? !strcmp(g->str, req->seq_str)
					: !req->seq_str[0] && g->id && g->id == req->seq_id))
				continue;
			if (g->timed_out)
				return refuse(t, err, SERVE_INVALID,
					      "%s of model '%s' timed out: it had no request for max_sequence_idle_microseconds (%" PRIu64 ") and its state is gone; start it again with sequence_start",
					      idb, req->model, sc->max_idle_us);
			return refuse(t, err, SERVE_INVALID,
				      "%s of model '%s' has ended (sequence_end); start it again with sequence_start",
				      idb, req->model);
		}
		return refuse(t, err, SERVE_INVALID,
			      "%s of model '%s' is not live: its first request must set parameters.sequence_start",
			      idb, req->model);
	}
	req->sequence = s;
	s->queued++;
	s->t_last = now;
	if (req->seq_end)
		s->ended = 1;	/* a later request for this id starts a new sequence */
	return SERVE_OK;
}

static void maybe_free(struct seq_table *t, struct sequence *s)
{
	if (s->ended && !s->queued && !s->busy)
		seq_remove(t, s, 0);
}

void sequence_dropped(struct seq_table *t, struct infer_request *req, uint64_t now)
{
	struct sequence *s = req->sequence;

	if (!s)
		return;
	req->sequence = NULL;
	s->queued--;
	s->t_last = now;
	maybe_free(t, s);
}

uint64_t sequence_reap(struct seq_table *t, uint64_t now)
{
	uint64_t idle_ns = t->sc->max_idle_us * 1000, next = 0;
	struct sequence *s, *nx;

	for (s = t->head; s; s = nx) {
		uint64_t due = s->t_last + idle_ns;

		nx = s->next;
		if (s->queued || s->busy)
			continue;
		if (due <= now) {
			char idb[160];

			serve_log(SERVE_LOG_INFO, "model '%s': %s timed out after %" PRIu64 " us idle",
				  t->cfg->name, id_text(idb, sizeof(idb), s->id, s->str),
				  t->sc->max_idle_us);
			seq_remove(t, s, 1);
		} else if (!next || due < next) {
			next = due;
		}
	}
	return next;
}

/* Inputs of two requests that can share a batch: the same dims after the batch dim. */
static int same_shapes(const struct seq_table *t, const struct infer_request *a,
		       const struct infer_request *b)
{
	const struct sequence *sa = a->sequence, *sb = b->sequence;
	size_t i;
	int k;

	for (i = 0; i < a->num_inputs; i++) {
		if (a->inputs[i].rank != b->inputs[i].rank || a->inputs[i].dtype != b->inputs[i].dtype)
			return 0;
		for (k = 1; k < a->inputs[i].rank; k++)
			if (a->inputs[i].dims[k] != b->inputs[i].dims[k])
				return 0;
	}
	for (i = 0; i < t->sc->num_states; i++) {
		if (sa->state_rank[i] != sb->state_rank[i])
			return 0;
		for (k = 0; k < sa->state_rank[i]; k++)
			if (sa->state_dims[i][k] != sb->state_dims[i][k])
				return 0;
	}
	return 1;
}

/* A free slot for 's' (direct: one of instance 'inst'), or 0. */
static int take_slot(struct seq_table *t, struct sequence *s, int inst)
{
	int lo = 0, hi = t->num_slots, k;

	if (t->sc->strategy == SEQ_DIRECT) {
		lo = inst * t->slots_per_instance;
		hi = lo + t->slots_per_instance;
	}
	for (k = lo; k < hi && k < t->num_slots; k++)
		if (!t->slot_used[k]) {
			t->slot_used[k] = 1;
			s->slot = k;
			return 1;
		}
	return 0;
}

static void put_scalar(void *p, enum npu_data_type t, double v, uint64_t u)
{
	switch (t) {
	case NPU_TYPE_INT32: { int32_t x = (int32_t)(u ? (int64_t)u : (int64_t)v); memcpy(p, &x, 4); break; }
	case NPU_TYPE_UINT32: { uint32_t x = (uint32_t)u; memcpy(p, &x, 4); break; }
	case NPU_TYPE_INT64: { int64_t x = (int64_t)u; memcpy(p, &x, 8); break; }
	case NPU_TYPE_UINT64: memcpy(p, &u, 8); break;
	case NPU_TYPE_FLOAT: { float x = (float)v; memcpy(p, &x, 4); break; }
	default: *(uint8_t *)p = v != 0; break;
	}
}

/* Add the control and state inputs of the request's sequence (owned: controls only). */
static int add_inputs(struct seq_table *t, struct infer_request *r)
{
	const struct sequence_config *sc = t->sc;
	struct sequence *s = r->sequence;
	int b = t->cfg->max_batch_size > 0;
	size_t i;

	for (i = 0; i < sc->num_controls; i++) {
		const struct seq_control *ctl = &sc->controls[i];
		struct infer_tensor *x = &r->inputs[r->num_inputs];
		size_t n = ctl->dtype == NPU_TYPE_STRING ? 4 + strlen(s->str) : type_size(ctl->dtype);
		int on = 1;

		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "%s", ctl->input);
		x->dtype = ctl->dtype;
		x->rank = 1 + b;
		x->dims[0] = 1;
		x->dims[b] = 1;
		x->data = malloc(n ? n : 1);
		if (!x->data)
			return -1;
		x->nbytes = n;
		x->owned = 1;
		r->num_inputs++;
		if (ctl->kind == SEQ_CONTROL_START)
			on = r->seq_start;
		else if (ctl->kind == SEQ_CONTROL_END)
			on = r->seq_end;
		if (ctl->kind != SEQ_CONTROL_CORRID) {
			put_scalar(x->data, ctl->dtype, ctl->false_true[on], 0);
		} else if (ctl->dtype == NPU_TYPE_STRING) {
			uint32_t len = (uint32_t)strlen(s->str);

			memcpy(x->data, &len, 4);	/* little-endian hosts (Triton's wire form) */
			memcpy((char *)x->data + 4, s->str, len);
		} else {
			put_scalar(x->data, ctl->dtype, 0, s->id);
		}
	}
	for (i = 0; i < sc->num_states; i++) {
		struct infer_tensor *x = &r->inputs[r->num_inputs++];
		int k;

		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "%s", sc->states[i].input);
		x->dtype = sc->states[i].dtype;
		x->rank = s->state_rank[i] + b;
		x->dims[0] = 1;
		for (k = 0; k < s->state_rank[i]; k++)
			x->dims[k + b] = s->state_dims[i][k];
		/* The sequence's buffer itself: nothing else touches it while this runs. */
		x->data = s->state[i];
		x->nbytes = s->state_bytes[i];
	}
	return 0;
}

static void strip_inputs(struct seq_table *t, struct infer_request *r)
{
	size_t i;

	for (i = t->cfg->num_inputs; i < r->num_inputs; i++)
		if (r->inputs[i].owned)
			free(r->inputs[i].data);
	if (r->num_inputs > t->cfg->num_inputs)
		r->num_inputs = t->cfg->num_inputs;
}

size_t sequence_form_batch(struct seq_table *t, int inst, struct infer_request *head,
			   uint64_t now, int stopping, struct infer_request **out, size_t max,
			   uint64_t *wake)
{
	const struct sequence_config *sc = t->sc;
	struct infer_request *r;
	struct sequence *s;
	int64_t target;
	size_t n = 0, i;
	uint64_t due;

	*wake = 0;
	if (t->cfg->max_batch_size > 0 && (size_t)t->cfg->max_batch_size < max)
		max = (size_t)t->cfg->max_batch_size;
	else if (t->cfg->max_batch_size <= 0)
		max = 1;
	t->pass++;
	for (r = head; r && n < max; r = r->next) {
		s = r->sequence;
		if (!s || s->pass == t->pass)
			continue;	/* one request of a sequence, its oldest */
		s->pass = t->pass;
		if (s->busy)
			continue;
		if (s->slot < 0 && !take_slot(t, s, inst) && !stopping)
			continue;	/* the backlog: no slot free */
		if (sc->strategy == SEQ_DIRECT && s->slot >= 0 && !stopping &&
		    s->slot / t->slots_per_instance != inst)
			continue;	/* another instance's slot */
		if (n && !same_shapes(t, out[0], r))
			continue;
		out[n++] = r;
	}
	if (!n)
		return 0;
	/*
	 * Send at once when full; else wait up to the strategy's queue delay
	 * for more: direct, until minimum_slot_utilization of this instance's
	 * slots have a request; oldest, for the largest preferred size (or
	 * max_batch_size).
	 */
	if (sc->strategy == SEQ_DIRECT) {
		/* Triton: without minimum_slot_utilization, one ready slot runs at once. */
		target = 1;
		if (sc->minimum_slot_utilization > 0)
			target = (int64_t)(sc->minimum_slot_utilization * t->slots_per_instance + 0.999);
	} else {
		target = (int64_t)max;
		if (sc->num_preferred) {
			target = 0;
			for (i = 0; i < sc->num_preferred; i++)
				if (sc->preferred[i] > target)
					target = sc->preferred[i];
		}
	}
	due = out[0]->t_enqueue + sc->max_queue_delay_us * 1000;
	if (!stopping && (int64_t)n < target && (size_t)n < max && now < due) {
		*wake = due;
		return 0;
	}
	if (sc->strategy == SEQ_OLDEST && sc->num_preferred && (int64_t)n > target)
		n = (size_t)target;
	for (i = 0; i < n; i++) {
		r = out[i];
		if (add_inputs(t, r)) {
			/* Out of memory: run it without them; the run reports the missing input. */
			strip_inputs(t, r);
		}
		r->sequence->busy = 1;
		r->sequence->queued--;
	}
	return n;
}

size_t sequence_state_outputs(const struct seq_table *t, const char **names, size_t max)
{
	size_t i;

	for (i = 0; i < t->sc->num_states && i < max; i++)
		names[i] = t->sc->states[i].output;
	return i;
}

/* A backend's output 'name' among its outputs (data set: it ran). */
static int backend_out(const struct npu_host_tensor *outs, size_t num, const char *name,
		       struct npu_host_tensor *out)
{
	size_t i;

	for (i = 0; outs && i < num; i++)
		if (outs[i].data && outs[i].name && !strcmp(outs[i].name, name)) {
			*out = outs[i];
			return 1;
		}
	return 0;
}

void sequence_batch_ran(struct seq_table *t, struct npu_session *session,
			const struct npu_host_tensor *outs, size_t num_outs,
			struct infer_request **reqs, size_t n)
{
	const struct sequence_config *sc = t->sc;
	int b = t->cfg->max_batch_size > 0;
	size_t i, j;

	for (i = 0; i < sc->num_states; i++) {
		struct npu_host_tensor out;
		size_t per;
		int ok = 0;

		for (j = 0; j < n; j++)
			ok |= reqs[j]->status == SERVE_OK && reqs[j]->sequence;
		if (!ok)
			break;
		if ((session ? npu_session_output(session, t->state_out[i], &out) != NPU_OK
			     : !backend_out(outs, num_outs, sc->states[i].output, &out)) ||
		    (b && (out.rank < 1 || out.dims[0] != (int64_t)n)) ||
		    (out.dtype != sc->states[i].dtype)) {
			for (j = 0; j < n; j++)
				if (reqs[j]->status == SERVE_OK)
					reqs[j]->status = serve_err(reqs[j]->err, SERVE_INTERNAL,
						"state output '%s' of model '%s': not one %s row per request",
						sc->states[i].output, t->cfg->name,
						serve_dtype_name(sc->states[i].dtype));
			break;
		}
		per = b ? out.nbytes / n : out.nbytes;
		for (j = 0; j < n; j++) {
			struct infer_request *r = reqs[j];
			struct sequence *s = r->sequence;
			void *copy;

			if (!s || r->status != SERVE_OK)
				continue;
			if (t->state_bytes - s->state_bytes[i] + per > t->lim.max_state_bytes) {
				r->status = serve_err(r->err, SERVE_UNAVAILABLE,
					"state output '%s' of model '%s' (%zu bytes) would pass the %zu bytes of --max-sequence-state-bytes; the sequence keeps its last state",
					sc->states[i].output, t->cfg->name, per, t->lim.max_state_bytes);
				continue;
			}
			copy = malloc(per ? per : 1);
			if (!copy) {
				r->status = serve_err(r->err, SERVE_INTERNAL, "out of memory for the state");
				continue;
			}
			if (per)
				memcpy(copy, (const char *)out.data + per * j, per);
			t->state_bytes = t->state_bytes - s->state_bytes[i] + per;
			free(s->state[i]);
			s->state[i] = copy;
			s->state_bytes[i] = per;
			s->state_rank[i] = out.rank - b;
			memcpy(s->state_dims[i], out.dims + b,
			       (size_t)(out.rank - b) * sizeof(out.dims[0]));
		}
	}
	for (j = 0; j < n; j++)
		if (reqs[j]->sequence) {
			strip_inputs(t, reqs[j]);
			reqs[j]->sequence->requests++;
		}
}

void sequence_release(struct seq_table *t, struct sequence *s, uint64_t now)
{
	s->busy = 0;
	s->t_last = now;
	maybe_free(t, s);
}

json_t *sequence_stats_json(const struct model_stats *stats)
{
	struct seq_table *t;
	json_t *o = NULL, *live;
	uint64_t now = serve_now_ns();

	pthread_mutex_lock(&tables_lock);
	for (t = tables; t && t->stats != stats; t = t->next_table)
		;
	if (t) {
		const struct sequence *s;

		live = json_array();
		pthread_mutex_lock(t->lock);
		for (s = t->head; s; s = s->next) {
			size_t bytes = 0, i;
			json_t *e;

			for (i = 0; i < SEQ_MAX_STATES; i++)
				bytes += s->state_bytes[i];
			e = json_pack("{s:I, s:I, s:I, s:I, s:i, s:b}",
				      "age_ms", (json_int_t)((now - s->t_start) / 1000000),
				      "idle_ms", (json_int_t)(now > s->t_last ? (now - s->t_last) / 1000000 : 0),
				      "requests", (json_int_t)s->requests,
				      "state_bytes", (json_int_t)bytes,
				      "slot", s->slot, "ending", s->ended);
			json_object_set_new(e, "sequence_id", s->str[0] ? json_string(s->str)
									: json_integer((json_int_t)s->id));
			json_array_append_new(live, e);
		}
		o = json_pack("{s:I, s:I, s:I, s:s, s:o}",
			      "max_sequences", (json_int_t)t->lim.max_sequences,
			      "state_bytes", (json_int_t)t->state_bytes,
			      "max_state_bytes", (json_int_t)t->lim.max_state_bytes,
			      "strategy", t->sc->strategy == SEQ_DIRECT ? "direct" : "oldest",
			      "live", live);
		pthread_mutex_unlock(t->lock);
	}
	pthread_mutex_unlock(&tables_lock);
	return o;
}
