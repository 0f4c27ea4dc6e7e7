// SPDX-License-Identifier: MIT
/*
 * The CPU kernel table, generated from op_list.h, and its lookup; at load,
 * the CPU lends the graph its kernels for constant folding.
 */
#include <pthread.h>
#include <string.h>

#include "cpu/ops/op_common.h"

#define NPU_CPU_OP(sym) extern const struct npu_op_def npu_cpu_op_##sym;
#include "cpu/ops/op_list.h"
#undef NPU_CPU_OP

static const struct npu_op_def *const npu_cpu_op_table[] = {
#define NPU_CPU_OP(sym) &npu_cpu_op_##sym,
#include "cpu/ops/op_list.h"
#undef NPU_CPU_OP
};

#define NPU_CPU_OP_COUNT (sizeof(npu_cpu_op_table) / sizeof(npu_cpu_op_table[0]))

/* "" and "ai.onnx" name the same (default) domain. */
static const char *npu_cpu_op_domain(const char *domain)
{
	if (!domain || !strcmp(domain, "ai.onnx"))
		return "";
	return domain;
}

static npu_status cpu_fold(struct npu_node *node, const struct npu_tensor *const *ins,
			   struct npu_tensor *const *outs, bool *folded,
			   struct npu_error *err)
{
	const struct npu_op_def *def = npu_cpu_op_find(node->domain, node->op_type,
							node->opset);
	struct npu_op_ctx ctx = { 0 };
	npu_status st;

	*folded = false;
	if (!def || !def->compute)
		return NPU_OK;	/* no kernel: the node stays */
	if (def->prepare) {
		st = def->prepare(def, node, NULL, err);	/* folding: the default CPU options */
		if (st != NPU_OK)
			return st;
	}
	ctx.node = node;
	ctx.inputs = ins;
	ctx.num_inputs = node->num_inputs;
	ctx.outputs = outs;
	ctx.num_outputs = node->num_outputs;
	ctx.err = err;
	st = def->compute(&ctx);
	if (def->release)
		def->release(node);
	node->op_state = NULL;
	*folded = st == NPU_OK;
	return st;
}

/* At load: the graph folds constants with the CPU's kernels. */
__attribute__((constructor)) static void npu_cpu_ops_register(void)
{
	npu_graph_set_fold(cpu_fold);
}

static pthread_once_t npu_cpu_check_once = PTHREAD_ONCE_INIT;
static struct npu_error npu_cpu_check_err;
static npu_status npu_cpu_check_st;

/*
 * Every kernel runs an op some schema describes. Checked at first use, not
 * at load: other layers register schemas from their own constructors.
 */
static void cpu_check_once(void)
{
	size_t i;
	int lo, hi;

	for (i = 0; i < NPU_CPU_OP_COUNT; i++) {
		const struct npu_op_def *def = npu_cpu_op_table[i];
		const char *dom = npu_cpu_op_domain(def->domain);

		if (!npu_op_schema_versions(dom, def->op_type, &lo, &hi)) {
			npu_cpu_check_st = npu_error_set(&npu_cpu_check_err, NPU_ERR_INTERNAL,
				"CPU kernel '%s%s%s' has no op schema", dom,
				dom[0] ? "." : "", def->op_type);
			return;
		}
	}
}

npu_status npu_cpu_ops_check(struct npu_error *err)
{
	pthread_once(&npu_cpu_check_once, cpu_check_once);
	if (npu_cpu_check_st != NPU_OK && err)
		*err = npu_cpu_check_err;
	return npu_cpu_check_st;
}

/* A kernel runs every opset its schema describes. */
const struct npu_op_def *npu_cpu_op_find(const char *domain,
					 const char *op_type, int opset)
{
	const char *dom = npu_cpu_op_domain(domain);
	size_t i;

	if (!op_type || npu_cpu_ops_check(NULL) != NPU_OK)
		return NULL;
	for (i = 0; i < NPU_CPU_OP_COUNT; i++) {
		const struct npu_op_def *def = npu_cpu_op_table[i];

		if (strcmp(def->op_type, op_type) ||
		    strcmp(npu_cpu_op_domain(def->domain), dom))
			continue;
		if (npu_op_schema_find(dom, op_type, opset))
			return def;
	}
	return NULL;
}

const struct npu_op_def *npu_cpu_op_at(size_t index)
{
	return index < NPU_CPU_OP_COUNT ? npu_cpu_op_table[index] : NULL;
}

/* Other backends' kernels (constructors fill it at load; read-only after). */
static const struct npu_op_def *backend_kernels[NPU_KERNELS_MAX];
static size_t num_backend_kernels;

void npu_kernel_register(const struct npu_op_def *def)
{
	if (def && num_backend_kernels < NPU_KERNELS_MAX)
		backend_kernels[num_backend_kernels++] = def;
}

static const struct npu_op_def *backend_kernel(const struct npu_node *node)
{
	const char *dom = npu_cpu_op_domain(node->domain);
	size_t i;

	for (i = 0; i < num_backend_kernels; i++) {
		const struct npu_op_def *def = backend_kernels[i];

		if (!strcmp(def->op_type, node->op_type) &&
		    !strcmp(npu_cpu_op_domain(def->domain), dom) &&
		    npu_op_schema_find(dom, node->op_type, node->opset))
			return def;
	}
	return NULL;
}

const struct npu_op_def *npu_kernel_find(const struct npu_graph *g, const struct npu_node *node)
{
	const struct npu_op_def *def = npu_op_registry_kernel(g->ops, node->domain, node->op_type,
							       node->opset);

	if (!def)
		def = backend_kernel(node);
	return def ? def : npu_cpu_op_find(node->domain, node->op_type, node->opset);
}
