/* SPDX-License-Identifier: MIT */
/* What op_string.c's schemas and kernels share (graph/schemas/string.c). */
#ifndef NPU_SCHEMA_STRING_H
#define NPU_SCHEMA_STRING_H

#include "graph/schemas/schema_common.h"

enum npu_case_action { CASE_NONE, CASE_LOWER, CASE_UPPER };

struct npu_strnorm {
	enum npu_case_action action;
	bool case_sensitive;
	const struct npu_attr *stopwords;	/* NULL: none */
};

/* s (n bytes) with its case changed into out (room for 4 * n); its length. */
size_t npu_strnorm_case_map(const char *s, size_t n, enum npu_case_action a, char *out);

npu_status npu_strnorm_parse(const struct npu_node *node, struct npu_strnorm *nz,
			     struct npu_error *err);

/* The strings of x kept by the normalizer: keep[i]; returns their count. */
npu_status npu_strnorm_filter(const struct npu_strnorm *nz, const struct npu_tensor *x,
			      bool *keep, size_t *kept, const struct npu_node *node,
			      struct npu_error *err);

/* Equal (19) on two string tensors: bool, numpy-broadcast shape. */
npu_status npu_op_strings_equal_infer(struct npu_infer_ctx *ctx);

#endif /* NPU_SCHEMA_STRING_H */
