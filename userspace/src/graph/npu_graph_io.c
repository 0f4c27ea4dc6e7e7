// SPDX-License-Identifier: MIT
/*
 * The IR graph as bytes (npu_graph_io.h). Layout, all little-endian:
 *
 *   graph   u32 version, str name, u64 ir_version,
 *           u32 opsets   { str domain, u64 version }
 *           u32 values   { str name, u32 dtype, shape, u8 flags,
 *                          [dim names: rank x str], [constant: tensor] }
 *           u32 inputs   { u32 value }     u32 outputs { u32 value }
 *           u32 captures { u32 slot }
 *           u32 nodes    { str name, str op_type, str domain, u32 opset,
 *                          u8 placement, u32 inputs { u32 value + 1, 0: omitted },
 *                          u32 implicit, u32 outputs { u32 value + 1 },
 *                          u32 attrs { attr } }
 *   shape   u32 rank (a value's: 0xffffffff unknown), rank x u64 dim
 *           (two's complement: < 0 unknown)
 *   tensor  u32 dtype, shape, u64 nbytes, bytes
 *   attr    str name, u32 type, then by type: f32 | u64 | str | tensor |
 *           graph | u32 n + n x f32 | u32 n + n x u64 | u32 n + n x str
 */
#include "graph/npu_graph_io.h"

#include <stdlib.h>
#include <string.h>

#include "graph/npu_seq.h"
#include "graph/npu_str.h"

#define IO_MAX_NAME	(1u << 16)	/* bytes of a name or string attribute */
#define IO_MAX_COUNT	(1u << 24)	/* values, nodes, inputs, attribute elements */
#define IO_MAX_DEPTH	32		/* subgraphs inside subgraphs */

enum value_flag {
	VALUE_GRAPH_INPUT = 1 << 0,
	VALUE_GRAPH_OUTPUT = 1 << 1,
	VALUE_ROWS_LAYOUT = 1 << 2,
	VALUE_CONSTANT = 1 << 3,
	VALUE_DIM_NAMES = 1 << 4,
};

/* ---- Writing ---- */

static void put_shape(struct npu_wbuf *w, const struct npu_shape *s)
{
	int d;

	npu_put_u32(w, (uint32_t)s->rank);
	for (d = 0; d < s->rank; d++)
		npu_put_u64(w, (uint64_t)s->dims[d]);
}

static void put_tensor(struct npu_wbuf *w, const struct npu_tensor *t)
{
	npu_put_u32(w, (uint32_t)t->dtype);
	put_shape(w, &t->shape);
	npu_put_blob(w, t->nbytes ? t->data : NULL, t->nbytes);
}

static void write_graph(struct npu_wbuf *w, const struct npu_graph *g, bool pruned);

static void put_attr(struct npu_wbuf *w, const struct npu_attr *a, bool pruned)
{
	size_t i;

	npu_put_str(w, a->name);
	npu_put_u32(w, (uint32_t)a->type);
	switch (a->type) {
	case NPU_ATTR_FLOAT:
		npu_put_f32(w, a->f);
		break;
	case NPU_ATTR_INT:
		npu_put_u64(w, (uint64_t)a->i);
		break;
	case NPU_ATTR_STRING:
		npu_put_str(w, a->s);
		break;
	case NPU_ATTR_TENSOR:
		npu_put_u8(w, a->t != NULL);
		if (a->t)
			put_tensor(w, a->t);
		break;
	case NPU_ATTR_GRAPH:
		npu_put_u8(w, a->g != NULL);
		if (a->g)
			write_graph(w, a->g, pruned);
		break;
	case NPU_ATTR_FLOATS:
		npu_put_u32(w, (uint32_t)a->count);
		for (i = 0; i < a->count; i++)
			npu_put_f32(w, a->floats[i]);
		break;
	case NPU_ATTR_INTS:
		npu_put_u32(w, (uint32_t)a->count);
		for (i = 0; i < a->count; i++)
			npu_put_u64(w, (uint64_t)a->ints[i]);
		break;
	case NPU_ATTR_STRINGS:
		npu_put_u32(w, (uint32_t)a->count);
		for (i = 0; i < a->count; i++)
			npu_put_str(w, a->strings[i]);
		break;
	case NPU_ATTR_TYPE_PROTO:	/* the IR keeps no content */
		break;
	}
}

/*
 * Per value: its index as written, or SIZE_MAX when 'pruned' leaves it
 * out (a constant no node reads and no output names: what a pass or the
 * NPU segment rewrite left behind). NULL when out of memory.
 */
static size_t *value_slots(const struct npu_graph *g, bool pruned, size_t *kept)
{
	size_t *slot = calloc(g->num_values + 1, sizeof(*slot));
	bool *used;
	size_t i, j, n = 0;

	if (!slot)
		return NULL;
	used = calloc(g->num_values + 1, sizeof(*used));
	if (!used) {
		free(slot);
		return NULL;
	}
	for (i = 0; i < g->num_nodes; i++)
		for (j = 0; j < g->nodes[i]->num_inputs; j++)
			if (g->nodes[i]->inputs[j])
				used[g->nodes[i]->inputs[j]->index] = true;
	for (i = 0; i < g->num_values; i++) {
		const struct npu_value *v = g->values[i];

		if (!pruned || !v->constant || used[i] || v->is_graph_output)
			slot[i] = n++;
		else
			slot[i] = SIZE_MAX;
	}
	free(used);
	*kept = n;
	return slot;
}

void npu_graph_write(struct npu_wbuf *w, const struct npu_graph *g)
{
	write_graph(w, g, false);
}

void npu_graph_write_pruned(struct npu_wbuf *w, const struct npu_graph *g)
{
	write_graph(w, g, true);
}

static void write_graph(struct npu_wbuf *w, const struct npu_graph *g, bool pruned)
{
	size_t i, j, kept = 0, *slot = value_slots(g, pruned, &kept);
	int d;

	if (!slot) {
		w->oom = true;
		return;
	}

	npu_put_u32(w, NPU_GRAPH_IO_VERSION);
	npu_put_str(w, g->name);
	npu_put_u64(w, (uint64_t)g->ir_version);
	npu_put_u32(w, (uint32_t)g->num_opsets);
	for (i = 0; i < g->num_opsets; i++) {
		npu_put_str(w, g->opsets[i].domain);
		npu_put_u64(w, (uint64_t)g->opsets[i].version);
	}
	npu_put_u32(w, (uint32_t)kept);
	for (i = 0; i < g->num_values; i++) {
		const struct npu_value *v = g->values[i];
		uint8_t flags = (v->is_graph_input ? VALUE_GRAPH_INPUT : 0) |
				(v->is_graph_output ? VALUE_GRAPH_OUTPUT : 0) |
				(v->rows_layout ? VALUE_ROWS_LAYOUT : 0) |
				(v->constant ? VALUE_CONSTANT : 0);

		if (slot[i] == SIZE_MAX)
			continue;
		for (d = 0; d < v->shape.rank; d++)
			if (v->dim_params[d])
				flags |= VALUE_DIM_NAMES;
		npu_put_str(w, v->name);
		npu_put_u32(w, (uint32_t)v->dtype);
		put_shape(w, &v->shape);
		npu_put_u8(w, flags);
		if (flags & VALUE_DIM_NAMES)
			for (d = 0; d < v->shape.rank; d++)
				npu_put_str(w, v->dim_params[d]);
		if (v->constant)
			put_tensor(w, v->constant);
	}
	npu_put_u32(w, (uint32_t)g->num_inputs);
	for (i = 0; i < g->num_inputs; i++)
		npu_put_u32(w, (uint32_t)slot[g->inputs[i]->index]);
	npu_put_u32(w, (uint32_t)g->num_outputs);
	for (i = 0; i < g->num_outputs; i++)
		npu_put_u32(w, (uint32_t)slot[g->outputs[i]->index]);
	npu_put_u32(w, (uint32_t)g->num_captures);
	for (i = 0; i < g->num_captures; i++)
		npu_put_u32(w, (uint32_t)g->capture_slot[i]);
	npu_put_u32(w, (uint32_t)g->num_nodes);
	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];

		npu_put_str(w, n->name);
		npu_put_str(w, n->op_type);
		npu_put_str(w, n->domain);
		npu_put_u32(w, (uint32_t)n->opset);
		npu_put_u8(w, (uint8_t)n->placement);
		npu_put_u32(w, (uint32_t)n->num_inputs);
		for (j = 0; j < n->num_inputs; j++)
			npu_put_u32(w, n->inputs[j] ? (uint32_t)slot[n->inputs[j]->index] + 1 : 0);
		npu_put_u32(w, (uint32_t)n->num_implicit_inputs);
		npu_put_u32(w, (uint32_t)n->num_outputs);
		for (j = 0; j < n->num_outputs; j++)
			npu_put_u32(w, n->outputs[j] ? (uint32_t)slot[n->outputs[j]->index] + 1 : 0);
		npu_put_u32(w, (uint32_t)n->num_attrs);
		for (j = 0; j < n->num_attrs; j++)
			put_attr(w, &n->attrs[j], pruned);
	}
	free(slot);
}

/* ---- Reading ---- */

static bool known_dtype(uint32_t t)
{
	return (t >= NPU_DTYPE_FLOAT && t <= NPU_DTYPE_UINT64) || t == NPU_DTYPE_BFLOAT16 ||
	       t == NPU_DTYPE_SEQUENCE || t == NPU_DTYPE_OPTIONAL;
}

/* A shape; a value's may have an unknown rank (-1), a tensor's dims are all known. */
static bool get_shape(struct npu_rbuf *r, struct npu_shape *s, bool known, const char *field)
{
	uint32_t rank = npu_get_u32(r, field);
	uint32_t d;

	memset(s, 0, sizeof(*s));
	if (!known && rank == UINT32_MAX) {
		s->rank = -1;
		return !r->bad;
	}
	if (!r->bad && rank > NPU_MAX_RANK)
		return npu_rbuf_fail(r, "field '%s': rank %u (at most %d)", field, rank,
				     NPU_MAX_RANK);
	s->rank = (int)rank;
	for (d = 0; d < rank; d++) {
		s->dims[d] = (int64_t)npu_get_u64(r, field);
		if (!r->bad && known && s->dims[d] < 0)
			return npu_rbuf_fail(r, "field '%s': dim %u is %lld, a tensor's dims are known",
					     field, d, (long long)s->dims[d]);
	}
	return !r->bad;
}

static struct npu_tensor *get_tensor(struct npu_rbuf *r, const char *field)
{
	struct npu_tensor view = { 0 }, *t;
	uint32_t dtype = npu_get_u32(r, field);
	int64_t numel;
	uint64_t nbytes;
	struct npu_error check = { 0 };

	if (!r->bad && (!known_dtype(dtype) || dtype == NPU_DTYPE_UNDEFINED)) {
		npu_rbuf_fail(r, "field '%s': unknown element type %u", field, dtype);
		return NULL;
	}
	view.dtype = (enum npu_dtype)dtype;
	if (!get_shape(r, &view.shape, true, field))
		return NULL;
	nbytes = npu_get_u64(r, field);
	if (r->bad)
		return NULL;
	if (nbytes > r->left) {
		npu_take(r, NULL, nbytes, field);
		return NULL;
	}
	numel = npu_shape_numel(&view.shape);
	if (numel < 0) {
		npu_rbuf_fail(r, "field '%s': the element count overflows", field);
		return NULL;
	}
	if (npu_dtype_size(view.dtype) &&
	    (uint64_t)numel * npu_dtype_size(view.dtype) != nbytes) {
		npu_rbuf_fail(r, "field '%s': %llu bytes for %lld elements of %s",
			      field, (unsigned long long)nbytes, (long long)numel,
			      npu_dtype_name(view.dtype));
		return NULL;
	}
	view.data = nbytes ? (void *)r->p : NULL;
	view.nbytes = (size_t)nbytes;
	/* Variable-size layouts are checked before anything reads them. */
	if (view.dtype == NPU_DTYPE_STRING && npu_str_check(&view, field, &check)) {
		npu_rbuf_fail(r, "%s", check.msg);
		return NULL;
	}
	if (view.dtype == NPU_DTYPE_SEQUENCE || view.dtype == NPU_DTYPE_OPTIONAL) {
		struct npu_seq seq;

		if (npu_seq_open(&view, &seq, &check)) {
			npu_rbuf_fail(r, "field '%s': %s", field, check.msg);
			return NULL;
		}
	}
	if (npu_dtype_size(view.dtype)) {
		t = npu_tensor_create(view.dtype, &view.shape);
		if (t && nbytes)
			memcpy(t->data, r->p, nbytes);
	} else {
		t = npu_tensor_dup(&view);
	}
	if (!t) {
		npu_error_set(r->err, NPU_ERR_NO_MEMORY, "%s: out of memory", r->source);
		r->bad = true;
		return NULL;
	}
	npu_take(r, NULL, nbytes, field);
	return t;
}

static struct npu_graph *read_graph(struct npu_rbuf *r, const char *source, int depth,
				    size_t implicit);

static bool nomem(struct npu_rbuf *r)
{
	if (!r->bad)
		npu_error_set(r->err, NPU_ERR_NO_MEMORY, "%s: out of memory", r->source);
	r->bad = true;
	return false;
}

static bool get_attr(struct npu_rbuf *r, struct npu_attr *a, int depth, size_t implicit)
{
	uint32_t i, n;

	a->name = npu_get_str(r, "attribute name", IO_MAX_NAME);
	a->type = (enum npu_attr_type)npu_get_u32(r, "attribute type");
	if (r->bad)
		return false;
	switch (a->type) {
	case NPU_ATTR_FLOAT:
		a->f = npu_get_f32(r, "float attribute");
		break;
	case NPU_ATTR_INT:
		a->i = (int64_t)npu_get_u64(r, "int attribute");
		break;
	case NPU_ATTR_STRING:
		a->s = npu_get_str(r, "string attribute", IO_MAX_NAME);
		break;
	case NPU_ATTR_TENSOR:
		if (npu_get_u8(r, "tensor attribute"))
			a->t = get_tensor(r, "tensor attribute");
		break;
	case NPU_ATTR_GRAPH:
		if (depth >= IO_MAX_DEPTH)
			return npu_rbuf_fail(r, "attribute '%s': subgraphs nested deeper than %d",
					     a->name, IO_MAX_DEPTH);
		if (npu_get_u8(r, "graph attribute"))
			a->g = read_graph(r, r->source, depth + 1, implicit);
		break;
	case NPU_ATTR_FLOATS:
		n = npu_get_count(r, "floats attribute", IO_MAX_COUNT);
		if (n > r->left / 4)
			return npu_take(r, NULL, (size_t)n * 4, "floats attribute");
		a->floats = malloc((size_t)n * sizeof(float) + 1);
		if (!a->floats)
			return nomem(r);
		a->count = n;
		for (i = 0; i < n; i++)
			a->floats[i] = npu_get_f32(r, "floats attribute");
		break;
	case NPU_ATTR_INTS:
		n = npu_get_count(r, "ints attribute", IO_MAX_COUNT);
		if (n > r->left / 8)
			return npu_take(r, NULL, (size_t)n * 8, "ints attribute");
		a->ints = malloc((size_t)n * sizeof(int64_t) + 1);
		if (!a->ints)
			return nomem(r);
		a->count = n;
		for (i = 0; i < n; i++)
			a->ints[i] = (int64_t)npu_get_u64(r, "ints attribute");
		break;
	case NPU_ATTR_STRINGS:
		n = npu_get_count(r, "strings attribute", IO_MAX_COUNT);
		if (n > r->left / 4)
			return npu_take(r, NULL, (size_t)n * 4, "strings attribute");
		a->strings = calloc((size_t)n + 1, sizeof(char *));
		if (!a->strings)
			return nomem(r);
		a->count = n;
		for (i = 0; i < n && !r->bad; i++)
			a->strings[i] = npu_get_str(r, "strings attribute", IO_MAX_NAME);
		break;
	case NPU_ATTR_TYPE_PROTO:
		break;
	default:
		return npu_rbuf_fail(r, "attribute '%s': unknown type %u", a->name,
				     (unsigned)a->type);
	}
	return !r->bad;
}

/* A value index of the graph being read ('plus1': 0 means none). */
static struct npu_value *get_value_ref(struct npu_rbuf *r, const struct npu_graph *g,
				       bool plus1, const char *field)
{
	uint32_t i = npu_get_u32(r, field);

	if (r->bad || (plus1 && i == 0))
		return NULL;
	if (plus1)
		i--;
	if (i >= g->num_values) {
		npu_rbuf_fail(r, "field '%s': value %u of %zu", field, i, g->num_values);
		return NULL;
	}
	return g->values[i];
}

static bool read_values(struct npu_rbuf *r, struct npu_graph *g)
{
	uint32_t n = npu_get_count(r, "values", IO_MAX_COUNT), i;
	int d;

	for (i = 0; i < n && !r->bad; i++) {
		char *name = npu_get_str(r, "value name", IO_MAX_NAME);
		uint32_t dtype = npu_get_u32(r, "value type");
		struct npu_value *v;
		uint8_t flags;

		if (!r->bad && !known_dtype(dtype) && dtype != NPU_DTYPE_UNDEFINED &&
		    dtype != NPU_DTYPE_STRING)
			npu_rbuf_fail(r, "value '%s': unknown element type %u", name, dtype);
		v = r->bad ? NULL : npu_graph_add_value(g, name, r->err);
		free(name);
		if (!v) {
			r->bad = true;
			return false;
		}
		v->dtype = (enum npu_dtype)dtype;
		get_shape(r, &v->shape, false, "value shape");
		flags = npu_get_u8(r, "value flags");
		v->is_graph_input = flags & VALUE_GRAPH_INPUT;
		v->is_graph_output = flags & VALUE_GRAPH_OUTPUT;
		v->rows_layout = flags & VALUE_ROWS_LAYOUT;
		if (flags & VALUE_DIM_NAMES)
			for (d = 0; d < v->shape.rank && !r->bad; d++) {
				v->dim_params[d] = npu_get_str(r, "dim name", IO_MAX_NAME);
				if (v->dim_params[d] && !v->dim_params[d][0]) {
					free(v->dim_params[d]);	/* written for a dim without one */
					v->dim_params[d] = NULL;
				}
			}
		if (flags & VALUE_CONSTANT) {
			v->constant = get_tensor(r, "constant");
			if (v->constant && v->constant->dtype != v->dtype)
				npu_rbuf_fail(r, "value '%s': a %s constant of a %s value", v->name,
					      npu_dtype_name(v->constant->dtype),
					      npu_dtype_name(v->dtype));
		}
	}
	return !r->bad;
}

static bool read_node(struct npu_rbuf *r, struct npu_graph *g, int depth)
{
	char *name = npu_get_str(r, "node name", IO_MAX_NAME);
	char *op = npu_get_str(r, "op type", IO_MAX_NAME);
	char *domain = npu_get_str(r, "domain", IO_MAX_NAME);
	uint32_t opset = npu_get_u32(r, "opset");
	uint8_t placement = npu_get_u8(r, "placement");
	uint32_t nin = npu_get_count(r, "node inputs", IO_MAX_COUNT), nout, j;
	struct npu_node *n = NULL;
	char label[300];

	if (!r->bad && placement > NPU_PLACE_NPU)
		npu_rbuf_fail(r, "node '%s': placement %u", name, placement);
	if (!r->bad && (!op || !op[0]))
		npu_rbuf_fail(r, "node '%s': no op type", name);
	if (!r->bad && nin > r->left / 4)
		npu_take(r, NULL, (size_t)nin * 4, "node inputs");
	if (!r->bad) {
		n = npu_graph_add_node(g, op, domain, name, nin, 0, r->err);
		if (!n)
			r->bad = true;
	}
	free(name);
	free(op);
	free(domain);
	if (!n)
		return false;
	n->opset = (int)opset;
	n->placement = (enum npu_placement)placement;
	npu_node_label(g, n, label, sizeof(label));
	for (j = 0; j < nin; j++)
		n->inputs[j] = get_value_ref(r, g, true, "node input");
	n->num_implicit_inputs = npu_get_u32(r, "implicit inputs");
	if (!r->bad && n->num_implicit_inputs > nin)
		return npu_rbuf_fail(r, "%s: %zu implicit inputs of %u", label,
				     n->num_implicit_inputs, nin);
	nout = npu_get_count(r, "node outputs", IO_MAX_COUNT);
	if (!r->bad && nout > r->left / 4)
		return npu_take(r, NULL, (size_t)nout * 4, "node outputs");
	if (r->bad)
		return false;
	free(n->outputs);
	n->outputs = calloc((size_t)nout + 1, sizeof(*n->outputs));
	if (!n->outputs)
		return nomem(r);
	n->num_outputs = nout;
	for (j = 0; j < nout && !r->bad; j++) {
		struct npu_value *v = get_value_ref(r, g, true, "node output");

		if (!v)
			continue;
		if (v->producer || v->constant || v->is_graph_input)
			return npu_rbuf_fail(r, "%s: output '%s' has another producer", label,
					     v->name);
		v->producer = n;
		n->outputs[j] = v;
	}
	n->num_attrs = 0;
	nin = npu_get_count(r, "attributes", IO_MAX_COUNT);
	if (r->bad)
		return false;
	n->attrs = calloc((size_t)nin + 1, sizeof(*n->attrs));
	if (!n->attrs)
		return nomem(r);
	for (j = 0; j < nin && !r->bad; j++) {
		n->num_attrs++;
		get_attr(r, &n->attrs[j], depth, n->num_implicit_inputs);
	}
	return !r->bad;
}

/*
 * The nodes as stored are in topological order, as written: every input is
 * a constant, a graph input or an earlier node's output, and every graph
 * output is one of those (the order is kept, not re-sorted, so a graph
 * reads back exactly as it was).
 */
static bool check_order(struct npu_rbuf *r, const struct npu_graph *g)
{
	bool *ready = calloc(g->num_values + 1, sizeof(*ready));
	char label[300];
	size_t i, j;

	if (!ready)
		return nomem(r);
	for (i = 0; i < g->num_values; i++)
		ready[i] = g->values[i]->constant != NULL;
	for (i = 0; i < g->num_inputs; i++)
		ready[g->inputs[i]->index] = true;
	for (i = 0; i < g->num_nodes && !r->bad; i++) {
		const struct npu_node *n = g->nodes[i];

		for (j = 0; j < n->num_inputs; j++)
			if (n->inputs[j] && !ready[n->inputs[j]->index]) {
				npu_rbuf_fail(r, "%s reads '%s' before anything produces it",
					      npu_node_label(g, n, label, sizeof(label)),
					      n->inputs[j]->name);
				break;
			}
		for (j = 0; j < n->num_outputs; j++)
			if (n->outputs[j])
				ready[n->outputs[j]->index] = true;
	}
	for (i = 0; i < g->num_outputs && !r->bad; i++)
		if (!ready[g->outputs[i]->index])
			npu_rbuf_fail(r, "graph output '%s' is never produced", g->outputs[i]->name);
	free(ready);
	return !r->bad;
}

static struct npu_graph *read_graph(struct npu_rbuf *r, const char *source, int depth,
				    size_t implicit)
{
	struct npu_graph *g;
	uint32_t version = npu_get_u32(r, "graph version"), n, i;

	if (!r->bad && version != NPU_GRAPH_IO_VERSION) {
		npu_rbuf_fail(r, "graph format version %u (this library reads %d)", version,
			      NPU_GRAPH_IO_VERSION);
		return NULL;
	}
	if (r->bad)
		return NULL;
	g = npu_graph_create(source);
	if (!g) {
		nomem(r);
		return NULL;
	}
	free(g->name);
	g->name = npu_get_str(r, "graph name", IO_MAX_NAME);
	g->ir_version = (int64_t)npu_get_u64(r, "ir version");
	n = npu_get_count(r, "opsets", IO_MAX_COUNT);
	if (!r->bad && n > r->left / 12)
		npu_take(r, NULL, (size_t)n * 12, "opsets");
	if (!r->bad && !(g->opsets = calloc((size_t)n + 1, sizeof(*g->opsets))))
		nomem(r);
	for (i = 0; i < n && !r->bad; i++) {
		g->opsets[i].domain = npu_get_str(r, "opset domain", IO_MAX_NAME);
		g->opsets[i].version = (int64_t)npu_get_u64(r, "opset version");
		g->num_opsets++;
	}
	if (!r->bad)
		read_values(r, g);
	n = npu_get_count(r, "graph inputs", IO_MAX_COUNT);
	if (!r->bad && (n > g->num_values ||
			!(g->inputs = calloc((size_t)n + 1, sizeof(*g->inputs)))))
		n > g->num_values ? npu_rbuf_fail(r, "%u graph inputs of %zu values", n,
						  g->num_values) : nomem(r);
	for (i = 0; i < n && !r->bad; i++)
		if ((g->inputs[i] = get_value_ref(r, g, false, "graph input")))
			g->num_inputs++;
	n = npu_get_count(r, "graph outputs", IO_MAX_COUNT);
	if (!r->bad && (n > g->num_values ||
			!(g->outputs = calloc((size_t)n + 1, sizeof(*g->outputs)))))
		n > g->num_values ? npu_rbuf_fail(r, "%u graph outputs of %zu values", n,
						  g->num_values) : nomem(r);
	for (i = 0; i < n && !r->bad; i++)
		if ((g->outputs[i] = get_value_ref(r, g, false, "graph output")))
			g->num_outputs++;
	n = npu_get_count(r, "captures", IO_MAX_COUNT);
	if (!r->bad && (n > g->num_inputs || (depth == 0 && n)))
		npu_rbuf_fail(r, "%u captures of %zu inputs%s", n, g->num_inputs,
			      depth == 0 ? " in the top-level graph" : "");
	if (!r->bad && n && !(g->capture_slot = calloc(n, sizeof(*g->capture_slot))))
		nomem(r);
	for (i = 0; i < n && !r->bad; i++) {
		g->capture_slot[i] = npu_get_u32(r, "capture slot");
		if (!r->bad && g->capture_slot[i] >= implicit)
			npu_rbuf_fail(r, "capture %u reads implicit input %zu of %zu", i,
				      g->capture_slot[i], implicit);
		g->num_captures++;
	}
	n = npu_get_count(r, "nodes", IO_MAX_COUNT);
	for (i = 0; i < n && !r->bad; i++)
		read_node(r, g, depth);
	if (!r->bad)
		check_order(r, g);
	if (r->bad) {
		npu_graph_destroy(g);
		return NULL;
	}
	return g;
}

struct npu_graph *npu_graph_read(struct npu_rbuf *r, const char *source)
{
	return read_graph(r, source, 0, 0);
}
