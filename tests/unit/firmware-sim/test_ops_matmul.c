// SPDX-License-Identifier: MIT
/*
 * test_ops_matmul.c - MATMUL: every implementation on this host equals the
 * reference bit for bit over random shapes and edges: m = 1 (FC), m, n
 * not multiples of the tile, large k with a tail, strided rows, extreme
 * zero points and quant tables, wrapping accumulators, in-place output.
 */
#include "ops_test_util.h"

struct mm_p {
	uint32_t m, k, n, a_gap, out_gap, flags;
	int zp_a, zp_b, zp_out, act_min, act_max;
	enum ops_quant_mode quant;
	int extreme, overlap;
};

static const struct mm_p mm_defaults = {
	.m = 5, .k = 70, .n = 9, .zp_a = -4, .zp_b = 0, .zp_out = 3,
	.act_min = -128, .act_max = 127,
};

static void run_ref(const void *insn, uint8_t *sram)
{
	npu_ref_matmul(insn, sram);
}

static void run_fast(const void *insn, uint8_t *sram)
{
	npu_op_matmul(insn, sram);
}

static void mm_golden(struct ops_sram *s, const struct mm_p *p, const char *what)
{
	struct npu_insn_matmul in = { 0 };
	struct npu_op_footprint fp;
	uint32_t nq = (p->flags & NPU_QUANT_PER_TENSOR) ? 1 : p->n;
	uint64_t a_len, out_len;

	in.hdr.opcode = NPU_OP_MATMUL;
	in.hdr.size = sizeof(in);
	in.m = p->m;
	in.k = p->k;
	in.n = p->n;
	in.flags = p->flags;
	in.a_stride = p->k + p->a_gap;
	in.out_stride = p->n + p->out_gap;
	in.zp_a = (int16_t)p->zp_a;
	in.zp_b = (int16_t)p->zp_b;
	in.zp_out = (int16_t)p->zp_out;
	in.act_min = (int8_t)p->act_min;
	in.act_max = (int8_t)p->act_max;
	a_len = (uint64_t)(p->m - 1) * in.a_stride + p->k;
	out_len = (uint64_t)(p->m - 1) * in.out_stride + p->n;
	s->next = 0;
	in.a = ops_place(s, a_len > out_len ? a_len : out_len);
	in.output = p->overlap ? in.a : ops_place(s, out_len);
	in.b = ops_place(s, (uint64_t)p->n * p->k);
	in.bias = ops_place(s, 4ull * p->n);
	in.quant = ops_place(s, 5ull * nq);
	assert_int_not_equal(in.quant, UINT32_MAX);
	ops_fill(s->init + in.a, a_len);
	ops_fill(s->init + in.b, (size_t)p->n * p->k);
	if (p->extreme) {
		memset(s->init + in.a, p->zp_a >= 0 ? 0x80 : 0x7f, a_len);
		memset(s->init + in.b, p->zp_b >= 0 ? 0x80 : 0x7f, (size_t)p->n * p->k);
	}
	for (uint32_t i = 0; i < p->n; i++)
		ops_put_i32(s->init, in.bias + 4 * i, (int32_t)ops_range(-90000, 90000));
	ops_write_quant(s->init, in.quant, nq, p->k, p->quant);
	assert_int_equal(npu_op_matmul_check(&in, &fp), NPU_JOB_OK);
	assert_int_equal(npu_op_matmul_check_sram(&in, s->init), NPU_JOB_OK);
	ops_golden(s, &in, run_ref, run_fast, what);
	for (uint32_t i = 0; i < p->m; i++)
		ops_tally_bytes(s->ref + in.output + i * in.out_stride, p->n,
				p->act_min, p->act_max);
}

static void test_matmul_random_shapes_match_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	char what[64];

	(void)state;
	ops_seed(4242);
	ops_tally.outputs = ops_tally.unclamped = 0;
	for (int i = 0; i < 300; i++) {
		struct mm_p p = mm_defaults;

		p.m = (uint32_t)ops_range(1, 40);
		p.k = (uint32_t)(ops_range(0, 3) ? ops_range(1, 300) : ops_range(300, 3000));
		p.n = (uint32_t)ops_range(1, 70);
		p.a_gap = ops_range(0, 2) ? 0 : (uint32_t)ops_range(1, 50);
		p.out_gap = ops_range(0, 2) ? 0 : (uint32_t)ops_range(1, 50);
		p.flags = (ops_range(0, 3) ? 0 : NPU_QUANT_PER_TENSOR) |
			  (ops_range(0, 3) ? 0 : NPU_CONV_NO_BIAS);
		p.zp_a = (int)ops_range(-128, 127);
		p.zp_b = ops_range(0, 1) ? 0 : (int)ops_range(-128, 127);
		p.zp_out = (int)ops_range(-30, 30);
		p.act_min = (int)ops_range(-128, -70);
		p.act_max = (int)ops_range(70, 127);
		p.quant = ops_range(0, 5) ? OPS_QUANT_SENSIBLE :
			  (enum ops_quant_mode)ops_range(0, OPS_QUANT_MODES - 1);
		p.overlap = !ops_range(0, 15);
		snprintf(what, sizeof(what), "random matmul #%d (%ux%ux%u)", i,
			 p.m, p.k, p.n);
		mm_golden(s, &p, what);
	}
	print_message("# %llu of %llu outputs inside the clamp\n",
		      (unsigned long long)ops_tally.unclamped,
		      (unsigned long long)ops_tally.outputs);
	assert_true(ops_tally.unclamped * 2 > ops_tally.outputs);
	ops_sram_free(s);
	ops_report_impls();
}

/*
 * The AVX-512 GEMM's blocks: m over several 12-row tiles and just off
 * their multiples, n over several 32-channel panels and just off 16, k
 * around multiples of 4 and 64, rows at a stride other than k.
 */
static void test_matmul_vnni_blocks_match_reference(void **state)
{
	static const uint32_t ms[] = { 1, 11, 12, 13, 23, 24, 25, 59, 60, 61, 143 };
	static const uint32_t ns[] = { 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 97, 130 };
	static const uint32_t ks[] = { 1, 2, 3, 4, 5, 63, 64, 65, 67, 129, 255, 1027 };
	struct ops_sram *s = ops_sram_new();
	char what[64];

	(void)state;
	ops_seed(20261207);
	for (int i = 0; i < 150; i++) {
		struct mm_p p = mm_defaults;

		p.m = ms[ops_range(0, 10)];
		p.n = ns[ops_range(0, 11)];
		p.k = ks[ops_range(0, 11)];
		p.a_gap = ops_range(0, 2) ? 0 : (uint32_t)ops_range(1, 9);
		p.zp_a = (int)ops_range(-128, 127);
		p.zp_b = ops_range(0, 1) ? 0 : (int)ops_range(-128, 127);
		p.zp_out = (int)ops_range(-30, 30);
		p.act_min = (int)ops_range(-128, -70);
		p.act_max = (int)ops_range(70, 127);
		p.extreme = !ops_range(0, 9);
		snprintf(what, sizeof(what), "vnni block matmul #%d (%ux%ux%u)", i,
			 p.m, p.k, p.n);
		mm_golden(s, &p, what);
	}
	ops_sram_free(s);
	ops_report_impls();
}

static void test_matmul_edge_cases_match_reference(void **state)
{
	struct ops_sram *s = ops_sram_new();
	static const uint32_t sizes[] = { 1, 3, 4, 7, 31, 33, 65 };
	struct mm_p p;

	(void)state;
	ops_seed(11);
	for (int i = 0; i < 7; i++)
		for (int j = 0; j < 7; j++) {
			p = mm_defaults;
			p.m = sizes[i];
			p.n = sizes[j];
			p.k = sizes[(i + j) % 7] * 3;
			mm_golden(s, &p, "odd m, n, k");
		}
	p = mm_defaults;
	p.m = 1, p.k = 4096, p.n = 100;
	mm_golden(s, &p, "FC: m = 1, k = 4096");
	p = mm_defaults;
	p.m = 3, p.k = 20000, p.n = 7, p.zp_b = 5;
	mm_golden(s, &p, "large k with tail, zp_b != 0");
	for (int za = -128; za <= 127; za += 255)
		for (int zb = -128; zb <= 127; zb += 255) {
			p = mm_defaults;
			p.zp_a = za, p.zp_b = zb, p.zp_out = za;
			mm_golden(s, &p, "extreme zero points");
		}
	for (int mode = 0; mode < OPS_QUANT_MODES; mode++) {
		p = mm_defaults;
		p.quant = (enum ops_quant_mode)mode;
		mm_golden(s, &p, "quant table mode");
	}
	p = mm_defaults;
	p.m = 6, p.k = 40000, p.n = 5, p.zp_a = 127, p.zp_b = 127, p.extreme = 1;
	p.quant = OPS_QUANT_EXTREME_MULT;
	mm_golden(s, &p, "wrapping accumulator");
	p = mm_defaults;
	p.a_gap = 13, p.out_gap = 3;
	mm_golden(s, &p, "strided rows");
	p = mm_defaults;
	p.m = 1, p.a_gap = 0, p.out_gap = 0;
	mm_golden(s, &p, "single row");
	p = mm_defaults;
	p.overlap = 1, p.m = 8, p.k = 16, p.n = 16;
	mm_golden(s, &p, "output overlaps a");
	p = mm_defaults;
	p.act_min = 0, p.act_max = 0;
	mm_golden(s, &p, "clamp to zero");
	p = mm_defaults;
	p.m = 2000, p.k = 24, p.n = 10;
	mm_golden(s, &p, "rows across the chunk boundary");
	ops_sram_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matmul_random_shapes_match_reference),
		cmocka_unit_test(test_matmul_edge_cases_match_reference),
		cmocka_unit_test(test_matmul_vnni_blocks_match_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
