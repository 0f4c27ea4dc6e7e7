// SPDX-License-Identifier: GPL-2.0-only
/*
 * The io_uring submit path: IORING_OP_URING_CMD with
 * DRM_NPU_URING_CMD_SUBMIT, many per io_uring_enter, CQE res = device
 * status or -errno, CQE32 carries the job id.
 */
#include <liburing.h>
#include <stddef.h>
#include <sys/wait.h>

#include "npu_test.h"
#include "kselftest_harness.h"

#define BATCH 128

static void prep_submit(struct io_uring_sqe *sqe, int fd,
			struct drm_npu_submit *s, uint64_t user_data)
{
	struct drm_npu_uring_submit us = {
		.submit = (uintptr_t)s,
		.submit_size = sizeof(*s),
	};

	/* No free entry: io_uring_submit() then submits nothing, and says so. */
	if (!sqe)
		return;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = DRM_NPU_URING_CMD_SUBMIT;
	sqe->user_data = user_data;
	memcpy(sqe->cmd, &us, sizeof(us));
}

FIXTURE(uring) {
	int fd;
	struct io_uring ring;
	bool ring_ok;
	struct npu_bo cmd, buf;
	uint32_t empty_size;
};

FIXTURE_SETUP(uring)
{
	struct npu_cs cs;

	self->ring_ok = false;
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no device");
	ASSERT_EQ(0, io_uring_queue_init(2 * BATCH, &self->ring, IORING_SETUP_CQE32));
	self->ring_ok = true;
	ASSERT_EQ(0, npu_bo_new(self->fd, 8192, 0, &self->cmd));
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &self->buf));
	npu_cs_begin(&cs);
	self->empty_size = npu_cs_store(&cs, &self->cmd, 0);
}

FIXTURE_TEARDOWN(uring)
{
	if (self->ring_ok)
		io_uring_queue_exit(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(uring, batch_of_submits_in_one_enter_completes)
{
	static struct drm_npu_submit s[BATCH];
	struct io_uring_cqe *cqe;
	int i, seen = 0;

	for (i = 0; i < BATCH; i++) {
		npu_submit_init(&s[i], self->cmd.handle, self->empty_size, i % 2);
		prep_submit(io_uring_get_sqe(&self->ring), self->fd, &s[i], i + 1);
	}
	/* One io_uring_enter for the whole batch. */
	ASSERT_EQ(BATCH, io_uring_submit(&self->ring));
	while (seen < BATCH) {
		ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
		ASSERT_GE(cqe->user_data, 1);
		ASSERT_LE(cqe->user_data, BATCH);
		i = cqe->user_data - 1;
		EXPECT_EQ(0, cqe->res) TH_LOG("sqe %d", i);
		EXPECT_EQ(s[i].job_id, cqe->big_cqe[0]);
		EXPECT_NE(0, s[i].job_id);
		io_uring_cqe_seen(&self->ring, cqe);
		seen++;
	}
}

TEST_F(uring, device_error_is_positive_status_in_res)
{
	struct drm_npu_submit s;
	struct io_uring_cqe *cqe;
	struct npu_cs cs;
	uint64_t bad = npu_param(self->fd, DRM_NPU_PARAM_VA_END) - 0x20000;

	npu_cs_begin(&cs);
	npu_cs_fill(&cs, bad, 1, 8);
	npu_submit_init(&s, self->cmd.handle, npu_cs_store(&cs, &self->cmd, 4096), 0);
	s.cmd_offset = 4096;
	prep_submit(io_uring_get_sqe(&self->ring), self->fd, &s, 7);
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
	EXPECT_EQ(7, cqe->user_data);
	EXPECT_EQ(NPU_JOB_ERR_MMU_UNMAPPED, cqe->res);
	io_uring_cqe_seen(&self->ring, cqe);
}

TEST_F(uring, data_written_by_uring_job_is_visible)
{
	struct drm_npu_submit s;
	struct io_uring_cqe *cqe;
	struct npu_cs cs;

	npu_cs_begin(&cs);
	npu_cs_fill(&cs, self->buf.va, 0x6b, 4096);
	npu_submit_init(&s, self->cmd.handle, npu_cs_store(&cs, &self->cmd, 4096), 1);
	s.cmd_offset = 4096;
	prep_submit(io_uring_get_sqe(&self->ring), self->fd, &s, 1);
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
	EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(&self->ring, cqe);
	EXPECT_EQ(0x6b, ((uint8_t *)self->buf.map)[4095]);
}

static int one_cqe_res(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int res;

	if (io_uring_submit(ring) != 1 || io_uring_wait_cqe(ring, &cqe))
		return 1 << 30;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

TEST_F(uring, invalid_commands_fail_with_errno)
{
	struct drm_npu_submit s;
	struct drm_npu_uring_submit us = { 0 };
	struct io_uring_sqe *sqe;

	/* A malformed submit: the ioctl's errno. */
	npu_submit_init(&s, self->cmd.handle, self->empty_size, 0);
	s.flags = 1;
	prep_submit(io_uring_get_sqe(&self->ring), self->fd, &s, 1);
	EXPECT_EQ(-EINVAL, one_cqe_res(&self->ring));

	npu_submit_init(&s, 0xbad, self->empty_size, 0);
	prep_submit(io_uring_get_sqe(&self->ring), self->fd, &s, 1);
	EXPECT_EQ(-ENOENT, one_cqe_res(&self->ring));

	/* NULL submit pointer. */
	sqe = io_uring_get_sqe(&self->ring);
	prep_submit(sqe, self->fd, NULL, 1);
	EXPECT_EQ(-EFAULT, one_cqe_res(&self->ring));

	/* Non-zero flags in the SQE command area. */
	sqe = io_uring_get_sqe(&self->ring);
	prep_submit(sqe, self->fd, &s, 1);
	us.submit = (uintptr_t)&s;
	us.submit_size = sizeof(s);
	us.flags = 1;
	memcpy(sqe->cmd, &us, sizeof(us));
	EXPECT_EQ(-EINVAL, one_cqe_res(&self->ring));

	/* submit_size 0 (a version 1 SQE has its pad there) or huge. */
	us.flags = 0;
	us.submit_size = 0;
	sqe = io_uring_get_sqe(&self->ring);
	prep_submit(sqe, self->fd, &s, 1);
	memcpy(sqe->cmd, &us, sizeof(us));
	EXPECT_EQ(-EINVAL, one_cqe_res(&self->ring));
	us.submit_size = 4096 + 8;
	sqe = io_uring_get_sqe(&self->ring);
	prep_submit(sqe, self->fd, &s, 1);
	memcpy(sqe->cmd, &us, sizeof(us));
	EXPECT_EQ(-EINVAL, one_cqe_res(&self->ring));

	/* Unknown cmd_op. */
	sqe = io_uring_get_sqe(&self->ring);
	prep_submit(sqe, self->fd, &s, 1);
	sqe->cmd_op = 0x1234;
	EXPECT_EQ(-EOPNOTSUPP, one_cqe_res(&self->ring));
}

/*
 * submit_size lets the struct grow: a larger one with a zero tail is
 * read, a non-zero tail is -E2BIG; a shorter one reads zero-extended
 * (here: without the reserved field, so its job id is still written).
 */
TEST_F(uring, submit_size_reads_larger_and_shorter_structs)
{
	struct { struct drm_npu_submit s; uint64_t tail[2]; } big;
	struct drm_npu_uring_submit us = { 0 };
	struct io_uring_sqe *sqe;
	int res;

	npu_submit_init(&big.s, self->cmd.handle, self->empty_size, 1);
	big.tail[0] = big.tail[1] = 0;
	us.submit = (uintptr_t)&big;
	us.submit_size = sizeof(big);
	sqe = io_uring_get_sqe(&self->ring);
	prep_submit(sqe, self->fd, &big.s, 1);
	memcpy(sqe->cmd, &us, sizeof(us));
	res = one_cqe_res(&self->ring);
	EXPECT_EQ(NPU_JOB_OK, res);
	EXPECT_NE(0, big.s.job_id);

	npu_submit_init(&big.s, self->cmd.handle, self->empty_size, 1);
	big.tail[1] = 1;
	sqe = io_uring_get_sqe(&self->ring);
	prep_submit(sqe, self->fd, &big.s, 1);
	memcpy(sqe->cmd, &us, sizeof(us));
	EXPECT_EQ(-E2BIG, one_cqe_res(&self->ring));
	EXPECT_EQ(0, big.s.job_id);

	npu_submit_init(&big.s, self->cmd.handle, self->empty_size, 1);
	big.s.reserved = 0xdead;	/* past the size: not read */
	us.submit_size = offsetof(struct drm_npu_submit, reserved);
	sqe = io_uring_get_sqe(&self->ring);
	prep_submit(sqe, self->fd, &big.s, 1);
	memcpy(sqe->cmd, &us, sizeof(us));
	EXPECT_EQ(NPU_JOB_OK, one_cqe_res(&self->ring));
	EXPECT_NE(0, big.s.job_id);
}

TEST(exit_with_uring_jobs_in_flight_leaves_nothing_behind)
{
	struct npu_counters base, now;
	int status;
	pid_t pid;

	if (!npu_debugfs_dir())
		SKIP(return, "no npu debugfs");
	npu_counters_read(&base);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		static struct drm_npu_submit s[BATCH];
		struct io_uring ring;
		struct npu_bo cmd, buf;
		struct npu_cs cs;
		int fd = npu_open(), i;

		if (fd < 0 || io_uring_queue_init(BATCH, &ring, 0) ||
		    npu_bo_new(fd, 4096, 0, &cmd) ||
		    npu_bo_new(fd, 256 << 10, 0, &buf))
			_exit(1);
		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf.va, 1, 256 << 10);
		npu_cs_store(&cs, &cmd, 0);
		for (i = 0; i < BATCH; i++) {
			npu_submit_init(&s[i], cmd.handle, cs.len, i % 2);
			prep_submit(io_uring_get_sqe(&ring), fd, &s[i], i);
		}
		io_uring_submit(&ring);
		/* Exit without reaping: the ring and the file go with us. */
		_exit(0);
	}
	waitpid(pid, &status, 0);
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, npu_counters_settle(&base, &now, 20000)) {
		TH_LOG("bos %lld/%lld pages %lld/%lld jobs %lld/%lld contexts %lld/%lld",
		       now.bos, base.bos, now.pages, base.pages, now.jobs,
		       base.jobs, now.contexts, base.contexts);
	}
}

/*
 * A process exits with an io_uring command whose job waits for another
 * driver's fence (an imported vgem buffer's write fence) that nobody
 * signals. Tearing the ring down cancels the command (the driver marks
 * its commands cancelable), so io_uring lets go of the device file and
 * it is released: a 1 MiB BO of that file which the job does not use is
 * unmapped (the debugfs pages_mapped count). The job stays queued, with
 * its own BOs mapped, and ends when the fence signals. Uncancelable, the
 * command held the file until the fence signaled: vgem's signal by
 * themselves after 10 s, so the fence must still be pending once the
 * file is gone.
 */
TEST(exit_with_a_uring_job_behind_another_drivers_fence_releases_the_file)
{
	struct npu_vgem_bo vbo = { 0 };
	int vfd, pfd, status, i;
	long long base, now = -1;
	pid_t pid;

	if (npu_counter("pages_mapped") < 0)
		SKIP(return, "no npu debugfs");
	vfd = npu_vgem_open();
	if (vfd < 0)
		SKIP(return, "no vgem device");
	pfd = npu_open();
	ASSERT_GE(pfd, 0);
	ASSERT_EQ(0, npu_vgem_fenced_bo(vfd, pfd, &vbo));
	base = npu_counter("pages_mapped");

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct drm_npu_bo_ref ref = { .access = DRM_NPU_BO_ACCESS_READ };
		struct drm_prime_handle imp = { .fd = vbo.dmabuf_fd };
		struct io_uring_sqe *sqe;
		struct drm_npu_submit s;
		struct npu_bo cmd, buf, unused;
		struct io_uring ring;
		struct npu_cs cs;
		int fd = npu_open();

		if (fd < 0 || ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp) ||
		    npu_bo_new(fd, 4096, 0, &cmd) || npu_bo_new(fd, 4096, 0, &buf) ||
		    npu_bo_new(fd, 1 << 20, 0, &unused))
			_exit(2);
		if (io_uring_queue_init(8, &ring, IORING_SETUP_CQE32))
			_exit(3);
		sqe = io_uring_get_sqe(&ring);
		if (!sqe)
			_exit(3);
		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf.va, 0x77, 64);
		npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
		ref.handle = imp.handle;
		s.bo_refs = (uintptr_t)&ref;
		s.bo_ref_count = 1;
		prep_submit(sqe, fd, &s, 1);
		if (io_uring_submit(&ring) != 1)
			_exit(4);
		usleep(100000);
		_exit(0);	/* the command still waits */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	/*
	 * The ring is torn down in a kworker: wait until at most the job's
	 * three pages stay mapped of the child's 259 (or 20 s).
	 */
	for (i = 0; i < 400; i++) {
		now = npu_counter("pages_mapped");
		if (now <= base + 3)
			break;
		usleep(50000);
	}
	EXPECT_LE(now, base + 3);
	/* Still pending: the file went without waiting for it. */
	EXPECT_EQ(0, npu_vgem_signal(vfd, &vbo));
	close(vbo.dmabuf_fd);
	close(pfd);
	close(vfd);
}

TEST_HARNESS_MAIN
