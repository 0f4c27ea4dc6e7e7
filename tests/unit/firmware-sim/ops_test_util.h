/* SPDX-License-Identifier: MIT */
/*
 * ops_test_util.h - shared by the test_ops_* suites: a seeded PRNG, SRAM
 * images, operand placement, quant tables that keep outputs in range, and
 * the golden comparison of every available implementation against the
 * reference.
 */
#ifndef OPS_TEST_UTIL_H
#define OPS_TEST_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "npu_ops.h"

static const char *const ops_impls[] = { "portable", "avx2", "avx512vnni" };
#define OPS_NUM_IMPLS	3

static uint64_t ops_rng_state = 0x9e3779b97f4a7c15ull;

static inline void ops_seed(uint64_t seed)
{
	ops_rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
}

static inline uint64_t ops_rand(void)
{
	/* xorshift64*: fast, seeded, the same sequence on every host. */
	ops_rng_state ^= ops_rng_state >> 12;
	ops_rng_state ^= ops_rng_state << 25;
	ops_rng_state ^= ops_rng_state >> 27;
	return ops_rng_state * 0x2545f4914f6cdd1dull;
}

/* Uniform in [lo, hi]. */
static inline int64_t ops_range(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(ops_rand() % (uint64_t)(hi - lo + 1));
}

static inline void ops_fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(ops_rand() >> 56);
}

static inline void ops_put_i32(uint8_t *sram, uint32_t off, int32_t v)
{
	memcpy(sram + off, &v, sizeof(v));
}

/* The SRAM images of one golden run. */
struct ops_sram {
	uint8_t *init;	/* operands as placed */
	uint8_t *ref;	/* after the reference */
	uint8_t *fast;	/* after npu_op_*() of one implementation */
	uint32_t next;	/* bump allocator for operand placement */
};

static inline struct ops_sram *ops_sram_new(void)
{
	struct ops_sram *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->init = malloc(NPU_SRAM_SIZE);
	s->ref = malloc(NPU_SRAM_SIZE);
	s->fast = malloc(NPU_SRAM_SIZE);
	assert_non_null(s->init);
	assert_non_null(s->ref);
	assert_non_null(s->fast);
	ops_fill(s->init, NPU_SRAM_SIZE);
	return s;
}

static inline void ops_sram_free(struct ops_sram *s)
{
	free(s->init);
	free(s->ref);
	free(s->fast);
	free(s);
}

/*
 * Reserves 'len' bytes at a random, usually unaligned offset; returns
 * UINT32_MAX when SRAM is full (the caller shrinks the case).
 */
static inline uint32_t ops_place(struct ops_sram *s, uint64_t len)
{
	uint64_t at = s->next + (uint64_t)ops_range(0, 40);

	if (at + len > NPU_SRAM_SIZE)
		return UINT32_MAX;
	s->next = (uint32_t)(at + len);
	return (uint32_t)at;
}

/* How the per-channel quant tables of a case are drawn. */
enum ops_quant_mode {
	OPS_QUANT_SENSIBLE,	/* outputs spread over the int8 range */
	OPS_QUANT_SHIFT1,	/* shift 1: almost everything saturates */
	OPS_QUANT_SHIFT62,	/* shift 62 with huge multipliers */
	OPS_QUANT_EXTREME_MULT,	/* INT32_MAX / INT32_MIN multipliers */
	OPS_QUANT_NEGATIVE,	/* negative multipliers */
	OPS_QUANT_MODES
};

/*
 * Writes mult[n] then shift[n] at 'quant'; 'k' is the reduction length, so
 * sensible tables scale a typical accumulator to about +-40.
 */
static inline void ops_write_quant(uint8_t *sram, uint32_t quant, uint32_t n,
				   uint32_t k, enum ops_quant_mode mode)
{
	double typical = sqrt((double)k) * 100.0 * 100.0 + 1.0;

	for (uint32_t i = 0; i < n; i++) {
		int32_t mult = (int32_t)ops_range(1 << 30, INT32_MAX);
		int shift = (int)floor(log2((double)mult * typical / 40.0));

		switch (mode) {
		case OPS_QUANT_SENSIBLE:
			break;
		case OPS_QUANT_SHIFT1:
			mult = (int32_t)ops_range(-1000, 1000);
			shift = 1;
			break;
		case OPS_QUANT_SHIFT62:
			mult = ops_rand() & 1 ? INT32_MAX : INT32_MIN;
			shift = 62;
			break;
		case OPS_QUANT_EXTREME_MULT:
			mult = ops_rand() & 1 ? INT32_MAX - (int32_t)ops_range(0, 3) :
			       INT32_MIN + (int32_t)ops_range(0, 3);
			shift = (int)ops_range(30, 62);
			break;
		case OPS_QUANT_NEGATIVE:
			mult = -mult;
			break;
		default:
			break;
		}
		if (shift < 1)
			shift = 1;
		if (shift > 62)
			shift = 62;
		ops_put_i32(sram, quant + 4 * i, mult);
		sram[quant + 4 * n + i] = (uint8_t)shift;
	}
}

/* Counts how many golden outputs were not clamped, to prove cases bite. */
struct ops_tally {
	uint64_t outputs, unclamped;
};

static struct ops_tally ops_tally;

static inline void ops_tally_bytes(const uint8_t *p, size_t n, int lo, int hi)
{
	for (size_t i = 0; i < n; i++) {
		int v = (int8_t)p[i];

		ops_tally.outputs++;
		ops_tally.unclamped += v != lo && v != hi;
	}
}

/*
 * The golden comparison: 'ref' runs on a copy of init, then every
 * implementation the host supports runs 'fast' on a fresh copy; the whole
 * SRAM must match, so stray writes outside the output fail too.
 */
typedef void (*ops_run_fn)(const void *insn, uint8_t *sram);

/*
 * Every implementation also runs on pools of 2 and 3 host threads with
 * every op of two units of work or more split (npu_ops_set_split_min(0)),
 * so the splits are uneven and small ones happen too: the same bytes and
 * the same host MACs as on one thread.
 */
static struct npu_ops_pool *ops_pools[4];

static inline struct npu_ops_pool *ops_test_pool(unsigned int threads)
{
	if (threads < 2)
		return NULL;
	if (!ops_pools[threads]) {
		ops_pools[threads] = npu_ops_pool_create(threads);
		assert_non_null(ops_pools[threads]);
	}
	return ops_pools[threads];
}

static inline void ops_golden(struct ops_sram *s, const void *insn,
			      ops_run_fn ref, ops_run_fn fast, const char *what)
{
	memcpy(s->ref, s->init, NPU_SRAM_SIZE);
	ref(insn, s->ref);
	for (int i = 0; i < OPS_NUM_IMPLS; i++) {
		uint64_t macs1 = 0;

		if (npu_ops_set_impl(ops_impls[i]))
			continue;
		for (unsigned int threads = 1; threads <= 3; threads++) {
			uint64_t macs0 = npu_ops_host_macs(), split = 0;

			if (threads > 1)
				split = npu_ops_set_split_min(0);
			npu_ops_set_pool(ops_test_pool(threads));
			memcpy(s->fast, s->init, NPU_SRAM_SIZE);
			fast(insn, s->fast);
			npu_ops_set_pool(NULL);
			if (threads > 1)
				npu_ops_set_split_min(split);
			if (threads == 1)
				macs1 = npu_ops_host_macs() - macs0;
			else if (npu_ops_host_macs() - macs0 != macs1)
				fail_msg("%s: %s on %u threads counts %llu MACs, on one %llu",
					 what, ops_impls[i], threads,
					 (unsigned long long)(npu_ops_host_macs() - macs0),
					 (unsigned long long)macs1);
			if (memcmp(s->fast, s->ref, NPU_SRAM_SIZE)) {
				size_t at = 0;

				while (s->fast[at] == s->ref[at])
					at++;
				fail_msg("%s: %s on %u thread(s) differs from the reference "
					 "at SRAM 0x%zx (%d vs %d)", what, ops_impls[i],
					 threads, at, (int8_t)s->fast[at],
					 (int8_t)s->ref[at]);
			}
		}
	}
}

/* Prints which implementations the golden tests covered on this host. */
static inline void ops_report_impls(void)
{
	printf("# implementations covered:");
	for (int i = 0; i < OPS_NUM_IMPLS; i++)
		if (!npu_ops_set_impl(ops_impls[i]))
			printf(" %s", ops_impls[i]);
	printf("\n");
}

#endif /* OPS_TEST_UTIL_H */
