// SPDX-License-Identifier: MIT
/*
 * Custom ops through the public API (npu/npu_custom_op.h, issue 31): an
 * application's op between two convolutions, with an attribute and a
 * data-dependent output, runs on the CPU and between NPU segments on the
 * simulator; a .npub of it needs the op registered; every misuse (bad
 * registrations, unregistered domains, failing or lying callbacks) is a
 * clear error and the session stays usable.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu/npu.h"
#include "onnx_builder.h"

#define DOMAIN "com.example.test"
#define C_IN 4
#define C_MID 8
#define HW 8
#define N_X (C_IN * HW * HW)
#define N_MID (C_MID * HW * HW)

/* A limit no product of these inputs and weights hits exactly. */
static const float SCALE = 1.5f, LIMIT = 0.7531f;

static float w1[C_MID * C_IN], w2[C_IN * C_MID];
static int64_t w1_dims[] = { C_MID, C_IN, 1, 1 }, w2_dims[] = { C_IN, C_MID, 1, 1 };

/* ---- The custom op: ScaledClip(x; scale, limit) -> y, [above] ----------- */
/*
 * y = clip(x * scale, -limit, limit); the optional second output lists the
 * flat indices of the elements it clipped (int64, 1-D: as long as the data
 * says). The kernel fails while *user (fail_runs) is set.
 */

static int fail_runs;

struct clip_state {
	float scale, limit;
};

static int creates, destroys;

static npu_status clip_infer(void *user, struct npu_infer_context *ctx)
{
	struct npu_tensor_info x;
	const int64_t unknown = -1;

	(void)user;
	if (npu_infer_input(ctx, 0, &x) != NPU_OK)
		return NPU_ERR_INVALID_ARG;
	if (x.dtype != NPU_TYPE_FLOAT) {
		npu_infer_set_error(ctx, "x must be float, not %s", npu_data_type_name(x.dtype));
		return NPU_ERR_INVALID_ARG;
	}
	npu_infer_set_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims);
	if (npu_infer_num_outputs(ctx) > 1)
		npu_infer_set_output(ctx, 1, NPU_TYPE_INT64, 1, &unknown);
	return NPU_OK;
}

static npu_status clip_create(void *user, const struct npu_op_attrs *attrs, void **state)
{
	struct clip_state *s = calloc(1, sizeof(*s));

	(void)user;
	if (!s)
		return NPU_ERR_NO_MEMORY;
	if (npu_op_attr_float(attrs, "scale", &s->scale) != NPU_OK)
		s->scale = 1.0f;
	if (npu_op_attr_float(attrs, "limit", &s->limit) != NPU_OK) {
		free(s);
		return NPU_ERR_INVALID_ARG;	/* npu_last_error() names the attribute */
	}
	*state = s;
	creates++;
	return NPU_OK;
}

static void clip_destroy(void *user, void *state)
{
	(void)user;
	free(state);
	destroys++;
}

static npu_status clip_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	const struct clip_state *s = state;
	struct npu_host_tensor x;
	size_t n, i, k = 0;
	const float *in;
	float *y;
	int64_t *above, count;
	npu_status st;

	st = npu_kernel_input(ctx, 0, &x);
	if (st != NPU_OK)
		return st;
	in = x.data;
	n = x.nbytes / sizeof(float);
	if (*(const int *)user) {
		npu_kernel_set_error(ctx, "asked to fail (%zu elements in)", n);
		return NPU_ERR_INVALID_ARG;
	}
	st = npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims, (void **)&y);
	if (st != NPU_OK)
		return st;
	for (i = 0, count = 0; i < n; i++) {
		float v = in[i] * s->scale;

		count += fabsf(v) > s->limit;
		y[i] = v > s->limit ? s->limit : v < -s->limit ? -s->limit : v;
	}
	if (npu_kernel_num_outputs(ctx) < 2)
		return NPU_OK;
	st = npu_kernel_output(ctx, 1, NPU_TYPE_INT64, 1, &count, (void **)&above);
	if (st != NPU_OK)
		return st;
	for (i = 0; i < n; i++)
		if (fabsf(in[i] * s->scale) > s->limit)
			above[k++] = (int64_t)i;
	return NPU_OK;
}

static void clip_op(struct npu_custom_op *op)
{
	npu_custom_op_init(op);
	op->domain = DOMAIN;
	op->op_type = "ScaledClip";
	op->since_version = 1;
	op->min_inputs = op->max_inputs = 1;
	op->min_outputs = 1;
	op->max_outputs = 2;
	op->infer = clip_infer;
	op->create = clip_create;
	op->destroy = clip_destroy;
	op->compute = clip_compute;
	op->user = &fail_runs;
}

/* ---- Misbehave(x; mode): a kernel that breaks one rule per mode --------- */

enum { MODE_WRONG_DTYPE, MODE_WRONG_RANK, MODE_NO_OUTPUT, MODE_INFER_FAILS, MODE_WRONG_DIM };

static npu_status bad_infer(void *user, struct npu_infer_context *ctx)
{
	struct npu_tensor_info x;
	int64_t mode = 0;

	(void)user;
	npu_op_attr_int(npu_infer_attrs(ctx), "mode", &mode);
	if (mode == MODE_INFER_FAILS) {
		npu_infer_set_error(ctx, "mode %d refuses every input", (int)mode);
		return NPU_ERR_UNSUPPORTED;
	}
	npu_infer_input(ctx, 0, &x);
	return npu_infer_set_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims);
}

static npu_status bad_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	struct npu_host_tensor x;
	int64_t mode = 0;
	void *y;

	(void)user;
	(void)state;
	npu_op_attr_int(npu_kernel_attrs(ctx), "mode", &mode);
	npu_kernel_input(ctx, 0, &x);
	if (mode == MODE_WRONG_DTYPE)
		npu_kernel_output(ctx, 0, NPU_TYPE_INT32, x.rank, x.dims, &y);
	else if (mode == MODE_WRONG_RANK)
		npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank - 1, x.dims, &y);
	else if (mode == MODE_WRONG_DIM) {
		x.dims[1] += 1;
		npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims, &y);
	}
	return NPU_OK;	/* whatever it did, it says it worked */
}

static void bad_op(struct npu_custom_op *op)
{
	npu_custom_op_init(op);
	op->domain = DOMAIN;
	op->op_type = "Misbehave";
	op->since_version = 1;
	op->min_inputs = op->max_inputs = 1;
	op->min_outputs = op->max_outputs = 1;
	op->infer = bad_infer;
	op->compute = bad_compute;
}

/* ---- Models ----------------------------------------------------------------- */

static Onnx__AttributeProto clip_attrs[2], *clip_attr_ptr[2];
static char *clip_outs[2];

/*
 * x[1,4,8,8] -> Conv 1x1 (8) -> c1 -> <domain>.<op>(c1) -> y[, above]
 * -> Conv 1x1 (4) -> z. Outputs: z, y (and above with two_outputs).
 * 'domain_imported' 0 leaves the custom domain out of the opset imports.
 */
static void *model(const char *domain, const char *op, int64_t mode, int two_outputs,
		   int extra_input, size_t *size)
{
	static const int64_t xd[] = { 1, C_IN, HW, HW }, yd[] = { 1, C_MID, HW, HW };
	static const int64_t ad[] = { -1 };
	static struct tb_model m;
	Onnx__NodeProto *n;
	Onnx__TensorProto *t;
	int i;

	for (i = 0; i < C_MID * C_IN; i++) {
		w1[i] = (float)((i * 7) % 11 - 5) / 6.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
	tb_init(&m, 13);
	onnx__operator_set_id_proto__init(&m.opset[1]);
	m.opset[1].domain = (char *)domain;
	m.opset[1].has_version = 1;
	m.opset[1].version = 1;
	m.opset_ptr[1] = &m.opset[1];
	m.model.n_opset_import = 2;
	tb_input(&m, "x", 4, xd);
	tb_output(&m, "z", 4, xd);
	tb_output(&m, "y", 4, yd);
	if (two_outputs) {
		tb_output(&m, "above", 1, ad);
		m.ttypes[m.n_vi - 1].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	}
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w1_dims);
	t->n_float_data = C_MID * C_IN;
	t->float_data = w1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w2_dims);
	t->n_float_data = C_IN * C_MID;
	t->float_data = w2;
	tb_node(&m, "Conv", "conv1", "c1", 2, "x", "w1");
	n = tb_node(&m, op, "custom", "y", extra_input ? 2 : 1, "c1", "x");
	n->domain = (char *)domain;
	clip_outs[0] = "y";
	clip_outs[1] = "above";
	n->output = clip_outs;
	n->n_output = two_outputs ? 2 : 1;
	for (i = 0; i < 2; i++) {
		onnx__attribute_proto__init(&clip_attrs[i]);
		clip_attrs[i].has_type = 1;
		clip_attr_ptr[i] = &clip_attrs[i];
	}
	if (!strcmp(op, "Misbehave")) {
		clip_attrs[0].name = "mode";
		clip_attrs[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		clip_attrs[0].has_i = 1;
		clip_attrs[0].i = mode;
		n->n_attribute = 1;
	} else {
		/* mode 1: without 'limit', which create() needs */
		clip_attrs[0].name = "scale";
		clip_attrs[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
		clip_attrs[0].has_f = 1;
		clip_attrs[0].f = SCALE;
		clip_attrs[1].name = "limit";
		clip_attrs[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
		clip_attrs[1].has_f = 1;
		clip_attrs[1].f = LIMIT;
		n->n_attribute = mode == 1 ? 1 : 2;
	}
	n->attribute = clip_attr_ptr;
	tb_node(&m, "Conv", "conv2", "z", 2, "y", "w2");
	return tb_pack(&m, size);
}

/* ---- Reference and helpers --------------------------------------------------- */

static void input(float *x, unsigned seed)
{
	size_t i;

	for (i = 0; i < N_X; i++)
		x[i] = (float)((i * 2654435761u + seed * 40503u) % 1000) / 500.0f - 1.0f;
}

/* conv 1x1 without bias: out[co][p] = sum_ci w[co][ci] in[ci][p] */
static void conv1x1(const float *in, const float *w, int cin, int cout, float *out)
{
	int co, ci, p;

	for (co = 0; co < cout; co++)
		for (p = 0; p < HW * HW; p++) {
			float acc = 0;

			for (ci = 0; ci < cin; ci++)
				acc += w[co * cin + ci] * in[ci * HW * HW + p];
			out[co * HW * HW + p] = acc;
		}
}

static void reference(const float *x, float *y, float *z, int64_t *above, size_t *count)
{
	float c1[N_MID];
	size_t i;

	conv1x1(x, w1, C_IN, C_MID, c1);
	*count = 0;
	for (i = 0; i < N_MID; i++) {
		float v = c1[i] * SCALE;

		if (fabsf(v) > LIMIT)
			above[(*count)++] = (int64_t)i;
		y[i] = v > LIMIT ? LIMIT : v < -LIMIT ? -LIMIT : v;
	}
	conv1x1(y, w2, C_MID, C_IN, z);
}

static struct npu_engine *engine_new(void)
{
	struct npu_engine_options eo;
	struct npu_engine *e;

	npu_engine_options_init(&eo);
	eo.threads = 1;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	return e;
}

static struct npu_engine *engine_with_ops(void)
{
	struct npu_engine *e = engine_new();
	struct npu_custom_op op;

	clip_op(&op);
	if (npu_engine_register_custom_op(e, &op) != NPU_OK)
		fail_msg("register: %s", npu_last_error());
	bad_op(&op);
	if (npu_engine_register_custom_op(e, &op) != NPU_OK)
		fail_msg("register: %s", npu_last_error());
	return e;
}

static npu_status load(struct npu_engine *e, const char *device, const void *buf, size_t size,
		       struct npu_model **m)
{
	struct npu_model_options mo;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;		/* arithmetic, not accuracy */
	mo.keep_small_segments = 1;	/* 1x1 convolutions this small would stay on the CPU */
	return npu_model_load_memory(e, buf, size, "custom.onnx", &mo, m);
}

static struct npu_host_tensor host_x(float *x)
{
	struct npu_host_tensor h = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
				     .dims = { 1, C_IN, HW, HW }, .data = x,
				     .nbytes = N_X * sizeof(float) };
	return h;
}

static void assert_contains(const char *msg, const char *part)
{
	if (!strstr(msg, part))
		fail_msg("message '%s' lacks '%s'", msg, part);
}

/* ---- Tests ------------------------------------------------------------------- */

/* Runs through the kernel and matches the reference; on sim, between NPU segments. */
static void run_and_check(const char *device, float tol)
{
	struct npu_engine *e = engine_with_ops();
	struct npu_model *m = NULL;
	struct npu_session *s;
	struct npu_host_tensor in, z, y, above;
	float x[N_X], ry[N_MID], rz[N_X];
	int64_t rabove[N_MID];
	size_t size, count, i, clipped = 0;
	void *buf = model(DOMAIN, "ScaledClip", 0, 1, 0, &size);
	float scale = 0;

	creates = destroys = 0;
	if (load(e, device, buf, size, &m) != NPU_OK)
		fail_msg("load on %s: %s", device, npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x, 3);
	reference(x, ry, rz, rabove, &count);
	assert_true(count > 0 && count < N_MID);	/* the clip does something */
	in = host_x(x);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run on %s: %s", device, npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &z), NPU_OK);
	assert_int_equal(npu_session_output(s, 1, &y), NPU_OK);
	assert_int_equal(npu_session_output(s, 2, &above), NPU_OK);
	assert_int_equal(z.nbytes, sizeof(rz));
	assert_int_equal(y.nbytes, sizeof(ry));
	assert_int_equal(above.dtype, NPU_TYPE_INT64);
	assert_int_equal(above.rank, 1);
	for (i = 0; i < N_X; i++)
		scale = fmaxf(scale, fabsf(rz[i]));
	for (i = 0; i < N_X; i++)
		if (fabsf(((float *)z.data)[i] - rz[i]) > tol * scale)
			fail_msg("%s: z[%zu] = %g, reference %g", device, i, ((float *)z.data)[i], rz[i]);
	for (i = 0; i < N_MID; i++)
		if (fabsf(((float *)y.data)[i] - ry[i]) > tol * LIMIT)
			fail_msg("%s: y[%zu] = %g, reference %g", device, i, ((float *)y.data)[i], ry[i]);
	/* The data-dependent output lists exactly the elements the kernel clipped. */
	for (i = 0; i < N_MID; i++)
		clipped += fabsf(((float *)y.data)[i]) == LIMIT;
	assert_int_equal(above.dims[0], (int64_t)clipped);
	for (i = 0; i < (size_t)above.dims[0]; i++)
		assert_true(fabsf(((float *)y.data)[((int64_t *)above.data)[i]]) == LIMIT);
	if (!strcmp(device, "cpu")) {
		/* fp32: the reference's clipped elements, but for rounding at the limit. */
		size_t j = 0;

		for (i = 0; i < (size_t)above.dims[0]; i++) {
			int64_t at = ((int64_t *)above.data)[i];

			while (j < count && rabove[j] < at)	/* missed: only at the limit */
				assert_true(fabsf(ry[rabove[j++]]) >= LIMIT * (1 - 1e-5f));
			if (j < count && rabove[j] == at)
				j++;
			else	/* extra: only at the limit */
				assert_true(fabsf(ry[at]) >= LIMIT * (1 - 1e-5f));
		}
		while (j < count)
			assert_true(fabsf(ry[rabove[j++]]) >= LIMIT * (1 - 1e-5f));
		assert_true(labs((long)above.dims[0] - (long)count) <= 2);
	} else {
		struct npu_npu_stats st;
		const struct npu_plan *p = npu_session_plan(s);
		struct npu_node_placement pl;
		int seen_custom = 0, seen_conv = 0;

		npu_npu_stats_init(&st);
		assert_int_equal(npu_session_npu_stats(s, &st), NPU_OK);
		assert_true(st.segments >= 1);
		for (i = 0; i < npu_plan_num_placements(p); i++) {
			assert_int_equal(npu_plan_placement(p, i, &pl), NPU_OK);
			if (!strcmp(pl.node, "custom")) {
				assert_int_equal(pl.on_npu, 0);
				assert_contains(pl.reason, "custom op");
				seen_custom = 1;
			} else if (!strcmp(pl.op_type, "Conv")) {
				seen_conv += pl.on_npu;
			}
		}
		assert_true(seen_custom);
		assert_int_equal(seen_conv, 2);
	}
	/* The failing kernel: its message and the node; then the session runs on. */
	fail_runs = 1;
	assert_int_not_equal(npu_session_run(s, &in, 1), NPU_OK);
	assert_contains(npu_last_error(), "asked to fail (512 elements in)");
	assert_contains(npu_last_error(), "'custom'");
	fail_runs = 0;
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run after a kernel error on %s: %s", device, npu_last_error());
	npu_session_destroy(s);
	assert_true(creates >= 1);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	assert_int_equal(creates, destroys);	/* every state made was freed */
}

static void test_custom_op_runs_on_cpu(void **state)
{
	(void)state;
	run_and_check("cpu", 1e-5f);
}

static void test_custom_op_runs_between_npu_segments_on_sim(void **state)
{
	(void)state;
	run_and_check("sim", 0.08f);	/* int8 convolutions around it */
}

static void test_bad_registrations_are_refused(void **state)
{
	static const char *const reserved[] = { "", "ai.onnx", "ai.onnx.ml", "com.microsoft",
						"ai.npu", "ai.npu.cpu", "ai.onnx.preview.training" };
	struct npu_engine *e = engine_new();
	struct npu_custom_op op;
	size_t i;

	(void)state;
	clip_op(&op);
	assert_int_equal(npu_engine_register_custom_op(NULL, &op), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_engine_register_custom_op(e, NULL), NPU_ERR_INVALID_ARG);
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		clip_op(&op);
		op.domain = reserved[i];
		assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
		assert_contains(npu_last_error(), "domain");
	}
	clip_op(&op);
	op.domain = NULL;
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
	clip_op(&op);
	op.compute = NULL;
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "compute is NULL");
	clip_op(&op);
	op.create = NULL;	/* destroy without create */
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
	clip_op(&op);
	op.op_type = "";
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
	clip_op(&op);
	op.since_version = 0;
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
	clip_op(&op);
	op.max_inputs = 0;	/* below min_inputs */
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
	clip_op(&op);
	op.min_outputs = 0;
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
	clip_op(&op);
	op.struct_size = 0;	/* not initialised */
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_INVALID_ARG);
	/* Once, then the same (domain, op, version) is taken; another version is not. */
	clip_op(&op);
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_OK);
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_ERR_BUSY);
	assert_contains(npu_last_error(), "ScaledClip");
	op.since_version = 2;
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_OK);
	npu_engine_destroy(e);
}

/* An op of a domain nobody registered: the load names node, domain and op. */
static void test_unregistered_custom_op_fails_the_load(void **state)
{
	struct npu_engine *e = engine_new(), *other = engine_with_ops();
	struct npu_model *m = NULL;
	size_t size;
	void *buf = model(DOMAIN, "ScaledClip", 0, 1, 0, &size);

	(void)state;
	assert_int_not_equal(load(e, "cpu", buf, size, &m), NPU_OK);
	assert_null(m);
	assert_contains(npu_last_error(), "'custom'");
	assert_contains(npu_last_error(), DOMAIN);
	assert_contains(npu_last_error(), "ScaledClip");
	assert_contains(npu_last_error(), "npu_engine_register_custom_op");
	free(buf);
	/* A registered domain, an op it lacks. */
	buf = model(DOMAIN, "NoSuchOp", 0, 1, 0, &size);
	assert_int_not_equal(load(other, "cpu", buf, size, &m), NPU_OK);
	assert_contains(npu_last_error(), "NoSuchOp");
	assert_contains(npu_last_error(), "'custom'");
	free(buf);
	/* Too many inputs for the registration's counts. */
	buf = model(DOMAIN, "ScaledClip", 0, 1, 1, &size);
	assert_int_not_equal(load(other, "cpu", buf, size, &m), NPU_OK);
	assert_contains(npu_last_error(), "2 inputs");
	assert_contains(npu_last_error(), "'custom'");
	free(buf);
	npu_engine_destroy(e);
	npu_engine_destroy(other);
}

/*
 * A model of 'op' (mode, two_outputs as model() takes them) loads on the CPU
 * and its run fails, with 'want' (0: any error), twice (the session stays
 * as it was), with every one of the NULL-ended 'parts' in the message.
 */
static void run_fails(const char *op, int64_t mode, int two_outputs, npu_status want,
		      const char *const *parts)
{
	struct npu_engine *e = engine_with_ops();
	struct npu_model *m = NULL;
	struct npu_session *s;
	struct npu_host_tensor in;
	float x[N_X];
	size_t size, p;
	void *buf = model(DOMAIN, op, mode, two_outputs, 0, &size);
	int run;

	if (load(e, "cpu", buf, size, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x, 1);
	in = host_x(x);
	for (run = 0; run < 2; run++) {
		npu_status st = npu_session_run(s, &in, 1);

		if (want)
			assert_int_equal(st, want);
		else
			assert_int_not_equal(st, NPU_OK);
		for (p = 0; parts[p]; p++)
			assert_contains(npu_last_error(), parts[p]);
	}
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void misbehave(int64_t mode, const char *part)
{
	run_fails("Misbehave", mode, 0, 0, (const char *const[]){ part, "'custom'", NULL });
}

static void test_output_contradicting_inference_fails_the_run(void **state)
{
	(void)state;
	misbehave(MODE_WRONG_DTYPE, "output 0 ('y') allocated as int32 1x8x8x8");
	misbehave(MODE_WRONG_RANK, "allocated as float 1x8x8; its shape inference said float 1x8x8x8");
	misbehave(MODE_WRONG_DIM, "allocated as float 1x9x8x8");
}

static void test_output_never_allocated_fails_the_run(void **state)
{
	(void)state;
	misbehave(MODE_NO_OUTPUT, "did not allocate output 0 ('y')");
}

/* create() failing (an attribute missing) fails the plan with what it says, naming the node. */
static void test_failing_create_fails_the_plan(void **state)
{
	(void)state;
	run_fails("ScaledClip", 1, 1, NPU_ERR_INVALID_ARG,
		  (const char *const[]){ "create() failed", "no attribute 'limit'", "'custom'", NULL });
}

/* Shape inference runs when a plan is made: its failure fails the plan (the first run). */
static void test_failing_inference_fails_the_plan(void **state)
{
	(void)state;
	misbehave(MODE_INFER_FAILS, "refuses every input");
	misbehave(MODE_INFER_FAILS, "shape inference failed");
}

/* A .npub keeps the custom node: loading it needs the op registered. */
static void test_npub_needs_the_op_registered(void **state)
{
	struct npu_engine *e = engine_with_ops(), *bare = engine_new(), *again = engine_with_ops();
	struct npu_model *m = NULL;
	struct npu_plan *p;
	struct npu_session *s;
	struct npu_host_tensor in, shape = { .name = "x", .rank = 4, .dims = { 1, C_IN, HW, HW } };
	char path[] = "/tmp/test_custom_op_XXXXXX";
	float x[N_X];
	size_t size;
	void *buf = model(DOMAIN, "ScaledClip", 0, 1, 0, &size);
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	if (load(e, "sim", buf, size, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	if (npu_model_get_plan(m, &shape, 1, &p) != NPU_OK)
		fail_msg("plan: %s", npu_last_error());
	if (npu_plan_save_compiled(p, path) != NPU_OK)
		fail_msg("save: %s", npu_last_error());
	npu_plan_release(p);
	npu_model_destroy(m);
	m = NULL;
	assert_int_not_equal(npu_model_load_file(bare, path, NULL, &m), NPU_OK);
	assert_null(m);
	assert_contains(npu_last_error(), "ScaledClip");
	assert_contains(npu_last_error(), DOMAIN);
	if (npu_model_load_file(again, path, NULL, &m) != NPU_OK)
		fail_msg("load .npub: %s", npu_last_error());
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x, 3);
	in = host_x(x);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run .npub: %s", npu_last_error());
	npu_session_destroy(s);
	npu_model_destroy(m);
	unlink(path);
	npu_engine_destroy(e);
	npu_engine_destroy(bare);
	npu_engine_destroy(again);
}

/* Sessions on several threads run one model's custom node at once. */
#define THREADS 4

struct worker {
	struct npu_model *m;
	const float *x, *rz;
	int bad;	/* runs that failed or differed */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct npu_session *s;
	struct npu_host_tensor in = host_x((float *)w->x), z;
	int r;
	size_t i;

	if (npu_session_create(w->m, NULL, &s) != NPU_OK) {
		w->bad++;
		return NULL;
	}
	for (r = 0; r < 5; r++) {
		if (npu_session_run(s, &in, 1) != NPU_OK || npu_session_output(s, 0, &z) != NPU_OK) {
			w->bad++;
			continue;
		}
		for (i = 0; i < N_X; i++)
			if (fabsf(((const float *)z.data)[i] - w->rz[i]) > 1e-4f)
				w->bad++;
	}
	npu_session_destroy(s);
	return NULL;
}

static void test_sessions_on_threads_share_the_kernel(void **state)
{
	struct npu_engine *e = engine_with_ops();
	struct npu_model *m = NULL;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	float x[N_X], ry[N_MID], rz[N_X];
	int64_t rabove[N_MID];
	size_t size, count;
	void *buf = model(DOMAIN, "ScaledClip", 0, 1, 0, &size);
	int i;

	(void)state;
	if (load(e, "cpu", buf, size, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	input(x, 4);
	reference(x, ry, rz, rabove, &count);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .m = m, .x = x, .rz = rz };
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

/* ---- SumPresent(x0, [x1], ...): variadic, with omitted optional inputs ---- */

static npu_status sum_infer(void *user, struct npu_infer_context *ctx)
{
	struct npu_tensor_info x;

	(void)user;
	npu_infer_input(ctx, 0, &x);
	return npu_infer_set_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims);
}

static npu_status sum_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	struct npu_host_tensor x;
	float *y;
	size_t i, k, present = 0;

	(void)user;
	(void)state;
	npu_kernel_input(ctx, 0, &x);
	if (npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims, (void **)&y) != NPU_OK)
		return NPU_ERR_INVALID_ARG;
	for (k = 0; k < npu_kernel_num_inputs(ctx); k++) {
		npu_status st = npu_kernel_input(ctx, k, &x);

		if (st == NPU_ERR_NOT_FOUND)	/* an omitted optional input */
			continue;
		if (st != NPU_OK)
			return st;
		present++;
		for (i = 0; i < x.nbytes / sizeof(float); i++)
			y[i] += ((const float *)x.data)[i];
	}
	return present == 2 ? NPU_OK : NPU_ERR_INTERNAL;
}

static void test_variadic_op_with_omitted_inputs(void **state)
{
	static const int64_t xd[] = { 1, C_IN, HW, HW };
	static struct tb_model tm;
	struct npu_engine *e = engine_new();
	struct npu_custom_op op;
	struct npu_model *m = NULL;
	struct npu_session *s;
	struct npu_host_tensor in, y;
	Onnx__NodeProto *n;
	float x[N_X];
	size_t size, i;
	void *buf;

	(void)state;
	npu_custom_op_init(&op);
	op.domain = DOMAIN;
	op.op_type = "SumPresent";
	op.since_version = 1;
	op.min_inputs = 1;
	op.max_inputs = -1;	/* variadic */
	op.min_outputs = op.max_outputs = 1;
	op.infer = sum_infer;
	op.compute = sum_compute;
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_OK);
	tb_init(&tm, 13);
	onnx__operator_set_id_proto__init(&tm.opset[1]);
	tm.opset[1].domain = DOMAIN;
	tm.opset[1].has_version = 1;
	tm.opset[1].version = 1;
	tm.opset_ptr[1] = &tm.opset[1];
	tm.model.n_opset_import = 2;
	tb_input(&tm, "x", 4, xd);
	tb_output(&tm, "y", 4, xd);
	n = tb_node(&tm, "SumPresent", "sum", "y", 4, "x", "");	/* x, (omitted), x, (omitted) */
	n->input[2] = "x";
	n->input[3] = "";
	n->domain = DOMAIN;
	buf = tb_pack(&tm, &size);
	if (load(e, "cpu", buf, size, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x, 5);
	in = host_x(x);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	for (i = 0; i < N_X; i++)
		assert_true(((const float *)y.data)[i] == 2 * x[i]);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

/* Attribute getters: values, absent names and wrong types. */
static npu_status attrs_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	const struct npu_op_attrs *a = npu_kernel_attrs(ctx);
	struct npu_host_tensor x;
	int64_t i;
	float f;
	const char *str;
	const int64_t *ints;
	size_t n;
	void *y;

	(void)user;
	(void)state;
	assert_int_equal(npu_op_attr_float(a, "scale", &f), NPU_OK);
	assert_true(f == SCALE);
	assert_int_equal(npu_op_attr_int(a, "scale", &i), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "'scale'");
	assert_int_equal(npu_op_attr_string(a, "nothing", &str), NPU_ERR_NOT_FOUND);
	assert_int_equal(npu_op_attr_ints(a, "nothing", &ints, &n), NPU_ERR_NOT_FOUND);
	assert_string_equal(npu_op_attrs_node(a), "custom");
	assert_int_equal(npu_kernel_num_inputs(ctx), 1);
	assert_int_equal(npu_kernel_input(ctx, 1, &x), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_kernel_input(ctx, 0, &x), NPU_OK);
	assert_int_equal(npu_kernel_output(ctx, 5, NPU_TYPE_FLOAT, x.rank, x.dims, &y),
			 NPU_ERR_NOT_FOUND);
	return npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims, &y);
}

static void test_kernel_context_getters(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_custom_op op;
	struct npu_model *m = NULL;
	struct npu_session *s;
	struct npu_host_tensor in;
	float x[N_X];
	size_t size;
	void *buf = model(DOMAIN, "ScaledClip", 0, 0, 0, &size);

	(void)state;
	clip_op(&op);
	op.create = NULL;
	op.destroy = NULL;
	op.infer = NULL;	/* outputs known once compute() allocates them */
	op.compute = attrs_compute;
	assert_int_equal(npu_engine_register_custom_op(e, &op), NPU_OK);
	if (load(e, "cpu", buf, size, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x, 2);
	in = host_x(x);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_custom_op_runs_on_cpu),
		cmocka_unit_test(test_custom_op_runs_between_npu_segments_on_sim),
		cmocka_unit_test(test_bad_registrations_are_refused),
		cmocka_unit_test(test_unregistered_custom_op_fails_the_load),
		cmocka_unit_test(test_output_contradicting_inference_fails_the_run),
		cmocka_unit_test(test_output_never_allocated_fails_the_run),
		cmocka_unit_test(test_failing_inference_fails_the_plan),
		cmocka_unit_test(test_failing_create_fails_the_plan),
		cmocka_unit_test(test_npub_needs_the_op_registered),
		cmocka_unit_test(test_sessions_on_threads_share_the_kernel),
		cmocka_unit_test(test_kernel_context_getters),
		cmocka_unit_test(test_variadic_op_with_omitted_inputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
