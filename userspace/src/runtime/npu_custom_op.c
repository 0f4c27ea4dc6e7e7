// SPDX-License-Identifier: MIT
/*
 * npu_custom_op.c - custom ops (npu/npu_custom_op.h): an application's op
 * becomes a schema and a kernel in its engine's kernel registry
 * (graph/npu_op_schema.h). The schema's infer() and the kernel's prepare /
 * compute / release are trampolines to the application's callbacks that
 * check what those callbacks give back.
 */
#include "runtime/npu_api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/cpu_ops.h"
#include "graph/npu_op_schema.h"
#include "npu/npu_custom_op.h"

/* The importer caps opset versions at this; a registration covers up to it. */
#define CUSTOM_MAX_VERSION 1000000

struct npu_custom_record {
	struct npu_op_schema schema;	/* .data = this record */
	struct npu_op_def def;		/* the kernel: container_of gives the record */
	struct npu_custom_op op;	/* the application's, strings ours */
	char *domain, *op_type;
};

/* A node's state (node->op_state), made by prepare() once per plan. */
struct custom_node {
	const struct npu_custom_record *rec;
	void *state;			/* create()'s */
};

struct npu_infer_context {
	const struct npu_custom_record *rec;
	const struct npu_node *node;
	const struct npu_tensor *const *tensors;	/* at run time: the inputs; else NULL */
	size_t num_inputs;
	enum npu_dtype *dtypes;		/* per output */
	struct npu_shape *shapes;
	bool *set;			/* per output: given by infer() */
	struct npu_error *err;
	bool error_set;
};

struct npu_kernel_context {
	struct npu_op_ctx *op;
	const char *label;		/* "custom op 'a.B'", "provider 'x'" */
	/* What infer() said for these inputs (have_expect), per output. */
	bool have_expect;
	const enum npu_dtype *dtypes;
	const struct npu_shape *shapes;
	bool *allocated;		/* per output */
	/* A broken rule (a contradicting allocation): fails the run. */
	npu_status violation;
	struct npu_error violation_err;
	struct npu_error user_err;	/* npu_kernel_set_error() */
	bool error_set;
};

static const struct npu_custom_record *record_of_def(const struct npu_op_def *def)
{
	return (const struct npu_custom_record *)((const char *)def -
						  offsetof(struct npu_custom_record, def));
}

static const struct npu_node *node_of(const struct npu_op_attrs *attrs)
{
	return (const struct npu_node *)attrs;
}

static const struct npu_op_attrs *attrs_of(const struct npu_node *node)
{
	return (const struct npu_op_attrs *)node;
}

/* ---- Attributes ---- */

static npu_status attr_get(const struct npu_op_attrs *attrs, const char *name,
			   enum npu_attr_type type, const char *what, const struct npu_attr **out)
{
	const struct npu_node *node = node_of(attrs);
	const struct npu_attr *a;

	*out = NULL;
	if (!attrs || !name)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_op_attr_%s: %s is NULL", what,
				    !attrs ? "attrs" : "name");
	a = npu_node_attr(node, name);
	if (!a)
		return npu_api_fail(NPU_ERR_NOT_FOUND, "node '%s' (%s): no attribute '%s'",
				    node->name, node->op_type, name);
	if (a->type != type)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "node '%s' (%s): attribute '%s' is not of type %s",
				    node->name, node->op_type, name, what);
	*out = a;
	return NPU_OK;
}

NPU_API npu_status npu_op_attr_int(const struct npu_op_attrs *attrs, const char *name,
				   int64_t *value)
{
	const struct npu_attr *a;
	npu_status st = attr_get(attrs, name, NPU_ATTR_INT, "int", &a);

	if (!st && value)
		*value = a->i;
	return st;
}

NPU_API npu_status npu_op_attr_float(const struct npu_op_attrs *attrs, const char *name,
				     float *value)
{
	const struct npu_attr *a;
	npu_status st = attr_get(attrs, name, NPU_ATTR_FLOAT, "float", &a);

	if (!st && value)
		*value = a->f;
	return st;
}

NPU_API npu_status npu_op_attr_string(const struct npu_op_attrs *attrs, const char *name,
				      const char **value)
{
	const struct npu_attr *a;
	npu_status st = attr_get(attrs, name, NPU_ATTR_STRING, "string", &a);

	if (!st && value)
		*value = a->s ? a->s : "";
	return st;
}

NPU_API npu_status npu_op_attr_ints(const struct npu_op_attrs *attrs, const char *name,
				    const int64_t **values, size_t *count)
{
	const struct npu_attr *a;
	npu_status st = attr_get(attrs, name, NPU_ATTR_INTS, "ints", &a);

	if (!st && values)
		*values = a->ints;
	if (!st && count)
		*count = a->count;
	return st;
}

NPU_API npu_status npu_op_attr_floats(const struct npu_op_attrs *attrs, const char *name,
				      const float **values, size_t *count)
{
	const struct npu_attr *a;
	npu_status st = attr_get(attrs, name, NPU_ATTR_FLOATS, "floats", &a);

	if (!st && values)
		*values = a->floats;
	if (!st && count)
		*count = a->count;
	return st;
}

NPU_API const char *npu_op_attrs_node(const struct npu_op_attrs *attrs)
{
	return attrs ? node_of(attrs)->name : "";
}

/* ---- Shape inference ---- */

static char *shape_str(enum npu_dtype dtype, const struct npu_shape *s, char *buf, size_t size)
{
	size_t len = (size_t)snprintf(buf, size, "%s ", npu_dtype_name(dtype));

	if (len < size)
		npu_shape_str(s, buf + len, size - len);
	return buf;
}

NPU_API size_t npu_infer_num_inputs(const struct npu_infer_context *ctx)
{
	return ctx ? ctx->num_inputs : 0;
}

NPU_API size_t npu_infer_num_outputs(const struct npu_infer_context *ctx)
{
	return ctx ? ctx->node->num_outputs : 0;
}

NPU_API npu_status npu_infer_input(const struct npu_infer_context *ctx, size_t index,
				   struct npu_tensor_info *info)
{
	const struct npu_value *v;
	const struct npu_shape *s;
	int d;

	if (!ctx || !info)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_infer_input: %s is NULL",
				    !ctx ? "ctx" : "info");
	if (index >= ctx->num_inputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_infer_input: node '%s' has %zu inputs, not %zu",
				    ctx->node->name, ctx->num_inputs, index + 1);
	v = ctx->node->inputs[index];
	memset(info, 0, sizeof(*info));
	if (!v)
		return npu_api_fail(NPU_ERR_NOT_FOUND,
				    "npu_infer_input: node '%s': input %zu is omitted",
				    ctx->node->name, index);
	s = ctx->tensors ? &ctx->tensors[index]->shape : &v->shape;
	info->name = v->name;
	info->dtype = (enum npu_data_type)(ctx->tensors ? ctx->tensors[index]->dtype : v->dtype);
	info->rank = s->rank < 0 || s->rank > NPU_MODEL_MAX_RANK ? -1 : s->rank;
	for (d = 0; d < NPU_MODEL_MAX_RANK; d++)
		info->dims[d] = d < info->rank ? (s->dims[d] < 0 ? -1 : s->dims[d]) : 0;
	return NPU_OK;
}

NPU_API npu_status npu_infer_set_output(struct npu_infer_context *ctx, size_t index,
					enum npu_data_type dtype, int rank, const int64_t *dims)
{
	struct npu_shape s = { 0 };
	int d;

	if (!ctx)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_infer_set_output: ctx is NULL");
	if (index >= ctx->node->num_outputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_infer_set_output: node '%s' has %zu outputs, not %zu",
				    ctx->node->name, ctx->node->num_outputs, index + 1);
	if (rank < 0 || rank > NPU_MODEL_MAX_RANK || (rank && !dims))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_infer_set_output: node '%s' output %zu: rank %d (0 to %d, with dims)",
				    ctx->node->name, index, rank, NPU_MODEL_MAX_RANK);
	if (!npu_dtype_size((enum npu_dtype)dtype) || dtype == NPU_TYPE_STRING)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_infer_set_output: node '%s' output %zu: type %d is not a numeric element type",
				    ctx->node->name, index, (int)dtype);
	s.rank = rank;
	for (d = 0; d < rank; d++) {
		if (dims[d] < -1)
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "npu_infer_set_output: node '%s' output %zu: dim %d is %lld",
					    ctx->node->name, index, d, (long long)dims[d]);
		s.dims[d] = dims[d];
	}
	ctx->dtypes[index] = (enum npu_dtype)dtype;
	ctx->shapes[index] = s;
	ctx->set[index] = true;
	return NPU_OK;
}

NPU_API const struct npu_op_attrs *npu_infer_attrs(const struct npu_infer_context *ctx)
{
	return ctx ? attrs_of(ctx->node) : NULL;
}

NPU_API void npu_infer_set_error(struct npu_infer_context *ctx, const char *fmt, ...)
{
	va_list ap;

	if (!ctx || !fmt)
		return;
	va_start(ap, fmt);
	npu_error_vset(ctx->err, NPU_ERR_INVALID_ARG, fmt, ap);
	va_end(ap);
	ctx->error_set = true;
}

/* The op's name in messages: "com.example.ScaledClip". */
#define REC_FMT "custom op '%s.%s'"
#define REC_ARGS(rec) (rec)->domain, (rec)->op_type

static npu_status check_counts(const struct npu_custom_record *rec, const struct npu_node *node,
			       struct npu_error *err)
{
	const struct npu_custom_op *op = &rec->op;
	size_t ni = node->num_inputs - node->num_implicit_inputs, no = node->num_outputs;

	if (ni < (size_t)op->min_inputs || (op->max_inputs >= 0 && ni > (size_t)op->max_inputs))
		return npu_error_set(err, NPU_ERR_MODEL, REC_FMT ": %zu inputs; it takes %d to %d",
				     REC_ARGS(rec), ni, op->min_inputs, op->max_inputs);
	if (no < (size_t)op->min_outputs || (op->max_outputs >= 0 && no > (size_t)op->max_outputs))
		return npu_error_set(err, NPU_ERR_MODEL, REC_FMT ": %zu outputs; it gives %d to %d",
				     REC_ARGS(rec), no, op->min_outputs, op->max_outputs);
	return NPU_OK;
}

/*
 * Run the application's infer() for 'node' (its inputs' values, or the
 * tensors at run time) into dtypes / shapes. Outputs are unknown without it.
 */
static npu_status run_infer(const struct npu_custom_record *rec, const struct npu_node *node,
			    const struct npu_tensor *const *tensors, enum npu_dtype *dtypes,
			    struct npu_shape *shapes, bool *have, struct npu_error *err)
{
	struct npu_infer_context ic = {
		.rec = rec, .node = node, .tensors = tensors,
		.num_inputs = node->num_inputs - node->num_implicit_inputs,
		.dtypes = dtypes, .shapes = shapes, .err = err,
	};
	bool *set;
	size_t j;
	npu_status st;

	*have = false;
	for (j = 0; j < node->num_outputs; j++) {
		dtypes[j] = NPU_DTYPE_UNDEFINED;
		memset(&shapes[j], 0, sizeof(shapes[j]));
		shapes[j].rank = -1;
	}
	if (!rec->op.infer)
		return NPU_OK;
	set = calloc(node->num_outputs + 1, sizeof(*set));
	if (!set)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	ic.set = set;
	npu_error_clear(err);
	st = rec->op.infer(rec->op.user, &ic);
	if (st != NPU_OK) {
		char msg[NPU_ERROR_MSG_MAX];

		snprintf(msg, sizeof(msg), "%s", ic.error_set ? err->msg : npu_status_str(st));
		npu_error_set(err, st, REC_FMT ": shape inference failed: %s", REC_ARGS(rec), msg);
	} else {
		for (j = 0; j < node->num_outputs && st == NPU_OK; j++)
			if (node->outputs[j] && !set[j])
				st = npu_error_set(err, NPU_ERR_INVALID_ARG,
						   REC_FMT ": shape inference gave output %zu ('%s') no type",
						   REC_ARGS(rec), j, node->outputs[j]->name);
	}
	free(set);
	*have = st == NPU_OK;
	return st;
}

/* The schema's infer(): counts, then the application's. */
static npu_status custom_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_custom_record *rec = ctx->schema->data;
	bool have;
	npu_status st;

	st = check_counts(rec, ctx->node, ctx->err);
	if (st != NPU_OK)
		return st;
	return run_infer(rec, ctx->node, NULL, ctx->out_dtypes, ctx->out_shapes, &have, ctx->err);
}

/* ---- Kernel ---- */

static npu_status custom_prepare(const struct npu_op_def *def, struct npu_node *node,
				 const struct npu_cpu_options *cpu, struct npu_error *err)
{
	const struct npu_custom_record *rec = record_of_def(def);
	struct custom_node *cn;
	npu_status st = NPU_OK;

	(void)cpu;
	node->op_state = NULL;
	cn = calloc(1, sizeof(*cn));
	if (!cn)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	cn->rec = rec;
	if (rec->op.create) {
		npu_api_fail(NPU_OK, "%s", "");	/* what create() leaves there is its own */
		st = rec->op.create(rec->op.user, attrs_of(node), &cn->state);
		if (st != NPU_OK) {
			npu_error_set(err, st, REC_FMT ": create() failed: %s", REC_ARGS(rec),
				      npu_last_error()[0] ? npu_last_error() : npu_status_str(st));
			free(cn);
			return st;
		}
	}
	node->op_state = cn;
	return NPU_OK;
}

static void custom_release(struct npu_node *node)
{
	struct custom_node *cn = node->op_state;

	if (!cn)
		return;
	if (cn->rec->op.destroy)
		cn->rec->op.destroy(cn->rec->op.user, cn->state);
	free(cn);
	node->op_state = NULL;
}

NPU_API size_t npu_kernel_num_inputs(const struct npu_kernel_context *ctx)
{
	return ctx ? ctx->op->num_inputs - ctx->op->node->num_implicit_inputs : 0;
}

NPU_API size_t npu_kernel_num_outputs(const struct npu_kernel_context *ctx)
{
	return ctx ? ctx->op->num_outputs : 0;
}

NPU_API npu_status npu_kernel_input(const struct npu_kernel_context *ctx, size_t index,
				    struct npu_host_tensor *tensor)
{
	const struct npu_tensor *t;
	int d;

	if (!ctx || !tensor)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_kernel_input: %s is NULL",
				    !ctx ? "ctx" : "tensor");
	if (index >= npu_kernel_num_inputs(ctx))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_kernel_input: node '%s' has %zu inputs, not %zu",
				    ctx->op->node->name, npu_kernel_num_inputs(ctx), index + 1);
	memset(tensor, 0, sizeof(*tensor));
	t = ctx->op->inputs[index];
	if (!t)
		return npu_api_fail(NPU_ERR_NOT_FOUND,
				    "npu_kernel_input: node '%s': input %zu is omitted",
				    ctx->op->node->name, index);
	tensor->name = ctx->op->node->inputs[index]->name;
	tensor->dtype = (enum npu_data_type)t->dtype;
	tensor->rank = t->shape.rank;
	for (d = 0; d < t->shape.rank && d < NPU_MODEL_MAX_RANK; d++)
		tensor->dims[d] = t->shape.dims[d];
	tensor->data = t->data;
	tensor->nbytes = t->nbytes;
	return NPU_OK;
}

/* A broken rule of npu_kernel_output(): fails the run whatever compute() returns. */
static npu_status kernel_violation(struct npu_kernel_context *ctx, npu_status st,
				   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static npu_status kernel_violation(struct npu_kernel_context *ctx, npu_status st,
				   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	npu_error_vset(&ctx->violation_err, st, fmt, ap);
	va_end(ap);
	if (!ctx->violation)
		ctx->violation = st;
	return npu_api_fail_err(&ctx->violation_err);
}

NPU_API npu_status npu_kernel_output(struct npu_kernel_context *ctx, size_t index,
				     enum npu_data_type dtype, int rank, const int64_t *dims,
				     void **data)
{
	const struct npu_value *v;
	struct npu_shape s = { 0 };
	struct npu_tensor *t;
	char a[200], b[200];
	npu_status st;
	int d;

	if (data)
		*data = NULL;
	if (!ctx)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_kernel_output: ctx is NULL");
	if (index >= ctx->op->num_outputs || !ctx->op->node->outputs[index])
		return npu_api_fail(NPU_ERR_NOT_FOUND,
				    "npu_kernel_output: node '%s' has no output %zu",
				    ctx->op->node->name, index);
	v = ctx->op->node->outputs[index];
	if (ctx->allocated[index])
		return kernel_violation(ctx, NPU_ERR_INVALID_ARG,
					"%s: output %zu ('%s') allocated twice",
					ctx->label, index, v->name);
	if (rank < 0 || rank > NPU_MODEL_MAX_RANK || (rank && !dims))
		return kernel_violation(ctx, NPU_ERR_INVALID_ARG,
					"%s: output %zu ('%s'): rank %d (0 to %d, with dims)",
					ctx->label, index, v->name, rank, NPU_MODEL_MAX_RANK);
	if (!npu_dtype_size((enum npu_dtype)dtype) || dtype == NPU_TYPE_STRING)
		return kernel_violation(ctx, NPU_ERR_INVALID_ARG,
					"%s: output %zu ('%s'): type %d is not a numeric element type",
					ctx->label, index, v->name, (int)dtype);
	s.rank = rank;
	for (d = 0; d < rank; d++) {
		if (dims[d] < 0)
			return kernel_violation(ctx, NPU_ERR_INVALID_ARG,
						"%s: output %zu ('%s'): dim %d is %lld",
						ctx->label, index, v->name, d, (long long)dims[d]);
		s.dims[d] = dims[d];
	}
	if (npu_shape_numel(&s) < 0)
		return kernel_violation(ctx, NPU_ERR_INVALID_ARG,
					"%s: output %zu ('%s'): too many elements",
					ctx->label, index, v->name);
	if (ctx->have_expect) {
		const struct npu_shape *e = &ctx->shapes[index];
		bool ok = ctx->dtypes[index] == (enum npu_dtype)dtype && e->rank == rank;

		for (d = 0; ok && d < rank; d++)
			ok = e->dims[d] < 0 || e->dims[d] == dims[d];
		if (!ok)
			return kernel_violation(ctx, NPU_ERR_INVALID_ARG,
						"%s: output %zu ('%s') allocated as %s; its shape inference said %s",
						ctx->label, index, v->name,
						shape_str((enum npu_dtype)dtype, &s, a, sizeof(a)),
						shape_str(ctx->dtypes[index], e, b, sizeof(b)));
	}
	st = ctx->op->rt->alloc_output(ctx->op, index, (enum npu_dtype)dtype, &s);
	if (st != NPU_OK)
		return kernel_violation(ctx, st, "%s", ctx->op->err->msg);
	ctx->allocated[index] = true;
	t = ctx->op->outputs[index];
	if (t && t->nbytes)
		memset(t->data, 0, t->nbytes);
	if (data)
		*data = t ? t->data : NULL;
	return NPU_OK;
}

NPU_API const struct npu_op_attrs *npu_kernel_attrs(const struct npu_kernel_context *ctx)
{
	return ctx ? attrs_of(ctx->op->node) : NULL;
}

NPU_API void npu_kernel_set_error(struct npu_kernel_context *ctx, const char *fmt, ...)
{
	va_list ap;

	if (!ctx || !fmt)
		return;
	va_start(ap, fmt);
	npu_error_vset(&ctx->user_err, NPU_ERR_JOB_FAILED, fmt, ap);
	va_end(ap);
	ctx->error_set = true;
}

npu_status npu_kernel_context_run(struct npu_op_ctx *op, const char *label,
				  const enum npu_dtype *dtypes, const struct npu_shape *shapes,
				  npu_status (*compute)(void *user, void *state,
							struct npu_kernel_context *ctx),
				  void *user, void *state)
{
	struct npu_kernel_context kc = {
		.op = op, .label = label, .have_expect = dtypes != NULL,
		.dtypes = dtypes, .shapes = shapes,
	};
	npu_status st;
	size_t j;

	kc.allocated = calloc(op->num_outputs + 1, sizeof(*kc.allocated));
	if (!kc.allocated)
		return npu_error_set(op->err, NPU_ERR_NO_MEMORY, "out of memory");
	st = compute(user, state, &kc);
	if (kc.violation) {
		*op->err = kc.violation_err;
		st = kc.violation;
	} else if (st != NPU_OK) {
		if (kc.error_set)
			npu_error_set(op->err, st, "%s: %s", label, kc.user_err.msg);
		else
			npu_error_set(op->err, st, "%s: compute() returned '%s'", label,
				      npu_status_str(st));
	} else {
		for (j = 0; j < op->num_outputs && st == NPU_OK; j++)
			if (op->node->outputs[j] && !kc.allocated[j])
				st = npu_error_set(op->err, NPU_ERR_INVALID_ARG,
						   "%s: compute() did not allocate output %zu ('%s')",
						   label, j, op->node->outputs[j]->name);
	}
	free(kc.allocated);
	return st;
}

static npu_status custom_compute(struct npu_op_ctx *op)
{
	const struct custom_node *cn = op->node->op_state;
	const struct npu_custom_record *rec;
	size_t n = op->num_outputs + 1;
	enum npu_dtype *dtypes;
	struct npu_shape *shapes;
	bool have_expect;
	char label[300];
	npu_status st;

	if (!cn || !op->rt)
		return npu_error_set(op->err, NPU_ERR_INTERNAL,
				     "custom op '%s': run without its prepared state", op->node->op_type);
	rec = cn->rec;
	dtypes = calloc(n, sizeof(*dtypes));
	shapes = calloc(n, sizeof(*shapes));
	if (!dtypes || !shapes) {
		st = npu_error_set(op->err, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	/* What the outputs must be for these inputs: checked at allocation. */
	st = run_infer(rec, op->node, op->inputs, dtypes, shapes, &have_expect, op->err);
	if (st != NPU_OK)
		goto out;
	snprintf(label, sizeof(label), REC_FMT, REC_ARGS(rec));
	st = npu_kernel_context_run(op, label, have_expect ? dtypes : NULL, shapes,
				    rec->op.compute, rec->op.user, cn->state);
out:
	free(dtypes);
	free(shapes);
	return st;
}

/* ---- At load ---- */

npu_status npu_custom_ops_check_graph(const struct npu_graph *g, struct npu_error *err)
{
	size_t i, a;
	npu_status st;

	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];
		const struct npu_op_schema *s = npu_node_schema(g, n);

		if (!s && !npu_op_domain_reserved(n->domain))	/* an application's domain */
			return npu_graph_op_unsupported(g, n, err);
		if (s && s->opaque && s->infer == custom_infer) {
			st = check_counts(s->data, n, err);
			if (st != NPU_OK) {
				npu_graph_error_context(g, n, err);
				return st;
			}
		}
		for (a = 0; a < n->num_attrs; a++)
			if (n->attrs[a].type == NPU_ATTR_GRAPH && n->attrs[a].g) {
				st = npu_custom_ops_check_graph(n->attrs[a].g, err);
				if (st != NPU_OK)
					return st;
			}
	}
	return NPU_OK;
}

/* ---- Registration ---- */

NPU_API void npu_custom_op_init_sized(struct npu_custom_op *op, size_t struct_size)
{
	if (!op || struct_size < sizeof(size_t))
		return;
	memset(op, 0, struct_size);
	op->struct_size = struct_size;
}

static npu_status check_op(const struct npu_custom_op *op)
{
	const char *name = op->op_type && op->op_type[0] ? op->op_type : "(unnamed)";

	if (!op->domain || npu_op_domain_reserved(op->domain))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_custom_op: op '%s': domain '%s' is %s: a custom op needs a domain of its own",
				    name, op->domain ? op->domain : "(null)",
				    !op->domain || !op->domain[0] ? "empty" : "reserved");
	if (!op->op_type || !op->op_type[0])
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_custom_op: domain '%s': op_type is empty",
				    op->domain);
	if (!op->compute)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_custom_op: '%s.%s': compute is NULL",
				    op->domain, name);
	if (op->destroy && !op->create)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_custom_op: '%s.%s': destroy without create",
				    op->domain, name);
	if (op->since_version < 1 || op->since_version > CUSTOM_MAX_VERSION)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_custom_op: '%s.%s': since_version %d (1 to %d)",
				    op->domain, name, op->since_version, CUSTOM_MAX_VERSION);
	if (op->min_inputs < 0 || (op->max_inputs != -1 && op->max_inputs < op->min_inputs))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_custom_op: '%s.%s': inputs %d to %d (min >= 0, max >= min or -1)",
				    op->domain, name, op->min_inputs, op->max_inputs);
	if (op->min_outputs < 1 || (op->max_outputs != -1 && op->max_outputs < op->min_outputs))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_engine_register_custom_op: '%s.%s': outputs %d to %d (min >= 1, max >= min or -1)",
				    op->domain, name, op->min_outputs, op->max_outputs);
	return NPU_OK;
}

static void record_free(struct npu_custom_record *rec)
{
	if (!rec)
		return;
	free(rec->domain);
	free(rec->op_type);
	free(rec);
}

NPU_API npu_status npu_engine_register_custom_op(struct npu_engine *engine,
						 const struct npu_custom_op *op)
{
	struct npu_custom_record *rec, **list;
	struct npu_error err = { 0 };
	npu_status st;

	if (!engine || !op)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_engine_register_custom_op: %s is NULL",
				    !engine ? "engine" : "op");
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	npu_custom_op_init(&rec->op);
	st = npu_api_copy_options(&rec->op, sizeof(rec->op), op, "npu_custom_op");
	if (!st)
		st = check_op(&rec->op);
	if (st) {
		record_free(rec);
		return st;
	}
	rec->domain = strdup(rec->op.domain);
	rec->op_type = strdup(rec->op.op_type);
	if (!rec->domain || !rec->op_type) {
		record_free(rec);
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	}
	rec->op.domain = rec->domain;
	rec->op.op_type = rec->op_type;
	rec->schema.op_type = rec->op_type;
	rec->schema.domain = rec->domain;
	rec->schema.since_version = rec->op.since_version;
	rec->schema.max_version = CUSTOM_MAX_VERSION;
	rec->schema.infer = custom_infer;
	rec->schema.dynamic_outputs = true;	/* compute() sizes its outputs */
	rec->schema.opaque = true;
	rec->schema.data = rec;
	rec->def.op_type = rec->op_type;
	rec->def.domain = rec->domain;
	rec->def.prepare = custom_prepare;
	rec->def.release = custom_release;
	rec->def.compute = custom_compute;

	pthread_mutex_lock(&engine->lock);
	list = realloc(engine->custom_ops, (engine->num_custom_ops + 1) * sizeof(*list));
	if (!list) {
		st = npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	} else {
		engine->custom_ops = list;
		st = npu_op_registry_add(engine->ops, &rec->schema, &rec->def, &err);
		if (st)
			npu_error_prefix(&err, "npu_engine_register_custom_op");
		else
			list[engine->num_custom_ops++] = rec;
	}
	pthread_mutex_unlock(&engine->lock);
	if (st) {
		record_free(rec);
		return err.msg[0] ? npu_api_fail_err(&err) : st;
	}
	npu_engine_log(engine, NPU_LOG_INFO, "custom op '%s.%s' version %d registered",
		       rec->domain, rec->op_type, rec->op.since_version);
	return NPU_OK;
}

void npu_custom_ops_free(struct npu_engine *engine)
{
	size_t i;

	for (i = 0; i < engine->num_custom_ops; i++)
		record_free(engine->custom_ops[i]);
	free(engine->custom_ops);
	engine->custom_ops = NULL;
	engine->num_custom_ops = 0;
}
