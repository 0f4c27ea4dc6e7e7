/* SPDX-License-Identifier: MIT */
/*
 * bytes: BYTES tensors (config TYPE_STRING, engine NPU_TYPE_STRING). The
 * server holds them in Triton's serialized form, each element a 4-byte
 * little-endian length then that many bytes (batcher.h, struct
 * infer_tensor); the engine's string tensors are another packed form
 * (<npu/npu_tensor.h>), converted at the session boundary here.
 */
#ifndef NPU_SERVE_BYTES_H
#define NPU_SERVE_BYTES_H

#include "serve.h"

/*
 * Check that the length prefixes of 'n' bytes tile them exactly and hold
 * 'elems' elements. 'what' names the tensor in the message ("input 'x'").
 * Returns SERVE_OK or SERVE_INVALID.
 */
int bytes_check(const void *data, size_t n, uint64_t elems, const char *what, char *err);

/* Whether every element of a serialized tensor of 'n' bytes is UTF-8 (a JSON string). */
int bytes_utf8(const void *data, size_t n);

/*
 * The serialized elements of 'n' bytes (checked) as the engine's string
 * tensor: *out malloc'd, *out_bytes its size. 'count' elements.
 */
int bytes_to_engine(const void *data, size_t n, size_t count, void **out, size_t *out_bytes,
		    char *err);

/*
 * Elements [first, first + count) of an engine string tensor, serialized:
 * *out malloc'd, *out_bytes its size.
 */
int bytes_from_engine(const struct npu_host_tensor *t, size_t first, size_t count, void **out,
		      size_t *out_bytes, char *err);

#endif /* NPU_SERVE_BYTES_H */
