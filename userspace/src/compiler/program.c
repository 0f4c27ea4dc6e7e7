// SPDX-License-Identifier: MIT
/*
 * A segment program's geometry, which the compiler and the compiled-file
 * reader (npub.c, in the runtime core) both need: tensor sizes, a graph
 * value's NHWC dimensions, a folded conv's column phases, and freeing
 * generated code.
 */
#include "compiler/codegen.h"
#include "compiler/lower.h"

#include <stdlib.h>
#include <string.h>

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return q - (a % b != 0 && (a < 0) != (b < 0));
}

uint64_t npu_act_bytes(const struct npu_act *a)
{
	return npu_act_elems(a) * npu_act_es(a);
}

void npu_codegen_result_free(struct npu_codegen_result *result)
{
	free(result->consts);
	free(result->lop_macs);
	free(result->lop_dram_bytes);
	free(result->lop_pred_cycles);
	free(result->lop_fused);
	free(result->lop_sparse);
	free(result->lop_sparse_cycles_saved);
	free(result->lop_weight_bytes_saved);
	memset(result, 0, sizeof(*result));
}

enum npu_layout npu_value_layout(const struct npu_value *v)
{
	return v->shape.rank == 4 && !v->rows_layout ? NPU_LAYOUT_NHWC : NPU_LAYOUT_ROWS;
}

void npu_value_act_dims(const struct npu_value *v, struct npu_act *act)
{
	const int64_t *d = v->shape.dims;

	memset(act, 0, sizeof(*act));
	if (npu_value_layout(v) == NPU_LAYOUT_NHWC) {
		act->n = (uint32_t)d[0];
		act->c = (uint32_t)d[1];
		act->h = (uint32_t)d[2];
		act->w = (uint32_t)d[3];
	} else {
		int64_t numel = npu_shape_numel(&v->shape);

		act->n = act->h = 1;
		act->c = v->shape.rank ? (uint32_t)d[v->shape.rank - 1] : 1;
		act->w = (uint32_t)(numel / (act->c ? act->c : 1));
	}
}

bool npu_conv_fold_phase(uint32_t in_w, uint32_t out_w, uint32_t in_c, uint32_t out_c,
			 uint32_t k_h, uint32_t k_w, uint32_t stride_w, uint32_t pad_left,
			 uint32_t fold_w, uint32_t r, struct npu_fold_phase *ph)
{
	int64_t off, last = 0, pr, in_w_v, out_w_v;
	uint64_t woff = 0;
	uint32_t R, i;

	memset(ph, 0, sizeof(*ph));
	if (!fold_w || !stride_w || !k_w || fold_w % stride_w || in_w % fold_w)
		return false;
	R = fold_w / stride_w;
	if (out_w % R || r >= R)
		return false;
	in_w_v = in_w / fold_w;
	out_w_v = out_w / R;
	for (i = 0; i <= r; i++) {
		/* Output column R m + i starts at input pixel F m + off. */
		off = (int64_t)stride_w * i - pad_left;
		ph->first = (int32_t)floor_div(off, fold_w);
		last = floor_div(off + k_w - 1, fold_w);
		ph->k_w = (uint32_t)(last - ph->first + 1);
		ph->weight_off = woff;
		woff += (uint64_t)out_c * k_h * ph->k_w * fold_w * in_c;
	}
	if (ph->first > 0)
		return false;	/* would need an input offset, not a pad */
	ph->pad_left = (uint32_t)-ph->first;
	/* The exact right pad for out_w_v outputs; read fewer pixels if negative. */
	pr = out_w_v - 1 + ph->k_w - in_w_v - ph->pad_left;
	ph->in_w = (uint32_t)in_w_v;
	if (pr < 0) {
		ph->in_w = (uint32_t)(in_w_v + pr);
		pr = 0;
	}
	ph->pad_right = (uint32_t)pr;
	return ph->in_w >= 1 && ph->k_w <= 255 && ph->pad_left <= 255 && pr <= 255 &&
	       ph->k_w <= ph->in_w + ph->pad_left + pr && in_w_v <= UINT16_MAX &&
	       (uint64_t)fold_w * in_c <= UINT16_MAX;
}
