// SPDX-License-Identifier: MIT
/*
 * backend_accel.c - the "accel" backend: /dev/accel/accelN of the npu DRM
 * driver, through libdrm and the uapi of uapi/drm/npu_accel.h.
 *
 * Buffers are GEM objects (BO_CREATE, BO_INFO + mmap, GEM_CLOSE; PRIME for
 * dma-bufs). Every job gets an out-syncobj; dependencies are in-syncs.
 * Blocking jobs go through DRM_IOCTL_NPU_SUBMIT and wait on their syncobj;
 * asynchronous ones through io_uring (IORING_OP_URING_CMD with
 * DRM_NPU_URING_CMD_SUBMIT): the CQE arrives when the job ends, the ring
 * signals the device's eventfd, so many jobs are in flight from one
 * thread and completions are reaped without polling. Job timing comes from
 * DRM_IOCTL_NPU_JOB_INFO.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xf86drm.h>

#include "device/device_internal.h"
#include "drm/npu_accel.h"

#define ACCEL_RING_ENTRIES	256
#define ACCEL_CLOSE_WAIT_NS	(10ull * 1000000000ull)

struct accel_backend {
	int fd;
	struct io_uring ring;
	bool ring_ok;
	int ring_err;			/* errno of io_uring_queue_init */
	pthread_mutex_t sq_lock;	/* io_uring submission side */
	pthread_mutex_t cq_lock;	/* io_uring completion side */
	/*
	 * The kernel context per hardware queue the library's submits name:
	 * queue 0 a HIGH context (made at its first use: it needs
	 * CAP_SYS_NICE), queue 1 a NORMAL one. 0: not made yet.
	 */
	pthread_mutex_t ctx_lock;
	uint32_t ctx[2];
};

/* What the kernel reads while an async job is in flight. */
struct accel_submit_blob {
	struct drm_npu_submit submit;
	struct drm_npu_uring_submit usub;
	struct drm_npu_sync in_syncs[64];
	struct drm_npu_bo_ref refs[];
};

static struct accel_backend *to_accel(struct npu_device *dev)
{
	return dev->be;
}

bool npu_accel_find_node(char *path, size_t path_size)
{
	char first[1][NPU_DEVICE_PATH_MAX];

	if (!npu_device_list_accel(first, 1))
		return false;
	snprintf(path, path_size, "%s", first[0]);
	return true;
}

NPU_API size_t npu_device_list_accel(char (*paths)[NPU_DEVICE_PATH_MAX], size_t max)
{
	char p[NPU_DEVICE_PATH_MAX];
	size_t found = 0;
	int i;

	for (i = 0; i < 64; i++) {
		drmVersionPtr ver;
		bool ours;
		int fd;

		snprintf(p, sizeof(p), "/dev/accel/accel%d", i);
		fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		ver = drmGetVersion(fd);
		/* Any major: accel_open() says which ones do not match. */
		ours = ver && ver->name && !strcmp(ver->name, "npu");
		drmFreeVersion(ver);
		close(fd);
		if (ours) {
			if (paths && found < max)
				snprintf(paths[found], NPU_DEVICE_PATH_MAX, "%s", p);
			found++;
		}
	}
	return found;
}

static npu_status get_param(struct npu_device *dev, uint32_t param,
			    uint64_t *value)
{
	struct drm_npu_get_param gp = { .param = param };

	if (drmIoctl(to_accel(dev)->fd, DRM_IOCTL_NPU_GET_PARAM, &gp))
		return npu_dev_error(dev, NPU_ERR_DEVICE,
				     "DRM_IOCTL_NPU_GET_PARAM(%u): %s", param,
				     strerror(errno));
	*value = gp.value;
	return NPU_OK;
}

static npu_status accel_open(struct npu_device *dev,
			     const struct npu_device_options *opts,
			     const char *path)
{
	struct accel_backend *be;
	drmVersionPtr ver;
	uint64_t v[16] = { 0 };
	uint32_t p;
	npu_status st;

	(void)opts;
	be = calloc(1, sizeof(*be));
	if (!be)
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY, "out of memory");
	dev->be = be;
	pthread_mutex_init(&be->sq_lock, NULL);
	pthread_mutex_init(&be->cq_lock, NULL);
	pthread_mutex_init(&be->ctx_lock, NULL);
	be->fd = open(path, O_RDWR | O_CLOEXEC);
	if (be->fd < 0)
		return npu_dev_error(dev, errno == ENOENT ? NPU_ERR_NOT_FOUND : NPU_ERR_IO,
				     "%s: %s%s", path, strerror(errno),
				     errno == ENOENT ? " (is the npu driver loaded? --device sim runs the simulator)" :
				     errno == EACCES ? " (add yourself to the node's group, or run as root)" : "");
	ver = drmGetVersion(be->fd);
	if (!ver || !ver->name || strcmp(ver->name, "npu")) {
		st = npu_dev_error(dev, NPU_ERR_NOT_FOUND,
				   "%s is not an npu device (its driver is \"%s\")",
				   path, ver && ver->name ? ver->name : "not DRM");
		drmFreeVersion(ver);
		return st;
	}
	if (ver->version_major != DRM_NPU_ABI_MAJOR) {
		st = npu_dev_error(dev, NPU_ERR_UNSUPPORTED,
				   "%s: the npu driver speaks uAPI version %d, this library version %d (update %s)",
				   path, ver->version_major, DRM_NPU_ABI_MAJOR,
				   ver->version_major < DRM_NPU_ABI_MAJOR ?
				   "the kernel module" : "libnpu-user");
		drmFreeVersion(ver);
		return st;
	}
	snprintf(dev->info.driver, sizeof(dev->info.driver), "%s %d.%d.%d",
		 ver->name, ver->version_major, ver->version_minor,
		 ver->version_patchlevel);
	drmFreeVersion(ver);
	snprintf(dev->info.name, sizeof(dev->info.name), "%s", path);
	for (p = 0; p <= DRM_NPU_PARAM_DEVICE_TIME_NS; p++) {
		if (p == DRM_NPU_PARAM_RESET_COUNT)
			continue;
		st = get_param(dev, p, &v[p]);
		if (st)
			return st;
	}
	dev->dev_to_host_ns = (int64_t)npu_now_ns() -
			      (int64_t)v[DRM_NPU_PARAM_DEVICE_TIME_NS];
	dev->info.fw_version = (uint32_t)v[DRM_NPU_PARAM_FW_VERSION];
	dev->info.hw_version = (uint32_t)v[DRM_NPU_PARAM_HW_VERSION];
	dev->info.isa_version = (uint32_t)v[DRM_NPU_PARAM_ISA_VERSION];
	dev->info.caps = (uint32_t)v[DRM_NPU_PARAM_CAPS];
	dev->info.op_mask = (uint32_t)v[DRM_NPU_PARAM_OP_MASK];
	dev->info.num_queues = (uint32_t)v[DRM_NPU_PARAM_NUM_QUEUES];
	dev->info.mac_rows = (uint32_t)(v[DRM_NPU_PARAM_MAC_SHAPE] >> 16);
	dev->info.mac_cols = (uint32_t)(v[DRM_NPU_PARAM_MAC_SHAPE] & 0xffff);
	dev->info.sram_size = (uint32_t)v[DRM_NPU_PARAM_SRAM_SIZE];
	dev->info.clock_mhz = (uint32_t)v[DRM_NPU_PARAM_CLOCK_MHZ];
	dev->info.dma_bytes_per_cycle = (uint32_t)v[DRM_NPU_PARAM_DMA_BYTES_PER_CYCLE];
	dev->info.context_id = (uint32_t)v[DRM_NPU_PARAM_VM_ID];
	dev->info.va_start = v[DRM_NPU_PARAM_VA_START];
	dev->info.va_end = v[DRM_NPU_PARAM_VA_END];

	/* io_uring for the async path; without it only blocking jobs work */
	be->ring_err = -io_uring_queue_init(ACCEL_RING_ENTRIES, &be->ring, 0);
	if (!be->ring_err) {
		be->ring_ok = true;
		io_uring_register_eventfd(&be->ring, dev->event_fd);
	}
	return NPU_OK;
}

/* Fill job->result from DRM_IOCTL_NPU_JOB_INFO. */
static void fetch_job_info(struct npu_device *dev, struct npu_job *job)
{
	struct drm_npu_job_info ji = { .job_id = job->kernel_job_id };

	if (drmIoctl(to_accel(dev)->fd, DRM_IOCTL_NPU_JOB_INFO, &ji)) {
		job->result.device_status = NPU_JOB_ERR_ABORTED;
		npu_error_set(&job->err, NPU_ERR_DEVICE,
			      "DRM_IOCTL_NPU_JOB_INFO(job %" PRIu64 "): %s",
			      job->kernel_job_id, strerror(errno));
		return;
	}
	job->result.device_status = ji.state == DRM_NPU_JOB_CANCELED ?
				    NPU_JOB_ERR_ABORTED : ji.status;
	job->result.error_offset = ji.error_offset;
	job->result.queue = ji.queue;
	job->result.fault_addr = ji.fault_addr;
	job->result.device_start_ns = ji.start_ns;
	job->result.device_end_ns = ji.end_ns;
	job->result.cycles = ji.cycles;
	job->result.macs = ji.macs;
	job->result.job_id = ji.job_id;
	if (ji.state == DRM_NPU_JOB_CANCELED)
		npu_error_set(&job->err, NPU_ERR_JOB_FAILED,
			      "job %" PRIu64 " was canceled by the driver (device reset, banned context or a failed dependency)",
			      (uint64_t)ji.job_id);
}

/* Blocking jobs the user released without waiting: collect finished ones. */
static void sweep_released(struct npu_device *dev)
{
	struct accel_backend *be = to_accel(dev);
	struct npu_job *j, *next;

	pthread_mutex_lock(&dev->lock);
	for (j = dev->jobs; j; j = next) {
		next = j->next;
		if (!j->user_released || j->async || j->state == NPU_JOBST_DONE)
			continue;
		if (drmSyncobjWait(be->fd, &j->syncobj, 1, 0, 0, NULL))
			continue;
		fetch_job_info(dev, j);
		npu_dev_job_complete_locked(dev, j);	/* may free j, not next */
	}
	pthread_mutex_unlock(&dev->lock);
}

/* The kernel context for hardware queue @queue, made at its first use. */
static npu_status accel_context(struct npu_device *dev, uint32_t queue,
				uint32_t *id)
{
	struct accel_backend *be = to_accel(dev);
	struct drm_npu_context_create c = {
		.priority = queue ? DRM_NPU_CONTEXT_PRIORITY_NORMAL :
				    DRM_NPU_CONTEXT_PRIORITY_HIGH,
	};
	npu_status st = NPU_OK;

	if (queue > 1)
		return npu_dev_error(dev, NPU_ERR_INVALID_ARG,
				     "queue %u: the device has queues 0 and 1", queue);
	pthread_mutex_lock(&be->ctx_lock);
	if (!be->ctx[queue]) {
		if (drmIoctl(be->fd, DRM_IOCTL_NPU_CONTEXT_CREATE, &c))
			st = npu_dev_error(dev, errno == EACCES ? NPU_ERR_UNSUPPORTED :
					   errno == EBUSY || errno == EMFILE ? NPU_ERR_BUSY :
					   NPU_ERR_DEVICE,
					   "DRM_IOCTL_NPU_CONTEXT_CREATE (queue %u): %s%s",
					   queue, strerror(errno),
					   errno == EACCES ? " (queue 0 has strict priority: it needs CAP_SYS_NICE)" :
					   errno == EMFILE ? " (this user holds the most device VA spaces the driver allows)" :
					   errno == EBUSY ? " (all of the device's VA spaces are in use)" : "");
		else
			be->ctx[queue] = c.context_id;
	}
	*id = be->ctx[queue];
	pthread_mutex_unlock(&be->ctx_lock);
	return st;
}

static npu_status accel_submit(struct npu_device *dev, struct npu_job *job,
			       const struct npu_submit *s)
{
	struct accel_backend *be = to_accel(dev);
	struct accel_submit_blob *b;
	struct io_uring_sqe *sqe;
	unsigned int i;
	uint32_t ctx = 0;
	npu_status st;
	int ret;

	sweep_released(dev);
	st = accel_context(dev, s->queue, &ctx);
	if (st)
		return st;
	if (job->async && !be->ring_ok)
		return npu_dev_error(dev, NPU_ERR_UNSUPPORTED,
				     "io_uring is unavailable (%s): use blocking submits",
				     strerror(be->ring_err));
	b = calloc(1, sizeof(*b) + s->num_buffers * sizeof(b->refs[0]));
	if (!b)
		return npu_dev_error(dev, NPU_ERR_NO_MEMORY, "out of memory");
	job->accel_submit = b;
	if (drmSyncobjCreate(be->fd, 0, &job->syncobj))
		return npu_dev_error(dev, NPU_ERR_DEVICE, "drmSyncobjCreate: %s",
				     strerror(errno));
	for (i = 0; i < s->num_buffers; i++) {
		b->refs[i].handle = s->buffers[i].buffer->handle;
		b->refs[i].access = s->buffers[i].access == NPU_ACCESS_READ_WRITE ?
			DRM_NPU_BO_ACCESS_READ | DRM_NPU_BO_ACCESS_WRITE :
			DRM_NPU_BO_ACCESS_READ;
	}
	for (i = 0; i < s->num_deps; i++)
		b->in_syncs[i].handle = s->deps[i]->syncobj;
	b->submit.cmd_handle = s->cmd->handle;
	b->submit.cmd_offset = s->cmd_offset;
	b->submit.cmd_size = (uint32_t)s->cmd_size;
	b->submit.context_id = ctx;
	b->submit.bo_ref_count = s->num_buffers;
	b->submit.bo_refs = (uintptr_t)b->refs;
	b->submit.bo_ref_size = sizeof(b->refs[0]);
	b->submit.in_sync_count = s->num_deps;
	b->submit.in_sync_size = sizeof(b->in_syncs[0]);
	b->submit.in_syncs = (uintptr_t)b->in_syncs;
	b->submit.out_sync.handle = job->syncobj;

	if (!job->async) {
		if (drmIoctl(be->fd, DRM_IOCTL_NPU_SUBMIT, &b->submit))
			return npu_dev_error(dev, errno == ECANCELED ? NPU_ERR_DEVICE :
					     errno == EINVAL ? NPU_ERR_INVALID_ARG : NPU_ERR_DEVICE,
					     "DRM_IOCTL_NPU_SUBMIT: %s%s", strerror(errno),
					     errno == ECANCELED ? " (this queue's context was banned after a device hang: reopen the device)" : "");
		job->kernel_job_id = b->submit.job_id;
		job->result.job_id = b->submit.job_id;
		return NPU_OK;
	}
	b->usub.submit = (uintptr_t)&b->submit;
	b->usub.submit_size = sizeof(b->submit);
	pthread_mutex_lock(&be->sq_lock);
	sqe = io_uring_get_sqe(&be->ring);
	if (!sqe) {
		io_uring_submit(&be->ring);
		sqe = io_uring_get_sqe(&be->ring);
	}
	if (!sqe) {
		pthread_mutex_unlock(&be->sq_lock);
		return npu_dev_error(dev, NPU_ERR_BUSY, "io_uring submission queue is full");
	}
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = be->fd;
	sqe->cmd_op = DRM_NPU_URING_CMD_SUBMIT;
	memcpy(sqe->cmd, &b->usub, sizeof(b->usub));
	io_uring_sqe_set_data(sqe, job);
	ret = io_uring_submit(&be->ring);
	pthread_mutex_unlock(&be->sq_lock);
	if (ret < 0)
		return npu_dev_error(dev, NPU_ERR_DEVICE, "io_uring_submit: %s",
				     strerror(-ret));
	/* the kernel wrote job_id while it took the SQE (inline issue) */
	job->kernel_job_id = b->submit.job_id;
	job->result.job_id = b->submit.job_id;
	return NPU_OK;
}

static void handle_cqe(struct npu_device *dev, struct io_uring_cqe *cqe)
{
	struct npu_job *job = io_uring_cqe_get_data(cqe);
	int res = cqe->res;

	if (!job)
		return;
	job->kernel_job_id = ((struct accel_submit_blob *)job->accel_submit)->submit.job_id;
	if (res < 0) {
		job->result.device_status = NPU_JOB_ERR_ABORTED;
		npu_error_set(&job->err, res == -ECANCELED ? NPU_ERR_JOB_FAILED : NPU_ERR_DEVICE,
			      "uring submit of job %" PRIu64 ": %s", job->kernel_job_id,
			      strerror(-res));
		if (job->kernel_job_id)
			fetch_job_info(dev, job);
	} else {
		fetch_job_info(dev, job);
		if (job->result.device_status != (uint32_t)res)
			job->result.device_status = (uint32_t)res;
	}
	npu_dev_job_complete(dev, job);
}

static npu_status accel_reap(struct npu_device *dev, uint64_t timeout_ns)
{
	struct accel_backend *be = to_accel(dev);
	struct io_uring_cqe *cqe;
	npu_status st = NPU_OK;
	int ret;

	if (!be->ring_ok)
		return NPU_ERR_UNSUPPORTED;
	pthread_mutex_lock(&be->cq_lock);
	if (timeout_ns) {
		struct __kernel_timespec ts = {
			.tv_sec = (long long)(timeout_ns / 1000000000ull),
			.tv_nsec = (long long)(timeout_ns % 1000000000ull),
		};

		if (timeout_ns > (1ull << 62))
			ret = io_uring_wait_cqe(&be->ring, &cqe);
		else
			ret = io_uring_wait_cqe_timeout(&be->ring, &cqe, &ts);
		if (ret == -ETIME || ret == -EINTR)
			st = NPU_ERR_TIMEOUT;
	}
	while (io_uring_peek_cqe(&be->ring, &cqe) == 0 && cqe) {
		struct io_uring_cqe copy = *cqe;

		io_uring_cqe_seen(&be->ring, cqe);
		handle_cqe(dev, &copy);
	}
	pthread_mutex_unlock(&be->cq_lock);
	return st;
}

static npu_status accel_wait(struct npu_device *dev, struct npu_job *job,
			     uint64_t timeout_ns)
{
	struct accel_backend *be = to_accel(dev);
	uint64_t now = npu_now_ns();
	uint64_t deadline = timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;

	if (job->async) {
		for (;;) {
			bool done;

			pthread_mutex_lock(&dev->lock);
			done = job->state == NPU_JOBST_DONE;
			pthread_mutex_unlock(&dev->lock);
			if (done)
				return NPU_OK;
			now = npu_now_ns();
			if (now >= deadline || !timeout_ns)
				return npu_error_set(&job->err, NPU_ERR_TIMEOUT,
						     "npu_job_wait: job %" PRIu64 " still running after %" PRIu64 " ns",
						     job->kernel_job_id, timeout_ns);
			accel_reap(dev, deadline - now);
		}
	}
	if (drmSyncobjWait(be->fd, &job->syncobj, 1, (int64_t)deadline,
			   DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL)) {
		if (errno == ETIME || errno == ETIMEDOUT)
			return npu_error_set(&job->err, NPU_ERR_TIMEOUT,
					     "npu_job_wait: job %" PRIu64 " still running after %" PRIu64 " ns",
					     job->kernel_job_id, timeout_ns);
		return npu_error_set(&job->err, NPU_ERR_DEVICE,
				     "drmSyncobjWait(job %" PRIu64 "): %s",
				     job->kernel_job_id, strerror(errno));
	}
	pthread_mutex_lock(&dev->lock);
	if (job->state != NPU_JOBST_DONE) {
		fetch_job_info(dev, job);
		npu_dev_job_complete_locked(dev, job);
	}
	pthread_mutex_unlock(&dev->lock);
	return NPU_OK;
}

static void accel_job_release(struct npu_device *dev, struct npu_job *job)
{
	if (job->syncobj)
		drmSyncobjDestroy(to_accel(dev)->fd, job->syncobj);
	job->syncobj = 0;
}

static void accel_close(struct npu_device *dev)
{
	struct accel_backend *be = to_accel(dev);
	uint64_t deadline = npu_now_ns() + ACCEL_CLOSE_WAIT_NS;

	if (!be || be->fd < 0)
		return;
	/* async jobs: reap until their CQEs are in (bounded) */
	while (be->ring_ok && npu_now_ns() < deadline) {
		unsigned int left;
		struct npu_job *j;

		pthread_mutex_lock(&dev->lock);
		left = 0;
		for (j = dev->jobs; j; j = j->next)
			if (j->async && j->state != NPU_JOBST_DONE)
				left++;
		pthread_mutex_unlock(&dev->lock);
		if (!left)
			break;
		accel_reap(dev, 100000000ull);
	}
	/* blocking jobs: wait on their syncobjs */
	for (;;) {
		struct npu_job *j;

		pthread_mutex_lock(&dev->lock);
		for (j = dev->jobs; j; j = j->next)
			if (j->state != NPU_JOBST_DONE)
				break;
		if (!j) {
			pthread_mutex_unlock(&dev->lock);
			break;
		}
		j->refs++;
		pthread_mutex_unlock(&dev->lock);
		if (j->async || npu_now_ns() >= deadline ||
		    drmSyncobjWait(be->fd, &j->syncobj, 1, (int64_t)deadline,
				   DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL)) {
			j->result.device_status = NPU_JOB_ERR_ABORTED;
		} else {
			fetch_job_info(dev, j);
		}
		pthread_mutex_lock(&dev->lock);
		npu_dev_job_complete_locked(dev, j);
		j->refs--;	/* device.c frees what is left after close */
		pthread_mutex_unlock(&dev->lock);
	}
}

static void accel_release(struct npu_device *dev)
{
	struct accel_backend *be = to_accel(dev);

	if (!be)
		return;
	if (be->ring_ok)
		io_uring_queue_exit(&be->ring);
	be->ring_ok = false;
	if (be->fd >= 0)
		close(be->fd);
	be->fd = -1;
	pthread_mutex_destroy(&be->sq_lock);
	pthread_mutex_destroy(&be->cq_lock);
	pthread_mutex_destroy(&be->ctx_lock);
}

/* ---- Buffers ---- */

static npu_status map_bo(struct npu_device *dev, struct npu_buffer *buf)
{
	struct accel_backend *be = to_accel(dev);
	struct drm_npu_bo_info info = { .handle = buf->handle };
	void *p;

	if (drmIoctl(be->fd, DRM_IOCTL_NPU_BO_INFO, &info))
		return npu_dev_error(dev, NPU_ERR_DEVICE, "DRM_IOCTL_NPU_BO_INFO: %s",
				     strerror(errno));
	buf->va = info.va;
	buf->size = info.size;
	p = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, be->fd,
		 (off_t)info.mmap_offset);
	if (p == MAP_FAILED)
		return npu_dev_error(dev, NPU_ERR_IO, "mmap of a %" PRIu64 "-byte buffer: %s",
				     (uint64_t)info.size, strerror(errno));
	buf->cpu = p;
	return NPU_OK;
}

static void close_handle(struct npu_device *dev, uint32_t handle)
{
	struct drm_gem_close gc = { .handle = handle };

	drmIoctl(to_accel(dev)->fd, DRM_IOCTL_GEM_CLOSE, &gc);
}

static npu_status accel_buffer_alloc(struct npu_device *dev, struct npu_buffer *buf)
{
	struct drm_npu_bo_create c = { .size = buf->size };
	npu_status st;

	if (buf->flags & NPU_BUFFER_DEVICE_READ_ONLY)
		c.flags |= DRM_NPU_BO_DEVICE_READ_ONLY;
	if (drmIoctl(to_accel(dev)->fd, DRM_IOCTL_NPU_BO_CREATE, &c))
		return npu_dev_error(dev, errno == ENOSPC || errno == ENOMEM ?
				     NPU_ERR_NO_MEMORY : NPU_ERR_DEVICE,
				     "DRM_IOCTL_NPU_BO_CREATE: %s", strerror(errno));
	buf->handle = c.handle;
	st = map_bo(dev, buf);
	if (st) {
		close_handle(dev, c.handle);
		return st;
	}
	buf->va = c.va;
	return NPU_OK;
}

static void accel_buffer_free(struct npu_device *dev, struct npu_buffer *buf)
{
	if (buf->cpu)
		munmap(buf->cpu, buf->size);
	buf->cpu = NULL;
	if (to_accel(dev)->fd >= 0)
		close_handle(dev, buf->handle);
}

static npu_status accel_buffer_export(struct npu_device *dev,
				      struct npu_buffer *buf, int *fd)
{
	if (drmPrimeHandleToFD(to_accel(dev)->fd, buf->handle,
			       DRM_CLOEXEC | DRM_RDWR, fd))
		return npu_dev_error(dev, NPU_ERR_DEVICE, "drmPrimeHandleToFD: %s",
				     strerror(errno));
	return NPU_OK;
}

static npu_status accel_buffer_import(struct npu_device *dev, int fd,
				      struct npu_buffer *buf)
{
	npu_status st;

	if (drmPrimeFDToHandle(to_accel(dev)->fd, fd, &buf->handle))
		return npu_dev_error(dev, NPU_ERR_DEVICE,
				     "drmPrimeFDToHandle(fd %d): %s", fd, strerror(errno));
	st = map_bo(dev, buf);
	if (st)
		close_handle(dev, buf->handle);
	return st;
}

static int accel_poll_fd(struct npu_device *dev)
{
	return dev->event_fd;
}

const struct npu_backend_ops npu_accel_backend_ops = {
	.name = "accel",
	.open = accel_open,
	.close = accel_close,
	.release = accel_release,
	.buffer_alloc = accel_buffer_alloc,
	.buffer_free = accel_buffer_free,
	.buffer_export = accel_buffer_export,
	.buffer_import = accel_buffer_import,
	.submit = accel_submit,
	.wait = accel_wait,
	.reap = accel_reap,
	.poll_fd = accel_poll_fd,
	.job_release = accel_job_release,
};
