// SPDX-License-Identifier: MIT
#include "compiler/quant.h"

#include <float.h>
#include <math.h>
#include <string.h>

bool npu_requant_from_real(double real, struct npu_requant *out)
{
	int64_t mult;
	int exp;
	int shift;
	double m;

	if (!(real > 0.0) || !isfinite(real))
		return false;
	m = frexp(real, &exp);		/* real = m * 2^exp, m in [0.5, 1) */
	mult = llround(m * 2147483648.0);
	if (mult == (1ll << 31)) {	/* m rounded up to 1.0 */
		mult >>= 1;
		exp++;
	}
	shift = 31 - exp;
	if (shift < 1)
		return false;
	/* Tiny multipliers: give up low bits of precision to keep shift <= 62. */
	while (shift > 62) {
		mult = (mult + 1) >> 1;
		shift--;
	}
	out->mult = (int32_t)mult;
	out->shift = (uint8_t)shift;
	return true;
}

int8_t npu_requant_apply(int64_t acc, struct npu_requant rq, int32_t zp_out,
			 int8_t act_min, int8_t act_max)
{
	int64_t v = acc * (int64_t)rq.mult + (1ll << (rq.shift - 1));

	v = (v >> rq.shift) + zp_out;
	if (v < act_min)
		v = act_min;
	if (v > act_max)
		v = act_max;
	return (int8_t)v;
}

struct npu_qparams npu_qparams_from_range(float min, float max)
{
	struct npu_qparams q;
	double zp;

	if (!isfinite(min) || !isfinite(max) || min > max)
		min = max = 0.0f;
	min = fminf(min, 0.0f);
	max = fmaxf(max, 0.0f);
	q.scale = (max - min) / 255.0f;
	if (!(q.scale > FLT_MIN * 1024.0f))
		q.scale = 1e-8f;
	zp = nearbyint(-128.0 - (double)min / q.scale);
	q.zero_point = zp < -128.0 ? -128 : zp > 127.0 ? 127 : (int32_t)zp;
	return q;
}

int8_t npu_quantize_value(float x, struct npu_qparams q)
{
	double v = nearbyint((double)x / q.scale) + q.zero_point;

	if (!(v >= -128.0))	/* also catches NaN */
		return v > 0 ? 127 : -128;
	if (v > 127.0)
		return 127;
	return (int8_t)v;
}

float npu_dequantize_value(int8_t q, struct npu_qparams p)
{
	return p.scale * (float)((int32_t)q - p.zero_point);
}

void npu_quantize_weights_per_channel(const float *w, size_t channels,
				      size_t per_channel, int8_t *q,
				      float *scales)
{
	size_t c, i;

	for (c = 0; c < channels; c++) {
		const float *row = w + c * per_channel;
		float max_abs = 0.0f;

		for (i = 0; i < per_channel; i++)
			max_abs = fmaxf(max_abs, fabsf(row[i]));
		scales[c] = max_abs > 0.0f ? max_abs / 127.0f : 1.0f;
		for (i = 0; i < per_channel; i++) {
			float v = nearbyintf(row[i] / scales[c]);

			v = fminf(fmaxf(v, -127.0f), 127.0f);
			q[c * per_channel + i] = (int8_t)v;
		}
	}
}

int32_t npu_quantize_bias(float bias, float input_scale, float weight_scale)
{
	double v = nearbyint((double)bias / ((double)input_scale * weight_scale));

	if (!(v >= (double)INT32_MIN))
		return v > 0 ? INT32_MAX : INT32_MIN;
	if (v > (double)INT32_MAX)
		return INT32_MAX;
	return (int32_t)v;
}

void npu_calib_init(struct npu_calib_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->min = FLT_MAX;
	st->max = -FLT_MAX;
}

/* Double the histogram range: bin i of [-R, R] lands in B/4 + i/2 of [-2R, 2R]. */
static void calib_grow(struct npu_calib_stats *st)
{
	uint64_t merged[NPU_CALIB_BINS] = { 0 };
	size_t i;

	for (i = 0; i < NPU_CALIB_BINS; i++)
		merged[NPU_CALIB_BINS / 4 + i / 2] += st->bins[i];
	memcpy(st->bins, merged, sizeof(merged));
	st->range *= 2.0;
}

void npu_calib_observe(struct npu_calib_stats *st, const float *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double v = x[i];
		long bin;

		if (!isfinite(v))
			continue;
		if (x[i] < st->min)
			st->min = x[i];
		if (x[i] > st->max)
			st->max = x[i];
		if (st->range == 0.0) {
			if (v == 0.0) {
				st->count++;
				continue;	/* counted, binned once a range exists */
			}
			st->range = fabs(v) * 1.5;
		}
		while (fabs(v) >= st->range)
			calib_grow(st);
		bin = (long)((v + st->range) / (2.0 * st->range) * NPU_CALIB_BINS);
		if (bin < 0)
			bin = 0;
		if (bin >= NPU_CALIB_BINS)
			bin = NPU_CALIB_BINS - 1;
		st->bins[bin]++;
		st->count++;
	}
}

static double calib_bin_edge(const struct npu_calib_stats *st, size_t i)
{
	return -st->range + 2.0 * st->range * (double)i / NPU_CALIB_BINS;
}

static void calib_percentile(const struct npu_calib_stats *st, double pct,
			     double *lo, double *hi)
{
	uint64_t binned = 0, acc;
	double tail;
	size_t i;

	for (i = 0; i < NPU_CALIB_BINS; i++)
		binned += st->bins[i];
	tail = (100.0 - pct) / 100.0 * (double)binned;
	for (i = 0, acc = 0; i < NPU_CALIB_BINS; i++) {
		acc += st->bins[i];
		if ((double)acc > tail)
			break;
	}
	*lo = calib_bin_edge(st, i);
	for (i = NPU_CALIB_BINS, acc = 0; i > 0; i--) {
		acc += st->bins[i - 1];
		if ((double)acc > tail)
			break;
	}
	*hi = calib_bin_edge(st, i);
}

/*
 * KL-divergence threshold search on the folded |x| histogram: for each
 * candidate threshold, compare the clipped distribution P with its 128-level
 * quantization Q and keep the threshold with the smallest KL(P || Q).
 */
static double calib_entropy_threshold(const struct npu_calib_stats *st)
{
	enum { HALF = NPU_CALIB_BINS / 2, LEVELS = 128 };
	static const double eps = 1e-12;
	double folded[HALF], p[HALF], q[HALF];
	double best_kl = DBL_MAX;
	size_t best = HALF, i, t;

	for (i = 0; i < HALF; i++)
		folded[i] = (double)st->bins[HALF + i] + (double)st->bins[HALF - 1 - i];

	for (t = LEVELS; t <= HALF; t++) {
		double outliers = 0.0, psum = 0.0, kl = 0.0;
		size_t level;

		for (i = t; i < HALF; i++)
			outliers += folded[i];
		for (i = 0; i < t; i++)
			p[i] = folded[i];
		p[t - 1] += outliers;	/* clipping maps outliers to the edge */
		for (level = 0; level < LEVELS; level++) {
			size_t b0 = level * t / LEVELS, b1 = (level + 1) * t / LEVELS;
			double sum = 0.0;
			size_t nonzero = 0;

			for (i = b0; i < b1; i++) {
				sum += p[i];
				nonzero += p[i] > 0.0;
			}
			for (i = b0; i < b1; i++)
				q[i] = p[i] > 0.0 ? sum / (double)nonzero : 0.0;
		}
		for (i = 0; i < t; i++)
			psum += p[i];
		if (psum <= 0.0)
			continue;
		for (i = 0; i < t; i++) {
			double qsum_norm = q[i] / psum;
			double pn = p[i] / psum;

			if (pn > 0.0)
				kl += pn * log(pn / (qsum_norm > eps ? qsum_norm : eps));
		}
		if (kl < best_kl) {
			best_kl = kl;
			best = t;
		}
	}
	return st->range * (double)best / HALF;
}

void npu_calib_range(const struct npu_calib_stats *st,
		     enum npu_calib_method method, double percentile,
		     float *min, float *max)
{
	double lo = st->min, hi = st->max;

	if (st->count == 0 || st->min > st->max) {
		*min = 0.0f;
		*max = 0.0f;
		return;
	}
	if (st->range > 0.0) {
		if (method == NPU_CALIB_PERCENTILE) {
			calib_percentile(st, percentile, &lo, &hi);
		} else if (method == NPU_CALIB_ENTROPY) {
			double t = calib_entropy_threshold(st);

			lo = -t;
			hi = t;
		}
	}
	/* Never widen past what was observed. */
	*min = (float)fmax(lo, st->min);
	*max = (float)fmin(hi, st->max);
	if (*min > *max)
		*min = *max;
}
