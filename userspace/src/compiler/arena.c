// SPDX-License-Identifier: MIT
#include "compiler/arena.h"

#include <stdbool.h>
#include <stdlib.h>

static uint64_t align_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) & ~(align - 1);
}

static bool lifetimes_overlap(const struct npu_arena_item *a,
			      const struct npu_arena_item *b)
{
	return a->first_step <= b->last_step && b->first_step <= a->last_step;
}

/* Largest first; ties by earlier birth, so the order is deterministic. */
static int by_size_desc(const void *pa, const void *pb, void *arg)
{
	const struct npu_arena_item *items = arg;
	const struct npu_arena_item *a = &items[*(const size_t *)pa];
	const struct npu_arena_item *b = &items[*(const size_t *)pb];

	if (a->size != b->size)
		return a->size < b->size ? 1 : -1;
	if (a->first_step != b->first_step)
		return a->first_step < b->first_step ? -1 : 1;
	return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

static int by_offset(const void *pa, const void *pb)
{
	const struct npu_arena_item *a = *(const struct npu_arena_item *const *)pa;
	const struct npu_arena_item *b = *(const struct npu_arena_item *const *)pb;

	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

int npu_arena_layout(struct npu_arena_item *items, size_t count, uint64_t align,
		     struct npu_arena_stats *stats)
{
	const struct npu_arena_item **placed = NULL;
	size_t *order = NULL, num_placed = 0, i, j;
	uint32_t max_step = 0, step;
	int rc = -1;

	stats->arena_bytes = stats->sum_bytes = stats->lower_bound = 0;
	order = malloc((count ? count : 1) * sizeof(*order));
	placed = malloc((count ? count : 1) * sizeof(*placed));
	if (!order || !placed)
		goto out;

	for (i = 0; i < count; i++) {
		order[i] = i;
		items[i].offset = 0;
		stats->sum_bytes += align_up(items[i].size, align);
		if (items[i].last_step > max_step)
			max_step = items[i].last_step;
	}
	qsort_r(order, count, sizeof(*order), by_size_desc, items);

	for (i = 0; i < count; i++) {
		struct npu_arena_item *it = &items[order[i]];
		size_t n = 0;
		uint64_t offset = 0;

		if (!it->size)
			continue;
		/* Placed tensors alive at the same time, by offset: first gap wins. */
		for (j = 0; j < num_placed; j++) {
			if (lifetimes_overlap(it, placed[j])) {
				const struct npu_arena_item *tmp = placed[n];

				placed[n++] = placed[j];
				placed[j] = tmp;
			}
		}
		qsort(placed, n, sizeof(*placed), by_offset);
		for (j = 0; j < n; j++) {
			if (placed[j]->offset >= offset + it->size)
				break;
			if (placed[j]->offset + placed[j]->size > offset)
				offset = align_up(placed[j]->offset + placed[j]->size, align);
		}
		it->offset = offset;
		placed[num_placed++] = it;
		if (offset + it->size > stats->arena_bytes)
			stats->arena_bytes = offset + it->size;
	}
	stats->arena_bytes = align_up(stats->arena_bytes, align);

	for (step = 0; step <= max_step && count; step++) {
		uint64_t live = 0;

		for (i = 0; i < count; i++)
			if (items[i].first_step <= step && step <= items[i].last_step)
				live += align_up(items[i].size, align);
		if (live > stats->lower_bound)
			stats->lower_bound = live;
	}
	rc = 0;
out:
	free(order);
	free(placed);
	return rc;
}
