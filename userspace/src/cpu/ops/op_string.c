// SPDX-License-Identifier: MIT
/*
 * String tensors (graph/npu_str.h): StringNormalizer, and the string side
 * of Cast / CastLike. A string output's size depends on its text, so each
 * op builds the strings first and then asks the runtime for the buffer
 * (npu_op_runtime.alloc_bytes).
 *
 * Numbers become text as the ONNX reference (numpy) writes them: the
 * shortest digits that read back to the same value, positional for
 * 1e-4 <= |x| < 1e16 ("0.25", "3.0"), else scientific ("1e-05"); NaN and
 * infinities as "NaN", "INF", "-INF"; integers in decimal, bools "True" /
 * "False". Text becomes a number by strtod / strtoll rules on the whole
 * string (surrounding spaces allowed); anything else is an error naming
 * the node, the element and the text.
 *
 * Case changes are Unicode's simple mappings (the C.UTF-8 locale's
 * towlower / towupper) on UTF-8 text; bytes that are not valid UTF-8 are
 * kept as they are.
 */
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

#include "cpu/ops/op_common.h"
#include "graph/schemas/string.h"
#include "cpu/ops/op_string.h"
#include "graph/npu_str.h"

/* ---- Output ---- */

/* Give output 'index' these strings (the runtime allocates its buffer). */
static npu_status str_output(struct npu_op_ctx *ctx, size_t index, const struct npu_shape *shape,
			     const char *const *s, const size_t *len, size_t count)
{
	size_t text = 0, i;
	npu_status st;

	if (!ctx->node->outputs[index])
		return NPU_OK;
	if (!ctx->rt || !ctx->rt->alloc_bytes)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_INTERNAL,
				    "a string output needs the runtime to allocate it");
	for (i = 0; i < count; i++)
		text += len[i];
	st = ctx->rt->alloc_bytes(ctx, index, NPU_DTYPE_STRING, shape, npu_str_bytes(count, text));
	if (st != NPU_OK)
		return st;
	npu_str_pack(ctx->outputs[index]->data, s, len, count);
	return NPU_OK;
}

static npu_status check_input(const struct npu_op_ctx *ctx, size_t i)
{
	char what[300];

	snprintf(what, sizeof(what), "%s node '%s': input %zu '%s'", ctx->node->op_type,
		 ctx->node->name ? ctx->node->name : "", i, ctx->node->inputs[i]->name);
	return npu_str_check(ctx->inputs[i], what, ctx->err);
}

/* A growable text arena: strings are appended, then addressed by offset. */
struct text_buf {
	char *data;
	size_t len, cap;
};

static char *text_reserve(struct text_buf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *d;

		while (cap < b->len + n)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return NULL;
		b->data = d;
		b->cap = cap;
	}
	return b->data + b->len;
}

/* ---- Numbers to text ---- */

/*
 * The shortest %.*e digits of v that read back to v in its own precision
 * (float: strtof, else strtod); writes "d.ddd" digits without the point
 * into dig and returns the decimal exponent.
 */
static int shortest_digits(double v, bool single, char *dig, size_t size)
{
	char buf[64], *e;
	int p, exp10;

	for (p = 0; p < 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p, v);
		if (single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v)
			break;
	}
	e = strchr(buf, 'e');
	exp10 = e ? atoi(e + 1) : 0;
	if (e)
		*e = '\0';
	/* buf is "-d.ddd" or "d": keep the digits only. */
	{
		size_t n = 0;
		const char *c;

		for (c = buf; *c && n + 1 < size; c++)
			if (isdigit((unsigned char)*c))
				dig[n++] = *c;
		dig[n] = '\0';
		/* Trailing zeros add nothing. */
		while (n > 1 && dig[n - 1] == '0')
			dig[--n] = '\0';
	}
	return exp10;
}

static void format_float(double v, bool single, char *out, size_t size)
{
	char dig[40];
	int exp10, nd, i;
	size_t o = 0;

	if (isnan(v)) {
		snprintf(out, size, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, size, v < 0 ? "-INF" : "INF");
		return;
	}
	if (v == 0) {
		snprintf(out, size, signbit(v) ? "-0.0" : "0.0");
		return;
	}
	exp10 = shortest_digits(v, single, dig, sizeof(dig));
	nd = (int)strlen(dig);
	if (v < 0)
		out[o++] = '-';
	if (fabs(v) >= 1e-4 && fabs(v) < 1e16) {
		if (exp10 >= 0) {
			for (i = 0; i <= exp10; i++)
				out[o++] = i < nd ? dig[i] : '0';
			out[o++] = '.';
			if (nd > exp10 + 1)
				for (i = exp10 + 1; i < nd; i++)
					out[o++] = dig[i];
			else
				out[o++] = '0';
		} else {
			out[o++] = '0';
			out[o++] = '.';
			for (i = 0; i < -exp10 - 1; i++)
				out[o++] = '0';
			for (i = 0; i < nd; i++)
				out[o++] = dig[i];
		}
		out[o] = '\0';
		return;
	}
	out[o++] = dig[0];
	if (nd > 1) {
		out[o++] = '.';
		for (i = 1; i < nd; i++)
			out[o++] = dig[i];
	}
	snprintf(out + o, size - o, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
}

static void format_number(const struct npu_tensor *x, size_t i, char *out, size_t size)
{
	const void *d = x->data;

	switch (x->dtype) {
	case NPU_DTYPE_FLOAT: format_float(((const float *)d)[i], true, out, size); break;
	case NPU_DTYPE_DOUBLE: format_float(((const double *)d)[i], false, out, size); break;
	case NPU_DTYPE_BOOL: snprintf(out, size, ((const uint8_t *)d)[i] ? "True" : "False"); break;
	case NPU_DTYPE_UINT64: snprintf(out, size, "%llu", (unsigned long long)((const uint64_t *)d)[i]); break;
	case NPU_DTYPE_INT64: snprintf(out, size, "%lld", (long long)((const int64_t *)d)[i]); break;
	default: snprintf(out, size, "%lld", (long long)npu_op_index_get(x, i)); break;
	}
}

/* ---- Text to numbers ---- */

static bool only_space(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return !*s;
}

/* Parse one element of x into y[i]; false when the text is not a y number. */
static bool parse_number(const char *s, enum npu_dtype dt, void *y, size_t i)
{
	char *end;

	errno = 0;
	switch (dt) {
	case NPU_DTYPE_FLOAT: {
		float f = strtof(s, &end);

		if (end == s || !only_space(end))
			return false;
		((float *)y)[i] = f;
		return true;
	}
	case NPU_DTYPE_DOUBLE: {
		double v = strtod(s, &end);

		if (end == s || !only_space(end))
			return false;
		((double *)y)[i] = v;
		return true;
	}
	case NPU_DTYPE_BOOL: {
		const char *b = s;
		size_t n;

		while (isspace((unsigned char)*b))
			b++;
		for (n = 0; b[n] && !isspace((unsigned char)b[n]); n++)
			;
		if (!only_space(b + n))
			return false;
		if ((n == 4 && !strncasecmp(b, "true", 4)) || (n == 1 && *b == '1'))
			((uint8_t *)y)[i] = 1;
		else if ((n == 5 && !strncasecmp(b, "false", 5)) || (n == 1 && *b == '0'))
			((uint8_t *)y)[i] = 0;
		else
			return false;
		return true;
	}
	case NPU_DTYPE_UINT64: case NPU_DTYPE_UINT32: case NPU_DTYPE_UINT16: case NPU_DTYPE_UINT8: {
		unsigned long long u;
		const char *b = s;

		while (isspace((unsigned char)*b))
			b++;
		if (*b == '-')
			return false;
		u = strtoull(b, &end, 10);
		if (end == b || !only_space(end) || errno == ERANGE)
			return false;
		switch (dt) {
		case NPU_DTYPE_UINT64: ((uint64_t *)y)[i] = u; return true;
		case NPU_DTYPE_UINT32: if (u > UINT32_MAX) return false;
			((uint32_t *)y)[i] = (uint32_t)u; return true;
		case NPU_DTYPE_UINT16: if (u > UINT16_MAX) return false;
			((uint16_t *)y)[i] = (uint16_t)u; return true;
		default: if (u > UINT8_MAX) return false;
			((uint8_t *)y)[i] = (uint8_t)u; return true;
		}
	}
	default: {
		long long v = strtoll(s, &end, 10);

		if (end == s || !only_space(end) || errno == ERANGE)
			return false;
		switch (dt) {
		case NPU_DTYPE_INT64: ((int64_t *)y)[i] = v; return true;
		case NPU_DTYPE_INT32: if (v < INT32_MIN || v > INT32_MAX) return false;
			((int32_t *)y)[i] = (int32_t)v; return true;
		case NPU_DTYPE_INT16: if (v < INT16_MIN || v > INT16_MAX) return false;
			((int16_t *)y)[i] = (int16_t)v; return true;
		case NPU_DTYPE_INT8: if (v < INT8_MIN || v > INT8_MAX) return false;
			((int8_t *)y)[i] = (int8_t)v; return true;
		default: return false;
		}
	}
	}
}

npu_status npu_op_strings_to_numbers(struct npu_op_ctx *ctx, const struct npu_tensor *x,
				     struct npu_tensor *y)
{
	size_t n = (size_t)npu_op_numel(x), i, cap = 0;
	npu_status st = check_input(ctx, 0);
	char *tmp = NULL;

	for (i = 0; i < n && st == NPU_OK; i++) {
		size_t len;
		const char *s = npu_str_at(x, i, &len);

		/* strto* need a NUL-terminated copy. */
		if (len + 1 > cap) {
			char *t = realloc(tmp, len + 1);

			if (!t) {
				st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY,
						  "out of memory");
				break;
			}
			tmp = t;
			cap = len + 1;
		}
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		if (strlen(tmp) != len || !parse_number(tmp, y->dtype, y->data, i))
			st = npu_op_invalid(ctx->err, ctx->node,
					    "element %zu of input '%s' is \"%.60s\", not a %s value",
					    i, ctx->node->inputs[0]->name, tmp,
					    npu_dtype_name(y->dtype));
	}
	free(tmp);
	return st;
}

npu_status npu_op_strings_copy(struct npu_op_ctx *ctx, size_t in, size_t out)
{
	const struct npu_tensor *x = ctx->inputs[in];
	size_t n = (size_t)npu_op_numel(x), i;
	const char **s;
	size_t *len;
	npu_status st = check_input(ctx, in);

	if (st != NPU_OK)
		return st;
	s = calloc(n + 1, sizeof(*s));
	len = calloc(n + 1, sizeof(*len));
	for (i = 0; s && len && i < n; i++)
		s[i] = npu_str_at(x, i, &len[i]);
	st = s && len ? str_output(ctx, out, &x->shape, s, len, n)
		      : npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	free(s);
	free(len);
	return st;
}

npu_status npu_op_numbers_to_strings(struct npu_op_ctx *ctx, const struct npu_tensor *x)
{
	size_t n = (size_t)npu_op_numel(x), i;
	/* A number as text: at most 32 characters each. */
	char *text = malloc(n * 32 + 1);
	const char **s = calloc(n + 1, sizeof(*s));
	size_t *len = calloc(n + 1, sizeof(*len));
	npu_status st;

	if (text && s && len) {
		for (i = 0; i < n; i++) {
			format_number(x, i, text + i * 32, 32);
			s[i] = text + i * 32;
			len[i] = strlen(s[i]);
		}
		st = str_output(ctx, 0, &x->shape, s, len, n);
	} else {
		st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	}
	free(text);
	free(s);
	free(len);
	return st;
}

/* ---- Unicode case mapping on UTF-8 ---- */

/* ---- StringNormalizer (10) ---- */

static npu_status normalizer_compute(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *x = ctx->inputs[0];
	size_t n = (size_t)npu_op_numel(x), kept = 0, i, k = 0;
	struct text_buf tb = { 0 };
	struct npu_strnorm nz;
	struct npu_shape s = x->shape;
	size_t *off = NULL, *len = NULL;
	const char **ptr = NULL;
	bool *keep = NULL;
	npu_status st;

	st = check_input(ctx, 0);
	if (!st)
		st = npu_strnorm_parse(ctx->node, &nz, ctx->err);
	if (st)
		return st;
	keep = calloc(n + 1, sizeof(*keep));
	off = calloc(n + 1, sizeof(*off));
	len = calloc(n + 1, sizeof(*len));
	ptr = calloc(n + 1, sizeof(*ptr));
	if (!keep || !off || !len || !ptr) {
		st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	st = npu_strnorm_filter(&nz, x, keep, &kept, ctx->node, ctx->err);
	if (st)
		goto out;
	for (i = 0; i < n; i++) {
		size_t l;
		const char *src = npu_str_at(x, i, &l);
		char *dst;

		if (!keep[i])
			continue;
		dst = text_reserve(&tb, 4 * l + 1);
		if (!dst) {
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
			goto out;
		}
		if (nz.action == CASE_NONE) {
			memcpy(dst, src, l);
		} else {
			l = npu_strnorm_case_map(src, l, nz.action, dst);
		}
		off[k] = tb.len;
		len[k++] = l;
		tb.len += l;
	}
	for (i = 0; i < k; i++)
		ptr[i] = tb.data + off[i];
	if (!kept) {
		ptr[0] = "";
		len[0] = 0;
		k = 1;
	}
	if (s.rank > 0)
		s.dims[s.rank - 1] = (int64_t)k;
	st = str_output(ctx, 0, &s, ptr, len, k);
out:
	free(tb.data);
	free(keep);
	free(off);
	free(len);
	free(ptr);
	return st;
}

NPU_CPU_OP_DEF(string_normalizer) = {
	.op_type = "StringNormalizer",
	.domain = "",
	.compute = normalizer_compute,
};

/* ---- Equal on strings (19) ---- */

npu_status npu_op_strings_equal(struct npu_op_ctx *ctx)
{
	const struct npu_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
	const struct npu_shape *ins[2] = { &a->shape, &b->shape };
	struct npu_tensor *y = ctx->outputs[0];
	struct npu_bcast bc;
	int64_t r, k, off[2];
	npu_status st = check_input(ctx, 0);

	if (!st)
		st = check_input(ctx, 1);
	if (st)
		return st;
	if (!npu_op_numel(y))
		return NPU_OK;
	npu_bcast_init(&bc, &y->shape, ins, 2);
	for (r = 0; r < bc.rows; r++) {
		npu_bcast_row(&bc, r, off);
		for (k = 0; k < bc.len; k++) {
			size_t la, lb;
			const char *sa = npu_str_at(a, (size_t)(off[0] + k * bc.step[0]), &la);
			const char *sb = npu_str_at(b, (size_t)(off[1] + k * bc.step[1]), &lb);

			((uint8_t *)y->data)[r * bc.len + k] = la == lb && !memcmp(sa, sb, la);
		}
	}
	return NPU_OK;
}

/* ---- Data-movement ops on strings, through indices ---- */

bool npu_op_has_strings(const struct npu_op_ctx *ctx)
{
	size_t i;

	for (i = 0; i < ctx->num_inputs; i++)
		if (ctx->inputs[i] && ctx->inputs[i]->dtype == NPU_DTYPE_STRING)
			return true;
	for (i = 0; i < ctx->num_outputs; i++)
		if (ctx->outputs[i] && ctx->outputs[i]->dtype == NPU_DTYPE_STRING)
			return true;
	return false;
}

#define BY_INDEX_MAX_IO 64

npu_status npu_op_strings_by_index(struct npu_op_ctx *ctx,
				   npu_status (*compute)(struct npu_op_ctx *ctx))
{
	const struct npu_tensor *ins[BY_INDEX_MAX_IO];
	struct npu_tensor *outs[BY_INDEX_MAX_IO], idx_in[BY_INDEX_MAX_IO] = { 0 };
	struct npu_tensor idx_out[BY_INDEX_MAX_IO] = { 0 };
	const struct npu_tensor *src[BY_INDEX_MAX_IO];	/* string input owning index range */
	int64_t base[BY_INDEX_MAX_IO + 1];
	size_t i, j, nsrc = 0;
	struct npu_op_ctx sub = *ctx;
	npu_status st = NPU_OK;

	if (ctx->num_inputs > BY_INDEX_MAX_IO || ctx->num_outputs > BY_INDEX_MAX_IO)
		return npu_op_unsupported(ctx->err, ctx->node, "more than %d inputs or outputs with strings",
					  BY_INDEX_MAX_IO);
	base[0] = 0;
	for (i = 0; i < ctx->num_inputs; i++) {
		const struct npu_tensor *x = ctx->inputs[i];
		int64_t n, k;

		ins[i] = x;
		if (!x || x->dtype != NPU_DTYPE_STRING)
			continue;
		st = check_input(ctx, i);
		if (st)
			goto out;
		n = npu_op_numel(x);
		idx_in[i].dtype = NPU_DTYPE_INT64;
		idx_in[i].shape = x->shape;
		idx_in[i].nbytes = (size_t)n * 8;
		idx_in[i].data = malloc(idx_in[i].nbytes + 8);
		if (!idx_in[i].data) {
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
			goto out;
		}
		for (k = 0; k < n; k++)
			((int64_t *)idx_in[i].data)[k] = base[nsrc] + k;
		src[nsrc] = x;
		base[nsrc + 1] = base[nsrc] + n;
		nsrc++;
		ins[i] = &idx_in[i];
	}
	for (j = 0; j < ctx->num_outputs; j++) {
		struct npu_tensor *y = ctx->outputs[j];

		outs[j] = y;
		if (!y || y->dtype != NPU_DTYPE_STRING)
			continue;
		idx_out[j].dtype = NPU_DTYPE_INT64;
		idx_out[j].shape = y->shape;
		idx_out[j].nbytes = (size_t)npu_op_numel(y) * 8;
		idx_out[j].data = malloc(idx_out[j].nbytes + 8);
		if (!idx_out[j].data) {
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
			goto out;
		}
		outs[j] = &idx_out[j];
	}
	sub.inputs = ins;
	sub.outputs = outs;
	st = compute(&sub);
	for (j = 0; st == NPU_OK && j < ctx->num_outputs; j++) {
		int64_t n = npu_op_numel(&idx_out[j]), k;
		const char **s;
		size_t *len;

		if (!idx_out[j].data)
			continue;
		s = calloc((size_t)n + 1, sizeof(*s));
		len = calloc((size_t)n + 1, sizeof(*len));
		if (!s || !len)
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
		for (k = 0; st == NPU_OK && k < n; k++) {
			int64_t v = ((const int64_t *)idx_out[j].data)[k];
			size_t q = 0;

			if (v < 0 || v >= base[nsrc]) {
				st = npu_op_error(ctx->err, ctx->node, NPU_ERR_INTERNAL,
						  "string index %lld out of range", (long long)v);
				break;
			}
			while (v >= base[q + 1])
				q++;
			s[k] = npu_str_at(src[q], (size_t)(v - base[q]), &len[k]);
		}
		if (st == NPU_OK)
			st = str_output(ctx, j, &idx_out[j].shape, s, len, (size_t)n);
		free(s);
		free(len);
	}
out:
	for (i = 0; i < BY_INDEX_MAX_IO; i++) {
		free(idx_in[i].data);
		free(idx_out[i].data);
	}
	return st;
}
