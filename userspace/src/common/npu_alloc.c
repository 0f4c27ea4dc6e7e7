// SPDX-License-Identifier: MIT
/* Tensor memory (npu_alloc.h). */
#include "common/npu_alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static size_t physical_memory(void)
{
	static atomic_size_t cached;
	size_t bytes = atomic_load_explicit(&cached, memory_order_relaxed);

	if (!bytes) {
		long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

		bytes = pages > 0 && page > 0 && (uint64_t)pages <= SIZE_MAX / (uint64_t)page
				? (size_t)pages * (size_t)page
				: SIZE_MAX / 2;
		atomic_store_explicit(&cached, bytes, memory_order_relaxed);
	}
	return bytes;
}

void *npu_alloc_aligned(size_t bytes)
{
	if (bytes > physical_memory() || bytes > SIZE_MAX - 63)
		return NULL;
	return aligned_alloc(64, bytes ? (bytes + 63) & ~(size_t)63 : 64);
}
