// SPDX-License-Identifier: MIT
/*
 * No allocations in a session's steady state (issue 14): after warm-up,
 * repeated runs of one plan on the CPU allocate nothing, on the calling
 * thread or the pool's workers, at 1 and 2 threads. The model has the op
 * kinds of the OCR models' CPU path: a strided conv, depthwise and 1x1
 * convs with fused activations and residual, Winograd 3x3, global pooling
 * and a broadcast Mul, nearest Resize, Concat, ConvTranspose 2x2/2,
 * Sigmoid. The outputs of every run must also be equal (same input).
 * Also Concat in place (the executor puts inputs in the output's slices):
 * against a direct reference, with inputs that may and may not be placed.
 *
 * Counting: without a sanitizer this file defines malloc and friends on
 * top of glibc's __libc_* ones; under ASan / TSan (which own malloc) it
 * installs the sanitizer's allocation hook instead.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "npu/npu.h"
#include "onnx_builder.h"

static atomic_long allocs;	/* allocation calls while counting */
static atomic_bool counting;

static void count_one(void)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* The sanitizer runtime's (sanitizer/allocator_interface.h, not in gcc). */
int __sanitizer_install_malloc_and_free_hooks(
	void (*malloc_hook)(const volatile void *, size_t),
	void (*free_hook)(const volatile void *));

static void malloc_hook(const volatile void *p, size_t size)
{
	(void)p;
	(void)size;
	count_one();
}

static void free_hook(const volatile void *p)
{
	(void)p;
}

static void install_counter(void)
{
	/* (Both hooks, or the runtime installs neither.) */
	static bool done;

	if (!done)
		assert_true(__sanitizer_install_malloc_and_free_hooks(malloc_hook,
								      free_hook));
	done = true;
}
#else
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void __libc_free(void *p);

void *malloc(size_t size)
{
	count_one();
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	count_one();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	count_one();
	return __libc_realloc(p, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	count_one();
	return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size)
{
	count_one();
	return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	count_one();
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void free(void *p)
{
	__libc_free(p);
}

static void install_counter(void)
{
}
#endif

#define C 8		/* input channels */
#define H 24		/* input height and width */

static const int64_t x_dims[4] = { 1, C, H, H };
static const int64_t y_dims[4] = { 1, 4, 2 * H, 2 * H };

static float w0[16 * C * 9], b0[16], w1[16 * 9], b1[16], w2[16 * 16];
static float w3[16 * 16 * 9], w4[24 * 4 * 4], scales[4] = { 1, 1, 2, 2 };
static int64_t w0_d[] = { 16, C, 3, 3 }, b_d[] = { 16 }, w1_d[] = { 16, 1, 3, 3 };
static int64_t w2_d[] = { 16, 16, 1, 1 }, w3_d[] = { 16, 16, 3, 3 };
static int64_t w4_d[] = { 24, 4, 2, 2 }, s_d[] = { 4 };

/* Attributes beyond tb_attr_int's one per node: static storage. */
static Onnx__AttributeProto attr_store[32], *attr_ptrs[16][4];
static int64_t ints_store[32][4];
static size_t attr_used;

static void attr_ints(Onnx__NodeProto *n, int k, const char *name, int count,
		      int64_t a, int64_t b, int64_t c, int64_t d)
{
	Onnx__AttributeProto *at = &attr_store[attr_used];
	int64_t *v = ints_store[attr_used++];

	onnx__attribute_proto__init(at);
	at->name = (char *)name;
	at->has_type = 1;
	v[0] = a;
	v[1] = b;
	v[2] = c;
	v[3] = d;
	if (count == 1) {
		at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		at->has_i = 1;
		at->i = a;
	} else {
		at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		at->n_ints = (size_t)count;
		at->ints = v;
	}
	attr_ptrs[k][n->n_attribute++] = at;
	n->attribute = attr_ptrs[k];
}

static void attr_str(Onnx__NodeProto *n, int k, const char *name, const char *s)
{
	Onnx__AttributeProto *at = &attr_store[attr_used++];

	onnx__attribute_proto__init(at);
	at->name = (char *)name;
	at->has_type = 1;
	at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	at->has_s = 1;
	at->s.data = (uint8_t *)s;
	at->s.len = strlen(s);
	attr_ptrs[k][n->n_attribute++] = at;
	n->attribute = attr_ptrs[k];
}

static void fill(float *w, size_t n, unsigned seed, float scale)
{
	size_t i;

	for (i = 0; i < n; i++)
		w[i] = scale * ((float)(((i + seed) * 2654435761u) % 2001) / 1000.0f - 1.0f);
}

static Onnx__TensorProto *init_f(struct tb_model *m, const char *name, int rank,
				 int64_t *dims, float *data, size_t n)
{
	Onnx__TensorProto *t = tb_init_tensor(m, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
					      rank, dims);

	t->n_float_data = n;
	t->float_data = data;
	return t;
}

/*
 * x -> Conv 3x3/2 -> HardSwish -> a;  a -> depthwise 3x3 -> Relu -> b;
 * b -> Conv 1x1 -> + a -> c;  c * GlobalAveragePool(c) -> d;
 * d -> Conv 3x3 -> Resize x2 -> Concat with x -> ConvTranspose 2x2/2 ->
 * Sigmoid -> y
 */
static void *model_bytes(size_t *size)
{
	static struct tb_model m;
	Onnx__NodeProto *n;
	int k = 0;

	fill(w0, sizeof(w0) / 4, 1, 0.3f);
	fill(b0, 16, 2, 0.1f);
	fill(w1, sizeof(w1) / 4, 3, 0.4f);
	fill(b1, 16, 4, 0.1f);
	fill(w2, sizeof(w2) / 4, 5, 0.3f);
	fill(w3, sizeof(w3) / 4, 6, 0.1f);
	fill(w4, sizeof(w4) / 4, 7, 0.2f);
	attr_used = 0;
	tb_init(&m, 14);
	tb_input(&m, "x", 4, x_dims);
	tb_output(&m, "y", 4, y_dims);
	init_f(&m, "w0", 4, w0_d, w0, sizeof(w0) / 4);
	init_f(&m, "b0", 1, b_d, b0, 16);
	init_f(&m, "w1", 4, w1_d, w1, sizeof(w1) / 4);
	init_f(&m, "b1", 1, b_d, b1, 16);
	init_f(&m, "w2", 4, w2_d, w2, sizeof(w2) / 4);
	init_f(&m, "w3", 4, w3_d, w3, sizeof(w3) / 4);
	init_f(&m, "w4", 4, w4_d, w4, sizeof(w4) / 4);
	init_f(&m, "scales", 1, s_d, scales, 4);

	n = tb_node(&m, "Conv", "c0", "c0", 3, "x", "w0");
	n->input[2] = "b0";
	attr_ints(n, k, "strides", 2, 2, 2, 0, 0);
	attr_ints(n, k++, "pads", 4, 1, 1, 1, 1);
	k++, tb_node(&m, "HardSwish", "hs", "a", 1, "c0", NULL);
	n = tb_node(&m, "Conv", "dw", "dw", 3, "a", "w1");
	n->input[2] = "b1";
	attr_ints(n, k, "group", 1, 16, 0, 0, 0);
	attr_ints(n, k++, "pads", 4, 1, 1, 1, 1);
	k++, tb_node(&m, "Relu", "relu", "b", 1, "dw", NULL);
	k++, tb_node(&m, "Conv", "pw", "pw", 2, "b", "w2");
	k++, tb_node(&m, "Add", "res", "c", 2, "pw", "a");
	k++, tb_node(&m, "GlobalAveragePool", "gap", "g", 1, "c", NULL);
	k++, tb_node(&m, "Mul", "se", "d", 2, "c", "g");
	n = tb_node(&m, "Conv", "wino", "e", 2, "d", "w3");
	attr_ints(n, k++, "pads", 4, 1, 1, 1, 1);
	n = tb_node(&m, "Resize", "up", "f", 3, "e", "");
	n->input[2] = "scales";
	attr_str(n, k++, "mode", "nearest");
	n = tb_node(&m, "Concat", "cat", "h", 2, "f", "x");
	attr_ints(n, k++, "axis", 1, 1, 0, 0, 0);
	n = tb_node(&m, "ConvTranspose", "up2", "t", 2, "h", "w4");
	attr_ints(n, k, "strides", 2, 2, 2, 0, 0);
	attr_ints(n, k++, "kernel_shape", 2, 2, 2, 0, 0);
	k++, tb_node(&m, "Sigmoid", "sig", "y", 1, "t", NULL);
	return tb_pack(&m, size);
}

static float x_data[C * H * H];

static struct npu_host_tensor input(void)
{
	struct npu_host_tensor h = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 };

	fill(x_data, sizeof(x_data) / 4, 9, 2.0f);
	memcpy(h.dims, x_dims, sizeof(x_dims));
	h.data = x_data;
	h.nbytes = sizeof(x_data);
	return h;
}

static void run_once(struct npu_session *s, const struct npu_host_tensor *in,
		     float *out, size_t n)
{
	struct npu_host_tensor y;

	if (npu_session_run(s, in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_int_equal(y.nbytes, n * sizeof(float));
	memcpy(out, y.data, y.nbytes);
}

static void steady_state(int threads)
{
	static float first[4 * 2 * H * 2 * H], again[4 * 2 * H * 2 * H];
	const size_t n = sizeof(first) / sizeof(first[0]);
	struct npu_engine_options eo;
	struct npu_engine *eng;
	struct npu_model *m;
	struct npu_session *s;
	struct npu_host_tensor in = input();
	size_t size, i;
	void *buf = model_bytes(&size), *volatile keep;
	long got;
	int r;

	install_counter();
	npu_engine_options_init(&eo);
	eo.threads = threads;
	assert_int_equal(npu_engine_create(&eo, &eng), NPU_OK);
	if (npu_model_load_memory(eng, buf, size, "allocs.onnx", NULL, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	/* Warm-up: buffers, scratch and the plan come to their sizes. */
	run_once(s, &in, first, n);
	run_once(s, &in, again, n);
	for (i = 0; i < n; i++)
		assert_true(isfinite(first[i]) && first[i] > 0.0f && first[i] < 1.0f);
	atomic_store(&allocs, 0);
	atomic_store(&counting, true);
	for (r = 0; r < 5; r++) {
		struct npu_host_tensor y;

		if (npu_session_run(s, &in, 1) != NPU_OK)
			break;
		if (npu_session_output(s, 0, &y) != NPU_OK ||
		    memcmp(y.data, first, sizeof(first)))
			break;
	}
	atomic_store(&counting, false);
	got = atomic_load(&allocs);
	if (r < 5)
		fail_msg("%d threads: run %d failed or gave another output", threads, r);
	if (got)
		fail_msg("%d threads: %ld allocations in 5 runs after warm-up, want 0",
			 threads, got);
	/* The counter does count (a check of the check; volatile: the
	 * compiler may drop an unused malloc / free pair). */
	atomic_store(&counting, true);
	keep = malloc(16);
	atomic_store(&counting, false);
	free(keep);
	assert_int_equal(atomic_load(&allocs), 1);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(eng);
}

/*
 * a = Relu(x), b = Sigmoid(x), c = Concat(a, b) (both placed in c);
 * d = Concat(c, x) (a Concat's output and a graph input: copied);
 * e = Neg(x), g = Concat(b2 = Abs(x), e) (b2 placed in g, a graph output;
 * e copied: read again later), f = Concat(e, a2 = Relu(e)) on axis 2
 * (rows interleave: copied).
 */
static void test_concat_in_place(void **state)
{
	static const int64_t xd[4] = { 1, 4, 6, 5 }, dd[4] = { 1, 12, 6, 5 };
	static const int64_t fd[4] = { 1, 4, 12, 5 }, gd[4] = { 1, 8, 6, 5 };
	static struct tb_model m;
	static float d_want[12 * 30], f_want[4 * 60], g_want[8 * 30];
	struct npu_engine_options eo;
	struct npu_engine *eng;
	struct npu_model *mod;
	struct npu_session *s;
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 }, out;
	Onnx__NodeProto *n;
	size_t size, i, c;
	void *buf;
	int threads, k = 0;

	(void)state;
	attr_used = 0;
	tb_init(&m, 14);
	tb_input(&m, "x", 4, xd);
	tb_output(&m, "d", 4, dd);
	tb_output(&m, "f", 4, fd);
	tb_output(&m, "g", 4, gd);
	k++, tb_node(&m, "Relu", "relu", "a", 1, "x", NULL);
	k++, tb_node(&m, "Sigmoid", "sig", "b", 1, "x", NULL);
	n = tb_node(&m, "Concat", "cat_c", "c", 2, "a", "b");
	attr_ints(n, k++, "axis", 1, 1, 0, 0, 0);
	n = tb_node(&m, "Concat", "cat_d", "d", 2, "c", "x");
	attr_ints(n, k++, "axis", 1, 1, 0, 0, 0);
	k++, tb_node(&m, "Neg", "neg", "e", 1, "x", NULL);
	k++, tb_node(&m, "Abs", "abs", "b2", 1, "x", NULL);
	n = tb_node(&m, "Concat", "cat_g", "g", 2, "b2", "e");
	attr_ints(n, k++, "axis", 1, 1, 0, 0, 0);
	k++, tb_node(&m, "Relu", "relu2", "a2", 1, "e", NULL);
	n = tb_node(&m, "Concat", "cat_f", "f", 2, "e", "a2");
	attr_ints(n, k++, "axis", 1, 2, 0, 0, 0);
	buf = tb_pack(&m, &size);
	assert_non_null(buf);

	fill(x_data, 120, 11, 3.0f);
	memcpy(in.dims, xd, sizeof(xd));
	in.data = x_data;
	in.nbytes = 120 * sizeof(float);
	for (c = 0; c < 4; c++)
		for (i = 0; i < 30; i++) {
			float x = x_data[c * 30 + i];

			d_want[c * 30 + i] = x > 0 ? x : 0;
			d_want[(4 + c) * 30 + i] = 1.0f / (1.0f + expf(-x));
			d_want[(8 + c) * 30 + i] = x;
			f_want[c * 60 + i] = -x;
			f_want[c * 60 + 30 + i] = -x > 0 ? -x : 0;
			g_want[c * 30 + i] = fabsf(x);
			g_want[(4 + c) * 30 + i] = -x;
		}
	for (threads = 1; threads <= 2; threads++) {
		int r;

		npu_engine_options_init(&eo);
		eo.threads = threads;
		assert_int_equal(npu_engine_create(&eo, &eng), NPU_OK);
		if (npu_model_load_memory(eng, buf, size, "concat.onnx", NULL, &mod) != NPU_OK)
			fail_msg("load: %s", npu_last_error());
		assert_int_equal(npu_session_create(mod, NULL, &s), NPU_OK);
		for (r = 0; r < 2; r++) {
			if (npu_session_run(s, &in, 1) != NPU_OK)
				fail_msg("run: %s", npu_last_error());
			assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
			assert_int_equal(out.nbytes, sizeof(d_want));
			for (i = 0; i < 360; i++)
				if (fabsf(((const float *)out.data)[i] - d_want[i]) > 1e-6f)
					fail_msg("d[%zu]: got %g, want %g", i,
						 ((const float *)out.data)[i], d_want[i]);
			assert_int_equal(npu_session_output(s, 1, &out), NPU_OK);
			assert_int_equal(out.nbytes, sizeof(f_want));
			assert_memory_equal(out.data, f_want, sizeof(f_want));
			assert_int_equal(npu_session_output(s, 2, &out), NPU_OK);
			assert_int_equal(out.nbytes, sizeof(g_want));
			assert_memory_equal(out.data, g_want, sizeof(g_want));
		}
		npu_session_destroy(s);
		npu_model_destroy(mod);
		npu_engine_destroy(eng);
	}
	free(buf);
}

static void test_one_thread(void **state)
{
	(void)state;
	steady_state(1);
}

static void test_two_threads(void **state)
{
	(void)state;
	steady_state(2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_thread),
		cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_concat_in_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
