// SPDX-License-Identifier: MIT
/* npu_onnx_tensor.c - TensorProto -> npu_tensor, with every size checked. */
#include "onnx/npu_onnx_internal.h"
#include "onnx/onnx-data.pb-c.h"
#include "graph/npu_seq.h"
#include "graph/npu_str.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool npu_onnx_dtype_supported(int32_t t)
{
	switch (t) {
	case NPU_DTYPE_FLOAT: case NPU_DTYPE_UINT8: case NPU_DTYPE_INT8:
	case NPU_DTYPE_UINT16: case NPU_DTYPE_INT16: case NPU_DTYPE_INT32:
	case NPU_DTYPE_INT64: case NPU_DTYPE_BOOL: case NPU_DTYPE_FLOAT16:
	case NPU_DTYPE_DOUBLE: case NPU_DTYPE_UINT32: case NPU_DTYPE_UINT64:
	case NPU_DTYPE_BFLOAT16: case NPU_DTYPE_STRING:
		return true;
	}
	return false;
}

/* Name of an ONNX element type, including the ones we do not support. */
const char *npu_onnx_dtype_name(int32_t t)
{
	static const char *const names[] = {
		"undefined", "float", "uint8", "int8", "uint16", "int16",
		"int32", "int64", "string", "bool", "float16", "double",
		"uint32", "uint64", "complex64", "complex128", "bfloat16",
		"float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
		"float8e5m2fnuz", "uint4", "int4",
	};

	if (t >= 0 && (size_t)t < sizeof(names) / sizeof(names[0]))
		return names[t];
	return "unknown";
}

/* Typed-field element count and whether it is the field for 'dtype'. */
static size_t typed_count(const Onnx__TensorProto *tp, int32_t dtype)
{
	switch (dtype) {
	case NPU_DTYPE_FLOAT: return tp->n_float_data;
	case NPU_DTYPE_INT32: case NPU_DTYPE_INT16: case NPU_DTYPE_INT8:
	case NPU_DTYPE_UINT16: case NPU_DTYPE_UINT8: case NPU_DTYPE_BOOL:
	case NPU_DTYPE_FLOAT16: case NPU_DTYPE_BFLOAT16:
		return tp->n_int32_data;
	case NPU_DTYPE_INT64: return tp->n_int64_data;
	case NPU_DTYPE_DOUBLE: return tp->n_double_data;
	case NPU_DTYPE_UINT32: case NPU_DTYPE_UINT64:
		return tp->n_uint64_data;
	}
	return 0;
}

static const char *typed_field(int32_t dtype)
{
	switch (dtype) {
	case NPU_DTYPE_FLOAT: return "float_data";
	case NPU_DTYPE_INT64: return "int64_data";
	case NPU_DTYPE_DOUBLE: return "double_data";
	case NPU_DTYPE_UINT32: case NPU_DTYPE_UINT64: return "uint64_data";
	}
	return "int32_data";
}

/* string_data (raw_data is not used for strings) packed as graph/npu_str.h. */
static npu_status string_from_proto(const Onnx__TensorProto *tp, const char *what,
				    const struct npu_shape *shape, struct npu_tensor **out,
				    struct npu_error *err)
{
	int64_t numel = npu_shape_numel(shape);
	const char **s;
	size_t *len, i;
	char sbuf[160];

	if (tp->has_raw_data)
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: a string tensor keeps its strings in string_data, not raw_data",
				     what);
	if (numel < 0 || (uint64_t)numel != tp->n_string_data)
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: string_data has %zu elements, expected %lld (string %s)", what,
				     tp->n_string_data, (long long)numel,
				     npu_shape_str(shape, sbuf, sizeof(sbuf)));
	s = calloc(tp->n_string_data + 1, sizeof(*s));
	len = calloc(tp->n_string_data + 1, sizeof(*len));
	for (i = 0; s && len && i < tp->n_string_data; i++) {
		s[i] = (const char *)tp->string_data[i].data;
		len[i] = tp->string_data[i].len;
	}
	*out = s && len ? npu_str_tensor_create(shape, s, len) : NULL;
	free(s);
	free(len);
	if (!*out)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory", what);
	return NPU_OK;
}

npu_status npu_onnx_tensor_from_proto(const Onnx__TensorProto *tp,
				      const char *what,
				      struct npu_tensor **out,
				      struct npu_error *err)
{
	struct npu_shape shape = { 0 };
	struct npu_tensor *t;
	size_t i, n, count, esize;
	int32_t dtype;
	int64_t numel;
	char sbuf[160];

	*out = NULL;
	if (tp->n_external_data || (tp->has_data_location &&
	    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
			"%s: external data is not supported (store the tensor in the model file)",
			what);
	if (tp->segment)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: segmented tensors are not supported",
				     what);
	dtype = tp->has_data_type ? tp->data_type : 0;
	if (dtype == NPU_DTYPE_UNDEFINED)
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: no data type", what);
	if (!npu_onnx_dtype_supported(dtype))
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: unsupported type '%s'", what,
				     npu_onnx_dtype_name(dtype));
	if (tp->n_dims > NPU_MAX_RANK)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: rank %zu (at most %d supported)", what,
				     tp->n_dims, NPU_MAX_RANK);
	shape.rank = (int)tp->n_dims;
	for (i = 0; i < tp->n_dims; i++) {
		if (tp->dims[i] < 0)
			return npu_error_set(err, NPU_ERR_MODEL,
					     "%s: dim %zu is negative (%lld)",
					     what, i, (long long)tp->dims[i]);
		shape.dims[i] = tp->dims[i];
	}
	if (dtype == NPU_DTYPE_STRING)
		return string_from_proto(tp, what, &shape, out, err);
	numel = npu_shape_numel(&shape);
	esize = npu_dtype_size((enum npu_dtype)dtype);
	if (numel < 0 || (uint64_t)numel > (1ull << 40) / esize)
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: shape %s is too large", what,
				     npu_shape_str(&shape, sbuf, sizeof(sbuf)));
	n = (size_t)numel;
	count = typed_count(tp, dtype);
	if (tp->has_raw_data) {
		if (tp->raw_data.len != n * esize)
			return npu_error_set(err, NPU_ERR_MODEL,
				"%s: raw_data has %zu bytes, expected %zu (%s %s)",
				what, tp->raw_data.len, n * esize,
				npu_dtype_name((enum npu_dtype)dtype),
				npu_shape_str(&shape, sbuf, sizeof(sbuf)));
	} else if (count != n) {
		return npu_error_set(err, NPU_ERR_MODEL,
			"%s: %s has %zu elements, expected %zu (%s %s)", what,
			typed_field(dtype), count, n,
			npu_dtype_name((enum npu_dtype)dtype),
			npu_shape_str(&shape, sbuf, sizeof(sbuf)));
	}
	t = npu_tensor_create((enum npu_dtype)dtype, &shape);
	if (!t)
		return npu_error_set(err, NPU_ERR_NO_MEMORY,
				     "%s: out of memory (%zu bytes)", what,
				     n * esize);
	if (tp->has_raw_data) {
		if (n)
			memcpy(t->data, tp->raw_data.data, n * esize);
		*out = t;
		return NPU_OK;
	}
	for (i = 0; i < n; i++) {
		switch (dtype) {
		case NPU_DTYPE_FLOAT:
			((float *)t->data)[i] = tp->float_data[i];
			break;
		case NPU_DTYPE_INT32:
			((int32_t *)t->data)[i] = tp->int32_data[i];
			break;
		case NPU_DTYPE_INT16:
			((int16_t *)t->data)[i] = (int16_t)tp->int32_data[i];
			break;
		case NPU_DTYPE_UINT16:
		case NPU_DTYPE_FLOAT16:	/* the raw half bits */
		case NPU_DTYPE_BFLOAT16:
			((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i];
			break;
		case NPU_DTYPE_INT8:
			((int8_t *)t->data)[i] = (int8_t)tp->int32_data[i];
			break;
		case NPU_DTYPE_UINT8:
			((uint8_t *)t->data)[i] = (uint8_t)tp->int32_data[i];
			break;
		case NPU_DTYPE_BOOL:
			((uint8_t *)t->data)[i] = tp->int32_data[i] != 0;
			break;
		case NPU_DTYPE_INT64:
			((int64_t *)t->data)[i] = tp->int64_data[i];
			break;
		case NPU_DTYPE_DOUBLE:
			((double *)t->data)[i] = tp->double_data[i];
			break;
		case NPU_DTYPE_UINT32:
			((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i];
			break;
		case NPU_DTYPE_UINT64:
			((uint64_t *)t->data)[i] = tp->uint64_data[i];
			break;
		}
	}
	*out = t;
	return NPU_OK;
}

npu_status npu_onnx_read_tensor(const void *data, size_t size,
				const char *source, struct npu_tensor **out,
				char **name, struct npu_error *err)
{
	Onnx__TensorProto *tp;
	char what[512];
	npu_status st;

	*out = NULL;
	if (name)
		*name = NULL;
	tp = onnx__tensor_proto__unpack(NULL, size, data);
	if (!tp)
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: not a valid serialized TensorProto",
				     source);
	snprintf(what, sizeof(what), "%s: tensor '%s'", source,
		 tp->name ? tp->name : "");
	st = npu_onnx_tensor_from_proto(tp, what, out, err);
	if (st == NPU_OK && name) {
		*name = strdup(tp->name ? tp->name : "");
		if (!*name) {
			npu_tensor_destroy(*out);
			*out = NULL;
			st = npu_error_set(err, NPU_ERR_NO_MEMORY,
					   "out of memory");
		}
	}
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return st;
}

npu_status npu_onnx_read_tensor_file(const char *path,
				     struct npu_tensor **out, char **name,
				     struct npu_error *err)
{
	void *data;
	size_t size;
	npu_status st = npu_read_file(path, &data, &size, err);

	if (st != NPU_OK)
		return st;
	st = npu_onnx_read_tensor(data, size, path, out, name, err);
	free(data);
	return st;
}

/* ---- Sequences and optionals (onnx-data.proto), packed as graph/npu_seq.h ---- */

#define NPU_ONNX_MAX_NESTING 16

static npu_status seq_from_proto(const Onnx__SequenceProto *sp, const char *what, int depth,
				 struct npu_tensor **out, struct npu_error *err);
static npu_status opt_from_proto(const Onnx__OptionalProto *op, const char *what, int depth,
				 struct npu_tensor **out, struct npu_error *err);

static npu_status pack_items(enum npu_dtype kind, struct npu_tensor **items, size_t count,
			     const char *what, struct npu_tensor **out, struct npu_error *err)
{
	struct npu_shape s = { .rank = 1 };
	size_t i;

	for (i = 1; i < count; i++)
		if (kind == NPU_DTYPE_SEQUENCE && items[i]->dtype != items[0]->dtype)
			return npu_error_set(err, NPU_ERR_MODEL, "%s: item %zu is %s, item 0 %s", what,
					     i, npu_dtype_name(items[i]->dtype),
					     npu_dtype_name(items[0]->dtype));
	s.dims[0] = (int64_t)npu_seq_bytes((const struct npu_tensor *const *)items, count);
	*out = npu_tensor_create(kind, &s);
	if (!*out)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory", what);
	npu_seq_pack(kind, count ? items[0]->dtype : NPU_DTYPE_UNDEFINED,
		     (const struct npu_tensor *const *)items, count, (*out)->data);
	return NPU_OK;
}

static npu_status seq_from_proto(const Onnx__SequenceProto *sp, const char *what, int depth,
				 struct npu_tensor **out, struct npu_error *err)
{
	size_t n = sp->n_tensor_values + sp->n_sequence_values + sp->n_optional_values, i, k = 0;
	struct npu_tensor **items;
	npu_status st = NPU_OK;

	*out = NULL;
	if (depth > NPU_ONNX_MAX_NESTING)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED, "%s: nested more than %d deep", what,
				     NPU_ONNX_MAX_NESTING);
	if (sp->n_sparse_tensor_values || sp->n_map_values)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: sequences of sparse tensors or maps are not supported", what);
	items = calloc(n + 1, sizeof(*items));
	if (!items)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory", what);
	for (i = 0; st == NPU_OK && i < sp->n_tensor_values; i++)
		st = npu_onnx_tensor_from_proto(sp->tensor_values[i], what, &items[k++], err);
	for (i = 0; st == NPU_OK && i < sp->n_sequence_values; i++)
		st = seq_from_proto(sp->sequence_values[i], what, depth + 1, &items[k++], err);
	for (i = 0; st == NPU_OK && i < sp->n_optional_values; i++)
		st = opt_from_proto(sp->optional_values[i], what, depth + 1, &items[k++], err);
	if (st == NPU_OK)
		st = pack_items(NPU_DTYPE_SEQUENCE, items, n, what, out, err);
	for (i = 0; i < n; i++)
		npu_tensor_destroy(items[i]);
	free(items);
	return st;
}

static npu_status opt_from_proto(const Onnx__OptionalProto *op, const char *what, int depth,
				 struct npu_tensor **out, struct npu_error *err)
{
	struct npu_tensor *item = NULL;
	npu_status st = NPU_OK;

	*out = NULL;
	if (depth > NPU_ONNX_MAX_NESTING)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED, "%s: nested more than %d deep", what,
				     NPU_ONNX_MAX_NESTING);
	if (op->sparse_tensor_value || op->map_value)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: optional sparse tensors or maps are not supported", what);
	if (op->tensor_value)
		st = npu_onnx_tensor_from_proto(op->tensor_value, what, &item, err);
	else if (op->sequence_value)
		st = seq_from_proto(op->sequence_value, what, depth + 1, &item, err);
	else if (op->optional_value)
		st = opt_from_proto(op->optional_value, what, depth + 1, &item, err);
	if (st == NPU_OK)
		st = pack_items(NPU_DTYPE_OPTIONAL, &item, item ? 1 : 0, what, out, err);
	npu_tensor_destroy(item);
	return st;
}

npu_status npu_onnx_read_value(const void *data, size_t size, const char *source,
			       enum npu_dtype kind, struct npu_tensor **out, char **name,
			       struct npu_error *err)
{
	char what[512];
	const char *pname = "";
	npu_status st;

	if (kind != NPU_DTYPE_SEQUENCE && kind != NPU_DTYPE_OPTIONAL)
		return npu_onnx_read_tensor(data, size, source, out, name, err);
	*out = NULL;
	if (name)
		*name = NULL;
	if (kind == NPU_DTYPE_SEQUENCE) {
		Onnx__SequenceProto *sp = onnx__sequence_proto__unpack(NULL, size, data);

		if (!sp)
			return npu_error_set(err, NPU_ERR_MODEL, "%s: not a valid serialized SequenceProto",
					     source);
		pname = sp->name ? sp->name : "";
		snprintf(what, sizeof(what), "%s: sequence '%s'", source, pname);
		st = seq_from_proto(sp, what, 0, out, err);
		if (st == NPU_OK && name && !(*name = strdup(pname)))
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		onnx__sequence_proto__free_unpacked(sp, NULL);
	} else {
		Onnx__OptionalProto *op = onnx__optional_proto__unpack(NULL, size, data);

		if (!op)
			return npu_error_set(err, NPU_ERR_MODEL, "%s: not a valid serialized OptionalProto",
					     source);
		pname = op->name ? op->name : "";
		snprintf(what, sizeof(what), "%s: optional '%s'", source, pname);
		st = opt_from_proto(op, what, 0, out, err);
		if (st == NPU_OK && name && !(*name = strdup(pname)))
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		onnx__optional_proto__free_unpacked(op, NULL);
	}
	if (st != NPU_OK) {
		npu_tensor_destroy(*out);
		*out = NULL;
	}
	return st;
}

npu_status npu_onnx_read_value_file(const char *path, enum npu_dtype kind,
				    struct npu_tensor **out, char **name, struct npu_error *err)
{
	void *data;
	size_t size;
	npu_status st = npu_read_file(path, &data, &size, err);

	if (st != NPU_OK)
		return st;
	st = npu_onnx_read_value(data, size, path, kind, out, name, err);
	free(data);
	return st;
}
