/* SPDX-License-Identifier: MIT */
/*
 * cpu_winograd_body.h - the Winograd F(4,3) transforms, written once on
 * GNU C vectors of 8 floats (8 tiles side by side) and included by
 * cpu_winograd.c once per ISA, which defines beforehand:
 *   NPU_W_FN(name)  the name with the ISA suffix
 *   NPU_W_TARGET    the function attribute (empty for portable)
 */

/*
 * V = B^T d B for 8 tiles side by side. xp is row 0 of the tiles in the
 * phase-split padded plane (wp floats a row, phase q at q * wq, element j
 * of phase q is padded column 4 j + q), at the first tile's index; tile
 * t's column k < 4 is phase k at t, column 4 / 5 phase 0 / 1 at t + 1.
 * Writes the 36 vectors to dst + xi * ds.
 */
NPU_W_TARGET static void NPU_W_FN(npu_wino_in8)(const float *xp, size_t wp,
						size_t wq, float *dst,
						size_t ds)
{
	npu_v8 e[6][6];
	size_t r, j;

	for (r = 0; r < 6; r++) {
		const float *row = xp + r * wp;
		npu_v8 z0 = npu_v8_load(row), z1 = npu_v8_load(row + wq);
		npu_v8 z2 = npu_v8_load(row + 2 * wq), z3 = npu_v8_load(row + 3 * wq);
		npu_v8 z4 = npu_v8_load(row + 1), z5 = npu_v8_load(row + wq + 1);
		npu_v8 a = z4 - 4.0f * z2, b = z3 - 4.0f * z1;
		npu_v8 c = z4 - z2, d = 2.0f * (z3 - z1);

		e[r][0] = 4.0f * z0 - 5.0f * z2 + z4;
		e[r][1] = a + b;
		e[r][2] = a - b;
		e[r][3] = c + d;
		e[r][4] = c - d;
		e[r][5] = 4.0f * z1 - 5.0f * z3 + z5;
	}
	for (j = 0; j < 6; j++) {
		npu_v8 z0 = e[0][j], z1 = e[1][j], z2 = e[2][j];
		npu_v8 z3 = e[3][j], z4 = e[4][j], z5 = e[5][j];
		npu_v8 a = z4 - 4.0f * z2, b = z3 - 4.0f * z1;
		npu_v8 c = z4 - z2, d = 2.0f * (z3 - z1);

		npu_v8_store(dst + (0 * 6 + j) * ds, 4.0f * z0 - 5.0f * z2 + z4);
		npu_v8_store(dst + (1 * 6 + j) * ds, a + b);
		npu_v8_store(dst + (2 * 6 + j) * ds, a - b);
		npu_v8_store(dst + (3 * 6 + j) * ds, c + d);
		npu_v8_store(dst + (4 * 6 + j) * ds, c - d);
		npu_v8_store(dst + (5 * 6 + j) * ds, 4.0f * z1 - 5.0f * z3 + z5);
	}
}

/*
 * Y = A^T m A for 8 tiles side by side: m[xi] at m + xi * ms; output row
 * a of the tiles (4 columns per tile, interleaved) at out + a * ld, 32
 * floats.
 */
NPU_W_TARGET static void NPU_W_FN(npu_wino_out8)(const float *m, size_t ms,
						 float *out, size_t ld)
{
	npu_v8 s[4][6];
	size_t a, j;

	for (j = 0; j < 6; j++) {
		npu_v8 z0 = npu_v8_load(m + (0 * 6 + j) * ms);
		npu_v8 z1 = npu_v8_load(m + (1 * 6 + j) * ms);
		npu_v8 z2 = npu_v8_load(m + (2 * 6 + j) * ms);
		npu_v8 z3 = npu_v8_load(m + (3 * 6 + j) * ms);
		npu_v8 z4 = npu_v8_load(m + (4 * 6 + j) * ms);
		npu_v8 z5 = npu_v8_load(m + (5 * 6 + j) * ms);
		npu_v8 p = z1 + z2, q = z1 - z2, r = z3 + z4, t = z3 - z4;

		s[0][j] = z0 + p + r;
		s[1][j] = q + 2.0f * t;
		s[2][j] = p + 4.0f * r;
		s[3][j] = q + 8.0f * t + z5;
	}
	for (a = 0; a < 4; a++) {
		npu_v8 p = s[a][1] + s[a][2], q = s[a][1] - s[a][2];
		npu_v8 r = s[a][3] + s[a][4], t = s[a][3] - s[a][4];
		npu_v8 y0 = s[a][0] + p + r, y1 = q + 2.0f * t;
		npu_v8 y2 = p + 4.0f * r, y3 = q + 8.0f * t + s[a][5];
		/* out[4 i + b] = y_b[i]: two rounds of pairwise interleave */
		npu_v8 lo01 = __builtin_shufflevector(y0, y1, 0, 8, 1, 9, 2, 10, 3, 11);
		npu_v8 hi01 = __builtin_shufflevector(y0, y1, 4, 12, 5, 13, 6, 14, 7, 15);
		npu_v8 lo23 = __builtin_shufflevector(y2, y3, 0, 8, 1, 9, 2, 10, 3, 11);
		npu_v8 hi23 = __builtin_shufflevector(y2, y3, 4, 12, 5, 13, 6, 14, 7, 15);
		float *o = out + a * ld;

		npu_v8_store(o, __builtin_shufflevector(lo01, lo23, 0, 1, 8, 9, 2, 3, 10, 11));
		npu_v8_store(o + 8, __builtin_shufflevector(lo01, lo23, 4, 5, 12, 13, 6, 7, 14, 15));
		npu_v8_store(o + 16, __builtin_shufflevector(hi01, hi23, 0, 1, 8, 9, 2, 3, 10, 11));
		npu_v8_store(o + 24, __builtin_shufflevector(hi01, hi23, 4, 5, 12, 13, 6, 7, 14, 15));
	}
}

/*
 * One padded row split into its 4 phases: d[q * wq + j] = padded column
 * 4 j + q for j < wq, where padded columns [lo, hi) are xr[0 .. hi - lo)
 * and the others zero. Blocks of 32 columns inside xr are read in place;
 * the edge blocks go through a zero-filled copy (and the last one is
 * stored through a buffer, not past the phase's wq floats).
 */
NPU_W_TARGET static void NPU_W_FN(npu_wino_split4)(const float *xr, size_t lo,
						   size_t hi, float *d, size_t wq)
{
	float in[32], out[4][8];
	size_t j, q;

	for (j = 0; j < wq; j += 8) {
		const float *s = in;
		float *o = j + 8 <= wq ? d + j : out[0];
		size_t os = j + 8 <= wq ? wq : 8;
		npu_v8 v0, v1, v2, v3, e01, o01, e23, o23;

		if (4 * j >= lo && 4 * j + 32 <= hi) {
			s = xr + (4 * j - lo);
		} else {
			size_t a = 4 * j > lo ? 4 * j : lo;
			size_t b = 4 * j + 32 < hi ? 4 * j + 32 : hi;

			memset(in, 0, sizeof(in));
			if (a < b)
				memcpy(in + (a - 4 * j), xr + (a - lo),
				       (b - a) * sizeof(float));
		}
		v0 = npu_v8_load(s);
		v1 = npu_v8_load(s + 8);
		v2 = npu_v8_load(s + 16);
		v3 = npu_v8_load(s + 24);
		/* even / odd of each pair of vectors, then again */
		e01 = __builtin_shufflevector(v0, v1, 0, 2, 4, 6, 8, 10, 12, 14);
		o01 = __builtin_shufflevector(v0, v1, 1, 3, 5, 7, 9, 11, 13, 15);
		e23 = __builtin_shufflevector(v2, v3, 0, 2, 4, 6, 8, 10, 12, 14);
		o23 = __builtin_shufflevector(v2, v3, 1, 3, 5, 7, 9, 11, 13, 15);
		npu_v8_store(o, __builtin_shufflevector(e01, e23, 0, 2, 4, 6, 8, 10, 12, 14));
		npu_v8_store(o + os, __builtin_shufflevector(o01, o23, 0, 2, 4, 6, 8, 10, 12, 14));
		npu_v8_store(o + 2 * os, __builtin_shufflevector(e01, e23, 1, 3, 5, 7, 9, 11, 13, 15));
		npu_v8_store(o + 3 * os, __builtin_shufflevector(o01, o23, 1, 3, 5, 7, 9, 11, 13, 15));
		if (j + 8 > wq)	/* the last, partial block */
			for (q = 0; q < 4; q++)
				memcpy(d + q * wq + j, out[q], (wq - j) * sizeof(float));
	}
}

static const struct npu_wino_ops NPU_W_FN(npu_wino_ops) = {
	.in8 = NPU_W_FN(npu_wino_in8),
	.out8 = NPU_W_FN(npu_wino_out8),
	.split4 = NPU_W_FN(npu_wino_split4),
};
