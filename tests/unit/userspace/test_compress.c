// SPDX-License-Identifier: MIT
/*
 * npu compress (issue 35): pruning with reconstruction on models built
 * here: a residual CNN with a depthwise conv, an SE block and a Concat
 * (channel groups), and small bad inputs. Each test asserts what the
 * pruned model is: valid, smaller, close to the original, with every
 * reconstructed layer better than plain magnitude pruning.
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

#include "graph/npu_ir.h"
#include "npu/npu.h"
#include "onnx/npu_onnx.h"
#include "onnx/onnx.pb-c.h"
#include "runtime/npu_npy.h"

/* ---- A small ModelProto builder (heap, freed with the model) ---- */

#define MB_MAX 64

struct mb {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto op, *opp[1];
	Onnx__NodeProto *nodes[MB_MAX];
	Onnx__TensorProto *inits[MB_MAX];
	Onnx__ValueInfoProto *ins[2], *outs[2];
	void *owned[MB_MAX * 16];
	size_t n_owned;
	uint64_t rng;
};

static void *own(struct mb *b, size_t size)
{
	void *p = calloc(1, size);

	assert_non_null(p);
	assert_true(b->n_owned < MB_MAX * 16);
	b->owned[b->n_owned++] = p;
	return p;
}

static float rnd(struct mb *b)
{
	b->rng = b->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(b->rng >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}

static void mb_init(struct mb *b, uint64_t seed)
{
	memset(b, 0, sizeof(*b));
	b->rng = seed;
	onnx__model_proto__init(&b->m);
	onnx__graph_proto__init(&b->g);
	onnx__operator_set_id_proto__init(&b->op);
	b->m.has_ir_version = 1;
	b->m.ir_version = 8;
	b->op.domain = "";
	b->op.has_version = 1;
	b->op.version = 13;
	b->opp[0] = &b->op;
	b->m.n_opset_import = 1;
	b->m.opset_import = b->opp;
	b->m.graph = &b->g;
	b->g.name = "g";
	b->g.node = b->nodes;
	b->g.initializer = b->inits;
	b->g.input = b->ins;
	b->g.output = b->outs;
}

static Onnx__ValueInfoProto *vi(struct mb *b, const char *name, int rank, const int64_t *d)
{
	Onnx__ValueInfoProto *v = own(b, sizeof(*v));
	Onnx__TypeProto *t = own(b, sizeof(*t));
	Onnx__TypeProto__Tensor *tt = own(b, sizeof(*tt));
	Onnx__TensorShapeProto *s = own(b, sizeof(*s));
	Onnx__TensorShapeProto__Dimension **dp = own(b, sizeof(*dp) * 4);
	int i;

	onnx__value_info_proto__init(v);
	onnx__type_proto__init(t);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(s);
	v->name = (char *)name;
	v->type = t;
	t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	t->tensor_type = tt;
	tt->has_elem_type = 1;
	tt->elem_type = 1;
	tt->shape = s;
	s->n_dim = (size_t)rank;
	s->dim = dp;
	for (i = 0; i < rank; i++) {
		dp[i] = own(b, sizeof(**dp));
		onnx__tensor_shape_proto__dimension__init(dp[i]);
		dp[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		dp[i]->dim_value = d[i];
	}
	return v;
}

/* A float initializer of random values times 'scale' (+ 'offset'). */
static void init(struct mb *b, const char *name, int rank, const int64_t *d, float scale,
		 float offset)
{
	Onnx__TensorProto *t = own(b, sizeof(*t));
	int64_t n = 1, *dims = own(b, sizeof(int64_t) * 4);
	float *f;
	int i;

	onnx__tensor_proto__init(t);
	for (i = 0; i < rank; i++)
		n *= (dims[i] = d[i]);
	f = own(b, sizeof(float) * (size_t)n);
	for (i = 0; i < n; i++)
		f[i] = offset + scale * rnd(b);
	t->name = (char *)name;
	t->has_data_type = 1;
	t->data_type = 1;
	t->n_dims = (size_t)rank;
	t->dims = dims;
	t->n_float_data = (size_t)n;
	t->float_data = f;
	b->inits[b->g.n_initializer++] = t;
}

static Onnx__NodeProto *node(struct mb *b, const char *op, const char *name, const char *out,
			     const char *in0, const char *in1, const char *in2)
{
	Onnx__NodeProto *n = own(b, sizeof(*n));
	char **in = own(b, sizeof(char *) * 5), **o = own(b, sizeof(char *));

	onnx__node_proto__init(n);
	n->op_type = (char *)op;
	n->name = (char *)name;
	in[0] = (char *)in0;
	in[1] = (char *)in1;
	in[2] = (char *)in2;
	n->n_input = in2 ? 3 : in1 ? 2 : 1;
	n->input = in;
	o[0] = (char *)out;
	n->n_output = 1;
	n->output = o;
	n->attribute = own(b, sizeof(Onnx__AttributeProto *) * 4);
	b->nodes[b->g.n_node++] = n;
	return n;
}

static void attr_int(struct mb *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = own(b, sizeof(*a));

	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	a->has_i = 1;
	a->i = v;
	n->attribute[n->n_attribute++] = a;
}

static void attr_ints(struct mb *b, Onnx__NodeProto *n, const char *name, int count, int64_t v)
{
	Onnx__AttributeProto *a = own(b, sizeof(*a));
	int64_t *x = own(b, sizeof(int64_t) * (size_t)count);
	int i;

	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	for (i = 0; i < count; i++)
		x[i] = v;
	a->n_ints = (size_t)count;
	a->ints = x;
	n->attribute[n->n_attribute++] = a;
}

/* Conv name: weights name_w [co][ci/g][k][k], bias name_b, 'same' pads. */
static void conv(struct mb *b, const char *name, const char *x, const char *y, int64_t ci,
		 int64_t co, int64_t k, int64_t group)
{
	char *w = own(b, 64), *bias = own(b, 64);
	int64_t wd[4] = { co, ci / group, k, k }, bd[1] = { co };
	Onnx__NodeProto *n;

	snprintf(w, 64, "%s_w", name);
	snprintf(bias, 64, "%s_b", name);
	init(b, w, 4, wd, 1.0f / sqrtf((float)(ci / group * k * k)), 0);
	init(b, bias, 1, bd, 0.1f, 0);
	n = node(b, "Conv", name, y, x, w, bias);
	attr_ints(b, n, "kernel_shape", 2, k);
	attr_ints(b, n, "pads", 4, k / 2);
	if (group > 1)
		attr_int(b, n, "group", group);
}

static void *mb_pack(struct mb *b, size_t *size)
{
	void *buf;
	size_t i;

	*size = onnx__model_proto__get_packed_size(&b->m);
	buf = malloc(*size);
	assert_non_null(buf);
	onnx__model_proto__pack(&b->m, buf);
	for (i = 0; i < b->n_owned; i++)
		free(b->owned[i]);
	b->n_owned = 0;
	return buf;
}

#define C 16
#define HW 12

/*
 * x[1,8,12,12] -> conv1 (8->16) -> BN -> Relu = a
 *   a -> conv2 (16->16) -> Relu = r2;  s = a + r2            (residual)
 *   s -> depthwise 3x3 -> Relu = d
 *   SE: d -> GAP -> se1 (16->4) -> Relu -> se2 (4->16) -> Sigmoid; e = d * sig
 *   a -> conv3 (16->8) = t;  cat = Concat(e, t)               (offsets)
 *   cat -> head (24->8, 1x1) = y                              (output)
 */
static void *residual_cnn(size_t *size)
{
	static struct mb b;
	int64_t xd[4] = { 1, 8, HW, HW }, yd[4] = { 1, 8, HW, HW }, cd[1] = { C };
	Onnx__NodeProto *n;

	mb_init(&b, 7);
	b.ins[b.g.n_input++] = vi(&b, "x", 4, xd);
	b.outs[b.g.n_output++] = vi(&b, "y", 4, yd);
	conv(&b, "conv1", "x", "c1", 8, C, 3, 1);
	init(&b, "bn_s", 1, cd, 0.3f, 1.0f);
	init(&b, "bn_b", 1, cd, 0.2f, 0);
	init(&b, "bn_m", 1, cd, 0.1f, 0);
	init(&b, "bn_v", 1, cd, 0.2f, 1.0f);
	n = node(&b, "BatchNormalization", "bn", "bn1", "c1", "bn_s", "bn_b");
	n->input[3] = "bn_m";
	n->input[4] = "bn_v";
	n->n_input = 5;
	node(&b, "Relu", "relu1", "a", "bn1", NULL, NULL);
	conv(&b, "conv2", "a", "c2", C, C, 3, 1);
	node(&b, "Relu", "relu2", "r2", "c2", NULL, NULL);
	node(&b, "Add", "residual", "s", "a", "r2", NULL);
	conv(&b, "dw", "s", "dwo", C, C, 3, C);
	node(&b, "Relu", "relu3", "d", "dwo", NULL, NULL);
	node(&b, "GlobalAveragePool", "gap", "g", "d", NULL, NULL);
	conv(&b, "se1", "g", "se1o", C, 4, 1, 1);
	node(&b, "Relu", "relu4", "se1r", "se1o", NULL, NULL);
	conv(&b, "se2", "se1r", "se2o", 4, C, 1, 1);
	node(&b, "Sigmoid", "sig", "sg", "se2o", NULL, NULL);
	node(&b, "Mul", "se_scale", "e", "d", "sg", NULL);
	conv(&b, "conv3", "a", "t", C, 8, 3, 1);
	n = node(&b, "Concat", "cat", "cat", "e", "t", NULL);
	attr_int(&b, n, "axis", 1);
	conv(&b, "head", "cat", "y", C + 8, 8, 1, 1);
	return mb_pack(&b, size);
}

/* x[1,K] -> Gemm (K->O, transB) = y: one input row per sample. */
static void *gemm_model(size_t *size, int64_t k, int64_t o)
{
	static struct mb b;
	int64_t xd[2] = { 1, k }, yd[2] = { 1, o }, wd[2] = { o, k }, bd[1] = { o };
	Onnx__NodeProto *n;

	mb_init(&b, 11);
	b.ins[b.g.n_input++] = vi(&b, "x", 2, xd);
	b.outs[b.g.n_output++] = vi(&b, "y", 2, yd);
	init(&b, "w", 2, wd, 0.3f, 0);
	init(&b, "bias", 1, bd, 0.1f, 0);
	n = node(&b, "Gemm", "fc", "y", "x", "w", "bias");
	attr_int(&b, n, "transB", 1);
	return mb_pack(&b, size);
}

static void *relu_model(size_t *size)
{
	static struct mb b;
	int64_t d[4] = { 1, 8, HW, HW };

	mb_init(&b, 3);
	b.ins[b.g.n_input++] = vi(&b, "x", 4, d);
	b.outs[b.g.n_output++] = vi(&b, "y", 4, d);
	node(&b, "Relu", "r", "y", "x", NULL, NULL);
	return mb_pack(&b, size);
}

/* 'count' samples of shape d (rank 4 or 2) in a fresh directory. */
static char *sample_dir(const char *tag, int count, int rank, const int64_t *d, uint64_t seed)
{
	static char dirs[8][256];
	static int next;
	char *dir = dirs[next++ % 8], path[320];
	struct npu_shape s = { .rank = rank };
	struct npu_error err = { 0 };
	int k;
	int64_t i;

	snprintf(dir, 256, "/tmp/npu-test-compress-%d-%s", (int)getpid(), tag);
	mkdir(dir, 0700);
	memcpy(s.dims, d, sizeof(int64_t) * (size_t)rank);
	for (k = 0; k < count; k++) {
		struct npu_tensor *t = npu_tensor_create(NPU_DTYPE_FLOAT, &s);

		assert_non_null(t);
		for (i = 0; i < npu_shape_numel(&s); i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			((float *)t->data)[i] = (float)((double)(seed >> 11) / 9007199254740992.0) * 2 - 1;
		}
		snprintf(path, sizeof(path), "%s/s%03d.npy", dir, k);
		assert_int_equal(npu_npy_write(path, t, &err), NPU_OK);
		npu_tensor_destroy(t);
	}
	return dir;
}

static void remove_dir(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* The model's output on input x (CPU path). */
static double run_cosine(const void *a, size_t asz, const void *b, size_t bsz, const int64_t *d)
{
	struct npu_engine *eng;
	struct npu_model *m[2];
	struct npu_session *s[2];
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 }, out[2];
	float x[8 * HW * HW];
	double xy = 0, xx = 0, yy = 0;
	size_t i, n;
	int k;

	for (i = 0; i < 8 * HW * HW; i++)
		x[i] = sinf((float)i * 0.37f);
	memcpy(in.dims, d, sizeof(int64_t) * 4);
	in.data = x;
	in.nbytes = sizeof(x);
	assert_int_equal(npu_engine_create(NULL, &eng), NPU_OK);
	assert_int_equal(npu_model_load_memory(eng, a, asz, "orig", NULL, &m[0]), NPU_OK);
	assert_int_equal(npu_model_load_memory(eng, b, bsz, "pruned", NULL, &m[1]), NPU_OK);
	for (k = 0; k < 2; k++) {
		assert_int_equal(npu_session_create(m[k], NULL, &s[k]), NPU_OK);
		assert_int_equal(npu_session_run(s[k], &in, 1), NPU_OK);
		assert_int_equal(npu_session_output(s[k], 0, &out[k]), NPU_OK);
	}
	assert_int_equal(out[0].nbytes, out[1].nbytes);
	n = out[0].nbytes / sizeof(float);
	for (i = 0; i < n; i++) {
		double p = ((const float *)out[0].data)[i], q = ((const float *)out[1].data)[i];

		xy += p * q;
		xx += p * p;
		yy += q * q;
	}
	for (k = 0; k < 2; k++) {
		npu_session_destroy(s[k]);
		npu_model_destroy(m[k]);
	}
	npu_engine_destroy(eng);
	return xy / sqrt(xx * yy);
}

static const struct npu_compress_layer *layer(const struct npu_compress_result *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->num_layers; i++)
		if (strstr(r->layers[i].node, name))
			return &r->layers[i];
	return NULL;
}

/* Every pruned, re-solved layer reproduces its outputs better than the mask alone. */
static void assert_reconstruction_helps(const struct npu_compress_result *r)
{
	size_t i, checked = 0;

	for (i = 0; i < r->num_layers; i++) {
		const struct npu_compress_layer *l = &r->layers[i];

		if (getenv("NPU_TEST_VERBOSE"))
			printf("%-24s %-12s %.3f %8.2f %8.2f %s\n", l->node, l->pattern, l->sparsity,
			       l->sqnr_magnitude_db, l->sqnr_db, l->note);

		if (strstr(l->note, "did not help"))
			fail_msg("%s: %s", l->node, l->note);
		/* > 60 dB: nothing to repair (a layer that lost output channels only,
		 * fed by the model's input): float noise, not a pruning error */
		if (!strcmp(l->pattern, "skipped") || !strcmp(l->pattern, "dense") ||
		    !isfinite(l->sqnr_magnitude_db) || l->sqnr_magnitude_db > 60 || *l->note)
			continue;
		if (!(l->sqnr_db > l->sqnr_magnitude_db))
			fail_msg("%s: SQNR %.2f dB after reconstruction, %.2f dB plain magnitude",
				 l->node, l->sqnr_db, l->sqnr_magnitude_db);
		checked++;
	}
	assert_true(checked > 0);
}

static const int64_t cnn_in[4] = { 1, 8, HW, HW };

static void test_channel_pruning_keeps_graph_valid_and_smaller(void **state)
{
	struct npu_compress_options o;
	struct npu_compress_result *r;
	struct npu_error err = { 0 };
	struct npu_graph *g;
	size_t size;
	void *model = residual_cnn(&size);
	char *cal = sample_dir("ch", 24, 4, cnn_in, 1);
	const struct npu_compress_layer *l;
	const struct npu_value *w;

	(void)state;
	npu_compress_options_init(&o);
	o.method = NPU_PRUNE_CHANNELS;
	o.sparsity = 0.25;
	o.calib_dir = cal;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r), NPU_OK);
	/* Smaller: fewer MACs, and the weights really lost channels. */
	assert_true(r->macs_after < r->macs_before);
	assert_true(npu_onnx_import(r->onnx, r->onnx_size, "pruned", &g, &err) == NPU_OK);
	w = npu_graph_find_value(g, "conv1_w");
	assert_true(w && w->constant && w->constant->shape.dims[0] == C - C / 4);
	w = npu_graph_find_value(g, "conv2_w");	/* the residual group: same channels both sides */
	assert_true(w && w->constant->shape.dims[0] == C - C / 4 && w->constant->shape.dims[1] == C - C / 4);
	w = npu_graph_find_value(g, "dw_w");	/* the depthwise conv lost them too */
	assert_true(w && w->constant->shape.dims[0] == C - C / 4);
	w = npu_graph_find_value(g, "se1_w");	/* SE: the squeeze reads fewer channels */
	assert_true(w && w->constant->shape.dims[1] == C - C / 4);
	w = npu_graph_find_value(g, "se2_w");	/* ... and the excitation makes fewer */
	assert_true(w && w->constant->shape.dims[0] == C - C / 4);
	w = npu_graph_find_value(g, "head_w");	/* Concat: both parts shrank at their offsets */
	assert_true(w && w->constant->shape.dims[0] == 8 && w->constant->shape.dims[1] == (C - C / 4) + 6);
	w = npu_graph_find_value(g, "bn_v");
	assert_true(w && npu_shape_numel(&w->constant->shape) == C - C / 4);
	npu_graph_destroy(g);
	/* The head makes the model's output: refused, with the reason. */
	assert_true(r->num_notes >= 1);
	assert_non_null(strstr(r->notes[0], "model output"));
	l = layer(r, "head");
	assert_non_null(l);
	assert_string_equal(l->pattern, "channels");
	assert_reconstruction_helps(r);
	/* It runs on our CPU path and stays close to the original. */
	assert_int_equal(r->sequential, 1);	/* the sequential pass raised the cosine */
	assert_true(r->cosine > 0.9);
	assert_true(run_cosine(model, size, r->onnx, r->onnx_size, cnn_in) > 0.9);
	npu_compress_result_free(r);
	free(model);
	remove_dir(cal);
}

static void test_nm_2_4_has_two_nonzeros_per_group(void **state)
{
	struct npu_compress_options o;
	struct npu_compress_result *r;
	struct npu_error err = { 0 };
	struct npu_graph *g;
	size_t size, i;
	void *model = residual_cnn(&size);
	char *cal = sample_dir("nm", 24, 4, cnn_in, 2);
	const char *convs[] = { "conv2_w", "conv3_w", "se1_w", "head_w" };

	(void)state;
	npu_compress_options_init(&o);
	o.method = NPU_PRUNE_NM;
	o.calib_dir = cal;
	/* conv1 reads 8 channels, se2 4: all divisible by 4 */
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r), NPU_OK);
	assert_int_equal(npu_onnx_import(r->onnx, r->onnx_size, "nm", &g, &err), NPU_OK);
	for (i = 0; i < sizeof(convs) / sizeof(convs[0]); i++) {
		const struct npu_value *w = npu_graph_find_value(g, convs[i]);
		const float *d;
		int64_t O, I, sp, oc, ic, p, k;

		assert_true(w && w->constant);
		d = w->constant->data;
		O = w->constant->shape.dims[0];
		I = w->constant->shape.dims[1];
		sp = w->constant->shape.dims[2] * w->constant->shape.dims[3];
		for (oc = 0; oc < O; oc++)
			for (p = 0; p < sp; p++)
				for (ic = 0; ic < I; ic += 4) {
					int nz = 0;

					for (k = 0; k < 4; k++)
						nz += d[(oc * I + ic + k) * sp + p] != 0;
					if (nz > 2)
						fail_msg("%s: %d nonzeros in the group at out %lld, in %lld",
							 convs[i], nz, (long long)oc, (long long)ic);
				}
	}
	npu_graph_destroy(g);
	assert_reconstruction_helps(r);
	assert_true(r->weight_bytes_after < r->weight_bytes_before);
	assert_non_null(layer(r, "dw"));
	assert_string_equal(layer(r, "dw")->pattern, "skipped");	/* depthwise: one input each */
	npu_compress_result_free(r);
	free(model);
	remove_dir(cal);
}

static void test_magnitude_reconstruction_beats_magnitude(void **state)
{
	struct npu_compress_options o;
	struct npu_compress_result *r, *plain;
	size_t size;
	void *model = residual_cnn(&size);
	char *cal = sample_dir("mag", 24, 4, cnn_in, 3);

	(void)state;
	npu_compress_options_init(&o);
	o.sparsity = 0.6;
	o.calib_dir = cal;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r), NPU_OK);
	assert_reconstruction_helps(r);
	assert_true(fabs(layer(r, "conv2")->sparsity - 0.6) < 0.01);
	o.no_reconstruct = 1;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &plain), NPU_OK);
	/* The whole model too: closer to the original than plain magnitude. */
	assert_true(r->cosine > plain->cosine);
	npu_compress_result_free(r);
	npu_compress_result_free(plain);
	free(model);
	remove_dir(cal);
}

static void test_accuracy_target_met_on_held_out_set(void **state)
{
	struct npu_compress_options o;
	struct npu_compress_result *r;
	size_t size;
	void *model = residual_cnn(&size);
	char *cal = sample_dir("tcal", 24, 4, cnn_in, 4), *ev = sample_dir("tev", 6, 4, cnn_in, 5);

	(void)state;
	npu_compress_options_init(&o);
	o.sparsity = 0.9;
	o.calib_dir = cal;
	o.eval_dir = ev;
	o.accuracy_target = 0.995;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r), NPU_OK);
	assert_true(r->cosine >= 0.995);
	assert_int_equal(r->eval_samples, 6);
	assert_true(r->macs_after < r->macs_before);
	npu_compress_result_free(r);
	/* A target no setting meets is an error, not a model. */
	o.accuracy_target = 1.0;
	assert_int_not_equal(npu_compress_memory(model, size, "cnn", &o, &r), NPU_OK);
	assert_null(r);
	assert_non_null(strstr(npu_last_error(), "accuracy target"));
	free(model);
	remove_dir(cal);
	remove_dir(ev);
}

static void expect_error(const void *model, size_t size, const struct npu_compress_options *o,
			 const char *what)
{
	struct npu_compress_result *r = (void *)1;

	assert_int_not_equal(npu_compress_memory(model, size, "bad", o, &r), NPU_OK);
	assert_null(r);
	if (!strstr(npu_last_error(), what))
		fail_msg("expected '%s' in: %s", what, npu_last_error());
}

static void test_bad_inputs_are_clear_errors(void **state)
{
	struct npu_compress_options o;
	size_t size, gsize, rsize;
	void *model = residual_cnn(&size), *gemm, *relu = relu_model(&rsize);
	int64_t gd[2] = { 1, 32 };
	char *cal = sample_dir("bad", 2, 4, cnn_in, 6), *gcal = sample_dir("gbad", 1, 2, gd, 7);
	int64_t g6d[2] = { 1, 6 };
	char *cal24 = sample_dir("bad24", 24, 4, cnn_in, 8), *g6 = sample_dir("g6", 2, 2, g6d, 9);
	struct npu_compress_result *r;

	(void)state;
	npu_compress_options_init(&o);
	o.calib_dir = cal;
	o.sparsity = 1.0;
	expect_error(model, size, &o, "outside [0, 1)");
	o.sparsity = -0.1;
	expect_error(model, size, &o, "outside [0, 1)");
	o.sparsity = 0.5;
	/* 3:8 along conv1's 8 inputs is fine, se2's 4 are not: skipped, named */
	o.method = NPU_PRUNE_NM;
	o.nm_n = 3;
	o.nm_m = 8;
	o.calib_dir = cal24;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r), NPU_OK);
	assert_string_equal(layer(r, "se2")->pattern, "skipped");
	assert_non_null(strstr(layer(r, "se2")->note, "N:M does not divide"));
	assert_string_equal(layer(r, "conv1")->pattern, "N:M");
	npu_compress_result_free(r);
	o.calib_dir = cal;
	/* ... and a model where M divides no layer is an error naming it */
	gemm = gemm_model(&gsize, 6, 8);
	o.calib_dir = g6;
	expect_error(gemm, gsize, &o, "'fc' (Gemm): N:M 3:8 does not divide its 6 input channels");
	o.calib_dir = cal;
	free(gemm);
	o.method = NPU_PRUNE_MAGNITUDE;
	expect_error(relu, rsize, &o, "no prunable layer");
	o.calib_dir = "/nonexistent/calib";
	expect_error(model, size, &o, "/nonexistent/calib: not a directory");
	o.calib_dir = NULL;
	expect_error(model, size, &o, "calibration samples");
	/* One sample of a Gemm: one input row for 33 unknowns per output. */
	gemm = gemm_model(&gsize, 32, 8);
	o.calib_dir = gcal;
	expect_error(gemm, gsize, &o, "too few calibration samples for reconstruction");
	expect_error(gemm, gsize, &o, "'fc' (Gemm)");
	free(gemm);
	free(model);
	free(relu);
	remove_dir(cal);
	remove_dir(cal24);
	remove_dir(g6);
	remove_dir(gcal);
}

/* A model on sim: loaded from a file (a .npub) or from ONNX bytes compiled
 * with calib_dir at cnn_in; its output on the sin input, copied. */
static float *run_sim(struct npu_engine *eng, const char *path, const void *onnx, size_t size,
		      const char *calib_dir, size_t *nbytes)
{
	struct npu_model_options mo;
	struct npu_model *m;
	struct npu_plan *p;
	struct npu_session *s;
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 }, out;
	static float x[8 * HW * HW];
	float *copy;
	size_t i;

	for (i = 0; i < 8 * HW * HW; i++)
		x[i] = sinf((float)i * 0.37f);
	memcpy(in.dims, cnn_in, sizeof(cnn_in));
	in.data = x;
	in.nbytes = sizeof(x);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_dir = calib_dir;
	if (path)
		assert_int_equal(npu_model_load_file(eng, path, &mo, &m), NPU_OK);
	else
		assert_int_equal(npu_model_load_memory(eng, onnx, size, "pruned", &mo, &m), NPU_OK);
	assert_int_equal(npu_model_get_plan(m, &in, 1, &p), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	assert_int_equal(npu_session_run_plan(s, p, &in, 1), NPU_OK);
	assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
	copy = malloc(out.nbytes);
	assert_non_null(copy);
	memcpy(copy, out.data, out.nbytes);
	*nbytes = out.nbytes;
	npu_session_destroy(s);
	npu_plan_release(p);
	npu_model_destroy(m);
	return copy;
}

/*
 * Prune and quantize in one step: the .npub loads and runs on sim, and
 * its outputs are bit-identical to compiling the pruned ONNX separately
 * with the same calibration samples and options.
 */
static void test_prune_and_quantize_in_one_step(void **state)
{
	struct npu_compress_options o;
	struct npu_compress_result *r, *fp;
	struct npu_engine *eng;
	size_t size, n1, n2, i;
	void *model = residual_cnn(&size);
	char *cal = sample_dir("qcal", 24, 4, cnn_in, 11), *ev = sample_dir("qev", 6, 4, cnn_in, 12);
	char npub[256];
	float *a, *b;
	struct stat sb;
	int differ = 0;

	(void)state;
	snprintf(npub, sizeof(npub), "/tmp/npu-test-compress-%d.npub", (int)getpid());
	npu_compress_options_init(&o);
	o.method = NPU_PRUNE_CHANNELS;
	o.sparsity = 0.25;
	o.calib_dir = cal;
	o.eval_dir = ev;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &fp), NPU_OK);
	assert_true(fp->quantized_cosine == 0);	/* no quantize: no quantized model */
	o.quantize = "int8";
	o.npub_path = npub;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r), NPU_OK);
	assert_int_equal(stat(npub, &sb), 0);
	assert_true(sb.st_size > 0);
	if (getenv("NPU_TEST_VERBOSE"))
		printf("fp32 pruned cosine %.6f (%.6f without quantize), int8 %.6f, sequential %d / %d\n", r->cosine, fp->cosine, r->quantized_cosine, r->sequential, fp->sequential);
	/* The pruning is the same as without quantize (the sequential pass
	 * is judged in fp32 both ways); int8 moves the cosine a little. */
	assert_int_equal(r->sequential, fp->sequential);
	assert_int_equal(r->onnx_size, fp->onnx_size);
	assert_memory_equal(r->onnx, fp->onnx, r->onnx_size);
	assert_true(r->quantized_cosine > 0.8 && r->quantized_cosine <= 1.0);
	assert_true(fabs(r->quantized_cosine - r->cosine) < 0.02);
	assert_int_equal(npu_engine_create(NULL, &eng), NPU_OK);
	a = run_sim(eng, npub, NULL, 0, NULL, &n1);
	b = run_sim(eng, NULL, r->onnx, r->onnx_size, cal, &n2);
	assert_int_equal(n1, n2);
	for (i = 0; i < n1 / sizeof(float); i++)
		differ += memcmp(&a[i], &b[i], sizeof(float)) != 0;
	if (differ)
		fail_msg("%d of %zu outputs of the one-step .npub differ from compiling the pruned .onnx",
			 differ, n1 / sizeof(float));
	free(a);
	free(b);
	npu_engine_destroy(eng);
	npu_compress_result_free(r);
	npu_compress_result_free(fp);
	unlink(npub);
	free(model);
	remove_dir(cal);
	remove_dir(ev);
}

/* --accuracy-target with quantize judges the int8 model against the fp32 original. */
static void test_quantized_accuracy_target(void **state)
{
	struct npu_compress_options o;
	struct npu_compress_result *r;
	size_t size;
	void *model = residual_cnn(&size);
	char *cal = sample_dir("qtcal", 24, 4, cnn_in, 13), *ev = sample_dir("qtev", 6, 4, cnn_in, 14);
	char npub[256];

	(void)state;
	snprintf(npub, sizeof(npub), "/tmp/npu-test-compress-t-%d.npub", (int)getpid());
	npu_compress_options_init(&o);
	o.sparsity = 0.9;
	o.calib_dir = cal;
	o.eval_dir = ev;
	o.accuracy_target = 0.98;
	o.quantize = "int8";
	o.npub_path = npub;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r), NPU_OK);
	if (getenv("NPU_TEST_VERBOSE"))
		printf("target 0.98: fp32 pruned cosine %.6f, int8 %.6f, MACs %llu -> %llu\n",
		       r->cosine, r->quantized_cosine, (unsigned long long)r->macs_before,
		       (unsigned long long)r->macs_after);
	assert_true(r->quantized_cosine >= 0.98);
	assert_true(r->macs_after < r->macs_before);
	npu_compress_result_free(r);
	unlink(npub);
	free(model);
	remove_dir(cal);
	remove_dir(ev);
}

/* int16 (the 16x8 mode) and mixed precision go through the same compile. */
static void test_int16_and_mixed(void **state)
{
	struct npu_compress_options o;
	struct npu_compress_result *r8, *r16, *rm;
	size_t size;
	void *model = residual_cnn(&size);
	char *cal = sample_dir("q16cal", 24, 4, cnn_in, 16), *ev = sample_dir("q16ev", 6, 4, cnn_in, 17);
	char npub[256];
	struct stat sb;

	(void)state;
	snprintf(npub, sizeof(npub), "/tmp/npu-test-compress-16-%d.npub", (int)getpid());
	npu_compress_options_init(&o);
	o.method = NPU_PRUNE_NM;
	o.calib_dir = cal;
	o.eval_dir = ev;
	o.npub_path = npub;
	o.quantize = "int8";
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r8), NPU_OK);
	o.quantize = "int16";
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &r16), NPU_OK);
	assert_int_equal(stat(npub, &sb), 0);
	o.quantize = "mixed";
	o.accuracy_target = 0.9;
	assert_int_equal(npu_compress_memory(model, size, "cnn", &o, &rm), NPU_OK);
	if (getenv("NPU_TEST_VERBOSE"))
		printf("2:4: fp32 %.6f, int8 %.6f, int16 %.6f; mixed at 0.9: %.6f\n", r8->cosine,
		       r8->quantized_cosine, r16->quantized_cosine, rm->quantized_cosine);
	/* Against the pruned fp32 model's cosine, int16 moves it less than
	 * int8 may (here pruning, not quantization, is most of the error). */
	assert_true(fabs(r16->quantized_cosine - r16->cosine) < 0.005);
	assert_true(fabs(r8->quantized_cosine - r8->cosine) < 0.02);
	assert_true(rm->quantized_cosine >= 0.9);
	npu_compress_result_free(r8);
	npu_compress_result_free(r16);
	npu_compress_result_free(rm);
	unlink(npub);
	free(model);
	remove_dir(cal);
	remove_dir(ev);
}

static void test_bad_quantize_options(void **state)
{
	struct npu_compress_options o;
	size_t size;
	void *model = residual_cnn(&size);
	char *cal = sample_dir("qbad", 24, 4, cnn_in, 15);

	(void)state;
	npu_compress_options_init(&o);
	o.calib_dir = cal;
	o.quantize = "int4";
	o.npub_path = "/tmp/npu-test-compress-never.npub";
	expect_error(model, size, &o, "npu_compress_options.quantize 'int4': expected int8, int16 or mixed");
	o.quantize = "int8";
	o.npub_path = NULL;
	expect_error(model, size, &o, "npu_compress_options.npub_path");
	o.quantize = "mixed";
	o.npub_path = "/tmp/npu-test-compress-never.npub";
	expect_error(model, size, &o, "'mixed' needs accuracy_target");
	o.quantize = "int8";
	o.device = "cpu";
	expect_error(model, size, &o, "npu_compress_options.device 'cpu'");
	o.device = NULL;
	o.calib_dir = NULL;
	expect_error(model, size, &o, "calibration samples");
	free(model);
	remove_dir(cal);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_channel_pruning_keeps_graph_valid_and_smaller),
		cmocka_unit_test(test_nm_2_4_has_two_nonzeros_per_group),
		cmocka_unit_test(test_magnitude_reconstruction_beats_magnitude),
		cmocka_unit_test(test_accuracy_target_met_on_held_out_set),
		cmocka_unit_test(test_bad_inputs_are_clear_errors),
		cmocka_unit_test(test_prune_and_quantize_in_one_step),
		cmocka_unit_test(test_quantized_accuracy_target),
		cmocka_unit_test(test_int16_and_mixed),
		cmocka_unit_test(test_bad_quantize_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
