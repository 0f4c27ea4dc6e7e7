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

/*
 * Transitional: the schemas of the families whose infer() is still here,
 * registered at load like any other layer's (graph/npu_op_schema.h).
 */
static struct npu_op_schema npu_cpu_legacy_schemas[NPU_CPU_OP_COUNT];
static const struct npu_op_schema *npu_cpu_legacy_list[NPU_CPU_OP_COUNT];
static struct npu_error npu_cpu_register_err;
static npu_status npu_cpu_register_st;

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
		st = def->prepare(node, err);
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

__attribute__((constructor)) static void npu_cpu_ops_register(void)
{
	size_t i, n = 0;

	for (i = 0; i < NPU_CPU_OP_COUNT; i++) {
		const struct npu_op_def *def = npu_cpu_op_table[i];
		struct npu_op_schema *s = &npu_cpu_legacy_schemas[n];

		if (!def->infer)
			continue;
		s->op_type = def->op_type;
		s->domain = def->domain;
		s->since_version = def->since_version;
		s->max_version = def->max_version;
		s->infer = def->infer;
		s->dynamic_outputs = def->alloc_outputs;
		s->strings = def->strings;
		npu_cpu_legacy_list[n++] = s;
	}
	npu_cpu_register_st = npu_op_schema_register(npu_cpu_legacy_list, n,
						      &npu_cpu_register_err);
	npu_graph_set_fold(cpu_fold);
}

static pthread_once_t npu_cpu_check_once = PTHREAD_ONCE_INIT;
static struct npu_error npu_cpu_check_err;
static npu_status npu_cpu_check_st;

/* Every kernel runs an op some schema describes, at all its opsets. */
static void cpu_check_once(void)
{
	size_t i;
	int lo, hi;

	if (npu_cpu_register_st != NPU_OK) {
		npu_cpu_check_st = npu_cpu_register_st;
		npu_cpu_check_err = npu_cpu_register_err;
		return;
	}
	for (i = 0; i < NPU_CPU_OP_COUNT; i++) {
		const struct npu_op_def *def = npu_cpu_op_table[i];
		const char *dom = npu_cpu_op_domain(def->domain);

		if (!npu_op_schema_versions(dom, def->op_type, &lo, &hi)) {
			npu_cpu_check_st = npu_error_set(&npu_cpu_check_err, NPU_ERR_INTERNAL,
				"CPU kernel '%s%s%s' has no op schema", dom,
				dom[0] ? "." : "", def->op_type);
			return;
		}
		if (def->since_version &&
		    (def->since_version < lo || def->max_version > hi)) {
			npu_cpu_check_st = npu_error_set(&npu_cpu_check_err, NPU_ERR_INTERNAL,
				"CPU kernel '%s%s%s' opsets %d to %d: its schema covers only %d to %d",
				dom, dom[0] ? "." : "", def->op_type,
				def->since_version, def->max_version, lo, hi);
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

/*
 * A kernel registered without versions runs every opset its schema
 * describes; one with versions runs those.
 */
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
		if (def->since_version ? opset >= def->since_version && opset <= def->max_version
				       : npu_op_schema_find(dom, op_type, opset) != NULL)
			return def;
	}
	return NULL;
}

const struct npu_op_def *npu_cpu_op_at(size_t index)
{
	return index < NPU_CPU_OP_COUNT ? npu_cpu_op_table[index] : NULL;
}
