// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every ioctl's positive path and every field's negative path, each with
 * the errno the ABI (uapi/drm/npu_accel.h) promises.
 */
#include <grp.h>
#include <sys/wait.h>

#include "npu_test.h"
#include "kselftest_harness.h"

static int drop_privileges(void)
{
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return -errno;
	return 0;
}

FIXTURE(npu) {
	int fd;
	struct npu_bo cmd;
	uint32_t cmd_size;
};

FIXTURE_SETUP(npu)
{
	struct npu_cs cs;

	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no %s: %s", NPU_DEV_PATH, strerror(errno));
	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &self->cmd));
	npu_cs_begin(&cs);	/* an empty, valid stream */
	self->cmd_size = npu_cs_store(&cs, &self->cmd, 0);
}

FIXTURE_TEARDOWN(npu)
{
	if (self->fd >= 0) {
		npu_bo_free(self->fd, &self->cmd);
		close(self->fd);
	}
}

/* A submit with one field changed from a valid one. */
#define SUBMIT_EXPECT(err, field_setup) do {				\
	struct drm_npu_submit s;					\
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 0);	\
	field_setup;							\
	EXPECT_EQ(err, npu_submit(self->fd, &s));			\
} while (0)

/* ---- GET_PARAM ---- */

TEST_F(npu, get_param_reports_every_param)
{
	uint32_t p;

	for (p = DRM_NPU_PARAM_DEVICE_ID; p <= DRM_NPU_PARAM_DEVICE_TIME_NS; p++) {
		struct drm_npu_get_param gp = { .param = p };

		EXPECT_EQ(0, npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &gp))
			TH_LOG("param %u", p);
	}
	EXPECT_EQ(NPU_PCI_DEVICE_ID, npu_param(self->fd, DRM_NPU_PARAM_DEVICE_ID));
	EXPECT_EQ(NPU_NUM_QUEUES, npu_param(self->fd, DRM_NPU_PARAM_NUM_QUEUES));
	EXPECT_LT(npu_param(self->fd, DRM_NPU_PARAM_VA_START),
		  npu_param(self->fd, DRM_NPU_PARAM_VA_END));
	EXPECT_LT(npu_param(self->fd, DRM_NPU_PARAM_VM_ID), NPU_NUM_CONTEXTS);
	EXPECT_NE(0, npu_param(self->fd, DRM_NPU_PARAM_FW_VERSION));
	EXPECT_EQ(NPU_MAC_ROWS << 16 | NPU_MAC_COLS,
		  npu_param(self->fd, DRM_NPU_PARAM_MAC_SHAPE));
}

TEST_F(npu, get_param_reports_limits_and_features)
{
	uint64_t features = npu_param(self->fd, DRM_NPU_PARAM_FEATURES);

	/* Version 2 guarantees what version 1's bits announced. */
	EXPECT_EQ(0, features);
	EXPECT_EQ(DRM_NPU_MAX_BO_REFS,
		  npu_param(self->fd, DRM_NPU_PARAM_MAX_BO_REFS));
	EXPECT_EQ(DRM_NPU_MAX_SYNCS, npu_param(self->fd, DRM_NPU_PARAM_MAX_SYNCS));
	EXPECT_EQ(4096, npu_param(self->fd, DRM_NPU_PARAM_MAX_BO_REF_SIZE));
	EXPECT_EQ(NPU_CS_MAX_SIZE, npu_param(self->fd, DRM_NPU_PARAM_MAX_CMD_SIZE));
	EXPECT_EQ(NPU_NUM_CONTEXTS, npu_param(self->fd, DRM_NPU_PARAM_MAX_VMS));
	EXPECT_EQ(32, npu_param(self->fd, DRM_NPU_PARAM_MAX_FILE_CONTEXTS));
	EXPECT_EQ(16, npu_param(self->fd, DRM_NPU_PARAM_MAX_VMS_PER_USER));
	EXPECT_EQ(4096, npu_param(self->fd, DRM_NPU_PARAM_JOB_HISTORY));
	EXPECT_GE(npu_param(self->fd, DRM_NPU_PARAM_MAX_QUEUED_JOBS),
		  256);
}

TEST_F(npu, get_param_unknown_param_is_einval)
{
	struct drm_npu_get_param gp = { .param = 9999 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &gp));
}

TEST_F(npu, get_param_nonzero_pad_is_einval)
{
	struct drm_npu_get_param gp = { .param = DRM_NPU_PARAM_CAPS, .pad = 1 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &gp));
}

TEST_F(npu, null_ioctl_argument_is_efault)
{
	EXPECT_EQ(-EFAULT, npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, NULL));
	EXPECT_EQ(-EFAULT, npu_ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, NULL));
}

TEST_F(npu, va_spaces_have_distinct_ids)
{
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	EXPECT_NE(npu_param(self->fd, DRM_NPU_PARAM_VM_ID),
		  npu_param(fd2, DRM_NPU_PARAM_VM_ID));
	close(fd2);
}

/* ---- version 2 of the ABI ---- */

TEST_F(npu, driver_reports_abi_major_2)
{
	char name[16] = "";
	struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };

	ASSERT_EQ(0, npu_ioctl(self->fd, DRM_IOCTL_VERSION, &v));
	EXPECT_EQ(DRM_NPU_ABI_MAJOR, v.version_major);
	EXPECT_EQ(2, v.version_major);
	EXPECT_STREQ("npu", name);
}

/* Version 1's SUBMIT and JOB_INFO: -EINVAL, never a misread struct. */
TEST_F(npu, version1_ioctl_numbers_are_einval)
{
	struct v1_submit {
		uint32_t cmd_handle, cmd_offset, cmd_size, queue, flags;
		uint32_t bo_ref_count;
		uint64_t bo_refs;
		uint32_t bo_ref_size, in_sync_count;
		uint64_t in_syncs;
		struct drm_npu_sync out_sync;
		uint64_t job_id, reserved;
	} s1 = { .cmd_handle = self->cmd.handle, .cmd_size = self->cmd_size,
		 .queue = 1 };
	struct { uint64_t job_id; uint32_t w[6]; uint64_t q[7]; } i1 = { 1 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOWR(DRM_COMMAND_BASE + 0x03,
							struct v1_submit), &s1));
	EXPECT_EQ(0, s1.job_id);
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOWR(DRM_COMMAND_BASE + 0x04,
							typeof(i1)), &i1));
}

/* ---- CONTEXT_CREATE / CONTEXT_DESTROY ---- */

TEST_F(npu, context_create_bad_fields_are_einval)
{
	struct drm_npu_context_create c = { .priority = 3 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_CONTEXT_CREATE, &c));
	c.priority = ~0u;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_CONTEXT_CREATE, &c));
	c.priority = DRM_NPU_CONTEXT_PRIORITY_NORMAL;
	c.flags = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_CONTEXT_CREATE, &c));
	c.flags = 0;
	c.pad = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_CONTEXT_CREATE, &c));
}

TEST_F(npu, context_destroy_unknown_or_twice_is_enoent)
{
	struct drm_npu_context_destroy d = { .context_id = 0 };
	int id = npu_context_new(self->fd, DRM_NPU_CONTEXT_PRIORITY_LOW);

	ASSERT_LT(0, id);
	EXPECT_EQ(-ENOENT, npu_ioctl(self->fd, DRM_IOCTL_NPU_CONTEXT_DESTROY, &d));
	d.context_id = 999;
	EXPECT_EQ(-ENOENT, npu_ioctl(self->fd, DRM_IOCTL_NPU_CONTEXT_DESTROY, &d));
	d.context_id = id;
	d.pad = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_CONTEXT_DESTROY, &d));
	EXPECT_EQ(0, npu_context_free(self->fd, id));
	EXPECT_EQ(-ENOENT, npu_context_free(self->fd, id));
}

TEST_F(npu, contexts_are_per_file)
{
	struct drm_npu_submit s;
	int fd2 = npu_open_bare();

	ASSERT_GE(fd2, 0);
	/* A file without a VA space has no context at all. */
	EXPECT_EQ(-ENOENT, npu_context_free(fd2, NPU_CTX_QUEUE1));
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 1);
	EXPECT_EQ(-ENOENT, npu_submit(fd2, &s));
	close(fd2);
}

TEST_F(npu, submit_to_unknown_or_destroyed_context_is_enoent)
{
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	int id = npu_context_new(self->fd, DRM_NPU_CONTEXT_PRIORITY_LOW);

	ASSERT_LT(0, id);
	SUBMIT_EXPECT(-ENOENT, s.context_id = 0);
	SUBMIT_EXPECT(-ENOENT, s.context_id = 999);
	SUBMIT_EXPECT(-ENOENT, s.context_id = ~0u);
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 1);
	s.context_id = id;
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	/* Destroy waits for the queued job to reach the device; it ends. */
	ASSERT_EQ(0, npu_context_free(self->fd, id));
	ASSERT_EQ(0, npu_job_wait(self->fd, s.job_id, 10000, &info));
	EXPECT_EQ(DRM_NPU_JOB_DONE, info.state);
	EXPECT_EQ(id, info.context_id);
	SUBMIT_EXPECT(-ENOENT, s.context_id = id);
}

TEST_F(npu, file_contexts_beyond_the_limit_are_enospc)
{
	uint64_t max = npu_param(self->fd, DRM_NPU_PARAM_MAX_FILE_CONTEXTS);
	int ids[256], n = 0, id, i;

	ASSERT_LE(max, 256);
	for (;;) {
		id = npu_context_new(self->fd, DRM_NPU_CONTEXT_PRIORITY_NORMAL);
		if (id < 0 || n == 256)
			break;
		ids[n++] = id;
	}
	EXPECT_EQ(-ENOSPC, id);
	/* npu_open() made two. */
	EXPECT_EQ(max, n + 2);
	ASSERT_LT(0, n);
	EXPECT_EQ(0, npu_context_free(self->fd, ids[--n]));
	id = npu_context_new(self->fd, DRM_NPU_CONTEXT_PRIORITY_LOW);
	EXPECT_LT(0, id);
	if (id > 0)
		ids[n++] = id;
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, npu_context_free(self->fd, ids[i]));
}

/* Opening and asking parameters takes none of the device's VA spaces. */
TEST_F(npu, files_that_only_query_take_no_va_space)
{
	uint64_t max = npu_param(self->fd, DRM_NPU_PARAM_MAX_VMS);
	int fds[200], n, i;

	ASSERT_LE(max, 100);
	for (n = 0; n < (int)max * 2; n++) {
		fds[n] = npu_open_bare();
		ASSERT_LE(0, fds[n]) TH_LOG("open %d: %s", n, strerror(errno));
		EXPECT_EQ(NPU_PCI_DEVICE_ID,
			  npu_param(fds[n], DRM_NPU_PARAM_DEVICE_ID));
	}
	/* This fixture's file can still make more contexts. */
	i = npu_context_new(self->fd, DRM_NPU_CONTEXT_PRIORITY_LOW);
	EXPECT_LT(0, i);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * One user may hold DRM_NPU_PARAM_MAX_VMS_PER_USER VA spaces: the next
 * is -EMFILE (root, CAP_SYS_ADMIN, is exempt), so one user cannot take
 * all of the device's.
 */
TEST_F(npu, va_spaces_beyond_the_user_limit_are_emfile)
{
	uint64_t max = npu_param(self->fd, DRM_NPU_PARAM_MAX_VMS_PER_USER);
	int status;
	pid_t pid;

	int fds[64], i;

	ASSERT_LT(0, max);
	ASSERT_GT(64, max);
	/* Opened as root (the node may be root's only), used as nobody. */
	for (i = 0; i < 64; i++)
		ASSERT_LE(0, fds[i] = npu_open_bare());
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct drm_npu_bo_create c = { .size = 4096 };
		int n = 0, fd, ret;

		if (drop_privileges())
			_exit(10);
		for (;;) {
			fd = fds[n];
			ret = npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c);
			if (ret || n == 62)
				break;
			n++;
		}
		if (ret != -EMFILE || n != (int)max)
			_exit(12);
		/* Each way of making a VA space says the same. */
		if (npu_context_new(fd, DRM_NPU_CONTEXT_PRIORITY_NORMAL) != -EMFILE)
			_exit(13);
		if (npu_param(fd, DRM_NPU_PARAM_VM_ID) != ~0ull)
			_exit(14);
		/* One given back (the file closed): one more fits. */
		close(fds[--n]);
		if (npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c))
			_exit(15);
		_exit(0);
	}
	/* The child holds the only references: its close() frees. */
	for (i = 0; i < 64; i++)
		close(fds[i]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ---- BO_CREATE / BO_INFO ---- */

TEST_F(npu, bo_create_maps_rounded_size_at_va)
{
	struct drm_npu_bo_create c = { .size = 1 };
	struct drm_npu_bo_info info = { 0 };
	uint8_t *p;

	ASSERT_EQ(0, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c));
	EXPECT_NE(0, c.handle);
	EXPECT_GE(c.va, npu_param(self->fd, DRM_NPU_PARAM_VA_START));
	EXPECT_EQ(0, c.va % 4096);
	info.handle = c.handle;
	ASSERT_EQ(0, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info));
	EXPECT_EQ(4096, info.size);
	EXPECT_EQ(c.va, info.va);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	p[4095] = 0xab;
	EXPECT_EQ(0xab, p[4095]);
	munmap(p, 4096);
	EXPECT_EQ(0, npu_gem_close(self->fd, c.handle));
}

TEST_F(npu, bo_create_read_only_flag_accepted)
{
	struct drm_npu_bo_create c = { .size = 8192,
				       .flags = DRM_NPU_BO_DEVICE_READ_ONLY };

	EXPECT_EQ(0, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c));
	EXPECT_EQ(0, npu_gem_close(self->fd, c.handle));
}

TEST_F(npu, bo_create_zero_size_is_einval)
{
	struct drm_npu_bo_create c = { .size = 0 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c));
}

TEST_F(npu, bo_create_unknown_flag_is_einval)
{
	struct drm_npu_bo_create c = { .size = 4096, .flags = 1u << 7 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c));
}

TEST_F(npu, bo_create_larger_than_va_space_is_enospc)
{
	struct drm_npu_bo_create c = { .size = 1ull << 40 };

	EXPECT_EQ(-ENOSPC, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c));
	c.size = ~0ull;
	EXPECT_EQ(-ENOSPC, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c));
}

TEST_F(npu, bo_info_bad_handle_is_enoent)
{
	struct drm_npu_bo_info info = { .handle = 0xdead };

	EXPECT_EQ(-ENOENT, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info));
}

TEST_F(npu, bo_info_deleted_handle_is_enoent)
{
	struct npu_bo bo;
	struct drm_npu_bo_info info = { 0 };

	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &bo));
	info.handle = bo.handle;
	munmap(bo.map, bo.size);
	ASSERT_EQ(0, npu_gem_close(self->fd, bo.handle));
	EXPECT_EQ(-ENOENT, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info));
}

TEST_F(npu, bo_info_nonzero_flags_is_einval)
{
	struct drm_npu_bo_info info = { .handle = self->cmd.handle, .flags = 1 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info));
}

TEST_F(npu, bo_handles_are_per_file)
{
	struct drm_npu_bo_info info = { .handle = self->cmd.handle };
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	EXPECT_EQ(-ENOENT, npu_ioctl(fd2, DRM_IOCTL_NPU_BO_INFO, &info));
	close(fd2);
}

/* ---- SUBMIT: positive ---- */

TEST_F(npu, submit_empty_stream_completes_ok)
{
	struct drm_npu_submit s;
	struct drm_npu_job_info info;
	uint32_t sync = npu_syncobj_new(self->fd);

	ASSERT_NE(0, sync);
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 1);
	s.out_sync.handle = sync;
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	EXPECT_NE(0, s.job_id);
	ASSERT_EQ(0, npu_syncobj_wait(self->fd, sync, 0, 10000));
	ASSERT_EQ(0, npu_job_wait(self->fd, s.job_id, 10000, &info));
	EXPECT_EQ(DRM_NPU_JOB_DONE, info.state);
	EXPECT_EQ(NPU_JOB_OK, info.status);
	EXPECT_EQ(1, info.queue);
	EXPECT_EQ(NPU_CTX_QUEUE1, info.context_id);
	EXPECT_LE(info.start_ns, info.end_ns);
	npu_syncobj_free(self->fd, sync);
}

TEST_F(npu, submit_with_bo_refs_and_larger_entry_size)
{
	struct { struct drm_npu_bo_ref ref; uint64_t tail; } refs[2] = {
		{ { self->cmd.handle, DRM_NPU_BO_ACCESS_READ }, 0 },
		{ { self->cmd.handle, DRM_NPU_BO_ACCESS_READ |
					DRM_NPU_BO_ACCESS_WRITE }, 0 },
	};
	struct drm_npu_submit s;
	struct drm_npu_job_info info;

	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 0);
	s.bo_refs = (uintptr_t)refs;
	s.bo_ref_count = 2;
	s.bo_ref_size = sizeof(refs[0]);
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	ASSERT_EQ(0, npu_job_wait(self->fd, s.job_id, 10000, &info));
	EXPECT_EQ(NPU_JOB_OK, info.status);
}

TEST_F(npu, submit_job_ids_increase)
{
	struct drm_npu_submit a, b;

	npu_submit_init(&a, self->cmd.handle, self->cmd_size, 0);
	npu_submit_init(&b, self->cmd.handle, self->cmd_size, 0);
	ASSERT_EQ(0, npu_submit(self->fd, &a));
	ASSERT_EQ(0, npu_submit(self->fd, &b));
	EXPECT_GT(b.job_id, a.job_id);
}

/* ---- SUBMIT: negative, one field at a time ---- */

TEST_F(npu, submit_unknown_flags_is_einval)
{
	SUBMIT_EXPECT(-EINVAL, s.flags = 1);
	SUBMIT_EXPECT(-EINVAL, s.flags = 1u << 31);
}

TEST_F(npu, submit_nonzero_reserved_is_einval)
{
	SUBMIT_EXPECT(-EINVAL, s.reserved = 1);
}


TEST_F(npu, submit_bad_cmd_handle_is_enoent)
{
	SUBMIT_EXPECT(-ENOENT, s.cmd_handle = 0);
	SUBMIT_EXPECT(-ENOENT, s.cmd_handle = 0xbad);
}

TEST_F(npu, submit_deleted_cmd_handle_is_enoent)
{
	struct npu_bo bo;
	uint32_t h;

	ASSERT_EQ(0, npu_bo_new(self->fd, 4096, 0, &bo));
	h = bo.handle;
	npu_bo_free(self->fd, &bo);
	SUBMIT_EXPECT(-ENOENT, s.cmd_handle = h);
}

TEST_F(npu, submit_bad_cmd_size_is_einval)
{
	SUBMIT_EXPECT(-EINVAL, s.cmd_size = 0);
	SUBMIT_EXPECT(-EINVAL, s.cmd_size = 12);
	SUBMIT_EXPECT(-EINVAL, s.cmd_size = 4096 + 8);
	SUBMIT_EXPECT(-EINVAL, s.cmd_size = 0xfffffff8u);
}

TEST_F(npu, submit_misaligned_or_outside_cmd_offset_is_einval)
{
	SUBMIT_EXPECT(-EINVAL, s.cmd_offset = 4);
	SUBMIT_EXPECT(-EINVAL, s.cmd_offset = 4096);
	SUBMIT_EXPECT(-EINVAL, s.cmd_offset = 4096 - 8; s.cmd_size = 16);
	SUBMIT_EXPECT(-EINVAL, s.cmd_offset = 0xfffffff8u);
	/* 64-bit offsets: high bits are not dropped. */
	SUBMIT_EXPECT(-EINVAL, s.cmd_offset = 1ull << 32);
	SUBMIT_EXPECT(-EINVAL, s.cmd_offset = ~0ull - 7);
	SUBMIT_EXPECT(-EINVAL, s.cmd_offset = ~0ull - 7; s.cmd_size = 16);
}

TEST_F(npu, submit_bad_in_sync_size_is_einval)
{
	struct { struct drm_npu_sync sync; uint64_t tail; } in = { { 0 }, 0 };
	struct drm_npu_job_info info;
	struct drm_npu_submit s;

	in.sync.handle = npu_syncobj_new(self->fd);
	ASSERT_NE(0, in.sync.handle);
	SUBMIT_EXPECT(-EINVAL, s.in_syncs = (uintptr_t)&in; s.in_sync_count = 1;
		      s.in_sync_size = 0);
	SUBMIT_EXPECT(-EINVAL, s.in_syncs = (uintptr_t)&in; s.in_sync_count = 1;
		      s.in_sync_size = 8);
	SUBMIT_EXPECT(-EINVAL, s.in_syncs = (uintptr_t)&in; s.in_sync_count = 1;
		      s.in_sync_size = 20);
	SUBMIT_EXPECT(-EINVAL, s.in_syncs = (uintptr_t)&in; s.in_sync_count = 1;
		      s.in_sync_size = 8192);
	in.tail = 1;	/* a larger entry must have a zero tail */
	SUBMIT_EXPECT(-EINVAL, s.in_syncs = (uintptr_t)&in; s.in_sync_count = 1;
		      s.in_sync_size = sizeof(in));
	/* A zero tail is fine: a later kernel's larger entry. */
	in.tail = 0;
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 1);
	s.out_sync.handle = in.sync.handle;
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 1);
	s.in_syncs = (uintptr_t)&in;
	s.in_sync_count = 1;
	s.in_sync_size = sizeof(in);
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	ASSERT_EQ(0, npu_job_wait(self->fd, s.job_id, 10000, &info));
	EXPECT_EQ(NPU_JOB_OK, info.status);
	npu_syncobj_free(self->fd, in.sync.handle);
}

TEST_F(npu, submit_too_many_counts_is_e2big)
{
	struct drm_npu_bo_ref ref = { self->cmd.handle, DRM_NPU_BO_ACCESS_READ };
	struct drm_npu_sync sync = { 0 };

	SUBMIT_EXPECT(-E2BIG, s.bo_refs = (uintptr_t)&ref;
		      s.bo_ref_count = DRM_NPU_MAX_BO_REFS + 1);
	SUBMIT_EXPECT(-E2BIG, s.bo_refs = (uintptr_t)&ref; s.bo_ref_count = ~0u);
	SUBMIT_EXPECT(-E2BIG, s.in_syncs = (uintptr_t)&sync;
		      s.in_sync_count = DRM_NPU_MAX_SYNCS + 1);
	SUBMIT_EXPECT(-E2BIG, s.in_syncs = (uintptr_t)&sync; s.in_sync_count = ~0u);
}

/* The limits the parameters report are the ones SUBMIT enforces. */
TEST_F(npu, reported_limits_are_enforced)
{
	uint64_t max_refs = npu_param(self->fd, DRM_NPU_PARAM_MAX_BO_REFS);
	uint64_t max_syncs = npu_param(self->fd, DRM_NPU_PARAM_MAX_SYNCS);
	uint64_t max_size = npu_param(self->fd, DRM_NPU_PARAM_MAX_BO_REF_SIZE);
	uint64_t max_cmd = npu_param(self->fd, DRM_NPU_PARAM_MAX_CMD_SIZE);
	uint64_t buf[2] = { 0 };

	SUBMIT_EXPECT(-E2BIG, s.bo_refs = (uintptr_t)buf;
		      s.bo_ref_count = max_refs + 1);
	SUBMIT_EXPECT(-E2BIG, s.in_syncs = (uintptr_t)buf;
		      s.in_sync_count = max_syncs + 1);
	SUBMIT_EXPECT(-EINVAL, s.bo_refs = (uintptr_t)buf; s.bo_ref_count = 1;
		      s.bo_ref_size = max_size + 8);
	SUBMIT_EXPECT(-EINVAL, s.cmd_size = max_cmd + 8);
}

TEST_F(npu, submit_null_pointers_are_efault)
{
	SUBMIT_EXPECT(-EFAULT, s.bo_ref_count = 1);
	SUBMIT_EXPECT(-EFAULT, s.in_sync_count = 1);
}

TEST_F(npu, submit_unmapped_pointers_are_efault)
{
	SUBMIT_EXPECT(-EFAULT, s.bo_refs = 0x1000; s.bo_ref_count = 1);
	SUBMIT_EXPECT(-EFAULT, s.in_syncs = 0x1000; s.in_sync_count = 1);
}

TEST_F(npu, submit_unaligned_pointers_are_accepted)
{
	uint8_t refs_buf[sizeof(struct drm_npu_bo_ref) + 8];
	uint8_t syncs_buf[sizeof(struct drm_npu_sync) + 8];
	struct drm_npu_bo_ref ref = { self->cmd.handle, DRM_NPU_BO_ACCESS_READ };
	struct drm_npu_sync in = { 0 };
	struct drm_npu_submit s;
	struct drm_npu_job_info info;
	uint32_t sync = npu_syncobj_new(self->fd);

	ASSERT_NE(0, sync);
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 0);
	s.out_sync.handle = sync;
	ASSERT_EQ(0, npu_submit(self->fd, &s));

	/* Both arrays at an odd address. */
	memcpy(refs_buf + 1, &ref, sizeof(ref));
	in.handle = sync;
	memcpy(syncs_buf + 3, &in, sizeof(in));
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 1);
	s.bo_refs = (uintptr_t)(refs_buf + 1);
	s.bo_ref_count = 1;
	s.in_syncs = (uintptr_t)(syncs_buf + 3);
	s.in_sync_count = 1;
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	ASSERT_EQ(0, npu_job_wait(self->fd, s.job_id, 10000, &info));
	EXPECT_EQ(DRM_NPU_JOB_DONE, info.state);
	EXPECT_EQ(NPU_JOB_OK, info.status);
	npu_syncobj_free(self->fd, sync);
}

TEST_F(npu, submit_bad_bo_ref_size_is_einval)
{
	struct { struct drm_npu_bo_ref ref; uint64_t tail; } r = {
		{ self->cmd.handle, DRM_NPU_BO_ACCESS_READ }, 0 };

	SUBMIT_EXPECT(-EINVAL, s.bo_refs = (uintptr_t)&r; s.bo_ref_count = 1;
		      s.bo_ref_size = 0);
	SUBMIT_EXPECT(-EINVAL, s.bo_refs = (uintptr_t)&r; s.bo_ref_count = 1;
		      s.bo_ref_size = 4);
	SUBMIT_EXPECT(-EINVAL, s.bo_refs = (uintptr_t)&r; s.bo_ref_count = 1;
		      s.bo_ref_size = 1u << 20);
	r.tail = 1;	/* a larger entry must have a zero tail */
	SUBMIT_EXPECT(-EINVAL, s.bo_refs = (uintptr_t)&r; s.bo_ref_count = 1;
		      s.bo_ref_size = sizeof(r));
}

TEST_F(npu, submit_bad_bo_ref_fields)
{
	struct drm_npu_bo_ref r = { self->cmd.handle, 0 };

	SUBMIT_EXPECT(-EINVAL, s.bo_refs = (uintptr_t)&r; s.bo_ref_count = 1);
	r.access = 1u << 5;
	SUBMIT_EXPECT(-EINVAL, s.bo_refs = (uintptr_t)&r; s.bo_ref_count = 1);
	r.access = DRM_NPU_BO_ACCESS_READ;
	r.handle = 0xbad;
	SUBMIT_EXPECT(-ENOENT, s.bo_refs = (uintptr_t)&r; s.bo_ref_count = 1);
}

TEST_F(npu, submit_bad_in_sync_fields)
{
	struct drm_npu_sync in = { .handle = 0xbad };
	uint32_t h = npu_syncobj_new(self->fd);

	SUBMIT_EXPECT(-ENOENT, s.in_syncs = (uintptr_t)&in; s.in_sync_count = 1);
	in.handle = h;
	in.flags = 1;
	SUBMIT_EXPECT(-EINVAL, s.in_syncs = (uintptr_t)&in; s.in_sync_count = 1);
	npu_syncobj_free(self->fd, h);
}

TEST_F(npu, submit_bad_out_sync_fields)
{
	uint32_t h = npu_syncobj_new(self->fd);

	SUBMIT_EXPECT(-ENOENT, s.out_sync.handle = 0xbad);
	SUBMIT_EXPECT(-EINVAL, s.out_sync.handle = h; s.out_sync.flags = 1);
	SUBMIT_EXPECT(-EINVAL, s.out_sync.point = 5);
	npu_syncobj_free(self->fd, h);
}

/* ---- JOB_INFO ---- */

TEST_F(npu, job_info_unknown_id_is_enoent)
{
	struct drm_npu_job_info info;

	EXPECT_EQ(-ENOENT, npu_job_info(self->fd, 0, &info));
	EXPECT_EQ(-ENOENT, npu_job_info(self->fd, 1ull << 40, &info));
}

TEST_F(npu, job_info_nonzero_flags_reserved_is_einval)
{
	struct drm_npu_submit s;
	struct drm_npu_job_info info = { 0 };

	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 0);
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	info.job_id = s.job_id;
	info.flags = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_INFO, &info));
	info.flags = 0;
	info.reserved = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_INFO, &info));
}

TEST_F(npu, job_wait_bad_flags_pad_or_id)
{
	struct drm_npu_submit s;
	struct drm_npu_job_wait w = { 0 };

	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 0);
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	w.job_id = s.job_id;
	w.flags = 1u << 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w));
	/* Version 1's relative flag is gone: absolute times only. */
	w.flags = 1u << 0;
	w.timeout_ns = 10000000000ll;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w));
	w.timeout_ns = 0;
	w.flags = 0;
	w.pad = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w));
	w.pad = 0;
	w.job_id = s.job_id + 1000;
	EXPECT_EQ(-ENOENT, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w));
	w.job_id = s.job_id;
	w.timeout_ns = npu_now_ns() + 10000000000ll;
	EXPECT_EQ(0, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w));
	EXPECT_EQ(DRM_NPU_JOB_DONE, w.state);
}

/*
 * The device's VA spaces are a documented limit: EBUSY beyond it, for
 * whichever ioctl needs one (root: no per-user limit).
 */
TEST_F(npu, va_spaces_beyond_the_device_are_ebusy)
{
	uint64_t max = npu_param(self->fd, DRM_NPU_PARAM_MAX_VMS);
	int fds[256], n = 0, err = 0, fd, i;

	ASSERT_LE(max, 200);
	while (n < 256) {
		fd = npu_open();
		if (fd < 0) {
			err = errno;
			break;
		}
		fds[n++] = fd;
	}
	EXPECT_EQ(EBUSY, err);
	/* This fixture's own file holds one VA space. */
	EXPECT_LE(n + 1, (int)max);
	EXPECT_GT(n, 0);
	fd = npu_open_bare();
	ASSERT_LE(0, fd);
	{
		struct drm_npu_bo_create c = { .size = 4096 };

		EXPECT_EQ(-EBUSY, npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c));
		EXPECT_EQ(-EBUSY, npu_context_new(fd, DRM_NPU_CONTEXT_PRIORITY_LOW));
	}
	close(fd);
	if (n > 0) {
		/* Closing a file frees its VA space at once (no jobs). */
		close(fds[--n]);
		fd = npu_open();
		EXPECT_GE(fd, 0);
		if (fd >= 0)
			fds[n++] = fd;
		fd = npu_open();
		EXPECT_EQ(-1, fd);
		EXPECT_EQ(EBUSY, errno);
		if (fd >= 0)
			close(fd);
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	fd = npu_open();
	EXPECT_GE(fd, 0);
	if (fd >= 0)
		close(fd);
}

TEST_F(npu, job_ids_are_per_file)
{
	struct drm_npu_submit s;
	struct drm_npu_job_info info;
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 0);
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	EXPECT_EQ(-ENOENT, npu_job_info(fd2, s.job_id, &info));
	close(fd2);
}

/* ---- fdinfo ---- */

/* <uint>, then optionally one space and one of @units ("" for none). */
static int fdinfo_uint_unit(const char *v, const char *const *units)
{
	char *end;

	if (*v < '0' || *v > '9')
		return 0;
	strtoull(v, &end, 10);
	if (!*end)
		return units[0] && !units[0][0];
	if (*end != ' ')
		return 0;
	for (; *units; units++)
		if (**units && !strcmp(end + 1, *units))
			return 1;
	return 0;
}

/* A <keystr>: no whitespace, no ':'. */
static int fdinfo_keystr(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (*k == ':' || *k == ' ' || *k == '\t')
			return 0;
	return 1;
}

/*
 * One drm-usage-stats line (Documentation/gpu/drm-usage-stats.rst, 6.12):
 * 1 if it follows the grammar of its key, or is a driver key ("npu-").
 */
static int fdinfo_line_ok(const char *key, const char *val, char *engines,
			  size_t engines_size)
{
	static const char *const ns[] = { "ns", NULL };
	static const char *const none[] = { "", NULL };
	static const char *const freq[] = { "Hz", "KHz", "MHz", NULL };
	static const char *const mem[] = { "", "KiB", "MiB", NULL };
	static const char *const regions[] = { "total-", "shared-", "resident-",
		"purgeable-", "active-", "memory-", NULL };
	const char *const *r;
	unsigned int a, b, c, d;
	char tail;

	if (!strncmp(key, "npu-", 4))
		return fdinfo_keystr(key + 4) && *val;
	if (strncmp(key, "drm-", 4))
		return 0;
	key += 4;
	if (!strcmp(key, "driver"))
		return !strcmp(val, "npu");
	if (!strcmp(key, "pdev"))
		return sscanf(val, "%4x:%2x:%2x.%1x%c", &a, &b, &c, &d, &tail) == 4;
	if (!strcmp(key, "client-id"))
		return fdinfo_uint_unit(val, none);
	if (!strcmp(key, "client-name"))
		return 1;
	if (!strncmp(key, "engine-capacity-", 16))
		return fdinfo_keystr(key + 16) && fdinfo_uint_unit(val, none) &&
		       strtoull(val, NULL, 10) > 0;
	if (!strncmp(key, "engine-", 7)) {
		if (!fdinfo_keystr(key + 7) || !fdinfo_uint_unit(val, ns))
			return 0;
		/* Remember it: cycles and maxfreq must name an engine. */
		strncat(engines, key + 7, engines_size - strlen(engines) - 2);
		strcat(engines, "/");
		return 1;
	}
	if (!strncmp(key, "cycles-", 7))
		return fdinfo_keystr(key + 7) && fdinfo_uint_unit(val, none);
	if (!strncmp(key, "total-cycles-", 13))
		return fdinfo_keystr(key + 13) && fdinfo_uint_unit(val, none);
	if (!strncmp(key, "maxfreq-", 8))
		return fdinfo_keystr(key + 8) && fdinfo_uint_unit(val, freq);
	for (r = regions; *r; r++)
		if (!strncmp(key, *r, strlen(*r)))
			return fdinfo_keystr(key + strlen(*r)) &&
			       fdinfo_uint_unit(val, mem);
	return 0;
}

/*
 * /proc/self/fdinfo/<fd> has only drm-usage-stats keys, each with the
 * value grammar of its key, and driver keys prefixed "npu-"; engines
 * named in drm-cycles-/drm-maxfreq- keys have a drm-engine- key.
 * Checked on a file with no VA space, one with jobs, and the fixture's.
 */
TEST_F(npu, fdinfo_keys_follow_drm_usage_stats)
{
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	int bare = npu_open_bare(), busy = npu_open(), k;
	int fds[3] = { bare, busy, self->fd };
	struct npu_bo cmd;
	struct npu_cs cs;

	ASSERT_LE(0, bare);
	ASSERT_LE(0, busy);
	ASSERT_EQ(0, npu_bo_new(busy, 4096, 0, &cmd));
	npu_cs_begin(&cs);
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
	ASSERT_EQ(0, npu_submit(busy, &s));
	ASSERT_EQ(0, npu_job_wait(busy, s.job_id, 10000, &info));

	for (k = 0; k < 3; k++) {
		char path[64], line[512], engines[512] = "/", name[128];
		int drm_keys = 0, has_driver = 0, has_engine = 0, vm = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fds[k]);
		f = fopen(path, "r");
		ASSERT_NE(NULL, f);
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':'), *val;

			line[strcspn(line, "\n")] = 0;
			ASSERT_NE(NULL, colon) TH_LOG("no ':' in \"%s\"", line);
			*colon = 0;
			val = colon + 1;
			val += strspn(val, " \t");
			/* The VFS's own lines come first. */
			if (!strcmp(line, "pos") || !strcmp(line, "flags") ||
			    !strcmp(line, "mnt_id") || !strcmp(line, "ino"))
				continue;
			EXPECT_TRUE(fdinfo_line_ok(line, val, engines, sizeof(engines)))
				TH_LOG("file %d: \"%s: %s\"", k, line, val);
			drm_keys++;
			has_driver |= !strcmp(line, "drm-driver");
			has_engine |= !strncmp(line, "drm-engine-", 11);
			if (!strcmp(line, "npu-vm-id"))
				vm = strcmp(val, "none") ? 1 : -1;
			if (!strcmp(line, "drm-engine-queue1") && k == 1)
				EXPECT_LT(0, strtoull(val, NULL, 10));
		}
		fclose(f);
		EXPECT_TRUE(has_driver);
		EXPECT_TRUE(has_engine);
		EXPECT_LT(3, drm_keys);
		EXPECT_EQ(k == 0 ? -1 : 1, vm);
		/* Each cycles-/maxfreq- engine has an engine- key. */
		f = fopen(path, "r");
		ASSERT_NE(NULL, f);
		while (fgets(line, sizeof(line), f)) {
			const char *e = NULL;

			if (!strncmp(line, "drm-cycles-", 11))
				e = line + 11;
			else if (!strncmp(line, "drm-maxfreq-", 12))
				e = line + 12;
			else if (!strncmp(line, "drm-total-cycles-", 17))
				e = line + 17;
			if (!e)
				continue;
			snprintf(name, sizeof(name), "/%.*s/",
				 (int)strcspn(e, ":"), e);
			EXPECT_NE(NULL, strstr(engines, name)) TH_LOG("%s", line);
		}
		fclose(f);
	}
	npu_bo_free(busy, &cmd);
	close(busy);
	close(bare);
}

/*
 * BO_CREATE with its n-th kernel allocation failing, for every n
 * (/proc/thread-self/fail-nth, failslab with GFP_KERNEL allowed): each
 * failure returns an error and leaves the BO count in debugfs where it
 * was. The shmem helper kfree()s a half-made object without .free, so a
 * count taken in gem_create_object leaked once per such failure.
 */
TEST(bo_create_failing_at_each_allocation_keeps_the_bo_count)
{
	const char *nth = "/proc/thread-self/fail-nth";
	const char *gfp = "/sys/kernel/debug/failslab/ignore-gfp-wait";
	long long before, now = -1;
	int fd, nfd, n, injected = 0, i;
	char buf[16];

	if (access(nth, W_OK) || access(gfp, W_OK))
		SKIP(return, "no fail-nth / failslab (kernel without FAULT_INJECTION)");
	fd = npu_open();
	if (fd < 0)
		SKIP(return, "no device");
	if (!npu_debugfs_dir()) {
		close(fd);
		SKIP(return, "no debugfs");
	}
	before = npu_counter("bos");
	/* Opened once: an open() while fail-nth counts could fail itself. */
	nfd = open(nth, O_RDWR);
	ASSERT_LE(0, nfd);
	ASSERT_EQ(0, npu_write_file(gfp, "N"));
	for (n = 1; n < 4000; n++) {
		struct drm_npu_bo_create c = { .size = 8192 };
		int ret, len;

		len = snprintf(buf, sizeof(buf), "%d", n);
		ASSERT_EQ(len, pwrite(nfd, buf, len, 0));
		ret = ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c) ? -errno : 0;
		/* 0 left in fail-nth: the n-th site failed. */
		memset(buf, 0, sizeof(buf));
		len = pread(nfd, buf, sizeof(buf) - 1, 0);
		pwrite(nfd, "0", 1, 0);
		ASSERT_LT(0, len);
		if (!ret)
			npu_gem_close(fd, c.handle);
		if (atoi(buf) != 0)
			break;	/* no n-th site: every one has failed once */
		injected++;
	}
	close(nfd);
	npu_write_file(gfp, "Y");
	close(fd);
	TH_LOG("%d allocation sites of BO_CREATE failed in turn", injected);
	EXPECT_LT(0, injected);
	for (i = 0; i < 300; i++) {
		now = npu_counter("bos");
		if (now == before)
			break;
		usleep(10000);
	}
	EXPECT_EQ(before, now);
}

TEST_HARNESS_MAIN
