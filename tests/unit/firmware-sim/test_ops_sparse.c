// SPDX-License-Identifier: MIT
/*
 * test_ops_sparse.c - ISA 1.6: N:M sparse weights of CONV2D and MATMUL
 * (NPU_CONV_SPARSE()) and the DMA weight codec (NPU_DMA_CODEC_BLOCK).
 * A sparse op equals the dense reference on its expanded weights, every
 * implementation (portable, AVX2, AVX-512; 1, 2 and 3 host threads)
 * equals the reference bit for bit over random shapes and random N:M
 * patterns, cycles count kept weights and skip zero tiles, a wrong
 * position makes the result differ or the check refuse it, malformed
 * forms and streams are refused naming why, and the codec round-trips.
 */
#include "ops_test_util.h"

static void conv_ref(const void *insn, uint8_t *sram)
{
	npu_ref_conv2d(insn, sram);
}

static void conv_fast(const void *insn, uint8_t *sram)
{
	npu_op_conv2d(insn, sram);
}

static void mm_ref(const void *insn, uint8_t *sram)
{
	npu_ref_matmul(insn, sram);
}

static void mm_fast(const void *insn, uint8_t *sram)
{
	npu_op_matmul(insn, sram);
}

static const uint32_t nm[][2] = { { 2, 4 }, { 2, 4 }, { 1, 4 }, { 3, 4 },
				  { 1, 2 }, { 2, 8 }, { 4, 8 }, { 2, 3 } };

/*
 * Random N:M dense weights: rows x k, each group of m keeps n random
 * positions (values may be zp too); some groups, and sometimes a run of
 * whole rows, hold only zp (zero tiles).
 */
static void nm_weights(int8_t *w, uint64_t rows, uint64_t k, uint32_t n,
		       uint32_t m, int8_t zp)
{
	uint64_t zero_from = ops_range(0, 2) ? rows : (uint64_t)ops_range(0, (int64_t)rows);

	memset(w, zp, rows * k);
	for (uint64_t g = 0; g < rows * k / m; g++) {
		uint32_t picked = 0;

		if (g / (k / m) >= zero_from || !ops_range(0, 9))
			continue;
		while (picked < n) {
			uint32_t p = (uint32_t)ops_range(0, m - 1);

			if (w[g * m + p] != zp)
				continue;
			w[g * m + p] = (int8_t)ops_range(-128, 127);
			if (w[g * m + p] == zp)
				w[g * m + p] = (int8_t)(zp ^ 1);
			picked++;
		}
	}
}

/* Expanding a packed matrix gives back the dense one. */
static uint8_t *pack_checked(const int8_t *dense, uint64_t rows, uint64_t k,
			     uint32_t n, uint32_t m, int8_t zp)
{
	uint64_t bytes = npu_sparse_bytes(rows, k, n, m);
	uint8_t *packed = malloc(bytes);
	int8_t *back = malloc(rows * k);

	assert_non_null(packed);
	assert_non_null(back);
	assert_int_equal(npu_sparse_pack(dense, rows, k, n, m, zp, packed), 0);
	assert_int_equal(npu_sparse_check_data(packed, rows, k, n, m, NULL), NPU_JOB_OK);
	npu_sparse_expand(packed, rows, k, n, m, zp, back);
	assert_memory_equal(back, dense, rows * k);
	free(back);
	return packed;
}

static void expect_same(const uint8_t *a, const uint8_t *b, const char *what)
{
	if (memcmp(a, b, NPU_SRAM_SIZE)) {
		size_t at = 0;

		while (a[at] == b[at])
			at++;
		fail_msg("%s: sparse differs from dense at SRAM 0x%zx", what, at);
	}
}

static void test_conv2d_sparse_equals_dense_on_every_path(void **state)
{
	static const int cpg[] = { 8, 16, 24, 32, 40, 64, 96 };
	struct ops_sram *s = ops_sram_new();
	uint8_t *dense_out = malloc(NPU_SRAM_SIZE);
	unsigned int done = 0, skipped_tiles = 0;
	char what[80];

	(void)state;
	assert_non_null(dense_out);
	ops_seed(20261207);
	for (int i = 0; done < 120 && i < 1000; i++) {
		struct npu_insn_conv2d in = { 0 }, dn;
		struct npu_op_footprint fp, fpd;
		uint32_t n = nm[i % 8][0], m = nm[i % 8][1];
		uint32_t cin_g, nq, kk;
		uint64_t in_span, out_span, rows, wlen;
		int8_t *w;
		uint8_t *packed;

		in.hdr.opcode = NPU_OP_CONV2D;
		in.hdr.size = sizeof(in);
		in.groups = (uint16_t)(ops_range(0, 3) ? 1 : ops_range(2, 3));
		cin_g = (uint32_t)cpg[ops_range(0, 6)] / (m == 3 ? 8 : 1) * (m == 3 ? 6 : 1);
		if (cin_g % m)
			cin_g = m * (cin_g / m + 1);
		in.in_c = (uint16_t)(in.groups * cin_g);
		in.out_c = (uint16_t)(in.groups * ops_range(1, 40));
		in.k_h = (uint8_t)ops_range(1, 3);
		in.k_w = (uint8_t)ops_range(1, 3);
		if (in.k_h > 1 || in.k_w > 1) {
			in.pad_top = (uint8_t)ops_range(0, 1);
			in.pad_left = (uint8_t)ops_range(0, 1);
			in.pad_bottom = (uint8_t)ops_range(0, 1);
			in.pad_right = (uint8_t)ops_range(0, 1);
		}
		in.stride_h = (uint8_t)ops_range(1, 2);
		in.stride_w = (uint8_t)ops_range(1, 2);
		in.dil_h = in.dil_w = 1;
		in.in_h = (uint16_t)(in.k_h - 1 + ops_range(1, 7));
		in.in_w = (uint16_t)(in.k_w - 1 + ops_range(1, 7));
		in.out_h = (uint16_t)((in.in_h + in.pad_top + in.pad_bottom - in.k_h) /
				      in.stride_h + 1);
		in.out_w = (uint16_t)((in.in_w + in.pad_left + in.pad_right - in.k_w) /
				      in.stride_w + 1);
		in.in_pixel_stride = in.in_c + (uint32_t)ops_range(0, 2);
		in.in_row_stride = in.in_pixel_stride * in.in_w + (uint32_t)ops_range(0, 5);
		in.out_pixel_stride = in.out_c + (uint32_t)ops_range(0, 2);
		in.out_row_stride = in.out_pixel_stride * in.out_w + (uint32_t)ops_range(0, 5);
		in.zp_in = (int16_t)ops_range(-128, 127);
		in.zp_w = (int16_t)(ops_range(0, 1) ? 0 : ops_range(-128, 127));
		in.zp_out = (int16_t)ops_range(-20, 20);
		in.act_min = (int8_t)ops_range(-128, -60);
		in.act_max = (int8_t)ops_range(60, 127);
		in.flags = (ops_range(0, 3) ? 0 : NPU_QUANT_PER_TENSOR) |
			   (ops_range(0, 3) ? 0 : NPU_CONV_NO_BIAS) |
			   (ops_range(0, 3) ? 0 : NPU_CONV_OUT_LUT) |
			   NPU_CONV_ARRAY(ops_range(0, 5));
		nq = (in.flags & NPU_QUANT_PER_TENSOR) ? 1 : in.out_c;
		kk = (uint32_t)in.k_h * in.k_w * cin_g;
		rows = (uint64_t)in.out_c * in.k_h * in.k_w;
		wlen = rows * cin_g;
		in_span = (uint64_t)(in.in_h - 1) * in.in_row_stride +
			  (uint64_t)(in.in_w - 1) * in.in_pixel_stride + in.in_c;
		out_span = (uint64_t)(in.out_h - 1) * in.out_row_stride +
			   (uint64_t)(in.out_w - 1) * in.out_pixel_stride + in.out_c;

		w = malloc(wlen);
		assert_non_null(w);
		nm_weights(w, rows, cin_g, n, m, (int8_t)in.zp_w);
		packed = pack_checked(w, rows, cin_g, n, m, (int8_t)in.zp_w);

		s->next = (uint32_t)ops_range(0, 64);
		in.input = ops_place(s, in_span);
		in.output = ops_place(s, out_span);
		in.weight = ops_place(s, npu_sparse_bytes(rows, cin_g, n, m));
		in.bias = ops_place(s, 4ull * in.out_c);
		in.quant = ops_place(s, 5ull * nq);
		in.lut = (in.flags & NPU_CONV_OUT_LUT) ? ops_place(s, 256) : 0;
		dn = in;
		dn.weight = ops_place(s, wlen);		/* the dense twin's weights */
		assert_int_not_equal(dn.weight, UINT32_MAX);
		ops_fill(s->init + in.input, in_span);
		for (int c = 0; c < in.out_c; c++)
			ops_put_i32(s->init, in.bias + 4 * c, (int32_t)ops_range(-50000, 50000));
		ops_write_quant(s->init, in.quant, nq, kk, OPS_QUANT_SENSIBLE);
		if (in.flags & NPU_CONV_OUT_LUT)
			ops_fill(s->init + in.lut, 256);
		memcpy(s->init + in.weight, packed, npu_sparse_bytes(rows, cin_g, n, m));
		memcpy(s->init + dn.weight, w, wlen);
		in.flags |= NPU_CONV_SPARSE(n, m);

		assert_int_equal(npu_op_conv2d_check(&in, &fp), NPU_JOB_OK);
		assert_int_equal(npu_op_conv2d_check_sram(&in, s->init), NPU_JOB_OK);
		assert_int_equal(npu_op_conv2d_check(&dn, &fpd), NPU_JOB_OK);
		/* the weight read is the packed form; MACs stay the dense count */
		assert_int_equal(fp.reads[1].end - fp.reads[1].begin,
				 npu_sparse_bytes(rows, cin_g, n, m));
		assert_int_equal(fp.macs, fpd.macs);
		assert_true(fp.cycles <= fpd.cycles);
		assert_true(npu_op_conv2d_cycles_sram(&in, s->init) <= fp.cycles);
		skipped_tiles += npu_op_conv2d_cycles_sram(&in, s->init) < fp.cycles;

		snprintf(what, sizeof(what), "conv %u:%u #%d (%ux%u, %u->%u, g%u)", n, m,
			 i, in.k_h, in.k_w, in.in_c, in.out_c, in.groups);
		ops_golden(s, &in, conv_ref, conv_fast, what);
		memcpy(dense_out, s->init, NPU_SRAM_SIZE);
		npu_ref_conv2d(&dn, dense_out);
		expect_same(s->ref, dense_out, what);
		free(packed);
		free(w);
		done++;
	}
	assert_int_equal(done, 120);
	assert_true(skipped_tiles > 0);
	free(dense_out);
	ops_sram_free(s);
	ops_report_impls();
}

/* A random sparse MATMUL and its dense twin laid out in s->init. */
static void mm_case(struct ops_sram *s, struct npu_insn_matmul *in,
		    struct npu_insn_matmul *dn, uint32_t n, uint32_t m)
{
	static const uint32_t dims[] = { 1, 2, 3, 5, 31, 32, 33, 64, 65, 100 };
	uint64_t a_len, out_len;
	uint32_t nq;
	int8_t *w;
	uint8_t *packed;

	memset(in, 0, sizeof(*in));
	in->hdr.opcode = NPU_OP_MATMUL;
	in->hdr.size = sizeof(*in);
	in->m = dims[ops_range(0, 9)];
	in->k = m * (uint32_t)ops_range(1, 80);
	in->n = dims[ops_range(0, 9)];
	in->flags = (ops_range(0, 2) ? 0 : NPU_QUANT_PER_TENSOR) |
		    (ops_range(0, 2) ? 0 : NPU_CONV_NO_BIAS) |
		    NPU_CONV_ARRAY(ops_range(0, 5));
	in->a_stride = in->k + (uint32_t)ops_range(0, 5);
	in->out_stride = in->n + (uint32_t)ops_range(0, 5);
	in->zp_a = (int16_t)ops_range(-128, 127);
	in->zp_b = (int16_t)(ops_range(0, 1) ? 0 : ops_range(-128, 127));
	in->zp_out = (int16_t)ops_range(-20, 20);
	in->act_min = -128;
	in->act_max = 127;
	nq = (in->flags & NPU_QUANT_PER_TENSOR) ? 1 : in->n;
	a_len = (uint64_t)(in->m - 1) * in->a_stride + in->k;
	out_len = (uint64_t)(in->m - 1) * in->out_stride + in->n;
	w = malloc((size_t)in->n * in->k);
	assert_non_null(w);
	nm_weights(w, in->n, in->k, n, m, (int8_t)in->zp_b);
	packed = pack_checked(w, in->n, in->k, n, m, (int8_t)in->zp_b);
	s->next = 0;
	in->a = ops_place(s, a_len);
	in->output = ops_place(s, out_len);
	in->b = ops_place(s, npu_sparse_bytes(in->n, in->k, n, m));
	in->bias = ops_place(s, 4ull * in->n);
	in->quant = ops_place(s, 5ull * nq);
	*dn = *in;
	dn->b = ops_place(s, (uint64_t)in->n * in->k);
	assert_int_not_equal(dn->b, UINT32_MAX);
	ops_fill(s->init + in->a, a_len);
	for (uint32_t j = 0; j < in->n; j++)
		ops_put_i32(s->init, in->bias + 4 * j, (int32_t)ops_range(-90000, 90000));
	ops_write_quant(s->init, in->quant, nq, in->k, OPS_QUANT_SENSIBLE);
	memcpy(s->init + in->b, packed, npu_sparse_bytes(in->n, in->k, n, m));
	memcpy(s->init + dn->b, w, (size_t)in->n * in->k);
	in->flags |= NPU_CONV_SPARSE(n, m);
	free(packed);
	free(w);
}

static void test_matmul_sparse_equals_dense_on_every_path(void **state)
{
	struct ops_sram *s = ops_sram_new();
	uint8_t *dense_out = malloc(NPU_SRAM_SIZE);
	char what[64];

	(void)state;
	assert_non_null(dense_out);
	ops_seed(35);
	for (int i = 0; i < 120; i++) {
		struct npu_insn_matmul in, dn;
		struct npu_op_footprint fp, fpd;
		uint32_t n = nm[i % 8][0], m = nm[i % 8][1];

		mm_case(s, &in, &dn, n, m);
		assert_int_equal(npu_op_matmul_check(&in, &fp), NPU_JOB_OK);
		assert_int_equal(npu_op_matmul_check_sram(&in, s->init), NPU_JOB_OK);
		assert_int_equal(npu_op_matmul_check(&dn, &fpd), NPU_JOB_OK);
		assert_true(fp.cycles <= fpd.cycles);
		assert_true(npu_op_matmul_cycles_sram(&in, s->init) <= fp.cycles);
		snprintf(what, sizeof(what), "matmul %u:%u #%d (%ux%ux%u)", n, m, i,
			 in.m, in.k, in.n);
		ops_golden(s, &in, mm_ref, mm_fast, what);
		memcpy(dense_out, s->init, NPU_SRAM_SIZE);
		npu_ref_matmul(&dn, dense_out);
		expect_same(s->ref, dense_out, what);
	}
	free(dense_out);
	ops_sram_free(s);
}

/* 2:4 halves the MAC cycles of a layer that fills the array; zero tiles go. */
static void test_sparse_cycles_count_kept_weights(void **state)
{
	struct npu_insn_matmul in = {
		.hdr = { .opcode = NPU_OP_MATMUL, .size = sizeof(in) },
		.a = 0, .b = 65536, .quant = 8192, .output = 16384,
		.flags = NPU_QUANT_PER_TENSOR | NPU_CONV_NO_BIAS,
		.m = 64, .k = 256, .n = 64, .a_stride = 256, .out_stride = 64,
		.act_min = -128, .act_max = 127,
	};
	struct npu_op_footprint fp;
	uint8_t *sram = calloc(1, NPU_SRAM_SIZE);
	uint64_t dense;

	(void)state;
	assert_non_null(sram);
	assert_int_equal(npu_op_matmul_check(&in, &fp), NPU_JOB_OK);
	dense = fp.cycles;
	assert_int_equal(dense, 64 * 8 * 2);
	in.flags |= NPU_CONV_SPARSE(2, 4);
	assert_int_equal(npu_op_matmul_check(&in, &fp), NPU_JOB_OK);
	assert_int_equal(fp.cycles, dense / 2);
	assert_int_equal(fp.reads[1].end - fp.reads[1].begin, 64 * 128 + 64 * 128 * 2 / 8);
	/* every kept value zp_b (0): every tile skipped */
	assert_int_equal(npu_op_matmul_cycles_sram(&in, sram), 0);
	/* one nonzero weight: one tile of 32 kept x 32 columns, per row of a */
	sram[in.b + 5] = 7;
	assert_int_equal(npu_op_matmul_cycles_sram(&in, sram), 64);
	free(sram);
}

/* Mutation: a wrong position is refused, or changes the result. */
static void test_sparse_wrong_position_is_caught(void **state)
{
	struct ops_sram *s = ops_sram_new();
	unsigned int differ = 0, tried = 0;

	(void)state;
	ops_seed(77);
	for (int i = 0; i < 40; i++) {
		struct npu_insn_matmul in, dn;
		uint64_t kept;
		uint8_t *idx;

		do	/* symmetric weights, as the compiler emits: no saturation */
			mm_case(s, &in, &dn, 2, 4);
		while (in.zp_b);
		kept = (uint64_t)in.n * in.k / 2;
		idx = s->init + in.b + kept;
		/* group 0 positions (a, b), a < b: make them equal -> refused */
		uint32_t a = idx[0] & 3, b = (idx[0] >> 2) & 3;

		idx[0] = (uint8_t)((idx[0] & ~0xf) | a | a << 2);
		assert_int_equal(npu_op_matmul_check_sram(&in, s->init),
				 NPU_JOB_ERR_BAD_PARAM);
		/* refused: no path writes anything */
		memcpy(s->fast, s->init, NPU_SRAM_SIZE);
		npu_op_matmul(&in, s->fast);
		assert_memory_equal(s->fast, s->init, NPU_SRAM_SIZE);
		npu_ref_matmul(&in, s->fast);
		assert_memory_equal(s->fast, s->init, NPU_SRAM_SIZE);
		(void)b;
		/*
		 * Valid but wrong: in the first group of every row (output
		 * channel) the positions (a, b) become another increasing pair,
		 * the values unchanged.
		 */
		unsigned int live = 0;

		for (uint32_t r = 0; r < in.n; r++) {
			uint64_t g = (uint64_t)r * (in.k / 4);

			/* a group of zero points moves nothing: count the others */
			live += (int8_t)s->init[in.b + 2 * g] != in.zp_b ||
				(int8_t)s->init[in.b + 2 * g + 1] != in.zp_b;
			uint8_t *p = &idx[g / 2];
			uint32_t sh = (uint32_t)(g % 2) * 4;
			uint32_t pa = (*p >> sh) & 3, pb = (*p >> (sh + 2)) & 3;
			uint32_t na = pa == 0 ? 1 : 0, nb = pb == 3 ? 2 : 3;

			if (na == 1 && nb == 2 && pa == 1)
				na = 0;
			*p = (uint8_t)((*p & ~(0xfu << sh)) | (na | nb << 2) << sh);
			assert_true(na != pa || nb != pb);
		}
		assert_int_equal(npu_op_matmul_check_sram(&in, s->init), NPU_JOB_OK);
		memcpy(s->ref, s->init, NPU_SRAM_SIZE);
		npu_ref_matmul(&dn, s->ref);	/* dense twin: the true weights */
		memcpy(s->fast, s->init, NPU_SRAM_SIZE);
		npu_op_matmul(&in, s->fast);
		if (!live)
			continue;
		tried++;
		differ += memcmp(s->fast, s->ref, NPU_SRAM_SIZE) != 0;
	}
	/* the comparison with the dense reference catches (almost) every one */
	print_message("# %u of %u wrong positions change the result\n", differ, tried);
	assert_true(tried >= 30);
	assert_true(differ >= tried - 1);
	ops_sram_free(s);
}

static struct npu_insn_conv2d conv_small(void)
{
	struct npu_insn_conv2d c = {
		.hdr = { .opcode = NPU_OP_CONV2D, .size = sizeof(c) },
		.input = 0, .weight = 4096, .bias = 8192, .quant = 12288,
		.output = 16384, .flags = NPU_CONV_SPARSE(2, 4),
		.in_h = 4, .in_w = 4, .in_c = 8, .out_c = 8, .out_h = 4, .out_w = 4,
		.k_h = 1, .k_w = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
		.groups = 1, .in_row_stride = 32, .in_pixel_stride = 8,
		.out_row_stride = 32, .out_pixel_stride = 8,
		.act_min = -128, .act_max = 127,
	};

	return c;
}

static void test_sparse_bad_forms_are_refused(void **state)
{
	struct npu_insn_conv2d c = conv_small();
	struct npu_isa_check chk = { 0 };
	struct npu_op_footprint fp;
	uint8_t w[64] = { 0 };

	(void)state;
	assert_int_equal(npu_op_conv2d_validate(&c, &fp, &chk), NPU_JOB_OK);
	/* 8 rows x 8 channels 2:4: 32 values + their 32 two-bit positions */
	assert_int_equal(fp.reads[1].end - fp.reads[1].begin, 32 + 8);

	/* bad N:M: 0:4, 4:4, 5:4, 2:9 (M above 8), 1:1, N without M */
	static const uint32_t bad[][2] = { { 0, 4 }, { 4, 4 }, { 5, 4 }, { 2, 9 },
					   { 1, 1 }, { 3, 0 } };
	for (unsigned int i = 0; i < 6; i++) {
		c = conv_small();
		c.flags = NPU_CONV_SPARSE(bad[i][0], bad[i][1]);
		assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk),
				 NPU_JOB_ERR_BAD_ENCODING);
		assert_string_equal(chk.field, "flags");
		assert_non_null(strstr(chk.reason, "sparse"));
	}
	/* N:M not dividing the channels per group: 2:3 over 8 */
	c = conv_small();
	c.flags = NPU_CONV_SPARSE(2, 3);
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_BAD_PARAM);
	assert_non_null(strstr(chk.reason, "does not divide"));
	/* nor over a depthwise layer's one channel per group */
	c = conv_small();
	c.groups = 8;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_BAD_PARAM);
	/* int8 only, and no zero insertion */
	c = conv_small();
	c.hdr.flags = NPU_INSN_I16;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_BAD_ENCODING);
	assert_non_null(strstr(chk.reason, "I16"));
	c = conv_small();
	c.ins_h = 1;
	c.in_h = 2;
	c.out_h = 3;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_BAD_PARAM);
	assert_string_equal(chk.field, "ins_h");
	/* the packed size decides the bounds: 40 bytes fit where 64 would not */
	c = conv_small();
	c.weight = NPU_SRAM_SIZE - 40;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_OK);
	c.weight = NPU_SRAM_SIZE - 39;
	assert_int_equal(npu_op_conv2d_validate(&c, NULL, &chk), NPU_JOB_ERR_SRAM_BOUNDS);
	assert_string_equal(chk.field, "weight");
	/* matmul: k not a multiple of M */
	struct npu_insn_matmul m = {
		.hdr = { .opcode = NPU_OP_MATMUL, .size = sizeof(m) },
		.b = 4096, .quant = 8192, .output = 12288,
		.flags = NPU_CONV_SPARSE(2, 4) | NPU_QUANT_PER_TENSOR,
		.m = 1, .k = 10, .n = 4, .act_min = -128, .act_max = 127,
	};
	assert_int_equal(npu_op_matmul_validate(&m, NULL, &chk), NPU_JOB_ERR_BAD_PARAM);
	assert_non_null(strstr(chk.reason, "k 10"));

	/* positions: out of range (3 in a group of 3) and not increasing */
	w[2] = 3 << 2;			/* group 0 of 2:3: positions 0, 3 */
	assert_int_equal(npu_sparse_check_data(w, 1, 3, 2, 3, &chk), NPU_JOB_ERR_BAD_PARAM);
	assert_non_null(strstr(chk.reason, "outside 0..2"));
	memset(w, 0, sizeof(w));
	w[32] = 2 | 1 << 2;		/* group 0 of 2:4: positions 2, 1 */
	assert_int_equal(npu_sparse_check_data(w, 8, 8, 2, 4, &chk), NPU_JOB_ERR_BAD_PARAM);
	assert_non_null(strstr(chk.reason, "must increase"));
	/* a matrix with more than N live weights in a group does not pack */
	int8_t dense[4] = { 1, 2, 3, 0 };
	uint8_t out[8];

	assert_int_equal(npu_sparse_pack(dense, 1, 4, 2, 4, 0, out), -1);
	assert_int_equal(npu_sparse_pack(dense, 1, 4, 3, 4, 0, out), 0);
	/* the helpers refuse what is not N:M, never divide by M = 0 */
	assert_int_equal(npu_sparse_pack(dense, 1, 4, 2, 0, 0, out), -1);
	assert_int_equal(npu_sparse_pack(dense, 1, 4, 2, 9, 0, out), -1);
	assert_int_equal(npu_sparse_pack(dense, 1, 6, 2, 4, 0, out), -1);	/* 4 does not divide 6 */
	assert_int_equal(npu_sparse_bytes(1, 4, 2, 0), 0);
	assert_int_equal(npu_sparse_check_data(out, 1, 4, 2, 0, &chk), NPU_JOB_ERR_BAD_PARAM);
	assert_int_equal(npu_sparse_check_data(out, 1, 4, 4, 4, &chk), NPU_JOB_ERR_BAD_PARAM);
}

static void test_wcodec_round_trips_and_shrinks(void **state)
{
	uint8_t *src = malloc(6000), *enc = malloc(8000), *dec = malloc(6000);
	struct npu_isa_check chk = { 0 };
	unsigned int caught = 0;

	(void)state;
	assert_non_null(src);
	assert_non_null(enc);
	assert_non_null(dec);
	ops_seed(6);
	for (int i = 0; i < 400; i++) {
		uint32_t len = (uint32_t)ops_range(1, 5000), z, el;
		int kind = i % 4;

		for (uint32_t j = 0; j < len; j++) {
			int v = (int)ops_range(-128, 127);

			if (kind == 1)		/* small values */
				v = (int)ops_range(-9, 9);
			else if (kind == 2)	/* 2:4-like zeros */
				v = ops_range(0, 1) ? 0 : v;
			else if (kind == 3)	/* mostly zero */
				v = ops_range(0, 15) ? 0 : v;
			src[j] = (uint8_t)v;
		}
		el = npu_wcodec_encode(src, len, enc);
		assert_true(el <= npu_wcodec_max_bytes(len));
		memset(dec, 0x5a, len);
		assert_int_equal(npu_wcodec_decode(enc, el, dec, len, &chk), NPU_JOB_OK);
		assert_memory_equal(dec, src, len);
		if (kind && len >= 256)
			assert_true(el < len);
		/* truncated, one byte too many: refused, naming src_bytes */
		assert_int_equal(npu_wcodec_decode(enc, el - 1, dec, len, &chk),
				 NPU_JOB_ERR_BAD_PARAM);
		enc[el] = 0;
		assert_int_equal(npu_wcodec_decode(enc, el + 1, dec, len, &chk),
				 NPU_JOB_ERR_BAD_PARAM);
		assert_string_equal(chk.field, "src_bytes");
		/* a random bit flip never crashes, and is almost always caught
		 * (refused, or a different result) */
		z = (uint32_t)ops_range(0, el - 1);
		enc[z] ^= (uint8_t)(1u << ops_range(0, 7));
		caught += npu_wcodec_decode(enc, el, dec, len, NULL) != NPU_JOB_OK ||
			  memcmp(dec, src, len) != 0;
	}
	print_message("# codec: %u of 400 bit flips caught\n", caught);
	assert_true(caught >= 390);
	/* headers: width 9, a reserved bit, a mask with width 0, mask past a short block */
	static const uint8_t bad_hdr[][4] = { { 9 }, { 0x21 }, { 0x10, 0, 0 },
					      { 0x11, 0x00, 0x80, 0xff } };
	static const unsigned int bad_len[] = { 1, 1, 3, 4 };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(npu_wcodec_decode(bad_hdr[i], bad_len[i], dec, 4, &chk),
				 NPU_JOB_ERR_BAD_PARAM);
		assert_non_null(strstr(chk.reason, "codec block 0"));
	}
	/* zeros: one header byte per 16 */
	memset(src, 0, 4096);
	assert_int_equal(npu_wcodec_encode(src, 4096, enc), 256);
	free(src);
	free(enc);
	free(dec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv2d_sparse_equals_dense_on_every_path),
		cmocka_unit_test(test_matmul_sparse_equals_dense_on_every_path),
		cmocka_unit_test(test_sparse_cycles_count_kept_weights),
		cmocka_unit_test(test_sparse_wrong_position_is_caught),
		cmocka_unit_test(test_sparse_bad_forms_are_refused),
		cmocka_unit_test(test_wcodec_round_trips_and_shrinks),
	};

	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	npu_ops_release_caches();
	return rc;
}
