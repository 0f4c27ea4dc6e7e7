// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_bench - empty-job throughput through the ioctl and through batched
 * io_uring commands, and submit->complete latency. Prints numbers only;
 * nothing here is a pass/fail criterion.
 *
 *   npu_bench [jobs] [batch]
 */
#include <liburing.h>

#include "npu_test.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int jobs = argc > 1 ? atoi(argv[1]) : 2000;
	int batch = argc > 2 ? atoi(argv[2]) : 64;
	static struct drm_npu_submit subs[4096];
	int64_t t0, t1, lat[200];
	struct io_uring_cqe *cqe;
	struct drm_npu_submit s;
	struct io_uring ring;
	struct npu_bo cmd;
	struct npu_cs cs;
	uint32_t sync;
	int fd, i, done, n;

	fd = npu_open();
	if (fd < 0 || npu_bo_new(fd, 4096, 0, &cmd)) {
		perror("npu_bench: open");
		return 1;
	}
	npu_cs_begin(&cs);
	npu_cs_store(&cs, &cmd, 0);
	sync = npu_syncobj_new(fd);
	if (batch > 1024)
		batch = 1024;

	/* ioctl: one submit per job, wait for the last (queues are FIFO). */
	t0 = npu_now_ns();
	for (i = 0; i < jobs; i++) {
		npu_submit_init(&s, cmd.handle, cs.len, 1);
		if (i == jobs - 1)
			s.out_sync.handle = sync;
		if (npu_submit(fd, &s)) {
			perror("submit");
			return 1;
		}
	}
	npu_syncobj_wait(fd, sync, 0, 60000);
	t1 = npu_now_ns();
	printf("ioctl:     %d empty jobs in %.3f s: %.0f jobs/s\n", jobs,
	       (t1 - t0) / 1e9, jobs / ((t1 - t0) / 1e9));

	/* io_uring: 'batch' SQEs per io_uring_enter, reap all CQEs. */
	if (io_uring_queue_init(4 * batch, &ring, 0)) {
		perror("io_uring_queue_init");
		return 1;
	}
	/* Pipelined: keep up to 4 batches in flight, reap as CQEs arrive. */
	t0 = npu_now_ns();
	{
		int inflight = 0, reaped = 0, slot = 0;

		for (done = 0; done < jobs; done += n) {
			n = jobs - done < batch ? jobs - done : batch;
			while (inflight + n > 4 * batch || (n == 0 && inflight)) {
				if (io_uring_wait_cqe(&ring, &cqe))
					return 1;
				if (cqe->res)
					fprintf(stderr, "cqe res %d\n", cqe->res);
				io_uring_cqe_seen(&ring, cqe);
				inflight--;
				reaped++;
			}
			for (i = 0; i < n; i++) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
				struct drm_npu_submit *sub = &subs[slot++ % 4096];
				struct drm_npu_uring_submit us = {
					.submit = (uintptr_t)sub,
					.submit_size = sizeof(*sub),
				};

				npu_submit_init(sub, cmd.handle, cs.len, 1);
				memset(sqe, 0, sizeof(*sqe));
				sqe->opcode = IORING_OP_URING_CMD;
				sqe->fd = fd;
				sqe->cmd_op = DRM_NPU_URING_CMD_SUBMIT;
				memcpy(sqe->cmd, &us, sizeof(us));
			}
			if (io_uring_submit(&ring) != n) {
				perror("io_uring_submit");
				return 1;
			}
			inflight += n;
		}
		while (reaped < jobs) {
			if (io_uring_wait_cqe(&ring, &cqe))
				return 1;
			io_uring_cqe_seen(&ring, cqe);
			reaped++;
		}
	}
	t1 = npu_now_ns();
	printf("uring_cmd: %d empty jobs in %.3f s: %.0f jobs/s (batch %d)\n",
	       jobs, (t1 - t0) / 1e9, jobs / ((t1 - t0) / 1e9), batch);

	/* Latency: one job at a time, submit -> out-syncobj signaled. */
	for (i = 0; i < 200; i++) {
		uint32_t h = npu_syncobj_new(fd);

		npu_submit_init(&s, cmd.handle, cs.len, 0);
		s.out_sync.handle = h;
		t0 = npu_now_ns();
		npu_submit(fd, &s);
		npu_syncobj_wait(fd, h, 0, 10000);
		lat[i] = npu_now_ns() - t0;
		npu_syncobj_free(fd, h);
	}
	qsort(lat, 200, sizeof(lat[0]), cmp_i64);
	printf("latency:   submit->complete median %.1f us, p90 %.1f us, min %.1f us, max %.1f us\n",
	       lat[100] / 1e3, lat[180] / 1e3, lat[0] / 1e3, lat[199] / 1e3);
	io_uring_queue_exit(&ring);
	close(fd);
	return 0;
}
