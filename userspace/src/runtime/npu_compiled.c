// SPDX-License-Identifier: MIT
/*
 * A compiled model's NPU segments at run time: code and constants bound to
 * a device (generated only when a compiled file brought none), each
 * session's relocated command streams over its own arena, and the lookup
 * from an NpuSegment node to its run state. Nothing here compiles: the
 * runtime-only library (libnpu-runtime) is built from it.
 */
#include "compiler/compiler.h"
#include "compiler/segment_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void npu_segment_stream_free(struct npu_segment_stream *s)
{
	free(s->data);
	free(s->relocs);
	memset(s, 0, sizeof(*s));
}

void npu_segment_free(struct npu_segment *seg)
{
	size_t i;

	if (!seg)
		return;
	npu_buffer_free(seg->consts);
	for (i = 0; i < seg->num_owned; i++)
		free(seg->owned[i]);
	for (i = 0; seg->node_keys && i < seg->num_nodes; i++)
		free(seg->node_keys[i]);
	free(seg->node_keys);
	free(seg->owned);
	free(seg->prog.acts);
	free(seg->prog.lops);
	free(seg->inputs);
	free(seg->outputs);
	free(seg->input_acts);
	free(seg->output_acts);
	free(seg->input_layout);
	free(seg->output_layout);
	npu_codegen_result_free(&seg->code);
	npu_segment_stream_free(&seg->stream);
	npu_segment_stream_free(&seg->profile_stream);
	free(seg->first_node);
	free(seg->last_node);
	free(seg->graph_path);
	free(seg);
}

/*
 * A stored stream (a compiled file's) on this device: it must fit its SRAM
 * and use only opcodes it runs; npu_cs_validate() checks every instruction
 * as the device will.
 */
static npu_status check_stored_stream(const struct npu_segment *seg, const struct npu_device_info *info,
				      struct npu_error *err)
{
	char msg[256] = "";

	if (seg->code_sram_size > info->sram_size)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "NPU segment %d: compiled for %u bytes of SRAM, the device has %u",
				     seg->index, seg->code_sram_size, info->sram_size);
	if (npu_cs_validate(seg->stream.data, seg->stream.size, info->sram_size, info->op_mask,
			    msg, sizeof(msg)))
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "NPU segment %d: its command stream does not run on this device: %s",
				     seg->index, msg);
	return NPU_OK;
}

/* Segment seg's constants in a new read-only buffer on dev (NULL on failure). */
static npu_status upload_consts(struct npu_device *dev, const struct npu_segment *seg,
				struct npu_buffer **out)
{
	npu_status st;
	void *map;

	*out = NULL;
	st = npu_buffer_alloc(dev, seg->code.consts_size, NPU_BUFFER_DEVICE_READ_ONLY, out);
	if (!st)
		st = npu_buffer_map(*out, &map);
	if (st) {
		npu_buffer_free(*out);
		*out = NULL;
		return st;
	}
	memcpy(map, seg->code.consts, seg->code.consts_size);
	return NPU_OK;
}

/*
 * The code of one segment, generated unless a compiled file brought it,
 * and its constants (weights, biases, tables) in a read-only device buffer
 * that every session's command stream points to.
 */
static npu_status bind_code(struct npu_segment *seg, struct npu_device *dev,
			    const struct npu_device_info *info, bool profile,
			    struct npu_error *err)
{
	npu_status st = NPU_OK;

	if (!seg->stream.data)
		st = npu_segment_generate(seg, dev, info->sram_size, false, err);
	else
		st = check_stored_stream(seg, info, err);
	if (!st && profile && !seg->profile_stream.data)
		st = npu_segment_generate(seg, dev, seg->code_sram_size, true, err);
	seg->dev = dev;
	if (st || !seg->code.consts_size || seg->compiled->defer_consts)
		return st;
	st = upload_consts(dev, seg, &seg->consts);
	if (st)
		return npu_error_set(err, st, "compile: constants of NPU segment %d: %s",
				     seg->index, npu_device_last_error(dev));
	return NPU_OK;
}

/*
 * Command streams are generated at bind time for the device but carry
 * this library's ISA version (npu_cmdbuf_reset()), which an older device
 * refuses job by job (BAD_HEADER): say so once, up front. A .npub's
 * stored streams carry the version they were generated for, and
 * npu_cs_validate() checks them against the device at bind.
 */
npu_status npu_compiled_isa_check(const struct npu_device_info *info,
				  struct npu_error *err)
{
	unsigned int major = info->isa_version >> 16, minor = info->isa_version & 0xffff;

	if (major == NPU_ISA_VERSION_MAJOR && minor >= NPU_ISA_VERSION_MINOR)
		return NPU_OK;
	return npu_error_set(err, NPU_ERR_UNSUPPORTED,
			     "compile: the device runs command-stream ISA %u.%u; this library "
			     "emits ISA %u.%u (1.4: the CONV2D / MATMUL output LUT)",
			     major, minor, NPU_ISA_VERSION_MAJOR, NPU_ISA_VERSION_MINOR);
}

npu_status npu_compiled_attach(struct npu_compiled *c, struct npu_device *dev,
				struct npu_error *err)
{
	npu_status st;
	size_t i;

	c->arena_bytes = c->arena_lower_bound = c->arena_sum_bytes = 0;
	for (i = 0; i < c->num_segments; i++) {
		const struct npu_segment *seg = c->segments[i];

		if (seg->arena_size > c->arena_bytes)
			c->arena_bytes = seg->arena_size;
		if (seg->mem.lower_bound > c->arena_lower_bound)
			c->arena_lower_bound = seg->mem.lower_bound;
		c->arena_sum_bytes += seg->mem.sum_bytes;
	}
	if (!c->num_segments)
		return NPU_OK;
	st = npu_device_get_info(dev, &c->dev_info);
	if (st)
		return npu_error_set(err, st, "compile: %s", npu_device_last_error(dev));
	st = npu_compiled_isa_check(&c->dev_info, err);
	if (st)
		return st;
	c->dev = dev;
	for (i = 0; i < c->num_segments && !st; i++) {
		c->segments[i]->compiled = c;
		st = bind_code(c->segments[i], dev, &c->dev_info, c->profile_ops, err);
	}
	return st;
}

/* Segment i's constants are on replica k (none to put there counts). */
static bool replica_has(const struct npu_compiled *c, size_t k, size_t i)
{
	return !c->segments[i]->code.consts_size || (c->replica_consts[k] && c->replica_consts[k][i]);
}

npu_status npu_compiled_replicate(struct npu_compiled *c, size_t replica,
				  struct npu_device *dev, const bool *want,
				  struct npu_error *err)
{
	struct npu_device_info info;
	struct npu_buffer **consts;
	npu_status st = NPU_OK;
	size_t i;

	if (!replica)
		return NPU_OK;
	if (replica >= NPU_DEVICE_SET_MAX)
		return npu_error_set(err, NPU_ERR_INVALID_ARG, "device %zu of a set of at most %d",
				     replica, NPU_DEVICE_SET_MAX);
	if (!c->replica_dev[replica]) {
		/* First use of the device: its code must run there. */
		st = npu_device_get_info(dev, &info);
		if (st)
			return npu_error_set(err, st, "device %zu of the set: %s", replica,
					     npu_device_last_error(dev));
		st = c->num_segments ? npu_compiled_isa_check(&info, err) : NPU_OK;
		/* The code may use every capability of the device it was made for. */
		if (!st && (c->dev_info.caps & ~info.caps))
			st = npu_error_set(err, NPU_ERR_UNSUPPORTED,
					   "the device lacks capabilities 0x%x the code was generated for",
					   c->dev_info.caps & ~info.caps);
		for (i = 0; i < c->num_segments && !st; i++)
			st = check_stored_stream(c->segments[i], &info, err);
		if (st) {
			npu_error_prefix(err, "device %zu of the set", replica);
			return st;
		}
		consts = calloc(c->num_segments + 1, sizeof(*consts));
		if (!consts)
			return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
		c->replica_consts[replica] = consts;
		c->replica_dev[replica] = dev;
	}
	consts = c->replica_consts[replica];
	for (i = 0; i < c->num_segments && !st; i++) {
		if ((want && !want[i]) || replica_has(c, replica, i))
			continue;
		st = upload_consts(dev, c->segments[i], &consts[i]);
		if (st)
			npu_error_set(err, st, "constants of NPU segment %d on device %zu of the set: %s",
				      c->segments[i]->index, replica, npu_device_last_error(dev));
	}
	return st;
}

npu_status npu_compiled_home_consts(struct npu_compiled *c, const bool *want,
				    struct npu_error *err)
{
	npu_status st = NPU_OK;
	size_t i;

	for (i = 0; i < c->num_segments && !st; i++) {
		struct npu_segment *seg = c->segments[i];

		if ((want && !want[i]) || seg->consts || !seg->code.consts_size)
			continue;
		st = upload_consts(c->dev, seg, &seg->consts);
		if (st)
			npu_error_set(err, st, "constants of NPU segment %d: %s", seg->index,
				      npu_device_last_error(c->dev));
	}
	return st;
}

static void segment_rt_free(struct npu_segment_rt *rt)
{
	if (!rt)
		return;
	if (rt->job) {	/* never left running past a run, but be safe */
		npu_job_wait(rt->job, UINT64_MAX);
		npu_job_release(rt->job);
	}
	npu_buffer_free(rt->profile);
	free(rt->lop_cycles);
	npu_buffer_free(rt->cmd);
	free(rt->outputs);
	free(rt);
}

/*
 * One session's command stream for a segment: the segment's stream,
 * relocated to the session's arena (and profile buffer). No code is
 * generated here.
 */
static npu_status segment_rt_create(struct npu_compiled_run *run, struct npu_segment *seg,
				    size_t replica, struct npu_segment_rt **out,
				    struct npu_error *err)
{
	struct npu_device *dev = replica ? run->c->replica_dev[replica] : run->c->dev;
	struct npu_segment_rt *rt = calloc(1, sizeof(*rt));
	const struct npu_segment_stream *s = run->c->profile_ops ? &seg->profile_stream
								 : &seg->stream;
	struct npu_buffer *consts = replica ? run->c->replica_consts[replica][seg->index]
					    : seg->consts;
	uint64_t base[NPU_RELOC_REGIONS] = {
		npu_buffer_va(run->arenas[replica]), consts ? npu_buffer_va(consts) : 0, 0
	};
	npu_status st;
	void *map;

	*out = rt;
	if (rt)
		rt->outputs = calloc(seg->num_outputs + 1, sizeof(*rt->outputs));
	if (!rt || !rt->outputs)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "NPU segment %d: out of memory",
				     seg->index);
	rt->seg = seg;
	rt->dev = dev;
	rt->consts = consts;
	rt->arena = run->arenas[replica];
	rt->arena_map = run->arena_maps[replica];
	rt->group = &run->group;
	if (run->c->profile_ops) {
		void *pmap;

		rt->lop_cycles = calloc(seg->prog.num_lops + 1, sizeof(*rt->lop_cycles));
		if (!rt->lop_cycles ||
		    npu_buffer_alloc(dev, 8 * (seg->prog.num_lops + 1), 0, &rt->profile) ||
		    npu_buffer_map(rt->profile, &pmap))
			return npu_error_set(err, NPU_ERR_DEVICE, "NPU segment %d: profile buffer: %s",
					     seg->index, npu_device_last_error(dev));
		rt->profile_map = pmap;
		base[NPU_RELOC_PROFILE] = npu_buffer_va(rt->profile);
	}
	rt->stream_size = s->size;
	st = npu_buffer_alloc(dev, s->size, NPU_BUFFER_DEVICE_READ_ONLY, &rt->cmd);
	if (!st)
		st = npu_buffer_map(rt->cmd, &map);
	if (st)
		return npu_error_set(err, st, "NPU segment %d: command buffer: %s",
				     seg->index, npu_device_last_error(dev));
	memcpy(map, s->data, s->size);
	npu_reloc_apply(map, s->relocs, s->num_relocs, base);
	return NPU_OK;
}

npu_status npu_compiled_run_create(struct npu_compiled *c, size_t replica,
				   const size_t *seg_replicas,
				   struct npu_compiled_run **out, struct npu_error *err)
{
	struct npu_compiled_run *run;
	npu_status st = NPU_OK;
	size_t i, k;

	*out = NULL;
	for (i = 0; i <= c->num_segments; i++) {
		k = i < c->num_segments && seg_replicas ? seg_replicas[i] : replica;
		if (k >= NPU_DEVICE_SET_MAX || (k && !c->replica_dev[k]) ||
		    (i < c->num_segments && k && !replica_has(c, k, i)) ||
		    (i < c->num_segments && !k && c->segments[i]->code.consts_size &&
		     !c->segments[i]->consts))
			return npu_error_set(err, NPU_ERR_INTERNAL,
					     "NPU segments: no replica %zu of segment %zu", k, i);
	}
	run = calloc(1, sizeof(*run));
	if (!run)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	run->c = c;
	run->replica = replica;
	run->dev = replica ? c->replica_dev[replica] : c->dev;
	run->rts = calloc(c->num_segments + 1, sizeof(*run->rts));
	run->seg_replica = calloc(c->num_segments + 1, sizeof(*run->seg_replica));
	if (!run->rts || !run->seg_replica) {
		npu_compiled_run_destroy(run);
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	}
	/* One arena per device the run's segments are on, as large as its largest needs. */
	for (i = 0; i < c->num_segments; i++) {
		run->seg_replica[i] = seg_replicas ? seg_replicas[i] : replica;
		k = run->seg_replica[i];
		if (c->segments[i]->arena_size > run->arena_bytes[k])
			run->arena_bytes[k] = c->segments[i]->arena_size;
		run->used[k] = true;
	}
	for (k = 0; k < NPU_DEVICE_SET_MAX && !st; k++) {
		struct npu_device *dev = k ? c->replica_dev[k] : c->dev;

		if (!run->used[k])
			continue;
		/* Sessions on one device see the same arena size whatever the mode. */
		if (!seg_replicas)
			run->arena_bytes[k] = c->arena_bytes;
		st = npu_buffer_alloc(dev, run->arena_bytes[k], 0, &run->arenas[k]);
		if (!st)
			st = npu_buffer_map(run->arenas[k], &run->arena_maps[k]);
		if (st)
			npu_error_set(err, st, "device arena of %llu bytes: %s",
				      (unsigned long long)run->arena_bytes[k],
				      npu_device_last_error(dev));
	}
	for (i = 0; i < c->num_segments && !st; i++)
		st = segment_rt_create(run, c->segments[i], run->seg_replica[i], &run->rts[i], err);
	if (st) {
		npu_compiled_run_destroy(run);
		return st;
	}
	*out = run;
	return NPU_OK;
}

void npu_compiled_run_begin(struct npu_compiled_run *run)
{
	if (run)
		run->group.epoch++;
}

void npu_compiled_run_destroy(struct npu_compiled_run *run)
{
	size_t i;

	if (!run)
		return;
	for (i = 0; run->rts && i < run->c->num_segments; i++)
		segment_rt_free(run->rts[i]);
	free(run->rts);
	free(run->seg_replica);
	for (i = 0; i < NPU_DEVICE_SET_MAX; i++)
		npu_buffer_free(run->arenas[i]);
	free(run);
}

struct npu_compiled *npu_segment_node_compiled(const struct npu_node *node)
{
	const struct npu_segment *seg = node->op_state;

	if (!seg || strcmp(node->op_type, NPU_SEGMENT_OP) ||
	    strcmp(node->domain, NPU_SEGMENT_DOMAIN))
		return NULL;
	return seg->compiled;
}

void *npu_compiled_run_node_state(const struct npu_compiled_run *run,
				  const struct npu_node *node)
{
	const struct npu_segment *seg;

	if (!run || npu_segment_node_compiled(node) != run->c)
		return NULL;
	seg = node->op_state;
	if (seg->index < 0 || (size_t)seg->index >= run->c->num_segments ||
	    run->c->segments[seg->index] != seg)
		return NULL;
	return run->rts[seg->index];
}

void npu_compiled_free(struct npu_compiled *c)
{
	size_t i, k;

	if (!c)
		return;
	for (i = 0; i < c->num_warnings; i++)
		free(c->warnings[i]);
	free(c->warnings);
	for (i = 0; i < c->num_int16_nodes; i++)
		free(c->int16_nodes[i]);
	free(c->int16_nodes);
	for (k = 1; k < NPU_DEVICE_SET_MAX; k++) {
		for (i = 0; c->replica_consts[k] && i < c->num_segments; i++)
			npu_buffer_free(c->replica_consts[k][i]);
		free(c->replica_consts[k]);
	}
	for (i = 0; i < c->num_segments; i++)
		npu_segment_free(c->segments[i]);
	free(c->segments);
	for (i = 0; i < c->num_records; i++) {
		free(c->records[i].node);
		free(c->records[i].op_type);
	}
	free(c->records);
	free(c);
}

/* The name a subgraph path gives a control-flow node: its first output's. */
const char *npu_subgraph_key(const struct npu_node *n)
{
	size_t i;

	for (i = 0; i < n->num_outputs; i++)
		if (n->outputs[i])
			return n->outputs[i]->name;
	return "";
}

struct npu_graph *npu_subgraph_at(struct npu_graph *top, const char *path)
{
	struct npu_graph *g = top;

	while (g && path && *path) {
		const char *key_end = strchr(path, '\n');
		const char *attr = key_end ? key_end + 1 : NULL;
		const char *attr_end = attr ? strchr(attr, '\n') : NULL;
		struct npu_graph *next = NULL;
		size_t i, a;

		if (!attr_end)
			return NULL;
		for (i = 0; i < g->num_nodes && !next; i++) {
			const struct npu_node *n = g->nodes[i];
			const char *k = npu_subgraph_key(n);

			if (strlen(k) != (size_t)(key_end - path) || strncmp(k, path, key_end - path))
				continue;
			for (a = 0; a < n->num_attrs && !next; a++)
				if (n->attrs[a].type == NPU_ATTR_GRAPH &&
				    strlen(n->attrs[a].name) == (size_t)(attr_end - attr) &&
				    !strncmp(n->attrs[a].name, attr, attr_end - attr))
					next = n->attrs[a].g;
		}
		g = next;
		path = attr_end + 1;
	}
	return g;
}
