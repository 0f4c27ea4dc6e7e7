// SPDX-License-Identifier: MIT
/* npu_str.c - the packed layout of string tensors (npu_str.h). */
#include "graph/npu_str.h"

#include <stdlib.h>
#include <string.h>

#include "common/npu_alloc.h"

#define HEADER_BYTES 16u

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

size_t npu_str_bytes(size_t count, size_t text)
{
	return HEADER_BYTES + count * 8 + text;
}

npu_status npu_str_check(const struct npu_tensor *t, const char *what,
			 struct npu_error *err)
{
	const uint8_t *b = t ? t->data : NULL;
	int64_t numel = t ? npu_shape_numel(&t->shape) : -1;
	uint64_t count, prev = 0, text, i;
	uint32_t magic;

	if (!t || t->dtype != NPU_DTYPE_STRING)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "%s: not a string tensor", what);
	if (numel < 0)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "%s: string tensor of unknown shape",
				     what);
	if (!b || t->nbytes < HEADER_BYTES)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: %zu bytes, too few for a string tensor", what, t->nbytes);
	memcpy(&magic, b, sizeof(magic));
	count = get_u64(b + 8);
	if (magic != NPU_STR_MAGIC)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: not a packed string tensor (bad magic 0x%08x)", what, magic);
	if (count != (uint64_t)numel)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: holds %llu strings, its shape has %lld elements", what,
				     (unsigned long long)count, (long long)numel);
	if (count > (t->nbytes - HEADER_BYTES) / 8)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: %zu bytes, too few for %llu strings", what, t->nbytes,
				     (unsigned long long)count);
	text = t->nbytes - HEADER_BYTES - count * 8;
	for (i = 0; i < count; i++) {
		uint64_t end = get_u64(b + HEADER_BYTES + i * 8);

		if (end < prev || end > text)
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "%s: string %llu ends at %llu, outside %llu..%llu", what,
					     (unsigned long long)i, (unsigned long long)end,
					     (unsigned long long)prev, (unsigned long long)text);
		prev = end;
	}
	return NPU_OK;
}

const char *npu_str_at(const struct npu_tensor *t, size_t i, size_t *len)
{
	const uint8_t *b = t->data;
	uint64_t count = get_u64(b + 8);
	uint64_t start = i ? get_u64(b + HEADER_BYTES + (i - 1) * 8) : 0;
	uint64_t end = get_u64(b + HEADER_BYTES + i * 8);

	*len = (size_t)(end - start);
	return (const char *)b + HEADER_BYTES + count * 8 + start;
}

void npu_str_pack(void *dst, const char *const *s, const size_t *len,
		  size_t count)
{
	uint8_t *b = dst, *text = b + HEADER_BYTES + count * 8;
	uint32_t magic = NPU_STR_MAGIC, zero = 0;
	uint64_t c = count, end = 0;
	size_t i;

	memcpy(b, &magic, 4);
	memcpy(b + 4, &zero, 4);
	memcpy(b + 8, &c, 8);
	for (i = 0; i < count; i++) {
		if (len[i])
			memcpy(text + end, s[i], len[i]);
		end += len[i];
		memcpy(b + HEADER_BYTES + i * 8, &end, 8);
	}
}

struct npu_tensor *npu_str_tensor_create(const struct npu_shape *shape,
					 const char *const *s,
					 const size_t *len)
{
	int64_t numel = npu_shape_numel(shape);
	size_t i, text = 0, bytes;
	struct npu_tensor *t;

	if (numel < 0 || (uint64_t)numel > SIZE_MAX / 16)
		return NULL;
	for (i = 0; i < (size_t)numel; i++) {
		if (len[i] > SIZE_MAX / 2 - text)
			return NULL;
		text += len[i];
	}
	bytes = npu_str_bytes((size_t)numel, text);
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->data = npu_alloc_aligned(bytes);
	if (!t->data) {
		free(t);
		return NULL;
	}
	t->dtype = NPU_DTYPE_STRING;
	t->shape = *shape;
	t->nbytes = bytes;
	npu_str_pack(t->data, s, len, (size_t)numel);
	return t;
}
