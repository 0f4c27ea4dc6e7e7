// SPDX-License-Identifier: MIT
/*
 * NPU segments inside subgraphs (issue 17): a Loop whose body is a conv
 * chain and an If with one conv branch, compiled for the simulator. The
 * control-flow node stays on the CPU, the body's convs run on the NPU each
 * iteration (placement records, segments that ran), outputs match the
 * fp32 CPU run within int8 tolerance, a branch calibration never took
 * stays fp32 with the reason, the .npub keeps the body's segments, and a
 * body reading a missing outer value is still an error naming the node.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "npu/npu.h"
#include "onnx_builder.h"

enum { FLOAT = 1, INT64 = 7, BOOL = 9 };
enum { C = 8, H = 16, W = 16, N_CONV = 3 };

static struct npu_engine *engine;

/* ---- Model building ---- */

static void untyped_input(struct tb_model *m, const char *name)
{
	Onnx__ValueInfoProto *vi = &m->vi[m->n_vi++];

	onnx__value_info_proto__init(vi);
	vi->name = (char *)name;
	m->in_ptr[m->graph.n_input++] = vi;
}

static void untyped_output(struct tb_model *m, const char *name)
{
	Onnx__ValueInfoProto *vi = &m->vi[m->n_vi++];

	onnx__value_info_proto__init(vi);
	vi->name = (char *)name;
	m->out_ptr[m->graph.n_output++] = vi;
}

/* A bool scalar graph input "name". */
static void bool_input(struct tb_model *m, const char *name)
{
	Onnx__ValueInfoProto *vi = tb_vi(m, name, 0, NULL);

	vi->type->tensor_type->elem_type = BOOL;
	m->in_ptr[m->graph.n_input++] = vi;
}

/* Up to two attributes per node: graphs (If / Loop) or Conv's pads. */
struct node_attrs {
	Onnx__AttributeProto a[2];
	Onnx__AttributeProto *p[2];
};

static struct node_attrs attrs[TB_MAX * 4];
static size_t n_attrs;

static Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, struct node_attrs *na,
				      const char *name)
{
	size_t k = n->n_attribute;

	onnx__attribute_proto__init(&na->a[k]);
	na->a[k].name = (char *)name;
	na->a[k].has_type = 1;
	na->p[k] = &na->a[k];
	n->attribute = na->p;
	n->n_attribute = k + 1;
	return &na->a[k];
}

static void graph_attr(Onnx__NodeProto *n, struct node_attrs *na, const char *name,
		       Onnx__GraphProto *g)
{
	Onnx__AttributeProto *a = add_attr(n, na, name);

	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	a->g = g;
}

static int64_t pads1[4] = { 1, 1, 1, 1 };

/* Weights: seeded uniform, scaled so the activations keep their size. */
static float weights[N_CONV * 2][C * C * 9], biases[N_CONV * 2][C];
static int64_t w_dims[4] = { C, C, 3, 3 }, b_dims[1] = { C };
static int64_t scalar_dims[1];
static int64_t trip[1] = { 3 };
static int32_t true_value[1] = { 1 };
static char names[N_CONV * 2][6][16];

static void fill_weights(void)
{
	uint64_t s = 12345;
	size_t k, i;

	for (k = 0; k < N_CONV * 2; k++) {
		for (i = 0; i < C * C * 9; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			weights[k][i] = ((float)(s >> 40) / (float)(1 << 24) - 0.5f) * 0.55f;
		}
		for (i = 0; i < C; i++)
			biases[k][i] = 0.05f * (float)((int)i - C / 2);
	}
}

/*
 * Conv(3x3, pad 1) + Relu, N_CONV times, from 'in' to 'out' in model m;
 * weights set 'set' (N_CONV of them from 'set * N_CONV').
 */
static void conv_chain(struct tb_model *m, int set, const char *in, const char *out)
{
	const char *x = in;
	int k;

	for (k = 0; k < N_CONV; k++) {
		int j = set * N_CONV + k;
		char *w = names[j][0], *b = names[j][1], *cv = names[j][2];
		char *cname = names[j][4], *rname = names[j][5];
		const char *y = k == N_CONV - 1 ? out : names[j][3];
		Onnx__TensorProto *t;
		Onnx__NodeProto *conv;
		Onnx__AttributeProto *a;

		snprintf(w, 16, "w%d", j);
		snprintf(b, 16, "b%d", j);
		snprintf(cv, 16, "cv%d", j);
		snprintf(names[j][3], 16, "y%d", j);
		snprintf(cname, 16, "conv%d", j);
		snprintf(rname, 16, "relu%d", j);
		t = tb_init_tensor(m, w, FLOAT, 4, w_dims);
		t->n_float_data = C * C * 9;
		t->float_data = weights[j];
		t = tb_init_tensor(m, b, FLOAT, 1, b_dims);
		t->n_float_data = C;
		t->float_data = biases[j];
		conv = tb_node(m, "Conv", cname, cv, 3, x, w);
		conv->input[2] = b;
		a = add_attr(conv, &attrs[n_attrs++], "pads");
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		a->n_ints = 4;
		a->ints = pads1;
		tb_node(m, "Relu", rname, y, 1, cv, NULL);
		x = y;
	}
}

static const int64_t x_dims[4] = { 1, C, H, W };
static struct tb_model top, body, then_b, else_b;

/*
 * y = Loop(M = 3, cond = true, s0 = x), body: s' = conv chain (s); a
 * missing outer value when 'bad_capture' (the body reads "nope").
 */
static void build_loop(bool bad_capture)
{
	Onnx__TensorProto *t;
	Onnx__NodeProto *loop;

	n_attrs = 0;
	fill_weights();
	tb_init(&top, 13);
	tb_input(&top, "x", 4, x_dims);
	tb_output(&top, "y", 4, x_dims);
	t = tb_init_tensor(&top, "M", INT64, 0, scalar_dims);
	t->n_int64_data = 1;
	t->int64_data = trip;
	t = tb_init_tensor(&top, "cond", BOOL, 0, scalar_dims);
	t->n_int32_data = 1;
	t->int32_data = true_value;
	loop = tb_node(&top, "Loop", "loop", "y", 3, "M", "cond");
	loop->input[2] = "x";

	tb_init(&body, 13);
	untyped_input(&body, "iter");
	untyped_input(&body, "cond_in");
	untyped_input(&body, "s_in");
	untyped_output(&body, "cond_out");
	untyped_output(&body, "s_out");
	tb_node(&body, "Identity", "keep_going", "cond_out", 1, "cond_in", NULL);
	conv_chain(&body, 0, bad_capture ? "nope" : "s_in", "s_out");
	graph_attr(loop, &attrs[n_attrs++], "body", &body.graph);
}

/* y = If(c, then: Neg(x), else: conv chain (x)); x is a capture. */
static void build_if(void)
{
	Onnx__NodeProto *iff;
	struct node_attrs *na;

	n_attrs = 0;
	fill_weights();
	tb_init(&top, 13);
	tb_input(&top, "x", 4, x_dims);
	bool_input(&top, "c");
	tb_output(&top, "y", 4, x_dims);
	iff = tb_node(&top, "If", "pick", "y", 1, "c", NULL);

	tb_init(&then_b, 13);
	untyped_output(&then_b, "t");
	tb_node(&then_b, "Neg", "negate", "t", 1, "x", NULL);
	tb_init(&else_b, 13);
	untyped_output(&else_b, "e");
	conv_chain(&else_b, 1, "x", "e");
	na = &attrs[n_attrs++];
	graph_attr(iff, na, "then_branch", &then_b.graph);
	graph_attr(iff, na, "else_branch", &else_b.graph);
}

/*
 * Nested: y = Loop(M = 2, cond = true, s0 = x), body: s' = If(cond_in,
 * then: conv chain (s_in), else: Identity(s_in)); the branch reads the
 * body's own input (a capture two levels down from the Loop).
 */
static void build_nested(void)
{
	static int64_t two[1] = { 2 };
	Onnx__TensorProto *t;
	Onnx__NodeProto *loop, *iff;
	struct node_attrs *na;

	n_attrs = 0;
	fill_weights();
	tb_init(&top, 13);
	tb_input(&top, "x", 4, x_dims);
	tb_output(&top, "y", 4, x_dims);
	t = tb_init_tensor(&top, "M", INT64, 0, scalar_dims);
	t->n_int64_data = 1;
	t->int64_data = two;
	t = tb_init_tensor(&top, "cond", BOOL, 0, scalar_dims);
	t->n_int32_data = 1;
	t->int32_data = true_value;
	loop = tb_node(&top, "Loop", "loop", "y", 3, "M", "cond");
	loop->input[2] = "x";

	tb_init(&body, 13);
	untyped_input(&body, "iter");
	untyped_input(&body, "cond_in");
	untyped_input(&body, "s_in");
	untyped_output(&body, "cond_out");
	untyped_output(&body, "s_out");
	tb_node(&body, "Identity", "keep_going", "cond_out", 1, "cond_in", NULL);
	iff = tb_node(&body, "If", "pick", "s_out", 1, "cond_in", NULL);

	tb_init(&then_b, 13);
	untyped_output(&then_b, "t");
	conv_chain(&then_b, 1, "s_in", "t");
	tb_init(&else_b, 13);
	untyped_output(&else_b, "e");
	tb_node(&else_b, "Identity", "same", "e", 1, "s_in", NULL);
	na = &attrs[n_attrs++];
	graph_attr(iff, na, "then_branch", &then_b.graph);
	graph_attr(iff, na, "else_branch", &else_b.graph);
	graph_attr(loop, &attrs[n_attrs++], "body", &body.graph);
}

/* ---- Running ---- */

static float input_x[C * H * W];

static void fill_input(void)
{
	uint64_t s = 777;
	size_t i;

	for (i = 0; i < C * H * W; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		input_x[i] = (float)(s >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
	}
}

static const char *model_name = "model";	/* its file under NPU_SUBGRAPH_SAVE_DIR */

static struct npu_model *load(const char *device)
{
	struct npu_model_options mo;
	struct npu_model *m = NULL;
	size_t size;
	void *buf = tb_pack(&top, &size);
	const char *save = getenv("NPU_SUBGRAPH_SAVE_DIR");	/* for npu compile / bench */

	if (save && !strcmp(device, "cpu")) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s.onnx", save, model_name);
		f = fopen(path, "wb");
		if (f) {
			fwrite(buf, 1, size, f);
			fclose(f);
		}
	}

	if (!engine)
		assert_int_equal(npu_engine_create(NULL, &engine), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;
	mo.calib_samples = 4;
	mo.profile = 1;		/* per-op cycles, as npu bench --per-op */
	if (npu_model_load_memory(engine, buf, size, "sub.onnx", &mo, &m) != NPU_OK)
		fail_msg("load on %s: %s", device, npu_last_error());
	free(buf);
	return m;
}

/* Run with x (and c when the model has it); y copied to 'out'. */
static struct npu_session *run(struct npu_model *m, int cond, float *out)
{
	uint8_t c = (uint8_t)cond;
	struct npu_host_tensor in[2] = {
		{ .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4, .dims = { 1, C, H, W },
		  .data = input_x, .nbytes = sizeof(input_x) },
		{ .name = "c", .dtype = NPU_TYPE_BOOL, .rank = 0, .data = &c, .nbytes = 1 },
	};
	struct npu_session *s = NULL;
	struct npu_host_tensor y;

	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	if (npu_session_run(s, in, cond < 0 ? 1 : 2) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_int_equal(y.nbytes, sizeof(input_x));
	memcpy(out, y.data, y.nbytes);
	return s;
}

/* int8 through a chain: the error stays a few percent of the range. */
static void assert_close(const float *got, const float *want, const char *what)
{
	double max_ref = 0, max_err = 0, dot = 0, ng = 0, nw = 0;
	size_t i;

	for (i = 0; i < C * H * W; i++) {
		max_ref = fmax(max_ref, fabs(want[i]));
		max_err = fmax(max_err, fabs(got[i] - want[i]));
		dot += (double)got[i] * want[i];
		ng += (double)got[i] * got[i];
		nw += (double)want[i] * want[i];
	}
	print_message("# %s: max |ref| %.4f, max error %.4f, cosine %.6f\n", what, max_ref,
		      max_err, dot / sqrt(ng * nw + 1e-30));
	assert_true(max_ref > 0.1);	/* not a degenerate all-zero output */
	assert_true(max_err <= 0.08 * max_ref);
	assert_true(dot / sqrt(ng * nw) > 0.995);
}

/* The plan's placement records, printed, and how many body convs are on the NPU. */
static size_t npu_convs_in(struct npu_model *m, const char *prefix, const char *cpu_reason)
{
	struct npu_host_tensor shapes[2] = {
		{ .name = "x", .rank = 4, .dims = { 1, C, H, W } },
		{ .name = "c", .rank = 0 },
	};
	struct npu_plan *p = NULL;
	size_t i, on = 0, cpu_why = 0;

	assert_int_equal(npu_model_get_plan(m, shapes, npu_model_num_inputs(m), &p), NPU_OK);
	for (i = 0; i < npu_plan_num_placements(p); i++) {
		struct npu_node_placement np;

		assert_int_equal(npu_plan_placement(p, i, &np), NPU_OK);
		print_message("#   %-24s %-9s %s seg %d: %s\n", np.node, np.op_type,
			      np.on_npu ? "NPU" : "CPU", np.segment, np.reason);
		if (!strncmp(np.node, prefix, strlen(prefix)) && !strcmp(np.op_type, "Conv") &&
		    np.on_npu && np.segment >= 0)
			on++;
		if (cpu_reason && !np.on_npu && strstr(np.reason, cpu_reason))
			cpu_why++;
		if (!strcmp(np.op_type, "Loop") || !strcmp(np.op_type, "If")) {
			assert_false(np.on_npu);
			assert_non_null(strstr(np.reason, "control flow runs on the CPU"));
		}
	}
	if (cpu_reason)
		assert_true(cpu_why > 0);
	npu_plan_release(p);
	return on;
}

/*
 * The session ran segments whose first node is in the body, on the
 * device, 'iterations' times in the run: per-run MACs count every one.
 */
static void assert_body_segments_ran(struct npu_session *s, const char *prefix,
				     uint64_t iterations)
{
	struct npu_npu_stats st;
	size_t i, body = 0, ops = 0;

	npu_npu_stats_init(&st);
	assert_int_equal(npu_session_npu_stats(s, &st), NPU_OK);
	assert_true(st.segments >= 1);
	assert_true(st.npu_macs > 0);
	for (i = 0; i < st.segments; i++) {
		struct npu_segment_stats ss = { .struct_size = sizeof(ss) };

		assert_int_equal(npu_session_npu_segment(s, i, &ss), NPU_OK);
		print_message("#   segment %zu: %zu nodes (%s .. %s), %llu cycles\n", i, ss.nodes,
			      ss.first_node, ss.last_node, (unsigned long long)ss.last_cycles);
		if (!strncmp(ss.first_node, prefix, strlen(prefix))) {
			body++;
			assert_true(ss.last_cycles > 0);	/* it ran on the device */
			assert_int_equal(ss.macs, iterations * N_CONV * C * H * W * C * 9);
		}
	}
	assert_true(body >= 1);
	/* What npu bench --per-op lists: the body's convs with device cycles. */
	for (i = 0; i < npu_session_npu_num_ops(s); i++) {
		struct npu_op_stats os = { .struct_size = sizeof(os) };

		assert_int_equal(npu_session_npu_op(s, i, &os), NPU_OK);
		if (!strcmp(os.kind, "conv")) {
			ops++;
			assert_true(os.cycles > 0);
			assert_true(os.macs > 0);
		}
	}
	assert_int_equal(ops, N_CONV);
}

static void test_loop_body_convs_run_on_the_npu(void **state)
{
	static float cpu[C * H * W], npu[C * H * W], again[C * H * W];
	struct npu_model *mc, *mn;
	struct npu_session *sc, *sn;

	(void)state;
	fill_input();
	build_loop(false);
	model_name = "loop_conv_body";
	mc = load("cpu");
	mn = load("sim");
	assert_int_equal(npu_convs_in(mn, "loop/body/", NULL), N_CONV);
	sc = run(mc, -1, cpu);
	sn = run(mn, -1, npu);
	assert_close(npu, cpu, "Loop body on the NPU vs fp32");
	assert_body_segments_ran(sn, "loop/body/", 3);
	/* A second run reuses the compiled body: same bits. */
	npu_session_destroy(sn);
	sn = run(mn, -1, again);
	assert_memory_equal(npu, again, sizeof(npu));
	npu_session_destroy(sc);
	npu_session_destroy(sn);
	npu_model_destroy(mc);
	npu_model_destroy(mn);
}

/*
 * npu_plan_quant_report covers segments inside a Loop body (each sample's
 * first iteration): the body's convs get finite, sane SQNR, and the host's
 * int8 emulation reproduces what the device computed there.
 */
static void test_quant_report_covers_body_segments(void **state)
{
	struct npu_host_tensor shapes[1] = { { .name = "x", .rank = 4, .dims = { 1, C, H, W } } };
	struct npu_quant_report *r = NULL;
	struct npu_plan *p = NULL;
	struct npu_model *mn;
	size_t i, body = 0;

	(void)state;
	build_loop(false);
	model_name = "loop_conv_body";
	mn = load("sim");
	assert_int_equal(npu_model_get_plan(mn, shapes, 1, &p), NPU_OK);
	if (npu_plan_quant_report(p, 2, &r) != NPU_OK)
		fail_msg("quant report: %s", npu_last_error());
	print_message("# %zu layers, %zu samples, %llu compared, %llu mismatches\n", r->num_layers,
		      r->samples, (unsigned long long)r->compared,
		      (unsigned long long)r->mismatches);
	for (i = 0; i < r->num_layers; i++) {
		const struct npu_quant_layer *l = &r->layers[i];

		print_message("#   %-28s %-6s seg %d local %6.2f dB e2e %6.2f dB cos %.5f\n",
			      l->node, l->op_type, l->segment, l->local_sqnr_db, l->e2e_sqnr_db,
			      l->e2e_cosine);
		if (strncmp(l->node, "conv", 4))	/* the body's convs: conv0 .. */
			continue;
		body++;
		assert_true(isfinite(l->local_sqnr_db) && l->local_sqnr_db > 20);
		assert_true(isfinite(l->e2e_sqnr_db) && l->e2e_sqnr_db > 15);
		assert_true(l->e2e_cosine > 0.99);
	}
	assert_int_equal(body, N_CONV);	/* the only segment is the body's */
	assert_int_equal(r->samples, 2);
	assert_true(r->compared > 0);
	assert_int_equal(r->mismatches, 0);
	npu_quant_report_free(r);
	npu_plan_release(p);
	npu_model_destroy(mn);
}

static void test_if_with_one_npu_branch(void **state)
{
	static float cpu[C * H * W], npu[C * H * W], neg[C * H * W];
	struct npu_model *mc, *mn;
	struct npu_session *sc, *sn;
	size_t i;

	(void)state;
	fill_input();
	build_if();
	model_name = "if_conv_branch";
	mc = load("cpu");
	mn = load("sim");
	/*
	 * Random calibration feeds c = false: else_branch (the convs) ran and
	 * is compiled; then_branch never ran and stays fp32, saying so.
	 */
	assert_int_equal(npu_convs_in(mn, "pick/else_branch/", "never ran during calibration"),
			 N_CONV);
	sc = run(mc, 0, cpu);
	sn = run(mn, 0, npu);
	assert_close(npu, cpu, "If else_branch on the NPU vs fp32");
	assert_body_segments_ran(sn, "pick/else_branch/", 1);
	npu_session_destroy(sn);
	sn = run(mn, 1, neg);	/* the CPU branch, exact */
	for (i = 0; i < C * H * W; i++)
		assert_true(neg[i] == -input_x[i]);
	npu_session_destroy(sc);
	npu_session_destroy(sn);
	npu_model_destroy(mc);
	npu_model_destroy(mn);
}

static void test_if_inside_a_loop_body(void **state)
{
	static float cpu[C * H * W], npu[C * H * W], again[C * H * W];
	struct npu_host_tensor shapes[1] = { { .name = "x", .rank = 4, .dims = { 1, C, H, W } } };
	const char *prefix = "loop/body/pick/then_branch/";
	char path[] = "/tmp/npu-nested-XXXXXX";
	struct npu_model_options mo;
	struct npu_model *mc, *mn, *mf = NULL;
	struct npu_session *sc, *sn, *sf;
	struct npu_plan *p = NULL;
	int fd;

	(void)state;
	fill_input();
	build_nested();
	model_name = "if_in_loop_body";
	mc = load("cpu");
	mn = load("sim");
	assert_int_equal(npu_convs_in(mn, prefix, NULL), N_CONV);
	sc = run(mc, -1, cpu);
	sn = run(mn, -1, npu);
	assert_close(npu, cpu, "If in a Loop body on the NPU vs fp32");
	assert_body_segments_ran(sn, prefix, 2);
	/* Two levels of path in the .npub. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(npu_model_get_plan(mn, shapes, 1, &p), NPU_OK);
	if (npu_plan_save_compiled(p, path) != NPU_OK)
		fail_msg("save: %s", npu_last_error());
	npu_plan_release(p);
	npu_model_options_init(&mo);
	mo.device = "sim";
	if (npu_model_load_file(engine, path, &mo, &mf) != NPU_OK)
		fail_msg("load .npub: %s", npu_last_error());
	sf = run(mf, -1, again);
	assert_memory_equal(npu, again, sizeof(npu));
	unlink(path);
	npu_session_destroy(sc);
	npu_session_destroy(sn);
	npu_session_destroy(sf);
	npu_model_destroy(mc);
	npu_model_destroy(mn);
	npu_model_destroy(mf);
}

/* The .npub keeps the body's segments (format version 2) and runs the same. */
static void test_npub_keeps_body_segments(void **state)
{
	static float npu[C * H * W], again[C * H * W];
	struct npu_host_tensor shapes[1] = { { .name = "x", .rank = 4, .dims = { 1, C, H, W } } };
	char path[] = "/tmp/npu-subgraph-XXXXXX";
	struct npu_model_options mo;
	struct npu_model *mn, *mf = NULL;
	struct npu_session *sn, *sf;
	struct npu_plan *p = NULL;
	uint16_t major = 0;
	uint8_t *bytes;
	long size;
	FILE *f;
	int fd;

	(void)state;
	fill_input();
	build_loop(false);
	mn = load("sim");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(npu_model_get_plan(mn, shapes, 1, &p), NPU_OK);
	if (npu_plan_save_compiled(p, path) != NPU_OK)
		fail_msg("save: %s", npu_last_error());
	npu_plan_release(p);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.profile = 1;
	if (npu_model_load_file(engine, path, &mo, &mf) != NPU_OK)
		fail_msg("load .npub: %s", npu_last_error());
	sn = run(mn, -1, npu);
	sf = run(mf, -1, again);
	assert_memory_equal(npu, again, sizeof(npu));
	assert_body_segments_ran(sf, "loop/body/", 3);
	npu_session_destroy(sn);
	npu_session_destroy(sf);
	npu_model_destroy(mf);

	/* Version 3 on disk; a version this library does not know is refused by number. */
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	bytes = malloc((size_t)size);
	assert_int_equal(fread(bytes, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	memcpy(&major, bytes + 4, 2);
	assert_int_equal(major, 3);
	major = 4;
	memcpy(bytes + 4, &major, 2);
	mf = NULL;
	assert_int_not_equal(npu_model_load_memory(engine, bytes, (size_t)size, "v4.npub", &mo, &mf),
			     NPU_OK);
	print_message("# %s\n", npu_last_error());
	assert_non_null(strstr(npu_last_error(), "version 4 is not supported"));
	free(bytes);
	unlink(path);
	npu_model_destroy(mn);
}

/* Compiling for the NPU does not hide a body's missing outer value. */
static void test_missing_outer_value_is_named_on_npu(void **state)
{
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
				      .dims = { 1, C, H, W }, .data = input_x,
				      .nbytes = sizeof(input_x) };
	struct npu_model_options mo;
	struct npu_model *m = NULL;
	struct npu_session *s = NULL;
	size_t size;
	void *buf;
	npu_status st;

	(void)state;
	build_loop(true);
	buf = tb_pack(&top, &size);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	st = npu_model_load_memory(engine, buf, size, "bad.onnx", &mo, &m);
	if (st == NPU_OK) {
		assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
		st = npu_session_run(s, &in, 1);
	}
	print_message("# %s\n", npu_last_error());
	assert_int_not_equal(st, NPU_OK);
	assert_non_null(strstr(npu_last_error(), "node 'loop' (Loop)"));
	assert_non_null(strstr(npu_last_error(), "'nope'"));
	npu_session_destroy(s);
	npu_model_destroy(m);
	free(buf);
}

static int teardown(void **state)
{
	(void)state;
	npu_engine_destroy(engine);
	engine = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loop_body_convs_run_on_the_npu),
		cmocka_unit_test(test_quant_report_covers_body_segments),
		cmocka_unit_test(test_if_with_one_npu_branch),
		cmocka_unit_test(test_if_inside_a_loop_body),
		cmocka_unit_test(test_npub_keeps_body_segments),
		cmocka_unit_test(test_missing_outer_value_is_named_on_npu),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
