/* SPDX-License-Identifier: MIT */
/*
 * graph_builder.h - build npu_graphs by hand in the compiler unit tests
 * (cmocka asserts on allocation failure; test-only, static functions).
 * Include after <cmocka.h> and "compiler/compiler.h".
 */
#ifndef NPU_TEST_GRAPH_BUILDER_H
#define NPU_TEST_GRAPH_BUILDER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A reproducible generator: tests set gb_seed, then draw. */
static uint64_t gb_seed;

static inline float gb_uniform(float lo, float hi)
{
	gb_seed = gb_seed * 6364136223846793005ull + 1442695040888963407ull;
	return lo + (hi - lo) * (float)((gb_seed >> 11) / 9007199254740992.0);
}

/* An fp32 value of the given shape (no producer yet). */
static inline struct npu_value *gb_value(struct npu_graph *g, const char *name, int rank,
					 const int64_t *dims)
{
	struct npu_value *v = npu_graph_add_value(g, name, NULL);

	assert_non_null(v);
	v->dtype = NPU_DTYPE_FLOAT;
	v->shape.rank = rank;
	memcpy(v->shape.dims, dims, (size_t)rank * sizeof(*dims));
	return v;
}

/* An fp32 constant drawn uniformly from [lo, hi). */
static inline struct npu_value *gb_weights(struct npu_graph *g, const char *name, int rank,
					   const int64_t *dims, float lo, float hi)
{
	struct npu_shape s = { .rank = rank };
	struct npu_tensor *t;
	struct npu_value *v;
	int64_t i;

	memcpy(s.dims, dims, (size_t)rank * sizeof(*dims));
	t = npu_tensor_create(NPU_DTYPE_FLOAT, &s);
	assert_non_null(t);
	for (i = 0; i < npu_shape_numel(&s); i++)
		((float *)t->data)[i] = gb_uniform(lo, hi);
	v = npu_graph_add_constant(g, name, t, NULL);
	assert_non_null(v);
	return v;
}

/* A node of the default domain at opset 14 (HardSwish exists since 14). */
static inline struct npu_node *gb_node(struct npu_graph *g, const char *op, const char *name,
				       struct npu_value **in, size_t nin, struct npu_value *out)
{
	struct npu_node *n = npu_graph_add_node(g, op, "", name, nin, 1, NULL);

	assert_non_null(n);
	n->opset = 14;
	memcpy(n->inputs, in, nin * sizeof(*in));
	n->outputs[0] = out;
	out->producer = n;
	return n;
}

static inline struct npu_attr *gb_attr(struct npu_node *n, const char *name,
				       enum npu_attr_type type)
{
	struct npu_attr *attrs = realloc(n->attrs, (n->num_attrs + 1) * sizeof(*n->attrs)), *a;

	assert_non_null(attrs);
	n->attrs = attrs;
	a = &n->attrs[n->num_attrs++];
	memset(a, 0, sizeof(*a));
	a->name = strdup(name);
	assert_non_null(a->name);
	a->type = type;
	return a;
}

static inline void gb_set_ints(struct npu_node *n, const char *name, const int64_t *v,
			       size_t count)
{
	struct npu_attr *a = gb_attr(n, name, NPU_ATTR_INTS);

	a->ints = malloc(count * sizeof(*v));
	assert_non_null(a->ints);
	memcpy(a->ints, v, count * sizeof(*v));
	a->count = count;
}

static inline void gb_set_int(struct npu_node *n, const char *name, int64_t v)
{
	gb_attr(n, name, NPU_ATTR_INT)->i = v;
}

static inline void gb_set_str(struct npu_node *n, const char *name, const char *v)
{
	struct npu_attr *a = gb_attr(n, name, NPU_ATTR_STRING);

	a->s = strdup(v);
	assert_non_null(a->s);
}

/* The codegen options gb_compile() compiles with (zero: the defaults). */
static struct npu_codegen_options gb_codegen;

/* "0" / "off", "force", else auto: a choice as the options string spells it. */
static inline enum npu_codegen_choice fuse_choice(const char *v)
{
	return !strcmp(v, "0") || !strcmp(v, "off") ? NPU_CODEGEN_OFF :
	       !strcmp(v, "force") ? NPU_CODEGEN_FORCE : NPU_CODEGEN_AUTO;
}

/* Back to the defaults, then "key=value,..." (npu_codegen_options_parse). */
static inline void gb_codegen_use(const char *spec)
{
	struct npu_error err = { 0 };

	memset(&gb_codegen, 0, sizeof(gb_codegen));
	if (spec && npu_codegen_options_parse(&gb_codegen, spec, &err) != NPU_OK)
		fail_msg("%s", err.msg);
}

/* Mark v[0..n) as the graph's outputs, in that order. */
static inline void gb_outputs(struct npu_graph *g, struct npu_value **v, size_t n)
{
	size_t i;

	g->outputs = malloc(n * sizeof(*g->outputs));
	assert_non_null(g->outputs);
	for (i = 0; i < n; i++) {
		g->outputs[i] = v[i];
		v[i]->is_graph_output = true;
	}
	g->num_outputs = n;
}

/*
 * Every segment's stream, generated once at the canonical addresses and
 * relocated (reloc.h), must be byte for byte the stream code generation
 * makes at a session's real addresses.
 */
static inline void gb_check_relocation(const struct npu_compiled *c)
{
	const uint64_t base[NPU_RELOC_REGIONS] = { 0x40000000ull, 0x7f000000ull, 0 };
	size_t i;

	for (i = 0; i < c->num_segments; i++) {
		const struct npu_segment *seg = c->segments[i];
		struct npu_codegen_target t = {
			.sram_size = c->dev_info.sram_size,
			.caps = c->dev_info.caps,
			.arena_va = base[NPU_RELOC_ARENA],
			.consts_va = base[NPU_RELOC_CONSTS],
		};
		struct npu_codegen_result res;
		struct npu_error err = { 0 };
		struct npu_cmdbuf *cb;
		const void *want;
		uint8_t *got;
		size_t size;

		assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
		if (npu_codegen_segment(&seg->prog, &t, cb, &res, &err) != NPU_OK)
			fail_msg("codegen: %s", npu_error_msg(&err));
		want = npu_cmdbuf_data(cb, &size);
		assert_int_equal(size, seg->stream.size);
		got = malloc(size);
		assert_non_null(got);
		memcpy(got, seg->stream.data, size);
		npu_reloc_apply(got, seg->stream.relocs, seg->stream.num_relocs, base);
		assert_memory_equal(got, want, size);
		free(got);
		npu_codegen_result_free(&res);
		npu_cmdbuf_destroy(cb);
	}
}

/*
 * Sort, infer and compile g for dev, calibrated by min/max on the one input
 * set x; small segments stay on the NPU, so a test compares NPU with CPU.
 * Needs "runtime/npu_runtime.h" (the graph runner).
 */
static inline struct npu_compiled *gb_compile(struct npu_graph *g, struct npu_device *dev,
					      struct npu_tensor **x)
{
	struct npu_compile_options o;
	struct npu_compiled *c = NULL;
	struct npu_error err = { 0 };

	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	if (npu_graph_infer(g, true, &err) != NPU_OK)
		fail_msg("infer: %s", err.msg);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = x;
	o.num_calib_sets = 1;
	o.calib_method = NPU_CALIB_MINMAX;
	o.keep_small_segments = true;
	o.codegen = gb_codegen;
	if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	gb_check_relocation(c);
	return c;
}

/*
 * Runs g once on one thread with input x and copies output 0 to out
 * (room for cap floats); returns its float count. Needs
 * "runtime/npu_runtime.h".
 */
static inline size_t gb_run(struct npu_graph *g, struct npu_tensor *x, float *out, size_t cap)
{
	struct npu_exec_options so = { .threads = 1 };
	struct npu_error err = { 0 };
	const struct npu_tensor *t;
	struct npu_exec *s;
	size_t n;

	if (npu_exec_create(g, &so, &s, &err) != NPU_OK)
		fail_msg("session: %s", err.msg);
	if (npu_exec_run(s, (const struct npu_tensor *const *)&x, &err) != NPU_OK)
		fail_msg("run: %s", err.msg);
	t = npu_exec_output(s, 0);
	n = t->nbytes / sizeof(float);
	assert_true(n <= cap);
	memcpy(out, t->data, t->nbytes);
	npu_exec_destroy(s);
	return n;
}

/* The in-process simulator, environment ignored. */
static inline struct npu_device *gb_sim_device(void)
{
	struct npu_device_options dopts;
	struct npu_device *dev;
	char msg[256];

	npu_device_options_init(&dopts);
	dopts.backend = NPU_BACKEND_SIM;
	dopts.flags = NPU_DEVICE_NO_ENV;
	if (npu_device_open(&dopts, &dev, msg, sizeof(msg)) != NPU_OK)
		fail_msg("sim device: %s", msg);
	return dev;
}

#ifdef NPU_COMPILER_CODEGEN_H
/*
 * Generates segment 0's stream of c again (device VAs 0, no profiling)
 * into a new *cb and *res, which the caller frees. Needs
 * "compiler/codegen.h" before this header.
 */
static inline void gb_segment_stream(const struct npu_compiled *c, struct npu_cmdbuf **cb,
				     struct npu_codegen_result *res)
{
	struct npu_codegen_target t = { .sram_size = c->dev_info.sram_size,
					.caps = c->dev_info.caps };
	struct npu_error err = { 0 };

	memset(res, 0, sizeof(*res));
	assert_int_equal(npu_cmdbuf_create(cb), NPU_OK);
	if (npu_codegen_segment(&c->segments[0]->prog, &t, *cb, res, &err) != NPU_OK)
		fail_msg("codegen: %s", npu_error_msg(&err));
}
#endif

#endif /* NPU_TEST_GRAPH_BUILDER_H */
