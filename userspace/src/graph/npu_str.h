/* SPDX-License-Identifier: MIT */
/*
 * npu_str.h - string tensors (internal).
 *
 * A tensor of dtype NPU_DTYPE_STRING has its real shape, but its data is
 * one self-contained buffer whose size (nbytes) depends on the text, not on
 * numel * element size:
 *
 *   u32 magic "NPST", u32 zero, u64 count   (count == numel of the shape)
 *   u64 end[count]   end of string i, in bytes from the start of the text
 *   text             the strings back to back (bytes, not NUL-terminated)
 *
 * Readers check the whole layout first (npu_str_check), so a malformed
 * buffer is an error, never an out-of-bounds read. Fields are read with
 * memcpy: the buffer needs no alignment. The runtime gives string outputs
 * no buffer up front; an op with string outputs allocates each through
 * its npu_op_runtime (cpu_ops.h) once it knows the text's size.
 */
#ifndef NPU_STR_H
#define NPU_STR_H

#include <stddef.h>
#include <stdint.h>

#include "graph/npu_ir.h"

#define NPU_STR_MAGIC 0x5453504eu	/* "NPST" */

/* Bytes of a buffer holding 'count' strings of 'text' bytes in all. */
size_t npu_str_bytes(size_t count, size_t text);
/*
 * Check t (dtype string) holds a valid buffer for its shape; the message
 * names 'what' ("input 'x'") and the defect.
 */
npu_status npu_str_check(const struct npu_tensor *t, const char *what,
			 struct npu_error *err);
/* String i of a checked tensor: its bytes and length. */
const char *npu_str_at(const struct npu_tensor *t, size_t i, size_t *len);
/*
 * Write 'count' strings (s[i] of len[i] bytes) into dst, which has
 * npu_str_bytes(count, sum of len) bytes.
 */
void npu_str_pack(void *dst, const char *const *s, const size_t *len,
		  size_t count);
/* A heap tensor of these strings (npu_tensor_destroy frees it), or NULL. */
struct npu_tensor *npu_str_tensor_create(const struct npu_shape *shape,
					 const char *const *s,
					 const size_t *len);

#endif /* NPU_STR_H */
