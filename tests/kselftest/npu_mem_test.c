// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory the driver does not own and memory it must not over-commit:
 * foreign dma-bufs (udmabuf, the system dma-heap) used by jobs and
 * imported across unbind, read-only dma-bufs mapped read-only, BO sizes
 * bounded by RAM and charged to the caller. Unbinds and rebinds the
 * device (runs before npu_reload_test). Needs root.
 */
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "npu_test.h"
#include "kselftest_harness.h"

#define DRV_DIR		"/sys/bus/pci/drivers/npu"
#define WAIT_MS		20000
#define BUF_SIZE	(64 << 10)
#define HALF		(BUF_SIZE / 2)

/* The PCI address of the device behind /dev/accel/accel0. */
static int npu_bdf(char *bdf, size_t len)
{
	char link[512], *p;
	ssize_t n = readlink("/sys/class/accel/accel0/device", link,
			     sizeof(link) - 1);

	if (n < 0)
		return -errno;
	link[n] = 0;
	p = strrchr(link, '/');
	snprintf(bdf, len, "%.63s", p ? p + 1 : link);
	return 0;
}

static int wait_for_device(int timeout_ms)
{
	int64_t end = npu_now_ns() + (int64_t)timeout_ms * 1000000ll;
	int fd;

	while ((fd = npu_open()) < 0 && npu_now_ns() < end)
		usleep(20000);
	return fd;
}

/* ---- foreign dma-bufs ---- */

struct ext_buf {
	int dmabuf;	/* the dma-buf fd */
	int memfd;	/* udmabuf only */
	uint8_t *cpu;	/* the CPU's view */
	int heap;	/* 1: dma-heap (CPU access bracketed by DMA_BUF_IOCTL_SYNC) */
};

/* A udmabuf over a sealed memfd, or -errno (-ENOENT: no /dev/udmabuf). */
static int udmabuf_new(struct ext_buf *b, size_t size)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC,
				    .size = size };
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);

	memset(b, 0, sizeof(*b));
	if (dev < 0)
		return -errno;
	b->memfd = syscall(SYS_memfd_create, "npu-udmabuf", MFD_ALLOW_SEALING);
	if (b->memfd < 0 || ftruncate(b->memfd, size) ||
	    fcntl(b->memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
		goto err;
	c.memfd = b->memfd;
	b->dmabuf = ioctl(dev, UDMABUF_CREATE, &c);
	if (b->dmabuf < 0)
		goto err;
	b->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      b->memfd, 0);
	if (b->cpu == MAP_FAILED)
		goto err;
	close(dev);
	return 0;
err:
	close(dev);
	return -errno;
}

/* A system dma-heap buffer, or -errno (-ENOENT: no heap). */
static int heap_new(struct ext_buf *b, size_t size, int writable)
{
	struct dma_heap_allocation_data a = {
		.len = size,
		.fd_flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC,
	};
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	memset(b, 0, sizeof(*b));
	b->memfd = -1;
	b->heap = 1;
	if (heap < 0)
		return -errno;
	if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a)) {
		close(heap);
		return -errno;
	}
	close(heap);
	b->dmabuf = a.fd;
	b->cpu = mmap(NULL, size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		      MAP_SHARED, b->dmabuf, 0);
	return b->cpu == MAP_FAILED ? -errno : 0;
}

static void ext_sync(struct ext_buf *b, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags | DMA_BUF_SYNC_RW };

	if (b->heap)
		ioctl(b->dmabuf, DMA_BUF_IOCTL_SYNC, &s);
}

static void ext_free(struct ext_buf *b, size_t size)
{
	if (b->cpu && b->cpu != MAP_FAILED)
		munmap(b->cpu, size);
	if (b->dmabuf > 0)
		close(b->dmabuf);
	if (b->memfd > 0)
		close(b->memfd);
	memset(b, 0, sizeof(*b));
}

/* PRIME import of a dma-buf fd: the handle and its VA, or -errno. */
static int import_fd(int fd, int dmabuf, uint32_t *handle, uint64_t *va)
{
	struct drm_prime_handle imp = { .fd = dmabuf };
	struct drm_npu_bo_info info = { 0 };
	int ret = npu_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp);

	if (ret)
		return ret;
	info.handle = imp.handle;
	ret = npu_ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &info);
	if (ret)
		return ret;
	*handle = imp.handle;
	*va = info.va;
	return 0;
}

/* Run 'cs' listing 'n' handles for read and write; the device status. */
static int run_with(int fd, struct npu_bo *cmd, struct npu_cs *cs,
		    const uint32_t *handles, int n,
		    struct drm_npu_job_info *info)
{
	uint64_t id;
	int ret;

	ret = npu_submit_rw(fd, cmd, cs, handles, n, &id);
	if (ret)
		return ret;
	ret = npu_job_wait(fd, id, WAIT_MS, info);
	return ret ? ret : (int)info->status;
}

/*
 * A job copies the first half of 'ext' into 'own' and the first half of
 * 'own' into the second half of 'ext'; both checked through the CPU.
 */
static void copy_both_ways(struct __test_metadata *_metadata, int fd,
			   struct ext_buf *ext, uint32_t ext_handle,
			   uint64_t ext_va)
{
	struct npu_bo cmd, own;
	struct drm_npu_job_info info;
	uint32_t handles[2];
	struct npu_cs cs;
	int i;

	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, BUF_SIZE, 0, &own));
	ext_sync(ext, DMA_BUF_SYNC_START);
	for (i = 0; i < BUF_SIZE; i++)
		ext->cpu[i] = i < HALF ? (uint8_t)(i * 7 + 1) : 0;
	ext_sync(ext, DMA_BUF_SYNC_END);
	for (i = 0; i < HALF; i++)
		((uint8_t *)own.map)[i] = (uint8_t)(i * 13 + 5);

	npu_cs_begin(&cs);
	/* own's first half goes out before ext's first half comes in. */
	npu_cs_copy(&cs, own.va, ext_va + HALF, HALF);
	npu_cs_copy(&cs, ext_va, own.va, HALF);
	handles[0] = ext_handle;
	handles[1] = own.handle;
	ASSERT_EQ(NPU_JOB_OK, run_with(fd, &cmd, &cs, handles, 2, &info));

	ext_sync(ext, DMA_BUF_SYNC_START);
	for (i = 0; i < HALF; i++) {
		ASSERT_EQ((uint8_t)(i * 7 + 1), ((uint8_t *)own.map)[i])
			TH_LOG("own byte %d", i);
		ASSERT_EQ((uint8_t)(i * 13 + 5), ext->cpu[HALF + i])
			TH_LOG("foreign byte %d", HALF + i);
	}
	ext_sync(ext, DMA_BUF_SYNC_END);
	npu_bo_free(fd, &own);
	npu_bo_free(fd, &cmd);
}

static void foreign_import_round_trip(struct __test_metadata *_metadata,
				      int heap)
{
	struct npu_counters base, now;
	int order, fd, ret;

	for (order = 0; order < 2; order++) {
		struct ext_buf ext;
		uint32_t handle;
		uint64_t va;

		fd = npu_open();
		ASSERT_GE(fd, 0);
		npu_counters_read(&base);
		ret = heap ? heap_new(&ext, BUF_SIZE, 1) : udmabuf_new(&ext, BUF_SIZE);
		if (ret == -ENOENT)
			SKIP(return, "%s not in this kernel",
			     heap ? "/dev/dma_heap/system" : "/dev/udmabuf");
		ASSERT_EQ(0, ret);
		ASSERT_EQ(0, import_fd(fd, ext.dmabuf, &handle, &va));
		EXPECT_EQ(base.bos + 1, npu_counter("bos"));
		copy_both_ways(_metadata, fd, &ext, handle, va);

		/* Handle first, then the dma-buf; or the other way round. */
		if (order == 0) {
			EXPECT_EQ(0, npu_gem_close(fd, handle));
			close(ext.dmabuf);
		} else {
			close(ext.dmabuf);
			/* The import holds the buffer: still usable. */
			copy_both_ways(_metadata, fd, &ext, handle, va);
			EXPECT_EQ(0, npu_gem_close(fd, handle));
		}
		ext.dmabuf = -1;
		EXPECT_EQ(0, npu_counters_settle(&base, &now, 5000))
			TH_LOG("bos %lld -> %lld, pages %lld -> %lld",
			       base.bos, now.bos, base.pages, now.pages);
		ext_free(&ext, BUF_SIZE);
		close(fd);
	}
}

TEST(udmabuf_import_is_copied_to_and_from_by_a_job)
{
	foreign_import_round_trip(_metadata, 0);
}

TEST(dma_heap_import_is_copied_to_and_from_by_a_job)
{
	foreign_import_round_trip(_metadata, 1);
}

/* ---- read-only dma-bufs ---- */

/* A DMA_FILL of 'va' faults; a copy out of it runs and brings 'expect'. */
static void read_only_for_the_device(struct __test_metadata *_metadata,
				     int fd, uint32_t handle, uint64_t va,
				     uint8_t expect)
{
	struct drm_npu_job_info info;
	struct npu_bo cmd, dst;
	uint32_t handles[2] = { handle, 0 };
	struct npu_cs cs;

	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &dst));
	handles[1] = dst.handle;
	memset(dst.map, 0xee, 4096);

	npu_cs_begin(&cs);
	npu_cs_copy(&cs, va, dst.va, 4096);
	EXPECT_EQ(NPU_JOB_OK, run_with(fd, &cmd, &cs, handles, 2, &info));
	EXPECT_EQ(expect, ((uint8_t *)dst.map)[4095]);

	npu_cs_begin(&cs);
	npu_cs_fill(&cs, va, 0x77, 64);
	EXPECT_EQ(NPU_JOB_ERR_MMU_PERM, run_with(fd, &cmd, &cs, handles, 1, &info));
	EXPECT_EQ(va, info.fault_addr & ~0xfffull);
	npu_bo_free(fd, &dst);
	npu_bo_free(fd, &cmd);
}

/* A CPU mapping through our file: read-only, PROT_WRITE refused. */
static void read_only_for_the_cpu(struct __test_metadata *_metadata, int fd,
				  uint32_t handle, size_t size)
{
	struct drm_npu_bo_info info = { .handle = handle };
	void *p;

	ASSERT_EQ(0, npu_ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &info));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 info.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	if (p != MAP_FAILED)
		munmap(p, size);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_NE(0, mprotect(p, size, PROT_READ | PROT_WRITE));
	munmap(p, size);
}

TEST(read_only_dma_heap_buffer_is_read_only_on_the_device)
{
	struct ext_buf ext;
	uint32_t handle;
	uint64_t va;
	int fd = npu_open(), ret;

	ASSERT_GE(fd, 0);
	ret = heap_new(&ext, 4096, 0);
	if (ret == -ENOENT)
		SKIP(return, "no /dev/dma_heap/system");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, import_fd(fd, ext.dmabuf, &handle, &va));
	/* The system heap hands out zeroed pages. */
	read_only_for_the_device(_metadata, fd, handle, va, 0);
	read_only_for_the_cpu(_metadata, fd, handle, 4096);
	EXPECT_EQ(0, ext.cpu[0]);
	ext_free(&ext, 4096);
	close(fd);
}

/*
 * A PRIME export without DRM_RDWR is a read-only dma-buf. Another file
 * that imports it gets a BO of its own, mapped read-only (not the
 * exporter's BO with its writable mapping); the exporter keeps writing
 * its own. The exporting file importing it back gets its own handle.
 */
TEST(read_only_prime_export_is_read_only_in_the_importer)
{
	struct drm_prime_handle exp = { .flags = DRM_CLOEXEC };
	struct drm_npu_job_info info;
	struct npu_bo cmd, src;
	struct npu_cs cs;
	uint32_t handle, back;
	uint64_t va, back_va;
	int a = npu_open(), b = npu_open();

	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	ASSERT_EQ(0, npu_bo_new(a, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(a, 4096, 0, &src));
	memset(src.map, 0x42, 4096);
	exp.handle = src.handle;
	ASSERT_EQ(0, npu_ioctl(a, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
	ASSERT_EQ(O_RDONLY, fcntl(exp.fd, F_GETFL) & O_ACCMODE);

	ASSERT_EQ(0, import_fd(b, exp.fd, &handle, &va));
	read_only_for_the_device(_metadata, b, handle, va, 0x42);
	read_only_for_the_cpu(_metadata, b, handle, 4096);

	/* The exporter's own mapping stays writable. */
	npu_cs_begin(&cs);
	npu_cs_fill(&cs, src.va, 0x24, 64);
	EXPECT_EQ(NPU_JOB_OK, run_with(a, &cmd, &cs, &src.handle, 1, &info));
	EXPECT_EQ(0x24, ((uint8_t *)src.map)[0]);
	ASSERT_EQ(0, import_fd(a, exp.fd, &back, &back_va));
	EXPECT_EQ(src.handle, back);
	EXPECT_EQ(src.va, back_va);

	close(exp.fd);
	EXPECT_EQ(0, npu_gem_close(b, handle));
	npu_bo_free(a, &src);
	npu_bo_free(a, &cmd);
	close(b);
	close(a);
}

/* ---- unbind with foreign imports (N5) ---- */

/* Attachments of device 'bdf' listed in the dma-buf core's debugfs. */
static int dma_buf_attachments(const char *bdf)
{
	char line[512], want[300];
	int n = 0;
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "\t%s\n", bdf);
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, want))
			n++;
	fclose(f);
	return n;
}

/*
 * Foreign dma-bufs imported (a udmabuf, whose mapping the dma-buf core
 * caches in the attachment, a dma-heap buffer, and a read-only PRIME
 * export of our own, which the device attaches to as well) and still
 * held when the driver is unbound: unbind gives every attachment back
 * to its exporter (the cached mapping with it: before, it stayed mapped
 * for a device that had no driver, and the exporter kept a pointer to
 * a device that may be gone). The CPU's views are unaffected; the
 * handles and dma-bufs then go in either order.
 */
TEST(unbind_with_foreign_dma_bufs_imported_then_rebind)
{
	struct drm_prime_handle exp = { .flags = DRM_CLOEXEC };
	struct ext_buf udma, heap;
	struct npu_bo own;
	uint32_t h_udma, h_heap, h_ro;
	uint64_t va_udma, va_heap, va_ro;
	char bdf[256];
	int fd, fd2;

	if (npu_bdf(bdf, sizeof(bdf)))
		SKIP(return, "no npu device");
	if (access("/sys/kernel/debug/dma_buf/bufinfo", R_OK))
		SKIP(return, "no dma_buf debugfs");
	if (udmabuf_new(&udma, BUF_SIZE) || heap_new(&heap, BUF_SIZE, 1))
		SKIP(return, "no udmabuf or system dma-heap");
	fd = npu_open();
	fd2 = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, npu_bo_new(fd2, 4096, 0, &own));
	exp.handle = own.handle;
	ASSERT_EQ(0, npu_ioctl(fd2, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));

	ASSERT_EQ(0, import_fd(fd, udma.dmabuf, &h_udma, &va_udma));
	ASSERT_EQ(0, import_fd(fd, heap.dmabuf, &h_heap, &va_heap));
	ASSERT_EQ(0, import_fd(fd, exp.fd, &h_ro, &va_ro));
	copy_both_ways(_metadata, fd, &udma, h_udma, va_udma);
	copy_both_ways(_metadata, fd, &heap, h_heap, va_heap);
	EXPECT_EQ(3, dma_buf_attachments(bdf));

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/unbind", bdf));
	EXPECT_EQ(0, dma_buf_attachments(bdf));

	/* Nothing is imported for a device that is gone. */
	EXPECT_NE(0, import_fd(fd, udma.dmabuf, &h_udma, &va_udma));
	/* The CPU's views are unaffected. */
	udma.cpu[0] = 0x11;
	EXPECT_EQ(0x11, udma.cpu[0]);

	/* dma-bufs first for the udmabuf, handles first for the heap. */
	close(udma.dmabuf);
	udma.dmabuf = -1;
	close(fd);
	close(heap.dmabuf);
	heap.dmabuf = -1;
	close(exp.fd);
	npu_bo_free(fd2, &own);
	close(fd2);
	ext_free(&udma, BUF_SIZE);
	ext_free(&heap, BUF_SIZE);
	EXPECT_EQ(0, dma_buf_attachments(bdf));

	ASSERT_EQ(0, npu_write_file(DRV_DIR "/bind", bdf));
	fd = wait_for_device(5000);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, udmabuf_new(&udma, BUF_SIZE));
	ASSERT_EQ(0, import_fd(fd, udma.dmabuf, &h_udma, &va_udma));
	copy_both_ways(_metadata, fd, &udma, h_udma, va_udma);
	ext_free(&udma, BUF_SIZE);
	close(fd);
}

/* ---- BO sizes ---- */

#define CG_ROOT	"/sys/fs/cgroup"
#define CG_TEST	CG_ROOT "/npu-mem-test"

static long long cg_read_key(const char *path, const char *key)
{
	char k[64];
	long long v, ret = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", k, &v) == 2)
		if (!key || !strcmp(k, key))
			ret = v;
	fclose(f);
	return ret;
}

static int cg_enter(const char *max)
{
	char pid[32];

	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return -errno;
	if (npu_write_file(CG_ROOT "/cgroup.subtree_control", "+memory"))
		return -ENOTSUP;
	if (mkdir(CG_TEST, 0755) && errno != EEXIST)
		return -errno;
	if (npu_write_file(CG_TEST "/memory.max", max))
		return -ENOTSUP;
	snprintf(pid, sizeof(pid), "%d", getpid());
	return npu_write_file(CG_TEST "/cgroup.procs", pid);
}

static void cg_leave(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	npu_write_file(CG_ROOT "/cgroup.procs", pid);
	rmdir(CG_TEST);
}

/* Allocation-failure reports in the kernel log. */
static int alloc_failures_logged(void)
{
	FILE *p;
	int n = 0;

	p = popen("dmesg | grep -c -e 'vmalloc error' -e 'allocation failure'", "r");
	if (!p)
		return -1;
	if (fscanf(p, "%d", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

/*
 * The largest BO the VA space takes (512 GiB) is larger than RAM: it is
 * refused at once (before, the shmem helper's 1 GiB page array for it
 * was allocated, uncharged, when the BO was mapped: in a small guest
 * that failed with an allocation-failure report). One below RAM but
 * above the caller's memcg limit fails cleanly too: its pages are
 * charged to that memcg, whose limit stops it.
 */
TEST(bo_larger_than_ram_or_the_memcg_limit_fails_cleanly)
{
	struct drm_npu_bo_create c = { 0 };
	long long bos, max_events;
	int fd, ret, warn;

	fd = npu_open();
	ASSERT_GE(fd, 0);
	bos = npu_counter("bos");
	warn = alloc_failures_logged();

	c.size = (1ull << NPU_VA_BITS) - (1 << 20);
	EXPECT_EQ(-ENOMEM, npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c));
	EXPECT_EQ(warn, alloc_failures_logged());

	ret = cg_enter("64M");
	if (ret) {
		close(fd);
		SKIP(return, "no cgroup v2 memory controller: %s", strerror(-ret));
	}
	max_events = cg_read_key(CG_TEST "/memory.events", "max");
	c.size = 256 << 20;
	EXPECT_EQ(-ENOMEM, npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c));
	EXPECT_LT(max_events, cg_read_key(CG_TEST "/memory.events", "max"));
	EXPECT_EQ(0, cg_read_key(CG_TEST "/memory.events", "oom_kill"));
	close(fd);
	cg_leave();
	EXPECT_EQ(bos, npu_counter("bos"));
	EXPECT_EQ(warn, alloc_failures_logged());
}

/* ---- reclaim ---- */

#define RECLAIM_BOS	8
#define RECLAIM_SIZE	(1 << 20)

static uint8_t reclaim_byte(int bo, size_t i)
{
	return (uint8_t)(i * 31 + bo * 17 + (i >> 12));
}

/* Every byte of 'bo' through the CPU (a fault brings an evicted BO back). */
static int reclaim_check(const struct npu_bo *bo, int n)
{
	const uint8_t *p = bo->map;
	size_t i;

	for (i = 0; i < RECLAIM_SIZE; i++)
		if (p[i] != reclaim_byte(n, i))
			return (int)i;
	return -1;
}

/*
 * The shrinker (run by drop_caches here, as by reclaim) evicts the BOs
 * no job holds: they leave the page tables, their pages are unpinned.
 * They come back with every byte, at the same VA, when a job that lists
 * them is submitted or the CPU touches them; a BO a queued job holds is
 * not taken.
 */
TEST(idle_bos_are_reclaimed_and_come_back_with_their_data)
{
	struct npu_bo cmd, bos[RECLAIM_BOS], check;
	struct drm_npu_job_info info;
	long long reclaimed, restored, mapped;
	struct drm_npu_submit s;
	uint32_t handles[2];
	struct npu_cs cs;
	int fd, i, bad;
	size_t j;

	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_LE(0, npu_counter("pages_reclaimed"))
		TH_LOG("no reclaim counters in npu_counters");
	ASSERT_EQ(0, npu_bo_new(fd, 4096, 0, &cmd));
	ASSERT_EQ(0, npu_bo_new(fd, RECLAIM_SIZE, 0, &check));
	for (i = 0; i < RECLAIM_BOS; i++) {
		ASSERT_EQ(0, npu_bo_new(fd, RECLAIM_SIZE, 0, &bos[i]));
		for (j = 0; j < RECLAIM_SIZE; j++)
			((uint8_t *)bos[i].map)[j] = reclaim_byte(i, j);
	}

	/* A job holds bos[0] (queues paused): it must stay. */
	ASSERT_EQ(0, npu_pause_queues(1));
	npu_cs_begin(&cs);
	npu_cs_copy(&cs, bos[0].va, check.va, 4096);
	handles[0] = bos[0].handle;
	handles[1] = check.handle;
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
	s.bo_refs = (uintptr_t)(struct drm_npu_bo_ref[2]){
		{ handles[0], DRM_NPU_BO_ACCESS_READ },
		{ handles[1], DRM_NPU_BO_ACCESS_WRITE } };
	s.bo_ref_count = 2;
	ASSERT_EQ(0, npu_submit(fd, &s));

	reclaimed = npu_counter("pages_reclaimed");
	restored = npu_counter("bos_restored");
	mapped = npu_counter("pages_mapped");
	ASSERT_EQ(0, npu_write_file("/proc/sys/vm/drop_caches", "2"));
	/* bos[1..] and the command buffer; not bos[0], check or the job. */
	EXPECT_GE(npu_counter("pages_reclaimed") - reclaimed,
		  (RECLAIM_BOS - 1) * (RECLAIM_SIZE >> 12));
	EXPECT_GT(mapped, npu_counter("pages_mapped"));
	ASSERT_EQ(0, npu_pause_queues(0));
	ASSERT_EQ(0, npu_job_wait(fd, s.job_id, WAIT_MS, &info));
	EXPECT_EQ(NPU_JOB_OK, info.status);
	EXPECT_EQ(0, memcmp(check.map, bos[0].map, 4096));

	/*
	 * Evict again; odd BOs come back through a job first, even ones
	 * through the CPU. A job holds its BOs until it is freed, a little
	 * after it reports DONE: wait for that, or bos[0] stays resident.
	 */
	for (i = 0; i < 5000 && npu_counter("jobs") > 0; i++)
		usleep(1000);
	ASSERT_EQ(0, npu_write_file("/proc/sys/vm/drop_caches", "2"));
	for (i = 0; i < RECLAIM_BOS; i++) {
		if (i % 2) {
			memset(check.map, 0, RECLAIM_SIZE);
			npu_cs_begin(&cs);
			npu_cs_copy(&cs, bos[i].va, check.va, RECLAIM_SIZE / 2);
			npu_cs_copy(&cs, bos[i].va + RECLAIM_SIZE / 2,
				    check.va + RECLAIM_SIZE / 2, RECLAIM_SIZE / 2);
			handles[0] = bos[i].handle;
			EXPECT_EQ(NPU_JOB_OK, run_with(fd, &cmd, &cs, handles, 2, &info));
			EXPECT_EQ(0, memcmp(check.map, bos[i].map, RECLAIM_SIZE))
				TH_LOG("bo %d: the device read other data than the CPU", i);
		}
		bad = reclaim_check(&bos[i], i);
		EXPECT_EQ(-1, bad) TH_LOG("bo %d byte %d", i, bad);
	}
	EXPECT_LE(restored + RECLAIM_BOS, npu_counter("bos_restored"));
	EXPECT_EQ(mapped, npu_counter("pages_mapped"));

	for (i = 0; i < RECLAIM_BOS; i++)
		npu_bo_free(fd, &bos[i]);
	npu_bo_free(fd, &check);
	npu_bo_free(fd, &cmd);
	close(fd);
}

TEST_HARNESS_MAIN
