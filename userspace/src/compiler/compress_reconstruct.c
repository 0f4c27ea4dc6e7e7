// SPDX-License-Identifier: MIT
/*
 * compress_reconstruct.c - one-shot reconstruction of a pruned layer
 * (npu compress): re-solve the weights it keeps so that it reproduces its
 * original outputs on the calibration inputs. Everything works on
 * H = X^T X of the layer's (im2col) inputs, a ones column last when the
 * layer has a bias, so the bias is re-solved too (bias correction):
 *   - one mask for every output (channel pruning): exact least squares on
 *     the kept columns S, (H_SS + lambda I) w'_S = H_S: w + lambda w_S, by
 *     Cholesky (the ridge pulls toward the original weights);
 *   - a mask per output (unstructured, N:M): the optimal-brain-surgeon
 *     sweep of SparseGPT: each pruned weight's error is spread over the
 *     later columns by the Cholesky factor of (H + lambda I)^-1, one
 *     factorization shared by every output.
 * The sequential pass (npu_cz_solve_cross) solves the same problems on
 * the inputs the already-pruned layers give (Hp = Xp^T Xp) toward the
 * original outputs (t = Xp^T X w).
 */
#include "compiler/compress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* In-place lower Cholesky of the n x n symmetric a (row-major); false: not PD. */
static bool cholesky(double *a, size_t n)
{
	size_t i, j, k;

	for (j = 0; j < n; j++) {
		double d = a[j * n + j];

		for (k = 0; k < j; k++)
			d -= a[j * n + k] * a[j * n + k];
		if (!(d > 0))
			return false;
		d = sqrt(d);
		a[j * n + j] = d;
		for (i = j + 1; i < n; i++) {
			double s = a[i * n + j];

			for (k = 0; k < j; k++)
				s -= a[i * n + k] * a[j * n + k];
			a[i * n + j] = s / d;
		}
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			a[i * n + j] = 0;
	return true;
}

/* Solve L L^T x = b in place (L from cholesky()). */
static void chol_solve(const double *l, size_t n, double *b)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		double s = b[i];

		for (k = 0; k < i; k++)
			s -= l[i * n + k] * b[k];
		b[i] = s / l[i * n + i];
	}
	for (i = n; i-- > 0;) {
		double s = b[i];

		for (k = i + 1; k < n; k++)
			s -= l[k * n + i] * b[k];
		b[i] = s / l[i * n + i];
	}
}

double npu_cz_mean_diag(const double *h, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += h[i * n + i];
	return n ? s / (double)n : 0;
}

/* Sub-matrix of h on idx[0..m), damped; false: out of memory. */
static double *damped_sub(const double *h, size_t n, const size_t *idx, size_t m, double lambda)
{
	double *a = malloc(sizeof(*a) * m * m + 1);
	size_t i, j;

	if (!a)
		return NULL;
	for (i = 0; i < m; i++)
		for (j = 0; j < m; j++)
			a[i * m + j] = h[idx[i] * n + idx[j]] + (i == j ? lambda : 0);
	return a;
}

npu_status npu_cz_solve_shared(const double *h, size_t n, const float *w, size_t rows,
			       const bool *keep, double damping, float *out)
{
	size_t *idx = malloc(sizeof(*idx) * n + 1), m = 0, r, i, j;
	double *a = NULL, *b = malloc(sizeof(*b) * n + 1);
	double lambda = damping * npu_cz_mean_diag(h, n);
	npu_status st = NPU_OK;
	int tries;

	if (!idx || !b) {
		st = NPU_ERR_NO_MEMORY;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (keep[i])
			idx[m++] = i;
	if (lambda <= 0)
		lambda = 1e-8;
	/* Dead inputs (all zero) make H singular: damp more until it factors. */
	for (tries = 0; tries < 8; tries++, lambda *= 10) {
		free(a);
		a = damped_sub(h, n, idx, m, lambda);
		if (!a) {
			st = NPU_ERR_NO_MEMORY;
			goto out;
		}
		if (cholesky(a, m))
			break;
	}
	if (tries == 8) {
		st = NPU_ERR_INTERNAL;
		goto out;
	}
	for (r = 0; r < rows; r++) {
		const float *wr = w + r * n;

		/* b = H_S: w + lambda w_S: the original output's correlation with
		 * the kept inputs; the ridge pulls toward the original weights. */
		for (i = 0; i < m; i++) {
			double s = lambda * wr[idx[i]];

			for (j = 0; j < n; j++)
				s += h[idx[i] * n + j] * wr[j];
			b[i] = s;
		}
		chol_solve(a, m, b);
		for (j = 0; j < n; j++)
			out[r * n + j] = 0;
		for (i = 0; i < m; i++)
			out[r * n + idx[i]] = (float)b[i];
	}
out:
	free(idx);
	free(a);
	free(b);
	return st;
}

/*
 * The Cholesky factor of h + lambda I (n x n) into a, damping ten times
 * more each time it does not factor (dead inputs make h singular), eight
 * tries at most; *lambda is the damping used. False if none factored.
 */
static bool damped_cholesky(const double *h, size_t n, double *a, double *lambda)
{
	size_t i;
	int tries;

	if (*lambda <= 0)
		*lambda = 1e-8;
	for (tries = 0; tries < 8; tries++, *lambda *= 10) {
		memcpy(a, h, sizeof(*a) * n * n);
		for (i = 0; i < n; i++)
			a[i * n + i] += *lambda;
		if (cholesky(a, n))
			return true;
	}
	return false;
}

npu_status npu_cz_solve_masked(const double *h, size_t n, float *w, size_t rows,
			       const bool *keep, double damping)
{
	double *a = malloc(sizeof(*a) * n * n + 1), *inv = malloc(sizeof(*inv) * n * n + 1);
	double *row = malloc(sizeof(*row) * n + 1);
	double lambda = damping * npu_cz_mean_diag(h, n);
	npu_status st = NPU_OK;
	size_t i, j, r;

	if (!a || !inv || !row) {
		st = NPU_ERR_NO_MEMORY;
		goto out;
	}
	if (!damped_cholesky(h, n, a, &lambda)) {
		st = NPU_ERR_INTERNAL;
		goto out;
	}
	/* inv = (H + lambda I)^-1, column by column, then its Cholesky factor. */
	for (j = 0; j < n; j++) {
		for (i = 0; i < n; i++)
			row[i] = i == j;
		chol_solve(a, n, row);
		for (i = 0; i < n; i++)
			inv[i * n + j] = row[i];
	}
	for (i = 0; i < n; i++)	/* symmetric up to rounding */
		for (j = i + 1; j < n; j++)
			inv[i * n + j] = inv[j * n + i] = 0.5 * (inv[i * n + j] + inv[j * n + i]);
	/* Upper factor U (inv = U^T U): the transposed lower Cholesky factor
	 * (SparseGPT's cholesky(H^-1, upper=True)). */
	memcpy(a, inv, sizeof(*a) * n * n);
	if (!cholesky(a, n)) {
		st = NPU_ERR_INTERNAL;
		goto out;
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			inv[i * n + j] = j >= i ? a[j * n + i] : 0;
	for (r = 0; r < rows; r++) {
		float *wr = w + r * n;

		for (j = 0; j < n; j++)
			row[j] = wr[j];
		for (j = 0; j < n; j++) {
			double e;

			if (keep[r * n + j])
				continue;
			e = row[j] / inv[j * n + j];
			for (i = j + 1; i < n; i++)
				row[i] -= e * inv[j * n + i];
			row[j] = 0;
		}
		for (j = 0; j < n; j++)
			wr[j] = keep[r * n + j] ? (float)row[j] : 0.0f;
	}
out:
	free(a);
	free(inv);
	free(row);
	return st;
}

double npu_cz_sqnr_db(const double *h, size_t n, const float *w, const float *q, size_t rows,
		      const bool *row_used)
{
	double sig = 0, err = 0;
	double *d = malloc(sizeof(*d) * n + 1), *x = malloc(sizeof(*x) * n + 1);
	size_t r, i, j;

	if (!d || !x) {
		free(d);
		free(x);
		return NAN;
	}
	for (r = 0; r < rows; r++) {
		if (row_used && !row_used[r])
			continue;
		for (i = 0; i < n; i++) {
			x[i] = w[r * n + i];
			d[i] = (double)w[r * n + i] - q[r * n + i];
		}
		for (i = 0; i < n; i++) {
			double hs = 0, he = 0;

			for (j = 0; j < n; j++) {
				hs += h[i * n + j] * x[j];
				he += h[i * n + j] * d[j];
			}
			sig += x[i] * hs;
			err += d[i] * he;
		}
	}
	free(d);
	free(x);
	if (err <= 0)
		return INFINITY;
	return 10.0 * log10(sig / err);
}

npu_status npu_cz_solve_cross(const double *hp, size_t n, const double *t, const float *w0,
			      size_t rows, const bool *keep, double damping, float *out)
{
	double *a = malloc(sizeof(*a) * n * n + 1), *b = malloc(sizeof(*b) * n + 1);
	double lambda = damping * npu_cz_mean_diag(hp, n);
	npu_status st = NPU_OK;
	size_t i, r;

	if (!a || !b) {
		st = NPU_ERR_NO_MEMORY;
		goto out;
	}
	if (!damped_cholesky(hp, n, a, &lambda)) {
		st = NPU_ERR_INTERNAL;
		goto out;
	}
	/* The unconstrained optimum, pulled toward w0 by the ridge ... */
	for (r = 0; r < rows; r++) {
		for (i = 0; i < n; i++)
			b[i] = t[r * n + i] + lambda * w0[r * n + i];
		chol_solve(a, n, b);
		for (i = 0; i < n; i++)
			out[r * n + i] = (float)b[i];
	}
	/* ... then the mask, its error spread by the OBS sweep on the same H. */
	if (keep)
		st = npu_cz_solve_masked(hp, n, out, rows, keep, damping);
out:
	free(a);
	free(b);
	return st;
}

double npu_cz_sqnr_cross_db(const double *h, size_t n, const float *w, const double *hp,
			    size_t n1, const double *t, const float *q, size_t rows,
			    const bool *row_used)
{
	double sig = 0, err = 0;
	size_t r, i, j;

	for (r = 0; r < rows; r++) {
		double s = 0, e = 0;

		if (row_used && !row_used[r])
			continue;
		for (i = 0; i < n; i++)
			for (j = 0; j < n; j++)
				s += (double)w[r * n + i] * h[i * n + j] * w[r * n + j];
		for (i = 0; i < n1; i++) {
			double hq = 0;

			for (j = 0; j < n1; j++)
				hq += hp[i * n1 + j] * q[r * n1 + j];
			e += q[r * n1 + i] * (hq - 2 * t[r * n1 + i]);
		}
		sig += s;
		err += e + s;
	}
	if (err <= 0)
		return INFINITY;
	return 10.0 * log10(sig / err);
}
