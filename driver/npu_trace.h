/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints of the npu driver: events/npu/ in tracefs. The CLI's job
 * tracing reads npu_job_submit / run / complete.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM npu

#if !defined(__NPU_TRACE_H__) || defined(TRACE_HEADER_MULTI_READ)
#define __NPU_TRACE_H__

#include <linux/tracepoint.h>

#include "npu_drv.h"

TRACE_EVENT(npu_job_submit,
	    TP_PROTO(struct npu_job *job),
	    TP_ARGS(job),
	    TP_STRUCT__entry(__field(u32, ctx)
			     __field(u64, job_id)
			     __field(u32, queue)
			     __field(u64, cmd_va)
			     __field(u32, cmd_size)
			     __field(u32, bo_count)),
	    TP_fast_assign(__entry->ctx = job->ctx->id;
			   __entry->job_id = job->rec->id;
			   __entry->queue = job->queue->id;
			   __entry->cmd_va = job->cmd_va;
			   __entry->cmd_size = job->cmd_size;
			   __entry->bo_count = job->bo_count;),
	    TP_printk("ctx=%u job=%llu queue=%u cmd_va=%#llx cmd_size=%u bos=%u",
		      __entry->ctx, __entry->job_id, __entry->queue,
		      __entry->cmd_va, __entry->cmd_size, __entry->bo_count)
);

TRACE_EVENT(npu_job_run,
	    TP_PROTO(struct npu_job *job, u64 seqno, u32 slot),
	    TP_ARGS(job, seqno, slot),
	    TP_STRUCT__entry(__field(u32, ctx)
			     __field(u64, job_id)
			     __field(u32, queue)
			     __field(u64, seqno)
			     __field(u32, slot)),
	    TP_fast_assign(__entry->ctx = job->ctx->id;
			   __entry->job_id = job->rec->id;
			   __entry->queue = job->queue->id;
			   __entry->seqno = seqno;
			   __entry->slot = slot;),
	    TP_printk("ctx=%u job=%llu queue=%u seqno=%llu slot=%u",
		      __entry->ctx, __entry->job_id, __entry->queue,
		      __entry->seqno, __entry->slot)
);

TRACE_EVENT(npu_job_complete,
	    TP_PROTO(struct npu_job *job, const struct npu_job_rec *c),
	    TP_ARGS(job, c),
	    TP_STRUCT__entry(__field(u32, ctx)
			     __field(u64, job_id)
			     __field(u32, queue)
			     __field(u32, status)
			     __field(u64, start_ns)
			     __field(u64, end_ns)
			     __field(u64, cycles)
			     __field(u64, macs)),
	    TP_fast_assign(__entry->ctx = job->ctx->id;
			   __entry->job_id = job->rec->id;
			   __entry->queue = job->queue->id;
			   __entry->status = c->status;
			   __entry->start_ns = c->start_ns;
			   __entry->end_ns = c->end_ns;
			   __entry->cycles = c->cycles;
			   __entry->macs = c->macs;),
	    TP_printk("ctx=%u job=%llu queue=%u status=%u start_ns=%llu end_ns=%llu cycles=%llu macs=%llu",
		      __entry->ctx, __entry->job_id, __entry->queue,
		      __entry->status, __entry->start_ns, __entry->end_ns,
		      __entry->cycles, __entry->macs)
);

TRACE_EVENT(npu_job_fault,
	    TP_PROTO(struct npu_device *ndev, u32 ctx, u32 status, u64 addr,
		     u32 access),
	    TP_ARGS(ndev, ctx, status, addr, access),
	    TP_STRUCT__entry(__field(u32, ctx)
			     __field(u32, status)
			     __field(u64, addr)
			     __field(u32, access)),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->status = status;
			   __entry->addr = addr;
			   __entry->access = access;),
	    TP_printk("ctx=%u status=%u addr=%#llx access=%u",
		      __entry->ctx, __entry->status, __entry->addr,
		      __entry->access)
);

TRACE_EVENT(npu_reset,
	    TP_PROTO(struct npu_device *ndev, u32 guilty_ctx, u32 count),
	    TP_ARGS(ndev, guilty_ctx, count),
	    TP_STRUCT__entry(__field(u32, guilty_ctx)
			     __field(u32, count)),
	    TP_fast_assign(__entry->guilty_ctx = guilty_ctx;
			   __entry->count = count;),
	    TP_printk("guilty_ctx=%d reset=%u", (int)__entry->guilty_ctx,
		      __entry->count)
);

#endif /* __NPU_TRACE_H__ */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE npu_trace
#include <trace/define_trace.h>
