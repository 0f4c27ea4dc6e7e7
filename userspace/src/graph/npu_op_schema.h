/* SPDX-License-Identifier: MIT */
/*
 * npu_op_schema.h - what an op is, independent of any kernel (internal).
 *
 * A schema names an op by (domain, op_type) and an opset range, and gives
 * its shape / type inference and the flags that describe the op itself.
 * The ONNX ops' schemas are built in (graph/schemas/<family>.c, listed in
 * graph/schemas/schema_list.h); ops that another layer makes (the
 * compiler's NPU segments and fused ops, the importer's lowerings) are
 * registered by that layer through npu_op_schema_register(). Backends
 * register kernels against schemas by (domain, op_type): the CPU's table is
 * in cpu/ops, and an op may have a schema and no CPU kernel.
 */
#ifndef NPU_OP_SCHEMA_H
#define NPU_OP_SCHEMA_H

#include "graph/npu_ir.h"

/*
 * The internal domains, one owner each: only names live here, the owner
 * registers its ops' schemas.
 *   ai.npu      NPU segments (compiler/op_schemas.c; kernel runtime/npu_segment_op.c)
 *   ai.npu.cpu  ops graph passes and the importer make for the CPU
 *               (compiler/op_schemas.c, onnx/npu_onnx_gradient.c)
 *   ai.npu.provider  an application's execution provider's subgraphs,
 *               op_type = the provider's name (runtime/npu_provider.c)
 */
#define NPU_DOMAIN_SEGMENT "ai.npu"
#define NPU_DOMAIN_PROVIDER "ai.npu.provider"
#define NPU_DOMAIN_CPU_INTERNAL "ai.npu.cpu"

/*
 * Shape inference input: the node with its input values' dtype / shape
 * (and value->constant where known). Fills out_dtypes / out_shapes for
 * each of node->num_outputs. Unknown dims propagate as -1.
 */
struct npu_infer_ctx {
	const struct npu_op_schema *schema;	/* whose infer() this is */
	const struct npu_node *node;
	enum npu_dtype *out_dtypes;
	struct npu_shape *out_shapes;
	struct npu_error *err;
};

struct npu_op_schema {
	const char *op_type;	/* "Conv" */
	const char *domain;	/* "" (ai.onnx) or "ai.onnx.preview.training"... */
	int since_version;	/* lowest opset this schema describes */
	int max_version;	/* highest opset it was checked against */
	/*
	 * Output types and shapes from the inputs' (and, for shape ops such
	 * as Reshape, the constant inputs' values); rejects unsupported
	 * types / attributes with a message naming the node, the attribute
	 * or input, and the reason.
	 */
	npu_status (*infer)(struct npu_infer_ctx *ctx);
	/*
	 * Output shapes are known only by running the op (control flow):
	 * infer() may leave them unknown (rank -1), the kernel sizes them
	 * itself, and the op is never folded at compile time.
	 */
	bool dynamic_outputs;
	/*
	 * The op reads or writes string tensors (graph/npu_str.h). Without
	 * it, a string input or output is rejected at load.
	 */
	bool strings;
	/*
	 * Opaque to the library: an application's op (a custom op). No pass
	 * rewrites it, nothing folds it and the NPU never claims it; only the
	 * kernel registered with it runs it. 'data' is the registrant's.
	 */
	bool opaque;
	/*
	 * The execution provider whose nodes these are ("npu" for NPU
	 * segments, an application's provider's name), else NULL: no other
	 * provider is offered such a node, and placement records name it.
	 */
	const char *owner;
	const void *data;
};

/* The schema for (domain, op_type) at 'opset', or NULL. "" = "ai.onnx". */
const struct npu_op_schema *npu_op_schema_find(const char *domain,
					       const char *op_type, int opset);
/*
 * The opset range over which (domain, op_type) has schemas at all: false
 * when it has none (an unknown op, not merely another version).
 */
bool npu_op_schema_versions(const char *domain, const char *op_type,
			    int *lo, int *hi);
/* Whether any built-in or library-registered schema has 'domain'. */
bool npu_op_schema_domain_known(const char *domain);
/*
 * Whether 'domain' is not an application's: the default one, ONNX's,
 * Microsoft's and the library's ("ai.onnx", "ai.onnx.ml", "ai.npu"... and
 * their sub-domains), or one with a built-in schema. Custom ops take any
 * other.
 */
bool npu_op_domain_reserved(const char *domain);
/* Iterate all schemas, built-in then registered (`npu ops`, docs, tests). */
const struct npu_op_schema *npu_op_schema_at(size_t index);

/*
 * Add schemas for ops the graph does not define (internal domains, custom
 * ops). The schemas must outlive the process's use of the library. Fails,
 * naming the op, when one overlaps an existing schema's versions or lacks
 * a name, domain or infer(). Thread-safe.
 */
npu_status npu_op_schema_register(const struct npu_op_schema *const *schemas,
				  size_t count, struct npu_error *err);

/*
 * A kernel registry: ops (a schema and the kernel that runs it) that one
 * owner adds beside the built-in ones; an engine's custom ops, and what
 * execution providers register the same way. There is no global one: a
 * graph carries the registry it was loaded with (npu_graph.ops), and two
 * engines' registries never meet. Lookups search it, then the built-in
 * schemas; kernels it lacks are the CPU's (npu_kernel_find, cpu_ops.h).
 * Append-only, entries never move: readers take no lock.
 */
struct npu_op_def;	/* a kernel (cpu/ops/cpu_ops.h); opaque here */

#define NPU_OP_REGISTRY_MAX 256

struct npu_op_registry *npu_op_registry_create(void);
void npu_op_registry_destroy(struct npu_op_registry *r);
/*
 * Add (schema, kernel), both outliving r. The schema covers opsets
 * since_version..max_version; at a given opset the entry with the highest
 * since_version at or below it wins, as in ONNX. NPU_ERR_BUSY when
 * (domain, op_type, since_version) is registered already, in r or built
 * in; NPU_ERR_INVALID_ARG for a schema without a name, domain or infer().
 * Thread-safe.
 */
npu_status npu_op_registry_add(struct npu_op_registry *r, const struct npu_op_schema *schema,
			       const struct npu_op_def *kernel, struct npu_error *err);
/* r's schema, else the built-in one, for (domain, op_type) at 'opset'; r may be NULL. */
const struct npu_op_schema *npu_op_registry_schema(const struct npu_op_registry *r,
						   const char *domain, const char *op_type,
						   int opset);
/* The kernel r registered for that schema, or NULL (r may be NULL). */
const struct npu_op_def *npu_op_registry_kernel(const struct npu_op_registry *r,
						const char *domain, const char *op_type,
						int opset);
/* npu_op_schema_versions() over r's schemas and the built-in ones. */
bool npu_op_registry_versions(const struct npu_op_registry *r, const char *domain,
			      const char *op_type, int *lo, int *hi);
/* Whether r has any op of 'domain'. */
bool npu_op_registry_has_domain(const struct npu_op_registry *r, const char *domain);

/* The schema of a node of g (g->ops, then the built-in ones), or NULL. */
static inline const struct npu_op_schema *npu_node_schema(const struct npu_graph *g,
							  const struct npu_node *node)
{
	return npu_op_registry_schema(g->ops, node->domain, node->op_type, node->opset);
}

/*
 * Whether the compiler and the runtime look inside n's subgraph
 * attributes (control flow's bodies and branches): not an opaque op's,
 * whose subgraph is its owner's alone (an execution provider's).
 */
static inline bool npu_node_subgraphs_open(const struct npu_graph *g, const struct npu_node *n)
{
	const struct npu_op_schema *s = npu_node_schema(g, n);

	return !(s && s->opaque);
}

/*
 * The error for a node no schema describes: "not implemented at this
 * version" (naming the versions there are), "no op of that domain is
 * registered" (a custom domain), or "unsupported op"; names node and op.
 */
npu_status npu_graph_op_unsupported(const struct npu_graph *g, const struct npu_node *node,
				    struct npu_error *err);

/*
 * Constant folding: evaluate 'node' on its constant inputs 'ins' into
 * 'outs' (allocated from the inferred shapes). *folded = false when the
 * evaluator has no kernel for the op (it then stays in the graph). The
 * graph cannot run ops itself: a backend lends it its kernels once, at
 * load (the CPU, cpu/ops/op_registry.c); without one nothing folds but
 * Shape and Size.
 */
typedef npu_status (*npu_op_fold_fn)(struct npu_node *node,
				     const struct npu_tensor *const *ins,
				     struct npu_tensor *const *outs,
				     bool *folded, struct npu_error *err);
void npu_graph_set_fold(npu_op_fold_fn fold);

#endif /* NPU_OP_SCHEMA_H */
