// SPDX-License-Identifier: MIT
/*
 * The whole compiler on a small CNN built by hand: passes, calibration,
 * placement, int8 lowering, tiling, and the NpuSegment delegate on the
 * simulator. The int8 result must stay within a stated tolerance of the
 * fp32 CPU run of the same graph.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "compiler/compiler.h"
#include "compiler/npub.h"
#include "compiler/pointwise.h"
#include "compiler/quant_report.h"
#include "runtime/npu_runtime.h"

#include "graph_builder.h"

/*
 * x[1,8,20,20] -> Conv3x3(16)+BN+Relu -> MaxPool2 -> DWConv3x3+HardSwish
 * -> Conv1x1(16) -> Add(residual) -> Resize-free head: GlobalAveragePool
 * -> Flatten -> Gemm(10) -> Softmax (SOFTMAX, ISA 1.3).
 */
static struct npu_graph *build_cnn(void)
{
	struct npu_graph *g = npu_graph_create("cnn");
	const int64_t x_d[4] = { 1, 8, 20, 20 }, c1_d[4] = { 1, 16, 20, 20 };
	const int64_t p_d[4] = { 1, 16, 10, 10 }, g_d[4] = { 1, 16, 1, 1 };
	const int64_t f_d[2] = { 1, 16 }, o_d[2] = { 1, 10 };
	const int64_t w1[4] = { 16, 8, 3, 3 }, wdw[4] = { 16, 1, 3, 3 };
	const int64_t w2[4] = { 16, 16, 1, 1 }, c16[1] = { 16 }, wfc[2] = { 16, 10 };
	const int64_t c10[1] = { 10 }, k3[2] = { 3, 3 }, k2[2] = { 2, 2 };
	const int64_t pads1[4] = { 1, 1, 1, 1 };
	struct npu_value *x = gb_value(g, "x", 4, x_d), *in[5];
	struct npu_value *c1 = gb_value(g, "c1", 4, c1_d), *bn = gb_value(g, "bn", 4, c1_d);
	struct npu_value *r1 = gb_value(g, "r1", 4, c1_d), *p1 = gb_value(g, "p1", 4, p_d);
	struct npu_value *dw = gb_value(g, "dw", 4, p_d), *hs = gb_value(g, "hs", 4, p_d);
	struct npu_value *c2 = gb_value(g, "c2", 4, p_d), *sum = gb_value(g, "sum", 4, p_d);
	struct npu_value *gap = gb_value(g, "gap", 4, g_d), *flat = gb_value(g, "flat", 2, f_d);
	struct npu_value *fc = gb_value(g, "fc", 2, o_d), *prob = gb_value(g, "prob", 2, o_d);
	struct npu_node *n;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = prob;
	g->num_outputs = 1;
	prob->is_graph_output = true;

	in[0] = x;
	in[1] = gb_weights(g, "w1", 4, w1, -0.3f, 0.3f);
	in[2] = gb_weights(g, "b1", 1, c16, -0.1f, 0.1f);
	n = gb_node(g, "Conv", "conv1", in, 3, c1);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "pads", pads1, 4);
	in[0] = c1;
	in[1] = gb_weights(g, "gamma", 1, c16, 0.5f, 1.5f);
	in[2] = gb_weights(g, "beta", 1, c16, -0.2f, 0.2f);
	in[3] = gb_weights(g, "mean", 1, c16, -0.1f, 0.1f);
	in[4] = gb_weights(g, "var", 1, c16, 0.5f, 2.0f);
	gb_node(g, "BatchNormalization", "bn1", in, 5, bn);
	gb_node(g, "Relu", "relu1", &bn, 1, r1);
	n = gb_node(g, "MaxPool", "pool1", &r1, 1, p1);
	gb_set_ints(n, "kernel_shape", k2, 2);
	gb_set_ints(n, "strides", k2, 2);
	in[0] = p1;
	in[1] = gb_weights(g, "wdw", 4, wdw, -0.5f, 0.5f);
	n = gb_node(g, "Conv", "dwconv", in, 2, dw);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "pads", pads1, 4);
	gb_set_int(n, "group", 16);
	gb_node(g, "HardSwish", "hswish", &dw, 1, hs);
	in[0] = hs;
	in[1] = gb_weights(g, "w2", 4, w2, -0.4f, 0.4f);
	in[2] = gb_weights(g, "b2", 1, c16, -0.1f, 0.1f);
	gb_node(g, "Conv", "conv2", in, 3, c2);
	in[0] = c2;
	in[1] = p1;
	gb_node(g, "Add", "residual", in, 2, sum);
	gb_node(g, "GlobalAveragePool", "gap", &sum, 1, gap);
	gb_node(g, "Flatten", "flatten", &gap, 1, flat);
	in[0] = flat;
	in[1] = gb_weights(g, "wfc", 2, wfc, -0.5f, 0.5f);
	in[2] = gb_weights(g, "bfc", 1, c10, -0.1f, 0.1f);
	gb_node(g, "Gemm", "fc", in, 3, fc);
	gb_node(g, "Softmax", "softmax", &fc, 1, prob);
	return g;
}

/* Run and copy the first output's first n floats. */
static void run_graph_n(struct npu_graph *g, const struct npu_tensor *x, float *out, size_t n)
{
	struct npu_exec_options so = { .threads = 1 };
	struct npu_exec *s;
	struct npu_error err = { 0 };

	if (npu_exec_create(g, &so, &s, &err) != NPU_OK)
		fail_msg("session: %s", err.msg);
	if (npu_exec_run(s, &x, &err) != NPU_OK)
		fail_msg("run: %s", err.msg);
	memcpy(out, npu_exec_output(s, 0)->data, n * sizeof(float));
	npu_exec_destroy(s);
}

static void run_graph(struct npu_graph *g, const struct npu_tensor *x, float *out)
{
	struct npu_exec_options so = { .threads = 1 };
	struct npu_exec *s;
	struct npu_error err = { 0 };
	const struct npu_tensor *t;

	if (npu_exec_create(g, &so, &s, &err) != NPU_OK)
		fail_msg("session: %s", err.msg);
	if (npu_exec_run(s, &x, &err) != NPU_OK)
		fail_msg("run: %s", err.msg);
	t = npu_exec_output(s, 0);
	memcpy(out, t->data, t->nbytes);
	npu_exec_destroy(s);
}

static void test_cnn_int8_on_sim_matches_fp32(void **state)
{
	struct npu_graph *ref, *g;
	struct npu_compile_options o;
	struct npu_device_options dopts;
	struct npu_device *dev;
	struct npu_compiled *c = NULL;
	struct npu_error err = { 0 };
	struct npu_tensor *x;
	float want[10], got[10], dot = 0, n1 = 0, n2 = 0;
	size_t i, npu_nodes = 0, segments_nodes = 0;
	char msg[256];
	int k;

	(void)state;
	gb_seed = 7;
	ref = build_cnn();
	gb_seed = 7;
	g = build_cnn();	/* same weights: same gb_seed sequence */
	gb_seed = 99;
	x = npu_tensor_create(NPU_DTYPE_FLOAT, &g->inputs[0]->shape);
	for (k = 0; k < 8 * 20 * 20; k++)
		((float *)x->data)[k] = gb_uniform(-1.5f, 1.5f);
	assert_int_equal(npu_graph_sort(ref, &err), NPU_OK);
	if (npu_graph_infer(ref, true, &err) != NPU_OK)
		fail_msg("infer: %s", err.msg);
	run_graph(ref, x, want);

	npu_device_options_init(&dopts);
	dopts.backend = NPU_BACKEND_SIM;
	dopts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&dopts, &dev, msg, sizeof(msg)), NPU_OK);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &x;
	o.num_calib_sets = 1;
	o.calib_method = NPU_CALIB_MINMAX;
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);

	for (i = 0; i < c->num_records; i++) {
		const struct npu_placement_record *r = &c->records[i];

		print_message("# %-12s %-18s %s (%s)\n", r->node, r->op_type,
			      r->placement == NPU_PLACE_NPU ? "npu" : "cpu", r->reason);
		npu_nodes += r->placement == NPU_PLACE_NPU;
		/* the last axis of [1, 10]: SOFTMAX (ISA 1.3) */
		if (!strcmp(r->op_type, "Softmax"))
			assert_int_equal(r->placement, NPU_PLACE_NPU);
		/* [1,16,1,1] -> [1,16] moves no byte: a COPY, not a segment split. */
		if (!strcmp(r->op_type, "Flatten"))
			assert_int_equal(r->placement, NPU_PLACE_NPU);
	}
	for (i = 0; i < c->num_segments; i++)
		segments_nodes += c->segments[i]->num_nodes;
	assert_int_equal(npu_nodes, segments_nodes);
	/* BN folded, activations fused: conv1, pool, dwconv, conv2, add, gap. */
	assert_true(npu_nodes >= 6);
	assert_true(c->npu_macs * 10 >= c->total_macs * 9);
	assert_true(c->arena_bytes <= c->arena_sum_bytes);
	assert_true(c->arena_lower_bound <= c->arena_bytes);

	run_graph(g, x, got);
	for (k = 0; k < 10; k++) {
		dot += want[k] * got[k];
		n1 += want[k] * want[k];
		n2 += got[k] * got[k];
		print_message("# class %d: fp32 %.4f int8 %.4f\n", k, want[k], got[k]);
	}
	/* Stated tolerance for int8 end to end: cosine > 0.99, |err| < 0.05. */
	assert_true(dot / sqrtf(n1 * n2) > 0.99f);
	for (k = 0; k < 10; k++)
		assert_true(fabsf(want[k] - got[k]) < 0.05f);

	npu_graph_destroy(g);
	npu_compiled_free(c);
	npu_device_close(dev);
	npu_graph_destroy(ref);
	npu_tensor_destroy(x);
}

static struct npu_device *open_sim(void)
{
	struct npu_device_options dopts;
	struct npu_device *dev;
	char msg[256];

	npu_device_options_init(&dopts);
	dopts.backend = NPU_BACKEND_SIM;
	dopts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&dopts, &dev, msg, sizeof(msg)), NPU_OK);
	return dev;
}

static struct npu_graph *inferred_cnn(void)
{
	struct npu_error err = { 0 };
	struct npu_graph *g;

	gb_seed = 7;
	g = build_cnn();
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	return g;
}

static uint8_t *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *d;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	d = malloc((size_t)n);
	assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return d;
}

/*
 * Save, reload, re-bind: the same int8 program gives the same numbers, and
 * codegen options other than the defaults come back with each segment, so
 * the reloaded file generates the same code wherever it loads.
 */
static void npub_round_trip(const char *codegen)
{
	static const char fake_onnx[] = "embedded model bytes";
	struct npu_graph *g = inferred_cnn(), *g2 = inferred_cnn();
	struct npu_device *dev = open_sim();
	struct npu_compiled *c = NULL, *c2 = NULL;
	struct npu_compile_options o;
	struct npu_error err = { 0 };
	struct npu_qdq_table qdq = { 0 };
	struct npu_npub *f = NULL;
	struct npu_tensor *x;
	float first[10], second[10];
	char path[] = "/tmp/npub-test-XXXXXX";
	const void *model;
	size_t size, msize;
	uint8_t *bytes;
	int fd = mkstemp(path), k;
	size_t i;

	assert_true(fd >= 0);
	close(fd);
	gb_seed = 99;
	x = npu_tensor_create(NPU_DTYPE_FLOAT, &g->inputs[0]->shape);
	for (k = 0; k < 8 * 20 * 20; k++)
		((float *)x->data)[k] = gb_uniform(-1.5f, 1.5f);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_random = true;
	if (codegen && npu_codegen_options_parse(&o.codegen, codegen, &err) != NPU_OK)
		fail_msg("%s", err.msg);
	if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	run_graph(g, x, first);
	if (npu_npub_save(path, &(struct npu_npub_source){ fake_onnx, sizeof(fake_onnx), NULL },
			  g, c, &err) != NPU_OK)
		fail_msg("save: %s", err.msg);

	bytes = read_all(path, &size);
	if (npu_npub_open(bytes, size, path, &f, &err) != NPU_OK)
		fail_msg("open: %s", err.msg);
	model = npu_npub_model(f, &msize);
	assert_int_equal(msize, sizeof(fake_onnx));
	assert_memory_equal(model, fake_onnx, msize);
	assert_int_equal(npu_npub_num_inputs(f), 1);
	/* A finished file: its own graph, no import and no pass. */
	npu_graph_destroy(g2);
	g2 = npu_npub_take_graph(f);
	assert_non_null(g2);
	if (npu_npub_instantiate(f, g2, dev, false, &c2, &err) != NPU_OK)
		fail_msg("instantiate: %s", err.msg);
	assert_int_equal(c2->num_segments, c->num_segments);
	assert_int_equal(c2->num_records, c->num_records);
	assert_int_equal(c2->npu_macs, c->npu_macs);
	for (i = 0; i < c->num_segments; i++)
		assert_memory_equal(&c2->segments[i]->prog.opts, &o.codegen, sizeof(o.codegen));
	/* Finished files are version 3, whatever the options. */
	assert_int_equal(((const uint16_t *)bytes)[2], 3);
	/* Loading generated no code: the streams came from the file. */
	assert_int_equal(c2->codegen_runs, 0);
	for (i = 0; i < c->num_segments; i++)
		assert_memory_equal(c2->segments[i]->stream.data, c->segments[i]->stream.data,
				    c->segments[i]->stream.size);
	run_graph(g2, x, second);
	assert_memory_equal(first, second, sizeof(first));

	npu_npub_close(f);
	npu_qdq_table_free(&qdq);
	npu_graph_destroy(g2);
	npu_graph_destroy(g);
	npu_compiled_free(c2);
	npu_compiled_free(c);
	npu_device_close(dev);
	npu_tensor_destroy(x);
	free(bytes);
	unlink(path);
}

static void test_npub_round_trip_is_bit_identical(void **state)
{
	(void)state;
	npub_round_trip(NULL);
	npub_round_trip("array_modes=0,prefetch=0,tile_search=0,fuse=off,out_lut=0,fuse_rows=3");
}

/* --codegen: every key, and the bad ones named with what they take. */
static void test_codegen_options_parse(void **state)
{
	static const struct {
		const char *spec, *error;
	} bad[] = {
		{ "fuse=sometimes", "fuse cannot be 'sometimes' (auto, off or force)" },
		{ "bogus=1", "unknown option 'bogus'" },
		{ "array_modes=2", "array_modes cannot be '2' (0 or 1)" },
		{ "fuse_rows=x", "fuse_rows cannot be 'x' (a row count)" },
		{ "lut_producer=first", "lut_producer cannot be 'first' (any or last)" },
		{ "nokey", "'nokey' is not key=value" },
	};
	struct npu_codegen_options o = { 0 }, zero = { 0 };
	struct npu_error err = { 0 };
	size_t i;

	(void)state;
	assert_int_equal(npu_codegen_options_parse(&o, "array_modes=0,out_lut=0,tile_search=0,"
						   "prefetch=0,gap_split=0,lut_producer=last,"
						   "pixel_mm=force,fuse=off,fuse_rows=7", &err), NPU_OK);
	assert_true(o.no_array_modes && o.no_out_lut && o.no_tile_search && o.no_prefetch &&
		    o.no_gap_split && o.lut_last_producer_only);
	assert_int_equal(o.pixel_mm, NPU_CODEGEN_FORCE);
	assert_int_equal(o.fuse, NPU_CODEGEN_OFF);
	assert_int_equal(o.fuse_max_rows, 7);
	/* Back to every default, key by key. */
	assert_int_equal(npu_codegen_options_parse(&o, "array_modes=1,out_lut=1,tile_search=1,"
						   "prefetch=1,gap_split=1,lut_producer=any,"
						   "pixel_mm=auto,fuse=auto,fuse_rows=0", &err), NPU_OK);
	assert_memory_equal(&o, &zero, sizeof(o));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.fuse_max_rows = 5;
		assert_int_equal(npu_codegen_options_parse(&o, bad[i].spec, &err), NPU_ERR_INVALID_ARG);
		if (!strstr(err.msg, bad[i].error))
			fail_msg("'%s': %s", bad[i].spec, err.msg);
		assert_int_equal(o.fuse_max_rows, 5);	/* a failed parse changes nothing */
	}
}

/* Every truncation, a flipped byte, a bad magic or version: clean errors. */
static void test_malformed_npub_is_rejected_with_a_reason(void **state)
{
	struct npu_graph *g = inferred_cnn();
	struct npu_device *dev = open_sim();
	struct npu_compiled *c = NULL;
	struct npu_compile_options o;
	struct npu_error err = { 0 };
	struct npu_npub *f = NULL;
	char path[] = "/tmp/npub-bad-XXXXXX";
	uint8_t *bytes, *copy;
	size_t size, n;
	int fd = mkstemp(path);

	(void)state;
	close(fd);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_random = true;
	o.cpu_only_placement = false;
	assert_int_equal(npu_compile_graph(g, &o, &c, &err), NPU_OK);
	assert_int_equal(npu_npub_save(path, &(struct npu_npub_source){ "m", 1, NULL }, g, c, &err), NPU_OK);
	bytes = read_all(path, &size);
	copy = malloc(size);

	for (n = 0; n < size; n += (n < 64 ? 1 : 97)) {
		memset(&err, 0, sizeof(err));
		assert_int_not_equal(npu_npub_open(bytes, n, "cut.npub", &f, &err), NPU_OK);
		assert_null(f);
		assert_non_null(strstr(err.msg, "cut.npub"));
	}
	memcpy(copy, bytes, size);
	copy[size / 2] ^= 0x40;
	assert_int_equal(npu_npub_open(copy, size, "flip.npub", &f, &err), NPU_ERR_MODEL);
	assert_non_null(strstr(err.msg, "checksum"));
	memcpy(copy, bytes, size);
	copy[0] = 'X';
	assert_int_equal(npu_npub_open(copy, size, "magic.npub", &f, &err), NPU_ERR_MODEL);
	assert_non_null(strstr(err.msg, "not a compiled model"));
	memcpy(copy, bytes, size);
	copy[4] = 9;
	assert_int_equal(npu_npub_open(copy, size, "ver.npub", &f, &err), NPU_ERR_MODEL);
	assert_non_null(strstr(err.msg, "version 9"));

	/* Geometry the loader must refuse although the checksum is right: a
	 * COPY (the Flatten) reaching past its tensor, a folded conv (conv1,
	 * 8 channels) whose fold does not divide its rows. */
	{
		struct npu_segment_program *p = &c->segments[0]->prog;
		struct npu_lop *cp = NULL, *fd = NULL;
		uint32_t fold;
		size_t k;

		for (k = 0; k < p->num_lops; k++) {
			if (p->lops[k].kind == NPU_LOP_COPY)
				cp = &p->lops[k];
			if (p->lops[k].kind == NPU_LOP_CONV && p->lops[k].conv.fold_w)
				fd = &p->lops[k];
		}
		assert_non_null(cp);
		assert_non_null(fd);
		cp->copy.dst_off += 1;
		assert_int_equal(npu_npub_save(path, &(struct npu_npub_source){ "m", 1, NULL }, g, c, &err), NPU_OK);
		free(bytes);
		bytes = read_all(path, &size);
		assert_int_equal(npu_npub_open(bytes, size, "copy.npub", &f, &err), NPU_ERR_MODEL);
		assert_non_null(strstr(err.msg, "copy"));
		assert_non_null(strstr(err.msg, "outside its tensors"));
		cp->copy.dst_off -= 1;
		fold = fd->conv.fold_w;
		fd->conv.fold_w = 3;	/* 20 columns are not whole wide pixels of 3 */
		assert_int_equal(npu_npub_save(path, &(struct npu_npub_source){ "m", 1, NULL }, g, c, &err), NPU_OK);
		free(bytes);
		bytes = read_all(path, &size);
		assert_int_equal(npu_npub_open(bytes, size, "fold.npub", &f, &err), NPU_ERR_MODEL);
		assert_non_null(strstr(err.msg, "fold_w 3"));
		fd->conv.fold_w = fold;
	}

	/* Each section that may appear once, twice (checksum and size right). */
	assert_int_equal(npu_npub_save(path, &(struct npu_npub_source){ "m", 1, NULL }, g, c, &err), NPU_OK);
	free(bytes);
	bytes = read_all(path, &size);
	{
		size_t at = 32, tested = 0;
		uint32_t sections, s;

		memcpy(&sections, bytes + 24, 4);
		for (s = 0; s < sections; s++) {
			uint32_t tag, crc;
			uint64_t len, total;
			uint8_t *dup;

			memcpy(&tag, bytes + at, 4);
			memcpy(&len, bytes + at + 8, 8);
			if (tag != 5 && tag != 7) {	/* segments and code repeat */
				total = size + 16 + len;
				dup = malloc(total);
				memcpy(dup, bytes, size);
				memcpy(dup + size, bytes + at, 16 + len);
				memcpy(dup + 16, &total, 8);
				sections++;
				memcpy(dup + 24, &sections, 4);
				sections--;
				crc = (uint32_t)crc32_z(0, dup + 32, total - 32);
				memcpy(dup + 12, &crc, 4);
				memset(&err, 0, sizeof(err));
				assert_int_equal(npu_npub_open(dup, total, "twice.npub", &f, &err),
						 NPU_ERR_MODEL);
				assert_null(f);
				if (!strstr(err.msg, "appears twice"))
					fail_msg("tag %u twice: %s", tag, err.msg);
				free(dup);
				tested++;
			}
			at += 16 + len;
		}
		assert_true(tested >= 4);	/* inputs, stats, records, graph, ... */
	}

	free(copy);
	free(bytes);
	unlink(path);
	npu_graph_destroy(g);
	npu_compiled_free(c);
	npu_device_close(dev);
}

struct worker {
	struct npu_graph *g;
	struct npu_tensor *x;
	float out[10];
	char err[NPU_ERROR_MSG_MAX];
	int rc;
};

/* One inference context per thread: its own device, compilation, session. */
static void *compile_and_run(void *arg)
{
	struct worker *w = arg;
	struct npu_device_options dopts;
	struct npu_compile_options o;
	struct npu_exec_options so = { .threads = 1 };
	struct npu_compiled *c = NULL;
	struct npu_exec *s = NULL;
	struct npu_device *dev = NULL;
	struct npu_error err = { 0 };
	const struct npu_tensor *in = w->x;
	int k;

	w->rc = -1;
	npu_device_options_init(&dopts);
	dopts.backend = NPU_BACKEND_SIM;
	dopts.flags = NPU_DEVICE_NO_ENV;
	if (npu_device_open(&dopts, &dev, w->err, sizeof(w->err)))
		return NULL;
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &w->x;
	o.num_calib_sets = 1;
	for (k = 0; k < 3 && !err.status; k++) {	/* reuse one context across runs */
		if (!c && npu_compile_graph(w->g, &o, &c, &err))
			break;
		if (!s && npu_exec_create(w->g, &so, &s, &err))
			break;
		if (npu_exec_run(s, &in, &err))
			break;
		memcpy(w->out, npu_exec_output(s, 0)->data, sizeof(w->out));
	}
	if (!err.status)
		w->rc = 0;
	snprintf(w->err, sizeof(w->err), "%s", err.msg);
	npu_exec_destroy(s);
	npu_graph_destroy(w->g);
	npu_compiled_free(c);
	npu_device_close(dev);
	return NULL;
}

/* Concurrent inference contexts on several threads agree bit for bit. */
static void test_concurrent_contexts_on_threads_agree(void **state)
{
	struct worker w[3];
	pthread_t t[3];
	int i, k;

	(void)state;
	gb_seed = 99;
	w[0].x = npu_tensor_create(NPU_DTYPE_FLOAT, &(struct npu_shape){ .rank = 4,
							.dims = { 1, 8, 20, 20 } });
	for (k = 0; k < 8 * 20 * 20; k++)
		((float *)w[0].x->data)[k] = gb_uniform(-1.5f, 1.5f);
	for (i = 0; i < 3; i++) {
		w[i].g = inferred_cnn();	/* built here: build_cnn's PRNG is not shared */
		w[i].x = w[0].x;
	}
	compile_and_run(&w[0]);		/* the single-threaded reference */
	assert_int_equal(w[0].rc, 0);
	for (i = 1; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, compile_and_run, &w[i]), 0);
	for (i = 1; i < 3; i++) {
		pthread_join(t[i], NULL);
		if (w[i].rc)
			fail_msg("thread %d: %s", i, w[i].err);
		assert_memory_equal(w[i].out, w[0].out, sizeof(w[0].out));
	}
	npu_tensor_destroy(w[0].x);
}

static void record_op(void *arg, const struct npu_node *n,
		      const struct npu_tensor *const *outputs)
{
	char *log = arg;

	(void)outputs;
	strcat(log, n->op_type);
	strcat(log, " ");
}

/*
 * Two independent branches: x -> Conv -> Relu (an NPU segment) and
 * x -> Softmax (CPU). The segment is submitted first and the Softmax runs
 * while it is on the device: the runtime observes (completes) Softmax
 * before it collects the segment.
 */
static void test_cpu_work_overlaps_an_npu_segment(void **state)
{
	struct npu_graph *g = npu_graph_create("branches");
	/* Large enough that the cost model keeps the conv on the NPU. */
	const int64_t x_d[4] = { 1, 32, 48, 48 }, y_d[4] = { 1, 64, 48, 48 };
	const int64_t w_d[4] = { 64, 32, 3, 3 }, pads[4] = { 1, 1, 1, 1 }, k3[2] = { 3, 3 };
	struct npu_value *x = gb_value(g, "x", 4, x_d), *in[2];
	struct npu_value *c = gb_value(g, "c", 4, y_d), *r = gb_value(g, "r", 4, y_d);
	struct npu_value *sm = gb_value(g, "sm", 4, x_d);
	struct npu_device *dev = open_sim();
	struct npu_compile_options o;
	struct npu_exec_options so = { .threads = 1, .observe = record_op };
	struct npu_compiled *cmp = NULL;
	struct npu_exec *s = NULL;
	struct npu_error err = { 0 };
	struct npu_tensor *xt;
	char log[256] = "";
	int k;

	(void)state;
	gb_seed = 5;
	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	g->outputs = malloc(2 * sizeof(*g->outputs));
	g->outputs[0] = sm;
	g->outputs[1] = r;
	g->num_outputs = 2;
	sm->is_graph_output = r->is_graph_output = true;
	gb_node(g, "Softmax", "softmax", &x, 1, sm);
	in[0] = x;
	in[1] = gb_weights(g, "w", 4, w_d, -0.2f, 0.2f);
	{
		struct npu_node *n = gb_node(g, "Conv", "conv", in, 2, c);

		gb_set_ints(n, "kernel_shape", k3, 2);
		gb_set_ints(n, "pads", pads, 4);
	}
	gb_node(g, "Relu", "relu", &c, 1, r);
	xt = npu_tensor_create(NPU_DTYPE_FLOAT, &x->shape);
	for (k = 0; k < 32 * 48 * 48; k++)
		((float *)xt->data)[k] = gb_uniform(-1.0f, 1.0f);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &xt;
	o.num_calib_sets = 1;
	if (npu_compile_graph(g, &o, &cmp, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	assert_int_equal(cmp->num_segments, 1);
	so.observe_arg = log;
	assert_int_equal(npu_exec_create(g, &so, &s, &err), NPU_OK);
	if (npu_exec_run(s, (const struct npu_tensor *const *)&xt, &err) != NPU_OK)
		fail_msg("run: %s", err.msg);
	assert_string_equal(log, "Softmax NpuSegment ");
	npu_exec_destroy(s);
	npu_graph_destroy(g);
	npu_compiled_free(cmp);
	npu_device_close(dev);
	npu_tensor_destroy(xt);
}

static struct npu_value *scalar(struct npu_graph *g, const char *name, float v)
{
	const int64_t one[1] = { 1 };
	struct npu_value *c = gb_weights(g, name, 1, one, 0, 0);

	*(float *)c->constant->data = v;
	return c;
}

/*
 * A LUT input keeps only where the function is not flat: HardSwish over a
 * calibrated [-100, 20] is 0 below -3, so the range starts just below -3
 * (the step over the rest gets ~5x finer) and every value below still
 * gives 0; Sigmoid over [-50, 50] with an output step of 1/255 keeps about
 * +-7. A function without flat ends (Tanh over [-0.5, 0.5]) keeps its range.
 */
static void test_lut_input_range_drops_the_flat_part(void **state)
{
	struct npu_graph *g = npu_graph_create("flat");
	const int64_t d[4] = { 1, 1, 1, 8 };
	const char *ops[3] = { "HardSwish", "Sigmoid", "Tanh" }, *outs[3] = { "y0", "y1", "y2" };
	const float from[3][2] = { { -100, 20 }, { -50, 50 }, { -0.5f, 0.5f } };
	int k;

	(void)state;
	for (k = 0; k < 3; k++) {
		struct npu_value *x = gb_value(g, ops[k], 4, d), *y = gb_value(g, outs[k], 4, d);
		struct npu_node *n = NULL;
		struct npu_pw_group grp = { .nodes = &n, .count = 1, .x = x, .y = y };
		struct npu_qparams in = npu_qparams_from_range(from[k][0], from[k][1]);
		struct npu_qparams out = npu_qparams_from_range(k == 0 ? 0 : k == 1 ? 0 : -0.5f,
							       k == 0 ? 20 : 1);
		struct npu_error err = { 0 };
		float lo, hi;

		n = gb_node(g, ops[k], ops[k], &x, 1, y);
		assert_int_equal(npu_pointwise_tighten_input(&grp, &in, out, &err), NPU_OK);
		lo = npu_dequantize_value(-128, in);
		hi = npu_dequantize_value(127, in);
		printf("# %s [%g, %g] -> [%g, %g]\n", ops[k], from[k][0], from[k][1], lo, hi);
		if (k == 0) {
			assert_true(lo < -3.0f && lo > -3.6f);
			assert_true(fabsf(hi - 20.0f) < 0.2f);
		} else if (k == 1) {
			assert_true(lo < -6.0f && lo > -9.0f);
			assert_true(hi > 6.0f && hi < 9.0f);
			/* Clamped ends still give the saturated outputs. */
			assert_true(1.0f / (1.0f + expf(-hi)) > 1.0f - out.scale / 2);
		} else {
			assert_true(fabsf(lo + 0.5f) < 0.01f && fabsf(hi - 0.5f) < 0.01f);
		}
	}
	npu_graph_destroy(g);
}

/*
 * HardSwish as exported by many converters, x * Clip(x + 3, 0, 6) / 6,
 * after a conv: the four pointwise nodes become one LUT, within the int8
 * tolerance of fp32. With the Clip output also a graph output, the chain
 * has two escaping values and stays four ops.
 */
static void run_pointwise(bool leak_intermediate)
{
	struct npu_graph *g = npu_graph_create("hswish"), *ref;
	const int64_t x_d[4] = { 1, 16, 32, 32 }, w_d[4] = { 16, 16, 1, 1 };
	struct npu_value *x = gb_value(g, "x", 4, x_d), *in[3];
	struct npu_value *c = gb_value(g, "c", 4, x_d), *a = gb_value(g, "a", 4, x_d);
	struct npu_value *cl = gb_value(g, "cl", 4, x_d), *m = gb_value(g, "m", 4, x_d);
	struct npu_value *y = gb_value(g, "y", 4, x_d);
	struct npu_device *dev = open_sim();
	struct npu_compile_options o;
	struct npu_compiled *cmp = NULL;
	struct npu_error err = { 0 };
	struct npu_tensor *xt;
	float *want, *got, lo = 1e30f, hi = -1e30f;
	size_t i, luts = 0, elts = 0, k;

	gb_seed = 11;
	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	g->outputs = malloc(2 * sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	if (leak_intermediate) {
		g->outputs[g->num_outputs++] = cl;
		cl->is_graph_output = true;
	}
	in[0] = x;
	in[1] = gb_weights(g, "w", 4, w_d, -0.6f, 0.6f);
	gb_node(g, "Conv", "conv", in, 2, c);
	in[0] = c;
	in[1] = scalar(g, "three", 3.0f);
	gb_node(g, "Add", "add3", in, 2, a);
	in[0] = a;
	in[1] = scalar(g, "zero", 0.0f);
	in[2] = scalar(g, "six", 6.0f);
	gb_node(g, "Clip", "relu6", in, 3, cl);
	in[0] = c;
	in[1] = cl;
	gb_node(g, "Mul", "mul", in, 2, m);
	in[0] = m;
	in[1] = scalar(g, "six_", 6.0f);
	gb_node(g, "Div", "div6", in, 2, y);

	xt = npu_tensor_create(NPU_DTYPE_FLOAT, &x->shape);
	for (k = 0; k < 16 * 32 * 32; k++)
		((float *)xt->data)[k] = gb_uniform(-3.0f, 3.0f);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	want = malloc(16 * 32 * 32 * sizeof(float));
	got = malloc(16 * 32 * 32 * sizeof(float));
	run_graph_n(g, xt, want, 16 * 32 * 32);	/* fp32 on the CPU */
	ref = g;
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &xt;
	o.num_calib_sets = 1;
	o.keep_small_segments = true;
	if (npu_compile_graph(ref, &o, &cmp, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	assert_int_equal(cmp->num_segments, 1);
	for (i = 0; i < cmp->segments[0]->prog.num_lops; i++) {
		luts += cmp->segments[0]->prog.lops[i].kind == NPU_LOP_LUT;
		elts += cmp->segments[0]->prog.lops[i].kind == NPU_LOP_ELTWISE;
	}
	if (leak_intermediate) {
		/* Add (+Clip fused as a clamp), Mul, Mul by 1/6: no group. */
		assert_int_equal(luts, 0);
		assert_int_equal(elts, 3);
	} else {
		/* Everything after the conv is one LUT, and that LUT is the
		 * conv's output stage: the conv's output never reaches DRAM. */
		assert_int_equal(luts, 0);
		assert_int_equal(elts, 0);
		assert_int_equal(cmp->segments[0]->prog.num_lops, 1);
		assert_non_null(cmp->segments[0]->prog.lops[0].conv.q.lut);
		assert_int_equal(cmp->segments[0]->prog.num_acts, 2);	/* x, y */
	}
	run_graph_n(ref, xt, got, 16 * 32 * 32);
	for (k = 0; k < 16 * 32 * 32; k++) {
		lo = fminf(lo, want[k]);
		hi = fmaxf(hi, want[k]);
	}
	for (k = 0; k < 16 * 32 * 32; k++)	/* the stated int8 tolerance */
		assert_true(fabsf(got[k] - want[k]) <= 0.05f * (hi - lo) + 1e-5f);
	npu_graph_destroy(g);
	npu_compiled_free(cmp);
	npu_device_close(dev);
	npu_tensor_destroy(xt);
	free(want);
	free(got);
}

static void test_pointwise_chain_becomes_one_lut(void **state)
{
	(void)state;
	run_pointwise(false);
}

static void test_pointwise_chain_with_escaping_value_is_kept(void **state)
{
	(void)state;
	run_pointwise(true);
}

static void set_str(struct npu_node *n, const char *name, const char *v)
{
	struct npu_attr *a;

	n->attrs = realloc(n->attrs, (n->num_attrs + 1) * sizeof(*n->attrs));
	a = &n->attrs[n->num_attrs++];
	memset(a, 0, sizeof(*a));
	a->name = strdup(name);
	a->type = NPU_ATTR_STRING;
	a->s = strdup(v);
}

/*
 * An FPN-like head with the ISA 1.1 ops: x[1,8,10,12] -> Conv3x3(16)+Relu
 * -> ConvTranspose(16->8, k2 s2) -> Add(bias [1,8,1,1]) -> BN -> Relu ->
 * Resize(nearest, asymmetric, floor, x2) -> ConvTranspose(8->6, k3 s2 p1,
 * output_padding 1) -> Resize(linear, 'ctm', to 52x61) -> Conv1x1(4).
 */
static struct npu_graph *build_upsampler(const char *ctm)
{
	struct npu_graph *g = npu_graph_create("up");
	const int64_t x_d[4] = { 1, 8, 10, 12 }, a_d[4] = { 1, 16, 10, 12 };
	const int64_t t_d[4] = { 1, 8, 20, 24 }, r_d[4] = { 1, 8, 40, 48 };
	const int64_t u_d[4] = { 1, 6, 80, 96 }, l_d[4] = { 1, 6, 52, 61 };
	const int64_t o_d[4] = { 1, 4, 52, 61 };
	const int64_t w1[4] = { 16, 8, 3, 3 }, wt1[4] = { 16, 8, 2, 2 };
	const int64_t wt2[4] = { 8, 6, 3, 3 }, w3[4] = { 4, 6, 1, 1 };
	const int64_t c16[1] = { 16 }, c8[1] = { 8 }, b8[4] = { 1, 8, 1, 1 };
	const int64_t c4[1] = { 4 }, c6[1] = { 6 };
	const int64_t k3[2] = { 3, 3 }, k2[2] = { 2, 2 }, s2[2] = { 2, 2 };
	const int64_t pads1[4] = { 1, 1, 1, 1 }, op1[2] = { 1, 1 };
	struct npu_value *x = gb_value(g, "x", 4, x_d), *in[5];
	struct npu_value *a = gb_value(g, "a", 4, a_d), *ar = gb_value(g, "ar", 4, a_d);
	struct npu_value *t = gb_value(g, "t", 4, t_d), *tb = gb_value(g, "tb", 4, t_d);
	struct npu_value *bn = gb_value(g, "bn", 4, t_d), *br = gb_value(g, "br", 4, t_d);
	struct npu_value *r = gb_value(g, "r", 4, r_d), *u = gb_value(g, "u", 4, u_d);
	struct npu_value *l = gb_value(g, "l", 4, l_d), *y = gb_value(g, "y", 4, o_d);
	struct npu_shape ss = { .rank = 1, .dims = { 4 } };
	struct npu_tensor *st = npu_tensor_create(NPU_DTYPE_FLOAT, &ss);
	struct npu_node *n;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;

	in[0] = x;
	in[1] = gb_weights(g, "w1", 4, w1, -0.3f, 0.3f);
	in[2] = gb_weights(g, "b1", 1, c16, -0.1f, 0.1f);
	n = gb_node(g, "Conv", "conv1", in, 3, a);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "pads", pads1, 4);
	gb_node(g, "Relu", "relu1", &a, 1, ar);
	in[0] = ar;
	in[1] = gb_weights(g, "wt1", 4, wt1, -0.4f, 0.4f);
	n = gb_node(g, "ConvTranspose", "up1", in, 2, t);
	gb_set_ints(n, "kernel_shape", k2, 2);
	gb_set_ints(n, "strides", s2, 2);
	in[0] = t;
	in[1] = gb_weights(g, "tbias", 4, b8, -0.2f, 0.2f);
	gb_node(g, "Add", "up1_bias", in, 2, tb);
	in[0] = tb;
	in[1] = gb_weights(g, "gamma", 1, c8, 0.5f, 1.5f);
	in[2] = gb_weights(g, "beta", 1, c8, -0.2f, 0.2f);
	in[3] = gb_weights(g, "mean", 1, c8, -0.1f, 0.1f);
	in[4] = gb_weights(g, "var", 1, c8, 0.5f, 2.0f);
	gb_node(g, "BatchNormalization", "bn1", in, 5, bn);
	gb_node(g, "Relu", "relu2", &bn, 1, br);
	((float *)st->data)[0] = 1;
	((float *)st->data)[1] = 1;
	((float *)st->data)[2] = 2;
	((float *)st->data)[3] = 2;
	in[0] = br;
	in[1] = NULL;
	in[2] = npu_graph_add_constant(g, "scales2", st, NULL);
	n = gb_node(g, "Resize", "near", in, 3, r);
	set_str(n, "mode", "nearest");
	set_str(n, "coordinate_transformation_mode", "asymmetric");
	set_str(n, "nearest_mode", "floor");
	in[0] = r;
	in[1] = gb_weights(g, "wt2", 4, wt2, -0.3f, 0.3f);
	in[2] = gb_weights(g, "bt2", 1, c6, -0.1f, 0.1f);
	n = gb_node(g, "ConvTranspose", "up2", in, 3, u);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "strides", s2, 2);
	gb_set_ints(n, "pads", pads1, 4);
	gb_set_ints(n, "output_padding", op1, 2);
	in[0] = u;
	in[1] = NULL;
	in[2] = NULL;
	{
		struct npu_tensor *sz = npu_tensor_create(NPU_DTYPE_INT64, &ss);

		((int64_t *)sz->data)[0] = 1;
		((int64_t *)sz->data)[1] = 6;
		((int64_t *)sz->data)[2] = 52;
		((int64_t *)sz->data)[3] = 61;
		in[3] = npu_graph_add_constant(g, "sizes_i64", sz, NULL);
	}
	n = gb_node(g, "Resize", "lin", in, 4, l);
	set_str(n, "mode", "linear");
	set_str(n, "coordinate_transformation_mode", ctm);
	in[0] = l;
	in[1] = gb_weights(g, "w3", 4, w3, -0.5f, 0.5f);
	in[2] = gb_weights(g, "b3", 1, c4, -0.1f, 0.1f);
	gb_node(g, "Conv", "conv3", in, 3, y);
	return g;
}

/*
 * ConvTranspose (+ bias Add + BatchNormalization folded) and Resize run
 * on the NPU and agree with the fp32 CPU graph within int8 tolerance, for
 * each coordinate mode of the linear Resize.
 */
static void test_conv_transpose_and_resize_on_sim_match_fp32(void **state)
{
	static const char *const modes[] = { "half_pixel", "align_corners",
					     "asymmetric", "pytorch_half_pixel" };
	const size_t count = 4 * 52 * 61;
	float *want = malloc(count * sizeof(float)), *got = malloc(count * sizeof(float));

	(void)state;
	assert_non_null(want);
	assert_non_null(got);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct npu_graph *ref, *g;
		struct npu_compile_options o;
		struct npu_device *dev = open_sim();
		struct npu_compiled *c = NULL;
		struct npu_error err = { 0 };
		struct npu_tensor *x;
		double dot = 0, n1 = 0, n2 = 0, range = 0, worst = 0;
		size_t i, on_npu = 0;

		gb_seed = 11;
		ref = build_upsampler(modes[m]);
		gb_seed = 11;
		g = build_upsampler(modes[m]);
		gb_seed = 5;
		x = npu_tensor_create(NPU_DTYPE_FLOAT, &g->inputs[0]->shape);
		for (i = 0; i < 8 * 10 * 12; i++)
			((float *)x->data)[i] = gb_uniform(-1.5f, 1.5f);
		assert_int_equal(npu_graph_sort(ref, &err), NPU_OK);
		if (npu_graph_infer(ref, true, &err) != NPU_OK)
			fail_msg("infer: %s", err.msg);
		run_graph(ref, x, want);

		npu_compile_options_init(&o);
		o.runner = &npu_exec_graph_runner;
		o.device = dev;
		o.calib_inputs = &x;
		o.num_calib_sets = 1;
		o.calib_method = NPU_CALIB_MINMAX;
		o.keep_small_segments = true;
		assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
		assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
		if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
			fail_msg("compile: %s", err.msg);
		for (i = 0; i < c->num_records; i++) {
			const struct npu_placement_record *r = &c->records[i];

			print_message("# %-10s %-14s %s (%s)\n", r->node, r->op_type,
				      r->placement == NPU_PLACE_NPU ? "npu" : "cpu", r->reason);
			/* The bias Add and the BatchNormalization fold into up1. */
			assert_true(strcmp(r->op_type, "BatchNormalization"));
			if (!strcmp(r->op_type, "ConvTranspose") || !strcmp(r->op_type, "Resize")) {
				assert_int_equal(r->placement, NPU_PLACE_NPU);
				on_npu++;
			}
		}
		assert_int_equal(on_npu, 4);
		assert_int_equal(c->num_segments, 1);
		/* up1 (k = s = 2, 8 output channels) runs as two phase convs. */
		for (i = 0, on_npu = 0; i < c->segments[0]->prog.num_lops; i++)
			on_npu += c->segments[0]->prog.lops[i].kind == NPU_LOP_CONV &&
				  c->segments[0]->prog.lops[i].conv.phase_h == 2;
		assert_int_equal(on_npu, 1);

		run_graph(g, x, got);
		for (i = 0; i < count; i++) {
			dot += (double)want[i] * got[i];
			n1 += (double)want[i] * want[i];
			n2 += (double)got[i] * got[i];
			range = fmax(range, fabs(want[i]));
			worst = fmax(worst, fabs(want[i] - got[i]));
		}
		print_message("# %s: cosine %.5f, max error %.4f of range %.3f\n", modes[m],
			      dot / sqrt(n1 * n2), worst, range);
		/* int8 end to end through five quantized layers. */
		assert_true(dot / sqrt(n1 * n2) > 0.995);
		assert_true(worst < 0.08 * range);
		npu_graph_destroy(g);
		npu_compiled_free(c);
		npu_device_close(dev);
		npu_graph_destroy(ref);
		npu_tensor_destroy(x);
	}
	free(want);
	free(got);
}

/*
 * Data movement on the NPU: x[1,8,100,200] -> a = Relu(Conv1x1 8->12),
 * b = Conv3x3 8->12; Concat(axis 1)[a, x, b] (three quantizations: plain
 * and LUT copies) -> Split(axis 1)[14, 18] -> Conv1x1 each to 32 ->
 * Concat(axis 2) -> [1,32,200,200], whose GlobalAveragePool does not fit
 * SRAM whole (banded: POOL + mean) -> Flatten -> Gemm(10).
 */
static struct npu_graph *build_fpn_concat(void)
{
	struct npu_graph *g = npu_graph_create("cat");
	const int64_t x_d[4] = { 1, 8, 100, 200 }, ab_d[4] = { 1, 12, 100, 200 };
	const int64_t cat_d[4] = { 1, 32, 100, 200 }, s0_d[4] = { 1, 14, 100, 200 };
	const int64_t s1_d[4] = { 1, 18, 100, 200 }, c_d[4] = { 1, 32, 100, 200 };
	const int64_t h_d[4] = { 1, 32, 200, 200 }, g_d[4] = { 1, 32, 1, 1 };
	const int64_t f_d[2] = { 1, 32 }, o_d[2] = { 1, 10 };
	const int64_t wa[4] = { 12, 8, 1, 1 }, wb[4] = { 12, 8, 3, 3 };
	const int64_t wc[4] = { 32, 18, 1, 1 }, wd[4] = { 32, 14, 1, 1 };
	const int64_t c12[1] = { 12 }, c32[1] = { 32 }, wfc[2] = { 32, 10 }, c10[1] = { 10 };
	const int64_t k3[2] = { 3, 3 }, pads1[4] = { 1, 1, 1, 1 };
	struct npu_value *x = gb_value(g, "x", 4, x_d), *in[3];
	struct npu_value *a0 = gb_value(g, "a0", 4, ab_d), *a = gb_value(g, "a", 4, ab_d);
	struct npu_value *b = gb_value(g, "b", 4, ab_d), *cat = gb_value(g, "cat", 4, cat_d);
	struct npu_value *s0 = gb_value(g, "s0", 4, s0_d), *s1 = gb_value(g, "s1", 4, s1_d);
	struct npu_value *c = gb_value(g, "c", 4, c_d), *d = gb_value(g, "d", 4, c_d);
	struct npu_value *h = gb_value(g, "h", 4, h_d), *gap = gb_value(g, "gap", 4, g_d);
	struct npu_value *flat = gb_value(g, "flat", 2, f_d), *y = gb_value(g, "y", 2, o_d);
	struct npu_shape ss = { .rank = 1, .dims = { 2 } };
	struct npu_tensor *split = npu_tensor_create(NPU_DTYPE_INT64, &ss);
	struct npu_node *n;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;

	in[0] = x;
	in[1] = gb_weights(g, "wa", 4, wa, -0.4f, 0.4f);
	in[2] = gb_weights(g, "ba", 1, c12, -0.1f, 0.1f);
	gb_node(g, "Conv", "conv_a", in, 3, a0);
	gb_node(g, "Relu", "relu_a", &a0, 1, a);
	in[1] = gb_weights(g, "wb", 4, wb, -0.2f, 0.2f);
	in[2] = gb_weights(g, "bb", 1, c12, -0.1f, 0.1f);
	n = gb_node(g, "Conv", "conv_b", in, 3, b);
	gb_set_ints(n, "kernel_shape", k3, 2);
	gb_set_ints(n, "pads", pads1, 4);
	in[0] = a;
	in[1] = x;
	in[2] = b;
	n = gb_node(g, "Concat", "cat_c", in, 3, cat);
	gb_set_int(n, "axis", 1);
	((int64_t *)split->data)[0] = 14;
	((int64_t *)split->data)[1] = 18;
	n = npu_graph_add_node(g, "Split", "", "split", 2, 2, NULL);
	assert_non_null(n);
	n->opset = 14;
	n->inputs[0] = cat;
	n->inputs[1] = npu_graph_add_constant(g, "split_sizes", split, NULL);
	n->outputs[0] = s0;
	n->outputs[1] = s1;
	s0->producer = s1->producer = n;
	gb_set_int(n, "axis", 1);
	in[0] = s1;
	in[1] = gb_weights(g, "wc", 4, wc, -0.3f, 0.3f);
	in[2] = gb_weights(g, "bc", 1, c32, -0.1f, 0.1f);
	gb_node(g, "Conv", "conv_c", in, 3, c);
	in[0] = s0;
	in[1] = gb_weights(g, "wd", 4, wd, -0.3f, 0.3f);
	in[2] = gb_weights(g, "bd", 1, c32, -0.1f, 0.1f);
	gb_node(g, "Conv", "conv_d", in, 3, d);
	in[0] = c;
	in[1] = d;
	n = gb_node(g, "Concat", "cat_h", in, 2, h);
	gb_set_int(n, "axis", 2);
	gb_node(g, "GlobalAveragePool", "gap", &h, 1, gap);
	gb_node(g, "Flatten", "flatten", &gap, 1, flat);
	in[0] = flat;
	in[1] = gb_weights(g, "wfc", 2, wfc, -0.5f, 0.5f);
	in[2] = gb_weights(g, "bfc", 1, c10, -0.1f, 0.1f);
	gb_node(g, "Gemm", "fc", in, 3, y);
	return g;
}

static void test_concat_split_and_big_global_pool_on_sim_match_fp32(void **state)
{
	struct npu_graph *ref, *g;
	struct npu_compile_options o;
	struct npu_device *dev = open_sim();
	struct npu_compiled *c = NULL;
	struct npu_error err = { 0 };
	struct npu_tensor *x;
	float want[10], got[10];
	double dot = 0, n1 = 0, n2 = 0, range = 0, worst = 0;
	size_t i, copies = 0, pools = 0;

	(void)state;
	gb_seed = 3;
	ref = build_fpn_concat();
	gb_seed = 3;
	g = build_fpn_concat();
	gb_seed = 8;
	x = npu_tensor_create(NPU_DTYPE_FLOAT, &g->inputs[0]->shape);
	for (i = 0; i < 8 * 100 * 200; i++)
		((float *)x->data)[i] = gb_uniform(-1.0f, 2.0f);
	assert_int_equal(npu_graph_sort(ref, &err), NPU_OK);
	if (npu_graph_infer(ref, true, &err) != NPU_OK)
		fail_msg("infer: %s", err.msg);
	run_graph(ref, x, want);

	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &x;
	o.num_calib_sets = 1;
	o.calib_method = NPU_CALIB_MINMAX;
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	/* The banded POOL form: by default the mean runs as two depthwise
	 * stages, which test_compiler_gap_split covers. */
	o.codegen.no_gap_split = true;
	if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	for (i = 0; i < c->num_records; i++) {
		const struct npu_placement_record *r = &c->records[i];

		print_message("# %-10s %-18s %s (%s)\n", r->node, r->op_type,
			      r->placement == NPU_PLACE_NPU ? "npu" : "cpu", r->reason);
		assert_int_equal(r->placement, NPU_PLACE_NPU);
	}
	assert_int_equal(c->num_segments, 1);
	for (i = 0; i < c->segments[0]->prog.num_lops; i++) {
		const struct npu_lop *l = &c->segments[0]->prog.lops[i];

		copies += l->kind == NPU_LOP_COPY;
		pools += l->kind == NPU_LOP_POOL;
	}
	/* 3 + 2 concat inputs, 2 split outputs, the flatten. */
	assert_int_equal(copies, 8);
	assert_int_equal(pools, 1);	/* the banded first stage of the big mean */

	run_graph(g, x, got);
	for (i = 0; i < 10; i++) {
		dot += (double)want[i] * got[i];
		n1 += (double)want[i] * want[i];
		n2 += (double)got[i] * got[i];
		range = fmax(range, fabs(want[i]));
		worst = fmax(worst, fabs(want[i] - got[i]));
	}
	print_message("# cosine %.5f, max error %.4f of range %.3f\n", dot / sqrt(n1 * n2),
		      worst, range);
	assert_true(dot / sqrt(n1 * n2) > 0.99);
	assert_true(worst < 0.05 * range);
	npu_graph_destroy(g);
	npu_compiled_free(c);
	npu_device_close(dev);
	npu_graph_destroy(ref);
	npu_tensor_destroy(x);
}

/* A CPU node between two segments says so, with the split's estimated cost. */
static void test_cpu_node_between_segments_reports_the_split(void **state)
{
	struct npu_graph *g = npu_graph_create("split");
	const int64_t x_d[4] = { 1, 4, 6, 6 }, w_d[4] = { 4, 4, 1, 1 }, c4[1] = { 4 };
	struct npu_value *x = gb_value(g, "x", 4, x_d), *a = gb_value(g, "a", 4, x_d);
	struct npu_value *sm = gb_value(g, "sm", 4, x_d), *y = gb_value(g, "y", 4, x_d), *in[3];
	struct npu_compile_options o;
	struct npu_device *dev = open_sim();
	struct npu_compiled *c = NULL;
	struct npu_error err = { 0 };
	struct npu_tensor *t;
	size_t i, found = 0;

	(void)state;
	gb_seed = 21;
	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	in[0] = x;
	in[1] = gb_weights(g, "w1", 4, w_d, -0.5f, 0.5f);
	in[2] = gb_weights(g, "b1", 1, c4, -0.1f, 0.1f);
	gb_node(g, "Conv", "conv1", in, 3, a);
	gb_set_int(gb_node(g, "Softmax", "softmax", &a, 1, sm), "axis", 1);
	in[0] = sm;
	in[1] = gb_weights(g, "w2", 4, w_d, -0.5f, 0.5f);
	in[2] = gb_weights(g, "b2", 1, c4, -0.1f, 0.1f);
	gb_node(g, "Conv", "conv2", in, 3, y);
	t = npu_tensor_create(NPU_DTYPE_FLOAT, &x->shape);
	for (i = 0; i < 4 * 36; i++)
		((float *)t->data)[i] = gb_uniform(-1.0f, 1.0f);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &t;
	o.num_calib_sets = 1;
	o.keep_small_segments = true;
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	assert_int_equal(c->num_segments, 2);
	for (i = 0; i < c->num_records; i++) {
		const struct npu_placement_record *r = &c->records[i];

		print_message("# %s: %s\n", r->node, r->reason);
		if (strcmp(r->op_type, "Softmax"))
			continue;
		found++;
		/* 144 elements leave segment 0, 144 enter segment 1. */
		assert_non_null(strstr(r->reason, "rank-4 input: the NPU keeps it as NHWC"));
		assert_non_null(strstr(r->reason, "splits NPU segments 0 -> 1, est. 30 us"));
		assert_non_null(strstr(r->reason, "288 elements crossing"));
	}
	assert_int_equal(found, 1);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	npu_device_close(dev);
	npu_tensor_destroy(t);
}

/*
 * x[1,12,40] -> MatMul(40) -> layer norm written out as ReduceMean, Sub,
 * Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta -> MatMul(16).
 * The pattern fuses to one LayerNormalization, which runs as LAYERNORM in
 * the same segment as both MatMuls; int8 stays near fp32.
 */
static struct npu_graph *build_layernorm(void)
{
	struct npu_graph *g = npu_graph_create("layernorm");
	const int64_t x_d[3] = { 1, 12, 40 }, m_d[3] = { 1, 12, 1 }, y_d[3] = { 1, 12, 16 };
	const int64_t w1[2] = { 40, 40 }, w2[2] = { 40, 16 }, c40[1] = { 40 }, last[1] = { -1 };
	struct npu_value *x = gb_value(g, "x", 3, x_d), *a = gb_value(g, "a", 3, x_d);
	struct npu_value *m = gb_value(g, "m", 3, m_d), *d = gb_value(g, "d", 3, x_d);
	struct npu_value *p = gb_value(g, "p", 3, x_d), *v = gb_value(g, "v", 3, m_d);
	struct npu_value *ve = gb_value(g, "ve", 3, m_d), *sd = gb_value(g, "sd", 3, m_d);
	struct npu_value *n = gb_value(g, "n", 3, x_d), *gm = gb_value(g, "gm", 3, x_d);
	struct npu_value *ln = gb_value(g, "ln", 3, x_d), *y = gb_value(g, "y", 3, y_d), *in[2];

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	in[0] = x;
	in[1] = gb_weights(g, "w1", 2, w1, -0.4f, 0.4f);
	gb_node(g, "MatMul", "mm1", in, 2, a);
	gb_set_ints(gb_node(g, "ReduceMean", "mean", &a, 1, m), "axes", last, 1);
	in[0] = a, in[1] = m;
	gb_node(g, "Sub", "sub", in, 2, d);
	in[0] = d, in[1] = scalar(g, "two", 2.0f);
	gb_node(g, "Pow", "pow", in, 2, p);
	gb_set_ints(gb_node(g, "ReduceMean", "var", &p, 1, v), "axes", last, 1);
	in[0] = v, in[1] = scalar(g, "eps", 1e-5f);
	gb_node(g, "Add", "add_eps", in, 2, ve);
	gb_node(g, "Sqrt", "sqrt", &ve, 1, sd);
	in[0] = d, in[1] = sd;
	gb_node(g, "Div", "div", in, 2, n);
	in[0] = n, in[1] = gb_weights(g, "gamma", 1, c40, 0.5f, 1.5f);
	gb_node(g, "Mul", "gamma_mul", in, 2, gm);
	in[0] = gm, in[1] = gb_weights(g, "beta", 1, c40, -0.3f, 0.3f);
	gb_node(g, "Add", "beta_add", in, 2, ln);
	in[0] = ln, in[1] = gb_weights(g, "w2", 2, w2, -0.4f, 0.4f);
	gb_node(g, "MatMul", "mm2", in, 2, y);
	return g;
}

static void test_layernorm_pattern_runs_as_layernorm(void **state)
{
	struct npu_graph *ref, *g;
	struct npu_compile_options o;
	struct npu_device *dev = open_sim();
	struct npu_compiled *c = NULL;
	struct npu_error err = { 0 };
	struct npu_tensor *x;
	float want[12 * 16], got[12 * 16];
	double dot = 0, n1 = 0, n2 = 0;
	size_t i, lns = 0;

	(void)state;
	gb_seed = 31;
	ref = build_layernorm();
	gb_seed = 31;
	g = build_layernorm();
	x = npu_tensor_create(NPU_DTYPE_FLOAT, &g->inputs[0]->shape);
	for (i = 0; i < 12 * 40; i++)
		((float *)x->data)[i] = gb_uniform(-2.0f, 2.0f) + (float)(i / 40) * 0.3f;
	assert_int_equal(npu_graph_sort(ref, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(ref, true, &err), NPU_OK);
	run_graph(ref, x, want);

	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &x;
	o.num_calib_sets = 1;
	o.keep_small_segments = true;
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	for (i = 0; i < c->num_records; i++) {
		const struct npu_placement_record *r = &c->records[i];

		print_message("# %-10s %-18s %s (%s)\n", r->node, r->op_type,
			      r->placement == NPU_PLACE_NPU ? "npu" : "cpu", r->reason);
		/* the pattern's pieces are gone; the last node carries its name */
		if (!strcmp(r->op_type, "ReduceMean") || !strcmp(r->op_type, "Sqrt"))
			fail_msg("%s was not fused", r->node);
		if (strcmp(r->op_type, "LayerNormalization"))
			continue;
		lns++;
		assert_string_equal(r->node, "beta_add");
		assert_int_equal(r->placement, NPU_PLACE_NPU);
		assert_non_null(strstr(r->reason, "LAYERNORM"));
	}
	assert_int_equal(lns, 1);
	assert_int_equal(c->num_segments, 1);

	run_graph(g, x, got);
	for (i = 0; i < 12 * 16; i++) {
		dot += (double)want[i] * got[i];
		n1 += (double)want[i] * want[i];
		n2 += (double)got[i] * got[i];
	}
	print_message("# layernorm: cosine %.5f\n", dot / sqrt(n1 * n2));
	assert_true(dot / sqrt(n1 * n2) > 0.995);

	npu_compiled_free(c);
	npu_graph_destroy(g);
	npu_graph_destroy(ref);
	npu_device_close(dev);
	npu_tensor_destroy(x);
}

/*
 * x[1,12,40] -> MatMul(40) -> a; ReduceMean(a, last) + ReduceMax(a, last)
 * (keepdims) -> y[1,12,1]: both run as REDUCE in the MatMul's segment.
 */
static void test_reductions_run_as_reduce(void **state)
{
	const int64_t x_d[3] = { 1, 12, 40 }, m_d[3] = { 1, 12, 1 };
	const int64_t w1[2] = { 40, 40 }, last[1] = { -1 };
	struct npu_graph *gs[2];
	struct npu_compile_options o;
	struct npu_device *dev = open_sim();
	struct npu_compiled *c = NULL;
	struct npu_error err = { 0 };
	struct npu_tensor *x = NULL;
	float want[12], got[12];
	size_t i, reduces = 0;
	int k;

	(void)state;
	for (k = 0; k < 2; k++) {
		struct npu_graph *g = npu_graph_create("reduce");
		struct npu_value *xv = gb_value(g, "x", 3, x_d), *a = gb_value(g, "a", 3, x_d);
		struct npu_value *m = gb_value(g, "m", 3, m_d), *mx = gb_value(g, "mx", 3, m_d);
		struct npu_value *y = gb_value(g, "y", 3, m_d), *in[2];

		gb_seed = 41;
		xv->is_graph_input = true;
		g->inputs = malloc(sizeof(*g->inputs));
		g->inputs[0] = xv;
		g->num_inputs = 1;
		g->outputs = malloc(sizeof(*g->outputs));
		g->outputs[0] = y;
		g->num_outputs = 1;
		y->is_graph_output = true;
		in[0] = xv;
		in[1] = gb_weights(g, "w1", 2, w1, -0.4f, 0.4f);
		gb_node(g, "MatMul", "mm1", in, 2, a);
		gb_set_ints(gb_node(g, "ReduceMean", "mean", &a, 1, m), "axes", last, 1);
		gb_set_ints(gb_node(g, "ReduceMax", "max", &a, 1, mx), "axes", last, 1);
		in[0] = m, in[1] = mx;
		gb_node(g, "Add", "sum", in, 2, y);
		assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
		assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
		gs[k] = g;
	}
	x = npu_tensor_create(NPU_DTYPE_FLOAT, &gs[0]->inputs[0]->shape);
	for (i = 0; i < 12 * 40; i++)
		((float *)x->data)[i] = gb_uniform(-2.0f, 2.0f);
	run_graph(gs[0], x, want);

	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &x;
	o.num_calib_sets = 1;
	o.keep_small_segments = true;
	if (npu_compile_graph(gs[1], &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	for (i = 0; i < c->num_records; i++) {
		const struct npu_placement_record *r = &c->records[i];

		print_message("# %-6s %-12s %s (%s)\n", r->node, r->op_type,
			      r->placement == NPU_PLACE_NPU ? "npu" : "cpu", r->reason);
		assert_int_equal(r->placement, NPU_PLACE_NPU);
		reduces += strstr(r->reason, "REDUCE") != NULL;
	}
	assert_int_equal(reduces, 2);
	assert_int_equal(c->num_segments, 1);
	run_graph(gs[1], x, got);
	/* int8 through MatMul, two reductions and an Add: y is 1.5..5.3
	 * here, an output step ~0.02; allow three steps */
	for (k = 0; k < 12; k++) {
		print_message("# row %d: fp32 %.4f int8 %.4f\n", k, want[k], got[k]);
		assert_true(fabsf(want[k] - got[k]) < 0.03f * 2.0f);
	}
	npu_compiled_free(c);
	npu_graph_destroy(gs[0]);
	npu_graph_destroy(gs[1]);
	npu_device_close(dev);
	npu_tensor_destroy(x);
}

/*
 * Transposes by DMA: x[1,6,5,7] -> Conv1x1(8) -> a; then either
 *   (0) Transpose(0,2,3,1) -> [1,5,7,8] (NHWC to NHWC: a transpose of the
 *       stored [5*7][8] block) -> Conv1x1(5 -> 4), or
 *   (1) with x[1,6,1,35]: Reshape [1,8,1,35] -> [1,8,35] (NHWC to
 *       row-major: stored [35][8] -> [8][35]) -> Transpose(0,2,1) ->
 *       [1,35,8] -> MatMul [8,3]: the pair puts every byte back, so it
 *       runs as one plain copy,
 *   (2) the same Reshape alone -> MatMul [35,3]: a DMA transpose,
 * every node on the NPU, against the fp32 CPU graph.
 */
static struct npu_graph *build_transposes(int variant)
{
	struct npu_graph *g = npu_graph_create("tr");
	const int64_t x0_d[4] = { 1, 6, 5, 7 }, a0_d[4] = { 1, 8, 5, 7 }, w1[4] = { 8, 6, 1, 1 };
	const int64_t x1_d[4] = { 1, 6, 1, 35 }, a1_d[4] = { 1, 8, 1, 35 };
	const int64_t t_d[4] = { 1, 5, 7, 8 }, w2[4] = { 4, 5, 1, 1 }, y0_d[4] = { 1, 4, 7, 8 };
	const int64_t r_d[3] = { 1, 8, 35 }, u_d[3] = { 1, 35, 8 }, wm[2] = { 8, 3 };
	const int64_t y1_d[3] = { 1, 35, 3 }, c8[1] = { 8 }, c4[1] = { 4 };
	const int64_t wm2[2] = { 35, 3 }, y2_d[3] = { 1, 8, 3 };
	const int64_t p0[4] = { 0, 2, 3, 1 }, p1[3] = { 0, 2, 1 };
	struct npu_value *x = gb_value(g, "x", 4, variant ? x1_d : x0_d);
	struct npu_value *a = gb_value(g, "a", 4, variant ? a1_d : a0_d), *in[3], *y;
	struct npu_node *n;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	in[0] = x;
	in[1] = gb_weights(g, "w1", 4, w1, -0.5f, 0.5f);
	in[2] = gb_weights(g, "b1", 1, c8, -0.1f, 0.1f);
	gb_node(g, "Conv", "conv1", in, 3, a);
	if (variant == 0) {
		struct npu_value *t = gb_value(g, "t", 4, t_d);

		y = gb_value(g, "y", 4, y0_d);
		n = gb_node(g, "Transpose", "nhwc_transpose", &a, 1, t);
		gb_set_ints(n, "perm", p0, 4);
		in[0] = t;
		in[1] = gb_weights(g, "w2", 4, w2, -0.5f, 0.5f);
		in[2] = gb_weights(g, "b2", 1, c4, -0.1f, 0.1f);
		gb_node(g, "Conv", "conv2", in, 3, y);
	} else {
		struct npu_value *r = gb_value(g, "r", 3, r_d), *u = gb_value(g, "u", 3, u_d);
		struct npu_shape ss = { .rank = 1, .dims = { 3 } };
		struct npu_tensor *sh = npu_tensor_create(NPU_DTYPE_INT64, &ss);

		y = gb_value(g, "y", 3, variant == 1 ? y1_d : y2_d);
		((int64_t *)sh->data)[0] = 1;
		((int64_t *)sh->data)[1] = 8;
		((int64_t *)sh->data)[2] = 35;
		in[0] = a;
		in[1] = npu_graph_add_constant(g, "shape", sh, NULL);
		gb_node(g, "Reshape", "to_rows", in, 2, r);
		if (variant == 1) {
			n = gb_node(g, "Transpose", "rows_transpose", &r, 1, u);
			gb_set_ints(n, "perm", p1, 3);
			in[0] = u;
			in[1] = gb_weights(g, "wm", 2, wm, -0.5f, 0.5f);
		} else {
			in[0] = r;
			in[1] = gb_weights(g, "wm", 2, wm2, -0.5f, 0.5f);
		}
		gb_node(g, "MatMul", "fc", in, 2, y);
	}
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

static void test_transposes_by_dma_match_fp32(void **state)
{
	int variant;

	(void)state;
	for (variant = 0; variant < 3; variant++) {
		struct npu_graph *ref, *g;
		struct npu_compile_options o;
		struct npu_device *dev = open_sim();
		struct npu_compiled *c = NULL;
		struct npu_error err = { 0 };
		struct npu_tensor *x;
		float want[4 * 7 * 8], got[4 * 7 * 8];
		size_t i, count = variant == 0 ? 4 * 7 * 8 : variant == 1 ? 35 * 3 : 8 * 3;
		size_t copies = 0, plain = 0;
		double dot = 0, n1 = 0, n2 = 0, range = 0, worst = 0;

		gb_seed = 17;
		ref = build_transposes(variant);
		gb_seed = 17;
		g = build_transposes(variant);
		gb_seed = 4;
		x = npu_tensor_create(NPU_DTYPE_FLOAT, &g->inputs[0]->shape);
		for (i = 0; i < 6 * 5 * 7; i++)
			((float *)x->data)[i] = gb_uniform(-1.0f, 1.0f);
		assert_int_equal(npu_graph_sort(ref, &err), NPU_OK);
		if (npu_graph_infer(ref, true, &err) != NPU_OK)
			fail_msg("infer: %s", err.msg);
		run_graph(ref, x, want);
		npu_compile_options_init(&o);
		o.runner = &npu_exec_graph_runner;
		o.device = dev;
		o.calib_inputs = &x;
		o.num_calib_sets = 1;
		o.keep_small_segments = true;
		assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
		assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
		if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
			fail_msg("compile: %s", err.msg);
		for (i = 0; i < c->num_records; i++) {
			print_message("# %-14s %-10s %s (%s)\n", c->records[i].node,
				      c->records[i].op_type,
				      c->records[i].placement == NPU_PLACE_NPU ? "npu" : "cpu",
				      c->records[i].reason);
			assert_int_equal(c->records[i].placement, NPU_PLACE_NPU);
		}
		assert_int_equal(c->num_segments, 1);
		for (i = 0; i < c->segments[0]->prog.num_lops; i++) {
			const struct npu_lop *l = &c->segments[0]->prog.lops[i];

			copies += l->kind == NPU_LOP_COPY;
			plain += l->kind == NPU_LOP_COPY && l->copy.rows == 1 && l->copy.count <= 1;
		}
		/* One lop each: a transpose, the undone pair as a plain copy. */
		assert_int_equal(copies, 1);
		assert_int_equal(plain, variant == 1 ? 1 : 0);
		run_graph(g, x, got);
		for (i = 0; i < count; i++) {
			dot += (double)want[i] * got[i];
			n1 += (double)want[i] * want[i];
			n2 += (double)got[i] * got[i];
			range = fmax(range, fabs(want[i]));
			worst = fmax(worst, fabs(want[i] - got[i]));
		}
		print_message("# variant %d: cosine %.5f, max error %.4f of range %.3f\n", variant,
			      dot / sqrt(n1 * n2), worst, range);
		assert_true(dot / sqrt(n1 * n2) > 0.995);
		assert_true(worst < 0.05 * range);
		npu_graph_destroy(g);
		npu_compiled_free(c);
		npu_device_close(dev);
		npu_graph_destroy(ref);
		npu_tensor_destroy(x);
	}
}

/*
 * One attention block as PP-OCRv4 rec writes it (opset 9 Slice / Squeeze
 * attributes), 4 heads of 5 over 7 tokens: x[1,7,20] -> MatMul qkv ->
 * Reshape [1,7,3,4,5] -> Transpose (2,0,3,1,4) -> Slice / Squeeze q, k, v
 * -> q * scale -> q . k^T (k by Transpose) -> Softmax -> . v -> Transpose
 * (0,2,1,3) -> Reshape [1,7,20] -> MatMul out. 'step2' slices v with step
 * 2 over a 10-wide head instead, which has no NPU form.
 */
static struct npu_value *i64_const(struct npu_graph *g, const char *name, const int64_t *v,
				   int64_t count)
{
	struct npu_shape ss = { .rank = 1, .dims = { count } };
	struct npu_tensor *t = npu_tensor_create(NPU_DTYPE_INT64, &ss);

	memcpy(t->data, v, count * sizeof(*v));
	return npu_graph_add_constant(g, name, t, NULL);
}

static struct npu_graph *build_attention(bool step2, int64_t d)
{
	struct npu_graph *g = npu_graph_create("attn");
	const int64_t x_d[3] = { 1, 7, 4 * d }, wq[2] = { 4 * d, 12 * d };
	const int64_t qkv_d[3] = { 1, 7, 12 * d };
	const int64_t r5[5] = { 1, 7, 3, 4, d }, t5[5] = { 3, 1, 4, 7, d };
	const int64_t s5[5] = { 1, 1, 4, 7, d }, h4[4] = { 1, 4, 7, d }, kt[4] = { 1, 4, d, 7 };
	const int64_t sc[4] = { 1, 4, 7, 7 }, ctx_t[4] = { 1, 7, 4, d }, wo[2] = { 4 * d, 4 * d };
	const int64_t perm5[5] = { 2, 0, 3, 1, 4 }, perm_k[4] = { 0, 1, 3, 2 };
	const int64_t perm_c[4] = { 0, 2, 1, 3 }, zero[1] = { 0 };
	const float wr = 0.4f * sqrtf(5.0f / (float)d);	/* outputs of one range */
	const char *qkv_names[3] = { "q", "k", "v" };
	struct npu_value *x = gb_value(g, "x", 3, x_d), *qkv = gb_value(g, "qkv", 3, qkv_d);
	struct npu_value *r = gb_value(g, "r5", 5, r5), *t = gb_value(g, "t5", 5, t5), *h[3], *in[2];
	struct npu_value *qs = gb_value(g, "qs", 4, h4), *ktv = gb_value(g, "kt", 4, kt);
	struct npu_value *scores = gb_value(g, "scores", 4, sc), *prob = gb_value(g, "prob", 4, sc);
	struct npu_value *ctx = gb_value(g, "ctx", 4, h4), *ctxt = gb_value(g, "ctx_t", 4, ctx_t);
	struct npu_value *flat = gb_value(g, "flat", 3, x_d), *y = gb_value(g, "y", 3, x_d);
	struct npu_node *n;
	int64_t shape[5];
	int i;

	x->is_graph_input = true;
	g->inputs = malloc(sizeof(*g->inputs));
	g->inputs[0] = x;
	g->num_inputs = 1;
	in[0] = x;
	in[1] = gb_weights(g, "wqkv", 2, wq, -wr, wr);
	gb_node(g, "MatMul", "qkv_proj", in, 2, qkv);
	memcpy(shape, r5, sizeof(r5));
	in[0] = qkv;
	in[1] = i64_const(g, "shape5", shape, 5);
	gb_node(g, "Reshape", "split_heads", in, 2, r);
	gb_set_ints(gb_node(g, "Transpose", "qkv_transpose", &r, 1, t), "perm", perm5, 5);
	for (i = 0; i < 3; i++) {
		char sname[16], qname[16];
		struct npu_value *sl = gb_value(g, (snprintf(sname, sizeof(sname), "%s_slice",
						      qkv_names[i]), sname), 5, s5);
		int64_t start = i, end = i + 1;

		h[i] = gb_value(g, qkv_names[i], 4, h4);
		n = gb_node(g, "Slice", (snprintf(qname, sizeof(qname), "slice_%s", qkv_names[i]),
				     qname), &t, 1, sl);
		n->opset = 9;
		gb_set_ints(n, "axes", zero, 1);
		gb_set_ints(n, "starts", &start, 1);
		gb_set_ints(n, "ends", &end, 1);
		n = gb_node(g, "Squeeze", (snprintf(qname, sizeof(qname), "squeeze_%s",
					       qkv_names[i]), qname), &sl, 1, h[i]);
		n->opset = 9;
		gb_set_ints(n, "axes", zero, 1);
	}
	in[0] = h[0];
	in[1] = scalar(g, "scale", 1.0f / sqrtf((float)d));
	gb_node(g, "Mul", "q_scale", in, 2, qs);
	gb_set_ints(gb_node(g, "Transpose", "k_transpose", &h[1], 1, ktv), "perm", perm_k, 4);
	in[0] = qs;
	in[1] = ktv;
	gb_node(g, "MatMul", "scores", in, 2, scores);
	gb_set_int(gb_node(g, "Softmax", "softmax", &scores, 1, prob), "axis", -1);
	in[0] = prob;
	in[1] = h[2];
	if (step2) {	/* v as every other column of a 10-wide head */
		const int64_t wide[4] = { 1, 4, 7, 2 * d }, st[1] = { 0 }, en[1] = { 2 * d };
		const int64_t ax[1] = { 3 }, sp[1] = { 2 };
		struct npu_value *vw = gb_value(g, "v_wide", 4, wide), *vs = gb_value(g, "v_step", 4, h4);
		struct npu_value *cin[2] = { h[2], h[2] }, *sin[5];

		n = gb_node(g, "Concat", "v_twice", cin, 2, vw);
		gb_set_int(n, "axis", 3);
		sin[0] = vw;
		sin[1] = i64_const(g, "st", st, 1);
		sin[2] = i64_const(g, "en", en, 1);
		sin[3] = i64_const(g, "ax", ax, 1);
		sin[4] = i64_const(g, "sp", sp, 1);
		gb_node(g, "Slice", "v_step2", sin, 5, vs);
		in[1] = vs;
	}
	gb_node(g, "MatMul", "context", in, 2, ctx);
	gb_set_ints(gb_node(g, "Transpose", "merge_heads", &ctx, 1, ctxt), "perm", perm_c, 4);
	memcpy(shape, x_d, sizeof(x_d));
	in[0] = ctxt;
	in[1] = i64_const(g, "shape3", shape, 3);
	gb_node(g, "Reshape", "merge", in, 2, flat);
	in[0] = flat;
	in[1] = gb_weights(g, "wo", 2, wo, -wr, wr);
	gb_node(g, "MatMul", "out_proj", in, 2, y);
	g->outputs = malloc(sizeof(*g->outputs));
	g->outputs[0] = y;
	g->num_outputs = 1;
	y->is_graph_output = true;
	return g;
}

/*
 * d = 5: v is transposed for MATMUL by a MATMUL with the identity; d = 70
 * (> 64): by strided DMA.
 */
static void run_attention(int64_t d)
{
	struct npu_graph *ref, *g, *g2;
	struct npu_compile_options o;
	struct npu_device *dev = open_sim();
	struct npu_compiled *c = NULL, *c2 = NULL;
	struct npu_error err = { 0 };
	struct npu_qdq_table qdq = { 0 };
	struct npu_npub *f = NULL;
	struct npu_tensor *x;
	float want[7 * 4 * 70], got[7 * 4 * 70], again[7 * 4 * 70];
	char path[] = "/tmp/npub-attn-XXXXXX";
	size_t i, batched = 0, size;
	double dot = 0, n1 = 0, n2 = 0, range = 0, worst = 0;
	uint8_t *bytes;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	gb_seed = 23;
	ref = build_attention(false, d);
	gb_seed = 23;
	g = build_attention(false, d);
	gb_seed = 23;
	g2 = build_attention(false, d);
	gb_seed = 5;
	x = npu_tensor_create(NPU_DTYPE_FLOAT, &g->inputs[0]->shape);
	for (i = 0; i < (size_t)(7 * 4 * d); i++)
		((float *)x->data)[i] = gb_uniform(-1.5f, 1.5f);
	assert_int_equal(npu_graph_sort(ref, &err), NPU_OK);
	if (npu_graph_infer(ref, true, &err) != NPU_OK)
		fail_msg("infer: %s", err.msg);
	run_graph(ref, x, want);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &x;
	o.num_calib_sets = 1;
	o.keep_small_segments = true;
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	for (i = 0; i < c->num_records; i++) {
		print_message("# %-14s %-10s %s (%s)\n", c->records[i].node, c->records[i].op_type,
			      c->records[i].placement == NPU_PLACE_NPU ? "npu" : "cpu",
			      c->records[i].reason);
		assert_int_equal(c->records[i].placement, NPU_PLACE_NPU);
	}
	assert_int_equal(c->num_segments, 1);
	/*
	 * Scores and context: one MATMUL per head each, B from the arena;
	 * the scores' B is k itself ([n][k]): k's Transpose left no copy.
	 */
	for (i = 0; i < c->segments[0]->prog.num_lops; i++) {
		const struct npu_lop *l = &c->segments[0]->prog.lops[i];

		assert_string_not_equal(l->name, "k_transpose");
		if (l->kind == NPU_LOP_MATMUL && l->matmul.batch) {
			assert_int_equal(l->matmul.batch, 4);
			assert_null(l->matmul.weight);
			assert_int_equal(l->matmul.b_nk, !strcmp(l->name, "scores"));
			batched++;
		}
	}
	assert_int_equal(batched, 2);
	run_graph(g, x, got);
	for (i = 0; i < (size_t)(7 * 4 * d); i++) {
		dot += (double)want[i] * got[i];
		n1 += (double)want[i] * want[i];
		n2 += (double)got[i] * got[i];
		range = fmax(range, fabs(want[i]));
		worst = fmax(worst, fabs(want[i] - got[i]));
	}
	print_message("# attention (head dim %lld) int8 on sim vs fp32: cosine %.5f, max error %.4f of range %.3f\n",
		      (long long)d, dot / sqrt(n1 * n2), worst, range);
	assert_true(dot / sqrt(n1 * n2) > 0.99);
	assert_true(worst < 0.1 * range);

	/*
	 * The quantization report reads the row-major rank-4 acts as such:
	 * the host emulation agrees with the device, and each attention op
	 * alone is close to fp32 (read as NHWC, the scores look like noise).
	 */
	{
		struct npu_qr qr = { 0 };
		size_t seen = 0;

		if (npu_quant_report_build(ref, g, c, &o, 1, &qr, &err) != NPU_OK)
			fail_msg("quant report: %s", err.msg);
		assert_true(qr.compared > 0);
		assert_int_equal(qr.mismatches, 0);
		for (i = 0; i < qr.count; i++) {
			const struct npu_qr_layer *ly = &qr.layers[i];

			if (strcmp(ly->node, "scores") && strcmp(ly->node, "softmax") &&
			    strcmp(ly->node, "context"))
				continue;
			print_message("# %s: local cosine %.5f\n", ly->node,
				      npu_err_cosine(&ly->local));
			assert_true(npu_err_cosine(&ly->local) > 0.99);
			seen++;
		}
		assert_int_equal(seen, 3);
		npu_quant_report_clear(&qr);
	}

	/* The batched MATMUL survives a .npub round trip bit for bit. */
	if (npu_npub_save(path, &(struct npu_npub_source){ "m", 1, NULL }, g, c, &err) != NPU_OK)
		fail_msg("save: %s", err.msg);
	bytes = read_all(path, &size);
	if (npu_npub_open(bytes, size, path, &f, &err) != NPU_OK)
		fail_msg("open: %s", err.msg);
	/* A finished file: its own graph, no import and no pass. */
	npu_graph_destroy(g2);
	g2 = npu_npub_take_graph(f);
	assert_non_null(g2);
	if (npu_npub_instantiate(f, g2, dev, false, &c2, &err) != NPU_OK)
		fail_msg("instantiate: %s", err.msg);
	assert_int_equal(c2->num_segments, 1);
	run_graph(g2, x, again);
	assert_memory_equal(got, again, (size_t)(7 * 4 * d) * sizeof(float));

	npu_npub_close(f);
	npu_qdq_table_free(&qdq);
	free(bytes);
	unlink(path);
	npu_compiled_free(c2);
	npu_compiled_free(c);
	npu_graph_destroy(g2);
	npu_graph_destroy(g);
	npu_graph_destroy(ref);
	npu_tensor_destroy(x);
	npu_device_close(dev);
}

static void test_attention_block_runs_as_one_segment(void **state)
{
	(void)state;
	run_attention(5);
	run_attention(70);
}

/* A Slice with step 2 stays on the CPU and says why; the rest still runs. */
static void test_strided_slice_stays_on_cpu_with_reason(void **state)
{
	struct npu_graph *g;
	struct npu_compile_options o;
	struct npu_device *dev = open_sim();
	struct npu_compiled *c = NULL;
	struct npu_error err = { 0 };
	struct npu_tensor *x;
	size_t i, found = 0;

	(void)state;
	gb_seed = 23;
	g = build_attention(true, 5);
	gb_seed = 5;
	x = npu_tensor_create(NPU_DTYPE_FLOAT, &g->inputs[0]->shape);
	for (i = 0; i < 7 * 20; i++)
		((float *)x->data)[i] = gb_uniform(-1.5f, 1.5f);
	npu_compile_options_init(&o);
	o.runner = &npu_exec_graph_runner;
	o.device = dev;
	o.calib_inputs = &x;
	o.num_calib_sets = 1;
	o.keep_small_segments = true;
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	if (npu_compile_graph(g, &o, &c, &err) != NPU_OK)
		fail_msg("compile: %s", err.msg);
	for (i = 0; i < c->num_records; i++) {
		if (strcmp(c->records[i].node, "v_step2"))
			continue;
		print_message("# %s: %s\n", c->records[i].node, c->records[i].reason);
		assert_int_equal(c->records[i].placement, NPU_PLACE_CPU);
		assert_non_null(strstr(c->records[i].reason, "step 2 on axis 3"));
		found++;
	}
	assert_int_equal(found, 1);
	npu_compiled_free(c);
	npu_graph_destroy(g);
	npu_tensor_destroy(x);
	npu_device_close(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cnn_int8_on_sim_matches_fp32),
		cmocka_unit_test(test_npub_round_trip_is_bit_identical),
		cmocka_unit_test(test_codegen_options_parse),
		cmocka_unit_test(test_malformed_npub_is_rejected_with_a_reason),
		cmocka_unit_test(test_concurrent_contexts_on_threads_agree),
		cmocka_unit_test(test_cpu_work_overlaps_an_npu_segment),
		cmocka_unit_test(test_pointwise_chain_becomes_one_lut),
		cmocka_unit_test(test_lut_input_range_drops_the_flat_part),
		cmocka_unit_test(test_pointwise_chain_with_escaping_value_is_kept),
		cmocka_unit_test(test_conv_transpose_and_resize_on_sim_match_fp32),
		cmocka_unit_test(test_concat_split_and_big_global_pool_on_sim_match_fp32),
		cmocka_unit_test(test_cpu_node_between_segments_reports_the_split),
		cmocka_unit_test(test_transposes_by_dma_match_fp32),
		cmocka_unit_test(test_layernorm_pattern_runs_as_layernorm),
		cmocka_unit_test(test_reductions_run_as_reduce),
		cmocka_unit_test(test_attention_block_runs_as_one_segment),
		cmocka_unit_test(test_strided_slice_stays_on_cpu_with_reason),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
