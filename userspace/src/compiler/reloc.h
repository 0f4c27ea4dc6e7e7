/* SPDX-License-Identifier: MIT */
/*
 * reloc.h - command streams generated once and placed many times
 * (internal).
 *
 * A segment's stream addresses three device buffers: the session's
 * activation arena, the segment's constants and (when profiling) the
 * timestamp buffer. Code generation runs once per segment at canonical
 * addresses, one region per buffer; each session copies the stream and
 * moves every address by its buffer's delta. A compiled file stores the
 * canonical stream, so loading it generates no code. Addresses are only
 * ever base + offset in generated code (codegen_internal.h), which is what
 * makes the stream relocatable.
 */
#ifndef NPU_COMPILER_RELOC_H
#define NPU_COMPILER_RELOC_H

#include <stddef.h>
#include <stdint.h>

#include "common/npu_error.h"

enum npu_reloc_region {
	NPU_RELOC_ARENA = 0,
	NPU_RELOC_CONSTS = 1,
	NPU_RELOC_PROFILE = 2,
	NPU_RELOC_REGIONS
};

/*
 * Region r starts at NPU_RELOC_BASE(r) and spans at most NPU_RELOC_SPAN
 * bytes: 64 GiB each, inside the device's 39-bit VA space (npu_hw.h).
 */
#define NPU_RELOC_SPAN		(1ull << 36)
#define NPU_RELOC_BASE(r)	(((uint64_t)(r) + 1) << 36)

/* One 64-bit device address field of a stream. */
struct npu_reloc {
	uint32_t offset;	/* bytes into the stream */
	uint32_t region;	/* enum npu_reloc_region */
};

/*
 * Find every device address of a stream generated at the canonical bases:
 * DMA_COPY / DMA_FILL operands in NPU_SPACE_VA and TIMESTAMP targets.
 * Each must fall inside region r's first size[r] bytes. A malformed
 * stream (a size that runs past the end, an address in no region) is
 * NPU_ERR_MODEL naming the instruction and 'what'. *out is malloc'ed.
 */
npu_status npu_reloc_scan(const uint8_t *stream, size_t size,
			  const uint64_t size_of[NPU_RELOC_REGIONS], const char *what,
			  struct npu_reloc **out, size_t *count, struct npu_error *err);

/* Move the addresses of 'stream' (a copy of the canonical one) to 'base'. */
void npu_reloc_apply(uint8_t *stream, const struct npu_reloc *relocs, size_t count,
		     const uint64_t base[NPU_RELOC_REGIONS]);

#endif /* NPU_COMPILER_RELOC_H */
