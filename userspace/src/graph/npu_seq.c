// SPDX-License-Identifier: MIT
/* npu_seq.c - the packed layout of sequence and optional values (npu_seq.h). */
#include "graph/npu_seq.h"

#include <string.h>

size_t npu_seq_align(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

size_t npu_seq_table_bytes(size_t count)
{
	return npu_seq_align(sizeof(struct npu_seq_header) + count * sizeof(struct npu_seq_item));
}

size_t npu_seq_bytes(const struct npu_tensor *const *items, size_t count)
{
	size_t bytes = npu_seq_table_bytes(count), i;

	for (i = 0; i < count; i++)
		bytes += npu_seq_align(items[i]->nbytes);
	return bytes;
}

void npu_seq_pack(enum npu_dtype kind, enum npu_dtype elem_dtype,
		  const struct npu_tensor *const *items, size_t count, void *dst)
{
	struct npu_seq_header h = {
		.magic = NPU_SEQ_MAGIC, .kind = (uint32_t)kind, .count = (uint32_t)count,
		.elem_dtype = (int32_t)elem_dtype,
	};
	uint8_t *base = dst;
	size_t off = npu_seq_table_bytes(count), i;

	memset(base, 0, npu_seq_bytes(items, count));
	memcpy(base, &h, sizeof(h));
	for (i = 0; i < count; i++) {
		struct npu_seq_item it = {
			.dtype = (int32_t)items[i]->dtype, .rank = items[i]->shape.rank,
			.offset = off, .nbytes = items[i]->nbytes,
		};

		memcpy(it.dims, items[i]->shape.dims, sizeof(it.dims));
		memcpy(base + sizeof(h) + i * sizeof(it), &it, sizeof(it));
		if (items[i]->nbytes)
			memcpy(base + off, items[i]->data, items[i]->nbytes);
		off += npu_seq_align(items[i]->nbytes);
	}
}

npu_status npu_seq_open(const struct npu_tensor *t, struct npu_seq *seq,
			struct npu_error *err)
{
	struct npu_seq_header h;
	size_t i;

	if (!t || (t->dtype != NPU_DTYPE_SEQUENCE && t->dtype != NPU_DTYPE_OPTIONAL) ||
	    t->nbytes < sizeof(h) || !t->data)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "not a sequence or optional value");
	memcpy(&h, t->data, sizeof(h));
	if (h.magic != NPU_SEQ_MAGIC || h.kind != (uint32_t)t->dtype ||
	    h.count > (t->nbytes - sizeof(h)) / sizeof(struct npu_seq_item) ||
	    (t->dtype == NPU_DTYPE_OPTIONAL && h.count > 1))
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "malformed %s value",
				     npu_dtype_name(t->dtype));
	seq->kind = t->dtype;
	seq->elem_dtype = (enum npu_dtype)h.elem_dtype;
	seq->count = h.count;
	seq->base = t->data;
	seq->items = (const struct npu_seq_item *)(seq->base + sizeof(h));
	for (i = 0; i < h.count; i++) {
		const struct npu_seq_item *it = &seq->items[i];
		struct npu_shape s = { .rank = it->rank };
		int64_t n;

		if (it->rank < 0 || it->rank > NPU_MAX_RANK || (uintptr_t)it % 8)
			return npu_error_set(err, NPU_ERR_INVALID_ARG, "%s item %zu: bad rank",
					     npu_dtype_name(t->dtype), i);
		memcpy(s.dims, it->dims, sizeof(s.dims));
		n = npu_shape_numel(&s);
		if (n < 0 || !npu_dtype_size((enum npu_dtype)it->dtype) ||
		    it->nbytes != (uint64_t)n * npu_dtype_size((enum npu_dtype)it->dtype) ||
		    it->offset > t->nbytes || it->nbytes > t->nbytes - it->offset)
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "%s item %zu: size or offset out of bounds",
					     npu_dtype_name(t->dtype), i);
	}
	return NPU_OK;
}

void npu_seq_item(const struct npu_seq *seq, size_t i, struct npu_tensor *out)
{
	const struct npu_seq_item *it = &seq->items[i];

	memset(out, 0, sizeof(*out));
	out->dtype = (enum npu_dtype)it->dtype;
	out->shape.rank = it->rank;
	memcpy(out->shape.dims, it->dims, sizeof(out->shape.dims));
	out->nbytes = it->nbytes;
	out->data = (void *)(seq->base + it->offset);
}
