// SPDX-License-Identifier: GPL-2.0-only
/*
 * io_uring: IORING_OP_URING_CMD with DRM_NPU_URING_CMD_SUBMIT submits a
 * job exactly as the ioctl does; the CQE is posted from task work once
 * the job's finished fence signals.
 *
 * Lifetime: an outstanding command holds a reference on the device file
 * (io_uring's), so the context cannot go away under it. Commands are
 * cancelable: a job may wait for another driver's fence that takes its
 * time (or never signals), and the ring's owner must still be able to
 * exit. A canceled command completes with -ECANCELED at once; its job
 * stays queued and ends as any job whose submitter went away.
 */

#include <linux/io_uring/cmd.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include "npu_drv.h"

/* Largest drm_npu_uring_submit.submit_size: a page of a future struct. */
#define NPU_URING_SUBMIT_MAX_SIZE	4096

struct npu_uring_work {
	struct dma_fence_cb cb;
	struct io_uring_cmd *cmd;
	struct dma_fence *fence;
	struct npu_job_rec *rec;
	u64 job_id;
};

struct npu_uring_pdu {
	struct npu_uring_work *work;
};

/* Device status (>= 0) once the job ran to its end, else -errno. */
static int npu_uring_result(struct npu_uring_work *w)
{
	if (READ_ONCE(w->rec->state) == DRM_NPU_JOB_DONE)
		return READ_ONCE(w->rec->status);
	return w->fence->error ? w->fence->error : -ECANCELED;
}

static void npu_uring_work_free(struct npu_uring_work *w)
{
	dma_fence_put(w->fence);
	npu_job_rec_put(w->rec);
	kfree(w);
}

static void npu_uring_task_cb(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct npu_uring_pdu *pdu = io_uring_cmd_to_pdu(cmd, struct npu_uring_pdu);
	struct npu_uring_work *w = pdu->work;
	u64 job_id = w->job_id;
	int res = npu_uring_result(w);

	npu_uring_work_free(w);
	io_uring_cmd_done(cmd, res, job_id, issue_flags);
}

static void npu_uring_fence_cb(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct npu_uring_work *w = container_of(cb, struct npu_uring_work, cb);

	io_uring_cmd_complete_in_task(w->cmd, npu_uring_task_cb);
}

/*
 * io_uring cancels the command (its task exits, or the ring goes away),
 * with the ring's lock held, which the completion's task work holds too.
 * If the fence callback has run, that task work completes the command.
 */
static int npu_uring_cancel(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct npu_uring_pdu *pdu = io_uring_cmd_to_pdu(cmd, struct npu_uring_pdu);
	struct npu_uring_work *w = pdu->work;
	u64 job_id = w->job_id;

	if (!dma_fence_remove_callback(w->fence, &w->cb))
		return 0;
	npu_uring_work_free(w);
	io_uring_cmd_done(cmd, -ECANCELED, job_id, issue_flags);
	return 0;
}

int npu_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct drm_file *file = cmd->file->private_data;
	struct drm_device *drm = file->minor->dev;
	const struct drm_npu_uring_submit *sqe_cmd = io_uring_sqe_cmd(cmd->sqe);
	struct npu_uring_pdu *pdu = io_uring_cmd_to_pdu(cmd, struct npu_uring_pdu);
	struct drm_npu_submit __user *uargs;
	struct drm_npu_submit args;
	struct npu_uring_work *w;
	u32 flags, size;
	int ret;

	if (issue_flags & IO_URING_F_CANCEL)
		return npu_uring_cancel(cmd, issue_flags);
	if (cmd->cmd_op != DRM_NPU_URING_CMD_SUBMIT)
		return -EOPNOTSUPP;

	/* The SQE lives in memory the application can still write. */
	uargs = u64_to_user_ptr(READ_ONCE(sqe_cmd->submit));
	size = READ_ONCE(sqe_cmd->submit_size);
	flags = READ_ONCE(sqe_cmd->flags);
	if (flags || !size || size > NPU_URING_SUBMIT_MAX_SIZE)
		return -EINVAL;
	if (!uargs)
		return -EFAULT;
	/* An older, shorter struct reads zero-extended, as ioctls do. */
	ret = copy_struct_from_user(&args, sizeof(args), uargs, size);
	if (ret)
		return ret;

	w = kzalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w)
		return -ENOMEM;
	INIT_LIST_HEAD(&w->cb.node);	/* a cancel may come before the callback */

	/* It enters the device itself, once the user memory is copied. */
	ret = npu_job_submit(file, &args, &w->fence, &w->rec);
	if (ret) {
		kfree(w);
		return ret;
	}

	w->cmd = cmd;
	w->job_id = args.job_id;
	pdu->work = w;
	/* The job is queued either way; the CQE (CQE32) carries the id too. */
	if (size >= offsetofend(struct drm_npu_submit, job_id) &&
	    put_user(args.job_id, &uargs->job_id))
		npu_dbg(to_npu_device(drm), URING, "job id not written back\n");

	/*
	 * Cancelable before the callback exists: once it does, its task
	 * work may complete the command, and a completed command must not
	 * be marked afterwards.
	 */
	io_uring_cmd_mark_cancelable(cmd, issue_flags);
	if (dma_fence_add_callback(w->fence, &w->cb, npu_uring_fence_cb)) {
		/* Already signaled: complete from here. */
		u64 job_id = w->job_id;

		ret = npu_uring_result(w);
		npu_uring_work_free(w);
		io_uring_cmd_done(cmd, ret, job_id, issue_flags);
	}
	return -EIOCBQUEUED;
}
