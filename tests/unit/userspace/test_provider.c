// SPDX-License-Identifier: MIT
/*
 * Execution providers through the public API (npu/npu_provider.h, issue
 * 31): an application's provider takes the elementwise nodes of
 *
 *	x[1,4,8,8] -> Conv 1x1 (8) conv1 -> Relu r1 -> Mul(r1, 0.5) m1
 *	           -> Sigmoid s1 -> Conv 1x1 (4) conv2 -> z
 *
 * before or after the NPU, as one subgraph; placements name the provider
 * of every node; a compiled file stores its serialized state and loading
 * compiles nothing; every misuse (registration, the providers list,
 * callbacks that fail or lie) is a clear error and the session runs on.
 */
#include <math.h>
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

#define C_IN 4
#define C_MID 8
#define HW 8
#define N_X (C_IN * HW * HW)
#define N_MID (C_MID * HW * HW)

static float w1[C_MID * C_IN], w2[C_IN * C_MID], half = 0.5f;
static int64_t w1_dims[] = { C_MID, C_IN, 1, 1 }, w2_dims[] = { C_IN, C_MID, 1, 1 };

#define assert_contains(s, sub)                                                    \
	do {                                                                       \
		if (!strstr((s), (sub)))                                           \
			fail_msg("'%s' does not contain '%s'", (s), (sub));        \
	} while (0)

/* ---- The provider: Relu, Mul by a scalar, Sigmoid ------------------------- */

enum misbehave { OK_RUN, FAIL_COMPILE, FAIL_COMPUTE, WRONG_SHAPE, NO_OUTPUT, FAIL_LOAD,
		 FAIL_SAVE };

struct counts {
	int compiled, deserialized, released, computed;
	size_t sg_nodes, sg_inputs, sg_outputs;
	char first[32], last[32];
	enum misbehave mode;
};

static struct counts counts;

static bool ew_can_run(void *user, const struct npu_provider_node *node, char *why,
		       size_t why_size)
{
	const char *op = npu_provider_node_op_type(node);

	(void)user;
	if (!strcmp(op, "Relu") || !strcmp(op, "Sigmoid"))
		return true;
	if (!strcmp(op, "Mul")) {
		struct npu_tensor_info info;
		const void *c = NULL;

		if (npu_provider_node_input(node, 1, &info, &c) == NPU_OK && c &&
		    info.rank == 0 && info.dtype == NPU_TYPE_FLOAT)
			return true;
		snprintf(why, why_size, "Mul without a scalar constant");
		return false;
	}
	snprintf(why, why_size, "test provider: not elementwise");
	return false;
}

/* The state: the chain of ops (one input: each node reads the one before). */
struct ew_prog {
	int n;
	char op[8];	/* 'r'elu, 'm'ul, 's'igmoid */
	float k[8];
};

static npu_status ew_compile(void *user, const struct npu_provider_subgraph *sg, void **state)
{
	struct ew_prog *prog;
	size_t i;

	(void)user;
	counts.sg_nodes = npu_provider_subgraph_num_nodes(sg);
	counts.sg_inputs = npu_provider_subgraph_num_inputs(sg);
	counts.sg_outputs = npu_provider_subgraph_num_outputs(sg);
	snprintf(counts.first, sizeof(counts.first), "%s",
		 npu_provider_node_name(npu_provider_subgraph_node(sg, 0)));
	snprintf(counts.last, sizeof(counts.last), "%s",
		 npu_provider_node_name(npu_provider_subgraph_node(sg, counts.sg_nodes - 1)));
	if (counts.mode == FAIL_COMPILE)
		return npu_last_error_set(NPU_ERR_UNSUPPORTED, "the test provider refuses to compile");
	if (counts.sg_nodes > 8 || counts.sg_inputs != 1 || counts.sg_outputs != 1)
		return npu_last_error_set(NPU_ERR_UNSUPPORTED, "expected a chain of 8 nodes at most");
	prog = calloc(1, sizeof(*prog));
	if (!prog)
		return NPU_ERR_NO_MEMORY;
	for (i = 0; i < counts.sg_nodes; i++) {
		const struct npu_provider_node *node = npu_provider_subgraph_node(sg, i);
		struct npu_tensor_info info;
		const void *c = NULL;

		prog->op[i] = (char)(npu_provider_node_op_type(node)[0] | 0x20);
		if (prog->op[i] == 'm' &&
		    npu_provider_node_input(node, 1, &info, &c) == NPU_OK && c)
			prog->k[i] = *(const float *)c;
	}
	prog->n = (int)counts.sg_nodes;
	*state = prog;
	counts.compiled++;
	return NPU_OK;
}

static npu_status ew_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	const struct ew_prog *prog = state;
	struct npu_host_tensor x;
	int64_t dims[NPU_MODEL_MAX_RANK];
	float *y;
	size_t i;
	int k;

	(void)user;
	counts.computed++;
	if (counts.mode == FAIL_COMPUTE) {
		npu_kernel_set_error(ctx, "the test provider's device is on fire");
		return NPU_ERR_JOB_FAILED;
	}
	if (counts.mode == NO_OUTPUT)
		return NPU_OK;
	if (npu_kernel_input(ctx, 0, &x) != NPU_OK)
		return NPU_ERR_INVALID_ARG;
	memcpy(dims, x.dims, sizeof(dims));
	if (counts.mode == WRONG_SHAPE)
		dims[1]++;
	if (npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, dims, (void **)&y) != NPU_OK)
		return NPU_ERR_INVALID_ARG;
	for (i = 0; i < x.nbytes / sizeof(float); i++) {
		float v = ((const float *)x.data)[i];

		for (k = 0; k < prog->n; k++)
			v = prog->op[k] == 'r' ? (v > 0 ? v : 0)
			  : prog->op[k] == 'm' ? v * prog->k[k] : 1.0f / (1.0f + expf(-v));
		y[i] = v;
	}
	return NPU_OK;
}

static void ew_release(void *user, void *state)
{
	(void)user;
	counts.released++;
	free(state);
}

static npu_status ew_serialize(void *user, const void *state, void **data, size_t *size)
{
	(void)user;
	if (counts.mode == FAIL_SAVE)
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "the test provider cannot save its state");
	*data = malloc(sizeof(struct ew_prog));
	if (!*data)
		return NPU_ERR_NO_MEMORY;
	memcpy(*data, state, sizeof(struct ew_prog));
	*size = sizeof(struct ew_prog);
	return NPU_OK;
}

static npu_status ew_deserialize(void *user, const struct npu_provider_subgraph *sg,
				 const void *data, size_t size, void **state)
{
	struct ew_prog *s;

	(void)user;
	if (counts.mode == FAIL_LOAD || size != sizeof(*s))
		return npu_last_error_set(NPU_ERR_MODEL, "stored state of %zu bytes is not ours",
					  size);
	s = malloc(sizeof(*s));
	if (!s)
		return NPU_ERR_NO_MEMORY;
	memcpy(s, data, sizeof(*s));
	if (s->n < 1 || s->n > 8 || (size_t)s->n != npu_provider_subgraph_num_nodes(sg)) {
		free(s);
		return npu_last_error_set(NPU_ERR_MODEL, "stored state of %zu bytes is not ours",
					  size);
	}
	*state = s;
	counts.deserialized++;
	return NPU_OK;
}

static void provider(struct npu_provider *p)
{
	npu_provider_init(p);
	p->name = "testew";
	p->can_run = ew_can_run;
	p->compile = ew_compile;
	p->compute = ew_compute;
	p->release = ew_release;
	p->serialize = ew_serialize;
	p->deserialize = ew_deserialize;
}

/* ---- Model, reference, helpers ------------------------------------------- */

static void *model(size_t *size)
{
	static const int64_t xd[] = { 1, C_IN, HW, HW };
	static struct tb_model m;
	Onnx__TensorProto *t;
	int i;

	for (i = 0; i < C_MID * C_IN; i++) {
		w1[i] = (float)((i * 7) % 11 - 5) / 6.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
	tb_init(&m, 13);
	tb_input(&m, "x", 4, xd);
	tb_output(&m, "z", 4, xd);
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w1_dims);
	t->n_float_data = C_MID * C_IN;
	t->float_data = w1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w2_dims);
	t->n_float_data = C_IN * C_MID;
	t->float_data = w2;
	t = tb_init_tensor(&m, "k", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL);
	t->n_float_data = 1;
	t->float_data = &half;
	tb_node(&m, "Conv", "conv1", "c1", 2, "x", "w1");
	tb_node(&m, "Relu", "r1", "r", 1, "c1", NULL);
	tb_node(&m, "Mul", "m1", "m", 2, "r", "k");
	tb_node(&m, "Sigmoid", "s1", "s", 1, "m", NULL);
	tb_node(&m, "Conv", "conv2", "z", 2, "s", "w2");
	return tb_pack(&m, size);
}

static void input(float *x)
{
	size_t i;

	for (i = 0; i < N_X; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
}

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

static void reference(const float *x, float *z)
{
	float c1[N_MID];
	size_t i;

	conv1x1(x, w1, C_IN, C_MID, c1);
	for (i = 0; i < N_MID; i++)
		c1[i] = 1.0f / (1.0f + expf(-(c1[i] > 0 ? c1[i] : 0) * half));
	conv1x1(c1, w2, C_MID, C_IN, z);
}

static struct npu_engine *engine_new(bool with_provider)
{
	struct npu_engine_options eo;
	struct npu_engine *e;
	struct npu_provider p;

	npu_engine_options_init(&eo);
	eo.threads = 1;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	provider(&p);
	if (with_provider && npu_engine_register_provider(e, &p) != NPU_OK)
		fail_msg("register: %s", npu_last_error());
	return e;
}

static npu_status load(struct npu_engine *e, const char *device, const char *providers,
		       const char *keep_fp32, struct npu_model **m)
{
	struct npu_model_options mo;
	size_t size;
	void *buf = model(&size);
	npu_status st;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.providers = providers;
	mo.calib_random = 1;
	mo.keep_small_segments = 1;
	mo.keep_fp32 = keep_fp32;
	st = npu_model_load_memory(e, buf, size, "provider-test.onnx", &mo, m);
	free(buf);
	return st;
}

static struct npu_host_tensor host_x(float *x)
{
	return (struct npu_host_tensor){ .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
					 .dims = { 1, C_IN, HW, HW }, .data = x,
					 .nbytes = N_X * sizeof(float) };
}

/* Run once; z into 'z'. */
static npu_status run(struct npu_session *s, float *z)
{
	float x[N_X];
	struct npu_host_tensor in, out;
	npu_status st;

	input(x);
	in = host_x(x);
	st = npu_session_run(s, &in, 1);
	if (st == NPU_OK && z) {
		assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
		assert_int_equal(out.nbytes, N_X * sizeof(float));
		memcpy(z, out.data, out.nbytes);
	}
	return st;
}

static double max_diff(const float *a, const float *b)
{
	double worst = 0;
	size_t i;

	for (i = 0; i < N_X; i++)
		worst = fmax(worst, fabs((double)a[i] - b[i]));
	return worst;
}

/* The provider placement 'node' has in the session's plan, and its reason. */
static const char *provider_of(struct npu_session *s, const char *node, const char **reason)
{
	const struct npu_plan *p = npu_session_plan(s);
	struct npu_node_placement pl;
	const char *found = NULL;
	size_t i;

	for (i = 0; i < npu_plan_num_placements(p); i++) {
		assert_int_equal(npu_plan_placement(p, i, &pl), NPU_OK);
		if (strcmp(pl.node, node))
			continue;
		if (found)
			fail_msg("node '%s' has two placements", node);
		found = npu_plan_placement_provider(p, i);
		if (reason)
			*reason = pl.reason;
	}
	return found;
}

/* ---- Tests ------------------------------------------------------------------ */

static void test_provider_before_cpu(void **state)
{
	struct npu_engine *e = engine_new(true);
	struct npu_model *m;
	struct npu_session *s;
	float z[N_X], x[N_X], want[N_X];
	const char *why;

	(void)state;
	memset(&counts, 0, sizeof(counts));
	if (load(e, "cpu", "testew,cpu", NULL, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (run(s, z) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	input(x);
	reference(x, want);
	assert_true(max_diff(z, want) < 1e-5);
	/* One subgraph of the three elementwise nodes, in order, one input and output. */
	assert_int_equal(counts.compiled, 1);
	assert_int_equal(counts.computed, 1);
	assert_int_equal(counts.sg_nodes, 3);
	assert_int_equal(counts.sg_inputs, 1);
	assert_int_equal(counts.sg_outputs, 1);
	assert_string_equal(counts.first, "r1");
	assert_string_equal(counts.last, "s1");
	assert_string_equal(provider_of(s, "r1", &why), "testew");
	assert_contains(why, "taken by provider 'testew'");
	assert_string_equal(provider_of(s, "s1", NULL), "testew");
	assert_string_equal(provider_of(s, "conv1", &why), "cpu");
	assert_contains(why, "testew: test provider: not elementwise");
	npu_session_destroy(s);
	npu_model_destroy(m);
	assert_int_equal(counts.released, 1);
	npu_engine_destroy(e);
}

static void test_provider_before_npu_and_compiled_file(void **state)
{
	struct npu_engine *e = engine_new(true), *again = engine_new(true), *bare = engine_new(false);
	struct npu_model *m, *m2 = NULL;
	struct npu_session *s, *s2;
	float z[N_X], z2[N_X], x[N_X], want[N_X];
	char path[] = "/tmp/test_provider_XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	memset(&counts, 0, sizeof(counts));
	if (load(e, "sim", "testew,npu,cpu", NULL, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (run(s, z) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	input(x);
	reference(x, want);
	assert_true(max_diff(z, want) < 0.1);	/* the convolutions in int8 */
	assert_string_equal(provider_of(s, "conv1", NULL), "npu");
	assert_string_equal(provider_of(s, "conv2", NULL), "npu");
	assert_string_equal(provider_of(s, "m1", NULL), "testew");
	assert_int_equal(counts.compiled, 1);
	if (npu_plan_save_compiled(npu_session_plan(s), path) != NPU_OK)
		fail_msg("save: %s", npu_last_error());
	npu_session_destroy(s);
	npu_model_destroy(m);

	/* Without the provider registered: a clear error naming it. */
	assert_int_not_equal(npu_model_load_file(bare, path, NULL, &m2), NPU_OK);
	assert_null(m2);
	assert_contains(npu_last_error(), "testew");
	assert_contains(npu_last_error(), "not registered");

	/* With it: deserialized, not compiled, bit-identical. */
	memset(&counts, 0, sizeof(counts));
	{
		struct npu_model_options mo;

		npu_model_options_init(&mo);
		mo.device = "sim";
		if (npu_model_load_file(again, path, &mo, &m2) != NPU_OK)
			fail_msg("load .npub: %s", npu_last_error());
	}
	assert_int_equal(npu_session_create(m2, NULL, &s2), NPU_OK);
	if (run(s2, z2) != NPU_OK)
		fail_msg("run .npub: %s", npu_last_error());
	assert_memory_equal(z, z2, sizeof(z));
	assert_int_equal(counts.compiled, 0);
	assert_int_equal(counts.deserialized, 1);
	assert_string_equal(provider_of(s2, "m1", NULL), "testew");
	npu_session_destroy(s2);
	npu_model_destroy(m2);

	/* A provider that cannot load what it stored fails the plan, naming it. */
	counts.mode = FAIL_LOAD;
	{
		struct npu_model_options mo;
		struct npu_model *m3 = NULL;

		npu_model_options_init(&mo);
		mo.device = "sim";
		if (npu_model_load_file(again, path, &mo, &m3) == NPU_OK) {
			assert_int_equal(npu_session_create(m3, NULL, &s2), NPU_OK);
			assert_int_not_equal(run(s2, NULL), NPU_OK);
			npu_session_destroy(s2);
			npu_model_destroy(m3);
		}
		assert_contains(npu_last_error(), "deserialize()");
		assert_contains(npu_last_error(), "is not ours");
	}
	unlink(path);
	npu_engine_destroy(e);
	npu_engine_destroy(again);
	npu_engine_destroy(bare);
}

/* The NPU first: the provider gets what the NPU left (kept in fp32). */
static void test_npu_before_provider(void **state)
{
	struct npu_engine *e = engine_new(true);
	struct npu_model *m;
	struct npu_session *s;
	float z[N_X], x[N_X], want[N_X];
	const char *why;

	(void)state;
	memset(&counts, 0, sizeof(counts));
	if (load(e, "sim", "npu,testew,cpu", "s1", &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (run(s, z) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	input(x);
	reference(x, want);
	assert_true(max_diff(z, want) < 0.1);
	assert_string_equal(provider_of(s, "conv2", NULL), "npu");
	assert_string_equal(provider_of(s, "s1", &why), "testew");
	assert_contains(why, "npu: ");	/* why the NPU left it */
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void test_bad_registrations_and_lists(void **state)
{
	struct npu_engine *e = engine_new(true);
	struct npu_model *m = NULL;
	struct npu_provider p;
	static const char *const bad_names[] = { "", "Upper", "cpu", "npu", "has-dash",
						 "1digit", "a_name_that_is_far_too_long_for_it" };
	size_t i;

	(void)state;
	assert_int_equal(npu_engine_register_provider(NULL, &p), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_engine_register_provider(e, NULL), NPU_ERR_INVALID_ARG);
	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		provider(&p);
		p.name = bad_names[i];
		assert_int_equal(npu_engine_register_provider(e, &p), NPU_ERR_INVALID_ARG);
		assert_contains(npu_last_error(), "name");
	}
	provider(&p);
	p.name = NULL;
	assert_int_equal(npu_engine_register_provider(e, &p), NPU_ERR_INVALID_ARG);
	provider(&p);
	p.name = "other";
	p.compile = NULL;
	assert_int_equal(npu_engine_register_provider(e, &p), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "compile is NULL");
	provider(&p);
	p.name = "other";
	p.deserialize = NULL;
	assert_int_equal(npu_engine_register_provider(e, &p), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "go together");
	provider(&p);
	assert_int_equal(npu_engine_register_provider(e, &p), NPU_ERR_BUSY);
	assert_contains(npu_last_error(), "registered already");

	assert_int_equal(load(e, "cpu", "nope,cpu", NULL, &m), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "no provider 'nope'");
	assert_contains(npu_last_error(), "testew");	/* lists what there is */
	assert_int_equal(load(e, "cpu", "cpu,testew", NULL, &m), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "comes last");
	assert_int_equal(load(e, "cpu", "testew, testew", NULL, &m), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "names twice");
	assert_int_equal(load(e, "cpu", "testew,,cpu", NULL, &m), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "empty name");
	assert_null(m);
	/* "cpu" is added when not named; spaces around names are fine. */
	if (load(e, "cpu", " testew ", NULL, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void check_misbehaviour(enum misbehave mode, const char *expect, bool at_plan)
{
	struct npu_engine *e = engine_new(true);
	struct npu_model *m;
	struct npu_session *s;
	float z[N_X];

	memset(&counts, 0, sizeof(counts));
	counts.mode = mode;
	if (load(e, "cpu", "testew,cpu", NULL, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	assert_int_not_equal(run(s, z), NPU_OK);
	assert_contains(npu_last_error(), expect);
	assert_contains(npu_last_error(), "testew");
	if (!at_plan)
		assert_contains(npu_last_error(), "testew_subgraph_0");
	/* The session runs on once the provider behaves. */
	counts.mode = OK_RUN;
	if (run(s, z) != NPU_OK)
		fail_msg("run after: %s", npu_last_error());
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void test_failing_compile_fails_the_plan(void **state)
{
	(void)state;
	check_misbehaviour(FAIL_COMPILE, "refuses to compile", true);
	assert_int_equal(counts.compiled, 1);	/* the second plan compiled */
}

/* serialize() failing fails the plan; what compile() made is released. */
static void test_failing_serialize_fails_the_plan(void **state)
{
	(void)state;
	check_misbehaviour(FAIL_SAVE, "serialize() failed: the test provider cannot save its state",
			   true);
	assert_int_equal(counts.released, counts.compiled);	/* none leaked */
}

static void test_failing_compute_fails_the_run(void **state)
{
	(void)state;
	check_misbehaviour(FAIL_COMPUTE, "on fire", false);
}

static void test_wrong_output_shape_fails_the_run(void **state)
{
	(void)state;
	check_misbehaviour(WRONG_SHAPE, "allocated as", false);
}

static void test_unallocated_output_fails_the_run(void **state)
{
	(void)state;
	check_misbehaviour(NO_OUTPUT, "did not allocate output", false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_provider_before_cpu),
		cmocka_unit_test(test_provider_before_npu_and_compiled_file),
		cmocka_unit_test(test_npu_before_provider),
		cmocka_unit_test(test_bad_registrations_and_lists),
		cmocka_unit_test(test_failing_compile_fails_the_plan),
		cmocka_unit_test(test_failing_serialize_fails_the_plan),
		cmocka_unit_test(test_failing_compute_fails_the_run),
		cmocka_unit_test(test_wrong_output_shape_fails_the_run),
		cmocka_unit_test(test_unallocated_output_fails_the_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
