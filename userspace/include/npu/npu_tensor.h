/* SPDX-License-Identifier: MIT */
/*
 * npu_tensor.h - tensors as applications hand them to the library and get
 * them back (struct npu_host_tensor, frozen layout), strings, sequences and
 * optionals packed in one buffer, and tensor files (.npy, .pb).
 */
#ifndef NPU_TENSOR_H
#define NPU_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* memset in the *_init() macros */

#include "npu/npu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tensors ------------------------------------------------------------ */

#define NPU_MODEL_MAX_RANK 8

/* Element types; the values are ONNX's TensorProto.DataType. */
enum npu_data_type {
	NPU_TYPE_UNDEFINED = 0,
	NPU_TYPE_FLOAT = 1,
	NPU_TYPE_UINT8 = 2,
	NPU_TYPE_INT8 = 3,
	NPU_TYPE_UINT16 = 4,
	NPU_TYPE_INT16 = 5,
	NPU_TYPE_INT32 = 6,
	NPU_TYPE_INT64 = 7,
	NPU_TYPE_STRING = 8,	/* one packed buffer per tensor (below) */
	NPU_TYPE_BOOL = 9,
	NPU_TYPE_FLOAT16 = 10,
	NPU_TYPE_DOUBLE = 11,
	NPU_TYPE_UINT32 = 12,
	NPU_TYPE_UINT64 = 13,
	NPU_TYPE_BFLOAT16 = 16,
	/* Not element types: ONNX containers, one packed buffer each (below). */
	NPU_TYPE_SEQUENCE = 1000,
	NPU_TYPE_OPTIONAL = 1001,	/* 0 items (None) or 1 */
};

/* Bytes per element (0 for undefined) and a name ("float", "int64"). */
NPU_API size_t npu_data_type_size(enum npu_data_type type);
NPU_API const char *npu_data_type_name(enum npu_data_type type);

/* What a model input or output looks like (frozen layout). */
struct npu_tensor_info {
	const char *name;
	enum npu_data_type dtype;
	int rank;		/* -1: unknown rank */
	int64_t dims[NPU_MODEL_MAX_RANK];	/* -1: not fixed */
	const char *dim_names[NPU_MODEL_MAX_RANK];	/* symbolic name or NULL */
};

/*
 * A dense, C-order tensor in host memory (frozen layout). As an input,
 * 'name' picks the model input (NULL: by position); to ask for a plan only
 * name, rank and dims are read.
 */
struct npu_host_tensor {
	const char *name;
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
	void *data;
	size_t nbytes;
};

/*
 * ONNX sequences and optionals travel as one host tensor of dtype
 * NPU_TYPE_SEQUENCE or NPU_TYPE_OPTIONAL, rank 1, dims[0] = nbytes: a
 * self-contained buffer these functions write and read (items may be
 * containers themselves). A container from a session output is valid as
 * long as the output is.
 */
NPU_API size_t npu_sequence_bytes(const struct npu_host_tensor *items, size_t count);
/* Pack items into buf (npu_sequence_bytes() of them); *out describes it. */
NPU_API npu_status npu_sequence_pack(enum npu_data_type kind,
				     const struct npu_host_tensor *items, size_t count,
				     void *buf, size_t size, struct npu_host_tensor *out);
NPU_API npu_status npu_sequence_length(const struct npu_host_tensor *container,
				       size_t *count);
/* Item 'index' as a view into the container (data not copied). */
NPU_API npu_status npu_sequence_item(const struct npu_host_tensor *container, size_t index,
				     struct npu_host_tensor *item);

/*
 * A string tensor is a host tensor of dtype NPU_TYPE_STRING whose rank and
 * dims are its shape and whose data is one self-contained buffer of
 * nbytes holding all its strings (UTF-8 or any bytes; lengths are
 * explicit). These functions write and read it.
 */
NPU_API size_t npu_string_tensor_bytes(const size_t *lengths, size_t count);
/*
 * Pack 'count' strings (strings[i] of lengths[i] bytes) into buf
 * (npu_string_tensor_bytes() of them). count must equal the element count
 * of the shape the tensor is given.
 */
NPU_API npu_status npu_string_tensor_pack(const char *const *strings, const size_t *lengths,
					  size_t count, void *buf, size_t size);
/* String 'index' of t as a view into its buffer (not NUL-terminated). */
NPU_API npu_status npu_string_tensor_get(const struct npu_host_tensor *t, size_t index,
					 const char **str, size_t *length);

/* ---- Tensor files (API 1.2) ---------------------------------------------- */

/*
 * Read a tensor from a file: a serialized ONNX TensorProto when the path
 * ends in ".pb", otherwise a NumPy .npy file (format 1.0 to 3.0,
 * little-endian <f4 <f8 <f2 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1, C order;
 * Fortran order and big-endian data are refused). *out then holds the
 * tensor in memory the library allocated: data, and name (the
 * TensorProto's name, NULL for .npy). Release it with
 * npu_host_tensor_free(). Errors (npu_last_error()) name the file and
 * what is wrong with it.
 */
NPU_API npu_status npu_tensor_file_read(const char *path, struct npu_host_tensor *out);
/*
 * Write t as a .npy file (format 1.0). nbytes must match the dims and the
 * element type; strings, sequences and optionals are refused.
 */
NPU_API npu_status npu_tensor_file_write_npy(const char *path, const struct npu_host_tensor *t);
/* Free what npu_tensor_file_read() allocated and zero *t; NULL is a no-op. */
NPU_API void npu_host_tensor_free(struct npu_host_tensor *t);

#ifdef __cplusplus
}
#endif

#endif /* NPU_TENSOR_H */
