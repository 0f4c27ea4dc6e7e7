/* SPDX-License-Identifier: MIT */
/*
 * npu_seq.h - ONNX sequences and optionals as values (internal).
 *
 * A value of dtype NPU_DTYPE_SEQUENCE or NPU_DTYPE_OPTIONAL is one
 * self-contained byte buffer (its shape is [bytes]), so the runtime
 * allocates, pools, copies and carries it through loops like a tensor:
 *
 *   header   struct npu_seq_header (magic, kind, count, element type)
 *   items    struct npu_seq_item[count] (dtype, shape, offset, bytes)
 *   data     each item's bytes at its offset, 64-byte aligned
 *
 * An optional is a container of 0 (None) or 1 item. Items may be
 * containers themselves (a sequence in an optional). Every reader checks
 * the whole layout first (npu_seq_open), so a malformed buffer is an
 * error, never an out-of-bounds read.
 */
#ifndef NPU_SEQ_H
#define NPU_SEQ_H

#include <stdint.h>

#include "graph/npu_ir.h"

#define NPU_SEQ_MAGIC 0x5153504eu	/* "NPSQ" */

struct npu_seq_header {
	uint32_t magic;
	uint32_t kind;		/* NPU_DTYPE_SEQUENCE or NPU_DTYPE_OPTIONAL */
	uint32_t count;
	int32_t elem_dtype;	/* of the items; NPU_DTYPE_UNDEFINED if unknown */
};

struct npu_seq_item {
	int32_t dtype;
	int32_t rank;
	int64_t dims[NPU_MAX_RANK];
	uint64_t offset;	/* from the start of the buffer */
	uint64_t nbytes;
};

/* A checked view of a container value. */
struct npu_seq {
	enum npu_dtype kind;
	enum npu_dtype elem_dtype;
	size_t count;
	const struct npu_seq_item *items;
	const uint8_t *base;
};

/* Check t's layout (kind, bounds, sizes) and describe it. */
npu_status npu_seq_open(const struct npu_tensor *t, struct npu_seq *seq,
			struct npu_error *err);
/* Item i as a tensor view into the container (data read-only). */
void npu_seq_item(const struct npu_seq *seq, size_t i, struct npu_tensor *out);
/* The header and item table of 'count' items, and an item's share, in bytes. */
size_t npu_seq_table_bytes(size_t count);
size_t npu_seq_align(size_t nbytes);
/* Bytes a container of these items needs. */
size_t npu_seq_bytes(const struct npu_tensor *const *items, size_t count);
/*
 * Write a container of 'count' items into dst (npu_seq_bytes() of them);
 * the items' dtypes must equal elem_dtype unless it is UNDEFINED.
 */
void npu_seq_pack(enum npu_dtype kind, enum npu_dtype elem_dtype,
		  const struct npu_tensor *const *items, size_t count, void *dst);

#endif /* NPU_SEQ_H */
