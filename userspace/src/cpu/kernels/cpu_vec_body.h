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
 *   V_STORE_ZIP(p, a, b)  p[2 i] = a[i], p[2 i + 1] = b[i] (2 VL floats)
 *   V_LOAD_N(p, n)  lanes p[0 .. n - 1], the rest 0 (0 < n < VL; reads
 *                   nothing past p[n - 1])
 *   V_STORE_N(p, v, n)  p[0 .. n - 1] = the first n lanes of v
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

/*
 * The epilogue of a row: y[i] = post(act(x[i] + bias + res[i])), res
 * NULL: none; post the affine a->post_scale * v + a->post_shift when
 * a->post. x may equal y (res must not, unless it is x).
 */
NPU_V_TARGET static void NPU_V_FN(epi_row)(const struct npu_cpu_act_params *a,
					   float bias, const float *res,
					   const float *x, float *y, size_t n)
{
	V vb = V_SET1(bias), ps = V_SET1(a->post_scale), pb = V_SET1(a->post_shift);
	bool post = a->post;
	size_t i = 0;

	/* One loop per kind keeps the switch out of the hot loop; the
	 * residual / post tests are loop-invariant and predicted. */
#define NPU_ACT_LOOP(kind)						\
	case kind:							\
		for (; i + VL <= n; i += VL) {				\
			V v = V_ADD(V_LOAD(x + i), vb);			\
									\
			if (res)					\
				v = V_ADD(v, V_LOAD(res + i));		\
			v = NPU_V_FN(act_v)(a, v);			\
			if (post)					\
				v = V_FMA(v, ps, pb);			\
			V_STORE(y + i, v);				\
		}							\
		break;
	switch (a->kind) {
	NPU_ACT_LOOP(NPU_CPU_ACT_RELU)
	NPU_ACT_LOOP(NPU_CPU_ACT_CLIP)
	NPU_ACT_LOOP(NPU_CPU_ACT_LEAKY_RELU)
	NPU_ACT_LOOP(NPU_CPU_ACT_HARD_SIGMOID)
	NPU_ACT_LOOP(NPU_CPU_ACT_HARD_SWISH)
	NPU_ACT_LOOP(NPU_CPU_ACT_SIGMOID)
	default:
	NPU_ACT_LOOP(NPU_CPU_ACT_NONE)
	}
#undef NPU_ACT_LOOP
	if (i < n) {
		V v = V_ADD(V_LOAD_N(x + i, n - i), vb);

		if (res)
			v = V_ADD(v, V_LOAD_N(res + i, n - i));
		v = NPU_V_FN(act_v)(a, v);
		if (post)
			v = V_FMA(v, ps, pb);
		V_STORE_N(y + i, v, n - i);
	}
}

NPU_V_TARGET static void NPU_V_FN(act_row)(const struct npu_cpu_act_params *a,
					   float bias, const float *x, float *y,
					   size_t n)
{
	NPU_V_FN(epi_row)(a, bias, NULL, x, y, n);
}

NPU_V_TARGET static void NPU_V_FN(exp_row)(const float *x, float *y, size_t n)
{
	size_t i = 0;

	for (; i + VL <= n; i += VL)
		V_STORE(y + i, NPU_V_FN(exp_v)(V_LOAD(x + i)));
	if (i < n)
		V_STORE_N(y + i, NPU_V_FN(exp_v)(V_LOAD_N(x + i, n - i)), n - i);
}

/*
 * tanh(x), Cephes' tanhf: x + x^3 P(x^2) for |x| < 0.625, else
 * sign(x) (1 - 2 / (exp(2|x|) + 1)); about 2 ulp, +-1 past |x| ~ 9,
 * NaN passed on.
 */
NPU_V_TARGET static inline V NPU_V_FN(tanh_v)(V x)
{
	V ax = V_MAX(x, V_SUB(V_SET1(0.0f), x)), z = V_MUL(x, x), p, big;

	p = V_SET1(-5.70498872745e-3f);
	p = V_FMA(p, z, V_SET1(2.06390887954e-2f));
	p = V_FMA(p, z, V_SET1(-5.37397155531e-2f));
	p = V_FMA(p, z, V_SET1(1.33314422036e-1f));
	p = V_FMA(p, z, V_SET1(-3.33332819422e-1f));
	p = V_FMA(V_MUL(p, z), x, x);
	big = V_SUB(V_SET1(1.0f), V_DIV(V_SET1(2.0f), V_ADD(V_SET1(1.0f),
		NPU_V_FN(exp_v)(V_ADD(ax, ax)))));
	big = V_SEL_GT(V_SET1(0.0f), x, V_SUB(V_SET1(0.0f), big), big);
	return V_SEL_GT(V_SET1(0.625f), ax, p, big);
}

NPU_V_TARGET static void NPU_V_FN(tanh_row)(const float *x, float *y, size_t n)
{
	size_t i = 0;

	for (; i + VL <= n; i += VL)
		V_STORE(y + i, NPU_V_FN(tanh_v)(V_LOAD(x + i)));
	if (i < n)
		V_STORE_N(y + i, NPU_V_FN(tanh_v)(V_LOAD_N(x + i, n - i)), n - i);
}

/*
 * erf(x), N. Juffa's faithfully rounded erff on vectors: x + x P(x^2)
 * for |x| <= 0.927734375, else sign(x) (1 - exp(Q(|x|))); both halves
 * computed, the lane's one selected. Under 1 ulp with a correctly
 * rounded exp, about 2 with exp_v; NaN passed on, +-1 at +-inf.
 */
NPU_V_TARGET static inline V NPU_V_FN(erf_v)(V x)
{
	V ax = V_MAX(x, V_SUB(V_SET1(0.0f), x)), s = V_MUL(x, x), t, r, u, b;

	r = V_SET1(-5.96761703e-4f);
	r = V_FMA(r, s, V_SET1(4.99119423e-3f));
	r = V_FMA(r, s, V_SET1(-2.67681349e-2f));
	r = V_FMA(r, s, V_SET1(1.12819925e-1f));
	r = V_FMA(r, s, V_SET1(-3.76125336e-1f));
	r = V_FMA(r, s, V_SET1(1.28379166e-1f));
	r = V_FMA(r, x, x);
	/* Past 4, erf rounds to 1: the clamp keeps Q finite. */
	t = V_MIN(ax, V_SET1(4.0f));
	b = V_FMA(V_SET1(-1.72853470e-5f), t, V_SET1(3.83197126e-4f));
	u = V_FMA(V_SET1(-3.88396438e-3f), t, V_SET1(2.42546219e-2f));
	b = V_FMA(b, V_MUL(t, t), u);
	b = V_FMA(b, t, V_SET1(-1.06777877e-1f));
	b = V_FMA(b, t, V_SET1(-6.34846687e-1f));
	b = V_FMA(b, t, V_SET1(-1.28717512e-1f));
	b = V_FMA(b, t, V_SUB(V_SET1(0.0f), t));
	b = V_SUB(V_SET1(1.0f), NPU_V_FN(exp_v)(b));
	b = V_SEL_GT(V_SET1(0.0f), x, V_SUB(V_SET1(0.0f), b), b);
	/* A NaN lane is not > the bound: r, which passes it on. */
	return V_SEL_GT(ax, V_SET1(0.927734375f), b, r);
}

NPU_V_TARGET static void NPU_V_FN(erf_row)(const float *x, float *y, size_t n)
{
	size_t i = 0;

	for (; i + VL <= n; i += VL)
		V_STORE(y + i, NPU_V_FN(erf_v)(V_LOAD(x + i)));
	if (i < n)
		V_STORE_N(y + i, NPU_V_FN(erf_v)(V_LOAD_N(x + i, n - i)), n - i);
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

/*
 * A 2x2 stride-2 max-pool output row from input rows x0 and x1: y[j] =
 * the max of x0[2 j], x0[2 j + 1], x1[2 j], x1[2 j + 1], taken in that
 * order from -FLT_MAX as max_row would (a NaN does not win; bitwise
 * the generic path's result). Reads x0 / x1 [0 .. 2 n - 1] only.
 */
NPU_V_TARGET static void NPU_V_FN(max2x2_row)(float *y, const float *x0,
					      const float *x1, size_t n)
{
	size_t j = 0;

	/* The odd taps' pair load reads up to 2 j + 2 VL: inside while
	 * j + VL < n. */
	for (; j + VL < n; j += VL) {
		V m = V_SET1(-FLT_MAX);

		m = V_MAX(V_LOAD_S2(x0 + 2 * j), m);
		m = V_MAX(V_LOAD_S2(x0 + 2 * j + 1), m);
		m = V_MAX(V_LOAD_S2(x1 + 2 * j), m);
		m = V_MAX(V_LOAD_S2(x1 + 2 * j + 1), m);
		V_STORE(y + j, m);
	}
	for (; j < n; j++) {
		float m = -FLT_MAX, v;

		v = x0[2 * j]; m = v > m ? v : m;
		v = x0[2 * j + 1]; m = v > m ? v : m;
		v = x1[2 * j]; m = v > m ? v : m;
		v = x1[2 * j + 1]; m = v > m ? v : m;
		y[j] = m;
	}
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
 * The largest of x[0 .. n) (-inf for n 0); NaN elements are skipped, as
 * fmaxf does: a lane keeps its maximum when x is NaN (V_MAX(x, m) is
 * x > m ? x : m), and four accumulators hide the max latency.
 */
NPU_V_TARGET static float NPU_V_FN(max_reduce)(const float *x, size_t n)
{
	V m0 = V_SET1(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
	float lanes[VL], mx = -INFINITY;
	size_t i = 0, l;

	for (; i + 4 * VL <= n; i += 4 * VL) {
		m0 = V_MAX(V_LOAD(x + i), m0);
		m1 = V_MAX(V_LOAD(x + i + VL), m1);
		m2 = V_MAX(V_LOAD(x + i + 2 * VL), m2);
		m3 = V_MAX(V_LOAD(x + i + 3 * VL), m3);
	}
	for (; i + VL <= n; i += VL)
		m0 = V_MAX(V_LOAD(x + i), m0);
	V_STORE(lanes, V_MAX(V_MAX(m0, m1), V_MAX(m2, m3)));
	for (l = 0; l < VL; l++)
		mx = lanes[l] > mx ? lanes[l] : mx;
	for (; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	return mx;
}

/*
 * y[i] = bias + sum_t w[t] * src[t][i]: a depthwise output row from its
 * taps' input rows, four vectors of outputs kept in registers over all
 * taps (one store per output instead of one per tap). Reads each
 * src[t] up to index n + VL - 2 (the caller's slack past a row's end).
 * Past the four-vector blocks, one vector at a time sums the even and
 * the odd taps in two chains (one chain of 25 dependent FMAs left the
 * core idle for their latency), then adds them. dw_taps2_row below
 * computes every output exactly as this does.
 */
NPU_V_TARGET static inline V NPU_V_FN(dw_taps_vec)(const float *const *src, size_t off,
						   const float *w, size_t taps, float bias)
{
	V a0 = V_SET1(bias), a1 = V_SET1(0.0f);
	size_t t;

	for (t = 0; t + 1 < taps; t += 2) {
		a0 = V_FMA(V_SET1(w[t]), V_LOAD(src[t] + off), a0);
		a1 = V_FMA(V_SET1(w[t + 1]), V_LOAD(src[t + 1] + off), a1);
	}
	if (t < taps)
		a0 = V_FMA(V_SET1(w[t]), V_LOAD(src[t] + off), a0);
	return V_ADD(a0, a1);
}

/*
 * A depthwise output vector's epilogue in registers: + res (NULL: none),
 * then a's activation and post affine (a NULL: none). One pass instead
 * of a second one over each row (epi_row), which on rows of 40 outputs
 * cost half as much as the taps.
 */
NPU_V_TARGET static inline V NPU_V_FN(dw_epi)(const struct npu_cpu_act_params *a,
					      const float *res, V v)
{
	if (res)
		v = V_ADD(v, V_LOAD(res));
	if (a) {
		v = NPU_V_FN(act_v)(a, v);
		if (a->post)
			v = V_FMA(v, V_SET1(a->post_scale), V_SET1(a->post_shift));
	}
	return v;
}

/* The last n (< VL) outputs, the epilogue on whole vectors (the residual
 * row has no slack: read through a copy), lanes past n dropped. */
NPU_V_TARGET static inline void NPU_V_FN(dw_store_tail)(const struct npu_cpu_act_params *a,
							const float *res, float *y, V v,
							size_t n)
{
	float tmp[VL], rt[VL] = { 0 };

	if (res)
		memcpy(rt, res, n * sizeof(float));
	V_STORE(tmp, NPU_V_FN(dw_epi)(a, res ? rt : NULL, v));
	memcpy(y, tmp, n * sizeof(float));
}

NPU_V_TARGET static void NPU_V_FN(dw_taps_row)(const float *const *src,
					       const float *w, size_t taps,
					       float bias,
					       const struct npu_cpu_act_params *a,
					       const float *res, float *y, size_t n)
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
		V_STORE(y + i, NPU_V_FN(dw_epi)(a, res ? res + i : NULL, a0));
		V_STORE(y + i + VL, NPU_V_FN(dw_epi)(a, res ? res + i + VL : NULL, a1));
		V_STORE(y + i + 2 * VL, NPU_V_FN(dw_epi)(a, res ? res + i + 2 * VL : NULL, a2));
		V_STORE(y + i + 3 * VL, NPU_V_FN(dw_epi)(a, res ? res + i + 3 * VL : NULL, a3));
	}
	for (; i + VL <= n; i += VL)
		V_STORE(y + i, NPU_V_FN(dw_epi)(a, res ? res + i : NULL,
						NPU_V_FN(dw_taps_vec)(src, i, w, taps, bias)));
	/* (Rows of 20 or 40 outputs, PP-OCR's 5x5 depthwise, are half tail.) */
	if (i < n)
		NPU_V_FN(dw_store_tail)(a, res ? res + i : NULL, y + i,
					NPU_V_FN(dw_taps_vec)(src, i, w, taps, bias), n - i);
}

/*
 * Two output rows at once, the second's tap t at src[t] + step (and its
 * residual at res1): eight chains of FMAs per tap in the blocks (four
 * vectors of each row), four in the tail. Every output is bitwise what
 * dw_taps_row gives.
 */
NPU_V_TARGET static void NPU_V_FN(dw_taps2_row)(const float *const *src, size_t step,
						const float *w, size_t taps, float bias,
						const struct npu_cpu_act_params *a,
						const float *res0, const float *res1,
						float *y0, float *y1, size_t n)
{
	size_t i = 0, t;

	for (; i + 4 * VL <= n; i += 4 * VL) {
		V a0 = V_SET1(bias), a1 = a0, a2 = a0, a3 = a0;
		V b0 = a0, b1 = a0, b2 = a0, b3 = a0;
		size_t j;

		for (t = 0; t < taps; t++) {
			V wv = V_SET1(w[t]);
			const float *s = src[t] + i, *r = s + step;

			a0 = V_FMA(wv, V_LOAD(s), a0);
			a1 = V_FMA(wv, V_LOAD(s + VL), a1);
			a2 = V_FMA(wv, V_LOAD(s + 2 * VL), a2);
			a3 = V_FMA(wv, V_LOAD(s + 3 * VL), a3);
			b0 = V_FMA(wv, V_LOAD(r), b0);
			b1 = V_FMA(wv, V_LOAD(r + VL), b1);
			b2 = V_FMA(wv, V_LOAD(r + 2 * VL), b2);
			b3 = V_FMA(wv, V_LOAD(r + 3 * VL), b3);
		}
		for (j = 0; j < 4; j++) {
			V va = j == 0 ? a0 : j == 1 ? a1 : j == 2 ? a2 : a3;
			V vb = j == 0 ? b0 : j == 1 ? b1 : j == 2 ? b2 : b3;
			size_t o = i + j * VL;

			V_STORE(y0 + o, NPU_V_FN(dw_epi)(a, res0 ? res0 + o : NULL, va));
			V_STORE(y1 + o, NPU_V_FN(dw_epi)(a, res1 ? res1 + o : NULL, vb));
		}
	}
	for (; i < n; i += VL) {
		V a0 = V_SET1(bias), a1 = V_SET1(0.0f), b0 = a0, b1 = a1;

		for (t = 0; t + 1 < taps; t += 2) {
			V w0 = V_SET1(w[t]), w1 = V_SET1(w[t + 1]);

			a0 = V_FMA(w0, V_LOAD(src[t] + i), a0);
			a1 = V_FMA(w1, V_LOAD(src[t + 1] + i), a1);
			b0 = V_FMA(w0, V_LOAD(src[t] + step + i), b0);
			b1 = V_FMA(w1, V_LOAD(src[t + 1] + step + i), b1);
		}
		if (t < taps) {
			V w0 = V_SET1(w[t]);

			a0 = V_FMA(w0, V_LOAD(src[t] + i), a0);
			b0 = V_FMA(w0, V_LOAD(src[t] + step + i), b0);
		}
		a0 = V_ADD(a0, a1);
		b0 = V_ADD(b0, b1);
		if (i + VL <= n) {
			V_STORE(y0 + i, NPU_V_FN(dw_epi)(a, res0 ? res0 + i : NULL, a0));
			V_STORE(y1 + i, NPU_V_FN(dw_epi)(a, res1 ? res1 + i : NULL, b0));
		} else {
			NPU_V_FN(dw_store_tail)(a, res0 ? res0 + i : NULL, y0 + i, a0, n - i);
			NPU_V_FN(dw_store_tail)(a, res1 ? res1 + i : NULL, y1 + i, b0, n - i);
		}
	}
}

/*
 * One output row of a ConvTranspose with stride == kernel and k_w 2:
 * y[2 i + j] = bias + sum_c w[c * ws + j] * x[c * xs + i] for i < n. Both
 * taps' outputs stay in registers over all channels and are interleaved
 * as they are stored (no accumulator rows in memory, no scalar scatter).
 */
NPU_V_TARGET static void NPU_V_FN(convt2_row)(const float *x, size_t xs,
					      size_t cg, const float *w,
					      size_t ws, float bias, float *y,
					      size_t n)
{
	size_t i = 0, c;

	for (; i + 2 * VL <= n; i += 2 * VL) {
		V a0 = V_SET1(bias), a1 = a0, b0 = a0, b1 = a0;

		for (c = 0; c < cg; c++) {
			const float *xc = x + c * xs + i;
			V w0 = V_SET1(w[c * ws]), w1 = V_SET1(w[c * ws + 1]);
			V x0 = V_LOAD(xc), x1 = V_LOAD(xc + VL);

			a0 = V_FMA(w0, x0, a0);
			a1 = V_FMA(w1, x0, a1);
			b0 = V_FMA(w0, x1, b0);
			b1 = V_FMA(w1, x1, b1);
		}
		V_STORE_ZIP(y + 2 * i, a0, a1);
		V_STORE_ZIP(y + 2 * i + 2 * VL, b0, b1);
	}
	for (; i + VL <= n; i += VL) {
		V a0 = V_SET1(bias), a1 = a0;

		for (c = 0; c < cg; c++) {
			V xv = V_LOAD(x + c * xs + i);

			a0 = V_FMA(V_SET1(w[c * ws]), xv, a0);
			a1 = V_FMA(V_SET1(w[c * ws + 1]), xv, a1);
		}
		V_STORE_ZIP(y + 2 * i, a0, a1);
	}
	for (; i < n; i++) {
		float s0 = bias, s1 = bias;

		for (c = 0; c < cg; c++) {
			s0 += w[c * ws] * x[c * xs + i];
			s1 += w[c * ws + 1] * x[c * xs + i];
		}
		y[2 * i] = s0;
		y[2 * i + 1] = s1;
	}
}


/* y[j] = x[2 j] for j < n (reads x[0 .. 2 n - 2] only). */
NPU_V_TARGET static void NPU_V_FN(copy_s2_row)(const float *x, float *y, size_t n)
{
	size_t j = 0;

	/* A vector reads x[2 j .. 2 j + 2 VL - 1]: whole ones while the
	 * last lane's partner x[2 j + 2 VL - 1] is still before x[2 n - 1]. */
	for (; j + VL < n; j += VL)
		V_STORE(y + j, V_LOAD_S2(x + 2 * j));
	for (; j < n; j++)
		y[j] = x[2 * j];
}

const struct npu_vec_ops NPU_V_FN(npu_vec_ops) = {
	.convt2 = NPU_V_FN(convt2_row),
	.max = NPU_V_FN(max_reduce),
	.dw_taps = NPU_V_FN(dw_taps_row),
	.dw_taps2 = NPU_V_FN(dw_taps2_row),
	.copy_s2 = NPU_V_FN(copy_s2_row),
	.axpb = NPU_V_FN(axpb_row),
	.sum = NPU_V_FN(sum_row),
	.binary = NPU_V_FN(binary_row),
	.act = NPU_V_FN(act_row),
	.epi = NPU_V_FN(epi_row),
	.exp = NPU_V_FN(exp_row),
	.tanh = NPU_V_FN(tanh_row),
	.erf = NPU_V_FN(erf_row),
	.fma_row = NPU_V_FN(fma_row),
	.max_row = NPU_V_FN(max_row),
	.max2x2 = NPU_V_FN(max2x2_row),
};
