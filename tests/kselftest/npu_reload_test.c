// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unbind / rebind with jobs in flight and module unload / reload. Runs
 * last: it takes the device away. Needs root; the module path for insmod
 * comes from $NPU_KO (the VM runner sets it).
 */
#include <dirent.h>
#include <sys/stat.h>

#include "npu_test.h"
#include "kselftest_harness.h"

#define DRV_DIR "/sys/bus/pci/drivers/npu"

static int sysfs_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, val, strlen(val)) < 0 ? -errno : 0;
	close(fd);
	return ret;
}

/* The PCI address bound to npu, e.g. "0000:01:00.0". */
static int bound_device(char *bdf, size_t len)
{
	DIR *d = opendir(DRV_DIR);
	struct dirent *e;
	int ret = -ENOENT;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (strchr(e->d_name, ':')) {
			snprintf(bdf, len, "%s", e->d_name);
			ret = 0;
			break;
		}
	closedir(d);
	return ret;
}

static int wait_for_device(int timeout_ms)
{
	int64_t end = npu_now_ns() + (int64_t)timeout_ms * 1000000ll;
	int fd;

	while ((fd = npu_open()) < 0 && npu_now_ns() < end)
		usleep(20000);
	return fd;
}

/* Queue real work, return with jobs still in flight. */
static void queue_work(int fd, struct npu_bo *cmd, struct npu_bo *buf)
{
	struct npu_cs cs;
	int i;

	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf->va, 3, buf->size);
	for (i = 0; i < 64; i++) {
		struct drm_npu_submit s;

		npu_submit_init(&s, cmd->handle, npu_cs_store(&cs, cmd, 0), i % 2);
		npu_submit(fd, &s);
	}
}

static void run_one_job(struct __test_metadata *_metadata, int fd)
{
	struct npu_bo cmd, buf;
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	struct npu_cs cs;

	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x3c, 64);
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 0);
	ASSERT_EQ(0, npu_submit(fd, &s));
	ASSERT_EQ(0, npu_job_wait(fd, s.job_id, 20000, &info));
	EXPECT_EQ(NPU_JOB_OK, info.status);
	EXPECT_EQ(0x3c, ((uint8_t *)buf.map)[63]);
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
}

/*
 * A PCI reset from sysfs (bus reset or FLR) with jobs in flight: the
 * driver's reset_prepare / reset_done re-boot the device and run the
 * unfinished jobs again; no context is blamed or banned.
 */
TEST(pci_reset_with_jobs_in_flight_reruns_them)
{
	struct npu_bo cmd, buf;
	struct drm_npu_job_info info;
	uint64_t ids[16], resets;
	char bdf[256], path[512];
	struct npu_cs cs;
	int fd, i;

	if (bound_device(bdf, sizeof(bdf)))
		SKIP(return, "npu not bound");
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", bdf);
	if (access(path, W_OK))
		SKIP(return, "no PCI reset method for %s", bdf);
	fd = npu_open();
	ASSERT_GE(fd, 0);
	resets = npu_param(fd, DRM_NPU_PARAM_RESET_COUNT);
	ASSERT_EQ(0, npu_bo_new(fd, 16 * 256, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 1 << 20, 0, &buf));
	memset(buf.map, 0, buf.size);
	for (i = 0; i < 16; i++) {
		struct drm_npu_submit s;

		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf.va + i * 65536, 0x20 + i, 65536);
		memcpy((uint8_t *)cmd.map + i * 256, cs.buf, cs.len);
		npu_submit_init(&s, cmd.handle, cs.len, i % 2);
		s.cmd_offset = i * 256;
		ASSERT_EQ(0, npu_submit(fd, &s));
		ids[i] = s.job_id;
	}
	ASSERT_EQ(0, sysfs_write(path, "1"));
	for (i = 0; i < 16; i++) {
		ASSERT_EQ(0, npu_job_wait(fd, ids[i], 20000, &info));
		EXPECT_EQ(DRM_NPU_JOB_DONE, info.state) TH_LOG("job %d", i);
		EXPECT_EQ(NPU_JOB_OK, info.status) TH_LOG("job %d", i);
		EXPECT_EQ(0x20 + i, ((uint8_t *)buf.map)[i * 65536 + 65535]);
	}
	EXPECT_EQ(resets + 1, npu_param(fd, DRM_NPU_PARAM_RESET_COUNT));
	/* Not banned: the context keeps working. */
	run_one_job(_metadata, fd);
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);
}

TEST(unbind_with_jobs_in_flight_then_rebind)
{
	struct npu_bo cmd, buf;
	struct drm_npu_submit s;
	char bdf[256];
	int fd;

	if (bound_device(bdf, sizeof(bdf)))
		SKIP(return, "npu not bound");
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 1 << 20, 0, &buf));
	queue_work(fd, &cmd, &buf);

	ASSERT_EQ(0, sysfs_write(DRV_DIR "/unbind", bdf));
	/* The open file outlives the device: ioctls fail cleanly. */
	npu_submit_init(&s, cmd.handle, 16, 0);
	EXPECT_EQ(-ENODEV, npu_submit(fd, &s));
	EXPECT_EQ(3, ((uint8_t *)buf.map)[0] | 3);	/* mapping still readable */
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);

	ASSERT_EQ(0, sysfs_write(DRV_DIR "/bind", bdf));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	run_one_job(_metadata, fd);
	close(fd);
}

TEST(rmmod_with_jobs_in_flight_then_insmod)
{
	const char *ko = getenv("NPU_KO");
	const char *args = getenv("NPU_KO_ARGS");
	struct npu_bo cmd, buf;
	char cmdline[512];
	int fd;

	if (!ko)
		SKIP(return, "NPU_KO not set");
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 1 << 20, 0, &buf));
	queue_work(fd, &cmd, &buf);
	/* rmmod needs the last file closed; jobs are still running. */
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);

	ASSERT_EQ(0, system("rmmod npu"));
	EXPECT_NE(0, access(NPU_DEV_PATH, F_OK));
	snprintf(cmdline, sizeof(cmdline), "insmod %s %s", ko, args ? args : "");
	ASSERT_EQ(0, system(cmdline));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	run_one_job(_metadata, fd);
	close(fd);
}

/* job_timeout_ms=0 would time every job out at once: insmod refuses it. */
TEST(insmod_rejects_a_zero_job_timeout)
{
	const char *ko = getenv("NPU_KO");
	const char *args = getenv("NPU_KO_ARGS");
	char cmdline[512];
	int fd;

	if (!ko)
		SKIP(return, "NPU_KO not set");
	ASSERT_EQ(0, system("rmmod npu"));
	snprintf(cmdline, sizeof(cmdline), "insmod %s job_timeout_ms=0 2>/dev/null", ko);
	EXPECT_NE(0, system(cmdline));
	EXPECT_NE(0, system("grep -q '^npu ' /proc/modules"));
	snprintf(cmdline, sizeof(cmdline), "insmod %s job_timeout_ms=600001 2>/dev/null", ko);
	EXPECT_NE(0, system(cmdline));
	snprintf(cmdline, sizeof(cmdline), "insmod %s %s", ko, args ? args : "");
	ASSERT_EQ(0, system(cmdline));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	run_one_job(_metadata, fd);
	close(fd);
}

TEST_HARNESS_MAIN
