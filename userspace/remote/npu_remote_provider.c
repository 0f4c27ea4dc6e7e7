// SPDX-License-Identifier: MIT
/*
 * npu_remote_provider.c - split computing as an execution provider
 * (npu_remote_register_provider()): "remote" takes every node downstream
 * of the cut tensors and runs them as one request to the tail model on a
 * KServe v2 server, so that one whole model runs its head here, on any
 * provider, and its tail there. Built on the public provider API alone.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu_provider.h"
#include "npu/npu_remote.h"

#define REMOTE_MAX_CUT 64

struct remote_provider {
	struct npu_remote_options opts;	/* strings below */
	char *url, *model, *version;
	char *cut_buf;			/* the cut list, split at the commas */
	const char *cut[REMOTE_MAX_CUT];
	size_t num_cut;
};

/* One subgraph: its own connection, one request at a time. */
struct remote_state {
	struct npu_remote *r;
	pthread_mutex_t lock;
	size_t num_inputs, num_outputs;
	struct npu_tensor_info *ins, *outs;	/* names point into names[] */
	char **names;
};

static bool is_cut(const struct remote_provider *rp, const char *name)
{
	size_t i;

	for (i = 0; i < rp->num_cut; i++)
		if (!strcmp(rp->cut[i], name))
			return true;
	return false;
}

/* The tail: nodes that read a cut tensor, or a tensor a tail node made. */
static bool remote_can_run(void *user, const struct npu_provider_node *node, char *why,
			   size_t why_size)
{
	const struct remote_provider *rp = user;
	size_t i;

	for (i = 0; i < npu_provider_node_num_inputs(node); i++) {
		struct npu_tensor_info info;

		if (npu_provider_node_input(node, i, &info, NULL) != NPU_OK)
			continue;
		if (is_cut(rp, info.name) || npu_provider_node_input_taken(node, i))
			return true;
	}
	snprintf(why, why_size, "before the cut (the head runs here)");
	return false;
}

static void state_free(struct remote_state *s)
{
	size_t i;

	if (!s)
		return;
	npu_remote_destroy(s->r);
	for (i = 0; s->names && i < s->num_inputs + s->num_outputs; i++)
		free(s->names[i]);
	free(s->names);
	free(s->ins);
	free(s->outs);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Connect and check that the server's tail takes exactly the subgraph's inputs. */
static npu_status remote_compile(void *user, const struct npu_provider_subgraph *sg,
				 void **state)
{
	const struct remote_provider *rp = user;
	struct remote_state *s = calloc(1, sizeof(*s));
	size_t i, n;
	npu_status st;

	if (!s)
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	pthread_mutex_init(&s->lock, NULL);
	s->num_inputs = npu_provider_subgraph_num_inputs(sg);
	s->num_outputs = npu_provider_subgraph_num_outputs(sg);
	n = s->num_inputs + s->num_outputs;
	s->ins = calloc(s->num_inputs + 1, sizeof(*s->ins));
	s->outs = calloc(s->num_outputs + 1, sizeof(*s->outs));
	s->names = calloc(n + 1, sizeof(*s->names));
	if (!s->ins || !s->outs || !s->names) {
		state_free(s);
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < n; i++) {
		struct npu_tensor_info *info = i < s->num_inputs ? &s->ins[i]
								 : &s->outs[i - s->num_inputs];

		if (i < s->num_inputs)
			npu_provider_subgraph_input(sg, i, info);
		else
			npu_provider_subgraph_output(sg, i - s->num_inputs, info);
		s->names[i] = strdup(info->name);
		if (!s->names[i]) {
			state_free(s);
			return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
		}
		info->name = s->names[i];
	}
	st = npu_remote_create(&rp->opts, &s->r);
	if (st == NPU_OK)
		st = npu_remote_check(s->r, s->ins, s->num_inputs);
	if (st != NPU_OK) {
		state_free(s);
		return st;	/* npu_last_error() says what does not match */
	}
	*state = s;
	return NPU_OK;
}

static npu_status remote_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	struct remote_state *s = state;
	struct npu_host_tensor *ins;
	npu_status st = NPU_OK;
	size_t i, k;

	(void)user;
	ins = calloc(s->num_inputs + 1, sizeof(*ins));
	if (!ins)
		return NPU_ERR_NO_MEMORY;
	for (i = 0; i < s->num_inputs && st == NPU_OK; i++)
		st = npu_kernel_input(ctx, i, &ins[i]);
	pthread_mutex_lock(&s->lock);
	if (st == NPU_OK && (st = npu_remote_infer(s->r, ins, s->num_inputs)) != NPU_OK)
		npu_kernel_set_error(ctx, "%s", npu_last_error());
	for (i = 0; i < s->num_outputs && st == NPU_OK; i++) {
		struct npu_host_tensor out;
		void *data;

		for (k = 0; k < npu_remote_num_outputs(s->r); k++)
			if (npu_remote_output(s->r, k, &out) == NPU_OK &&
			    !strcmp(out.name, s->outs[i].name))
				break;
		if (k == npu_remote_num_outputs(s->r)) {
			npu_kernel_set_error(ctx, "the tail's answer has no output '%s'",
					     s->outs[i].name);
			st = NPU_ERR_MODEL;
			break;
		}
		st = npu_kernel_output(ctx, i, out.dtype, out.rank, out.dims, &data);
		if (st == NPU_OK && out.nbytes)
			memcpy(data, out.data, out.nbytes);
	}
	pthread_mutex_unlock(&s->lock);
	free(ins);
	return st;
}

static void remote_release(void *user, void *state)
{
	(void)user;
	state_free(state);
}

static void provider_free(struct remote_provider *rp)
{
	if (!rp)
		return;
	free(rp->url);
	free(rp->model);
	free(rp->version);
	free(rp->cut_buf);
	free(rp);
}

static void remote_destroy(void *user)
{
	provider_free(user);
}

NPU_API npu_status npu_remote_register_provider(struct npu_engine *engine,
						const struct npu_remote_options *opts,
						const char *cut)
{
	struct remote_provider *rp;
	struct npu_provider p;
	char *tok, *save = NULL;
	npu_status st;

	if (!engine || !opts || !opts->url || !opts->model || !cut || !cut[0])
		return npu_last_error_set(NPU_ERR_INVALID_ARG,
					  "npu_remote_register_provider: %s is NULL or empty",
					  !engine ? "engine" : !opts ? "opts" : !opts->url ? "opts->url"
					  : !opts->model ? "opts->model" : "cut");
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	npu_remote_options_init(&rp->opts);
	memcpy(&rp->opts, opts, opts->struct_size < sizeof(rp->opts) ? opts->struct_size
								    : sizeof(rp->opts));
	rp->opts.struct_size = sizeof(rp->opts);
	rp->url = strdup(opts->url);
	rp->model = strdup(opts->model);
	rp->version = opts->version ? strdup(opts->version) : NULL;
	rp->cut_buf = strdup(cut);
	if (!rp->url || !rp->model || (opts->version && !rp->version) || !rp->cut_buf) {
		provider_free(rp);
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	}
	rp->opts.url = rp->url;
	rp->opts.model = rp->model;
	rp->opts.version = rp->version;
	for (tok = strtok_r(rp->cut_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (rp->num_cut == REMOTE_MAX_CUT) {
			provider_free(rp);
			return npu_last_error_set(NPU_ERR_INVALID_ARG,
						  "npu_remote_register_provider: more than %d cut tensors",
						  REMOTE_MAX_CUT);
		}
		rp->cut[rp->num_cut++] = tok;
	}
	if (!rp->num_cut) {
		provider_free(rp);
		return npu_last_error_set(NPU_ERR_INVALID_ARG,
					  "npu_remote_register_provider: cut '%s' names no tensor", cut);
	}
	npu_provider_init(&p);
	p.name = "remote";
	p.user = rp;
	p.can_run = remote_can_run;
	p.compile = remote_compile;
	p.compute = remote_compute;
	p.release = remote_release;
	p.destroy = remote_destroy;	/* the engine frees rp at its end */
	st = npu_engine_register_provider(engine, &p);
	if (st != NPU_OK)
		provider_free(rp);
	return st;
}
