/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * npu_accel.h - the kernel ABI of the npu DRM accel driver.
 *
 * Device node: /dev/accel/accelN. Every open file has its own device VA
 * space (created at first need, see "VA spaces" below) and submits jobs
 * to contexts it creates with DRM_IOCTL_NPU_CONTEXT_CREATE. A program
 * needs only this header and libdrm. Buffers are GEM objects:
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

/*
 * Version 2 of this ABI (drm_version.version_major == 2). Ioctl numbers of
 * version 1 whose struct changed are retired (they fail with -EINVAL), so
 * a version 1 binary never has its struct misread; Documentation/uapi.md
 * lists what changed.
 */
#define DRM_NPU_ABI_MAJOR	2

#define DRM_NPU_GET_PARAM	0x00
#define DRM_NPU_BO_CREATE	0x01
#define DRM_NPU_BO_INFO		0x02
/* 0x03 (version 1 SUBMIT) and 0x04 (version 1 JOB_INFO) are retired. */
#define DRM_NPU_JOB_WAIT	0x05
#define DRM_NPU_SUBMIT		0x06
#define DRM_NPU_JOB_INFO	0x07
#define DRM_NPU_CONTEXT_CREATE	0x08
#define DRM_NPU_CONTEXT_DESTROY	0x09

#define DRM_IOCTL_NPU_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_GET_PARAM, struct drm_npu_get_param)
#define DRM_IOCTL_NPU_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_CREATE, struct drm_npu_bo_create)
#define DRM_IOCTL_NPU_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_INFO, struct drm_npu_bo_info)
#define DRM_IOCTL_NPU_JOB_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_JOB_WAIT, struct drm_npu_job_wait)
#define DRM_IOCTL_NPU_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_SUBMIT, struct drm_npu_submit)
#define DRM_IOCTL_NPU_JOB_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_JOB_INFO, struct drm_npu_job_info)
#define DRM_IOCTL_NPU_CONTEXT_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_CONTEXT_CREATE, \
		 struct drm_npu_context_create)
#define DRM_IOCTL_NPU_CONTEXT_DESTROY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_CONTEXT_DESTROY, \
		 struct drm_npu_context_destroy)

/**
 * enum drm_npu_job_status - how a job ended on the device
 *
 * &struct drm_npu_job_info.status, &struct drm_npu_job_wait.status and
 * the result of a uring submit's CQE (>= 0). The values are the hardware
 * contract's (the driver checks that at build time).
 *
 * @DRM_NPU_JOB_STATUS_OK: ran to its end.
 * @DRM_NPU_JOB_STATUS_BAD_DESC: descriptor flags, reserved or size.
 * @DRM_NPU_JOB_STATUS_BAD_CONTEXT: context id or its entry invalid.
 * @DRM_NPU_JOB_STATUS_BAD_HEADER: stream magic or ISA major mismatch.
 * @DRM_NPU_JOB_STATUS_TRUNCATED: an instruction runs past the stream.
 * @DRM_NPU_JOB_STATUS_BAD_OPCODE: unknown or disabled opcode.
 * @DRM_NPU_JOB_STATUS_BAD_ENCODING: size field, reserved bits or flags.
 * @DRM_NPU_JOB_STATUS_BAD_PARAM: zero or huge dims, bad enum, overflow.
 * @DRM_NPU_JOB_STATUS_SRAM_BOUNDS: operand outside on-chip SRAM.
 * @DRM_NPU_JOB_STATUS_MMU_UNMAPPED: no valid translation for a VA.
 * @DRM_NPU_JOB_STATUS_MMU_PERM: the mapping lacks read or write.
 * @DRM_NPU_JOB_STATUS_DMA: host bus error on a translated address.
 * @DRM_NPU_JOB_STATUS_WATCHDOG: the job ran past its cycle budget.
 * @DRM_NPU_JOB_STATUS_HAZARD: engines raced on SRAM without SYNC.
 * @DRM_NPU_JOB_STATUS_ABORTED: a reset stopped it, or it never ran.
 */
enum drm_npu_job_status {
	DRM_NPU_JOB_STATUS_OK = 0,
	DRM_NPU_JOB_STATUS_BAD_DESC = 1,
	DRM_NPU_JOB_STATUS_BAD_CONTEXT = 2,
	DRM_NPU_JOB_STATUS_BAD_HEADER = 3,
	DRM_NPU_JOB_STATUS_TRUNCATED = 4,
	DRM_NPU_JOB_STATUS_BAD_OPCODE = 5,
	DRM_NPU_JOB_STATUS_BAD_ENCODING = 6,
	DRM_NPU_JOB_STATUS_BAD_PARAM = 7,
	DRM_NPU_JOB_STATUS_SRAM_BOUNDS = 8,
	DRM_NPU_JOB_STATUS_MMU_UNMAPPED = 9,
	DRM_NPU_JOB_STATUS_MMU_PERM = 10,
	DRM_NPU_JOB_STATUS_DMA = 11,
	DRM_NPU_JOB_STATUS_WATCHDOG = 12,
	DRM_NPU_JOB_STATUS_HAZARD = 13,
	DRM_NPU_JOB_STATUS_ABORTED = 14,
};

/*
 * Bits of DRM_NPU_PARAM_CAPS: what the device's MAC and DMA engines do.
 * The values are the hardware contract's NPU_CAP_* (checked at build).
 */
#define DRM_NPU_CAP_INT8		(1u << 0)	/* int8 tensors */
#define DRM_NPU_CAP_INT32_BIAS		(1u << 1)
#define DRM_NPU_CAP_PER_CHANNEL_QUANT	(1u << 2)
#define DRM_NPU_CAP_DEPTHWISE		(1u << 3)
#define DRM_NPU_CAP_DILATION		(1u << 4)
#define DRM_NPU_CAP_MMU			(1u << 5)
#define DRM_NPU_CAP_WATCHDOG		(1u << 6)
#define DRM_NPU_CAP_TIMESTAMP		(1u << 7)
#define DRM_NPU_CAP_ZERO_INSERT		(1u << 8)	/* ISA 1.1 */
#define DRM_NPU_CAP_RESIZE		(1u << 9)	/* ISA 1.1 */
#define DRM_NPU_CAP_INT16		(1u << 10)	/* ISA 1.2 */
#define DRM_NPU_CAP_OUT_LUT		(1u << 11)	/* ISA 1.4 */
#define DRM_NPU_CAP_ARRAY_MODES		(1u << 12)	/* ISA 1.5 */
#define DRM_NPU_CAP_SPARSE		(1u << 13)	/* ISA 1.6: N:M sparse weights, DMA codec */

/*
 * DRM_NPU_PARAM_OP_MASK: bit DRM_NPU_OP_BIT(opcode) is set when the device
 * executes that command-stream opcode (the values are the ISA's).
 */
#define DRM_NPU_OP_NOP			0x00
#define DRM_NPU_OP_DMA_COPY		0x01
#define DRM_NPU_OP_DMA_FILL		0x02
#define DRM_NPU_OP_CONV2D		0x10
#define DRM_NPU_OP_MATMUL		0x11
#define DRM_NPU_OP_POOL			0x12
#define DRM_NPU_OP_ELTWISE		0x13
#define DRM_NPU_OP_LUT			0x14
#define DRM_NPU_OP_RESIZE		0x15
#define DRM_NPU_OP_TIMESTAMP		0x20
#define DRM_NPU_OP_BARRIER		0x21
#define DRM_NPU_OP_SOFTMAX		0x30
#define DRM_NPU_OP_LAYERNORM		0x31
#define DRM_NPU_OP_REDUCE		0x32
#define DRM_NPU_OP_BIT(op)	(1u << ((((op) >> 4) * 8) + ((op) & 0xf)))

/**
 * enum drm_npu_param - what DRM_IOCTL_NPU_GET_PARAM can report
 *
 * @DRM_NPU_PARAM_DEVICE_ID: PCI device id.
 * @DRM_NPU_PARAM_HW_VERSION: hardware version (major << 16 | minor).
 * @DRM_NPU_PARAM_ISA_VERSION: command-stream ISA version, same encoding.
 * @DRM_NPU_PARAM_FW_VERSION: version of the booted firmware image.
 * @DRM_NPU_PARAM_CAPS: DRM_NPU_CAP_* bits.
 * @DRM_NPU_PARAM_OP_MASK: opcodes the device executes (DRM_NPU_OP_BIT()).
 * @DRM_NPU_PARAM_NUM_QUEUES: hardware queues (2): HIGH priority contexts
 *                            use queue 0, which runs first when both have
 *                            work; NORMAL and LOW ones queue 1.
 * @DRM_NPU_PARAM_MAC_SHAPE: MAC array, rows << 16 | cols.
 * @DRM_NPU_PARAM_SRAM_SIZE: on-chip SRAM bytes.
 * @DRM_NPU_PARAM_CLOCK_MHZ: clock that modeled cycles refer to.
 * @DRM_NPU_PARAM_DMA_BYTES_PER_CYCLE: modeled DMA bandwidth.
 * @DRM_NPU_PARAM_VA_START: first device VA handed out in a file's VA space.
 * @DRM_NPU_PARAM_VA_END: end (exclusive) of a file's VA range.
 * @DRM_NPU_PARAM_VM_ID: the device (MMU) context id of this file's VA
 *                       space; asking creates the VA space if the file
 *                       has none yet (see "VA spaces" below).
 * @DRM_NPU_PARAM_RESET_COUNT: device resets since probe.
 * @DRM_NPU_PARAM_DEVICE_TIME_NS: the device clock now.
 * @DRM_NPU_PARAM_FEATURES: DRM_NPU_FEATURE_* bits; none are defined in
 *                          version 2, which has all that version 1 added
 *                          over time. Reserved for later growth.
 * @DRM_NPU_PARAM_MAX_BO_REFS: most &struct drm_npu_submit.bo_ref_count.
 * @DRM_NPU_PARAM_MAX_SYNCS: most &struct drm_npu_submit.in_sync_count.
 * @DRM_NPU_PARAM_MAX_BO_REF_SIZE: largest &struct drm_npu_submit.bo_ref_size
 *                                 (and .in_sync_size).
 * @DRM_NPU_PARAM_MAX_CMD_SIZE: largest &struct drm_npu_submit.cmd_size.
 * @DRM_NPU_PARAM_MAX_QUEUED_JOBS: jobs a file may have submitted and not
 *                                 yet retired; SUBMIT fails with -EBUSY
 *                                 beyond it.
 * @DRM_NPU_PARAM_MAX_VMS: VA spaces of the whole device (64).
 * @DRM_NPU_PARAM_JOB_HISTORY: how many of a file's last jobs JOB_INFO and
 *                             JOB_WAIT still know.
 * @DRM_NPU_PARAM_MAX_VMS_PER_USER: VA spaces one user may hold (the
 *                                  max_vms_per_user module parameter;
 *                                  0: no limit). CAP_SYS_ADMIN is exempt.
 * @DRM_NPU_PARAM_MAX_FILE_CONTEXTS: contexts (CONTEXT_CREATE) one file
 *                                   may hold at once.
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
	DRM_NPU_PARAM_VM_ID = 13,
	DRM_NPU_PARAM_RESET_COUNT = 14,
	DRM_NPU_PARAM_DEVICE_TIME_NS = 15,
	DRM_NPU_PARAM_FEATURES = 16,
	DRM_NPU_PARAM_MAX_BO_REFS = 17,
	DRM_NPU_PARAM_MAX_SYNCS = 18,
	DRM_NPU_PARAM_MAX_BO_REF_SIZE = 19,
	DRM_NPU_PARAM_MAX_CMD_SIZE = 20,
	DRM_NPU_PARAM_MAX_QUEUED_JOBS = 21,
	DRM_NPU_PARAM_MAX_VMS = 22,
	DRM_NPU_PARAM_JOB_HISTORY = 23,
	DRM_NPU_PARAM_MAX_VMS_PER_USER = 24,
	DRM_NPU_PARAM_MAX_FILE_CONTEXTS = 25,
};

/**
 * struct drm_npu_get_param - query one device or file parameter
 * @param: in, enum drm_npu_param; unknown values fail with -EINVAL.
 * @pad: must be zero.
 * @value: out, the parameter's value.
 */
struct drm_npu_get_param {
	__u32 param;
	__u32 pad;
	__u64 value;
};

/*
 * VA spaces. Every open file gets its own device VA space (device page
 * tables, one of the device's DRM_NPU_PARAM_MAX_VMS hardware contexts) at
 * its first need: the first BO_CREATE, PRIME import, CONTEXT_CREATE or
 * DRM_NPU_PARAM_VM_ID query; a file that only asks parameters takes none.
 * Creating it fails with -EBUSY when all of the device's are in use, with
 * -EMFILE when the user making it (the effective uid of the calling
 * task) already holds DRM_NPU_PARAM_MAX_VMS_PER_USER of them (a task with
 * CAP_SYS_ADMIN is not counted). A VA space lives until its
 * file is closed and its last job has retired.
 */

/* The device maps the buffer read-only: device writes to it fault. */
#define DRM_NPU_BO_DEVICE_READ_ONLY	(1 << 0)
#define DRM_NPU_BO_FLAGS		DRM_NPU_BO_DEVICE_READ_ONLY

/**
 * struct drm_npu_bo_create - allocate a shmem-backed buffer
 * @size: in, bytes; rounded up to the 4 KiB page size; 0 or larger than
 *        the file's free VA space fails with -EINVAL / -ENOSPC.
 * @flags: in, DRM_NPU_BO_*.
 * @handle: out, GEM handle.
 * @va: out, device virtual address in this file's VA space.
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
 * @va: out, device virtual address in this file's VA space.
 * @size: out, bytes.
 */
struct drm_npu_bo_info {
	__u32 handle;
	__u32 flags;
	__u64 mmap_offset;
	__u64 va;
	__u64 size;
};

/**
 * enum drm_npu_context_priority - a context's share of the device
 * @DRM_NPU_CONTEXT_PRIORITY_LOW: hardware queue 1, after NORMAL contexts'
 *                                jobs that are ready at the same time.
 * @DRM_NPU_CONTEXT_PRIORITY_NORMAL: hardware queue 1.
 * @DRM_NPU_CONTEXT_PRIORITY_HIGH: hardware queue 0, which runs first
 *                                 whenever both queues have work: needs
 *                                 CAP_SYS_NICE or DRM master, else
 *                                 CONTEXT_CREATE fails with -EACCES.
 */
enum drm_npu_context_priority {
	DRM_NPU_CONTEXT_PRIORITY_LOW = 0,
	DRM_NPU_CONTEXT_PRIORITY_NORMAL = 1,
	DRM_NPU_CONTEXT_PRIORITY_HIGH = 2,
};

/**
 * struct drm_npu_context_create - a context jobs are submitted to
 * @priority: in, enum drm_npu_context_priority; others are -EINVAL.
 * @flags: in, must be zero.
 * @context_id: out, names the context in SUBMIT, JOB_INFO and DESTROY;
 *              unique among the file's live contexts, never 0.
 * @pad: must be zero.
 *
 * A context is an ordered stream of jobs in this file's VA space (created
 * here if the file has none yet, with that step's errors). A context whose
 * job hung the device is banned alone: its later submits fail with
 * -ECANCELED, its queued jobs are canceled; the file's other contexts go
 * on. Errors: -ENOSPC when the file already has
 * DRM_NPU_PARAM_MAX_FILE_CONTEXTS contexts, -EACCES for HIGH without the
 * privilege, -EBUSY / -EMFILE when no VA space can be created.
 */
struct drm_npu_context_create {
	__u32 priority;
	__u32 flags;
	__u32 context_id;
	__u32 pad;
};

/**
 * struct drm_npu_context_destroy - end a context
 * @context_id: in, from CONTEXT_CREATE; unknown or destroyed: -ENOENT.
 * @pad: must be zero.
 *
 * Waits (killable) until the context's queued jobs have gone to the
 * device; they run to their end and JOB_INFO keeps reporting them.
 */
struct drm_npu_context_destroy {
	__u32 context_id;
	__u32 pad;
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
 * @context_id: in, from DRM_IOCTL_NPU_CONTEXT_CREATE; unknown or destroyed
 *              is -ENOENT.
 * @cmd_offset: in, byte offset of the stream in the buffer, 8-byte
 *              aligned; 64 bits, as buffers can be larger than 4 GiB.
 * @cmd_size: in, stream bytes, a non-zero multiple of 8, at most
 *            DRM_NPU_PARAM_MAX_CMD_SIZE (64 MiB: 32 bits are enough);
 *            offset + size must lie inside the buffer.
 * @flags: in, must be zero.
 * @bo_refs: in, user pointer to @bo_ref_count entries of @bo_ref_size
 *           bytes each (sizeof(struct drm_npu_bo_ref) today); any
 *           alignment. A buffer listed more than once is used once, with
 *           the union of its access bits.
 * @bo_ref_count: in, at most DRM_NPU_MAX_BO_REFS. The command buffer is
 *                always used for reading and need not be listed.
 * @bo_ref_size: in, size of one entry, a multiple of 8; smaller than the
 *               kernel's struct or larger than
 *               DRM_NPU_PARAM_MAX_BO_REF_SIZE is -EINVAL, larger than the
 *               kernel's must have zero tail bytes.
 * @in_syncs: in, user pointer to @in_sync_count entries of @in_sync_size
 *            bytes each (&struct drm_npu_sync) the job waits for; any
 *            alignment. If one of their fences ends in an error (for a
 *            timeline point: the fence at that point), the job does not
 *            run and ends CANCELED.
 * @in_sync_count: in, at most DRM_NPU_MAX_SYNCS.
 * @in_sync_size: in, size of one entry, with the rules of @bo_ref_size.
 * @out_sync: in, &struct drm_npu_sync signalled when the job ends (handle
 *            0: none).
 * @job_id: out, id for JOB_INFO and JOB_WAIT, unique in this file.
 * @reserved: must be zero.
 *
 * Errors: -ENOENT for an unknown handle or context, -EINVAL for a
 * malformed field, -EFAULT for an unreadable pointer, -E2BIG for counts
 * over the limits, -ECANCELED when the context was banned after a device
 * hang, -ENODEV once the device is gone (unbound), -EBUSY when the file
 * already has DRM_NPU_PARAM_MAX_QUEUED_JOBS jobs that are not retired (a
 * job retires shortly after its out fence signals).
 */
struct drm_npu_submit {
	__u32 cmd_handle;
	__u32 context_id;
	__u64 cmd_offset;
	__u32 cmd_size;
	__u32 flags;
	__u64 bo_refs;
	__u32 bo_ref_count;
	__u32 bo_ref_size;
	__u64 in_syncs;
	__u32 in_sync_count;
	__u32 in_sync_size;
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
 *                    fault) is DONE with DRM_NPU_JOB_STATUS_ABORTED and is
 *                    never run again; jobs that had not started run after
 *                    the reset as if nothing happened.
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
 *          DRM_NPU_PARAM_JOB_HISTORY jobs of a file, older ids fail with
 *          -ENOENT.
 * @flags: in, must be zero.
 * @state: out, enum drm_npu_job_state.
 * @status: out, enum drm_npu_job_status once DONE.
 * @error_offset: out, byte offset of the failing instruction.
 * @context_id: out, the context it was submitted to.
 * @queue: out, the hardware queue it ran on.
 * @fault_addr: out, faulting device VA for DRM_NPU_JOB_STATUS_MMU_*.
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
	__u32 context_id;
	__u32 queue;
	__u64 fault_addr;
	__u64 submit_ns;
	__u64 start_ns;
	__u64 end_ns;
	__u64 cycles;
	__u64 macs;
	__u64 reserved;
};

/**
 * struct drm_npu_job_wait - wait until a job has ended
 * @job_id: in, from &struct drm_npu_submit; one of the file's last
 *          DRM_NPU_PARAM_JOB_HISTORY jobs, else -ENOENT.
 * @timeout_ns: in, absolute CLOCK_MONOTONIC time to give up at (as
 *              DRM_IOCTL_SYNCOBJ_WAIT); a time already passed (0) only
 *              polls. A wait restarted after a signal keeps its deadline.
 * @flags: in, must be zero (version 1's relative flag is gone).
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
 * job ends: res is the job's enum drm_npu_job_status (0 = success, > 0 =
 * device error) or a negative errno if it could not be submitted or was
 * canceled; with IORING_SETUP_CQE32, big_cqe[0] holds the job id.
 */
#define DRM_NPU_URING_CMD_SUBMIT	0x4e02

/**
 * struct drm_npu_uring_submit - the SQE command area of a uring submit
 * @submit: in, user pointer to a &struct drm_npu_submit (its @job_id is
 *          written before the SQE completes submission).
 * @submit_size: in, sizeof(struct drm_npu_submit) as the program knows
 *               it: a smaller one than the kernel's is read zero-extended,
 *               a larger one must have zero tail bytes (-E2BIG
 *               otherwise); 0 or more than 4096 is -EINVAL.
 * @flags: in, must be zero.
 */
struct drm_npu_uring_submit {
	__u64 submit;
	__u32 submit_size;
	__u32 flags;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_DRM_NPU_ACCEL_H_ */
