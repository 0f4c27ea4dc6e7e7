// SPDX-License-Identifier: MIT
/* The CPU op table, generated from op_list.h, and its lookup. */
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

const struct npu_op_def *npu_cpu_op_find(const char *domain,
					 const char *op_type, int opset)
{
	const char *dom = npu_cpu_op_domain(domain);
	size_t i;

	if (!op_type)
		return NULL;
	for (i = 0; i < NPU_CPU_OP_COUNT; i++) {
		const struct npu_op_def *def = npu_cpu_op_table[i];

		if (strcmp(def->op_type, op_type) ||
		    strcmp(npu_cpu_op_domain(def->domain), dom))
			continue;
		if (opset >= def->since_version && opset <= def->max_version)
			return def;
	}
	return NULL;
}

const struct npu_op_def *npu_cpu_op_at(size_t index)
{
	return index < NPU_CPU_OP_COUNT ? npu_cpu_op_table[index] : NULL;
}
