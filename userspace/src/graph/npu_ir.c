// SPDX-License-Identifier: MIT
/* npu_ir.c - element types, shapes, tensors and attribute lookup. */
#include "graph/npu_ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/npu_alloc.h"

size_t npu_dtype_size(enum npu_dtype dtype)
{
	switch (dtype) {
	case NPU_DTYPE_FLOAT: return 4;
	case NPU_DTYPE_UINT8: return 1;
	case NPU_DTYPE_INT8: return 1;
	case NPU_DTYPE_UINT16: return 2;
	case NPU_DTYPE_INT16: return 2;
	case NPU_DTYPE_INT32: return 4;
	case NPU_DTYPE_INT64: return 8;
	case NPU_DTYPE_BOOL: return 1;
	case NPU_DTYPE_FLOAT16: return 2;
	case NPU_DTYPE_DOUBLE: return 8;
	case NPU_DTYPE_UINT32: return 4;
	case NPU_DTYPE_UINT64: return 8;
	case NPU_DTYPE_BFLOAT16: return 2;
	case NPU_DTYPE_SEQUENCE:
	case NPU_DTYPE_OPTIONAL:
		return 1;	/* counted in bytes */
	case NPU_DTYPE_STRING:
	case NPU_DTYPE_UNDEFINED:
		break;
	}
	return 0;
}

const char *npu_dtype_name(enum npu_dtype dtype)
{
	switch (dtype) {
	case NPU_DTYPE_UNDEFINED: return "undefined";
	case NPU_DTYPE_FLOAT: return "float";
	case NPU_DTYPE_UINT8: return "uint8";
	case NPU_DTYPE_INT8: return "int8";
	case NPU_DTYPE_UINT16: return "uint16";
	case NPU_DTYPE_INT16: return "int16";
	case NPU_DTYPE_INT32: return "int32";
	case NPU_DTYPE_INT64: return "int64";
	case NPU_DTYPE_STRING: return "string";
	case NPU_DTYPE_BOOL: return "bool";
	case NPU_DTYPE_FLOAT16: return "float16";
	case NPU_DTYPE_DOUBLE: return "double";
	case NPU_DTYPE_UINT32: return "uint32";
	case NPU_DTYPE_UINT64: return "uint64";
	case NPU_DTYPE_BFLOAT16: return "bfloat16";
	case NPU_DTYPE_SEQUENCE: return "sequence";
	case NPU_DTYPE_OPTIONAL: return "optional";
	}
	switch ((int)dtype) {
	case 14: return "complex64";
	case 15: return "complex128";
	}
	return "unknown";
}

int64_t npu_shape_numel(const struct npu_shape *shape)
{
	int64_t n = 1;
	int i;

	if (shape->rank < 0)
		return -1;
	for (i = 0; i < shape->rank; i++) {
		int64_t d = shape->dims[i];

		if (d < 0)
			return -1;
		if (d != 0 && n > INT64_MAX / d)
			return -1;
		n *= d;
	}
	return n;
}

const char *npu_shape_str(const struct npu_shape *shape, char *buf,
			  size_t size)
{
	size_t len = 0;
	int i;

	if (!size)
		return buf;
	buf[0] = '\0';
	if (shape->rank == 0) {
		snprintf(buf, size, "scalar");
		return buf;
	}
	for (i = 0; i < shape->rank && len < size; i++) {
		int n;

		if (shape->dims[i] < 0)
			n = snprintf(buf + len, size - len, "%s?", i ? "x" : "");
		else
			n = snprintf(buf + len, size - len, "%s%lld",
				     i ? "x" : "", (long long)shape->dims[i]);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	return buf;
}

struct npu_tensor *npu_tensor_create(enum npu_dtype dtype,
				     const struct npu_shape *shape)
{
	struct npu_tensor *t;
	int64_t numel = npu_shape_numel(shape);
	size_t esize = npu_dtype_size(dtype);

	if (numel < 0 || !esize || (uint64_t)numel > SIZE_MAX / 2 / esize)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->dtype = dtype;
	t->shape = *shape;
	t->nbytes = (size_t)numel * esize;
	if (t->nbytes) {
		size_t alloc = (t->nbytes + 63) & ~(size_t)63;

		t->data = npu_alloc_aligned(alloc);
		if (!t->data) {
			free(t);
			return NULL;
		}
		memset(t->data, 0, alloc);
	}
	return t;
}

void npu_tensor_destroy(struct npu_tensor *tensor)
{
	if (!tensor)
		return;
	free(tensor->data);
	free(tensor);
}

struct npu_tensor *npu_tensor_dup(const struct npu_tensor *tensor)
{
	struct npu_tensor *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	*t = *tensor;
	t->data = NULL;
	if (tensor->nbytes) {
		t->data = npu_alloc_aligned(tensor->nbytes);
		if (!t->data) {
			free(t);
			return NULL;
		}
		memcpy(t->data, tensor->data, tensor->nbytes);
	}
	return t;
}

const struct npu_attr *npu_node_attr(const struct npu_node *node,
				     const char *name)
{
	size_t i;

	for (i = 0; i < node->num_attrs; i++)
		if (!strcmp(node->attrs[i].name, name))
			return &node->attrs[i];
	return NULL;
}

int64_t npu_node_attr_int_or(const struct npu_node *node, const char *name,
			     int64_t fallback)
{
	const struct npu_attr *a = npu_node_attr(node, name);

	return a && a->type == NPU_ATTR_INT ? a->i : fallback;
}

float npu_node_attr_float_or(const struct npu_node *node, const char *name,
			     float fallback)
{
	const struct npu_attr *a = npu_node_attr(node, name);

	return a && a->type == NPU_ATTR_FLOAT ? a->f : fallback;
}

const char *npu_node_attr_string_or(const struct npu_node *node,
				    const char *name, const char *fallback)
{
	const struct npu_attr *a = npu_node_attr(node, name);

	return a && a->type == NPU_ATTR_STRING && a->s ? a->s : fallback;
}
