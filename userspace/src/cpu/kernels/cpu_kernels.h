/* SPDX-License-Identifier: MIT */
/*
 * cpu_kernels.h - fp32 compute kernels of the CPU backend (internal).
 *
 * The ONNX op implementations in cpu/ops/ call these for the heavy ops. All
 * tensors are dense, row-major, NCHW for convolutions and pooling. Every
 * kernel picks AVX-512 / AVX2+FMA / portable code once at run time (cpuid),
 * and splits its work over the given thread pool (NULL: the calling thread).
 */
#ifndef NPU_CPU_KERNELS_H
#define NPU_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Thread pool: a fixed set of workers, one pool per session. ---- */
struct npu_threadpool;

/* 'threads' counts the caller too: 1 creates no worker. NULL on failure. */
struct npu_threadpool *npu_threadpool_create(int threads);
/* The same, with every run timed if 'stats' (npu_threadpool_stats below). */
struct npu_threadpool *npu_threadpool_create_stats(int threads, bool stats);
/*
 * A view of 'shared' for one session: same size, its own scratch. A run on
 * a view uses the shared workers when free, else the calling thread only.
 * Destroy views before the shared pool.
 */
struct npu_threadpool *npu_threadpool_create_view(struct npu_threadpool *shared);
void npu_threadpool_destroy(struct npu_threadpool *pool);
int npu_threadpool_size(const struct npu_threadpool *pool); /* NULL -> 1 */
/*
 * Run fn(ctx, i) for i in [0, count) over the pool's threads and the
 * caller, returning when all are done. Not reentrant on one pool.
 */
void npu_threadpool_run(struct npu_threadpool *pool,
			void (*fn)(void *ctx, size_t i), void *ctx,
			size_t count);

/*
 * Like npu_threadpool_run, and fn also gets the index of the thread
 * running it, in [0, npu_threadpool_size(pool)): for per-thread scratch.
 */
void npu_threadpool_run_tid(struct npu_threadpool *pool,
			    void (*fn)(void *ctx, size_t i, int tid),
			    void *ctx, size_t count);

/*
 * fn(ctx, begin, end) over pieces of [0, n), each of at least 'grain'
 * items (the cost model: one piece, on the calling thread, when n is
 * below two grains or the pool has one thread; else a few per thread).
 */
void npu_threadpool_parallel_for(struct npu_threadpool *pool, size_t n,
				 size_t grain,
				 void (*fn)(void *ctx, size_t begin, size_t end),
				 void *ctx);

/*
 * The same over n = planes * plane items (an NCHW tensor: planes = N * C,
 * plane = H * W), but piece i covers the i-th part of every plane, as
 * fn(ctx, begin, end) calls within one plane each: the threads split the
 * pixels as convolutions do, so each reads what it wrote itself (see
 * cpu_threadpool.c). Plain pieces when a plane is too short to split.
 */
void npu_threadpool_parallel_for_planes(struct npu_threadpool *pool,
					size_t planes, size_t plane, size_t grain,
					void (*fn)(void *ctx, size_t begin, size_t end),
					void *ctx);

/*
 * A 64-byte aligned buffer of at least 'size' bytes owned by the pool and
 * reused by the next call (kernels and ops run one at a time on a pool,
 * as npu_threadpool_run is not reentrant): working memory that costs no
 * allocation per run. NULL if pool is NULL or on ENOMEM.
 */
void *npu_threadpool_scratch(struct npu_threadpool *pool, size_t size);

/*
 * A pool created with stats on (npu_threadpool_create_stats; the engine's
 * npu_engine_options.pool_stats, NPU_POOL_STATS=1 in the CLI): every run
 * on it and its views is timed, per task in thread CPU time.
 * Off, the pool costs one branch per task. For finding where threads
 * idle; not for production.
 */
struct npu_threadpool_stats {
	uint64_t runs;		/* runs on the workers */
	uint64_t inline_runs;	/* runs on the calling thread alone */
	uint64_t tasks, worker_tasks;	/* worker_tasks: not the caller's */
	uint64_t work_ns;	/* CPU time in tasks, all threads */
	/* sum over runs of max(work / threads, longest claim of tasks)
	 * (+ serial): the run time with perfect balance and no waiting */
	uint64_t span_ns;
	uint64_t serial_ns;	/* inline runs' CPU time (in work and span) */
	uint64_t wall_ns;	/* runs on the workers, start to end */
	uint64_t wait_ns;	/* of wall: the caller idle, others' tasks left */
};

/* The stats since the last take, then zero them. false: stats are off. */
bool npu_threadpool_stats_take(struct npu_threadpool *pool,
			       struct npu_threadpool_stats *st);

/* ---- GEMM ---- */

/*
 * C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C, where op(X)
 * is X or X^T; lda/ldb/ldc are row strides in elements. beta == 0 means C
 * is not read (may hold NaN).
 */
void npu_sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
	       float alpha, const float *a, size_t lda, const float *b,
	       size_t ldb, float beta, float *c, size_t ldc,
	       struct npu_threadpool *pool);

/*
 * A constant B packed once (at plan time) into the panels npu_sgemm
 * packs per call: npu_sgemm_packed_b_floats() floats for op(B) of K x N
 * on this machine's ISA; npu_sgemm_pack_b() fills them and returns the
 * panel width it used, which npu_sgemm_prepacked() must be given back
 * (a different ISA since then packs B per call instead). Results are
 * bitwise those of npu_sgemm.
 */
size_t npu_sgemm_packed_b_floats(size_t n, size_t k);
size_t npu_sgemm_pack_b(bool trans_b, size_t n, size_t k, const float *b,
			size_t ldb, float *packed);
void npu_sgemm_prepacked(bool trans_a, bool trans_b, size_t m, size_t n,
			 size_t k, float alpha, const float *a, size_t lda,
			 const float *b, size_t ldb, const float *packed_b,
			 size_t packed_nr, float beta, float *c, size_t ldc,
			 struct npu_threadpool *pool);

/* ---- Convolution, NCHW ---- */

/* Activation applied in the kernel's epilogue (fused by the compiler). */
enum npu_cpu_act {
	NPU_CPU_ACT_NONE = 0,
	NPU_CPU_ACT_RELU,
	NPU_CPU_ACT_CLIP,	/* clamp to [act_min, act_max] */
	NPU_CPU_ACT_LEAKY_RELU,	/* x < 0 ? alpha * x : x */
	NPU_CPU_ACT_HARD_SIGMOID, /* clamp(alpha * x + beta, 0, 1) */
	NPU_CPU_ACT_HARD_SWISH,	/* x * clamp(x / 6 + 0.5, 0, 1) */
	NPU_CPU_ACT_SIGMOID,
};

struct npu_cpu_act_params {
	enum npu_cpu_act kind;
	float act_min, act_max;	/* CLIP */
	float alpha, beta;	/* LEAKY_RELU, HARD_SIGMOID */
	/* post: then y = post_scale * y + post_shift (an affine after the
	 * activation, e.g. PP-LCNet's learnable affine block) */
	bool post;
	float post_scale, post_shift;
};

struct npu_conv2d_params {
	size_t batch;
	size_t in_c, in_h, in_w;
	size_t out_c, out_h, out_w;
	size_t k_h, k_w;
	size_t stride_h, stride_w;
	size_t dil_h, dil_w;
	size_t pad_top, pad_left;	/* bottom / right follow from out_h/w */
	size_t groups;
	struct npu_cpu_act_params act;
	/*
	 * A tensor shaped as y added to the convolution (after the bias,
	 * before the activation): a fused residual Add. NULL: none. Must not
	 * overlap y.
	 */
	const float *residual;
	/*
	 * Winograd F(4,3) for 3x3 stride 1: where it wins (0, the default),
	 * never, or for every eligible convolution (tests). Pack and run with
	 * the same value: the packed weights hold Winograd's only if allowed.
	 */
	enum npu_conv_winograd {
		NPU_CONV_WINOGRAD_AUTO = 0,
		NPU_CONV_WINOGRAD_OFF,
		NPU_CONV_WINOGRAD_ALL,
	} winograd;
};

/*
 * y[N][out_c][out_h][out_w] = act(conv(x, w) + bias); w is
 * [out_c][in_c / groups][k_h][k_w] (ONNX layout); bias may be NULL.
 * 'scratch' holds npu_conv2d_f32_scratch_size(p) bytes, or is NULL: then
 * the pool's own scratch (kept across calls), or malloc without a pool.
 * Depthwise and 1x1 convolutions take dedicated paths.
 */
size_t npu_conv2d_f32_scratch_size(const struct npu_conv2d_params *p,
				   int threads);
/* false: no memory for the working buffers (y is not written). */
bool npu_conv2d_f32(const struct npu_conv2d_params *p, const float *x,
		    const float *w, const float *bias, float *y,
		    void *scratch, struct npu_threadpool *pool);

/*
 * Weights packed once (at plan time) for the GEMM paths: 'packed' holds
 * npu_conv2d_f32_packed_floats(p) floats, 64-byte aligned (0: depthwise or
 * degenerate, nothing to pack; pass NULL). npu_conv2d_f32_prepacked then
 * reads only 'packed' on the GEMM paths and 'w' on the depthwise one;
 * packed == NULL packs per call as npu_conv2d_f32 does. scratch NULL: the
 * pool's own (kept across calls), or malloc without a pool.
 */
size_t npu_conv2d_f32_packed_floats(const struct npu_conv2d_params *p);
void npu_conv2d_f32_pack_weights(const struct npu_conv2d_params *p,
				 const float *w, float *packed,
				 struct npu_threadpool *pool);
bool npu_conv2d_f32_prepacked(const struct npu_conv2d_params *p,
			      const float *x, const float *w,
			      const float *packed, const float *bias,
			      float *y, void *scratch,
			      struct npu_threadpool *pool);

/*
 * Whether npu_conv2d_f32 runs p as Winograd F(4,3) (3x3 stride 1 where it
 * wins): the layout pass leaves such convolutions in NCHW, since the
 * blocked kernels are direct.
 */
bool npu_conv2d_f32_takes_winograd(const struct npu_conv2d_params *p);
/*
 * Whether npu_conv2d_f32 runs p (one group, a window larger than 1x1) by
 * im2col into GEMM panels, an image at a time: not Winograd, and rows too
 * short for the row tiles (or an ISA without them). The blocked kernel
 * did such convolutions 1.6-2.2x faster at batch 8 (3x3 on 8 x 8 and
 * 8 x 10 planes, 32-128 channels).
 */
bool npu_conv2d_f32_takes_im2col(const struct npu_conv2d_params *p);

/*
 * ConvTranspose whose stride equals its kernel, no padding, dilation 1,
 * output exactly in * k (the 2x2 / stride 2 upsampling of detection
 * heads): every input pixel owns its own k_h x k_w output tile, so it is
 * multiply-add rows over the input channels, with no col2im scatter.
 * w is [in_c][out_c / groups][k_h][k_w] (ONNX layout); bias may be NULL.
 */
struct npu_convt2d_params {
	size_t batch, in_c, in_h, in_w, out_c, k_h, k_w, groups;
	struct npu_cpu_act_params act;	/* on each output row (post too) */
};

bool npu_convtranspose2d_f32_tiled(const struct npu_convt2d_params *p,
				   const float *x, const float *w,
				   const float *bias, float *y,
				   struct npu_threadpool *pool);

/* ---- Blocked layout NCHW16c ---- */

/*
 * The layout pass (compiler/passes/pass_cpu_nchwc.c) keeps the activations
 * of a run of convolutions in NCHW16c: [N][Cb][H][W][16], Cb =
 * npu_nchwc_blocks(C), channel c in block c / 16, lane c % 16, so every
 * pixel's channels are one vector. Lanes past C hold finite values of no
 * meaning (the reorder writes zeros; an activation may turn them into
 * 0.5): the kernels below never let them reach a real channel (their
 * packed weights are zero there).
 */
#define NPU_NCHWC_BLOCK 16

static inline size_t npu_nchwc_blocks(size_t c)
{
	return (c + NPU_NCHWC_BLOCK - 1) / NPU_NCHWC_BLOCK;
}

/* x [N][C][hw] -> y [N][Cb][hw][16], the lanes past C zero. */
void npu_nchwc_reorder_in_f32(size_t batch, size_t c, size_t hw,
			      const float *x, float *y,
			      struct npu_threadpool *pool);
/* x [N][Cb][hw][16] -> y [N][C][hw]. */
void npu_nchwc_reorder_out_f32(size_t batch, size_t c, size_t hw,
			       const float *x, float *y,
			       struct npu_threadpool *pool);

/*
 * Convolution into a blocked y, with p's shapes in real channel counts.
 * p->groups is 1, or p->in_c == p->out_c == p->groups (depthwise). x is
 * blocked, or plain NCHW when nchw_input (groups 1 only: a first layer
 * with a few channels). p->residual, if set, is blocked as y. The weights
 * w ([out_c][in_c / groups][k_h][k_w], ONNX) and bias (NULL: none) are
 * packed once into 'packed' (npu_nchwc_conv_packed_floats(p) floats,
 * 64-byte aligned); the convolution reads only 'packed'.
 */
size_t npu_nchwc_conv_packed_floats(const struct npu_conv2d_params *p);
void npu_nchwc_conv_pack(const struct npu_conv2d_params *p, const float *w,
			 const float *bias, float *packed);
void npu_nchwc_conv_f32(const struct npu_conv2d_params *p, bool nchw_input,
			const float *x, const float *packed, float *y,
			struct npu_threadpool *pool);
/*
 * Whether npu_nchwc_conv_f32 on 'threads' threads runs its tiles on
 * across images (batch folded into a tile's pixels), as its cost model
 * chooses: on small planes at batch > 1, never on an NCHW input or
 * depthwise.
 */
bool npu_nchwc_conv_folds(const struct npu_conv2d_params *p, bool nchw_input,
			  int threads);
/*
 * Whether npu_nchwc_conv_f32 runs a strided unpadded 1x1 convolution as
 * a stride-1 one on a copy of the pixels it reads (a cost model of its
 * tiles; the pool's scratch, or malloc, holds the copy).
 */
bool npu_nchwc_conv_subsamples(const struct npu_conv2d_params *p,
			       bool nchw_input);

/* Blocked x [N][Cb][hw][16] -> y [N][Cb][16]: the mean over hw. */
void npu_nchwc_global_avgpool_f32(size_t batch, size_t c, size_t hw,
				  const float *x, float *y,
				  struct npu_threadpool *pool);

/* Blocked nearest upsampling by integer factors: y pixel (i, j) is x
 * pixel (i / fh, j / fw); y is [N][Cb][in_h * fh][in_w * fw][16]. */
void npu_nchwc_upsample_nearest_f32(size_t batch, size_t c, size_t in_h,
				    size_t in_w, size_t fh, size_t fw,
				    const float *x, float *y,
				    struct npu_threadpool *pool);

/* ---- Pooling, NCHW ---- */

struct npu_pool2d_params {
	size_t batch, channels;
	size_t in_h, in_w, out_h, out_w;
	size_t k_h, k_w, stride_h, stride_w, dil_h, dil_w;
	size_t pad_top, pad_left, pad_bottom, pad_right;
	bool count_include_pad;	/* average pooling */
};

void npu_maxpool2d_f32(const struct npu_pool2d_params *p, const float *x,
		       float *y, struct npu_threadpool *pool);
void npu_avgpool2d_f32(const struct npu_pool2d_params *p, const float *x,
		       float *y, struct npu_threadpool *pool);

/* ---- Elementwise helpers (vectorized, contiguous arrays) ---- */

void npu_vec_act_f32(const struct npu_cpu_act_params *act, const float *x,
		     float *y, size_t n);
void npu_vec_exp_f32(const float *x, float *y, size_t n);
/* tanh, about 2 ulp (Cephes' tanhf on vectors); y may equal x. */
void npu_vec_tanh_f32(const float *x, float *y, size_t n);
/* erf, about 2 ulp (a faithfully rounded erff on vectors); y may equal x. */
void npu_vec_erf_f32(const float *x, float *y, size_t n);

enum npu_vec_binop { NPU_VEC_ADD, NPU_VEC_SUB, NPU_VEC_MUL, NPU_VEC_DIV };

/* y[i] = a[i * sa] op b[i * sb] for i < n, sa / sb in {0, 1} (0: the
 * operand is one scalar); y may alias a or b. IEEE results, exactly as
 * the scalar C expression. */
void npu_vec_binary_f32(enum npu_vec_binop op, const float *a, size_t sa,
			const float *b, size_t sb, float *y, size_t n);

/* y[i] = a * x[i] + b (fused on the FMA paths); y may equal x. */
void npu_vec_axpb_f32(const float *x, float *y, size_t n, float a, float b);
/* The sum of x[0 .. n), in float with vector partial sums. */
float npu_vec_sum_f32(const float *x, size_t n);
/* The largest of x[0 .. n), NaN elements skipped (as fmaxf); -inf if
 * n is 0 or every element is NaN. */
float npu_vec_max_f32(const float *x, size_t n);

/* Elements per task below which elementwise work is not worth a thread. */
#define NPU_VEC_GRAIN 16384

/* Which code path the kernels run: "avx512", "avx2" or "portable". */
const char *npu_cpu_kernels_isa(void);
/*
 * Cap the code path at 'name' ("portable", "avx2" or "avx512"; below the
 * cap, the best the CPU supports). The path is chosen once per process, at
 * the first kernel call or cap: 0 if the cap is in effect, -EINVAL for an
 * unknown name, -EBUSY if the process already runs another path.
 */
int npu_cpu_kernels_cap_isa(const char *name);

#endif /* NPU_CPU_KERNELS_H */
