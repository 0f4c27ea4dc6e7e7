// SPDX-License-Identifier: MIT
/*
 * npu_hostile - abuse the NPU's BAR0 from a guest, as root, with no driver
 * bound, and prove that QEMU survives: every test ends with the device
 * still answering (ID reads NPU_ID_MAGIC) and a reset returning it to OFF.
 * That the program reaches its last line proves QEMU is alive.
 *
 * BAR0 is mapped through sysfs resource0. Host memory for the device
 * (firmware image, rings, completion records, page tables, command
 * streams) is single mlocked pages whose physical addresses come from
 * /proc/self/pagemap, so no physically contiguous buffer is needed.
 *
 * Output: TAP ("ok N - desc" / "not ok N - desc"), plan at the end.
 * Built static by tests/vm/run into build/vm/npu-hostile.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "npu_hw.h"

#define PAGE_SIZE	4096u
#define PCI_COMMAND_OFF	0x04
#define PCI_CMD_MEMORY	0x2
#define PCI_CMD_MASTER	0x4
#define MAX_PAGES	256

static volatile uint32_t *bar;
static uint64_t bar_pa;
static char dev_dir[512];
static char path_buf[600];
static int config_fd = -1;

static unsigned int test_no;
static unsigned int failures;

/* ---- TAP ---- */

static bool tap(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %u - ", cond ? "" : "not ", ++test_no);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		failures++;
	return cond;
}

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/* ---- registers ---- */

static uint32_t rd(uint32_t off)
{
	return bar[off / 4];
}

static void wr(uint32_t off, uint32_t val)
{
	bar[off / 4] = val;
}

static uint32_t qrd(unsigned int q, uint32_t reg)
{
	return rd(NPU_REG_QUEUE(q, reg));
}

static void qwr(unsigned int q, uint32_t reg, uint32_t val)
{
	wr(NPU_REG_QUEUE(q, reg), val);
}

static uint32_t state(void)
{
	return rd(NPU_REG_STATUS) & NPU_STATUS_STATE_MASK;
}

static void dev_reset(void)
{
	wr(NPU_REG_CTRL, NPU_CTRL_RESET);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait up to 'ms' for (reg & mask) == want. */
static bool wait_reg(uint32_t off, uint32_t mask, uint32_t want, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	do {
		if ((rd(off) & mask) == want)
			return true;
		usleep(100);
	} while (now_ms() < end);
	return (rd(off) & mask) == want;
}

/* The invariant after every abuse. */
static void check_alive(const char *after)
{
	uint32_t id = rd(NPU_REG_ID), st, ctrl;

	dev_reset();
	/* CTRL.RESET reads 1 until the device's DMA has stopped. */
	wait_reg(NPU_REG_CTRL, NPU_CTRL_RESET, 0, 1000);
	st = rd(NPU_REG_STATUS);
	ctrl = rd(NPU_REG_CTRL);
	tap(id == NPU_ID_MAGIC && (st & NPU_STATUS_STATE_MASK) == NPU_STATE_OFF &&
	    ctrl == 0,
	    "device answers and resets to OFF after %s (ID 0x%08x STATUS 0x%x)",
	    after, id, st);
}

/* ---- PCI plumbing through sysfs ---- */

static int read_hex(const char *dir, const char *file, unsigned long *val)
{
	char path[600], buf[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	*val = strtoul(buf, NULL, 16);
	return 0;
}

static int write_str(const char *dir, const char *file, const char *s)
{
	char path[600];
	int fd, n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (int)strlen(s) ? 0 : -1;
}

/*
 * The NPU with the lowest PCI address: with several (tools/npu-vm --npus),
 * the one 10-hostile.sh unbinds and disables (guest-lib.sh npu_pci_dev).
 */
static bool find_device(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d))) {
		char dir[512];
		unsigned long v, id;

		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", e->d_name);
		if (read_hex(dir, "vendor", &v) || read_hex(dir, "device", &id))
			continue;
		if (v == NPU_PCI_VENDOR_ID && id == NPU_PCI_DEVICE_ID &&
		    (!found || strcmp(dir, dev_dir) < 0)) {
			snprintf(dev_dir, sizeof(dev_dir), "%s", dir);
			found = true;
		}
	}
	closedir(d);
	return found;
}

static uint16_t pci_command(void)
{
	uint16_t cmd = 0;

	if (pread(config_fd, &cmd, 2, PCI_COMMAND_OFF) != 2)
		bail("read of the PCI command register failed: %s", strerror(errno));
	return cmd;
}

static void set_bus_master(bool on)
{
	uint16_t cmd = pci_command();

	cmd = on ? cmd | PCI_CMD_MASTER | PCI_CMD_MEMORY : cmd & ~PCI_CMD_MASTER;
	if (pwrite(config_fd, &cmd, 2, PCI_COMMAND_OFF) != 2)
		bail("write of the PCI command register failed: %s", strerror(errno));
}

static void open_device(void)
{
	char path[600], line[256];
	unsigned long long start = 0;
	FILE *f;
	int fd;

	if (!find_device())
		bail("no PCI device %04x:%04x", NPU_PCI_VENDOR_ID, NPU_PCI_DEVICE_ID);
	snprintf(path, sizeof(path), "%s/driver", dev_dir);
	if (access(path, F_OK) == 0)
		bail("%s is bound to a driver: run before loading npu.ko", dev_dir);
	if (write_str(dev_dir, "enable", "1"))
		bail("cannot enable %s: %s", dev_dir, strerror(errno));

	snprintf(path, sizeof(path), "%s/config", dev_dir);
	config_fd = open(path, O_RDWR);
	if (config_fd < 0)
		bail("open %s: %s", path, strerror(errno));
	set_bus_master(true);

	snprintf(path, sizeof(path), "%s/resource", dev_dir);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f))
		bail("read %s", path);
	fclose(f);
	start = strtoull(line, NULL, 16);
	bar_pa = start;

	snprintf(path, sizeof(path), "%s/resource0", dev_dir);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0)
		bail("open %s: %s", path, strerror(errno));
	bar = mmap(NULL, NPU_BAR_REGS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (bar == MAP_FAILED)
		bail("mmap %s: %s", path, strerror(errno));
	close(fd);
	diag("device %s, BAR0 at 0x%" PRIx64, dev_dir, bar_pa);
}

/* ---- host memory the device can DMA: pinned pages with known PAs ---- */

struct dma_page {
	void *va;
	uint64_t pa;
};

static int pagemap_fd = -1;

static struct dma_page page_alloc(void)
{
	struct dma_page p;
	uint64_t entry;
	void *va;

	va = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_LOCKED, -1, 0);
	if (va == MAP_FAILED)
		bail("mmap page: %s", strerror(errno));
	memset(va, 0, PAGE_SIZE);
	if (pread(pagemap_fd, &entry, 8, ((uintptr_t)va / PAGE_SIZE) * 8) != 8)
		bail("pagemap: %s", strerror(errno));
	if (!(entry & (1ull << 63)) || !(entry & ((1ull << 55) - 1)))
		bail("pagemap gives no PFN (not root?)");
	p.va = va;
	p.pa = (entry & ((1ull << 55) - 1)) * PAGE_SIZE;
	return p;
}

/* ---- firmware, MMU, jobs ---- */

static uint32_t crc32_ieee(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = 0xffffffffu;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
	}
	return ~crc;
}

static struct dma_page fw_page;

/*
 * Whether [pa, pa + len) lies in one "System RAM" range of /proc/iomem:
 * a device read beyond guest RAM ends in a DMA error, not a CRC mismatch.
 */
static bool ram_covers(uint64_t pa, uint64_t len)
{
	FILE *f = fopen("/proc/iomem", "r");
	unsigned long long lo, hi;
	char line[256];
	bool covered = false;

	if (!f)
		return false;
	while (!covered && fgets(line, sizeof(line), f))
		if (line[0] != ' ' && strstr(line, ": System RAM") &&
		    sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			covered = pa >= lo && pa + len - 1 <= hi;
	fclose(f);
	return covered;
}

#define FW_VERSION	NPU_VERSION(7, 3)

/* A valid image: header + config (watchdog off) + a small payload. */
static uint32_t build_firmware(void)
{
	struct npu_fw_header *h = fw_page.va;
	struct npu_fw_config *c = (void *)(h + 1);
	uint8_t *payload = (uint8_t *)(c + 1);

	memset(fw_page.va, 0, PAGE_SIZE);
	h->magic = NPU_FW_MAGIC;
	h->abi_major = NPU_FW_ABI_MAJOR;
	h->abi_minor = NPU_FW_ABI_MINOR;
	h->fw_version = FW_VERSION;
	h->header_size = sizeof(*h);
	h->image_size = sizeof(*h) + sizeof(*c) + 64;
	h->config_offset = sizeof(*h);
	h->config_size = sizeof(*c);
	snprintf(h->build_id, sizeof(h->build_id), "npu-hostile");
	c->watchdog_cycles = 0;
	c->tlb_entries = 64;
	c->op_mask = NPU_OP_MASK_ALL;
	for (int i = 0; i < 64; i++)
		payload[i] = (uint8_t)i;
	h->checksum = crc32_ieee(h, h->image_size);
	return h->image_size;
}

static uint32_t boot_at(uint64_t addr, uint32_t size)
{
	wr(NPU_REG_FW_ADDR_LO, (uint32_t)addr);
	wr(NPU_REG_FW_ADDR_HI, (uint32_t)(addr >> 32));
	wr(NPU_REG_FW_SIZE, size);
	wr(NPU_REG_FW_BOOT, NPU_BOOT_START);
	/* The device boots off the register path: wait while it is BOOTING. */
	wait_reg(NPU_REG_STATUS, NPU_STATUS_STATE_MASK, NPU_STATE_READY, 50);
	{
		uint64_t end = now_ms() + 5000;

		while (state() == NPU_STATE_BOOTING && now_ms() < end)
			usleep(100);
	}
	return rd(NPU_REG_BOOT_STATUS);
}

static bool boot_ok(void)
{
	uint32_t size = build_firmware();

	dev_reset();
	return boot_at(fw_page.pa, size) == NPU_BOOT_OK && state() == NPU_STATE_READY;
}

/* Context 0's page tables: a 3-level walk ending in one L0 table. */
static struct dma_page ctx_table, pt_l2, pt_l1, pt_l0;

#define VA_BASE		0x100000ull	/* L2 index 0, L1 index 0 */

static void mmu_init(void)
{
	struct npu_ctx_entry *ct = ctx_table.va;
	uint64_t *l2 = pt_l2.va, *l1 = pt_l1.va;

	memset(ctx_table.va, 0, PAGE_SIZE);
	memset(pt_l2.va, 0, PAGE_SIZE);
	memset(pt_l1.va, 0, PAGE_SIZE);
	memset(pt_l0.va, 0, PAGE_SIZE);
	ct[0].pt_root = pt_l2.pa | NPU_CTX_VALID;
	l2[NPU_PT_INDEX(VA_BASE, 2)] = pt_l1.pa | NPU_PTE_VALID;
	l1[NPU_PT_INDEX(VA_BASE, 1)] = pt_l0.pa | NPU_PTE_VALID;
}

/* Map page 'n' of the context VA window (VA_BASE + n * 4 KiB) to 'pa'. */
static uint64_t mmu_map(unsigned int n, uint64_t pa, uint64_t perms)
{
	uint64_t va = VA_BASE + (uint64_t)n * PAGE_SIZE;
	uint64_t *l0 = pt_l0.va;

	l0[NPU_PT_INDEX(va, 0)] = (pa & NPU_PTE_ADDR_MASK) | NPU_PTE_VALID | perms;
	return va;
}

static void mmu_program(void)
{
	wr(NPU_REG_CTX_TABLE_LO, (uint32_t)ctx_table.pa);
	wr(NPU_REG_CTX_TABLE_HI, (uint32_t)(ctx_table.pa >> 32));
	wr(NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);
}

/* A ring of 64 descriptors in one page and one page of completion records. */
#define RING_ENTRIES	64
static struct dma_page ring_page, compl_page;

static struct npu_job_desc *ring(void)
{
	return ring_page.va;
}

static volatile struct npu_completion *compl(unsigned int i)
{
	return (volatile struct npu_completion *)compl_page.va + i;
}

static void queue_setup(unsigned int q, uint64_t base, uint32_t size)
{
	qwr(q, NPU_QREG_RING_BASE_LO, (uint32_t)base);
	qwr(q, NPU_QREG_RING_BASE_HI, (uint32_t)(base >> 32));
	qwr(q, NPU_QREG_RING_SIZE, size);
	qwr(q, NPU_QREG_CTRL, NPU_QUEUE_ENABLE);
}

/* Command stream pages: up to 32 pages mapped at VA_BASE + 16 pages on. */
#define CS_FIRST_PAGE	16
#define CS_MAX_PAGES	32
static struct dma_page cs_pages[CS_MAX_PAGES];
static uint8_t cs_buf[CS_MAX_PAGES * PAGE_SIZE];
static uint32_t cs_len;

static void cs_begin(void)
{
	struct npu_cs_header h = {
		.magic = NPU_CS_MAGIC,
		.isa_major = NPU_ISA_VERSION_MAJOR,
		.isa_minor = NPU_ISA_VERSION_MINOR,
	};

	memcpy(cs_buf, &h, sizeof(h));
	cs_len = sizeof(h);
}

static void cs_emit(const void *insn, size_t size)
{
	if (cs_len + size > sizeof(cs_buf))
		bail("command stream too long");
	memcpy(cs_buf + cs_len, insn, size);
	cs_len += size;
}

/* Copy the stream into its pages and map them; returns its VA. */
static uint64_t cs_commit(void)
{
	for (unsigned int i = 0; i * PAGE_SIZE < cs_len; i++) {
		memcpy(cs_pages[i].va, cs_buf + i * PAGE_SIZE, PAGE_SIZE);
		mmu_map(CS_FIRST_PAGE + i, cs_pages[i].pa, NPU_PTE_READ);
	}
	return VA_BASE + CS_FIRST_PAGE * PAGE_SIZE;
}

static void cs_nop(void)
{
	struct npu_insn_header nop = { .opcode = NPU_OP_NOP, .size = 8 };

	cs_emit(&nop, sizeof(nop));
}

static void cs_fill_sram(unsigned int count)
{
	struct npu_insn_dma_fill f = {
		.hdr = { .opcode = NPU_OP_DMA_FILL, .size = sizeof(f) },
		.dst_space = NPU_SPACE_SRAM,
		.rows = 1,
		.dst = 0,
		.row_bytes = NPU_SRAM_SIZE,
	};

	for (unsigned int i = 0; i < count; i++) {
		f.value = (uint8_t)i;
		cs_emit(&f, sizeof(f));
	}
}

/* Fill a descriptor for context 0 with completion record 'slot'. */
static void desc_set(unsigned int idx, uint64_t cmd_va, uint32_t cmd_size,
		     unsigned int slot, uint64_t seqno)
{
	struct npu_job_desc *d = &ring()[idx % RING_ENTRIES];

	memset(d, 0, sizeof(*d));
	d->context = 0;
	d->cmd_va = cmd_va;
	d->cmd_size = cmd_size;
	d->seqno = seqno;
	d->completion_addr = compl_page.pa + slot * sizeof(struct npu_completion);
	memset((void *)compl(slot), 0, sizeof(struct npu_completion));
}

static bool wait_fence(unsigned int slot, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	do {
		if (compl(slot)->fence == NPU_COMPLETION_FENCE)
			return true;
		usleep(100);
	} while (now_ms() < end);
	return compl(slot)->fence == NPU_COMPLETION_FENCE;
}

/* Boot, map, set queue 0 up on the ring. */
static bool ready_device(void)
{
	set_bus_master(true);
	if (!boot_ok())
		return false;
	mmu_init();
	mmu_program();
	queue_setup(0, ring_page.pa, RING_ENTRIES);
	return true;
}

/* Submit one job on queue 0 and wait for its completion record. */
static bool run_one(uint64_t cmd_va, uint32_t cmd_size, uint32_t *status)
{
	uint32_t head = qrd(0, NPU_QREG_HEAD);

	desc_set(head, cmd_va, cmd_size, 0, 0x1000 + head);
	__sync_synchronize();
	qwr(0, NPU_QREG_TAIL, head + 1);
	qwr(0, NPU_QREG_DOORBELL, 1);
	if (!wait_fence(0, 5000))
		return false;
	*status = compl(0)->status;
	return true;
}

/* ---- the tests ---- */

static void test_identity(void)
{
	tap(rd(NPU_REG_ID) == NPU_ID_MAGIC, "ID register reads NPU_ID_MAGIC");
	tap(rd(NPU_REG_HW_VERSION) ==
	    NPU_VERSION(NPU_HW_VERSION_MAJOR, NPU_HW_VERSION_MINOR),
	    "HW_VERSION is %u.%u", NPU_HW_VERSION_MAJOR, NPU_HW_VERSION_MINOR);
	tap(rd(NPU_REG_NUM_QUEUES) == NPU_NUM_QUEUES, "NUM_QUEUES is %u",
	    NPU_NUM_QUEUES);
	wr(NPU_REG_SCRATCH, 0xa5a55a5a);
	tap(rd(NPU_REG_SCRATCH) == 0xa5a55a5a, "SCRATCH holds a written value");
	check_alive("the identity reads");
}

/* Byte, halfword, quadword and unaligned accesses: all invalid, none fatal. */
static void test_odd_accesses(void)
{
	volatile uint8_t *b8 = (volatile uint8_t *)bar;
	volatile uint16_t *b16 = (volatile uint16_t *)bar;
	volatile uint64_t *b64 = (volatile uint64_t *)bar;
	uint32_t sink = 0;

	for (uint32_t off = 0; off < 0x2000; off++) {
		sink += b8[off];
		b8[off] = 0xff;
	}
	check_alive("8-bit reads and writes to 8 KiB of BAR0");
	for (uint32_t off = 0; off < 0x2000; off += 2) {
		sink += b16[off / 2];
		b16[off / 2] = 0xffff;
	}
	check_alive("16-bit reads and writes to 8 KiB of BAR0");
	for (uint32_t off = 0; off < 0x2000; off += 8) {
		sink += (uint32_t)b64[off / 8];
		b64[off / 8] = ~0ull;
	}
	check_alive("64-bit reads and writes to 8 KiB of BAR0");
	for (uint32_t off = 1; off < 0x2000; off += 4) {
		volatile uint32_t *u = (volatile uint32_t *)(b8 + off);

		sink += *u;
		*u = 0xffffffff;
		u = (volatile uint32_t *)(b8 + off + 1);
		sink += *u;
		*u = 0;
	}
	check_alive("unaligned 32-bit reads and writes to 8 KiB of BAR0");
	(void)sink;
}

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Garbage into every 32-bit register slot of BAR0, then read all back. */
static void test_garbage(void)
{
	static const char *const names[] = {
		"all-ones in every register", "zero in every register",
		"random garbage in every register (seed round 1)",
		"random garbage in every register (seed round 2)",
		"random garbage in every register (seed round 3)",
	};
	uint32_t seed = 0x12345678;

	for (unsigned int round = 0; round < 5; round++) {
		uint32_t sink = 0;

		for (uint32_t off = 0; off < NPU_BAR_REGS_SIZE; off += 4) {
			uint32_t v = round == 0 ? ~0u : round == 1 ? 0 : xorshift(&seed);

			wr(off, v);
		}
		for (uint32_t off = 0; off < NPU_BAR_REGS_SIZE; off += 4)
			sink += rd(off);
		(void)sink;
		check_alive(names[round]);
	}
}

static void test_boot_abuse(void)
{
	uint32_t size = build_firmware(), st;
	struct npu_fw_header *h = fw_page.va;

	dev_reset();
	st = boot_at(bar_pa, size);
	tap(st == NPU_BOOT_DMA_ERROR || st == NPU_BOOT_BAD_MAGIC,
	    "boot from BAR0's own address fails (BOOT_STATUS %u)", st);
	check_alive("a firmware boot from BAR0");

	st = boot_at(1ull << 45, size);
	tap(st == NPU_BOOT_DMA_ERROR, "boot from unbacked 2^45 is DMA_ERROR (%u)", st);
	check_alive("a firmware boot from unbacked memory");

	st = boot_at(~0ull - 16, size);
	tap(st == NPU_BOOT_DMA_ERROR, "boot from the top of the address space is DMA_ERROR (%u)", st);
	check_alive("a firmware boot at the top of the address space");

	st = boot_at(0xfffff000, size);
	tap(st != NPU_BOOT_OK && state() == NPU_STATE_FW_ERROR,
	    "boot from the BIOS ROM at 0xfffff000 fails (%u)", st);
	check_alive("a firmware boot from ROM");

	st = boot_at(fw_page.pa, 0xffffffff);
	tap(st == NPU_BOOT_BAD_SIZE, "boot with size 4 GiB-1 is BAD_SIZE (%u)", st);
	check_alive("a firmware boot with a huge size");

	h->checksum ^= 1;
	st = boot_at(fw_page.pa, size);
	tap(st == NPU_BOOT_BAD_CHECKSUM, "boot with a bad checksum is BAD_CHECKSUM (%u)", st);
	check_alive("a firmware boot with a bad checksum");

	size = build_firmware();
	set_bus_master(false);
	st = boot_at(fw_page.pa, size);
	tap(st == NPU_BOOT_DMA_ERROR && state() == NPU_STATE_FW_ERROR,
	    "boot with bus mastering disabled is DMA_ERROR (%u)", st);
	set_bus_master(true);
	check_alive("a firmware boot without bus mastering");

	st = boot_at(fw_page.pa, size);
	tap(st == NPU_BOOT_OK && state() == NPU_STATE_READY &&
	    rd(NPU_REG_FW_VERSION) == FW_VERSION,
	    "a valid image boots to READY with its version (%u)", st);
	st = boot_at(fw_page.pa, size);
	tap(st == NPU_BOOT_NOT_OFF, "a second boot is NOT_OFF (%u)", st);
	check_alive("booting twice");

	/*
	 * A 16 MiB image (our header page, then whatever RAM follows it: the
	 * CRC cannot match) is read and checked off the register path: the
	 * FW_BOOT write returns with the device BOOTING, which then ends in
	 * BAD_CHECKSUM, or DMA_ERROR when the page sits less than 16 MiB
	 * below the end of guest RAM. A device that boots inside the MMIO
	 * write reads FW_ERROR at once.
	 */
	{
		bool in_ram = ram_covers(fw_page.pa, NPU_FW_MAX_SIZE);
		uint32_t expect = in_ram ? NPU_BOOT_BAD_CHECKSUM :
					   NPU_BOOT_DMA_ERROR;
		uint32_t seen;

		build_firmware();
		h->image_size = NPU_FW_MAX_SIZE;
		dev_reset();
		wr(NPU_REG_FW_ADDR_LO, (uint32_t)fw_page.pa);
		wr(NPU_REG_FW_ADDR_HI, (uint32_t)(fw_page.pa >> 32));
		wr(NPU_REG_FW_SIZE, NPU_FW_MAX_SIZE);
		wr(NPU_REG_FW_BOOT, NPU_BOOT_START);
		seen = state();
		wait_reg(NPU_REG_STATUS, NPU_STATUS_STATE_MASK, NPU_STATE_FW_ERROR,
			 5000);
		st = rd(NPU_REG_BOOT_STATUS);
		tap(seen == NPU_STATE_BOOTING,
		    "a 16 MiB boot runs off the register path (STATUS right after "
		    "FW_BOOT: %u)", seen);
		tap(st == expect && state() == NPU_STATE_FW_ERROR,
		    "a 16 MiB image ends %s (%u)", in_ram ?
		    "BAD_CHECKSUM: its CRC cannot match" :
		    "DMA_ERROR: it runs past guest RAM", st);
		check_alive("a 16 MiB boot");
	}
}

static void test_nop_job(void)
{
	uint32_t status = ~0u;
	uint64_t va;
	bool done;

	if (!tap(ready_device(), "device boots for the job tests"))
		return;
	cs_begin();
	cs_nop();
	va = cs_commit();
	done = run_one(va, cs_len, &status);
	tap(done && status == NPU_JOB_OK && compl(0)->seqno == 0x1000,
	    "a NOP job completes OK through the ring (status %u)", status);
	tap(qrd(0, NPU_QREG_HEAD) == 1 && qrd(0, NPU_QREG_LAST_SEQ_LO) == 0x1000,
	    "HEAD and LAST_SEQ advance after the job");
	check_alive("a NOP job");
}

/* Queue registers that make no sense: each must stop the queue with an error. */
static void test_ring_abuse(void)
{
	static const struct {
		const char *what;
		uint64_t base;
		uint32_t size, tail;
		uint32_t want;	/* queue status, or ~0 for any error */
	} cases[] = {
		{ "ring size 0", 0, 0, 1, NPU_QUEUE_ERR_RING_SIZE },
		{ "ring size 3 (not a power of two)", 0, 3, 1, NPU_QUEUE_ERR_RING_SIZE },
		{ "ring size 8192 (above the maximum)", 0, 8192, 1, NPU_QUEUE_ERR_RING_SIZE },
		{ "ring size 0xffffffff", 0, 0xffffffff, 1, NPU_QUEUE_ERR_RING_SIZE },
		{ "tail 65 entries past head on a 64-entry ring", 0, 64, 65, NPU_QUEUE_ERR_TAIL },
		{ "tail 0x80000000", 0, 64, 0x80000000u, NPU_QUEUE_ERR_TAIL },
		{ "tail 0xffffffff (behind head)", 0, 64, 0xffffffffu, NPU_QUEUE_ERR_TAIL },
		{ "ring base not 64-byte aligned", 8, 64, 1, NPU_QUEUE_ERR_RING_BASE },
		{ "ring base at BAR0's own address", 1, 64, 1, NPU_QUEUE_ERR_RING_BASE },
		{ "ring base in unbacked memory (2^45)", 2, 64, 4, NPU_QUEUE_ERR_RING_BASE },
		{ "ring base wrapping the address space", 3, 4096, 4096, NPU_QUEUE_ERR_RING_BASE },
	};

	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t base = cases[i].base;
		uint32_t st;

		if (!ready_device()) {
			tap(false, "%s: device boots", cases[i].what);
			continue;
		}
		if (base == 0)
			base = ring_page.pa;
		else if (base == 1)
			base = bar_pa;
		else if (base == 2)
			base = 1ull << 45;
		else if (base == 3)
			base = ~0ull - 63;
		else
			base = ring_page.pa + base;
		for (unsigned int j = 0; j < RING_ENTRIES; j++)
			desc_set(j, VA_BASE, 24, j % 64, j);
		queue_setup(0, base, cases[i].size);
		qwr(0, NPU_QREG_TAIL, cases[i].tail);
		qwr(0, NPU_QREG_DOORBELL, 1);
		wait_reg(NPU_REG_QUEUE(0, NPU_QREG_STATUS), ~0u, cases[i].want, 200);
		st = qrd(0, NPU_QREG_STATUS);
		tap(st == cases[i].want && !(qrd(0, NPU_QREG_CTRL) & NPU_QUEUE_ENABLE) &&
		    (rd(NPU_REG_IRQ_STATUS) & NPU_IRQ_JOB_ERROR),
		    "%s stops the queue with status %u (got %u) and JOB_ERROR",
		    cases[i].what, cases[i].want, st);
		check_alive(cases[i].what);
	}

	/* The BIOS ROM reads as zeros there: descriptors are invalid, not fatal. */
	if (ready_device()) {
		queue_setup(0, 0xfffff000, 1);
		qwr(0, NPU_QREG_TAIL, 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		usleep(20000);
		tap(rd(NPU_REG_ID) == NPU_ID_MAGIC, "ring base in the BIOS ROM (0xfffff000) is survived");
	}
	check_alive("a ring in ROM");

	/* Doorbell before boot. */
	dev_reset();
	queue_setup(0, ring_page.pa, RING_ENTRIES);
	qwr(0, NPU_QREG_TAIL, 1);
	qwr(0, NPU_QREG_DOORBELL, 1);
	tap(qrd(0, NPU_QREG_STATUS) == NPU_QUEUE_ERR_NOT_READY,
	    "a doorbell before firmware boot is NOT_READY (%u)", qrd(0, NPU_QREG_STATUS));
	check_alive("a doorbell before boot");
}

static void test_doorbell_storm(void)
{
	uint64_t t0, va;
	bool all = true;
	unsigned int i;

	/* 100k doorbells on an empty, valid queue and on a stopped one. */
	if (!tap(ready_device(), "device boots for the doorbell storms"))
		return;
	t0 = now_ms();
	for (i = 0; i < 100000; i++)
		qwr(0, NPU_QREG_DOORBELL, i);
	tap(qrd(0, NPU_QREG_STATUS) == NPU_QUEUE_OK && qrd(0, NPU_QREG_HEAD) == 0,
	    "100k doorbells on an empty queue do nothing (%" PRIu64 " ms)", now_ms() - t0);
	for (i = 0; i < 100000; i++)
		qwr(1, NPU_QREG_DOORBELL, i);
	tap(qrd(1, NPU_QREG_STATUS) == NPU_QUEUE_ERR_RING_SIZE,
	    "100k doorbells on an unconfigured queue leave one error (%u)",
	    qrd(1, NPU_QREG_STATUS));
	check_alive("doorbell storms on idle queues");

	/* 64 jobs in the ring, a doorbell storm while they run. */
	if (!ready_device())
		return;
	cs_begin();
	cs_nop();
	va = cs_commit();
	for (i = 0; i < RING_ENTRIES; i++)
		desc_set(i, va, cs_len, i, 100 + i);
	__sync_synchronize();
	qwr(0, NPU_QREG_TAIL, RING_ENTRIES);
	for (i = 0; i < 100000; i++)
		qwr(0, NPU_QREG_DOORBELL, i);
	for (i = 0; i < RING_ENTRIES; i++)
		if (!wait_fence(i, 5000) || compl(i)->status != NPU_JOB_OK ||
		    compl(i)->seqno != 100 + i)
			all = false;
	tap(all && qrd(0, NPU_QREG_HEAD) == RING_ENTRIES,
	    "64 jobs under a 100k doorbell storm all complete in order (HEAD %u)",
	    qrd(0, NPU_QREG_HEAD));
	check_alive("a doorbell storm with jobs");
}

/* Descriptors and page tables pointing where they must not. */
static void test_bad_descriptors(void)
{
	static struct dma_page data_page;
	struct npu_insn_dma_copy copy = {
		.hdr = { .opcode = NPU_OP_DMA_COPY, .size = sizeof(copy) },
		.src_space = NPU_SPACE_VA,
		.dst_space = NPU_SPACE_SRAM,
		.rows = 1,
		.row_bytes = PAGE_SIZE,
	};
	struct npu_insn_dma_fill fill = {
		.hdr = { .opcode = NPU_OP_DMA_FILL, .size = sizeof(fill) },
		.dst_space = NPU_SPACE_VA,
		.value = 0xff,
		.rows = 1,
		.row_bytes = PAGE_SIZE,
	};
	uint32_t status = ~0u, head;
	uint64_t va;
	bool done;

	if (!data_page.va)
		data_page = page_alloc();

	/* Command stream VA that nothing maps. */
	if (ready_device()) {
		cs_begin();
		cs_nop();
		cs_commit();
		done = run_one(VA_BASE + 200 * PAGE_SIZE, cs_len, &status);
		tap(done && status == NPU_JOB_ERR_MMU_UNMAPPED,
		    "a command stream at an unmapped VA fails MMU_UNMAPPED (%u)", status);
		tap(rd(NPU_REG_FAULT_STATUS) == NPU_JOB_ERR_MMU_UNMAPPED,
		    "the fault registers latch it");
	}
	check_alive("an unmapped command stream");

	/* Context 1000 does not exist. */
	if (ready_device()) {
		cs_begin();
		cs_nop();
		va = cs_commit();
		head = qrd(0, NPU_QREG_HEAD);
		desc_set(head, va, cs_len, 0, 7);
		ring()[head % RING_ENTRIES].context = 1000;
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, head + 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		done = wait_fence(0, 5000);
		tap(done && compl(0)->status == NPU_JOB_ERR_BAD_CONTEXT,
		    "context id 1000 fails BAD_CONTEXT (%u)", compl(0)->status);
	}
	check_alive("a bad context id");

	/* Garbage in every descriptor field. */
	if (ready_device()) {
		uint32_t seed = 99;
		uint32_t *w = (uint32_t *)ring();

		for (unsigned int i = 0; i < RING_ENTRIES * 16; i++)
			w[i] = xorshift(&seed);
		/* Keep completions off random RAM: aligned into our page or unbacked. */
		for (unsigned int i = 0; i < RING_ENTRIES; i++)
			ring()[i].completion_addr = i & 1 ? (1ull << 45) + i * 64 :
				compl_page.pa + (i % 64) * 64;
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, RING_ENTRIES);
		qwr(0, NPU_QREG_DOORBELL, 1);
		usleep(200000);
		tap(rd(NPU_REG_ID) == NPU_ID_MAGIC,
		    "64 random descriptors are survived (HEAD %u, queue status %u)",
		    qrd(0, NPU_QREG_HEAD), qrd(0, NPU_QREG_STATUS));
	}
	check_alive("random descriptors");

	/* Completion record into unbacked memory and into BAR0. */
	if (ready_device()) {
		cs_begin();
		cs_nop();
		va = cs_commit();
		desc_set(0, va, cs_len, 0, 1);
		ring()[0].completion_addr = 1ull << 45;
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		wait_reg(NPU_REG_QUEUE(0, NPU_QREG_STATUS), ~0u,
			 NPU_QUEUE_ERR_COMPLETION, 2000);
		tap(qrd(0, NPU_QREG_STATUS) == NPU_QUEUE_ERR_COMPLETION,
		    "a completion address in unbacked memory stops the queue (%u)",
		    qrd(0, NPU_QREG_STATUS));
	}
	check_alive("an unwritable completion address");
	if (ready_device()) {
		cs_begin();
		cs_nop();
		va = cs_commit();
		desc_set(0, va, cs_len, 0, 1);
		ring()[0].completion_addr = bar_pa + 0x8000;
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		usleep(20000);
		tap(rd(NPU_REG_ID) == NPU_ID_MAGIC,
		    "a completion record aimed at BAR0 is survived (queue status %u)",
		    qrd(0, NPU_QREG_STATUS));
	}
	check_alive("a completion record aimed at BAR0");

	/* A page table leaf pointing at unbacked memory: DMA error. */
	if (ready_device()) {
		cs_begin();
		copy.src = mmu_map(100, 1ull << 45, NPU_PTE_READ);
		copy.dst = 0;
		cs_emit(&copy, sizeof(copy));
		va = cs_commit();
		mmu_program();
		done = run_one(va, cs_len, &status);
		tap(done && status == NPU_JOB_ERR_DMA,
		    "a DMA from a page mapped to unbacked memory fails DMA (%u)", status);
	}
	check_alive("a page mapped to unbacked memory");

	/* Page tables themselves in unbacked memory / BAR0. */
	if (ready_device()) {
		uint64_t *l1 = pt_l1.va;

		cs_begin();
		cs_nop();
		va = cs_commit();
		l1[NPU_PT_INDEX(VA_BASE, 1)] = bar_pa | NPU_PTE_VALID;
		mmu_program();
		done = run_one(va, cs_len, &status);
		tap(done && status != NPU_JOB_OK,
		    "an L0 table inside BAR0 fails the job (%u)", status);
		l1[NPU_PT_INDEX(VA_BASE, 1)] = (1ull << 45) | NPU_PTE_VALID;
		mmu_program();
		done = run_one(va, cs_len, &status);
		tap(done && status != NPU_JOB_OK,
		    "an L0 table in unbacked memory fails the job (%u)", status);
	}
	check_alive("page tables outside RAM");

	/* A job that DMAs into the device's own registers (resets it mid-job). */
	if (ready_device()) {
		cs_begin();
		fill.dst = mmu_map(101, bar_pa, NPU_PTE_READ | NPU_PTE_WRITE);
		cs_emit(&fill, sizeof(fill));
		copy.src = fill.dst;
		cs_emit(&copy, sizeof(copy));
		va = cs_commit();
		mmu_program();
		head = qrd(0, NPU_QREG_HEAD);
		desc_set(head, va, cs_len, 0, 5);
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, head + 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		usleep(200000);
		tap(rd(NPU_REG_ID) == NPU_ID_MAGIC,
		    "a job writing 0xff over BAR0 through its MMU is survived (STATUS 0x%x)",
		    rd(NPU_REG_STATUS));
	}
	check_alive("a job writing over BAR0");

	/* Bus mastering off with a job queued. */
	if (ready_device()) {
		cs_begin();
		cs_nop();
		va = cs_commit();
		desc_set(0, va, cs_len, 0, 1);
		__sync_synchronize();
		set_bus_master(false);
		qwr(0, NPU_QREG_TAIL, 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		usleep(20000);
		tap(qrd(0, NPU_QREG_STATUS) == NPU_QUEUE_ERR_RING_BASE &&
		    compl(0)->fence != NPU_COMPLETION_FENCE,
		    "with bus mastering off the ring is unreadable and nothing is written (%u)",
		    qrd(0, NPU_QREG_STATUS));
		set_bus_master(true);
	}
	check_alive("a doorbell without bus mastering");
}

static void test_reset_mid_job(void)
{
	uint32_t status = ~0u, head, st;
	uint64_t va, t0;
	bool busy = false, done;

	/* A long job (2000 fills of the 2 MiB SRAM), reset while BUSY. */
	if (!tap(ready_device(), "device boots for the reset tests"))
		return;
	cs_begin();
	cs_fill_sram(2000);
	va = cs_commit();
	head = qrd(0, NPU_QREG_HEAD);
	desc_set(head, va, cs_len, 0, 42);
	__sync_synchronize();
	qwr(0, NPU_QREG_TAIL, head + 1);
	qwr(0, NPU_QREG_DOORBELL, 1);
	t0 = now_ms();
	while (now_ms() - t0 < 1000) {
		if (rd(NPU_REG_STATUS) & NPU_STATUS_BUSY) {
			busy = true;
			break;
		}
	}
	dev_reset();
	st = rd(NPU_REG_STATUS);
	tap(busy, "the long job was seen BUSY before the reset");
	tap((st & NPU_STATUS_STATE_MASK) == NPU_STATE_OFF && !(st & NPU_STATUS_BUSY),
	    "reset in the middle of a job returns to OFF, not busy (0x%x)", st);
	usleep(100000);
	tap(compl(0)->fence != NPU_COMPLETION_FENCE,
	    "the aborted job writes no completion record");
	/* The device works again after a fresh boot. */
	if (ready_device()) {
		cs_begin();
		cs_nop();
		va = cs_commit();
		done = run_one(va, cs_len, &status);
		tap(done && status == NPU_JOB_OK,
		    "after the reset a new boot runs a job again (%u)", status);
	}
	check_alive("a reset in the middle of a job");

	/* Two resets racing the same job, then the job left to finish. */
	if (ready_device()) {
		cs_begin();
		cs_fill_sram(200);
		va = cs_commit();
		desc_set(0, va, cs_len, 0, 43);
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		dev_reset();
		if (ready_device()) {
			va = cs_commit();	/* ready_device() rebuilt the tables */
			mmu_program();
			desc_set(0, va, cs_len, 1, 44);
			__sync_synchronize();
			qwr(0, NPU_QREG_TAIL, 1);
			qwr(0, NPU_QREG_DOORBELL, 1);
			done = wait_fence(1, 10000);
			tap(done && compl(1)->status == NPU_JOB_OK && compl(1)->seqno == 44,
			    "a job submitted right after a mid-job reset completes (%u)",
			    compl(1)->status);
		}
	}
	check_alive("back-to-back resets around a job");

	/* An injected hang, then reset. */
	if (ready_device()) {
		cs_begin();
		cs_nop();
		va = cs_commit();
		wr(NPU_REG_DEBUG, NPU_DEBUG_HANG_NEXT);
		desc_set(0, va, cs_len, 0, 9);
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		usleep(50000);
		tap(compl(0)->fence != NPU_COMPLETION_FENCE &&
		    (rd(NPU_REG_STATUS) & NPU_STATUS_BUSY),
		    "an injected hang holds the job and stays BUSY");
		dev_reset();
		if (ready_device()) {
			va = cs_commit();
			mmu_program();
			done = run_one(va, cs_len, &status);
			tap(done && status == NPU_JOB_OK,
			    "after resetting a hung job the device runs jobs (%u)", status);
		}
	}
	check_alive("a reset of a hung job");

	/* A function-level reset through sysfs in the middle of a long job. */
	if (ready_device()) {
		char method[64] = "?";
		FILE *f;
		int rc;

		snprintf(path_buf, sizeof(path_buf), "%s/reset_method", dev_dir);
		f = fopen(path_buf, "r");
		if (f) {
			if (fgets(method, sizeof(method), f))
				method[strcspn(method, "\n")] = 0;
			fclose(f);
		}
		cs_begin();
		cs_fill_sram(2000);
		va = cs_commit();
		mmu_program();
		desc_set(0, va, cs_len, 0, 88);
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		usleep(2000);
		busy = rd(NPU_REG_STATUS) & NPU_STATUS_BUSY;
		rc = write_str(dev_dir, "reset", "1");
		st = rd(NPU_REG_STATUS);
		tap(rc == 0 && (st & NPU_STATUS_STATE_MASK) == NPU_STATE_OFF &&
		    !(st & NPU_STATUS_BUSY) && rd(NPU_REG_ID) == NPU_ID_MAGIC,
		    "a function reset (method '%s') mid-job returns the device to OFF "
		    "(BUSY before: %d, STATUS after 0x%x)", method, busy, st);
		set_bus_master(true);
		usleep(100000);
		tap(compl(0)->fence != NPU_COMPLETION_FENCE,
		    "the job cut by the function reset writes no completion record");
	}
	check_alive("a function reset in the middle of a job");

	/* Bus mastering dropped in the middle of a job. */
	if (ready_device()) {
		cs_begin();
		cs_fill_sram(500);
		va = cs_commit();
		desc_set(0, va, cs_len, 0, 77);
		__sync_synchronize();
		qwr(0, NPU_QREG_TAIL, 1);
		qwr(0, NPU_QREG_DOORBELL, 1);
		set_bus_master(false);
		usleep(300000);
		set_bus_master(true);
		tap(compl(0)->fence != NPU_COMPLETION_FENCE,
		    "bus mastering dropped mid-job: no completion record lands");
	}
	check_alive("bus mastering dropped mid-job");
}

/*
 * Guard pages: host memory a long job writes (DMA_FILL of 0xaa, 1000 rows
 * of the 16 pages with stride 0, so no row boundary comes for a long
 * time). After a reset or an MMU invalidation has completed (CTRL.RESET /
 * MMU_INVALIDATE read back 0), or after a job's completion record, the
 * host writes a guard pattern there: nothing may overwrite it.
 */
#define GUARD_PAGES	16
#define GUARD_FIRST	64	/* VA window page of the first guard page */
#define GUARD_BYTE	0x5c
static struct dma_page guard[GUARD_PAGES];

static uint64_t guard_map(void)
{
	for (unsigned int i = 0; i < GUARD_PAGES; i++)
		mmu_map(GUARD_FIRST + i, guard[i].pa, NPU_PTE_READ | NPU_PTE_WRITE);
	return VA_BASE + GUARD_FIRST * PAGE_SIZE;
}

static void guard_set(void)
{
	for (unsigned int i = 0; i < GUARD_PAGES; i++)
		memset(guard[i].va, GUARD_BYTE, PAGE_SIZE);
	__sync_synchronize();
}

/* Bytes of the guard pattern overwritten since guard_set(). */
static unsigned int guard_damage(void)
{
	unsigned int bad = 0;

	__sync_synchronize();
	for (unsigned int i = 0; i < GUARD_PAGES; i++)
		for (unsigned int b = 0; b < PAGE_SIZE; b++)
			bad += ((volatile uint8_t *)guard[i].va)[b] != GUARD_BYTE;
	return bad;
}

/* Start the long guard-writing job on queue 0; true once it is BUSY. */
static bool guard_job_start(uint64_t seqno, unsigned int insns)
{
	struct npu_insn_dma_fill f = {
		.hdr = { .opcode = NPU_OP_DMA_FILL, .size = sizeof(f) },
		.dst_space = NPU_SPACE_VA,
		.value = 0xaa,
		.rows = 1000,
		.row_bytes = GUARD_PAGES * PAGE_SIZE,
		.dst_stride = 0,
	};
	uint64_t va, t0;

	for (unsigned int i = 0; i < GUARD_PAGES; i++)
		memset(guard[i].va, 0, PAGE_SIZE);
	f.dst = guard_map();
	cs_begin();
	for (unsigned int i = 0; i < insns; i++)
		cs_emit(&f, sizeof(f));
	va = cs_commit();
	mmu_program();
	desc_set(0, va, cs_len, 0, seqno);
	__sync_synchronize();
	qwr(0, NPU_QREG_TAIL, 1);
	qwr(0, NPU_QREG_DOORBELL, 1);
	t0 = now_ms();
	while (now_ms() - t0 < 1000) {
		/* Busy and already writing the guard pages. */
		if ((rd(NPU_REG_STATUS) & NPU_STATUS_BUSY) &&
		    ((volatile uint8_t *)guard[0].va)[0] == 0xaa)
			return true;
	}
	return false;
}

static void test_guard_pages(void)
{
	unsigned int bad;
	uint32_t active, status = ~0u;
	bool started, quiet;
	uint64_t va;

	/* 1. Reset mid-DMA: once CTRL.RESET reads 0, no more writes. */
	if (!tap(ready_device(), "device boots for the guard-page tests"))
		return;
	started = guard_job_start(0x61, 20);
	active = rd(NPU_REG_ACTIVE);
	tap(started && active == (NPU_ACTIVE_VALID | 0) &&
	    rd(NPU_REG_ACTIVE_SEQ_LO) == 0x61,
	    "ACTIVE names the job on the engine (queue 0, seqno 0x61): 0x%x", active);
	dev_reset();
	quiet = wait_reg(NPU_REG_CTRL, NPU_CTRL_RESET, 0, 1000);
	guard_set();
	usleep(100000);
	bad = guard_damage();
	tap(started && quiet && !bad,
	    "no DMA into host memory once a mid-job reset has completed "
	    "(%u guard bytes overwritten)", bad);
	tap(rd(NPU_REG_ACTIVE) == 0, "ACTIVE reads 0 after the reset");

	/* 2. Unmap mid-DMA: once MMU_INVALIDATE reads 0, no more writes. */
	if (ready_device()) {
		uint64_t *l0 = pt_l0.va;

		started = guard_job_start(0x62, 20);
		for (unsigned int i = 0; i < GUARD_PAGES; i++)
			l0[NPU_PT_INDEX(VA_BASE + (GUARD_FIRST + i) *
					(uint64_t)PAGE_SIZE, 0)] = 0;
		__sync_synchronize();
		wr(NPU_REG_MMU_INVALIDATE, 0);
		quiet = wait_reg(NPU_REG_MMU_INVALIDATE, ~0u, 0, 1000);
		guard_set();
		usleep(100000);
		bad = guard_damage();
		tap(started && quiet && !bad,
		    "no DMA into unmapped pages once the invalidation has completed "
		    "(%u guard bytes overwritten)", bad);
		bool done = wait_fence(0, 5000);

		tap(done && compl(0)->status == NPU_JOB_ERR_MMU_UNMAPPED,
		    "the job faults on the unmapped page (status %u)",
		    compl(0)->status);
	}
	check_alive("a reset and an unmap in the middle of DMA");

	/* 3. After the completion record, the job writes nothing more. */
	if (ready_device()) {
		bool done;

		guard_job_start(0x63, 1);
		done = wait_fence(0, 10000);
		tap(done && compl(0)->status == NPU_JOB_OK,
		    "a guard-writing job completes (%u)", compl(0)->status);
		guard_set();
		usleep(50000);
		bad = guard_damage();
		tap(!bad, "no DMA after the completion record (%u bytes)", bad);
	}

	/* 4. A function reset mid-DMA, then CTRL.RESET polled to 0. */
	if (ready_device()) {
		int rc;

		started = guard_job_start(0x64, 20);
		rc = write_str(dev_dir, "reset", "1");
		set_bus_master(true);
		quiet = wait_reg(NPU_REG_CTRL, NPU_CTRL_RESET, 0, 1000);
		guard_set();
		usleep(100000);
		bad = guard_damage();
		tap(started && rc == 0 && quiet && !bad,
		    "no DMA into host memory after a function reset mid-job "
		    "(%u guard bytes overwritten)", bad);
	}
	check_alive("a function reset in the middle of DMA");

	/* 5. No context table (CTX_TABLE 0): the job faults, reads no RAM. */
	set_bus_master(true);
	if (boot_ok()) {
		mmu_init();
		queue_setup(0, ring_page.pa, RING_ENTRIES);
		cs_begin();
		cs_nop();
		va = cs_commit();
		bool done = run_one(va, cs_len, &status);

		tap(done && status == NPU_JOB_ERR_DMA && compl(0)->fault_addr == 0,
		    "a job with CTX_TABLE 0 ends with DMA at the entry's address "
		    "(status %u, fault 0x%" PRIx64 ")", status,
		    (uint64_t)compl(0)->fault_addr);
	}
	check_alive("a job without a context table");
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");

	pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
	if (pagemap_fd < 0)
		bail("open /proc/self/pagemap: %s", strerror(errno));
	/* mlocked pages must not be migrated under the device. */
	{
		int fd = open("/proc/sys/vm/compact_unevictable_allowed", O_WRONLY);

		if (fd >= 0) {
			if (write(fd, "0", 1) != 1)
				diag("could not pin unevictable pages against compaction");
			close(fd);
		}
	}
	open_device();
	fw_page = page_alloc();
	ctx_table = page_alloc();
	pt_l2 = page_alloc();
	pt_l1 = page_alloc();
	pt_l0 = page_alloc();
	ring_page = page_alloc();
	compl_page = page_alloc();
	for (unsigned int i = 0; i < CS_MAX_PAGES; i++)
		cs_pages[i] = page_alloc();
	for (unsigned int i = 0; i < GUARD_PAGES; i++)
		guard[i] = page_alloc();

	test_identity();
	test_odd_accesses();
	test_garbage();
	test_boot_abuse();
	test_nop_job();
	test_ring_abuse();
	test_doorbell_storm();
	test_bad_descriptors();
	test_reset_mid_job();
	test_guard_pages();

	dev_reset();
	printf("1..%u\n", test_no);
	diag("%u of %u failed", failures, test_no);
	return failures ? 1 : 0;
}
