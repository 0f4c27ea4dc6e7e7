/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the npu kselftests: device, buffers, hand-written
 * command streams, submits, waits and the driver's debugfs counters.
 */
#ifndef NPU_TEST_H
#define NPU_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "drm.h"
#include "drm/npu_accel.h"
#include "npu_hw.h"

#define NPU_DEV_PATH	"/dev/accel/accel0"

/* ioctl that returns -errno, retrying on EINTR / EAGAIN. */
static inline int npu_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));
	return ret == -1 ? -errno : ret;
}

/* The device node, without contexts (no VA space either). */
static inline int npu_open_bare(void)
{
	const char *path = getenv("NPU_DEV");

	return open(path ? path : NPU_DEV_PATH, O_RDWR | O_CLOEXEC);
}

/* DRM_IOCTL_NPU_CONTEXT_CREATE: the id (> 0) or -errno. */
static inline int npu_context_new(int fd, uint32_t priority)
{
	struct drm_npu_context_create c = { .priority = priority };
	int ret = npu_ioctl(fd, DRM_IOCTL_NPU_CONTEXT_CREATE, &c);

	return ret ? ret : (int)c.context_id;
}

static inline int npu_context_free(int fd, uint32_t id)
{
	struct drm_npu_context_destroy d = { .context_id = id };

	return npu_ioctl(fd, DRM_IOCTL_NPU_CONTEXT_DESTROY, &d);
}

/*
 * The contexts npu_open() creates, by the hardware queue of version 1
 * they stand for: a file's first context gets id 1, its second id 2
 * (the driver hands out the lowest free id).
 */
#define NPU_CTX_QUEUE0	1	/* DRM_NPU_CONTEXT_PRIORITY_HIGH, queue 0 */
#define NPU_CTX_QUEUE1	2	/* DRM_NPU_CONTEXT_PRIORITY_NORMAL, queue 1 */
#define NPU_CTX_FOR_QUEUE(q)	((q) ? NPU_CTX_QUEUE1 : NPU_CTX_QUEUE0)

/*
 * Give a freshly opened @fd the two contexts most tests use (npu_open()).
 * Without the privilege for HIGH (an unprivileged caller) id 1 is a
 * NORMAL context. Closes @fd and returns -1 (errno set) on failure.
 */
static inline int npu_with_contexts(int fd)
{
	int hi, lo;

	if (fd < 0)
		return fd;
	hi = npu_context_new(fd, DRM_NPU_CONTEXT_PRIORITY_HIGH);
	if (hi == -EACCES)
		hi = npu_context_new(fd, DRM_NPU_CONTEXT_PRIORITY_NORMAL);
	lo = npu_context_new(fd, DRM_NPU_CONTEXT_PRIORITY_NORMAL);
	if (hi != NPU_CTX_QUEUE0 || lo != NPU_CTX_QUEUE1) {
		/* No VA space left (EBUSY) or limits: as open() failing. */
		close(fd);
		errno = hi < 0 ? -hi : lo < 0 ? -lo : EPROTO;
		return -1;
	}
	return fd;
}

static inline int npu_open(void)
{
	return npu_with_contexts(npu_open_bare());
}

static inline uint64_t npu_param(int fd, uint32_t param)
{
	struct drm_npu_get_param p = { .param = param };

	if (npu_ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p))
		return ~0ull;
	return p.value;
}

struct npu_bo {
	uint32_t handle;
	uint64_t va;
	uint64_t size;
	void *map;
};

static inline int npu_bo_new(int fd, uint64_t size, uint32_t flags,
			     struct npu_bo *bo)
{
	struct drm_npu_bo_create c = { .size = size, .flags = flags };
	struct drm_npu_bo_info info = { 0 };
	int ret;

	memset(bo, 0, sizeof(*bo));
	ret = npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c);
	if (ret)
		return ret;
	info.handle = c.handle;
	ret = npu_ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &info);
	if (ret)
		return ret;
	bo->handle = c.handle;
	bo->va = c.va;
	bo->size = info.size;
	bo->map = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, info.mmap_offset);
	if (bo->map == MAP_FAILED) {
		bo->map = NULL;
		return -errno;
	}
	return 0;
}

static inline int npu_gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	return npu_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
}

static inline void npu_bo_free(int fd, struct npu_bo *bo)
{
	if (bo->map)
		munmap(bo->map, bo->size);
	if (bo->handle)
		npu_gem_close(fd, bo->handle);
	memset(bo, 0, sizeof(*bo));
}

/* ---- command streams ---- */

struct npu_cs {
	uint8_t buf[8192];
	uint32_t len;
};

static inline void npu_cs_begin(struct npu_cs *cs)
{
	struct npu_cs_header h = {
		.magic = NPU_CS_MAGIC,
		.isa_major = NPU_ISA_VERSION_MAJOR,
		.isa_minor = NPU_ISA_VERSION_MINOR,
	};

	memset(cs, 0, sizeof(*cs));
	memcpy(cs->buf, &h, sizeof(h));
	cs->len = sizeof(h);
}

static inline void npu_cs_emit(struct npu_cs *cs, const void *insn, size_t n)
{
	if (cs->len + n > sizeof(cs->buf))
		abort();
	memcpy(cs->buf + cs->len, insn, n);
	cs->len += n;
}

/* DMA_FILL 'bytes' bytes at device VA 'va' with 'value'. */
static inline void npu_cs_fill(struct npu_cs *cs, uint64_t va, uint8_t value,
			       uint32_t bytes)
{
	struct npu_insn_dma_fill f = {
		.hdr = { .opcode = NPU_OP_DMA_FILL, .flags = NPU_INSN_SYNC,
			 .size = sizeof(f) },
		.dst_space = NPU_SPACE_VA,
		.value = value,
		.rows = 1,
		.dst = va,
		.row_bytes = bytes,
		.dst_stride = bytes,
	};

	npu_cs_emit(cs, &f, sizeof(f));
}

static inline void npu_cs_dma(struct npu_cs *cs, uint8_t src_space,
			      uint64_t src, uint8_t dst_space, uint64_t dst,
			      uint32_t bytes)
{
	struct npu_insn_dma_copy c = {
		.hdr = { .opcode = NPU_OP_DMA_COPY, .flags = NPU_INSN_SYNC,
			 .size = sizeof(c) },
		.src_space = src_space,
		.dst_space = dst_space,
		.rows = 1,
		.src = src,
		.dst = dst,
		.row_bytes = bytes,
		.src_stride = bytes,
		.dst_stride = bytes,
	};

	npu_cs_emit(cs, &c, sizeof(c));
}

/* VA -> SRAM -> VA: a copy that proves the job ran. */
static inline void npu_cs_copy(struct npu_cs *cs, uint64_t src, uint64_t dst,
			       uint32_t bytes)
{
	npu_cs_dma(cs, NPU_SPACE_VA, src, NPU_SPACE_SRAM, 0, bytes);
	npu_cs_dma(cs, NPU_SPACE_SRAM, 0, NPU_SPACE_VA, dst, bytes);
}

/* Put the stream at the start of 'cmd' (mapped). */
static inline uint32_t npu_cs_store(struct npu_cs *cs, struct npu_bo *cmd,
				    uint32_t offset)
{
	memcpy((uint8_t *)cmd->map + offset, cs->buf, cs->len);
	return cs->len;
}

/* ---- submit and wait ---- */

/* A submit to the context npu_open() made for hardware queue @queue. */
static inline void npu_submit_init(struct drm_npu_submit *s, uint32_t cmd,
				   uint32_t size, uint32_t queue)
{
	memset(s, 0, sizeof(*s));
	s->cmd_handle = cmd;
	s->cmd_size = size;
	s->context_id = NPU_CTX_FOR_QUEUE(queue);
	s->bo_ref_size = sizeof(struct drm_npu_bo_ref);
	s->in_sync_size = sizeof(struct drm_npu_sync);
}

static inline int npu_submit(int fd, struct drm_npu_submit *s)
{
	return npu_ioctl(fd, DRM_IOCTL_NPU_SUBMIT, s);
}

static inline uint32_t npu_syncobj_new(int fd)
{
	struct drm_syncobj_create c = { 0 };

	if (npu_ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c))
		return 0;
	return c.handle;
}

static inline void npu_syncobj_free(int fd, uint32_t h)
{
	struct drm_syncobj_destroy d = { .handle = h };

	npu_ioctl(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}

static inline int64_t npu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Wait for a timeline point (0: binary) up to timeout_ms. */
static inline int npu_syncobj_wait(int fd, uint32_t h, uint64_t point,
				   int timeout_ms)
{
	struct drm_syncobj_timeline_wait w = {
		.handles = (uintptr_t)&h,
		.points = (uintptr_t)&point,
		.timeout_nsec = npu_now_ns() + (int64_t)timeout_ms * 1000000ll,
		.count_handles = 1,
		.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
	};

	return npu_ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
}

static inline int npu_job_info(int fd, uint64_t id, struct drm_npu_job_info *info)
{
	memset(info, 0, sizeof(*info));
	info->job_id = id;
	return npu_ioctl(fd, DRM_IOCTL_NPU_JOB_INFO, info);
}

/* Poll JOB_INFO until the job is DONE or CANCELED. */
static inline int npu_job_wait(int fd, uint64_t id, int timeout_ms,
			       struct drm_npu_job_info *info)
{
	int64_t end = npu_now_ns() + (int64_t)timeout_ms * 1000000ll;
	int ret;

	for (;;) {
		ret = npu_job_info(fd, id, info);
		if (ret)
			return ret;
		if (info->state == DRM_NPU_JOB_DONE ||
		    info->state == DRM_NPU_JOB_CANCELED)
			return 0;
		if (npu_now_ns() > end)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

/*
 * Not a kernel flag: npu_job_wait_ioctl() turns @timeout_ns into the
 * absolute CLOCK_MONOTONIC time JOB_WAIT takes (version 2 has no
 * relative timeouts).
 */
#define NPU_WAIT_RELATIVE	(1u << 31)

/* DRM_IOCTL_NPU_JOB_WAIT; returns 0 / -errno, fills *w. */
static inline int npu_job_wait_ioctl(int fd, uint64_t id, int64_t timeout_ns,
				     uint32_t flags, struct drm_npu_job_wait *w)
{
	memset(w, 0, sizeof(*w));
	w->job_id = id;
	w->timeout_ns = timeout_ns;
	if (flags & NPU_WAIT_RELATIVE) {
		flags &= ~NPU_WAIT_RELATIVE;
		w->timeout_ns = timeout_ns > 0 ? npu_now_ns() + timeout_ns : 0;
	}
	w->flags = flags;
	return npu_ioctl(fd, DRM_IOCTL_NPU_JOB_WAIT, w);
}

/* ---- long jobs ---- */

/* The most DMA_FILLs (plus a marker fill) that fit in one npu_cs. */
#define NPU_CS_MAX_FILLS \
	((sizeof(((struct npu_cs *)0)->buf) - sizeof(struct npu_cs_header)) / \
	 sizeof(struct npu_insn_dma_fill) - 1)

/*
 * 'fills' DMA_FILLs of the whole of 'buf' with 'value', then one of 64
 * bytes of 'marker' at 'marker_va': the marker is written only if the
 * job ran to its end.
 */
static inline void npu_cs_long(struct npu_cs *cs, const struct npu_bo *buf,
			       unsigned int fills, uint8_t value,
			       uint64_t marker_va, uint8_t marker)
{
	unsigned int i;

	npu_cs_begin(cs);
	for (i = 0; i < fills; i++)
		npu_cs_fill(cs, buf->va, value, buf->size);
	npu_cs_fill(cs, marker_va, marker, 64);
}

/* At most this many handles in npu_submit_rw(). */
#define NPU_SUBMIT_RW_MAX	8

/*
 * Store 'cs' at the start of 'cmd' and submit it on queue 1 listing the
 * 'n' handles for reading and writing: 0 and the job's id, or -errno.
 */
static inline int npu_submit_rw(int fd, struct npu_bo *cmd, struct npu_cs *cs,
				const uint32_t *handles, int n, uint64_t *job_id)
{
	struct drm_npu_bo_ref refs[NPU_SUBMIT_RW_MAX];
	struct drm_npu_submit s;
	int i, ret;

	if (n > NPU_SUBMIT_RW_MAX)
		return -E2BIG;
	for (i = 0; i < n; i++) {
		refs[i].handle = handles[i];
		refs[i].access = DRM_NPU_BO_ACCESS_READ | DRM_NPU_BO_ACCESS_WRITE;
	}
	npu_submit_init(&s, cmd->handle, npu_cs_store(cs, cmd, 0), 1);
	s.bo_refs = (uintptr_t)refs;
	s.bo_ref_count = n;
	ret = npu_submit(fd, &s);
	if (!ret && job_id)
		*job_id = s.job_id;
	return ret;
}

/*
 * How many whole-'buf' fills make a job of about 'ms' milliseconds on
 * this machine (measured once with 8 fills), within 1..NPU_CS_MAX_FILLS.
 */
static inline unsigned int npu_fills_for_ms(int fd, struct npu_bo *cmd,
					    const struct npu_bo *buf, int ms)
{
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	struct npu_cs cs;
	int64_t t0, t;
	uint64_t n;

	npu_cs_long(&cs, buf, 8, 1, buf->va, 1);
	npu_submit_init(&s, cmd->handle, npu_cs_store(&cs, cmd, 0), 1);
	t0 = npu_now_ns();
	if (npu_submit(fd, &s) || npu_job_wait(fd, s.job_id, 60000, &info))
		return 8;
	t = (npu_now_ns() - t0) / 1000000;
	n = 8ull * ms / (t > 0 ? t : 1);
	if (n < 1)
		n = 1;
	if (n > NPU_CS_MAX_FILLS)
		n = NPU_CS_MAX_FILLS;
	return n;
}

/* ---- debugfs ---- */

static inline const char *npu_debugfs_dir(void)
{
	static char dir[256];
	glob_t g;

	if (dir[0])
		return dir;
	if (getenv("NPU_DEBUGFS")) {
		snprintf(dir, sizeof(dir), "%s", getenv("NPU_DEBUGFS"));
		return dir;
	}
	/*
	 * The directory of the device the tests open (NPU_DEV, else accel0):
	 * with several NPUs (tools/npu-vm --npus) it is one of many.
	 */
	{
		const char *dev = getenv("NPU_DEV") ?: NPU_DEV_PATH;
		char path[128], link[512], *p;
		ssize_t n;

		if (strrchr(dev, '/'))
			dev = strrchr(dev, '/') + 1;
		snprintf(path, sizeof(path), "/sys/class/accel/%.64s/device", dev);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			p = strrchr(link, '/');
			snprintf(dir, sizeof(dir), "/sys/kernel/debug/accel/%.200s",
				 p ? p + 1 : link);
			snprintf(path, sizeof(path), "%.100s/npu_counters", dir);
			if (!access(path, F_OK))
				return dir;
			dir[0] = 0;
		}
	}
	if (glob("/sys/kernel/debug/accel/*/npu_counters", 0, NULL, &g))
		return NULL;
	snprintf(dir, sizeof(dir), "%s", g.gl_pathv[0]);
	*strrchr(dir, '/') = 0;
	globfree(&g);
	return dir;
}

/* A "name value" line of npu_counters, or -1. */
static inline long long npu_counter(const char *name)
{
	const char *dir = npu_debugfs_dir();
	char path[320], key[64];
	long long val, ret = -1;
	FILE *f;

	if (!dir)
		return -1;
	snprintf(path, sizeof(path), "%s/npu_counters", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &val) == 2)
		if (!strcmp(key, name))
			ret = val;
	fclose(f);
	return ret;
}

/* Write a string to a (sysfs, debugfs, procfs) file; 0 or -errno. */
static inline int npu_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static inline int npu_debugfs_write(const char *file, const char *val)
{
	const char *dir = npu_debugfs_dir();
	char path[320];

	if (!dir)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return npu_write_file(path, val);
}

/*
 * Make the next pass through one of the driver's fault points fail
 * (@what: hang, mmu_fault, boot_fail, tlb_timeout) on the device whose
 * debugfs directory is @dir: through its fault_attr fail_<what>/ on
 * kernels with CONFIG_FAULT_INJECTION_DEBUG_FS, else through the one-shot
 * knob npu_inject_<what> (Debian's stock kernel).
 */

static inline int npu_inject_once_in(const char *dir, const char *what)
{
	static const char *const attr[][2] = {
		{ "verbose", "0" }, { "interval", "1" }, { "space", "0" },
		{ "times", "1" }, { "probability", "100" },
	};
	char path[512];
	unsigned int i;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/fail_%s", dir, what);
	if (access(path, F_OK)) {
		snprintf(path, sizeof(path), "%s/npu_inject_%s", dir, what);
		return npu_write_file(path, "1");
	}
	for (i = 0; i < sizeof(attr) / sizeof(attr[0]) && !ret; i++) {
		snprintf(path, sizeof(path), "%s/fail_%s/%s", dir, what,
			 attr[i][0]);
		ret = npu_write_file(path, attr[i][1]);
	}
	return ret;
}

static inline int npu_inject_once(const char *what)
{
	const char *dir = npu_debugfs_dir();

	return dir ? npu_inject_once_in(dir, what) : -ENOENT;
}

/*
 * Hold every job back in the schedulers (their fences stay unsignaled)
 * or let them run again: the npu_pause_queues test hook.
 */
static inline int npu_pause_queues(int pause)
{
	return npu_debugfs_write("npu_pause_queues", pause ? "1" : "0");
}

/*
 * ---- vgem: another driver's fences, signaled at will ----
 * (drivers/gpu/drm/vgem, include/uapi/drm/vgem_drm.h; vgem fences signal
 * by themselves, with an error, after 10 s.)
 */
struct npu_vgem_fence_attach {
	uint32_t handle;
	uint32_t flags;
	uint32_t out_fence;
	uint32_t pad;
};

struct npu_vgem_fence_signal {
	uint32_t fence;
	uint32_t flags;
};

#define NPU_VGEM_FENCE_WRITE	0x1
#define NPU_VGEM_IOCTL_FENCE_ATTACH \
	DRM_IOWR(DRM_COMMAND_BASE + 0x1, struct npu_vgem_fence_attach)
#define NPU_VGEM_IOCTL_FENCE_SIGNAL \
	DRM_IOW(DRM_COMMAND_BASE + 0x2, struct npu_vgem_fence_signal)

/* A DRM node of the vgem driver, or -1. */
static inline int npu_vgem_open(void)
{
	char path[64], name[16];
	int i, fd;

	for (i = 0; i < 16; i++) {
		struct drm_version v = { .name = name,
					 .name_len = sizeof(name) - 1 };

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (!ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/* A 4 KiB vgem buffer with a pending write fence, imported into @npu_fd. */
struct npu_vgem_bo {
	uint32_t vgem_handle;
	uint32_t fence;
	int dmabuf_fd;
	uint32_t npu_handle;
};

static inline int npu_vgem_fenced_bo(int vfd, int npu_fd, struct npu_vgem_bo *bo)
{
	struct drm_mode_create_dumb dumb = { .height = 1, .width = 4096, .bpp = 8 };
	struct npu_vgem_fence_attach attach = { .flags = NPU_VGEM_FENCE_WRITE };
	struct drm_prime_handle exp = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_prime_handle imp = { 0 };

	if (ioctl(vfd, DRM_IOCTL_MODE_CREATE_DUMB, &dumb))
		return -errno;
	attach.handle = dumb.handle;
	if (ioctl(vfd, NPU_VGEM_IOCTL_FENCE_ATTACH, &attach))
		return -errno;
	exp.handle = dumb.handle;
	if (ioctl(vfd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp))
		return -errno;
	imp.fd = exp.fd;
	if (ioctl(npu_fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp))
		return -errno;
	bo->vgem_handle = dumb.handle;
	bo->fence = attach.out_fence;
	bo->dmabuf_fd = exp.fd;
	bo->npu_handle = imp.handle;
	return 0;
}

/* 0 if the fence was still pending (-ETIMEDOUT once it timed out). */
static inline int npu_vgem_signal(int vfd, const struct npu_vgem_bo *bo)
{
	struct npu_vgem_fence_signal sig = { .fence = bo->fence };

	return ioctl(vfd, NPU_VGEM_IOCTL_FENCE_SIGNAL, &sig) ? -errno : 0;
}

/* Wait until the leak counters equal the baseline (or time out). */
struct npu_counters {
	long long bos, pages, jobs, contexts;
};

static inline void npu_counters_read(struct npu_counters *c)
{
	c->bos = npu_counter("bos");
	c->pages = npu_counter("pages_mapped");
	c->jobs = npu_counter("jobs");
	c->contexts = npu_counter("contexts");
}

static inline int npu_counters_settle(const struct npu_counters *base,
				      struct npu_counters *now, int timeout_ms)
{
	int64_t end = npu_now_ns() + (int64_t)timeout_ms * 1000000ll;

	for (;;) {
		npu_counters_read(now);
		if (now->bos == base->bos && now->pages == base->pages &&
		    now->jobs == base->jobs && now->contexts == base->contexts)
			return 0;
		if (npu_now_ns() > end)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

#endif /* NPU_TEST_H */
