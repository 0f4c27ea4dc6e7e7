// SPDX-License-Identifier: MIT
/*
 * test_options.c - the switches that were environment variables are
 * options (issue 31): the CPU compile options per model (fuse, nchwc,
 * winograd: npu_model_options.cpu) change what is planned, two models of
 * one process keep their own, a .npub records them and plans by them
 * whatever the loader asks; the engine options (cpu_isa, pool_stats,
 * trace_file) do what they say, and NPU_TRACE_FILE is read once, when the
 * engine is created. The codegen options have their own tests
 * (test_compiler_*: gb_codegen_use, test_compiler_e2e's npub round trip).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "compiler/compiler.h"
#include "cpu/kernels/cpu_kernels.h"
#include "npu/npu.h"
#include "onnx_builder.h"
#include "runtime/npu_api.h"
#include "runtime/npu_runtime.h"

static float w1[16 * 16 * 9], b1[16], w2[16 * 16];
static int64_t w1_dims[] = { 16, 16, 3, 3 }, b1_dims[] = { 16 }, w2_dims[] = { 16, 16, 1, 1 };
static const int64_t x_dims[] = { 1, 16, 26, 26 }, y_dims[] = { 1, 16, 24, 24 };

/*
 * x[1,16,26,26] -> Conv 3x3 (+ bias) -> Relu -> Conv 1x1 -> y[1,16,24,24]:
 * the 3x3 conv on a 24 x 24 output is where Winograd wins by default.
 */
static void *model_bytes(size_t *size)
{
	static struct tb_model m;
	Onnx__TensorProto *t;
	size_t i;

	for (i = 0; i < sizeof(w1) / sizeof(w1[0]); i++)
		w1[i] = (float)((int)(i * 7 % 11) - 5) / 32.0f;
	for (i = 0; i < sizeof(w2) / sizeof(w2[0]); i++)
		w2[i] = (float)((int)(i * 5 % 13) - 6) / 24.0f;
	for (i = 0; i < 16; i++)
		b1[i] = (float)i / 64.0f - 0.1f;
	tb_init(&m, 13);
	tb_input(&m, "x", 4, x_dims);
	tb_output(&m, "y", 4, y_dims);
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w1_dims);
	t->n_float_data = sizeof(w1) / sizeof(w1[0]);
	t->float_data = w1;
	t = tb_init_tensor(&m, "b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, b1_dims);
	t->n_float_data = 16;
	t->float_data = b1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w2_dims);
	t->n_float_data = sizeof(w2) / sizeof(w2[0]);
	t->float_data = w2;
	tb_node(&m, "Conv", "conv3x3", "c1", 3, "x", "w1")->input[2] = "b1";
	tb_node(&m, "Relu", "relu", "r", 1, "c1", NULL);
	tb_node(&m, "Conv", "conv1x1", "y", 2, "r", "w2");
	return tb_pack(&m, size);
}

static struct npu_engine *engine_new(void)
{
	struct npu_engine_options eo;
	struct npu_engine *e;

	npu_engine_options_init(&eo);
	eo.threads = 2;
	if (npu_engine_create(&eo, &e) != NPU_OK)
		fail_msg("engine: %s", npu_last_error());
	return e;
}

/* The model from bytes on 'device' with CPU options 'cpu' (NULL: defaults). */
static struct npu_model *load(struct npu_engine *e, const void *bytes, size_t size,
			      const char *name, const char *device, const char *cpu)
{
	struct npu_model_options mo;
	struct npu_model *m;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.cpu = cpu;
	mo.calib_random = 1;	/* arithmetic, not accuracy */
	if (npu_model_load_memory(e, bytes, size, name, &mo, &m) != NPU_OK)
		fail_msg("load %s (cpu '%s'): %s", name, cpu ? cpu : "", npu_last_error());
	return m;
}

static struct npu_plan *plan_of(struct npu_model *m)
{
	struct npu_host_tensor shape = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 };
	struct npu_plan *p;

	memcpy(shape.dims, x_dims, sizeof(x_dims));
	if (npu_model_get_plan(m, &shape, 1, &p) != NPU_OK)
		fail_msg("plan: %s", npu_last_error());
	return p;
}

static size_t count_op(const struct npu_plan *p, const char *op)
{
	size_t i, n = 0;

	for (i = 0; i < p->g->num_nodes; i++)
		n += !strcmp(p->g->nodes[i]->op_type, op);
	return n;
}

/* y for a fixed x, copied out (the caller frees). */
static float *run(struct npu_model *m)
{
	size_t n = 1 * 16 * 26 * 26, i;
	float *x = malloc(n * sizeof(float)), *y = malloc(16 * 24 * 24 * sizeof(float));
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 }, out;
	struct npu_session *s;

	assert_non_null(x);
	assert_non_null(y);
	for (i = 0; i < n; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	memcpy(in.dims, x_dims, sizeof(x_dims));
	in.data = x;
	in.nbytes = n * sizeof(float);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
	assert_int_equal(out.nbytes, 16 * 24 * 24 * sizeof(float));
	memcpy(y, out.data, out.nbytes);
	npu_session_destroy(s);
	free(x);
	return y;
}

/* "key=value,...": every key and value; bad ones named with what they take. */
static void test_cpu_options_parse_and_name_bad_ones(void **state)
{
	static const struct {
		const char *spec, *want;
	} bad[] = {
		{ "fuse=2", "fuse cannot be '2' (0 or 1)" },
		{ "nchwc=on", "nchwc cannot be 'on' (auto, 0 or 1)" },
		{ "winograd=1", "winograd cannot be '1' (auto, 0 or all)" },
		{ "speed=1", "unknown option 'speed' (fuse, nchwc, winograd)" },
		{ "winograd", "'winograd' is not key=value" },
	};
	struct npu_cpu_options o = { 0 };
	struct npu_error err = { 0 };
	struct npu_engine *e = engine_new();
	struct npu_model_options mo;
	struct npu_model *m = NULL;
	size_t size, i;
	void *bytes = model_bytes(&size);

	(void)state;
	assert_int_equal(npu_cpu_options_parse(&o, "fuse=0,nchwc=1,winograd=all", &err), NPU_OK);
	assert_true(o.no_fuse);
	assert_int_equal(o.nchwc, NPU_CPU_ON);
	assert_int_equal(o.winograd, NPU_CPU_ON);
	assert_int_equal(npu_cpu_options_parse(&o, "fuse=1,nchwc=0,winograd=0", &err), NPU_OK);
	assert_false(o.no_fuse);
	assert_int_equal(o.nchwc, NPU_CPU_OFF);
	assert_int_equal(o.winograd, NPU_CPU_OFF);
	assert_int_equal(npu_cpu_options_parse(&o, "nchwc=auto,winograd=auto", &err), NPU_OK);
	assert_true(npu_cpu_options_default(&o));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct npu_cpu_options before = o;

		memset(&err, 0, sizeof(err));
		assert_int_equal(npu_cpu_options_parse(&o, bad[i].spec, &err), NPU_ERR_INVALID_ARG);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].spec, err.msg, bad[i].want);
		assert_memory_equal(&o, &before, sizeof(o));	/* untouched */
	}
	/* Through the API: the load fails naming the option. */
	npu_model_options_init(&mo);
	mo.cpu = "nchwc=maybe";
	assert_int_equal(npu_model_load_memory(e, bytes, size, "m.onnx", &mo, &m),
			 NPU_ERR_INVALID_ARG);
	assert_null(m);
	assert_non_null(strstr(npu_last_error(), "npu_model_options.cpu"));
	assert_non_null(strstr(npu_last_error(), "nchwc cannot be 'maybe'"));
	free(bytes);
	npu_engine_destroy(e);
}

/*
 * Four models of one engine, each with its own options, planned side by
 * side: fuse=0 keeps the graph as imported (Conv, Relu), the default fuses
 * (FusedConv); nchwc=1 blocks the convs unless the 3x3 one takes Winograd
 * (the default here: the layout pass leaves Winograd's convs in NCHW),
 * winograd=0 lets it block both. Every plan's executor holds its model's
 * options, and all compute the same y.
 */
static void test_models_of_one_engine_plan_by_their_own_cpu_options(void **state)
{
	static const char *const specs[] = {
		"nchwc=0", "fuse=0,nchwc=0", "nchwc=1", "nchwc=1,winograd=0", "nchwc=0,winograd=all",
	};
	enum { N = sizeof(specs) / sizeof(specs[0]) };
	struct npu_engine *e = engine_new();
	struct npu_model *m[N];
	struct npu_plan *p[N];
	float *y[N];
	size_t size, i, k;
	void *bytes = model_bytes(&size);

	(void)state;
	for (i = 0; i < N; i++)
		m[i] = load(e, bytes, size, "m.onnx", "cpu", specs[i]);
	for (i = 0; i < N; i++) {
		struct npu_cpu_options want = { 0 };
		struct npu_error err = { 0 };

		p[i] = plan_of(m[i]);
		assert_int_equal(npu_cpu_options_parse(&want, specs[i], &err), NPU_OK);
		assert_memory_equal(npu_exec_schedule_cpu(p[i]->exec), &want, sizeof(want));
	}
	/* fused / as imported */
	assert_int_equal(count_op(p[0], "FusedConv"), 1);	/* conv3x3 + relu */
	assert_int_equal(count_op(p[0], "Relu"), 0);
	assert_int_equal(count_op(p[1], "FusedConv"), 0);
	assert_int_equal(count_op(p[1], "Conv"), 2);
	assert_int_equal(count_op(p[1], "Relu"), 1);
	/* blocked but for Winograd's conv / both blocked */
	assert_int_equal(count_op(p[2], "NchwcConv"), 0);
	assert_int_equal(count_op(p[2], "FusedConv"), 1);
	assert_int_equal(count_op(p[3], "NchwcConv"), 2);
	assert_int_equal(count_op(p[4], "FusedConv"), 1);
	for (i = 0; i < N; i++)
		y[i] = run(m[i]);
	for (i = 1; i < N; i++)
		for (k = 0; k < 16 * 24 * 24; k++)
			if (!(fabsf(y[i][k] - y[0][k]) <= 1e-4f + 1e-4f * fabsf(y[0][k])))
				fail_msg("'%s' y[%zu] = %g, '%s' %g", specs[i], k, y[i][k], specs[0],
					 y[0][k]);
	for (i = 0; i < N; i++) {
		free(y[i]);
		npu_plan_release(p[i]);
		npu_model_destroy(m[i]);
	}
	free(bytes);
	npu_engine_destroy(e);
}

static void *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	void *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return buf;
}

/* Compile on sim with 'cpu', save; the file's bytes (the caller frees). */
static void *compile_to_npub(struct npu_engine *e, const void *onnx, size_t onnx_size,
			     const char *cpu, size_t *size)
{
	char path[] = "/tmp/npu-opts-npub-XXXXXX";
	struct npu_model *m = load(e, onnx, onnx_size, "m.onnx", "sim", cpu);
	struct npu_plan *p = plan_of(m);
	void *bytes;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	if (npu_plan_save_compiled(p, path) != NPU_OK)
		fail_msg("save: %s", npu_last_error());
	bytes = read_all(path, size);
	unlink(path);
	npu_plan_release(p);
	npu_model_destroy(m);
	return bytes;
}

/*
 * A .npub records the CPU options it was compiled with (version 2.2) and
 * plans its CPU part by them, loaded with no options or with others; a
 * recompile for other shapes starts from them too unless options are
 * given. A file compiled with the defaults records nothing.
 */
static void test_npub_records_cpu_options_and_plans_by_them(void **state)
{
	const char *spec = "fuse=0,nchwc=1,winograd=0";
	struct npu_cpu_options want = { 0 }, defaults = { 0 };
	struct npu_error err = { 0 };
	struct npu_engine *e = engine_new();
	size_t onnx_size, size, dsize;
	void *onnx = model_bytes(&onnx_size);
	void *file = compile_to_npub(e, onnx, onnx_size, spec, &size);
	void *dfile = compile_to_npub(e, onnx, onnx_size, NULL, &dsize);
	static const char *const loaders[] = { NULL, "winograd=all", "fuse=1,nchwc=0,winograd=auto" };
	size_t i;

	(void)state;
	assert_int_equal(npu_cpu_options_parse(&want, spec, &err), NPU_OK);
	assert_int_equal(((const uint16_t *)file)[2], 3);	/* major: finished files */
	assert_int_equal(((const uint16_t *)dfile)[2], 3);
	for (i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++) {
		struct npu_model *m = load(e, file, size, "m.npub", "sim", loaders[i]);
		struct npu_plan *p = plan_of(m);

		assert_non_null(p->compiled);
		assert_memory_equal(&p->compiled->cpu, &want, sizeof(want));
		assert_memory_equal(npu_exec_schedule_cpu(p->exec), &want, sizeof(want));
		if (!loaders[i])	/* other shapes recompile with the file's */
			assert_memory_equal(&m->cpu_opts, &want, sizeof(want));
		npu_plan_release(p);
		npu_model_destroy(m);
	}
	{
		struct npu_model *m = load(e, dfile, dsize, "d.npub", "sim", NULL);
		struct npu_plan *p = plan_of(m);

		assert_memory_equal(npu_exec_schedule_cpu(p->exec), &defaults, sizeof(defaults));
		npu_plan_release(p);
		npu_model_destroy(m);
	}
	free(file);
	free(dfile);
	free(onnx);
	npu_engine_destroy(e);
}

/*
 * A .npub whose recorded CPU option is out of range (checksum made right
 * again) is a malformed file naming the field, not options taken as read.
 */
static void test_npub_with_a_bad_cpu_option_is_refused(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model_options mo;
	struct npu_model *m = NULL;
	size_t onnx_size, size, at = 32;
	void *onnx = model_bytes(&onnx_size);
	uint8_t *file = compile_to_npub(e, onnx, onnx_size, "winograd=0", &size);
	uint32_t crc;

	(void)state;
	for (;;) {	/* to the stats section (tag 3): u32 tag, u32, u64 size */
		uint32_t tag;
		uint64_t len;

		assert_true(at + 16 <= size);
		memcpy(&tag, file + at, 4);
		memcpy(&len, file + at + 8, 8);
		if (tag == 3) {
			assert_int_equal(len, 16 + 3);	/* two u64 MACs, three options */
			assert_int_equal(file[at + 16 + 18], NPU_CPU_OFF);	/* winograd */
			file[at + 16 + 18] = 7;
			break;
		}
		at += 16 + (size_t)len;
	}
	crc = (uint32_t)crc32_z(0, file + 32, size - 32);
	memcpy(file + 12, &crc, 4);
	npu_model_options_init(&mo);
	mo.device = "sim";
	assert_int_equal(npu_model_load_memory(e, file, size, "bad.npub", &mo, &m), NPU_ERR_MODEL);
	assert_null(m);
	if (!strstr(npu_last_error(), "bad.npub") || !strstr(npu_last_error(), "cpu options"))
		fail_msg("'%s' names neither the file nor the field", npu_last_error());
	free(file);
	free(onnx);
	npu_engine_destroy(e);
}

/*
 * cpu_isa: an unknown name is refused naming it; the path this process
 * runs is accepted again; another one is NPU_ERR_BUSY (chosen once per
 * process), naming the one it runs.
 */
static void test_engine_cpu_isa_caps_once_per_process(void **state)
{
	struct npu_engine_options eo;
	struct npu_engine *e = NULL;
	const char *isa;

	(void)state;
	npu_engine_options_init(&eo);
	eo.threads = 1;
	eo.cpu_isa = "sse9";
	assert_int_equal(npu_engine_create(&eo, &e), NPU_ERR_INVALID_ARG);
	assert_null(e);
	assert_non_null(strstr(npu_last_error(), "cpu_isa 'sse9'"));
	isa = npu_cpu_kernels_isa();	/* chosen now, if not before */
	eo.cpu_isa = isa;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	npu_engine_destroy(e);
	e = NULL;
	if (strcmp(isa, "portable")) {
		eo.cpu_isa = "portable";
		assert_int_equal(npu_engine_create(&eo, &e), NPU_ERR_BUSY);
		assert_null(e);
		assert_non_null(strstr(npu_last_error(), isa));
	}
}

/* pool_stats: the engine's pool is timed only when asked. */
static void test_engine_pool_stats_times_its_pool(void **state)
{
	struct npu_engine_options eo;
	struct npu_threadpool_stats st;
	struct npu_engine *e;
	int on;

	(void)state;
	for (on = 0; on <= 1; on++) {
		npu_engine_options_init(&eo);
		eo.threads = 2;
		eo.pool_stats = on;
		assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
		assert_int_equal(npu_threadpool_stats_take(e->pool, &st), on != 0);
		npu_engine_destroy(e);
	}
}

static bool file_has(const char *path, const char *text)
{
	struct stat sb;
	size_t size;
	char *buf;
	bool found;

	if (stat(path, &sb) || !sb.st_size)
		return false;
	buf = read_all(path, &size);
	buf = realloc(buf, size + 1);
	assert_non_null(buf);
	buf[size] = '\0';
	found = strstr(buf, text) != NULL;
	free(buf);
	return found;
}

/* Run the model once on an engine made now with trace_file 'trace'. */
static void run_traced(const char *trace, const void *bytes, size_t size)
{
	struct npu_engine_options eo;
	struct npu_engine *e;
	struct npu_model *m;

	npu_engine_options_init(&eo);
	eo.threads = 1;
	eo.trace_file = trace;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	m = load(e, bytes, size, "traced.onnx", "cpu", NULL);
	free(run(m));
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

/*
 * trace_file: the engine's sessions append their op spans there.
 * NPU_TRACE_FILE is the one environment variable the library reads, once,
 * when an engine is created without trace_file: set afterwards it changes
 * nothing; "" turns it off.
 */
static void test_engine_trace_file_and_its_one_env_override(void **state)
{
	char a[] = "/tmp/npu-opts-trace-XXXXXX", b[] = "/tmp/npu-opts-trace-XXXXXX";
	size_t size;
	void *bytes = model_bytes(&size);
	struct npu_engine *e;
	struct npu_model *m;

	(void)state;
	close(mkstemp(a));
	close(mkstemp(b));
	unsetenv("NPU_TRACE_FILE");
	run_traced(a, bytes, size);
	assert_true(file_has(a, "\"conv3x3\""));
	/* Read at creation: set afterwards, ignored. */
	truncate(a, 0);
	e = engine_new();
	setenv("NPU_TRACE_FILE", a, 1);
	m = load(e, bytes, size, "m.onnx", "cpu", NULL);
	free(run(m));
	npu_model_destroy(m);
	npu_engine_destroy(e);
	assert_false(file_has(a, "\"conv3x3\""));
	/* Set before: the engine traces there; trace_file "" overrides it. */
	run_traced(NULL, bytes, size);
	assert_true(file_has(a, "\"conv3x3\""));
	setenv("NPU_TRACE_FILE", b, 1);
	run_traced("", bytes, size);
	assert_false(file_has(b, "\"conv3x3\""));
	unsetenv("NPU_TRACE_FILE");
	unlink(a);
	unlink(b);
	free(bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_options_parse_and_name_bad_ones),
		cmocka_unit_test(test_models_of_one_engine_plan_by_their_own_cpu_options),
		cmocka_unit_test(test_npub_records_cpu_options_and_plans_by_them),
		cmocka_unit_test(test_npub_with_a_bad_cpu_option_is_refused),
		cmocka_unit_test(test_engine_cpu_isa_caps_once_per_process),
		cmocka_unit_test(test_engine_pool_stats_times_its_pool),
		cmocka_unit_test(test_engine_trace_file_and_its_one_env_override),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
