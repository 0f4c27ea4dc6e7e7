// SPDX-License-Identifier: GPL-2.0-only
/*
 * Jobs on the device: execution, isolation between contexts, faults,
 * fence chains, hang recovery, SIGKILL cleanup and dma-buf sharing.
 */
#include <signal.h>
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
	ASSERT_EQ(0, npu_debugfs_write("npu_inject_mmu_fault", "1"));
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
		ASSERT_EQ(0, npu_debugfs_write("npu_inject_boot_fail", "1"));
	ASSERT_EQ(0, npu_debugfs_write("npu_inject_hang", "1"));
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

	/* The guilty context is banned, the innocent one is not. */
	npu_cs_begin(&cs);
	EXPECT_EQ(0, run_cs(a, &cs, 0, &cmd_a, 0));
	{
		struct drm_npu_submit s;

		npu_submit_init(&s, cmd_a.handle, 16, 0);
		EXPECT_EQ(-ECANCELED, npu_submit(a, &s));
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

TEST_HARNESS_MAIN
