/* SPDX-License-Identifier: MIT */
/*
 * npu_device.h - the device layer of libnpu-user: open an NPU, allocate
 * buffers it can reach, build command streams, submit jobs and collect
 * their results, blocking or asynchronously.
 *
 * One API, two backends chosen when the device is opened:
 *   sim   - firmware-sim in-process: the library plays the kernel driver
 *           (host-memory arena, page tables, rings, firmware boot) and runs
 *           jobs on a worker thread. Works on any machine.
 *   accel - /dev/accel/accelN through the npu DRM driver (libdrm ioctls,
 *           syncobjs, io_uring uring_cmd submission).
 * The same command stream gives bit-identical results on both.
 *
 * Errors: every call returns an npu_status and a message naming what failed
 * and why: npu_device_last_error() (per thread), npu_cmdbuf_last_error()
 * and npu_job_last_error() (per object). npu_device_open() writes
 * its message into a caller buffer, since no object exists yet.
 *
 * Thread safety (no global mutable state anywhere in the library):
 *   - A device may be used from several threads at once for buffer
 *     alloc/free, submit, wait and reap; npu_device_last_error() gives
 *     the calling thread's last failure on that device, so threads never
 *     read a message another one is writing (use the job's own message
 *     for job failures). npu_device_close() must not race with any other
 *     call.
 *   - A buffer may be used by many jobs at once; don't free it while
 *     another thread still maps or submits it.
 *   - A job handle belongs to one thread at a time (wait / result /
 *     release); completion of an async job is delivered exactly once
 *     through npu_device_reap().
 *   - A cmdbuf is single-threaded.
 */
#ifndef NPU_DEVICE_H
#define NPU_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu_status.h"
#include "npu_hw.h"	/* the hardware contract: ISA structs, job status */

#ifdef __cplusplus
extern "C" {
#endif

struct npu_device;
struct npu_buffer;
struct npu_job;
struct npu_cmdbuf;

/* ---------------------------------------------------------------------------
 * Devices
 */
enum npu_backend {
	NPU_BACKEND_AUTO = 0,	/* accel if an npu accel node exists, else sim */
	NPU_BACKEND_SIM = 1,
	NPU_BACKEND_ACCEL = 2,
};

/*
 * No effect: npu_device_open() reads no environment variable (before 1.2 it
 * read NPU_DEVICE and NPU_TRACE_FILE unless this flag was set). Programs
 * that honour NPU_DEVICE pass it to npu_device_options_parse(), as the npu
 * CLI does.
 */
#define NPU_DEVICE_NO_ENV	(1u << 0)
/*
 * Since 2.2: sim_threads holds the simulator's host thread count. Without
 * it the field is not read, so a program built before it (whose struct
 * had padding there) keeps the default.
 */
#define NPU_DEVICE_SIM_THREADS	(1u << 1)

/*
 * Options of npu_device_open(); zero-initialise (or npu_device_options_init)
 * and set what you need. Backend AUTO: accel if an npu accel node exists,
 * else sim.
 */
struct npu_device_options {
	enum npu_backend backend;
	const char *path;		/* accel node; NULL: first npu node */
	const char *trace_file;		/* append a Chrome trace of every job */
	uint32_t flags;			/* NPU_DEVICE_* */
	/*
	 * sim, with NPU_DEVICE_SIM_THREADS in flags: the host threads the
	 * simulated NPU splits one job's large instructions over (outputs and
	 * modeled cycles do not depend on it), 1..64; 0: min(2, online CPUs).
	 * Also "sim:threads=N" in the device spec. It sits in what was
	 * padding, so the struct keeps its 1.x size and layout.
	 */
	uint32_t sim_threads;
	/* sim only */
	uint64_t sim_memory_bytes;	/* DMA arena; 0: 256 MiB */
	uint32_t sim_watchdog_cycles;	/* 0: the firmware's default */
	uint32_t sim_ring_entries;	/* per queue, power of two; 0: 1024 */
};

NPU_API void npu_device_options_init(struct npu_device_options *opts);
/*
 * Apply a device spec as the CLI's --device takes it: "sim", "accel",
 * "auto" or an accel node path ("/dev/accel/accel0"); "sim:threads=N"
 * (N >= 1) also sets sim_threads and NPU_DEVICE_SIM_THREADS. NPU_ERR_INVALID_ARG for anything else. The path string must outlive the open call.
 */
NPU_API npu_status npu_device_options_parse(struct npu_device_options *opts,
				    const char *spec);

/* Since 2.3: several devices. */
#define NPU_DEVICE_PATH_MAX	64
/* The most devices one spec (and so one model) may name. */
#define NPU_DEVICE_SET_MAX	16

/*
 * The accel nodes driven by "npu", in minor order: the first 'max' paths
 * ("/dev/accel/accelN") go to paths (may be NULL with max 0). Returns how
 * many there are, which may exceed max.
 */
NPU_API size_t npu_device_list_accel(char (*paths)[NPU_DEVICE_PATH_MAX], size_t max);

/* One device of a spec (npu_device_spec_resolve). */
struct npu_device_spec_entry {
	/* The device's own name, the same for every spec that names it:
	 * "sim", "sim#2" (the third simulated NPU), "sim:threads=4",
	 * "/dev/accel/accel1". */
	char name[NPU_DEVICE_PATH_MAX];
	/* Its options; options.path is NULL: an accel device's name is its
	 * node path, which the caller points options.path at to open it. */
	struct npu_device_options options;
};

/*
 * The devices a spec names: "sim" or "sim:1" (one simulated NPU),
 * "sim:N" (N independent simulated NPUs, 1..NPU_DEVICE_SET_MAX, called
 * "sim", "sim#1", ...), "sim#K" (one of them), "sim:threads=T" or
 * "sim:N:threads=T", "accel" or "accel:0"
 * (the first npu accel node), "accel:K" (the K-th), "accel:*" (every one),
 * an accel node path, or a comma-separated list of accel specs and paths
 * ("accel:0,accel:1"). At most 'max' entries are written and *count says
 * how many. NPU_ERR_INVALID_ARG for a malformed spec or a device named
 * twice, NPU_ERR_NOT_FOUND for an accel device that does not exist; errmsg
 * says which part of the spec is wrong.
 */
NPU_API npu_status npu_device_spec_resolve(const char *spec,
					   struct npu_device_spec_entry *entries,
					   size_t max, size_t *count,
					   char *errmsg, size_t errmsg_size);

/*
 * Open a device. opts may be NULL (the defaults). On failure
 * *out is NULL and, if errmsg is not NULL, errmsg holds the reason, e.g.
 * "npu_device_open: /dev/accel/accel7: No such file or directory".
 */
NPU_API npu_status npu_device_open(const struct npu_device_options *opts,
			   struct npu_device **out,
			   char *errmsg, size_t errmsg_size);
/* Waits for jobs still in flight, frees every buffer and job left. */
NPU_API void npu_device_close(struct npu_device *dev);

/* The calling thread's message for its last failed call on this device
 * ("" if none). */
NPU_API const char *npu_device_last_error(const struct npu_device *dev);

struct npu_device_info {
	char name[64];			/* "firmware-sim" or the accel node path */
	char driver[32];		/* "npu" on accel, "sim" on sim */
	enum npu_backend backend;
	uint32_t fw_version;		/* NPU_VERSION(major, minor) */
	uint32_t hw_version;
	uint32_t isa_version;
	uint32_t caps;			/* NPU_CAP_* */
	uint32_t op_mask;		/* NPU_OP_BIT(opcode) */
	uint32_t num_queues;
	uint32_t mac_rows, mac_cols;
	uint32_t sram_size;		/* bytes */
	uint32_t clock_mhz;
	uint32_t dma_bytes_per_cycle;
	uint32_t context_id;		/* this device handle's hardware context */
	uint64_t va_start, va_end;	/* buffer VAs lie in [va_start, va_end) */
	uint64_t memory_bytes;		/* sim arena size; 0 on accel */
};

NPU_API npu_status npu_device_get_info(struct npu_device *dev,
			       struct npu_device_info *info);
NPU_API const char *npu_backend_name(enum npu_backend backend);	/* "sim" / "accel" */

/* ---------------------------------------------------------------------------
 * Buffers: device memory the CPU can map. Size is rounded up to 4 KiB.
 *
 * npu_buffer_free() drops the caller's reference: a buffer that a queued or
 * running job lists (or uses as its command buffer) stays alive, mapped
 * at the same device VA, until the last such job completes. The CPU
 * mapping is invalid after free.
 */
#define NPU_BUFFER_DEVICE_READ_ONLY	(1u << 0)	/* device writes fault */

NPU_API npu_status npu_buffer_alloc(struct npu_device *dev, uint64_t size,
			    uint32_t flags, struct npu_buffer **out);
NPU_API void npu_buffer_free(struct npu_buffer *buf);
/* CPU address of the whole buffer (stable for the buffer's life). */
NPU_API npu_status npu_buffer_map(struct npu_buffer *buf, void **ptr);
NPU_API uint64_t npu_buffer_va(const struct npu_buffer *buf);
NPU_API uint64_t npu_buffer_size(const struct npu_buffer *buf);
/* The device the buffer belongs to (NULL for NULL). */
NPU_API struct npu_device *npu_buffer_device(const struct npu_buffer *buf);
/* accel only (NPU_ERR_UNSUPPORTED on sim): share as a dma-buf fd. */
NPU_API npu_status npu_buffer_export_dmabuf(struct npu_buffer *buf, int *fd);
NPU_API npu_status npu_buffer_import_dmabuf(struct npu_device *dev, int fd,
				    struct npu_buffer **out);

/* ---------------------------------------------------------------------------
 * Command-stream builder. Each call appends one instruction, validated on
 * the host (enums, reserved fields, dimensions, SRAM bounds against the
 * device's SRAM size, opcodes against its op mask); a failure names the
 * instruction index and field and leaves the stream unchanged:
 *   "conv2d #3: output [2048000, 2099200) exceeds SRAM size 2097152"
 * Struct variants take the npu_hw.h struct; opcode and size are set for
 * you, hdr.flags (NPU_INSN_SYNC) is kept.
 */
NPU_API npu_status npu_cmdbuf_create(struct npu_cmdbuf **out);
NPU_API void npu_cmdbuf_destroy(struct npu_cmdbuf *cb);
/* Validate against this device's SRAM size and op mask (default: npu_hw.h). */
NPU_API npu_status npu_cmdbuf_set_device(struct npu_cmdbuf *cb, struct npu_device *dev);
/* Start over: only the stream header remains. */
NPU_API void npu_cmdbuf_reset(struct npu_cmdbuf *cb);
NPU_API const char *npu_cmdbuf_last_error(const struct npu_cmdbuf *cb);
NPU_API unsigned int npu_cmdbuf_count(const struct npu_cmdbuf *cb);	/* instructions */

NPU_API npu_status npu_cmdbuf_dma_copy(struct npu_cmdbuf *cb,
			       const struct npu_insn_dma_copy *insn);
/* 1-D: 'bytes' from src to dst; spaces are NPU_SPACE_VA / NPU_SPACE_SRAM. */
NPU_API npu_status npu_cmdbuf_dma_copy_1d(struct npu_cmdbuf *cb, uint8_t insn_flags,
				  uint8_t dst_space, uint64_t dst,
				  uint8_t src_space, uint64_t src,
				  uint32_t bytes);
NPU_API npu_status npu_cmdbuf_dma_copy_2d(struct npu_cmdbuf *cb, uint8_t insn_flags,
				  uint8_t dst_space, uint64_t dst,
				  uint64_t dst_stride,
				  uint8_t src_space, uint64_t src,
				  uint64_t src_stride,
				  uint32_t rows, uint32_t row_bytes);
NPU_API npu_status npu_cmdbuf_dma_fill(struct npu_cmdbuf *cb,
			       const struct npu_insn_dma_fill *insn);
NPU_API npu_status npu_cmdbuf_dma_fill_1d(struct npu_cmdbuf *cb, uint8_t insn_flags,
				  uint8_t dst_space, uint64_t dst,
				  uint8_t value, uint32_t bytes);
NPU_API npu_status npu_cmdbuf_conv2d(struct npu_cmdbuf *cb,
			     const struct npu_insn_conv2d *insn);
NPU_API npu_status npu_cmdbuf_matmul(struct npu_cmdbuf *cb,
			     const struct npu_insn_matmul *insn);
NPU_API npu_status npu_cmdbuf_pool(struct npu_cmdbuf *cb,
			   const struct npu_insn_pool *insn);
NPU_API npu_status npu_cmdbuf_eltwise(struct npu_cmdbuf *cb,
			      const struct npu_insn_eltwise *insn);
NPU_API npu_status npu_cmdbuf_lut(struct npu_cmdbuf *cb, uint8_t insn_flags,
			  uint32_t input, uint32_t output, uint32_t table,
			  uint32_t count);
/* RESIZE (ISA 1.1): nearest / bilinear over an NHWC tensor in SRAM. */
NPU_API npu_status npu_cmdbuf_resize(struct npu_cmdbuf *cb,
			     const struct npu_insn_resize *insn);
/* Row ops of the vector engine (ISA 1.3): over rows of int8 in SRAM. */
NPU_API npu_status npu_cmdbuf_softmax(struct npu_cmdbuf *cb,
			      const struct npu_insn_softmax *insn);
NPU_API npu_status npu_cmdbuf_layernorm(struct npu_cmdbuf *cb,
				const struct npu_insn_layernorm *insn);
NPU_API npu_status npu_cmdbuf_reduce(struct npu_cmdbuf *cb,
			     const struct npu_insn_reduce *insn);
NPU_API npu_status npu_cmdbuf_timestamp(struct npu_cmdbuf *cb, uint8_t insn_flags,
				uint64_t va);
NPU_API npu_status npu_cmdbuf_barrier(struct npu_cmdbuf *cb);
NPU_API npu_status npu_cmdbuf_nop(struct npu_cmdbuf *cb, uint8_t insn_flags);
/* Append an already-encoded instruction (validated like the others). */
NPU_API npu_status npu_cmdbuf_raw(struct npu_cmdbuf *cb, const void *insn, size_t size);

/* The stream so far (header + instructions); valid until the next append. */
NPU_API const void *npu_cmdbuf_data(const struct npu_cmdbuf *cb, size_t *size);

/*
 * Validate a whole binary stream (header, every instruction) as the
 * builder would; msg (may be NULL) gets e.g.
 * "instruction 3 at offset 120: truncated: needs 88 bytes, 40 left".
 * sram_size 0 / op_mask 0 mean the npu_hw.h defaults.
 */
NPU_API npu_status npu_cs_validate(const void *data, size_t size, uint32_t sram_size,
			   uint32_t op_mask, char *msg, size_t msg_size);

/* ---------------------------------------------------------------------------
 * Jobs
 */
#define NPU_ACCESS_READ_ONLY	1u	/* the job only reads the buffer */
#define NPU_ACCESS_READ_WRITE	3u

struct npu_buffer_use {
	struct npu_buffer *buffer;
	uint32_t access;		/* NPU_ACCESS_READ_ONLY / _READ_WRITE */
};

struct npu_submit {
	struct npu_buffer *cmd;		/* holds the command stream */
	uint64_t cmd_offset;		/* 8-byte aligned */
	uint64_t cmd_size;		/* multiple of 8, non-zero */
	const struct npu_buffer_use *buffers;	/* every buffer the job touches */
	unsigned int num_buffers;
	uint32_t queue;			/* 1, or 0: strict high priority, which on
					 * accel needs CAP_SYS_NICE or DRM master */
	struct npu_job *const *deps;	/* jobs that must complete first */
	unsigned int num_deps;
	uint64_t user_data;		/* returned with async completions */
};

/* What a job did. Host times are CLOCK_MONOTONIC ns. */
struct npu_job_result {
	uint32_t device_status;		/* enum npu_job_status; NPU_JOB_OK = 0 */
	uint32_t error_offset;		/* byte offset of the failing instruction */
	uint64_t fault_addr;		/* device VA for NPU_JOB_ERR_MMU_* */
	uint32_t queue;
	uint32_t context;
	uint64_t job_id;		/* device seqno (sim) / kernel job id */
	uint64_t device_start_ns;	/* device clock */
	uint64_t device_end_ns;
	uint64_t cycles;		/* modeled cycles */
	uint64_t macs;
	uint64_t host_submit_ns;
	uint64_t host_complete_ns;
};

/*
 * Queue a job and return at once (never waits for the device). A failed
 * dependency fails this job too (device_status NPU_JOB_ERR_ABORTED without
 * running), as the kernel does. The returned handle is released with
 * npu_job_release().
 */
NPU_API npu_status npu_job_submit(struct npu_device *dev, const struct npu_submit *s,
			  struct npu_job **out);
/*
 * Wait for a job: NPU_OK when it ran to completion with NPU_JOB_OK,
 * NPU_ERR_JOB_FAILED with the device status in the job's message,
 * NPU_ERR_TIMEOUT (timeout_ns 0: just poll; UINT64_MAX: forever).
 */
NPU_API npu_status npu_job_wait(struct npu_job *job, uint64_t timeout_ns);
/* Whether the job has completed (asks the device, never waits). */
NPU_API bool npu_job_done(struct npu_job *job);
/* Result of a completed job (NPU_ERR_BUSY while it runs). */
NPU_API npu_status npu_job_get_result(const struct npu_job *job,
			      struct npu_job_result *result);
NPU_API const char *npu_job_last_error(const struct npu_job *job);
NPU_API uint64_t npu_job_user_data(const struct npu_job *job);
/* Drop the handle; an unfinished job still runs to completion. */
NPU_API void npu_job_release(struct npu_job *job);

/* Blocking convenience: submit, wait, fill result, release. */
NPU_API npu_status npu_job_run(struct npu_device *dev, const struct npu_submit *s,
		       struct npu_job_result *result);

/*
 * Asynchronous path. A job submitted with npu_job_submit_async() posts one
 * completion event to the device's completion queue when it ends (accel:
 * the io_uring CQE of the driver's uring_cmd submit; sim: the worker).
 * npu_device_reap() returns up to 'max' events, waiting up to timeout_ns
 * for the first (0: poll), NPU_ERR_TIMEOUT when none came. The job handle
 * in an event is the caller's: read its result, then npu_job_release().
 * npu_device_poll_fd() is readable while events are pending (for
 * poll/epoll loops; do not read it yourself).
 */
struct npu_completion_event {
	struct npu_job *job;
	uint64_t user_data;
	npu_status status;		/* as npu_job_wait() would return */
	uint32_t device_status;
};

NPU_API npu_status npu_job_submit_async(struct npu_device *dev,
				const struct npu_submit *s,
				struct npu_job **out);
NPU_API npu_status npu_device_reap(struct npu_device *dev,
			   struct npu_completion_event *events,
			   unsigned int max, unsigned int *count,
			   uint64_t timeout_ns);
NPU_API int npu_device_poll_fd(struct npu_device *dev);
/* Async jobs submitted and not yet reaped. */
NPU_API unsigned int npu_device_inflight(struct npu_device *dev);
/*
 * Since 2.3: the bytes of this handle's buffers on the device (sizes
 * rounded up to pages), now and at most since it was opened. Imported
 * dma-bufs count too.
 */
NPU_API void npu_device_memory(struct npu_device *dev, uint64_t *in_use, uint64_t *peak);

/* "OK", "MMU_UNMAPPED", ... for a device job status. */
NPU_API const char *npu_job_status_str(uint32_t device_status);

#ifdef __cplusplus
}
#endif

#endif /* NPU_DEVICE_H */
