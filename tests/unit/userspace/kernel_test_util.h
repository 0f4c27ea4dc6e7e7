/* SPDX-License-Identifier: MIT */
/*
 * kernel_test_util.h - what the CPU kernel tests (test_cpu_kernels.c,
 * test_cpu_nchwc.c) share: reproducible random data (xorshift64*, uniform
 * floats in [-1, 1), NaN fills for "was it written" checks) and the
 * direct convolution in double they check against. Test-only, static
 * functions; include after <math.h>, <stddef.h>, <stdint.h> and
 * "cpu_kernels.h".
 */
#ifndef NPU_TEST_KERNEL_TEST_UTIL_H
#define NPU_TEST_KERNEL_TEST_UTIL_H

/*
 * The code path meson asks for (NPU_CPU_ISA=portable|avx2|avx512: the
 * kernels read no environment, the test caps them itself), before any
 * kernel runs. false: not a path name.
 */
static inline bool kernel_test_cap_isa(void)
{
	const char *isa = getenv("NPU_CPU_ISA");

	if (isa && *isa && npu_cpu_kernels_cap_isa(isa)) {
		fprintf(stderr, "NPU_CPU_ISA='%s': expected portable, avx2 or avx512\n", isa);
		return false;
	}
	return true;
}

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

/*
 * Output (b, oc, oh, ow) of the convolution p of x (NCHW) by w (ONNX
 * layout) plus bias, in double; *mag = sum |w x| + |bias|, the scale of
 * the float rounding error.
 */
static inline double conv_ref(const struct npu_conv2d_params *p, const float *x,
			      const float *w, const float *bias, size_t b, size_t oc,
			      size_t oh, size_t ow, double *mag)
{
	size_t mg = p->out_c / p->groups, cg = p->in_c / p->groups;
	size_t g = oc / mg, ci, kh, kw;
	double acc = bias ? bias[oc] : 0.0;

	*mag = fabs(acc);
	for (ci = 0; ci < cg; ci++) {
		size_t c = g * cg + ci;

		for (kh = 0; kh < p->k_h; kh++) {
			ptrdiff_t ih = (ptrdiff_t)(oh * p->stride_h + kh * p->dil_h) -
				       (ptrdiff_t)p->pad_top;

			if (ih < 0 || ih >= (ptrdiff_t)p->in_h)
				continue;
			for (kw = 0; kw < p->k_w; kw++) {
				ptrdiff_t iw = (ptrdiff_t)(ow * p->stride_w + kw * p->dil_w) -
					       (ptrdiff_t)p->pad_left;
				double v;

				if (iw < 0 || iw >= (ptrdiff_t)p->in_w)
					continue;
				v = (double)w[((oc * cg + ci) * p->k_h + kh) * p->k_w + kw] *
				    x[((b * p->in_c + c) * p->in_h + (size_t)ih) * p->in_w +
				      (size_t)iw];
				acc += v;
				*mag += fabs(v);
			}
		}
	}
	return acc;
}

/* Output extent of a conv or pool window over 'in' (pads p0, p1), 0 if none. */
static inline size_t out_extent(size_t in, size_t k, size_t s, size_t d, size_t p0, size_t p1)
{
	size_t span = (k - 1) * d + 1;

	if (in + p0 + p1 < span)
		return 0;
	return (in + p0 + p1 - span) / s + 1;
}

#endif /* NPU_TEST_KERNEL_TEST_UTIL_H */
