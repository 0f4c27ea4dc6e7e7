// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two NPUs in one machine (tools/npu-vm --npus 2): each PCI function binds
 * on its own (its own /dev/accel/accelK, BDF, MSI-X vectors, firmware and
 * recovery); jobs run on both at once; a hang on one is recovered there
 * while the other's jobs complete untouched; a dma-buf exported by one is
 * imported by the other and used by its jobs without a copy; unbinding
 * one while the other runs a job leaves that job alone. Skips with fewer
 * than two devices. Unbinds and rebinds accel1 (runs after
 * npu_reload_test). Needs root and debugfs.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>

#include "npu_test.h"
#include "kselftest_harness.h"

#define DRV_DIR		"/sys/bus/pci/drivers/npu"
#define WAIT_MS		20000
#define BUF_SIZE	4096
#define LONG_BUF	(4 << 20)	/* filled by the long jobs */

/* The PCI address behind /dev/accel/accel<minor>, or -errno. */
static int accel_bdf(int minor, char *bdf, size_t len)
{
	char path[64], link[512], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device", minor);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = 0;
	p = strrchr(link, '/');
	snprintf(bdf, len, "%.63s", p ? p + 1 : link);
	return 0;
}

/* accel<minor> with the two contexts npu_submit_init() names, or -1. */
static int open_minor(int minor)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/accel/accel%d", minor);
	return npu_with_contexts(open(path, O_RDWR | O_CLOEXEC));
}

static int have_two(void)
{
	return access("/dev/accel/accel0", F_OK) == 0 &&
	       access("/dev/accel/accel1", F_OK) == 0;
}

static char *debugfs_of(const char *bdf, char *dir, size_t len)
{
	snprintf(dir, len, "/sys/kernel/debug/accel/%s", bdf);
	return access(dir, F_OK) ? NULL : dir;
}

/* The MSI/MSI-X IRQ numbers of a PCI function (msi_irqs/), sorted. */
static int msi_irqs(const char *bdf, int *irqs, int max)
{
	char path[128];
	struct dirent *e;
	int n = 0, i, j;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/msi_irqs", bdf);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max)
		if (e->d_name[0] != '.')
			irqs[n++] = atoi(e->d_name);
	closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && irqs[j - 1] > irqs[j]; j--) {
			int t = irqs[j];

			irqs[j] = irqs[j - 1];
			irqs[j - 1] = t;
		}
	return n;
}

/* Deterministic bytes, different per seed. */
static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static int wait_status(int fd, uint64_t id, struct drm_npu_job_info *info)
{
	int ret = npu_job_wait(fd, id, WAIT_MS, info);

	return ret ? ret : (int)info->status;
}

/* A device's buffers for checksummed copy jobs: src -> dst. */
struct side {
	int fd;
	struct npu_bo cmd, src, dst;
};

static int side_open(struct side *s, int minor)
{
	memset(s, 0, sizeof(*s));
	s->fd = open_minor(minor);
	if (s->fd < 0)
		return -1;
	if (npu_bo_new(s->fd, BUF_SIZE, 0, &s->cmd) ||
	    npu_bo_new(s->fd, BUF_SIZE, 0, &s->src) ||
	    npu_bo_new(s->fd, BUF_SIZE, 0, &s->dst))
		return -1;
	return 0;
}

static void side_close(struct side *s)
{
	if (s->fd < 0)
		return;
	npu_bo_free(s->fd, &s->cmd);
	npu_bo_free(s->fd, &s->src);
	npu_bo_free(s->fd, &s->dst);
	close(s->fd);
	s->fd = -1;
}

/* Submit a copy of fresh pattern @seed from src to dst; the job id or 0. */
static uint64_t side_copy_submit(struct side *s, uint32_t seed)
{
	uint32_t handles[2] = { s->src.handle, s->dst.handle };
	struct npu_cs cs;
	uint64_t id;

	pattern(s->src.map, BUF_SIZE, seed);
	memset(s->dst.map, 0, BUF_SIZE);
	npu_cs_begin(&cs);
	npu_cs_copy(&cs, s->src.va, s->dst.va, BUF_SIZE);
	if (npu_submit_rw(s->fd, &s->cmd, &cs, handles, 2, &id))
		return 0;
	return id;
}

/* 0 when the job ended OK and dst holds pattern @seed; else why not. */
static int side_copy_check(struct side *s, uint64_t id, uint32_t seed)
{
	struct drm_npu_job_info info;
	uint8_t want[BUF_SIZE];
	int ret = wait_status(s->fd, id, &info);

	if (ret)
		return ret < 0 ? ret : 1000 + ret;
	pattern(want, BUF_SIZE, seed);
	return memcmp(want, s->dst.map, BUF_SIZE) ? -EBADMSG : 0;
}

TEST(two_devices_probe_with_their_own_bdf_irqs_and_firmware)
{
	char bdf0[64], bdf1[64];
	int irq0[64], irq1[64], n0, n1, i, j, fd0, fd1;

	if (!have_two())
		SKIP(return, "fewer than two NPUs (tools/npu-vm --npus 2)");
	ASSERT_EQ(0, accel_bdf(0, bdf0, sizeof(bdf0)));
	ASSERT_EQ(0, accel_bdf(1, bdf1, sizeof(bdf1)));
	TH_LOG("accel0 at %s, accel1 at %s", bdf0, bdf1);
	ASSERT_NE(0, strcmp(bdf0, bdf1));

	/* MSI-X vectors of their own: two non-empty, disjoint sets. */
	n0 = msi_irqs(bdf0, irq0, 64);
	n1 = msi_irqs(bdf1, irq1, 64);
	ASSERT_GT(n0, 0);
	ASSERT_EQ(n0, n1);
	for (i = 0; i < n0; i++)
		for (j = 0; j < n1; j++)
			ASSERT_NE(irq0[i], irq1[j]);

	/* Each answers for itself: a booted firmware and its own VM ids. */
	fd0 = open_minor(0);
	fd1 = open_minor(1);
	ASSERT_GE(fd0, 0);
	ASSERT_GE(fd1, 0);
	EXPECT_EQ(NPU_PCI_DEVICE_ID, npu_param(fd0, DRM_NPU_PARAM_DEVICE_ID));
	EXPECT_EQ(NPU_PCI_DEVICE_ID, npu_param(fd1, DRM_NPU_PARAM_DEVICE_ID));
	EXPECT_NE(0, npu_param(fd0, DRM_NPU_PARAM_FW_VERSION));
	EXPECT_EQ(npu_param(fd0, DRM_NPU_PARAM_FW_VERSION),
		  npu_param(fd1, DRM_NPU_PARAM_FW_VERSION));
	close(fd0);
	close(fd1);
}

struct runner {
	int minor;
	int jobs;
	uint32_t seed;
	int failed;		/* jobs that failed or copied wrong bytes */
	int first_error;
};

static void *runner_main(void *arg)
{
	struct runner *r = arg;
	struct side s;
	int i, ret;

	if (side_open(&s, r->minor)) {
		r->failed = r->jobs;
		r->first_error = -errno;
		side_close(&s);
		return NULL;
	}
	for (i = 0; i < r->jobs; i++) {
		uint32_t seed = r->seed + i;
		uint64_t id = side_copy_submit(&s, seed);

		ret = id ? side_copy_check(&s, id, seed) : -EIO;
		if (ret) {
			if (!r->failed)
				r->first_error = ret;
			r->failed++;
		}
	}
	side_close(&s);
	return NULL;
}

/*
 * A device's clock (job stamps; it restarts at each device reset) as
 * CLOCK_MONOTONIC: the offset to add, and in *err how far off it may be.
 */
static int64_t device_clock_offset(int fd, int64_t *err)
{
	int64_t t0 = npu_now_ns();
	uint64_t dev = npu_param(fd, DRM_NPU_PARAM_DEVICE_TIME_NS);
	int64_t t1 = npu_now_ns();

	*err = (t1 - t0) / 2 + 1;
	return t0 + (t1 - t0) / 2 - (int64_t)dev;
}

/*
 * Two long jobs, one per device, run at the same time: their start and
 * end stamps, each device's clock taken to CLOCK_MONOTONIC, overlap by
 * more than the error of that conversion. Then two threads run
 * checksummed copies on both at once.
 */
TEST(jobs_run_on_both_devices_concurrently)
{
	struct npu_bo cmd[2], buf[2], mark[2];
	struct drm_npu_job_info info[2];
	struct runner r[2] = {
		{ .minor = 0, .jobs = 100, .seed = 1000 },
		{ .minor = 1, .jobs = 100, .seed = 2000 },
	};
	pthread_t t[2];
	struct npu_cs cs;
	uint64_t id[2];
	unsigned int fills = NPU_CS_MAX_FILLS, f;
	int64_t off[2], err[2], start[2], stop[2], overlap;
	int fd[2], d, both = 0, i;
	int64_t end;

	if (!have_two())
		SKIP(return, "fewer than two NPUs (tools/npu-vm --npus 2)");
	for (d = 0; d < 2; d++) {
		fd[d] = open_minor(d);
		ASSERT_GE(fd[d], 0);
		ASSERT_EQ(0, npu_bo_new(fd[d], 8192, 0, &cmd[d]));
		ASSERT_EQ(0, npu_bo_new(fd[d], LONG_BUF, 0, &buf[d]));
		ASSERT_EQ(0, npu_bo_new(fd[d], 4096, 0, &mark[d]));
		/* Twice: the first run also maps the buffer's pages. */
		npu_fills_for_ms(fd[d], &cmd[d], &buf[d], 150);
		f = npu_fills_for_ms(fd[d], &cmd[d], &buf[d], 150);
		if (f < fills)
			fills = f;
	}
	/*
	 * About 150 ms each: a loaded host makes them up to 2-4 times longer,
	 * and job_timeout_ms is 1000 in the suite. The fill count is capped
	 * by the stream's size, hence the large buffer.
	 */
	for (d = 0; d < 2; d++) {
		uint32_t h[2] = { buf[d].handle, mark[d].handle };

		npu_cs_long(&cs, &buf[d], fills, 0x11 + d, mark[d].va, 0x5a + d);
		ASSERT_EQ(0, npu_submit_rw(fd[d], &cmd[d], &cs, h, 2, &id[d]));
	}
	end = npu_now_ns() + WAIT_MS * 1000000ll;
	while (npu_now_ns() < end) {
		ASSERT_EQ(0, npu_job_info(fd[0], id[0], &info[0]));
		ASSERT_EQ(0, npu_job_info(fd[1], id[1], &info[1]));
		if (info[0].state == DRM_NPU_JOB_RUNNING &&
		    info[1].state == DRM_NPU_JOB_RUNNING)
			both = 1;
		if (info[0].state >= DRM_NPU_JOB_DONE &&
		    info[1].state >= DRM_NPU_JOB_DONE)
			break;
		usleep(500);
	}
	for (d = 0; d < 2; d++) {
		ASSERT_EQ(NPU_JOB_OK, wait_status(fd[d], id[d], &info[d]));
		EXPECT_EQ(0x5a + d, ((uint8_t *)mark[d].map)[63]);
		EXPECT_EQ(0x11 + d, ((uint8_t *)buf[d].map)[LONG_BUF - 1]);
	}
	for (d = 0; d < 2; d++) {
		off[d] = device_clock_offset(fd[d], &err[d]);
		start[d] = (int64_t)info[d].start_ns + off[d];
		stop[d] = (int64_t)info[d].end_ns + off[d];
	}
	overlap = (stop[0] < stop[1] ? stop[0] : stop[1]) -
		  (start[0] > start[1] ? start[0] : start[1]);
	TH_LOG("%u fills: accel0 ran %.1f..%.1f ms, accel1 %.1f..%.1f ms (CLOCK_MONOTONIC, +-%.3f ms); overlap %.1f ms; both seen running: %d",
	       fills, start[0] / 1e6, stop[0] / 1e6, start[1] / 1e6,
	       stop[1] / 1e6, (err[0] + err[1]) / 1e6, overlap / 1e6, both);
	EXPECT_GT(overlap, err[0] + err[1]);
	for (d = 0; d < 2; d++) {
		npu_bo_free(fd[d], &cmd[d]);
		npu_bo_free(fd[d], &buf[d]);
		npu_bo_free(fd[d], &mark[d]);
		close(fd[d]);
	}

	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, runner_main, &r[i]));
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, r[i].failed)
			TH_LOG("accel%d: %d of %d copies failed (first: %d)",
			       i, r[i].failed, r[i].jobs, r[i].first_error);
	}
}

/*
 * A hang injected on accel1 is recovered there (its reset count goes up,
 * the job is canceled, the device runs jobs again) while accel0 keeps
 * completing checksummed copies during the hang, with no reset of its own.
 */
TEST(hang_on_one_device_leaves_the_other_running)
{
	struct npu_bo hcmd;
	struct drm_npu_job_info info;
	struct side good = { .fd = -1 }, again = { .fd = -1 };
	char bdf1[64], dir[320];
	uint64_t resets0, resets1, hung, id;
	uint32_t seed = 5000;
	int hang_fd, during = 0, ret;
	struct npu_cs cs;
	int64_t end;

	if (!have_two())
		SKIP(return, "fewer than two NPUs (tools/npu-vm --npus 2)");
	ASSERT_EQ(0, accel_bdf(1, bdf1, sizeof(bdf1)));
	if (!debugfs_of(bdf1, dir, sizeof(dir)))
		SKIP(return, "no npu debugfs for %s", bdf1);
	ASSERT_EQ(0, side_open(&good, 0));
	hang_fd = open_minor(1);
	ASSERT_GE(hang_fd, 0);
	ASSERT_EQ(0, npu_bo_new(hang_fd, 4096, 0, &hcmd));
	resets0 = npu_param(good.fd, DRM_NPU_PARAM_RESET_COUNT);
	resets1 = npu_param(hang_fd, DRM_NPU_PARAM_RESET_COUNT);

	/* accel1's next job hangs on its engine until the job timeout. */
	ASSERT_EQ(0, npu_inject_once_in(dir, "hang"));
	npu_cs_begin(&cs);
	{
		struct drm_npu_submit s;

		npu_submit_init(&s, hcmd.handle, npu_cs_store(&cs, &hcmd, 0), 0);
		ASSERT_EQ(0, npu_submit(hang_fd, &s));
		hung = s.job_id;
	}
	do {
		ASSERT_EQ(0, npu_job_info(hang_fd, hung, &info));
		usleep(1000);
	} while (info.state == DRM_NPU_JOB_QUEUED);

	/* accel0 copies while accel1's job hangs (job_timeout_ms). */
	end = npu_now_ns() + WAIT_MS * 1000000ll;
	for (;;) {
		ASSERT_EQ(0, npu_job_info(hang_fd, hung, &info));
		if (info.state != DRM_NPU_JOB_RUNNING || npu_now_ns() > end)
			break;
		id = side_copy_submit(&good, ++seed);
		ASSERT_NE(0, id);
		ret = side_copy_check(&good, id, seed);
		ASSERT_EQ(0, ret) TH_LOG("accel0 copy %u during the hang", seed);
		ASSERT_EQ(0, npu_job_info(hang_fd, hung, &info));
		if (info.state == DRM_NPU_JOB_RUNNING)
			during++;
	}
	TH_LOG("accel0 completed %d checked copies while accel1 hung", during);
	EXPECT_LT(0, during);

	/* accel1 recovered: the hung job canceled, one reset, runs again. */
	ASSERT_EQ(0, npu_job_wait(hang_fd, hung, WAIT_MS, &info));
	EXPECT_EQ(DRM_NPU_JOB_CANCELED, info.state);
	EXPECT_NE(NPU_JOB_OK, info.status);
	/* The count goes up when the recovery ends, after the job's fence. */
	end = npu_now_ns() + WAIT_MS * 1000000ll;
	while (npu_param(hang_fd, DRM_NPU_PARAM_RESET_COUNT) == resets1 &&
	       npu_now_ns() < end)
		usleep(1000);
	EXPECT_EQ(resets1 + 1, npu_param(hang_fd, DRM_NPU_PARAM_RESET_COUNT));
	EXPECT_EQ(resets0, npu_param(good.fd, DRM_NPU_PARAM_RESET_COUNT));
	ASSERT_EQ(0, side_open(&again, 1));
	id = side_copy_submit(&again, 77);
	ASSERT_NE(0, id);
	EXPECT_EQ(0, side_copy_check(&again, id, 77));
	id = side_copy_submit(&good, 78);
	ASSERT_NE(0, id);
	EXPECT_EQ(0, side_copy_check(&good, id, 78));

	side_close(&again);
	side_close(&good);
	npu_bo_free(hang_fd, &hcmd);
	close(hang_fd);
}

/* PRIME import of a dma-buf fd: the handle, VA and size, or -errno. */
static int import_fd(int fd, int dmabuf, uint32_t *handle, uint64_t *va,
		     uint64_t *size)
{
	struct drm_prime_handle imp = { .fd = dmabuf };
	struct drm_npu_bo_info info = { 0 };
	int ret = npu_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp);

	if (ret)
		return ret;
	info.handle = imp.handle;
	ret = npu_ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &info);
	if (ret)
		return ret;
	*handle = imp.handle;
	*va = info.va;
	*size = info.size;
	return 0;
}

/* Whether /sys/kernel/debug/dma_buf/bufinfo lists @bdf as attached. */
static int dma_buf_attached(const char *bdf)
{
	char line[512];
	int found = 0;
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, bdf))
			found = 1;
	fclose(f);
	return found;
}

/*
 * A BO of accel0, exported (PRIME, read-write) and imported by accel1:
 * accel1's jobs read what accel0's CPU mapping holds, and what they write
 * into it shows in accel0's mapping: one set of pages, no copy.
 */
TEST(dma_buf_of_one_device_is_a_job_input_of_the_other_without_a_copy)
{
	struct drm_prime_handle exp = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_npu_job_info info;
	struct npu_bo shared, cmd, dst;
	uint8_t want[BUF_SIZE];
	uint32_t handle, h[2];
	uint64_t va, size, id;
	char bdf1[64];
	struct npu_cs cs;
	int a, b, seed;

	if (!have_two())
		SKIP(return, "fewer than two NPUs (tools/npu-vm --npus 2)");
	ASSERT_EQ(0, accel_bdf(1, bdf1, sizeof(bdf1)));
	a = open_minor(0);
	b = open_minor(1);
	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	ASSERT_EQ(0, npu_bo_new(a, 2 * BUF_SIZE, 0, &shared));
	ASSERT_EQ(0, npu_bo_new(b, BUF_SIZE, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(b, BUF_SIZE, 0, &dst));
	exp.handle = shared.handle;
	ASSERT_EQ(0, npu_ioctl(a, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
	ASSERT_EQ(0, import_fd(b, exp.fd, &handle, &va, &size));
	EXPECT_EQ(shared.size, size);
	/* accel1 holds an attachment of its own to accel0's dma-buf. */
	if (dma_buf_attached(bdf1) >= 0)
		EXPECT_EQ(1, dma_buf_attached(bdf1));

	/* Twice: a CPU write through accel0 after the import shows too. */
	for (seed = 1; seed <= 2; seed++) {
		pattern(shared.map, BUF_SIZE, 900 + seed);
		memset(dst.map, 0, BUF_SIZE);
		npu_cs_begin(&cs);
		npu_cs_copy(&cs, va, dst.va, BUF_SIZE);
		h[0] = handle;
		h[1] = dst.handle;
		ASSERT_EQ(0, npu_submit_rw(b, &cmd, &cs, h, 2, &id));
		ASSERT_EQ(NPU_JOB_OK, wait_status(b, id, &info));
		pattern(want, BUF_SIZE, 900 + seed);
		EXPECT_EQ(0, memcmp(want, dst.map, BUF_SIZE))
			TH_LOG("accel1's job read other bytes than accel0 wrote (round %d)", seed);
	}

	/* accel1 writes the second half; accel0's mapping sees it. */
	pattern(dst.map, BUF_SIZE, 4242);
	npu_cs_begin(&cs);
	npu_cs_copy(&cs, dst.va, va + BUF_SIZE, BUF_SIZE);
	ASSERT_EQ(0, npu_submit_rw(b, &cmd, &cs, h, 2, &id));
	ASSERT_EQ(NPU_JOB_OK, wait_status(b, id, &info));
	pattern(want, BUF_SIZE, 4242);
	EXPECT_EQ(0, memcmp(want, (uint8_t *)shared.map + BUF_SIZE, BUF_SIZE));

	/* accel0's own job reads back what accel1 wrote. */
	{
		struct npu_bo acmd, adst;
		uint32_t ah[2];

		ASSERT_EQ(0, npu_bo_new(a, BUF_SIZE, 0, &acmd));
		ASSERT_EQ(0, npu_bo_new(a, BUF_SIZE, 0, &adst));
		npu_cs_begin(&cs);
		npu_cs_copy(&cs, shared.va + BUF_SIZE, adst.va, BUF_SIZE);
		ah[0] = shared.handle;
		ah[1] = adst.handle;
		ASSERT_EQ(0, npu_submit_rw(a, &acmd, &cs, ah, 2, &id));
		ASSERT_EQ(NPU_JOB_OK, wait_status(a, id, &info));
		EXPECT_EQ(0, memcmp(want, adst.map, BUF_SIZE));
		npu_bo_free(a, &acmd);
		npu_bo_free(a, &adst);
	}

	close(exp.fd);
	EXPECT_EQ(0, npu_gem_close(b, handle));
	npu_bo_free(b, &dst);
	npu_bo_free(b, &cmd);
	npu_bo_free(a, &shared);
	close(b);
	close(a);
}

/* The accel minor of @bdf once it is bound again, or -1 after @ms. */
static int minor_of(const char *bdf, int ms)
{
	int64_t end = npu_now_ns() + (int64_t)ms * 1000000ll;
	char b[64];
	int m;

	do {
		for (m = 0; m < 16; m++)
			if (!accel_bdf(m, b, sizeof(b)) && !strcmp(b, bdf))
				return m;
		usleep(20000);
	} while (npu_now_ns() < end);
	return -1;
}

/*
 * Unbind accel1 through sysfs while accel0 runs a long job, then bind it
 * again: accel0's job finishes with its output, accel1's open file gets
 * -ENODEV, and the rebound device runs jobs.
 */
TEST(unbind_one_device_while_the_other_runs_a_job)
{
	struct npu_bo cmd, buf, mark;
	struct drm_npu_job_info info;
	struct side s1 = { .fd = -1 }, back = { .fd = -1 };
	char bdf0[64], bdf1[64];
	struct drm_npu_submit sub;
	uint64_t id, resets0, unbinding, unbound;
	unsigned int fills;
	struct npu_cs cs;
	uint32_t h[2];
	int fd, m;

	if (!have_two())
		SKIP(return, "fewer than two NPUs (tools/npu-vm --npus 2)");
	if (geteuid())
		SKIP(return, "unbind needs root");
	ASSERT_EQ(0, accel_bdf(0, bdf0, sizeof(bdf0)));
	ASSERT_EQ(0, accel_bdf(1, bdf1, sizeof(bdf1)));
	fd = open_minor(0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, side_open(&s1, 1));
	ASSERT_EQ(0, npu_bo_new(fd, 8192, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, LONG_BUF, 0, &buf));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &mark));
	resets0 = npu_param(fd, DRM_NPU_PARAM_RESET_COUNT);
	/* Twice: the first run also maps the buffer's pages. */
	npu_fills_for_ms(fd, &cmd, &buf, 200);
	fills = npu_fills_for_ms(fd, &cmd, &buf, 200);

	npu_cs_long(&cs, &buf, fills, 0x3c, mark.va, 0xa5);
	h[0] = buf.handle;
	h[1] = mark.handle;
	ASSERT_EQ(0, npu_submit_rw(fd, &cmd, &cs, h, 2, &id));
	do {
		ASSERT_EQ(0, npu_job_info(fd, id, &info));
		usleep(1000);
	} while (info.state == DRM_NPU_JOB_QUEUED);

	unbinding = npu_param(fd, DRM_NPU_PARAM_DEVICE_TIME_NS);
	ASSERT_EQ(0, npu_write_file(DRV_DIR "/unbind", bdf1));
	unbound = npu_param(fd, DRM_NPU_PARAM_DEVICE_TIME_NS);
	/* accel0's job, running when the unbind began, ends as it should. */
	ASSERT_EQ(NPU_JOB_OK, wait_status(fd, id, &info));
	TH_LOG("accel0's job: %u fills, device time %llu..%llu; unbind of accel1 from %llu to %llu",
	       fills, (unsigned long long)info.start_ns,
	       (unsigned long long)info.end_ns,
	       (unsigned long long)unbinding, (unsigned long long)unbound);
	EXPECT_LT(unbinding, info.end_ns);
	EXPECT_EQ(0xa5, ((uint8_t *)mark.map)[63]);
	EXPECT_EQ(0x3c, ((uint8_t *)buf.map)[0]);
	EXPECT_EQ(0x3c, ((uint8_t *)buf.map)[LONG_BUF - 1]);
	EXPECT_EQ(resets0, npu_param(fd, DRM_NPU_PARAM_RESET_COUNT));
	/* The file of the unbound device is gone, not the device of ours. */
	npu_submit_init(&sub, s1.cmd.handle, 16, 1);
	EXPECT_EQ(-ENODEV, npu_submit(s1.fd, &sub));
	side_close(&s1);

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/bind", bdf1));
	m = minor_of(bdf1, 10000);
	ASSERT_LE(0, m) TH_LOG("%s did not come back as an accel node", bdf1);
	ASSERT_EQ(0, side_open(&back, m));
	id = side_copy_submit(&back, 31);
	ASSERT_NE(0, id);
	EXPECT_EQ(0, side_copy_check(&back, id, 31));
	side_close(&back);
	/* accel0 still works, and is still the device it was. */
	ASSERT_EQ(0, accel_bdf(0, bdf1, sizeof(bdf1)));
	EXPECT_EQ(0, strcmp(bdf0, bdf1));
	npu_bo_free(fd, &cmd);
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &mark);
	close(fd);
}

TEST_HARNESS_MAIN
