/*
 * QEMU NPU PCIe device: the NPU of npu_hw.h, hosting firmware-sim.
 *
 * This file is only glue: BAR0 register accesses go to the simulator, its
 * DMA goes through the PCI DMA API (only while bus mastering is enabled),
 * its interrupts become MSI-X messages and its jobs run on a worker thread
 * so that a long job never stalls a vCPU. Documentation/qemu-device.md
 * describes the threading and locking; every guest-controlled value is
 * validated by firmware-sim, never asserted on here.
 *
 * SPDX-License-Identifier: MIT
 */

#include "qemu/osdep.h"
#include "qemu/host-utils.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/blocker.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "system/tcg.h"
#include "trace.h"

#include "npu_sim.h"

#define TYPE_NPU "npu"
OBJECT_DECLARE_SIMPLE_TYPE(NpuState, NPU)

/*
 * Where the one job slot is. A job is fetched and finished under the BQL and
 * s->lock; only the worker touches s->job while it is NPU_JOB_RUNNING.
 */
typedef enum NpuJobState {
    NPU_JOB_IDLE,       /* no job: the next doorbell/pump may fetch one */
    NPU_JOB_RUNNING,    /* fetched, handed to the worker to execute */
    NPU_JOB_DONE,       /* executed, waiting for the pump BH to finish it */
    NPU_JOB_HUNG,       /* injected hang: held until a device reset */
} NpuJobState;

struct NpuState {
    PCIDevice parent_obj;

    MemoryRegion mmio;

    /*
     * Serializes every firmware-sim call except npu_sim_job_execute() and
     * npu_sim_boot_execute().
     */
    QemuMutex lock;
    QemuCond cond;              /* worker waits for RUNNING or stopping */
    QemuThread worker;
    bool stopping;
    NpuJobState job_state;
    struct npu_sim_job job;
    /* A firmware boot runs on the worker too: IDLE, RUNNING or DONE. */
    NpuJobState boot_state;
    struct npu_sim_boot boot;

    /* Finishes executed jobs and fetches the next one, under the BQL. */
    QEMUBH *pump_bh;
    /* Interrupts raised off the BQL are delivered from this BH. */
    QEMUBH *irq_bh;
    uint32_t pending_irqs;      /* atomic: bit n = MSI-X vector n */

    struct npu_sim *sim;
    Error *migration_blocker;
    uint32_t threads;           /* property: host threads per job, 0: auto */
};

/* ---- Host operations for firmware-sim ---- */

static bool npu_bus_master(NpuState *s)
{
    PCIDevice *pci = PCI_DEVICE(s);

    return pci_get_word(pci->config + PCI_COMMAND) & PCI_COMMAND_MASTER;
}

/*
 * DMA from the worker (a running job, a firmware boot) reaches RAM only:
 * MMIO would need the BQL, and the worker must never wait for it (unrealize
 * joins the worker with the BQL held). Descriptor fetches and completion
 * records, on the BQL, may still target any address.
 */
static int npu_dma(NpuState *s, uint64_t addr, void *buf, size_t len,
                   DMADirection dir)
{
    const char *what = dir == DMA_DIRECTION_TO_DEVICE ? "read" : "write";
    MemTxAttrs attrs = MEMTXATTRS_UNSPECIFIED;
    MemTxResult res;

    if (!bql_locked()) {
        attrs = (MemTxAttrs) { .memory = 1 };
    }

    if (!npu_bus_master(s)) {
        trace_npu_dma_error(what, addr, len, "bus mastering disabled");
        return -1;
    }
    if (len && addr + len - 1 < addr) {
        trace_npu_dma_error(what, addr, len, "wraps the address space");
        return -1;
    }
    res = pci_dma_rw(PCI_DEVICE(s), addr, buf, len, dir, attrs);
    if (res != MEMTX_OK) {
        trace_npu_dma_error(what, addr, len, attrs.memory ?
                            "bus error or not RAM" : "bus error");
        return -1;
    }
    return 0;
}

static int npu_host_dma_read(void *opaque, uint64_t addr, void *buf,
                             size_t len)
{
    return npu_dma(opaque, addr, buf, len, DMA_DIRECTION_TO_DEVICE);
}

static int npu_host_dma_write(void *opaque, uint64_t addr, const void *buf,
                              size_t len)
{
    return npu_dma(opaque, addr, (void *)buf, len, DMA_DIRECTION_FROM_DEVICE);
}

/* Called with the BQL held. */
static void npu_raise(NpuState *s, unsigned int vector)
{
    PCIDevice *pci = PCI_DEVICE(s);
    bool enabled = msix_enabled(pci);

    trace_npu_irq(vector, enabled);
    if (enabled && vector < NPU_MSIX_NUM_VECTORS) {
        msix_notify(pci, vector);
    }
    /* Without MSI-X the device has no interrupt: the host must poll. */
}

static void npu_irq_bh(void *opaque)
{
    NpuState *s = opaque;
    uint32_t pending = qatomic_xchg(&s->pending_irqs, 0);

    while (pending) {
        unsigned int vector = ctz32(pending);

        pending &= pending - 1;
        npu_raise(s, vector);
    }
}

static void npu_host_irq(void *opaque, unsigned int vector)
{
    NpuState *s = opaque;

    if (vector >= NPU_MSIX_NUM_VECTORS) {
        return;
    }
    if (bql_locked()) {
        npu_raise(s, vector);
    } else {
        /* firmware-sim raises interrupts on the BQL, but don't rely on it. */
        qatomic_or(&s->pending_irqs, 1u << vector);
        qemu_bh_schedule(s->irq_bh);
    }
}

static uint64_t npu_host_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static const struct npu_sim_host_ops npu_host_ops = {
    .dma_read = npu_host_dma_read,
    .dma_write = npu_host_dma_write,
    .irq = npu_host_irq,
    .now_ns = npu_host_now_ns,
};

/* ---- Job flow: pump (BQL) -> worker (execute) -> pump (finish) ---- */

/*
 * Finish an executed job and fetch the next one. Runs with the BQL and
 * s->lock held, inside our MMIO handler or the guarded pump BH, so DMA that
 * the guest points back at our own BAR is refused by QEMU's re-entrancy
 * guard instead of dead-locking on s->lock.
 */
static void npu_pump_locked(NpuState *s)
{
    if (s->boot_state == NPU_JOB_DONE) {
        trace_npu_boot_done(s->boot.status);
        npu_sim_boot_finish(s->sim, &s->boot);
        s->boot_state = NPU_JOB_IDLE;
    }
    if (s->boot_state == NPU_JOB_IDLE && !s->stopping &&
        npu_sim_boot_fetch(s->sim, &s->boot)) {
        trace_npu_boot_start(s->boot.addr, s->boot.size);
        s->boot_state = NPU_JOB_RUNNING;
        qemu_cond_signal(&s->cond);
    }
    if (s->job_state == NPU_JOB_DONE) {
        trace_npu_job_end(s->job.queue, s->job.desc.seqno,
                          s->job.result.status, s->job.result.cycles,
                          s->job.result.macs);
        if (s->job.result.status != NPU_JOB_OK) {
            trace_npu_job_fault(s->job.queue, s->job.desc.seqno,
                                s->job.result.status,
                                s->job.result.fault_addr);
        }
        npu_sim_job_finish(s->sim, &s->job);
        s->job_state = NPU_JOB_IDLE;
    }
    if (s->job_state != NPU_JOB_IDLE || s->stopping) {
        return;
    }
    if (!npu_sim_job_fetch(s->sim, &s->job)) {
        return;
    }
    if (s->job.hang) {
        trace_npu_job_hang(s->job.queue, s->job.desc.seqno);
        s->job_state = NPU_JOB_HUNG;
        return;
    }
    trace_npu_job_start(s->job.queue, s->job.desc.seqno, s->job.desc.context,
                        s->job.epoch);
    s->job_state = NPU_JOB_RUNNING;
    qemu_cond_signal(&s->cond);
}

static void npu_pump_bh(void *opaque)
{
    NpuState *s = opaque;

    qemu_mutex_lock(&s->lock);
    npu_pump_locked(s);
    qemu_mutex_unlock(&s->lock);
}

static void *npu_worker(void *opaque)
{
    NpuState *s = opaque;

    /* The DMA API walks RCU-protected flat views. */
    rcu_register_thread();
    qemu_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stopping && s->job_state != NPU_JOB_RUNNING &&
               s->boot_state != NPU_JOB_RUNNING) {
            qemu_cond_wait(&s->cond, &s->lock);
        }
        if (s->boot_state == NPU_JOB_RUNNING) {
            /* Up to 16 MiB of DMA and a CRC: never on the BQL. */
            qemu_mutex_unlock(&s->lock);
            npu_sim_boot_execute(s->sim, &s->boot);
            qemu_mutex_lock(&s->lock);
            s->boot_state = NPU_JOB_DONE;
            qemu_bh_schedule(s->pump_bh);
            continue;
        }
        if (s->job_state != NPU_JOB_RUNNING) {
            break;
        }
        /*
         * Unlocked: the threading contract of npu_sim.h lets registers be
         * accessed (and the device reset) while a job executes.
         */
        qemu_mutex_unlock(&s->lock);
        npu_sim_job_execute(s->sim, &s->job);
        qemu_mutex_lock(&s->lock);
        s->job_state = NPU_JOB_DONE;
        qemu_bh_schedule(s->pump_bh);
    }
    qemu_mutex_unlock(&s->lock);
    rcu_unregister_thread();
    return NULL;
}

/* Reset the simulator; with s->lock held. A running job ends as stale. */
static void npu_reset_sim_locked(NpuState *s, const char *why)
{
    trace_npu_reset(why);
    npu_sim_reg_write(s->sim, NPU_REG_CTRL, NPU_CTRL_RESET);
    if (s->job_state == NPU_JOB_HUNG) {
        s->job_state = NPU_JOB_IDLE;
    }
}

/* ---- BAR0 ---- */

static uint64_t npu_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    NpuState *s = opaque;
    uint32_t val;

    qemu_mutex_lock(&s->lock);
    val = npu_sim_reg_read(s->sim, addr);
    qemu_mutex_unlock(&s->lock);
    trace_npu_mmio_read(addr, val, size);
    return val;
}

static void npu_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    NpuState *s = opaque;
    bool is_doorbell = addr >= NPU_REG_QUEUE_BASE &&
        addr < NPU_REG_QUEUE(NPU_NUM_QUEUES, 0) &&
        (addr - NPU_REG_QUEUE_BASE) % NPU_REG_QUEUE_STRIDE ==
        NPU_QREG_DOORBELL;

    trace_npu_mmio_write(addr, val, size);
    qemu_mutex_lock(&s->lock);
    if (addr == NPU_REG_CTRL && (val & NPU_CTRL_RESET)) {
        npu_reset_sim_locked(s, "CTRL.RESET");
    } else {
        npu_sim_reg_write(s->sim, addr, val);
    }
    if (is_doorbell) {
        trace_npu_doorbell((addr - NPU_REG_QUEUE_BASE) / NPU_REG_QUEUE_STRIDE,
                           npu_sim_has_work(s->sim));
    }
    if ((s->job_state == NPU_JOB_IDLE && npu_sim_has_work(s->sim)) ||
        (addr == NPU_REG_FW_BOOT && s->boot_state == NPU_JOB_IDLE)) {
        npu_pump_locked(s);
    }
    qemu_mutex_unlock(&s->lock);
}

static const MemoryRegionOps npu_mmio_ops = {
    .read = npu_mmio_read,
    .write = npu_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /* Aligned 32-bit only: the memory core rejects anything else. */
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* ---- PCI device ---- */

static void npu_write_config(PCIDevice *pci, uint32_t addr, uint32_t val,
                             int len)
{
    pci_default_write_config(pci, addr, val, len);
    pcie_cap_flr_write_config(pci, addr, val, len);
}

static void npu_reset(DeviceState *dev)
{
    NpuState *s = NPU(dev);

    qemu_mutex_lock(&s->lock);
    npu_reset_sim_locked(s, "device reset");
    qemu_mutex_unlock(&s->lock);
    qatomic_set(&s->pending_irqs, 0);
}

static void npu_realize(PCIDevice *pci, Error **errp)
{
    NpuState *s = NPU(pci);
    unsigned int i, threads;

    pci_config_set_revision(pci->config, NPU_PCI_REVISION);

    if (s->threads > NPU_SIM_MAX_THREADS) {
        error_setg(errp, "npu: threads=%u is outside 0..%u "
                   "(0: two, or one on a single-CPU host)",
                   s->threads, NPU_SIM_MAX_THREADS);
        return;
    }

    /*
     * No vmstate: the device's state is firmware-sim's (2 MiB of SRAM, the
     * TLB, rings, counters) plus a job or boot that may be executing on
     * the worker thread in the middle of an instruction; saving it needs a
     * quiesce point in firmware-sim and a versioned description of its
     * private state, neither of which exists yet.
     */
    error_setg(&s->migration_blocker,
               "npu: simulator state and the job running on its worker "
               "thread cannot be migrated");
    if (migrate_add_blocker(&s->migration_blocker, errp) < 0) {
        return;
    }

    s->sim = npu_sim_create(&npu_host_ops, s);
    if (!s->sim) {
        error_setg(errp, "npu: out of memory creating the simulator");
        migrate_del_blocker(&s->migration_blocker);
        return;
    }
    npu_sim_set_async_boot(s->sim, true);
    threads = s->threads;
    if (!threads) {
        /*
         * Under TCG the guest's vCPU threads already keep the host's cores
         * busy: a second simulator thread only competes with them.
         */
        threads = !tcg_enabled() && sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
    }
    if (npu_sim_set_threads(s->sim, threads)) {
        error_setg(errp, "npu: cannot start %u simulator threads", threads);
        npu_sim_destroy(s->sim);
        s->sim = NULL;
        migrate_del_blocker(&s->migration_blocker);
        return;
    }

    memory_region_init_io(&s->mmio, OBJECT(s), &npu_mmio_ops, s, "npu-regs",
                          NPU_BAR_REGS_SIZE);
    pci_register_bar(pci, NPU_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->mmio);

    if (msix_init_exclusive_bar(pci, NPU_MSIX_NUM_VECTORS, NPU_BAR_MSIX,
                                errp)) {
        npu_sim_destroy(s->sim);
        s->sim = NULL;
        migrate_del_blocker(&s->migration_blocker);
        return;
    }
    for (i = 0; i < NPU_MSIX_NUM_VECTORS; i++) {
        msix_vector_use(pci, i);
    }

    if (pci_is_express(pci)) {
        pcie_endpoint_cap_init(pci, 0x80);
        pcie_cap_flr_init(pci);
    }

    qemu_mutex_init(&s->lock);
    qemu_cond_init(&s->cond);
    s->stopping = false;
    s->job_state = NPU_JOB_IDLE;
    s->boot_state = NPU_JOB_IDLE;
    s->pending_irqs = 0;
    s->pump_bh = qemu_bh_new_guarded(npu_pump_bh, s,
                                     &DEVICE(s)->mem_reentrancy_guard);
    s->irq_bh = qemu_bh_new_guarded(npu_irq_bh, s,
                                    &DEVICE(s)->mem_reentrancy_guard);
    qemu_thread_create(&s->worker, "npu-worker", npu_worker, s,
                       QEMU_THREAD_JOINABLE);
}

static void npu_exit(PCIDevice *pci)
{
    NpuState *s = NPU(pci);

    qemu_mutex_lock(&s->lock);
    s->stopping = true;
    /*
     * A reset makes a running job stop at its next page of DMA or its
     * next slice of an operation's work, whichever comes first.
     */
    npu_reset_sim_locked(s, "unrealize");
    qemu_cond_signal(&s->cond);
    qemu_mutex_unlock(&s->lock);
    /*
     * With the BQL held: the worker never waits for it (its DMA reaches
     * RAM only, see npu_dma()), so it ends within one page, one slice of work or one boot.
     */
    qemu_thread_join(&s->worker);

    qemu_bh_delete(s->pump_bh);
    qemu_bh_delete(s->irq_bh);
    qemu_cond_destroy(&s->cond);
    qemu_mutex_destroy(&s->lock);
    npu_sim_destroy(s->sim);
    s->sim = NULL;
    msix_uninit_exclusive_bar(pci);
    migrate_del_blocker(&s->migration_blocker);
}

static const VMStateDescription vmstate_npu = {
    .name = "npu",
    .unmigratable = 1,
};

static const Property npu_properties[] = {
    /* Host threads one job's instructions are split over (hardware.md). */
    DEFINE_PROP_UINT32("threads", NpuState, threads, 0),
};

static void npu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = npu_realize;
    k->exit = npu_exit;
    k->config_write = npu_write_config;
    k->vendor_id = NPU_PCI_VENDOR_ID;
    k->device_id = NPU_PCI_DEVICE_ID;
    k->revision = NPU_PCI_REVISION;
    k->class_id = NPU_PCI_CLASS;
    dc->desc = "NPU (firmware-sim) accelerator";
    dc->vmsd = &vmstate_npu;
    device_class_set_legacy_reset(dc, npu_reset);
    device_class_set_props(dc, npu_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo npu_info = {
    .name = TYPE_NPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(NpuState),
    .class_init = npu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void npu_register_types(void)
{
    type_register_static(&npu_info);
}

type_init(npu_register_types)
