// SPDX-License-Identifier: MIT
/*
 * npu_multi.c - a plan on a set of devices: the parallel mode, the cost
 * model that picks it and explains it, and pipeline stages (which device
 * each NPU segment runs on). Documentation/multi-npu.md.
 *
 * Data parallel puts every run on one device (npu_session.c picks it);
 * pipeline mode gives consecutive segments to consecutive devices, so a
 * run passes through each device once and runs at once overlap, one per
 * stage. The compiler cuts the NPU work into about one segment per device
 * when asked (npu_compile_options.pipeline_stages); here the segments, in
 * the order they run, are split into contiguous stages that minimize the
 * slowest stage's predicted cycles.
 */
#include "runtime/npu_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"

static bool wants_pipeline(const struct npu_plan *p)
{
	return p->model->num_devs > 1 &&
	       (p->model->opts.parallel == NPU_PARALLEL_PIPELINE || p->auto_pipeline);
}

int npu_plan_pipeline_stages(const struct npu_plan *p)
{
	return wants_pipeline(p) ? (int)p->model->num_devs : 0;
}

bool npu_plan_defers_consts(const struct npu_plan *p)
{
	return p->model->num_devs > 1;
}

/* The compiler's predicted cycles of one run of a segment. */
static uint64_t segment_cycles(const struct npu_segment *seg)
{
	const struct npu_codegen_result *code = &seg->code;
	uint64_t cycles = 0;
	size_t k;

	for (k = 0; code->lop_pred_cycles && k < seg->prog.num_lops; k++)
		cycles += code->lop_pred_cycles[k];
	return cycles ? cycles : code->ideal_mac_cycles;
}

static uint64_t segment_input_bytes(const struct npu_segment *seg)
{
	uint64_t bytes = 0;
	size_t j;

	/* Activations cross as int8 (int16 in the 16x8 mode: counted as 1). */
	for (j = 0; j < seg->num_inputs; j++)
		if (seg->inputs[j])
			bytes += (uint64_t)npu_shape_numel(&seg->inputs[j]->shape);
	return bytes;
}

/*
 * Split costs[0..n) into at most 'parts' contiguous groups minimizing the
 * largest group's sum (the linear partition problem, by dynamic
 * programming: n segments and 16 devices at most make it small). group[i]
 * gets segment i's group; returns the number of groups used.
 */
static size_t linear_partition(const uint64_t *costs, size_t n, size_t parts, size_t *group)
{
	uint64_t *best = NULL, *prefix = NULL;
	size_t *cut = NULL, k, i, j, used = 0;

	if (!n)
		return 0;
	if (parts > n)
		parts = n;
	best = calloc((parts + 1) * (n + 1), sizeof(*best));
	cut = calloc((parts + 1) * (n + 1), sizeof(*cut));
	prefix = calloc(n + 1, sizeof(*prefix));
	if (!best || !cut || !prefix) {
		/* Out of memory: one stage is still a correct pipeline. */
		for (i = 0; i < n; i++)
			group[i] = 0;
		used = 1;
		goto out;
	}
	for (i = 0; i < n; i++)
		prefix[i + 1] = prefix[i] + costs[i];
#define AT(a, k, i) a[(k) * (n + 1) + (i)]
	for (i = 1; i <= n; i++)
		AT(best, 1, i) = prefix[i];
	for (k = 2; k <= parts; k++)
		for (i = k; i <= n; i++) {
			AT(best, k, i) = UINT64_MAX;
			for (j = k - 1; j < i; j++) {
				uint64_t last = prefix[i] - prefix[j];
				uint64_t worst = AT(best, k - 1, j) > last ? AT(best, k - 1, j) : last;

				if (worst < AT(best, k, i)) {
					AT(best, k, i) = worst;
					AT(cut, k, i) = j;
				}
			}
		}
	/* Fewer stages when more would not lower the slowest one. */
	used = parts;
	while (used > 1 && AT(best, used - 1, n) <= AT(best, used, n))
		used--;
	for (k = used, i = n; k >= 1; k--) {
		size_t from = k > 1 ? AT(cut, k, i) : 0;

		for (j = from; j < i; j++)
			group[j] = k - 1;
		i = from;
	}
#undef AT
out:
	free(best);
	free(cut);
	free(prefix);
	return used;
}

/*
 * The constants on device 0, compiled for: its stage's in pipeline mode,
 * else all of them. In auto mode, a model that does not fit the device
 * (constants and one arena against the device's free memory, where the
 * device says how much it has; else the upload failing) asks for a
 * pipeline instead (*retry).
 */
static npu_status home_consts(struct npu_plan *p, bool *retry)
{
	struct npu_model *m = p->model;
	struct npu_compiled *c = p->compiled;
	struct npu_error err = { 0 };
	struct npu_device_info info;
	uint64_t used = 0, peak = 0;
	bool *want = NULL, fits = true;
	size_t i;
	npu_status st;

	if (!c || !c->defer_consts || !c->num_segments)
		return NPU_OK;
	if (p->seg_device) {
		want = calloc(c->num_segments, sizeof(*want));
		if (!want)
			return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
		for (i = 0; i < c->num_segments; i++)
			want[i] = p->seg_device[i] == 0;
	} else if (m->opts.parallel == NPU_PARALLEL_AUTO && retry &&
		   npu_device_get_info(c->dev, &info) == NPU_OK && info.memory_bytes) {
		npu_device_memory(c->dev, &used, &peak);
		fits = p->parallel.model_bytes + used <= info.memory_bytes;
		if (!fits)
			snprintf(p->auto_why, sizeof(p->auto_why),
				 "the model needs %llu bytes of device memory and '%s' has %llu free",
				 (unsigned long long)p->parallel.model_bytes, m->dev_names[0],
				 (unsigned long long)(info.memory_bytes - used));
	}
	st = fits ? npu_compiled_home_consts(c, want, &err) : NPU_ERR_NO_MEMORY;
	free(want);
	if (st == NPU_ERR_NO_MEMORY && !p->seg_device && m->opts.parallel == NPU_PARALLEL_AUTO &&
	    retry) {
		if (fits)	/* the upload's own message, cut to fit */
			snprintf(p->auto_why, sizeof(p->auto_why), "%.150s", err.msg);
		*retry = true;
		return npu_api_fail(st, "%s: %s: to be cut in pipeline stages", m->source,
				    p->auto_why);
	}
	if (st)
		npu_error_prefix(&err, "%s", m->source);
	return st ? npu_api_fail_err(&err) : NPU_OK;
}

npu_status npu_plan_parallel_setup(struct npu_plan *p, bool *retry)
{
	struct npu_model *m = p->model;
	struct npu_parallel_info *pi = &p->parallel;
	const struct npu_compiled *c = p->compiled;
	size_t n = c ? c->num_segments : 0, i, k, devs = m->num_devs ? m->num_devs : 1;
	uint64_t *costs, consts = 0, arena_max = 0;
	uint64_t dev_consts[NPU_DEVICE_SET_MAX] = { 0 }, dev_arena[NPU_DEVICE_SET_MAX] = { 0 };
	size_t *group;
	bool want_pipeline = wants_pipeline(p);

	npu_parallel_info_init(pi);
	pi->mode = NPU_PARALLEL_DATA;
	pi->devices = devs;
	pi->stages = 1;
	pi->data_speedup = (double)devs;
	pi->pipeline_speedup = 1.0;
	costs = calloc(n + 1, sizeof(*costs));
	group = calloc(n + 1, sizeof(*group));
	if (!costs || !group) {
		free(costs);
		free(group);
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	}
	for (i = 0; i < n; i++) {
		costs[i] = segment_cycles(c->segments[i]);
		pi->run_cycles += costs[i];
		consts += c->segments[i]->code.consts_size;
	}
	arena_max = c ? c->arena_bytes : 0;
	pi->model_bytes = consts + arena_max;
	pi->stage_cycles_max = pi->run_cycles;
	pi->device_bytes_max = pi->model_bytes;
	/* What a pipeline over these segments would do, in every mode. */
	if (n && devs > 1) {
		size_t stages = linear_partition(costs, n, devs, group);
		uint64_t stage_sum[NPU_DEVICE_SET_MAX] = { 0 }, slowest = 0;

		for (i = 0; i < n; i++)
			stage_sum[group[i]] += costs[i];
		for (k = 0; k < stages; k++)
			if (stage_sum[k] > slowest)
				slowest = stage_sum[k];
		if (slowest)
			pi->pipeline_speedup = (double)pi->run_cycles / (double)slowest;
		if (want_pipeline) {
			pi->mode = NPU_PARALLEL_PIPELINE;
			pi->stages = stages;
			pi->stage_cycles_max = slowest;
			for (i = 0; i < n; i++) {
				const struct npu_segment *seg = c->segments[i];

				dev_consts[group[i]] += seg->code.consts_size;
				if (seg->arena_size > dev_arena[group[i]])
					dev_arena[group[i]] = seg->arena_size;
				if (i && group[i] != group[i - 1])
					pi->crossing_bytes += segment_input_bytes(seg);
				p->stage_cycles[group[i]] += costs[i];
			}
			pi->device_bytes_max = 0;
			for (k = 0; k < stages; k++)
				if (dev_consts[k] + dev_arena[k] > pi->device_bytes_max)
					pi->device_bytes_max = dev_consts[k] + dev_arena[k];
			p->seg_device = group;
			group = NULL;
		}
	}
	if (devs < 2)
		snprintf(pi->why, sizeof(pi->why), "one device");
	else if (!n)
		snprintf(pi->why, sizeof(pi->why),
			 "no NPU segment: runs spread over the devices as they come");
	else if (pi->mode == NPU_PARALLEL_PIPELINE)
		snprintf(pi->why, sizeof(pi->why),
			 "pipeline (%s): %zu stages, slowest %.0f%% of a run, modeled throughput %.2fx one device, %llu bytes cross per run",
			 p->auto_pipeline ? "auto: the model does not fit one device" : "asked for",
			 pi->stages, 100.0 * (double)pi->stage_cycles_max / (double)pi->run_cycles,
			 pi->pipeline_speedup, (unsigned long long)pi->crossing_bytes);
	else
		snprintf(pi->why, sizeof(pi->why),
			 "data parallel%s: modeled throughput %.2fx one device; a pipeline of these %zu segment(s) at most %.2fx, plus the copies between devices",
			 m->opts.parallel == NPU_PARALLEL_AUTO ? " (auto)" : "",
			 pi->data_speedup, n, pi->pipeline_speedup);
	free(costs);
	free(group);
	return home_consts(p, retry);
}

NPU_API void npu_parallel_info_init_sized(struct npu_parallel_info *o, size_t size)
{
	struct npu_parallel_info d = { .struct_size = size };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

NPU_API npu_status npu_plan_parallel_info(const struct npu_plan *p, struct npu_parallel_info *out)
{
	if (!p || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_parallel_info: %s is NULL",
				    !p ? "plan" : "out");
	return npu_api_copy_stats(out, &p->parallel, sizeof(p->parallel), "npu_parallel_info");
}
