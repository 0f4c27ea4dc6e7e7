/* SPDX-License-Identifier: MIT */
/*
 * arena.h - liveness-based placement of tensors in one arena (internal).
 *
 * Each tensor lives from the step that produces it to the last step that
 * reads it (inclusive). Tensors whose lifetimes overlap get disjoint byte
 * ranges; the layout places the largest first at the lowest offset that
 * fits (greedy by size, as TFLite's arena planner does), which is close to
 * the lower bound (the most bytes live at any one step) in practice.
 */
#ifndef NPU_COMPILER_ARENA_H
#define NPU_COMPILER_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct npu_arena_item {
	uint64_t size;		/* bytes (0: not placed) */
	uint32_t first_step;	/* produced */
	uint32_t last_step;	/* last read, >= first_step */
	uint64_t offset;	/* out: byte offset, 'align'-aligned */
};

struct npu_arena_stats {
	uint64_t arena_bytes;	/* the layout's peak: arena size */
	uint64_t sum_bytes;	/* every tensor in its own buffer */
	uint64_t lower_bound;	/* max bytes live at one step */
};

/* Returns 0, or -1 when out of memory. 'align' is a power of two. */
int npu_arena_layout(struct npu_arena_item *items, size_t count, uint64_t align,
		     struct npu_arena_stats *stats);

#endif /* NPU_COMPILER_ARENA_H */
