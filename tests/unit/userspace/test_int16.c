// SPDX-License-Identifier: MIT
/*
 * The compiler's 16x8 mode (issue 15): npu_model_options.precision =
 * "int16" and .int16 = "NODE,..." on the simulator. A conv / eltwise model
 * and a matmul model must come closer to fp32 on the CPU in int16 than in
 * int8 (the same calibration, fresh inputs), give the same bits on every
 * SIMD path of firmware-sim (NPU_SIM_ISA, one child process per path: the
 * simulator picks its path once per process), run with int8 and int16
 * nodes mixed (ELTWISE requantizes at the boundaries), and refuse bad
 * options with a message that names what was wrong.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "npu/npu_model.h"
#include "onnx_builder.h"

/* ---- Models ---- */

static float cw1[8 * 4 * 9], cb1[8], cw2[8 * 4], ck[8], cw3[4 * 8];
static float mw1[32 * 24], mb1[24], mw2[24 * 8];

static float det(uint32_t i, uint32_t mul, uint32_t mod, float scale)
{
	return (float)((int)((i * mul) % mod) - (int)(mod / 2)) * scale;
}

/*
 * x[1,4,8,8] -> conv1 3x3 (8, bias, Relu) --+-> add -> scale (Mul by a
 * x ---------> conv2 1x1 (8) -------------+   per-channel constant) -> conv3
 * 1x1 (4) -> y: CONV2D, ELTWISE of two activations, ELTWISE by a constant.
 */
static void *conv_model(size_t *size)
{
	static const int64_t dims[] = { 1, 4, 8, 8 };
	static int64_t d_w1[] = { 8, 4, 3, 3 }, d_b1[] = { 8 }, d_w2[] = { 8, 4, 1, 1 },
		       d_k[] = { 1, 8, 1, 1 }, d_w3[] = { 4, 8, 1, 1 }, pads[] = { 1, 1, 1, 1 };
	static struct tb_model m;
	Onnx__TensorProto *t;
	Onnx__NodeProto *n;
	Onnx__AttributeProto *a;
	uint32_t i;

	for (i = 0; i < 8 * 4 * 9; i++)
		cw1[i] = det(i, 7, 23, 0.03f);
	for (i = 0; i < 32; i++) {
		cw2[i] = det(i, 5, 13, 0.07f);
		cw3[i] = det(i, 11, 17, 0.05f);
	}
	for (i = 0; i < 8; i++) {
		cb1[i] = (float)i / 16.0f - 0.2f;
		ck[i] = 0.25f + (float)i / 8.0f;
	}
	tb_init(&m, 13);
	tb_input(&m, "x", 4, dims);
	tb_output(&m, "y", 4, (const int64_t[]){ 1, 4, 8, 8 });
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4,
			   d_w1);
	t->n_float_data = 8 * 4 * 9;
	t->float_data = cw1;
	t = tb_init_tensor(&m, "b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d_b1);
	t->n_float_data = 8;
	t->float_data = cb1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4,
			   d_w2);
	t->n_float_data = 32;
	t->float_data = cw2;
	t = tb_init_tensor(&m, "k", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4,
			   d_k);
	t->n_float_data = 8;
	t->float_data = ck;
	t = tb_init_tensor(&m, "w3", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4,
			   d_w3);
	t->n_float_data = 32;
	t->float_data = cw3;
	n = tb_node(&m, "Conv", "conv1", "c1", 3, "x", "w1");
	n->input[2] = "b1";
	a = tb_attr_int(&m, n, "pads", 0);
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	a->has_i = 0;
	a->n_ints = 4;
	a->ints = pads;
	tb_node(&m, "Relu", "relu", "r1", 1, "c1", NULL);
	tb_node(&m, "Conv", "conv2", "c2", 2, "x", "w2");
	tb_node(&m, "Add", "add", "a", 2, "r1", "c2");
	tb_node(&m, "Mul", "scale", "s", 2, "a", "k");
	tb_node(&m, "Conv", "conv3", "y", 2, "s", "w3");
	return tb_pack(&m, size);
}

/* x[1,16,32] -> mm1 (MatMul 32x24) -> bias (Add) -> Relu -> mm2 (24x8) -> y */
static void *matmul_model(size_t *size)
{
	static int64_t d_w1[] = { 32, 24 }, d_b1[] = { 24 }, d_w2[] = { 24, 8 };
	static struct tb_model m;
	Onnx__TensorProto *t;
	uint32_t i;

	for (i = 0; i < 32 * 24; i++)
		mw1[i] = det(i, 13, 29, 0.02f);
	for (i = 0; i < 24; i++)
		mb1[i] = det(i, 3, 7, 0.1f);
	for (i = 0; i < 24 * 8; i++)
		mw2[i] = det(i, 7, 19, 0.04f);
	tb_init(&m, 13);
	tb_input(&m, "x", 3, (const int64_t[]){ 1, 16, 32 });
	tb_output(&m, "y", 3, (const int64_t[]){ 1, 16, 8 });
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2,
			   d_w1);
	t->n_float_data = 32 * 24;
	t->float_data = mw1;
	t = tb_init_tensor(&m, "b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d_b1);
	t->n_float_data = 24;
	t->float_data = mb1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2,
			   d_w2);
	t->n_float_data = 24 * 8;
	t->float_data = mw2;
	tb_node(&m, "MatMul", "mm1", "m1", 2, "x", "w1");
	tb_node(&m, "Add", "bias", "a1", 2, "m1", "b1");
	tb_node(&m, "Relu", "relu", "r1", 1, "a1", NULL);
	tb_node(&m, "MatMul", "mm2", "y", 2, "r1", "w2");
	return tb_pack(&m, size);
}

/* x[1,4,8,8] -> conv (1x1, 8) -> sig (Sigmoid) -> s; s -> tr (Transpose) -> t */
static void *lut_model(size_t *size)
{
	static int64_t d_w[] = { 8, 4, 1, 1 }, perm[] = { 0, 2, 3, 1 };
	static struct tb_model m;
	Onnx__TensorProto *t;
	Onnx__AttributeProto *a;
	uint32_t i;

	for (i = 0; i < 32; i++)
		cw2[i] = det(i, 5, 13, 0.07f);
	tb_init(&m, 13);
	tb_input(&m, "x", 4, (const int64_t[]){ 1, 4, 8, 8 });
	tb_output(&m, "s", 4, (const int64_t[]){ 1, 8, 8, 8 });
	tb_output(&m, "t", 4, (const int64_t[]){ 1, 8, 8, 8 });
	t = tb_init_tensor(&m, "w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d_w);
	t->n_float_data = 32;
	t->float_data = cw2;
	tb_node(&m, "Conv", "conv", "c", 2, "x", "w");
	tb_node(&m, "Sigmoid", "sig", "s", 1, "c", NULL);
	a = tb_attr_int(&m, tb_node(&m, "Transpose", "tr", "t", 1, "s", NULL), "perm", 0);
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	a->has_i = 0;
	a->n_ints = 4;
	a->ints = perm;
	return tb_pack(&m, size);
}

static float fw1[8 * 4], fw2[4 * 4 * 9], fwt[12 * 2 * 2 * 2], fsc[4] = { 1, 1, 2, 2 };

/*
 * det's neck in small: x[1,4,4,4] -> ca 1x1 (8) -> up (Resize x2) --+
 * x -> up2 (Resize x2) -> cb 3x3 (4) -----------------------------+-> cat
 * (Concat on channels, 12) -> head (ConvTranspose 2x2 stride 2, 2) -> y:
 * RESIZE, the Concat's copies (two inputs of different scales) and zero
 * insertion, all int16 under precision "int16".
 */
static void *fpn_model(size_t *size)
{
	static int64_t d_w1[] = { 8, 4, 1, 1 }, d_w2[] = { 4, 4, 3, 3 }, d_wt[] = { 12, 2, 2, 2 },
		       d_sc[] = { 4 }, pads[] = { 1, 1, 1, 1 }, strides[] = { 2, 2 };
	static struct tb_model m;
	Onnx__TensorProto *t;
	Onnx__NodeProto *n;
	Onnx__AttributeProto *a;
	uint32_t i;

	/* Off any int8 grid, so that the int8 weights have an error (bias correction). */
	for (i = 0; i < 32; i++)
		fw1[i] = det(i, 5, 13, 0.07f) + 0.01f * sinf((float)i);
	for (i = 0; i < 4 * 4 * 9; i++)
		fw2[i] = det(i, 7, 23, 0.03f) + 0.01f * sinf((float)i);
	for (i = 0; i < 96; i++)
		fwt[i] = det(i, 11, 17, 0.05f);
	tb_init(&m, 13);
	tb_input(&m, "x", 4, (const int64_t[]){ 1, 4, 4, 4 });
	tb_output(&m, "y", 4, (const int64_t[]){ 1, 2, 16, 16 });
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d_w1);
	t->n_float_data = 32;
	t->float_data = fw1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d_w2);
	t->n_float_data = 4 * 4 * 9;
	t->float_data = fw2;
	t = tb_init_tensor(&m, "wt", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d_wt);
	t->n_float_data = 96;
	t->float_data = fwt;
	t = tb_init_tensor(&m, "sc", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d_sc);
	t->n_float_data = 4;
	t->float_data = fsc;
	tb_node(&m, "Conv", "ca", "a", 2, "x", "w1");
	n = tb_node(&m, "Resize", "up", "u", 3, "a", "");
	n->input[2] = "sc";
	n = tb_node(&m, "Resize", "up2", "xu", 3, "x", "");
	n->input[2] = "sc";
	a = tb_attr_int(&m, tb_node(&m, "Conv", "cb", "b", 2, "xu", "w2"), "pads", 0);
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	a->has_i = 0;
	a->n_ints = 4;
	a->ints = pads;
	tb_attr_int(&m, tb_node(&m, "Concat", "cat", "c", 2, "u", "b"), "axis", 1);
	a = tb_attr_int(&m, tb_node(&m, "ConvTranspose", "head", "y", 2, "c", "wt"), "strides", 0);
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	a->has_i = 0;
	a->n_ints = 2;
	a->ints = strides;
	return tb_pack(&m, size);
}

struct case_def {
	const char *name;
	void *(*build)(size_t *size);
	struct npu_host_tensor shape;
	size_t elems;
};

static const struct case_def cases[] = {
	{ "conv", conv_model, { .dtype = NPU_TYPE_FLOAT, .rank = 4, .dims = { 1, 4, 8, 8 } }, 256 },
	{ "matmul", matmul_model, { .dtype = NPU_TYPE_FLOAT, .rank = 3, .dims = { 1, 16, 32 } },
	  512 },
	/* LUT (Sigmoid) in int16, a Transpose that stays int8 */
	{ "lut", lut_model, { .dtype = NPU_TYPE_FLOAT, .rank = 4, .dims = { 1, 4, 8, 8 } }, 256 },
	/* Resize, Concat and ConvTranspose in int16 (det's neck and head) */
	{ "fpn", fpn_model, { .dtype = NPU_TYPE_FLOAT, .rank = 4, .dims = { 1, 4, 4, 4 } }, 64 },
};

/* ---- Helpers ---- */

static int bias_corr;	/* npu_model_options.bias_correction for the next load() */

static npu_status load(struct npu_engine *e, const struct case_def *c, const char *device,
		       const char *precision, const char *int16, struct npu_model **m)
{
	struct npu_model_options mo;
	size_t size;
	void *buf = c->build(&size);
	npu_status st;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;
	mo.calib_samples = 8;
	mo.keep_small_segments = 1;
	mo.precision = precision;
	mo.int16 = int16;
	mo.bias_correction = bias_corr;
	*m = NULL;
	st = npu_model_load_memory(e, buf, size, c->name, strcmp(device, "cpu") ? &mo : NULL, m);
	free(buf);
	return st;
}

static void fresh_input(float *x, size_t n, uint64_t *seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)((*seed >> 40) % 2001) / 1000.0f - 1.0f;
	}
}

/* Run 'm' on 4 fresh inputs; outputs concatenated into y (4 * out elems). */
static void run4(struct npu_model *m, const struct case_def *c, float *y, size_t out_elems)
{
	struct npu_session *s = NULL;
	struct npu_host_tensor in = c->shape, out;
	float x[512];
	uint64_t seed = 0x5eed;
	size_t k;

	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	in.data = x;
	in.nbytes = c->elems * sizeof(float);
	for (k = 0; k < 4; k++) {
		fresh_input(x, c->elems, &seed);
		if (npu_session_run(s, &in, 1) != NPU_OK)
			fail_msg("%s: run: %s", c->name, npu_last_error());
		assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
		assert_int_equal(out.nbytes, out_elems * sizeof(float));
		memcpy(y + k * out_elems, out.data, out.nbytes);
	}
	npu_session_destroy(s);
}

static double cosine(const float *a, const float *b, size_t n)
{
	double dot = 0, na = 0, nb = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		dot += (double)a[i] * b[i];
		na += (double)a[i] * a[i];
		nb += (double)b[i] * b[i];
	}
	return na > 0 && nb > 0 ? dot / sqrt(na * nb) : 0.0;
}

static size_t out_elems(const struct case_def *c)
{
	return c->build == conv_model ? 256 : c->build == lut_model || c->build == fpn_model ? 512 :
	       16 * 8;
}

/* The cosine of 'device' with precision / int16 against fp32 on the CPU. */
static double cosine_of(struct npu_engine *e, const struct case_def *c, const char *precision,
			const char *int16, float *y)
{
	struct npu_model *m = NULL, *cpu = NULL;
	size_t n = out_elems(c);
	float *ref = calloc(4 * n, sizeof(float));
	double cs;

	assert_non_null(ref);
	if (load(e, c, "sim", precision, int16, &m) != NPU_OK)
		fail_msg("%s: load %s: %s", c->name, precision ? precision : int16, npu_last_error());
	assert_int_equal(load(e, c, "cpu", NULL, NULL, &cpu), NPU_OK);
	run4(m, c, y, n);
	run4(cpu, c, ref, n);
	cs = cosine(ref, y, 4 * n);
	npu_model_destroy(m);
	npu_model_destroy(cpu);
	free(ref);
	return cs;
}

/* Every node of the plan on the NPU (so that the sim did the arithmetic). */
static void assert_all_on_npu(struct npu_engine *e, const struct case_def *c, const char *precision)
{
	struct npu_model *m = NULL;
	struct npu_plan *plan = NULL;
	struct npu_node_placement p;
	size_t i;

	assert_int_equal(load(e, c, "sim", precision, NULL, &m), NPU_OK);
	if (npu_model_get_plan(m, &c->shape, 1, &plan) != NPU_OK)
		fail_msg("%s: plan: %s", c->name, npu_last_error());
	for (i = 0; i < npu_plan_num_placements(plan); i++) {
		assert_int_equal(npu_plan_placement(plan, i, &p), NPU_OK);
		if (!p.on_npu)
			fail_msg("%s (%s): node '%s' is on the CPU: %s", c->name, precision, p.node,
				 p.reason);
		/* fpn: every node, Resize / Concat / ConvTranspose too, in int16 */
		if (c->build == fpn_model && !strcmp(precision, "int16") &&
		    !strstr(p.reason, "int16 activations"))
			fail_msg("fpn: node '%s' is not int16: %s", p.node, p.reason);
	}
	npu_plan_release(plan);
	npu_model_destroy(m);
}

/* ---- Tests ---- */

static void test_int16_is_closer_to_fp32(void **state)
{
	struct npu_engine *e = NULL;
	float y[4 * 512];
	size_t i;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double c8, c16;

		assert_all_on_npu(e, &cases[i], "int16");
		c8 = cosine_of(e, &cases[i], "int8", NULL, y);
		c16 = cosine_of(e, &cases[i], "int16", NULL, y);
		printf("# %s: cosine vs fp32: int8 %.7f, int16 %.7f (1 - cos: %.3g vs %.3g)\n",
		       cases[i].name, c8, c16, 1 - c8, 1 - c16);
		assert_true(c16 > c8);
		/* 8 more bits of activations; the int8 weights' error stays. */
		assert_true(1 - c16 < (1 - c8) / 3);
	}
	npu_engine_destroy(e);
}

/* One NPU_SIM_ISA path in a child: its int16 outputs through a pipe. */
static bool outputs_on_path(const char *isa, const struct case_def *c, float *y, size_t n)
{
	int fd[2];
	pid_t pid;
	size_t got = 0;
	int status;

	assert_int_equal(pipe(fd), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct npu_engine *e = NULL;
		struct npu_model *m = NULL;
		float *out = calloc(4 * n, sizeof(float));
		size_t off = 0;

		close(fd[0]);
		setenv("NPU_SIM_ISA", isa, 1);
		if (!out || npu_engine_create(NULL, &e) != NPU_OK ||
		    load(e, c, "sim", "int16", NULL, &m) != NPU_OK)
			_exit(2);
		run4(m, c, out, n);
		while (off < 4 * n * sizeof(float)) {
			ssize_t w = write(fd[1], (char *)out + off, 4 * n * sizeof(float) - off);

			if (w <= 0)
				_exit(3);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(fd[1]);
	while (got < 4 * n * sizeof(float)) {
		ssize_t r = read(fd[0], (char *)y + got, 4 * n * sizeof(float) - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == 4 * n * sizeof(float);
}

static void test_int16_is_bit_exact_across_simd_paths(void **state)
{
	static const char *const isas[] = { "portable", "avx2", "avx512vnni" };
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = out_elems(&cases[i]);
		float *ref = calloc(4 * n, sizeof(float)), *y = calloc(4 * n, sizeof(float));

		assert_non_null(ref);
		assert_non_null(y);
		if (!outputs_on_path(isas[0], &cases[i], ref, n))
			fail_msg("%s: the portable path failed", cases[i].name);
		for (k = 1; k < sizeof(isas) / sizeof(isas[0]); k++) {
			/* A path the host lacks falls back to the next best: still a check. */
			if (!outputs_on_path(isas[k], &cases[i], y, n))
				fail_msg("%s: path %s failed", cases[i].name, isas[k]);
			if (memcmp(ref, y, 4 * n * sizeof(float)))
				fail_msg("%s: int16 outputs of %s differ from portable", cases[i].name,
					 isas[k]);
			printf("# %s: %s == portable\n", cases[i].name, isas[k]);
		}
		free(ref);
		free(y);
	}
}

/*
 * Only some nodes int16, so that ELTWISE requantizes where int8 meets
 * int16: conv1 + add read int8 x / conv2's int8 output and hand scale an
 * int8 tensor; conv3 in int16 ends the graph. (One int16 node between
 * int8 ones can round back to the very int8 values all-int8 gives, so
 * each set ends in int16 or spans two nodes.) The outputs differ from
 * all-int8 (the int16 nodes ran) and stay at least as close to fp32.
 */
static void test_mixed_int8_int16_boundaries(void **state)
{
	static const char *const sets[] = { "conv3", "conv1,add", "add,scale,conv3", "mm2",
					    "mm1,bias" };
	struct npu_engine *e = NULL;
	float y8[4 * 512], y[4 * 512];
	size_t i;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	for (i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		const struct case_def *c = &cases[sets[i][0] == 'm' || sets[i][0] == 'b' ? 1 : 0];
		double c8 = cosine_of(e, c, "int8", NULL, y8);
		double cm = cosine_of(e, c, NULL, sets[i], y);

		printf("# %s, int16 = %s: cosine int8 %.7f, mixed %.7f\n", c->name, sets[i], c8, cm);
		assert_true(memcmp(y8, y, 4 * out_elems(c) * sizeof(float)) != 0);
		assert_true(cm > c8 - 1e-4);
	}
	npu_engine_destroy(e);
}

static void expect_error_on(struct npu_engine *e, const struct case_def *c,
			    const char *precision, const char *int16, const char *needle)
{
	struct npu_model *m = NULL;
	struct npu_plan *plan = NULL;
	npu_status st = load(e, c, "sim", precision, int16, &m);

	if (st == NPU_OK) {
		st = npu_model_get_plan(m, &c->shape, 1, &plan);
		npu_plan_release(plan);
	}
	npu_model_destroy(m);
	if (st == NPU_OK)
		fail_msg("precision %s, int16 %s: accepted", precision, int16);
	printf("# precision %s, int16 %s: %s\n", precision, int16, npu_last_error());
	if (!strstr(npu_last_error(), needle))
		fail_msg("error '%s' does not name '%s'", npu_last_error(), needle);
}

static void expect_error(struct npu_engine *e, const char *precision, const char *int16,
			 const char *needle)
{
	expect_error_on(e, &cases[0], precision, int16, needle);
}

static void test_bad_options_are_rejected(void **state)
{
	struct npu_engine *e = NULL;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	expect_error(e, "int12", NULL, "int12");
	expect_error(e, NULL, "conv1,nosuch", "nosuch");
	expect_error(e, NULL, "conv1,,conv2", "empty node name");
	/* The Relu is fused into conv1: no node of that name is left. */
	expect_error(e, NULL, "relu", "relu");
	npu_engine_destroy(e);
}

/*
 * A node kind the compiler has no int16 form for: naming the Transpose is
 * an error that names it; --precision int16 leaves it int8 (it reads the
 * int16 Sigmoid output requantized), test_int16_is_closer_to_fp32 runs it.
 */
#define lut_case cases[2]

static void test_kinds_without_int16(void **state)
{
	struct npu_engine *e = NULL;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	expect_error_on(e, &lut_case, NULL, "tr", "'tr' cannot run in int16: Transpose");
	npu_engine_destroy(e);
}

/*
 * accuracy_target between what int8 and int16 reach: the search promotes
 * nodes to int16 and keeps none in fp32 on the CPU.
 */
static void test_accuracy_target_promotes_to_int16_first(void **state)
{
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	struct npu_model_options mo;
	struct npu_plan *plan = NULL;
	struct npu_mixed_precision mp;
	size_t size, i;
	void *buf = conv_model(&size);

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	mo.calib_samples = 8;
	mo.keep_small_segments = 1;
	mo.accuracy_target = 0.9998;
	if (npu_model_load_memory(e, buf, size, "conv", &mo, &m) != NPU_OK ||
	    npu_model_get_plan(m, &cases[0].shape, 1, &plan) != NPU_OK)
		fail_msg("accuracy target: %s", npu_last_error());
	free(buf);
	npu_mixed_precision_init(&mp);
	assert_int_equal(npu_plan_mixed_precision(plan, &mp), NPU_OK);
	printf("# target %g: held-out cosine %.6f -> %.6f (%s), %zu compilations, cycles %llu -> %llu; int16:",
	       mp.target, mp.holdout_cosine_int8, mp.holdout_cosine,
	       mp.reached ? "reached" : "not reached", mp.compilations,
	       (unsigned long long)mp.npu_cycles_int8, (unsigned long long)mp.npu_cycles);
	for (i = 0; i < mp.num_int16; i++)
		printf(" %s", mp.int16[i]);
	printf("; fp32: %zu\n", mp.num_kept);
	assert_true(mp.holdout_cosine_int8 < mp.target);
	assert_true(mp.reached);
	assert_true(mp.num_int16 > 0);
	assert_int_equal(mp.num_kept, 0);
	assert_true(mp.holdout_cosine > mp.holdout_cosine_int8);
	assert_true(mp.holdout_cosine_int16 >= mp.target);
	npu_plan_release(plan);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

/* An int16 plan saved as .npub and loaded back gives the same bits. */
static void test_int16_npub_round_trip(void **state)
{
	char path[] = "/tmp/test_int16_XXXXXX";
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL, *m2 = NULL;
	struct npu_plan *plan = NULL;
	float y[4 * 512], y2[4 * 512];
	size_t i;
	int fd;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_def *c = &cases[i];
		struct npu_model_options mo;

		fd = mkstemp(path);
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(load(e, c, "sim", "int16", NULL, &m), NPU_OK);
		if (npu_model_get_plan(m, &c->shape, 1, &plan) != NPU_OK ||
		    npu_plan_save_compiled(plan, path) != NPU_OK)
			fail_msg("%s: save: %s", c->name, npu_last_error());
		npu_model_options_init(&mo);
		mo.device = "sim";
		if (npu_model_load_file(e, path, &mo, &m2) != NPU_OK)
			fail_msg("%s: load .npub: %s", c->name, npu_last_error());
		run4(m, c, y, out_elems(c));
		run4(m2, c, y2, out_elems(c));
		assert_memory_equal(y, y2, 4 * out_elems(c) * sizeof(float));
		printf("# %s: int16 .npub round trip gives the same outputs\n", c->name);
		npu_plan_release(plan);
		npu_model_destroy(m);
		npu_model_destroy(m2);
		unlink(path);
		memcpy(path + strlen(path) - 6, "XXXXXX", 6);
	}
	npu_engine_destroy(e);
}

/*
 * Bias correction defaults to the int16 nodes (their error is mostly the
 * int8 weights' mean shift): int8 by default is int8 with it off, int16 by
 * default is int16 with it on, and off changes int16's outputs.
 */
static void test_bias_correction_default_follows_precision(void **state)
{
	const struct case_def *c = &cases[3];	/* fpn: weights off the int8 grid */
	size_t n = out_elems(c);
	struct npu_engine *e = NULL;
	float *y[6];
	static const struct { const char *precision; int bc; } runs[] = {
		{ "int8", 0 }, { "int8", -1 }, { "int16", 0 }, { "int16", 1 }, { "int16", -1 },
		{ "int8", 1 },
	};
	size_t i;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	for (i = 0; i < 6; i++) {
		y[i] = calloc(4 * n, sizeof(float));
		assert_non_null(y[i]);
		bias_corr = runs[i].bc;
		printf("# %s, bias_correction %d: cosine %.7f\n", runs[i].precision, runs[i].bc,
		       cosine_of(e, c, runs[i].precision, NULL, y[i]));
	}
	bias_corr = 0;
	assert_memory_equal(y[0], y[1], 4 * n * sizeof(float));
	assert_memory_equal(y[2], y[3], 4 * n * sizeof(float));
	assert_true(memcmp(y[2], y[4], 4 * n * sizeof(float)) != 0);
	assert_true(memcmp(y[0], y[5], 4 * n * sizeof(float)) != 0);
	for (i = 0; i < 6; i++)
		free(y[i]);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int16_is_closer_to_fp32),
		cmocka_unit_test(test_int16_is_bit_exact_across_simd_paths),
		cmocka_unit_test(test_mixed_int8_int16_boundaries),
		cmocka_unit_test(test_bad_options_are_rejected),
		cmocka_unit_test(test_kinds_without_int16),
		cmocka_unit_test(test_int16_npub_round_trip),
		cmocka_unit_test(test_accuracy_target_promotes_to_int16_first),
		cmocka_unit_test(test_bias_correction_default_follows_precision),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
