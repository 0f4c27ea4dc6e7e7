// SPDX-License-Identifier: MIT
/*
 * custom-op: an application's own ONNX op, run by libnpu-user.
 *
 * The model (written by this program, see write_model()) is
 *
 *	x[1,4,8,8] -> Conv 1x1 (8) -> com.example.ScaledClip(scale, limit)
 *	           -> Conv 1x1 (4) -> z[1,4,8,8]
 *
 * ScaledClip is not an ONNX op: y = clip(x * scale, -limit, limit), and a
 * second output 'clipped' that lists the flat indices it clipped, as long
 * as the data says. This program registers its kernel on the engine
 *
 *	npu_engine_register_custom_op(engine, &op)
 *
 * then loads the model on the CPU and on the NPU simulator, where the two
 * convolutions run int8 on the NPU and ScaledClip on the CPU between them,
 * and prints both results side by side.
 *
 *	custom-op [--device cpu|sim|both] [--model-out FILE.onnx]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <npu/npu.h>

#define C_IN 4
#define C_MID 8
#define HW 8

/* ---- The kernel ---------------------------------------------------------------- */

struct scaled_clip {
	float scale, limit;
};

/* Output types and shapes: y like x; 'clipped' int64, 1-D, length known at run time. */
static npu_status clip_infer(void *user, struct npu_infer_context *ctx)
{
	struct npu_tensor_info x;
	const int64_t data_dependent = -1;

	(void)user;
	if (npu_infer_input(ctx, 0, &x) != NPU_OK)
		return NPU_ERR_INVALID_ARG;
	if (x.dtype != NPU_TYPE_FLOAT) {
		npu_infer_set_error(ctx, "input must be float, not %s", npu_data_type_name(x.dtype));
		return NPU_ERR_INVALID_ARG;
	}
	npu_infer_set_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims);
	if (npu_infer_num_outputs(ctx) > 1)
		npu_infer_set_output(ctx, 1, NPU_TYPE_INT64, 1, &data_dependent);
	return NPU_OK;
}

/* Once per node: the attributes, read and checked here rather than every run. */
static npu_status clip_create(void *user, const struct npu_op_attrs *attrs, void **state)
{
	struct scaled_clip *s = calloc(1, sizeof(*s));

	(void)user;
	if (!s)
		return NPU_ERR_NO_MEMORY;
	if (npu_op_attr_float(attrs, "scale", &s->scale) != NPU_OK)
		s->scale = 1.0f;
	if (npu_op_attr_float(attrs, "limit", &s->limit) != NPU_OK || !(s->limit > 0)) {
		free(s);
		return NPU_ERR_INVALID_ARG;
	}
	*state = s;
	return NPU_OK;
}

static void clip_destroy(void *user, void *state)
{
	(void)user;
	free(state);
}

static npu_status clip_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	const struct scaled_clip *s = state;
	struct npu_host_tensor x;
	const float *in;
	float *y;
	int64_t *clipped, count = 0;
	size_t n, i, k = 0;
	npu_status st;

	(void)user;
	st = npu_kernel_input(ctx, 0, &x);
	if (st != NPU_OK)
		return st;
	in = x.data;
	n = x.nbytes / sizeof(float);
	st = npu_kernel_output(ctx, 0, NPU_TYPE_FLOAT, x.rank, x.dims, (void **)&y);
	if (st != NPU_OK)
		return st;
	for (i = 0; i < n; i++) {
		float v = in[i] * s->scale;

		if (isnan(v)) {
			npu_kernel_set_error(ctx, "element %zu is NaN", i);
			return NPU_ERR_INVALID_ARG;
		}
		count += fabsf(v) > s->limit;
		y[i] = v > s->limit ? s->limit : v < -s->limit ? -s->limit : v;
	}
	if (npu_kernel_num_outputs(ctx) < 2)
		return NPU_OK;
	/* A data-dependent size: allocated with the dims the data needs. */
	st = npu_kernel_output(ctx, 1, NPU_TYPE_INT64, 1, &count, (void **)&clipped);
	if (st != NPU_OK)
		return st;
	for (i = 0; i < n; i++)
		if (fabsf(in[i] * s->scale) > s->limit)
			clipped[k++] = (int64_t)i;
	return NPU_OK;
}

/* ---- The model: ONNX protobuf, written by hand (no protobuf library) ----------- */

struct pb {
	uint8_t *d;
	size_t n, cap;
};

static void pb_bytes(struct pb *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = (b->n + n) * 2 + 64;
		uint8_t *d = realloc(b->d, cap);

		if (!d) {
			fprintf(stderr, "custom-op: out of memory\n");
			exit(1);
		}
		b->d = d;
		b->cap = cap;
	}
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t c;

	do {
		c = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			c |= 0x80;
		pb_bytes(b, &c, 1);
	} while (v);
}

static void pb_int(struct pb *b, int field, int64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, (uint64_t)v);
}

static void pb_len(struct pb *b, int field, const void *p, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_bytes(b, p, n);
}

static void pb_str(struct pb *b, int field, const char *s)
{
	pb_len(b, field, s, strlen(s));
}

/* Append 'sub' as a nested message and free it. */
static void pb_msg(struct pb *b, int field, struct pb *sub)
{
	pb_len(b, field, sub->d, sub->n);
	free(sub->d);
	memset(sub, 0, sizeof(*sub));
}

static void pb_float(struct pb *b, int field, float f)
{
	uint8_t le[4];
	uint32_t u;

	memcpy(&u, &f, 4);
	le[0] = (uint8_t)u;
	le[1] = (uint8_t)(u >> 8);
	le[2] = (uint8_t)(u >> 16);
	le[3] = (uint8_t)(u >> 24);
	pb_varint(b, (uint64_t)field << 3 | 5);
	pb_bytes(b, le, 4);
}

/* ValueInfoProto: a tensor of 'elem' with dims (-1: symbolic "n"). */
static void value_info(struct pb *graph, int field, const char *name, int elem, int rank,
		       const int64_t *dims)
{
	struct pb vi = { 0 }, type = { 0 }, tensor = { 0 }, shape = { 0 }, dim = { 0 };
	int i;

	for (i = 0; i < rank; i++) {
		if (dims[i] >= 0)
			pb_int(&dim, 1, dims[i]);
		else
			pb_str(&dim, 2, "n");
		pb_msg(&shape, 1, &dim);
	}
	pb_int(&tensor, 1, elem);
	pb_msg(&tensor, 2, &shape);
	pb_msg(&type, 1, &tensor);
	pb_str(&vi, 1, name);
	pb_msg(&vi, 2, &type);
	pb_msg(graph, field, &vi);
}

/* A float initializer. */
static void initializer(struct pb *graph, const char *name, int rank, const int64_t *dims,
			const float *data, size_t n)
{
	struct pb t = { 0 };
	size_t i;

	for (i = 0; i < (size_t)rank; i++)
		pb_int(&t, 1, dims[i]);
	pb_int(&t, 2, 1);	/* FLOAT */
	for (i = 0; i < n; i++)
		pb_float(&t, 4, data[i]);
	pb_str(&t, 8, name);
	pb_msg(graph, 5, &t);
}

static void conv_node(struct pb *graph, const char *name, const char *x, const char *w,
		      const char *y)
{
	struct pb node = { 0 };

	pb_str(&node, 1, x);
	pb_str(&node, 1, w);
	pb_str(&node, 2, y);
	pb_str(&node, 3, name);
	pb_str(&node, 4, "Conv");
	pb_msg(graph, 1, &node);
}

static float w1[C_MID * C_IN], w2[C_IN * C_MID];

static void weights(void)
{
	int i;

	for (i = 0; i < C_MID * C_IN; i++) {
		w1[i] = (float)((i * 7) % 11 - 5) / 6.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
}

static void *write_model(size_t *size)
{
	static const int64_t xd[] = { 1, C_IN, HW, HW }, cd[] = { -1 };
	static const int64_t w1d[] = { C_MID, C_IN, 1, 1 }, w2d[] = { C_IN, C_MID, 1, 1 };
	struct pb model = { 0 }, graph = { 0 }, node = { 0 }, attr = { 0 }, opset = { 0 };

	weights();
	conv_node(&graph, "conv1", "x", "w1", "c1");
	pb_str(&node, 1, "c1");
	pb_str(&node, 2, "y");
	pb_str(&node, 2, "clipped");
	pb_str(&node, 3, "clip");
	pb_str(&node, 4, "ScaledClip");
	pb_str(&attr, 1, "scale");
	pb_float(&attr, 2, 1.5f);
	pb_int(&attr, 20, 1);	/* FLOAT */
	pb_msg(&node, 5, &attr);
	pb_str(&attr, 1, "limit");
	pb_float(&attr, 2, 0.7531f);
	pb_int(&attr, 20, 1);
	pb_msg(&node, 5, &attr);
	pb_str(&node, 7, "com.example");
	pb_msg(&graph, 1, &node);
	conv_node(&graph, "conv2", "y", "w2", "z");
	pb_str(&graph, 2, "custom-op-example");
	initializer(&graph, "w1", 4, w1d, w1, C_MID * C_IN);
	initializer(&graph, "w2", 4, w2d, w2, C_IN * C_MID);
	value_info(&graph, 11, "x", 1, 4, xd);
	value_info(&graph, 12, "z", 1, 4, xd);
	value_info(&graph, 12, "clipped", 7, 1, cd);
	pb_int(&model, 1, 8);	/* ir_version */
	pb_str(&opset, 1, "");
	pb_int(&opset, 2, 13);
	pb_msg(&model, 8, &opset);
	pb_str(&opset, 1, "com.example");
	pb_int(&opset, 2, 1);
	pb_msg(&model, 8, &opset);
	pb_msg(&model, 7, &graph);
	*size = model.n;
	return model.d;
}

/* ---- Running it ------------------------------------------------------------------ */

static int fail(const char *what)
{
	fprintf(stderr, "custom-op: %s: %s\n", what, npu_last_error());
	return 1;
}

/* Load on 'device', run once, print the outputs; z into 'z' for the comparison. */
static int run(struct npu_engine *engine, const char *device, const void *onnx, size_t size,
	       const float *x, float *z)
{
	struct npu_model_options mo;
	struct npu_model *model;
	struct npu_session *session;
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
				      .dims = { 1, C_IN, HW, HW }, .data = (void *)x,
				      .nbytes = C_IN * HW * HW * sizeof(float) };
	struct npu_host_tensor out_z, out_clipped;
	struct npu_npu_stats stats;
	const struct npu_plan *plan;
	struct npu_node_placement pl;
	size_t i;
	int rc = 0;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;		/* a demonstration: random calibration inputs */
	mo.keep_small_segments = 1;	/* this tiny model would otherwise stay on the CPU */
	if (npu_model_load_memory(engine, onnx, size, "custom-op.onnx", &mo, &model) != NPU_OK)
		return fail("load");
	if (npu_session_create(model, NULL, &session) != NPU_OK) {
		npu_model_destroy(model);
		return fail("session");
	}
	if (npu_session_run(session, &in, 1) != NPU_OK ||
	    npu_session_output(session, 0, &out_z) != NPU_OK) {
		rc = fail("run");
		goto out;
	}
	if (npu_session_output(session, 1, &out_clipped) != NPU_OK) {
		rc = fail("output");
		goto out;
	}
	memcpy(z, out_z.data, out_z.nbytes);
	printf("%s: z[0..3] = %.4f %.4f %.4f %.4f; ScaledClip clipped %lld of %d elements\n",
	       device, z[0], z[1], z[2], z[3], (long long)out_clipped.dims[0], C_MID * HW * HW);
	plan = npu_session_plan(session);
	for (i = 0; i < npu_plan_num_placements(plan); i++)
		if (npu_plan_placement(plan, i, &pl) == NPU_OK)
			printf("  %-6s %-10s %s: %s\n", pl.node, pl.op_type,
			       pl.on_npu ? "NPU" : "CPU", pl.reason);
	npu_npu_stats_init(&stats);
	if (!strcmp(device, "sim") && npu_session_npu_stats(session, &stats) == NPU_OK)
		printf("  %zu NPU segment(s), %llu modeled NPU cycles\n", stats.segments,
		       (unsigned long long)stats.last_cycles);
out:
	npu_session_destroy(session);
	npu_model_destroy(model);
	return rc;
}

int main(int argc, char **argv)
{
	const char *device = "both", *model_out = NULL;
	struct npu_engine *engine;
	struct npu_custom_op op;
	float x[C_IN * HW * HW], z_cpu[C_IN * HW * HW], z_sim[C_IN * HW * HW];
	double worst = 0, range = 0;
	size_t size, i;
	void *onnx;
	int a, rc = 0;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--device") && a + 1 < argc) {
			device = argv[++a];
		} else if (!strcmp(argv[a], "--model-out") && a + 1 < argc) {
			model_out = argv[++a];
		} else {
			fprintf(stderr, "usage: custom-op [--device cpu|sim|both] [--model-out FILE.onnx]\n");
			return 2;
		}
	}
	onnx = write_model(&size);
	if (model_out) {
		FILE *f = fopen(model_out, "wb");

		if (!f || fwrite(onnx, 1, size, f) != size || fclose(f)) {
			fprintf(stderr, "custom-op: cannot write %s\n", model_out);
			return 1;
		}
	}
	for (i = 0; i < C_IN * HW * HW; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	if (npu_engine_create(NULL, &engine) != NPU_OK)
		return fail("engine");
	npu_custom_op_init(&op);
	op.domain = "com.example";
	op.op_type = "ScaledClip";
	op.since_version = 1;
	op.min_inputs = op.max_inputs = 1;
	op.min_outputs = 1;
	op.max_outputs = 2;
	op.infer = clip_infer;
	op.create = clip_create;
	op.destroy = clip_destroy;
	op.compute = clip_compute;
	if (npu_engine_register_custom_op(engine, &op) != NPU_OK) {
		rc = fail("register ScaledClip");
		goto out;
	}
	if (strcmp(device, "sim"))
		rc |= run(engine, "cpu", onnx, size, x, z_cpu);
	if (strcmp(device, "cpu"))
		rc |= run(engine, "sim", onnx, size, x, z_sim);
	if (!rc && !strcmp(device, "both")) {
		for (i = 0; i < C_IN * HW * HW; i++) {
			worst = fmax(worst, fabs((double)z_sim[i] - z_cpu[i]));
			range = fmax(range, fabs((double)z_cpu[i]));
		}
		printf("sim (int8 convolutions) against cpu (fp32): max |diff| %.4f of range %.4f\n",
		       worst, range);
	}
out:
	npu_engine_destroy(engine);
	free(onnx);
	return rc;
}
