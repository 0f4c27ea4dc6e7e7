// SPDX-License-Identifier: MIT
/*
 * npu_kern_portable.c - the kernels in plain C11, for hosts without AVX2
 * and as the baseline the vector kernels are measured against. Sums are
 * kept in uint32_t: the device accumulator wraps, and signed overflow in
 * C would not.
 */
#include "npu_ops_internal.h"

static inline uint32_t dot_exact(const int8_t *a, const int8_t *b, uint32_t k,
				 int32_t za, int32_t zb)
{
	uint32_t acc = 0;

	for (uint32_t i = 0; i < k; i++)
		acc += (uint32_t)((a[i] - za) * (b[i] - zb));
	return acc;
}

void npu_portable_gemm(const struct npu_gemm *g)
{
	const struct npu_rq *rq = &g->rq;

	for (uint32_t i = 0; i < g->m; i++) {
		const int8_t *a = g->arow[i];
		uint32_t row = g->row ? (uint32_t)g->row[i] : 0;

		for (uint32_t j = 0; j < g->n; j++) {
			uint32_t acc = dot_exact(a, g->b + j * g->ldb, g->k,
						 g->za, g->zb);

			acc += (uint32_t)rq->col[j] + row;
			g->orow[i][j] = npu_requant((int32_t)acc, rq->mult[j],
						    (uint32_t)rq->shift[j], rq->zp_out,
						    rq->act_min, rq->act_max);
		}
	}
}

void npu_portable_dw(const struct npu_dw *d)
{
	const struct npu_rq *rq = &d->rq;
	uint32_t acc[64];

	for (uint32_t oh = d->oh_begin; oh < d->oh_end; oh++)
	for (uint32_t ow = 0; ow < d->out_w; ow++) {
		int8_t *out = d->out + oh * d->out_rs + ow * d->out_ps;

		/* Channel blocks keep the accumulators in L1 for any c. */
		for (uint32_t c0 = 0; c0 < d->c; c0 += 64) {
			uint32_t nc = d->c - c0 < 64 ? d->c - c0 : 64;

			for (uint32_t c = 0; c < nc; c++)
				acc[c] = (uint32_t)rq->col[c0 + c];
			for (uint32_t kh = 0; kh < d->k_h; kh++) {
				int64_t ih = (int64_t)oh * d->stride_h - d->pad_top +
					     (int64_t)kh * d->dil_h;

				if (ih < 0 || ih >= d->in_h)
					continue;
				for (uint32_t kw = 0; kw < d->k_w; kw++) {
					int64_t iw = (int64_t)ow * d->stride_w -
						     d->pad_left + (int64_t)kw * d->dil_w;
					const int8_t *x;
					const int32_t *w;

					if (iw < 0 || iw >= d->in_w)
						continue;
					x = d->in + ih * d->in_rs + iw * d->in_ps + c0;
					w = d->wt + (size_t)(kh * d->k_w + kw) * d->cpad + c0;
					for (uint32_t c = 0; c < nc; c++)
						acc[c] += (uint32_t)((x[c] - d->zp_in) * w[c]);
				}
			}
			for (uint32_t c = 0; c < nc; c++)
				out[c0 + c] = npu_requant((int32_t)acc[c], rq->mult[c0 + c],
							  (uint32_t)rq->shift[c0 + c],
							  rq->zp_out, rq->act_min,
							  rq->act_max);
		}
	}
}

uint32_t npu_portable_sum_i8(const int8_t *p, uint32_t k)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i < k; i++)
		s += (uint32_t)p[i];
	return s;
}

/* Blocks of 256 products (each < 2^23) cannot overflow int32. */
int64_t npu_portable_dot16(const int16_t *a, const int16_t *b, uint32_t k)
{
	int64_t sum = 0;

	for (uint32_t k0 = 0; k0 < k; k0 += 256) {
		uint32_t len = k - k0 < 256 ? k - k0 : 256;
		int32_t s = 0;

		for (uint32_t i = 0; i < len; i++)
			s += a[k0 + i] * b[k0 + i];
		sum += s;
	}
	return sum;
}

void npu_portable_dot16x4(const int16_t *a, const int16_t *b, size_t ldb, uint32_t k,
			  int64_t out[4])
{
	for (int j = 0; j < 4; j++)
		out[j] = npu_portable_dot16(a, b + (size_t)j * ldb, k);
}

void npu_portable_mac16(int32_t *acc, const int16_t *x, const int16_t *w, uint32_t c)
{
	for (uint32_t i = 0; i < c; i++)
		acc[i] += x[i] * w[i];
}

void npu_portable_elt_i8(const struct npu_elt *e, const int8_t *a, const int8_t *b,
			 int b_scalar, int8_t *out, uint32_t n)
{
	int64_t za = e->za, zb = e->zb, ma = e->ma, mb = e->mb;

	if (b_scalar) {
		int64_t bv = b[0] - zb;

		/* Fold the constant operand: one multiply-add per element. */
		if (e->mode == NPU_ELT_ADD)
			for (uint32_t i = 0; i < n; i++)
				out[i] = npu_requant64((a[i] - za) * ma + bv * mb,
						       e->shift, e->zp_out, e->lo, e->hi);
		else
			for (uint32_t i = 0; i < n; i++)
				out[i] = npu_requant64((a[i] - za) * (bv * ma),
						       e->shift, e->zp_out, e->lo, e->hi);
	} else if (e->mode == NPU_ELT_ADD) {
		for (uint32_t i = 0; i < n; i++)
			out[i] = npu_requant64((a[i] - za) * ma + (b[i] - zb) * mb,
					       e->shift, e->zp_out, e->lo, e->hi);
	} else {
		for (uint32_t i = 0; i < n; i++)
			out[i] = npu_requant64((a[i] - za) * (b[i] - zb) * ma,
					       e->shift, e->zp_out, e->lo, e->hi);
	}
}

void npu_portable_lut_i8(const uint8_t *table, const uint8_t *src, uint8_t *dst,
			 size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = table[(uint8_t)(src[i] + 128)];
}

const struct npu_kern npu_kern_portable = {
	.name = "portable",
	.dot_kind = NPU_DOT_EXACT,
	.gemm = npu_portable_gemm,
	.dw = npu_portable_dw,
	.sum_i8 = npu_portable_sum_i8,
	.dot16 = npu_portable_dot16,
	.dot16x4 = npu_portable_dot16x4,
	.mac16 = npu_portable_mac16,
	.elt_i8 = npu_portable_elt_i8,
	.lut_i8 = npu_portable_lut_i8,
};
