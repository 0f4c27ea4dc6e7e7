// SPDX-License-Identifier: MIT
/*
 * TfIdfVectorizer over int32 / int64 token ids (string pools are not
 * supported). For each skip distance 1 .. max_skip_count + 1 and each
 * start position, the n-grams of min_gram_length .. max_gram_length
 * tokens spaced by that distance are looked up in the pool and counted at
 * their ngram_indexes column; unigrams are counted once, not once per
 * distance (as ONNX Runtime does). mode TF gives the counts, IDF the
 * weight (default 1) where the count is non-zero, TFIDF count * weight.
 */
#include <string.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/text.h"

/* The pool index of the n-gram x[p], x[p + d], ..., or -1. */
static int64_t npu_tfidf_find(const struct npu_tfidf *t,
			      const struct npu_tensor *x, int64_t p, int64_t d,
			      int64_t n)
{
	int64_t start = t->counts[n - 1];
	int64_t end = (size_t)n < t->n_counts ? t->counts[n] :
						(int64_t)t->pool_len;
	int64_t first = 0, g, k, i;

	for (i = 0; i < n - 1; i++)	/* n-grams before the n-long ones */
		first += ((i + 1 < (int64_t)t->n_counts ? t->counts[i + 1] :
			   (int64_t)t->pool_len) - t->counts[i]) / (i + 1);
	for (g = 0; start + g * n < end; g++) {
		for (k = 0; k < n; k++)
			if (t->pool[start + g * n + k] !=
			    npu_op_index_get(x, (size_t)(p + k * d)))
				break;
		if (k == n)
			return first + g;
	}
	return -1;
}

static npu_status tfidf_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0];
	int64_t rows = x->shape.rank == 2 ? x->shape.dims[0] : 1;
	int64_t len = x->shape.dims[x->shape.rank - 1], r, d, p, n, c;
	float *yv = y->data;
	struct npu_tfidf t;
	npu_status st;

	st = npu_tfidf_parse(ctx->node, &t, ctx->err);
	if (st)
		return st;
	if (npu_op_numel(y))
		memset(yv, 0, (size_t)npu_op_numel(y) * sizeof(float));
	for (r = 0; r < rows; r++) {
		int64_t min_n = t.min_n;
		float *row = yv + r * t.cols;

		for (d = 1; d <= t.max_skip + 1; d++) {
			for (p = 0; p < len; p++)
				for (n = min_n; n <= t.max_n &&
				     (size_t)n <= t.n_counts &&
				     p + (n - 1) * d < len; n++) {
					int64_t g = npu_tfidf_find(&t, x, r * len + p,
								   d, n);

					if (g >= 0)
						row[t.indexes[g]] += 1;
				}
			/* Unigrams do not depend on the distance: once. */
			if (min_n == 1 && ++min_n > t.max_n)
				break;
		}
		for (c = 0; c < t.cols; c++) {
			float w = t.weights ? t.weights[c] : 1.0f;

			if (t.mode == TFIDF_IDF)
				row[c] = row[c] > 0 ? w : 0;
			else if (t.mode == TFIDF_TFIDF)
				row[c] *= w;
		}
	}
	return NPU_OK;
}

NPU_CPU_OP_DEF(tfidf_vectorizer) = {
	.op_type = "TfIdfVectorizer",
	.domain = "",
	.compute = tfidf_compute,
};
