// SPDX-License-Identifier: MIT
/*
 * The quantization report (npu_plan_quant_report) and mixed precision
 * (keep_fp32, accuracy_target): a small model with one
 * deliberately bad layer, a per-channel constant Mul whose one huge
 * channel (1000) stretches the per-tensor int8 range of the constant so
 * far that the other channels' factors (0.5) quantize to 0. The report
 * must put that node first, locally and below every other layer end to
 * end, and its int8 emulation must equal what the simulator computed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "npu/npu_model.h"
#include "onnx_builder.h"

static float w1[8 * 4], b1[8], k[8], w2[4 * 8];
static int64_t w1_dims[] = { 8, 4, 1, 1 }, b1_dims[] = { 8 }, k_dims[] = { 1, 8, 1, 1 },
	       w2_dims[] = { 4, 8, 1, 1 };

/*
 * x[1,4,8,8] -> Conv 1x1 (8) -> Relu -> Mul k -> Conv 1x1 (4) -> y, with
 * channel 0 of the first conv tiny (0.001 x) and k[0] = 1000, so that
 * channel 0 of the product is of the same size as the others (0.5 x).
 */
static void *build(size_t *size, float k0, bool dead_channel);

static void *model(size_t *size, float k0)
{
	return build(size, k0, false);
}

static void *dead_channel_model(size_t *size)
{
	return build(size, 0.5f, true);
}

static void *build(size_t *size, float k0, bool dead_channel)
{
	static const int64_t dims[] = { 1, 4, 8, 8 };
	static struct tb_model m;
	Onnx__TensorProto *t;
	int i;

	for (i = 0; i < 32; i++) {
		w1[i] = (float)((i * 7) % 11 + 1) / 8.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
	for (i = 0; i < 4; i++)
		w1[i] *= 0.001f;	/* output channel 0 */
	for (i = 0; i < 8; i++) {
		b1[i] = (float)i / 16.0f;
		k[i] = 0.5f;
	}
	b1[0] = 0.0f;
	k[0] = k0;
	if (dead_channel) {
		for (i = 0; i < 4; i++)
			w1[i] = 1e-30f;
		b1[0] = 0.75f;
	}
	tb_init(&m, 13);
	tb_input(&m, "x", 4, dims);
	tb_output(&m, "y", 4, (const int64_t[]){ 1, 4, 8, 8 });
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w1_dims);
	t->n_float_data = 32;
	t->float_data = w1;
	t = tb_init_tensor(&m, "b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, b1_dims);
	t->n_float_data = 8;
	t->float_data = b1;
	t = tb_init_tensor(&m, "k", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, k_dims);
	t->n_float_data = 8;
	t->float_data = k;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w2_dims);
	t->n_float_data = 32;
	t->float_data = w2;
	tb_node(&m, "Conv", "conv1", "c1", 3, "x", "w1")->input[2] = "b1";
	tb_node(&m, "Relu", "relu", "r", 1, "c1", NULL);
	tb_node(&m, "Mul", "scale", "s", 2, "r", "k");
	tb_node(&m, "Conv", "conv2", "y", 2, "s", "w2");
	return tb_pack(&m, size);
}

static struct npu_quant_report *report_of(float k0)
{
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	struct npu_model_options mo;
	struct npu_plan *plan = NULL;
	struct npu_quant_report *r = NULL;
	struct npu_host_tensor shape = { .dtype = NPU_TYPE_FLOAT, .rank = 4,
					 .dims = { 1, 4, 8, 8 } };
	size_t size;
	void *buf = model(&size, k0);

	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	mo.calib_samples = 4;
	mo.keep_small_segments = 1;
	if (npu_model_load_memory(e, buf, size, "bad-mul.onnx", &mo, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	if (npu_model_get_plan(m, &shape, 1, &plan) != NPU_OK)
		fail_msg("plan: %s", npu_last_error());
	if (npu_plan_quant_report(plan, 0, &r) != NPU_OK)
		fail_msg("report: %s", npu_last_error());
	npu_plan_release(plan);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	return r;
}

static const struct npu_quant_layer *layer(const struct npu_quant_report *r, const char *node)
{
	size_t i;

	for (i = 0; i < r->num_layers; i++)
		if (!strcmp(r->layers[i].node, node))
			return &r->layers[i];
	fail_msg("no layer '%s' in the report", node);
	return NULL;
}

static void test_bad_constant_mul_is_worst(void **state)
{
	struct npu_quant_report *r = report_of(1000.0f);
	const struct npu_quant_layer *mul, *c1, *c2;
	size_t i;

	(void)state;
	assert_int_equal(r->samples, 4);
	assert_int_equal(r->num_layers, 3);	/* conv1 (+Relu), scale, conv2 */
	for (i = 0; i < r->num_layers; i++)
		printf("# %-6s %-5s local %6.2f dB cos %.5f  e2e %6.2f dB cos %.5f\n",
		       r->layers[i].node, r->layers[i].op_type, r->layers[i].local_sqnr_db,
		       r->layers[i].local_cosine, r->layers[i].e2e_sqnr_db, r->layers[i].e2e_cosine);
	assert_string_equal(r->layers[0].node, "scale");
	assert_string_equal(r->layers[0].op_type, "Mul");
	mul = layer(r, "scale");
	c1 = layer(r, "conv1");
	c2 = layer(r, "conv2");
	/* Channels 1..7 vanish: most of the energy is lost. */
	assert_true(mul->local_sqnr_db < 10.0);
	assert_true(c1->local_sqnr_db > 30.0);
	assert_true(c2->local_sqnr_db > mul->local_sqnr_db + 20.0);
	/* The loss carries on downstream: conv2 is bad end to end, fine alone. */
	assert_true(c2->e2e_sqnr_db < 10.0);
	assert_true(c1->e2e_sqnr_db > 30.0);
	/* First layer: its input is exact, so local and end to end agree. */
	assert_true(fabs(c1->e2e_sqnr_db - c1->local_sqnr_db) < 1e-6);
	assert_true(r->compared > 0);
	assert_int_equal(r->mismatches, 0);
	/* The model output is conv2's: what the device gave, the same error. */
	assert_int_equal(r->num_outputs, 1);
	assert_string_equal(r->outputs[0].node, "y");
	assert_true(isnan(r->outputs[0].local_sqnr_db));
	assert_true(fabs(r->outputs[0].e2e_sqnr_db - c2->e2e_sqnr_db) < 1e-6);
	npu_quant_report_free(r);
}

/* The same model with a harmless constant: no layer is bad. */
static void test_good_model_has_no_bad_layer(void **state)
{
	struct npu_quant_report *r = report_of(0.5f);
	size_t i;

	(void)state;
	for (i = 0; i < r->num_layers; i++) {
		assert_true(r->layers[i].local_sqnr_db > 25.0);
		assert_true(r->layers[i].e2e_cosine > 0.99);
	}
	assert_int_equal(r->num_outputs, 1);
	assert_true(r->outputs[0].e2e_cosine > 0.99);
	assert_int_equal(r->mismatches, 0);
	npu_quant_report_free(r);
}

/* A model on the CPU has no int8 layers to report on: a clear error. */
static void test_cpu_model_is_refused(void **state)
{
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	struct npu_plan *plan = NULL;
	struct npu_quant_report *r = NULL;
	struct npu_host_tensor shape = { .dtype = NPU_TYPE_FLOAT, .rank = 4,
					 .dims = { 1, 4, 8, 8 } };
	size_t size;
	void *buf = model(&size, 1000.0f);

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	assert_int_equal(npu_model_load_memory(e, buf, size, "bad-mul.onnx", NULL, &m), NPU_OK);
	free(buf);
	assert_int_equal(npu_model_get_plan(m, &shape, 1, &plan), NPU_OK);
	assert_int_equal(npu_plan_quant_report(plan, 0, &r), NPU_ERR_INVALID_ARG);
	assert_null(r);
	assert_non_null(strstr(npu_last_error(), "NPU device"));
	assert_int_equal(npu_plan_quant_report(NULL, 0, &r), NPU_ERR_INVALID_ARG);
	npu_plan_release(plan);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static char warned[1024];

static void log_to(void *arg, enum npu_log_level level, const char *msg)
{
	(void)arg;
	if (level == NPU_LOG_WARNING && !warned[0])
		snprintf(warned, sizeof(warned), "%s", msg);
}

/*
 * A dead output channel (weights 1e-30) with a real bias (0.75): at
 * s_in * s_w the bias would need ~1e29 accumulator units and saturate into
 * a wrong offset. The compiler widens that channel's weight scale and the
 * channel comes out right; a dead channel loses nothing by it, so nothing
 * is said (test_compile_warnings: a live channel is).
 */
static void test_bias_that_would_saturate_is_kept_and_reported(void **state)
{
	struct npu_engine_options eo;
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	struct npu_model_options mo;
	struct npu_session *sim = NULL;
	struct npu_host_tensor in = { .dtype = NPU_TYPE_FLOAT, .rank = 4, .dims = { 1, 4, 8, 8 } };
	struct npu_host_tensor y;
	static float x[4 * 64];
	size_t size, i;
	void *buf;

	(void)state;
	for (i = 0; i < 4 * 64; i++)
		x[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
	npu_engine_options_init(&eo);
	eo.log = log_to;
	warned[0] = 0;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	mo.keep_small_segments = 1;
	buf = dead_channel_model(&size);
	if (npu_model_load_memory(e, buf, size, "dead.onnx", &mo, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	in.data = x;
	in.nbytes = sizeof(x);
	assert_int_equal(npu_session_create(m, NULL, &sim), NPU_OK);
	if (npu_session_run(sim, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(sim, 0, &y), NPU_OK);
	printf("# %s\n", warned);
	assert_null(strstr(warned, "bias fits the int32 accumulator"));
	assert_int_equal(npu_plan_num_warnings(npu_session_plan(sim)), 0);
	/* y = conv2(k * relu(conv1 x)): channel 0 of conv1 is relu(0.75) = 0.75
	 * everywhere; with the bias saturated it would be 0 or clipped. The
	 * output must match fp32 closely. */
	{
		struct npu_model *cpu = NULL;
		struct npu_session *cs = NULL;
		struct npu_host_tensor r;
		double dot = 0, na = 0, nb = 0;

		buf = dead_channel_model(&size);
		assert_int_equal(npu_model_load_memory(e, buf, size, "dead.onnx", NULL, &cpu), NPU_OK);
		free(buf);
		assert_int_equal(npu_session_create(cpu, NULL, &cs), NPU_OK);
		assert_int_equal(npu_session_run(cs, &in, 1), NPU_OK);
		assert_int_equal(npu_session_output(cs, 0, &r), NPU_OK);
		for (i = 0; i < r.nbytes / sizeof(float); i++) {
			double a = ((float *)r.data)[i], b = ((float *)y.data)[i];

			dot += a * b;
			na += a * a;
			nb += b * b;
		}
		printf("# cosine against fp32: %.6f\n", dot / sqrt(na * nb));
		assert_true(dot / sqrt(na * nb) > 0.999);
		npu_session_destroy(cs);
		npu_model_destroy(cpu);
	}
	npu_session_destroy(sim);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

/* ---- Mixed precision: keep_fp32 and accuracy_target ---- */

static const struct npu_host_tensor shape_4x8x8 = { .dtype = NPU_TYPE_FLOAT, .rank = 4,
						    .dims = { 1, 4, 8, 8 } };

/* The bad-Mul model on the simulator with 'keep' / 'target'; NULL on a
 * failed load or plan (npu_last_error() says why). */
static int bias_correction;	/* for the next mixed_plan() */

static struct npu_plan *mixed_plan(struct npu_engine *e, const char *keep, double target,
				   int samples, struct npu_model **mp)
{
	struct npu_model_options mo;
	struct npu_plan *plan = NULL;
	size_t size;
	void *buf = model(&size, 1000.0f);
	npu_status st;

	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	mo.calib_samples = samples;
	mo.keep_small_segments = 1;
	mo.keep_fp32 = keep;
	mo.accuracy_target = target;
	mo.bias_correction = bias_correction;
	*mp = NULL;
	st = npu_model_load_memory(e, buf, size, "bad-mul.onnx", &mo, mp);
	free(buf);
	if (st == NPU_OK && npu_model_get_plan(*mp, &shape_4x8x8, 1, &plan) != NPU_OK)
		plan = NULL;
	return plan;
}

static const struct npu_node_placement *placement_of(struct npu_plan *plan, const char *node,
						     struct npu_node_placement *p)
{
	size_t i;

	for (i = 0; i < npu_plan_num_placements(plan); i++)
		if (npu_plan_placement(plan, i, p) == NPU_OK && !strcmp(p->node, node))
			return p;
	fail_msg("no placement for '%s'", node);
	return NULL;
}

/* Cosine of the plan's model against the fp32 CPU model on fresh inputs
 * (seeds the calibration never used). */
static double fresh_cosine(struct npu_engine *e, struct npu_model *m)
{
	struct npu_model *cpu = NULL;
	struct npu_session *s = NULL, *cs = NULL;
	struct npu_host_tensor in = shape_4x8x8, y, r;
	static float x[4 * 64];
	double dot = 0, na = 0, nb = 0;
	uint64_t seed = 0x5eed;
	size_t size, i, k;
	void *buf = model(&size, 1000.0f);

	assert_int_equal(npu_model_load_memory(e, buf, size, "bad-mul.onnx", NULL, &cpu), NPU_OK);
	free(buf);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	assert_int_equal(npu_session_create(cpu, NULL, &cs), NPU_OK);
	in.data = x;
	in.nbytes = sizeof(x);
	for (k = 0; k < 4; k++) {
		for (i = 0; i < 4 * 64; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			x[i] = (float)((seed >> 40) % 2001) / 1000.0f - 1.0f;
		}
		if (npu_session_run(s, &in, 1) != NPU_OK || npu_session_run(cs, &in, 1) != NPU_OK)
			fail_msg("run: %s", npu_last_error());
		assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
		assert_int_equal(npu_session_output(cs, 0, &r), NPU_OK);
		for (i = 0; i < r.nbytes / sizeof(float); i++) {
			double a = ((float *)r.data)[i], b = ((float *)y.data)[i];

			dot += a * b;
			na += a * a;
			nb += b * b;
		}
	}
	npu_session_destroy(s);
	npu_session_destroy(cs);
	npu_model_destroy(cpu);
	return na > 0 && nb > 0 ? dot / sqrt(na * nb) : 0.0;	/* all-zero output: 0 */
}

/*
 * Two layers of the model break in int8: the Mul (its per-tensor constant
 * loses 7 of 8 channels) and conv1, whose tiny channel 0 quantizes to a
 * few levels of its per-tensor output that the Mul then multiplies by
 * 1000. keep_fp32 = "conv1,scale": both leave the NPU (their placements
 * say why), conv2 stays, and the model's answers come back, which only
 * fp32 arithmetic for those nodes can do (all int8: cosine < 0.9).
 */
static void test_keep_fp32_runs_on_the_cpu(void **state)
{
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL, *m8 = NULL;
	struct npu_plan *plan, *plan8;
	struct npu_node_placement p;
	struct npu_mixed_precision mp;
	double cos_keep, cos_int8;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	plan = mixed_plan(e, "conv1,scale", 0, 4, &m);
	if (!plan)
		fail_msg("keep_fp32: %s", npu_last_error());
	placement_of(plan, "scale", &p);
	printf("# scale: %s (%s)\n", p.on_npu ? "npu" : "cpu", p.reason);
	assert_int_equal(p.on_npu, 0);
	assert_int_equal(p.segment, -1);
	assert_non_null(strstr(p.reason, "kept in fp32"));
	assert_int_equal(placement_of(plan, "conv1", &p)->on_npu, 0);
	assert_non_null(strstr(p.reason, "kept in fp32"));
	assert_int_equal(placement_of(plan, "conv2", &p)->on_npu, 1);
	/* No target: nothing to report beyond the placement. */
	npu_mixed_precision_init(&mp);
	assert_int_equal(npu_plan_mixed_precision(plan, &mp), NPU_OK);
	assert_true(mp.target == 0);
	plan8 = mixed_plan(e, NULL, 0, 4, &m8);
	assert_non_null(plan8);
	assert_int_equal(placement_of(plan8, "scale", &p)->on_npu, 1);
	cos_keep = fresh_cosine(e, m);
	cos_int8 = fresh_cosine(e, m8);
	printf("# cosine on fresh inputs: all int8 %.5f, conv1 and scale in fp32 %.5f\n", cos_int8,
	       cos_keep);
	assert_true(cos_int8 < 0.9);
	assert_true(cos_keep > 0.999);
	npu_plan_release(plan);
	npu_plan_release(plan8);
	npu_model_destroy(m);
	npu_model_destroy(m8);
	npu_engine_destroy(e);
}

/*
 * accuracy_target 0.999: int8 alone misses it on the held-out samples;
 * the search must find the two layers that break (conv1 and the Mul,
 * above), keep them in fp32 and not conv2, reach the target on the
 * held-out samples, and the plan must hold that on inputs it never saw.
 */
static void test_accuracy_target_is_reached_on_held_out_data(void **state)
{
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	struct npu_plan *plan;
	struct npu_node_placement p;
	struct npu_mixed_precision mp;
	double fresh;
	size_t i;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	plan = mixed_plan(e, NULL, 0.999, 8, &m);
	if (!plan)
		fail_msg("accuracy_target: %s", npu_last_error());
	npu_mixed_precision_init(&mp);
	assert_int_equal(npu_plan_mixed_precision(plan, &mp), NPU_OK);
	printf("# target %g: held-out %zu, calibration %zu; cosine %.5f -> %.5f after %zu compilations; kept %zu:",
	       mp.target, mp.holdout_samples, mp.calib_samples, mp.holdout_cosine_int8,
	       mp.holdout_cosine, mp.compilations, mp.num_kept);
	for (i = 0; i < mp.num_kept; i++)
		printf(" %s (%.1f dB)", mp.kept[i], mp.kept_sqnr_db[i]);
	printf("\n# segments %zu -> %zu, NPU cycles %llu -> %llu, CPU MACs %llu -> %llu\n",
	       mp.segments_int8, mp.segments, (unsigned long long)mp.npu_cycles_int8,
	       (unsigned long long)mp.npu_cycles, (unsigned long long)mp.cpu_macs_int8,
	       (unsigned long long)mp.cpu_macs);
	assert_true(mp.target == 0.999);
	/* Modeled cycles come through the caller's graph runner (npu_cycles). */
	assert_true(mp.npu_cycles_int8 > 0 && mp.npu_cycles > 0);
	assert_int_equal(mp.holdout_samples, 2);	/* a quarter of 8 */
	assert_int_equal(mp.calib_samples, 6);
	assert_true(mp.holdout_cosine_int8 < 0.999);
	assert_true(mp.reached);
	assert_true(mp.holdout_cosine >= 0.999);
	assert_int_equal(mp.num_kept, 2);
	assert_true((!strcmp(mp.kept[0], "scale") && !strcmp(mp.kept[1], "conv1")) ||
		    (!strcmp(mp.kept[0], "conv1") && !strcmp(mp.kept[1], "scale")));
	assert_int_equal(placement_of(plan, "conv2", &p)->on_npu, 1);
	/* Those two in fp32 reach the target alone: the second stage
	 * (how much int16 the fp32 nodes still need) leaves none in int16,
	 * where the first stage had every candidate in int16. */
	printf("# int16 after the second stage: %zu\n", mp.num_int16);
	assert_int_equal(mp.num_int16, 0);
	assert_true(mp.compilations >= 2);
	assert_true(mp.cpu_macs > mp.cpu_macs_int8);
	placement_of(plan, "scale", &p);
	assert_int_equal(p.on_npu, 0);
	assert_non_null(strstr(p.reason, "accuracy target"));
	fresh = fresh_cosine(e, m);
	printf("# cosine on fresh inputs: %.5f\n", fresh);
	assert_true(fresh >= 0.999);
	npu_plan_release(plan);
	npu_model_destroy(m);
	/* The same with bias correction (calibration records channel means;
	 * later trials take them from the calibration cache). */
	bias_correction = 1;
	plan = mixed_plan(e, NULL, 0.999, 8, &m);
	bias_correction = 0;
	if (!plan)
		fail_msg("accuracy_target with bias correction: %s", npu_last_error());
	npu_mixed_precision_init(&mp);
	assert_int_equal(npu_plan_mixed_precision(plan, &mp), NPU_OK);
	printf("# with bias correction: cosine %.5f -> %.5f, kept %zu\n", mp.holdout_cosine_int8,
	       mp.holdout_cosine, mp.num_kept);
	assert_true(mp.reached);
	assert_true(fresh_cosine(e, m) >= 0.999);
	npu_plan_release(plan);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

/* Bad input is refused naming what was wrong. */
static void test_mixed_precision_bad_input(void **state)
{
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	static const double bad_targets[] = { 1.5, -0.1, NAN };
	size_t i;

	(void)state;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	/* A node the model does not have. */
	assert_null(mixed_plan(e, "conv1,nosuch", 0, 4, &m));
	printf("# %s\n", npu_last_error());
	assert_non_null(strstr(npu_last_error(), "'nosuch'"));
	assert_non_null(strstr(npu_last_error(), "no node named"));
	npu_model_destroy(m);
	/* An empty name. */
	assert_null(mixed_plan(e, "conv1,,conv2", 0, 4, &m));
	assert_null(m);
	printf("# %s\n", npu_last_error());
	assert_non_null(strstr(npu_last_error(), "keep_fp32"));
	/* Targets outside [0, 1]. */
	for (i = 0; i < sizeof(bad_targets) / sizeof(bad_targets[0]); i++) {
		assert_null(mixed_plan(e, NULL, bad_targets[i], 4, &m));
		assert_null(m);
		printf("# %s\n", npu_last_error());
		assert_non_null(strstr(npu_last_error(), "accuracy_target"));
	}
	/* One calibration sample cannot be split into calibration and hold-out. */
	assert_null(mixed_plan(e, NULL, 0.99, 1, &m));
	printf("# %s\n", npu_last_error());
	assert_non_null(strstr(npu_last_error(), "at least 2"));
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_constant_mul_is_worst),
		cmocka_unit_test(test_good_model_has_no_bad_layer),
		cmocka_unit_test(test_cpu_model_is_refused),
		cmocka_unit_test(test_bias_that_would_saturate_is_kept_and_reported),
		cmocka_unit_test(test_keep_fp32_runs_on_the_cpu),
		cmocka_unit_test(test_accuracy_target_is_reached_on_held_out_data),
		cmocka_unit_test(test_mixed_precision_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
