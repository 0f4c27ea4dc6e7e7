/* SPDX-License-Identifier: MIT */
/*
 * kernel_test_rng.h - the reproducible random data of the CPU kernel
 * tests (test_cpu_kernels.c, test_cpu_nchwc.c): xorshift64*, uniform
 * floats in [-1, 1), NaN fills for "was it written" checks. Test-only,
 * static functions; include after <math.h>, <stddef.h> and <stdint.h>.
 */
#ifndef NPU_TEST_KERNEL_TEST_RNG_H
#define NPU_TEST_KERNEL_TEST_RNG_H

struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n). */
static inline size_t rng_below(struct rng *r, size_t n)
{
	return (size_t)(rng_next(r) >> 11) % n;
}

/* Uniform in [-1, 1). */
static inline float rng_float(struct rng *r)
{
	return (float)((double)(rng_next(r) >> 40) / (double)(1ull << 24)) *
	       2.0f - 1.0f;
}

static inline void fill_random(struct rng *r, float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = rng_float(r);
}

static inline void fill_nan(float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = NAN;
}

#endif /* NPU_TEST_KERNEL_TEST_RNG_H */
