// SPDX-License-Identifier: MIT
/*
 * npu split: cut a model in two (split computing, issue 18): the head runs
 * on the device, the tail on a server (`npu run HEAD --remote`). --at cuts
 * where it is told; --auto costs every candidate cut with profiles of this
 * model and picks the fastest for a given link.
 *
 * The cost of a cut (Neurosurgeon's per-layer model): the head's time on
 * the device + the link (bytes / bandwidth + one round trip) + the tail's
 * time on the server. Per-node times come from one profiling run each:
 *   - the device: on sim/accel, a run compiled for that NPU with
 *     profiling, NPU nodes at their modeled cycles (each segment's
 *     transfers shared among its ops), CPU-placed nodes at their measured
 *     host time; on cpu, the measured time of every node;
 *   - the server: the measured time of every node on this machine's CPU
 *     with --server-threads threads, or a profile file.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "npu-tools/onnx_split.h"
#include "npu/npu_model.h"
#include "npu_cli.h"

#define MAX_CANDIDATES 4096
#define MAX_SHAPES 16

struct split_args {
	const char *model;
	const char *at;
	const char *head_out, *tail_out;
	bool autocut, explain, int8;
	const char *device;
	double mbit, rtt_ms;
	bool have_link;
	const char *server_device, *server_profile, *save_profile;
	int server_threads, threads;
	const char *calib;
	const char *shapes[MAX_SHAPES];
	size_t num_shapes;
	int runs;
};

static void split_usage(FILE *out)
{
	fprintf(out,
		"usage: npu split MODEL.onnx --at TENSOR[,TENSOR...] [--int8-transfer --calib DIR|random]\n"
		"                 -o HEAD.onnx TAIL.onnx\n"
		"       npu split MODEL.onnx --auto --device sim|accel|cpu --link MBIT[,RTT_MS]\n"
		"                 [--server-device cpu --server-threads N | --server-profile FILE]\n"
		"                 [--explain] [--int8-transfer] [--shape NAME=DIMS]... [--threads N]\n"
		"                 [--calib DIR|random] [--runs N] [--save-server-profile FILE]\n"
		"                 [-o HEAD.onnx TAIL.onnx]\n\n"
		"Cuts the model in two: the head computes the cut tensors from the model's\n"
		"inputs, the tail the model's outputs from the cut tensors (and any model\n"
		"input it still reads). Run them with `npu run HEAD.onnx --remote URL\n"
		"--remote-model TAIL` against an `npu serve` that serves TAIL.onnx.\n"
		"  --at T,...          the cut: every tensor the tail reads from the head\n"
		"  --auto              cost every single-tensor cut (and two-tensor frontiers of\n"
		"                      branchy graphs), all-device and all-server; pick the fastest\n"
		"  --device D          where the head runs (modeled NPU time on sim/accel)\n"
		"  --link MBIT[,RTT]   the link: Mbit/s each way and the round trip in ms\n"
		"  --server-threads N  the server: this CPU with N threads (default 1), measured\n"
		"  --server-profile F  the server: per-node ms from F (lines 'NODE MS'), e.g. one\n"
		"                      written by --save-server-profile on the server machine\n"
		"  --explain           print every candidate's cost\n"
		"  --int8-transfer     float cut tensors cross as uint8 (1/4 of the bytes): the\n"
		"                      head ends in QuantizeLinear, the tail starts with\n"
		"                      DequantizeLinear; the range is calibrated (--calib) and\n"
		"                      the accuracy cost vs the fp32 split is reported\n"
		"  --calib DIR|random  calibration data: for the NPU head and for --int8-transfer\n"
		"  --threads N         the device's CPU threads (default 1)\n"
		"  --runs N            profiling runs per node, the minimum kept (default 3)\n");
}

static int parse_split_args(int argc, char **argv, struct split_args *a)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->device = "cpu";
	a->server_threads = 1;
	a->threads = 1;
	a->runs = 3;
	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			split_usage(stdout);
			exit(0);
		} else if (!strcmp(o, "--auto")) {
			a->autocut = true;
		} else if (!strcmp(o, "--explain")) {
			a->explain = true;
		} else if (!strcmp(o, "--int8-transfer")) {
			a->int8 = true;
		} else if (!strcmp(o, "-o")) {
			if (i + 2 >= argc) {
				fprintf(stderr, "npu split: -o needs HEAD.onnx TAIL.onnx\n");
				return -1;
			}
			a->head_out = argv[++i];
			a->tail_out = argv[++i];
		} else if (o[0] == '-' && o[1] == '-') {
			if (!v) {
				fprintf(stderr, "npu split: %s needs a value\n", o);
				return -1;
			}
			i++;
			if (!strcmp(o, "--at")) {
				a->at = v;
			} else if (!strcmp(o, "--device")) {
				a->device = v;
			} else if (!strcmp(o, "--link")) {
				if (npu_cli_parse_link(v, &a->mbit, &a->rtt_ms)) {
					fprintf(stderr, "npu split: bad --link '%s' (MBIT[,RTT_MS], e.g. 10,20)\n", v);
					return -1;
				}
				a->have_link = true;
			} else if (!strcmp(o, "--server-device")) {
				a->server_device = v;
				if (strcmp(v, "cpu")) {
					fprintf(stderr, "npu split: --server-device '%s': only cpu is measured here (give --server-profile for another server)\n", v);
					return -1;
				}
			} else if (!strcmp(o, "--server-threads")) {
				if ((a->server_threads = npu_cli_parse_int("split", o, v, 1, 1024)) < 0)
					return -1;
			} else if (!strcmp(o, "--server-profile")) {
				a->server_profile = v;
			} else if (!strcmp(o, "--save-server-profile")) {
				a->save_profile = v;
			} else if (!strcmp(o, "--threads")) {
				if ((a->threads = npu_cli_parse_int("split", o, v, 1, 1024)) < 0)
					return -1;
			} else if (!strcmp(o, "--runs")) {
				if ((a->runs = npu_cli_parse_int("split", o, v, 1, 100)) < 0)
					return -1;
			} else if (!strcmp(o, "--calib")) {
				a->calib = v;
			} else if (!strcmp(o, "--shape")) {
				if (a->num_shapes == MAX_SHAPES) {
					fprintf(stderr, "npu split: at most %d --shape\n", MAX_SHAPES);
					return -1;
				}
				a->shapes[a->num_shapes++] = v;
			} else {
				fprintf(stderr, "npu split: unknown option '%s'\n", o);
				return -1;
			}
		} else if (!a->model) {
			a->model = o;
		} else {
			fprintf(stderr, "npu split: unexpected argument '%s'\n", o);
			return -1;
		}
	}
	if (!a->model || (!a->at && !a->autocut)) {
		split_usage(stderr);
		return -1;
	}
	if (a->at && a->autocut) {
		fprintf(stderr, "npu split: --at and --auto exclude each other\n");
		return -1;
	}
	if (a->at && !a->head_out) {
		fprintf(stderr, "npu split: --at needs -o HEAD.onnx TAIL.onnx\n");
		return -1;
	}
	if (a->autocut && !a->have_link) {
		fprintf(stderr, "npu split: --auto needs --link MBIT[,RTT_MS]\n");
		return -1;
	}
	if (a->int8 && !a->calib) {
		fprintf(stderr, "npu split: --int8-transfer needs --calib DIR|random: the uint8 range of the cut tensors is calibrated on that data\n");
		return -1;
	}
	if (a->server_profile && (a->server_device || a->server_threads != 1)) {
		fprintf(stderr, "npu split: --server-profile replaces --server-device/--server-threads\n");
		return -1;
	}
	return 0;
}

static int write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f)) {
		fprintf(stderr, "npu split: %s: cannot write: %m\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	return 0;
}

/* "a,b,c" into at most 'max' names (pointers into buf). */
static size_t split_names(char *buf, const char **names, size_t max)
{
	size_t n = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(buf, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
		names[n++] = tok;
	return n;
}

static int int8_split(const struct split_args *a, const void *data, size_t size,
		      const char *const *cut, size_t count, struct npu_onnx_split *out);

static int write_split(const struct split_args *a, const void *data, size_t size,
		       const char *const *cut, size_t count)
{
	struct npu_onnx_split sp;
	char msg[512];
	size_t i;
	int rc = 0;

	if (a->int8) {
		if (int8_split(a, data, size, cut, count, &sp))
			return 1;
	} else if (npu_onnx_split(data, size, a->model, cut, count, &sp, msg, sizeof(msg)) != NPU_OK) {
		fprintf(stderr, "npu split: %s\n", msg);
		return 1;
	}
	if (write_file(a->head_out, sp.head, sp.head_size) ||
	    write_file(a->tail_out, sp.tail, sp.tail_size)) {
		npu_onnx_split_free(&sp);
		return 1;
	}
	printf("head: %s (%zu nodes), outputs:", a->head_out, sp.head_nodes);
	for (i = 0; i < count; i++)
		printf("%s %s", i ? "," : "", sp.tail_inputs[i]);
	printf("\ntail: %s (%zu nodes), inputs:", a->tail_out, sp.tail_nodes);
	for (i = 0; i < sp.num_tail_inputs; i++)
		printf("%s %s", i ? "," : "", sp.tail_inputs[i]);
	printf("\n");
	if (sp.num_tail_inputs > count) {
		printf("note: the tail also reads model input%s", sp.num_tail_inputs > count + 1 ? "s" : "");
		for (i = count; i < sp.num_tail_inputs; i++)
			printf("%s '%s'", i > count ? "," : "", sp.tail_inputs[i]);
		printf(": `npu run --remote` sends only the head's outputs (raw inputs stay on the device), so it refuses this tail\n");
	}
	npu_onnx_split_free(&sp);
	return rc;
}

/* ---- Profiles ---- */

/* Per-node milliseconds by node name (topological index of the cut graph). */
struct profile {
	double *ms;
	size_t n;
};

static size_t node_index(const struct npu_onnx_cutgraph *cg, const char *name)
{
	size_t i, n = npu_onnx_cutgraph_num_nodes(cg);

	for (i = 0; i < n; i++)
		if (!strcmp(npu_onnx_cutgraph_node_name(cg, i), name))
			return i;
	return (size_t)-1;
}

/*
 * Measure every node on the CPU: the graph executor's per-node trace
 * (NPU_TRACE_FILE) over 'runs' runs, the minimum of each node kept.
 */
static int cpu_profile(const struct split_args *a, const struct npu_onnx_cutgraph *cg,
		       int threads, const struct npu_host_tensor *ins, size_t n_in,
		       struct profile *p)
{
	struct npu_cli_model cm = { 0 };
	struct npu_model_options mo;
	char path[] = "/tmp/npu-split-trace.XXXXXX", line[1024];
	double *best = NULL;
	int fd, r, rc = -1;
	size_t i;
	FILE *f;

	p->n = npu_onnx_cutgraph_num_nodes(cg);
	p->ms = calloc(p->n + 1, sizeof(double));
	best = malloc((p->n + 1) * sizeof(double));
	if (!p->ms || !best)
		goto out;
	for (i = 0; i < p->n; i++)
		best[i] = INFINITY;
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "npu split: cannot make a trace file: %m\n");
		goto out;
	}
	close(fd);
	npu_model_options_init(&mo);
	mo.device = "cpu";
	/* The engine's trace file (read at its creation): every run's op spans. */
	setenv("NPU_TRACE_FILE", path, 1);
	r = npu_cli_open(&cm, a->model, &mo, threads, "split");
	unsetenv("NPU_TRACE_FILE");
	if (r)
		goto out_unlink;
	if (npu_session_create(cm.model, NULL, &cm.session) != NPU_OK) {
		fprintf(stderr, "npu split: %s\n", npu_last_error());
		goto out_close;
	}
	/* A warm-up, then the measured runs; the session's run state (and its trace) is made by the first. */
	for (r = 0; r <= a->runs; r++) {
		npu_status st;

		if (truncate(path, 0)) {
			fprintf(stderr, "npu split: %s: %m\n", path);
			goto out_close;
		}
		st = npu_session_run(cm.session, ins, n_in);
		if (st != NPU_OK) {
			fprintf(stderr, "npu split: profiling run: %s\n", npu_last_error());
			goto out_close;
		}
		if (!r)
			continue;
		f = fopen(path, "r");
		if (!f)
			goto out_close;
		while (fgets(line, sizeof(line), f)) {
			const char *d = strstr(line, "\"dur\":"), *nd = strstr(line, "\"node\":\"");
			char name[400];
			size_t k, len;

			if (!strstr(line, "\"cat\":\"npu.op\"") || !d || !nd)
				continue;
			nd += 8;
			len = strcspn(nd, "\"");
			if (len >= sizeof(name))
				continue;
			memcpy(name, nd, len);
			name[len] = '\0';
			k = node_index(cg, name);
			if (k != (size_t)-1) {
				double ms = strtod(d + 6, NULL) / 1e3;

				best[k] = fmin(best[k], ms);
			}
		}
		fclose(f);
	}
	for (i = 0; i < p->n; i++)
		p->ms[i] = best[i] == INFINITY ? 0 : best[i];	/* folded: free */
	rc = 0;
out_close:
	npu_cli_close(&cm);
out_unlink:
	unlink(path);
out:
	free(best);
	return rc;
}

static int read_profile(const char *path, const struct npu_onnx_cutgraph *cg, struct profile *p)
{
	FILE *f = fopen(path, "r");
	char name[512];
	double ms;
	int line = 0, n;

	if (!f) {
		fprintf(stderr, "npu split: --server-profile %s: %m\n", path);
		return -1;
	}
	p->n = npu_onnx_cutgraph_num_nodes(cg);
	p->ms = calloc(p->n + 1, sizeof(double));
	if (!p->ms) {
		fclose(f);
		return -1;
	}
	while ((n = fscanf(f, "%511s %lf", name, &ms)) != EOF) {
		size_t k;

		line++;
		if (n != 2 || ms < 0) {
			fprintf(stderr, "npu split: %s: entry %d is not 'NODE MS'\n", path, line);
			fclose(f);
			return -1;
		}
		k = node_index(cg, name);
		if (k == (size_t)-1) {
			fprintf(stderr, "npu split: %s: entry %d: the model has no node '%s'\n",
				path, line, name);
			fclose(f);
			return -1;
		}
		p->ms[k] = ms;
	}
	fclose(f);
	return 0;
}

/*
 * The head on an NPU: nodes placed on it at their modeled cycles (with the
 * segment's DMA shared in proportion), the others at 'cpu' (measured).
 */
static int npu_profile(const struct split_args *a, const struct npu_onnx_cutgraph *cg,
		       const struct npu_host_tensor *ins, size_t n_in, const struct profile *cpu,
		       struct profile *p, double *npu_share)
{
	struct npu_cli_model cm = { 0 };
	struct npu_model_options mo;
	struct npu_npu_stats ns;
	const struct npu_plan *plan;
	double *seg_ops = NULL;
	size_t i, nops, np;
	int rc = -1;

	p->n = cpu->n;
	p->ms = calloc(p->n + 1, sizeof(double));
	if (!p->ms)
		return -1;
	memcpy(p->ms, cpu->ms, p->n * sizeof(double));
	npu_model_options_init(&mo);
	mo.device = a->device;
	mo.profile = 1;
	if (a->calib && !strcmp(a->calib, "random"))
		mo.calib_random = 1;	/* asked for by name: noise */
	else
		mo.calib_dir = a->calib;
	if (npu_cli_open(&cm, a->model, &mo, a->threads, "split"))
		return -1;
	if (npu_session_create(cm.model, NULL, &cm.session) != NPU_OK ||
	    npu_session_run(cm.session, ins, n_in) != NPU_OK) {
		fprintf(stderr, "npu split: compiling for %s: %s\n", a->device, npu_last_error());
		goto out;
	}
	npu_npu_stats_init(&ns);
	plan = npu_session_plan(cm.session);
	if (npu_session_npu_stats(cm.session, &ns) != NPU_OK) {
		fprintf(stderr, "npu split: no NPU statistics on %s: %s\n", a->device, npu_last_error());
		goto out;
	}
	*npu_share = 0;
	if (!ns.segments || !ns.clock_mhz) {
		/* Nothing worth an NPU segment: the head runs on the device's CPU. */
		rc = 0;
		goto out;
	}
	np = npu_plan_num_placements(plan);
	for (i = 0; i < np; i++) {
		struct npu_node_placement pl;
		size_t k;

		if (npu_plan_placement(plan, i, &pl) != NPU_OK || !pl.on_npu)
			continue;
		k = node_index(cg, pl.node);
		if (k != (size_t)-1)
			p->ms[k] = 0;	/* on the NPU: its ops' cycles below */
	}
	nops = npu_session_npu_num_ops(cm.session);
	seg_ops = calloc(ns.segments + 1, sizeof(double));
	if (!seg_ops)
		goto out;
	for (i = 0; i < nops; i++) {
		struct npu_op_stats os = { .struct_size = sizeof(os) };

		if (npu_session_npu_op(cm.session, i, &os) == NPU_OK && os.segment >= 0 &&
		    (size_t)os.segment < ns.segments)
			seg_ops[os.segment] += (double)os.cycles;
	}
	for (i = 0; i < nops; i++) {
		struct npu_op_stats os = { .struct_size = sizeof(os) };
		struct npu_segment_stats ss = { .struct_size = sizeof(ss) };
		double cycles;
		size_t k;

		if (npu_session_npu_op(cm.session, i, &os) != NPU_OK || os.segment < 0 ||
		    (size_t)os.segment >= ns.segments ||
		    npu_session_npu_segment(cm.session, (size_t)os.segment, &ss) != NPU_OK)
			continue;
		/* The segment's own cycles (its DMA in and out) shared by its ops. */
		cycles = seg_ops[os.segment] > 0
				 ? (double)ss.last_cycles * (double)os.cycles / seg_ops[os.segment]
				 : 0;
		k = node_index(cg, os.node);
		if (k != (size_t)-1) {
			p->ms[k] += cycles / (ns.clock_mhz * 1e3);
			*npu_share += cycles / (ns.clock_mhz * 1e3);
		}
	}
	rc = 0;
out:
	free(seg_ops);
	npu_cli_close(&cm);
	return rc;
}

/* ---- Candidates ---- */

struct cand {
	char *names[2];
	size_t count;
	int kind;	/* 0: a cut, 1: all on the device, 2: all on the server */
	double head_ms, tail_ms, xfer_ms, total_ms;
	uint64_t bytes;
};

struct cands {
	struct cand *v;
	size_t n;
};

static void add_cut(void *arg, const char *const *names, size_t count)
{
	struct cands *c = arg;
	size_t i;

	if (c->n >= MAX_CANDIDATES)
		return;
	memset(&c->v[c->n], 0, sizeof(c->v[c->n]));
	for (i = 0; i < count && i < 2; i++)
		c->v[c->n].names[i] = strdup(names[i]);
	c->v[c->n].count = count;
	c->n++;
}

static const char *cand_label(const struct cand *c, char *buf, size_t size)
{
	if (c->kind == 1)
		snprintf(buf, size, "(all on the device)");
	else if (c->kind == 2)
		snprintf(buf, size, "(all on the server)");
	else if (c->count == 2)
		snprintf(buf, size, "%s,%s", c->names[0], c->names[1]);
	else
		snprintf(buf, size, "%s", c->names[0]);
	return buf;
}

/*
 * --auto costs the model at one shape: a dynamic dimension no --shape
 * fixes is costed as 1 (a batch of one, the common case), and said so.
 * The head and tail keep the model's dynamic dimensions either way.
 * bufs holds the "NAME=DIMS" strings added to a->shapes.
 */
static int default_dynamic_dims(const struct npu_cli_model *cm, struct split_args *a,
				char bufs[][300])
{
	size_t i, k, n = npu_model_num_inputs(cm->model);

	for (i = 0; i < n; i++) {
		struct npu_tensor_info info;
		size_t len, used;
		bool given = false, dynamic = false;
		int d;

		if (npu_cli_input_info(cm, i, &info)) {
			fprintf(stderr, "npu split: %s\n", npu_last_error());
			return -1;
		}
		len = strlen(info.name);
		for (k = 0; k < a->num_shapes; k++)
			given |= !strncmp(a->shapes[k], info.name, len) && a->shapes[k][len] == '=';
		for (d = 0; d < info.rank; d++)
			dynamic |= info.dims[d] < 0;
		if (given || !dynamic)
			continue;
		if (a->num_shapes == MAX_SHAPES) {
			fprintf(stderr, "npu split: input '%s' has dynamic dimensions: give --shape %s=DIMS\n",
				info.name, info.name);
			return -1;
		}
		used = (size_t)snprintf(bufs[a->num_shapes], 300, "%s=", info.name);
		for (d = 0; d < info.rank && used < 300; d++)
			used += (size_t)snprintf(bufs[a->num_shapes] + used, 300 - used, "%s%lld",
						 d ? "x" : "", (long long)(info.dims[d] < 0 ? 1 : info.dims[d]));
		if (used >= 300) {
			fprintf(stderr, "npu split: input '%s': name too long for a default shape\n",
				info.name);
			return -1;
		}
		fprintf(stderr, "npu split: costing input '%s' as %s (its dynamic dimensions set to 1; "
			"--shape %s=DIMS costs another size)\n", info.name,
			bufs[a->num_shapes] + strlen(info.name) + 1, info.name);
		a->shapes[a->num_shapes] = bufs[a->num_shapes];
		a->num_shapes++;
	}
	return 0;
}

/* Bytes of a value of the model at the sample's shapes (the link's payload). */
static double link_ms(const struct split_args *a, uint64_t bytes)
{
	return a->rtt_ms + (double)bytes * 8.0 / (a->mbit * 1e3);
}

/* Cosine and max |a-b| of float outputs. */
static void compare(const struct npu_host_tensor *x, const struct npu_host_tensor *y,
		    double *cosine, double *max_err)
{
	double dot = 0, na = 0, nb = 0;
	size_t i, n = x->nbytes / sizeof(float);

	*max_err = 0;
	for (i = 0; i < n && x->nbytes == y->nbytes; i++) {
		double p = ((const float *)x->data)[i], q = ((const float *)y->data)[i];

		dot += p * q;
		na += p * p;
		nb += q * q;
		*max_err = fmax(*max_err, fabs(p - q));
	}
	*cosine = na > 0 && nb > 0 ? dot / sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
}

/* ---- int8 transfer ---- */

#define MAX_SAMPLES 16
#define RANDOM_SAMPLES 4

/* Calibration data for int8 transfer: the model's inputs, a few sets. */
struct samples {
	struct npu_host_tensor (*set)[MAX_SHAPES];
	size_t n;		/* sets */
	int n_in;		/* tensors per set */
	char what[300];		/* for messages */
};

static void samples_free(struct samples *s)
{
	size_t k;

	for (k = 0; s->set && k < MAX_SAMPLES; k++)
		npu_cli_free_inputs(s->set[k], s->n_in);
	free(s->set);
	memset(s, 0, sizeof(*s));
}

/*
 * --calib random: RANDOM_SAMPLES sets uniform in [0, 1) (the first is the
 * --auto sample); --calib DIR: its samples (the layout the compiler reads,
 * Documentation/compiler.md), at most MAX_SAMPLES.
 */
static int load_samples(const struct split_args *a, const struct npu_cli_model *cm,
			struct samples *s)
{
	char **names = NULL, path[4096];
	size_t n_in = npu_model_num_inputs(cm->model), i;
	int n = 0, rc = -1;

	memset(s, 0, sizeof(*s));
	if (n_in > MAX_SHAPES) {
		fprintf(stderr, "npu split: more than %d model inputs\n", MAX_SHAPES);
		return -1;
	}
	s->set = calloc(MAX_SAMPLES, sizeof(*s->set));
	if (!s->set)
		return -1;
	s->n_in = (int)n_in;
	if (!strcmp(a->calib, "random")) {
		for (s->n = 0; s->n < RANDOM_SAMPLES; s->n++)
			if (npu_cli_random_inputs(cm, s->n + 1, 0.0f, 1.0f, a->shapes, a->num_shapes,
						  s->set[s->n], "split") < 0)
				goto out;
		snprintf(s->what, sizeof(s->what), "%zu random samples uniform in [0, 1)", s->n);
		rc = 0;
		goto out;
	}
	n = npu_cli_list_samples(a->calib, n_in == 1, &names);
	if (n <= 0) {
		fprintf(stderr, "npu split: --calib %s: %s\n", a->calib,
			n < 0 ? "cannot read the directory"
			: n_in == 1 ? "no .npy files" : "no sample subdirectories");
		goto out;
	}
	for (s->n = 0; s->n < (size_t)n && s->n < MAX_SAMPLES; s->n++) {
		for (i = 0; i < n_in; i++) {
			struct npu_host_tensor *h = &s->set[s->n][i];
			struct npu_tensor_info info;
			struct npu_host_tensor t;

			npu_cli_input_info(cm, i, &info);
			if (n_in == 1)
				snprintf(path, sizeof(path), "%s/%s", a->calib, names[s->n]);
			else
				snprintf(path, sizeof(path), "%s/%s/%s.npy", a->calib, names[s->n],
					 info.name);
			if (npu_tensor_file_read(path, &t) != NPU_OK) {
				fprintf(stderr, "npu split: calibration sample: %s\n", npu_last_error());
				goto out;
			}
			if (t.dtype != info.dtype || t.rank != info.rank) {
				fprintf(stderr, "npu split: calibration file %s: %s of rank %d, but input '%s' is %s of rank %d\n",
					path, npu_data_type_name(t.dtype),
					t.rank, info.name, npu_data_type_name(info.dtype), info.rank);
				npu_host_tensor_free(&t);
				goto out;
			}
			/* The sample keeps the file's data (freed by samples_free()). */
			h->name = info.name;
			h->dtype = info.dtype;
			h->rank = t.rank;
			memcpy(h->dims, t.dims, sizeof(int64_t) * (size_t)h->rank);
			h->nbytes = t.nbytes;
			h->data = t.data;
			if (!h->data) {
				/* an empty tensor: a byte to own, as samples_free() expects */
				h->data = malloc(1);
				if (!h->data)
					goto out;
			}
		}
	}
	snprintf(s->what, sizeof(s->what), "%zu calibration sample%s of %s", s->n,
		 s->n == 1 ? "" : "s", a->calib);
	rc = 0;
out:
	npu_cli_free_names(names, n);
	if (rc)
		samples_free(s);
	return rc;
}

/* Load a part (serialized ONNX) for the CPU and make its session. */
static int load_part(struct npu_engine *eng, const void *data, size_t size, const char *name,
		     struct npu_model **m, struct npu_session **s)
{
	if (npu_model_load_memory(eng, data, size, name, NULL, m) != NPU_OK ||
	    npu_session_create(*m, NULL, s) != NPU_OK) {
		fprintf(stderr, "npu split: int8 transfer: %s: %s\n", name, npu_last_error());
		return -1;
	}
	return 0;
}

/*
 * The uint8 parameters of each float cut tensor: the range the fp32 head
 * gives on the calibration samples, widened to hold 0 (so that 0, e.g.
 * after a Relu, is exact), in 255 steps.
 */
static int int8_params(struct npu_engine *eng, const struct npu_onnx_split *plain,
		       const char *const *cut, size_t count, const struct samples *s,
		       struct npu_onnx_split_quant *q)
{
	struct npu_model *hm = NULL;
	struct npu_session *hs = NULL;
	float *lo = calloc(count + 1, sizeof(float)), *hi = calloc(count + 1, sizeof(float));
	size_t i, k, e;
	int rc = -1;

	if (!lo || !hi || load_part(eng, plain->head, plain->head_size, "head", &hm, &hs))
		goto out;
	for (k = 0; k < s->n; k++) {
		if (npu_session_run(hs, s->set[k], (size_t)s->n_in) != NPU_OK) {
			fprintf(stderr, "npu split: int8 transfer: the head on sample %zu: %s\n", k,
				npu_last_error());
			goto out;
		}
		for (i = 0; i < count; i++) {
			struct npu_host_tensor t;

			npu_session_output(hs, i, &t);
			q[i].on = t.dtype == NPU_TYPE_FLOAT;
			for (e = 0; q[i].on && e < t.nbytes / sizeof(float); e++) {
				float v = ((const float *)t.data)[e];

				if (isfinite(v)) {
					lo[i] = fminf(lo[i], v);
					hi[i] = fmaxf(hi[i], v);
				}
			}
		}
	}
	for (i = 0; i < count; i++) {
		double z;

		if (!q[i].on) {
			printf("int8 transfer: '%s' is not float: it crosses as it is\n", cut[i]);
			continue;
		}
		q[i].scale = hi[i] > lo[i] ? (hi[i] - lo[i]) / 255.0f : 1.0f;
		z = nearbyint(-lo[i] / q[i].scale);
		q[i].zero_point = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
		printf("int8 transfer: '%s' crosses as '%s" NPU_ONNX_SPLIT_QSUFFIX "' (uint8): range [%.6g, %.6g] on %s, scale %.6g, zero point %u\n",
		       cut[i], cut[i], lo[i], hi[i], s->what, q[i].scale, q[i].zero_point);
	}
	rc = 0;
out:
	npu_session_destroy(hs);
	npu_model_destroy(hm);
	free(lo);
	free(hi);
	return rc;
}

/* Run a split: the head, then the tail on its outputs (+ model inputs it reads). */
static int run_split(struct npu_session *hs, struct npu_session *ts,
		     const struct npu_onnx_split *sp, size_t count,
		     const struct npu_host_tensor *in, size_t n_in)
{
	struct npu_host_tensor tin[MAX_SHAPES + 8];
	size_t i, k;

	if (sp->num_tail_inputs > MAX_SHAPES + 8 || npu_session_run(hs, in, n_in) != NPU_OK)
		return -1;
	for (i = 0; i < sp->num_tail_inputs; i++) {
		if (i < count) {
			npu_session_output(hs, i, &tin[i]);
			continue;
		}
		for (k = 0; k < n_in && strcmp(in[k].name, sp->tail_inputs[i]); k++)
			;
		if (k == n_in)
			return -1;
		tin[i] = in[k];
	}
	return npu_session_run(ts, tin, sp->num_tail_inputs) == NPU_OK ? 0 : -1;
}

#define MAX_COMPARED 64

/*
 * The accuracy cost of int8 transfer: the quantized split against the
 * fp32 split, both on the CPU (where the fp32 split is the whole model bit
 * for bit), on each sample; per output the worst cosine and error.
 */
static int int8_accuracy(struct npu_engine *eng, const struct npu_onnx_split *plain,
			 const struct npu_onnx_split *quant, size_t count, const struct samples *s)
{
	struct npu_model *m[4] = { 0 };
	struct npu_session *ss[4] = { 0 };
	double cos_min[MAX_COMPARED], err_max[MAX_COMPARED];
	size_t i, k, n_out = 0;
	int rc = -1;

	if (load_part(eng, plain->head, plain->head_size, "head", &m[0], &ss[0]) ||
	    load_part(eng, plain->tail, plain->tail_size, "tail", &m[1], &ss[1]) ||
	    load_part(eng, quant->head, quant->head_size, "int8 head", &m[2], &ss[2]) ||
	    load_part(eng, quant->tail, quant->tail_size, "int8 tail", &m[3], &ss[3]))
		goto out;
	n_out = npu_model_num_outputs(m[1]);
	if (n_out > MAX_COMPARED)
		n_out = MAX_COMPARED;
	for (i = 0; i < n_out; i++) {
		cos_min[i] = 1;
		err_max[i] = 0;
	}
	for (k = 0; k < s->n; k++) {
		if (run_split(ss[0], ss[1], plain, count, s->set[k], (size_t)s->n_in) ||
		    run_split(ss[2], ss[3], quant, count, s->set[k], (size_t)s->n_in)) {
			fprintf(stderr, "npu split: int8 transfer: running the parts on sample %zu: %s\n",
				k, npu_last_error());
			goto out;
		}
		for (i = 0; i < n_out; i++) {
			struct npu_host_tensor x, y;
			double c, e;

			if (npu_session_output(ss[1], i, &x) || npu_session_output(ss[3], i, &y) ||
			    x.dtype != NPU_TYPE_FLOAT)
				continue;
			compare(&x, &y, &c, &e);
			cos_min[i] = fmin(cos_min[i], c);
			err_max[i] = fmax(err_max[i], e);
		}
	}
	for (i = 0; i < n_out; i++) {
		struct npu_tensor_info info;

		if (npu_model_output_info(m[1], i, &info) != NPU_OK || info.dtype != NPU_TYPE_FLOAT)
			continue;
		printf("int8 transfer accuracy: output '%s': cosine %.7f, max abs error %.4g (int8 vs fp32 split on the CPU, worst of %zu sample%s)\n",
		       info.name, cos_min[i], err_max[i], s->n, s->n == 1 ? "" : "s");
	}
	rc = 0;
out:
	for (i = 0; i < 4; i++) {
		npu_session_destroy(ss[i]);
		npu_model_destroy(m[i]);
	}
	return rc;
}

/*
 * An int8-transfer split of 'cut': the fp32 head calibrated on the
 * samples, the model cut again with QuantizeLinear / DequantizeLinear at
 * the cut, the accuracy cost reported; 'out' is the quantized split.
 */
static int int8_split(const struct split_args *a, const void *data, size_t size,
		      const char *const *cut, size_t count, struct npu_onnx_split *out)
{
	struct npu_cli_model cm = { 0 };
	struct npu_model_options mo;
	struct npu_onnx_split plain = { 0 };
	struct npu_onnx_split_quant *q = calloc(count + 1, sizeof(*q));
	char msg[512];
	struct samples s = { 0 };
	int rc = -1;

	memset(out, 0, sizeof(*out));
	npu_model_options_init(&mo);
	if (!q || npu_cli_open(&cm, a->model, &mo, a->threads, "split"))
		goto out;
	if (load_samples(a, &cm, &s))
		goto out;
	if (npu_onnx_split(data, size, a->model, cut, count, &plain, msg, sizeof(msg)) != NPU_OK) {
		fprintf(stderr, "npu split: %s\n", msg);
		goto out;
	}
	if (int8_params(cm.engine, &plain, cut, count, &s, q))
		goto out;
	if (npu_onnx_split_quantized(data, size, a->model, cut, count, q, out, msg,
				     sizeof(msg)) != NPU_OK) {
		fprintf(stderr, "npu split: %s\n", msg);
		goto out;
	}
	if (int8_accuracy(cm.engine, &plain, out, count, &s)) {
		npu_onnx_split_free(out);
		goto out;
	}
	rc = 0;
out:
	npu_onnx_split_free(&plain);
	samples_free(&s);
	npu_cli_close(&cm);
	free(q);
	return rc;
}

static int auto_split(struct split_args *a, const void *data, size_t size)
{
	struct npu_onnx_cutgraph *cg = NULL;
	struct npu_onnx_sizes *sizes = NULL;
	char msg[512];
	struct npu_cli_model cm = { 0 };
	struct npu_model_options mo;
	struct npu_host_tensor ins[MAX_SHAPES];
	struct profile head = { 0 }, server = { 0 }, cpu = { 0 };
	struct cands c = { 0 };
	bool *hm = NULL, *tm = NULL;
	uint64_t in_bytes = 0, out_bytes = 0;
	double all_device = 0, all_server = 0, npu_ms = 0;
	size_t i, k, n, best = 0, n_in = 0;
	int n_rand = -1, rc = 1;
	bool on_npu = strcmp(a->device, "cpu") != 0;
	char label[512], dyn_shapes[MAX_SHAPES][300];

	if (npu_onnx_cutgraph_create(data, size, a->model, &cg, msg, sizeof(msg)) != NPU_OK) {
		fprintf(stderr, "npu split: %s\n", msg);
		return 1;
	}
	n = npu_onnx_cutgraph_num_nodes(cg);
	c.v = calloc(MAX_CANDIDATES + 2, sizeof(*c.v));
	hm = calloc(n + 1, sizeof(bool));
	tm = calloc(n + 1, sizeof(bool));
	if (!c.v || !hm || !tm)
		goto out;
	npu_onnx_cutgraph_enumerate(cg, MAX_CANDIDATES, add_cut, &c);
	/* The sample input: random, at the model's shapes (--shape for dynamic ones). */
	npu_model_options_init(&mo);
	if (npu_cli_open(&cm, a->model, &mo, 1, "split"))
		goto out;
	if (npu_model_num_inputs(cm.model) > MAX_SHAPES) {
		fprintf(stderr, "npu split: more than %d model inputs\n", MAX_SHAPES);
		goto out;
	}
	if (default_dynamic_dims(&cm, a, dyn_shapes))
		goto out;
	n_rand = npu_cli_random_inputs(&cm, 1, 0.0f, 1.0f, a->shapes, a->num_shapes, ins, "split");
	if (n_rand < 0)
		goto out;
	n_in = (size_t)n_rand;
	/* Shapes of every tensor at the sample's input shapes: the bytes of a cut. */
	if (npu_onnx_sizes_create(data, size, a->model, ins, n_in, &sizes, msg,
				  sizeof(msg)) != NPU_OK) {
		fprintf(stderr, "npu split: %s\n", msg);
		goto out;
	}
	for (i = 0; i < npu_onnx_sizes_num_inputs(sizes); i++)
		in_bytes += ins[i].nbytes;
	out_bytes = npu_onnx_sizes_output_bytes(sizes);

	fprintf(stderr, "npu split: profiling %zu nodes on the CPU (%d thread%s)...\n", n,
		a->threads, a->threads == 1 ? "" : "s");
	if (cpu_profile(a, cg, a->threads, ins, n_in, &cpu))
		goto out;
	if (on_npu) {
		fprintf(stderr, "npu split: compiling for %s (modeled NPU time)...\n", a->device);
		if (npu_profile(a, cg, ins, n_in, &cpu, &head, &npu_ms))
			goto out;
	} else {
		head.n = cpu.n;
		head.ms = malloc((cpu.n + 1) * sizeof(double));
		if (!head.ms)
			goto out;
		memcpy(head.ms, cpu.ms, cpu.n * sizeof(double));
	}
	if (a->server_profile) {
		if (read_profile(a->server_profile, cg, &server))
			goto out;
	} else if (a->server_threads == a->threads) {
		server.n = cpu.n;
		server.ms = malloc((cpu.n + 1) * sizeof(double));
		if (!server.ms)
			goto out;
		memcpy(server.ms, cpu.ms, cpu.n * sizeof(double));
	} else {
		fprintf(stderr, "npu split: profiling the server side (%d threads)...\n",
			a->server_threads);
		if (cpu_profile(a, cg, a->server_threads, ins, n_in, &server))
			goto out;
	}
	if (a->save_profile) {
		FILE *f = fopen(a->save_profile, "w");

		if (!f) {
			fprintf(stderr, "npu split: %s: %m\n", a->save_profile);
			goto out;
		}
		for (i = 0; i < n; i++)
			fprintf(f, "%s %.6f\n", npu_onnx_cutgraph_node_name(cg, i), server.ms[i]);
		fclose(f);
	}
	for (i = 0; i < n; i++) {
		all_device += head.ms[i];
		all_server += server.ms[i];
	}
	/* The two ends: no cut. */
	c.v[c.n] = (struct cand){ .kind = 1, .head_ms = all_device, .total_ms = all_device };
	c.n++;
	c.v[c.n] = (struct cand){ .kind = 2, .tail_ms = all_server, .bytes = in_bytes + out_bytes,
				  .xfer_ms = link_ms(a, in_bytes + out_bytes) };
	c.v[c.n].total_ms = c.v[c.n].xfer_ms + all_server;
	c.n++;
	for (i = 0; i + 2 < c.n; i++) {
		struct cand *x = &c.v[i];

		if (npu_onnx_cutgraph_check(cg, (const char *const *)x->names, x->count, hm, tm,
					    msg, sizeof(msg)) != NPU_OK)
			continue;
		for (k = 0; k < n; k++) {
			if (hm[k])
				x->head_ms += head.ms[k];
			if (tm[k])
				x->tail_ms += server.ms[k];
		}
		for (k = 0; k < x->count; k++)
			x->bytes += npu_onnx_sizes_bytes(sizes, x->names[k], a->int8);
		x->bytes += out_bytes;
		x->xfer_ms = link_ms(a, x->bytes);
		x->total_ms = x->head_ms + x->xfer_ms + x->tail_ms;
	}
	for (i = 0; i < c.n; i++)
		if (c.v[i].total_ms < c.v[best].total_ms)
			best = i;
	printf("model %s: %zu nodes, %zu candidate cuts; head on %s%s, server %s, link %.6g Mbit/s RTT %.6g ms%s\n",
	       a->model, n, c.n - 2, a->device,
	       on_npu ? " (NPU modeled + CPU measured)" : " (measured)",
	       a->server_profile ? a->server_profile : "cpu (measured)", a->mbit, a->rtt_ms,
	       a->int8 ? ", int8 transfer" : "");
	if (on_npu)
		printf("all on the device: %.3f ms = NPU %.3f ms (modeled) + nodes on the device's CPU %.3f ms (measured, fp32 profile)\n",
		       all_device, npu_ms, all_device - npu_ms);
	if (a->explain) {
		printf("%-44s %10s %12s %12s %10s %10s\n", "cut", "head ms", "bytes",
		       "transfer ms", "tail ms", "total ms");
		for (i = 0; i < c.n; i++)
			printf("%-44.44s %10.3f %12llu %12.3f %10.3f %10.3f%s\n",
			       cand_label(&c.v[i], label, sizeof(label)), c.v[i].head_ms,
			       (unsigned long long)c.v[i].bytes, c.v[i].xfer_ms, c.v[i].tail_ms,
			       c.v[i].total_ms, i == best ? "  <- chosen" : "");
	}
	printf("chosen: %s: head %.3f ms + transfer %.3f ms (%llu bytes) + tail %.3f ms = %.3f ms\n",
	       cand_label(&c.v[best], label, sizeof(label)), c.v[best].head_ms, c.v[best].xfer_ms,
	       (unsigned long long)c.v[best].bytes, c.v[best].tail_ms, c.v[best].total_ms);
	if (a->head_out && c.v[best].kind) {
		printf("no cut is faster: nothing written\n");
	} else if (a->head_out) {
		if (write_split(a, data, size, (const char *const *)c.v[best].names, c.v[best].count))
			goto out;
	} else if (c.v[best].kind == 0 && a->int8) {
		/* Not written, but the accuracy cost is reported. */
		struct npu_onnx_split sp;

		if (int8_split(a, data, size, (const char *const *)c.v[best].names, c.v[best].count,
			       &sp))
			goto out;
		npu_onnx_split_free(&sp);
	}
	rc = 0;
out:
	for (i = 0; c.v && i < c.n; i++) {
		free(c.v[i].names[0]);
		free(c.v[i].names[1]);
	}
	free(c.v);
	free(hm);
	free(tm);
	free(head.ms);
	free(server.ms);
	free(cpu.ms);
	if (n_rand > 0)
		npu_cli_free_inputs(ins, n_rand);
	npu_onnx_sizes_destroy(sizes);
	npu_cli_close(&cm);
	npu_onnx_cutgraph_destroy(cg);
	return rc;
}

int npu_cmd_split(int argc, char **argv)
{
	struct split_args a;
	char msg[512];
	void *data = NULL;
	size_t size = 0;
	int rc;

	if (parse_split_args(argc, argv, &a))
		return 2;
	if (npu_onnx_read_file(a.model, &data, &size, msg, sizeof(msg)) != NPU_OK) {
		fprintf(stderr, "npu split: %s\n", msg);
		return 1;
	}
	if (a.at) {
		char *buf = strdup(a.at);
		const char *names[256];
		size_t n = buf ? split_names(buf, names, 256) : 0;

		rc = buf ? write_split(&a, data, size, names, n) : 1;
		free(buf);
	} else {
		rc = auto_split(&a, data, size);
	}
	free(data);
	return rc;
}
