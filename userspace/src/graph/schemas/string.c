// SPDX-License-Identifier: MIT
/* The schemas of op_string.c's ops: StringNormalizer. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/string.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "graph/npu_str.h"

static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_locale_init(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* One code point at s (n bytes left), its length in *used; -1: not UTF-8. */
static int32_t utf8_decode(const unsigned char *s, size_t n, size_t *used)
{
	int32_t c;
	size_t k, need;

	if (s[0] < 0x80) {
		*used = 1;
		return s[0];
	}
	if ((s[0] & 0xe0) == 0xc0) {
		need = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		need = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		need = 4;
		c = s[0] & 0x07;
	} else {
		return -1;
	}
	if (need > n)
		return -1;
	for (k = 1; k < need; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return -1;
		c = (c << 6) | (s[k] & 0x3f);
	}
	/* Overlong forms, surrogates and out-of-range values are not text. */
	if ((need == 2 && c < 0x80) || (need == 3 && c < 0x800) || (need == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return -1;
	*used = need;
	return c;
}

static size_t utf8_encode(uint32_t c, char *out)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* s (n bytes) with its case changed into out (room for 4 * n); its length. */
size_t npu_strnorm_case_map(const char *s, size_t n, enum npu_case_action a, char *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0;

	pthread_once(&utf8_once, utf8_locale_init);
	while (i < n) {
		size_t used;
		int32_t c = utf8_decode(u + i, n - i, &used);
		wint_t m;

		if (c < 0) {
			out[o++] = s[i++];
			continue;
		}
		if (utf8_locale)
			m = a == CASE_LOWER ? towlower_l((wint_t)c, utf8_locale)
					    : towupper_l((wint_t)c, utf8_locale);
		else
			m = c < 0x80 ? (wint_t)(a == CASE_LOWER ? tolower(c) : toupper(c)) : (wint_t)c;
		if (m > 0x10ffff || (m >= 0xd800 && m <= 0xdfff))
			m = (wint_t)c;
		o += utf8_encode((uint32_t)m, out + o);
		i += used;
	}
	return o;
}

npu_status npu_strnorm_parse(const struct npu_node *node, struct npu_strnorm *nz,
			     struct npu_error *err)
{
	const char *action = npu_node_attr_string_or(node, "case_change_action", "NONE");
	const struct npu_attr *sw = npu_node_attr(node, "stopwords");
	const struct npu_attr *cs = npu_node_attr(node, "is_case_sensitive");

	if (!strcmp(action, "NONE"))
		nz->action = CASE_NONE;
	else if (!strcmp(action, "LOWER"))
		nz->action = CASE_LOWER;
	else if (!strcmp(action, "UPPER"))
		nz->action = CASE_UPPER;
	else
		return npu_op_invalid(err, node,
				      "attribute 'case_change_action' = '%.60s' is not NONE, LOWER or UPPER",
				      action);
	if (cs && cs->type != NPU_ATTR_INT)
		return npu_op_invalid(err, node, "attribute 'is_case_sensitive' is not an int");
	nz->case_sensitive = cs && cs->i != 0;
	if (sw && sw->type != NPU_ATTR_STRINGS)
		return npu_op_invalid(err, node, "attribute 'stopwords' is not a list of strings");
	nz->stopwords = sw && sw->count ? sw : NULL;
	return NPU_OK;
}

/* Whether s (n bytes) is a stopword, case-folded unless case-sensitive. */
static bool is_stopword(const struct npu_strnorm *nz, const char *s, size_t n, char *fold_a,
			char *fold_b)
{
	size_t i, na = 0;

	if (!nz->stopwords)
		return false;
	if (!nz->case_sensitive)
		na = npu_strnorm_case_map(s, n, CASE_LOWER, fold_a);
	for (i = 0; i < nz->stopwords->count; i++) {
		const char *w = nz->stopwords->strings[i];
		size_t wn = strlen(w);

		if (nz->case_sensitive) {
			if (wn == n && !memcmp(w, s, n))
				return true;
			continue;
		}
		/* fold_b has room for the longest stopword (prepared by the caller). */
		wn = npu_strnorm_case_map(w, wn, CASE_LOWER, fold_b);
		if (wn == na && !memcmp(fold_a, fold_b, na))
			return true;
	}
	return false;
}

static size_t longest_stopword(const struct npu_strnorm *nz)
{
	size_t i, m = 0;

	for (i = 0; nz->stopwords && i < nz->stopwords->count; i++)
		if (strlen(nz->stopwords->strings[i]) > m)
			m = strlen(nz->stopwords->strings[i]);
	return m;
}

/* The strings of x kept by the normalizer: keep[i]; returns their count. */
npu_status npu_strnorm_filter(const struct npu_strnorm *nz, const struct npu_tensor *x,
			      bool *keep, size_t *kept, const struct npu_node *node,
			      struct npu_error *err)
{
	size_t n = (size_t)npu_op_numel(x), i, longest = 0;
	char *fa = NULL, *fb;

	for (i = 0; i < n; i++) {
		size_t len;

		npu_str_at(x, i, &len);
		longest = len > longest ? len : longest;
	}
	fb = NULL;
	if (nz->stopwords) {
		fa = malloc(4 * longest + 1);
		fb = malloc(4 * longest_stopword(nz) + 1);
		if (!fa || !fb) {
			free(fa);
			free(fb);
			return npu_op_error(err, node, NPU_ERR_NO_MEMORY, "out of memory");
		}
	}
	*kept = 0;
	for (i = 0; i < n; i++) {
		size_t len;
		const char *s = npu_str_at(x, i, &len);

		keep[i] = !is_stopword(nz, s, len, fa, fb);
		*kept += keep[i];
	}
	free(fa);
	free(fb);
	return NPU_OK;
}

static npu_status normalizer_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	const struct npu_value *x;
	struct npu_strnorm nz;
	struct npu_shape s;
	npu_status st;
	char sbuf[160];

	st = npu_op_check_arity(ctx, 1, 1);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("case_change_action", "is_case_sensitive",
							  "locale", "stopwords"));
	if (!st)
		st = npu_strnorm_parse(node, &nz, ctx->err);
	if (st)
		return st;
	x = node->inputs[0];
	if (x->dtype != NPU_DTYPE_STRING)
		return npu_op_invalid(ctx->err, node, "input 'X' is %s, must be string",
				      npu_dtype_name(x->dtype));
	s = x->shape;
	if (s.rank >= 0 && !(s.rank == 1 || (s.rank == 2 && (s.dims[0] == 1 || s.dims[0] < 0))))
		return npu_op_invalid(ctx->err, node, "input 'X' has shape %s; it must be [C] or [1, C]",
				      npu_shape_str(&s, sbuf, sizeof(sbuf)));
	if (s.rank == 2 && s.dims[0] < 0)
		s.dims[0] = 1;
	/* How many strings stay is known only from the text. */
	if (s.rank > 0) {
		s.dims[s.rank - 1] = -1;
		if (x->constant && npu_str_check(x->constant, "input 'X'", ctx->err) == NPU_OK) {
			size_t n = (size_t)npu_op_numel(x->constant), kept;
			bool *keep = calloc(n + 1, sizeof(*keep));

			if (!keep)
				return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY, "out of memory");
			st = npu_strnorm_filter(&nz, x->constant, keep, &kept, node, ctx->err);
			free(keep);
			if (st)
				return st;
			/* All dropped: one empty string, as ONNX specifies. */
			s.dims[s.rank - 1] = kept ? (int64_t)kept : 1;
		}
		npu_error_clear(ctx->err);
	}
	ctx->out_dtypes[0] = NPU_DTYPE_STRING;
	ctx->out_shapes[0] = s;
	return NPU_OK;
}

npu_status npu_op_strings_equal_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *node = ctx->node;
	npu_status st = npu_op_check_arity(ctx, 2, 2);

	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS(NULL));
	if (st)
		return st;
	if (node->inputs[1]->dtype != NPU_DTYPE_STRING)
		return npu_op_invalid(ctx->err, node, "input 1 '%s' is %s, input 0 string",
				      node->inputs[1]->name, npu_dtype_name(node->inputs[1]->dtype));
	st = npu_op_broadcast_shape(ctx, &node->inputs[0]->shape, &node->inputs[1]->shape,
				    &ctx->out_shapes[0]);
	if (st)
		return st;
	ctx->out_dtypes[0] = NPU_DTYPE_BOOL;
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(string_normalizer) = {
	.op_type = "StringNormalizer", .domain = "",
	.since_version = 10, .max_version = 21,
	.infer = normalizer_infer,
	.strings = true,
};
