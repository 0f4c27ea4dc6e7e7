// SPDX-License-Identifier: MIT
/*
 * onnx_split.c - cut a ModelProto in two at named tensors (the tools
 * library: `npu split`; not part of libnpu-user).
 *
 * The dataflow is read from the protobuf itself (not from our graph IR), so
 * the parts are the original nodes with their attributes untouched; the IR
 * is only asked for the type of a cut tensor the file does not declare.
 * A node computed from initializers alone (a Constant, a shape computed
 * from constants) never has to cross the link: each part that needs it
 * gets its own copy.
 */
#include "npu-tools/onnx_split.h"
#include "onnx/npu_onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_NODE ((size_t)-1)

struct cg_tensor {
	const char *name;	/* borrowed from the proto */
	size_t producer;	/* topological node index, NO_NODE if none */
	size_t last_use;	/* largest topological index reading it */
	bool init, input, output, used;
};

struct cg_node {
	const Onnx__NodeProto *np;
	char label[160];	/* "node 'conv1' (Conv)" */
	char name[64];		/* name, or "#index" */
	size_t *uses, num_uses;	/* tensor ids: inputs and subgraph captures */
	size_t *outs, num_outs;
	bool dyn;		/* depends on a model input */
};

struct npu_onnx_cutgraph {
	Onnx__ModelProto *mp;
	char *source;
	struct cg_tensor *t;
	size_t num_t, cap_t;
	size_t *hash, hash_cap;	/* tensor id + 1, 0 empty */
	struct cg_node *n;	/* topological order */
	size_t num_n;
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static size_t find_tensor(const struct npu_onnx_cutgraph *cg, const char *name)
{
	size_t i;

	if (!cg->hash_cap)
		return NO_NODE;
	for (i = name_hash(name) & (cg->hash_cap - 1); cg->hash[i];
	     i = (i + 1) & (cg->hash_cap - 1))
		if (!strcmp(cg->t[cg->hash[i] - 1].name, name))
			return cg->hash[i] - 1;
	return NO_NODE;
}

/* The tensor 'name', added when new; NO_NODE when out of memory. */
static size_t add_tensor(struct npu_onnx_cutgraph *cg, const char *name)
{
	size_t id = find_tensor(cg, name), i;

	if (id != NO_NODE)
		return id;
	if (cg->num_t + 1 > cg->cap_t) {
		size_t cap = cg->cap_t ? cg->cap_t * 2 : 64;
		struct cg_tensor *t = realloc(cg->t, cap * sizeof(*t));

		if (!t)
			return NO_NODE;
		cg->t = t;
		cg->cap_t = cap;
	}
	if ((cg->num_t + 1) * 2 > cg->hash_cap) {
		size_t cap = cg->hash_cap ? cg->hash_cap * 2 : 128, k;
		size_t *h = calloc(cap, sizeof(*h));

		if (!h)
			return NO_NODE;
		free(cg->hash);
		cg->hash = h;
		cg->hash_cap = cap;
		for (k = 0; k < cg->num_t; k++) {
			for (i = name_hash(cg->t[k].name) & (cap - 1); h[i]; i = (i + 1) & (cap - 1))
				;
			h[i] = k + 1;
		}
	}
	id = cg->num_t++;
	memset(&cg->t[id], 0, sizeof(cg->t[id]));
	cg->t[id].name = name;
	cg->t[id].producer = NO_NODE;
	for (i = name_hash(name) & (cg->hash_cap - 1); cg->hash[i]; i = (i + 1) & (cg->hash_cap - 1))
		;
	cg->hash[i] = id + 1;
	return id;
}

/* Does the subgraph define 'name' itself (initializer, input, node output)? */
static bool sub_defines(const Onnx__GraphProto *gp, const char *name)
{
	size_t i, j;

	for (i = 0; i < gp->n_initializer; i++)
		if (gp->initializer[i]->name && !strcmp(gp->initializer[i]->name, name))
			return true;
	for (i = 0; i < gp->n_sparse_initializer; i++)
		if (gp->sparse_initializer[i]->values && gp->sparse_initializer[i]->values->name &&
		    !strcmp(gp->sparse_initializer[i]->values->name, name))
			return true;
	for (i = 0; i < gp->n_input; i++)
		if (gp->input[i]->name && !strcmp(gp->input[i]->name, name))
			return true;
	for (i = 0; i < gp->n_node; i++)
		for (j = 0; j < gp->node[i]->n_output; j++)
			if (gp->node[i]->output[j] && !strcmp(gp->node[i]->output[j], name))
				return true;
	return false;
}

struct name_list {
	const char **v;
	size_t n, cap;
};

static int name_list_add(struct name_list *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], name))
			return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		const char **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = name;
	return 0;
}

static int node_free_names(const Onnx__NodeProto *np, struct name_list *out, int depth);

/* Names a subgraph reads but does not define: values of the graphs around it. */
static int graph_free_names(const Onnx__GraphProto *gp, struct name_list *out, int depth)
{
	struct name_list inner = { 0 };
	size_t i, j;
	int rc = 0;

	if (depth > 16)
		return -1;
	for (i = 0; i < gp->n_node && !rc; i++) {
		const Onnx__NodeProto *np = gp->node[i];

		for (j = 0; j < np->n_input && !rc; j++)
			if (np->input[j] && np->input[j][0])
				rc = name_list_add(&inner, np->input[j]);
		if (!rc)
			rc = node_free_names(np, &inner, depth + 1);
	}
	for (i = 0; i < inner.n && !rc; i++)
		if (!sub_defines(gp, inner.v[i]))
			rc = name_list_add(out, inner.v[i]);
	free(inner.v);
	return rc;
}

/* What the subgraph attributes of a node capture from outside. */
static int node_free_names(const Onnx__NodeProto *np, struct name_list *out, int depth)
{
	size_t a, k;
	int rc = 0;

	for (a = 0; a < np->n_attribute && !rc; a++) {
		const Onnx__AttributeProto *at = np->attribute[a];

		if (at->g)
			rc = graph_free_names(at->g, out, depth);
		for (k = 0; k < at->n_graphs && !rc; k++)
			rc = graph_free_names(at->graphs[k], out, depth);
	}
	return rc;
}

void npu_onnx_cutgraph_destroy(struct npu_onnx_cutgraph *cg)
{
	size_t i;

	if (!cg)
		return;
	for (i = 0; i < cg->num_n; i++) {
		free(cg->n[i].uses);
		free(cg->n[i].outs);
	}
	free(cg->n);
	free(cg->t);
	free(cg->hash);
	free(cg->source);
	if (cg->mp)
		onnx__model_proto__free_unpacked(cg->mp, NULL);
	free(cg);
}

static npu_status oom(struct npu_error *err)
{
	return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
}

/* Kahn's algorithm over the nodes' tensor uses; the file's order may be any. */
static npu_status topo_sort(struct npu_onnx_cutgraph *cg, const Onnx__GraphProto *gp,
			    struct cg_node *nodes, size_t *file_producer,
			    struct npu_error *err)
{
	size_t n = gp->n_node, i, j, head = 0, tail = 0;
	size_t *indeg = calloc(n + 1, sizeof(*indeg)), *queue = calloc(n + 1, sizeof(*queue));
	size_t *topo_of = calloc(n + 1, sizeof(*topo_of));
	npu_status st = NPU_OK;

	if (!indeg || !queue || !topo_of) {
		st = oom(err);
		goto out;
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < nodes[i].num_uses; j++)
			if (file_producer[nodes[i].uses[j]] != NO_NODE)
				indeg[i]++;
	for (i = 0; i < n; i++)
		if (!indeg[i])
			queue[tail++] = i;
	while (head < tail) {
		size_t u = queue[head++], k;

		topo_of[u] = head - 1;
		/* Consumers of u: O(n^2 / sparse); fine for the graphs we cut. */
		for (k = 0; k < n; k++)
			for (j = 0; j < nodes[k].num_uses; j++)
				if (file_producer[nodes[k].uses[j]] == u && !--indeg[k])
					queue[tail++] = k;
	}
	if (tail < n) {
		for (i = 0; i < n && indeg[i] == 0; i++)
			;
		st = npu_error_set(err, NPU_ERR_MODEL, "%s: the graph has a cycle through %s",
				   cg->source, nodes[i].label);
		goto out;
	}
	for (i = 0; i < n; i++)
		cg->n[topo_of[i]] = nodes[i];
	for (i = 0; i < cg->num_t; i++)
		if (file_producer[i] != NO_NODE)
			cg->t[i].producer = topo_of[file_producer[i]];
out:
	free(indeg);
	free(queue);
	free(topo_of);
	return st;
}

static npu_status cutgraph_create(const void *data, size_t size, const char *source,
				  struct npu_onnx_cutgraph **out, struct npu_error *err)
{
	struct npu_onnx_cutgraph *cg = calloc(1, sizeof(*cg));
	const Onnx__GraphProto *gp;
	struct cg_node *nodes = NULL;
	size_t *file_producer = NULL;
	size_t i, j, n = 0;
	bool moved = false;
	npu_status st = NPU_OK;

	*out = NULL;
	if (!cg)
		return oom(err);
	cg->source = strdup(source ? source : "model");
	cg->mp = onnx__model_proto__unpack(NULL, size, data);
	if (!cg->source) {
		st = oom(err);
		goto fail;
	}
	if (!cg->mp || !cg->mp->graph) {
		st = npu_error_set(err, NPU_ERR_MODEL, "%s: not an ONNX model (%s)",
				   cg->source, cg->mp ? "no graph" : "protobuf parse failed");
		goto fail;
	}
	gp = cg->mp->graph;
	n = gp->n_node;
	for (i = 0; i < gp->n_initializer; i++)
		if (gp->initializer[i]->name) {
			size_t id = add_tensor(cg, gp->initializer[i]->name);

			if (id == NO_NODE)
				goto nomem;
			cg->t[id].init = true;
		}
	for (i = 0; i < gp->n_sparse_initializer; i++)
		if (gp->sparse_initializer[i]->values && gp->sparse_initializer[i]->values->name) {
			size_t id = add_tensor(cg, gp->sparse_initializer[i]->values->name);

			if (id == NO_NODE)
				goto nomem;
			cg->t[id].init = true;
		}
	for (i = 0; i < gp->n_input; i++) {
		size_t id;

		if (!gp->input[i]->name)
			continue;
		id = add_tensor(cg, gp->input[i]->name);
		if (id == NO_NODE)
			goto nomem;
		/* IR < 4 lists initializers as inputs too: those stay constants. */
		if (!cg->t[id].init)
			cg->t[id].input = true;
	}
	nodes = calloc(n + 1, sizeof(*nodes));
	cg->n = calloc(n + 1, sizeof(*cg->n));
	if (!nodes || !cg->n)
		goto nomem;
	cg->num_n = n;
	/* Outputs first: a node may read a value produced further down the file. */
	for (i = 0; i < n; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		struct cg_node *nd = &nodes[i];

		nd->np = np;
		if (np->name && np->name[0])
			snprintf(nd->name, sizeof(nd->name), "%s", np->name);
		else
			snprintf(nd->name, sizeof(nd->name), "#%zu", i);
		snprintf(nd->label, sizeof(nd->label), "node '%s' (%s)", nd->name,
			 np->op_type ? np->op_type : "?");
		nd->outs = calloc(np->n_output + 1, sizeof(*nd->outs));
		if (!nd->outs)
			goto nomem;
		for (j = 0; j < np->n_output; j++) {
			size_t id;

			if (!np->output[j] || !np->output[j][0])
				continue;
			id = add_tensor(cg, np->output[j]);
			if (id == NO_NODE)
				goto nomem;
			nd->outs[nd->num_outs++] = id;
		}
	}
	file_producer = malloc((cg->num_t + 1) * sizeof(*file_producer));
	if (!file_producer)
		goto nomem;
	for (i = 0; i < cg->num_t; i++)
		file_producer[i] = NO_NODE;
	for (i = 0; i < n; i++)
		for (j = 0; j < nodes[i].num_outs; j++) {
			size_t id = nodes[i].outs[j];

			if (file_producer[id] != NO_NODE || cg->t[id].init || cg->t[id].input) {
				st = npu_error_set(err, NPU_ERR_MODEL,
					"%s: %s: output '%s' is defined twice",
					cg->source, nodes[i].label, cg->t[id].name);
				goto fail;
			}
			file_producer[id] = i;
		}
	for (i = 0; i < n; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		struct name_list names = { 0 };

		for (j = 0; j < np->n_input; j++)
			if (np->input[j] && np->input[j][0] &&
			    name_list_add(&names, np->input[j])) {
				free(names.v);
				goto nomem;
			}
		if (node_free_names(np, &names, 0)) {
			free(names.v);
			goto nomem;
		}
		nodes[i].uses = calloc(names.n + 1, sizeof(*nodes[i].uses));
		if (!nodes[i].uses) {
			free(names.v);
			goto nomem;
		}
		for (j = 0; j < names.n; j++) {
			size_t id = find_tensor(cg, names.v[j]);

			if (id == NO_NODE) {
				st = npu_error_set(err, NPU_ERR_MODEL,
					"%s: %s reads '%s', which no node, input or initializer defines",
					cg->source, nodes[i].label, names.v[j]);
				free(names.v);
				goto fail;
			}
			nodes[i].uses[nodes[i].num_uses++] = id;
		}
		free(names.v);
	}
	for (i = 0; i < gp->n_output; i++) {
		size_t id = gp->output[i]->name ? find_tensor(cg, gp->output[i]->name) : NO_NODE;

		if (id == NO_NODE) {
			st = npu_error_set(err, NPU_ERR_MODEL, "%s: graph output '%s' is not produced",
					   cg->source, gp->output[i]->name ? gp->output[i]->name : "");
			goto fail;
		}
		cg->t[id].output = true;
	}
	st = topo_sort(cg, gp, nodes, file_producer, err);
	if (st != NPU_OK)
		goto fail;
	moved = true;	/* cg->n owns the nodes' arrays now */
	for (i = 0; i < n; i++) {
		struct cg_node *nd = &cg->n[i];

		for (j = 0; j < nd->num_uses; j++) {
			struct cg_tensor *t = &cg->t[nd->uses[j]];

			t->used = true;
			t->last_use = i;
			if (t->input || (t->producer != NO_NODE && cg->n[t->producer].dyn))
				nd->dyn = true;
		}
	}
	for (i = 0; i < cg->num_t; i++)
		if (cg->t[i].output)
			cg->t[i].last_use = n;	/* read after every node */
	free(nodes);
	free(file_producer);
	*out = cg;
	return NPU_OK;
nomem:
	st = oom(err);
fail:
	if (nodes && !moved)
		for (i = 0; i < n; i++) {
			free(nodes[i].uses);
			free(nodes[i].outs);
		}
	free(nodes);
	free(file_producer);
	npu_onnx_cutgraph_destroy(cg);
	return st;
}

size_t npu_onnx_cutgraph_num_nodes(const struct npu_onnx_cutgraph *cg)
{
	return cg->num_n;
}

const char *npu_onnx_cutgraph_node_name(const struct npu_onnx_cutgraph *cg, size_t i)
{
	return i < cg->num_n ? cg->n[i].name : NULL;
}

const char *npu_onnx_cutgraph_node_op(const struct npu_onnx_cutgraph *cg, size_t i)
{
	return i < cg->num_n && cg->n[i].np->op_type ? cg->n[i].np->op_type : "?";
}

const char *npu_onnx_cutgraph_node_output(const struct npu_onnx_cutgraph *cg,
					  size_t i, size_t k)
{
	return i < cg->num_n && k < cg->n[i].num_outs ? cg->t[cg->n[i].outs[k]].name : NULL;
}

struct walk {
	size_t *stack, sp;
	size_t *from;	/* tail walk: the node that reads the tensor (NO_NODE: a graph output) */
};

static npu_status cutgraph_check(const struct npu_onnx_cutgraph *cg,
				 const char *const *cut, size_t count,
				 bool *head_out, bool *tail_out, struct npu_error *err)
{
	bool *in_cut = calloc(cg->num_t + 1, sizeof(bool));
	bool *cut_used = calloc(cg->num_t + 1, sizeof(bool));
	bool *head = calloc(cg->num_n + 1, sizeof(bool)), *tail = calloc(cg->num_n + 1, sizeof(bool));
	size_t *ids = calloc(count + 1, sizeof(size_t));
	bool *seen = calloc(cg->num_t + 1, sizeof(bool));
	struct walk w = { 0 };
	/* Each node and each tensor is pushed at most once. */
	size_t cap = cg->num_t + cg->num_n + 1;
	npu_status st = NPU_OK;
	size_t i, j;

	w.stack = malloc(cap * sizeof(size_t));
	w.from = malloc(cap * sizeof(size_t));
	if (!in_cut || !cut_used || !seen || !head || !tail || !ids || !w.stack || !w.from) {
		st = oom(err);
		goto out;
	}
	if (!count) {
		st = npu_error_set(err, NPU_ERR_INVALID_ARG, "%s: the cut names no tensor", cg->source);
		goto out;
	}
	for (i = 0; i < count; i++) {
		size_t id = find_tensor(cg, cut[i]);
		const struct cg_tensor *t = id != NO_NODE ? &cg->t[id] : NULL;
		const char *why = NULL;

		if (!t)
			why = "no node, input or initializer of the model has this name";
		else if (t->init)
			why = "it is an initializer (a constant), not a computed tensor";
		else if (t->input)
			why = "it is an input of the model: the head would compute nothing";
		else if (t->output)
			why = "it is an output of the model: the tail would compute nothing from it";
		else if (t->producer == NO_NODE)
			why = "nothing produces it";
		else if (!cg->n[t->producer].dyn)
			why = "it is computed from initializers alone (a constant each part can compute)";
		else if (in_cut[id])
			why = "it is given twice";
		if (why) {
			st = npu_error_set(err, NPU_ERR_INVALID_ARG, "%s: cut tensor '%s': %s",
					   cg->source, cut[i], why);
			goto out;
		}
		in_cut[id] = true;
		ids[i] = id;
	}
	/* The head: everything the cut tensors are computed from. */
	for (i = 0; i < count; i++) {
		size_t p = cg->t[ids[i]].producer;

		if (!head[p]) {
			head[p] = true;
			w.stack[w.sp++] = p;
		}
	}
	while (w.sp) {
		size_t nd = w.stack[--w.sp];

		for (j = 0; j < cg->n[nd].num_uses; j++) {
			size_t p = cg->t[cg->n[nd].uses[j]].producer;

			if (p != NO_NODE && !head[p]) {
				head[p] = true;
				w.stack[w.sp++] = p;
			}
		}
	}
	/*
	 * The tail: what the outputs need, back to the cut. A tensor it reads
	 * that the head computes and the cut does not carry crosses the cut.
	 */
	for (i = 0; i < cg->num_t; i++)
		if (cg->t[i].output) {
			seen[i] = true;
			w.from[w.sp] = NO_NODE;
			w.stack[w.sp++] = i;
		}
	while (w.sp) {
		size_t id = w.stack[--w.sp], reader = w.from[w.sp], p = cg->t[id].producer;

		if (in_cut[id]) {
			cut_used[id] = true;
			continue;
		}
		if (p == NO_NODE || tail[p])
			continue;
		if (cg->n[p].dyn && head[p]) {
			char rd[200];

			if (reader == NO_NODE)
				snprintf(rd, sizeof(rd), "it is an output of the model");
			else
				snprintf(rd, sizeof(rd), "%s after the cut reads it", cg->n[reader].label);
			st = npu_error_set(err, NPU_ERR_INVALID_ARG,
				"%s: the cut does not separate the graph: tensor '%s' crosses it (%s, but %s computes it before the cut); add '%s' to the cut",
				cg->source, cg->t[id].name, rd, cg->n[p].label, cg->t[id].name);
			goto out;
		}
		tail[p] = true;
		for (j = 0; j < cg->n[p].num_uses; j++) {
			size_t u = cg->n[p].uses[j];

			if (!seen[u]) {
				seen[u] = true;
				w.from[w.sp] = p;
				w.stack[w.sp++] = u;
			}
		}
	}
	for (i = 0; i < count; i++)
		if (!cut_used[ids[i]]) {
			st = npu_error_set(err, NPU_ERR_INVALID_ARG,
				"%s: cut tensor '%s': nothing after the cut reads it",
				cg->source, cut[i]);
			goto out;
		}
	if (head_out)
		memcpy(head_out, head, cg->num_n * sizeof(bool));
	if (tail_out)
		memcpy(tail_out, tail, cg->num_n * sizeof(bool));
out:
	free(in_cut);
	free(cut_used);
	free(seen);
	free(head);
	free(tail);
	free(ids);
	free(w.stack);
	free(w.from);
	return st;
}

size_t npu_onnx_cutgraph_enumerate(const struct npu_onnx_cutgraph *cg, size_t max_cuts,
				   void (*fn)(void *arg, const char *const *names, size_t count),
				   void *arg)
{
	struct npu_error err = { 0 };
	size_t made = 0, i, k, *live = calloc(cg->num_t + 1, sizeof(size_t)), num_live = 0;
	size_t last_pair[2] = { NO_NODE, NO_NODE };

	if (!live)
		return 0;
	for (i = 0; i < cg->num_n && (!max_cuts || made < max_cuts); i++)
		for (k = 0; k < cg->n[i].num_outs; k++) {
			const char *name = cg->t[cg->n[i].outs[k]].name;

			if (!cg->t[cg->n[i].outs[k]].used || cg->t[cg->n[i].outs[k]].output)
				continue;
			if (cutgraph_check(cg, &name, 1, NULL, NULL, &err) == NPU_OK &&
			    (!max_cuts || made < max_cuts)) {
				fn(arg, &name, 1);
				made++;
			}
		}
	/* Frontiers of the topological order: the tensors live between i and i + 1. */
	for (i = 0; i + 1 < cg->num_n && (!max_cuts || made < max_cuts); i++) {
		size_t kept = 0;

		for (k = 0; k < num_live; k++)
			if (cg->t[live[k]].last_use > i)
				live[kept++] = live[k];
		num_live = kept;
		if (cg->n[i].dyn)
			for (k = 0; k < cg->n[i].num_outs; k++) {
				size_t id = cg->n[i].outs[k];

				if (cg->t[id].used || cg->t[id].output)
					live[num_live++] = id;
			}
		if (num_live == 2 && !(live[0] == last_pair[0] && live[1] == last_pair[1])) {
			const char *names[2] = { cg->t[live[0]].name, cg->t[live[1]].name };

			last_pair[0] = live[0];
			last_pair[1] = live[1];
			if (cutgraph_check(cg, names, 2, NULL, NULL, &err) == NPU_OK) {
				fn(arg, names, 2);
				made++;
			}
		}
	}
	free(live);
	return made;
}

/* ---- Writing the parts ---- */

/* A ValueInfoProto we make for a cut tensor the file does not describe. */
struct owned_vi {
	Onnx__ValueInfoProto vi;
	Onnx__TypeProto type;
	Onnx__TypeProto__Tensor tensor;
	Onnx__TensorShapeProto shape;
	Onnx__TensorShapeProto__Dimension dims[NPU_MAX_RANK], *dim_ptr[NPU_MAX_RANK];
};

static const Onnx__ValueInfoProto *declared_vi(const Onnx__GraphProto *gp, const char *name)
{
	size_t i;

	for (i = 0; i < gp->n_value_info; i++)
		if (gp->value_info[i]->name && !strcmp(gp->value_info[i]->name, name) &&
		    gp->value_info[i]->type)
			return gp->value_info[i];
	return NULL;
}

static npu_status inferred_vi(const struct npu_graph *g, const char *name,
			      struct owned_vi *o, const char *source, struct npu_error *err)
{
	const struct npu_value *v = npu_graph_find_value(g, name);
	int d;

	if (!v || v->dtype == NPU_DTYPE_UNDEFINED)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: cut tensor '%s': its type is not declared and cannot be inferred",
				     source, name);
	if (v->dtype == NPU_DTYPE_SEQUENCE || v->dtype == NPU_DTYPE_OPTIONAL)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: cut tensor '%s' is a %s: only tensors can be cut",
				     source, name, npu_dtype_name(v->dtype));
	onnx__value_info_proto__init(&o->vi);
	onnx__type_proto__init(&o->type);
	onnx__type_proto__tensor__init(&o->tensor);
	onnx__tensor_shape_proto__init(&o->shape);
	o->vi.name = (char *)v->name;
	o->vi.type = &o->type;
	o->type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	o->type.tensor_type = &o->tensor;
	o->tensor.has_elem_type = 1;
	o->tensor.elem_type = (int32_t)v->dtype;
	if (v->shape.rank < 0)
		return NPU_OK;	/* unknown rank: no shape field */
	o->tensor.shape = &o->shape;
	o->shape.n_dim = (size_t)v->shape.rank;
	o->shape.dim = o->dim_ptr;
	for (d = 0; d < v->shape.rank; d++) {
		onnx__tensor_shape_proto__dimension__init(&o->dims[d]);
		o->dim_ptr[d] = &o->dims[d];
		if (v->shape.dims[d] >= 0) {
			o->dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			o->dims[d].dim_value = v->shape.dims[d];
		} else if (v->dim_params[d]) {
			o->dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			o->dims[d].dim_param = v->dim_params[d];
		}
	}
	return NPU_OK;
}

/* Does the part read or write 'name' (its nodes' uses and outputs)? */
static bool part_has(const struct npu_onnx_cutgraph *cg, const bool *used, const char *name)
{
	size_t id = find_tensor(cg, name);

	return id != NO_NODE && used[id];
}

struct part {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__NodeProto **node;
	Onnx__TensorProto **init;
	Onnx__SparseTensorProto **sparse;
	Onnx__ValueInfoProto **in, **out, **vi;
	Onnx__TensorAnnotation **qa;
};

static void part_free(struct part *p)
{
	free(p->node);
	free(p->init);
	free(p->sparse);
	free(p->in);
	free(p->out);
	free(p->vi);
	free(p->qa);
}

/* Nodes and initializers a part gets besides the model's (int8 transfer). */
struct part_extra {
	Onnx__NodeProto **node;
	size_t n_node;
	bool first;	/* before the model's nodes (the tail), else after */
	Onnx__TensorProto **init;
	size_t n_init;
};

/*
 * The model of the nodes in 'mask' with inputs 'cut_in' (cut tensors, may
 * be none) plus the model inputs they read, and outputs 'cut_out' (none:
 * the model's outputs).
 */
static npu_status build_part(const struct npu_onnx_cutgraph *cg, const bool *mask,
			     Onnx__ValueInfoProto *const *cut_in, size_t n_cut_in,
			     Onnx__ValueInfoProto *const *cut_out, size_t n_cut_out,
			     const struct part_extra *x,
			     void **data, size_t *size, size_t *num_nodes,
			     char ***in_names, size_t *num_in, struct npu_error *err)
{
	static const struct part_extra none;
	const Onnx__GraphProto *gp = cg->mp->graph;
	bool *used = calloc(cg->num_t + 1, sizeof(bool)), *io = calloc(cg->num_t + 1, sizeof(bool));
	struct part p;
	size_t i, j, k;
	npu_status st = NPU_OK;

	memset(&p, 0, sizeof(p));
	if (!x)
		x = &none;
	p.node = calloc(cg->num_n + x->n_node + 1, sizeof(*p.node));
	p.init = calloc(gp->n_initializer + x->n_init + 1, sizeof(*p.init));
	p.sparse = calloc(gp->n_sparse_initializer + 1, sizeof(*p.sparse));
	p.in = calloc(gp->n_input + n_cut_in + 1, sizeof(*p.in));
	p.out = calloc(gp->n_output + n_cut_out + 1, sizeof(*p.out));
	p.vi = calloc(gp->n_value_info + 1, sizeof(*p.vi));
	p.qa = calloc(gp->n_quantization_annotation + 1, sizeof(*p.qa));
	if (!used || !io || !p.node || !p.init || !p.sparse || !p.in || !p.out || !p.vi || !p.qa) {
		st = oom(err);
		goto out;
	}
	p.m = *cg->mp;
	p.g = *gp;
	p.m.graph = &p.g;
	/* Training info refers to the whole graph's tensors. */
	p.m.n_training_info = 0;
	p.m.training_info = NULL;
	p.g.n_node = 0;
	/* The dequantizing nodes come first: ONNX wants a topological order. */
	for (i = 0; x->first && i < x->n_node; i++)
		p.node[p.g.n_node++] = x->node[i];
	for (i = 0; i < cg->num_n; i++) {
		if (!mask[i])
			continue;
		p.node[p.g.n_node++] = (Onnx__NodeProto *)cg->n[i].np;
		for (j = 0; j < cg->n[i].num_uses; j++)
			used[cg->n[i].uses[j]] = true;
		for (j = 0; j < cg->n[i].num_outs; j++)
			used[cg->n[i].outs[j]] = true;
	}
	for (i = 0; !x->first && i < x->n_node; i++)
		p.node[p.g.n_node++] = x->node[i];
	p.g.node = p.node;
	p.g.n_initializer = 0;
	for (i = 0; i < gp->n_initializer; i++)
		if (gp->initializer[i]->name && part_has(cg, used, gp->initializer[i]->name))
			p.init[p.g.n_initializer++] = gp->initializer[i];
	for (i = 0; i < x->n_init; i++)
		p.init[p.g.n_initializer++] = x->init[i];
	p.g.initializer = p.init;
	p.g.n_sparse_initializer = 0;
	for (i = 0; i < gp->n_sparse_initializer; i++)
		if (gp->sparse_initializer[i]->values && gp->sparse_initializer[i]->values->name &&
		    part_has(cg, used, gp->sparse_initializer[i]->values->name))
			p.sparse[p.g.n_sparse_initializer++] = gp->sparse_initializer[i];
	p.g.sparse_initializer = p.sparse;
	p.g.n_input = 0;
	for (i = 0; i < n_cut_in; i++)
		p.in[p.g.n_input++] = cut_in[i];
	for (i = 0; i < gp->n_input; i++)
		if (gp->input[i]->name && part_has(cg, used, gp->input[i]->name))
			p.in[p.g.n_input++] = gp->input[i];
	p.g.input = p.in;
	p.g.n_output = 0;
	for (i = 0; i < n_cut_out; i++)
		p.out[p.g.n_output++] = cut_out[i];
	if (!n_cut_out)
		for (i = 0; i < gp->n_output; i++)
			p.out[p.g.n_output++] = gp->output[i];
	p.g.output = p.out;
	for (i = 0; i < p.g.n_input; i++) {
		size_t id = find_tensor(cg, p.in[i]->name);

		if (id != NO_NODE)
			io[id] = true;
	}
	for (i = 0; i < p.g.n_output; i++) {
		size_t id = find_tensor(cg, p.out[i]->name);

		if (id != NO_NODE)
			io[id] = true;
	}
	p.g.n_value_info = 0;
	for (i = 0; i < gp->n_value_info; i++) {
		size_t id = gp->value_info[i]->name ? find_tensor(cg, gp->value_info[i]->name) : NO_NODE;

		if (id != NO_NODE && used[id] && !io[id])
			p.vi[p.g.n_value_info++] = gp->value_info[i];
	}
	p.g.value_info = p.vi;
	p.g.n_quantization_annotation = 0;
	for (i = 0; i < gp->n_quantization_annotation; i++)
		if (gp->quantization_annotation[i]->tensor_name &&
		    part_has(cg, used, gp->quantization_annotation[i]->tensor_name))
			p.qa[p.g.n_quantization_annotation++] = gp->quantization_annotation[i];
	p.g.quantization_annotation = p.qa;

	*num_nodes = p.g.n_node;
	*size = onnx__model_proto__get_packed_size(&p.m);
	*data = malloc(*size ? *size : 1);
	if (!*data) {
		st = oom(err);
		goto out;
	}
	onnx__model_proto__pack(&p.m, *data);
	if (in_names) {
		*in_names = calloc(p.g.n_input + 1, sizeof(char *));
		if (!*in_names) {
			st = oom(err);
			goto out;
		}
		for (k = 0; k < p.g.n_input; k++) {
			(*in_names)[k] = strdup(p.in[k]->name);
			if (!(*in_names)[k]) {
				st = oom(err);
				goto out;
			}
			*num_in = k + 1;
		}
	}
out:
	part_free(&p);
	free(used);
	free(io);
	return st;
}

void npu_onnx_split_free(struct npu_onnx_split *s)
{
	size_t i;

	if (!s)
		return;
	free(s->head);
	free(s->tail);
	for (i = 0; i < s->num_tail_inputs; i++)
		free(s->tail_inputs[i]);
	free(s->tail_inputs);
	memset(s, 0, sizeof(*s));
}

/* The Q and DQ nodes of one quantized cut tensor, and what they refer to. */
struct qcut {
	char wire[256], scale[288], zp[288], qname[288], dqname[288];
	float scale_v;
	uint8_t zp_v;
	Onnx__TensorProto scale_t, zp_t;
	Onnx__NodeProto q, dq;
	char *q_in[3], *q_out[1], *dq_in[3], *dq_out[1];
	struct owned_vi vi;	/* the wire tensor: uint8, the cut's shape */
};

/* Opset of the default domain ("" or "ai.onnx"); 0 when not imported. */
static int64_t default_opset(const Onnx__ModelProto *mp)
{
	size_t i;

	for (i = 0; i < mp->n_opset_import; i++)
		if (!mp->opset_import[i]->domain || !mp->opset_import[i]->domain[0] ||
		    !strcmp(mp->opset_import[i]->domain, "ai.onnx"))
			return mp->opset_import[i]->version;
	return 0;
}

static npu_status make_qcut(const struct npu_onnx_cutgraph *cg, const char *cut,
			    const Onnx__ValueInfoProto *cvi, const struct npu_onnx_split_quant *q,
			    struct qcut *c, struct npu_error *err)
{
	const Onnx__TypeProto__Tensor *tt = cvi->type->tensor_type;
	const char *names[3];
	size_t k;

	if (!tt || !tt->has_elem_type || tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: cut tensor '%s': int8 transfer needs a float tensor",
				     cg->source, cut);
	if (!(q->scale > 0) || q->scale == INFINITY)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: cut tensor '%s': int8 transfer scale %g is not a positive number",
				     cg->source, cut, (double)q->scale);
	if (default_opset(cg->mp) < 10)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: int8 transfer needs QuantizeLinear (opset >= 10); the model imports opset %lld",
				     cg->source, (long long)default_opset(cg->mp));
	if (snprintf(c->wire, sizeof(c->wire), "%s" NPU_ONNX_SPLIT_QSUFFIX, cut) >= (int)sizeof(c->wire))
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "%s: cut tensor '%.40s...': name too long",
				     cg->source, cut);
	snprintf(c->scale, sizeof(c->scale), "%s_scale", c->wire);
	snprintf(c->zp, sizeof(c->zp), "%s_zero_point", c->wire);
	snprintf(c->qname, sizeof(c->qname), "%s_quantize", cut);
	snprintf(c->dqname, sizeof(c->dqname), "%s_dequantize", cut);
	names[0] = c->wire;
	names[1] = c->scale;
	names[2] = c->zp;
	for (k = 0; k < 3; k++)
		if (find_tensor(cg, names[k]) != NO_NODE)
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "%s: cut tensor '%s': int8 transfer would name a tensor '%s', which the model already has",
					     cg->source, cut, names[k]);
	c->scale_v = q->scale;
	c->zp_v = q->zero_point;
	/* Scalars (per tensor), as raw little-endian bytes. */
	onnx__tensor_proto__init(&c->scale_t);
	c->scale_t.name = c->scale;
	c->scale_t.has_data_type = 1;
	c->scale_t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	c->scale_t.has_raw_data = 1;
	c->scale_t.raw_data.len = sizeof(float);
	c->scale_t.raw_data.data = (uint8_t *)&c->scale_v;
	onnx__tensor_proto__init(&c->zp_t);
	c->zp_t.name = c->zp;
	c->zp_t.has_data_type = 1;
	c->zp_t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
	c->zp_t.has_raw_data = 1;
	c->zp_t.raw_data.len = 1;
	c->zp_t.raw_data.data = &c->zp_v;

	onnx__node_proto__init(&c->q);
	c->q.name = c->qname;
	c->q.op_type = "QuantizeLinear";
	c->q_in[0] = (char *)cut;
	c->q_in[1] = c->scale;
	c->q_in[2] = c->zp;
	c->q_out[0] = c->wire;
	c->q.n_input = 3;
	c->q.input = c->q_in;
	c->q.n_output = 1;
	c->q.output = c->q_out;
	onnx__node_proto__init(&c->dq);
	c->dq.name = c->dqname;
	c->dq.op_type = "DequantizeLinear";
	c->dq_in[0] = c->wire;
	c->dq_in[1] = c->scale;
	c->dq_in[2] = c->zp;
	c->dq_out[0] = (char *)cut;
	c->dq.n_input = 3;
	c->dq.input = c->dq_in;
	c->dq.n_output = 1;
	c->dq.output = c->dq_out;

	onnx__value_info_proto__init(&c->vi.vi);
	onnx__type_proto__init(&c->vi.type);
	onnx__type_proto__tensor__init(&c->vi.tensor);
	c->vi.vi.name = c->wire;
	c->vi.vi.type = &c->vi.type;
	c->vi.type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	c->vi.type.tensor_type = &c->vi.tensor;
	c->vi.tensor.has_elem_type = 1;
	c->vi.tensor.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
	c->vi.tensor.shape = tt->shape;	/* borrowed: same dims as the cut */
	return NPU_OK;
}

static npu_status split_quantized(const void *data, size_t size, const char *source,
				  const char *const *cut, size_t count,
				  const struct npu_onnx_split_quant *q,
				  struct npu_onnx_split *out, struct npu_error *err)
{
	struct npu_onnx_cutgraph *cg = NULL;
	struct npu_graph *g = NULL;
	struct owned_vi *owned = NULL;
	Onnx__ValueInfoProto **vis = NULL, **wire = NULL;
	struct qcut *qc = NULL;
	struct part_extra hx = { 0 }, tx = { .first = true };
	bool *head = NULL, *tail = NULL;
	npu_status st;
	size_t i;

	memset(out, 0, sizeof(*out));
	st = cutgraph_create(data, size, source, &cg, err);
	if (st != NPU_OK)
		return st;
	head = calloc(cg->num_n + 1, sizeof(bool));
	tail = calloc(cg->num_n + 1, sizeof(bool));
	owned = calloc(count + 1, sizeof(*owned));
	vis = calloc(count + 1, sizeof(*vis));
	wire = calloc(count + 1, sizeof(*wire));
	qc = q ? calloc(count + 1, sizeof(*qc)) : NULL;
	hx.node = calloc(2 * count + 1, sizeof(*hx.node));
	hx.init = calloc(2 * count + 1, sizeof(*hx.init));
	tx.node = calloc(2 * count + 1, sizeof(*tx.node));
	tx.init = calloc(2 * count + 1, sizeof(*tx.init));
	if (!head || !tail || !owned || !vis || !wire || (q && !qc) || !hx.node || !hx.init ||
	    !tx.node || !tx.init) {
		st = oom(err);
		goto out;
	}
	st = cutgraph_check(cg, cut, count, head, tail, err);
	if (st != NPU_OK)
		goto out;
	for (i = 0; i < count; i++) {
		const Onnx__ValueInfoProto *d = declared_vi(cg->mp->graph, cut[i]);

		if (d && d->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
			vis[i] = (Onnx__ValueInfoProto *)d;
			continue;
		}
		/* Not declared: our own shape inference on the whole graph. */
		if (!g) {
			st = npu_onnx_import(data, size, cg->source, &g, err);
			if (st == NPU_OK)
				st = npu_graph_infer(g, false, err);
			if (st != NPU_OK) {
				npu_error_prefix(err, "typing the cut tensor '%s'", cut[i]);
				goto out;
			}
		}
		st = inferred_vi(g, cut[i], &owned[i], cg->source, err);
		if (st != NPU_OK)
			goto out;
		vis[i] = &owned[i].vi;
	}
	for (i = 0; i < count; i++) {
		wire[i] = vis[i];
		if (!q || !q[i].on)
			continue;
		st = make_qcut(cg, cut[i], vis[i], &q[i], &qc[i], err);
		if (st != NPU_OK)
			goto out;
		wire[i] = &qc[i].vi.vi;
		hx.node[hx.n_node++] = &qc[i].q;
		tx.node[tx.n_node++] = &qc[i].dq;
		hx.init[hx.n_init++] = tx.init[tx.n_init++] = &qc[i].scale_t;
		hx.init[hx.n_init++] = tx.init[tx.n_init++] = &qc[i].zp_t;
	}
	st = build_part(cg, head, NULL, 0, wire, count, &hx, &out->head, &out->head_size,
			&out->head_nodes, NULL, NULL, err);
	if (st == NPU_OK)
		st = build_part(cg, tail, wire, count, NULL, 0, &tx, &out->tail, &out->tail_size,
				&out->tail_nodes, &out->tail_inputs, &out->num_tail_inputs, err);
out:
	if (st != NPU_OK)
		npu_onnx_split_free(out);
	free(head);
	free(tail);
	free(owned);
	free(vis);
	free(wire);
	free(qc);
	free(hx.node);
	free(hx.init);
	free(tx.node);
	free(tx.init);
	npu_graph_destroy(g);
	npu_onnx_cutgraph_destroy(cg);
	return st;
}

/* The public entry points report through a caller's buffer. */
static npu_status report(npu_status st, const struct npu_error *err, char *msg, size_t msg_size)
{
	if (st != NPU_OK && msg && msg_size)
		snprintf(msg, msg_size, "%s", npu_error_msg(err));
	return st;
}

npu_status npu_onnx_cutgraph_create(const void *data, size_t size, const char *source,
				    struct npu_onnx_cutgraph **out, char *msg, size_t msg_size)
{
	struct npu_error err = { 0 };

	return report(cutgraph_create(data, size, source, out, &err), &err, msg, msg_size);
}

npu_status npu_onnx_cutgraph_check(const struct npu_onnx_cutgraph *cg,
				   const char *const *cut, size_t count,
				   bool *head, bool *tail, char *msg, size_t msg_size)
{
	struct npu_error err = { 0 };

	return report(cutgraph_check(cg, cut, count, head, tail, &err), &err, msg, msg_size);
}

npu_status npu_onnx_split(const void *data, size_t size, const char *source,
			  const char *const *cut, size_t count,
			  struct npu_onnx_split *out, char *msg, size_t msg_size)
{
	return npu_onnx_split_quantized(data, size, source, cut, count, NULL, out, msg,
					msg_size);
}

npu_status npu_onnx_split_quantized(const void *data, size_t size, const char *source,
				    const char *const *cut, size_t count,
				    const struct npu_onnx_split_quant *q,
				    struct npu_onnx_split *out, char *msg, size_t msg_size)
{
	struct npu_error err = { 0 };

	return report(split_quantized(data, size, source, cut, count, q, out, &err), &err, msg,
		      msg_size);
}

struct npu_onnx_sizes {
	struct npu_graph *g;
	size_t num_inputs;
};

npu_status npu_onnx_sizes_create(const void *data, size_t size, const char *source,
				 const struct npu_host_tensor *inputs, size_t num_inputs,
				 struct npu_onnx_sizes **out, char *msg, size_t msg_size)
{
	struct npu_error err = { 0 };
	struct npu_onnx_sizes *s;
	npu_status st;
	size_t i;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		npu_error_set(&err, NPU_ERR_NO_MEMORY, "out of memory");
		return report(NPU_ERR_NO_MEMORY, &err, msg, msg_size);
	}
	st = npu_onnx_import(data, size, source, &s->g, &err);
	if (st != NPU_OK) {
		free(s);
		return report(st, &err, msg, msg_size);
	}
	for (i = 0; i < s->g->num_inputs && i < num_inputs; i++) {
		struct npu_value *v = s->g->inputs[i];

		if (inputs[i].rank < 0 || inputs[i].rank > NPU_MAX_RANK) {
			npu_onnx_sizes_destroy(s);
			npu_error_set(&err, NPU_ERR_INVALID_ARG, "%s: input '%s': rank %d", source,
				      v->name, inputs[i].rank);
			return report(NPU_ERR_INVALID_ARG, &err, msg, msg_size);
		}
		v->shape.rank = inputs[i].rank;
		memcpy(v->shape.dims, inputs[i].dims, sizeof(int64_t) * (size_t)inputs[i].rank);
	}
	s->num_inputs = i;
	st = npu_graph_infer(s->g, false, &err);
	if (st != NPU_OK) {
		npu_onnx_sizes_destroy(s);
		return report(st, &err, msg, msg_size);
	}
	*out = s;
	return NPU_OK;
}

void npu_onnx_sizes_destroy(struct npu_onnx_sizes *s)
{
	if (!s)
		return;
	npu_graph_destroy(s->g);
	free(s);
}

size_t npu_onnx_sizes_num_inputs(const struct npu_onnx_sizes *s)
{
	return s->num_inputs;
}

uint64_t npu_onnx_sizes_bytes(const struct npu_onnx_sizes *s, const char *name, bool int8)
{
	const struct npu_value *v = npu_graph_find_value(s->g, name);
	int64_t n;

	if (!v || (n = npu_shape_numel(&v->shape)) < 0)
		return 0;
	if (int8 && v->dtype == NPU_DTYPE_FLOAT)
		return (uint64_t)n;
	return (uint64_t)n * npu_dtype_size(v->dtype);
}

uint64_t npu_onnx_sizes_output_bytes(const struct npu_onnx_sizes *s)
{
	uint64_t bytes = 0;
	size_t i;

	for (i = 0; i < s->g->num_outputs; i++)
		bytes += npu_onnx_sizes_bytes(s, s->g->outputs[i]->name, false);
	return bytes;
}

npu_status npu_onnx_read_file(const char *path, void **data, size_t *size, char *msg,
			      size_t msg_size)
{
	struct npu_error err = { 0 };

	return report(npu_read_file(path, data, size, &err), &err, msg, msg_size);
}
