// SPDX-License-Identifier: GPL-2.0-only
/*
 * MSI-X: one completion vector per queue and the error vector. The hard
 * handlers only acknowledge; completion records and faults are handled in
 * the threads.
 */

#include <linux/dma-fence.h>
#include <linux/interrupt.h>
#include <linux/pci.h>

#include "npu_drv.h"
#include "npu_trace.h"

static irqreturn_t npu_irq_queue(int irq, void *arg)
{
	struct npu_queue *q = arg;
	struct npu_device *ndev = q->ndev;
	u32 bit = NPU_IRQ_QUEUE_DONE(q->id);

	if (!(npu_read(ndev, NPU_REG_IRQ_STATUS) & bit))
		return IRQ_NONE;
	/* Ack before reading records: a later completion raises again. */
	npu_write(ndev, NPU_REG_IRQ_ACK, bit);
	return IRQ_WAKE_THREAD;
}

/*
 * The completion path signals fences: a fence-signalling section, so
 * lockdep checks nothing here allocates or waits. A reset stops the
 * threads (synchronize_irq()) rather than locking them out, so they take
 * no reset_lock.
 */
static irqreturn_t npu_irq_queue_thread(int irq, void *arg)
{
	bool cookie = dma_fence_begin_signalling();

	npu_queue_process(arg);
	dma_fence_end_signalling(cookie);
	return IRQ_HANDLED;
}

static irqreturn_t npu_irq_error(int irq, void *arg)
{
	struct npu_device *ndev = arg;
	u32 bits = npu_read(ndev, NPU_REG_IRQ_STATUS) & NPU_IRQ_ERROR_MASK;

	if (!bits)
		return IRQ_NONE;
	npu_write(ndev, NPU_REG_IRQ_ACK, bits);
	atomic_or(bits, &ndev->irq_err_pending);
	return IRQ_WAKE_THREAD;
}

static void npu_irq_handle_fault(struct npu_device *ndev)
{
	u32 status = npu_read(ndev, NPU_REG_FAULT_STATUS);
	u32 ctx = npu_read(ndev, NPU_REG_FAULT_CTX);
	u64 addr = npu_read64(ndev, NPU_REG_FAULT_ADDR_LO);
	u32 access = npu_read(ndev, NPU_REG_FAULT_ACCESS);

	npu_write(ndev, NPU_REG_FAULT_ACK, 1);
	if (!status)
		return;
	atomic64_inc(&ndev->mmu_faults);
	trace_npu_job_fault(ndev, ctx, status, addr, access);
	npu_dbg(ndev, IRQ, "MMU fault: context %u %s %s at %#llx\n", ctx,
		npu_job_status_str(status),
		access == NPU_ACCESS_WRITE ? "write" : "read", addr);
}

static irqreturn_t npu_irq_error_thread(int irq, void *arg)
{
	struct npu_device *ndev = arg;
	u32 bits = atomic_xchg(&ndev->irq_err_pending, 0);
	bool cookie = dma_fence_begin_signalling();
	int q;

	if (bits & NPU_IRQ_MMU_FAULT)
		npu_irq_handle_fault(ndev);
	if (bits & NPU_IRQ_JOB_ERROR) {
		for (q = 0; q < NPU_NUM_QUEUES; q++) {
			u32 st = npu_read(ndev, NPU_REG_QUEUE(q, NPU_QREG_STATUS));

			if (st != NPU_QUEUE_OK)
				drm_err(&ndev->drm, "queue %d stopped: status %u\n",
					q, st);
		}
	}
	if (bits & NPU_IRQ_WATCHDOG)
		npu_dbg(ndev, IRQ, "watchdog fired\n");
	if (bits & NPU_IRQ_BOOT)
		npu_dbg(ndev, IRQ, "boot event\n");

	/* Failed jobs write completion records too. */
	for (q = 0; q < NPU_NUM_QUEUES; q++)
		npu_queue_process(&ndev->queues[q]);
	dma_fence_end_signalling(cookie);
	return IRQ_HANDLED;
}

void npu_irq_enable(struct npu_device *ndev)
{
	u32 mask = NPU_IRQ_ERROR_MASK;
	int q;

	for (q = 0; q < NPU_NUM_QUEUES; q++)
		mask |= NPU_IRQ_QUEUE_DONE(q);
	npu_write(ndev, NPU_REG_IRQ_MASK, mask);
}

/* Mask every source and wait for running handlers, threads included. */
void npu_irq_disable(struct npu_device *ndev)
{
	int i;

	npu_write(ndev, NPU_REG_IRQ_MASK, 0);
	if (!ndev->irqs_requested)
		return;
	for (i = 0; i < NPU_MSIX_NUM_VECTORS; i++)
		synchronize_irq(ndev->irqs[i]);
}

int npu_irq_init(struct npu_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	int ret, i;

	npu_write(ndev, NPU_REG_IRQ_MASK, 0);
	ret = pci_alloc_irq_vectors(pdev, NPU_MSIX_NUM_VECTORS,
				    NPU_MSIX_NUM_VECTORS, PCI_IRQ_MSIX);
	if (ret < 0) {
		drm_err(&ndev->drm, "cannot allocate %d MSI-X vectors: %d\n",
			NPU_MSIX_NUM_VECTORS, ret);
		return ret;
	}

	for (i = 0; i < NPU_MSIX_NUM_VECTORS; i++)
		ndev->irqs[i] = pci_irq_vector(pdev, i);

	for (i = 0; i < NPU_NUM_QUEUES; i++) {
		ret = request_threaded_irq(ndev->irqs[NPU_MSIX_VEC_QUEUE(i)],
					   npu_irq_queue, npu_irq_queue_thread,
					   0, ndev->queues[i].name,
					   &ndev->queues[i]);
		if (ret)
			goto err_free;
	}
	ret = request_threaded_irq(ndev->irqs[NPU_MSIX_VEC_ERROR], npu_irq_error,
				   npu_irq_error_thread, 0, "npu-error", ndev);
	if (ret)
		goto err_free;
	ndev->irqs_requested = true;
	return 0;

err_free:
	while (--i >= 0)
		free_irq(ndev->irqs[NPU_MSIX_VEC_QUEUE(i)], &ndev->queues[i]);
	pci_free_irq_vectors(pdev);
	drm_err(&ndev->drm, "cannot request IRQs: %d\n", ret);
	return ret;
}

void npu_irq_fini(struct npu_device *ndev)
{
	int i;

	if (!ndev->irqs_requested)
		return;
	npu_write(ndev, NPU_REG_IRQ_MASK, 0);
	for (i = 0; i < NPU_NUM_QUEUES; i++)
		free_irq(ndev->irqs[NPU_MSIX_VEC_QUEUE(i)], &ndev->queues[i]);
	free_irq(ndev->irqs[NPU_MSIX_VEC_ERROR], ndev);
	pci_free_irq_vectors(ndev->pdev);
	ndev->irqs_requested = false;
}
