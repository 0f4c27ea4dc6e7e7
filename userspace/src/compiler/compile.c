// SPDX-License-Identifier: MIT
/* The compiler driver: passes, calibration, placement, segments, code. */
#include "compiler/compiler.h"
#include "compiler/lower.h"
#include "compiler/pointwise.h"
#include "compiler/segment_rt.h"
#include "cpu/ops/cpu_ops.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void npu_compile_options_init(struct npu_compile_options *o)
{
	memset(o, 0, sizeof(*o));
	o->calib_method = NPU_CALIB_MINMAX;	/* best measured on PP-OCRv4: compiler.md */
	o->percentile = 99.99;
	o->calib_seed = 1;
	o->random_calib_sets = 4;
}

struct build {
	struct npu_graph *g;
	const struct npu_compile_options *o;
	struct npu_device_info dev;
	struct npu_compiled *c;
	struct npu_node **rec_nodes;	/* records[i] describes rec_nodes[i] */
	struct npu_calib_table calib;	/* a subgraph's is the top one's (borrowed) */
	const struct npu_calib_table *top_calib;	/* holds every subgraph's table */
	const char *cpu_only;		/* every node stays on the CPU, for this reason */
	bool *keep_found;		/* per keep_fp32 entry, shared with subgraphs */
	size_t num_own;			/* records of b->g's own nodes */
	struct npu_qdq_table qdq;
	struct npu_qmap qmap;
	struct npu_pw_groups pw;	/* pointwise groups: one LUT each */
	bool subgraph;			/* a control-flow body: never cut in stages */
	struct npu_error *err;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct npu_placement_record *record_of(struct build *b,
					      const struct npu_node *n)
{
	size_t i;

	/* Records after num_own are the subgraphs' (merge_compiled()). */
	for (i = 0; i < b->num_own; i++)
		if (b->rec_nodes[i] == n)
			return &b->c->records[i];
	return NULL;
}

static void place(struct build *b, struct npu_node *n, enum npu_placement p,
		  const char *reason)
{
	struct npu_placement_record *r = record_of(b, n);

	n->placement = p;
	if (!r)
		return;
	r->placement = p;
	r->segment = -1;
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	n->placement_reason = r->reason;
}

static npu_status make_records(struct build *b)
{
	size_t i;

	b->c->records = calloc(b->g->num_nodes + 1, sizeof(*b->c->records));
	b->rec_nodes = calloc(b->g->num_nodes + 1, sizeof(*b->rec_nodes));
	if (!b->c->records || !b->rec_nodes)
		return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	for (i = 0; i < b->g->num_nodes; i++) {
		struct npu_node *n = b->g->nodes[i];
		struct npu_placement_record *r = &b->c->records[i];
		char label[32];

		snprintf(label, sizeof(label), "#%zu", i);
		r->node = strdup(n->name[0] ? n->name : label);
		r->op_type = strdup(n->op_type);
		if (!r->node || !r->op_type)
			return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
		r->macs = npu_node_macs(n);
		r->segment = -1;
		b->rec_nodes[i] = n;
		b->c->total_macs += r->macs;
		b->c->num_records++;
		b->num_own++;
	}
	return NPU_OK;
}

static const char *npu_reason(const struct npu_node *n)
{
	if (!strcmp(n->op_type, "Conv"))
		return "CONV2D on the MAC array";
	if (!strcmp(n->op_type, "ConvTranspose"))
		return "CONV2D with zero insertion on the MAC array";
	if (!strcmp(n->op_type, "Resize"))
		return "RESIZE on the vector unit";
	if (!strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "MatMul"))
		return "MATMUL on the MAC array";
	if (!strcmp(n->op_type, "GlobalAveragePool"))	/* lower.c: it requantizes */
		return "CONV2D (depthwise, the mean) on the MAC array";
	if (strstr(n->op_type, "Pool"))
		return "POOL on the vector unit";
	if (!strcmp(n->op_type, "Add") || !strcmp(n->op_type, "Mul"))
		return "ELTWISE on the vector unit";
	if (npu_is_data_movement(n))
		return "strided DMA (a LUT where the quantization changes)";
	if (!strcmp(n->op_type, "Softmax"))
		return "SOFTMAX on the vector unit";
	if (!strcmp(n->op_type, "LayerNormalization"))
		return "LAYERNORM on the vector unit";
	if (!strncmp(n->op_type, "Reduce", 6))
		return "REDUCE on the vector unit";
	return "LUT on the vector unit";
}

static bool is_named(struct build *b, const struct npu_node *n, const char *name)
{
	const struct npu_placement_record *r = record_of(b, n);

	return r && !strcmp(r->node, name);
}

/* The keep_fp32 entry naming n or a node of its pointwise group, or NULL. */
static const struct npu_keep_fp32 *kept_fp32(struct build *b, const struct npu_node *n)
{
	const struct npu_pw_group *grp = npu_pointwise_group_of(&b->pw, n);
	size_t i, j;

	for (i = 0; i < b->o->num_keep_fp32; i++) {
		const char *name = b->o->keep_fp32[i].node;

		if (is_named(b, n, name))
			return &b->o->keep_fp32[i];
		for (j = 0; grp && j < grp->count; j++)
			if (is_named(b, grp->nodes[j], name))
				return &b->o->keep_fp32[i];
	}
	return NULL;
}

/* Mark the keep_fp32 names this graph has (a subgraph's: by their own name). */
static void mark_keep_fp32(struct build *b)
{
	size_t i, j;

	for (i = 0; i < b->o->num_keep_fp32; i++)
		for (j = 0; j < b->c->num_records && !b->keep_found[i]; j++)
			b->keep_found[i] = !strcmp(b->c->records[j].node, b->o->keep_fp32[i].node);
}

/* Every node keep_fp32 names must exist (after the passes), in some graph. */
static npu_status check_keep_fp32(struct build *b)
{
	size_t i;

	for (i = 0; i < b->o->num_keep_fp32; i++) {
		const char *name = b->o->keep_fp32[i].node;

		if (!b->keep_found[i])
			return npu_error_set(b->err, NPU_ERR_INVALID_ARG,
					     "keep fp32: no node named '%s' in the compiled graph (npu compile --explain lists them; a fused activation or a folded BatchNormalization is part of its producer)",
					     name);
	}
	return NPU_OK;
}

/*
 * Every node int16_nodes names must exist and have an int16 form (else an
 * error that says why; int16_all leaves such nodes int8). The device must
 * have the mode at all.
 */
static npu_status check_int16(struct build *b)
{
	size_t i, j;

	if ((b->o->num_int16_nodes || b->o->int16_all) && !(b->dev.caps & NPU_CAP_INT16))
		return npu_error_set(b->err, NPU_ERR_UNSUPPORTED,
				     "int16: the device has no 16x8 mode (NPU_CAP_INT16)");
	for (i = 0; i < b->o->num_int16_nodes; i++) {
		const char *name = b->o->int16_nodes[i];
		const struct npu_node *n = NULL;
		char why[160];

		for (j = 0; j < b->g->num_nodes && !n; j++)
			if (!strcmp(b->g->nodes[j]->name, name))
				n = b->g->nodes[j];
		if (!n)
			return npu_error_set(b->err, NPU_ERR_INVALID_ARG,
					     "int16: no node named '%s' in the compiled graph (npu compile --explain lists them; a fused activation or a folded BatchNormalization is part of its producer)",
					     name);
		why[0] = 0;
		if (!npu_node_int16(b->o, &b->pw, n, why, sizeof(why)) && why[0] &&
		    !b->o->int16_lenient)
			return npu_error_set(b->err, NPU_ERR_UNSUPPORTED,
					     "int16: node '%s' cannot run in int16: %s (--precision int16 leaves such nodes int8)",
					     name, why);
	}
	for (i = 0; (b->o->num_int16_nodes || b->o->int16_all) && i < b->g->num_nodes; i++) {
		const struct npu_node *n = b->g->nodes[i];
		const struct npu_pw_group *grp = npu_pointwise_group_of(&b->pw, n);
		char **names;

		if (grp ? !npu_group_int16(b->o, grp) : !npu_node_int16(b->o, &b->pw, n, NULL, 0))
			continue;
		names = realloc(b->c->int16_nodes, (b->c->num_int16_nodes + 1) * sizeof(*names));
		if (!names || !(names[b->c->num_int16_nodes] = strdup(n->name))) {
			if (names)
				b->c->int16_nodes = names;
			return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
		}
		b->c->int16_nodes = names;
		b->c->num_int16_nodes++;
	}
	return NPU_OK;
}

static void initial_placement(struct build *b)
{
	size_t i;

	for (i = 0; i < b->g->num_nodes; i++) {
		struct npu_node *n = b->g->nodes[i];
		const struct npu_pw_group *grp = npu_pointwise_group_of(&b->pw, n);
		const struct npu_keep_fp32 *keep = kept_fp32(b, n);
		char why[160];

		if (b->cpu_only) {
			place(b, n, NPU_PLACE_CPU, b->cpu_only);
		} else if (npu_node_schema(b->g, n) && npu_node_schema(b->g, n)->owner) {
			snprintf(why, sizeof(why), "taken by provider '%s'",
				 npu_node_schema(b->g, n)->owner);
			place(b, n, NPU_PLACE_CPU, why);
		} else if (npu_node_schema(b->g, n) && npu_node_schema(b->g, n)->opaque) {
			place(b, n, NPU_PLACE_CPU,
			      "custom op: the application's kernel runs it on the CPU");
		} else if (npu_node_has_subgraph(n)) {
			place(b, n, NPU_PLACE_CPU,
			      "control flow runs on the CPU; its subgraphs are compiled on their own (records below)");
		} else if (keep) {
			/* An op the NPU cannot run keeps the reason why not. */
			if (grp || npu_node_supported(b->g, n, &b->dev, why, sizeof(why)))
				snprintf(why, sizeof(why), "%s", keep->reason ? keep->reason
					 : "kept in fp32 on the CPU (keep fp32)");
			place(b, n, NPU_PLACE_CPU, why);
		} else if (grp && npu_value_layout(grp->x) == npu_value_layout(grp->y)) {
			snprintf(why, sizeof(why), "LUT on the vector unit (%zu pointwise nodes '%s' -> '%s' as one table)",
				 grp->count, grp->x->name, grp->y->name);
			place(b, n, NPU_PLACE_NPU, why);
		} else if (npu_node_supported(b->g, n, &b->dev, why, sizeof(why))) {
			/* The 16x8 mode shows in the reason (--explain). */
			snprintf(why, sizeof(why), "%s%s", npu_reason(n),
				 npu_node_int16(b->o, &b->pw, n, NULL, 0) ? ", int16 activations" : "");
			place(b, n, NPU_PLACE_NPU, why);
		} else if (!npu_kernel_find(b->g, n)) {
			/* The graph knows the op (it inferred), no kernel runs it. */
			char both[sizeof(why) + 96];

			snprintf(both, sizeof(both), "no CPU kernel for op '%s%s%s' (opset %d); NPU: %s",
				 n->domain, n->domain[0] ? "." : "", n->op_type, n->opset, why);
			place(b, n, NPU_PLACE_CPU, both);
		} else
			place(b, n, NPU_PLACE_CPU, why);
	}
}

/*
 * Reorder nodes topologically, preferring to stay on the placement of the
 * node just scheduled, so NPU nodes cluster into as few segments as the
 * dependencies allow; ready NPU work goes first, so that a segment runs on
 * the device while the CPU executes the nodes that do not need it.
 */
static npu_status cluster_order(struct build *b)
{
	bool *npu = calloc(b->g->num_nodes + 1, sizeof(*npu));
	npu_status st;
	size_t i;

	if (!npu)
		return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	for (i = 0; i < b->g->num_nodes; i++)
		npu[i] = b->g->nodes[i]->placement == NPU_PLACE_NPU;
	st = npu_graph_cluster_order(b->g, npu, true, b->err);
	if (st)
		npu_error_prefix(b->err, "compile");
	free(npu);
	return st;
}

/* Consecutive NPU nodes in the clustered order: [first, end). */
struct span {
	size_t first, end;
};

static size_t find_spans(const struct npu_graph *g, struct span *spans)
{
	size_t i = 0, count = 0;

	while (i < g->num_nodes) {
		if (g->nodes[i]->placement != NPU_PLACE_NPU) {
			i++;
			continue;
		}
		spans[count].first = i;
		while (i < g->num_nodes && g->nodes[i]->placement == NPU_PLACE_NPU)
			i++;
		spans[count++].end = i;
	}
	return count;
}

static bool in_span(const struct npu_graph *g, const struct span *s,
		    const struct npu_node *n)
{
	size_t i;

	for (i = s->first; i < s->end; i++)
		if (g->nodes[i] == n)
			return true;
	return false;
}

/* The cost model's NPU cycles for one node: MACs, vector lanes, DMA in and out. */
static double node_cycles(const struct npu_node *n)
{
	double out = (double)npu_shape_numel(&n->outputs[0]->shape);

	return (double)npu_node_macs(n) / (NPU_MAC_ROWS * NPU_MAC_COLS) +
	       out / NPU_VECTOR_LANES + 2.0 * out / NPU_DMA_BYTES_PER_CYCLE;
}

/*
 * The cost model: a segment pays a job submission and the CPU-side
 * quantize / layout conversion of everything crossing its boundary. It
 * stays on the NPU only if its modeled time plus that cost beats the
 * CPU's estimate (30 GFLOP/s for MACs, 1 ns per element otherwise).
 */
static bool segment_worth_it(const struct npu_graph *g, const struct span *s,
			     char *why, size_t why_size)
{
	double macs = 0, elems = 0, boundary = 0, npu_cycles = 0, cpu_s, npu_s;
	size_t i, j;

	for (i = s->first; i < s->end; i++) {
		const struct npu_node *n = g->nodes[i];
		double out = (double)npu_shape_numel(&n->outputs[0]->shape);

		macs += (double)npu_node_macs(n);
		elems += out;
		npu_cycles += node_cycles(n);
		for (j = 0; j < n->num_inputs; j++) {
			const struct npu_value *v = n->inputs[j];

			if (v && !v->constant && (!v->producer || !in_span(g, s, v->producer)))
				boundary += (double)npu_shape_numel(&v->shape);
		}
		if (n->outputs[0]->is_graph_output)
			boundary += out;
	}
	cpu_s = macs * 2.0 / 30e9 + elems * 1e-9;
	npu_s = npu_cycles / (NPU_CLOCK_MHZ * 1e6) + boundary * 1e-9 + 30e-6;
	if (npu_s <= cpu_s)
		return true;
	snprintf(why, why_size,
		 "segment of %zu node(s) too small: est. NPU + transfers %.0f us > CPU %.0f us",
		 s->end - s->first, npu_s * 1e6, cpu_s * 1e6);
	return false;
}

static bool used_outside(const struct npu_graph *g, const struct span *s,
			 const struct npu_value *v)
{
	size_t i, j;

	if (v->is_graph_output)
		return true;
	for (i = 0; i < g->num_nodes; i++) {
		if (i >= s->first && i < s->end)
			continue;
		for (j = 0; j < g->nodes[i]->num_inputs; j++)
			if (g->nodes[i]->inputs[j] == v)
				return true;
	}
	return false;
}

/*
 * Drop the acts no lop reads or writes any more (a LUT input whose LUT
 * became its producer's output stage) and renumber the rest, so that the
 * memory plan and the .npub file see only real tensors.
 */
static npu_status drop_unused_acts(struct build *b, struct npu_segment *seg, uint32_t *act_of)
{
	struct npu_segment_program *p = &seg->prog;
	uint32_t *map = calloc(p->num_acts + 1, sizeof(*map));
	size_t i, n = 0;

	if (!map)
		return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	for (i = 0; i < p->num_lops; i++) {
		const struct npu_lop *l = &p->lops[i];

		map[l->in] = map[l->out] = 1;
		if (npu_lop_reads_in2(l))
			map[l->in2] = 1;
	}
	for (i = 0; i < p->num_acts; i++) {
		if (!map[i])
			continue;
		p->acts[n] = p->acts[i];
		map[i] = (uint32_t)++n;	/* new index + 1 */
	}
	for (i = 0; i < p->num_lops; i++) {
		struct npu_lop *l = &p->lops[i];

		l->in = map[l->in] - 1;
		l->out = map[l->out] - 1;
		if (npu_lop_reads_in2(l))
			l->in2 = map[l->in2] - 1;
	}
	for (i = 0; i < b->g->num_values; i++)
		if (act_of[i])
			act_of[i] = map[act_of[i] - 1];
	p->num_acts = n;
	free(map);
	return NPU_OK;
}

/*
 * Move each RESIZE whose output only one later ELTWISE or Concat COPY reads
 * to just before that ELTWISE, or before the first COPY of that Concat
 * (graph order often puts the FPN's upsample far from its Add), so that
 * code generation can run them as one tile loop (gen_resize_elt(),
 * gen_concat()) and the resized tensor lives one step. Nothing between
 * writes either of its acts, so the order stays valid.
 */
static void sink_resizes(struct npu_segment_program *p)
{
	size_t k, j, m;

	for (k = 0; k + 1 < p->num_lops; k++) {
		struct npu_lop r = p->lops[k];
		size_t reader = 0, readers = 0;

		if (r.kind != NPU_LOP_RESIZE)
			continue;
		for (j = k + 1; j < p->num_lops; j++) {
			const struct npu_lop *o = &p->lops[j];

			if (o->in == r.out || (npu_lop_reads_in2(o) && o->in2 == r.out)) {
				reader = j;
				readers++;
			}
		}
		if (readers != 1 || !(p->lops[reader].kind == NPU_LOP_COPY ||
				      (p->lops[reader].kind == NPU_LOP_ELTWISE &&
				       npu_lop_reads_in2(&p->lops[reader]))))
			continue;
		if (p->lops[reader].kind == NPU_LOP_COPY)	/* the Concat's first COPY */
			for (j = k + 1; j < reader; j++)
				if (p->lops[j].kind == NPU_LOP_COPY &&
				    p->lops[j].out == p->lops[reader].out) {
					reader = j;
					break;
				}
		/* already next to it (or behind other RESIZEs going there) */
		for (m = k + 1; m < reader && p->lops[m].kind == NPU_LOP_RESIZE; m++)
			;
		if (m == reader)
			continue;
		for (m = k + 1; m < reader; m++)
			if (p->lops[m].out == r.in || p->lops[m].out == r.out)
				break;
		if (m < reader)
			continue;
		memmove(&p->lops[k], &p->lops[k + 1], (reader - 1 - k) * sizeof(*p->lops));
		p->lops[reader - 1] = r;
		k--;	/* lop k is another one now */
	}
}

/*
 * A broadcast ELTWISE (det's RSE gate y * (s + 1)) whose output one later
 * ELTWISE alone reads as the other operand of a RESIZE sunk next to it
 * moves to just before that RESIZE; one whose output only a Concat's COPY
 * reads, or a RESIZE sunk before that Concat's copies, moves to just
 * before that group (its RESIZEs and gates): codegen then runs them as one
 * tile loop (gen_resize_elt(), gen_concat()), and the gate's output never
 * goes to DRAM. Nothing between may write its inputs or output.
 */
#define CAT_GROUP_MAX 16	/* codegen_fusion_groups.c CAT_MAX: inputs of a Concat loop */

static bool is_gate(const struct npu_lop *l)
{
	return l->kind == NPU_LOP_ELTWISE && l->elt.bcast != NPU_BCAST_NONE;
}

/* Where gate k goes (it moves to just before lop t), or 0: it stays. */
static size_t gate_target(const struct npu_segment_program *p, size_t k, size_t reader)
{
	const struct npu_lop *x = &p->lops[k], *e = &p->lops[reader], *r = &p->lops[reader - 1];
	size_t c = reader, s;

	if (e->kind == NPU_LOP_ELTWISE) {
		if (e->elt.bcast != NPU_BCAST_NONE || r->kind != NPU_LOP_RESIZE || reader < k + 3 ||
		    !((e->in == x->out && e->in2 == r->out) || (e->in2 == x->out && e->in == r->out)))
			return 0;
		return reader - 1;
	}
	if (e->kind == NPU_LOP_RESIZE)	/* the Concat COPY that reads it */
		for (c = reader + 1; c < p->num_lops && !(p->lops[c].kind == NPU_LOP_COPY &&
							   p->lops[c].in == e->out); c++)
			;
	if (c >= p->num_lops || p->lops[c].kind != NPU_LOP_COPY)
		return 0;
	for (s = c; s > k + 1 && p->lops[s - 1].kind == NPU_LOP_COPY &&
		    p->lops[s - 1].out == p->lops[c].out; s--)
		;
	/* RESIZEs, and gates one of them or a copy reads (not a gate's vector) */
	while (s > k + 1 && (p->lops[s - 1].kind == NPU_LOP_RESIZE || is_gate(&p->lops[s - 1]))) {
		size_t q;

		for (q = s; is_gate(&p->lops[s - 1]) && q <= c; q++)
			if ((p->lops[q].kind == NPU_LOP_RESIZE || p->lops[q].kind == NPU_LOP_COPY) &&
			    p->lops[q].in == p->lops[s - 1].out)
				break;
		if (q > c)
			break;
		s--;
	}
	/* the reader inside the group, the gate not next to it already */
	return s <= reader && s > k + 1 ? s : 0;
}

static void sink_gates(struct npu_segment_program *p)
{
	size_t k, j, m, t;

	for (k = 0; k + 2 < p->num_lops; k++) {
		struct npu_lop x = p->lops[k];
		size_t reader = 0, readers = 0;

		if (!is_gate(&x))
			continue;
		for (j = k + 1; j < p->num_lops; j++) {
			const struct npu_lop *o = &p->lops[j];

			if (o->in == x.out || (npu_lop_reads_in2(o) && o->in2 == x.out)) {
				reader = j;
				readers++;
			}
		}
		if (readers != 1 || reader < k + 2 || !(t = gate_target(p, k, reader)))
			continue;	/* not one reader, no loop to join, or in place */
		for (m = k + 1; m < t; m++)
			if (p->lops[m].out == x.in || p->lops[m].out == x.out ||
			    (npu_lop_reads_in2(&x) && p->lops[m].out == x.in2))
				break;
		if (m < t)
			continue;
		memmove(&p->lops[k], &p->lops[k + 1], (t - 1 - k) * sizeof(*p->lops));
		p->lops[t - 1] = x;
		k--;	/* lop k is another one now */
	}
}

/*
 * A conv that reads a conv's output moves up to right behind it when the
 * lops between neither write what it reads or writes nor read what it
 * writes, so that the two can run as one fused chain (codegen_fusion.c,
 * fusion_plan(): chains are consecutive lops). Graph order often puts
 * another branch between them: det's Squeeze-and-Excitation pools after
 * the FPN convs.
 */
static bool lop_touches(const struct npu_lop *m, const struct npu_lop *x)
{
	bool two = npu_lop_reads_in2(m);

	return m->out == x->in || m->out == x->out || m->in == x->out ||
	       (two && m->in2 == x->out);
}

static void hoist_conv_readers(struct npu_segment_program *p)
{
	size_t k, j, m;

	for (k = 0; k + 2 < p->num_lops; k++) {
		struct npu_lop x;

		if (p->lops[k].kind != NPU_LOP_CONV)
			continue;
		for (j = k + 1; j < p->num_lops; j++)
			if (p->lops[j].in == p->lops[k].out ||
			    (npu_lop_reads_in2(&p->lops[j]) && p->lops[j].in2 == p->lops[k].out))
				break;
		if (j >= p->num_lops || j == k + 1 || p->lops[j].kind != NPU_LOP_CONV ||
		    npu_lop_reads_in2(&p->lops[j]))
			continue;
		for (m = k + 1; m < j; m++)
			if (lop_touches(&p->lops[m], &p->lops[j]))
				break;
		if (m < j)
			continue;
		x = p->lops[j];
		memmove(&p->lops[k + 2], &p->lops[k + 1], (j - k - 1) * sizeof(*p->lops));
		p->lops[k + 1] = x;
	}
}

/* Boundary values and the arena plan of a lowered segment. */
static npu_status finish_segment(struct build *b, const struct span *s,
				 struct npu_segment *seg, uint32_t *act_of)
{
	struct npu_segment_program *p = &seg->prog;
	struct npu_arena_item *items;
	bool *written;
	size_t i, cap;

	if (drop_unused_acts(b, seg, act_of))
		return b->err->status;
	sink_resizes(p);
	sink_gates(p);
	hoist_conv_readers(p);
	items = calloc(p->num_acts + 1, sizeof(*items));
	written = calloc(p->num_acts + 1, sizeof(*written));
	cap = p->num_acts + 1;

	seg->inputs = calloc(cap, sizeof(*seg->inputs));
	seg->outputs = calloc(cap, sizeof(*seg->outputs));
	seg->input_acts = calloc(cap, sizeof(*seg->input_acts));
	seg->output_acts = calloc(cap, sizeof(*seg->output_acts));
	seg->input_layout = calloc(cap, sizeof(*seg->input_layout));
	seg->output_layout = calloc(cap, sizeof(*seg->output_layout));
	if (!items || !written || !seg->inputs || !seg->outputs || !seg->input_acts ||
	    !seg->output_acts || !seg->input_layout || !seg->output_layout) {
		free(items);
		free(written);
		return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	}
	for (i = 0; i < b->g->num_values; i++) {
		struct npu_value *v = b->g->values[i];
		uint32_t a;

		if (!act_of[i])
			continue;
		a = act_of[i] - 1;
		if (!v->producer || !in_span(b->g, s, v->producer)) {
			seg->inputs[seg->num_inputs] = v;
			seg->input_layout[seg->num_inputs] = p->acts[a].im2col.k_h ?
				NPU_LAYOUT_IM2COL : npu_value_layout(v);
			seg->input_acts[seg->num_inputs++] = a;
			items[a].first_step = 0;
		} else if (used_outside(b->g, s, v)) {
			seg->outputs[seg->num_outputs] = v;
			seg->output_layout[seg->num_outputs] = npu_value_layout(v);
			seg->output_acts[seg->num_outputs++] = a;
			items[a].last_step = (uint32_t)p->num_lops;
		} else {
			p->acts[a].internal = true;
		}
	}
	/* Values sharing an act (a copy that moves no byte): any boundary use wins. */
	for (i = 0; i < seg->num_inputs; i++)
		p->acts[seg->input_acts[i]].internal = false;
	for (i = 0; i < seg->num_outputs; i++)
		p->acts[seg->output_acts[i]].internal = false;
	for (i = 0; i < p->num_lops; i++) {
		const struct npu_lop *l = &p->lops[i];
		bool two = npu_lop_reads_in2(l);	/* in2 read */

		if (items[l->in].last_step < i)
			items[l->in].last_step = (uint32_t)i;
		if (two && items[l->in2].last_step < i)
			items[l->in2].last_step = (uint32_t)i;
		/* Several COPY lops write one Concat: it lives from the first. */
		if (!written[l->out])
			items[l->out].first_step = (uint32_t)i;
		written[l->out] = true;
		if (items[l->out].last_step < i)
			items[l->out].last_step = (uint32_t)i;
	}
	/*
	 * A chain of convs, each reading the one before, may run fused
	 * (codegen, fusion_plan(), at most NPU_FUSE_MAX): the first conv then
	 * reads its input until the last one's last tile, so that input must
	 * not share memory with what the chain writes.
	 */
	for (i = 0; i < p->num_lops; i++) {
		size_t j;

		for (j = i + 1; j < p->num_lops && j < i + NPU_FUSE_MAX; j++) {
			const struct npu_lop *a = &p->lops[j - 1], *q = &p->lops[j];

			if (a->kind != NPU_LOP_CONV || q->kind != NPU_LOP_CONV || q->in != a->out)
				break;
			if (items[p->lops[i].in].last_step < j)
				items[p->lops[i].in].last_step = (uint32_t)j;
		}
	}
	/* So may a RESIZE inside the ELTWISE or Concat COPY that reads its
	 * output (codegen, gen_resize_elt(), gen_concat()): its input lives
	 * until that reader. */
	for (i = 0; i < p->num_lops; i++) {
		const struct npu_lop *a = &p->lops[i];
		size_t j;

		if (a->kind != NPU_LOP_RESIZE || !p->acts[a->out].internal)
			continue;
		for (j = i + 1; j < p->num_lops; j++) {
			const struct npu_lop *q = &p->lops[j];

			if ((q->kind == NPU_LOP_ELTWISE || q->kind == NPU_LOP_COPY) &&
			    (q->in == a->out || (npu_lop_reads_in2(q) && q->in2 == a->out)) &&
			    items[a->in].last_step < j)
				items[a->in].last_step = (uint32_t)j;
		}
	}
	/* And a gate run inside that loop or a Concat's (sink_gates()): its
	 * inputs live until the lop that reads its output, or that output's
	 * RESIZE, when only such a group's lops lie between. */
	for (i = 0; i < p->num_lops; i++) {
		const struct npu_lop *x = &p->lops[i];
		size_t j, j2, last = 0;

		if (!is_gate(x) || !p->acts[x->out].internal)
			continue;
		for (j = i + 1; j < p->num_lops && j <= i + 3 * CAT_GROUP_MAX; j++) {
			const struct npu_lop *o = &p->lops[j];

			if (o->kind != NPU_LOP_RESIZE && o->kind != NPU_LOP_COPY &&
			    o->kind != NPU_LOP_ELTWISE)
				break;	/* not a loop's lop */
			if (o->in != x->out && !(npu_lop_reads_in2(o) && o->in2 == x->out))
				continue;
			last = j;
			for (j2 = j + 1; o->kind == NPU_LOP_RESIZE && j2 < p->num_lops; j2++) {
				const struct npu_lop *q = &p->lops[j2];

				if (q->kind != NPU_LOP_RESIZE && q->kind != NPU_LOP_COPY &&
				    q->kind != NPU_LOP_ELTWISE)
					break;
				if (q->in == o->out || (npu_lop_reads_in2(q) && q->in2 == o->out))
					last = j2;
			}
		}
		if (!last)
			continue;
		if (items[x->in].last_step < last)
			items[x->in].last_step = (uint32_t)last;
		if (npu_lop_reads_in2(x) && items[x->in2].last_step < last)
			items[x->in2].last_step = (uint32_t)last;
	}
	/* A value made in the span whose act no lop writes would be read as
	 * stale memory (a producer that wrote another precision's form). */
	for (i = 0; i < b->g->num_values; i++) {
		struct npu_value *v = b->g->values[i];

		if (act_of[i] && v->producer && in_span(b->g, s, v->producer) &&
		    !written[act_of[i] - 1]) {
			free(items);
			free(written);
			return npu_error_set(b->err, NPU_ERR_INTERNAL,
					     "compile: NPU tensor '%s' is read but its producer '%s' never writes it",
					     v->name, v->producer->name);
		}
	}
	free(written);
	for (i = 0; i < p->num_acts; i++)
		items[i].size = npu_act_bytes(&p->acts[i]);
	if (npu_arena_layout(items, p->num_acts, 64, &seg->mem)) {
		free(items);
		return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	}
	for (i = 0; i < p->num_acts; i++)
		p->acts[i].offset = items[i].offset;
	seg->arena_size = seg->mem.arena_bytes;
	free(items);
	return NPU_OK;
}

/*
 * Lower every span. A node that cannot be lowered (say, a requantization
 * multiplier out of range) goes to the CPU and *retry is set: the spans
 * change, so the caller starts over.
 */
static npu_status lower_spans(struct build *b, const struct span *spans,
			      size_t count, bool *retry)
{
	size_t k, i;

	*retry = false;
	for (k = 0; k < count; k++) {
		const struct span *s = &spans[k];
		struct npu_segment *seg = calloc(1, sizeof(*seg));
		uint32_t *act_of = calloc(b->g->num_values + 1, sizeof(*act_of));
		uint32_t *alt_of = calloc(b->g->num_values + 1, sizeof(*alt_of));
		struct npu_lower_ctx lc = {
			.graph = b->g, .qmap = &b->qmap, .calib = &b->calib,
			.opts = b->o, .seg = seg, .act_of = act_of, .compiled = b->c,
			.sram_size = b->dev.sram_size, .alt_of = alt_of,
		};
		npu_status st = NPU_OK;

		if (!seg || !act_of || !alt_of) {
			free(seg);
			free(act_of);
			free(alt_of);
			return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
		}
		seg->prog.opts = b->o->codegen;
		seg->index = (int)b->c->num_segments;
		seg->num_nodes = s->end - s->first;
		for (i = s->first; i < s->end && !*retry; i++) {
			struct npu_node *n = b->g->nodes[i];
			const struct npu_pw_group *grp = npu_pointwise_group_of(&b->pw, n);
			size_t lops = seg->prog.num_lops, j;
			char why[160];
			bool ok;

			if (grp) {
				/* The group's last node stands for all of it. */
				if (n != grp->y->producer)
					continue;
				ok = true;
				for (j = 0; j < grp->count; j++)
					ok &= in_span(b->g, s, grp->nodes[j]);
				if (!ok)
					snprintf(why, sizeof(why), "pointwise group split across segments");
				ok = ok && npu_lower_pointwise(&lc, grp, why, sizeof(why));
			} else {
				ok = npu_lower_node(&lc, n, why, sizeof(why));
			}
			if (ok && seg->prog.num_lops > lops)
				ok = npu_lop_fits(&seg->prog, &seg->prog.lops[seg->prog.num_lops - 1],
						  b->dev.sram_size, why, sizeof(why));
			if (!ok) {
				/* A group leaves the NPU whole: its members mean nothing alone. */
				for (j = 0; grp && j < grp->count; j++)
					place(b, grp->nodes[j], NPU_PLACE_CPU, why);
				place(b, n, NPU_PLACE_CPU, why);
				*retry = true;
			}
		}
		if (!*retry) {
			seg->first_node = strdup(b->g->nodes[s->first]->name);
			seg->last_node = strdup(b->g->nodes[s->end - 1]->name);
			seg->node_keys = calloc(seg->num_nodes, sizeof(*seg->node_keys));
			for (i = 0; seg->node_keys && i < seg->num_nodes; i++)
				seg->node_keys[i] = strdup(b->g->nodes[s->first + i]->outputs[0]->name);
			st = finish_segment(b, s, seg, act_of);
		}
		free(act_of);
		free(alt_of);
		if (*retry || st) {
			npu_segment_free(seg);
			return st;
		}
		for (i = s->first; i < s->end; i++) {
			struct npu_placement_record *r = record_of(b, b->g->nodes[i]);

			if (r)
				r->segment = seg->index;
		}
		b->c->segments[b->c->num_segments++] = seg;
	}
	return NPU_OK;
}

/*
 * Cutting span s before node 'at' (s->first < at < s->end) is allowed
 * unless a pointwise group (one LUT) would lie on both sides. Its price:
 * the elements of the values made before the cut and read after it.
 */
static bool cut_allowed(const struct build *b, const struct span *s, size_t at)
{
	const struct npu_pw_group *grp = npu_pointwise_group_of(&b->pw, b->g->nodes[at]);
	size_t j, k;

	for (j = 0; grp && j < grp->count; j++)
		for (k = s->first; k < at; k++)
			if (b->g->nodes[k] == grp->nodes[j])
				return false;
	return true;
}

static double cut_crossing(const struct npu_graph *g, const struct span *s, size_t at)
{
	double elems = 0;
	size_t i, j, k;

	for (i = s->first; i < at; i++) {
		const struct npu_node *n = g->nodes[i];

		for (j = 0; j < n->num_outputs; j++) {
			const struct npu_value *v = n->outputs[j];
			bool read_after = false;

			for (k = at; v && k < s->end && !read_after; k++) {
				size_t a;

				for (a = 0; a < g->nodes[k]->num_inputs; a++)
					read_after |= g->nodes[k]->inputs[a] == v;
			}
			if (read_after)
				elems += (double)npu_shape_numel(&v->shape);
		}
	}
	return elems;
}

/* The graph index of the node lop 'name' was lowered from, or SIZE_MAX. */
static size_t lop_node(const struct npu_graph *g, const char *name)
{
	size_t i;

	for (i = 0; name && *name && i < g->num_nodes; i++)
		if (g->nodes[i]->name && !strcmp(g->nodes[i]->name, name))
			return i;
	return SIZE_MAX;
}

/*
 * Per node (graph order): the code generator's predicted cycles of what
 * was lowered from it, the segments of b->c generated once for pricing.
 * A lop carries its source node's name (a fused activation or pointwise
 * group is priced on the node that stands for it); a fused group (lops in
 * one tile loop) has its cycles on its first lop, spread here over the
 * group by the nodes' MACs. A named node no lop names was folded into
 * another (a pointwise group's members, a fused activation): it costs
 * nothing of its own; unnamed ones keep the plain estimate (node_cycles()).
 */
static npu_status price_nodes(struct build *b, double *cost)
{
	struct npu_codegen_target t = {
		.sram_size = b->dev.sram_size, .caps = b->dev.caps,
		.arena_va = NPU_RELOC_BASE(NPU_RELOC_ARENA),
		.consts_va = NPU_RELOC_BASE(NPU_RELOC_CONSTS),
	};
	size_t n = b->g->num_nodes, k, l, j, end;
	size_t *node_of = calloc(n + 1, sizeof(*node_of));
	bool *priced = calloc(n + 1, sizeof(*priced));
	npu_status st = NPU_OK;

	if (!priced || !node_of) {
		free(priced);
		free(node_of);
		return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	}
	for (j = 0; j < n; j++)
		cost[j] = 0;
	for (k = 0; k < b->c->num_segments && !st; k++) {
		const struct npu_segment_program *prog = &b->c->segments[k]->prog;
		struct npu_codegen_result code = { 0 };
		struct npu_cmdbuf *cb = NULL;
		size_t *idx;

		idx = realloc(node_of, (prog->num_lops + 1) * sizeof(*idx));
		if (!idx || npu_cmdbuf_create(&cb)) {
			if (idx)
				node_of = idx;
			st = npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
			break;
		}
		node_of = idx;
		npu_cmdbuf_set_device(cb, b->o->device);
		st = npu_codegen_segment(prog, &t, cb, &code, b->err);
		for (l = 0; l < prog->num_lops; l++)
			node_of[l] = lop_node(b->g, prog->lops[l].name);
		for (l = 0; !st && l < prog->num_lops; l = end) {
			double macs = 0;

			for (end = l + 1; end < prog->num_lops && code.lop_fused[end]; end++)
				;
			for (j = l; j < end; j++)
				macs += node_of[j] == SIZE_MAX ? 1 :
					(double)npu_node_macs(b->g->nodes[node_of[j]]) + 1;
			for (j = l; j < end; j++) {
				double w = node_of[j] == SIZE_MAX ? 1 :
					   (double)npu_node_macs(b->g->nodes[node_of[j]]) + 1;

				if (node_of[j] == SIZE_MAX)
					continue;
				cost[node_of[j]] += (double)code.lop_pred_cycles[l] * w / macs;
				priced[node_of[j]] = true;
			}
		}
		npu_codegen_result_free(&code);
		npu_cmdbuf_destroy(cb);
	}
	/* Named nodes no lop names were folded into one that does (cost 0);
	 * unnamed ones, which no lop can name, get the plain estimate. */
	for (j = 0; j < n; j++)
		if (!priced[j] && b->g->nodes[j]->placement == NPU_PLACE_NPU &&
		    !(b->g->nodes[j]->name && *b->g->nodes[j]->name))
			cost[j] = node_cycles(b->g->nodes[j]);
	free(priced);
	free(node_of);
	return st;
}

/*
 * Pipeline stages (npu_compile_options.pipeline_stages): split the spans
 * so that the NPU work falls into 'stages' parts of similar modeled cost
 * ('cost' per node, price_nodes()).
 * Each cut goes where the fewest elements cross among the positions whose
 * cost so far is within a quarter of a stage of the ideal point (a span's
 * own end is a cut for free); the runtime then puts consecutive segments
 * on different devices. Returns the new span count.
 */
static size_t cut_stages(struct build *b, struct span *spans, size_t count, const double *cost)
{
	double *prefix, total = 0, share;
	size_t n = b->g->num_nodes, i, k, stages = (size_t)b->o->pipeline_stages;
	struct span *out;
	size_t num_out = 0;

	if (stages < 2 || !count)
		return count;
	prefix = calloc(n + 1, sizeof(*prefix));	/* NPU cost before node i */
	out = calloc(n + 1, sizeof(*out));
	if (!prefix || !out) {
		free(prefix);
		free(out);
		return count;	/* no cut is still a correct program */
	}
	for (k = 0; k < count; k++)
		for (i = spans[k].first; i < spans[k].end; i++) {
			prefix[i] = total;
			total += cost[i];
		}
	share = total / (double)stages;
	for (k = 0; k < count; k++) {
		struct span cur = spans[k];
		size_t stage;

		for (stage = 1; stage < stages && share > 0; stage++) {
			double ideal = share * (double)stage, best_cross = 0, best_dist = 0;
			size_t best = 0;

			/* Already cut there by a span boundary, or not in this span. */
			if (prefix[cur.first] >= ideal - share / 4 ||
			    prefix[cur.end - 1] + cost[cur.end - 1] <= ideal + share / 4)
				continue;
			for (i = cur.first + 1; i < cur.end; i++) {
				double dist = prefix[i] > ideal ? prefix[i] - ideal : ideal - prefix[i];
				double cross;

				if (dist > share / 4 || !cut_allowed(b, &cur, i))
					continue;
				cross = cut_crossing(b->g, &cur, i);
				if (!best || cross < best_cross ||
				    (cross == best_cross && dist < best_dist)) {
					best = i;
					best_cross = cross;
					best_dist = dist;
				}
			}
			if (!best)
				continue;
			out[num_out].first = cur.first;
			out[num_out++].end = best;
			cur.first = best;
		}
		out[num_out++] = cur;
	}
	memcpy(spans, out, num_out * sizeof(*spans));
	free(prefix);
	free(out);
	return num_out;
}

static void drop_segments(struct npu_compiled *c)
{
	size_t i;

	for (i = 0; i < c->num_segments; i++)
		npu_segment_free(c->segments[i]);
	c->num_segments = 0;
}

static npu_status partition(struct build *b)
{
	struct span *spans = calloc(b->g->num_nodes + 1, sizeof(*spans));
	double *cost = NULL;	/* per node, for pipeline cuts */
	size_t count, i, round;
	npu_status st = NPU_OK;

	b->c->segments = calloc(b->g->num_nodes + 1, sizeof(*b->c->segments));
	if (!spans || !b->c->segments) {
		free(spans);
		return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	}
	/* Each round moves at least one node to the CPU, so this ends. */
	for (round = 0; round <= b->g->num_nodes; round++) {
		bool changed = false;

		st = cluster_order(b);
		if (st)
			break;
		count = find_spans(b->g, spans);
		for (i = 0; i < count; i++) {
			char why[160];
			size_t j;

			/*
			 * A copy or transpose at either end of a segment costs
			 * the DMA engine a pass over the tensor, while the CPU's
			 * quantize + layout conversion at the boundary does it
			 * in the same loop: leave it to the CPU.
			 */
			if (!b->o->keep_small_segments && spans[i].end - spans[i].first > 1) {
				struct npu_node *edge = b->g->nodes[spans[i].first];

				if (!npu_is_data_movement(edge))
					edge = b->g->nodes[spans[i].end - 1];
				if (npu_is_data_movement(edge)) {
					place(b, edge, NPU_PLACE_CPU,
					      "data movement at the edge of an NPU segment: the boundary's quantize / layout conversion on the CPU does it");
					changed = true;
					break;
				}
			}
			if (b->o->keep_small_segments ||
			    segment_worth_it(b->g, &spans[i], why, sizeof(why)))
				continue;
			for (j = spans[i].first; j < spans[i].end; j++)
				place(b, b->g->nodes[j], NPU_PLACE_CPU, why);
			changed = true;
		}
		if (changed)
			continue;
		drop_segments(b->c);
		if (!b->subgraph && b->o->pipeline_stages > 1) {
			/* Price the uncut segments with the code generator's model, then cut. */
			st = lower_spans(b, spans, count, &changed);
			if (st)
				break;
			if (changed)
				continue;
			if (!cost)
				cost = calloc(b->g->num_nodes + 1, sizeof(*cost));
			st = cost ? price_nodes(b, cost)
				  : npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
			drop_segments(b->c);
			if (st)
				break;
			count = cut_stages(b, spans, count, cost);
		}
		st = lower_spans(b, spans, count, &changed);
		if (st || !changed)
			break;
	}
	free(cost);
	free(spans);
	return st;
}

/*
 * A CPU node on a path from one NPU segment to another (through CPU nodes
 * only) splits the device's work: its reason says so, with the cost model's
 * price for what it alone moves across (segment_worth_it(): a job
 * submission, 1 ns per element quantized or dequantized). Nodes are in
 * the clustered topological order here.
 */
static npu_status report_splits(struct build *b)
{
	size_t n = b->g->num_nodes, i, j, k, m;
	int *up = malloc((n + 1) * sizeof(*up)), *down = malloc((n + 1) * sizeof(*down));
	double *elems = malloc((n + 1) * sizeof(*elems));

	if (!up || !down || !elems) {
		free(up);
		free(down);
		free(elems);
		return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	}
	for (i = 0; i < n; i++) {
		const struct npu_placement_record *r = record_of(b, b->g->nodes[i]);

		up[i] = down[i] = r && r->placement == NPU_PLACE_NPU ? r->segment : -1;
	}
	/* up: the latest segment feeding a node through CPU nodes. */
	for (i = 0; i < n; i++) {
		const struct npu_node *x = b->g->nodes[i];

		if (x->placement == NPU_PLACE_NPU)
			continue;
		for (j = 0; j < x->num_inputs; j++)
			for (m = 0; x->inputs[j] && x->inputs[j]->producer && m < i; m++)
				if (b->g->nodes[m] == x->inputs[j]->producer && up[m] > up[i])
					up[i] = up[m];
	}
	/* down: the first segment a node feeds through CPU nodes. */
	for (i = n; i-- > 0;) {
		const struct npu_node *x = b->g->nodes[i];

		if (x->placement == NPU_PLACE_NPU)
			continue;
		for (k = 0; k < x->num_outputs; k++)
			for (m = i + 1; x->outputs[k] && m < n; m++)
				for (j = 0; j < b->g->nodes[m]->num_inputs; j++)
					if (b->g->nodes[m]->inputs[j] == x->outputs[k] && down[m] >= 0 &&
					    (down[i] < 0 || down[m] < down[i]))
						down[i] = down[m];
	}
	/* What each such node moves across; the split pays for all of them. */
	for (i = 0; i < n; i++) {
		struct npu_node *x = b->g->nodes[i];

		elems[i] = 0;
		if (x->placement == NPU_PLACE_NPU || up[i] < 0 || down[i] < 0)
			continue;
		for (j = 0; j < x->num_inputs; j++)
			if (x->inputs[j] && x->inputs[j]->producer &&
			    x->inputs[j]->producer->placement == NPU_PLACE_NPU)
				elems[i] += (double)npu_shape_numel(&x->inputs[j]->shape);
		for (k = 0; k < x->num_outputs; k++) {
			bool feeds = false;

			for (m = i + 1; x->outputs[k] && m < n && !feeds; m++)
				for (j = 0; j < b->g->nodes[m]->num_inputs; j++)
					feeds |= b->g->nodes[m]->inputs[j] == x->outputs[k] &&
						 b->g->nodes[m]->placement == NPU_PLACE_NPU;
			if (feeds)
				elems[i] += (double)npu_shape_numel(&x->outputs[k]->shape);
		}
	}
	for (i = 0; i < n; i++) {
		struct npu_placement_record *r = record_of(b, b->g->nodes[i]);
		double total = 0;
		size_t len;

		if (!r || b->g->nodes[i]->placement == NPU_PLACE_NPU || up[i] < 0 || down[i] < 0)
			continue;
		for (m = 0; m < n; m++)
			if (up[m] == up[i] && down[m] == down[i] &&
			    b->g->nodes[m]->placement != NPU_PLACE_NPU)
				total += elems[m];
		len = strlen(r->reason);
		snprintf(r->reason + len, sizeof(r->reason) - len,
			 "; splits NPU segments %d -> %d, est. %.0f us per run (a job submission + %.0f elements crossing at 1 ns)",
			 up[i], down[i], 30.0 + total * 1e-3, total);
	}
	free(up);
	free(down);
	free(elems);
	return NPU_OK;
}

static struct npu_node *producer_of(struct npu_graph *g, const char *value)
{
	struct npu_value *v = npu_graph_find_value(g, value);

	return v ? v->producer : NULL;
}

/* Replace a bound segment's nodes by one NpuSegment node. */
static npu_status rewrite_segment(struct npu_graph *g, struct npu_segment *seg,
				  struct npu_error *err)
{
	struct npu_node *sn;
	char name[64];
	size_t i;

	for (i = 0; i < seg->num_nodes; i++)
		if (!producer_of(g, seg->node_keys[i]))
			return npu_error_set(err, NPU_ERR_MODEL,
					     "NPU segment %d: no node produces '%s' in this graph",
					     seg->index, seg->node_keys[i]);
	snprintf(name, sizeof(name), "npu_segment_%d", seg->index);
	sn = npu_graph_add_node(g, NPU_SEGMENT_OP, NPU_SEGMENT_DOMAIN, name,
				seg->num_inputs, seg->num_outputs, err);
	if (!sn)
		return err->status ? err->status : NPU_ERR_NO_MEMORY;
	sn->opset = 1;
	/* Which segment it runs: a compiled file binds its code by it. */
	if (npu_node_set_attr_int(sn, "segment", seg->index))
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	sn->placement = NPU_PLACE_NPU;
	sn->placement_reason = "compiled NPU segment";
	for (i = 0; i < seg->num_inputs; i++)
		sn->inputs[i] = seg->inputs[i];
	for (i = 0; i < seg->num_nodes; i++)
		npu_graph_remove_node(g, producer_of(g, seg->node_keys[i]));
	for (i = 0; i < seg->num_outputs; i++) {
		sn->outputs[i] = seg->outputs[i];
		seg->outputs[i]->producer = sn;
	}
	sn->op_state = seg;	/* shared; each session binds its own run */
	return NPU_OK;
}

/*
 * --explain: the nodes whose convolutions code generation gave 2:4 sparse
 * weights or compressed weight streams (ISA 1.6, codegen_sparse.c) say so
 * in their reason, with the modeled MAC cycles and DRAM bytes saved.
 */
static void explain_sparse(struct npu_compiled *c)
{
	size_t s, i, j;

	for (s = 0; s < c->num_segments; s++) {
		const struct npu_segment *seg = c->segments[s];
		const struct npu_codegen_result *r = &seg->code;

		for (i = 0; r->lop_sparse && i < seg->prog.num_lops; i++) {
			if (!r->lop_sparse[i] && !r->lop_weight_bytes_saved[i])
				continue;
			for (j = 0; j < c->num_records; j++) {
				struct npu_placement_record *rec = &c->records[j];
				size_t used = strlen(rec->reason);

				if (strcmp(rec->node, seg->prog.lops[i].name))
					continue;
				snprintf(rec->reason + used, sizeof(rec->reason) - used,
					 r->lop_sparse[i] ?
					 "; 2:4 sparse weights: %llu MAC cycles, %llu DRAM bytes of constants saved" :
					 "; compressed weights: %llu MAC cycles, %llu DRAM bytes of constants saved",
					 (unsigned long long)r->lop_sparse_cycles_saved[i],
					 (unsigned long long)r->lop_weight_bytes_saved[i]);
				break;
			}
		}
	}
}

/* The counts of a profiled generation stay those of the plain one. */
npu_status npu_segment_generate(struct npu_segment *seg, struct npu_device *dev,
				 uint32_t sram_size, bool profile, struct npu_error *err)
{
	struct npu_codegen_target t = {
		.sram_size = sram_size,
		.arena_va = NPU_RELOC_BASE(NPU_RELOC_ARENA),
		.consts_va = NPU_RELOC_BASE(NPU_RELOC_CONSTS),
		.profile_va = profile ? NPU_RELOC_BASE(NPU_RELOC_PROFILE) : 0,
	};
	struct npu_segment_stream *out = profile ? &seg->profile_stream : &seg->stream;
	struct npu_codegen_result code = { 0 };
	struct npu_device_info info;
	struct npu_cmdbuf *cb = NULL;
	const void *data;
	size_t size;
	npu_status st;
	char what[64];

	/* The ISA 1.6 forms (sparse weights, weight codec) where the device has them. */
	if (dev && npu_device_get_info(dev, &info) == NPU_OK)
		t.caps = info.caps;
	if (npu_cmdbuf_create(&cb))
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	npu_cmdbuf_set_device(cb, dev);
	st = npu_codegen_segment(&seg->prog, &t, cb, &code, err);
	if (seg->compiled)
		seg->compiled->codegen_runs++;
	if (!st) {
		uint64_t size_of[NPU_RELOC_REGIONS] = {
			seg->arena_size, code.consts_size, 8 * (seg->prog.num_lops + 1)
		};

		npu_segment_stream_free(out);
		data = npu_cmdbuf_data(cb, &size);
		out->data = malloc(size);
		if (!out->data)
			st = npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
		else
			memcpy(out->data, data, size);
		out->size = size;
		snprintf(what, sizeof(what), "NPU segment %d", seg->index);
		if (!st)
			st = npu_reloc_scan(out->data, size, size_of, what, &out->relocs,
					    &out->num_relocs, err);
	}
	npu_cmdbuf_destroy(cb);
	if (!st && !profile) {
		npu_codegen_result_free(&seg->code);
		seg->code = code;
		seg->code_sram_size = sram_size;
	} else {
		npu_codegen_result_free(&code);
	}
	return st;
}

npu_status npu_compiled_bind(struct npu_compiled *c, struct npu_graph *graph,
			     struct npu_device *dev, struct npu_error *err)
{
	npu_status st = npu_compiled_attach(c, dev, err);
	size_t i;

	if (st || !c->num_segments)
		return st;
	for (i = 0; i < c->num_segments && !st; i++) {
		struct npu_segment *seg = c->segments[i];

		seg->graph = npu_subgraph_at(graph, seg->graph_path);
		if (!seg->graph)
			return npu_error_set(err, NPU_ERR_MODEL,
					     "NPU segment %d: the graph has no subgraph where it was compiled (%s)",
					     seg->index, seg->first_node ? seg->first_node : "?");
		st = rewrite_segment(seg->graph, seg, err);
	}
	if (!st)
		st = npu_graph_sort(graph, err);
	for (i = 0; i < c->num_segments && !st; i++)
		if (c->segments[i]->graph != graph)
			st = npu_graph_sort(c->segments[i]->graph, err);
	return st;
}

/*
 * Run fn on every subgraph below g, depth first; an error names the
 * control-flow node and the attribute it is in.
 */
static npu_status for_subgraphs(struct npu_graph *g, struct npu_qdq_table *qdq,
				npu_status (*fn)(struct npu_graph *, struct npu_qdq_table *,
						 struct npu_error *),
				struct npu_error *err)
{
	npu_status st;
	size_t i, a;

	for (i = 0; i < g->num_nodes; i++) {
		const struct npu_node *n = g->nodes[i];

		for (a = 0; a < n->num_attrs && npu_node_subgraphs_open(g, n); a++) {
			if (n->attrs[a].type != NPU_ATTR_GRAPH || !n->attrs[a].g)
				continue;
			st = fn(n->attrs[a].g, qdq, err);
			if (!st)
				st = for_subgraphs(n->attrs[a].g, qdq, fn, err);
			if (st) {
				npu_error_prefix(err, "%s node '%s': %s", n->op_type, n->name,
						 n->attrs[a].name);
				return st;
			}
		}
	}
	return NPU_OK;
}

static npu_status passes_pre_one(struct npu_graph *graph, struct npu_qdq_table *qdq,
				 struct npu_error *err)
{
	const struct npu_pass passes[] = {
		{ "dead_nodes", npu_pass_dead_nodes, NULL },
		{ "qdq", npu_pass_qdq, qdq },
		{ "fold_batchnorm", npu_pass_fold_batchnorm, NULL },
		{ "cancel_transposes", npu_pass_cancel_transposes, NULL },
		/* Before arith_canon: the pattern's Sub / Div stay recognizable. */
		{ "fuse_layernorm", npu_pass_fuse_layernorm, NULL },
		{ "arith_canon", npu_pass_arith_canon, NULL },
		/* After arith_canon: x / c and x - c are Mul / Add by now. */
		{ "fold_channel_affine", npu_pass_fold_channel_affine, NULL },
		{ "fold_self_gate", npu_pass_fold_self_gate, NULL },
		{ "dead_nodes", npu_pass_dead_nodes, NULL },
	};

	return npu_graph_run_passes(graph, passes, sizeof(passes) / sizeof(passes[0]), err);
}

/* Subgraphs go through the same passes: their NPU segments are compiled too. */
npu_status npu_compile_passes_pre(struct npu_graph *graph,
				  struct npu_qdq_table *qdq,
				  struct npu_error *err)
{
	npu_status st = passes_pre_one(graph, qdq, err);

	return st ? st : for_subgraphs(graph, qdq, passes_pre_one, err);
}

static npu_status passes_fuse_one(struct npu_graph *graph, struct npu_qdq_table *qdq,
				  struct npu_error *err)
{
	const struct npu_pass fuse[] = {
		{ "fuse_activation", npu_pass_fuse_activation, NULL },
	};

	(void)qdq;
	return npu_graph_run_passes(graph, fuse, 1, err);
}

npu_status npu_compile_passes_fuse(struct npu_graph *graph,
				   struct npu_error *err)
{
	npu_status st = passes_fuse_one(graph, NULL, err);

	return st ? st : for_subgraphs(graph, NULL, passes_fuse_one, err);
}

static char *concat(const char *a, const char *b, const char *c, const char *d, const char *e)
{
	size_t n = strlen(a) + strlen(b) + strlen(c) + strlen(d) + strlen(e) + 1;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s%s%s%s", a, b, c, d, e);
	return s;
}

/*
 * Move a subgraph's records and segments into c: records named
 * "<prefix><node>", segment indices after c's, each segment knowing the
 * subgraph's path. 'sub' keeps nothing that needs freeing but itself.
 */
static npu_status merge_compiled(struct npu_compiled *c, struct npu_compiled *sub,
				 const char *path, const char *prefix, struct npu_error *err)
{
	size_t i, off = c->num_segments;
	struct npu_placement_record *r;
	struct npu_segment **sg;
	char **w;

	r = realloc(c->records, (c->num_records + sub->num_records + 1) * sizeof(*r));
	if (r)
		c->records = r;
	sg = realloc(c->segments, (c->num_segments + sub->num_segments + 1) * sizeof(*sg));
	if (sg)
		c->segments = sg;
	w = realloc(c->warnings, (c->num_warnings + sub->num_warnings + 1) * sizeof(*w));
	if (w)
		c->warnings = w;
	if (!r || !sg || !w)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	for (i = 0; i < sub->num_records; i++) {
		struct npu_placement_record *d = &c->records[c->num_records];

		*d = sub->records[i];
		d->node = concat(prefix, sub->records[i].node, "", "", "");
		free(sub->records[i].node);
		sub->records[i].node = NULL;
		sub->records[i].op_type = NULL;		/* moved */
		if (d->segment >= 0)
			d->segment += (int)off;
		c->num_records++;
		if (!d->node) {
			free(d->op_type);
			c->num_records--;
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
		}
	}
	for (i = 0; i < sub->num_segments; i++) {
		struct npu_segment *seg = sub->segments[i];
		char *first = concat(prefix, seg->first_node ? seg->first_node : "", "", "", "");
		char *last = concat(prefix, seg->last_node ? seg->last_node : "", "", "", "");

		char *where = concat(path, seg->graph_path ? seg->graph_path : "", "", "", "");

		seg->index += (int)off;
		free(seg->graph_path);	/* relative to sub's graph: now to c's */
		seg->graph_path = where;
		free(seg->first_node);
		free(seg->last_node);
		seg->first_node = first;
		seg->last_node = last;
		c->segments[c->num_segments++] = seg;
		sub->segments[i] = NULL;
		if (!first || !last || !seg->graph_path) {
			sub->num_segments = 0;
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
		}
	}
	sub->num_segments = 0;
	for (i = 0; i < sub->num_warnings; i++)
		c->warnings[c->num_warnings++] = sub->warnings[i];
	sub->num_warnings = 0;
	c->total_macs += sub->total_macs;
	c->npu_macs += sub->npu_macs;
	return NPU_OK;
}

static npu_status compile_placed(struct build *b);

/*
 * The subgraphs of b's control-flow nodes, each compiled like a graph of
 * its own with the ranges calibration saw inside it (every iteration):
 * the control-flow node stays on the CPU and runs the subgraph's NPU
 * segments each time it runs the subgraph. MACs and the cost model count
 * one run of the subgraph.
 */
static npu_status compile_subgraphs(struct build *b)
{
	npu_status st = NPU_OK;
	size_t i, a;

	for (i = 0; i < b->g->num_nodes && !st; i++) {
		struct npu_node *n = b->g->nodes[i];

		for (a = 0; a < n->num_attrs && !st && npu_node_subgraphs_open(b->g, n); a++) {
			/* Looked up each time: merging moves the records. */
			const struct npu_placement_record *rec = record_of(b, n);
			struct npu_graph *body = n->attrs[a].g;
			const struct npu_calib_sub *sub;
			struct build sb = {
				.g = body, .o = b->o, .dev = b->dev, .err = b->err,
				.top_calib = b->top_calib, .keep_found = b->keep_found,
				.qdq = b->qdq, .subgraph = true,
			};
			char *path, *prefix;

			if (n->attrs[a].type != NPU_ATTR_GRAPH || !body)
				continue;
			/* Relative to b->g: merging into each enclosing level prepends its own. */
			path = concat("", npu_subgraph_key(n), "\n", n->attrs[a].name, "\n");
			prefix = concat("", rec ? rec->node : n->name, "/", n->attrs[a].name, "/");
			sb.c = calloc(1, sizeof(*sb.c));
			if (!path || !prefix || !sb.c) {
				free(path);
				free(prefix);
				free(sb.c);
				return npu_error_set(b->err, NPU_ERR_NO_MEMORY, "compile: out of memory");
			}
			sub = npu_calib_table_sub(b->top_calib, body);
			if (sub && sub->ran)
				sb.calib = sub->table;	/* borrowed */
			else
				sb.cpu_only = sub ? "its subgraph never ran during calibration: no ranges for int8"
						  : "the calibration runner cannot range values inside subgraphs";
			st = compile_placed(&sb);
			if (!st)
				st = merge_compiled(b->c, sb.c, path, prefix, b->err);
			npu_compiled_free(sb.c);
			free(path);
			free(prefix);
		}
	}
	return st;
}

/* Placement, segments and their code for b->g, then for its subgraphs. */
static npu_status compile_placed(struct build *b)
{
	npu_status st;
	size_t i;

	/* Before anything asks npu_value_layout(): placement, groups, segments. */
	if (!b->cpu_only)
		npu_mark_rows_layout(b->g);
	st = make_records(b);
	if (!st)
		mark_keep_fp32(b);
	if (!st && !b->cpu_only)
		st = npu_find_pointwise_groups(b->g, &b->pw, b->err);
	/* The top-level graph's names (subgraphs share the options). */
	if (!st && b->top_calib == &b->calib)
		st = check_int16(b);
	if (!st && !b->cpu_only)
		st = npu_build_qmap(b->g, &b->calib, &b->qdq, b->o, &b->pw, &b->qmap, b->err);
	if (!st) {
		initial_placement(b);
		st = partition(b);
		if (!st)
			st = report_splits(b);
	}
	for (i = 0; !st && i < b->c->num_records; i++)
		if (b->c->records[i].placement == NPU_PLACE_NPU)
			b->c->npu_macs += b->c->records[i].macs;
	if (!st)
		st = compile_subgraphs(b);
	npu_qmap_free(&b->qmap);
	npu_pointwise_groups_free(&b->pw);
	free(b->rec_nodes);
	b->rec_nodes = NULL;
	return st;
}

npu_status npu_compile_graph(struct npu_graph *graph,
			     const struct npu_compile_options *opts,
			     struct npu_compiled **out, struct npu_error *err)
{
	struct build b = { .g = graph, .o = opts, .err = err };
	double t0 = now_ms();
	npu_status st;

	*out = NULL;
	if (!opts->device)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "compile: no device to compile for");
	b.c = calloc(1, sizeof(*b.c));
	b.keep_found = calloc(opts->num_keep_fp32 + 1, sizeof(*b.keep_found));
	if (!b.c || !b.keep_found) {
		free(b.c);
		free(b.keep_found);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "compile: out of memory");
	}
	b.top_calib = &b.calib;
	b.c->cpu = opts->cpu;
	st = npu_device_get_info(opts->device, &b.dev);
	if (st)
		npu_error_set(err, st, "compile: %s", npu_device_last_error(opts->device));
	if (!st)
		st = npu_compile_passes_pre(graph, &b.qdq, err);
	if (!st)
		st = npu_calibrate_cached(graph, opts, &b.calib, err);
	if (!st)
		st = npu_compile_passes_fuse(graph, err);
	if (!st)
		st = compile_placed(&b);
	if (!st)
		st = check_keep_fp32(&b);
	b.c->profile_ops = opts->profile_ops;
	b.c->defer_consts = opts->defer_consts;
	if (!st && !opts->cpu_only_placement)
		st = npu_compiled_bind(b.c, graph, opts->device, err);
	if (!st)
		explain_sparse(b.c);
	b.c->compile_ms = now_ms() - t0;
	npu_calib_table_free(&b.calib);
	npu_qdq_table_free(&b.qdq);
	free(b.keep_found);
	if (st) {
		npu_compiled_free(b.c);
		return st;
	}
	*out = b.c;
	return NPU_OK;
}

void npu_compiled_warn(struct npu_compiled *c, const char *fmt, ...)
{
	char buf[512], **w;
	va_list ap;
	size_t i;

	if (!c)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (i = 0; i < c->num_warnings; i++)	/* lowering may run twice */
		if (!strcmp(c->warnings[i], buf))
			return;
	w = realloc(c->warnings, (c->num_warnings + 1) * sizeof(*w));
	if (!w)
		return;
	c->warnings = w;
	w[c->num_warnings] = strdup(buf);
	if (w[c->num_warnings])
		c->num_warnings++;
}
