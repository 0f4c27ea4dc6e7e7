// SPDX-License-Identifier: MIT
/* npu_sequence.c - the public face of packed sequences (graph/npu_seq.h). */
#include "runtime/npu_api.h"

#include <stdlib.h>
#include <string.h>

#include "graph/npu_seq.h"

static void to_tensor(const struct npu_host_tensor *h, struct npu_tensor *t)
{
	memset(t, 0, sizeof(*t));
	t->dtype = (enum npu_dtype)h->dtype;
	t->shape.rank = h->rank;
	memcpy(t->shape.dims, h->dims, sizeof(t->shape.dims));
	t->data = h->data;
	t->nbytes = h->nbytes;
}

NPU_API size_t npu_sequence_bytes(const struct npu_host_tensor *items, size_t count)
{
	size_t bytes = npu_seq_table_bytes(count), i;

	for (i = 0; items && i < count; i++)
		bytes += npu_seq_align(items[i].nbytes);
	return bytes;
}

NPU_API npu_status npu_sequence_pack(enum npu_data_type kind,
				     const struct npu_host_tensor *items, size_t count,
				     void *buf, size_t size, struct npu_host_tensor *out)
{
	struct npu_tensor *ts = NULL;
	const struct npu_tensor **ptrs = NULL;
	size_t need = npu_sequence_bytes(items, count), i;

	if ((kind != NPU_TYPE_SEQUENCE && kind != NPU_TYPE_OPTIONAL) || !out || (count && !items) ||
	    (kind == NPU_TYPE_OPTIONAL && count > 1))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_sequence_pack: kind %d with %zu items is not a sequence or optional",
				    (int)kind, count);
	if (!buf || size < need)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_sequence_pack: %zu bytes of buffer, %zu needed", size, need);
	ts = calloc(count + 1, sizeof(*ts));
	ptrs = calloc(count + 1, sizeof(*ptrs));
	if (!ts || !ptrs) {
		free(ts);
		free(ptrs);
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < count; i++) {
		int64_t n;

		to_tensor(&items[i], &ts[i]);
		n = items[i].rank >= 0 && items[i].rank <= NPU_MAX_RANK ? npu_shape_numel(&ts[i].shape)
									  : -1;
		if (n < 0 || !npu_dtype_size(ts[i].dtype) ||
		    ts[i].nbytes != (size_t)n * npu_dtype_size(ts[i].dtype) ||
		    (kind == NPU_TYPE_SEQUENCE && ts[i].dtype != ts[0].dtype)) {
			free(ts);
			free(ptrs);
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "npu_sequence_pack: item %zu: %s of %zu bytes does not fit its shape or the sequence's type",
					    i, npu_dtype_name((enum npu_dtype)items[i].dtype), items[i].nbytes);
		}
		ptrs[i] = &ts[i];
	}
	npu_seq_pack((enum npu_dtype)kind, count ? ts[0].dtype : NPU_DTYPE_UNDEFINED, ptrs, count,
		     buf);
	memset(out, 0, sizeof(*out));
	out->dtype = kind;
	out->rank = 1;
	out->dims[0] = (int64_t)need;
	out->data = buf;
	out->nbytes = need;
	free(ts);
	free(ptrs);
	return NPU_OK;
}

static npu_status open_container(const struct npu_host_tensor *c, struct npu_seq *seq)
{
	struct npu_error err = { 0 };
	struct npu_tensor t;

	if (!c)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_sequence: container is NULL");
	to_tensor(c, &t);
	if (npu_seq_open(&t, seq, &err))
		return npu_api_fail_err(&err);
	return NPU_OK;
}

NPU_API npu_status npu_sequence_length(const struct npu_host_tensor *c, size_t *count)
{
	struct npu_seq seq;
	npu_status st = open_container(c, &seq);

	if (st == NPU_OK && count)
		*count = seq.count;
	return st;
}

NPU_API npu_status npu_sequence_item(const struct npu_host_tensor *c, size_t index,
				     struct npu_host_tensor *item)
{
	struct npu_tensor t;
	struct npu_seq seq;
	npu_status st = open_container(c, &seq);

	if (st != NPU_OK)
		return st;
	if (!item || index >= seq.count)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_sequence_item: index %zu of %zu items",
				    index, seq.count);
	npu_seq_item(&seq, index, &t);
	memset(item, 0, sizeof(*item));
	item->dtype = (enum npu_data_type)t.dtype;
	item->rank = t.shape.rank;
	memcpy(item->dims, t.shape.dims, sizeof(item->dims));
	item->data = t.data;
	item->nbytes = t.nbytes;
	return NPU_OK;
}
