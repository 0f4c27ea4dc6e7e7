// SPDX-License-Identifier: MIT
/* Relocatable command streams (reloc.h). */
#include "compiler/reloc.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "npu_isa.h"

/* Record the address field at 'at' (bytes into the stream), checking its region. */
static npu_status add_reloc(const uint8_t *stream, size_t at, size_t insn,
			    const uint64_t size_of[NPU_RELOC_REGIONS], const char *what,
			    struct npu_reloc **out, size_t *count, size_t *cap,
			    struct npu_error *err)
{
	uint64_t va;
	uint32_t r;

	memcpy(&va, stream + at, sizeof(va));
	for (r = 0; r < NPU_RELOC_REGIONS; r++)
		if (va >= NPU_RELOC_BASE(r) && va - NPU_RELOC_BASE(r) < NPU_RELOC_SPAN)
			break;
	if (r == NPU_RELOC_REGIONS || va - NPU_RELOC_BASE(r) >= size_of[r])
		return npu_error_set(err, NPU_ERR_MODEL,
				     "%s: instruction %zu addresses 0x%llx, outside its buffers",
				     what, insn, (unsigned long long)va);
	if (*count == *cap) {
		size_t n = *cap ? *cap * 2 : 64;
		struct npu_reloc *grown = realloc(*out, n * sizeof(*grown));

		if (!grown)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "%s: out of memory", what);
		*out = grown;
		*cap = n;
	}
	(*out)[*count].offset = (uint32_t)at;
	(*out)[(*count)++].region = r;
	return NPU_OK;
}

npu_status npu_reloc_scan(const uint8_t *stream, size_t size,
			  const uint64_t size_of[NPU_RELOC_REGIONS], const char *what,
			  struct npu_reloc **out, size_t *count, struct npu_error *err)
{
	size_t at = sizeof(struct npu_cs_header), insn = 0, cap = 0;
	npu_status st = NPU_OK;

	*out = NULL;
	*count = 0;
	if (size < at || size > NPU_CS_MAX_SIZE)
		return npu_error_set(err, NPU_ERR_MODEL, "%s: a command stream of %zu bytes",
				     what, size);
	while (at < size && !st) {
		struct npu_insn_header h;

		if (size - at < sizeof(h))
			return npu_error_set(err, NPU_ERR_MODEL,
					     "%s: instruction %zu is cut off", what, insn);
		memcpy(&h, stream + at, sizeof(h));
		if (h.size < sizeof(h) || h.size % NPU_CS_ALIGN || h.size > size - at) {
			st = npu_error_set(err, NPU_ERR_MODEL,
					   "%s: instruction %zu has size %u (%zu bytes left)",
					   what, insn, h.size, size - at);
			break;
		}
		if (h.opcode == NPU_OP_DMA_COPY && h.size == sizeof(struct npu_insn_dma_copy)) {
			struct npu_insn_dma_copy d;

			memcpy(&d, stream + at, sizeof(d));
			if (d.src_space == NPU_SPACE_VA)
				st = add_reloc(stream, at + offsetof(struct npu_insn_dma_copy, src),
					       insn, size_of, what, out, count, &cap, err);
			if (!st && d.dst_space == NPU_SPACE_VA)
				st = add_reloc(stream, at + offsetof(struct npu_insn_dma_copy, dst),
					       insn, size_of, what, out, count, &cap, err);
		} else if (h.opcode == NPU_OP_DMA_FILL &&
			   h.size == sizeof(struct npu_insn_dma_fill)) {
			struct npu_insn_dma_fill d;

			memcpy(&d, stream + at, sizeof(d));
			if (d.dst_space == NPU_SPACE_VA)
				st = add_reloc(stream, at + offsetof(struct npu_insn_dma_fill, dst),
					       insn, size_of, what, out, count, &cap, err);
		} else if (h.opcode == NPU_OP_TIMESTAMP &&
			   h.size == sizeof(struct npu_insn_timestamp)) {
			st = add_reloc(stream, at + offsetof(struct npu_insn_timestamp, va),
				       insn, size_of, what, out, count, &cap, err);
		}
		at += h.size;
		insn++;
	}
	if (st) {
		free(*out);
		*out = NULL;
		*count = 0;
	}
	return st;
}

void npu_reloc_apply(uint8_t *stream, const struct npu_reloc *relocs, size_t count,
		     const uint64_t base[NPU_RELOC_REGIONS])
{
	size_t i;

	for (i = 0; i < count; i++) {
		uint64_t va;

		memcpy(&va, stream + relocs[i].offset, sizeof(va));
		va = va - NPU_RELOC_BASE(relocs[i].region) + base[relocs[i].region];
		memcpy(stream + relocs[i].offset, &va, sizeof(va));
	}
}
