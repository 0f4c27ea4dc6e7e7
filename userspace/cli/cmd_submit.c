// SPDX-License-Identifier: MIT
/* npu submit: run a command-stream file (text or binary) as jobs. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_util.h"
#include "npu-tools/cs_asm.h"
#include "npu/npu.h"
#include "npu_cli.h"

#define MAX_DUMPS	16
#define KEEP_RESULTS	1000	/* per-job lines kept for printing */

static void submit_usage(FILE *out)
{
	fprintf(out,
		"usage: npu submit FILE [options]\n"
		"\n"
		"Run the command stream in FILE as jobs on the NPU and print each job's\n"
		"status and timings. FILE is a binary stream (it starts with \"NPCS\") or\n"
		"the text form: one instruction per line, e.g.\n"
		"    .buffer in 4096 init=random:1\n"
		"    .buffer out 4096\n"
		"    dma_copy dst=sram:0 src=in bytes=4096\n"
		"    dma_copy sync dst=out src=sram:0 bytes=4096\n"
		"(Documentation/command-stream-text.md has the full syntax.)\n"
		"\n"
		"  --device D      sim | accel | auto | /dev/accel/accelN (default: auto,\n"
		"                  or NPU_DEVICE)\n"
		"  --repeat N      submit the stream N times (default 1)\n"
		"  --queue Q       hardware queue 0 (high priority) or 1 (default: the\n"
		"                  file's .queue, else 1)\n"
		"  --async         submit through the asynchronous completion queue with\n"
		"                  up to --inflight jobs in flight (default: blocking,\n"
		"                  one job at a time)\n"
		"  --inflight K    jobs in flight with --async (default 64)\n"
		"  --dump NAME     print buffer NAME after the last job (hex; with --json\n"
		"                  its CRC-32 and bytes); may be repeated\n"
		"  --no-validate   send a binary stream to the device unchecked\n"
		"  --json          one JSON object on stdout, for scripts\n"
		"  --quiet         only the summary and failures\n"
		"\n"
		"Exit status: 0 when every job succeeded, 1 when a job failed (the\n"
		"device status and the failing instruction's offset are printed), 2 for\n"
		"usage errors and files that do not assemble.\n");
}

struct job_line {
	unsigned int index;
	npu_status st;
	struct npu_job_result r;
};

struct run {
	struct job_line *lines;
	unsigned int kept;
	unsigned int ok, failed;
	uint64_t sum_cycles, sum_macs, sum_dev_ns, sum_host_ns;
	uint64_t max_host_ns, min_host_ns;
	struct job_line first_fail;
	char first_fail_msg[512];
	bool have_fail;
};

static void record(struct run *run, unsigned int index, npu_status st,
		   const struct npu_job_result *r, const char *msg)
{
	uint64_t host = r->host_complete_ns - r->host_submit_ns;

	if (st == NPU_OK)
		run->ok++;
	else
		run->failed++;
	run->sum_cycles += r->cycles;
	run->sum_macs += r->macs;
	run->sum_dev_ns += r->device_end_ns > r->device_start_ns ?
			   r->device_end_ns - r->device_start_ns : 0;
	run->sum_host_ns += host;
	if (host > run->max_host_ns)
		run->max_host_ns = host;
	if (!run->min_host_ns || host < run->min_host_ns)
		run->min_host_ns = host;
	if (run->kept < KEEP_RESULTS) {
		run->lines[run->kept].index = index;
		run->lines[run->kept].st = st;
		run->lines[run->kept].r = *r;
		run->kept++;
	}
	if (st && !run->have_fail) {
		run->have_fail = true;
		run->first_fail.index = index;
		run->first_fail.st = st;
		run->first_fail.r = *r;
		snprintf(run->first_fail_msg, sizeof(run->first_fail_msg), "%s", msg);
	}
}

static void print_job_text(const struct job_line *l, uint32_t clock_mhz)
{
	const struct npu_job_result *r = &l->r;
	double dev_us = r->device_end_ns > r->device_start_ns ?
			(double)(r->device_end_ns - r->device_start_ns) / 1e3 : 0;

	printf("job %u: %-12s device %9.3f us  cycles %8" PRIu64 " (%.3f us modeled)  MACs %" PRIu64 "  host latency %.1f us",
	       l->index, npu_job_status_str(r->device_status), dev_us, r->cycles,
	       clock_mhz ? (double)r->cycles / clock_mhz : 0.0, r->macs,
	       (double)(r->host_complete_ns - r->host_submit_ns) / 1e3);
	if (r->device_status != NPU_JOB_OK) {
		printf("  at command offset %u", r->error_offset);
		if (r->device_status == NPU_JOB_ERR_MMU_UNMAPPED ||
		    r->device_status == NPU_JOB_ERR_MMU_PERM ||
		    r->device_status == NPU_JOB_ERR_DMA)
			printf(", fault address 0x%" PRIx64, r->fault_addr);
	}
	printf("\n");
}

static void print_job_json(const struct job_line *l, uint32_t clock_mhz, bool last)
{
	const struct npu_job_result *r = &l->r;

	printf("    {\"index\": %u, \"status\": \"%s\", \"device_status\": %u, \"error_offset\": %u, "
	       "\"fault_addr\": %" PRIu64 ", \"queue\": %u, \"job_id\": %" PRIu64 ", "
	       "\"device_ns\": %" PRIu64 ", \"cycles\": %" PRIu64 ", \"modeled_ns\": %.1f, "
	       "\"macs\": %" PRIu64 ", \"host_latency_ns\": %" PRIu64 "}%s\n",
	       l->index, npu_job_status_str(r->device_status), r->device_status,
	       r->error_offset, r->fault_addr, r->queue, r->job_id,
	       r->device_end_ns > r->device_start_ns ? r->device_end_ns - r->device_start_ns : 0,
	       r->cycles, clock_mhz ? (double)r->cycles * 1000.0 / clock_mhz : 0.0,
	       r->macs, r->host_complete_ns - r->host_submit_ns, last ? "" : ",");
}

static void hexdump(const uint8_t *p, uint64_t size)
{
	uint64_t i, j;

	for (i = 0; i < size; i += 16) {
		printf("  %08" PRIx64 ": ", i);
		for (j = i; j < i + 16 && j < size; j++)
			printf("%02x%s", p[j], j % 2 ? " " : "");
		printf("\n");
	}
}

static int run_blocking(struct npu_device *dev, struct npu_submit *s,
			unsigned int repeat, struct run *run)
{
	unsigned int i;

	for (i = 0; i < repeat; i++) {
		struct npu_job_result r = { 0 };
		struct npu_job *job;
		npu_status st;

		st = npu_job_submit(dev, s, &job);
		if (st) {
			fprintf(stderr, "npu submit: job %u: %s\n", i, npu_device_last_error(dev));
			return 1;
		}
		st = npu_job_wait(job, UINT64_MAX);
		npu_job_get_result(job, &r);
		record(run, i, st, &r, npu_job_last_error(job));
		npu_job_release(job);
	}
	return 0;
}

static int run_async(struct npu_device *dev, struct npu_submit *s,
		     unsigned int repeat, unsigned int inflight, struct run *run)
{
	struct npu_completion_event ev[64];
	unsigned int submitted = 0, done = 0, i, n;

	while (done < repeat) {
		while (submitted < repeat && submitted - done < inflight) {
			struct npu_job *job;

			s->user_data = submitted;
			if (npu_job_submit_async(dev, s, &job)) {
				fprintf(stderr, "npu submit: job %u: %s\n", submitted,
					npu_device_last_error(dev));
				return 1;
			}
			submitted++;
		}
		if (npu_device_reap(dev, ev, 64, &n, UINT64_MAX)) {
			fprintf(stderr, "npu submit: waiting for completions: %s\n",
				npu_device_last_error(dev));
			return 1;
		}
		for (i = 0; i < n; i++) {
			struct npu_job_result r = { 0 };

			npu_job_get_result(ev[i].job, &r);
			record(run, (unsigned int)ev[i].user_data, ev[i].status, &r,
			       npu_job_last_error(ev[i].job));
			npu_job_release(ev[i].job);
		}
		done += n;
	}
	return 0;
}

int npu_cmd_submit(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "repeat", required_argument, NULL, 'n' },
		{ "queue", required_argument, NULL, 'q' },
		{ "async", no_argument, NULL, 'a' },
		{ "inflight", required_argument, NULL, 'k' },
		{ "dump", required_argument, NULL, 'D' },
		{ "no-validate", no_argument, NULL, 'V' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct npu_device_options opts;
	struct npu_cs_program *prog = NULL;
	struct npu_cs_instance *inst = NULL;
	struct npu_device_info info;
	struct npu_device *dev = NULL;
	const char *dumps[MAX_DUMPS];
	unsigned int num_dumps = 0, repeat = 1, inflight = 64, i;
	int queue = -1, c, rc = 0;
	bool json = false, quiet = false, async = false, validate = true;
	struct run run = { 0 };
	char err[1024];
	uint64_t t0, t1;
	double wall;

	if (npu_cli_device_default(&opts, "submit"))	/* NPU_DEVICE, else auto */
		return 2;
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:n:q:ak:D:VjQh", longopts, NULL)) != -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case 'd':
			if (npu_device_options_parse(&opts, optarg)) {
				fprintf(stderr, "npu submit: --device '%s': expected sim, accel, auto or a /dev/accel/accelN path\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
		case 'k':
		case 'q':
			v = strtoul(optarg, &end, 0);
			if (*end || !*optarg || (c != 'q' && (v == 0 || v > 100000000ul)) ||
			    (c == 'q' && v > 1)) {
				fprintf(stderr, "npu submit: %s '%s' is not %s\n",
					c == 'n' ? "--repeat" : c == 'k' ? "--inflight" : "--queue",
					optarg, c == 'q' ? "0 or 1" : "a count from 1");
				return 2;
			}
			if (c == 'n')
				repeat = (unsigned int)v;
			else if (c == 'k')
				inflight = (unsigned int)v;
			else
				queue = (int)v;
			break;
		case 'a':
			async = true;
			break;
		case 'D':
			if (num_dumps == MAX_DUMPS) {
				fprintf(stderr, "npu submit: at most %d --dump options\n", MAX_DUMPS);
				return 2;
			}
			dumps[num_dumps++] = optarg;
			break;
		case 'V':
			validate = false;
			break;
		case 'j':
			json = true;
			break;
		case 'Q':
			quiet = true;
			break;
		case 'h':
			submit_usage(stdout);
			return 0;
		default:
			submit_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, optind >= argc ? "npu submit: no command-stream FILE given\n\n" :
			"npu submit: give exactly one FILE\n\n");
		submit_usage(stderr);
		return 2;
	}
	if (npu_cs_read_file(argv[optind], validate, &prog, err, sizeof(err))) {
		fprintf(stderr, "npu submit: %s\n", err);
		return 2;
	}
	for (i = 0; i < num_dumps; i++)
		if (npu_cs_find_buffer(prog, dumps[i]) < 0) {
			fprintf(stderr, "npu submit: --dump %s: %s declares no buffer of that name\n",
				dumps[i], argv[optind]);
			rc = 2;
			goto out;
		}
	if (npu_device_open(&opts, &dev, err, sizeof(err))) {
		fprintf(stderr, "npu submit: %s\n", err);
		rc = 1;
		goto out;
	}
	npu_device_get_info(dev, &info);
	if (npu_cs_instantiate(dev, prog, &inst, err, sizeof(err))) {
		fprintf(stderr, "npu submit: %s\n", err);
		rc = 1;
		goto out;
	}
	if (queue >= 0)
		inst->submit.queue = (uint32_t)queue;
	run.lines = calloc(repeat < KEEP_RESULTS ? repeat : KEEP_RESULTS, sizeof(*run.lines));
	if (!run.lines) {
		rc = 1;
		goto out;
	}
	t0 = (uint64_t)0;
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		rc = async ? run_async(dev, &inst->submit, repeat, inflight, &run) :
			     run_blocking(dev, &inst->submit, repeat, &run);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t1 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	if (rc)
		goto out;
	wall = (double)(t1 - t0) / 1e9;
	if (json) {
		unsigned int total = run.ok + run.failed;

		printf("{\n  \"file\": \"%s\",\n  \"device\": {\"name\": \"%s\", \"backend\": \"%s\"},\n",
		       argv[optind], info.name, npu_backend_name(info.backend));
		printf("  \"mode\": \"%s\",\n  \"inflight\": %u,\n  \"queue\": %u,\n  \"instructions\": %u,\n",
		       async ? "async" : "blocking", async ? inflight : 1,
		       inst->submit.queue, prog->num_insns);
		printf("  \"jobs\": [\n");
		for (i = 0; i < run.kept; i++)
			print_job_json(&run.lines[i], info.clock_mhz, i + 1 == run.kept);
		printf("  ],\n  \"summary\": {\"jobs\": %u, \"ok\": %u, \"failed\": %u, "
		       "\"wall_s\": %.6f, \"jobs_per_sec\": %.1f, \"mean_host_latency_us\": %.3f, "
		       "\"min_host_latency_us\": %.3f, \"max_host_latency_us\": %.3f, "
		       "\"total_cycles\": %" PRIu64 ", \"total_macs\": %" PRIu64 ", "
		       "\"mean_device_us\": %.3f}",
		       total, run.ok, run.failed, wall, wall > 0 ? total / wall : 0.0,
		       total ? (double)run.sum_host_ns / total / 1e3 : 0.0,
		       (double)run.min_host_ns / 1e3, (double)run.max_host_ns / 1e3,
		       run.sum_cycles, run.sum_macs,
		       total ? (double)run.sum_dev_ns / total / 1e3 : 0.0);
		if (run.have_fail)
			printf(",\n  \"first_failure\": {\"index\": %u, \"status\": \"%s\", \"error_offset\": %u, \"fault_addr\": %" PRIu64 "}",
			       run.first_fail.index,
			       npu_job_status_str(run.first_fail.r.device_status),
			       run.first_fail.r.error_offset, run.first_fail.r.fault_addr);
		printf(",\n  \"buffers\": {");
		for (i = 0; i < num_dumps; i++) {
			int b = npu_cs_find_buffer(prog, dumps[i]);
			uint64_t size = prog->buffers[b].size, k;
			void *p;

			npu_buffer_map(inst->bufs[b], &p);
			printf("%s\n    \"%s\": {\"size\": %" PRIu64 ", \"crc32\": \"%08x\"",
			       i ? "," : "", dumps[i], size, npu_cs_crc32(p, size));
			if (size <= 65536) {
				printf(", \"hex\": \"");
				for (k = 0; k < size; k++)
					printf("%02x", ((uint8_t *)p)[k]);
				printf("\"");
			}
			printf("}");
		}
		printf("%s}\n}\n", num_dumps ? "\n  " : "");
	} else {
		unsigned int total = run.ok + run.failed;

		for (i = 0; i < run.kept; i++) {
			bool show = !quiet && (run.kept <= 20 || i < 10);

			if (show || run.lines[i].st)
				print_job_text(&run.lines[i], info.clock_mhz);
		}
		if (!quiet && run.kept > 20)
			printf("... (%u jobs not shown; --json lists up to %d)\n",
			       total - 10, KEEP_RESULTS);
		printf("%u job%s on %s (%s): %u ok, %u failed in %.3f s: %.0f jobs/s, host latency mean %.1f us (min %.1f, max %.1f)\n",
		       total, total == 1 ? "" : "s", info.name,
		       async ? "async" : "blocking",
		       run.ok, run.failed, wall, wall > 0 ? total / wall : 0.0,
		       total ? (double)run.sum_host_ns / total / 1e3 : 0.0,
		       (double)run.min_host_ns / 1e3, (double)run.max_host_ns / 1e3);
		if (async)
			printf("(up to %u jobs in flight)\n", inflight);
		for (i = 0; i < num_dumps; i++) {
			int b = npu_cs_find_buffer(prog, dumps[i]);
			void *p;

			npu_buffer_map(inst->bufs[b], &p);
			printf("buffer %s (%" PRIu64 " bytes, crc32 %08x):\n", dumps[i],
			       prog->buffers[b].size, npu_cs_crc32(p, prog->buffers[b].size));
			hexdump(p, prog->buffers[b].size);
		}
	}
	if (run.have_fail) {
		fprintf(stderr, "npu submit: %u of %u jobs failed; first: %s\n",
			run.failed, run.ok + run.failed, run.first_fail_msg);
		rc = 1;
	}
out:
	free(run.lines);
	npu_cs_instance_free(inst);
	npu_device_close(dev);
	npu_cs_program_free(prog);
	return rc;
}
