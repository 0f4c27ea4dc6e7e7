// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unbind / rebind with jobs in flight and module unload / reload. Runs
 * last: it takes the device away. Needs root; the module path for insmod
 * comes from $NPU_KO (the VM runner sets it).
 */
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "npu_test.h"
#include "kselftest_harness.h"

#define DRV_DIR "/sys/bus/pci/drivers/npu"

/*
 * The PCI address of the device the tests open (NPU_DEV, else accel0),
 * e.g. "0000:01:00.0": with several NPUs, not just any one bound to npu.
 */
static int bound_device(char *bdf, size_t len)
{
	const char *dev = getenv("NPU_DEV") ?: NPU_DEV_PATH;
	char path[128], link[512], *p;
	ssize_t n;

	if (strrchr(dev, '/'))
		dev = strrchr(dev, '/') + 1;
	snprintf(path, sizeof(path), "/sys/class/accel/%.64s/device", dev);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = 0;
	p = strrchr(link, '/');
	snprintf(bdf, len, "%.63s", p ? p + 1 : link);
	return 0;
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

static int pci_reset_path(char *path, size_t len)
{
	char bdf[256];

	if (bound_device(bdf, sizeof(bdf)))
		return -ENOENT;
	snprintf(path, len, "/sys/bus/pci/devices/%s/reset", bdf);
	return access(path, W_OK) ? -errno : 0;
}

/*
 * A PCI reset from sysfs (bus reset or FLR) with jobs in flight: the
 * driver's reset_prepare / reset_done re-boot the device. The one job the
 * engine was executing (if any) ends DONE with NPU_JOB_ERR_ABORTED; every
 * other one had not started and runs afterwards. Nobody is banned.
 */
TEST(pci_reset_with_jobs_in_flight_reruns_the_ones_not_started)
{
	struct npu_bo cmd, buf;
	struct drm_npu_job_info info;
	uint64_t ids[16], resets;
	char path[512];
	struct npu_cs cs;
	int fd, i, aborted = 0;

	if (pci_reset_path(path, sizeof(path)))
		SKIP(return, "npu not bound or no PCI reset method");
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
	ASSERT_EQ(0, npu_write_file(path, "1"));
	for (i = 0; i < 16; i++) {
		ASSERT_EQ(0, npu_job_wait(fd, ids[i], 20000, &info));
		EXPECT_EQ(DRM_NPU_JOB_DONE, info.state) TH_LOG("job %d", i);
		if (info.status == NPU_JOB_ERR_ABORTED) {
			aborted++;
			continue;
		}
		EXPECT_EQ(NPU_JOB_OK, info.status) TH_LOG("job %d", i);
		EXPECT_EQ(0x20 + i, ((uint8_t *)buf.map)[i * 65536 + 65535]);
	}
	EXPECT_LE(aborted, 1);
	EXPECT_EQ(resets + 1, npu_param(fd, DRM_NPU_PARAM_RESET_COUNT));
	/* Not banned: the context keeps working. */
	run_one_job(_metadata, fd);
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);
}

/*
 * The job a reset interrupts is never run again: it may have written
 * half its output (or consumed its input). Its last instruction writes a
 * marker that must stay unwritten; the jobs queued behind it, which had
 * not started, run once.
 */
TEST(pci_reset_never_reruns_the_job_it_interrupted)
{
	struct npu_bo cmd, cmd2, buf, mark;
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	uint64_t id, behind[4];
	unsigned int fills;
	char path[512];
	struct npu_cs cs;
	int fd, i;

	if (pci_reset_path(path, sizeof(path)))
		SKIP(return, "npu not bound or no PCI reset method");
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, npu_bo_new(fd, 8192, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4 * 256, 0, &cmd2));
	ASSERT_EQ(0, npu_bo_new(fd, 16 << 20, 0, &buf));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &mark));
	/* About 1.5 s on the engine: the reset comes 0.2 s in. */
	fills = npu_fills_for_ms(fd, &cmd, &buf, 1500);
	fprintf(stderr, "# long job: %u fills of 16 MiB\n", fills);
	memset(mark.map, 0, mark.size);

	npu_cs_long(&cs, &buf, fills, 0x5a, mark.va, 0x77);
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
	ASSERT_EQ(0, npu_submit(fd, &s));
	id = s.job_id;
	for (i = 0; i < 4; i++) {
		npu_cs_begin(&cs);
		npu_cs_fill(&cs, mark.va + 64 * (i + 1), 0x30 + i, 64);
		memcpy((uint8_t *)cmd2.map + i * 256, cs.buf, cs.len);
		npu_submit_init(&s, cmd2.handle, cs.len, 1);
		s.cmd_offset = i * 256;
		ASSERT_EQ(0, npu_submit(fd, &s));
		behind[i] = s.job_id;
	}
	do {
		ASSERT_EQ(0, npu_job_info(fd, id, &info));
		usleep(1000);
	} while (info.state == DRM_NPU_JOB_QUEUED);
	usleep(200000);
	ASSERT_EQ(0, npu_write_file(path, "1"));

	ASSERT_EQ(0, npu_job_wait(fd, id, 20000, &info));
	EXPECT_EQ(DRM_NPU_JOB_DONE, info.state);
	EXPECT_EQ(NPU_JOB_ERR_ABORTED, info.status) TH_LOG("%u fills", fills);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, npu_job_wait(fd, behind[i], 20000, &info));
		EXPECT_EQ(NPU_JOB_OK, info.status) TH_LOG("job behind %d", i);
		EXPECT_EQ(0x30 + i, ((uint8_t *)mark.map)[64 * (i + 1)]);
	}
	/* Give a wrong re-run time to finish, then look at the marker. */
	usleep(500000);
	EXPECT_EQ(0, ((uint8_t *)mark.map)[0]);
	run_one_job(_metadata, fd);
	npu_bo_free(fd, &mark);
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd2);
	npu_bo_free(fd, &cmd);
	close(fd);
}

/* Hung tasks are reported after 2 s instead of 120 (the runner checks). */
static void short_hung_task_timeout(void)
{
	npu_write_file("/proc/sys/kernel/hung_task_timeout_secs", "2");
}

static int kernel_log_has(const char *what)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "dmesg | grep -q '%s'", what);
	return system(cmd) == 0;
}

/* The "wedged:" line of npu_state, or -1. */
static int device_wedged(void)
{
	char path[512], line[256];
	int val = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/npu_state", npu_debugfs_dir());
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "wedged: %d", &val) == 1)
			break;
	fclose(f);
	return val;
}

/*
 * A TLB invalidation that times out leaves translations to pages that
 * are about to be freed: the driver turns the device's bus mastering off
 * (wedged: its jobs fail, it reaches no memory) until a reset succeeds,
 * and a PCI reset brings it back. The simulated device always finishes
 * an invalidation, so the timeout is injected (fault point tlb_timeout).
 */
TEST(tlb_invalidation_timeout_cuts_dma_until_a_reset)
{
	struct npu_bo cmd, buf, extra;
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	struct npu_cs cs;
	char path[512];
	int fd;

	if (pci_reset_path(path, sizeof(path)))
		SKIP(return, "no PCI reset in sysfs");
	if (!npu_debugfs_dir())
		SKIP(return, "no npu debugfs");
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	ASSERT_EQ(0, device_wedged());
	ASSERT_EQ(0, npu_inject_once("tlb_timeout"));
	/* Mapping a new BO invalidates the TLB: the timeout hits there. */
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &extra));
	npu_bo_free(fd, &extra);
	ASSERT_EQ(1, device_wedged());

	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x3c, 64);
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
	ASSERT_EQ(0, npu_submit(fd, &s));
	ASSERT_EQ(0, npu_job_wait(fd, s.job_id, 20000, &info));
	EXPECT_EQ(DRM_NPU_JOB_CANCELED, info.state);
	EXPECT_NE(0x3c, ((uint8_t *)buf.map)[63]);

	ASSERT_EQ(0, npu_write_file(path, "1"));
	EXPECT_EQ(0, device_wedged());
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	run_one_job(_metadata, fd);
	close(fd);
}

/*
 * Jobs on the hardware (one hung, 511 behind it) hold the last references
 * to the context once the file is closed. Unbind must fail and free every
 * one of them before it returns: freed later, on a scheduler's workqueue,
 * the last one would drop the last device reference there and tear that
 * scheduler down from its own work (a hung kworker).
 */
static void hung_jobs_of_a_closed_file(struct __test_metadata *_metadata)
{
	struct npu_bo cmd, buf;
	int fd, i;

	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 1 << 20, 0, &buf));
	ASSERT_EQ(0, npu_inject_once("hang"));
	/* 512 jobs: freeing them all takes a while after the fences fail. */
	for (i = 0; i < 8; i++)
		queue_work(fd, &cmd, &buf);
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);
}

TEST(unbind_with_a_hung_job_of_a_closed_file_then_rebind)
{
	char bdf[256];
	int fd;

	if (bound_device(bdf, sizeof(bdf)))
		SKIP(return, "npu not bound");
	if (!npu_debugfs_dir())
		SKIP(return, "no npu debugfs");
	short_hung_task_timeout();
	hung_jobs_of_a_closed_file(_metadata);
	ASSERT_EQ(0, npu_write_file(DRV_DIR "/unbind", bdf));
	sleep(4);
	EXPECT_FALSE(kernel_log_has("blocked for more than"));
	ASSERT_EQ(0, npu_write_file(DRV_DIR "/bind", bdf));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	run_one_job(_metadata, fd);
	close(fd);
}

TEST(rmmod_with_a_hung_job_of_a_closed_file_then_insmod)
{
	const char *ko = getenv("NPU_KO");
	const char *args = getenv("NPU_KO_ARGS");
	char cmdline[512];
	int fd;

	if (!ko)
		SKIP(return, "NPU_KO not set");
	if (!npu_debugfs_dir())
		SKIP(return, "no npu debugfs");
	short_hung_task_timeout();
	hung_jobs_of_a_closed_file(_metadata);
	ASSERT_EQ(0, system("rmmod npu"));
	sleep(3);
	EXPECT_FALSE(kernel_log_has("blocked for more than"));
	snprintf(cmdline, sizeof(cmdline), "insmod %s %s", ko, args ? args : "");
	ASSERT_EQ(0, system(cmdline));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	run_one_job(_metadata, fd);
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

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/unbind", bdf));
	/* The open file outlives the device: ioctls fail cleanly. */
	npu_submit_init(&s, cmd.handle, 16, 0);
	EXPECT_EQ(-ENODEV, npu_submit(fd, &s));
	EXPECT_EQ(3, ((uint8_t *)buf.map)[0] | 3);	/* mapping still readable */
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/bind", bdf));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	run_one_job(_metadata, fd);
	close(fd);
}

/*
 * A job that waits for another driver's fence which nobody signals (a
 * vgem fence, the write fence of an imported vgem buffer): unbind must
 * not wait for that fence (drm_sched waits for a job's dependencies
 * before it runs or frees it). The driver gates foreign fences behind a
 * fence of its own that unbind fails. vgem fences signal by themselves
 * after 10 s: the fence must still be pending once unbind returned.
 */
TEST(unbind_completes_while_a_job_waits_for_another_drivers_fence)
{
	struct npu_vgem_bo vbo = { 0 };
	struct drm_npu_job_info info;
	struct drm_npu_bo_ref ref;
	struct drm_npu_submit s;
	struct npu_bo cmd, buf;
	struct npu_cs cs;
	char bdf[256];
	int fd, vfd;

	if (bound_device(bdf, sizeof(bdf)))
		SKIP(return, "npu not bound");
	vfd = npu_vgem_open();
	if (vfd < 0)
		SKIP(return, "no vgem device");
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, npu_vgem_fenced_bo(vfd, fd, &vbo));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x5a, 64);
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
	ref = (struct drm_npu_bo_ref){ .handle = vbo.npu_handle,
				       .access = DRM_NPU_BO_ACCESS_READ };
	s.bo_refs = (uintptr_t)&ref;
	s.bo_ref_count = 1;
	ASSERT_EQ(0, npu_submit(fd, &s));
	usleep(200000);
	ASSERT_EQ(0, npu_job_info(fd, s.job_id, &info));
	EXPECT_EQ(DRM_NPU_JOB_QUEUED, info.state);

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/unbind", bdf));
	/* Still pending: unbind did not wait for it to time out. */
	EXPECT_EQ(0, npu_vgem_signal(vfd, &vbo));
	EXPECT_NE(0x5a, ((uint8_t *)buf.map)[63]);
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);
	close(vbo.dmabuf_fd);
	close(vfd);

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/bind", bdf));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	run_one_job(_metadata, fd);
	close(fd);
}

struct blocked_submit {
	int fd;
	struct drm_npu_submit s;
	int ret;
};

static void *blocked_submit_main(void *arg)
{
	struct blocked_submit *b = arg;

	b->ret = npu_submit(b->fd, &b->s);
	return NULL;
}

struct unbinder {
	char bdf[256];
	int ret;
	atomic_int done;
};

static void *unbinder_main(void *arg)
{
	struct unbinder *u = arg;

	u->ret = npu_write_file(DRV_DIR "/unbind", u->bdf);
	atomic_store(&u->done, 1);
	return NULL;
}

/*
 * A submit whose in_syncs array sits in a page that userfaultfd never
 * fills: the copy waits for as long as user space likes. Unbind must not
 * wait with it (drm_dev_unplug's synchronize_srcu is global to every DRM
 * device; npu_job_drain waits for counted jobs): the driver copies user
 * memory before it enters the device or counts the job. The fault is
 * resolved after 10 s whatever happened, so a broken driver fails the
 * test instead of hanging it.
 */
TEST(unbind_completes_while_a_submit_waits_in_a_user_fault)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_zeropage zero = { 0 };
	struct pollfd pfd = { .events = POLLIN };
	struct blocked_submit b = { 0 };
	struct unbinder u = { 0 };
	pthread_t submitter, unbind;
	struct uffd_msg msg;
	struct npu_bo cmd;
	struct npu_cs cs;
	int64_t end;
	void *page;
	int uffd, fd;

	if (bound_device(u.bdf, sizeof(u.bdf)))
		SKIP(return, "npu not bound");
	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	reg.range.start = (uintptr_t)page;
	reg.range.len = 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));

	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, cmd.va + 2048, 1, 64);
	b.fd = fd;
	npu_submit_init(&b.s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
	b.s.in_sync_count = 1;
	b.s.in_syncs = (uintptr_t)page;
	ASSERT_EQ(0, pthread_create(&submitter, NULL, blocked_submit_main, &b));
	pfd.fd = uffd;
	ASSERT_EQ(1, poll(&pfd, 1, 10000));	/* the submit's copy faulted */
	ASSERT_EQ((ssize_t)sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);

	ASSERT_EQ(0, pthread_create(&unbind, NULL, unbinder_main, &u));
	end = npu_now_ns() + 10000000000ll;
	while (!atomic_load(&u.done) && npu_now_ns() < end)
		usleep(20000);
	EXPECT_EQ(1, atomic_load(&u.done));	/* unbind did not wait for the fault */

	zero.range = reg.range;
	ioctl(uffd, UFFDIO_ZEROPAGE, &zero);
	pthread_join(submitter, NULL);
	pthread_join(unbind, NULL);
	EXPECT_EQ(0, u.ret);
	EXPECT_EQ(-ENODEV, b.ret);	/* it found the device gone once copied */
	npu_bo_free(fd, &cmd);
	close(fd);
	close(uffd);
	munmap(page, 4096);

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/bind", u.bdf));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	run_one_job(_metadata, fd);
	close(fd);
}

/*
 * BOs that outlive the driver, held three ways: by a handle of a second
 * open file (mapped in two contexts), by an mmap whose handle is gone,
 * and by a dma-buf fd whose file is closed. Unbind takes their DMA
 * mappings and page tables back (the debug kernel's DMA-API checker
 * reports any left when the driver lets go of the device); their pages
 * stay readable and writable through the CPU until the last holder goes.
 */
TEST(unbind_with_bos_held_by_files_mmaps_and_dma_bufs)
{
	struct drm_prime_handle exp = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_prime_handle imp = { 0 };
	struct npu_bo cmd, shared, mapped, exported;
	struct drm_npu_submit s;
	int fd, fd2, fd3, dmabuf;
	char bdf[256];
	uint8_t *orphan;

	if (bound_device(bdf, sizeof(bdf)))
		SKIP(return, "npu not bound");
	fd = npu_open();
	fd2 = npu_open();
	fd3 = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_GE(fd2, 0);
	ASSERT_GE(fd3, 0);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 1 << 20, 0, &shared));
	ASSERT_EQ(0, npu_bo_new(fd, 64 << 10, 0, &mapped));
	ASSERT_EQ(0, npu_bo_new(fd3, 256 << 10, 0, &exported));
	queue_work(fd, &cmd, &shared);

	/* shared: also mapped in fd2's context through PRIME. */
	exp.handle = shared.handle;
	ASSERT_EQ(0, npu_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
	imp.fd = exp.fd;
	ASSERT_EQ(0, npu_ioctl(fd2, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp));
	close(exp.fd);
	/* mapped: only its mmap is left. */
	orphan = mapped.map;
	mapped.map = NULL;
	npu_bo_free(fd, &mapped);
	memset(orphan, 0x5a, 64 << 10);
	/* exported: only a dma-buf fd is left; its file is closed. */
	exp.handle = exported.handle;
	exp.fd = -1;
	ASSERT_EQ(0, npu_ioctl(fd3, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
	dmabuf = exp.fd;
	npu_bo_free(fd3, &exported);
	close(fd3);

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/unbind", bdf));

	/* Nothing new gets mapped for a device that is gone. */
	imp.fd = dmabuf;
	imp.handle = 0;
	EXPECT_NE(0, npu_ioctl(fd2, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp));
	npu_submit_init(&s, cmd.handle, 16, 0);
	EXPECT_EQ(-ENODEV, npu_submit(fd, &s));
	/* The CPU's view of the pages is unaffected. */
	EXPECT_EQ(0x5a, orphan[(64 << 10) - 1]);
	orphan[0] = 0xa5;
	EXPECT_EQ(0xa5, orphan[0]);
	((uint8_t *)shared.map)[0] = 7;
	EXPECT_EQ(7, ((uint8_t *)shared.map)[0]);

	/* Holders go in an order unlike creation: every BO is freed. */
	close(fd2);
	close(dmabuf);
	munmap(orphan, 64 << 10);
	npu_bo_free(fd, &shared);
	npu_bo_free(fd, &cmd);
	close(fd);

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/bind", bdf));
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
