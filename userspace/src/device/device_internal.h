/* SPDX-License-Identifier: MIT */
/*
 * device_internal.h - what the common device layer (device.c) and the two
 * backends (backend_sim.c, backend_accel.c) share.
 *
 * device.c owns the objects (device, buffer, job), reference counts,
 * dependency bookkeeping for sim, the completion queue of async jobs and
 * tracing; a backend owns the hardware side. Locking: dev->lock protects
 * job state, refcounts and the completion queue; a backend may call
 * npu_dev_job_complete() from any thread without holding it.
 */
#ifndef NPU_DEVICE_INTERNAL_H
#define NPU_DEVICE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "common/npu_error.h"
#include "npu/npu_device.h"

struct npu_backend_ops;

struct npu_buffer {
	struct npu_device *dev;
	uint64_t size;
	uint64_t va;
	uint32_t flags;
	void *cpu;		/* CPU mapping */
	unsigned int refs;	/* user 1 + each job using it; under dev->lock */
	bool user_freed;
	/* backend data */
	uint32_t handle;	/* accel GEM handle */
	uint64_t arena_off;	/* sim: offset in the arena */
	struct npu_buffer *next, *prev;	/* dev->buffers */
};

enum npu_job_state {
	NPU_JOBST_PENDING,	/* sim: waiting for dependencies */
	NPU_JOBST_QUEUED,	/* handed to the backend */
	NPU_JOBST_DONE,
};

struct npu_job {
	struct npu_device *dev;
	unsigned int refs;	/* user handle + backend in flight; dev->lock */
	enum npu_job_state state;
	bool async;
	bool user_released;
	uint64_t user_data;
	uint32_t queue;
	struct npu_job_result result;
	struct npu_error err;
	/* buffers held until completion (the cmd buffer first) */
	struct npu_buffer **bufs;
	unsigned int num_bufs;
	/* sim: command stream location and dependencies still pending */
	uint64_t cmd_va;
	uint32_t cmd_size;
	struct npu_job **deps;
	unsigned int num_deps;
	/* accel */
	uint32_t syncobj;
	uint64_t kernel_job_id;
	void *accel_submit;	/* struct drm_npu_submit for uring */
	struct npu_job *next, *prev;	/* dev->jobs (all live jobs) */
	struct npu_job *cq_next;	/* completion queue link */
	struct npu_job *pend_next;	/* sim pending list */
};

struct npu_trace;

struct npu_device {
	const struct npu_backend_ops *ops;
	enum npu_backend backend;
	struct npu_device_info info;

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a job completed */
	struct npu_buffer *buffers;	/* all live buffers */
	uint64_t mem_bytes, mem_peak;	/* their sizes (page-rounded): now, at most */
	struct npu_job *jobs;		/* all live jobs */
	struct npu_job *cq_head, *cq_tail;	/* async completions, unreaped */
	struct npu_job *pending;	/* sim: jobs waiting for dependencies */
	unsigned int inflight_async;	/* submitted async, not yet reaped */
	unsigned int inflight;		/* all jobs not yet complete */
	int event_fd;			/* sim completion queue: readable when cq */

	int trace_fd;			/* opts->trace_file when tracing */
	bool tracing;
	pthread_mutex_t trace_lock;
	uint32_t trace_id;		/* distinguishes devices in one process */
	int64_t dev_to_host_ns;		/* host clock - device clock */

	void *be;			/* backend private state */
};

struct npu_backend_ops {
	const char *name;
	npu_status (*open)(struct npu_device *dev,
			   const struct npu_device_options *opts,
			   const char *path);
	void (*close)(struct npu_device *dev);	/* stop; aborts leftovers */
	void (*release)(struct npu_device *dev);	/* after buffers are freed */
	npu_status (*buffer_alloc)(struct npu_device *dev, struct npu_buffer *buf);
	void (*buffer_free)(struct npu_device *dev, struct npu_buffer *buf);
	npu_status (*buffer_export)(struct npu_device *dev,
				    struct npu_buffer *buf, int *fd);
	npu_status (*buffer_import)(struct npu_device *dev, int fd,
				    struct npu_buffer *buf);
	/* Called without dev->lock; deps are already complete on sim. */
	npu_status (*submit)(struct npu_device *dev, struct npu_job *job,
			     const struct npu_submit *s);
	/* accel only: wait for a job's syncobj; NULL means the common condvar */
	npu_status (*wait)(struct npu_device *dev, struct npu_job *job,
			   uint64_t timeout_ns);
	/* accel only: reap from io_uring into npu_dev_job_complete() */
	npu_status (*reap)(struct npu_device *dev, uint64_t timeout_ns);
	int (*poll_fd)(struct npu_device *dev);
	void (*job_release)(struct npu_device *dev, struct npu_job *job);
};

extern const struct npu_backend_ops npu_sim_backend_ops;
extern const struct npu_backend_ops npu_accel_backend_ops;

/* First /dev/accel/accelN whose driver is "npu": path, or false if none. */
bool npu_accel_find_node(char *path, size_t path_size);

/* Put "prefix: " before this thread's last message if it was on dev. */
void npu_dev_error_prefix(struct npu_device *dev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Record a device error as the calling thread's; returns status. */
npu_status npu_dev_error(struct npu_device *dev, npu_status status,
			 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A backend reports a job's end: fills job->result beforehand (device
 * fields); the common layer stamps the host time, releases buffers, posts
 * async completions, wakes waiters, writes the trace. Takes dev->lock.
 */
void npu_dev_job_complete(struct npu_device *dev, struct npu_job *job);

/* The same, with dev->lock already held (sim worker). */
void npu_dev_job_complete_locked(struct npu_device *dev, struct npu_job *job);

uint64_t npu_now_ns(void);	/* CLOCK_MONOTONIC */

/* Tracing (trace.c) */
void npu_trace_open(struct npu_device *dev, const char *path);
void npu_trace_job(struct npu_device *dev, const struct npu_job *job);
void npu_trace_close(struct npu_device *dev);

/* Validation shared by the builder and npu_cs_validate (cmdbuf.c). */
npu_status npu_insn_validate(const void *insn, size_t avail,
			     uint32_t sram_size, uint32_t op_mask,
			     unsigned int index, size_t *insn_size,
			     char *msg, size_t msg_size);

#endif /* NPU_DEVICE_INTERNAL_H */
