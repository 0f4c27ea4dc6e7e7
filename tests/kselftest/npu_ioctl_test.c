// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every ioctl's positive path and every field's negative path, each with
 * the errno the ABI (uapi/drm/npu_accel.h) promises.
 */
#include "npu_test.h"
#include "kselftest_harness.h"

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
	EXPECT_LT(npu_param(self->fd, DRM_NPU_PARAM_CONTEXT_ID), NPU_NUM_CONTEXTS);
	EXPECT_NE(0, npu_param(self->fd, DRM_NPU_PARAM_FW_VERSION));
	EXPECT_EQ(NPU_MAC_ROWS << 16 | NPU_MAC_COLS,
		  npu_param(self->fd, DRM_NPU_PARAM_MAC_SHAPE));
}

TEST_F(npu, get_param_reports_limits_and_features)
{
	uint64_t features = npu_param(self->fd, DRM_NPU_PARAM_FEATURES);

	EXPECT_NE(~0ull, features);
	EXPECT_TRUE(features & DRM_NPU_FEATURE_URING_SUBMIT);
	EXPECT_TRUE(features & DRM_NPU_FEATURE_TIMELINE_SYNCOBJ);
	EXPECT_TRUE(features & DRM_NPU_FEATURE_JOB_WAIT);
	EXPECT_TRUE(features & DRM_NPU_FEATURE_UNALIGNED_ARRAYS);
	EXPECT_TRUE(features & DRM_NPU_FEATURE_TIMELINE_DEP_ERRORS);
	EXPECT_EQ(DRM_NPU_MAX_BO_REFS,
		  npu_param(self->fd, DRM_NPU_PARAM_MAX_BO_REFS));
	EXPECT_EQ(DRM_NPU_MAX_SYNCS, npu_param(self->fd, DRM_NPU_PARAM_MAX_SYNCS));
	EXPECT_EQ(4096, npu_param(self->fd, DRM_NPU_PARAM_MAX_BO_REF_SIZE));
	EXPECT_EQ(NPU_CS_MAX_SIZE, npu_param(self->fd, DRM_NPU_PARAM_MAX_CMD_SIZE));
	EXPECT_EQ(NPU_NUM_CONTEXTS,
		  npu_param(self->fd, DRM_NPU_PARAM_MAX_CONTEXTS));
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

TEST_F(npu, contexts_have_distinct_ids)
{
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	EXPECT_NE(npu_param(self->fd, DRM_NPU_PARAM_CONTEXT_ID),
		  npu_param(fd2, DRM_NPU_PARAM_CONTEXT_ID));
	close(fd2);
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

#define SUBMIT_EXPECT(err, field_setup) do {				\
	struct drm_npu_submit s;					\
	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 0);	\
	field_setup;							\
	EXPECT_EQ(err, npu_submit(self->fd, &s));			\
} while (0)

TEST_F(npu, submit_unknown_flags_is_einval)
{
	SUBMIT_EXPECT(-EINVAL, s.flags = 1);
	SUBMIT_EXPECT(-EINVAL, s.flags = 1u << 31);
}

TEST_F(npu, submit_nonzero_reserved_is_einval)
{
	SUBMIT_EXPECT(-EINVAL, s.reserved = 1);
}

TEST_F(npu, submit_queue_out_of_range_is_einval)
{
	SUBMIT_EXPECT(-EINVAL, s.queue = NPU_NUM_QUEUES);
	SUBMIT_EXPECT(-EINVAL, s.queue = ~0u);
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
	EXPECT_TRUE(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
		    DRM_NPU_FEATURE_UNALIGNED_ARRAYS);
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

TEST_F(npu, job_info_nonzero_flags_pad_reserved_is_einval)
{
	struct drm_npu_submit s;
	struct drm_npu_job_info info = { 0 };

	npu_submit_init(&s, self->cmd.handle, self->cmd_size, 0);
	ASSERT_EQ(0, npu_submit(self->fd, &s));
	info.job_id = s.job_id;
	info.flags = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_INFO, &info));
	info.flags = 0;
	info.pad = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_INFO, &info));
	info.pad = 0;
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
	w.flags = 0;
	w.pad = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w));
	w.pad = 0;
	w.job_id = s.job_id + 1000;
	EXPECT_EQ(-ENOENT, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w));
	w.job_id = s.job_id;
	w.timeout_ns = 10000000000ll;
	w.flags = DRM_NPU_JOB_WAIT_RELATIVE;
	EXPECT_EQ(0, npu_ioctl(self->fd, DRM_IOCTL_NPU_JOB_WAIT, &w));
	EXPECT_EQ(DRM_NPU_JOB_DONE, w.state);
}

/* The device's contexts are a documented limit: EBUSY beyond it. */
TEST_F(npu, open_beyond_the_device_contexts_is_ebusy)
{
	uint64_t max = npu_param(self->fd, DRM_NPU_PARAM_MAX_CONTEXTS);
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
	/* This fixture's own file holds one context. */
	EXPECT_LE(n + 1, (int)max);
	EXPECT_GT(n, 0);
	if (n > 0) {
		/* Closing a file frees its context at once (no jobs). */
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

/* Write a string to a file; 0 or -errno. */
static int write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, val, strlen(val)) < 0 ? -errno : 0;
	close(fd);
	return ret;
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
	ASSERT_EQ(0, write_str(gfp, "N"));
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
	write_str(gfp, "Y");
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
