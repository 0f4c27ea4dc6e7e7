// SPDX-License-Identifier: MIT
/*
 * codegen_sparse.c - the ISA 1.6 forms of a conv's or FC's constants:
 * int8 weights that are 2:4 sparse along the input channels (k) go to the
 * device as NPU_CONV_SPARSE(2, 4) (values and 2-bit positions: 5/8 of the
 * bytes, half the MAC rows, zero tiles skipped), and a slice's constant
 * block goes through the DMA weight codec when that shrinks it. Both need
 * NPU_CAP_SPARSE; opts.no_sparse / no_wcodec turn them off. The device
 * computes the same bytes either way (firmware-sim's golden tests), so
 * only cycles and DRAM bytes change.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen_internal.h"

#define SPARSE_N	2
#define SPARSE_M	4

/* A codec stream must save this fraction (1/8) of a block to be used. */
#define WCODEC_MIN_SAVING_SHIFT	3

/* Every group of 4 input channels of every (output channel, tap) keeps <= 2 weights. */
static bool weights_2_4(const int8_t *w, uint64_t rows, uint32_t k)
{
	uint64_t g, groups = rows * (k / SPARSE_M);

	for (g = 0; g < groups; g++) {
		const int8_t *p = w + g * SPARSE_M;

		if ((p[0] != 0) + (p[1] != 0) + (p[2] != 0) + (p[3] != 0) > SPARSE_N)
			return false;
	}
	return true;
}

void sparse_slices(const struct emitter *e, const struct npu_lop *l, struct slice *sl,
		   size_t n)
{
	const struct npu_act *in = &e->prog->acts[l->in];
	const struct npu_act *out = &e->prog->acts[l->out];
	bool mm = l->kind == NPU_LOP_MATMUL;
	uint32_t cin_g = mm ? in->c : in->c / (l->conv.groups ? l->conv.groups : 1);
	bool codec = !e->prog->opts.no_wcodec && (e->t->caps & NPU_CAP_SPARSE);
	bool sparse = !e->prog->opts.no_sparse && (e->t->caps & NPU_CAP_SPARSE) &&
		      !in->i16 && !out->i16 && cin_g >= SPARSE_M && cin_g % SPARSE_M == 0;
	size_t i;

	if (sparse && mm)	/* FC weights [n][k]: groups along k */
		sparse = !l->matmul.batch && weights_2_4(l->matmul.weight, out->c, cin_g);
	else if (sparse)
		sparse = l->kind == NPU_LOP_CONV && !l->conv.ins_h && !l->conv.ins_w &&
			 !l->conv.fold_w && !l->conv.phase_h &&
			 conv_wpo(l, in, out) == (uint64_t)l->conv.k_h * l->conv.k_w * cin_g &&
			 weights_2_4(l->conv.weight, (uint64_t)out->c * l->conv.k_h * l->conv.k_w,
				     cin_g);

	for (i = 0; i < n; i++) {
		sl[i].sparse_k = sparse ? cin_g : 0;
		sl[i].codec_ok = codec;
	}
}

int sparse_put_weights(struct blob *b, struct slice *s, const int8_t *weight, uint64_t wpo,
		       size_t *off)
{
	uint64_t c = s->oc1 - s->oc0, rows = c * wpo / s->sparse_k;
	uint64_t bytes = npu_sparse_bytes(rows, s->sparse_k, SPARSE_N, SPARSE_M);
	uint8_t *packed = malloc(bytes ? bytes : 1);
	int rc;

	if (!packed)
		return -1;
	if (npu_sparse_pack(weight + s->oc0 * wpo, rows, s->sparse_k, SPARSE_N, SPARSE_M, 0,
			    packed)) {
		free(packed);	/* sparse_slices() checked the pattern */
		return -1;
	}
	/* the tiles the device will run in each array mode (zero tiles skipped) */
	for (uint32_t mode = 0; mode < NPU_ARRAY_NUM_MODES; mode++) {
		struct npu_array_shape a;

		npu_array_shape(mode, 0, &a);
		s->live_tiles[mode] = npu_sparse_live_tiles(packed, s->groups,
							    (uint32_t)(c / s->groups),
							    wpo / s->sparse_k,
							    s->sparse_k / SPARSE_M * SPARSE_N, 0,
							    a.rows, a.cols);
	}
	rc = blob_put(b, packed, bytes, off);
	free(packed);
	s->sparse_saved = c * wpo - bytes;
	return rc;
}

int wcodec_block(struct blob *b, struct slice *s, size_t start)
{
	size_t raw = b->size - start;
	uint8_t *enc;
	uint32_t n;

	s->codec_size = 0;
	if (!s->codec_ok || !raw || raw > UINT32_MAX / 2)
		return 0;
	enc = malloc(npu_wcodec_max_bytes((uint32_t)raw));
	if (!enc)
		return -1;
	n = npu_wcodec_encode(b->data + start, (uint32_t)raw, enc);
	if (n <= raw - (raw >> WCODEC_MIN_SAVING_SHIFT)) {
		/* the stream replaces the block in the blob; SRAM gets it decoded */
		memcpy(b->data + start, enc, n);
		b->size = start + n;
		s->codec_size = n;
	}
	free(enc);
	return 0;
}

uint32_t sparse_flags(const struct slice *sl)
{
	return sl->sparse_k ? NPU_CONV_SPARSE(SPARSE_N, SPARSE_M) : 0;
}

/* The lop's index for the per-lop figures, or SIZE_MAX. */
static size_t lop_index(const struct emitter *e, const struct npu_lop *l)
{
	size_t i = (size_t)(l - e->prog->lops);

	return i < e->prog->num_lops && e->res->lop_sparse ? i : SIZE_MAX;
}

npu_status emit_slice_consts(struct emitter *e, const struct npu_lop *l, struct slice *sl,
			     uint32_t sram)
{
	size_t i = lop_index(e, l);
	npu_status st = emit_consts_codec(e, sl->blob_off, sl->codec_size, sl->blob_size, sram);

	if (!st && i != SIZE_MAX)
		e->res->lop_weight_bytes_saved[i] += sl->sparse_saved +
			(sl->codec_size ? sl->blob_size - sl->codec_size : 0);
	return st;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

void sparse_note_conv(struct emitter *e, const struct npu_lop *l, const struct slice *sl,
		      const struct npu_insn_conv2d *cv)
{
	const struct npu_codegen_options *o = &e->prog->opts;
	uint64_t pixels = (uint64_t)cv->out_h * cv->out_w, taps = (uint64_t)cv->k_h * cv->k_w;
	uint32_t cin_g = cv->in_c / cv->groups, kept = cin_g / SPARSE_M * SPARSE_N;
	struct npu_array_shape a;
	uint64_t dense, sparse;
	uint32_t mode;
	size_t i = lop_index(e, l);

	if (!sl->sparse_k || i == SIZE_MAX)
		return;
	/* the mode cmd_conv2d() gives it, and the tiles the device runs there */
	mode = o->no_array_modes ? 0 :
	       npu_conv2d_fastest_mode(pixels, 1, cv->groups, kept * cv->groups, cv->out_c, 0);
	npu_array_shape(mode, 0, &a);
	dense = npu_conv_insn_cycles(o, pixels, taps, cv->groups, cv->in_c, cv->out_c, false);
	sparse = div_up(pixels, a.parts) * sl->live_tiles[mode];
	e->res->lop_sparse[i] = 1;
	if (dense > sparse)
		e->res->lop_sparse_cycles_saved[i] += dense - sparse;
}

void sparse_note_matmul(struct emitter *e, const struct npu_lop *l, const struct slice *sl,
			const struct npu_insn_matmul *mm)
{
	const struct npu_codegen_options *o = &e->prog->opts;
	uint32_t kept = mm->k / SPARSE_M * SPARSE_N;
	struct npu_array_shape a;
	uint64_t dense, sparse;
	uint32_t mode;
	size_t i = lop_index(e, l);

	if (!sl->sparse_k || i == SIZE_MAX)
		return;
	mode = o->no_array_modes ? 0 : npu_matmul_fastest_mode(mm->m, kept, mm->n, 0);
	npu_array_shape(mode, 0, &a);
	dense = matmul_cycles(o, mm->m, mm->k, mm->n, false);
	sparse = div_up(mm->m, a.parts) * sl->live_tiles[mode];
	e->res->lop_sparse[i] = 1;
	if (dense > sparse)
		e->res->lop_sparse_cycles_saved[i] += dense - sparse;
}
