// SPDX-License-Identifier: MIT
/*
 * Sparse weights on the NPU (ISA 1.6, codegen_sparse.c): a model whose
 * conv weights are 2:4 sparse along the input channels compiles to
 * NPU_CONV_SPARSE(2, 4) CONV2Ds (and compressed weight streams where they
 * shrink), gives the same output bytes as the dense int8 code
 * (codegen sparse=0, wcodec=0), and runs in fewer modeled cycles with
 * fewer DRAM bytes (a Gemm with 2:4 weights too); --explain's reasons
 * name the layers that got it and only those; a dense layer stays dense;
 * the options parse and refuse bad values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compiler/codegen.h"
#include "npu/npu.h"
#include "onnx_builder.h"

#define C_IN	32
#define C_MID	48
#define C_OUT	24
#define C_LAST	8
#define H	20
#define W	20

static float w1[C_MID * C_IN * 9], b1[C_MID], w2[C_OUT * C_MID], w3[C_LAST * C_OUT];
static int64_t w1_dims[] = { C_MID, C_IN, 3, 3 }, b1_dims[] = { C_MID };
static int64_t w2_dims[] = { C_OUT, C_MID, 1, 1 }, w3_dims[] = { C_LAST, C_OUT, 1, 1 };
static float x_data[C_IN * H * W];
/* 1: w1, w2 pruned without structure (3 of 4 zero, anywhere): not 2:4 */
static int unstructured;
/* 1: x[GM, C_IN * 2] -> Gemm (transB, 2:4 weights [C_MID][C_IN * 2], bias) -> Relu -> y */
static int gemm;
#define GM	24
static float wg[C_MID * C_IN * 2];
static int64_t wg_dims[] = { C_MID, C_IN * 2 };

static float val(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (float)((*s >> 8) % 2001) / 1000.0f - 1.0f;
}

/*
 * OIHW weights 2:4 sparse along I: in every group of 4 input channels at
 * one (o, kh, kw) two are zero, at positions that vary; every 7th group
 * all zero.
 */
static void sparse_2_4(float *w, int o, int i, int taps, uint32_t *s)
{
	for (int oc = 0; oc < o; oc++)
		for (int t = 0; t < taps; t++)
			for (int g = 0; g < i / 4; g++) {
				int drop = (oc + t + g) % 6, n = 0;

				for (int k = 0; k < 4; k++) {
					float *p = &w[((size_t)oc * i + g * 4 + k) * taps + t];
					/* the 6 pairs of 4 positions */
					static const int keep[6][2] = { { 0, 1 }, { 0, 2 }, { 0, 3 },
									{ 1, 2 }, { 1, 3 }, { 2, 3 } };

					*p = 0.0f;
					if ((oc * 7 + g + t) % 7 && (k == keep[drop][0] || k == keep[drop][1]))
						*p = val(s) * 0.5f, n++;
				}
				(void)n;
			}
}

/* x -> Conv3x3 (2:4) -> Relu -> Conv1x1 (2:4) -> Relu -> Conv1x1 (dense) -> y */
static void *model_bytes(size_t *size)
{
	static const int64_t xd[] = { 1, C_IN, H, W }, yd[] = { 1, C_LAST, H - 2, W - 2 };
	static struct tb_model m;
	Onnx__TensorProto *t;
	uint32_t s = 12345;
	size_t i;

	sparse_2_4(w1, C_MID, C_IN, 9, &s);
	sparse_2_4(w2, C_OUT, C_MID, 1, &s);
	if (unstructured) {
		for (i = 0; i < sizeof(w1) / sizeof(w1[0]); i++)
			w1[i] = (s = s * 1664525u + 1013904223u) >> 30 ? 0.0f : val(&s) * 0.5f;
		for (i = 0; i < sizeof(w2) / sizeof(w2[0]); i++)
			w2[i] = (s = s * 1664525u + 1013904223u) >> 30 ? 0.0f : val(&s) * 0.5f;
		w1[0] = w1[1] = w1[2] = 0.3f;	/* one group of 4 input channels with 3 */
		w1[3 * 9] = 0.0f;
		w1[1 * 9] = 0.25f;
		w1[2 * 9] = -0.25f;
	}
	for (i = 0; i < sizeof(w3) / sizeof(w3[0]); i++)
		w3[i] = val(&s) * 0.4f;
	for (i = 0; i < C_MID; i++)
		b1[i] = val(&s) * 0.2f;
	if (gemm) {
		static const int64_t gx[] = { GM, C_IN * 2 }, gy[] = { GM, C_MID };

		sparse_2_4(wg, C_MID, C_IN * 2, 1, &s);
		tb_init(&m, 13);
		tb_input(&m, "x", 2, gx);
		tb_output(&m, "y", 2, gy);
		t = tb_init_tensor(&m, "wg", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, wg_dims);
		t->n_float_data = sizeof(wg) / sizeof(wg[0]);
		t->float_data = wg;
		t = tb_init_tensor(&m, "b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, b1_dims);
		t->n_float_data = C_MID;
		t->float_data = b1;
		Onnx__NodeProto *n = tb_node(&m, "Gemm", "fc", "g", 3, "x", "wg");

		n->input[2] = "b1";
		tb_attr_int(&m, n, "transB", 1);
		tb_node(&m, "Relu", "relu", "y", 1, "g", NULL);
		return tb_pack(&m, size);
	}
	tb_init(&m, 13);
	tb_input(&m, "x", 4, xd);
	tb_output(&m, "y", 4, yd);
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w1_dims);
	t->n_float_data = sizeof(w1) / sizeof(w1[0]);
	t->float_data = w1;
	t = tb_init_tensor(&m, "b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, b1_dims);
	t->n_float_data = C_MID;
	t->float_data = b1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w2_dims);
	t->n_float_data = sizeof(w2) / sizeof(w2[0]);
	t->float_data = w2;
	t = tb_init_tensor(&m, "w3", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w3_dims);
	t->n_float_data = sizeof(w3) / sizeof(w3[0]);
	t->float_data = w3;
	tb_node(&m, "Conv", "conv1", "c1", 3, "x", "w1")->input[2] = "b1";
	tb_node(&m, "Relu", "relu1", "r1", 1, "c1", NULL);
	tb_node(&m, "Conv", "conv2", "c2", 2, "r1", "w2");
	tb_node(&m, "Relu", "relu2", "r2", 1, "c2", NULL);
	tb_node(&m, "Conv", "conv3", "y", 2, "r2", "w3");
	return tb_pack(&m, size);
}

struct result {
	float y[C_LAST * (H - 2) * (W - 2) + GM * C_MID];
	size_t y_bytes;
	uint64_t cycles, dram_bytes;
	char reason[3][512];	/* conv1, conv2, conv3 */
};

static void run(const char *codegen, struct result *r)
{
	struct npu_engine_options eo;
	struct npu_model_options mo;
	struct npu_engine *eng;
	struct npu_model *model;
	struct npu_session *s;
	struct npu_npu_stats ns;
	struct npu_segment_stats seg;
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
				      .dims = { 1, C_IN, H, W } }, out;
	static const char *const nodes[3][2] = { { "conv1", "fc" }, { "conv2", "-" },
						  { "conv3", "-" } };
	const struct npu_plan *plan;
	size_t size, i;
	void *buf = model_bytes(&size);

	for (i = 0; i < sizeof(x_data) / sizeof(x_data[0]); i++)
		x_data[i] = (float)((i * 2654435761u) % 1000) / 250.0f - 2.0f;
	in.data = x_data;
	in.nbytes = sizeof(x_data);
	if (gemm) {	/* the same data as [GM][C_IN * 2] */
		in.rank = 2;
		in.dims[0] = GM;
		in.dims[1] = C_IN * 2;
		in.nbytes = GM * C_IN * 2 * sizeof(float);
	}
	npu_engine_options_init(&eo);
	eo.threads = 1;
	assert_int_equal(npu_engine_create(&eo, &eng), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	mo.keep_small_segments = 1;
	mo.codegen = codegen;
	if (npu_model_load_memory(eng, buf, size, "sparse.onnx", &mo, &model) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(model, NULL, &s), NPU_OK);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
	assert_true(out.nbytes <= sizeof(r->y));
	memset(r->y, 0, sizeof(r->y));
	memcpy(r->y, out.data, out.nbytes);
	r->y_bytes = out.nbytes;
	npu_npu_stats_init(&ns);
	assert_int_equal(npu_session_npu_stats(s, &ns), NPU_OK);
	assert_int_equal(ns.segments, 1);	/* every conv / the Gemm on the NPU */
	r->cycles = ns.last_cycles;
	memset(&seg, 0, sizeof(seg));
	seg.struct_size = sizeof(seg);
	assert_int_equal(npu_session_npu_segment(s, 0, &seg), NPU_OK);
	r->dram_bytes = seg.dram_bytes;
	plan = npu_session_plan(s);
	memset(r->reason, 0, sizeof(r->reason));
	for (i = 0; i < npu_plan_num_placements(plan); i++) {
		struct npu_node_placement p;
		int k;

		assert_int_equal(npu_plan_placement(plan, i, &p), NPU_OK);
		k = !strcmp(p.node, nodes[0][gemm]) ? 0 : !strcmp(p.node, nodes[1][gemm]) ? 1 :
		    !strcmp(p.node, nodes[2][gemm]) ? 2 : -1;
		if (k >= 0)
			snprintf(r->reason[k], sizeof(r->reason[k]), "%s", p.reason);
	}
	npu_session_destroy(s);
	npu_model_destroy(model);
	npu_engine_destroy(eng);
}

static void test_sparse_form_same_bytes_fewer_cycles_and_bytes(void **state)
{
	static struct result dense, sparse, nocodec;
	size_t i;

	(void)state;
	run("sparse=0,wcodec=0", &dense);
	run(NULL, &sparse);
	run("wcodec=0", &nocodec);
	print_message("# dense %llu cycles %llu DRAM bytes; 2:4 %llu cycles %llu bytes; "
		      "2:4 without the codec %llu cycles %llu bytes\n",
		      (unsigned long long)dense.cycles, (unsigned long long)dense.dram_bytes,
		      (unsigned long long)sparse.cycles, (unsigned long long)sparse.dram_bytes,
		      (unsigned long long)nocodec.cycles,
		      (unsigned long long)nocodec.dram_bytes);
	print_message("# conv1: %s\n# conv2: %s\n# conv3: %s\n", sparse.reason[0],
		      sparse.reason[1], sparse.reason[2]);
	/* the same output bytes as the dense int8 code */
	assert_memory_equal(sparse.y, dense.y, sizeof(dense.y));
	assert_memory_equal(nocodec.y, dense.y, sizeof(dense.y));
	for (i = 1; i < sizeof(dense.y) / sizeof(dense.y[0]) && dense.y[i] == dense.y[0]; i++)
		;
	assert_true(i < sizeof(dense.y) / sizeof(dense.y[0]));	/* not constant */
	/* fewer modeled cycles and DRAM bytes; the codec saves bytes on top */
	assert_true(sparse.cycles < dense.cycles);
	assert_true(nocodec.cycles < dense.cycles);
	assert_true(nocodec.dram_bytes < dense.dram_bytes);
	assert_true(sparse.dram_bytes <= nocodec.dram_bytes);
	/* --explain names the sparse layers, and only those */
	assert_non_null(strstr(sparse.reason[0], "2:4 sparse weights"));
	assert_non_null(strstr(sparse.reason[1], "2:4 sparse weights"));
	assert_null(strstr(sparse.reason[2], "2:4 sparse"));
	assert_null(strstr(dense.reason[0], "sparse"));
	assert_null(strstr(dense.reason[0], "compressed"));
}

/*
 * Weights pruned without structure are not 2:4 (a group keeps 3): they
 * stay dense in the MAC array, but their blocks go through the weight
 * codec (zero masks): same bytes, fewer DRAM bytes, same MAC cycles.
 */
static void test_unstructured_weights_take_the_codec(void **state)
{
	static struct result plain, coded;

	(void)state;
	unstructured = 1;
	run("sparse=0,wcodec=0", &plain);
	run(NULL, &coded);
	unstructured = 0;
	print_message("# unstructured: %llu -> %llu DRAM bytes, %llu -> %llu cycles\n# conv1: %s\n",
		      (unsigned long long)plain.dram_bytes, (unsigned long long)coded.dram_bytes,
		      (unsigned long long)plain.cycles, (unsigned long long)coded.cycles,
		      coded.reason[0]);
	assert_memory_equal(coded.y, plain.y, sizeof(plain.y));
	assert_true(coded.dram_bytes < plain.dram_bytes);
	assert_null(strstr(coded.reason[0], "2:4 sparse"));
	assert_non_null(strstr(coded.reason[0], "compressed weights"));
}

/* A Gemm (MATMUL) with 2:4 weights along k takes the form too. */
static void test_gemm_sparse_same_bytes_fewer_cycles(void **state)
{
	static struct result dense, sparse;

	(void)state;
	gemm = 1;
	run("sparse=0,wcodec=0", &dense);
	run(NULL, &sparse);
	gemm = 0;
	print_message("# gemm: %llu -> %llu cycles, %llu -> %llu DRAM bytes\n# fc: %s\n",
		      (unsigned long long)dense.cycles, (unsigned long long)sparse.cycles,
		      (unsigned long long)dense.dram_bytes, (unsigned long long)sparse.dram_bytes,
		      sparse.reason[0]);
	assert_int_equal(sparse.y_bytes, dense.y_bytes);
	assert_memory_equal(sparse.y, dense.y, dense.y_bytes);
	assert_true(sparse.cycles < dense.cycles);
	assert_true(sparse.dram_bytes < dense.dram_bytes);
	assert_non_null(strstr(sparse.reason[0], "2:4 sparse weights"));
}

static void test_sparse_options_parse(void **state)
{
	struct npu_codegen_options o = { 0 };
	struct npu_error err = { 0 };

	(void)state;
	assert_int_equal(npu_codegen_options_parse(&o, "sparse=0,wcodec=0", &err), NPU_OK);
	assert_true(o.no_sparse && o.no_wcodec);
	assert_int_equal(npu_codegen_options_parse(&o, "sparse=1", &err), NPU_OK);
	assert_false(o.no_sparse);
	assert_true(o.no_wcodec);
	assert_int_not_equal(npu_codegen_options_parse(&o, "sparse=2", &err), NPU_OK);
	assert_non_null(strstr(npu_error_msg(&err), "sparse"));
	assert_int_not_equal(npu_codegen_options_parse(&o, "wcodec=maybe", &err), NPU_OK);
	assert_non_null(strstr(npu_error_msg(&err), "wcodec"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_options_parse),
		cmocka_unit_test(test_sparse_form_same_bytes_fewer_cycles_and_bytes),
		cmocka_unit_test(test_unstructured_weights_take_the_codec),
		cmocka_unit_test(test_gemm_sparse_same_bytes_fewer_cycles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
