// SPDX-License-Identifier: GPL-2.0-only
/*
 * Jobs on the device: execution, isolation between contexts, faults,
 * fence chains, hang recovery, SIGKILL cleanup and dma-buf sharing.
 */
#include <grp.h>
#include <linux/dma-buf.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "npu_test.h"
#include "kselftest_harness.h"

#define WAIT_MS 20000

/* Submit 'cs' from a fresh command BO; returns the job id (0 on error). */
static uint64_t run_cs(int fd, struct npu_cs *cs, uint32_t queue,
		       struct npu_bo *cmd, uint32_t out_sync)
{
	struct drm_npu_submit s;

	npu_submit_init(&s, cmd->handle, npu_cs_store(cs, cmd, 0), queue);
	s.out_sync.handle = out_sync;
	if (npu_submit(fd, &s))
		return 0;
	return s.job_id;
}

static int wait_status(int fd, uint64_t id, struct drm_npu_job_info *info)
{
	int ret = npu_job_wait(fd, id, WAIT_MS, info);

	return ret ? ret : (int)info->status;
}

static int need_debugfs(void)
{
	return npu_debugfs_dir() != NULL;
}

TEST(fill_then_copy_is_visible_in_memory)
{
	struct npu_bo cmd, src, dst;
	struct drm_npu_job_info info;
	struct npu_cs cs;
	uint8_t *d;
	int fd = npu_open(), i;
	uint64_t id;

	if (fd < 0)
		SKIP(return, "no device");
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &src));
	ASSERT_EQ(0, npu_bo_new(fd, 8192, 0, &dst));
	memset(dst.map, 0, dst.size);

	npu_cs_begin(&cs);
	npu_cs_fill(&cs, src.va, 0x5a, 512);
	npu_cs_copy(&cs, src.va, dst.va + 4096 + 64, 512);
	id = run_cs(fd, &cs, 1, &cmd, 0);
	ASSERT_NE(0, id);
	ASSERT_EQ(NPU_JOB_OK, wait_status(fd, id, &info));
	EXPECT_GT(info.cycles, 0);

	d = (uint8_t *)dst.map + 4096;
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, d[i]);
	for (i = 64; i < 64 + 512; i++)
		ASSERT_EQ(0x5a, d[i]) TH_LOG("byte %d", i);
	EXPECT_EQ(0, d[64 + 512]);
	close(fd);
}

/* DMA-API debug's error counter (debug kernels), or -1. */
static long long dma_api_errors(void)
{
	long long n = -1;
	FILE *f = fopen("/sys/kernel/debug/dma-api/error_count", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/*
 * A BO's sg table may hold segments far longer than the 64 KiB the DMA
 * API assumes for a device that does not say otherwise; the driver must
 * declare that its MMU takes any length (dma_set_max_seg_size), or every
 * such mapping is a DMA-API violation (a WARN on CONFIG_DMA_API_DEBUG).
 */
TEST(large_bo_maps_within_the_dma_segment_limit)
{
	struct npu_bo cmd, big;
	struct drm_npu_job_info info;
	long long before, after;
	struct npu_cs cs;
	int fd, i;
	uint64_t id;

	before = dma_api_errors();
	if (before < 0)
		SKIP(return, "no /sys/kernel/debug/dma-api (kernel without DMA_API_DEBUG)");
	fd = npu_open();
	if (fd < 0)
		SKIP(return, "no device");
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	/* 16 MiB of fresh shmem pages: physically contiguous runs are likely. */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, npu_bo_new(fd, 16 << 20, 0, &big));
		npu_cs_begin(&cs);
		npu_cs_fill(&cs, big.va + big.size - 4096, 0xa5, 4096);
		id = run_cs(fd, &cs, 1, &cmd, 0);
		ASSERT_NE(0, id);
		ASSERT_EQ(NPU_JOB_OK, wait_status(fd, id, &info));
		EXPECT_EQ(0xa5, ((uint8_t *)big.map)[big.size - 1]);
		npu_bo_free(fd, &big);
	}
	after = dma_api_errors();
	EXPECT_EQ(before, after) TH_LOG("DMA-API errors while mapping BOs: see dmesg");
	npu_bo_free(fd, &cmd);
	close(fd);
}

TEST(write_to_read_only_bo_faults_with_mmu_perm)
{
	struct npu_bo cmd, ro;
	struct drm_npu_job_info info;
	struct npu_cs cs;
	int fd = npu_open();
	uint64_t id;

	if (fd < 0)
		SKIP(return, "no device");
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, DRM_NPU_BO_DEVICE_READ_ONLY, &ro));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, ro.va, 1, 64);
	id = run_cs(fd, &cs, 0, &cmd, 0);
	ASSERT_NE(0, id);
	EXPECT_EQ(NPU_JOB_ERR_MMU_PERM, wait_status(fd, id, &info));
	EXPECT_EQ(ro.va, info.fault_addr & ~0xfffull);
	EXPECT_EQ(DRM_NPU_JOB_DONE, info.state);
	close(fd);
}

TEST(faulting_job_fails_alone)
{
	struct npu_bo cmd_a, cmd_b, buf_b, cmd_a2, buf_a;
	struct drm_npu_job_info info;
	struct npu_cs cs;
	int a = npu_open(), b = npu_open();
	uint64_t bad_va, ja, jb, ja2;

	if (a < 0 || b < 0)
		SKIP(return, "no device");
	bad_va = npu_param(a, DRM_NPU_PARAM_VA_END) - 0x10000;
	ASSERT_EQ(0, npu_bo_new(a, 4096, 0, &cmd_a));
	ASSERT_EQ(0, npu_bo_new(a, 4096, 0, &cmd_a2));
	ASSERT_EQ(0, npu_bo_new(a, 4096, 0, &buf_a));
	ASSERT_EQ(0, npu_bo_new(b, 4096, 0, &cmd_b));
	ASSERT_EQ(0, npu_bo_new(b, 4096, 0, &buf_b));

	npu_cs_begin(&cs);
	npu_cs_fill(&cs, bad_va, 7, 64);
	ja = run_cs(a, &cs, 1, &cmd_a, 0);
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf_b.va, 9, 64);
	jb = run_cs(b, &cs, 1, &cmd_b, 0);
	ASSERT_NE(0, ja);
	ASSERT_NE(0, jb);

	EXPECT_EQ(NPU_JOB_ERR_MMU_UNMAPPED, wait_status(a, ja, &info));
	EXPECT_EQ(bad_va, info.fault_addr);
	EXPECT_EQ(NPU_JOB_OK, wait_status(b, jb, &info));
	EXPECT_EQ(9, ((uint8_t *)buf_b.map)[63]);

	/* A fault does not ban: the faulting context keeps working. */
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf_a.va, 3, 64);
	ja2 = run_cs(a, &cs, 0, &cmd_a2, 0);
	ASSERT_NE(0, ja2);
	EXPECT_EQ(NPU_JOB_OK, wait_status(a, ja2, &info));
	EXPECT_EQ(3, ((uint8_t *)buf_a.map)[0]);
	close(a);
	close(b);
}

TEST(contexts_cannot_reach_each_others_memory)
{
	int pipefd[2], backfd[2], status;
	pid_t pid;
	uint64_t secret_va = 0;

	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(0, pipe(backfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* Process A: a secret at a VA that is valid only here. */
		struct npu_bo pad, secret;
		int fd = npu_open();
		char c;

		if (fd < 0 || npu_bo_new(fd, 1 << 20, 0, &pad) ||
		    npu_bo_new(fd, 4096, 0, &secret))
			_exit(1);
		memset(secret.map, 0x42, 4096);
		if (write(pipefd[1], &secret.va, sizeof(secret.va)) < 0)
			_exit(1);
		/* Stay alive (with the mapping) until B is done. */
		if (read(backfd[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(sizeof(secret_va), read(pipefd[0], &secret_va, sizeof(secret_va)));
	{
		/* Process B: a job reading A's VA faults, nothing leaks in. */
		struct npu_bo cmd, dst;
		struct drm_npu_job_info info;
		struct npu_cs cs;
		int fd = npu_open();
		uint64_t id;

		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
		ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &dst));
		ASSERT_NE(secret_va, dst.va);
		ASSERT_NE(secret_va, cmd.va);
		npu_cs_begin(&cs);
		npu_cs_copy(&cs, secret_va, dst.va, 64);
		id = run_cs(fd, &cs, 1, &cmd, 0);
		ASSERT_NE(0, id);
		EXPECT_EQ(NPU_JOB_ERR_MMU_UNMAPPED, wait_status(fd, id, &info));
		EXPECT_EQ(secret_va, info.fault_addr);
		EXPECT_NE(0x42, ((uint8_t *)dst.map)[0]);
		close(fd);
	}
	ASSERT_EQ(1, write(backfd[1], "x", 1));
	waitpid(pid, &status, 0);
	EXPECT_EQ(0, WEXITSTATUS(status));
}

#define CHAIN 32

/* A chain of copies across both queues, ordered by a timeline syncobj. */
TEST(many_jobs_in_flight_follow_timeline_fences)
{
	struct npu_bo cmd[CHAIN], buf[CHAIN];
	struct drm_npu_job_info info;
	struct npu_cs cs;
	int fd = npu_open(), i, j;
	uint32_t tl;
	uint64_t ids[CHAIN];

	if (fd < 0)
		SKIP(return, "no device");
	tl = npu_syncobj_new(fd);
	ASSERT_NE(0, tl);
	for (i = 0; i < CHAIN; i++) {
		ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd[i]));
		ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf[i]));
	}
	for (i = 0; i < CHAIN; i++) {
		struct drm_npu_submit s;
		struct drm_npu_sync in = { .handle = tl, .point = i };

		npu_cs_begin(&cs);
		if (i == 0)
			npu_cs_fill(&cs, buf[0].va, 0x77, 1024);
		else
			npu_cs_copy(&cs, buf[i - 1].va, buf[i].va, 1024);
		npu_submit_init(&s, cmd[i].handle, npu_cs_store(&cs, &cmd[i], 0),
				i % 2);
		if (i) {
			s.in_syncs = (uintptr_t)&in;
			s.in_sync_count = 1;
		}
		s.out_sync.handle = tl;
		s.out_sync.point = i + 1;
		ASSERT_EQ(0, npu_submit(fd, &s)) TH_LOG("job %d", i);
		ids[i] = s.job_id;
	}
	ASSERT_EQ(0, npu_syncobj_wait(fd, tl, CHAIN, WAIT_MS));
	for (i = 0; i < CHAIN; i++) {
		ASSERT_EQ(NPU_JOB_OK, wait_status(fd, ids[i], &info));
		for (j = 0; j < 1024; j++)
			ASSERT_EQ(0x77, ((uint8_t *)buf[i].map)[j])
				TH_LOG("buffer %d byte %d", i, j);
	}
	close(fd);
}

/* The same chain ordered only by the implicit fences of bo_refs. */
TEST(implicit_bo_fences_order_jobs)
{
	struct npu_bo cmd[CHAIN], buf[CHAIN];
	struct drm_npu_job_info info;
	struct npu_cs cs;
	int fd = npu_open(), i;
	uint64_t last = 0;

	if (fd < 0)
		SKIP(return, "no device");
	for (i = 0; i < CHAIN; i++) {
		ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd[i]));
		ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf[i]));
	}
	for (i = 0; i < CHAIN; i++) {
		struct drm_npu_bo_ref refs[2] = {
			{ buf[i].handle, DRM_NPU_BO_ACCESS_WRITE },
			{ i ? buf[i - 1].handle : buf[i].handle,
			  DRM_NPU_BO_ACCESS_READ },
		};
		struct drm_npu_submit s;

		npu_cs_begin(&cs);
		if (i == 0)
			npu_cs_fill(&cs, buf[0].va, 0x31, 256);
		else
			npu_cs_copy(&cs, buf[i - 1].va, buf[i].va, 256);
		npu_submit_init(&s, cmd[i].handle, npu_cs_store(&cs, &cmd[i], 0),
				(i / 3) % 2);
		s.bo_refs = (uintptr_t)refs;
		s.bo_ref_count = 2;
		ASSERT_EQ(0, npu_submit(fd, &s));
		last = s.job_id;
	}
	ASSERT_EQ(NPU_JOB_OK, wait_status(fd, last, &info));
	EXPECT_EQ(0x31, ((uint8_t *)buf[CHAIN - 1].map)[255]);
	close(fd);
}

TEST(injected_mmu_fault_fails_next_job_only)
{
	struct npu_bo cmd, buf;
	struct drm_npu_job_info info;
	struct npu_cs cs;
	int fd = npu_open();
	uint64_t id;

	if (fd < 0)
		SKIP(return, "no device");
	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 5, 64);
	ASSERT_EQ(0, npu_inject_once("mmu_fault"));
	id = run_cs(fd, &cs, 0, &cmd, 0);
	ASSERT_NE(0, id);
	EXPECT_EQ(NPU_JOB_ERR_MMU_UNMAPPED, wait_status(fd, id, &info));
	id = run_cs(fd, &cs, 0, &cmd, 0);
	ASSERT_NE(0, id);
	EXPECT_EQ(NPU_JOB_OK, wait_status(fd, id, &info));
	close(fd);
}

static void hang_and_recover(struct __test_metadata *_metadata, bool boot_fail)
{
	struct npu_bo cmd_a, cmd_b, buf_b;
	struct drm_npu_job_info info;
	struct npu_cs cs;
	int a = npu_open(), b = npu_open(), i;
	uint64_t resets, ja, jb[8];
	uint32_t sync;

	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	resets = npu_param(a, DRM_NPU_PARAM_RESET_COUNT);
	ASSERT_EQ(0, npu_bo_new(a, 4096, 0, &cmd_a));
	ASSERT_EQ(0, npu_bo_new(b, 4096, 0, &cmd_b));
	ASSERT_EQ(0, npu_bo_new(b, 4096, 0, &buf_b));
	sync = npu_syncobj_new(a);

	if (boot_fail)
		ASSERT_EQ(0, npu_inject_once("boot_fail"));
	ASSERT_EQ(0, npu_inject_once("hang"));
	/* Queue 0 and first in line: the injected hang hits A's job. */
	npu_cs_begin(&cs);
	ja = run_cs(a, &cs, 0, &cmd_a, sync);
	ASSERT_NE(0, ja);
	do {
		ASSERT_EQ(0, npu_job_info(a, ja, &info));
		usleep(1000);
	} while (info.state == DRM_NPU_JOB_QUEUED);
	usleep(50000);

	/* B keeps submitting while A hangs the device. */
	for (i = 0; i < 8; i++) {
		struct drm_npu_submit s;

		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf_b.va + i * 64, 0x10 + i, 64);
		memcpy((uint8_t *)cmd_b.map + i * 256, cs.buf, cs.len);
		npu_submit_init(&s, cmd_b.handle, cs.len, i % 2);
		s.cmd_offset = i * 256;
		ASSERT_EQ(0, npu_submit(b, &s));
		jb[i] = s.job_id;
	}
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(NPU_JOB_OK, wait_status(b, jb[i], &info)) TH_LOG("B job %d", i);
		EXPECT_EQ(0x10 + i, ((uint8_t *)buf_b.map)[i * 64 + 63]);
	}

	ASSERT_EQ(0, npu_job_wait(a, ja, WAIT_MS, &info));
	EXPECT_EQ(DRM_NPU_JOB_CANCELED, info.state);
	EXPECT_NE(NPU_JOB_OK, info.status);
	EXPECT_EQ(0, npu_syncobj_wait(a, sync, 0, WAIT_MS));
	EXPECT_EQ(resets + 1, npu_param(b, DRM_NPU_PARAM_RESET_COUNT));

	/*
	 * The guilty context is banned, the innocent file is not, and
	 * neither is the guilty file's other context (queue 1).
	 */
	npu_cs_begin(&cs);
	EXPECT_EQ(0, run_cs(a, &cs, 0, &cmd_a, 0));
	{
		struct drm_npu_submit s;

		npu_submit_init(&s, cmd_a.handle, 16, 0);
		EXPECT_EQ(-ECANCELED, npu_submit(a, &s));
		npu_submit_init(&s, cmd_a.handle, 16, 1);
		ASSERT_EQ(0, npu_submit(a, &s));
		EXPECT_EQ(NPU_JOB_OK, wait_status(a, s.job_id, &info));
		/* A new context of the guilty file starts clean. */
		i = npu_context_new(a, DRM_NPU_CONTEXT_PRIORITY_HIGH);
		ASSERT_LT(0, i);
		npu_submit_init(&s, cmd_a.handle, 16, 0);
		s.context_id = i;
		ASSERT_EQ(0, npu_submit(a, &s));
		EXPECT_EQ(NPU_JOB_OK, wait_status(a, s.job_id, &info));
	}
	npu_cs_fill(&cs, buf_b.va, 0x99, 8);
	jb[0] = run_cs(b, &cs, 0, &cmd_b, 0);
	ASSERT_NE(0, jb[0]);
	EXPECT_EQ(NPU_JOB_OK, wait_status(b, jb[0], &info));
	close(a);
	close(b);
}

TEST(hang_recovers_and_bans_only_the_guilty_context)
{
	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	hang_and_recover(_metadata, false);
}

TEST(hang_recovery_survives_a_failed_firmware_boot)
{
	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	hang_and_recover(_metadata, true);
}

TEST(sigkill_with_jobs_in_flight_leaves_nothing_behind)
{
	struct npu_counters base, now;
	int pipefd[2], status;
	pid_t pid;
	char c;

	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	npu_counters_read(&base);
	ASSERT_GE(base.bos, 0);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct npu_bo cmd, buf[16];
		struct npu_cs cs;
		int fd = npu_open(), i;

		if (fd < 0 || npu_bo_new(fd, 4096, 0, &cmd))
			_exit(1);
		for (i = 0; i < 16; i++)
			if (npu_bo_new(fd, 64 << 10, 0, &buf[i]))
				_exit(1);
		npu_cs_begin(&cs);
		for (i = 0; i < 16; i++)
			npu_cs_fill(&cs, buf[i].va, i, 64 << 10);
		for (i = 0; i < 200; i++) {
			struct drm_npu_submit s;

			npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0),
					i % 2);
			if (npu_submit(fd, &s))
				_exit(1);
		}
		if (write(pipefd[1], "x", 1) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(0, npu_counters_settle(&base, &now, WAIT_MS)) {
		TH_LOG("bos %lld/%lld pages %lld/%lld jobs %lld/%lld contexts %lld/%lld",
		       now.bos, base.bos, now.pages, base.pages, now.jobs,
		       base.jobs, now.contexts, base.contexts);
	}
}

TEST(dma_buf_round_trip_between_files)
{
	struct npu_bo shared, cmd2, own2;
	struct drm_prime_handle exp = { 0 }, imp = { 0 };
	struct drm_npu_bo_info info2 = { 0 };
	struct drm_npu_job_info info;
	struct npu_cs cs;
	int fd1 = npu_open(), fd2 = npu_open(), i;
	uint8_t *imp_map;
	uint64_t id;

	if (fd1 < 0 || fd2 < 0)
		SKIP(return, "no device");
	ASSERT_EQ(0, npu_bo_new(fd1, 8192, 0, &shared));
	for (i = 0; i < 4096; i++)
		((uint8_t *)shared.map)[i] = (uint8_t)(i * 7);

	exp.handle = shared.handle;
	exp.flags = DRM_CLOEXEC | DRM_RDWR;
	ASSERT_EQ(0, npu_ioctl(fd1, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
	imp.fd = exp.fd;
	ASSERT_EQ(0, npu_ioctl(fd2, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp));
	close(exp.fd);

	info2.handle = imp.handle;
	ASSERT_EQ(0, npu_ioctl(fd2, DRM_IOCTL_NPU_BO_INFO, &info2));
	EXPECT_EQ(8192, info2.size);
	imp_map = mmap(NULL, info2.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd2, info2.mmap_offset);
	ASSERT_NE(MAP_FAILED, imp_map);
	EXPECT_EQ((uint8_t)(100 * 7), imp_map[100]);

	/* The importer's device VA reaches the same pages... */
	ASSERT_EQ(0, npu_bo_new(fd2, 4096, 0, &cmd2));
	ASSERT_EQ(0, npu_bo_new(fd2, 4096, 0, &own2));
	npu_cs_begin(&cs);
	npu_cs_copy(&cs, info2.va, own2.va, 4096);
	npu_cs_fill(&cs, info2.va + 4096, 0xee, 128);
	id = run_cs(fd2, &cs, 0, &cmd2, 0);
	ASSERT_NE(0, id);
	ASSERT_EQ(NPU_JOB_OK, wait_status(fd2, id, &info));
	for (i = 0; i < 4096; i++)
		ASSERT_EQ((uint8_t)(i * 7), ((uint8_t *)own2.map)[i]);
	/* ...and the exporter sees what the importer's job wrote. */
	EXPECT_EQ(0xee, ((uint8_t *)shared.map)[4096 + 127]);

	munmap(imp_map, info2.size);
	EXPECT_EQ(0, npu_gem_close(fd2, imp.handle));
	close(fd2);
	close(fd1);
}

/* ---- one BO listed several times in one submit ---- */

TEST(duplicate_bo_refs_merge_access_and_complete)
{
	struct npu_bo cmd, buf, cmd2, dst;
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	struct npu_cs cs;
	int fd = npu_open(), i;

	if (fd < 0)
		SKIP(return, "no device");
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd2));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &dst));
	{
		/* Every combination of the same BO, and the command BO again. */
		struct drm_npu_bo_ref refs[] = {
			{ buf.handle, DRM_NPU_BO_ACCESS_READ },
			{ buf.handle, DRM_NPU_BO_ACCESS_WRITE },
			{ cmd.handle, DRM_NPU_BO_ACCESS_READ },
			{ buf.handle, DRM_NPU_BO_ACCESS_READ |
				      DRM_NPU_BO_ACCESS_WRITE },
			{ cmd.handle, DRM_NPU_BO_ACCESS_WRITE },
			{ buf.handle, DRM_NPU_BO_ACCESS_READ },
		};

		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf.va, 0x6b, 256);
		npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
		s.bo_refs = (uintptr_t)refs;
		s.bo_ref_count = ARRAY_SIZE(refs);
		ASSERT_EQ(0, npu_submit(fd, &s));
	}
	{
		/* A reader of buf on the other queue is ordered after it. */
		struct drm_npu_bo_ref refs[] = {
			{ buf.handle, DRM_NPU_BO_ACCESS_READ },
			{ dst.handle, DRM_NPU_BO_ACCESS_WRITE },
			{ buf.handle, DRM_NPU_BO_ACCESS_READ },
		};

		npu_cs_begin(&cs);
		npu_cs_copy(&cs, buf.va, dst.va, 256);
		npu_submit_init(&s, cmd2.handle, npu_cs_store(&cs, &cmd2, 0), 0);
		s.bo_refs = (uintptr_t)refs;
		s.bo_ref_count = 3;
		ASSERT_EQ(0, npu_submit(fd, &s));
	}
	ASSERT_EQ(NPU_JOB_OK, wait_status(fd, s.job_id, &info));
	for (i = 0; i < 256; i++)
		ASSERT_EQ(0x6b, ((uint8_t *)dst.map)[i]) TH_LOG("byte %d", i);
	close(fd);
}

#define DUP_FILES	8
#define DUP_ROUNDS	4

/*
 * Many contexts (distinct fence contexts) list one shared BO as writer and
 * then as reader, while the schedulers hold every job back so no fence
 * signals and none can be replaced: each job must take exactly the one
 * fence slot it reserved. Before the fix each such job added two fences
 * for one reserved slot, and the third one hit BUG_ON in dma_resv.
 */
TEST(duplicate_bo_refs_hammer_from_many_contexts)
{
	struct npu_bo shared, cmd[DUP_FILES];
	struct drm_npu_job_info info;
	uint32_t imp[DUP_FILES];
	uint64_t ids[DUP_FILES][DUP_ROUNDS * 2];
	int fd[DUP_FILES], f, r, n, held;
	struct npu_cs cs;

	fd[0] = npu_open();
	if (fd[0] < 0)
		SKIP(return, "no device");
	ASSERT_EQ(0, npu_bo_new(fd[0], 64 * DUP_FILES * DUP_ROUNDS * 2, 0,
				&shared));
	memset(shared.map, 0, shared.size);
	imp[0] = shared.handle;
	for (f = 1; f < DUP_FILES; f++) {
		struct drm_prime_handle exp = { .handle = shared.handle,
						.flags = DRM_CLOEXEC | DRM_RDWR };
		struct drm_prime_handle in = { 0 };

		fd[f] = npu_open();
		ASSERT_GE(fd[f], 0);
		ASSERT_EQ(0, npu_ioctl(fd[0], DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
		in.fd = exp.fd;
		ASSERT_EQ(0, npu_ioctl(fd[f], DRM_IOCTL_PRIME_FD_TO_HANDLE, &in));
		close(exp.fd);
		imp[f] = in.handle;
	}
	for (f = 0; f < DUP_FILES; f++)
		ASSERT_EQ(0, npu_bo_new(fd[f], 4096, 0, &cmd[f]));

	held = need_debugfs() && !npu_pause_queues(1);
	for (r = 0; r < DUP_ROUNDS; r++) {
		for (f = 0; f < DUP_FILES; f++) {
			for (n = 0; n < 2; n++) {
				struct drm_npu_bo_info bi = { .handle = imp[f] };
				uint32_t slot = (r * DUP_FILES + f) * 2 + n;
				/* Writer, then reader: two fences before the fix. */
				struct drm_npu_bo_ref refs[] = {
					{ imp[f], DRM_NPU_BO_ACCESS_WRITE },
					{ imp[f], DRM_NPU_BO_ACCESS_READ },
					{ imp[f], r & 1 ? DRM_NPU_BO_ACCESS_WRITE :
							  DRM_NPU_BO_ACCESS_READ },
				};
				struct drm_npu_submit s;

				ASSERT_EQ(0, npu_ioctl(fd[f], DRM_IOCTL_NPU_BO_INFO, &bi));
				npu_cs_begin(&cs);
				npu_cs_fill(&cs, bi.va + slot * 64, slot + 1, 64);
				memcpy((uint8_t *)cmd[f].map + (r * 2 + n) * 256,
				       cs.buf, cs.len);
				npu_submit_init(&s, cmd[f].handle, cs.len, n);
				s.cmd_offset = (r * 2 + n) * 256;
				s.bo_refs = (uintptr_t)refs;
				s.bo_ref_count = 3;
				ASSERT_EQ(0, npu_submit(fd[f], &s))
					TH_LOG("file %d round %d queue %d", f, r, n);
				ids[f][r * 2 + n] = s.job_id;
			}
		}
	}
	if (held)
		ASSERT_EQ(0, npu_pause_queues(0));
	for (f = 0; f < DUP_FILES; f++)
		for (n = 0; n < DUP_ROUNDS * 2; n++)
			ASSERT_EQ(NPU_JOB_OK, wait_status(fd[f], ids[f][n], &info))
				TH_LOG("file %d job %d", f, n);
	for (n = 0; n < DUP_FILES * DUP_ROUNDS * 2; n++)
		ASSERT_EQ((uint8_t)(n + 1), ((uint8_t *)shared.map)[n * 64 + 63])
			TH_LOG("slot %d", n);
	for (f = DUP_FILES - 1; f >= 0; f--)
		close(fd[f]);
}

/* ---- a failed fence behind a timeline point cancels its waiters ---- */

TEST(failed_timeline_point_cancels_the_waiting_job)
{
	struct npu_bo cmd_bad, cmd_b, cmd_c, cmd_d, buf;
	struct drm_npu_job_info info;
	struct npu_cs cs;
	int fd = npu_open();
	uint64_t bad_va, ja, jb, jc, jd;
	uint32_t tl;

	if (fd < 0)
		SKIP(return, "no device");
	bad_va = npu_param(fd, DRM_NPU_PARAM_VA_END) - 0x10000;
	tl = npu_syncobj_new(fd);
	ASSERT_NE(0, tl);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd_bad));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd_b));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd_c));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd_d));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	memset(buf.map, 0, buf.size);

	/* Point 1: a job that faults. */
	{
		struct drm_npu_submit s;

		npu_cs_begin(&cs);
		npu_cs_fill(&cs, bad_va, 7, 64);
		npu_submit_init(&s, cmd_bad.handle,
				npu_cs_store(&cs, &cmd_bad, 0), 1);
		s.out_sync.handle = tl;
		s.out_sync.point = 1;
		ASSERT_EQ(0, npu_submit(fd, &s));
		ja = s.job_id;
	}
	/* B waits on point 1 while it is (likely) pending. */
	{
		struct drm_npu_sync in = { .handle = tl, .point = 1 };
		struct drm_npu_submit s;

		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf.va, 0x42, 64);
		npu_submit_init(&s, cmd_b.handle, npu_cs_store(&cs, &cmd_b, 0), 0);
		s.in_syncs = (uintptr_t)&in;
		s.in_sync_count = 1;
		ASSERT_EQ(0, npu_submit(fd, &s));
		jb = s.job_id;
	}
	EXPECT_EQ(NPU_JOB_ERR_MMU_UNMAPPED, wait_status(fd, ja, &info));
	ASSERT_EQ(0, npu_job_wait(fd, jb, WAIT_MS, &info));
	EXPECT_EQ(DRM_NPU_JOB_CANCELED, info.state);
	EXPECT_EQ(NPU_JOB_ERR_ABORTED, info.status);

	/* C waits on point 1 after it has signaled with the error. */
	{
		struct drm_npu_sync in = { .handle = tl, .point = 1 };
		struct drm_npu_submit s;

		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf.va + 64, 0x43, 64);
		npu_submit_init(&s, cmd_c.handle, npu_cs_store(&cs, &cmd_c, 0), 1);
		s.in_syncs = (uintptr_t)&in;
		s.in_sync_count = 1;
		s.out_sync.handle = tl;
		s.out_sync.point = 2;
		ASSERT_EQ(0, npu_submit(fd, &s));
		jc = s.job_id;
	}
	ASSERT_EQ(0, npu_job_wait(fd, jc, WAIT_MS, &info));
	EXPECT_EQ(DRM_NPU_JOB_CANCELED, info.state);
	EXPECT_EQ(0, ((uint8_t *)buf.map)[0]);
	EXPECT_EQ(0, ((uint8_t *)buf.map)[64]);

	/* A good point still lets its waiter run. */
	{
		struct drm_npu_sync in = { .handle = tl, .point = 3 };
		struct drm_npu_submit s;
		uint32_t good = 0;

		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf.va + 128, 0x44, 64);
		npu_submit_init(&s, cmd_d.handle, npu_cs_store(&cs, &cmd_d, 0), 0);
		s.out_sync.handle = tl;
		s.out_sync.point = 3;
		ASSERT_EQ(0, npu_submit(fd, &s));
		good = s.job_id;
		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf.va + 192, 0x45, 64);
		memcpy((uint8_t *)cmd_d.map + 1024, cs.buf, cs.len);
		npu_submit_init(&s, cmd_d.handle, cs.len, 1);
		s.cmd_offset = 1024;
		s.in_syncs = (uintptr_t)&in;
		s.in_sync_count = 1;
		ASSERT_EQ(0, npu_submit(fd, &s));
		jd = s.job_id;
		EXPECT_EQ(NPU_JOB_OK, wait_status(fd, good, &info));
	}
	EXPECT_EQ(NPU_JOB_OK, wait_status(fd, jd, &info));
	EXPECT_EQ(DRM_NPU_JOB_DONE, info.state);
	EXPECT_EQ(0x45, ((uint8_t *)buf.map)[192 + 63]);
	npu_syncobj_free(fd, tl);
	close(fd);
}

/*
 * No in-sync makes a job wait for a fence that does not exist yet: a
 * timeline point nobody submitted, or a syncobj without a fence, fails
 * the submit with -EINVAL, so that no job (and with it no close, unbind
 * or io_uring command) waits for one that may never come (driver.md,
 * "Why these cannot happen").
 */
TEST(in_syncs_on_points_never_submitted_fail_at_submit)
{
	struct drm_npu_sync in[2];
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	struct npu_bo cmd, buf;
	struct npu_cs cs;
	int fd = npu_open();
	uint32_t tl, empty, size;

	if (fd < 0)
		SKIP(return, "no device");
	tl = npu_syncobj_new(fd);
	empty = npu_syncobj_new(fd);
	ASSERT_NE(0, tl);
	ASSERT_NE(0, empty);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x11, 64);
	size = npu_cs_store(&cs, &cmd, 0);

	/* Point 1 exists (submitted); points 2 and beyond do not. */
	npu_submit_init(&s, cmd.handle, size, 1);
	s.out_sync.handle = tl;
	s.out_sync.point = 1;
	ASSERT_EQ(0, npu_submit(fd, &s));
	ASSERT_EQ(0, npu_job_wait(fd, s.job_id, WAIT_MS, &info));

	in[0] = (struct drm_npu_sync){ .handle = tl, .point = 1 };
	in[1] = (struct drm_npu_sync){ .handle = tl, .point = 2 };
	npu_submit_init(&s, cmd.handle, size, 1);
	s.in_syncs = (uintptr_t)in;
	s.in_sync_count = 2;
	EXPECT_EQ(-EINVAL, npu_submit(fd, &s));

	in[1] = (struct drm_npu_sync){ .handle = empty };
	EXPECT_EQ(-EINVAL, npu_submit(fd, &s));

	/* The point that exists is enough. */
	s.in_sync_count = 1;
	ASSERT_EQ(0, npu_submit(fd, &s));
	ASSERT_EQ(0, npu_job_wait(fd, s.job_id, WAIT_MS, &info));
	EXPECT_EQ(DRM_NPU_JOB_DONE, info.state);

	npu_syncobj_free(fd, tl);
	npu_syncobj_free(fd, empty);
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);
}

/*
 * A job whose dependency fails is canceled whether the two share a queue
 * or not, and its record says so by the time its fence signals: JOB_INFO
 * right after the syncobj wait, not polled. Many rounds, since both
 * defects were races (the record was finished by free_job, after the
 * fence; a same-queue dependency only had to be scheduled, not done).
 */
TEST(failed_dependency_cancels_on_any_queue_with_the_record_final)
{
	static const uint32_t pairs[][2] = { { 1, 0 }, { 1, 1 }, { 0, 0 }, { 0, 1 } };
	struct npu_bo cmd_bad, cmd_dep, buf;
	struct drm_npu_job_info info;
	uint32_t sync_bad, sync_dep, len_bad, len_dep;
	unsigned int round, p;
	struct npu_cs cs;
	int fd = npu_open();
	uint64_t bad_va;

	if (fd < 0)
		SKIP(return, "no device");
	bad_va = npu_param(fd, DRM_NPU_PARAM_VA_END) - 0x10000;
	sync_bad = npu_syncobj_new(fd);
	sync_dep = npu_syncobj_new(fd);
	ASSERT_NE(0, sync_bad);
	ASSERT_NE(0, sync_dep);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd_bad));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd_dep));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	memset(buf.map, 0, buf.size);
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, bad_va, 7, 64);
	len_bad = npu_cs_store(&cs, &cmd_bad, 0);
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x42, 64);
	len_dep = npu_cs_store(&cs, &cmd_dep, 0);

	for (round = 0; round < 50; round++) {
		for (p = 0; p < 4; p++) {
			struct drm_npu_sync in = { .handle = sync_bad };
			struct drm_npu_submit s;
			uint64_t dep;

			npu_submit_init(&s, cmd_bad.handle, len_bad, pairs[p][0]);
			s.out_sync.handle = sync_bad;
			ASSERT_EQ(0, npu_submit(fd, &s));
			npu_submit_init(&s, cmd_dep.handle, len_dep, pairs[p][1]);
			s.in_syncs = (uintptr_t)&in;
			s.in_sync_count = 1;
			s.out_sync.handle = sync_dep;
			ASSERT_EQ(0, npu_submit(fd, &s));
			dep = s.job_id;
			ASSERT_EQ(0, npu_syncobj_wait(fd, sync_dep, 0, WAIT_MS));
			ASSERT_EQ(0, npu_job_info(fd, dep, &info));
			ASSERT_EQ(DRM_NPU_JOB_CANCELED, info.state) {
				TH_LOG("round %u, queue %u -> %u: the dependent job ran (status %u)",
				       round, pairs[p][0], pairs[p][1], info.status);
			}
			ASSERT_EQ(NPU_JOB_ERR_ABORTED, info.status);
			ASSERT_EQ(0, ((uint8_t *)buf.map)[0]);
		}
	}
	npu_syncobj_free(fd, sync_bad);
	npu_syncobj_free(fd, sync_dep);
	npu_bo_free(fd, &cmd_bad);
	npu_bo_free(fd, &cmd_dep);
	npu_bo_free(fd, &buf);
	close(fd);
}

/*
 * A job canceled by a failed dependency must not signal before an
 * earlier job of its queue: its finished fence replaced that job's in
 * the shared BO's reservation (same scheduler context), so implicit sync
 * would call the BO idle while the earlier job still writes it. C faults
 * (out-sync S); long job A writes X; B writes X too and waits for S.
 * The sync file exported from X must stay unsignaled while A runs.
 */
TEST(a_canceled_job_keeps_a_shared_bo_busy_until_the_writer_ahead_of_it_ends)
{
	struct npu_bo cmd_c, cmd_a, cmd_b, x;
	struct drm_npu_job_info info;
	struct drm_prime_handle exp = { 0 };
	struct dma_buf_export_sync_file sf = { .flags = DMA_BUF_SYNC_READ };
	struct drm_npu_bo_ref ref;
	struct drm_npu_sync in;
	struct drm_npu_submit s;
	struct pollfd pfd = { .events = POLLIN };
	struct npu_cs cs;
	unsigned int fills;
	uint64_t a, b;
	uint32_t sync_c;
	int fd = npu_open(), busy;

	if (fd < 0)
		SKIP(return, "no device");
	sync_c = npu_syncobj_new(fd);
	ASSERT_NE(0, sync_c);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd_c));
	/* Room for the longest npu_cs. */
	ASSERT_EQ(0, npu_bo_new(fd, sizeof(cs.buf), 0, &cmd_a));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd_b));
	ASSERT_EQ(0, npu_bo_new(fd, 1 << 20, 0, &x));
	fills = npu_fills_for_ms(fd, &cmd_a, &x, 1500);

	/* C faults; S carries its error. */
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, npu_param(fd, DRM_NPU_PARAM_VA_END) - 0x10000, 7, 64);
	npu_submit_init(&s, cmd_c.handle, npu_cs_store(&cs, &cmd_c, 0), 0);
	s.out_sync.handle = sync_c;
	ASSERT_EQ(0, npu_submit(fd, &s));
	ASSERT_EQ(0, npu_syncobj_wait(fd, sync_c, 0, WAIT_MS));

	/* A: a long writer of X on queue 1. */
	ref.handle = x.handle;
	ref.access = DRM_NPU_BO_ACCESS_WRITE;
	npu_cs_long(&cs, &x, fills, 5, x.va, 6);
	npu_submit_init(&s, cmd_a.handle, npu_cs_store(&cs, &cmd_a, 0), 1);
	s.bo_refs = (uintptr_t)&ref;
	s.bo_ref_count = 1;
	ASSERT_EQ(0, npu_submit(fd, &s));
	a = s.job_id;
	/* B: writes X after A, on the same queue, and depends on C. */
	in.handle = sync_c;
	in.point = 0;
	in.flags = 0;
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, x.va, 9, 64);
	npu_submit_init(&s, cmd_b.handle, npu_cs_store(&cs, &cmd_b, 0), 1);
	s.bo_refs = (uintptr_t)&ref;
	s.bo_ref_count = 1;
	s.in_syncs = (uintptr_t)&in;
	s.in_sync_count = 1;
	ASSERT_EQ(0, npu_submit(fd, &s));
	b = s.job_id;
	/* B reaches run_job and is canceled while A runs. */
	ASSERT_EQ(0, npu_job_wait(fd, b, WAIT_MS, &info));
	ASSERT_EQ(DRM_NPU_JOB_CANCELED, info.state);

	exp.handle = x.handle;
	exp.flags = DRM_CLOEXEC | DRM_RDWR;
	ASSERT_EQ(0, npu_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
	ASSERT_EQ(0, ioctl(exp.fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &sf));
	pfd.fd = sf.fd;
	busy = poll(&pfd, 1, 0) == 0;
	ASSERT_EQ(0, npu_job_info(fd, a, &info));
	if (info.state == DRM_NPU_JOB_DONE)
		SKIP(goto out, "A ended before the check: the machine is too fast for %u fills",
		     fills);
	EXPECT_TRUE(busy) {
		TH_LOG("X's write fence signaled while job A (state %u) still writes it",
		       info.state);
	}
	ASSERT_EQ(NPU_JOB_OK, wait_status(fd, a, &info));
	EXPECT_EQ(1, poll(&pfd, 1, WAIT_MS));
	EXPECT_EQ(6, ((uint8_t *)x.map)[0]);	/* A's marker; B never wrote */
out:
	close(sf.fd);
	close(exp.fd);
	npu_syncobj_free(fd, sync_c);
	close(fd);
}

/* ---- DRM_IOCTL_NPU_JOB_WAIT ---- */

TEST(job_wait_returns_the_status_when_the_job_ends)
{
	struct npu_bo cmd, cmd2, buf;
	struct drm_npu_job_wait w;
	struct npu_cs cs;
	int fd = npu_open();
	uint64_t id;

	if (fd < 0)
		SKIP(return, "no device");
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd2));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x3c, 128);
	id = run_cs(fd, &cs, 1, &cmd, 0);
	ASSERT_NE(0, id);
	ASSERT_EQ(0, npu_job_wait_ioctl(fd, id, npu_now_ns() + WAIT_MS * 1000000ll,
					0, &w));
	EXPECT_EQ(DRM_NPU_JOB_DONE, w.state);
	EXPECT_EQ(NPU_JOB_OK, w.status);
	EXPECT_EQ(0x3c, ((uint8_t *)buf.map)[127]);
	/* Ended jobs answer at once, even with a timeout already passed. */
	ASSERT_EQ(0, npu_job_wait_ioctl(fd, id, 0, 0, &w));
	EXPECT_EQ(DRM_NPU_JOB_DONE, w.state);

	/* A device error is the job's status, not the ioctl's. */
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, npu_param(fd, DRM_NPU_PARAM_VA_END) - 0x10000, 1, 64);
	id = run_cs(fd, &cs, 0, &cmd2, 0);
	ASSERT_NE(0, id);
	ASSERT_EQ(0, npu_job_wait_ioctl(fd, id, WAIT_MS * 1000000ll,
					NPU_WAIT_RELATIVE, &w));
	EXPECT_EQ(DRM_NPU_JOB_DONE, w.state);
	EXPECT_EQ(NPU_JOB_ERR_MMU_UNMAPPED, w.status);
	close(fd);
}

FIXTURE(held) {
	int fd;
};

FIXTURE_SETUP(held)
{
	self->fd = npu_open();
}

FIXTURE_TEARDOWN(held)
{
	npu_pause_queues(0);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(held, job_wait_times_out_with_etime_until_the_job_ends)
{
	struct npu_bo cmd, buf;
	struct drm_npu_job_wait w;
	struct npu_cs cs;
	int64_t t0;
	uint64_t id;

	if (self->fd < 0)
		SKIP(return, "no device");
	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &buf));
	ASSERT_EQ(0, npu_pause_queues(1));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x2d, 64);
	id = run_cs(self->fd, &cs, 1, &cmd, 0);
	ASSERT_NE(0, id);

	EXPECT_EQ(-ETIME, npu_job_wait_ioctl(self->fd, id, 0, 0, &w));
	EXPECT_EQ(DRM_NPU_JOB_QUEUED, w.state);
	t0 = npu_now_ns();
	EXPECT_EQ(-ETIME, npu_job_wait_ioctl(self->fd, id, 200 * 1000000ll,
					     NPU_WAIT_RELATIVE, &w));
	EXPECT_GE(npu_now_ns() - t0, 150 * 1000000ll);
	EXPECT_EQ(-ETIME, npu_job_wait_ioctl(self->fd, id,
					     npu_now_ns() + 100 * 1000000ll, 0, &w));
	EXPECT_EQ(DRM_NPU_JOB_QUEUED, w.state);

	ASSERT_EQ(0, npu_pause_queues(0));
	ASSERT_EQ(0, npu_job_wait_ioctl(self->fd, id, WAIT_MS * 1000000ll,
					NPU_WAIT_RELATIVE, &w));
	EXPECT_EQ(DRM_NPU_JOB_DONE, w.state);
	EXPECT_EQ(NPU_JOB_OK, w.status);
	EXPECT_EQ(0x2d, ((uint8_t *)buf.map)[63]);
}

static volatile sig_atomic_t npu_signals_seen;

static void npu_count_signal(int sig)
{
	npu_signals_seen++;
}

/*
 * JOB_WAIT takes an absolute CLOCK_MONOTONIC deadline only: a wait that
 * signals interrupt (SA_RESTART: the kernel restarts it) still ends at
 * its deadline. With version 1's relative timeouts every restart began
 * the wait anew, so a wait interrupted more often than its timeout never
 * ended.
 */
TEST_F(held, job_wait_restarted_by_signals_keeps_its_deadline)
{
	struct sigaction sa = { .sa_handler = npu_count_signal,
				.sa_flags = SA_RESTART };
	struct npu_bo cmd, buf;
	struct drm_npu_job_wait w = { 0 };
	struct npu_cs cs;
	pid_t me = getpid(), pinger;
	int ret, status;
	uint64_t id;

	if (self->fd < 0)
		SKIP(return, "no device");
	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &buf));
	ASSERT_EQ(0, npu_pause_queues(1));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x3e, 64);
	id = run_cs(self->fd, &cs, 1, &cmd, 0);
	ASSERT_NE(0, id);

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	npu_signals_seen = 0;
	/* A signal every 20 ms, for at most 20 s. */
	pinger = fork();
	ASSERT_LE(0, pinger);
	if (pinger == 0) {
		int i;

		for (i = 0; i < 1000; i++) {
			usleep(20000);
			if (kill(me, SIGUSR1))
				break;
		}
		_exit(0);
	}
	w.job_id = id;
	w.timeout_ns = npu_now_ns() + 300 * 1000000ll;
	/* Raw ioctl(): a restart is the kernel's, not a retry here. */
	ret = ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w) ? -errno : 0;
	kill(pinger, SIGKILL);
	waitpid(pinger, &status, 0);
	signal(SIGUSR1, SIG_DFL);
	EXPECT_EQ(-ETIME, ret);
	EXPECT_EQ(DRM_NPU_JOB_QUEUED, w.state);
	/* It was interrupted (and restarted) along the way. */
	EXPECT_LT(0, npu_signals_seen);

	ASSERT_EQ(0, npu_pause_queues(0));
	ASSERT_EQ(0, npu_job_wait_ioctl(self->fd, id, WAIT_MS * 1000000ll,
					NPU_WAIT_RELATIVE, &w));
	EXPECT_EQ(NPU_JOB_OK, w.status);
	npu_bo_free(self->fd, &buf);
	npu_bo_free(self->fd, &cmd);
}

/*
 * LOW and NORMAL contexts share hardware queue 1, LOW at a lower
 * drm_sched priority: of two jobs waiting at the same time, the NORMAL
 * one goes to the device first although the LOW one was submitted
 * first. The queues are held while both are submitted.
 */
TEST_F(held, a_normal_context_runs_before_a_low_one)
{
	struct drm_npu_job_info lo_info, no_info;
	struct drm_npu_submit s;
	struct npu_bo cmd, buf;
	struct npu_cs cs;
	uint64_t lo_job, no_job;
	int lo;

	if (self->fd < 0)
		SKIP(return, "no device");
	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	lo = npu_context_new(self->fd, DRM_NPU_CONTEXT_PRIORITY_LOW);
	ASSERT_LT(0, lo);
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &buf));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x4f, 64);
	ASSERT_EQ(0, npu_pause_queues(1));
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
	s.context_id = lo;
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	lo_job = s.job_id;
	npu_submit_init(&s, cmd.handle, cs.len, 1);	/* NORMAL */
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	no_job = s.job_id;
	ASSERT_EQ(0, npu_pause_queues(0));
	ASSERT_EQ(NPU_JOB_OK, wait_status(self->fd, lo_job, &lo_info));
	ASSERT_EQ(NPU_JOB_OK, wait_status(self->fd, no_job, &no_info));
	EXPECT_EQ(1, lo_info.queue);
	EXPECT_EQ(1, no_info.queue);
	EXPECT_EQ(lo, lo_info.context_id);
	EXPECT_EQ(NPU_CTX_QUEUE1, no_info.context_id);
	EXPECT_LT(no_info.start_ns, lo_info.start_ns);
	npu_bo_free(self->fd, &buf);
	npu_bo_free(self->fd, &cmd);
}

TEST_F(held, submit_beyond_the_queued_job_cap_is_ebusy)
{
	uint64_t cap, i, last = 0;
	struct drm_npu_job_wait w;
	struct drm_npu_submit s;
	struct npu_bo cmd, cmd2;
	struct npu_cs cs;
	int64_t end;
	int ret, other;

	if (self->fd < 0)
		SKIP(return, "no device");
	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	cap = npu_param(self->fd, DRM_NPU_PARAM_MAX_QUEUED_JOBS);
	ASSERT_GT(cap, 0);
	ASSERT_LT(cap, 100000);
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &cmd));
	npu_cs_begin(&cs);
	npu_cs_store(&cs, &cmd, 0);
	ASSERT_EQ(0, npu_pause_queues(1));
	for (i = 0; i < cap; i++) {
		npu_submit_init(&s, cmd.handle, cs.len, i % 2);
		ASSERT_EQ(0, npu_submit(self->fd, &s)) TH_LOG("job %llu",
							     (unsigned long long)i);
		last = s.job_id;
	}
	npu_submit_init(&s, cmd.handle, cs.len, 0);
	EXPECT_EQ(-EBUSY, npu_submit(self->fd, &s));
	/* Another context is not affected. */
	other = npu_open();
	ASSERT_GE(other, 0);
	ASSERT_EQ(0, npu_bo_new(other, 4096, 0, &cmd2));
	npu_cs_store(&cs, &cmd2, 0);
	npu_submit_init(&s, cmd2.handle, cs.len, 0);
	EXPECT_EQ(0, npu_submit(other, &s));
	ASSERT_EQ(0, npu_pause_queues(0));
	close(other);
	ASSERT_EQ(0, npu_job_wait_ioctl(self->fd, last, WAIT_MS * 1000000ll,
					NPU_WAIT_RELATIVE, &w));
	EXPECT_EQ(NPU_JOB_OK, w.status);
	/* Retired jobs free their slots. */
	end = npu_now_ns() + WAIT_MS * 1000000ll;
	do {
		npu_submit_init(&s, cmd.handle, cs.len, 0);
		ret = npu_submit(self->fd, &s);
		if (ret == -EBUSY)
			usleep(10000);
	} while (ret == -EBUSY && npu_now_ns() < end);
	EXPECT_EQ(0, ret);
}

#define CLOSE_JOBS	64
#define CLOSE_BYTES	(64 << 10)

/*
 * close() with jobs queued: the file's handles go (drm_gem_release)
 * before its queues are flushed (postclose). The schedulers hold the jobs
 * back until close() is past the handles; the jobs then run while the
 * flush waits. They hold their BOs' mappings, so they finish without MMU
 * faults and their writes land. The buffers are read through a second
 * file that imported them (an mmap of the first file would keep it open).
 */
TEST(close_with_jobs_queued_lets_them_finish_without_faults)
{
	struct npu_bo cmd, buf[CLOSE_JOBS];
	struct npu_counters base, now;
	uint8_t *view[CLOSE_JOBS];
	long long faults0, failed0, jobs;
	int fd, other, i, j, written = 0, status;
	int64_t end;
	pid_t pid;

	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	/* The jobs of the tests before are freed a little after they end. */
	for (i = 0; i < 5000 && npu_counter("jobs") > 0; i++)
		usleep(1000);
	npu_counters_read(&base);
	faults0 = npu_counter("mmu_faults");
	failed0 = npu_counter("jobs_failed");
	fd = npu_open();
	other = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_GE(other, 0);
	ASSERT_EQ(0, npu_bo_new(fd, CLOSE_JOBS * 256, 0, &cmd));
	for (i = 0; i < CLOSE_JOBS; i++) {
		struct drm_prime_handle exp = { .flags = DRM_CLOEXEC | DRM_RDWR };
		struct drm_prime_handle imp = { 0 };
		struct drm_npu_bo_info info = { 0 };

		ASSERT_EQ(0, npu_bo_new(fd, CLOSE_BYTES, 0, &buf[i]));
		memset(buf[i].map, 0, CLOSE_BYTES);
		munmap(buf[i].map, CLOSE_BYTES);
		buf[i].map = NULL;
		exp.handle = buf[i].handle;
		ASSERT_EQ(0, npu_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
		imp.fd = exp.fd;
		ASSERT_EQ(0, npu_ioctl(other, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp));
		close(exp.fd);
		info.handle = imp.handle;
		ASSERT_EQ(0, npu_ioctl(other, DRM_IOCTL_NPU_BO_INFO, &info));
		view[i] = mmap(NULL, CLOSE_BYTES, PROT_READ, MAP_SHARED, other,
			       info.mmap_offset);
		ASSERT_NE(MAP_FAILED, view[i]);
	}
	ASSERT_EQ(0, npu_pause_queues(1));
	for (i = 0; i < CLOSE_JOBS; i++) {
		struct drm_npu_bo_ref ref = { buf[i].handle,
					      DRM_NPU_BO_ACCESS_WRITE };
		struct drm_npu_submit s;
		struct npu_cs cs;

		npu_cs_begin(&cs);
		npu_cs_fill(&cs, buf[i].va, i + 1, CLOSE_BYTES);
		memcpy((uint8_t *)cmd.map + i * 256, cs.buf, cs.len);
		npu_submit_init(&s, cmd.handle, cs.len, i % 2);
		s.cmd_offset = i * 256;
		s.bo_refs = (uintptr_t)&ref;
		s.bo_ref_count = 1;
		EXPECT_EQ(0, npu_submit(fd, &s));
	}
	munmap(cmd.map, cmd.size);

	/* Let the jobs go while close() waits in the flush. */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		usleep(200000);
		_exit(npu_pause_queues(0) ? 1 : 0);
	}
	close(fd);
	waitpid(pid, &status, 0);
	npu_pause_queues(0);
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* The jobs end (and are freed) without the file. */
	end = npu_now_ns() + WAIT_MS * 1000000ll;
	while ((jobs = npu_counter("jobs")) != base.jobs && npu_now_ns() < end)
		usleep(10000);
	EXPECT_EQ(base.jobs, jobs);
	EXPECT_EQ(faults0, npu_counter("mmu_faults"));
	EXPECT_EQ(failed0, npu_counter("jobs_failed"));
	for (i = 0; i < CLOSE_JOBS; i++) {
		uint8_t *m = view[i], v = m[0];

		/* Each job either ran whole or was canceled untouched. */
		EXPECT_TRUE(v == 0 || v == i + 1) TH_LOG("job %d wrote %u", i, v);
		for (j = 1; j < CLOSE_BYTES; j++)
			if (m[j] != v)
				break;
		EXPECT_EQ(CLOSE_BYTES, j) TH_LOG("job %d byte %d", i, j);
		written += v == i + 1;
	}
	/* Released while close() waited for the queues: none is dropped. */
	EXPECT_EQ(CLOSE_JOBS, written);
	for (i = 0; i < CLOSE_JOBS; i++)
		munmap(view[i], CLOSE_BYTES);
	close(other);
	EXPECT_EQ(0, npu_counters_settle(&base, &now, WAIT_MS)) {
		TH_LOG("bos %lld/%lld pages %lld/%lld jobs %lld/%lld contexts %lld/%lld",
		       now.bos, base.bos, now.pages, base.pages, now.jobs,
		       base.jobs, now.contexts, base.contexts);
	}
}

/* ---- memcg accounting ---- */

#define CG_ROOT	"/sys/fs/cgroup"
#define CG_TEST	CG_ROOT "/npu-kselftest"

static int cg_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, val, strlen(val)) < 0 ? -errno : 0;
	close(fd);
	return ret;
}

static long long cg_read_ll(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* A cgroup v2 with the memory controller for this process, or -errno. */
static int cg_enter(void)
{
	char pid[32];

	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return -errno;
	if (cg_write(CG_ROOT "/cgroup.subtree_control", "+memory"))
		return -ENOTSUP;
	if (mkdir(CG_TEST, 0755) && errno != EEXIST)
		return -errno;
	snprintf(pid, sizeof(pid), "%d", getpid());
	return cg_write(CG_TEST "/cgroup.procs", pid);
}

static void cg_leave(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	cg_write(CG_ROOT "/cgroup.procs", pid);
	rmdir(CG_TEST);
}

#define CG_JOBS		256

/*
 * What the driver allocates for a job (the job, its BO arrays, record)
 * is charged to the submitter's memcg: held-back jobs that each list
 * DRM_NPU_MAX_BO_REFS entries raise the cgroup's memory.current.
 */
TEST_F(held, queued_jobs_are_charged_to_the_submitters_memcg)
{
	static struct drm_npu_bo_ref refs[DRM_NPU_MAX_BO_REFS];
	long long before, after;
	struct drm_npu_job_wait w;
	struct drm_npu_submit s;
	struct npu_bo cmd, buf;
	uint64_t last = 0;
	struct npu_cs cs;
	int i, ret;

	if (self->fd < 0)
		SKIP(return, "no device");
	if (!need_debugfs())
		SKIP(return, "no npu debugfs");
	ret = cg_enter();
	if (ret)
		SKIP(return, "no cgroup v2 memory controller: %s", strerror(-ret));
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &buf));
	npu_cs_begin(&cs);
	npu_cs_store(&cs, &cmd, 0);
	for (i = 0; i < DRM_NPU_MAX_BO_REFS; i++)
		refs[i] = (struct drm_npu_bo_ref){ buf.handle,
						   DRM_NPU_BO_ACCESS_READ };

	ASSERT_EQ(0, npu_pause_queues(1));
	before = cg_read_ll(CG_TEST "/memory.current");
	ASSERT_GT(before, 0);
	for (i = 0; i < CG_JOBS; i++) {
		npu_submit_init(&s, cmd.handle, cs.len, i % 2);
		s.bo_refs = (uintptr_t)refs;
		s.bo_ref_count = DRM_NPU_MAX_BO_REFS;
		ASSERT_EQ(0, npu_submit(self->fd, &s));
		last = s.job_id;
	}
	after = cg_read_ll(CG_TEST "/memory.current");
	/* At least the 12 KiB of BO arrays per job (8 and 4 bytes each). */
	EXPECT_GE(after - before, CG_JOBS * 12ll * DRM_NPU_MAX_BO_REFS)
		TH_LOG("memory.current %lld -> %lld", before, after);

	ASSERT_EQ(0, npu_pause_queues(0));
	ASSERT_EQ(0, npu_job_wait_ioctl(self->fd, last, WAIT_MS * 1000000ll,
					NPU_WAIT_RELATIVE, &w));
	EXPECT_EQ(NPU_JOB_OK, w.status);
	npu_bo_free(self->fd, &buf);
	npu_bo_free(self->fd, &cmd);
	close(self->fd);
	self->fd = -1;
	cg_leave();
}

/* Lose every capability: an ordinary user (nobody). */
static int drop_privileges(void)
{
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return -errno;
	return 0;
}

/*
 * Queue 0 (HIGH contexts) has strict priority: creating a HIGH context
 * needs CAP_SYS_NICE (or DRM master), as panthor's high-priority groups
 * do. An ordinary user gets -EACCES there and can still use queue 1
 * through a LOW (or NORMAL) context.
 */
TEST(unprivileged_submit_to_the_high_priority_queue_is_refused)
{
	struct npu_bo cmd, buf;
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	struct npu_cs cs;
	int fd, status;
	pid_t pid;

	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &buf));
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf.va, 0x61, 64);
	/* Root may. */
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 0);
	ASSERT_EQ(0, npu_submit(fd, &s));
	ASSERT_EQ(0, npu_job_wait(fd, s.job_id, WAIT_MS, &info));

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int id;

		if (drop_privileges())
			_exit(10);
		if (npu_context_new(fd, DRM_NPU_CONTEXT_PRIORITY_HIGH) != -EACCES)
			_exit(11);
		id = npu_context_new(fd, DRM_NPU_CONTEXT_PRIORITY_LOW);
		if (id <= 0)
			_exit(12);
		npu_submit_init(&s, cmd.handle, cs.len, 1);
		s.context_id = id;
		if (npu_submit(fd, &s))
			_exit(12);
		if (npu_job_wait(fd, s.job_id, WAIT_MS, &info) ||
		    info.status != NPU_JOB_OK)
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	npu_bo_free(fd, &buf);
	npu_bo_free(fd, &cmd);
	close(fd);
}

/*
 * A flood of queue 0 (strict priority) starves a queue-1 job of another
 * file for several job timeouts. The starved job is not on the engine,
 * so its timeout must not blame it: no reset, nobody banned, and it runs
 * once the flood is over. The flood comes from a privileged file (an
 * unprivileged one cannot submit to queue 0, see above), which also
 * tries to submit as an ordinary user first.
 */
TEST(a_queue0_flood_does_not_get_a_starved_queue1_job_banned)
{
	struct npu_bo cmd_a, big_a, mark_a, cmd_b, buf_b;
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	uint64_t resets, victim, flood[32];
	unsigned int fills;
	uint32_t len_a;
	int64_t t0;
	struct npu_cs cs;
	int a, b, i, status;
	pid_t pid;

	a = npu_open();
	b = npu_open();
	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	resets = npu_param(b, DRM_NPU_PARAM_RESET_COUNT);
	ASSERT_EQ(0, npu_bo_new(a, 8192, 0, &cmd_a));
	ASSERT_EQ(0, npu_bo_new(a, 16 << 20, 0, &big_a));
	ASSERT_EQ(0, npu_bo_new(a, 4096, 0, &mark_a));
	ASSERT_EQ(0, npu_bo_new(b, 4096, 0, &cmd_b));
	ASSERT_EQ(0, npu_bo_new(b, 4096, 0, &buf_b));
	/* 32 jobs of ~120 ms: ~4 job timeouts (1 s) of queue 0 busy. */
	fills = npu_fills_for_ms(a, &cmd_a, &big_a, 120);
	npu_cs_long(&cs, &big_a, fills, 0x11, mark_a.va, 0x22);
	len_a = npu_cs_store(&cs, &cmd_a, 0);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (drop_privileges())
			_exit(10);
		for (i = 0; i < 32; i++)
			if (npu_context_new(a, DRM_NPU_CONTEXT_PRIORITY_HIGH) !=
			    -EACCES)
				_exit(11);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* A's first job takes the engine, B's job waits, A's flood follows. */
	npu_submit_init(&s, cmd_a.handle, len_a, 0);
	ASSERT_EQ(0, npu_submit(a, &s));
	flood[0] = s.job_id;
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf_b.va, 0x42, 64);
	victim = run_cs(b, &cs, 1, &cmd_b, 0);
	ASSERT_NE(0, victim);
	for (i = 1; i < 32; i++) {
		npu_submit_init(&s, cmd_a.handle, len_a, 0);
		ASSERT_EQ(0, npu_submit(a, &s));
		flood[i] = s.job_id;
	}

	t0 = npu_now_ns();
	ASSERT_EQ(0, npu_job_wait(b, victim, 60000, &info));
	fprintf(stderr, "# queue-1 job starved %lld ms behind %u-fill jobs\n",
		(long long)(npu_now_ns() - t0) / 1000000, fills);
	EXPECT_EQ(DRM_NPU_JOB_DONE, info.state);
	EXPECT_EQ(NPU_JOB_OK, info.status);
	EXPECT_EQ(0x42, ((uint8_t *)buf_b.map)[63]);
	for (i = 0; i < 32; i++) {
		ASSERT_EQ(0, npu_job_wait(a, flood[i], 60000, &info));
		EXPECT_EQ(NPU_JOB_OK, info.status) TH_LOG("flood job %d", i);
	}
	EXPECT_EQ(resets, npu_param(b, DRM_NPU_PARAM_RESET_COUNT));
	/* Neither file is banned. */
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, buf_b.va, 0x43, 64);
	victim = run_cs(b, &cs, 1, &cmd_b, 0);
	ASSERT_NE(0, victim);
	EXPECT_EQ(NPU_JOB_OK, wait_status(b, victim, &info));
	npu_bo_free(b, &buf_b);
	npu_bo_free(b, &cmd_b);
	npu_bo_free(a, &mark_a);
	npu_bo_free(a, &big_a);
	npu_bo_free(a, &cmd_a);
	close(b);
	close(a);
}

TEST_HARNESS_MAIN
