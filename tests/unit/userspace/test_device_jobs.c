// SPDX-License-Identifier: MIT
/*
 * Device layer, jobs end to end: DMA and CONV2D programs checked against
 * host references, many async jobs from one thread, dependencies, faults,
 * the watchdog, wait timeouts and buffers freed under a running job.
 *
 * Runs unchanged on sim (host) and accel (VM, NPU_DEVICE=accel). Results
 * are compared with references computed here, so both runs must agree bit
 * for bit; the CRC-32 of each output is printed for cross-checking logs.
 */
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device_env.h"
#include "npu/npu.h"
#include "npu_sim.h"

struct ctx {
	struct npu_device *dev;
	struct npu_device_info info;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));
	char err[512];

	if (!c || npu_device_open(test_device_options(), &c->dev, err, sizeof(err))) {
		fprintf(stderr, "open: %s\n", err);
		free(c);
		return -1;
	}
	npu_device_get_info(c->dev, &c->info);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	npu_device_close(c->dev);
	free(c);
	return 0;
}

static void *map(struct npu_buffer *b)
{
	void *p = NULL;

	assert_int_equal(npu_buffer_map(b, &p), NPU_OK);
	return p;
}

/* Put a finished cmdbuf into a new device buffer. */
static struct npu_buffer *upload(struct npu_device *dev, struct npu_cmdbuf *cb,
				 uint64_t *size)
{
	struct npu_buffer *b;
	const void *d;
	size_t n;

	d = npu_cmdbuf_data(cb, &n);
	assert_int_equal(npu_buffer_alloc(dev, n, NPU_BUFFER_DEVICE_READ_ONLY, &b), NPU_OK);
	memcpy(map(b), d, n);
	*size = n;
	return b;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void dma_program_copies_and_fills(void **state)
{
	struct ctx *c = *state;
	struct npu_buffer *in, *out, *cmd;
	struct npu_buffer_use uses[2];
	struct npu_submit s = { 0 };
	struct npu_job_result r;
	struct npu_cmdbuf *cb;
	uint8_t *pi, *po, want[16384];
	uint64_t seed = 1, size;
	int i;

	assert_int_equal(npu_buffer_alloc(c->dev, 16384, 0, &in), NPU_OK);
	assert_int_equal(npu_buffer_alloc(c->dev, 16384, 0, &out), NPU_OK);
	pi = map(in);
	po = map(out);
	for (i = 0; i < 16384; i++)
		pi[i] = (uint8_t)rng_next(&seed);
	memset(po, 0xee, 16384);

	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	npu_cmdbuf_set_device(cb, c->dev);
	/* 1-D 8 KiB in, 2-D gather of 32 rows x 100 bytes (stride 256) */
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_VA,
						npu_buffer_va(in), 8192), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_copy_2d(cb, 0, NPU_SPACE_SRAM, 65536, 100,
						NPU_SPACE_VA, npu_buffer_va(in) + 8192, 256,
						32, 100), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, 0, NPU_SPACE_VA, npu_buffer_va(out) + 12288,
						0x5a, 4096), NPU_OK);
	assert_int_equal(npu_cmdbuf_barrier(cb), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, 0, NPU_SPACE_VA, npu_buffer_va(out),
						NPU_SPACE_SRAM, 0, 8192), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, 0, NPU_SPACE_VA, npu_buffer_va(out) + 8192,
						NPU_SPACE_SRAM, 65536, 3200), NPU_OK);
	cmd = upload(c->dev, cb, &size);

	uses[0] = (struct npu_buffer_use){ in, NPU_ACCESS_READ_ONLY };
	uses[1] = (struct npu_buffer_use){ out, NPU_ACCESS_READ_WRITE };
	s.cmd = cmd;
	s.cmd_size = size;
	s.buffers = uses;
	s.num_buffers = 2;
	s.queue = 1;
	assert_int_equal(npu_job_run(c->dev, &s, &r), NPU_OK);
	assert_int_equal(r.device_status, NPU_JOB_OK);
	assert_true(r.cycles > 0);
	assert_true(r.device_end_ns >= r.device_start_ns);
	assert_true(r.host_complete_ns >= r.host_submit_ns);

	memcpy(want, pi, 8192);
	for (i = 0; i < 32; i++)
		memcpy(want + 8192 + i * 100, pi + 8192 + i * 256, 100);
	memset(want + 8192 + 3200, 0xee, 12288 - 8192 - 3200);
	memset(want + 12288, 0x5a, 4096);
	assert_memory_equal(po, want, 16384);
	printf("dma output crc32 %08x cycles %" PRIu64 "\n", npu_crc32(0, po, 16384), r.cycles);

	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd);
	npu_buffer_free(in);
	npu_buffer_free(out);
}

/* The CONV2D of npu_hw.h, written out naively. */
static void ref_conv(const struct npu_insn_conv2d *p, const int8_t *x,
		     const int8_t *w, const int32_t *bias, const int32_t *mult,
		     const uint8_t *shift, int8_t *y)
{
	int oh, ow, oc, kh, kw, ic;

	for (oh = 0; oh < p->out_h; oh++)
		for (ow = 0; ow < p->out_w; ow++)
			for (oc = 0; oc < p->out_c; oc++) {
				int64_t acc = bias[oc], v;

				for (kh = 0; kh < p->k_h; kh++)
					for (kw = 0; kw < p->k_w; kw++) {
						int ih = oh * p->stride_h - p->pad_top + kh * p->dil_h;
						int iw = ow * p->stride_w - p->pad_left + kw * p->dil_w;

						if (ih < 0 || iw < 0 || ih >= p->in_h || iw >= p->in_w)
							continue;
						for (ic = 0; ic < p->in_c; ic++)
							acc += (int64_t)(x[(ih * p->in_w + iw) * p->in_c + ic] - p->zp_in) *
							       (w[((oc * p->k_h + kh) * p->k_w + kw) * p->in_c + ic] - p->zp_w);
					}
				v = p->zp_out + ((acc * mult[oc] + (1ll << (shift[oc] - 1))) >> shift[oc]);
				if (v < p->act_min)
					v = p->act_min;
				if (v > p->act_max)
					v = p->act_max;
				y[(oh * p->out_w + ow) * p->out_c + oc] = (int8_t)v;
			}
}

static void conv2d_program_matches_host_reference(void **state)
{
	enum { H = 10, W = 9, IC = 24, OC = 40, K = 3 };
	struct ctx *c = *state;
	struct npu_insn_conv2d cv = {
		.in_h = H, .in_w = W, .in_c = IC, .out_c = OC, .out_h = H / 2, .out_w = (W + 1) / 2,
		.k_h = K, .k_w = K, .stride_h = 2, .stride_w = 2, .dil_h = 1, .dil_w = 1,
		.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .groups = 1,
		.in_row_stride = W * IC, .in_pixel_stride = IC,
		.out_row_stride = (W + 1) / 2 * OC, .out_pixel_stride = OC,
		.zp_in = 3, .zp_w = -2, .zp_out = 5, .act_min = -100, .act_max = 120,
	};
	const uint32_t in_off = 0, w_off = 4096, b_off = 16384, q_off = 20480, out_off = 24576;
	const size_t in_n = H * W * IC, w_n = OC * K * K * IC;
	const size_t out_n = (size_t)(H / 2) * ((W + 1) / 2) * OC;
	struct npu_buffer *src, *dst, *cmd;
	struct npu_buffer_use uses[2];
	struct npu_submit s = { 0 };
	struct npu_job_result r;
	struct npu_cmdbuf *cb;
	int8_t x[H * W * IC], w[OC * K * K * IC], want[OC * 5 * 5];
	int32_t bias[OC], mult[OC];
	uint8_t shift[OC], *ps;
	uint64_t seed = 42, size;
	size_t i;

	for (i = 0; i < in_n; i++)
		x[i] = (int8_t)((int)(rng_next(&seed) % 61) - 30);
	for (i = 0; i < w_n; i++)
		w[i] = (int8_t)((int)(rng_next(&seed) % 61) - 30);
	for (i = 0; i < OC; i++) {
		bias[i] = (int32_t)(rng_next(&seed) % 2001) - 1000;
		mult[i] = (int32_t)(1 << 20) + (int32_t)(rng_next(&seed) % 65536);
		shift[i] = (uint8_t)(24 + i % 4);
	}
	ref_conv(&cv, x, w, bias, mult, shift, want);

	/* one host buffer holds the SRAM image of every operand */
	assert_int_equal(npu_buffer_alloc(c->dev, out_off, NPU_BUFFER_DEVICE_READ_ONLY, &src), NPU_OK);
	assert_int_equal(npu_buffer_alloc(c->dev, out_n, 0, &dst), NPU_OK);
	ps = map(src);
	memcpy(ps + in_off, x, in_n);
	memcpy(ps + w_off, w, w_n);
	memcpy(ps + b_off, bias, sizeof(bias));
	memcpy(ps + q_off, mult, sizeof(mult));
	memcpy(ps + q_off + sizeof(mult), shift, sizeof(shift));

	cv.input = in_off;
	cv.weight = w_off;
	cv.bias = b_off;
	cv.quant = q_off;
	cv.output = out_off;
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	npu_cmdbuf_set_device(cb, c->dev);
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_VA,
						npu_buffer_va(src), out_off), NPU_OK);
	cv.hdr.flags = NPU_INSN_SYNC;	/* compute waits for the DMA */
	assert_int_equal(npu_cmdbuf_conv2d(cb, &cv), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, NPU_INSN_SYNC, NPU_SPACE_VA,
						npu_buffer_va(dst), NPU_SPACE_SRAM,
						out_off, (uint32_t)out_n), NPU_OK);
	cmd = upload(c->dev, cb, &size);
	uses[0] = (struct npu_buffer_use){ src, NPU_ACCESS_READ_ONLY };
	uses[1] = (struct npu_buffer_use){ dst, NPU_ACCESS_READ_WRITE };
	s.cmd = cmd;
	s.cmd_size = size;
	s.buffers = uses;
	s.num_buffers = 2;
	if (npu_job_run(c->dev, &s, &r))
		fail_msg("conv job: %s", npu_device_last_error(c->dev));
	assert_int_equal(r.macs, (uint64_t)out_n * K * K * IC);
	assert_memory_equal(map(dst), want, out_n);
	printf("conv2d output crc32 %08x macs %" PRIu64 " cycles %" PRIu64 "\n",
	       npu_crc32(0, map(dst), out_n), r.macs, r.cycles);
	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd);
	npu_buffer_free(src);
	npu_buffer_free(dst);
}

static void many_async_jobs_complete_from_one_thread(void **state)
{
	enum { N = 300, STRIDE = 64 };
	struct ctx *c = *state;
	struct npu_buffer *out, *cmd;
	struct npu_buffer_use use;
	struct npu_cmdbuf *cb;
	static struct npu_job *jobs[N];
	bool seen[N] = { false };
	struct npu_completion_event ev[32];
	unsigned int done = 0, n, i;
	size_t one = 0;
	uint8_t *po, *pc;
	const void *d;
	struct pollfd pfd;

	assert_int_equal(npu_buffer_alloc(c->dev, N * 64, 0, &out), NPU_OK);
	assert_int_equal(npu_buffer_alloc(c->dev, N * STRIDE, NPU_BUFFER_DEVICE_READ_ONLY, &cmd), NPU_OK);
	po = map(out);
	pc = map(cmd);
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	for (i = 0; i < N; i++) {	/* job i fills its 64-byte slot with i */
		npu_cmdbuf_reset(cb);
		assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, 0, NPU_SPACE_VA,
							npu_buffer_va(out) + i * 64,
							(uint8_t)i, 64), NPU_OK);
		d = npu_cmdbuf_data(cb, &one);
		assert_true(one <= STRIDE);
		memcpy(pc + i * STRIDE, d, one);
	}
	use = (struct npu_buffer_use){ out, NPU_ACCESS_READ_WRITE };
	for (i = 0; i < N; i++) {
		struct npu_submit s = {
			.cmd = cmd, .cmd_offset = i * STRIDE, .cmd_size = one,
			.buffers = &use, .num_buffers = 1, .queue = i % 2,
			.user_data = 1000 + i,
		};

		assert_int_equal(npu_job_submit_async(c->dev, &s, &jobs[i]), NPU_OK);
	}
	pfd.fd = npu_device_poll_fd(c->dev);
	pfd.events = POLLIN;
	assert_true(pfd.fd >= 0);
	while (done < N) {
		/* sleep in poll(): no busy waiting */
		assert_int_equal(poll(&pfd, 1, 10000), 1);
		assert_int_equal(npu_device_reap(c->dev, ev, 32, &n, 0), NPU_OK);
		assert_true(n >= 1);
		for (i = 0; i < n; i++) {
			unsigned int k = (unsigned int)(ev[i].user_data - 1000);

			assert_true(k < N);
			assert_false(seen[k]);
			seen[k] = true;
			assert_ptr_equal(ev[i].job, jobs[k]);
			assert_int_equal(ev[i].status, NPU_OK);
			assert_true(npu_job_done(ev[i].job));
			npu_job_release(ev[i].job);
		}
		done += n;
	}
	assert_int_equal(npu_device_inflight(c->dev), 0);
	assert_int_equal(npu_device_reap(c->dev, ev, 32, &n, 1000000), NPU_ERR_TIMEOUT);
	for (i = 0; i < N * 64; i++)
		assert_int_equal(po[i], (uint8_t)(i / 64));
	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd);
	npu_buffer_free(out);
}

/* A stream of DMA fills of 'bytes' each, into VA 'va' (heavy if many). */
static struct npu_buffer *fill_stream(struct npu_device *dev, uint64_t va,
				      uint32_t bytes, unsigned int count,
				      uint8_t value, uint64_t *size)
{
	struct npu_cmdbuf *cb;
	struct npu_buffer *b;
	unsigned int i;

	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	for (i = 0; i < count; i++)
		assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, 0, NPU_SPACE_VA, va, value, bytes),
				 NPU_OK);
	b = upload(dev, cb, size);
	npu_cmdbuf_destroy(cb);
	return b;
}

static void dependencies_order_jobs_across_queues(void **state)
{
	struct ctx *c = *state;
	struct npu_buffer *a, *b, *cmd_a, *cmd_b, *cmd_f;
	struct npu_buffer_use ua, ub[2];
	struct npu_cmdbuf *cb;
	struct npu_job *ja, *jb, *jf, *jx;
	struct npu_job_result r;
	uint64_t sa, sb, sf;
	uint8_t *pb;
	int i;

	assert_int_equal(npu_buffer_alloc(c->dev, 1 << 20, 0, &a), NPU_OK);
	assert_int_equal(npu_buffer_alloc(c->dev, 4096, 0, &b), NPU_OK);
	/* A: a slow fill of a (1 MiB, 16 times) on the low-priority queue */
	cmd_a = fill_stream(c->dev, npu_buffer_va(a), 1 << 20, 16, 0x5a, &sa);
	/* B: copy the end of a to b, on the high-priority queue */
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_VA,
						npu_buffer_va(a) + (1 << 20) - 4096, 4096), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, NPU_INSN_SYNC, NPU_SPACE_VA, npu_buffer_va(b),
						NPU_SPACE_SRAM, 0, 4096), NPU_OK);
	cmd_b = upload(c->dev, cb, &sb);
	ua = (struct npu_buffer_use){ a, NPU_ACCESS_READ_WRITE };
	ub[0] = (struct npu_buffer_use){ a, NPU_ACCESS_READ_ONLY };
	ub[1] = (struct npu_buffer_use){ b, NPU_ACCESS_READ_WRITE };
	{
		struct npu_submit s = { .cmd = cmd_a, .cmd_size = sa, .buffers = &ua,
					.num_buffers = 1, .queue = 1 };
		assert_int_equal(npu_job_submit(c->dev, &s, &ja), NPU_OK);
	}
	{
		struct npu_submit s = { .cmd = cmd_b, .cmd_size = sb, .buffers = ub,
					.num_buffers = 2, .queue = 0, .deps = &ja,
					.num_deps = 1 };
		assert_int_equal(npu_job_submit(c->dev, &s, &jb), NPU_OK);
	}
	assert_int_equal(npu_job_wait(jb, UINT64_MAX), NPU_OK);
	assert_true(npu_job_done(ja));
	assert_int_equal(npu_job_get_result(ja, &r), NPU_OK);
	pb = map(b);
	for (i = 0; i < 4096; i++)
		assert_int_equal(pb[i], 0x5a);
	npu_job_release(ja);
	npu_job_release(jb);

	/* a job depending on a failed job does not run */
	cmd_f = fill_stream(c->dev, 0x10, 64, 1, 1, &sf);	/* page 0: unmapped */
	{
		struct npu_submit s = { .cmd = cmd_f, .cmd_size = sf, .queue = 1 };
		assert_int_equal(npu_job_submit(c->dev, &s, &jf), NPU_OK);
	}
	memset(pb, 0, 4096);
	{
		struct npu_submit s = { .cmd = cmd_b, .cmd_size = sb, .buffers = ub,
					.num_buffers = 2, .queue = 0, .deps = &jf,
					.num_deps = 1 };
		assert_int_equal(npu_job_submit(c->dev, &s, &jx), NPU_OK);
	}
	assert_int_equal(npu_job_wait(jx, UINT64_MAX), NPU_ERR_JOB_FAILED);
	assert_int_equal(npu_job_get_result(jx, &r), NPU_OK);
	assert_int_equal(r.device_status, NPU_JOB_ERR_ABORTED);
	assert_int_equal(pb[0], 0);
	assert_int_equal(npu_job_wait(jf, UINT64_MAX), NPU_ERR_JOB_FAILED);
	npu_job_release(jf);
	npu_job_release(jx);

	/*
	 * The same on one queue, and on every pair: the device ran the next
	 * job of a queue whatever the previous one did, and the result
	 * raced the record. Rounds, since both were races.
	 */
	for (i = 0; i < 40; i++) {
		struct npu_submit fs = { .cmd = cmd_f, .cmd_size = sf,
					 .queue = (uint32_t)i & 1 };
		struct npu_submit xs = { .cmd = cmd_b, .cmd_size = sb, .buffers = ub,
					 .num_buffers = 2, .queue = (uint32_t)(i >> 1) & 1,
					 .deps = &jf, .num_deps = 1 };

		assert_int_equal(npu_job_submit(c->dev, &fs, &jf), NPU_OK);
		assert_int_equal(npu_job_submit(c->dev, &xs, &jx), NPU_OK);
		if (npu_job_wait(jx, UINT64_MAX) != NPU_ERR_JOB_FAILED)
			fail_msg("round %d, queue %u -> %u: the dependent job ran",
				 i, fs.queue, xs.queue);
		assert_int_equal(npu_job_get_result(jx, &r), NPU_OK);
		assert_int_equal(r.device_status, NPU_JOB_ERR_ABORTED);
		assert_int_equal(pb[0], 0);
		npu_job_release(jf);
		npu_job_release(jx);
	}
	npu_cmdbuf_destroy(cb);
	npu_buffer_free(cmd_a);
	npu_buffer_free(cmd_b);
	npu_buffer_free(cmd_f);
	npu_buffer_free(a);
	npu_buffer_free(b);
}

static void bad_va_faults_with_address(void **state)
{
	struct ctx *c = *state;
	struct npu_buffer *cmd, *ro;
	struct npu_buffer_use use;
	struct npu_submit s = { 0 };
	struct npu_job_result r;
	struct npu_cmdbuf *cb;
	uint64_t bad, size;
	struct npu_job *job;

	bad = c->info.va_end + (1ull << 20) < (1ull << NPU_VA_BITS) ?
	      c->info.va_end + (1ull << 20) : 0x1000;
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	assert_int_equal(npu_cmdbuf_nop(cb, 0), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, 0, NPU_SPACE_SRAM, 0, NPU_SPACE_VA,
						bad + 24, 64), NPU_OK);
	cmd = upload(c->dev, cb, &size);
	s.cmd = cmd;
	s.cmd_size = size;
	assert_int_equal(npu_job_submit(c->dev, &s, &job), NPU_OK);
	assert_int_equal(npu_job_wait(job, UINT64_MAX), NPU_ERR_JOB_FAILED);
	assert_int_equal(npu_job_get_result(job, &r), NPU_OK);
	assert_int_equal(r.device_status, NPU_JOB_ERR_MMU_UNMAPPED);
	assert_int_equal(r.error_offset, 16 + 8);	/* after header + nop */
	assert_int_equal(r.fault_addr, bad + 24);
	assert_non_null(strstr(npu_job_last_error(job), "MMU_UNMAPPED"));
	assert_non_null(strstr(npu_job_last_error(job), "fault address"));
	assert_string_equal(npu_job_status_str(r.device_status), "MMU_UNMAPPED");
	npu_job_release(job);
	npu_buffer_free(cmd);

	/* device writes to a device-read-only buffer fault with MMU_PERM */
	assert_int_equal(npu_buffer_alloc(c->dev, 4096, NPU_BUFFER_DEVICE_READ_ONLY, &ro), NPU_OK);
	npu_cmdbuf_reset(cb);
	assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, 0, NPU_SPACE_VA, npu_buffer_va(ro) + 64,
						1, 64), NPU_OK);
	cmd = upload(c->dev, cb, &size);
	s.cmd = cmd;
	s.cmd_size = size;
	use = (struct npu_buffer_use){ ro, NPU_ACCESS_READ_ONLY };
	s.buffers = &use;
	s.num_buffers = 1;
	assert_int_equal(npu_job_run(c->dev, &s, &r), NPU_ERR_JOB_FAILED);
	assert_int_equal(r.device_status, NPU_JOB_ERR_MMU_PERM);
	assert_int_equal(r.fault_addr, npu_buffer_va(ro) + 64);
	assert_non_null(strstr(npu_device_last_error(c->dev), "MMU_PERM"));

	/* the device still works after faults */
	npu_cmdbuf_reset(cb);
	assert_int_equal(npu_cmdbuf_nop(cb, 0), NPU_OK);
	npu_buffer_free(cmd);
	cmd = upload(c->dev, cb, &size);
	s.cmd = cmd;
	s.cmd_size = size;
	s.num_buffers = 0;
	assert_int_equal(npu_job_run(c->dev, &s, &r), NPU_OK);
	npu_buffer_free(cmd);
	npu_buffer_free(ro);
	npu_cmdbuf_destroy(cb);
}

static void submit_errors_name_the_field(void **state)
{
	struct ctx *c = *state;
	struct npu_buffer *cmd, *gone;
	struct npu_buffer_use use;
	struct npu_submit s = { 0 };
	struct npu_job *job = (void *)1;

	assert_int_equal(npu_buffer_alloc(c->dev, 4096, 0, &cmd), NPU_OK);
	s.cmd = cmd;
	s.cmd_offset = 4100;
	s.cmd_size = 64;
	assert_int_equal(npu_job_submit(c->dev, &s, &job), NPU_ERR_INVALID_ARG);
	assert_null(job);
	assert_string_equal(npu_device_last_error(c->dev),
			    "npu_submit: command offset 4100 + size 64 exceeds BO size 4096");
	s.cmd_offset = 4;
	assert_int_equal(npu_job_submit(c->dev, &s, &job), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_device_last_error(c->dev), "not 8-byte aligned"));
	s.cmd_offset = 0;
	s.cmd_size = 12;
	assert_int_equal(npu_job_submit(c->dev, &s, &job), NPU_ERR_INVALID_ARG);
	s.cmd_size = 64;
	s.queue = 5;
	assert_int_equal(npu_job_submit(c->dev, &s, &job), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_device_last_error(c->dev), "queue 5"));
	s.queue = 0;
	assert_int_equal(npu_buffer_alloc(c->dev, 4096, 0, &gone), NPU_OK);
	npu_buffer_free(gone);
	/* 'gone' is dangling now; a live buffer with a bad access mode: */
	use = (struct npu_buffer_use){ cmd, 7 };
	s.buffers = &use;
	s.num_buffers = 1;
	assert_int_equal(npu_job_submit(c->dev, &s, &job), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_device_last_error(c->dev), "access 7"));
	npu_buffer_free(cmd);
}

static void watchdog_stops_long_jobs(void **state)
{
	struct npu_device_options o;
	struct npu_device *dev;
	struct npu_device_info in;
	struct npu_buffer *a, *cmd;
	struct npu_buffer_use use;
	struct npu_submit s = { 0 };
	struct npu_job_result r;
	uint64_t size;
	char err[512];

	(void)state;
	npu_device_options_init(&o);
	o.sim_watchdog_cycles = 5000;
	assert_int_equal(npu_device_open(&o, &dev, err, sizeof(err)), NPU_OK);
	npu_device_get_info(dev, &in);
	if (in.backend != NPU_BACKEND_SIM) {
		/* the driver's firmware config sets the watchdog, not us */
		npu_device_close(dev);
		skip();
	}
	assert_int_equal(npu_buffer_alloc(dev, 1 << 20, 0, &a), NPU_OK);
	cmd = fill_stream(dev, npu_buffer_va(a), 1 << 20, 2, 9, &size);	/* ~32k cycles */
	use = (struct npu_buffer_use){ a, NPU_ACCESS_READ_WRITE };
	s.cmd = cmd;
	s.cmd_size = size;
	s.buffers = &use;
	s.num_buffers = 1;
	assert_int_equal(npu_job_run(dev, &s, &r), NPU_ERR_JOB_FAILED);
	assert_int_equal(r.device_status, NPU_JOB_ERR_WATCHDOG);
	assert_non_null(strstr(npu_device_last_error(dev), "WATCHDOG"));
	npu_buffer_free(cmd);
	npu_buffer_free(a);
	npu_device_close(dev);
}

static void wait_times_out_then_completes(void **state)
{
	struct ctx *c = *state;
	struct npu_buffer *a, *cmd;
	struct npu_buffer_use use;
	struct npu_submit s = { 0 };
	struct npu_job_result r;
	struct npu_job *job;
	uint64_t size;

	assert_int_equal(npu_buffer_alloc(c->dev, 2 << 20, 0, &a), NPU_OK);
	/* 2 MiB x 200 fills: far longer on any host than the waits below */
	cmd = fill_stream(c->dev, npu_buffer_va(a), 2 << 20, 200, 3, &size);
	use = (struct npu_buffer_use){ a, NPU_ACCESS_READ_WRITE };
	s.cmd = cmd;
	s.cmd_size = size;
	s.buffers = &use;
	s.num_buffers = 1;
	assert_int_equal(npu_job_submit(c->dev, &s, &job), NPU_OK);
	assert_int_equal(npu_job_wait(job, 0), NPU_ERR_TIMEOUT);
	assert_int_equal(npu_job_get_result(job, &r), NPU_ERR_BUSY);
	assert_int_equal(npu_job_wait(job, 1000000), NPU_ERR_TIMEOUT);	/* 1 ms */
	assert_non_null(strstr(npu_job_last_error(job), "still running"));
	assert_int_equal(npu_job_wait(job, UINT64_MAX), NPU_OK);
	assert_int_equal(npu_job_get_result(job, &r), NPU_OK);
	assert_int_equal(((uint8_t *)map(a))[(2 << 20) - 1], 3);
	npu_job_release(job);
	npu_buffer_free(cmd);
	npu_buffer_free(a);
}

static void buffers_freed_under_a_running_job_stay_alive(void **state)
{
	struct ctx *c = *state;
	struct npu_buffer *a, *out, *cmd, *cmd2;
	struct npu_buffer_use use[2];
	struct npu_submit s = { 0 };
	struct npu_job *job, *job2;
	struct npu_job_result r;
	struct npu_cmdbuf *cb;
	uint64_t size, va_out;

	assert_int_equal(npu_buffer_alloc(c->dev, 2 << 20, 0, &a), NPU_OK);
	assert_int_equal(npu_buffer_alloc(c->dev, 4096, 0, &out), NPU_OK);
	va_out = npu_buffer_va(out);
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	for (int i = 0; i < 50; i++)
		assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, 0, NPU_SPACE_VA, npu_buffer_va(a),
							(uint8_t)i, 2 << 20), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, NPU_INSN_SYNC, NPU_SPACE_VA, va_out, 0x77, 4096),
			 NPU_OK);
	cmd = upload(c->dev, cb, &size);
	use[0] = (struct npu_buffer_use){ a, NPU_ACCESS_READ_WRITE };
	use[1] = (struct npu_buffer_use){ out, NPU_ACCESS_READ_WRITE };
	s.cmd = cmd;
	s.cmd_size = size;
	s.buffers = use;
	s.num_buffers = 2;
	assert_int_equal(npu_job_submit(c->dev, &s, &job), NPU_OK);
	/* free everything the job uses while it runs, and allocate over it */
	npu_buffer_free(cmd);
	npu_buffer_free(a);
	npu_buffer_free(out);
	assert_int_equal(npu_buffer_alloc(c->dev, 4096, 0, &out), NPU_OK);
	assert_true(npu_buffer_va(out) != va_out);	/* still mapped: not reused */
	assert_int_equal(npu_job_wait(job, UINT64_MAX), NPU_OK);
	assert_int_equal(npu_job_get_result(job, &r), NPU_OK);
	npu_job_release(job);
	/* after the job the old VA is gone: touching it faults, safely */
	npu_cmdbuf_reset(cb);
	assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, 0, NPU_SPACE_VA, va_out, 1, 64), NPU_OK);
	cmd2 = upload(c->dev, cb, &size);
	s.cmd = cmd2;
	s.cmd_size = size;
	s.buffers = NULL;
	s.num_buffers = 0;
	assert_int_equal(npu_job_submit(c->dev, &s, &job2), NPU_OK);
	assert_int_equal(npu_job_wait(job2, UINT64_MAX), NPU_ERR_JOB_FAILED);
	assert_int_equal(npu_job_get_result(job2, &r), NPU_OK);
	/*
	 * sim unmaps at once; the kernel may keep the VA reserved, or give
	 * it to cmd2, which the device may only read.
	 */
	if (va_out - npu_buffer_va(cmd2) < npu_buffer_size(cmd2))
		assert_int_equal(r.device_status, NPU_JOB_ERR_MMU_PERM);
	else if (r.device_status != NPU_JOB_ERR_MMU_UNMAPPED &&
		 r.device_status != NPU_JOB_OK)
		fail_msg("job on a freed VA ended %s: %s",
			 npu_job_status_str(r.device_status), npu_job_last_error(job2));
	npu_job_release(job2);
	npu_buffer_free(cmd2);
	npu_buffer_free(out);
	npu_cmdbuf_destroy(cb);
}

static void close_with_jobs_in_flight_is_safe(void **state)
{
	struct npu_device *dev;
	struct npu_buffer *a, *cmd;
	struct npu_submit s = { 0 };
	struct npu_buffer_use use;
	struct npu_job *job;
	uint64_t size;
	char err[512];
	int i;

	(void)state;
	assert_int_equal(npu_device_open(test_device_options(), &dev, err, sizeof(err)), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, 1 << 20, 0, &a), NPU_OK);
	cmd = fill_stream(dev, npu_buffer_va(a), 1 << 20, 4, 1, &size);
	use = (struct npu_buffer_use){ a, NPU_ACCESS_READ_WRITE };
	s.cmd = cmd;
	s.cmd_size = size;
	s.buffers = &use;
	s.num_buffers = 1;
	for (i = 0; i < 8; i++) {
		assert_int_equal(npu_job_submit_async(dev, &s, &job), NPU_OK);
		if (i % 2)
			npu_job_release(job);	/* drops its completion event */
	}
	npu_device_close(dev);	/* waits, frees jobs, buffers */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dma_program_copies_and_fills),
		cmocka_unit_test(conv2d_program_matches_host_reference),
		cmocka_unit_test(many_async_jobs_complete_from_one_thread),
		cmocka_unit_test(dependencies_order_jobs_across_queues),
		cmocka_unit_test(bad_va_faults_with_address),
		cmocka_unit_test(submit_errors_name_the_field),
		cmocka_unit_test(watchdog_stops_long_jobs),
		cmocka_unit_test(wait_times_out_then_completes),
		cmocka_unit_test(buffers_freed_under_a_running_job_stay_alive),
		cmocka_unit_test(close_with_jobs_in_flight_is_safe),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
