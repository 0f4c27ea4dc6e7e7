// SPDX-License-Identifier: MIT
/*
 * test_compiled_file.c - a finished compiled model (.npub 3, issue 31),
 * through the public API only: loading one imports nothing, runs no pass
 * and generates no code (npu_model_stats), and runs bit-identically to the
 * model compiled from ONNX; the source model it keeps is imported only for
 * a plan at other shapes, and a file saved without it says what it cannot
 * do (run on the CPU); per-op profiling generates the profiled streams; and a damaged file
 * (every truncation, bytes changed with the checksum made right again) is
 * an error naming the file, or a model that runs, never a crash or a leak
 * (this test runs under ASan too).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "npu/npu.h"
#include "onnx_builder.h"

/* Big enough that the NPU takes both convolutions. */
#define C 32
#define HW 40
#define XN (C * HW * HW)
#define YN (C * (HW - 2) * (HW - 2))

static float w1[C * C * 9], b1[C], w2[C * C];
static int64_t w1_dims[] = { C, C, 3, 3 }, b1_dims[] = { C }, w2_dims[] = { C, C, 1, 1 };
/* The batch is dynamic: the file is compiled at 1, planned again at 2. */
static const int64_t x_decl[] = { -1, C, HW, HW },
		     y_decl[] = { -1, C, HW - 2, HW - 2 };

/* x -> Conv 3x3 (+ bias) -> Relu -> Conv 1x1 -> y. */
static void *model_bytes(size_t *size)
{
	static struct tb_model m;
	Onnx__TensorProto *t;
	size_t i;

	for (i = 0; i < sizeof(w1) / sizeof(w1[0]); i++)
		w1[i] = (float)((int)(i * 7 % 11) - 5) / 24.0f;
	for (i = 0; i < sizeof(w2) / sizeof(w2[0]); i++)
		w2[i] = (float)((int)(i * 5 % 13) - 6) / 16.0f;
	for (i = 0; i < C; i++)
		b1[i] = (float)i / 32.0f - 0.1f;
	tb_init(&m, 13);
	tb_input(&m, "x", 4, x_decl);
	tb_output(&m, "y", 4, y_decl);
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w1_dims);
	t->n_float_data = sizeof(w1) / sizeof(w1[0]);
	t->float_data = w1;
	t = tb_init_tensor(&m, "b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, b1_dims);
	t->n_float_data = C;
	t->float_data = b1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w2_dims);
	t->n_float_data = sizeof(w2) / sizeof(w2[0]);
	t->float_data = w2;
	tb_node(&m, "Conv", "conv3x3", "c1", 3, "x", "w1")->input[2] = "b1";
	tb_node(&m, "Relu", "relu", "r", 1, "c1", NULL);
	tb_node(&m, "Conv", "conv1x1", "y", 2, "r", "w2");
	return tb_pack(&m, size);
}

static struct npu_engine *engine;

static struct npu_model *load(const void *bytes, size_t size, const char *name,
			      const char *device, int profile)
{
	struct npu_model_options mo;
	struct npu_model *m = NULL;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;	/* arithmetic, not accuracy */
	mo.profile = profile;
	if (npu_model_load_memory(engine, bytes, size, name, &mo, &m) != NPU_OK)
		fail_msg("load %s: %s", name, npu_last_error());
	return m;
}

/* One run at batch 'n' into y (n * YN floats); the run's status. */
static npu_status run(struct npu_model *m, int n, float *y)
{
	static float x[2 * XN];
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
				      .dims = { n, C, HW, HW }, .data = x,
				      .nbytes = (size_t)n * XN * sizeof(float) }, out;
	struct npu_session *s = NULL;
	npu_status st;
	size_t i;

	for (i = 0; i < 2 * XN; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	st = npu_session_create(m, NULL, &s);
	if (!st)
		st = npu_session_run(s, &in, 1);
	if (!st) {
		assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
		assert_int_equal(out.nbytes, (size_t)n * YN * sizeof(float));
		memcpy(y, out.data, out.nbytes);
	}
	npu_session_destroy(s);
	return st;
}

static struct npu_model_stats stats(const struct npu_model *m)
{
	struct npu_model_stats st;

	npu_model_stats_init(&st);
	assert_int_equal(npu_model_get_stats(m, &st), NPU_OK);
	return st;
}

static void *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	void *p;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*size = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc(*size);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, *size, f), *size);
	fclose(f);
	return p;
}

/* Compile the model on sim at batch 1, run it into y, save it to 'path'. */
static void compile_and_save(const char *path, int keep_source, float *y)
{
	struct npu_host_tensor shape = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
					 .dims = { 1, C, HW, HW } };
	struct npu_save_options so;
	size_t size;
	void *onnx = model_bytes(&size);
	struct npu_model *m = load(onnx, size, "small.onnx", "sim", 0);
	struct npu_model_stats st;
	struct npu_plan *p;

	assert_int_equal(run(m, 1, y), NPU_OK);
	st = stats(m);
	assert_int_equal(st.imports, 1);
	assert_int_equal(st.compilations, 1);
	assert_true(st.codegens >= 1);	/* once per segment, not per session */
	assert_int_equal(npu_model_get_plan(m, &shape, 1, &p), NPU_OK);
	npu_save_options_init(&so);
	so.keep_source = keep_source;
	if (npu_plan_save_compiled_with(p, path, &so) != NPU_OK)
		fail_msg("save: %s", npu_last_error());
	so.keep_source = 2;
	assert_int_equal(npu_plan_save_compiled_with(p, path, &so), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "keep_source"));
	npu_plan_release(p);
	npu_model_destroy(m);
	free(onnx);
}

/* The model compiled and saved to a scratch file, read back (the caller frees). */
static void *compiled_file(int keep_source, float *y, size_t *size)
{
	char path[] = "/tmp/npub-test-XXXXXX";
	int fd = mkstemp(path);
	void *file;

	assert_true(fd >= 0);
	close(fd);
	compile_and_save(path, keep_source, y);
	file = read_all(path, size);
	unlink(path);
	return file;
}

static void test_finished_file_loads_without_compiling(void **state)
{
	static float want[YN], got[YN];
	struct npu_model_stats st;
	struct npu_model *m;
	size_t size;
	void *file;

	(void)state;
	file = compiled_file(1, want, &size);

	m = load(file, size, "small.npub", "sim", 0);
	st = stats(m);
	assert_int_equal(st.imports, 0);
	assert_int_equal(run(m, 1, got), NPU_OK);
	assert_memory_equal(got, want, sizeof(want));
	assert_int_equal(run(m, 1, got), NPU_OK);	/* a second session: no code either */
	st = stats(m);
	assert_int_equal(st.imports, 0);
	assert_int_equal(st.compilations, 0);
	assert_int_equal(st.codegens, 0);
	/* A compiled file runs at the shapes it was compiled for. */
	assert_int_equal(run(m, 2, got), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "fixes it to 1"));
	npu_model_destroy(m);
	/* On the CPU it runs its source model, imported once. */
	m = load(file, size, "small.npub", "cpu", 0);
	assert_int_equal(run(m, 1, got), NPU_OK);
	st = stats(m);
	assert_int_equal(st.imports, 1);
	npu_model_destroy(m);

	/* Per-op profiling needs the profiled streams: generated, counted. */
	m = load(file, size, "small.npub", "sim", 1);
	assert_int_equal(run(m, 1, got), NPU_OK);
	assert_memory_equal(got, want, sizeof(want));
	st = stats(m);
	assert_int_equal(st.compilations, 0);
	assert_true(st.codegens >= 1);
	npu_model_destroy(m);
	free(file);
}

static void test_file_without_source_names_what_it_cannot_do(void **state)
{
	static float want[YN], got[YN];
	struct npu_model *m;
	size_t size, with_size;
	void *file;

	(void)state;
	free(compiled_file(1, want, &with_size));
	file = compiled_file(0, want, &size);
	assert_true(size < with_size);

	m = load(file, size, "bare.npub", "sim", 0);
	assert_int_equal(run(m, 1, got), NPU_OK);
	assert_memory_equal(got, want, sizeof(want));
	assert_int_equal(stats(m).imports, 0);
	npu_model_destroy(m);

	m = load(file, size, "bare.npub", "cpu", 0);
	assert_int_equal(run(m, 1, got), NPU_ERR_UNSUPPORTED);
	print_message("# %s\n", npu_last_error());
	assert_non_null(strstr(npu_last_error(), "bare.npub"));
	assert_non_null(strstr(npu_last_error(), "no source model"));
	assert_non_null(strstr(npu_last_error(), "1x32x40x40"));
	npu_model_destroy(m);
	free(file);
}

/* Make the header's CRC-32 (offset 12, over everything after 32 bytes) right again. */
static void fix_crc(uint8_t *b, size_t size)
{
	uint32_t crc = (uint32_t)crc32_z(0, b + 32, size - 32);

	memcpy(b + 12, &crc, 4);
}

/* A damaged file fails to load or to run with a message naming it, or runs. */
static void try_damaged(const uint8_t *b, size_t size, const char *name)
{
	struct npu_model_options mo;
	struct npu_model *m = NULL;
	static float y[YN];

	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	if (npu_model_load_memory(engine, b, size, name, &mo, &m) != NPU_OK) {
		if (!strstr(npu_last_error(), name))
			fail_msg("load error without the file's name: %s", npu_last_error());
		return;
	}
	if (run(m, 1, y) != NPU_OK && !strstr(npu_last_error(), name))
		fail_msg("run error without the file's name: %s", npu_last_error());
	npu_model_destroy(m);
}

static void test_damaged_files_are_errors(void **state)
{
	static float want[YN];
	size_t size, n, flips = 0;
	uint8_t *file, *copy;
	uint32_t seed = 12345;

	(void)state;
	file = compiled_file(0, want, &size);
	copy = malloc(size);
	assert_non_null(copy);
	for (n = 0; n < size; n += n < 64 ? 1 : 61)
		try_damaged(file, n, "cut.npub");
	/* One to four bytes changed anywhere past the header, checksum fixed. */
	for (n = 0; n < 1500; n++) {
		int k, changes = 1 + (int)(n % 4);

		memcpy(copy, file, size);
		for (k = 0; k < changes; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[32 + (seed >> 8) % (size - 32)] ^= (uint8_t)(1u << (seed >> 28 & 7));
		}
		fix_crc(copy, size);
		try_damaged(copy, size, "flip.npub");
		flips++;
	}
	print_message("# %zu truncations and %zu damaged copies of a %zu-byte file\n",
		      size / 61 + 64, flips, size);
	free(copy);
	free(file);
}

static int setup(void **state)
{
	struct npu_engine_options eo;

	(void)state;
	npu_engine_options_init(&eo);
	eo.threads = 1;
	return npu_engine_create(&eo, &engine) == NPU_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	npu_engine_destroy(engine);
	return 0;
}

/*
 * --write-seeds DIR: the fuzzer's seeds (tests/fuzz/corpus/npub/): the
 * model compiled without and with its source.
 */
static int write_seeds(const char *dir)
{
	static float y[YN];
	char path[4096];

	if (setup(NULL))
		return 1;
	snprintf(path, sizeof(path), "%s/conv-relu-conv.npub", dir);
	compile_and_save(path, 0, y);
	snprintf(path, sizeof(path), "%s/conv-relu-conv-source.npub", dir);
	compile_and_save(path, 1, y);
	return teardown(NULL);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finished_file_loads_without_compiling),
		cmocka_unit_test(test_file_without_source_names_what_it_cannot_do),
		cmocka_unit_test(test_damaged_files_are_errors),
	};

	if (argc == 3 && !strcmp(argv[1], "--write-seeds"))
		return write_seeds(argv[2]);
	return cmocka_run_group_tests(tests, setup, teardown);
}
