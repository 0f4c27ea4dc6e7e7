// SPDX-License-Identifier: MIT
/* npu_string.c - the public face of packed string tensors (graph/npu_str.h). */
#include "runtime/npu_api.h"

#include <stdint.h>
#include <string.h>

#include "graph/npu_str.h"

NPU_API size_t npu_string_tensor_bytes(const size_t *lengths, size_t count)
{
	size_t text = 0, i;

	for (i = 0; lengths && i < count; i++)
		text += lengths[i];
	return npu_str_bytes(count, text);
}

NPU_API npu_status npu_string_tensor_pack(const char *const *strings, const size_t *lengths,
					  size_t count, void *buf, size_t size)
{
	size_t i;

	if (!buf || (count && (!strings || !lengths)))
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_string_tensor_pack: NULL argument");
	for (i = 0; i < count; i++)
		if (lengths[i] && !strings[i])
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "npu_string_tensor_pack: string %zu is NULL with length %zu",
					    i, lengths[i]);
	if (size < npu_string_tensor_bytes(lengths, count))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_string_tensor_pack: %zu bytes, %zu needed", size,
				    npu_string_tensor_bytes(lengths, count));
	npu_str_pack(buf, strings, lengths, count);
	return NPU_OK;
}

NPU_API npu_status npu_string_tensor_get(const struct npu_host_tensor *h, size_t index,
					 const char **str, size_t *length)
{
	struct npu_error err = { 0 };
	struct npu_tensor t = { 0 };
	int64_t n;

	if (!h || !str || !length)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_string_tensor_get: NULL argument");
	if (h->rank < 0 || h->rank > NPU_MAX_RANK)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_string_tensor_get: rank %d", h->rank);
	t.dtype = (enum npu_dtype)h->dtype;
	t.shape.rank = h->rank;
	memcpy(t.shape.dims, h->dims, sizeof(t.shape.dims));
	t.data = h->data;
	t.nbytes = h->nbytes;
	if (npu_str_check(&t, "npu_string_tensor_get", &err) != NPU_OK)
		return npu_api_fail_err(&err);
	n = npu_shape_numel(&t.shape);
	if (index >= (uint64_t)n)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_string_tensor_get: index %zu of %lld strings", index,
				    (long long)n);
	*str = npu_str_at(&t, index, length);
	return NPU_OK;
}
