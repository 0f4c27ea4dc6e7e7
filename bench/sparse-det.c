// SPDX-License-Identifier: MIT
/*
 * sparse-det: what 2:4 sparse weights (ISA 1.6) buy a real model on the
 * NPU simulator. Magnitude-prunes every Conv weight of MODEL 2:4 along
 * the input channels (the 2 largest |w| of every 4 consecutive input
 * channels at one output channel and tap; convs whose channels per group
 * are not a multiple of 4 stay dense), then compiles and runs on "sim":
 *
 *   dense     the model as given (default codegen)
 *   pruned    the pruned model, codegen sparse=0,wcodec=0 (dense int8)
 *   sparse    the pruned model, default codegen (2:4 form + weight codec)
 *   nocodec   the pruned model, wcodec=0 (2:4 form only)
 *
 * and prints modeled cycles, DRAM bytes per run and the host's wall and
 * process CPU time of a run (best of N each, the variants interleaved run
 * by run), and whether the
 * three pruned variants give the same output bytes. A measurement, not a
 * test: it asserts nothing.
 *
 *   sparse-det MODEL.onnx CALIB_DIR|random N C H W [RUNS]
 */
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu.h"
#include "onnx/onnx.pb-c.h"

#define VARIANTS 4

static const char *const names[VARIANTS] = { "dense", "pruned", "sparse", "nocodec" };
static const char *const codegens[VARIANTS] = { NULL, "sparse=0,wcodec=0", NULL, "wcodec=0" };

static void *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	void *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	*size = buf ? (size_t)n : 0;
	fclose(f);
	return buf;
}

/* The constant 'name': an initializer or a Constant node's value (paddle2onnx). */
static Onnx__TensorProto *initializer(Onnx__GraphProto *g, const char *name)
{
	for (size_t i = 0; i < g->n_initializer; i++)
		if (!strcmp(g->initializer[i]->name, name))
			return g->initializer[i];
	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *n = g->node[i];

		if (strcmp(n->op_type, "Constant") || n->n_output != 1 || strcmp(n->output[0], name))
			continue;
		for (size_t j = 0; j < n->n_attribute; j++)
			if (!strcmp(n->attribute[j]->name, "value") && n->attribute[j]->t)
				return n->attribute[j]->t;
	}
	return NULL;
}

static int64_t group_attr(const Onnx__NodeProto *n)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (!strcmp(n->attribute[i]->name, "group"))
			return n->attribute[i]->i;
	return 1;
}

/* Prunes OIHW float weights 2:4 along I; returns weights zeroed. */
static size_t prune_2_4(float *w, int64_t o, int64_t i, int64_t taps)
{
	size_t zeroed = 0;

	for (int64_t oc = 0; oc < o; oc++)
		for (int64_t t = 0; t < taps; t++)
			for (int64_t g = 0; g < i / 4; g++) {
				float *p[4];
				int k, a, b;

				for (k = 0; k < 4; k++)
					p[k] = &w[(oc * i + g * 4 + k) * taps + t];
				/* the two largest magnitudes stay */
				a = 0;
				for (k = 1; k < 4; k++)
					if (fabsf(*p[k]) > fabsf(*p[a]))
						a = k;
				b = a ? 0 : 1;
				for (k = 0; k < 4; k++)
					if (k != a && fabsf(*p[k]) > fabsf(*p[b]))
						b = k;
				for (k = 0; k < 4; k++)
					if (k != a && k != b && *p[k] != 0.0f) {
						*p[k] = 0.0f;
						zeroed++;
					}
			}
	return zeroed;
}

static void *pruned_model(const void *bytes, size_t size, size_t *out_size, size_t *layers,
			  size_t *zeroed, size_t *weights)
{
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, bytes);
	void *buf;

	if (!m)
		return NULL;
	*layers = *zeroed = *weights = 0;
	for (size_t k = 0; k < m->graph->n_node; k++) {
		const Onnx__NodeProto *n = m->graph->node[k];
		Onnx__TensorProto *t;
		float *w;
		int64_t taps = 1;

		if (strcmp(n->op_type, "Conv") || n->n_input < 2 ||
		    !(t = initializer(m->graph, n->input[1])) || t->n_dims != 4 ||
		    t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
			continue;
		if (t->dims[1] % 4 || group_attr(n) == t->dims[0])
			continue;	/* channels per group not a multiple of 4, or depthwise */
		taps = t->dims[2] * t->dims[3];
		w = t->n_float_data ? t->float_data : (float *)t->raw_data.data;
		if (!w)
			continue;
		*zeroed += prune_2_4(w, t->dims[0], t->dims[1], taps);
		*weights += (size_t)(t->dims[0] * t->dims[1] * taps);
		(*layers)++;
	}
	*out_size = onnx__model_proto__get_packed_size(m);
	buf = malloc(*out_size);
	if (buf)
		onnx__model_proto__pack(m, buf);
	onnx__model_proto__free_unpacked(m, NULL);
	return buf;
}

int main(int argc, char **argv)
{
	struct npu_engine *eng;
	struct npu_engine_options eo;
	struct npu_model *model[VARIANTS];
	struct npu_session *sess[VARIANTS];
	struct npu_host_tensor in = { .name = NULL, .dtype = NPU_TYPE_FLOAT, .rank = 4 };
	double best[VARIANTS], cpu[VARIANTS];
	uint64_t cycles[VARIANTS], dram[VARIANTS];
	void *out[VARIANTS] = { 0 };
	size_t out_bytes[VARIANTS] = { 0 };
	size_t size, psize, layers, zeroed, weights, i, n;
	void *orig, *pruned;
	float *x;
	int runs, v, r;

	if (argc < 7) {
		fprintf(stderr, "usage: sparse-det MODEL.onnx CALIB_DIR|random N C H W [RUNS]\n");
		return 2;
	}
	runs = argc > 7 ? atoi(argv[7]) : 3;
	orig = read_file(argv[1], &size);
	if (!orig) {
		fprintf(stderr, "sparse-det: cannot read %s\n", argv[1]);
		return 1;
	}
	pruned = pruned_model(orig, size, &psize, &layers, &zeroed, &weights);
	if (!pruned) {
		fprintf(stderr, "sparse-det: %s is not an ONNX model\n", argv[1]);
		return 1;
	}
	printf("%s: %zu convs pruned 2:4 (%zu of %zu weights zeroed, %.1f %%)\n", argv[1],
	       layers, zeroed, weights, weights ? 100.0 * zeroed / weights : 0.0);
	for (i = 0; i < 4; i++)
		in.dims[i] = atoll(argv[3 + i]);
	n = (size_t)(in.dims[0] * in.dims[1] * in.dims[2] * in.dims[3]);
	x = malloc(n * sizeof(*x));
	if (!x)
		return 1;
	for (i = 0; i < n; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	in.data = x;
	in.nbytes = n * sizeof(*x);

	npu_engine_options_init(&eo);
	eo.threads = 1;
	if (npu_engine_create(&eo, &eng) != NPU_OK)
		return 1;
	for (v = 0; v < VARIANTS; v++) {
		struct npu_model_options mo;

		npu_model_options_init(&mo);
		mo.device = "sim";
		if (!strcmp(argv[2], "random"))	/* seeded random calibration */
			mo.calib_random = 1;
		else
			mo.calib_dir = argv[2];
		mo.codegen = codegens[v];
		if (npu_model_load_memory(eng, v ? pruned : orig, v ? psize : size, argv[1], &mo,
					  &model[v]) != NPU_OK ||
		    npu_session_create(model[v], NULL, &sess[v]) != NPU_OK) {
			fprintf(stderr, "sparse-det: %s: %s\n", names[v], npu_last_error());
			return 1;
		}
		best[v] = cpu[v] = 1e30;
	}
	for (r = 0; r < runs; r++)
		for (v = 0; v < VARIANTS; v++) {
			struct timespec t0, t1;
			double c;

			/* CPU time of the process: less noisy than wall time on a shared host */
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
			if (npu_session_run(sess[v], &in, 1) != NPU_OK) {
				fprintf(stderr, "sparse-det: run %s: %s\n", names[v], npu_last_error());
				return 1;
			}
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
			c = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
			if (c < cpu[v])
				cpu[v] = c;
			if (npu_session_last_run_seconds(sess[v]) < best[v])
				best[v] = npu_session_last_run_seconds(sess[v]);
		}
	for (v = 0; v < VARIANTS; v++) {
		struct npu_npu_stats ns;
		struct npu_host_tensor o;

		npu_npu_stats_init(&ns);
		npu_session_npu_stats(sess[v], &ns);
		cycles[v] = ns.last_cycles;
		dram[v] = 0;
		for (i = 0; i < ns.segments; i++) {
			struct npu_segment_stats sg;

			memset(&sg, 0, sizeof(sg));
			sg.struct_size = sizeof(sg);
			if (npu_session_npu_segment(sess[v], i, &sg) == NPU_OK)
				dram[v] += sg.dram_bytes;
		}
		if (npu_session_output(sess[v], 0, &o) == NPU_OK) {
			out[v] = malloc(o.nbytes);
			if (out[v])
				memcpy(out[v], o.data, o.nbytes);
			out_bytes[v] = o.nbytes;
		}
	}
	printf("%-8s %12s %6s %15s %6s %8s %6s %8s %6s\n", "variant", "modeled cyc", "ratio",
	       "DRAM bytes/run", "ratio", "wall ms", "ratio", "cpu ms", "ratio");
	for (v = 0; v < VARIANTS; v++)
		printf("%-8s %12llu %6.3f %15llu %6.3f %8.1f %6.3f %8.1f %6.3f\n", names[v],
		       (unsigned long long)cycles[v], (double)cycles[v] / (double)cycles[1],
		       (unsigned long long)dram[v], (double)dram[v] / (double)dram[1],
		       best[v] * 1e3, best[v] / best[1], cpu[v] * 1e3, cpu[v] / cpu[1]);
	printf("(ratios against 'pruned', the same weights run dense)\n");
	for (v = 2; v < VARIANTS; v++)
		printf("%s output bytes %s pruned's\n", names[v],
		       out[v] && out_bytes[v] == out_bytes[1] &&
		       !memcmp(out[v], out[1], out_bytes[1]) ? "equal" : "DIFFER from");
	for (v = 0; v < VARIANTS; v++) {
		npu_session_destroy(sess[v]);
		npu_model_destroy(model[v]);
		free(out[v]);
	}
	npu_engine_destroy(eng);
	free(x);
	free(orig);
	free(pruned);
	return 0;
}
