/* SPDX-License-Identifier: MIT */
/*
 * npu_hw.h - the NPU hardware contract.
 *
 * This is the only description of the device: register map, job rings,
 * completion records, the device MMU's page-table format, the firmware
 * image format, the command-stream ISA and the error codes. firmware-sim
 * implements it, qemu-device exposes it, the kernel driver programs it and
 * the userspace code generator emits for it. Documentation/hardware.md
 * explains it register by register and opcode by opcode.
 *
 * Everything the device reads or writes in host memory is little-endian.
 * Structures below are laid out with natural alignment and no implicit
 * padding; the static assertions at the end pin their sizes.
 */
#ifndef NPU_HW_H
#define NPU_HW_H

/*
 * Fields of the host-memory structures the device reads or writes are
 * little-endian: in the kernel they are __le types, so sparse checks that
 * the driver converts (cpu_to_le*, le*_to_cpu); elsewhere the plain types.
 */
#ifdef __KERNEL__
#include <linux/types.h>
typedef __le16 npu_le16;
typedef __le32 npu_le32;
typedef __le64 npu_le64;
#else
#include <stdint.h>
typedef uint16_t npu_le16;
typedef uint32_t npu_le32;
typedef uint64_t npu_le64;
#endif

/* ---------------------------------------------------------------------------
 * Identity
 */
#define NPU_PCI_VENDOR_ID		0x1234	/* QEMU's test range */
#define NPU_PCI_DEVICE_ID		0x4e50	/* "NP" */
#define NPU_PCI_REVISION		0x01
#define NPU_PCI_CLASS			0x1200	/* processing accelerator */

#define NPU_BAR_REGS			0	/* BAR0: registers, 64 KiB */
#define NPU_BAR_REGS_SIZE		0x10000
#define NPU_BAR_MSIX			2	/* BAR2: MSI-X table and PBA */

#define NPU_ID_MAGIC			0x4e505530	/* "NPU0" */
#define NPU_HW_VERSION_MAJOR		1
#define NPU_HW_VERSION_MINOR		0
#define NPU_ISA_VERSION_MAJOR		1
#define NPU_ISA_VERSION_MINOR		6	/* 1.1: CONV2D zero insertion, RESIZE;
						   1.2: int16 activations (NPU_INSN_I16);
						   1.3: SOFTMAX, LAYERNORM, REDUCE;
						   1.4: CONV2D / MATMUL output LUT
						   (NPU_CONV_OUT_LUT);
						   1.5: MAC array modes
						   (NPU_CONV_ARRAY());
						   1.6: N:M sparse weights
						   (NPU_CONV_SPARSE()), the
						   DMA weight codec */
#define NPU_VERSION(major, minor)	(((major) << 16) | (minor))

/* Fixed device parameters, reported through the identity registers. */
#define NPU_NUM_QUEUES			2	/* queue 0: high priority, 1: normal */
#define NPU_NUM_CONTEXTS		64
#define NPU_MAC_ROWS			32	/* input-channel lanes */
#define NPU_MAC_COLS			32	/* output-channel lanes */
#define NPU_SRAM_SIZE			(2u << 20)	/* 2 MiB on-chip SRAM */
#define NPU_CLOCK_MHZ			1000
#define NPU_DMA_BYTES_PER_CYCLE		64
#define NPU_VECTOR_LANES		64	/* pool / eltwise / LUT per cycle */
#define NPU_VA_BITS			39
#define NPU_RING_MAX_ENTRIES		4096

/* MSI-X vectors: one completion vector per queue, then the error vector. */
#define NPU_MSIX_VEC_QUEUE(q)		(q)
#define NPU_MSIX_VEC_ERROR		NPU_NUM_QUEUES
#define NPU_MSIX_NUM_VECTORS		(NPU_NUM_QUEUES + 1)

/* ---------------------------------------------------------------------------
 * BAR0 register map. All registers are 32 bits wide and must be accessed
 * with aligned 32-bit loads and stores; 64-bit quantities are LO/HI pairs.
 * Reads of undefined offsets return 0, writes to them and to read-only
 * registers are ignored.
 */

/* Identity and capabilities (read-only). */
#define NPU_REG_ID			0x0000	/* NPU_ID_MAGIC */
#define NPU_REG_HW_VERSION		0x0004	/* NPU_VERSION(major, minor) */
#define NPU_REG_ISA_VERSION		0x0008	/* NPU_VERSION(major, minor) */
#define NPU_REG_CAPS			0x000c	/* NPU_CAP_* */
#define NPU_REG_NUM_QUEUES		0x0010
#define NPU_REG_NUM_CONTEXTS		0x0014
#define NPU_REG_MAC_SHAPE		0x0018	/* rows << 16 | cols */
#define NPU_REG_SRAM_SIZE		0x001c	/* bytes */
#define NPU_REG_CLOCK_MHZ		0x0020
#define NPU_REG_DMA_BYTES_PER_CYCLE	0x0024
#define NPU_REG_OP_MASK			0x0028	/* bit n: opcode n supported */
#define NPU_REG_VA_BITS			0x002c
#define NPU_REG_FW_VERSION		0x0030	/* from the booted image, else 0 */
#define NPU_REG_RING_MAX_ENTRIES	0x0034
#define NPU_REG_VECTOR_LANES		0x0038

#define NPU_CAP_INT8			(1u << 0)	/* int8 tensors */
#define NPU_CAP_INT32_BIAS		(1u << 1)
#define NPU_CAP_PER_CHANNEL_QUANT	(1u << 2)
#define NPU_CAP_DEPTHWISE		(1u << 3)
#define NPU_CAP_DILATION		(1u << 4)
#define NPU_CAP_MMU			(1u << 5)
#define NPU_CAP_WATCHDOG		(1u << 6)
#define NPU_CAP_TIMESTAMP		(1u << 7)
#define NPU_CAP_ZERO_INSERT		(1u << 8)	/* CONV2D ins_h / ins_w (ISA 1.1) */
#define NPU_CAP_RESIZE			(1u << 9)	/* RESIZE (ISA 1.1) */
#define NPU_CAP_INT16			(1u << 10)	/* NPU_INSN_I16, 16x8 (ISA 1.2) */
#define NPU_CAP_OUT_LUT			(1u << 11)	/* NPU_CONV_OUT_LUT (ISA 1.4) */
#define NPU_CAP_ARRAY_MODES		(1u << 12)	/* NPU_CONV_ARRAY() (ISA 1.5) */
#define NPU_CAP_SPARSE			(1u << 13)	/* NPU_CONV_SPARSE(), DMA codec (ISA 1.6) */

/*
 * Control and status. Writing NPU_CTRL_RESET resets every queue, the MMU,
 * the IRQ state and the counters, aborts the running job (its completion
 * record is not written) and returns the device to NPU_STATE_OFF. The bit
 * reads back as one while a DMA the aborted job started before the reset
 * is still in flight, and as zero once the device has stopped touching
 * host memory: poll it before reusing memory a job could reach.
 */
#define NPU_REG_CTRL			0x0100
#define   NPU_CTRL_RESET		(1u << 0)
#define NPU_REG_STATUS			0x0104	/* NPU_STATE_* in bits 3:0 */
#define   NPU_STATUS_STATE_MASK		0xfu
#define   NPU_STATUS_BUSY		(1u << 8)	/* a job is executing */
#define   NPU_STATUS_FAULT		(1u << 9)	/* fault regs hold a fault */
#define NPU_REG_SCRATCH			0x0108	/* read/write, for bus tests */

enum npu_state {
	NPU_STATE_OFF = 0,	/* after reset: waits for a firmware boot */
	NPU_STATE_BOOTING = 1,
	NPU_STATE_READY = 2,	/* firmware running, queues usable */
	NPU_STATE_FW_ERROR = 3,	/* boot refused: see NPU_REG_BOOT_STATUS */
};

/*
 * Firmware boot handshake: the host places an image (struct npu_fw_header
 * + payload) in host memory, writes its DMA address and size, then writes
 * NPU_BOOT_START to NPU_REG_FW_BOOT. The device DMAs the image in,
 * validates it, raises the error vector with NPU_IRQ_BOOT and reports
 * NPU_STATE_READY or NPU_STATE_FW_ERROR with the reason in BOOT_STATUS.
 */
#define NPU_REG_FW_ADDR_LO		0x0110
#define NPU_REG_FW_ADDR_HI		0x0114
#define NPU_REG_FW_SIZE			0x0118
#define NPU_REG_FW_BOOT			0x011c
#define   NPU_BOOT_START		0x1
#define NPU_REG_BOOT_STATUS		0x0120	/* enum npu_boot_status */

/*
 * The job on the engine: from its fetch until its completion record is
 * written (or a reset drops it), including a hung job. The device runs one
 * job at a time, so every other descriptor between HEAD and the doorbell
 * TAIL of either queue has not started. ACTIVE_SEQ is the descriptor's
 * seqno, ACTIVE_START the device clock (TIMESTAMP) at its fetch.
 */
#define NPU_REG_ACTIVE			0x0124
#define   NPU_ACTIVE_VALID		(1u << 31)
#define   NPU_ACTIVE_QUEUE_MASK		0xfu
#define NPU_REG_ACTIVE_SEQ_LO		0x0128
#define NPU_REG_ACTIVE_SEQ_HI		0x012c
#define NPU_REG_ACTIVE_START_LO		0x0130
#define NPU_REG_ACTIVE_START_HI		0x0134

enum npu_boot_status {
	NPU_BOOT_OK = 0,
	NPU_BOOT_BAD_MAGIC = 1,
	NPU_BOOT_BAD_VERSION = 2,	/* image built for another ABI major */
	NPU_BOOT_BAD_SIZE = 3,		/* size register vs header mismatch */
	NPU_BOOT_BAD_CHECKSUM = 4,
	NPU_BOOT_BAD_CONFIG = 5,	/* config section invalid */
	NPU_BOOT_DMA_ERROR = 6,		/* image address not readable */
	NPU_BOOT_NOT_OFF = 7,		/* boot requested while not OFF */
	NPU_BOOT_STATUS_COUNT
};

/* Printable names, indexed by status: the one table the driver and sim use. */
#define NPU_BOOT_STATUS_NAMES {					\
	[NPU_BOOT_OK] = "OK",					\
	[NPU_BOOT_BAD_MAGIC] = "BAD_MAGIC",			\
	[NPU_BOOT_BAD_VERSION] = "BAD_VERSION",			\
	[NPU_BOOT_BAD_SIZE] = "BAD_SIZE",			\
	[NPU_BOOT_BAD_CHECKSUM] = "BAD_CHECKSUM",		\
	[NPU_BOOT_BAD_CONFIG] = "BAD_CONFIG",			\
	[NPU_BOOT_DMA_ERROR] = "DMA_ERROR",			\
	[NPU_BOOT_NOT_OFF] = "NOT_OFF",				\
}

/*
 * Interrupts. STATUS latches events; an event raises its MSI-X vector when
 * its MASK bit is set. Writing 1s to ACK clears those STATUS bits.
 */
#define NPU_REG_IRQ_STATUS		0x0200	/* read-only */
#define NPU_REG_IRQ_MASK		0x0204	/* 1 = enabled, reset value 0 */
#define NPU_REG_IRQ_ACK			0x0208	/* write 1 to clear */
#define   NPU_IRQ_QUEUE_DONE(q)		(1u << (q))	/* vector q */
#define   NPU_IRQ_JOB_ERROR		(1u << 16)	/* error vector */
#define   NPU_IRQ_MMU_FAULT		(1u << 17)	/* error vector */
#define   NPU_IRQ_WATCHDOG		(1u << 18)	/* error vector */
#define   NPU_IRQ_BOOT			(1u << 19)	/* error vector */
#define   NPU_IRQ_ERROR_MASK		(0xfu << 16)

/*
 * Device MMU. CTX_TABLE points at NPU_NUM_CONTEXTS struct npu_ctx_entry in
 * host memory (4 KiB aligned). The device caches translations in a TLB;
 * after changing a context's page tables the host writes the context id to
 * MMU_INVALIDATE (or NPU_MMU_INVALIDATE_ALL) and reads it back until it
 * returns 0: the invalidation is complete once no DMA that may have used
 * an old translation is in flight (the register reads
 * NPU_MMU_INVALIDATE_PENDING until then). A zero CTX_TABLE faults (DMA).
 */
#define NPU_REG_CTX_TABLE_LO		0x0300
#define NPU_REG_CTX_TABLE_HI		0x0304
#define NPU_REG_MMU_INVALIDATE		0x0308
#define   NPU_MMU_INVALIDATE_ALL	0x80000000u
#define   NPU_MMU_INVALIDATE_PENDING	0x1u	/* read value */
/* First fault since the last FAULT_ACK write; later ones only count. */
#define NPU_REG_FAULT_STATUS		0x0310	/* enum npu_job_status or 0 */
#define NPU_REG_FAULT_CTX		0x0314
#define NPU_REG_FAULT_ADDR_LO		0x0318
#define NPU_REG_FAULT_ADDR_HI		0x031c
#define NPU_REG_FAULT_ACCESS		0x0320	/* NPU_ACCESS_READ / _WRITE */
#define NPU_REG_FAULT_ACK		0x0324	/* write any: clear fault regs */

#define NPU_ACCESS_READ			1
#define NPU_ACCESS_WRITE		2

/* Free-running device clock in nanoseconds since reset. */
#define NPU_REG_TIMESTAMP_LO		0x0400	/* reading LO latches HI */
#define NPU_REG_TIMESTAMP_HI		0x0404

/* Performance counters (read-only, 64 bits, reset by NPU_CTRL_RESET). */
#define NPU_REG_PERF_JOBS_LO		0x0410	/* jobs completed */
#define NPU_REG_PERF_JOBS_HI		0x0414
#define NPU_REG_PERF_CYCLES_LO		0x0418	/* modeled cycles, all jobs */
#define NPU_REG_PERF_CYCLES_HI		0x041c
#define NPU_REG_PERF_MACS_LO		0x0420	/* int8 MACs executed */
#define NPU_REG_PERF_MACS_HI		0x0424
#define NPU_REG_PERF_DMA_BYTES_LO	0x0428
#define NPU_REG_PERF_DMA_BYTES_HI	0x042c
#define NPU_REG_PERF_ERRORS		0x0430	/* jobs that ended in error */
#define NPU_REG_PERF_FAULTS		0x0434	/* MMU faults */

/*
 * Watchdog: a job whose modeled cycle count passes WATCHDOG_CYCLES is
 * aborted with NPU_JOB_ERR_WATCHDOG (0 disables it). The firmware config
 * supplies the value loaded at boot.
 */
#define NPU_REG_WATCHDOG_CYCLES		0x0440

/*
 * Debug: test hooks that make the device misbehave on purpose so that the
 * host's recovery paths can be exercised. DEBUG_HANG_NEXT makes the next
 * job that starts never complete until the device is reset.
 */
#define NPU_REG_DEBUG			0x0480
#define   NPU_DEBUG_HANG_NEXT		(1u << 0)

/*
 * Queues: NPU_NUM_QUEUES register blocks. The ring holds RING_SIZE
 * (a power of two, 1..NPU_RING_MAX_ENTRIES) struct npu_job_desc in host
 * memory, 64-byte aligned. The host writes descriptors, advances TAIL
 * (a free-running 32-bit index, slot = index % size) and writes the
 * doorbell. The device consumes from HEAD and advances it after each
 * completion record is written. When both queues have work the device
 * picks queue 0 first (between jobs; jobs are not preempted).
 * Writing QUEUE_CTRL with ENABLE clear stops the queue; a queue whose
 * registers are invalid when its doorbell rings is stopped with an error
 * in QUEUE_STATUS and raises NPU_IRQ_JOB_ERROR.
 */
#define NPU_REG_QUEUE_BASE		0x1000
#define NPU_REG_QUEUE_STRIDE		0x0100
#define NPU_REG_QUEUE(q, reg)		(NPU_REG_QUEUE_BASE + \
					 (q) * NPU_REG_QUEUE_STRIDE + (reg))
#define NPU_QREG_RING_BASE_LO		0x00
#define NPU_QREG_RING_BASE_HI		0x04
#define NPU_QREG_RING_SIZE		0x08	/* entries */
#define NPU_QREG_HEAD			0x0c	/* read-only */
#define NPU_QREG_TAIL			0x10
#define NPU_QREG_DOORBELL		0x14	/* write any value */
#define NPU_QREG_CTRL			0x18
#define   NPU_QUEUE_ENABLE		(1u << 0)
#define NPU_QREG_STATUS			0x1c	/* enum npu_queue_status */
#define NPU_QREG_PRIORITY		0x20	/* read-only: 0 is highest */
#define NPU_QREG_LAST_SEQ_LO		0x24	/* seqno of the last completion */
#define NPU_QREG_LAST_SEQ_HI		0x28

enum npu_queue_status {
	NPU_QUEUE_OK = 0,
	NPU_QUEUE_ERR_RING_BASE = 1,	/* base unaligned or unreadable */
	NPU_QUEUE_ERR_RING_SIZE = 2,	/* not a power of two in range */
	NPU_QUEUE_ERR_TAIL = 3,		/* tail - head > size */
	NPU_QUEUE_ERR_COMPLETION = 4,	/* completion record unwritable */
	NPU_QUEUE_ERR_NOT_READY = 5,	/* doorbell before firmware boot */
};

/* ---------------------------------------------------------------------------
 * Host-memory structures
 */

/* One job: 64 bytes in the queue's ring. */
struct npu_job_desc {
	npu_le32 context;	/* context id, < NPU_NUM_CONTEXTS */
	npu_le32 flags;		/* must be 0 */
	npu_le64 cmd_va;	/* command stream, device VA in the context */
	npu_le32 cmd_size;	/* bytes, multiple of 8 */
	npu_le32 reserved0;	/* must be 0 */
	npu_le64 seqno;		/* echoed in the completion record */
	npu_le64 completion_addr; /* host DMA address, 64-byte aligned */
	npu_le64 reserved1[3];	/* must be 0 */
};

/*
 * Written by the device when a job ends, fence last: the host treats the
 * record as valid once 'fence' equals NPU_COMPLETION_FENCE.
 */
struct npu_completion {
	npu_le32 status;	/* enum npu_job_status */
	npu_le32 error_offset;	/* byte offset of the failing instruction */
	npu_le64 seqno;
	npu_le64 start_ns;	/* device clock */
	npu_le64 end_ns;
	npu_le64 cycles;	/* modeled cycles */
	npu_le64 macs;		/* int8 MACs executed */
	npu_le64 fault_addr;	/* for NPU_JOB_ERR_MMU_* */
	npu_le32 queue;
	npu_le32 fence;		/* NPU_COMPLETION_FENCE, written last */
};

#define NPU_COMPLETION_FENCE		0x444f4e45	/* "DONE" */

enum npu_job_status {
	NPU_JOB_OK = 0,
	NPU_JOB_ERR_BAD_DESC = 1,	/* descriptor flags / reserved / size */
	NPU_JOB_ERR_BAD_CONTEXT = 2,	/* context id or its entry invalid */
	NPU_JOB_ERR_BAD_HEADER = 3,	/* stream magic / ISA major mismatch */
	NPU_JOB_ERR_TRUNCATED = 4,	/* instruction runs past the stream */
	NPU_JOB_ERR_BAD_OPCODE = 5,
	NPU_JOB_ERR_BAD_ENCODING = 6,	/* size field / reserved bits / flags */
	NPU_JOB_ERR_BAD_PARAM = 7,	/* zero / huge dims, bad enum, overflow */
	NPU_JOB_ERR_SRAM_BOUNDS = 8,	/* operand outside on-chip SRAM */
	NPU_JOB_ERR_MMU_UNMAPPED = 9,	/* no valid translation */
	NPU_JOB_ERR_MMU_PERM = 10,	/* mapping lacks read / write */
	NPU_JOB_ERR_DMA = 11,		/* host bus error on a translated address */
	NPU_JOB_ERR_WATCHDOG = 12,
	NPU_JOB_ERR_HAZARD = 13,	/* engines raced on SRAM without SYNC */
	NPU_JOB_ERR_ABORTED = 14,	/* reset while running (host-side use) */
	NPU_JOB_STATUS_COUNT
};

/* Printable names, indexed by status: the one table the driver and sim use. */
#define NPU_JOB_STATUS_NAMES {					\
	[NPU_JOB_OK] = "OK",					\
	[NPU_JOB_ERR_BAD_DESC] = "BAD_DESC",			\
	[NPU_JOB_ERR_BAD_CONTEXT] = "BAD_CONTEXT",		\
	[NPU_JOB_ERR_BAD_HEADER] = "BAD_HEADER",		\
	[NPU_JOB_ERR_TRUNCATED] = "TRUNCATED",			\
	[NPU_JOB_ERR_BAD_OPCODE] = "BAD_OPCODE",		\
	[NPU_JOB_ERR_BAD_ENCODING] = "BAD_ENCODING",		\
	[NPU_JOB_ERR_BAD_PARAM] = "BAD_PARAM",			\
	[NPU_JOB_ERR_SRAM_BOUNDS] = "SRAM_BOUNDS",		\
	[NPU_JOB_ERR_MMU_UNMAPPED] = "MMU_UNMAPPED",		\
	[NPU_JOB_ERR_MMU_PERM] = "MMU_PERM",			\
	[NPU_JOB_ERR_DMA] = "DMA",				\
	[NPU_JOB_ERR_WATCHDOG] = "WATCHDOG",			\
	[NPU_JOB_ERR_HAZARD] = "HAZARD",			\
	[NPU_JOB_ERR_ABORTED] = "ABORTED",			\
}

/* The context table: one 16-byte entry per context. */
struct npu_ctx_entry {
	npu_le64 pt_root;	/* top-level table address | NPU_CTX_VALID */
	npu_le64 reserved;	/* must be 0 */
};

#define NPU_CTX_VALID			(1ull << 0)

/*
 * Page tables: 3 levels of 512 x 64-bit entries, each table one 4 KiB page,
 * translating a 39-bit VA: level 2 indexes VA[38:30], level 1 VA[29:21],
 * level 0 VA[20:12]; leaves are level-0 entries for 4 KiB pages. A
 * non-leaf entry is VALID with the next table's address; a leaf is VALID
 * plus READ and/or WRITE with the page's address. VAs at or above
 * 1 << NPU_VA_BITS fault as unmapped.
 */
#define NPU_PAGE_SHIFT			12
#define NPU_PAGE_SIZE			(1ull << NPU_PAGE_SHIFT)
#define NPU_PT_LEVELS			3
#define NPU_PT_ENTRIES			512
#define NPU_PTE_VALID			(1ull << 0)
#define NPU_PTE_READ			(1ull << 1)
#define NPU_PTE_WRITE			(1ull << 2)
#define NPU_PTE_ADDR_MASK		0x000ffffffffff000ull
#define NPU_PT_INDEX(va, level)		(((va) >> (NPU_PAGE_SHIFT + 9 * (level))) & 0x1ff)

/* ---------------------------------------------------------------------------
 * Firmware image: header, then 'config_size' bytes of struct npu_fw_config
 * at 'config_offset', then the payload up to 'image_size'. The checksum is
 * the CRC-32 (IEEE 802.3, as zlib's crc32()) of the whole image with the
 * checksum field taken as zero.
 */
#define NPU_FW_MAGIC			0x5746504e	/* "NPFW" */
#define NPU_FW_ABI_MAJOR		1
#define NPU_FW_ABI_MINOR		0
#define NPU_FW_MAX_SIZE			(16u << 20)

struct npu_fw_header {
	npu_le32 magic;
	npu_le16 abi_major;	/* must equal NPU_FW_ABI_MAJOR */
	npu_le16 abi_minor;
	npu_le32 fw_version;	/* NPU_VERSION(major, minor) of the firmware */
	npu_le32 header_size;	/* sizeof(struct npu_fw_header) */
	npu_le32 image_size;	/* header + config + payload */
	npu_le32 checksum;
	npu_le32 config_offset;
	npu_le32 config_size;	/* sizeof(struct npu_fw_config) */
	char build_id[32];	/* NUL-terminated, informational */
};

struct npu_fw_config {
	npu_le32 watchdog_cycles;	/* loaded into NPU_REG_WATCHDOG_CYCLES */
	npu_le32 tlb_entries;		/* power of two, 1..4096 */
	npu_le32 op_mask;		/* opcodes enabled; subset of hardware */
	npu_le32 reserved[5];		/* must be 0 */
};

/* ---------------------------------------------------------------------------
 * Command-stream ISA, version 1.5 (NPU_ISA_VERSION_MINOR has the history)
 *
 * A command stream is a struct npu_cs_header followed by instructions.
 * Every instruction starts with struct npu_insn_header; 'size' is the
 * whole instruction in bytes and must equal the size of that opcode's
 * struct below. Reserved fields must be zero.
 *
 * Operands of compute instructions (CONV2D, MATMUL, POOL, ELTWISE, LUT,
 * RESIZE)
 * live in on-chip SRAM and are byte offsets into it. DMA instructions move
 * data between device virtual memory (through the context's MMU) and
 * SRAM; TIMESTAMP writes to device virtual memory.
 *
 * Execution is in program order. The timing model runs two engines, DMA
 * (DMA_COPY, DMA_FILL, TIMESTAMP) and COMPUTE (the rest), concurrently:
 * an instruction starts when its engine is free, or, with NPU_INSN_SYNC
 * (or a BARRIER), when both engines are. An instruction that touches SRAM
 * that an instruction on the other engine still in flight writes (or
 * writes SRAM that one still reads) is a hazard: the job fails with
 * NPU_JOB_ERR_HAZARD, so a code generator must place SYNC where data
 * crosses engines. Documentation/isa.md has the cycle formulas.
 */
#define NPU_CS_MAGIC			0x5343504e	/* "NPCS" */
#define NPU_CS_ALIGN			8
#define NPU_CS_MAX_SIZE			(64u << 20)

struct npu_cs_header {
	uint32_t magic;
	uint16_t isa_major;	/* must equal NPU_ISA_VERSION_MAJOR */
	uint16_t isa_minor;	/* <= NPU_ISA_VERSION_MINOR */
	uint32_t reserved[2];	/* must be 0 */
};

enum npu_opcode {
	NPU_OP_NOP = 0x00,
	NPU_OP_DMA_COPY = 0x01,
	NPU_OP_DMA_FILL = 0x02,
	NPU_OP_CONV2D = 0x10,
	NPU_OP_MATMUL = 0x11,
	NPU_OP_POOL = 0x12,
	NPU_OP_ELTWISE = 0x13,
	NPU_OP_LUT = 0x14,
	NPU_OP_RESIZE = 0x15,	/* ISA 1.1 */
	NPU_OP_SOFTMAX = 0x30,	/* ISA 1.3: row ops of the vector engine */
	NPU_OP_LAYERNORM = 0x31,	/* ISA 1.3 */
	NPU_OP_REDUCE = 0x32,	/* ISA 1.3 */
	NPU_OP_TIMESTAMP = 0x20,
	NPU_OP_BARRIER = 0x21,
};

/* Bit of an opcode in NPU_REG_OP_MASK / npu_fw_config.op_mask. */
#define NPU_OP_BIT(op)	(1u << ((((op) >> 4) * 8) + ((op) & 0xf)))
#define NPU_OP_MASK_ALL	(NPU_OP_BIT(NPU_OP_NOP) | NPU_OP_BIT(NPU_OP_DMA_COPY) | \
			 NPU_OP_BIT(NPU_OP_DMA_FILL) | NPU_OP_BIT(NPU_OP_CONV2D) | \
			 NPU_OP_BIT(NPU_OP_MATMUL) | NPU_OP_BIT(NPU_OP_POOL) | \
			 NPU_OP_BIT(NPU_OP_ELTWISE) | NPU_OP_BIT(NPU_OP_LUT) | \
			 NPU_OP_BIT(NPU_OP_RESIZE) | \
			 NPU_OP_BIT(NPU_OP_SOFTMAX) | NPU_OP_BIT(NPU_OP_LAYERNORM) | \
			 NPU_OP_BIT(NPU_OP_REDUCE) | \
			 NPU_OP_BIT(NPU_OP_TIMESTAMP) | NPU_OP_BIT(NPU_OP_BARRIER))

#define NPU_INSN_SYNC			(1u << 0)	/* wait for both engines */

/*
 * NPU_INSN_I16 (ISA 1.2), the 16x8 mode on CONV2D, MATMUL, POOL, ELTWISE,
 * LUT and RESIZE (BAD_ENCODING elsewhere): every activation operand is
 * int16, little-endian, 2 bytes per element (channel counts stay in
 * elements, strides and offsets in bytes). Activations are symmetric, so
 * every zp_* of an activation must be 0; weights stay int8 (zp_w as
 * before). CONV2D / MATMUL accumulate in 64 bits (wrapping) from an
 * int64 bias[n] (8 bytes each) and requantize with the same formula in
 * 128-bit arithmetic. ELTWISE's int64 formula is unchanged. The clamp is
 * [act_min * 256, act_max * 256 + 255]: -128..127 is the whole int16
 * range and act_min = 0 a ReLU. LUT: see below. Without the flag an
 * instruction means exactly what it meant in ISA 1.1.
 */
#define NPU_INSN_I16			(1u << 1)

struct npu_insn_header {
	uint8_t opcode;		/* enum npu_opcode */
	uint8_t flags;		/* NPU_INSN_* */
	uint16_t size;		/* bytes, including this header */
	uint32_t reserved;	/* must be 0 */
};

/* Operand address spaces for DMA. */
#define NPU_SPACE_VA			0	/* device virtual, via the MMU */
#define NPU_SPACE_SRAM			1

/*
 * DMA_COPY: 'rows' rows of 'row_bytes' bytes; row r is read at
 * src + r * src_stride and written at dst + r * dst_stride. A 1-D copy is
 * rows = 1. Source and destination must not overlap when both are SRAM.
 *
 * The weight codec (ISA 1.6): with codec NPU_DMA_CODEC_BLOCK the source is
 * a compressed stream of 'src_bytes' bytes in device VA that the DMA
 * engine decodes into the 'row_bytes' bytes written at SRAM 'dst' (rows 1,
 * src_space VA, dst_space SRAM; strides unused and 0). The stream is a
 * sequence of blocks, one per 16 output bytes (the last one shorter):
 *   header byte: bits 0..3 width w (0..8), bit 4 NPU_WCODEC_MASK, bits
 *   5..7 zero; with MASK a little-endian uint16 follows, bit i set when
 *   byte i of the block is nonzero (bits past the block's length zero);
 *   then the block's values (every byte, or the masked ones) as w-bit
 *   two's complement numbers packed LSB first, ceil(count * w / 8) bytes.
 * w = 0 is a block of zeros (no mask). The stream must end exactly at
 * src_bytes; a malformed one fails the job with BAD_PARAM at execution and
 * writes nothing. Without the codec src_bytes must be 0.
 */
#define NPU_DMA_CODEC_NONE		0
#define NPU_DMA_CODEC_BLOCK		1
#define NPU_WCODEC_BLOCK		16
#define NPU_WCODEC_MASK			(1u << 4)

struct npu_insn_dma_copy {
	struct npu_insn_header hdr;
	uint8_t src_space;	/* NPU_SPACE_* */
	uint8_t dst_space;
	uint16_t codec;		/* NPU_DMA_CODEC_* (ISA 1.6; reserved, 0, before) */
	uint32_t rows;
	uint64_t src;
	uint64_t dst;
	uint32_t row_bytes;
	uint32_t src_bytes;	/* the compressed stream with a codec, else 0 */
	uint64_t src_stride;
	uint64_t dst_stride;
};

/* DMA_FILL: like DMA_COPY with every destination byte set to 'value'. */
struct npu_insn_dma_fill {
	struct npu_insn_header hdr;
	uint8_t dst_space;
	uint8_t value;
	uint16_t reserved0;
	uint32_t rows;
	uint64_t dst;
	uint32_t row_bytes;
	uint32_t reserved1;
	uint64_t dst_stride;
};

/*
 * Requantization of an int32 accumulator to int8, per output channel c:
 *   out = clamp(zp_out + ((acc * mult[c] + (1 << (shift[c] - 1))) >> shift[c]),
 *               act_min, act_max)
 * computed in 64-bit arithmetic with an arithmetic right shift;
 * mult is int32 and shift in 1..62 (NPU_JOB_ERR_BAD_PARAM otherwise).
 * 'quant' points to SRAM holding int32 mult[n] then uint8 shift[n] (n =
 * output channels), or a single pair when NPU_QUANT_PER_TENSOR is set.
 */
#define NPU_QUANT_PER_TENSOR		(1u << 0)

/*
 * CONV2D, int8 NHWC, one image:
 *   input  [in_h][in_w][in_c] at 'input', rows in_row_stride bytes apart,
 *          pixels in_pixel_stride bytes apart (>= in_c);
 *   weight [out_c][k_h][k_w][in_c / groups] int8, dense;
 *   bias   int32[out_c] (bias = 0 with NPU_CONV_NO_BIAS);
 *   output [out_h][out_w][out_c] at 'output' with its own strides.
 * acc = bias[oc] + sum (x - zp_in) * (w - zp_w); padded positions read as
 * zp_in, i.e. contribute zero. out_h must equal
 * (in_h' + pad_top + pad_bottom - dil_h * (k_h - 1) - 1) / stride_h + 1,
 * likewise out_w. Depthwise is groups == in_c == out_c.
 * Zero insertion (ISA 1.1): the convolution runs over the input with ins_h
 * zero rows between adjacent rows (ins_w columns between columns), i.e.
 * in_h' = (in_h - 1) * (ins_h + 1) + 1; inserted positions read as zp_in.
 * A ConvTranspose with stride s is this with ins = s - 1, stride 1, the
 * kernel flipped and pads k - 1 - pad.
 */
#define NPU_CONV_NO_BIAS		(1u << 1)

/*
 * NPU_CONV_OUT_LUT (ISA 1.4), CONV2D and MATMUL: the output unit maps each
 * requantized, clamped int8 output o through the 256-byte int8 table at
 * SRAM offset 'lut': out = lut[o + 128] (as LUT does). The table is read
 * before any output byte is written. It costs no cycles: the table sits in
 * the MAC array's output pipeline. Int8 only (BAD_ENCODING with
 * NPU_INSN_I16); without the flag 'lut' must be 0.
 */
#define NPU_CONV_OUT_LUT		(1u << 2)

/*
 * MAC array modes (ISA 1.5), CONV2D and MATMUL flags bits 3..5: the 32 x 32
 * array is built of 8 x 8 blocks and can run as 'parts' sub-arrays of
 * rows x cols, each holding the same weights and fed its own output pixel
 * (MATMUL: row of a), as the MPE modes of Intel's NPU trade output
 * channels for pixels. A layer with 24 output channels fills 24 of 32
 * columns in mode 0 and all of them in mode 3. The mode changes cycles
 * only, never results; the input network delivers up to four vectors a
 * cycle. Modes 6 and 7 are BAD_ENCODING.
 *   mode  parts  rows x cols
 *   0     1      32 x 32
 *   1     2      32 x 16
 *   2     2      16 x 32
 *   3     4      32 x  8
 *   4     4      16 x 16
 *   5     4       8 x 32
 * The cycle model below uses the mode's rows, cols and parts in place of
 * MAC_ROWS, MAC_COLS and 1.
 */
#define NPU_CONV_ARRAY_SHIFT		3
#define NPU_CONV_ARRAY_MASK		(7u << NPU_CONV_ARRAY_SHIFT)
#define NPU_CONV_ARRAY(mode)		((uint32_t)(mode) << NPU_CONV_ARRAY_SHIFT)
#define NPU_ARRAY_NUM_MODES		6

/*
 * N:M sparse weights (ISA 1.6), CONV2D and MATMUL flags bits 8..15:
 * NPU_CONV_SPARSE(n, m) says the weights keep n of every m consecutive
 * input channels (MATMUL: elements of k) in each weight row (one output
 * channel and tap). m = 0 (n = 0) is dense; else 2 <= m <= 8, 1 <= n < m,
 * and m divides in_c / groups (MATMUL: k). Int8 only, no zero insertion.
 * With G = rows * K / m groups (rows = out_c * k_h * k_w taps, K = cin_g;
 * MATMUL rows = n, K = k) 'weight' holds G * n int8 values (group by
 * group, n each, in increasing position) then the G * n positions in the
 * group, ceil(log2 m) bits each, packed LSB first: ceil(G * n * bits / 8)
 * bytes. Positions must increase within a group and be < m (BAD_PARAM at
 * execution). The weights not kept are zp_w (they add nothing). The MAC
 * array's rows carry kept weights (each row's multiplexer picks its
 * activation by position), so cycles count cin_g * n / m rows, and a tile
 * whose kept weights are all zp_w is skipped (Documentation/isa.md).
 */
#define NPU_CONV_SPARSE_SHIFT		8
#define NPU_CONV_SPARSE_MASK		(0xffu << NPU_CONV_SPARSE_SHIFT)
#define NPU_CONV_SPARSE(n, m)		((((uint32_t)(n) & 0xf) | \
					  (((uint32_t)(m) & 0xf) << 4)) << \
					 NPU_CONV_SPARSE_SHIFT)
#define NPU_SPARSE_N(flags)		(((flags) >> NPU_CONV_SPARSE_SHIFT) & 0xf)
#define NPU_SPARSE_M(flags)		(((flags) >> (NPU_CONV_SPARSE_SHIFT + 4)) & 0xf)
#define NPU_SPARSE_MAX_M		8

struct npu_insn_conv2d {
	struct npu_insn_header hdr;
	uint32_t input;		/* SRAM offsets */
	uint32_t weight;
	uint32_t bias;
	uint32_t quant;
	uint32_t output;
	uint32_t flags;		/* NPU_QUANT_PER_TENSOR, NPU_CONV_NO_BIAS,
				   NPU_CONV_OUT_LUT, NPU_CONV_ARRAY(),
				   NPU_CONV_SPARSE() */
	uint16_t in_h, in_w;
	uint16_t in_c, out_c;
	uint16_t out_h, out_w;
	uint8_t k_h, k_w;
	uint8_t stride_h, stride_w;
	uint8_t dil_h, dil_w;
	uint8_t pad_top, pad_left, pad_bottom, pad_right;
	uint16_t groups;
	uint32_t in_row_stride, in_pixel_stride;
	uint32_t out_row_stride, out_pixel_stride;
	int16_t zp_in, zp_w, zp_out;	/* -128..127 */
	int8_t act_min, act_max;
	uint8_t ins_h, ins_w;	/* zero insertion (ISA 1.1); 0 = none */
	uint16_t reserved0;	/* must be 0 */
	uint32_t lut;		/* NPU_CONV_OUT_LUT's table (ISA 1.4), else 0 */
};

/*
 * MATMUL / fully connected: out[m][n] = requant(bias[n] +
 *   sum_k (a[m][k] - zp_a) * (b[n][k] - zp_b)), b stored [n][k] (as ONNX
 * Gemm with transB, i.e. FC weights). Rows of a and out are a_stride and
 * out_stride bytes apart.
 */
struct npu_insn_matmul {
	struct npu_insn_header hdr;
	uint32_t a, b, bias, quant, output;
	uint32_t flags;		/* NPU_QUANT_PER_TENSOR, NPU_CONV_NO_BIAS,
				   NPU_CONV_OUT_LUT, NPU_CONV_ARRAY(),
				   NPU_CONV_SPARSE() */
	uint32_t m, k, n;
	uint32_t a_stride, out_stride;
	int16_t zp_a, zp_b, zp_out;
	int8_t act_min, act_max;
	uint32_t lut;		/* NPU_CONV_OUT_LUT's table (ISA 1.4), else 0 */
};

/*
 * POOL, int8 NHWC (same tensor layout rules as CONV2D, channels = c):
 * MAX ignores padded positions; AVG divides the sum of (x - zp_in) by the
 * window count (padded positions included when NPU_POOL_COUNT_PAD) with
 * round-half-away-from-zero, then out = clamp(sum / count + zp_out).
 */
#define NPU_POOL_MAX			0
#define NPU_POOL_AVG			1
#define NPU_POOL_COUNT_PAD		(1u << 0)

struct npu_insn_pool {
	struct npu_insn_header hdr;
	uint32_t input, output;
	uint8_t mode;		/* NPU_POOL_MAX / NPU_POOL_AVG */
	uint8_t flags;		/* NPU_POOL_COUNT_PAD */
	uint16_t c;
	uint16_t in_h, in_w, out_h, out_w;
	uint8_t k_h, k_w, stride_h, stride_w;
	uint8_t pad_top, pad_left, pad_bottom, pad_right;
	uint32_t in_row_stride, in_pixel_stride;
	uint32_t out_row_stride, out_pixel_stride;
	int16_t zp_in, zp_out;
	int8_t act_min, act_max;
	uint8_t reserved0[2];
	uint32_t reserved1;
};

/*
 * ELTWISE over 'count' int8 elements, a and out dense; b broadcast as
 * NPU_BCAST_* (CHANNEL: b has 'channels' elements, element i uses
 * b[i % channels]; SCALAR: b[0]).
 *   ADD: acc = (a - zp_a) * mult_a + (b - zp_b) * mult_b       (int64)
 *   MUL: acc = (a - zp_a) * (b - zp_b) * mult_a                (int64)
 *   out = clamp(zp_out + ((acc + (1 << (shift - 1))) >> shift))
 */
#define NPU_ELT_ADD			0
#define NPU_ELT_MUL			1
/*
 * ELTWISE 'types' (ISA 1.2; reserved, so 0, before): which operands are
 * int16 (2-byte, zero point 0) when the header has no NPU_INSN_I16, which
 * makes all three int16 (types must then be 0). An int8 <-> int16
 * requantization is ADD with bcast SCALAR and mult_b 0. The clamp follows
 * the output's type (int16: [act_min * 256, act_max * 256 + 255]).
 */
#define NPU_ELT_A16			(1u << 0)
#define NPU_ELT_B16			(1u << 1)
#define NPU_ELT_OUT16			(1u << 2)
#define NPU_BCAST_NONE			0
#define NPU_BCAST_CHANNEL		1
#define NPU_BCAST_SCALAR		2

struct npu_insn_eltwise {
	struct npu_insn_header hdr;
	uint32_t a, b, output;
	uint32_t count;
	uint8_t mode;		/* NPU_ELT_* */
	uint8_t bcast;		/* NPU_BCAST_* */
	uint8_t shift;		/* 1..62 */
	uint8_t types;		/* NPU_ELT_A16 | B16 | OUT16 (ISA 1.2) */
	uint32_t channels;	/* for NPU_BCAST_CHANNEL */
	int32_t mult_a, mult_b;
	int16_t zp_a, zp_b, zp_out;
	int8_t act_min, act_max;
};

/*
 * LUT: out[i] = table[(uint8_t)(in[i] + 128)], table is 256 int8 in SRAM.
 * With NPU_INSN_I16 the table is 513 int16 (1026 bytes) sampled every 128
 * input steps and the device interpolates (as TFLite's int16 LUT):
 *   u = in[i] + 32768, j = u >> 7, f = u & 127,
 *   out[i] = t[j] + ((t[j + 1] - t[j]) * f + 64) >> 7   (arithmetic shift)
 */
struct npu_insn_lut {
	struct npu_insn_header hdr;
	uint32_t input, output, table;
	uint32_t count;
};

/*
 * RESIZE, int8 NHWC (same tensor layout rules as POOL, channels = c), on
 * the vector engine. Along each axis the input coordinate of output o is
 * the exact rational n / den with n = o * step + offset (int64): so
 *   i0 = floor(n / den), r = n - i0 * den (0 <= r < den),
 *   f  = (r << 16) / den   (Q16 weight of the next pixel, truncated),
 * and rows i0 and i0 + 1 are clamped to [0, in_h - 1] (likewise columns).
 * NEAREST: out = in[i0][j0]. BILINEAR:
 *   out = (sum of the 4 neighbours weighted (65536 - fy | fy) *
 *          (65536 - fx | fx) + 2^31) >> 32          (exact in 64 bits)
 * Zero points cancel (the weights sum to 2^32), so input and output share
 * their quantization. ONNX's coordinate modes are rationals: asymmetric
 * step = in, den = out; half_pixel step = 2 in, offset = in - out,
 * den = 2 out; align_corners step = in - 1, den = out - 1; and nearest
 * rounding (round_prefer_floor, ceil...) folds into offset. Integer-exact,
 * so a device and the simulator agree bit for bit.
 */
#define NPU_RESIZE_NEAREST		0
#define NPU_RESIZE_BILINEAR		1

struct npu_insn_resize {
	struct npu_insn_header hdr;
	uint32_t input, output;
	uint8_t mode;		/* NPU_RESIZE_* */
	uint8_t reserved0;	/* must be 0 */
	uint16_t c;
	uint16_t in_h, in_w, out_h, out_w;
	uint32_t in_row_stride, in_pixel_stride;
	uint32_t out_row_stride, out_pixel_stride;
	uint32_t step_h, step_w;	/* coordinate numerator per output pixel */
	int32_t offset_h, offset_w;	/* numerator at output 0 */
	uint32_t den_h, den_w;		/* denominator, >= 1 */
	uint32_t reserved1;	/* must be 0 */
};

/*
 * Row ops of the vector engine (ISA 1.3): SOFTMAX, LAYERNORM and REDUCE
 * work on 'rows' rows of 'c' (1..NPU_ROW_MAX_C) int8 elements (the
 * innermost axis), row r at
 * input + r * in_stride (>= c), its result at output + r * out_stride.
 * Every step is integer arithmetic, so any two implementations agree bit
 * for bit. clamp() below is to [act_min, act_max].
 *
 * SOFTMAX: per row, m = max x, e_i = table[m - x_i] (table: 256 uint32 in
 * SRAM, table[d] ~ exp(-d * input scale) in any fixed point the compiler
 * picks), sum = sum e_i (uint64), inv = floor(2^62 / sum) (sum = 0: every
 * output is clamp(zp_out)), and
 *   out_i = clamp(zp_out + ((e_i * inv * mult + 2^(shift-1)) >> shift))
 * in 128-bit unsigned arithmetic (e_i * inv <= 2^62, mult >= 0).
 */
struct npu_insn_softmax {
	struct npu_insn_header hdr;
	uint32_t input, output, table;
	uint32_t rows, c;
	uint32_t in_stride, out_stride;
	int32_t mult;		/* >= 0 */
	int16_t zp_out;
	int8_t act_min, act_max;
	uint8_t shift;		/* 1..126 */
	uint8_t reserved0;	/* must be 0 */
	uint16_t reserved1;	/* must be 0 */
};

/*
 * LAYERNORM: per row, with s1 = sum x_i, s2 = sum x_i^2 (int64; the zero
 * point cancels, so there is none):
 *   d_i = c * x_i - s1                    (c times the centered value)
 *   D   = c * s2 - s1^2 + eps             (c^2 times the variance; D = 0 -> 1)
 *   r   = isqrt(floor(2^62 / D))          (~ 2^31 / sqrt(D), floor sqrt)
 *   t_i = (d_i * r + 2^15) >> 16          (the normalized value in Q15)
 *   out_i = clamp(zp_out + ((t_i * mult[k] + bias[k] + 2^(shift-1)) >> shift))
 * with k = i the channel; params is int32 mult[c] then int32 bias[c]
 * (gamma / s_out and beta / s_out at the compiler's scale). eps is the
 * real epsilon times c^2 / s_in^2, rounded.
 */
struct npu_insn_layernorm {
	struct npu_insn_header hdr;
	uint32_t input, output, params;
	uint32_t rows, c;
	uint32_t in_stride, out_stride;
	uint32_t eps;
	int16_t zp_out;
	int8_t act_min, act_max;
	uint8_t shift;		/* 1..62 */
	uint8_t reserved0;	/* must be 0 */
	uint16_t reserved1;	/* must be 0 */
};

/*
 * REDUCE: one int8 per row, SUM: acc = sum (x_i - zp_in), MAX: acc =
 * max x_i - zp_in (int64), then
 *   out = clamp(zp_out + ((acc * mult + 2^(shift-1)) >> shift))
 * (a mean is SUM with 1 / c folded into mult). out_stride may be 1.
 */
#define NPU_ROW_MAX_C			65535
#define NPU_REDUCE_SUM			0
#define NPU_REDUCE_MAX			1

struct npu_insn_reduce {
	struct npu_insn_header hdr;
	uint32_t input, output;
	uint32_t rows, c;
	uint32_t in_stride, out_stride;
	int32_t mult;
	int16_t zp_in, zp_out;
	int8_t act_min, act_max;
	uint8_t mode;		/* NPU_REDUCE_* */
	uint8_t shift;		/* 1..62 */
	uint32_t reserved;	/* must be 0 */
};

/* TIMESTAMP: write the 64-bit device clock (ns) to 'va' (8-byte aligned). */
struct npu_insn_timestamp {
	struct npu_insn_header hdr;
	uint64_t va;
};

/* BARRIER: the header alone; equivalent to a NOP with NPU_INSN_SYNC. */
struct npu_insn_barrier {
	struct npu_insn_header hdr;
};

/* ---------------------------------------------------------------------------
 * Cycle model (Documentation/isa.md derives it):
 *   every instruction:  NPU_CYCLES_INSN_OVERHEAD
 *   DMA:      NPU_CYCLES_DMA_SETUP + rows * ceil(row_bytes / DMA_BYTES_PER_CYCLE)
 *             with the weight codec (1.6): DMA_SETUP + max(ceil(src_bytes /
 *             DMA_BYTES_PER_CYCLE), ceil(row_bytes / WCODEC_BYTES_PER_CYCLE))
 *   CONV2D:   ceil(out_h * out_w / parts) * taps_h * taps_w * groups
 *               * ceil(in_c/groups / MAC_ROWS) * ceil(out_c/groups / MAC_COLS)
 *             depthwise: ceil(out_h * out_w / (MAC_ROWS * parts))
 *               * taps_h * taps_w * ceil(c / MAC_COLS)
 *             taps_h = k_h without zero insertion, else the taps of the
 *             densest output phase: ceil(k_h / ((ins_h + 1) /
 *             gcd(dil_h, ins_h + 1))) (taps on inserted zeros are skipped)
 *             N:M sparse (1.6): ceil(out_h * out_w / parts) * the tiles of
 *             ceil(cin_g * n / m / MAC_ROWS) x ceil(cout_g / MAC_COLS) over
 *             taps and groups whose kept weights are not all zp_w
 *   MATMUL:   ceil(m / parts) * ceil(k / MAC_ROWS) * ceil(n / MAC_COLS)
 *             N:M sparse: ceil(m / parts) * the nonzero tiles of
 *             ceil(k * n_keep / m_group / MAC_ROWS) x ceil(n / MAC_COLS)
 *             (parts, and MAC_ROWS x MAC_COLS, from the array mode; 1 and
 *             32 x 32 in mode 0; npu_isa.h's npu_conv2d_cycles() and
 *             npu_matmul_cycles() compute both)
 *   POOL:     ceil(out_h * out_w * c * k_h * k_w / VECTOR_LANES)
 *   ELTWISE, LUT: ceil(count / VECTOR_LANES)
 *   RESIZE:   ceil(out_h * out_w * c * (NEAREST ? 1 : 4) / VECTOR_LANES)
 *   SOFTMAX:  rows * (3 * ceil(c / VECTOR_LANES) + VEC_ROW)  (max, exp+sum, scale)
 *   LAYERNORM: rows * (2 * ceil(c / VECTOR_LANES) + VEC_ROW) (sums, normalize)
 *   REDUCE:   rows * (ceil(c / VECTOR_LANES) + 1)
 *             VEC_ROW: the per-row reciprocal / rsqrt
 * NPU_INSN_I16 (16x8): an int16 x int8 product takes two MAC cells, so
 * CONV2D and MATMUL run at half rate (MAC_ROWS / 2 in place of MAC_ROWS);
 * the vector ops move 2-byte elements, so VECTOR_LANES / 2 in place of
 * VECTOR_LANES. DMA is per byte already.
 * A job's cycles are the time its last engine finishes.
 */
#define NPU_CYCLES_INSN_OVERHEAD	16
#define NPU_CYCLES_DMA_SETUP		64
#define NPU_WCODEC_BYTES_PER_CYCLE	256	/* the weight decoder's output */
#define NPU_CYCLES_VEC_ROW		8

/* The layouts are the contract; C++ users of this header check them too. */
#ifdef __cplusplus
#define NPU_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define NPU_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

NPU_STATIC_ASSERT(sizeof(struct npu_job_desc) == 64, "job descriptor size");
NPU_STATIC_ASSERT(sizeof(struct npu_completion) == 64, "completion size");
NPU_STATIC_ASSERT(sizeof(struct npu_ctx_entry) == 16, "context entry size");
NPU_STATIC_ASSERT(sizeof(struct npu_fw_header) == 64, "firmware header size");
NPU_STATIC_ASSERT(sizeof(struct npu_fw_config) == 32, "firmware config size");
NPU_STATIC_ASSERT(sizeof(struct npu_cs_header) == 16, "stream header size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_header) == 8, "insn header size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_dma_copy) == 56, "dma_copy size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_dma_fill) == 40, "dma_fill size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_conv2d) == 88, "conv2d size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_matmul) == 64, "matmul size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_pool) == 64, "pool size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_eltwise) == 48, "eltwise size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_lut) == 24, "lut size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_resize) == 72, "resize size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_softmax) == 48, "softmax size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_layernorm) == 48, "layernorm size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_reduce) == 48, "reduce size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_timestamp) == 16, "timestamp size");
NPU_STATIC_ASSERT(sizeof(struct npu_insn_barrier) == 8, "barrier size");

#endif /* NPU_HW_H */
