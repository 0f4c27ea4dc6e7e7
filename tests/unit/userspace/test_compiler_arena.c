// SPDX-License-Identifier: MIT
/* The arena planner: no two live tensors overlap; peak near the bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "compiler/arena.h"

static void assert_plan_valid(const struct npu_arena_item *it, size_t n,
			      const struct npu_arena_stats *st, uint64_t align)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (!it[i].size)
			continue;
		assert_int_equal(it[i].offset % align, 0);
		assert_true(it[i].offset + it[i].size <= st->arena_bytes);
		for (j = i + 1; j < n; j++) {
			bool live_together = it[i].first_step <= it[j].last_step &&
					     it[j].first_step <= it[i].last_step;
			bool disjoint = it[i].offset + it[i].size <= it[j].offset ||
					it[j].offset + it[j].size <= it[i].offset;

			if (it[j].size && live_together)
				assert_true(disjoint);
		}
	}
	assert_true(st->lower_bound <= st->arena_bytes);
	assert_true(st->arena_bytes <= st->sum_bytes);
}

/* A chain a -> b -> c -> d: only neighbours are live together. */
static void test_chain_reuses_memory(void **state)
{
	struct npu_arena_item it[4] = {
		{ .size = 1000, .first_step = 0, .last_step = 1 },
		{ .size = 1000, .first_step = 1, .last_step = 2 },
		{ .size = 1000, .first_step = 2, .last_step = 3 },
		{ .size = 1000, .first_step = 3, .last_step = 4 },
	};
	struct npu_arena_stats st;

	(void)state;
	assert_int_equal(npu_arena_layout(it, 4, 64, &st), 0);
	assert_plan_valid(it, 4, &st, 64);
	assert_int_equal(st.sum_bytes, 4 * 1024);
	assert_int_equal(st.lower_bound, 2 * 1024);
	assert_int_equal(st.arena_bytes, 2 * 1024);
}

static void test_random_lifetimes_never_overlap(void **state)
{
	struct npu_arena_item it[200];
	struct npu_arena_stats st;
	uint64_t seed = 11;
	size_t i;

	(void)state;
	for (i = 0; i < 200; i++) {
		uint32_t a, b;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		a = (uint32_t)(seed >> 33) % 100;
		b = a + (uint32_t)(seed >> 20) % 10;
		it[i].first_step = a;
		it[i].last_step = b;
		it[i].size = (seed >> 40) % 100000;	/* some are 0: unplaced */
	}
	assert_int_equal(npu_arena_layout(it, 200, 64, &st), 0);
	assert_plan_valid(it, 200, &st, 64);
	/* Greedy-by-size is within 1.5x of the bound on such inputs. */
	assert_true(st.arena_bytes * 2 <= st.lower_bound * 3);
}

static void test_empty_plan(void **state)
{
	struct npu_arena_stats st;

	(void)state;
	assert_int_equal(npu_arena_layout(NULL, 0, 64, &st), 0);
	assert_int_equal(st.arena_bytes, 0);
	assert_int_equal(st.lower_bound, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_reuses_memory),
		cmocka_unit_test(test_random_lifetimes_never_overlap),
		cmocka_unit_test(test_empty_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
