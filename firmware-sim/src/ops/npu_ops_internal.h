/* SPDX-License-Identifier: MIT */
/*
 * npu_ops_internal.h - what the op drivers (npu_ops.c), the references
 * (npu_ops_ref.c) and the per-ISA kernels (npu_kern_*.c) share.
 */
#ifndef NPU_OPS_INTERNAL_H
#define NPU_OPS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "npu_ops.h"

/* Operands may sit at any byte offset in SRAM: load int32s bytewise. */
static inline int32_t npu_ld_i32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int32_t npu_clamp64(int64_t v, int32_t lo, int32_t hi)
{
	if (v < lo)
		return lo;
	if (v > hi)
		return hi;
	return (int32_t)v;
}

/*
 * The requantization of npu_hw.h. |acc * mult| <= 2^62 and the rounding
 * term <= 2^61, so the 64-bit sum cannot overflow. Right shifts of
 * negative values are arithmetic on every compiler we build with.
 */
static inline int8_t npu_requant(int32_t acc, int32_t mult, uint32_t shift,
				 int32_t zp_out, int32_t lo, int32_t hi)
{
	int64_t v = (int64_t)acc * mult + ((int64_t)1 << (shift - 1));

	return (int8_t)npu_clamp64((v >> shift) + zp_out, lo, hi);
}

/* Same rounding and clamp, for ELTWISE's 64-bit accumulator. */
static inline int8_t npu_requant64(int64_t acc, uint32_t shift, int32_t zp_out,
				   int32_t lo, int32_t hi)
{
	int64_t v = acc + ((int64_t)1 << (shift - 1));

	return (int8_t)npu_clamp64((v >> shift) + zp_out, lo, hi);
}

/*
 * int16 activations (NPU_INSN_I16): little-endian int16 elements, int64
 * bias, and the same requantization of a 64-bit accumulator done in 128
 * bits (|acc * mult| < 2^95), so no accumulator value can overflow it.
 */
static inline int16_t npu_ld_i16(const uint8_t *p)
{
	return (int16_t)(p[0] | (uint16_t)(p[1] << 8));
}

static inline void npu_st_i16(uint8_t *p, int32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)((uint32_t)v >> 8);
}

static inline int64_t npu_ld_i64(const uint8_t *p)
{
	int64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The int16 clamp bounds of an instruction's int8 act_min / act_max. */
static inline int32_t npu_act16_lo(int8_t act_min)
{
	return (int32_t)act_min * 256;
}

static inline int32_t npu_act16_hi(int8_t act_max)
{
	return (int32_t)act_max * 256 + 255;
}

__extension__ typedef __int128 npu_i128;

static inline int16_t npu_requant16(int64_t acc, int32_t mult, uint32_t shift,
				    int32_t lo, int32_t hi)
{
	npu_i128 v = (npu_i128)acc * mult + ((npu_i128)1 << (shift - 1));

	v >>= shift;
	if (v < lo)
		return (int16_t)lo;
	if (v > hi)
		return (int16_t)hi;
	return (int16_t)v;
}

/* LUT with NPU_INSN_I16: interpolation in a 513-entry int16 table. */
static inline int16_t npu_lut16(const uint8_t *table, int16_t x)
{
	uint32_t u = (uint32_t)((int32_t)x + 32768);
	int32_t t0 = npu_ld_i16(table + 2 * (u >> 7));
	int32_t t1 = npu_ld_i16(table + 2 * (u >> 7) + 2);

	return (int16_t)(t0 + (((t1 - t0) * (int32_t)(u & 127) + 64) >> 7));
}

/*
 * Bytes per element of ELTWISE's a, b and output: NPU_INSN_I16 makes all
 * int16, else 'types' picks them one by one.
 */
static inline uint32_t npu_elt_types(const struct npu_insn_eltwise *in)
{
	if (in->hdr.flags & NPU_INSN_I16)
		return NPU_ELT_A16 | NPU_ELT_B16 | NPU_ELT_OUT16;
	return in->types;
}

/* Round half away from zero; count > 0. */
static inline int32_t npu_div_round(int64_t sum, int64_t count)
{
	if (sum >= 0)
		return (int32_t)((sum + count / 2) / count);
	return (int32_t)-((-sum + count / 2) / count);
}

/*
 * Per-output-channel epilogue, arrays padded with harmless entries
 * (col 0, mult 0, shift 1) to a multiple of NPU_RQ_PAD past the last
 * channel so vector kernels may load whole blocks.
 */
#define NPU_RQ_PAD	16

struct npu_rq {
	const int32_t *col;	/* added to each accumulator of the channel */
	const int32_t *mult;
	const int32_t *shift;	/* 1..62 */
	int32_t zp_out, act_min, act_max;
};

/*
 * out[i][j] = requant(dot(i, j) + col[j] + row[i]) for i < m, j < n, where
 * a row i is arow[i][0..k) and column j is b[j * ldb .. + k). What dot()
 * is depends on the kernel (struct npu_kern.dot_kind); the caller folds the
 * difference to the exact sum of (a - za) * (b - zb) into col and row.
 * All sums wrap modulo 2^32, like the device's accumulator.
 */
struct npu_gemm {
	const int8_t *const *arow;
	int8_t *const *orow;	/* channel j of row i at orow[i][j] */
	const int8_t *b;
	size_t ldb;
	uint32_t m, n, k;
	int32_t za, zb;
	const int32_t *row;	/* [m], or NULL for zeros */
	struct npu_rq rq;
	/*
	 * What the kernel's gemm_prep made of b and rq once per instruction
	 * (NULL when the kernel has none, or did not get it: then it works
	 * from b and rq itself).
	 */
	const void *prep;
};

/* Depthwise CONV2D (groups == in_c == out_c). */
struct npu_dw {
	const int8_t *in;
	size_t in_rs, in_ps;
	int8_t *out;
	size_t out_rs, out_ps;
	uint32_t in_h, in_w, out_h, out_w, c, cpad;
	uint32_t oh_begin, oh_end;	/* the band of output rows to compute */
	uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
	int32_t zp_in;
	const int32_t *wt;	/* [k_h * k_w][cpad]: w - zp_w, tap-major */
	struct npu_rq rq;	/* col = bias */
};

/*
 * ELTWISE on int8 operands (npu_hw.h): out[i] = clamp(zp_out +
 * ((acc + 2^(shift - 1)) >> shift)) with acc = (a - za) * ma + (b - zb) * mb
 * (ADD) or (a - za) * (b - zb) * ma (MUL), in int64. |a - za| <= 2^15 + 2^7,
 * so the MUL product (a - za) * (b - zb) fits an int32 before the multiplier.
 */
struct npu_elt {
	uint32_t mode;		/* NPU_ELT_ADD / NPU_ELT_MUL */
	uint32_t shift;		/* 1..62 */
	int32_t za, zb, ma, mb;
	int32_t zp_out, lo, hi;
};

enum npu_dot_kind {
	/* dot = sum (a - za) * (b - zb): col = bias, row = NULL. */
	NPU_DOT_EXACT,
	/*
	 * dot = sum ((a ^ 0x80) as u8) * b, the VNNI form: col = bias -
	 * (128 + za) * sum b + k * za * zb and row = -zb * sum a.
	 */
	NPU_DOT_U8S8,
	/*
	 * dot = sum a * ((b ^ 0x80) as u8), the VNNI form with the weights as
	 * the unsigned side; col = bias and row = NULL: the kernel folds the
	 * rest itself from what it reads anyway, -za * sum b + k * za * zb
	 * per column when it packs b and -(128 + zb) * sum a per row.
	 */
	NPU_DOT_S8U8,
};

struct npu_kern {
	const char *name;
	enum npu_dot_kind dot_kind;
	void (*gemm)(const struct npu_gemm *g);
	/*
	 * Optional: repacks b and the epilogue of g (b, ldb, n, k and rq with
	 * col folded) into what gemm reads as g->prep, for every m; released
	 * with free(). Never NULL when the hook exists (aborts without memory).
	 */
	void *(*gemm_prep)(const struct npu_gemm *g);
	void (*dw)(const struct npu_dw *d);
	/* sum of p[0..k) as int8, modulo 2^32 */
	uint32_t (*sum_i8)(const int8_t *p, uint32_t k);
	/*
	 * NPU_INSN_I16: the exact sum of a[i] * b[i], a the int16 activations,
	 * b the weights minus zp_w (-255..255); every product is below 2^23.
	 */
	int64_t (*dot16)(const int16_t *a, const int16_t *b, uint32_t k);
	/* Four of them at once: out[j] = dot16(a, b + j * ldb, k), j < 4. */
	void (*dot16x4)(const int16_t *a, const int16_t *b, size_t ldb, uint32_t k,
			int64_t out[4]);
	/* Depthwise, NPU_INSN_I16: acc[i] += x[i] * w[i], products < 2^23. */
	void (*mac16)(int32_t *acc, const int16_t *x, const int16_t *w, uint32_t c);
	/*
	 * ELTWISE, int8: out[i] from a[i] and b[i] (b[0] for every i when
	 * b_scalar), i < n. out may equal a or b exactly, never overlap otherwise.
	 */
	void (*elt_i8)(const struct npu_elt *e, const int8_t *a, const int8_t *b,
		       int b_scalar, int8_t *out, uint32_t n);
	/* LUT, int8: dst[i] = table[(uint8_t)(src[i] + 128)], i < n; dst may be src. */
	void (*lut_i8)(const uint8_t *table, const uint8_t *src, uint8_t *dst, size_t n);
};

extern const struct npu_kern npu_kern_portable;
/* The kernel set the ops run on (npu_ops.c: chosen once, NPU_SIM_ISA caps it). */
const struct npu_kern *npu_kern_current(void);
extern const struct npu_kern npu_kern_avx2;
extern const struct npu_kern npu_kern_avx512vnni;

/* Portable pieces the vector kernels fall back on for odd cases. */
void npu_portable_gemm(const struct npu_gemm *g);
void npu_portable_dw(const struct npu_dw *d);
uint32_t npu_portable_sum_i8(const int8_t *p, uint32_t k);
int64_t npu_portable_dot16(const int16_t *a, const int16_t *b, uint32_t k);
void npu_portable_dot16x4(const int16_t *a, const int16_t *b, size_t ldb, uint32_t k,
			  int64_t out[4]);
void npu_portable_mac16(int32_t *acc, const int16_t *x, const int16_t *w, uint32_t c);
void npu_portable_elt_i8(const struct npu_elt *e, const int8_t *a, const int8_t *b,
			 int b_scalar, int8_t *out, uint32_t n);
void npu_portable_lut_i8(const uint8_t *table, const uint8_t *src, uint8_t *dst,
			 size_t n);

/* Whether [a) and [b) share a byte. */
static inline int npu_ranges_overlap(struct npu_sram_range a,
				     struct npu_sram_range b)
{
	return a.begin < b.end && b.begin < a.end;
}

/* Strided NHWC tensor views shared by CONV2D and POOL. */
static inline uint64_t npu_tensor_span(uint32_t h, uint32_t w, uint32_t c,
				       uint32_t row_stride, uint32_t pixel_stride)
{
	return (uint64_t)(h - 1) * row_stride + (uint64_t)(w - 1) * pixel_stride + c;
}

/*
 * Copies a dense [h][w][c] result into a strided tensor: the way the ops
 * honour "every operand is read before the output is written" when the
 * output overlaps an input.
 */
void npu_scatter_dense(uint8_t *dst, size_t row_stride, size_t pixel_stride,
		       const uint8_t *src, uint32_t h, uint32_t w, uint32_t c);

/*
 * The one validator's shared pieces (npu_ops_check.c): record a failure
 * (field, printf-style reason) in 'c' when it is not NULL and return
 * 'status'; the SRAM size operands must fit; the kernel taps per axis a
 * CONV2D with zero insertion runs (cycle model).
 */
uint32_t npu_isa_fail(struct npu_isa_check *c, uint32_t status,
		      const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
uint32_t npu_isa_sram_size(const struct npu_isa_check *c);
uint32_t npu_conv_taps(uint32_t k, uint32_t dil, uint32_t ins);

/* One axis of RESIZE (npu_hw.h): clamped neighbours, Q16 fraction. */
void npu_resize_coord(uint32_t o, uint32_t step, int32_t offset, uint32_t den,
		      uint32_t in, uint32_t *i0, uint32_t *i1, uint32_t *frac);

/*
 * N:M sparse weights (ISA 1.6) expanded to their dense rows through this
 * thread's cache (npu_sparse.c); NULL when a position is malformed. Valid
 * until the next call on the thread or npu_ops_release_caches().
 */
const int8_t *npu_sparse_dense(const uint8_t *w, uint64_t rows, uint64_t k, uint32_t n,
			       uint32_t m, int8_t fill);

/* Loads the per-channel quant table; 0 or NPU_JOB_ERR_BAD_PARAM. */
uint32_t npu_load_quant(const uint8_t *sram, uint32_t quant, uint32_t flags,
			uint32_t n, int32_t *mult, int32_t *shift);

/*
 * npu_pool.c: fn(ctx, item, worker) for every item < items, on the pool's
 * threads and the caller (worker 0 .. threads - 1: per-thread scratch),
 * returning when all are done; inline on the caller without a pool.
 */
typedef void (*npu_pool_fn)(void *ctx, uint32_t item, unsigned int worker);
void npu_pool_run(struct npu_ops_pool *pool, uint32_t items, npu_pool_fn fn,
		  void *ctx);

#endif /* NPU_OPS_INTERNAL_H */
