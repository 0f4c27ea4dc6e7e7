// SPDX-License-Identifier: MIT
/* The schemas of op_text.c's ops: TfIdfVectorizer. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/text.h"

#include <string.h>

npu_status npu_tfidf_parse(const struct npu_node *node,
			   struct npu_tfidf *t, struct npu_error *err)
{
	const struct npu_attr *pool = npu_node_attr(node, "pool_int64s");
	const struct npu_attr *counts = npu_node_attr(node, "ngram_counts");
	const struct npu_attr *idx = npu_node_attr(node, "ngram_indexes");
	const struct npu_attr *w = npu_node_attr(node, "weights");
	const char *mode = npu_node_attr_string_or(node, "mode", "");
	size_t i, n_grams = 0;
	int64_t n;

	memset(t, 0, sizeof(*t));
	if (npu_node_attr(node, "pool_strings"))
		return npu_op_unsupported(err, node,
					  "attribute 'pool_strings' is not supported (string tensors)");
	if (!strcmp(mode, "TF"))
		t->mode = TFIDF_TF;
	else if (!strcmp(mode, "IDF"))
		t->mode = TFIDF_IDF;
	else if (!strcmp(mode, "TFIDF"))
		t->mode = TFIDF_TFIDF;
	else
		return npu_op_invalid(err, node,
				      "attribute 'mode' = '%s' is not TF, IDF or TFIDF",
				      mode);
	t->min_n = npu_node_attr_int_or(node, "min_gram_length", 0);
	t->max_n = npu_node_attr_int_or(node, "max_gram_length", 0);
	t->max_skip = npu_node_attr_int_or(node, "max_skip_count", 0);
	if (t->min_n < 1 || t->max_n < t->min_n || t->max_skip < 0)
		return npu_op_invalid(err, node,
				      "attributes 'min_gram_length' %lld, 'max_gram_length' %lld, 'max_skip_count' %lld are inconsistent",
				      (long long)t->min_n, (long long)t->max_n,
				      (long long)t->max_skip);
	if (!pool || pool->type != NPU_ATTR_INTS || !counts ||
	    counts->type != NPU_ATTR_INTS || !idx || idx->type != NPU_ATTR_INTS)
		return npu_op_invalid(err, node,
				      "attributes 'pool_int64s', 'ngram_counts' and 'ngram_indexes' are required");
	t->pool = pool->ints;
	t->pool_len = pool->count;
	t->counts = counts->ints;
	t->n_counts = counts->count;
	t->indexes = idx->ints;
	t->n_indexes = idx->count;
	/* ngram_counts[k]: where the (k + 1)-grams start in the pool. */
	for (i = 0; i < t->n_counts; i++) {
		int64_t start = t->counts[i];
		int64_t end = i + 1 < t->n_counts ? t->counts[i + 1] :
						    (int64_t)t->pool_len;

		if (start < 0 || end < start || end > (int64_t)t->pool_len ||
		    (end - start) % (int64_t)(i + 1))
			return npu_op_invalid(err, node,
					      "attribute 'ngram_counts'[%zu] = %lld does not split the pool into %zu-grams",
					      i, (long long)start, i + 1);
		n_grams += (size_t)((end - start) / (int64_t)(i + 1));
	}
	if (n_grams != t->n_indexes)
		return npu_op_invalid(err, node,
				      "attribute 'ngram_indexes' has %zu entries for %zu n-grams",
				      t->n_indexes, n_grams);
	t->cols = 0;
	for (i = 0; i < t->n_indexes; i++) {
		if (t->indexes[i] < 0)
			return npu_op_invalid(err, node,
					      "attribute 'ngram_indexes'[%zu] = %lld is negative",
					      i, (long long)t->indexes[i]);
		n = t->indexes[i] + 1;
		t->cols = n > t->cols ? n : t->cols;
	}
	if (w) {
		if (w->type != NPU_ATTR_FLOATS || (int64_t)w->count < t->cols)
			return npu_op_invalid(err, node,
					      "attribute 'weights' has %zu values for %lld columns",
					      w->count, (long long)t->cols);
		t->weights = w->floats;
		t->n_weights = w->count;
	}
	return NPU_OK;
}

static npu_status tfidf_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype types[] = {
		NPU_DTYPE_INT32, NPU_DTYPE_INT64, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_shape *xs;
	struct npu_tfidf t;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("max_gram_length",
							 "max_skip_count",
							 "min_gram_length", "mode",
							 "ngram_counts",
							 "ngram_indexes",
							 "pool_int64s",
							 "pool_strings", "weights"));
	if (!st)
		st = npu_op_check_dtype(ctx, 0, types);
	if (!st)
		st = npu_tfidf_parse(node, &t, ctx->err);
	if (st)
		return st;
	xs = &node->inputs[0]->shape;
	if (xs->rank != 1 && xs->rank != 2)
		return npu_op_invalid(ctx->err, node,
				      "input 0 '%s' has rank %d, expected [C] or [N, C]",
				      node->inputs[0]->name, xs->rank);
	ctx->out_dtypes[0] = NPU_DTYPE_FLOAT;
	ctx->out_shapes[0].rank = xs->rank;
	ctx->out_shapes[0].dims[0] = xs->dims[0];
	ctx->out_shapes[0].dims[xs->rank - 1] = t.cols;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(tfidf_vectorizer) = {
	.op_type = "TfIdfVectorizer", .domain = "",
	.since_version = 9, .max_version = 21,
	.infer = tfidf_infer,
};
