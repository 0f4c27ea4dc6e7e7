// SPDX-License-Identifier: MIT
/*
 * Cross-layer fusion (codegen_fusion.c, fusion_plan()): conv chains whose
 * intermediates stay in SRAM must give exactly the bytes of the same model
 * compiled with fusion off (fuse=off), over odd sizes, strides, kernels,
 * dilations, depthwise and fused activations, with tiles forced small
 * (codegen fuse_rows) so that halo rows are recomputed across tiles; chains of
 * more than two convs; and "teed" intermediates, read outside the chain
 * too (a gate after a Squeeze-and-Excitation pool, a product with a later
 * layer), which the chain stores as it goes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compiler/codegen.h"
#include "compiler/compiler.h"
#include "npu/npu_device.h"
#include "runtime/npu_runtime.h"

#include "graph_builder.h"

struct conv_spec {
	int64_t out_c, k_h, k_w, stride, dil, pad_t, pad_l, pad_b, pad_r, group;
	const char *act;	/* NULL, "Relu", "HardSwish" */
};

static struct npu_value *conv(struct npu_graph *g, struct npu_value *x, int idx,
			      const struct conv_spec *s)
{
	const int64_t *xd = x->shape.dims;
	int64_t eh = s->dil * (s->k_h - 1) + 1, ew = s->dil * (s->k_w - 1) + 1;
	int64_t od[4] = { 1, s->out_c, (xd[2] + s->pad_t + s->pad_b - eh) / s->stride + 1,
			  (xd[3] + s->pad_l + s->pad_r - ew) / s->stride + 1 };
	int64_t wd[4] = { s->out_c, xd[1] / s->group, s->k_h, s->k_w }, bd[1] = { s->out_c };
	int64_t k[2] = { s->k_h, s->k_w }, st[2] = { s->stride, s->stride };
	int64_t dl[2] = { s->dil, s->dil };
	int64_t pads[4] = { s->pad_t, s->pad_l, s->pad_b, s->pad_r };
	struct npu_value *in[3], *y;
	struct npu_node *n;
	char name[32];

	snprintf(name, sizeof(name), "c%d", idx);
	y = gb_value(g, name, 4, od);
	in[0] = x;
	snprintf(name, sizeof(name), "w%d", idx);
	in[1] = gb_weights(g, name, 4, wd, -0.4f, 0.4f);
	snprintf(name, sizeof(name), "b%d", idx);
	in[2] = gb_weights(g, name, 1, bd, -0.2f, 0.2f);
	snprintf(name, sizeof(name), "conv%d", idx);
	n = gb_node(g, "Conv", name, in, 3, y);
	gb_set_ints(n, "kernel_shape", k, 2);
	gb_set_ints(n, "strides", st, 2);
	gb_set_ints(n, "dilations", dl, 2);
	gb_set_ints(n, "pads", pads, 4);
	gb_set_int(n, "group", s->group);
	if (s->act) {
		struct npu_value *a;

		snprintf(name, sizeof(name), "a%d", idx);
		a = gb_value(g, name, 4, od);
		snprintf(name, sizeof(name), "act%d", idx);
		gb_node(g, s->act, name, &y, 1, a);
		y = a;
	}
	return y;
}

/*
 * x[1,5,H,W] through a chain of convs: 3x3 + Relu, depthwise 3x3 stride 2
 * + HardSwish, pointwise, 5x3 dilation 2 with uneven pads, depthwise 3x3,
 * pointwise stride 1 + Relu, 3x3 stride 2 (odd output), pointwise.
 */
static struct npu_graph *build_chain(int64_t h, int64_t w)
{
	static const struct conv_spec specs[] = {
		{ 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu" },
		{ 12, 3, 3, 2, 1, 1, 1, 1, 1, 12, "HardSwish" },
		{ 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },
		{ 9, 5, 3, 1, 2, 3, 2, 5, 2, 1, "Relu" },
		{ 9, 3, 3, 1, 1, 1, 1, 1, 1, 9, NULL },
		{ 33, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu" },
		{ 7, 3, 3, 2, 1, 0, 1, 1, 0, 1, NULL },
		{ 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },
	};
	struct npu_graph *g = npu_graph_create("chain");
	int64_t xd[4] = { 1, 5, h, w };
	struct npu_value *x = gb_value(g, "x", 4, xd), *y = x;
	size_t i;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		y = conv(g, y, (int)i, &specs[i]);
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

enum model {
	CHAIN,		/* build_chain() */
	TEE_MUL,	/* build_tee(), a product with a later layer */
	TEE_SE,		/* build_tee(), a Squeeze-and-Excitation gate */
	STEM,		/* build_stem(): a first layer read as im2col, then a chain */
	DECONV,		/* build_deconv(): zero insertion and a pixel-major tail */
	BRANCH,		/* build_branch(): another branch between two convs */
};

/* The input channels of each model. */
static int64_t model_c(enum model m)
{
	return m == STEM ? 3 : 5;
}

/*
 * x[1,5,H,W] -> 3x3 conv to 24 + Relu -> ConvTranspose 24 -> 24, 2x2 stride
 * 2 (zero insertion: one tap per output pixel) + Relu -> ConvTranspose
 * 24 -> 1, 2x2 stride 2 (pixel-major MATMULs, the chain's tail) -> Sigmoid.
 */
static struct npu_graph *build_deconv(int64_t h, int64_t w)
{
	static const struct conv_spec c0s = { 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu" };
	struct npu_graph *g = npu_graph_create("deconv");
	int64_t xd[4] = { 1, 5, h, w }, k2[2] = { 2, 2 };
	struct npu_value *x = gb_value(g, "x", 4, xd), *y = x, *in[3];
	int64_t oc[2] = { 24, 1 }, i;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	y = conv(g, x, 0, &c0s);
	for (i = 0; i < 2; i++) {
		const int64_t *d = y->shape.dims;
		int64_t od[4] = { 1, oc[i], 2 * d[2], 2 * d[3] };
		int64_t wd[4] = { d[1], oc[i], 2, 2 }, bd[1] = { oc[i] };
		struct npu_value *t, *a;
		struct npu_node *n;
		char name[16];

		snprintf(name, sizeof(name), "t%d", (int)i);
		t = gb_value(g, name, 4, od);
		in[0] = y;
		snprintf(name, sizeof(name), "tw%d", (int)i);
		in[1] = gb_weights(g, name, 4, wd, -0.5f, 0.5f);
		snprintf(name, sizeof(name), "tb%d", (int)i);
		in[2] = gb_weights(g, name, 1, bd, -0.2f, 0.2f);
		snprintf(name, sizeof(name), "deconv%d", (int)i);
		n = gb_node(g, "ConvTranspose", name, in, 3, t);
		gb_set_ints(n, "kernel_shape", k2, 2);
		gb_set_ints(n, "strides", k2, 2);
		snprintf(name, sizeof(name), "ta%d", (int)i);
		a = gb_value(g, name, 4, od);
		gb_node(g, i ? "Sigmoid" : "Relu", name, &t, 1, a);
		y = a;
	}
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

/*
 * x[1,5,H,W] -> c0 = 3x3 conv to 16 + Relu; d = 3x3 conv of x (another
 * branch, which graph order puts before c0's reader); y = 1x1 conv of c0
 * + d. compile.c moves c0's reader up behind c0, so they can chain.
 */
static struct npu_graph *build_branch(int64_t h, int64_t w)
{
	static const struct conv_spec c0s = { 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu" };
	static const struct conv_spec ds = { 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL };
	static const struct conv_spec pw = { 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL };
	struct npu_graph *g = npu_graph_create("branch");
	int64_t xd[4] = { 1, 5, h, w }, yd[4] = { 1, 16, h, w };
	struct npu_value *x = gb_value(g, "x", 4, xd), *c0, *d, *e, *in[2], *y;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	c0 = conv(g, x, 0, &c0s);
	d = conv(g, x, 1, &ds);
	e = conv(g, c0, 2, &pw);
	y = gb_value(g, "y", 4, yd);
	in[0] = e;
	in[1] = d;
	gb_node(g, "Add", "add", in, 2, y);
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

/*
 * x[1,3,H,W] -> 3x3 stride 2 conv to 16 + HardSwish (K = 27: the input is
 * read as im2col) -> depthwise 3x3 + Relu -> 1x1 to 24.
 */
static struct npu_graph *build_stem(int64_t h, int64_t w)
{
	static const struct conv_spec specs[] = {
		{ 16, 3, 3, 2, 1, 1, 1, 1, 1, 1, "HardSwish" },
		{ 16, 3, 3, 1, 1, 1, 1, 1, 1, 16, "Relu" },
		{ 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },
	};
	struct npu_graph *g = npu_graph_create("stem");
	int64_t xd[4] = { 1, 3, h, w };
	struct npu_value *x = gb_value(g, "x", 4, xd), *y = x;
	size_t i;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		y = conv(g, y, (int)i, &specs[i]);
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

/*
 * x[1,5,H,W] -> 1x1 conv to 24 -> c0 = 3x3 conv to 16 + Relu, then
 * TEE_MUL: c1 = 3x3 conv (halo rows across tiles), c2 = 1x1 to 16,
 *          y = 1x1 conv of (c2 * c0);
 * TEE_SE:  y = 1x1 conv of c0 * Sigmoid(1x1 conv of GlobalAveragePool(c0)).
 * c0 is read inside a chain and after it.
 */
static struct npu_graph *build_tee(int64_t h, int64_t w, enum model m)
{
	static const struct conv_spec c0s = { 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu" };
	static const struct conv_spec c1s = { 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu" };
	static const struct conv_spec pw16 = { 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL };
	static const struct conv_spec pw7 = { 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL };
	static const struct conv_spec pre = { 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL };
	struct npu_graph *g = npu_graph_create("tee");
	int64_t xd[4] = { 1, 5, h, w }, cd[4] = { 1, 16, h, w }, pd[4] = { 1, 16, 1, 1 };
	struct npu_value *x = gb_value(g, "x", 4, xd), *c0, *b, *in[2], *p, *y;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	/* a first 1x1 conv, so that c0 reads 24 channels: no input fold */
	c0 = conv(g, conv(g, x, 4, &pre), 0, &c0s);
	if (m == TEE_MUL) {
		b = conv(g, conv(g, c0, 1, &c1s), 2, &pw16);
	} else {
		p = gb_value(g, "pool", 4, pd);
		gb_node(g, "GlobalAveragePool", "gap", &c0, 1, p);
		b = conv(g, p, 1, &pw16);
		in[0] = b;
		b = gb_value(g, "gate", 4, pd);
		gb_node(g, "Sigmoid", "sig", in, 1, b);
	}
	in[0] = c0;
	in[1] = b;
	p = gb_value(g, "prod", 4, cd);
	gb_node(g, "Mul", "mul", in, 2, p);
	y = conv(g, p, 3, &pw7);
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

/*
 * Generates segment 0's stream again: the longest fused group, in lops,
 * and whether the lop after 'name' runs inside name's group.
 */
static void groups(const struct npu_compiled *c, const char *name, size_t *longest,
		   bool *after_fused)
{
	const struct npu_segment_program *prog = &c->segments[0]->prog;
	struct npu_codegen_result res;
	struct npu_cmdbuf *cb;
	size_t i, run = 1;

	gb_segment_stream(c, &cb, &res);
	*longest = 1;
	*after_fused = false;
	for (i = 1; i < prog->num_lops; i++) {
		run = res.lop_fused[i] ? run + 1 : 1;
		if (run > *longest)
			*longest = run;
		if (name && !strcmp(prog->lops[i - 1].name, name) && res.lop_fused[i])
			*after_fused = true;
	}
	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
}

/* Compile for sim with codegen fuse=<fuse>, run on x, copy the output out. */
static size_t compile_and_run(struct npu_device *dev, enum model m, int64_t h, int64_t w,
			      struct npu_tensor *x, const char *fuse, const char *rows,
			      float *out, size_t cap, uint64_t *fused_groups, size_t *longest,
			      bool *teed)
{
	struct npu_compiled *c;
	struct npu_graph *g;
	size_t i, n;

	gb_codegen_use(NULL);
	gb_codegen.fuse = fuse_choice(fuse);
	if (rows)
		gb_codegen.fuse_max_rows = (uint32_t)atoi(rows);
	gb_seed = 11;	/* the same weights every time */
	g = m == CHAIN ? build_chain(h, w) : m == STEM ? build_stem(h, w) :
	    m == DECONV ? build_deconv(h, w) : m == BRANCH ? build_branch(h, w) :
	    build_tee(h, w, m);
	c = gb_compile(g, dev, &x);
	assert_true(c->num_segments >= 1);
	*fused_groups = 0;
	for (i = 0; i < c->num_segments; i++)
		*fused_groups += c->segments[i]->code.fused_groups;
	groups(c, "conv0", longest, teed);
	if (m == STEM)	/* the first conv reads its input as im2col */
		assert_true(c->segments[0]->prog.acts[c->segments[0]->prog.lops[0].in].im2col.k_h);
	if (m == DECONV) {	/* zero insertion, then pixel-major: both in the chain */
		const struct npu_segment_program *prog = &c->segments[0]->prog;

		assert_int_equal(prog->num_lops, 3);
		assert_true(prog->lops[1].conv.ins_h == 1 && !prog->lops[1].conv.phase_h);
		assert_true(prog->lops[2].conv.phase_h == 2);
	}
	if (m == BRANCH) {	/* c0's reader right behind it */
		const struct npu_segment_program *prog = &c->segments[0]->prog;

		assert_true(prog->num_lops >= 3);
		assert_string_equal(prog->lops[0].name, "conv0");
		assert_string_equal(prog->lops[1].name, "conv2");
	}
	n = gb_run(g, x, out, cap);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	gb_codegen_use(NULL);
	return n;
}

static void check_model(enum model m, int64_t h, int64_t w, const char *rows)
{
	struct npu_device *dev;
	struct npu_shape xs = { .rank = 4, .dims = { 1, model_c(m), h, w } };
	struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
	size_t cap = 1 << 16, n0, n1, i, diff = 0, l0, l1;
	float *a = calloc(cap, sizeof(float)), *b = calloc(cap, sizeof(float));
	uint64_t g0, g1;
	bool t0, t1;
	int64_t k;

	assert_non_null(x);
	assert_non_null(a);
	assert_non_null(b);
	gb_seed = 5;
	for (k = 0; k < npu_shape_numel(&xs); k++)
		((float *)x->data)[k] = gb_uniform(-2.0f, 2.0f);
	dev = gb_sim_device();

	n0 = compile_and_run(dev, m, h, w, x, "0", NULL, a, cap, &g0, &l0, &t0);
	/* forced tiles of few rows cost more than they save: force the chains too */
	n1 = compile_and_run(dev, m, h, w, x, rows ? "force" : "1", rows, b, cap, &g1, &l1, &t1);
	print_message("# model %d %lldx%lld, fused tile rows <= %s: %llu fused groups, "
		      "the longest of %zu lops%s, %zu outputs\n", (int)m, (long long)h,
		      (long long)w, rows ? rows : "any", (unsigned long long)g1, l1,
		      t1 ? ", conv0 fused with the next lop" : "", n1);
	assert_int_equal(g0, 0);
	assert_int_equal(l0, 1);
	if (m == CHAIN) {
		/* 8 convs in a chain: at least two groups; forced, one of 6 */
		assert_true(g1 >= 2);
		if (rows)
			assert_int_equal(l1, 6);
	} else if (m == DECONV && rows) {
		assert_true(t1);
		assert_int_equal(l1, 3);
	} else if (m == BRANCH && rows) {
		assert_true(t1);
	} else if (m == STEM && rows) {
		assert_true(t1);	/* the im2col conv heads the chain */
		assert_int_equal(l1, 3);
	} else if (rows) {
		/* conv0 heads a chain and is stored for the Mul as well */
		assert_true(t1);
	}
	assert_int_equal(n0, n1);
	for (i = 0; i < n0; i++)
		diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
	assert_int_equal(diff, 0);
	/* and the output is not trivially constant */
	for (i = 1; i < n0 && a[i] == a[0]; i++)
		;
	assert_true(i < n0);

	npu_device_close(dev);
	npu_tensor_destroy(x);
	free(a);
	free(b);
}

static void test_fused_small_tiles_are_bit_identical(void **state)
{
	(void)state;
	check_model(CHAIN, 37, 29, "1");
	check_model(CHAIN, 37, 29, "2");
	check_model(CHAIN, 23, 41, "3");
}

static void test_fused_free_tiles_are_bit_identical(void **state)
{
	(void)state;
	check_model(CHAIN, 61, 47, NULL);
	check_model(CHAIN, 9, 7, NULL);
}

static void test_teed_intermediates_are_bit_identical(void **state)
{
	(void)state;
	check_model(TEE_MUL, 37, 29, "1");
	check_model(TEE_MUL, 23, 41, "3");
	check_model(TEE_MUL, 61, 47, NULL);
	check_model(TEE_SE, 37, 29, "2");
	check_model(TEE_SE, 96, 80, "5");
	check_model(TEE_SE, 96, 80, NULL);
}

static void test_deconv_tail_is_bit_identical(void **state)
{
	(void)state;
	check_model(DECONV, 13, 11, "1");
	check_model(DECONV, 20, 24, "3");
	check_model(DECONV, 40, 36, NULL);
}

static void test_hoisted_reader_is_bit_identical(void **state)
{
	(void)state;
	check_model(BRANCH, 23, 17, "2");
	check_model(BRANCH, 40, 36, NULL);
}

/*
 * Constants prefetched across ops (codegen_prefetch.c prefetch_consts()): the
 * chain of eight convs unfused, with prefetch=0 and without, gives the
 * same bytes; with it, ops start without their BARRIER and some constant
 * load sits in front of the previous op's final SYNC store.
 */
static void stream_shape(const struct npu_compiled *c, unsigned *barriers, unsigned *early)
{
	struct npu_codegen_result res;
	struct npu_cmdbuf *cb;
	const uint8_t *p;
	size_t size, off;
	bool load_seen = false;

	*barriers = *early = 0;
	gb_segment_stream(c, &cb, &res);
	p = npu_cmdbuf_data(cb, &size);
	for (off = sizeof(struct npu_cs_header); off < size;) {
		struct npu_insn_header h;

		memcpy(&h, p + off, sizeof(h));
		*barriers += h.opcode == NPU_OP_BARRIER;
		/* a DRAM -> SRAM load, then a SYNC SRAM -> DRAM store: the
		 * next op's constants in front of this op's last store */
		if (h.opcode == NPU_OP_DMA_COPY) {
			struct npu_insn_dma_copy d;

			memcpy(&d, p + off, sizeof(d));
			if (d.src_space == NPU_SPACE_VA && d.dst_space == NPU_SPACE_SRAM &&
			    !(h.flags & NPU_INSN_SYNC))
				load_seen = true;
			else if (d.dst_space == NPU_SPACE_VA && (h.flags & NPU_INSN_SYNC))
				*early += load_seen;
			if (d.dst_space == NPU_SPACE_VA)
				load_seen = false;
		} else if (h.opcode != NPU_OP_TIMESTAMP) {
			load_seen = false;
		}
		off += h.size;
	}
	npu_codegen_result_free(&res);
	npu_cmdbuf_destroy(cb);
}

static void test_prefetch_is_bit_identical(void **state)
{
	struct npu_shape xs = { .rank = 4, .dims = { 1, 5, 37, 29 } };
	struct npu_tensor *x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
	size_t cap = 1 << 16, n[2], i;
	float *out[2];
	unsigned barriers[2], early[2];
	struct npu_device *dev;
	int64_t k;

	(void)state;
	assert_non_null(x);
	gb_seed = 5;
	for (k = 0; k < npu_shape_numel(&xs); k++)
		((float *)x->data)[k] = gb_uniform(-2.0f, 2.0f);
	dev = gb_sim_device();
	for (i = 0; i < 2; i++) {
		struct npu_compiled *c;
		struct npu_graph *g;

		gb_codegen_use("fuse=off");	/* eight ops, each with its constants */
		gb_codegen.no_prefetch = !i;
		gb_seed = 11;
		g = build_chain(37, 29);
		c = gb_compile(g, dev, &x);
		stream_shape(c, &barriers[i], &early[i]);
		out[i] = calloc(cap, sizeof(float));
		assert_non_null(out[i]);
		n[i] = gb_run(g, x, out[i], cap);
		npu_compiled_free(c);
		npu_graph_destroy(g);
	}
	gb_codegen_use(NULL);
	print_message("# prefetch off / on: %u / %u barriers, %u / %u constant loads ahead of "
		      "a final store\n", barriers[0], barriers[1], early[0], early[1]);
	assert_int_equal(early[0], 0);
	assert_true(early[1] >= 3);
	assert_true(barriers[1] < barriers[0]);
	assert_int_equal(n[0], n[1]);
	assert_true(n[0] > 0);
	assert_memory_equal(out[0], out[1], n[0] * sizeof(float));
	npu_device_close(dev);
	npu_tensor_destroy(x);
	free(out[0]);
	free(out[1]);
}

static void test_im2col_head_is_bit_identical(void **state)
{
	(void)state;
	check_model(STEM, 37, 29, "1");
	check_model(STEM, 64, 48, "3");
	check_model(STEM, 64, 48, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fused_small_tiles_are_bit_identical),
		cmocka_unit_test(test_fused_free_tiles_are_bit_identical),
		cmocka_unit_test(test_teed_intermediates_are_bit_identical),
		cmocka_unit_test(test_im2col_head_is_bit_identical),
		cmocka_unit_test(test_deconv_tail_is_bit_identical),
		cmocka_unit_test(test_hoisted_reader_is_bit_identical),
		cmocka_unit_test(test_prefetch_is_bit_identical),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
