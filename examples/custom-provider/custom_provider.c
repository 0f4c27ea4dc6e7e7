// SPDX-License-Identifier: MIT
/*
 * custom-provider: an application's own execution provider, beside the
 * NPU and the CPU.
 *
 * The provider, "pointwise", takes the float elementwise ops of any model
 * (Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Clip with
 * constant bounds, and Add / Sub / Mul / Div by a constant scalar). The
 * library groups the nodes it takes that touch one another into
 * subgraphs; the provider compiles each into a small program and runs it
 * in one pass over the elements, with every intermediate in a register
 * instead of a tensor. It serializes its programs, so a compiled model
 * (.npub) stores them and loading one compiles nothing.
 *
 *	custom-provider MODEL.onnx [--providers LIST] [--save FILE.npub] [--explain]
 *
 * LIST defaults to "pointwise,npu,cpu": the provider takes its ops first,
 * the NPU simulator the rest it can run, the CPU what is left. The program
 * runs the model so and on the CPU alone on the same seeded input, prints
 * where each op type ran and the largest difference; with --save it also
 * saves the plan compiled, loads the file on a new engine and checks that
 * the provider deserialized every subgraph, compiled none, and that the
 * outputs are bit-identical.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <npu/npu.h>

/* ---- The provider ------------------------------------------------------------- */

enum pw_op { PW_RELU, PW_LEAKY, PW_SIGMOID, PW_HSIGMOID, PW_HSWISH, PW_TANH, PW_CLIP,
	     PW_ADD, PW_SUB, PW_RSUB, PW_MUL, PW_DIV, PW_RDIV };

/* One instruction: r[dst] = op(r[src]; a, b). Register 0 is the input. */
struct pw_insn {
	uint8_t op;
	uint8_t src, dst;
	uint8_t pad;
	float a, b;
};

#define PW_MAX_INSNS 64
#define PW_MAX_OUTPUTS 8

struct pw_program {
	uint32_t num_insns, num_outputs;
	struct pw_insn insn[PW_MAX_INSNS];
	uint8_t out_reg[PW_MAX_OUTPUTS];
};

struct pw_counts {
	unsigned compiled, deserialized, taken, refused;
};

/* The one float scalar constant among a binary op's inputs, and which input it is. */
static bool scalar_operand(const struct npu_provider_node *node, float *value, size_t *which)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		struct npu_tensor_info info;
		const void *data;
		int64_t n = 1;
		int d;

		if (npu_provider_node_input(node, i, &info, &data) != NPU_OK || !data ||
		    info.dtype != NPU_TYPE_FLOAT)
			continue;
		for (d = 0; d < info.rank; d++)
			n *= info.dims[d];
		if (n != 1)
			continue;
		*value = *(const float *)data;
		*which = i;
		return true;
	}
	return false;
}

static const char *const unary_ops[] = { "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid",
					 "HardSwish", "Tanh", "Clip" };
static const char *const binary_ops[] = { "Add", "Sub", "Mul", "Div" };

static bool one_of(const char *s, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

static bool pw_can_run(void *user, const struct npu_provider_node *node, char *why,
		       size_t why_size)
{
	struct pw_counts *counts = user;
	const char *op = npu_provider_node_op_type(node);
	struct npu_tensor_info in, out;
	float c;
	size_t which;
	bool ok = false;

	if (npu_provider_node_domain(node)[0] ||
	    (!one_of(op, unary_ops, 7) && !one_of(op, binary_ops, 4))) {
		snprintf(why, why_size, "not an elementwise op it fuses");
	} else if (npu_provider_node_output(node, 0, &out) != NPU_OK ||
		   out.dtype != NPU_TYPE_FLOAT ||
		   npu_provider_node_input(node, 0, &in, NULL) != NPU_OK) {
		snprintf(why, why_size, "float tensors only");
	} else if (one_of(op, binary_ops, 4) &&
		   (npu_provider_node_num_inputs(node) != 2 || !scalar_operand(node, &c, &which))) {
		snprintf(why, why_size, "%s of two tensors (it takes a constant scalar operand only)", op);
	} else if (!strcmp(op, "Clip") && npu_provider_node_num_inputs(node) > 1) {
		const void *lo = NULL, *hi = NULL;
		struct npu_tensor_info info;

		if (npu_provider_node_input(node, 1, &info, &lo) == NPU_ERR_NOT_FOUND)
			lo = "";
		if (npu_provider_node_num_inputs(node) > 2 &&
		    npu_provider_node_input(node, 2, &info, &hi) == NPU_ERR_NOT_FOUND)
			hi = "";
		ok = lo && (npu_provider_node_num_inputs(node) < 3 || hi);
		if (!ok)
			snprintf(why, why_size, "Clip with bounds computed at run time");
	} else {
		ok = true;
	}
	if (ok)
		counts->taken++;
	else
		counts->refused++;
	return ok;
}

static float attr_float(const struct npu_provider_node *node, const char *name, float fallback)
{
	float v;

	return npu_op_attr_float(npu_provider_node_attrs(node), name, &v) == NPU_OK ? v : fallback;
}

/* Clip's bound from its input 'index' (omitted: fallback). */
static float clip_bound(const struct npu_provider_node *node, size_t index, float fallback)
{
	struct npu_tensor_info info;
	const void *data;

	if (index >= npu_provider_node_num_inputs(node) ||
	    npu_provider_node_input(node, index, &info, &data) != NPU_OK || !data)
		return fallback;
	return *(const float *)data;
}

/* The register holding value 'name', or -1. */
static int reg_of(char names[][128], int num, const char *name)
{
	int r;

	for (r = 0; r < num; r++)
		if (!strcmp(names[r], name))
			return r;
	return -1;
}

static npu_status pw_compile(void *user, const struct npu_provider_subgraph *sg, void **state)
{
	struct pw_counts *counts = user;
	struct pw_program *p = calloc(1, sizeof(*p));
	char names[PW_MAX_INSNS + 1][128];
	struct npu_tensor_info info;
	size_t i, k;
	int num = 1;

	if (!p)
		return NPU_ERR_NO_MEMORY;
	/* Each node reads one tensor, so a connected subgraph has one input. */
	if (npu_provider_subgraph_num_inputs(sg) != 1 ||
	    npu_provider_subgraph_num_outputs(sg) > PW_MAX_OUTPUTS ||
	    npu_provider_subgraph_num_nodes(sg) > PW_MAX_INSNS) {
		npu_last_error_set(NPU_ERR_UNSUPPORTED,
				   "pointwise: a subgraph of %zu inputs, %zu outputs, %zu nodes (1, %d, %d at most)",
				   npu_provider_subgraph_num_inputs(sg),
				   npu_provider_subgraph_num_outputs(sg),
				   npu_provider_subgraph_num_nodes(sg), PW_MAX_OUTPUTS, PW_MAX_INSNS);
		free(p);
		return NPU_ERR_UNSUPPORTED;
	}
	npu_provider_subgraph_input(sg, 0, &info);
	snprintf(names[0], sizeof(names[0]), "%s", info.name);
	for (i = 0; i < npu_provider_subgraph_num_nodes(sg); i++) {
		const struct npu_provider_node *node = npu_provider_subgraph_node(sg, i);
		const char *op = npu_provider_node_op_type(node);
		struct pw_insn *in = &p->insn[p->num_insns++];
		size_t which = 0;
		float c = 0;
		int src = -1;

		/* The tensor operand: the input that is not the constant. */
		if (one_of(op, binary_ops, 4))
			scalar_operand(node, &c, &which);
		npu_provider_node_input(node, one_of(op, binary_ops, 4) ? 1 - which : 0, &info, NULL);
		src = reg_of(names, num, info.name);
		if (src < 0) {
			npu_last_error_set(NPU_ERR_INTERNAL, "pointwise: node '%s' reads '%s', which the subgraph does not have",
					   npu_provider_node_name(node), info.name);
			free(p);
			return NPU_ERR_INTERNAL;
		}
		in->src = (uint8_t)src;
		in->dst = (uint8_t)num;
		npu_provider_node_output(node, 0, &info);
		snprintf(names[num++], sizeof(names[0]), "%s", info.name);
		if (!strcmp(op, "Relu"))
			in->op = PW_RELU;
		else if (!strcmp(op, "LeakyRelu"))
			*in = (struct pw_insn){ PW_LEAKY, in->src, in->dst, 0,
						attr_float(node, "alpha", 0.01f), 0 };
		else if (!strcmp(op, "Sigmoid"))
			in->op = PW_SIGMOID;
		else if (!strcmp(op, "HardSigmoid"))
			*in = (struct pw_insn){ PW_HSIGMOID, in->src, in->dst, 0,
						attr_float(node, "alpha", 0.2f),
						attr_float(node, "beta", 0.5f) };
		else if (!strcmp(op, "HardSwish"))
			in->op = PW_HSWISH;
		else if (!strcmp(op, "Tanh"))
			in->op = PW_TANH;
		else if (!strcmp(op, "Clip"))
			*in = (struct pw_insn){ PW_CLIP, in->src, in->dst, 0,
						clip_bound(node, 1, attr_float(node, "min", -INFINITY)),
						clip_bound(node, 2, attr_float(node, "max", INFINITY)) };
		else
			*in = (struct pw_insn){
				!strcmp(op, "Add") ? PW_ADD : !strcmp(op, "Mul") ? PW_MUL
				: !strcmp(op, "Sub") ? (which ? PW_SUB : PW_RSUB)
				: which ? PW_DIV : PW_RDIV, in->src, in->dst, 0, c, 0 };
	}
	for (k = 0; k < npu_provider_subgraph_num_outputs(sg); k++) {
		npu_provider_subgraph_output(sg, k, &info);
		p->out_reg[k] = (uint8_t)reg_of(names, num, info.name);
	}
	p->num_outputs = (uint32_t)npu_provider_subgraph_num_outputs(sg);
	counts->compiled++;
	*state = p;
	return NPU_OK;
}

static float pw_apply(const struct pw_insn *in, float x)
{
	switch (in->op) {
	case PW_RELU: return x > 0 ? x : 0;
	case PW_LEAKY: return x >= 0 ? x : in->a * x;
	case PW_SIGMOID: return 1.0f / (1.0f + expf(-x));
	case PW_HSIGMOID: return fmaxf(0, fminf(1, in->a * x + in->b));
	case PW_HSWISH: return x * fmaxf(0, fminf(1, x / 6.0f + 0.5f));
	case PW_TANH: return tanhf(x);
	case PW_CLIP: return fminf(fmaxf(x, in->a), in->b);
	case PW_ADD: return x + in->a;
	case PW_SUB: return x - in->a;
	case PW_RSUB: return in->a - x;
	case PW_MUL: return x * in->a;
	case PW_DIV: return x / in->a;
	default: return in->a / x;	/* PW_RDIV */
	}
}

static npu_status pw_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	const struct pw_program *p = state;
	float *out[PW_MAX_OUTPUTS];
	struct npu_host_tensor x;
	float r[PW_MAX_INSNS + 1];
	const float *in;
	size_t n, e, k, i;
	npu_status st;

	(void)user;
	st = npu_kernel_input(ctx, 0, &x);
	if (st != NPU_OK)
		return st;
	in = x.data;
	n = x.nbytes / sizeof(float);
	for (k = 0; k < p->num_outputs; k++) {
		st = npu_kernel_output(ctx, k, NPU_TYPE_FLOAT, x.rank, x.dims, (void **)&out[k]);
		if (st != NPU_OK)
			return st;
	}
	for (e = 0; e < n; e++) {
		r[0] = in[e];
		for (i = 0; i < p->num_insns; i++)
			r[p->insn[i].dst] = pw_apply(&p->insn[i], r[p->insn[i].src]);
		for (k = 0; k < p->num_outputs; k++)
			out[k][e] = r[p->out_reg[k]];
	}
	return NPU_OK;
}

static void pw_release(void *user, void *state)
{
	(void)user;
	free(state);
}

static npu_status pw_serialize(void *user, const void *state, void **data, size_t *size)
{
	(void)user;
	*data = malloc(sizeof(struct pw_program));
	if (!*data)
		return NPU_ERR_NO_MEMORY;
	memcpy(*data, state, sizeof(struct pw_program));
	*size = sizeof(struct pw_program);
	return NPU_OK;
}

static npu_status pw_deserialize(void *user, const struct npu_provider_subgraph *sg,
				 const void *data, size_t size, void **state)
{
	struct pw_counts *counts = user;
	struct pw_program *p;
	uint32_t i;

	p = malloc(sizeof(*p));
	if (!p)
		return NPU_ERR_NO_MEMORY;
	if (size == sizeof(*p))
		memcpy(p, data, size);
	/* Bytes from a file: check every index before trusting them. */
	if (size != sizeof(*p) || p->num_insns > PW_MAX_INSNS ||
	    p->num_outputs != npu_provider_subgraph_num_outputs(sg) ||
	    p->num_outputs > PW_MAX_OUTPUTS) {
		free(p);
		npu_last_error_set(NPU_ERR_MODEL, "pointwise: a stored program of %zu bytes does not fit its subgraph", size);
		return NPU_ERR_MODEL;
	}
	for (i = 0; i < p->num_insns; i++)
		if (p->insn[i].op > PW_RDIV || p->insn[i].src > i || p->insn[i].dst != i + 1) {
			free(p);
			npu_last_error_set(NPU_ERR_MODEL, "pointwise: stored instruction %u is corrupt", i);
			return NPU_ERR_MODEL;
		}
	for (i = 0; i < p->num_outputs; i++)
		if (p->out_reg[i] > p->num_insns) {
			free(p);
			npu_last_error_set(NPU_ERR_MODEL, "pointwise: stored output %u is corrupt", i);
			return NPU_ERR_MODEL;
		}
	counts->deserialized++;
	*state = p;
	return NPU_OK;
}

static npu_status register_pointwise(struct npu_engine *engine, struct pw_counts *counts)
{
	struct npu_provider p;

	npu_provider_init(&p);
	p.name = "pointwise";
	p.user = counts;
	p.can_run = pw_can_run;
	p.compile = pw_compile;
	p.compute = pw_compute;
	p.release = pw_release;
	p.serialize = pw_serialize;
	p.deserialize = pw_deserialize;
	return npu_engine_register_provider(engine, &p);
}

/* ---- Running a model -------------------------------------------------------------- */

static int fail(const char *what)
{
	fprintf(stderr, "custom-provider: %s: %s\n", what, npu_last_error());
	return 1;
}

struct run {
	float *out;		/* output 0, copied */
	size_t count;
};

/* Load 'path' with 'providers' on 'device', run once on 'in', keep output 0. */
static int run_model(struct npu_engine *engine, const char *path, const char *providers,
		     const struct npu_host_tensor *in, int print_placement,
		     const char *save, struct run *r)
{
	struct npu_model_options mo;
	struct npu_model *model;
	struct npu_session *s;
	struct npu_host_tensor out;
	const struct npu_plan *plan;
	int rc = 0;

	npu_model_options_init(&mo);
	mo.providers = providers;
	mo.calib_random = 1;	/* a demonstration: random calibration inputs */
	if (npu_model_load_file(engine, path, &mo, &model) != NPU_OK)
		return fail("load");
	if (npu_session_create(model, NULL, &s) != NPU_OK) {
		npu_model_destroy(model);
		return fail("session");
	}
	if (npu_session_run(s, in, 1) != NPU_OK || npu_session_output(s, 0, &out) != NPU_OK) {
		rc = fail("run");
		goto out;
	}
	r->count = out.nbytes / sizeof(float);
	r->out = malloc(out.nbytes ? out.nbytes : 1);
	if (!r->out) {
		rc = 1;
		goto out;
	}
	memcpy(r->out, out.data, out.nbytes);
	plan = npu_session_plan(s);
	for (size_t i = 0; print_placement > 1 && i < npu_plan_num_placements(plan); i++) {
		struct npu_node_placement pl;

		if (npu_plan_placement(plan, i, &pl) == NPU_OK)
			printf("  %-9s %-24s %-18s %s\n", npu_plan_placement_provider(plan, i), pl.node,
			       pl.op_type, pl.reason);
	}
	if (print_placement == 1) {
		/* Per provider and op type: how many nodes. */
		char seen[256][80];
		unsigned counts[256] = { 0 };
		size_t i, j, num = 0;

		for (i = 0; i < npu_plan_num_placements(plan); i++) {
			struct npu_node_placement pl;
			char key[80];

			if (npu_plan_placement(plan, i, &pl) != NPU_OK)
				continue;
			snprintf(key, sizeof(key), "%-9s %s", npu_plan_placement_provider(plan, i),
				 pl.op_type);
			for (j = 0; j < num && strcmp(seen[j], key); j++)
				;
			if (j == num && num < 256)
				snprintf(seen[num++], sizeof(seen[0]), "%s", key);
			if (j < 256)
				counts[j]++;
		}
		for (j = 0; j < num; j++)
			printf("  %-40s %u\n", seen[j], counts[j]);
	}
	if (save && npu_plan_save_compiled(plan, save) != NPU_OK)
		rc = fail("save");
out:
	npu_session_destroy(s);
	npu_model_destroy(model);
	return rc;
}

static double max_diff(const struct run *a, const struct run *b)
{
	double worst = 0;
	size_t i;

	if (a->count != b->count)
		return INFINITY;
	for (i = 0; i < a->count; i++)
		worst = fmax(worst, fabs((double)a->out[i] - b->out[i]));
	return worst;
}

static double max_abs(const struct run *a)
{
	double m = 0;
	size_t i;

	for (i = 0; i < a->count; i++)
		m = fmax(m, fabs((double)a->out[i]));
	return m;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *providers = "pointwise,npu,cpu", *save = NULL;
	struct pw_counts counts = { 0 }, counts2 = { 0 };
	struct run mine = { 0 }, cpu = { 0 }, loaded = { 0 };
	struct npu_engine *engine = NULL, *engine2 = NULL;
	struct npu_model *probe;
	struct npu_tensor_info info;
	struct npu_host_tensor in = { 0 };
	size_t n = 1, i;
	int a, d, rc = 1, explain = 1;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--providers") && a + 1 < argc)
			providers = argv[++a];
		else if (!strcmp(argv[a], "--explain"))
			explain = 2;
		else if (!strcmp(argv[a], "--save") && a + 1 < argc)
			save = argv[++a];
		else if (argv[a][0] != '-' && !path)
			path = argv[a];
		else
			path = NULL, a = argc;
	}
	if (!path) {
		fprintf(stderr, "usage: custom-provider MODEL.onnx [--providers LIST] [--save FILE.npub] [--explain]\n");
		return 2;
	}
	if (npu_engine_create(NULL, &engine) != NPU_OK)
		return fail("engine");
	if (register_pointwise(engine, &counts) != NPU_OK) {
		fail("register");
		goto out;
	}
	/* A seeded input of the model's first input shape (symbolic dims: 1 for
	 * the batch, 64 for the others). */
	if (npu_model_load_file(engine, path, NULL, &probe) != NPU_OK) {
		fail("load");
		goto out;
	}
	npu_model_input_info(probe, 0, &info);
	in.dtype = NPU_TYPE_FLOAT;
	in.rank = info.rank;
	for (d = 0; d < info.rank; d++) {
		in.dims[d] = info.dims[d] > 0 ? info.dims[d] : d ? 64 : 1;
		n *= (size_t)in.dims[d];
	}
	npu_model_destroy(probe);
	in.nbytes = n * sizeof(float);
	in.data = malloc(in.nbytes);
	if (!in.data)
		goto out;
	for (i = 0; i < n; i++)
		((float *)in.data)[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;

	printf("providers %s:\n", providers);
	if (run_model(engine, path, providers, &in, explain, save, &mine) ||
	    run_model(engine, path, "cpu", &in, 0, NULL, &cpu))
		goto out;
	printf("pointwise: took %u nodes, refused %u, compiled %u subgraphs\n", counts.taken,
	       counts.refused, counts.compiled);
	printf("max |diff| against the CPU alone: %.6g (largest |output| %.4g)\n",
	       max_diff(&mine, &cpu), max_abs(&cpu));
	rc = 0;
	if (save) {
		/* A new engine: the file alone, with the provider registered again. */
		if (npu_engine_create(NULL, &engine2) != NPU_OK ||
		    register_pointwise(engine2, &counts2) != NPU_OK ||
		    run_model(engine2, save, providers, &in, 0, NULL, &loaded)) {
			rc = fail("reload");
			goto out;
		}
		printf("from %s: deserialized %u subgraphs, compiled %u; outputs %s\n", save,
		       counts2.deserialized, counts2.compiled,
		       loaded.count == mine.count &&
		       !memcmp(loaded.out, mine.out, mine.count * sizeof(float)) ? "bit-identical"
										  : "DIFFER");
		rc = counts2.compiled || loaded.count != mine.count ||
		     memcmp(loaded.out, mine.out, mine.count * sizeof(float));
	}
out:
	free(mine.out);
	free(cpu.out);
	free(loaded.out);
	free(in.data);
	npu_engine_destroy(engine2);
	npu_engine_destroy(engine);
	return rc;
}
