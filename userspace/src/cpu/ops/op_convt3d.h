/* SPDX-License-Identifier: MIT */
/*
 * op_convt3d.h - 3-D ConvTranspose (internal to cpu/ops): op_conv.c works
 * out the geometry, op_convt3d.c computes.
 */
#ifndef NPU_CPU_OP_CONVT3D_H
#define NPU_CPU_OP_CONVT3D_H

#include <stdint.h>

struct npu_threadpool;

struct npu_convt3d_params {
	int64_t batch, in_c, out_c, groups;
	int64_t in[3], out[3], k[3], stride[3], dil[3], pad_begin[3];
};

/*
 * y[n][m][o] = b[m] + sum over the group's input channels c and kernel
 * taps t of x[n][c][i] * w[c][m % (out_c / groups)][t], where
 * o = i * stride - pad_begin + t * dil; fp32, NCDHW, split over (n, m).
 */
void npu_convt3d_f32(const struct npu_convt3d_params *p, const float *x, const float *w,
		     const float *b, float *y, struct npu_threadpool *pool);

#endif /* NPU_CPU_OP_CONVT3D_H */
