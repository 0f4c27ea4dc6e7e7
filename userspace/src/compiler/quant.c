// SPDX-License-Identifier: MIT
#include "compiler/quant.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
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

/*
 * The step of an int8 grid the row already lies on (a QDQ model's weights
 * arrive dequantized: s * q with max |q| = m <= 127): the finest s = max / m
 * that puts every value within 1/1000 of a step of an integer, or 0. Keeping
 * it makes requantizing them exact instead of rounding them a second time.
 */
static float grid_step(const float *row, size_t n, float max_abs)
{
	int m;

	for (m = 127; m >= 1; m--) {
		double step = (double)max_abs / m;
		size_t i;

		for (i = 0; i < n; i++) {
			double v = row[i] / step;

			if (fabs(v - nearbyint(v)) > 1e-3)
				break;
		}
		if (i == n)
			return (float)step;
	}
	return 0.0f;
}

void npu_quantize_weights_per_channel(const float *w, size_t channels,
				      size_t per_channel, int8_t *q,
				      float *scales)
{
	size_t c, i;

	for (c = 0; c < channels; c++) {
		const float *row = w + c * per_channel;
		float max_abs = 0.0f, grid;

		for (i = 0; i < per_channel; i++)
			max_abs = fmaxf(max_abs, fabsf(row[i]));
		grid = max_abs > 0.0f ? grid_step(row, per_channel, max_abs) : 0.0f;
		scales[c] = grid > 0.0f ? grid : max_abs > 0.0f ? max_abs / 127.0f : 1.0f;
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

struct npu_qparams npu_qparams16_from_range(float min, float max)
{
	struct npu_qparams q = { 0.0f, 0 };
	float m;

	if (!isfinite(min) || !isfinite(max) || min > max)
		min = max = 0.0f;
	m = fmaxf(fabsf(min), fabsf(max));
	q.scale = m / 32767.0f;
	if (!(q.scale > FLT_MIN * 1024.0f))
		q.scale = 1e-8f;
	return q;
}

int16_t npu_quantize_value16(float x, struct npu_qparams q)
{
	double v = nearbyint((double)x / q.scale);

	if (!(v >= -32767.0))	/* also catches NaN */
		return v > 0 ? 32767 : -32767;
	if (v > 32767.0)
		return 32767;
	return (int16_t)v;
}

float npu_dequantize_value16(int16_t q, struct npu_qparams p)
{
	return p.scale * (float)q;
}

int64_t npu_quantize_bias64(float bias, float input_scale, float weight_scale)
{
	double v = nearbyint((double)bias / ((double)input_scale * weight_scale));

	/* 2^63 is exact in a double; INT64_MAX is not */
	if (!(v >= -9223372036854775808.0))
		return v > 0 ? INT64_MAX : INT64_MIN;
	if (v >= 9223372036854775808.0)
		return INT64_MAX;
	return (int64_t)v;
}

/* |acc * mult| < 2^95: the device's 128-bit product (GCC and clang). */
__extension__ typedef __int128 quant_i128;

int16_t npu_requant16_apply(int64_t acc, struct npu_requant rq, int8_t act_min,
			    int8_t act_max)
{
	quant_i128 v = (quant_i128)acc * rq.mult + ((quant_i128)1 << (rq.shift - 1));
	int32_t lo = act_min * 256, hi = act_max * 256 + 255;

	v >>= rq.shift;
	return (int16_t)(v < lo ? lo : v > hi ? hi : v);
}

float npu_lut16_knot(int j, struct npu_qparams in)
{
	return in.scale * (float)(j * 128 - 32768);
}

void npu_lut16_table(const float y[513], struct npu_qparams out, int16_t table[513])
{
	for (int j = 0; j < 513; j++) {
		double v = nearbyint((double)y[j] / out.scale);

		/* a knot's value must fit int16 even past the range (j = 512) */
		table[j] = !(v >= -32768.0) ? (v > 0 ? 32767 : -32768) :
			   v > 32767.0 ? 32767 : (int16_t)v;
	}
}

void npu_calib_init(struct npu_calib_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->min = FLT_MAX;
	st->max = -FLT_MAX;
}

/*
 * Calibration looks at every activation of every sample: pass 1 keeps
 * LANES independent running minima, maxima and counts, which the compiler
 * vectorizes (the same result as one running value: min and max do not
 * depend on the order, and only finite values count).
 */
#define LANES 16

void npu_calib_observe_minmax(struct npu_calib_stats *st, const float *x, size_t n)
{
	float mn[LANES], mx[LANES];
	uint32_t seen[LANES];
	uint64_t total = 0;
	size_t i = 0, j;

	for (j = 0; j < LANES; j++) {
		mn[j] = st->min;
		mx[j] = st->max;
		seen[j] = 0;
	}
	while (i + LANES <= n) {
		/* Blocks of at most 2^31 lanes' worth keep the counts exact. */
		size_t end = n - i > ((size_t)1 << 31) ? i + ((size_t)1 << 31) : n;

		for (; i + LANES <= end; i += LANES)
			for (j = 0; j < LANES; j++) {
				float v = x[i + j];
				bool fin = fabsf(v) <= FLT_MAX;	/* not NaN, not +-inf */

				mn[j] = fin && v < mn[j] ? v : mn[j];
				mx[j] = fin && v > mx[j] ? v : mx[j];
				seen[j] += fin;
			}
		for (j = 0; j < LANES; j++) {
			total += seen[j];
			seen[j] = 0;
		}
	}
	for (; i < n; i++) {
		if (!isfinite(x[i]))
			continue;
		mn[0] = x[i] < mn[0] ? x[i] : mn[0];
		mx[0] = x[i] > mx[0] ? x[i] : mx[0];
		total++;
	}
	for (j = 0; j < LANES; j++) {
		st->min = mn[j] < st->min ? mn[j] : st->min;
		st->max = mx[j] > st->max ? mx[j] : st->max;
	}
	st->seen += total;
}

void npu_calib_hist_begin(struct npu_calib_stats *st)
{
	memset(st->bins, 0, sizeof(st->bins));
	st->count = 0;
	st->zeros = 0;
	st->lo = st->hi = 0.0;
	if (!st->seen || st->min > st->max)
		return;
	/* The quantizer's range always holds 0: so does the histogram's. */
	st->lo = fmin(st->min, 0.0);
	st->hi = fmax(st->max, 0.0);
}

void npu_calib_observe_hist(struct npu_calib_stats *st, const float *x, size_t n)
{
	double lo = st->lo, k = st->hi > st->lo ? NPU_CALIB_BINS / (st->hi - st->lo) : 0.0;
	size_t i;

	for (i = 0; i < n; i++) {
		double v = x[i];
		long bin;

		if (!isfinite(v))
			continue;
		st->count++;
		if (v == 0.0) {		/* exact after quantization: kept apart */
			st->zeros++;
			continue;
		}
		/* Values outside pass 1's range (data changed) land on an edge. */
		bin = (long)((v - lo) * k);
		bin = bin < 0 ? 0 : bin >= NPU_CALIB_BINS ? NPU_CALIB_BINS - 1 : bin;
		st->bins[bin]++;
	}
}

void npu_calib_observe(struct npu_calib_stats *st, const float *x, size_t n)
{
	npu_calib_observe_minmax(st, x, n);
	npu_calib_hist_begin(st);
	npu_calib_observe_hist(st, x, n);
}

static double hist_width(const struct npu_calib_stats *st)
{
	return (st->hi - st->lo) / NPU_CALIB_BINS;
}

static double hist_edge(const struct npu_calib_stats *st, size_t i)
{
	return st->lo + hist_width(st) * (double)i;
}

/* The bin edge nearest to 0: candidate ranges never cross it. */
static size_t hist_zero_edge(const struct npu_calib_stats *st)
{
	double z = nearbyint(-st->lo / hist_width(st));

	return z < 0 ? 0 : z > NPU_CALIB_BINS ? NPU_CALIB_BINS : (size_t)z;
}

/* Clip (100 - pct)% of the binned values off each tail (both tails). */
static void calib_percentile(const struct npu_calib_stats *st, double pct,
			     double *lo, double *hi)
{
	double tail = (100.0 - pct) / 100.0 * (double)(st->count - st->zeros);
	uint64_t acc;
	size_t i;

	for (i = 0, acc = 0; i < NPU_CALIB_BINS; i++) {
		acc += st->bins[i];
		if ((double)acc > tail)
			break;
	}
	*lo = hist_edge(st, i);
	for (i = NPU_CALIB_BINS, acc = 0; i > 0; i--) {
		acc += st->bins[i - 1];
		if ((double)acc > tail)
			break;
	}
	*hi = hist_edge(st, i);
}

/*
 * Prefix sums over bin centres c_k with counts n_k: N = sum n, S1 = sum n c,
 * S2 = sum n c^2, so the clipping error of everything left of a (or right
 * of b) is a closed form: sum n (a - c)^2 = a^2 N - 2 a S1 + S2.
 */
struct mse_sums {
	double n[NPU_CALIB_BINS + 1], s1[NPU_CALIB_BINS + 1], s2[NPU_CALIB_BINS + 1];
};

static double mse_of(const struct npu_calib_stats *st, const struct mse_sums *p,
		     size_t i, size_t j, double a, double b)
{
	double nl = p->n[i], s1l = p->s1[i], s2l = p->s2[i];
	double nr = p->n[NPU_CALIB_BINS] - p->n[j];
	double s1r = p->s1[NPU_CALIB_BINS] - p->s1[j], s2r = p->s2[NPU_CALIB_BINS] - p->s2[j];
	double step = (b - a) / 255.0, inside = p->n[j] - p->n[i];

	(void)st;
	/* Inside: rounding noise of a uniform error over one step; exact
	 * zeros are not binned and cost nothing. */
	return a * a * nl - 2 * a * s1l + s2l + b * b * nr - 2 * b * s1r + s2r +
	       inside * step * step / 12.0;
}

/*
 * The range [a, b] (a <= 0 <= b, on bin edges) minimizing the expected
 * squared error of quantizing the histogram to 256 levels: a coarse grid
 * of at most 128 edges per side, then every edge around the best.
 */
static void calib_mse(const struct npu_calib_stats *st, double *lo, double *hi)
{
	struct mse_sums *p = malloc(sizeof(*p));
	size_t z = hist_zero_edge(st), si, sj, i, j, bi = 0, bj = NPU_CALIB_BINS, pass;
	double best = DBL_MAX;

	if (!p)
		return;		/* keep min / max */
	p->n[0] = p->s1[0] = p->s2[0] = 0.0;
	for (i = 0; i < NPU_CALIB_BINS; i++) {
		double c = hist_edge(st, i) + 0.5 * hist_width(st), n = (double)st->bins[i];

		p->n[i + 1] = p->n[i] + n;
		p->s1[i + 1] = p->s1[i] + n * c;
		p->s2[i + 1] = p->s2[i] + n * c * c;
	}
	si = z / 128 + 1;
	sj = (NPU_CALIB_BINS - z) / 128 + 1;
	for (pass = 0; pass < 2; pass++) {
		size_t i0 = 0, i1 = z, j0 = z, j1 = NPU_CALIB_BINS;

		if (pass) {	/* refine around the coarse optimum */
			i0 = bi > si ? bi - si : 0;
			i1 = bi + si < z ? bi + si : z;
			j0 = bj > sj + z ? bj - sj : z;
			j1 = bj + sj < NPU_CALIB_BINS ? bj + sj : NPU_CALIB_BINS;
			si = sj = 1;
		}
		for (i = i0; i <= i1; i += si) {
			double a = i == z ? 0.0 : hist_edge(st, i);

			for (j = j0; j <= j1; j += sj) {
				double b = j == z ? 0.0 : hist_edge(st, j), e;

				if (j == i)
					continue;
				e = mse_of(st, p, i, j, a, b);
				if (e < best) {
					best = e;
					bi = i;
					bj = j;
				}
			}
		}
	}
	*lo = bi == z ? 0.0 : hist_edge(st, bi);
	*hi = bj == z ? 0.0 : hist_edge(st, bj);
	free(p);
}

/*
 * KL divergence, TensorRT's method made asymmetric: the candidate range is
 * bins [i, j); P is the histogram clipped to it (the outliers added to the
 * edge bins), Q is the in-range histogram alone quantized to 256 levels
 * (each level's mass spread evenly over its non-empty bins), so clipping
 * costs what it moves. With prefix sums of n, n log n and of non-empty
 * bins one candidate costs O(levels):
 *   KL(P||Q) = (sum p log p - sum p log q) / T - log T + log T_in.
 */
struct kl_sums {
	double n[NPU_CALIB_BINS + 1], nlogn[NPU_CALIB_BINS + 1];
	size_t nz[NPU_CALIB_BINS + 1];
};

static double xlogx(double x)
{
	return x > 0.0 ? x * log(x) : 0.0;
}

static double kl_of(const struct npu_calib_stats *st, const struct kl_sums *p,
		    size_t i, size_t j)
{
	enum { LEVELS = 256 };
	static const double empty_q = 0.5;	/* Q's smoothing of an empty bin */
	double total = p->n[NPU_CALIB_BINS], left = p->n[i], right = total - p->n[j];
	double first = (double)st->bins[i] + left, last = (double)st->bins[j - 1] + right;
	double plogp, plogq = 0.0, inside = total - left - right;
	size_t len = j - i, level;

	if (inside <= 0.0)
		return DBL_MAX;
	plogp = p->nlogn[j - 1] - p->nlogn[i + 1] + xlogx(first) + xlogx(last);
	for (level = 0; level < LEVELS; level++) {
		size_t b0 = i + level * len / LEVELS, b1 = i + (level + 1) * len / LEVELS;
		double mass = p->n[b1] - p->n[b0];
		double nonzero = (double)(p->nz[b1] - p->nz[b0]);
		double q = nonzero > 0.0 ? mass / nonzero : 0.0;

		if (mass > 0.0)
			plogq += mass * log(q);
		if (b0 == i && left > 0.0)
			plogq += left * log(st->bins[i] ? q : empty_q);
		if (b1 == j && right > 0.0)
			plogq += right * log(st->bins[j - 1] ? q : empty_q);
	}
	return (plogp - plogq) / total - log(total) + log(inside);
}

static void calib_entropy(const struct npu_calib_stats *st, double *lo, double *hi)
{
	enum { MIN_BINS = 256 };
	struct kl_sums *p = malloc(sizeof(*p));
	size_t i = 0, j = NPU_CALIB_BINS, z = hist_zero_edge(st), round, k;

	if (!p)
		return;
	p->n[0] = p->nlogn[0] = 0.0;
	p->nz[0] = 0;
	for (k = 0; k < NPU_CALIB_BINS; k++) {
		p->n[k + 1] = p->n[k] + (double)st->bins[k];
		p->nlogn[k + 1] = p->nlogn[k] + xlogx((double)st->bins[k]);
		p->nz[k + 1] = p->nz[k] + (st->bins[k] != 0);
	}
	/* Coordinate descent: the top with the bottom fixed, then the bottom;
	 * each side on a 16-bin grid refined to single bins. */
	for (round = 0; round < 2; round++) {
		int side;

		for (side = 0; side < 2; side++) {
			size_t lo_k = side ? 0 : (z > i + MIN_BINS ? z : i + MIN_BINS);
			size_t hi_k = side ? (z < j - MIN_BINS ? z : j - MIN_BINS) : NPU_CALIB_BINS;
			size_t best_k = side ? i : j, step, from, to;
			double best = DBL_MAX;

			if (side ? j < MIN_BINS : i + MIN_BINS > NPU_CALIB_BINS)
				continue;
			if (lo_k > hi_k)
				continue;
			for (step = 16, from = lo_k, to = hi_k; ; step = 1) {
				for (k = from; k <= to; k += step) {
					double e = side ? kl_of(st, p, k, j) : kl_of(st, p, i, k);

					if (e < best) {
						best = e;
						best_k = k;
					}
				}
				if (step == 1)
					break;
				from = best_k > lo_k + 16 ? best_k - 16 : lo_k;
				to = best_k + 16 < hi_k ? best_k + 16 : hi_k;
			}
			if (side)
				i = best_k;
			else
				j = best_k;
		}
	}
	*lo = i == z ? 0.0 : hist_edge(st, i);
	*hi = j == z ? 0.0 : hist_edge(st, j);
	free(p);
}

void npu_calib_range(const struct npu_calib_stats *st,
		     enum npu_calib_method method, double percentile,
		     float *min, float *max)
{
	double lo = st->min, hi = st->max;

	if (st->seen == 0 || st->min > st->max) {
		*min = 0.0f;
		*max = 0.0f;
		return;
	}
	if (st->hi > st->lo && st->count > st->zeros) {
		if (method == NPU_CALIB_PERCENTILE)
			calib_percentile(st, percentile, &lo, &hi);
		else if (method == NPU_CALIB_ENTROPY)
			calib_entropy(st, &lo, &hi);
		else if (method == NPU_CALIB_MSE)
			calib_mse(st, &lo, &hi);
	}
	/* Never widen past what was observed. */
	*min = (float)fmax(lo, st->min);
	*max = (float)fmin(hi, st->max);
	if (*min > *max)
		*min = *max;
}

static const char *const method_names[] = {
	[NPU_CALIB_MINMAX] = "minmax",
	[NPU_CALIB_PERCENTILE] = "percentile",
	[NPU_CALIB_ENTROPY] = "entropy",
	[NPU_CALIB_MSE] = "mse",
};

bool npu_calib_method_parse(const char *name, enum npu_calib_method *out)
{
	size_t i;

	for (i = 0; name && i < sizeof(method_names) / sizeof(method_names[0]); i++) {
		if (!strcmp(name, method_names[i])) {
			*out = (enum npu_calib_method)i;
			return true;
		}
	}
	return false;
}

const char *npu_calib_method_name(enum npu_calib_method m)
{
	return (size_t)m < sizeof(method_names) / sizeof(method_names[0]) ? method_names[m] : "?";
}

void npu_bias_correct(const float *w, const int8_t *q, const float *scales, size_t oc,
		      size_t ic, size_t groups, size_t khw, const double *mean,
		      float *bias)
{
	size_t icg = ic / groups, ocg = oc / groups, o, i, k;

	for (o = 0; o < oc; o++) {
		const float *wr = w + o * icg * khw;
		const int8_t *qr = q + o * icg * khw;
		const double *m = mean + (o / ocg) * icg;
		double shift = 0;

		for (i = 0; i < icg; i++) {
			double d = 0;

			for (k = 0; k < khw; k++)
				d += (double)qr[i * khw + k] * scales[o] - wr[i * khw + k];
			shift += d * m[i];
		}
		bias[o] = (float)(bias[o] - shift);
	}
}
