/* SPDX-License-Identifier: MIT */
/*
 * cpu_kernels_internal.h - pieces shared by the files of cpu/kernels: the
 * one-time ISA choice, the GEMM micro-kernel table and packing, and the
 * per-ISA row kernels (activations, exp, depthwise / pooling rows).
 */
#ifndef NPU_CPU_KERNELS_INTERNAL_H
#define NPU_CPU_KERNELS_INTERNAL_H

#include <float.h>

#include "cpu_kernels.h"

#define NPU_TARGET_AVX512 "avx512f,avx512bw,avx512dq,avx512vl,fma"
#define NPU_TARGET_AVX2 "avx2,fma"

enum npu_cpu_isa {
	NPU_CPU_ISA_PORTABLE = 0,
	NPU_CPU_ISA_AVX2,
	NPU_CPU_ISA_AVX512,
};

/* Chosen once (cpuid capped by npu_cpu_kernels_cap_isa), then constant. */
enum npu_cpu_isa npu_cpu_isa_get(void);

/* ---- GEMM ---- */

/*
 * C[m x n] = alpha * A_panel * B_panel (+ beta * C; beta == 0: C not read)
 * for one register tile, m <= mr, n <= nr. a: kc steps of mr floats,
 * b: kc steps of nr floats (zero padded past m / n).
 */
typedef void (*npu_gemm_ukernel_fn)(size_t kc, const float *a, const float *b,
				    float *c, size_t ldc, float alpha,
				    float beta, size_t m, size_t n);

/*
 * The tile with B read in place: step kk of B is bp[kk] + off, n floats
 * (no packing); C = A * B + beta * C.
 */
typedef void (*npu_gemm_ukernel_ind_fn)(size_t kc, const float *a,
					const float *const *bp, size_t off,
					float *c, size_t ldc, float beta,
					size_t m, size_t n);

struct npu_gemm_ukernel {
	size_t mr, nr;
	size_t mc, nc, kc;	/* cache blocking: rows, columns, depth */
	npu_gemm_ukernel_fn fn;
	npu_gemm_ukernel_ind_fn ind;	/* NULL: this ISA has none */
};

const struct npu_gemm_ukernel *npu_gemm_ukernel_for(enum npu_cpu_isa isa);

/*
 * Packed layout of a matrix operand over its whole depth k: panel p of
 * 'width' rows (A) or columns (B) starts at p * k * width; step kk of the
 * panel holds 'width' consecutive floats. A depth block [k0, k0 + kc) of
 * panel p is then contiguous at p * k * width + k0 * width.
 */
void npu_gemm_pack_a(bool trans, const float *a, size_t lda, size_t m0,
		     size_t m, size_t k, size_t mr, float *dst);
void npu_gemm_pack_b(bool trans, const float *b, size_t ldb, size_t n0,
		     size_t n, size_t k, size_t nr, float *dst);

/*
 * Multiply an mc x kc block of packed A (panel 0 at 'a', panels a_ps
 * apart) by a kc x nc block of packed B into C.
 */
void npu_gemm_macro(const struct npu_gemm_ukernel *uk, size_t mc, size_t nc,
		    size_t kc, const float *a, size_t a_ps, const float *b,
		    size_t b_ps, float *c, size_t ldc, float alpha,
		    float beta);

static inline size_t npu_div_up(size_t a, size_t b)
{
	return (a + b - 1) / b;
}

static inline size_t npu_round_up(size_t a, size_t b)
{
	return npu_div_up(a, b) * b;
}

/* ---- Row kernels, one set per ISA ---- */

struct npu_vec_ops {
	/* y[i] = post(act(x[i] + bias)); x may equal y. */
	void (*act)(const struct npu_cpu_act_params *act, float bias,
		    const float *x, float *y, size_t n);
	/* The same with res[i] added before act (res NULL: none). */
	void (*epi)(const struct npu_cpu_act_params *act, float bias,
		    const float *res, const float *x, float *y, size_t n);
	void (*exp)(const float *x, float *y, size_t n);
	void (*tanh)(const float *x, float *y, size_t n);
	void (*erf)(const float *x, float *y, size_t n);
	/* y[i] += w * x[i * stride] */
	void (*fma_row)(float *y, const float *x, size_t stride, float w,
			size_t n);
	/* y[i] = max(y[i], x[i * stride]) */
	void (*max_row)(float *y, const float *x, size_t stride, size_t n);
	/* y[j] = max of x0[2 j], x0[2 j + 1], x1[2 j], x1[2 j + 1] (2x2
	 * stride-2 max pooling, as max_row from -FLT_MAX would) */
	void (*max2x2)(float *y, const float *x0, const float *x1, size_t n);
	/* y[i] = a[i * sa] op b[i * sb], sa / sb in {0, 1} */
	void (*binary)(enum npu_vec_binop op, const float *a, size_t sa,
		       const float *b, size_t sb, float *y, size_t n);
	/* y[i] = a * x[i] + b */
	void (*axpb)(const float *x, float *y, size_t n, float a, float b);
	float (*sum)(const float *x, size_t n);
	/* max of x[0 .. n), NaN skipped, -inf for n 0 */
	float (*max)(const float *x, size_t n);
	/* y[i] = post(act(bias + sum_t w[t] * src[t][i] + res[i])): a
	 * depthwise row from its taps, the epilogue in registers (a NULL:
	 * no activation or post, res NULL: no residual); reads src[t][i]
	 * for i < n + NPU_VEC_SLACK (lanes past n dropped) */
	void (*dw_taps)(const float *const *src, const float *w, size_t taps,
			float bias, const struct npu_cpu_act_params *a,
			const float *res, float *y, size_t n);
	/* dw_taps for two rows, y0 from src[t] and y1 from src[t] + step:
	 * bitwise the same outputs, twice the FMA chains in flight */
	void (*dw_taps2)(const float *const *src, size_t step, const float *w,
			 size_t taps, float bias,
			 const struct npu_cpu_act_params *a, const float *res0,
			 const float *res1, float *y0, float *y1, size_t n);
	/* y[j] = x[2 j], j < n (a stride-2 phase of a padded row) */
	void (*copy_s2)(const float *x, float *y, size_t n);
	/* y[2 i + j] = bias + sum_c w[c * ws + j] * x[c * xs + i], j < 2
	 * (a ConvTranspose output row, stride == kernel, k_w 2) */
	void (*convt2)(const float *x, size_t xs, size_t cg, const float *w,
		       size_t ws, float bias, float *y, size_t n);
};

/* Floats a dw_taps source row may be read past its n: one vector. */
#define NPU_VEC_SLACK 16

extern const struct npu_vec_ops npu_vec_ops_portable;
extern const struct npu_vec_ops npu_vec_ops_avx2;
extern const struct npu_vec_ops npu_vec_ops_avx512;

const struct npu_vec_ops *npu_vec_ops_get(void);

/* npu_threadpool_scratch: cpu_kernels.h */

/*
 * Packed weights take subnormals (|w| < FLT_MIN) as zero. Trained
 * squeeze-excite weights are up to a third subnormal (PP-OCRv4 rec), and
 * on x86 every multiply-add with a subnormal operand takes a microcode
 * assist of about a hundred cycles: rec's 480 -> 120 1x1 conv ran 10x
 * slower (0.78 ms instead of 0.08). A product with such a weight is
 * below 1e-35 for any sane activation, far under every tolerance, and
 * the packing runs once per plan.
 */
static inline float npu_flush_subnormal(float v)
{
	return v > -FLT_MIN && v < FLT_MIN ? 0.0f : v;
}

/* ---- Winograd F(4,3), 3x3 stride 1 (cpu_winograd.c) ---- */

/*
 * Chosen (p->winograd AUTO) for outputs at least this high and wide
 * (smaller planes leave most of the 8-tile vectors and GEMM tiles empty)
 * and at most this many in_c x out_c channel pairs (above it the
 * transformed weights, 4x the direct ones, stream from memory for every
 * chunk); measured in Documentation/cpu-kernels.md.
 */
#define NPU_WINO_MIN_HW 10
#define NPU_WINO_MAX_PAIRS 65536
/* Input channels (times the share of tile slots used) below which the
 * direct convolution wins: 1-3 channels at 61 x 40 1.5-2.3x, 2-4 at
 * 64 x 64 even (cpu-conv-bench, batch 8). */
#define NPU_WINO_MIN_IN_C 4

struct npu_wino_plan {
	size_t th_n, tw_n;	/* tiles down / across */
	size_t twv;		/* slots per tile row: tw_n rounded up to 8 */
	size_t hp, wp, wq;	/* padded plane: hp rows of 4 phases of wq */
	size_t slots;		/* th_n * twv per image */
	size_t chunk;		/* slots per GEMM pass, a multiple of nr */
	size_t band;		/* tile rows per task (their input padded) */
	size_t a_panels;	/* packed A panels per transformed weight */
	size_t u_floats;	/* the 36 transformed weights, packed */
	size_t pad_floats;	/* shared padded input: 0 (padded per band) */
	size_t t_floats;	/* per thread: V, M, output rows, band input */
};

/*
 * Floats of the transformed, packed weights if W's shape alone allows
 * Winograd (3x3, one group, channel pairs; the Conv op packs at plan time
 * without the spatial sizes), else 0; p->winograd OFF gives 0.
 */
size_t npu_wino_u_floats(const struct npu_conv2d_params *p,
			 const struct npu_gemm_ukernel *uk);
/*
 * false: not a Winograd convolution (W not eligible, not stride 1 /
 * dilation 1, or outputs below the thresholds; p->winograd ALL
 * ignores the thresholds, for tests).
 */
bool npu_wino_plan(const struct npu_conv2d_params *p,
		   const struct npu_gemm_ukernel *uk, struct npu_wino_plan *wp);
/* npu_wino_u_floats(p) floats of U = G g G^T, as 36 packed A operands. */
void npu_wino_pack_weights(const struct npu_conv2d_params *p, const float *w,
			   float *packed, struct npu_threadpool *pool);
/* tmp: threads * wp->t_floats (64-byte aligned). */
void npu_wino_run(const struct npu_conv2d_params *p,
		  const struct npu_wino_plan *wp, const float *x,
		  const float *u, const float *bias, float *y, float *tmp,
		  struct npu_threadpool *pool);

#endif /* NPU_CPU_KERNELS_INTERNAL_H */
