// SPDX-License-Identifier: MIT
/*
 * npu_provider.c - execution providers (npu/npu_provider.h, runtime/npu_ep.h):
 * a model's priority list, the built-in "npu" and "cpu" providers, an
 * application's providers (capability, grouping into subgraphs, a kernel
 * that compiles, runs, serializes and loads them), and the placements.
 */
#include "runtime/npu_api.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "cpu/ops/cpu_ops.h"
#include "graph/npu_op_schema.h"
#include "npu/npu_provider.h"
#include "runtime/npu_ep.h"

#define NAME_MAX_LEN 31

struct npu_provider_record {
	struct npu_ep ep;		/* .rec = this record */
	struct npu_op_schema schema;	/* its subgraphs' op: ai.npu.provider.<name> */
	struct npu_op_def def;		/* their kernel */
	struct npu_provider p;		/* the application's; name ours */
	char *name;
};

/* A subgraph node's state, made by prepare() once per plan. */
struct provider_node {
	const struct npu_provider_record *rec;
	void *state;
	char label[128];
};

static const struct npu_provider_record *record_of_def(const struct npu_op_def *def)
{
	return (const struct npu_provider_record *)((const char *)def -
						    offsetof(struct npu_provider_record, def));
}

static const struct npu_node *node_of(const struct npu_provider_node *n)
{
	return (const struct npu_node *)n;
}

static const struct npu_graph *graph_of(const struct npu_provider_subgraph *sg)
{
	return (const struct npu_graph *)sg;
}

/* ---- What a provider sees ---- */

static void value_info(const struct npu_value *v, struct npu_tensor_info *info)
{
	int d, rank = v->shape.rank;

	memset(info, 0, sizeof(*info));
	info->name = v->name;
	info->dtype = (enum npu_data_type)v->dtype;
	info->rank = rank < 0 || rank > NPU_MODEL_MAX_RANK ? -1 : rank;
	for (d = 0; d < info->rank; d++)
		info->dims[d] = v->shape.dims[d] < 0 ? -1 : v->shape.dims[d];
}

NPU_API const char *npu_provider_node_name(const struct npu_provider_node *n)
{
	return n ? node_of(n)->name : "";
}

NPU_API const char *npu_provider_node_op_type(const struct npu_provider_node *n)
{
	return n ? node_of(n)->op_type : "";
}

NPU_API const char *npu_provider_node_domain(const struct npu_provider_node *n)
{
	return n ? node_of(n)->domain : "";
}

NPU_API int npu_provider_node_opset(const struct npu_provider_node *n)
{
	return n ? node_of(n)->opset : 0;
}

NPU_API size_t npu_provider_node_num_inputs(const struct npu_provider_node *n)
{
	return n ? node_of(n)->num_inputs : 0;
}

NPU_API size_t npu_provider_node_num_outputs(const struct npu_provider_node *n)
{
	return n ? node_of(n)->num_outputs : 0;
}

NPU_API npu_status npu_provider_node_input(const struct npu_provider_node *pn, size_t index,
					   struct npu_tensor_info *info, const void **constant)
{
	const struct npu_node *n = node_of(pn);
	const struct npu_value *v;

	if (constant)
		*constant = NULL;
	if (!pn || !info)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_provider_node_input: %s is NULL",
				    !pn ? "node" : "info");
	if (index >= n->num_inputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_provider_node_input: node '%s' has %zu inputs, not %zu",
				    n->name, n->num_inputs, index + 1);
	v = n->inputs[index];
	if (!v) {
		memset(info, 0, sizeof(*info));
		return npu_api_fail(NPU_ERR_NOT_FOUND,
				    "npu_provider_node_input: node '%s': input %zu is omitted",
				    n->name, index);
	}
	value_info(v, info);
	if (constant && v->constant)
		*constant = v->constant->data;
	return NPU_OK;
}

NPU_API npu_status npu_provider_node_output(const struct npu_provider_node *pn, size_t index,
					    struct npu_tensor_info *info)
{
	const struct npu_node *n = node_of(pn);

	if (!pn || !info)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_provider_node_output: %s is NULL",
				    !pn ? "node" : "info");
	if (index >= n->num_outputs || !n->outputs[index])
		return npu_api_fail(NPU_ERR_NOT_FOUND,
				    "npu_provider_node_output: node '%s' has no output %zu",
				    n->name, index);
	value_info(n->outputs[index], info);
	return NPU_OK;
}

NPU_API const struct npu_op_attrs *npu_provider_node_attrs(const struct npu_provider_node *n)
{
	return (const struct npu_op_attrs *)n;	/* as npu_custom_op.c reads them */
}

NPU_API size_t npu_provider_subgraph_num_nodes(const struct npu_provider_subgraph *sg)
{
	return sg ? graph_of(sg)->num_nodes : 0;
}

NPU_API const struct npu_provider_node *
npu_provider_subgraph_node(const struct npu_provider_subgraph *sg, size_t index)
{
	if (!sg || index >= graph_of(sg)->num_nodes)
		return NULL;
	return (const struct npu_provider_node *)graph_of(sg)->nodes[index];
}

NPU_API size_t npu_provider_subgraph_num_inputs(const struct npu_provider_subgraph *sg)
{
	return sg ? graph_of(sg)->num_inputs : 0;
}

NPU_API size_t npu_provider_subgraph_num_outputs(const struct npu_provider_subgraph *sg)
{
	return sg ? graph_of(sg)->num_outputs : 0;
}

NPU_API npu_status npu_provider_subgraph_input(const struct npu_provider_subgraph *sg,
					       size_t index, struct npu_tensor_info *info)
{
	if (!sg || !info || index >= graph_of(sg)->num_inputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_provider_subgraph_input: no input %zu",
				    index);
	value_info(graph_of(sg)->inputs[index], info);
	return NPU_OK;
}

NPU_API npu_status npu_provider_subgraph_output(const struct npu_provider_subgraph *sg,
						size_t index, struct npu_tensor_info *info)
{
	if (!sg || !info || index >= graph_of(sg)->num_outputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_provider_subgraph_output: no output %zu",
				    index);
	value_info(graph_of(sg)->outputs[index], info);
	return NPU_OK;
}

/* ---- The subgraph op: schema and kernel ---- */

static const struct npu_graph *body_of(const struct npu_node *node)
{
	const struct npu_attr *a = npu_node_attr(node, "body");

	return a && a->type == NPU_ATTR_GRAPH ? a->g : NULL;
}

/* node's subgraph, checked against its inputs and outputs (a compiled file's
 * node is not inferred); NULL with err set. */
static const struct npu_graph *checked_body(const struct npu_node *node, struct npu_error *err)
{
	const struct npu_graph *body = body_of(node);

	if (body && body->num_inputs == node->num_inputs &&
	    body->num_outputs == node->num_outputs)
		return body;
	npu_error_set(err, NPU_ERR_MODEL,
		      "provider '%s' node '%s': its subgraph is missing or does not match its inputs and outputs",
		      node->op_type, node->name);
	return NULL;
}

/* Outputs are the subgraph's, as they were inferred when it was taken. */
static npu_status provider_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_graph *body = checked_body(ctx->node, ctx->err);
	size_t j;

	if (!body)
		return ctx->err->status;
	for (j = 0; j < body->num_outputs; j++) {
		ctx->out_dtypes[j] = body->outputs[j]->dtype;
		ctx->out_shapes[j] = body->outputs[j]->shape;
	}
	return NPU_OK;
}

static npu_status set_blob(struct npu_node *node, const void *data, size_t size)
{
	struct npu_shape s = { .rank = 1, .dims = { (int64_t)size } };
	struct npu_attr *attrs = realloc(node->attrs, (node->num_attrs + 1) * sizeof(*attrs));
	struct npu_attr *a;

	if (!attrs)
		return NPU_ERR_NO_MEMORY;
	node->attrs = attrs;
	a = &attrs[node->num_attrs];
	memset(a, 0, sizeof(*a));
	a->type = NPU_ATTR_TENSOR;
	a->name = strdup("blob");
	a->t = npu_tensor_create(NPU_DTYPE_UINT8, &s);
	if (!a->name || !a->t) {
		npu_attr_free(a);
		return NPU_ERR_NO_MEMORY;
	}
	if (size)
		memcpy(a->t->data, data, size);
	node->num_attrs++;
	return NPU_OK;
}

/*
 * Once per node and plan: the provider's compiled state, from the bytes a
 * compiled file stored (deserialize()) or by compile(); a provider that
 * serializes leaves its bytes on the node for npu_plan_save_compiled().
 */
static npu_status provider_prepare(const struct npu_op_def *def, struct npu_node *node,
				   const struct npu_cpu_options *cpu, struct npu_error *err)
{
	const struct npu_provider_record *rec = record_of_def(def);
	const struct npu_provider *p = &rec->p;
	const struct npu_graph *body = checked_body(node, err);
	const struct npu_attr *blob = npu_node_attr(node, "blob");
	const struct npu_provider_subgraph *sg = (const struct npu_provider_subgraph *)body;
	struct provider_node *pn;
	const char *what;
	npu_status st;

	(void)cpu;
	node->op_state = NULL;
	if (!body)
		return err->status;
	pn = calloc(1, sizeof(*pn));
	if (!pn)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	pn->rec = rec;
	snprintf(pn->label, sizeof(pn->label), "provider '%s' (node '%s')", rec->name, node->name);
	npu_api_fail(NPU_OK, "%s", "");	/* what the callback leaves there is its own */
	if (blob && blob->type == NPU_ATTR_TENSOR && blob->t && p->deserialize) {
		what = "deserialize()";
		st = p->deserialize(p->user, sg, blob->t->data, blob->t->nbytes, &pn->state);
	} else {
		what = "compile()";
		st = p->compile(p->user, sg, &pn->state);
	}
	if (st != NPU_OK) {
		npu_error_set(err, st, "%s: %s failed for its subgraph of %zu nodes ('%s' .. '%s'): %s",
			      pn->label, what, body->num_nodes,
			      body->num_nodes ? body->nodes[0]->name : "",
			      body->num_nodes ? body->nodes[body->num_nodes - 1]->name : "",
			      npu_last_error()[0] ? npu_last_error() : npu_status_str(st));
		free(pn);
		return st;
	}
	if (!blob && p->serialize) {
		void *data = NULL;
		size_t size = 0;

		npu_api_fail(NPU_OK, "%s", "");
		st = p->serialize(p->user, pn->state, &data, &size);
		if (st == NPU_OK && set_blob(node, data, size) != NPU_OK)
			st = npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
		free(data);
		if (st != NPU_OK) {
			npu_error_set(err, st, "%s: serialize() failed: %s", pn->label,
				      npu_last_error()[0] ? npu_last_error() : npu_status_str(st));
			if (p->release)
				p->release(p->user, pn->state);
			free(pn);
			return st;
		}
	}
	node->op_state = pn;
	return NPU_OK;
}

static void provider_release(struct npu_node *node)
{
	struct provider_node *pn = node->op_state;

	if (!pn)
		return;
	if (pn->rec->p.release)
		pn->rec->p.release(pn->rec->p.user, pn->state);
	free(pn);
	node->op_state = NULL;
}

static npu_status provider_compute(struct npu_op_ctx *op)
{
	const struct provider_node *pn = op->node->op_state;
	const struct npu_graph *body = body_of(op->node);
	enum npu_dtype dtypes[64];
	struct npu_shape shapes[64];
	enum npu_dtype *dt = dtypes;
	struct npu_shape *sh = shapes;
	npu_status st;
	size_t j;

	if (!pn || !op->rt || !body)
		return npu_error_set(op->err, NPU_ERR_INTERNAL,
				     "provider node '%s': run without its prepared state",
				     op->node->name);
	if (op->num_outputs > 64) {
		dt = calloc(op->num_outputs, sizeof(*dt));
		sh = calloc(op->num_outputs, sizeof(*sh));
		if (!dt || !sh) {
			st = npu_error_set(op->err, NPU_ERR_NO_MEMORY, "out of memory");
			goto out;
		}
	}
	/* The outputs must be what the subgraph's inference said. */
	for (j = 0; j < op->num_outputs; j++) {
		dt[j] = body->outputs[j]->dtype;
		sh[j] = body->outputs[j]->shape;
	}
	st = npu_kernel_context_run(op, pn->label, dt, sh, pn->rec->p.compute, pn->rec->p.user,
				    pn->state);
out:
	if (dt != dtypes) {
		free(dt);
		free(sh);
	}
	return st;
}

/* ---- Taking nodes: an application's provider ---- */

/* The capability pass on this thread (npu_provider_node_input_taken()). */
struct capability_pass {
	const struct npu_graph *g;
	const bool *take;	/* per node of g so far */
};

static _Thread_local const struct capability_pass *current_pass;

NPU_API bool npu_provider_node_input_taken(const struct npu_provider_node *pn, size_t index)
{
	const struct npu_node *n = node_of(pn);
	const struct capability_pass *pass = current_pass;
	size_t i;

	if (!pn || !pass || index >= n->num_inputs || !n->inputs[index] ||
	    !n->inputs[index]->producer)
		return false;
	for (i = 0; i < pass->g->num_nodes; i++)
		if (pass->g->nodes[i] == n->inputs[index]->producer)
			return pass->take[i];
	return false;
}

static npu_status note(struct npu_ep_ctx *ctx, const char *node, const char *provider,
		       const char *why)
{
	struct npu_ep_notes *nt = &ctx->notes;
	struct npu_ep_note *l = realloc(nt->list, (nt->count + 1) * sizeof(*l));

	if (!l)
		return npu_error_set(ctx->err, NPU_ERR_NO_MEMORY, "out of memory");
	nt->list = l;
	l = &l[nt->count];
	l->node = strdup(node);
	l->why = strdup(why);
	l->provider = provider;
	if (!l->node || !l->why) {
		free(l->node);
		free(l->why);
		return npu_error_set(ctx->err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	nt->count++;
	return NPU_OK;
}

static void notes_free(struct npu_ep_notes *nt)
{
	size_t i;

	for (i = 0; i < nt->count; i++) {
		free(nt->list[i].node);
		free(nt->list[i].why);
	}
	free(nt->list);
	memset(nt, 0, sizeof(*nt));
}

static size_t uf_find(size_t *parent, size_t i)
{
	while (parent[i] != i)
		i = parent[i] = parent[parent[i]];
	return i;
}

/*
 * The provider's can_run() on every node no provider owns; the nodes it
 * takes become subgraphs: runs of the clustered order, split into their
 * connected parts (each convex: a path between two of its nodes stays in
 * the run, whose every node on it is then connected to them).
 */
static npu_status user_assign(const struct npu_ep *ep, struct npu_ep_ctx *ctx)
{
	const struct npu_provider *p = &ep->rec->p;
	struct npu_graph *g = ctx->p->g;
	size_t n = g->num_nodes, i, j, k, start, groups = 0;
	bool *take = NULL;
	size_t *parent = NULL, *comp = NULL, *starts = NULL;
	struct npu_node **members = NULL;
	struct capability_pass pass;
	npu_status st = NPU_OK;
	char why[256];

	if (ctx->finished || !n)
		return NPU_OK;
	take = calloc(n, sizeof(*take));
	parent = calloc(n, sizeof(*parent));
	comp = calloc(n, sizeof(*comp));
	members = calloc(n, sizeof(*members));
	starts = calloc(n + 1, sizeof(*starts));
	if (!take || !parent || !comp || !members || !starts) {
		st = npu_error_set(ctx->err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	/* g's order runs the graph: each node is offered after its producers. */
	pass = (struct capability_pass){ .g = g, .take = take };
	current_pass = &pass;
	for (i = 0; i < n && !st; i++) {
		const struct npu_node *node = g->nodes[i];
		const struct npu_op_schema *s = npu_node_schema(g, node);

		if (!s || s->opaque || s->owner || npu_node_has_subgraph(node) ||
		    node->num_implicit_inputs)
			continue;
		why[0] = 0;
		take[i] = p->can_run(p->user, (const struct npu_provider_node *)node, why,
				     sizeof(why));
		why[sizeof(why) - 1] = 0;
		if (!take[i])
			st = note(ctx, node->name, ep->name, why[0] ? why : "not taken");
	}
	current_pass = NULL;
	for (i = 0; i < n && !take[i]; i++)
		;
	if (i == n)
		goto out;	/* took nothing: the graph stays as it is */
	/* The taken nodes next to one another where the dependencies allow. */
	if (!st)
		st = npu_graph_cluster_order(g, take, false, ctx->err);
	for (start = 0; !st && start < n;) {
		size_t end = start;

		if (!take[start]) {
			start++;
			continue;
		}
		while (end < n && take[end])
			end++;
		/* Connected parts of the run [start, end). */
		for (i = start; i < end; i++)
			parent[i] = i;
		for (i = start; i < end; i++)
			for (j = 0; j < g->nodes[i]->num_inputs; j++) {
				const struct npu_value *v = g->nodes[i]->inputs[j];

				for (k = start; v && k < i; k++)
					if (v->producer == g->nodes[k])
						parent[uf_find(parent, i)] = uf_find(parent, k);
			}
		for (i = start; i < end; i++)
			comp[i] = uf_find(parent, i);
		start = end;
	}
	for (i = 0; i < n; i++)
		if (!take[i])
			comp[i] = SIZE_MAX;
	/*
	 * Collect every part before fusing any (fusing re-sorts g; the node
	 * pointers stay). Parts are disjoint and no path runs from a later
	 * run back to an earlier one, nor between two parts of one run, so
	 * fusing one never puts another on a cycle.
	 */
	for (i = 0, k = 0; !st && i < n; i++) {
		size_t root = comp[i], m;

		if (!take[i] || root == SIZE_MAX)
			continue;
		starts[groups++] = k;
		for (m = i; m < n; m++)
			if (take[m] && comp[m] == root) {
				members[k++] = g->nodes[m];
				comp[m] = SIZE_MAX;
			}
	}
	starts[groups] = k;
	for (i = 0; !st && i < groups; i++) {
		struct npu_node *fused;
		char name[96];

		snprintf(name, sizeof(name), "%s_subgraph_%zu", ep->name, i);
		st = npu_graph_fuse(g, members + starts[i], starts[i + 1] - starts[i], ep->name,
				    NPU_DOMAIN_PROVIDER, name, &fused, ctx->err);
	}
out:
	free(take);
	free(parent);
	free(comp);
	free(members);
	free(starts);
	return st;
}

/* ---- The built-in providers ---- */

static npu_status npu_assign(const struct npu_ep *ep, struct npu_ep_ctx *ctx)
{
	(void)ep;
	return npu_plan_compile_npu(ctx->m, ctx->p, ctx->err);
}

/*
 * The CPU takes what is left. Its graph passes run on a plan nobody
 * compiled; a compiled plan's CPU part runs as the compiler left it (its
 * CPU options are recorded with it).
 */
static npu_status cpu_assign(const struct npu_ep *ep, struct npu_ep_ctx *ctx)
{
	(void)ep;
	if (ctx->finished || ctx->p->compiled)
		return NPU_OK;
	return npu_model_cpu_passes(ctx->m, ctx->p->g, ctx->err);
}

static const struct npu_ep builtin_npu = { .name = "npu", .uses_device = true, .assign = npu_assign };
static const struct npu_ep builtin_cpu = { .name = "cpu", .assign = cpu_assign };

/* ---- A model's list ---- */

static const struct npu_ep *find_ep(const struct npu_engine *e, const char *name, size_t len)
{
	size_t i;

	if (len == 3 && !strncmp(name, "npu", 3))
		return &builtin_npu;
	if (len == 3 && !strncmp(name, "cpu", 3))
		return &builtin_cpu;
	for (i = 0; i < e->num_providers; i++)
		if (strlen(e->providers[i]->name) == len && !strncmp(e->providers[i]->name, name, len))
			return &e->providers[i]->ep;
	return NULL;
}

static npu_status list_fail(struct npu_model *m, const char *fmt, const char *name, int len)
{
	char registered[512] = "";
	size_t i, used = 0;

	for (i = 0; i < m->engine->num_providers && used < sizeof(registered); i++)
		used += (size_t)snprintf(registered + used, sizeof(registered) - used, ", %s",
					 m->engine->providers[i]->name);
	return npu_api_fail(NPU_ERR_INVALID_ARG,
			    "%s: npu_model_options.providers '%s': %s '%.*s' (providers: npu, cpu%s)",
			    m->source, m->providers, fmt, len, name, registered);
}

npu_status npu_model_providers(struct npu_model *m)
{
	const char *list = m->providers && m->providers[0] ? m->providers : NULL;
	bool device_given = strcmp(m->device_name, "cpu") != 0;
	bool names_npu = false;
	const struct npu_ep *eps[NPU_PROVIDERS_MAX];
	const char *s, *why = NULL;
	size_t n = 0, i, len = 0;
	npu_status st;

	if (!list) {
		if (device_given)
			eps[n++] = &builtin_npu;
		eps[n++] = &builtin_cpu;
	}
	/* Registered providers are read under the lock, the message too. */
	pthread_mutex_lock(&m->engine->lock);
	for (s = list; s && *s && !why;) {
		const char *t = s;
		const struct npu_ep *ep;

		while (*t && *t != ',')
			t++;
		len = (size_t)(t - s);
		while (len && isspace((unsigned char)*s)) {
			s++;
			len--;
		}
		while (len && isspace((unsigned char)s[len - 1]))
			len--;
		ep = len ? find_ep(m->engine, s, len) : NULL;
		for (i = 0; ep && i < n && eps[i] != ep; i++)
			;
		if (!ep)
			why = len ? "no provider" : "an empty name";
		else if (i < n)
			why = "names twice";
		else if (n && eps[n - 1] == &builtin_cpu)
			why = "'cpu' takes every node left, so it comes last, not before";
		else if (n == NPU_PROVIDERS_MAX - 1)
			why = "too many providers, at";
		else
			eps[n++] = ep;
		if (!why)
			s = *t ? t + 1 : t;
	}
	st = why ? list_fail(m, why, s, (int)len) : NPU_OK;
	pthread_mutex_unlock(&m->engine->lock);
	if (st)
		return st;
	if (!n || eps[n - 1] != &builtin_cpu)
		eps[n++] = &builtin_cpu;	/* the last resort, named or not */
	for (i = 0; i < n; i++)
		names_npu |= eps[i]->uses_device;
	/* The device is the npu provider's: none without it, "sim" by default. */
	{
		char *dev = strdup(names_npu ? (device_given ? m->device_name : "sim") : "cpu");

		free(m->device_name);
		m->device_name = dev;
	}
	m->eps = calloc(n, sizeof(*m->eps));
	if (!m->device_name || !m->eps)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	m->opts.device = m->device_name;
	memcpy(m->eps, eps, n * sizeof(*eps));
	m->num_eps = n;
	return NPU_OK;
}

/* ---- Placements ---- */

static bool is_provider_node(const struct npu_graph *g, const struct npu_node *n)
{
	const struct npu_op_schema *s = npu_node_schema(g, n);

	return s && s->owner && !strcmp(n->domain, NPU_DOMAIN_PROVIDER);
}

/* The provider node of g whose subgraph holds node 'name', or NULL. */
static const struct npu_node *taken_by(const struct npu_graph *g, const char *name)
{
	size_t i, j;

	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_graph *body;

		if (!is_provider_node(g, g->nodes[i]))
			continue;
		if (!strcmp(g->nodes[i]->name, name))
			return g->nodes[i];
		body = body_of(g->nodes[i]);
		for (j = 0; body && j < body->num_nodes; j++)
			if (!strcmp(body->nodes[j]->name, name))
				return g->nodes[i];
	}
	return NULL;
}

static npu_status add_placement(struct npu_plan *p, const char *node, const char *op_type,
				const char *provider, bool on_npu, int segment, uint64_t macs,
				const char *reason, const struct npu_ep_notes *nt)
{
	struct npu_plan_placement *pl = realloc(p->placements,
						(p->num_placements + 1) * sizeof(*pl));
	char buf[1024];
	size_t used, i;

	if (!pl)
		return NPU_ERR_NO_MEMORY;
	p->placements = pl;
	pl = &pl[p->num_placements];
	used = (size_t)snprintf(buf, sizeof(buf), "%s", reason);
	/* Why the providers before the one that runs it did not take it. */
	for (i = 0; nt && i < nt->count && used < sizeof(buf); i++)
		if (!strcmp(nt->list[i].node, node) && strcmp(nt->list[i].provider, provider))
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "; %s: %s",
						 nt->list[i].provider, nt->list[i].why);
	pl->node = strdup(node);
	pl->op_type = strdup(op_type);
	pl->reason = strdup(buf);
	pl->provider = provider;
	pl->on_npu = on_npu;
	pl->segment = segment;
	pl->macs = macs;
	if (!pl->node || !pl->op_type || !pl->reason) {
		free(pl->node);
		free(pl->op_type);
		free(pl->reason);
		return NPU_ERR_NO_MEMORY;
	}
	p->num_placements++;
	return NPU_OK;
}

/* The NPU compiler's record of node 'name' in p, or NULL. */
static const struct npu_placement_record *compiled_record(const struct npu_plan *p,
							  const char *name)
{
	size_t i;

	for (i = 0; p->compiled && i < p->compiled->num_records; i++)
		if (!strcmp(p->compiled->records[i].node, name))
			return &p->compiled->records[i];
	return NULL;
}

static npu_status build_placements(struct npu_plan *p, const struct npu_ep_notes *nt)
{
	const struct npu_graph *g = p->g;
	npu_status st = NPU_OK;
	size_t i, j;

	if (p->compiled) {
		for (i = 0; !st && i < p->compiled->num_records; i++) {
			const struct npu_placement_record *r = &p->compiled->records[i];
			bool npu = r->placement == NPU_PLACE_NPU;

			if (taken_by(g, r->node))
				continue;	/* listed with its provider below */
			st = add_placement(p, r->node, r->op_type, npu ? "npu" : "cpu", npu,
					   r->segment, r->macs, r->reason, nt);
		}
	} else {
		for (i = 0; !st && i < g->num_nodes; i++)
			if (!is_provider_node(g, g->nodes[i]))
				st = add_placement(p, g->nodes[i]->name, g->nodes[i]->op_type, "cpu",
						   false, -1, 0, "CPU kernel", nt);
	}
	for (i = 0; !st && i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];
		const struct npu_graph *body = body_of(n);
		char why[512];

		if (!is_provider_node(g, n) || !body)
			continue;
		for (j = 0; !st && j < body->num_nodes; j++) {
			const struct npu_placement_record *r = compiled_record(p, body->nodes[j]->name);

			/* With why an earlier provider (the NPU) left it. */
			snprintf(why, sizeof(why), "taken by provider '%s' (%s: %zu nodes)%s%s",
				 n->op_type, n->name, body->num_nodes, r ? "; npu: " : "",
				 r ? r->reason : "");
			st = add_placement(p, body->nodes[j]->name, body->nodes[j]->op_type,
					   npu_node_schema(g, n)->owner, false, -1, 0, why, nt);
		}
	}
	return st;
}

void npu_plan_placements_free(struct npu_plan *p)
{
	size_t i;

	for (i = 0; i < p->num_placements; i++) {
		free(p->placements[i].node);
		free(p->placements[i].op_type);
		free(p->placements[i].reason);
	}
	free(p->placements);
	p->placements = NULL;
	p->num_placements = 0;
}

npu_status npu_plan_assign(struct npu_model *m, struct npu_plan *p, bool finished,
			   struct npu_error *err)
{
	struct npu_ep_ctx ctx = { .m = m, .p = p, .finished = finished, .err = err };
	npu_status st = NPU_OK;
	size_t i;

	for (i = 0; !st && i < m->num_eps; i++)
		st = m->eps[i]->assign(m->eps[i], &ctx);
	if (!st && build_placements(p, &ctx.notes))
		st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	notes_free(&ctx.notes);
	return st;
}

NPU_API size_t npu_plan_num_placements(const struct npu_plan *p)
{
	return p ? p->num_placements : 0;
}

NPU_API npu_status npu_plan_placement(const struct npu_plan *p, size_t index,
				      struct npu_node_placement *out)
{
	const struct npu_plan_placement *r;

	if (!p || !out || index >= p->num_placements)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_placement: no placement %zu",
				    index);
	r = &p->placements[index];
	out->node = r->node;
	out->op_type = r->op_type;
	out->on_npu = r->on_npu;
	out->segment = r->segment;
	out->macs = r->macs;
	out->reason = r->reason;
	return NPU_OK;
}

NPU_API const char *npu_plan_placement_provider(const struct npu_plan *p, size_t index)
{
	return p && index < p->num_placements ? p->placements[index].provider : NULL;
}

/* ---- Registration ---- */

npu_status npu_providers_check_graph(const struct npu_graph *g, struct npu_error *err)
{
	size_t i;

	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];

		if (strcmp(n->domain, NPU_DOMAIN_PROVIDER) || npu_node_schema(g, n))
			continue;
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: node '%s' runs on execution provider '%s', which is not registered on this engine (npu_engine_register_provider)",
				     g->source, n->name, n->op_type);
	}
	return NPU_OK;
}

NPU_API void npu_provider_init_sized(struct npu_provider *p, size_t struct_size)
{
	if (!p || struct_size < sizeof(size_t))
		return;
	memset(p, 0, struct_size);
	p->struct_size = struct_size;
}

static npu_status check_provider(const struct npu_provider *p)
{
	const char *name = p->name ? p->name : "(null)";
	size_t i, len = p->name ? strlen(p->name) : 0;

	if (!len || len > NAME_MAX_LEN || !islower((unsigned char)p->name[0]))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_provider: name '%s': 1 to %d of [a-z0-9_], starting with a letter",
				    name, NAME_MAX_LEN);
	for (i = 0; i < len; i++)
		if (!islower((unsigned char)p->name[i]) && !isdigit((unsigned char)p->name[i]) &&
		    p->name[i] != '_')
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "npu_engine_register_provider: name '%s': character '%c' (1 to %d of [a-z0-9_])",
					    name, p->name[i], NAME_MAX_LEN);
	if (!strcmp(name, "cpu") || !strcmp(name, "npu"))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_provider: name '%s' is the library's", name);
	if (!p->can_run || !p->compile || !p->compute)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_provider: '%s': %s is NULL", name,
				    !p->can_run ? "can_run" : !p->compile ? "compile" : "compute");
	if (!p->serialize != !p->deserialize)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_provider: '%s': serialize and deserialize go together",
				    name);
	return NPU_OK;
}

NPU_API npu_status npu_engine_register_provider(struct npu_engine *engine,
						const struct npu_provider *provider)
{
	struct npu_provider_record *rec, **list;
	struct npu_error err = { 0 };
	npu_status st;
	size_t i;

	if (!engine || !provider)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_engine_register_provider: %s is NULL",
				    !engine ? "engine" : "provider");
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	npu_provider_init(&rec->p);
	st = npu_api_copy_options(&rec->p, sizeof(rec->p), provider, "npu_provider");
	if (!st)
		st = check_provider(&rec->p);
	if (!st && !(rec->name = strdup(rec->p.name)))
		st = npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	if (st) {
		free(rec);
		return st;
	}
	rec->p.name = rec->name;
	rec->ep = (struct npu_ep){ .name = rec->name, .assign = user_assign, .rec = rec };
	rec->schema = (struct npu_op_schema){
		.op_type = rec->name, .domain = NPU_DOMAIN_PROVIDER, .since_version = 1,
		.max_version = 1, .infer = provider_infer, .dynamic_outputs = true,
		.opaque = true, .owner = rec->name, .data = rec,
	};
	rec->def = (struct npu_op_def){
		.op_type = rec->name, .domain = NPU_DOMAIN_PROVIDER, .prepare = provider_prepare,
		.release = provider_release, .compute = provider_compute,
	};
	pthread_mutex_lock(&engine->lock);
	for (i = 0; i < engine->num_providers; i++)
		if (!strcmp(engine->providers[i]->name, rec->name))
			st = npu_api_fail(NPU_ERR_BUSY,
					  "npu_engine_register_provider: '%s' is registered already",
					  rec->name);
	list = st ? NULL : realloc(engine->providers, (engine->num_providers + 1) * sizeof(*list));
	if (!st && !list)
		st = npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	if (!st) {
		engine->providers = list;
		st = npu_op_registry_add(engine->ops, &rec->schema, &rec->def, &err);
		if (st) {
			npu_error_prefix(&err, "npu_engine_register_provider");
			npu_api_fail_err(&err);
		} else {
			list[engine->num_providers++] = rec;
		}
	}
	pthread_mutex_unlock(&engine->lock);
	if (st) {
		free(rec->name);
		free(rec);
		return st;
	}
	npu_engine_log(engine, NPU_LOG_INFO, "execution provider '%s' registered", rec->name);
	return NPU_OK;
}

void npu_providers_free(struct npu_engine *e)
{
	size_t i;

	for (i = 0; i < e->num_providers; i++) {
		if (e->providers[i]->p.destroy)
			e->providers[i]->p.destroy(e->providers[i]->p.user);
		free(e->providers[i]->name);
		free(e->providers[i]);
	}
	free(e->providers);
	e->providers = NULL;
	e->num_providers = 0;
}
