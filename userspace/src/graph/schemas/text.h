/* SPDX-License-Identifier: MIT */
/* What op_text.c's schemas and kernels share (graph/schemas/text.c). */
#ifndef NPU_SCHEMA_TEXT_H
#define NPU_SCHEMA_TEXT_H

#include "graph/schemas/schema_common.h"

enum npu_tfidf_mode { TFIDF_TF, TFIDF_IDF, TFIDF_TFIDF };

struct npu_tfidf {
	enum npu_tfidf_mode mode;
	int64_t min_n, max_n, max_skip, cols;
	const int64_t *pool, *counts, *indexes;
	size_t pool_len, n_counts, n_indexes;
	const float *weights;
	size_t n_weights;
};

npu_status npu_tfidf_parse(const struct npu_node *node,
			   struct npu_tfidf *t, struct npu_error *err);

#endif /* NPU_SCHEMA_TEXT_H */
