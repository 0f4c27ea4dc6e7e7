/* SPDX-License-Identifier: MIT */
/*
 * cpu_vec_body.h - row kernels written once over a small vector vocabulary
 * and included by cpu_vec.c once per ISA, which defines beforehand:
 *   NPU_V_FN(name)  name with the ISA suffix    NPU_V_TARGET  attribute
 *   V / VL          vector type and lane count
 *   V_LOAD(p) V_STORE(p, v) V_SET1(f) V_ADD V_SUB V_MUL V_DIV
 *   V_FMA(a, b, c) = a * b + c
 *   V_MAX(a, b) / V_MIN(a, b): a > b ? a : b (a NaN b is passed on)
 *   V_ROUND(v)      to nearest integer, as float
 *   V_LDEXP(v, n)   v * 2^n, n an integral float in [-150, 128]
 *   V_SEL_GT(a, b, x, y)  a > b ? x : y, per lane
 *   V_LOAD_S2(p)    lanes p[0], p[2], ...; reads p[0 .. 2 * VL - 1]
 *   V_GATHER(p, s)  lanes p[0], p[s], ...
 */

/*
 * exp(x): Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, then the
 * Cephes degree-6 polynomial; about 1-2 ulp over the whole range.
 */
NPU_V_TARGET static inline V NPU_V_FN(exp_v)(V x)
{
	V xc = V_MIN(V_SET1(88.72283935546875f), V_MAX(V_SET1(-104.0f), x));
	V n = V_ROUND(V_MUL(xc, V_SET1(1.44269504088896341f)));
	V r = V_FMA(n, V_SET1(-0.693359375f), xc);
	V p;

	r = V_FMA(n, V_SET1(2.12194440e-4f), r);
	p = V_SET1(1.9875691500e-4f);
	p = V_FMA(p, r, V_SET1(1.3981999507e-3f));
	p = V_FMA(p, r, V_SET1(8.3334519073e-3f));
	p = V_FMA(p, r, V_SET1(4.1665795894e-2f));
	p = V_FMA(p, r, V_SET1(1.6666665459e-1f));
	p = V_FMA(p, r, V_SET1(5.0000001201e-1f));
	p = V_FMA(V_MUL(p, r), r, V_ADD(r, V_SET1(1.0f)));
	p = V_LDEXP(p, n);
	/* Past the clamp: the true result overflows. */
	return V_SEL_GT(x, V_SET1(88.72283935546875f), V_SET1(HUGE_VALF), p);
}

NPU_V_TARGET static inline V NPU_V_FN(act_v)(const struct npu_cpu_act_params *a,
					     V x)
{
	switch (a->kind) {
	case NPU_CPU_ACT_RELU:
		return V_MAX(V_SET1(0.0f), x);
	case NPU_CPU_ACT_CLIP:
		return V_MIN(V_SET1(a->act_max), V_MAX(V_SET1(a->act_min), x));
	case NPU_CPU_ACT_LEAKY_RELU:
		return V_SEL_GT(V_SET1(0.0f), x, V_MUL(V_SET1(a->alpha), x), x);
	case NPU_CPU_ACT_HARD_SIGMOID:
		return V_MIN(V_SET1(1.0f), V_MAX(V_SET1(0.0f),
			V_FMA(V_SET1(a->alpha), x, V_SET1(a->beta))));
	case NPU_CPU_ACT_HARD_SWISH:
		return V_MUL(x, V_MIN(V_SET1(1.0f), V_MAX(V_SET1(0.0f),
			V_FMA(V_SET1(1.0f / 6.0f), x, V_SET1(0.5f)))));
	case NPU_CPU_ACT_SIGMOID:
		return V_DIV(V_SET1(1.0f), V_ADD(V_SET1(1.0f),
			NPU_V_FN(exp_v)(V_SUB(V_SET1(0.0f), x))));
	default:
		return x;
	}
}

NPU_V_TARGET static void NPU_V_FN(act_row)(const struct npu_cpu_act_params *a,
					   float bias, const float *x, float *y,
					   size_t n)
{
	V vb = V_SET1(bias);
	size_t i = 0;

	/* One loop per kind keeps the switch out of the hot loop. */
#define NPU_ACT_LOOP(kind)						\
	case kind:							\
		for (; i + VL <= n; i += VL)				\
			V_STORE(y + i, NPU_V_FN(act_v)(a,		\
					V_ADD(V_LOAD(x + i), vb)));	\
		break;
	switch (a->kind) {
	NPU_ACT_LOOP(NPU_CPU_ACT_RELU)
	NPU_ACT_LOOP(NPU_CPU_ACT_CLIP)
	NPU_ACT_LOOP(NPU_CPU_ACT_LEAKY_RELU)
	NPU_ACT_LOOP(NPU_CPU_ACT_HARD_SIGMOID)
	NPU_ACT_LOOP(NPU_CPU_ACT_HARD_SWISH)
	NPU_ACT_LOOP(NPU_CPU_ACT_SIGMOID)
	default:
		for (; i + VL <= n; i += VL)
			V_STORE(y + i, V_ADD(V_LOAD(x + i), vb));
		break;
	}
#undef NPU_ACT_LOOP
	if (i < n) {
		float tmp[VL] = { 0 };

		memcpy(tmp, x + i, (n - i) * sizeof(float));
		V_STORE(tmp, NPU_V_FN(act_v)(a, V_ADD(V_LOAD(tmp), vb)));
		memcpy(y + i, tmp, (n - i) * sizeof(float));
	}
}

NPU_V_TARGET static void NPU_V_FN(exp_row)(const float *x, float *y, size_t n)
{
	size_t i = 0;

	for (; i + VL <= n; i += VL)
		V_STORE(y + i, NPU_V_FN(exp_v)(V_LOAD(x + i)));
	if (i < n) {
		float tmp[VL] = { 0 };

		memcpy(tmp, x + i, (n - i) * sizeof(float));
		V_STORE(tmp, NPU_V_FN(exp_v)(V_LOAD(tmp)));
		memcpy(y + i, tmp, (n - i) * sizeof(float));
	}
}

NPU_V_TARGET static void NPU_V_FN(fma_row)(float *y, const float *x,
					   size_t stride, float w, size_t n)
{
	V vw = V_SET1(w);
	size_t i = 0;

	if (stride == 1) {
		for (; i + VL <= n; i += VL)
			V_STORE(y + i, V_FMA(vw, V_LOAD(x + i), V_LOAD(y + i)));
	} else if (stride == 2) {
		/* i + VL < n: the pair load's last lane stays in the row. */
		for (; i + VL < n; i += VL)
			V_STORE(y + i, V_FMA(vw, V_LOAD_S2(x + 2 * i),
					     V_LOAD(y + i)));
	} else {
		for (; i + VL <= n; i += VL)
			V_STORE(y + i, V_FMA(vw, V_GATHER(x + i * stride, stride),
					     V_LOAD(y + i)));
	}
	for (; i < n; i++)
		y[i] += w * x[i * stride];
}

NPU_V_TARGET static void NPU_V_FN(max_row)(float *y, const float *x,
					   size_t stride, size_t n)
{
	size_t i = 0;

	/* max(x, y): a NaN input does not win, as in ONNX Runtime. */
	if (stride == 1) {
		for (; i + VL <= n; i += VL)
			V_STORE(y + i, V_MAX(V_LOAD(x + i), V_LOAD(y + i)));
	} else if (stride == 2) {
		for (; i + VL < n; i += VL)
			V_STORE(y + i, V_MAX(V_LOAD_S2(x + 2 * i),
					     V_LOAD(y + i)));
	} else {
		for (; i + VL <= n; i += VL)
			V_STORE(y + i, V_MAX(V_GATHER(x + i * stride, stride),
					     V_LOAD(y + i)));
	}
	for (; i < n; i++)
		y[i] = x[i * stride] > y[i] ? x[i * stride] : y[i];
}

/* y[i] = a[i * sa] op b[i * sb], sa / sb in {0, 1}; y may alias a or b. */
NPU_V_TARGET static void NPU_V_FN(binary_row)(enum npu_vec_binop op,
					      const float *a, size_t sa,
					      const float *b, size_t sb,
					      float *y, size_t n)
{
	size_t i = 0;

#define NPU_BIN_LOOP(OPV, LA, LB)					\
	for (; i + VL <= n; i += VL)					\
		V_STORE(y + i, OPV(LA, LB));
#define NPU_BIN_CASES(OPV)						\
	if (sa && sb) {							\
		NPU_BIN_LOOP(OPV, V_LOAD(a + i), V_LOAD(b + i))		\
	} else if (sa) {						\
		V vb = V_SET1(b[0]);					\
		NPU_BIN_LOOP(OPV, V_LOAD(a + i), vb)			\
	} else if (sb) {						\
		V va = V_SET1(a[0]);					\
		NPU_BIN_LOOP(OPV, va, V_LOAD(b + i))			\
	}
	switch (op) {
	case NPU_VEC_ADD: NPU_BIN_CASES(V_ADD) break;
	case NPU_VEC_SUB: NPU_BIN_CASES(V_SUB) break;
	case NPU_VEC_MUL: NPU_BIN_CASES(V_MUL) break;
	case NPU_VEC_DIV: NPU_BIN_CASES(V_DIV) break;
	}
#undef NPU_BIN_CASES
#undef NPU_BIN_LOOP
	/* The tail, and the all-scalar case, one element at a time. */
	for (; i < n; i++) {
		float x = a[i * sa], z = b[i * sb];

		switch (op) {
		case NPU_VEC_ADD: y[i] = x + z; break;
		case NPU_VEC_SUB: y[i] = x - z; break;
		case NPU_VEC_MUL: y[i] = x * z; break;
		case NPU_VEC_DIV: y[i] = x / z; break;
		}
	}
}

/* y[i] = a * x[i] + b (one rounding where V_FMA is fused) */
NPU_V_TARGET static void NPU_V_FN(axpb_row)(const float *x, float *y,
					    size_t n, float a, float b)
{
	V va = V_SET1(a), vb = V_SET1(b);
	size_t i = 0;

	for (; i + VL <= n; i += VL)
		V_STORE(y + i, V_FMA(va, V_LOAD(x + i), vb));
	for (; i < n; i++)
		y[i] = a * x[i] + b;
}

/* The sum of x[0 .. n): four vector accumulators, then across lanes. */
NPU_V_TARGET static float NPU_V_FN(sum_row)(const float *x, size_t n)
{
	V s0 = V_SET1(0.0f), s1 = s0, s2 = s0, s3 = s0;
	float lanes[VL], acc = 0.0f;
	size_t i = 0, l;

	for (; i + 4 * VL <= n; i += 4 * VL) {
		s0 = V_ADD(s0, V_LOAD(x + i));
		s1 = V_ADD(s1, V_LOAD(x + i + VL));
		s2 = V_ADD(s2, V_LOAD(x + i + 2 * VL));
		s3 = V_ADD(s3, V_LOAD(x + i + 3 * VL));
	}
	for (; i + VL <= n; i += VL)
		s0 = V_ADD(s0, V_LOAD(x + i));
	V_STORE(lanes, V_ADD(V_ADD(s0, s1), V_ADD(s2, s3)));
	for (l = 0; l < VL; l++)
		acc += lanes[l];
	for (; i < n; i++)
		acc += x[i];
	return acc;
}

/*
 * y[i] = bias + sum_t w[t] * src[t][i]: a depthwise output row from its
 * taps' input rows, four vectors of outputs kept in registers over all
 * taps (one store per output instead of one per tap).
 */
NPU_V_TARGET static void NPU_V_FN(dw_taps_row)(const float *const *src,
					       const float *w, size_t taps,
					       float bias, float *y, size_t n)
{
	size_t i = 0, t;

	for (; i + 4 * VL <= n; i += 4 * VL) {
		V a0 = V_SET1(bias), a1 = a0, a2 = a0, a3 = a0;

		for (t = 0; t < taps; t++) {
			V wv = V_SET1(w[t]);
			const float *s = src[t] + i;

			a0 = V_FMA(wv, V_LOAD(s), a0);
			a1 = V_FMA(wv, V_LOAD(s + VL), a1);
			a2 = V_FMA(wv, V_LOAD(s + 2 * VL), a2);
			a3 = V_FMA(wv, V_LOAD(s + 3 * VL), a3);
		}
		V_STORE(y + i, a0);
		V_STORE(y + i + VL, a1);
		V_STORE(y + i + 2 * VL, a2);
		V_STORE(y + i + 3 * VL, a3);
	}
	for (; i + VL <= n; i += VL) {
		V a0 = V_SET1(bias);

		for (t = 0; t < taps; t++)
			a0 = V_FMA(V_SET1(w[t]), V_LOAD(src[t] + i), a0);
		V_STORE(y + i, a0);
	}
	for (; i < n; i++) {
		float acc = bias;

		for (t = 0; t < taps; t++)
			acc += w[t] * src[t][i];
		y[i] = acc;
	}
}

const struct npu_vec_ops NPU_V_FN(npu_vec_ops) = {
	.dw_taps = NPU_V_FN(dw_taps_row),
	.axpb = NPU_V_FN(axpb_row),
	.sum = NPU_V_FN(sum_row),
	.binary = NPU_V_FN(binary_row),
	.act = NPU_V_FN(act_row),
	.exp = NPU_V_FN(exp_row),
	.fma_row = NPU_V_FN(fma_row),
	.max_row = NPU_V_FN(max_row),
};
