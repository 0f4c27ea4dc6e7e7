/* SPDX-License-Identifier: MIT */
/*
 * quant.h - int8 quantization arithmetic of the NPU compiler (internal).
 *
 * Everything here produces the exact integers firmware-sim consumes (see
 * the requantization formula in npu_hw.h), so host-side predictions of NPU
 * results are bit-exact: npu_requant_apply() is that formula.
 */
#ifndef NPU_COMPILER_QUANT_H
#define NPU_COMPILER_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* real = scale * (q - zero_point), q in [-128, 127]. */
struct npu_qparams {
	float scale;
	int32_t zero_point;
};

/* A fixed-point multiplier: real ≈ mult / 2^shift, shift in 1..62. */
struct npu_requant {
	int32_t mult;
	uint8_t shift;
};

/*
 * Fixed-point form of a positive real multiplier with 31 significant bits.
 * Returns false when 'real' is not in the representable range
 * (about 2^-31 .. 2^30) or not a positive finite number.
 */
bool npu_requant_from_real(double real, struct npu_requant *out);

/* firmware-sim's requantization, bit for bit (64-bit, round half up). */
int8_t npu_requant_apply(int64_t acc, struct npu_requant rq, int32_t zp_out,
			 int8_t act_min, int8_t act_max);

/*
 * Asymmetric int8 parameters covering [min, max]; the range is widened to
 * include 0 so that zero (padding, ReLU) is exact, and a degenerate range
 * gets a tiny positive scale.
 */
struct npu_qparams npu_qparams_from_range(float min, float max);

int8_t npu_quantize_value(float x, struct npu_qparams q);	/* round-half-even */
float npu_dequantize_value(int8_t q, struct npu_qparams p);

/*
 * Symmetric per-output-channel weights: for each of 'channels' rows of
 * 'per_channel' floats, scale = max|w| / 127 (1 for an all-zero row) and
 * q = round(w / scale) in [-127, 127]. A row that already lies on an int8
 * grid (a QDQ model's weights, dequantized by constant folding) keeps that
 * grid's step, so its values stay exact.
 */
void npu_quantize_weights_per_channel(const float *w, size_t channels,
				      size_t per_channel, int8_t *q,
				      float *scales);

/*
 * Bias correction (Nagel et al., "Data-Free Quantization", with the input
 * means measured on the calibration data): int8 weights q * scale differ
 * from w, which shifts every output channel o by the expected
 * sum_i (q[o][i] * scale[o] - w[o][i]) * mean(x_i); subtract that from
 * bias[o]. w and q are [oc][ic / groups][khw]; mean has one entry per
 * input channel (ic in all).
 */
void npu_bias_correct(const float *w, const int8_t *q, const float *scales, size_t oc,
		      size_t ic, size_t groups, size_t khw, const double *mean,
		      float *bias);

/* bias_q = round(bias / (input_scale * weight_scale)), saturated to int32. */
int32_t npu_quantize_bias(float bias, float input_scale, float weight_scale);

/*
 * ---- The 16x8 mode (NPU_INSN_I16, Documentation/isa.md) ----
 *
 * int16 activations are symmetric (zero point 0, q in [-32767, 32767] so
 * that -x is exact), computed from the same calibration range as int8;
 * weights stay int8 per channel, bias is int64.
 */
struct npu_qparams npu_qparams16_from_range(float min, float max);
int16_t npu_quantize_value16(float x, struct npu_qparams q);	/* round-half-even */
float npu_dequantize_value16(int16_t q, struct npu_qparams p);
/* bias_q = round(bias / (input_scale * weight_scale)), saturated to int64. */
int64_t npu_quantize_bias64(float bias, float input_scale, float weight_scale);
/*
 * firmware-sim's int16 requantization of a 64-bit accumulator, bit for bit
 * (128-bit product, round half up, clamp [act_min * 256, act_max * 256 + 255]).
 */
int16_t npu_requant16_apply(int64_t acc, struct npu_requant rq, int8_t act_min,
			    int8_t act_max);
/*
 * The 513 knots of an int16 LUT (isa.md): knot j is the input value
 * j * 128 - 32768 (the last, +32768, one step past the int16 range).
 * npu_lut16_knot() is its real value under 'in'; npu_lut16_table()
 * quantizes F at the knots, y[j], to 'out'.
 */
float npu_lut16_knot(int j, struct npu_qparams in);
void npu_lut16_table(const float y[513], struct npu_qparams out, int16_t table[513]);

/* ---- Calibration statistics for one tensor ---- */

#define NPU_CALIB_BINS 2048

enum npu_calib_method {
	NPU_CALIB_MINMAX = 0,
	NPU_CALIB_PERCENTILE,	/* clip (100 - percentile)% of the values per tail */
	NPU_CALIB_ENTROPY,	/* minimize KL(P || Q) over 256-level ranges */
	NPU_CALIB_MSE,		/* minimize the expected squared error */
};

/*
 * Two passes over the calibration data, one sample at a time:
 *
 *   1. npu_calib_observe_minmax(): the running min / max;
 *   2. npu_calib_hist_begin() fixes the histogram to the observed range
 *      widened to include 0 (the quantizer's range always does), then
 *      npu_calib_observe_hist() fills NPU_CALIB_BINS equal bins over it.
 *
 * The histogram is asymmetric: [lo, hi] is what the data covered, so a
 * ReLU output's histogram starts at 0 and spends no bins on negatives.
 */
struct npu_calib_stats {
	float min, max;		/* pass 1 */
	uint64_t seen;		/* finite values of pass 1 */
	double lo, hi;		/* histogram range (pass 2); lo == hi: none */
	uint64_t bins[NPU_CALIB_BINS];
	uint64_t count;		/* values of pass 2 */
	uint64_t zeros;		/* of which exactly 0 (not binned: exact) */
};

void npu_calib_init(struct npu_calib_stats *st);
void npu_calib_observe_minmax(struct npu_calib_stats *st, const float *x, size_t n);
void npu_calib_hist_begin(struct npu_calib_stats *st);
void npu_calib_observe_hist(struct npu_calib_stats *st, const float *x, size_t n);
/* Both passes over one in-memory buffer (tests, small data). */
void npu_calib_observe(struct npu_calib_stats *st, const float *x, size_t n);
/*
 * The [min, max] to quantize to under 'method' ('percentile' e.g. 99.99).
 * Never wider than what was observed; a range method that needs the
 * histogram falls back to min / max without one.
 */
void npu_calib_range(const struct npu_calib_stats *st,
		     enum npu_calib_method method, double percentile,
		     float *min, float *max);
/* "minmax", "percentile", "entropy", "mse" -> method; false if unknown. */
bool npu_calib_method_parse(const char *name, enum npu_calib_method *out);
const char *npu_calib_method_name(enum npu_calib_method m);

#endif /* NPU_COMPILER_QUANT_H */
