// SPDX-License-Identifier: MIT
/*
 * npu_vec.c - the row ops of the vector engine (ISA 1.3): SOFTMAX,
 * LAYERNORM and REDUCE over the innermost axis (npu_hw.h has the
 * arithmetic). Their validation (the one ISA validator, npu_isa.h), the
 * naive references and the fast path live here together because all three
 * share one shape: rows of c int8 elements.
 *
 * The fast path differs from the reference only in how it gathers a row's
 * integer statistics (max, sum, sum of squares): with AVX-512 BW, AVX2 or
 * plain C, chosen with the rest of the kernels (npu_ops_impl_name()).
 * Integer sums are exact in any order, so every path is bit-exact with the
 * reference by construction; the differential tests check it anyway.
 */
#include <inttypes.h>
#include <string.h>

#include "npu_ops_internal.h"

#define ENC	NPU_JOB_ERR_BAD_ENCODING
#define PARAM	NPU_JOB_ERR_BAD_PARAM
#define BOUNDS	NPU_JOB_ERR_SRAM_BOUNDS

__extension__ typedef unsigned __int128 npu_u128;

/* ---------------------------------------------------------------------------
 * Validation
 */

static uint32_t vec_hdr(const struct npu_insn_header *h, uint8_t opcode,
			size_t size, struct npu_isa_check *c)
{
	if (h->opcode != opcode)
		return npu_isa_fail(c, NPU_JOB_ERR_BAD_OPCODE, "header.opcode",
				    "header.opcode 0x%02x is not %s", h->opcode,
				    npu_insn_name(opcode));
	if (h->size != size)
		return npu_isa_fail(c, ENC, "header.size",
				    "header.size %u, a %s is %zu bytes", h->size,
				    npu_insn_name(opcode), size);
	if (h->flags & ~NPU_INSN_SYNC)
		return npu_isa_fail(c, ENC, "header.flags",
				    "header.flags 0x%x: %s takes only SYNC", h->flags,
				    npu_insn_name(opcode));
	if (h->reserved)
		return npu_isa_fail(c, ENC, "header.reserved",
				    "header.reserved is not 0");
	return NPU_JOB_OK;
}

#define TRY(x) do { uint32_t st_ = (x); if (st_) return st_; } while (0)

/* rows x c with the given stride; the last row ends after c bytes. */
static uint32_t rows_range(struct npu_isa_check *c, const char *field,
			   uint32_t base, uint32_t rows, uint32_t elems,
			   uint32_t stride, struct npu_sram_range *r)
{
	uint32_t sram = npu_isa_sram_size(c);
	uint64_t len = (uint64_t)(rows - 1) * stride + elems;

	if (base > sram || len > sram - base)
		return npu_isa_fail(c, BOUNDS, field,
				    "%s [%u, %" PRIu64 ") exceeds SRAM size %u",
				    field, base, base + len, sram);
	r->begin = base;
	r->end = (uint32_t)(base + len);
	return NPU_JOB_OK;
}

static uint32_t flat_range(struct npu_isa_check *c, const char *field,
			   uint32_t base, uint64_t len, struct npu_sram_range *r)
{
	uint32_t sram = npu_isa_sram_size(c);

	if (base > sram || len > sram - base)
		return npu_isa_fail(c, BOUNDS, field,
				    "%s [%u, %" PRIu64 ") exceeds SRAM size %u",
				    field, base, base + len, sram);
	r->begin = base;
	r->end = (uint32_t)(base + len);
	return NPU_JOB_OK;
}

/* The fields every row op has: rows, c, strides, output zero point, clamp. */
static uint32_t rows_common(struct npu_isa_check *c, uint32_t rows, uint32_t n,
			    uint32_t in_stride, uint32_t out_stride,
			    uint32_t out_elems, int32_t zp_out, int8_t lo,
			    int8_t hi)
{
	if (!rows)
		return npu_isa_fail(c, PARAM, "rows", "rows is 0");
	if (!n)
		return npu_isa_fail(c, PARAM, "c", "c is 0");
	/* keeps every row statistic exact in 32-bit vector lanes */
	if (n > NPU_ROW_MAX_C)
		return npu_isa_fail(c, PARAM, "c", "c %u is above %u", n, NPU_ROW_MAX_C);
	if (rows > 1 && in_stride < n)
		return npu_isa_fail(c, PARAM, "in_stride", "in_stride %u < c %u",
				    in_stride, n);
	if (rows > 1 && out_stride < out_elems)
		return npu_isa_fail(c, PARAM, "out_stride",
				    "out_stride %u < %u output bytes per row",
				    out_stride, out_elems);
	if (zp_out < -128 || zp_out > 127)
		return npu_isa_fail(c, PARAM, "zp_out", "zp_out %d is outside -128..127",
				    zp_out);
	if (lo > hi)
		return npu_isa_fail(c, PARAM, "act_min", "act_min %d > act_max %d",
				    lo, hi);
	return NPU_JOB_OK;
}

static uint64_t row_passes(uint32_t rows, uint32_t n, uint32_t passes,
			   uint32_t extra)
{
	return (uint64_t)rows * (passes * ((n + NPU_VECTOR_LANES - 1) /
					   NPU_VECTOR_LANES) + extra);
}

static uint32_t in_out(struct npu_isa_check *c, uint32_t input, uint32_t output,
		       uint32_t rows, uint32_t n, uint32_t in_stride,
		       uint32_t out_stride, uint32_t out_elems,
		       struct npu_op_footprint *f)
{
	TRY(rows_range(c, "input", input, rows, n, in_stride, &f->reads[0]));
	TRY(rows_range(c, "output", output, rows, out_elems, out_stride,
		       &f->writes[0]));
	/* A row written before a later row is read would make the result
	 * depend on the order the hardware walks the rows in. */
	if (npu_ranges_overlap(f->reads[0], f->writes[0]) &&
	    (input != output || in_stride != out_stride || out_elems != n))
		return npu_isa_fail(c, PARAM, "output",
				    "output [%u, %u) overlaps input [%u, %u) other than in place",
				    f->writes[0].begin, f->writes[0].end,
				    f->reads[0].begin, f->reads[0].end);
	f->num_reads = 1;
	f->num_writes = 1;
	return NPU_JOB_OK;
}

uint32_t npu_op_softmax_validate(const struct npu_insn_softmax *in,
				 struct npu_op_footprint *fp,
				 struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(vec_hdr(&in->hdr, NPU_OP_SOFTMAX, sizeof(*in), c));
	if (in->reserved0)
		return npu_isa_fail(c, ENC, "reserved0", "reserved field reserved0 is not 0");
	if (in->reserved1)
		return npu_isa_fail(c, ENC, "reserved1", "reserved field reserved1 is not 0");
	TRY(rows_common(c, in->rows, in->c, in->in_stride, in->out_stride, in->c,
			in->zp_out, in->act_min, in->act_max));
	if (in->mult < 0)
		return npu_isa_fail(c, PARAM, "mult", "mult %d is negative", in->mult);
	if (in->shift < 1 || in->shift > 126)
		return npu_isa_fail(c, PARAM, "shift", "shift %u is outside 1..126",
				    in->shift);
	TRY(in_out(c, in->input, in->output, in->rows, in->c, in->in_stride,
		   in->out_stride, in->c, &f));
	TRY(flat_range(c, "table", in->table, 256 * 4, &f.reads[1]));
	f.num_reads = 2;
	f.cycles = row_passes(in->rows, in->c, 3, NPU_CYCLES_VEC_ROW);
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_layernorm_validate(const struct npu_insn_layernorm *in,
				   struct npu_op_footprint *fp,
				   struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(vec_hdr(&in->hdr, NPU_OP_LAYERNORM, sizeof(*in), c));
	if (in->reserved0)
		return npu_isa_fail(c, ENC, "reserved0", "reserved field reserved0 is not 0");
	if (in->reserved1)
		return npu_isa_fail(c, ENC, "reserved1", "reserved field reserved1 is not 0");
	TRY(rows_common(c, in->rows, in->c, in->in_stride, in->out_stride, in->c,
			in->zp_out, in->act_min, in->act_max));
	if (in->shift < 1 || in->shift > 62)
		return npu_isa_fail(c, PARAM, "shift", "shift %u is outside 1..62",
				    in->shift);
	TRY(in_out(c, in->input, in->output, in->rows, in->c, in->in_stride,
		   in->out_stride, in->c, &f));
	TRY(flat_range(c, "params", in->params, 8ull * in->c, &f.reads[1]));
	f.num_reads = 2;
	f.cycles = row_passes(in->rows, in->c, 2, NPU_CYCLES_VEC_ROW);
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_reduce_validate(const struct npu_insn_reduce *in,
				struct npu_op_footprint *fp,
				struct npu_isa_check *c)
{
	struct npu_op_footprint f = { 0 };

	if (fp)
		memset(fp, 0, sizeof(*fp));
	TRY(vec_hdr(&in->hdr, NPU_OP_REDUCE, sizeof(*in), c));
	if (in->reserved)
		return npu_isa_fail(c, ENC, "reserved", "reserved field reserved is not 0");
	if (in->mode != NPU_REDUCE_SUM && in->mode != NPU_REDUCE_MAX)
		return npu_isa_fail(c, PARAM, "mode", "mode %u is not 0 (sum) or 1 (max)",
				    in->mode);
	TRY(rows_common(c, in->rows, in->c, in->in_stride, in->out_stride, 1,
			in->zp_out, in->act_min, in->act_max));
	if (in->zp_in < -128 || in->zp_in > 127)
		return npu_isa_fail(c, PARAM, "zp_in", "zp_in %d is outside -128..127",
				    in->zp_in);
	if (in->shift < 1 || in->shift > 62)
		return npu_isa_fail(c, PARAM, "shift", "shift %u is outside 1..62",
				    in->shift);
	TRY(in_out(c, in->input, in->output, in->rows, in->c, in->in_stride,
		   in->out_stride, 1, &f));
	f.cycles = row_passes(in->rows, in->c, 1, 1);
	if (fp)
		*fp = f;
	return NPU_JOB_OK;
}

uint32_t npu_op_softmax_check(const struct npu_insn_softmax *in,
			      struct npu_op_footprint *fp)
{
	return npu_op_softmax_validate(in, fp, NULL);
}

uint32_t npu_op_layernorm_check(const struct npu_insn_layernorm *in,
				struct npu_op_footprint *fp)
{
	return npu_op_layernorm_validate(in, fp, NULL);
}

uint32_t npu_op_reduce_check(const struct npu_insn_reduce *in,
			     struct npu_op_footprint *fp)
{
	return npu_op_reduce_validate(in, fp, NULL);
}

/* ---------------------------------------------------------------------------
 * The per-row arithmetic both paths end in (npu_hw.h)
 */

static int8_t clamp8(int64_t v, int8_t lo, int8_t hi)
{
	return (int8_t)npu_clamp64(v, lo, hi);
}

static uint32_t ld_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* floor(sqrt(v)) exactly, bit by bit (no floating point on the device). */
static uint64_t isqrt64(uint64_t v)
{
	uint64_t r = 0;

	for (int b = 31; b >= 0; b--) {
		uint64_t t = r | (1ull << b);

		if (t * t <= v)
			r = t;
	}
	return r;
}

static uint64_t ln_rsqrt(uint32_t n, int64_t s1, int64_t s2, uint32_t eps)
{
	/* c * s2 >= s1^2 (Cauchy-Schwarz), so D >= eps >= 0. */
	uint64_t d = (uint64_t)((int64_t)n * s2 - s1 * s1) + eps;

	if (!d)
		d = 1;
	return isqrt64((1ull << 62) / d);
}

static int8_t ln_out(const struct npu_insn_layernorm *in, const uint8_t *params,
		     uint32_t k, int8_t x, int64_t s1, uint64_t r)
{
	int64_t d = (int64_t)in->c * x - s1;
	int64_t t = (d * (int64_t)r + (1 << 15)) >> 16;
	int64_t mult = npu_ld_i32(params + 4 * (size_t)k);
	int64_t bias = npu_ld_i32(params + 4 * ((size_t)in->c + k));
	int64_t v = t * mult + bias + ((int64_t)1 << (in->shift - 1));

	return clamp8((v >> in->shift) + in->zp_out, in->act_min, in->act_max);
}

static int8_t sm_out(const struct npu_insn_softmax *in, uint32_t e, uint64_t inv)
{
	npu_u128 v = (npu_u128)e * inv * (uint32_t)in->mult;

	v += (npu_u128)1 << (in->shift - 1);
	v >>= in->shift;
	/* e <= sum, so e * inv <= 2^62 and v < 2^93: clamp before narrowing. */
	if (v > 255)
		v = 255;
	return clamp8((int64_t)v + in->zp_out, in->act_min, in->act_max);
}

static int8_t red_out(const struct npu_insn_reduce *in, int64_t acc)
{
	/* |acc| <= 255 * 65535 < 2^24, |mult| < 2^31: the product fits. */
	int64_t v = acc * in->mult + ((int64_t)1 << (in->shift - 1));

	return clamp8((v >> in->shift) + in->zp_out, in->act_min, in->act_max);
}

/* ---------------------------------------------------------------------------
 * References: one element at a time, as npu_hw.h reads.
 */

void npu_ref_softmax(const struct npu_insn_softmax *in, uint8_t *sram)
{
	const uint8_t *table = sram + in->table;

	if (npu_op_softmax_check(in, NULL))
		return;
	for (uint32_t r = 0; r < in->rows; r++) {
		const int8_t *x = (const int8_t *)(sram + in->input +
						   (size_t)r * in->in_stride);
		int8_t *y = (int8_t *)(sram + in->output + (size_t)r * in->out_stride);
		int32_t m = -128;
		uint64_t sum = 0, inv;

		for (uint32_t i = 0; i < in->c; i++)
			if (x[i] > m)
				m = x[i];
		for (uint32_t i = 0; i < in->c; i++)
			sum += ld_u32(table + 4 * (size_t)(m - x[i]));
		inv = sum ? (1ull << 62) / sum : 0;
		/* reads of row r finish before its writes (in place is allowed) */
		for (uint32_t i = 0; i < in->c; i++) {
			uint32_t e = ld_u32(table + 4 * (size_t)(m - x[i]));

			y[i] = sum ? sm_out(in, e, inv) :
				     clamp8(in->zp_out, in->act_min, in->act_max);
		}
	}
}

void npu_ref_layernorm(const struct npu_insn_layernorm *in, uint8_t *sram)
{
	const uint8_t *params = sram + in->params;

	if (npu_op_layernorm_check(in, NULL))
		return;
	for (uint32_t r = 0; r < in->rows; r++) {
		const int8_t *x = (const int8_t *)(sram + in->input +
						   (size_t)r * in->in_stride);
		int8_t *y = (int8_t *)(sram + in->output + (size_t)r * in->out_stride);
		int64_t s1 = 0, s2 = 0;
		uint64_t rs;

		for (uint32_t i = 0; i < in->c; i++) {
			s1 += x[i];
			s2 += (int64_t)x[i] * x[i];
		}
		rs = ln_rsqrt(in->c, s1, s2, in->eps);
		for (uint32_t i = 0; i < in->c; i++)
			y[i] = ln_out(in, params, i, x[i], s1, rs);
	}
}

void npu_ref_reduce(const struct npu_insn_reduce *in, uint8_t *sram)
{
	if (npu_op_reduce_check(in, NULL))
		return;
	for (uint32_t r = 0; r < in->rows; r++) {
		const int8_t *x = (const int8_t *)(sram + in->input +
						   (size_t)r * in->in_stride);
		int64_t acc;

		if (in->mode == NPU_REDUCE_MAX) {
			acc = -128;
			for (uint32_t i = 0; i < in->c; i++)
				if (x[i] > acc)
					acc = x[i];
			acc -= in->zp_in;
		} else {
			acc = 0;
			for (uint32_t i = 0; i < in->c; i++)
				acc += x[i] - in->zp_in;
		}
		sram[in->output + (size_t)r * in->out_stride] =
			(uint8_t)red_out(in, acc);
	}
}

/* ---------------------------------------------------------------------------
 * Fast path: row statistics per instruction set.
 */

struct row_stats {
	int32_t max;
	int64_t sum, sumsq;
};

static void stats_portable(const int8_t *x, uint32_t n, struct row_stats *s)
{
	int32_t m = -128, sum = 0;
	int64_t sq = 0;

	/* |sum| <= 128 * 65535 fits int32; squares in int64 */
	for (uint32_t i = 0; i < n; i++) {
		m = x[i] > m ? x[i] : m;
		sum += x[i];
		sq += x[i] * x[i];
	}
	s->max = m;
	s->sum = sum;
	s->sumsq = sq;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/*
 * 16 elements per step: int16 lanes; madd gives 32-bit pair sums of
 * squares, each lane at most c / 16 * 2 * 128^2 = c * 2048 < 2^27.
 */
__attribute__((target("avx2")))
static void stats_avx2(const int8_t *x, uint32_t n, struct row_stats *s)
{
	__m256i vmax = _mm256_set1_epi16(-128), vsum = _mm256_setzero_si256();
	__m256i vsq = _mm256_setzero_si256(), ones = _mm256_set1_epi16(1);
	int32_t lanes[8];
	int16_t mx[16];
	uint32_t i = 0;
	struct row_stats t;

	for (; i + 16 <= n; i += 16) {
		__m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(x + i)));

		vmax = _mm256_max_epi16(vmax, v);
		vsum = _mm256_add_epi32(vsum, _mm256_madd_epi16(v, ones));
		vsq = _mm256_add_epi32(vsq, _mm256_madd_epi16(v, v));
	}
	stats_portable(x + i, n - i, &t);
	_mm256_storeu_si256((__m256i *)(void *)mx, vmax);
	for (int j = 0; j < 16; j++)
		t.max = mx[j] > t.max ? mx[j] : t.max;
	_mm256_storeu_si256((__m256i *)(void *)lanes, vsum);
	for (int j = 0; j < 8; j++)
		t.sum += lanes[j];
	_mm256_storeu_si256((__m256i *)(void *)lanes, vsq);
	for (int j = 0; j < 8; j++)
		t.sumsq += (uint32_t)lanes[j];
	*s = t;
}

__attribute__((target("avx512f,avx512bw")))
static void stats_avx512(const int8_t *x, uint32_t n, struct row_stats *s)
{
	__m512i vmax = _mm512_set1_epi16(-128), vsum = _mm512_setzero_si512();
	__m512i vsq = _mm512_setzero_si512(), ones = _mm512_set1_epi16(1);
	int32_t lanes[16];
	int16_t mx[32];
	uint32_t i = 0;
	struct row_stats t;

	for (; i + 32 <= n; i += 32) {
		__m512i v = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(x + i)));

		vmax = _mm512_max_epi16(vmax, v);
		vsum = _mm512_add_epi32(vsum, _mm512_madd_epi16(v, ones));
		vsq = _mm512_add_epi32(vsq, _mm512_madd_epi16(v, v));
	}
	stats_portable(x + i, n - i, &t);
	_mm512_storeu_si512((void *)mx, vmax);
	for (int j = 0; j < 32; j++)
		t.max = mx[j] > t.max ? mx[j] : t.max;
	_mm512_storeu_si512((void *)lanes, vsum);
	for (int j = 0; j < 16; j++)
		t.sum += lanes[j];
	_mm512_storeu_si512((void *)lanes, vsq);
	for (int j = 0; j < 16; j++)
		t.sumsq += (uint32_t)lanes[j];
	*s = t;
}
#endif

typedef void (*stats_fn)(const int8_t *x, uint32_t n, struct row_stats *s);

static stats_fn stats_get(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	const char *impl = npu_ops_impl_name();

	/* npu_ops.c only picks a set the CPU supports */
	if (!strcmp(impl, "avx512vnni"))
		return stats_avx512;
	if (!strcmp(impl, "avx2"))
		return stats_avx2;
#endif
	return stats_portable;
}

void npu_op_softmax(const struct npu_insn_softmax *in, uint8_t *sram)
{
	const uint8_t *table = sram + in->table;
	stats_fn stats = stats_get();
	const struct npu_kern *kern = npu_kern_current();
	uint32_t tab[256];
	uint8_t ytab[256] = { 0 };	/* entries above a row's max are never read */

	if (npu_op_softmax_check(in, NULL))
		return;
	for (int j = 0; j < 256; j++)
		tab[j] = ld_u32(table + 4 * j);
	for (uint32_t r = 0; r < in->rows; r++) {
		const int8_t *x = (const int8_t *)(sram + in->input +
						   (size_t)r * in->in_stride);
		int8_t *y = (int8_t *)(sram + in->output + (size_t)r * in->out_stride);
		struct row_stats st;
		uint64_t sum = 0, inv;
		int8_t zero = clamp8(in->zp_out, in->act_min, in->act_max);

		stats(x, in->c, &st);
		for (uint32_t i = 0; i < in->c; i++)
			sum += tab[st.max - x[i]];
		if (!sum) {
			memset(y, (uint8_t)zero, in->c);
			continue;
		}
		inv = (1ull << 62) / sum;
		if (in->c <= 256) {
			for (uint32_t i = 0; i < in->c; i++)
				y[i] = sm_out(in, tab[st.max - x[i]], inv);
			continue;
		}
		/*
		 * A long row: an output depends only on x, so requantize the at
		 * most 256 values once and map the row through them as a LUT.
		 */
		for (int32_t v = -128; v <= st.max; v++)
			ytab[v + 128] = (uint8_t)sm_out(in, tab[st.max - v], inv);
		kern->lut_i8(ytab, (const uint8_t *)x, (uint8_t *)y, in->c);
	}
}

void npu_op_layernorm(const struct npu_insn_layernorm *in, uint8_t *sram)
{
	const uint8_t *params = sram + in->params;
	stats_fn stats = stats_get();

	if (npu_op_layernorm_check(in, NULL))
		return;
	for (uint32_t r = 0; r < in->rows; r++) {
		const int8_t *x = (const int8_t *)(sram + in->input +
						   (size_t)r * in->in_stride);
		int8_t *y = (int8_t *)(sram + in->output + (size_t)r * in->out_stride);
		struct row_stats st;
		uint64_t rs;

		stats(x, in->c, &st);
		rs = ln_rsqrt(in->c, st.sum, st.sumsq, in->eps);
		for (uint32_t i = 0; i < in->c; i++)
			y[i] = ln_out(in, params, i, x[i], st.sum, rs);
	}
}

void npu_op_reduce(const struct npu_insn_reduce *in, uint8_t *sram)
{
	stats_fn stats = stats_get();

	if (npu_op_reduce_check(in, NULL))
		return;
	for (uint32_t r = 0; r < in->rows; r++) {
		const int8_t *x = (const int8_t *)(sram + in->input +
						   (size_t)r * in->in_stride);
		struct row_stats st;
		int64_t acc;

		stats(x, in->c, &st);
		acc = in->mode == NPU_REDUCE_MAX ? st.max - in->zp_in :
			st.sum - (int64_t)in->c * in->zp_in;
		sram[in->output + (size_t)r * in->out_stride] =
			(uint8_t)red_out(in, acc);
	}
}
