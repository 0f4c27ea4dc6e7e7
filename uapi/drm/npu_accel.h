/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * npu_accel.h - the kernel ABI of the npu DRM accel driver.
 *
 * Device node: /dev/accel/accelN. Every open file is one device context
 * with its own device page tables and VA space. The device has
 * DRM_NPU_PARAM_MAX_CONTEXTS (64) contexts: open() fails with EBUSY while
 * all are in use (a context lives until its file is closed and its last
 * job has retired). Buffers are GEM objects:
 * DRM_IOCTL_GEM_CLOSE frees them, DRM_IOCTL_PRIME_HANDLE_TO_FD /
 * FD_TO_HANDLE share them as dma-bufs (an imported buffer is mapped into
 * the importer's VA space), DRM_IOCTL_SYNCOBJ_* give fences. This header
 * adds only what those do not cover.
 *
 * Rules for every struct below: fields marked "in" are read, "out" are
 * written; pad and reserved fields must be zero (-EINVAL otherwise);
 * unknown flag bits are rejected with -EINVAL. Structs grow only at their
 * end; the DRM core zero-fills the part an older binary does not pass.
 */
#ifndef _UAPI_DRM_NPU_ACCEL_H_
#define _UAPI_DRM_NPU_ACCEL_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_NPU_GET_PARAM	0x00
#define DRM_NPU_BO_CREATE	0x01
#define DRM_NPU_BO_INFO		0x02
#define DRM_NPU_SUBMIT		0x03
#define DRM_NPU_JOB_INFO	0x04
#define DRM_NPU_JOB_WAIT	0x05

#define DRM_IOCTL_NPU_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_GET_PARAM, struct drm_npu_get_param)
#define DRM_IOCTL_NPU_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_CREATE, struct drm_npu_bo_create)
#define DRM_IOCTL_NPU_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_INFO, struct drm_npu_bo_info)
#define DRM_IOCTL_NPU_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_SUBMIT, struct drm_npu_submit)
#define DRM_IOCTL_NPU_JOB_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_JOB_INFO, struct drm_npu_job_info)
#define DRM_IOCTL_NPU_JOB_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_JOB_WAIT, struct drm_npu_job_wait)

/**
 * enum drm_npu_param - what DRM_IOCTL_NPU_GET_PARAM can report
 *
 * @DRM_NPU_PARAM_DEVICE_ID: PCI device id.
 * @DRM_NPU_PARAM_HW_VERSION: NPU_REG_HW_VERSION (major << 16 | minor).
 * @DRM_NPU_PARAM_ISA_VERSION: command-stream ISA version, same encoding.
 * @DRM_NPU_PARAM_FW_VERSION: version of the booted firmware image.
 * @DRM_NPU_PARAM_CAPS: NPU_CAP_* bits of the hardware contract.
 * @DRM_NPU_PARAM_OP_MASK: opcodes the device executes (NPU_OP_BIT()).
 * @DRM_NPU_PARAM_NUM_QUEUES: hardware queues; index 0 has top priority.
 * @DRM_NPU_PARAM_MAC_SHAPE: MAC array, rows << 16 | cols.
 * @DRM_NPU_PARAM_SRAM_SIZE: on-chip SRAM bytes.
 * @DRM_NPU_PARAM_CLOCK_MHZ: clock that modeled cycles refer to.
 * @DRM_NPU_PARAM_DMA_BYTES_PER_CYCLE: modeled DMA bandwidth.
 * @DRM_NPU_PARAM_VA_START: first device VA handed out to this context.
 * @DRM_NPU_PARAM_VA_END: end (exclusive) of this context's VA range.
 * @DRM_NPU_PARAM_CONTEXT_ID: this file's hardware context id.
 * @DRM_NPU_PARAM_RESET_COUNT: device resets since probe.
 * @DRM_NPU_PARAM_DEVICE_TIME_NS: the device clock now.
 * @DRM_NPU_PARAM_FEATURES: DRM_NPU_FEATURE_* bits this driver implements.
 *                          A kernel without this parameter fails it with
 *                          -EINVAL: treat that as no feature bits.
 * @DRM_NPU_PARAM_MAX_BO_REFS: most &struct drm_npu_submit.bo_ref_count.
 * @DRM_NPU_PARAM_MAX_SYNCS: most &struct drm_npu_submit.in_sync_count.
 * @DRM_NPU_PARAM_MAX_BO_REF_SIZE: largest &struct drm_npu_submit.bo_ref_size.
 * @DRM_NPU_PARAM_MAX_CMD_SIZE: largest &struct drm_npu_submit.cmd_size.
 * @DRM_NPU_PARAM_MAX_QUEUED_JOBS: jobs a context may have submitted and
 *                                 not yet retired; SUBMIT fails with -EBUSY
 *                                 beyond it.
 * @DRM_NPU_PARAM_MAX_CONTEXTS: contexts (open files) of the whole device;
 *                              opening one more fails with -EBUSY.
 * @DRM_NPU_PARAM_JOB_HISTORY: how many of a file's last jobs JOB_INFO and
 *                             JOB_WAIT still know.
 */
enum drm_npu_param {
	DRM_NPU_PARAM_DEVICE_ID = 0,
	DRM_NPU_PARAM_HW_VERSION = 1,
	DRM_NPU_PARAM_ISA_VERSION = 2,
	DRM_NPU_PARAM_FW_VERSION = 3,
	DRM_NPU_PARAM_CAPS = 4,
	DRM_NPU_PARAM_OP_MASK = 5,
	DRM_NPU_PARAM_NUM_QUEUES = 6,
	DRM_NPU_PARAM_MAC_SHAPE = 7,
	DRM_NPU_PARAM_SRAM_SIZE = 8,
	DRM_NPU_PARAM_CLOCK_MHZ = 9,
	DRM_NPU_PARAM_DMA_BYTES_PER_CYCLE = 10,
	DRM_NPU_PARAM_VA_START = 11,
	DRM_NPU_PARAM_VA_END = 12,
	DRM_NPU_PARAM_CONTEXT_ID = 13,
	DRM_NPU_PARAM_RESET_COUNT = 14,
	DRM_NPU_PARAM_DEVICE_TIME_NS = 15,
	DRM_NPU_PARAM_FEATURES = 16,
	DRM_NPU_PARAM_MAX_BO_REFS = 17,
	DRM_NPU_PARAM_MAX_SYNCS = 18,
	DRM_NPU_PARAM_MAX_BO_REF_SIZE = 19,
	DRM_NPU_PARAM_MAX_CMD_SIZE = 20,
	DRM_NPU_PARAM_MAX_QUEUED_JOBS = 21,
	DRM_NPU_PARAM_MAX_CONTEXTS = 22,
	DRM_NPU_PARAM_JOB_HISTORY = 23,
};

/*
 * Bits of DRM_NPU_PARAM_FEATURES.
 * URING_SUBMIT: DRM_NPU_URING_CMD_SUBMIT works on the device file.
 * TIMELINE_SYNCOBJ: in and out syncs take timeline points.
 * JOB_WAIT: DRM_IOCTL_NPU_JOB_WAIT exists.
 * UNALIGNED_ARRAYS: &struct drm_npu_submit.bo_refs and .in_syncs may have
 *                   any alignment (older kernels wanted 8 bytes).
 * TIMELINE_DEP_ERRORS: a failed fence behind a timeline in-sync point
 *                      cancels the job, as a binary syncobj's does.
 */
#define DRM_NPU_FEATURE_URING_SUBMIT		(1ull << 0)
#define DRM_NPU_FEATURE_TIMELINE_SYNCOBJ	(1ull << 1)
#define DRM_NPU_FEATURE_JOB_WAIT		(1ull << 2)
#define DRM_NPU_FEATURE_UNALIGNED_ARRAYS	(1ull << 3)
#define DRM_NPU_FEATURE_TIMELINE_DEP_ERRORS	(1ull << 4)

/**
 * struct drm_npu_get_param - query one device or context parameter
 * @param: in, enum drm_npu_param; unknown values fail with -EINVAL.
 * @pad: must be zero.
 * @value: out, the parameter's value.
 */
struct drm_npu_get_param {
	__u32 param;
	__u32 pad;
	__u64 value;
};

/* The device maps the buffer read-only: device writes to it fault. */
#define DRM_NPU_BO_DEVICE_READ_ONLY	(1 << 0)
#define DRM_NPU_BO_FLAGS		DRM_NPU_BO_DEVICE_READ_ONLY

/**
 * struct drm_npu_bo_create - allocate a shmem-backed buffer
 * @size: in, bytes; rounded up to the 4 KiB page size; 0 or larger than
 *        the context's free VA space fails with -EINVAL / -ENOSPC.
 * @flags: in, DRM_NPU_BO_*.
 * @handle: out, GEM handle.
 * @va: out, device virtual address in this file's context.
 */
struct drm_npu_bo_create {
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 va;
};

/**
 * struct drm_npu_bo_info - where a buffer is
 * @handle: in, a GEM handle of this file (created or PRIME-imported).
 * @flags: in, must be zero.
 * @mmap_offset: out, offset to pass to mmap() on the device file.
 * @va: out, device virtual address in this file's context.
 * @size: out, bytes.
 */
struct drm_npu_bo_info {
	__u32 handle;
	__u32 flags;
	__u64 mmap_offset;
	__u64 va;
	__u64 size;
};

/* Access bits of a &struct drm_npu_bo_ref, for implicit synchronization. */
#define DRM_NPU_BO_ACCESS_READ		(1 << 0)
#define DRM_NPU_BO_ACCESS_WRITE		(1 << 1)

/**
 * struct drm_npu_bo_ref - a buffer a job uses
 * @handle: in, GEM handle.
 * @access: in, DRM_NPU_BO_ACCESS_* (at least one bit). The job waits for
 *          earlier writers (READ) or for all earlier users (WRITE) of the
 *          buffer's reservation, and is added to it as reader or writer.
 */
struct drm_npu_bo_ref {
	__u32 handle;
	__u32 access;
};

/**
 * struct drm_npu_sync - a syncobj a job waits on or signals
 * @handle: in, syncobj handle.
 * @flags: in, must be zero.
 * @point: in, timeline point, or 0 for a binary syncobj.
 */
struct drm_npu_sync {
	__u32 handle;
	__u32 flags;
	__u64 point;
};

#define DRM_NPU_MAX_BO_REFS		1024
#define DRM_NPU_MAX_SYNCS		64

/**
 * struct drm_npu_submit - queue one job
 * @cmd_handle: in, GEM handle of the buffer holding the command stream.
 * @cmd_offset: in, byte offset of the stream in it, 8-byte aligned.
 * @cmd_size: in, stream bytes, a non-zero multiple of 8; offset + size must
 *            lie inside the buffer.
 * @queue: in, hardware queue, < DRM_NPU_PARAM_NUM_QUEUES; queue 0 runs
 *         first when both have work (strict priority), so submitting to
 *         it needs CAP_SYS_NICE or DRM master, else -EACCES.
 * @flags: in, must be zero.
 * @bo_refs: in, user pointer to @bo_ref_count entries of @bo_ref_size
 *           bytes each (sizeof(struct drm_npu_bo_ref) today); any
 *           alignment. A buffer listed more than once is used once, with
 *           the union of its access bits.
 * @bo_ref_count: in, at most DRM_NPU_MAX_BO_REFS. The command buffer is
 *                always used for reading and need not be listed.
 * @bo_ref_size: in, size of one entry; smaller than the kernel's struct
 *               is -EINVAL, larger must have zero tail bytes.
 * @in_syncs: in, user pointer to @in_sync_count &struct drm_npu_sync the
 *            job waits for; any alignment. If one of their fences ends in
 *            an error (for a timeline point: the fence at that point), the
 *            job does not run and ends CANCELED.
 * @in_sync_count: in, at most DRM_NPU_MAX_SYNCS.
 * @out_sync: in, &struct drm_npu_sync signalled when the job ends (handle
 *            0: none).
 * @job_id: out, id for DRM_IOCTL_NPU_JOB_INFO, unique in this file.
 * @reserved: must be zero.
 *
 * Errors: -ENOENT for an unknown handle, -EINVAL for a malformed field,
 * -EFAULT for an unreadable pointer, -E2BIG for counts over the limits,
 * -ECANCELED when this context was banned after a device hang, -EACCES
 * for queue 0 without the privilege above, -ENODEV once the device is
 * gone (unbound), -EBUSY
 * when the context already has DRM_NPU_PARAM_MAX_QUEUED_JOBS jobs that
 * are not retired (a job retires shortly after its out fence signals).
 */
struct drm_npu_submit {
	__u32 cmd_handle;
	__u32 cmd_offset;
	__u32 cmd_size;
	__u32 queue;
	__u32 flags;
	__u32 bo_ref_count;
	__u64 bo_refs;
	__u32 bo_ref_size;
	__u32 in_sync_count;
	__u64 in_syncs;
	struct drm_npu_sync out_sync;
	__u64 job_id;
	__u64 reserved;
};

/**
 * enum drm_npu_job_state - where a job is
 * @DRM_NPU_JOB_QUEUED: waiting for dependencies or the device.
 * @DRM_NPU_JOB_RUNNING: handed to the device.
 * @DRM_NPU_JOB_DONE: completed; see @status of &struct drm_npu_job_info.
 *                    A job a device reset stopped on the engine (not its
 *                    fault) is DONE with NPU_JOB_ERR_ABORTED and is never
 *                    run again; jobs that had not started run after the
 *                    reset as if nothing happened.
 * @DRM_NPU_JOB_CANCELED: never ran to completion (reset, ban or error in a
 *                        dependency).
 */
enum drm_npu_job_state {
	DRM_NPU_JOB_QUEUED = 0,
	DRM_NPU_JOB_RUNNING = 1,
	DRM_NPU_JOB_DONE = 2,
	DRM_NPU_JOB_CANCELED = 3,
};

/**
 * struct drm_npu_job_info - a job's outcome
 * @job_id: in, from &struct drm_npu_submit; the kernel keeps the last
 *          4096 jobs of a file, older ids fail with -ENOENT.
 * @flags: in, must be zero.
 * @state: out, enum drm_npu_job_state.
 * @status: out, the device's enum npu_job_status (npu_hw.h) once DONE.
 * @error_offset: out, byte offset of the failing instruction.
 * @queue: out, the hardware queue it ran on.
 * @pad: in, must be zero (-EINVAL otherwise); left zero on return.
 * @fault_addr: out, faulting device VA for NPU_JOB_ERR_MMU_*.
 * @submit_ns: out, device clock when the job was submitted.
 * @start_ns: out, device clock when it started running.
 * @end_ns: out, device clock when it ended.
 * @cycles: out, modeled device cycles.
 * @macs: out, int8 multiply-accumulates executed.
 * @reserved: must be zero.
 */
struct drm_npu_job_info {
	__u64 job_id;
	__u32 flags;
	__u32 state;
	__u32 status;
	__u32 error_offset;
	__u32 queue;
	__u32 pad;
	__u64 fault_addr;
	__u64 submit_ns;
	__u64 start_ns;
	__u64 end_ns;
	__u64 cycles;
	__u64 macs;
	__u64 reserved;
};

/* Flags of &struct drm_npu_job_wait. */
#define DRM_NPU_JOB_WAIT_RELATIVE	(1 << 0)
#define DRM_NPU_JOB_WAIT_FLAGS		DRM_NPU_JOB_WAIT_RELATIVE

/**
 * struct drm_npu_job_wait - wait until a job has ended
 * @job_id: in, from &struct drm_npu_submit; one of the file's last
 *          DRM_NPU_PARAM_JOB_HISTORY jobs, else -ENOENT.
 * @timeout_ns: in, CLOCK_MONOTONIC time to give up at (as
 *              DRM_IOCTL_SYNCOBJ_WAIT), or with DRM_NPU_JOB_WAIT_RELATIVE
 *              nanoseconds from now; a time already passed (0) only polls.
 *              A wait restarted after a signal keeps an absolute time but
 *              starts a relative one over.
 * @flags: in, DRM_NPU_JOB_WAIT_*.
 * @state: out, enum drm_npu_job_state: DONE or CANCELED once the job has
 *         ended, QUEUED or RUNNING with -ETIME.
 * @status: out, as &struct drm_npu_job_info.status.
 * @pad: must be zero.
 *
 * Returns 0 once the job has ended (its outcome is in @state and @status,
 * the rest is in DRM_IOCTL_NPU_JOB_INFO), -ETIME when the timeout passed
 * first, -EINTR / -ERESTARTSYS on a signal.
 */
struct drm_npu_job_wait {
	__u64 job_id;
	__s64 timeout_ns;
	__u32 flags;
	__u32 state;
	__u32 status;
	__u32 pad;
};

/*
 * io_uring: IORING_OP_URING_CMD on the device file with cmd_op
 * DRM_NPU_URING_CMD_SUBMIT and &struct drm_npu_uring_submit in the SQE's
 * command area (a plain 64-byte SQE is enough). The CQE is posted when the
 * job ends: res is the job's enum npu_job_status (0 = success, > 0 = device
 * error) or a negative errno if it could not be submitted or was canceled;
 * with IORING_SETUP_CQE32, big_cqe[0] holds the job id.
 */
#define DRM_NPU_URING_CMD_SUBMIT	0x4e01

/**
 * struct drm_npu_uring_submit - the SQE command area of a uring submit
 * @submit: in, user pointer to a &struct drm_npu_submit (its @job_id is
 *          written before the SQE completes submission).
 * @flags: in, must be zero.
 * @pad: must be zero.
 */
struct drm_npu_uring_submit {
	__u64 submit;
	__u32 flags;
	__u32 pad;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_DRM_NPU_ACCEL_H_ */
