// SPDX-License-Identifier: MIT
/* Helpers shared by the CPU kernels: broadcasting, strided copies, widening. */
#include "cpu/ops/op_common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

const struct npu_tensor *npu_op_in(const struct npu_op_ctx *ctx, size_t i)
{
	return i < ctx->num_inputs ? ctx->inputs[i] : NULL;
}

struct npu_tensor *npu_op_out(const struct npu_op_ctx *ctx, size_t i)
{
	return i < ctx->num_outputs ? ctx->outputs[i] : NULL;
}

void npu_bcast_init(struct npu_bcast *bc, const struct npu_shape *out,
		    const struct npu_shape *const *ins, int n_in)
{
	int64_t dims[NPU_MAX_RANK], str[NPU_BCAST_MAX_IN][NPU_MAX_RANK];
	int rank = out->rank, k, d, r;

	memset(bc, 0, sizeof(*bc));
	bc->n_in = n_in;
	/* Element strides of each input in output coordinates (0: broadcast). */
	for (k = 0; k < n_in; k++) {
		int64_t s = 1;

		for (d = rank - 1; d >= 0; d--) {
			int id = d - (rank - ins[k]->rank);
			int64_t dim = id >= 0 ? ins[k]->dims[id] : 1;

			str[k][d] = dim == 1 ? 0 : s;
			s *= dim;
		}
	}
	/* Drop size-1 output dims, then merge neighbours strided alike. */
	r = 0;
	for (d = 0; d < rank; d++) {
		if (out->dims[d] == 1)
			continue;
		if (r > 0) {
			bool merge = true;

			for (k = 0; k < n_in; k++)
				if (str[k][r - 1] != str[k][d] * out->dims[d])
					merge = false;
			if (merge) {
				dims[r - 1] *= out->dims[d];
				for (k = 0; k < n_in; k++)
					str[k][r - 1] = str[k][d];
				continue;
			}
		}
		dims[r] = out->dims[d];
		for (k = 0; k < n_in; k++)
			str[k][r] = str[k][d];
		r++;
	}
	if (r == 0) {
		dims[0] = 1;
		for (k = 0; k < n_in; k++)
			str[k][0] = 0;
		r = 1;
	}
	bc->rank = r;
	memcpy(bc->dims, dims, sizeof(dims));
	memcpy(bc->strides, str, sizeof(str));
	bc->len = dims[r - 1];
	for (k = 0; k < n_in; k++)
		bc->step[k] = str[k][r - 1];
	bc->rows = 1;
	for (d = 0; d < r - 1; d++)
		bc->rows *= dims[d];
	for (d = 0; d < out->rank; d++)
		if (out->dims[d] == 0)
			bc->rows = 0;
}

void npu_bcast_row(const struct npu_bcast *bc, int64_t r, int64_t *off)
{
	int k, d;

	for (k = 0; k < bc->n_in; k++)
		off[k] = 0;
	for (d = bc->rank - 2; d >= 0; d--) {
		int64_t idx = r % bc->dims[d];

		r /= bc->dims[d];
		for (k = 0; k < bc->n_in; k++)
			off[k] += idx * bc->strides[k][d];
	}
}

void npu_op_broadcast_copy(const struct npu_tensor *a, struct npu_tensor *y)
{
	const struct npu_shape *ins[1] = { &a->shape };
	size_t es = npu_dtype_size(a->dtype);
	struct npu_bcast bc;
	int64_t r, i, off[1];

	if (npu_op_numel(y) == 0)
		return;
	npu_bcast_init(&bc, &y->shape, ins, 1);
	for (r = 0; r < bc.rows; r++) {
		char *dst = (char *)y->data + r * bc.len * es;
		const char *src;

		npu_bcast_row(&bc, r, off);
		src = (const char *)a->data + off[0] * es;
		if (bc.step[0]) {
			memcpy(dst, src, bc.len * es);
		} else {
			for (i = 0; i < bc.len; i++)
				memcpy(dst + i * es, src, es);
		}
	}
}

void npu_op_strides(const struct npu_shape *s, int64_t *strides)
{
	int64_t acc = 1;
	int d;

	for (d = s->rank - 1; d >= 0; d--) {
		strides[d] = acc;
		acc *= s->dims[d];
	}
}

#define STRIDED_ROW(T, dst, src, n, step)				\
	do {								\
		T *d_ = (T *)(dst);					\
		const T *s_ = (const T *)(src);				\
		int64_t i_;						\
		for (i_ = 0; i_ < (n); i_++)				\
			d_[i_] = s_[i_ * (step)];			\
	} while (0)

void npu_op_strided_copy(void *dst, const void *src, int rank,
			 const int64_t *dims, const int64_t *src_strides,
			 size_t elem_size)
{
	int64_t cd[NPU_MAX_RANK], cs[NPU_MAX_RANK], rows = 1, r, len, step;
	int n = 0, d;
	char *out = dst;

	/* Coalesce dims that are contiguous in the source too. */
	for (d = 0; d < rank; d++) {
		if (dims[d] == 0)
			return;
		if (dims[d] == 1)
			continue;
		if (n > 0 && cs[n - 1] == src_strides[d] * dims[d]) {
			cd[n - 1] *= dims[d];
			cs[n - 1] = src_strides[d];
			continue;
		}
		cd[n] = dims[d];
		cs[n] = src_strides[d];
		n++;
	}
	if (n == 0) {
		cd[0] = 1;
		cs[0] = 1;
		n = 1;
	}
	len = cd[n - 1];
	step = cs[n - 1];
	for (d = 0; d < n - 1; d++)
		rows *= cd[d];
	for (r = 0; r < rows; r++) {
		int64_t off = 0, rem = r;
		const char *s;

		for (d = n - 2; d >= 0; d--) {
			off += (rem % cd[d]) * cs[d];
			rem /= cd[d];
		}
		s = (const char *)src + off * (int64_t)elem_size;
		if (step == 1) {
			memcpy(out, s, (size_t)len * elem_size);
		} else {
			switch (elem_size) {
			case 1: STRIDED_ROW(uint8_t, out, s, len, step); break;
			case 2: STRIDED_ROW(uint16_t, out, s, len, step); break;
			case 4: STRIDED_ROW(uint32_t, out, s, len, step); break;
			case 8: STRIDED_ROW(uint64_t, out, s, len, step); break;
			default: {
				int64_t i;

				for (i = 0; i < len; i++)
					memcpy(out + i * elem_size,
					       s + i * step * (int64_t)elem_size,
					       elem_size);
			}
			}
		}
		out += (size_t)len * elem_size;
	}
}

/* ---- type families ---- */

bool npu_op_needs_widening(const struct npu_op_ctx *ctx, bool ints)
{
	size_t i;

	for (i = 0; i < ctx->num_inputs; i++)
		if (ctx->inputs[i] &&
		    npu_op_wide_dtype(ctx->inputs[i]->dtype, ints) != ctx->inputs[i]->dtype)
			return true;
	for (i = 0; i < ctx->num_outputs; i++)
		if (ctx->outputs[i] &&
		    npu_op_wide_dtype(ctx->outputs[i]->dtype, ints) != ctx->outputs[i]->dtype)
			return true;
	return false;
}

/* n elements of src (type 'from') into dst of the family type 'to', or back. */
static void widen(const void *src, enum npu_dtype from, void *dst, int64_t n)
{
	int64_t i;

	switch (from) {
	case NPU_DTYPE_FLOAT16:
		for (i = 0; i < n; i++)
			((float *)dst)[i] = npu_half_to_float(((const uint16_t *)src)[i]);
		break;
	case NPU_DTYPE_BFLOAT16:
		for (i = 0; i < n; i++)
			((float *)dst)[i] = npu_bf16_to_float(((const uint16_t *)src)[i]);
		break;
	case NPU_DTYPE_INT8:
		for (i = 0; i < n; i++)
			((int64_t *)dst)[i] = ((const int8_t *)src)[i];
		break;
	case NPU_DTYPE_INT16:
		for (i = 0; i < n; i++)
			((int64_t *)dst)[i] = ((const int16_t *)src)[i];
		break;
	case NPU_DTYPE_INT32:
		for (i = 0; i < n; i++)
			((int64_t *)dst)[i] = ((const int32_t *)src)[i];
		break;
	case NPU_DTYPE_UINT8:
		for (i = 0; i < n; i++)
			((uint64_t *)dst)[i] = ((const uint8_t *)src)[i];
		break;
	case NPU_DTYPE_UINT16:
		for (i = 0; i < n; i++)
			((uint64_t *)dst)[i] = ((const uint16_t *)src)[i];
		break;
	case NPU_DTYPE_UINT32:
		for (i = 0; i < n; i++)
			((uint64_t *)dst)[i] = ((const uint32_t *)src)[i];
		break;
	default:
		break;
	}
}

static void narrow(const void *src, void *dst, enum npu_dtype to, int64_t n)
{
	int64_t i;

	switch (to) {
	case NPU_DTYPE_FLOAT16:
		for (i = 0; i < n; i++)
			((uint16_t *)dst)[i] = npu_float_to_half(((const float *)src)[i]);
		break;
	case NPU_DTYPE_BFLOAT16:
		for (i = 0; i < n; i++)
			((uint16_t *)dst)[i] = npu_float_to_bf16(((const float *)src)[i], true);
		break;
	case NPU_DTYPE_INT8:
		for (i = 0; i < n; i++)
			((int8_t *)dst)[i] = (int8_t)((const int64_t *)src)[i];
		break;
	case NPU_DTYPE_INT16:
		for (i = 0; i < n; i++)
			((int16_t *)dst)[i] = (int16_t)((const int64_t *)src)[i];
		break;
	case NPU_DTYPE_INT32:
		for (i = 0; i < n; i++)
			((int32_t *)dst)[i] = (int32_t)((const int64_t *)src)[i];
		break;
	case NPU_DTYPE_UINT8:
		for (i = 0; i < n; i++)
			((uint8_t *)dst)[i] = (uint8_t)((const uint64_t *)src)[i];
		break;
	case NPU_DTYPE_UINT16:
		for (i = 0; i < n; i++)
			((uint16_t *)dst)[i] = (uint16_t)((const uint64_t *)src)[i];
		break;
	case NPU_DTYPE_UINT32:
		for (i = 0; i < n; i++)
			((uint32_t *)dst)[i] = (uint32_t)((const uint64_t *)src)[i];
		break;
	default:
		break;
	}
}

#define NPU_WIDEN_MAX 64

npu_status npu_op_compute_widened(struct npu_op_ctx *ctx, bool ints,
				  npu_status (*compute)(struct npu_op_ctx *ctx))
{
	struct npu_tensor win[NPU_WIDEN_MAX], wout[NPU_WIDEN_MAX], *out_p[NPU_WIDEN_MAX];
	const struct npu_tensor *in_p[NPU_WIDEN_MAX];
	struct npu_op_ctx w = *ctx;
	npu_status st = NPU_OK;
	size_t i;

	if (ctx->num_inputs > NPU_WIDEN_MAX || ctx->num_outputs > NPU_WIDEN_MAX)
		return npu_op_unsupported(ctx->err, ctx->node, "more than %d inputs or outputs",
					  NPU_WIDEN_MAX);
	memset(win, 0, sizeof(win));
	memset(wout, 0, sizeof(wout));
	for (i = 0; i < ctx->num_inputs && !st; i++) {
		const struct npu_tensor *t = ctx->inputs[i];

		in_p[i] = t;
		if (!t || npu_op_wide_dtype(t->dtype, ints) == t->dtype)
			continue;
		win[i] = *t;
		win[i].dtype = npu_op_wide_dtype(t->dtype, ints);
		win[i].nbytes = (size_t)npu_op_numel(t) * npu_dtype_size(win[i].dtype);
		win[i].data = malloc(win[i].nbytes ? win[i].nbytes : 1);
		if (!win[i].data)
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
		else
			widen(t->data, t->dtype, win[i].data, npu_op_numel(t));
		in_p[i] = &win[i];
	}
	for (i = 0; i < ctx->num_outputs && !st; i++) {
		struct npu_tensor *t = ctx->outputs[i];

		out_p[i] = t;
		if (!t || npu_op_wide_dtype(t->dtype, ints) == t->dtype)
			continue;
		wout[i] = *t;
		wout[i].dtype = npu_op_wide_dtype(t->dtype, ints);
		wout[i].nbytes = (size_t)npu_op_numel(t) * npu_dtype_size(wout[i].dtype);
		wout[i].data = calloc(1, wout[i].nbytes ? wout[i].nbytes : 1);
		if (!wout[i].data)
			st = npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
		out_p[i] = &wout[i];
	}
	w.inputs = in_p;
	w.outputs = out_p;
	if (!st)
		st = compute(&w);
	for (i = 0; i < ctx->num_outputs; i++) {
		if (!st && wout[i].data)
			narrow(wout[i].data, ctx->outputs[i]->data, ctx->outputs[i]->dtype,
			       npu_op_numel(ctx->outputs[i]));
		free(wout[i].data);
	}
	for (i = 0; i < ctx->num_inputs; i++)
		free(win[i].data);
	return st;
}
