// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_fuzz - a seeded random-operation fuzzer for the npu driver's uAPI.
 *
 *   npu_fuzz [-s SEED] [-n OPS] [-p PROCS] [-t SECONDS] [-f]
 *
 * PROCS worker processes (default 4) share an operation budget of OPS
 * (default 100000). Each worker keeps up to 3 open device files with their
 * BOs, mmaps, syncobjs, jobs and an io_uring, and issues random sequences,
 * valid and invalid, of: GET_PARAM, BO_CREATE, BO_INFO, GEM_CLOSE, SUBMIT
 * (copy jobs whose output is checked, and mutated / garbage submits),
 * JOB_INFO, JOB_WAIT, mmap / munmap / touching BOs, PRIME export and
 * import between its files, syncobj create / destroy / wait / signal /
 * reset / query (binary and timeline), the io_uring submit path, raw
 * driver ioctl numbers with random sizes and bytes, close and
 * reopen of files, fork (a child that works on the inherited files and
 * exits or is killed), and exit. The parent SIGKILLs random workers at
 * random points and starts new ones until the budget is spent, or until
 * SECONDS (default 3600) have passed, which is a finding: the harness sizes
 * it to the operation count (1e6 on the debug kernel take about two hours).
 * With -f the workers (not the parent) set /proc/self/make-it-fail, so
 * that failslab / fail_page_alloc with task-filter (configured by the
 * caller, tests/vm/guest.d/50-fuzz.sh on the debug kernel) fail their
 * kernel allocations: ENOMEM is then a legal answer everywhere.
 *
 * Findings (each printed, the exit status is 1 if there is one):
 *   - a valid operation that fails with an errno it may not return, or an
 *     invalid one that succeeds;
 *   - a valid copy job that completes with status 0 but wrong output;
 *   - after the run: BOs, jobs or contexts left in debugfs npu_counters
 *     (it waits up to 30 s for them to reach 0);
 *   - a correctness job on a fresh file that does not produce its output.
 * The kernel log (oops, WARN, KASAN, lockdep) is checked by the harness.
 *
 * Each worker's operation sequence is a function of SEED and its slot and
 * generation; the interleaving and the kill points depend on timing.
 */
#include <liburing.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "npu_test.h"

#define MAX_FILES	3
#define MAX_BOS		24
#define MAX_SYNCS	8
#define MAX_CHECKS	12
#define MAX_JOBS	32
#define RING_ENTRIES	32
#define MAX_PROCS	16
#define CHECK_BYTES	4096

struct shared {
	atomic_llong ops;		/* operations issued, all processes */
	atomic_llong findings;
	atomic_llong jobs_ok;		/* checked copy jobs with the right output */
	atomic_llong jobs_excused;	/* checked jobs aborted / canceled */
	atomic_llong submits_ok;
	atomic_llong kills;
	atomic_llong forks;
	atomic_llong exits;
	long long budget;
	int make_it_fail;
};

static struct shared *sh;

/* xorshift64*: the only source of randomness in a worker. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t rn(uint32_t n)
{
	return n ? rnd() % n : 0;
}

static int chance(int percent)
{
	return rn(100) < (uint32_t)percent;
}

static void finding(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	long long n = atomic_fetch_add(&sh->findings, 1) + 1;

	if (n > 50)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("# FINDING %lld (pid %d): %s\n", n, getpid(), buf);
	fflush(stdout);
}

struct fbo {
	uint32_t handle;
	uint64_t va, size;
	void *map;
	int ro;		/* an import of a read-only dma-buf: mapped PROT_READ */
};

struct check {
	uint64_t job_id;
	struct fbo src, dst;
	uint8_t pattern;
	int live;
};

struct fsync {
	uint32_t handle;
	uint64_t point;		/* last point submitted or signalled; 0 binary */
};

struct ffile {
	int fd;
	struct fbo bos[MAX_BOS];
	int nbos;
	struct fsync syncs[MAX_SYNCS];
	int nsyncs;
	struct check checks[MAX_CHECKS];
	uint64_t jobs[MAX_JOBS];
	int njobs;
	struct fbo cmd;		/* a small command buffer (not in bos[]) */
	struct io_uring ring;
	int ring_ok;
	/*
	 * Inherited by a forked child: the parent still uses these handles,
	 * so the child closes none of them (a closed handle number is reused
	 * at once and the parent's stale copy would then name another BO,
	 * its VA another buffer's).
	 */
	int shared;
};

static struct ffile files[MAX_FILES];
/* A forked child shares its parent's io_uring SQ, not liburing's view of it. */
static int in_child;

static int fuzz_ioctl(int fd, unsigned long req, void *arg)
{
	atomic_fetch_add(&sh->ops, 1);
	return npu_ioctl(fd, req, arg);
}

static int budget_left(void)
{
	return atomic_load(&sh->ops) < sh->budget;
}

/* ---- files ---- */

static void bo_unmap(struct fbo *b)
{
	if (b->map) {
		munmap(b->map, b->size);
		b->map = NULL;
	}
}

static int bo_make(struct ffile *f, uint64_t size, uint32_t flags, struct fbo *b)
{
	struct drm_npu_bo_create c = { .size = size, .flags = flags };
	struct drm_npu_bo_info i = { 0 };
	int ret;

	memset(b, 0, sizeof(*b));
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_BO_CREATE, &c);
	if (ret)
		return ret;
	i.handle = c.handle;
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_BO_INFO, &i);
	if (ret) {
		if (ret != -ENOMEM)
			finding("BO_INFO of a new handle %u: %d", c.handle, ret);
		return ret;
	}
	if (i.va != c.va || i.size < size)
		finding("BO_INFO va %llx size %llu, created va %llx size %llu",
			(unsigned long long)i.va, (unsigned long long)i.size,
			(unsigned long long)c.va, (unsigned long long)size);
	b->handle = c.handle;
	b->va = c.va;
	b->size = i.size;
	b->map = mmap(NULL, i.size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd,
		      i.mmap_offset);
	atomic_fetch_add(&sh->ops, 1);
	if (b->map == MAP_FAILED) {
		b->map = NULL;
		if (errno != ENOMEM)
			finding("mmap of a new BO: %d", -errno);
		return -errno;
	}
	return 0;
}

static void bo_drop(struct ffile *f, struct fbo *b)
{
	struct drm_gem_close c = { .handle = b->handle };

	bo_unmap(b);
	if (b->handle)
		fuzz_ioctl(f->fd, DRM_IOCTL_GEM_CLOSE, &c);
	memset(b, 0, sizeof(*b));
}

static void file_close(struct ffile *f)
{
	int i;

	if (f->fd < 0)
		return;
	/* Mappings keep the BOs; unmap them so nothing stays behind. */
	for (i = 0; i < f->nbos; i++)
		bo_unmap(&f->bos[i]);
	for (i = 0; i < MAX_CHECKS; i++) {
		bo_unmap(&f->checks[i].src);
		bo_unmap(&f->checks[i].dst);
	}
	bo_unmap(&f->cmd);
	if (f->ring_ok)
		io_uring_queue_exit(&f->ring);
	close(f->fd);
	atomic_fetch_add(&sh->ops, 1);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

static int file_open(struct ffile *f)
{
	struct npu_cs cs;

	memset(f, 0, sizeof(*f));
	f->fd = npu_open();
	atomic_fetch_add(&sh->ops, 1);
	if (f->fd < 0) {
		if (errno != EBUSY && errno != EMFILE && errno != ENOMEM)
			finding("open: %d", -errno);
		f->fd = -1;
		return -1;
	}
	if (bo_make(f, 8192, 0, &f->cmd)) {
		file_close(f);
		return -1;
	}
	npu_cs_begin(&cs);
	memcpy(f->cmd.map, cs.buf, cs.len);
	f->ring_ok = !io_uring_queue_init(RING_ENTRIES, &f->ring,
					  chance(50) ? IORING_SETUP_CQE32 : 0);
	return 0;
}

static struct ffile *any_file(void)
{
	int i, start = rn(MAX_FILES);

	for (i = 0; i < MAX_FILES; i++) {
		struct ffile *f = &files[(start + i) % MAX_FILES];

		if (f->fd >= 0)
			return f;
	}
	file_open(&files[start]);
	return files[start].fd >= 0 ? &files[start] : NULL;
}

/* A handle: mostly one of ours, sometimes random. */
static uint32_t pick_handle(struct ffile *f)
{
	if (f->nbos && chance(85))
		return f->bos[rn(f->nbos)].handle;
	switch (rn(4)) {
	case 0: return 0;
	case 1: return rn(64);
	case 2: return f->cmd.handle;
	default: return rnd();
	}
}

static uint64_t rnd_u64_edge(void)
{
	static const uint64_t edges[] = {
		0, 1, 7, 8, 4095, 4096, 4097, 1ull << 20, 1ull << 31,
		1ull << 32, (1ull << 39) - 4096, 1ull << 39, ~0ull, ~0ull - 4095,
		0x7fffffffffffffffull,
	};

	if (chance(60))
		return edges[rn(sizeof(edges) / sizeof(edges[0]))];
	return rnd();
}

/* ---- operations ---- */

static void op_get_param(struct ffile *f)
{
	struct drm_npu_get_param p = { .param = rn(28) };
	int ret;

	if (chance(5))
		p.pad = rnd();
	if (chance(3))
		p.param = rnd();
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_GET_PARAM, &p);
	if (p.pad && !ret)
		finding("GET_PARAM with pad %u succeeded", p.pad);
	/* VM_ID may have to make a VA space, which can fail. */
	if (!p.pad && p.param <= DRM_NPU_PARAM_MAX_FILE_CONTEXTS && ret &&
	    ret != -ENODEV && !(p.param == DRM_NPU_PARAM_VM_ID &&
				(ret == -EBUSY || ret == -EMFILE)))
		finding("GET_PARAM %u: %d", p.param, ret);
	if (!p.pad && p.param > DRM_NPU_PARAM_MAX_FILE_CONTEXTS && ret != -EINVAL)
		finding("GET_PARAM of unknown %u: %d", p.param, ret);
}

static void op_bo_create(struct ffile *f)
{
	struct fbo b;
	uint64_t size;
	uint32_t flags = chance(20) ? DRM_NPU_BO_DEVICE_READ_ONLY : 0;
	int ret;

	if (f->nbos >= MAX_BOS) {
		int k = rn(f->nbos);

		if (f->shared)
			return;
		bo_drop(f, &f->bos[k]);
		f->nbos--;
		f->bos[k] = f->bos[f->nbos];
		return;
	}
	if (chance(10)) {
		/* Sizes that must fail, or small ones: a valid 2 GiB BO pins
		 * 2 GiB, and the OOM killer cannot tell whose they are. */
		static const uint64_t sizes[] = {
			0, 1ull << 39, (1ull << 39) + 4096, 1ull << 40, ~0ull,
			~0ull - 4095, 0x7fffffffffffffffull, 1, 4095, 4097,
		};
		struct drm_npu_bo_create c = {
			.size = sizes[rn(sizeof(sizes) / sizeof(sizes[0]))],
			.flags = rnd(),
		};

		if (chance(50))
			c.flags &= DRM_NPU_BO_FLAGS;
		ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_BO_CREATE, &c);
		if (!ret) {
			if ((c.flags & ~DRM_NPU_BO_FLAGS) || c.size == 0)
				finding("BO_CREATE size %llu flags %x succeeded",
					(unsigned long long)c.size, c.flags);
			if (f->nbos < MAX_BOS) {
				f->bos[f->nbos++] = (struct fbo){ .handle = c.handle,
								  .va = c.va,
								  .size = c.size };
			}
		}
		return;
	}
	size = chance(70) ? 4096 * (1 + rn(4)) : 1 + rn(256 * 1024);
	ret = bo_make(f, size, flags, &b);
	if (ret) {
		if (ret != -ENOMEM && ret != -ENOSPC && ret != -ENODEV &&
		    ret != -EINTR)
			finding("BO_CREATE size %llu: %d", (unsigned long long)size, ret);
		return;
	}
	f->bos[f->nbos++] = b;
}

static void op_bo_info(struct ffile *f)
{
	struct drm_npu_bo_info i = { .handle = pick_handle(f) };
	int ret;

	if (chance(5))
		i.flags = rnd();
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_BO_INFO, &i);
	if (i.flags && !ret)
		finding("BO_INFO flags %x succeeded", i.flags);
}

static void op_gem_close(struct ffile *f)
{
	struct drm_gem_close c;
	int k;

	if (f->nbos && chance(80) && !f->shared) {
		k = rn(f->nbos);
		if (chance(50))
			bo_unmap(&f->bos[k]);
		c = (struct drm_gem_close){ .handle = f->bos[k].handle };
		if (fuzz_ioctl(f->fd, DRM_IOCTL_GEM_CLOSE, &c) == 0 && chance(10) &&
		    fuzz_ioctl(f->fd, DRM_IOCTL_GEM_CLOSE, &c) == 0)
			finding("GEM_CLOSE twice of %u succeeded", c.handle);
		bo_unmap(&f->bos[k]);
		f->nbos--;
		f->bos[k] = f->bos[f->nbos];
		return;
	}
	/* Random handles only far from ours: a random close of a live one is
	 * legal but would make the checked jobs' handles dangle. */
	c = (struct drm_gem_close){ .handle = 0x40000000 | rnd() };
	if (!fuzz_ioctl(f->fd, DRM_IOCTL_GEM_CLOSE, &c))
		finding("GEM_CLOSE of random %u succeeded", c.handle);
}

static void op_mmap(struct ffile *f)
{
	struct drm_npu_bo_info i = { 0 };
	struct fbo *b;
	void *p;

	if (!f->nbos)
		return;
	b = &f->bos[rn(f->nbos)];
	if (chance(30)) {
		bo_unmap(b);
		atomic_fetch_add(&sh->ops, 1);
		return;
	}
	if (chance(10)) {
		/* A bogus offset or length. */
		p = mmap(NULL, 4096 * (1 + rn(4)), PROT_READ | PROT_WRITE,
			 MAP_SHARED, f->fd, (off_t)(rnd() & ~0xfffull) & 0xffffffffff);
		atomic_fetch_add(&sh->ops, 1);
		if (p != MAP_FAILED)
			munmap(p, 4096);
		return;
	}
	i.handle = b->handle;
	if (fuzz_ioctl(f->fd, DRM_IOCTL_NPU_BO_INFO, &i))
		return;
	if (!b->map) {
		b->size = i.size;
		p = mmap(NULL, i.size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd,
			 i.mmap_offset);
		atomic_fetch_add(&sh->ops, 1);
		/* Read-only dma-bufs import read-only for the CPU too. */
		if (p == MAP_FAILED && errno == EACCES) {
			p = mmap(NULL, i.size, PROT_READ, MAP_SHARED, f->fd,
				 i.mmap_offset);
			b->ro = p != MAP_FAILED;
		}
		if (p == MAP_FAILED) {
			if (errno != ENOMEM)
				finding("mmap of handle %u: %d", b->handle, -errno);
			return;
		}
		b->map = p;
	}
	/* Touch it: CPU writes racing device DMA are the user's business. */
	if (b->ro)
		(void)*(volatile uint8_t *)((uint8_t *)b->map + rn(b->size));
	else
		memset((uint8_t *)b->map + rn(b->size), rn(256), 1);
}

static void op_prime(struct ffile *f)
{
	struct drm_prime_handle exp = { 0 }, imp = { 0 };
	struct ffile *g = &files[rn(MAX_FILES)];
	int ret;

	if (g->fd < 0)
		g = f;
	/*
	 * Only a public BO is imported into a list: a random handle may be a
	 * checked job's buffer, which random streams of the importer must not
	 * write.
	 */
	int pub = f->nbos && chance(85);

	exp.handle = pub ? f->bos[rn(f->nbos)].handle : pick_handle(f);
	exp.flags = chance(90) ? DRM_CLOEXEC | (chance(50) ? DRM_RDWR : 0) : rnd();
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp);
	if (ret)
		return;
	if (!pub) {
		close(exp.fd);
		return;
	}
	imp.fd = exp.fd;
	ret = fuzz_ioctl(g->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp);
	if (!ret && g != f && g->nbos < MAX_BOS) {
		struct drm_npu_bo_info i = { .handle = imp.handle };

		if (!fuzz_ioctl(g->fd, DRM_IOCTL_NPU_BO_INFO, &i)) {
			int k;

			/* Importing twice gives the same handle: keep one entry. */
			for (k = 0; k < g->nbos; k++)
				if (g->bos[k].handle == imp.handle)
					break;
			if (k == g->nbos)
				g->bos[g->nbos++] = (struct fbo){ .handle = imp.handle,
								  .va = i.va,
								  .size = i.size };
		}
	}
	if (chance(5)) {
		/* A non-dma-buf fd. */
		imp.fd = f->fd;
		if (!fuzz_ioctl(g->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp))
			finding("PRIME import of the device fd succeeded");
	}
	close(exp.fd);
}

static struct fsync *pick_sync(struct ffile *f)
{
	return f->nsyncs ? &f->syncs[rn(f->nsyncs)] : NULL;
}

static void op_syncobj(struct ffile *f)
{
	struct fsync *s = pick_sync(f);
	int ret;

	switch (rn(7)) {
	case 0: {	/* create */
		struct drm_syncobj_create c = {
			.flags = chance(30) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0,
		};

		if (f->nsyncs >= MAX_SYNCS && f->shared)
			break;
		if (f->nsyncs >= MAX_SYNCS) {
			struct drm_syncobj_destroy d = { .handle = f->syncs[0].handle };

			fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
			f->nsyncs--;
			f->syncs[0] = f->syncs[f->nsyncs];
		}
		if (chance(3))
			c.flags = rnd();
		ret = fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_CREATE, &c);
		if (!ret)
			f->syncs[f->nsyncs++] = (struct fsync){ .handle = c.handle,
								.point = chance(50) ? 0 : 1 };
		else if (!(c.flags & ~DRM_SYNCOBJ_CREATE_SIGNALED) && ret != -ENOMEM)
			finding("SYNCOBJ_CREATE: %d", ret);
		break;
	}
	case 1: {	/* destroy */
		struct drm_syncobj_destroy d = {
			.handle = s && !f->shared ? s->handle : 0x40000000 | rnd(),
		};

		ret = fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
		if (s && !ret && !f->shared) {
			f->nsyncs--;
			*s = f->syncs[f->nsyncs];
		}
		break;
	}
	case 2: {	/* binary / timeline wait, short */
		uint32_t h = s ? s->handle : rnd();
		uint64_t pt = s ? s->point : 0;
		struct drm_syncobj_timeline_wait w = {
			.handles = (uintptr_t)&h, .points = (uintptr_t)&pt,
			.timeout_nsec = npu_now_ns() + rn(3) * 1000000ll,
			.count_handles = 1,
			.flags = chance(50) ? DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT : 0,
		};

		if (!pt && chance(50)) {
			struct drm_syncobj_wait bw = {
				.handles = (uintptr_t)&h, .count_handles = 1,
				.timeout_nsec = w.timeout_nsec, .flags = w.flags,
			};

			fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_WAIT, &bw);
		} else {
			fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
		}
		break;
	}
	case 3: {	/* signal */
		uint32_t h = s ? s->handle : rnd();
		uint64_t pt = s && s->point ? s->point + 1 : 0;

		if (pt) {
			struct drm_syncobj_timeline_array a = {
				.handles = (uintptr_t)&h, .points = (uintptr_t)&pt,
				.count_handles = 1,
			};

			if (!fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, &a))
				s->point = pt;
		} else {
			struct drm_syncobj_array a = { .handles = (uintptr_t)&h,
						       .count_handles = 1 };

			fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_SIGNAL, &a);
		}
		break;
	}
	case 4: {	/* reset */
		uint32_t h = s ? s->handle : rnd();
		struct drm_syncobj_array a = { .handles = (uintptr_t)&h,
					       .count_handles = 1 };

		fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_RESET, &a);
		break;
	}
	case 5: {	/* query */
		uint32_t h = s ? s->handle : rnd();
		uint64_t pt = 0;
		struct drm_syncobj_timeline_array a = {
			.handles = (uintptr_t)&h, .points = (uintptr_t)&pt,
			.count_handles = 1,
		};

		fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_QUERY, &a);
		break;
	}
	default: {	/* export / import as a sync_file */
		struct drm_syncobj_handle hd = {
			.handle = s ? s->handle : rnd(),
			.flags = chance(50) ? DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE : 0,
		};

		if (!fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &hd)) {
			if (!hd.flags) {
				struct drm_syncobj_handle im = { .fd = hd.fd };
				struct drm_syncobj_destroy d;

				if (!fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &im)) {
					d = (struct drm_syncobj_destroy){ .handle = im.handle };
					fuzz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
				}
			}
			close(hd.fd);
		}
		break;
	}
	}
}

static void remember_job(struct ffile *f, uint64_t id)
{
	if (f->njobs < MAX_JOBS)
		f->jobs[f->njobs++] = id;
	else
		f->jobs[rn(MAX_JOBS)] = id;
}

/* Fill in syncs for a submit: in-syncs on existing points, an out-sync. */
static void add_syncs(struct ffile *f, struct drm_npu_submit *s,
		      struct drm_npu_sync *in, int max_in)
{
	int n = 0;

	while (f->nsyncs && n < max_in && chance(30)) {
		struct fsync *y = pick_sync(f);

		in[n++] = (struct drm_npu_sync){ .handle = y->handle,
						 .point = y->point };
	}
	s->in_sync_count = n;
	s->in_syncs = (uintptr_t)in;
	if (f->nsyncs && chance(40)) {
		struct fsync *y = pick_sync(f);

		s->out_sync.handle = y->handle;
		s->out_sync.point = y->point ? y->point + 1 : 0;
	}
}

static void after_submit(struct ffile *f, struct drm_npu_submit *s)
{
	int k;

	/* The out point now has a fence: later jobs may wait on it. */
	for (k = 0; k < f->nsyncs; k++)
		if (s->out_sync.handle == f->syncs[k].handle && s->out_sync.point)
			f->syncs[k].point = s->out_sync.point;
	remember_job(f, s->job_id);
	atomic_fetch_add(&sh->submits_ok, 1);
}

static int ok_submit_errno(int ret)
{
	/* Legal failures of a well-formed submit under random circumstances. */
	return ret == -EBUSY || ret == -ECANCELED || ret == -ENOMEM ||
	       ret == -ENODEV || ret == -EINTR || ret == -ENOENT ||
	       ret == -EINVAL;	/* a syncobj point without a fence yet */
}

static void check_finish(struct ffile *f, struct check *c, int64_t timeout_ns)
{
	struct drm_npu_job_wait w;
	int ret;

	ret = npu_job_wait_ioctl(f->fd, c->job_id, timeout_ns,
				 NPU_WAIT_RELATIVE, &w);
	atomic_fetch_add(&sh->ops, 1);
	if (ret == -ETIME && timeout_ns < 1000000000ll)
		return;		/* later */
	if (ret == -ENOMEM) {
		atomic_fetch_add(&sh->jobs_excused, 1);
	} else if (ret) {
		finding("JOB_WAIT of checked job %llu: %d (state %u)",
			(unsigned long long)c->job_id, ret, w.state);
	} else if (w.state == DRM_NPU_JOB_DONE && w.status == NPU_JOB_OK) {
		uint8_t *d = c->dst.map;
		int i;

		for (i = 0; i < CHECK_BYTES; i++)
			if (d[i] != (uint8_t)(c->pattern + i)) {
				finding("job %llu done but dst[%d] = %02x, want %02x",
					(unsigned long long)c->job_id, i, d[i],
					(uint8_t)(c->pattern + i));
				break;
			}
		if (i == CHECK_BYTES)
			atomic_fetch_add(&sh->jobs_ok, 1);
	} else if (w.state == DRM_NPU_JOB_CANCELED ||
		   w.status == NPU_JOB_ERR_ABORTED) {
		atomic_fetch_add(&sh->jobs_excused, 1);
	} else {
		finding("checked job %llu: state %u status %u",
			(unsigned long long)c->job_id, w.state, w.status);
	}
	bo_drop(f, &c->src);
	bo_drop(f, &c->dst);
	c->live = 0;
}

/* A copy job with private buffers whose output is checked later. */
static void op_submit_checked(struct ffile *f, int uring)
{
	struct drm_npu_bo_ref refs[2];
	struct drm_npu_sync in[2];
	struct drm_npu_submit s;
	struct check *c = NULL;
	struct npu_cs cs;
	struct fbo cmd;
	int i, ret;

	for (i = 0; i < MAX_CHECKS; i++)
		if (!f->checks[i].live) {
			c = &f->checks[i];
			break;
		}
	if (!c) {
		if (!f->shared)
			check_finish(f, &f->checks[rn(MAX_CHECKS)], 5000000000ll);
		return;
	}
	memset(c, 0, sizeof(*c));
	if (bo_make(f, CHECK_BYTES, 0, &c->src) || bo_make(f, CHECK_BYTES, 0, &c->dst)) {
		bo_drop(f, &c->src);
		bo_drop(f, &c->dst);
		return;
	}
	c->pattern = rn(256);
	for (i = 0; i < CHECK_BYTES; i++)
		((uint8_t *)c->src.map)[i] = c->pattern + i;
	memset(c->dst.map, ~c->pattern, CHECK_BYTES);
	/* Its own command buffer, so that no later op can rewrite the stream. */
	if (bo_make(f, 4096, chance(50) ? DRM_NPU_BO_DEVICE_READ_ONLY : 0, &cmd)) {
		bo_drop(f, &c->src);
		bo_drop(f, &c->dst);
		return;
	}
	npu_cs_begin(&cs);
	npu_cs_copy(&cs, c->src.va, c->dst.va, CHECK_BYTES);
	memcpy(cmd.map, cs.buf, cs.len);
	npu_submit_init(&s, cmd.handle, cs.len, chance(30) ? 0 : 1);
	refs[0] = (struct drm_npu_bo_ref){ c->src.handle, DRM_NPU_BO_ACCESS_READ };
	refs[1] = (struct drm_npu_bo_ref){ c->dst.handle, DRM_NPU_BO_ACCESS_WRITE };
	s.bo_refs = (uintptr_t)refs;
	s.bo_ref_count = 2;
	add_syncs(f, &s, in, 2);

	if (uring && f->ring_ok && !in_child) {
		struct drm_npu_uring_submit us = { 0 };
		struct io_uring_sqe *sqe = io_uring_get_sqe(&f->ring);

		if (!sqe)
			goto ioctl;
		/* The struct is read at issue; keep it until the submit call. */
		us.submit = (uintptr_t)&s;
		us.submit_size = sizeof(s);
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = f->fd;
		sqe->cmd_op = DRM_NPU_URING_CMD_SUBMIT;
		sqe->user_data = 0xc0ffee;
		memcpy(sqe->cmd, &us, sizeof(us));
		ret = io_uring_submit(&f->ring);
		atomic_fetch_add(&sh->ops, 1);
		if (ret != 1) {
			/* A full completion queue is the application's problem. */
			if (ret != -EBUSY && ret != -EAGAIN && ret != -ENOMEM)
				finding("io_uring_submit: %d", ret);
			goto drop;
		}
		/* A failed submission's CQE is judged by op_uring_reap(). */
		if (!s.job_id)
			goto drop;
		goto submitted;
	}
ioctl:
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_SUBMIT, &s);
	if (ret) {
		if (!ok_submit_errno(ret))
			finding("checked SUBMIT: %d", ret);
		goto drop;
	}
submitted:
	after_submit(f, &s);
	c->job_id = s.job_id;
	c->live = 1;
	bo_drop(f, &cmd);	/* the job holds its mapping */
	return;
drop:
	bo_drop(f, &cmd);
	bo_drop(f, &c->src);
	bo_drop(f, &c->dst);
}

/* Reap io_uring completions without waiting. */
static void op_uring_reap(struct ffile *f)
{
	struct io_uring_cqe *cqe;

	if (!f->ring_ok || in_child)
		return;
	while (!io_uring_peek_cqe(&f->ring, &cqe)) {
		if (cqe->user_data == 0xc0ffee && cqe->res < 0 &&
		    !ok_submit_errno(cqe->res) && cqe->res != -EIO &&
		    cqe->res != -ETIME && cqe->res != -ECANCELED)
			finding("uring CQE res %d", cqe->res);
		io_uring_cqe_seen(&f->ring, cqe);
		atomic_fetch_add(&sh->ops, 1);
	}
}

/* A submit with random buffers, a random stream, or one field mutated. */
static void op_submit_random(struct ffile *f, int uring)
{
	struct drm_npu_bo_ref refs[8];
	struct drm_npu_sync in[4];
	struct drm_npu_submit s;
	int nrefs = 0, i, mutated = 0, ret;
	uint32_t len = 8 * (1 + rn(32));
	struct fbo cmd;

	/*
	 * Its own command buffer, as a checked job's: a stream rewritten in a
	 * shared one before an earlier job read it would run that job with
	 * this one's VAs, which its refs do not hold (their BOs may close, a
	 * checked job's buffer get the VA, and the earlier job write there).
	 */
	if (bo_make(f, 8192, 0, &cmd))
		return;

	/*
	 * A stream over the public BOs, or garbage. The buffers a stream
	 * touches are listed in its refs (so their VAs cannot be reused by a
	 * checked job's buffers before it runs), out-of-bounds accesses go to
	 * VAs no buffer ever gets, and garbage words are no small VAs.
	 */
	if (chance(50)) {
		struct npu_cs cs;

		npu_cs_begin(&cs);
		_Static_assert(sizeof(refs) / sizeof(refs[0]) >= 2 * 4, "a pair per op");
		for (i = 0; i < 1 + (int)rn(4) && f->nbos; i++) {
			struct fbo *a = &f->bos[rn(f->nbos)], *b = &f->bos[rn(f->nbos)];
			uint32_t n = 1 + rn(a->size < b->size ? a->size : b->size);
			uint64_t bad = chance(50) ? 0 : (1ull << 39) + rn(1 << 20);

			/*
			 * Every pair is listed (4 pairs fill refs[]): an unlisted
			 * buffer closed before the job runs frees its VA, a checked
			 * job's buffer may get it, and this job then writes there
			 * (the harness's own race, reported as a wrong header or
			 * wrong bytes of the checked job).
			 */
			refs[nrefs++] = (struct drm_npu_bo_ref){ a->handle,
				DRM_NPU_BO_ACCESS_READ | DRM_NPU_BO_ACCESS_WRITE };
			refs[nrefs++] = (struct drm_npu_bo_ref){ b->handle,
				DRM_NPU_BO_ACCESS_READ | DRM_NPU_BO_ACCESS_WRITE };
			if (chance(50))
				npu_cs_fill(&cs, chance(90) ? a->va : bad, rn(256), n);
			else
				npu_cs_copy(&cs, a->va, chance(90) ? b->va : bad, n);
		}
		/* A flipped bit in the header or the first opcode. */
		if (chance(10))
			cs.buf[rn(sizeof(struct npu_cs_header) + 1)] ^= 1 << rn(8);
		memcpy(cmd.map, cs.buf, cs.len);
		len = cs.len;
	} else {
		uint32_t *w = cmd.map;

		for (i = 0; i < 64; i++)
			w[i] = chance(50) ? (uint32_t)rnd() | 0x80000000u : rn(16);
		if (chance(70)) {
			struct npu_cs_header h = {
				.magic = NPU_CS_MAGIC,
				.isa_major = NPU_ISA_VERSION_MAJOR,
				.isa_minor = NPU_ISA_VERSION_MINOR,
			};

			memcpy(cmd.map, &h, sizeof(h));
		}
	}
	npu_submit_init(&s, cmd.handle, len, rn(2));
	for (i = rn(3); i > 0 && nrefs < 8; i--)
		refs[nrefs++] = (struct drm_npu_bo_ref){ pick_handle(f), 1 + rn(3) };
	s.bo_refs = (uintptr_t)refs;
	s.bo_ref_count = nrefs;
	add_syncs(f, &s, in, 4);

	if (chance(40)) {
		mutated = 1;
		switch (rn(16)) {
		case 0: s.cmd_handle = pick_handle(f); mutated = 0; break;
		case 1:	/* misaligned, or past the 8 KiB buffer */
			s.cmd_offset = chance(50) ? (rnd_u64_edge() | 1 | (rn(7) << 1)) :
						    8192 + rn(1 << 20);
			break;
		case 2:	/* zero, not a multiple of 8, or past the buffer */
			s.cmd_size = chance(30) ? 0 : chance(50) ? ((uint32_t)rnd() | 4) :
						  8192 + 8 * (1 + rn(1 << 20));
			break;
		case 3: s.context_id = chance(50) ? 0 : 100 + rn(100); break;
		case 4: s.flags = 1 + rn(0xffff); break;
		case 5: s.bo_ref_count = DRM_NPU_MAX_BO_REFS + 1 + rn(1000); break;
		case 6: s.bo_refs = rnd_u64_edge() | 1; mutated = nrefs > 0; break;
		case 7: s.bo_ref_size = rn(sizeof(struct drm_npu_bo_ref)); mutated = nrefs > 0; break;
		case 8: s.in_sync_count = DRM_NPU_MAX_SYNCS + 1 + rn(100); break;
		case 9: s.in_syncs = rnd_u64_edge() | 1; s.in_sync_count = 1 + rn(4); break;
		case 10: s.reserved = rnd() | 1; break;
		case 11: s.out_sync.flags = 1 + rn(7); s.out_sync.handle = s.out_sync.handle ?: 1; mutated = 0; break;
		case 12: refs[0].access = chance(50) ? 0 : 4 + rn(100); mutated = nrefs > 0; break;
		case 13:	/* an entry size below, odd or above the limits */
			s.in_sync_size = chance(50) ? rn(16) : 4096 + 8 * (1 + rn(100));
			s.in_syncs = (uintptr_t)in;
			s.in_sync_count = 1;
			break;
		case 14:	/* a 64-bit offset past any buffer */
			s.cmd_offset = ((uint64_t)(1 + rn(1 << 20)) << 32) | (rn(512) << 3);
			break;
		default: in[0].flags = 1; s.in_sync_count = s.in_sync_count ?: 0; mutated = 0; break;
		}
	}

	if (uring && f->ring_ok && !in_child) {
		struct drm_npu_uring_submit us = {
			.submit = (uintptr_t)&s,
			.submit_size = sizeof(s),
		};
		struct io_uring_sqe *sqe = io_uring_get_sqe(&f->ring);

		if (!sqe)
			goto out;
		if (chance(10))
			us.flags = 1 + rn(3);
		if (chance(10))
			us.submit_size = chance(50) ? rn(sizeof(s)) : rnd();
		if (chance(5))
			us.submit = rnd_u64_edge();
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = f->fd;
		sqe->cmd_op = chance(95) ? DRM_NPU_URING_CMD_SUBMIT : rnd();
		sqe->user_data = 0xbad;
		memcpy(sqe->cmd, &us, sizeof(us));
		io_uring_submit(&f->ring);
		atomic_fetch_add(&sh->ops, 1);
		if (s.job_id)
			remember_job(f, s.job_id);
		goto out;
	}
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_SUBMIT, &s);
	if (!ret) {
		if (mutated)
			finding("mutated SUBMIT succeeded (cmd_off %llu size %u context %u flags %x count %u refsz %u syncs %u syncsz %u reserved %llx)",
				(unsigned long long)s.cmd_offset, s.cmd_size,
				s.context_id, s.flags, s.bo_ref_count,
				s.bo_ref_size, s.in_sync_count, s.in_sync_size,
				(unsigned long long)s.reserved);
		after_submit(f, &s);
	}
out:
	bo_drop(f, &cmd);	/* a job holds its mapping */
}

/*
 * Contexts come and go; ids 1 and 2 (npu_open()'s, which the checked
 * submits use) stay unless the file is forked off (shared).
 */
static void op_context(struct ffile *f)
{
	struct drm_npu_context_create c = { .priority = rn(4) };
	struct drm_npu_context_destroy d = { .context_id = 3 + rn(40) };
	int ret;

	if (chance(50)) {
		if (chance(5))
			c.flags = 1 + rn(3);
		if (chance(5))
			c.pad = 1;
		ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_CONTEXT_CREATE, &c);
		if (!ret && (c.flags || c.pad || c.priority > 2))
			finding("CONTEXT_CREATE with flags %x pad %u priority %u succeeded",
				c.flags, c.pad, c.priority);
		if (!ret && c.context_id < 3)
			finding("CONTEXT_CREATE gave id %u, already in use",
				c.context_id);
		return;
	}
	if (chance(5))
		d.pad = 1;
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_CONTEXT_DESTROY, &d);
	if (!ret && d.pad)
		finding("CONTEXT_DESTROY with pad succeeded");
}

static void op_job_info(struct ffile *f)
{
	struct drm_npu_job_info i = { 0 };
	int ret;

	i.job_id = f->njobs && chance(80) ? f->jobs[rn(f->njobs)] : rnd_u64_edge();
	if (chance(5))
		i.flags = 1 + rn(10);
	if (chance(5))
		i.reserved = 1;
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_JOB_INFO, &i);
	if (!ret && (i.flags || i.reserved))
		finding("JOB_INFO with flags/reserved succeeded");
	if (!ret && i.state > DRM_NPU_JOB_CANCELED)
		finding("JOB_INFO state %u", i.state);
}

static void op_job_wait(struct ffile *f)
{
	struct drm_npu_job_wait w = { 0 };
	int ret, k;

	/* Finish a checked job now and then. */
	for (k = 0; k < MAX_CHECKS && !f->shared; k++)
		if (f->checks[k].live && chance(30)) {
			check_finish(f, &f->checks[k], chance(80) ? 0 : 20000000ll);
			return;
		}
	w.job_id = f->njobs && chance(80) ? f->jobs[rn(f->njobs)] : rnd_u64_edge();
	w.timeout_ns = chance(50) ? rn(2000000) : (int64_t)rnd_u64_edge();
	/* Absolute CLOCK_MONOTONIC times only; any flag is -EINVAL. */
	w.flags = chance(90) ? 0 : rn(8);
	if (w.timeout_ns > 0 && chance(90))
		w.timeout_ns = npu_now_ns() + rn(2000000);
	if (chance(5))
		w.pad = 1;
	if (chance(5))
		w.state = rnd();
	ret = fuzz_ioctl(f->fd, DRM_IOCTL_NPU_JOB_WAIT, &w);
	if (!ret && (w.pad || w.flags))
		finding("JOB_WAIT with pad/flags %x succeeded", w.flags);
}

/*
 * A raw driver ioctl: a read-only command or an unknown number, with a
 * random struct size (shorter and longer than the kernel's) and random
 * bytes. Not judged: the kernel log and the counters are.
 */
static void op_raw_ioctl(struct ffile *f)
{
	static const unsigned int nrs[] = {
		DRM_NPU_GET_PARAM, DRM_NPU_BO_INFO, DRM_NPU_JOB_INFO,
		/* Version 1's SUBMIT and JOB_INFO. */
		0x03, 0x04,
	};
	uint64_t buf[16];
	unsigned int nr, size, dir, i;

	for (i = 0; i < 16; i++)
		buf[i] = chance(50) ? rn(64) : rnd();
	nr = chance(70) ? nrs[rn(5)] : 0x0a + rn(0x36);
	size = rn(sizeof(buf) + 1);
	dir = rn(4);
	fuzz_ioctl(f->fd, _IOC(dir, DRM_IOCTL_BASE, DRM_COMMAND_BASE + nr, size), buf);
}

static void op_file(struct ffile *f)
{
	struct ffile *g = &files[rn(MAX_FILES)];

	if (g->fd >= 0 && chance(60))
		file_close(g);
	else if (g->fd < 0)
		file_open(g);
}

static void worker_ops(long long limit);

static void op_fork(void)
{
	pid_t pid;

	atomic_fetch_add(&sh->forks, 1);
	fflush(stdout);
	pid = fork();
	atomic_fetch_add(&sh->ops, 1);
	if (pid == 0) {
		/* The child works on the inherited files (same contexts). */
		int i;

		rng_state ^= 0x9e3779b97f4a7c15ull * getpid();
		in_child = 1;
		for (i = 0; i < MAX_FILES; i++)
			files[i].shared = files[i].fd >= 0;
		worker_ops(10 + rn(40));
		_exit(0);
	}
	if (pid < 0)
		return;
	if (chance(30)) {
		usleep(rn(3000));
		kill(pid, SIGKILL);
		atomic_fetch_add(&sh->kills, 1);
	}
	waitpid(pid, NULL, 0);
}

static void one_op(void)
{
	struct ffile *f = any_file();
	int r = rn(1000);

	if (!f) {
		usleep(1000);
		return;
	}
	if (r < 60)		op_get_param(f);
	else if (r < 180)	op_bo_create(f);
	else if (r < 230)	op_bo_info(f);
	else if (r < 290)	op_gem_close(f);
	else if (r < 370)	op_mmap(f);
	else if (r < 420)	op_prime(f);
	else if (r < 560)	op_syncobj(f);
	else if (r < 620)	op_submit_checked(f, chance(40));
	else if (r < 720)	op_submit_random(f, chance(40));
	else if (r < 800)	op_job_info(f);
	else if (r < 880)	op_job_wait(f);
	else if (r < 910)	op_uring_reap(f);
	else if (r < 930)	op_context(f);
	else if (r < 975)	op_file(f);
	else if (r < 985)	op_fork();
	else			op_raw_ioctl(f);
}

static void worker_ops(long long limit)
{
	long long i;

	for (i = 0; i < limit && budget_left(); i++)
		one_op();
}

static void worker(uint64_t seed)
{
	int i;

	rng_state = seed ? seed : 1;
	for (i = 0; i < MAX_FILES; i++)
		files[i].fd = -1;
	if (sh->make_it_fail) {
		int fd = open("/proc/self/make-it-fail", O_WRONLY);

		if (fd < 0 || write(fd, "1", 1) != 1)
			finding("cannot write /proc/self/make-it-fail: %d", -errno);
		if (fd >= 0)
			close(fd);
	}
	while (budget_left()) {
		worker_ops(1000);
		/* Exit with everything open, now and then. */
		if (chance(3)) {
			atomic_fetch_add(&sh->exits, 1);
			_exit(0);
		}
	}
	/* Finish the checked jobs, then leave everything else open. */
	for (i = 0; i < MAX_FILES; i++) {
		int k;

		if (files[i].fd < 0)
			continue;
		for (k = 0; k < MAX_CHECKS; k++)
			if (files[i].checks[k].live)
				check_finish(&files[i], &files[i].checks[k],
					     10000000000ll);
	}
	_exit(0);
}

/* ---- the parent ---- */

static int correctness_job(void)
{
	struct npu_bo cmd = { 0 }, src = { 0 }, dst = { 0 };
	struct drm_npu_bo_ref refs[2];
	struct drm_npu_job_info info;
	struct drm_npu_submit s;
	struct npu_cs cs;
	int fd, i, ok = 0;

	fd = npu_open();
	if (fd < 0)
		return 0;
	if (npu_bo_new(fd, 8192, 0, &cmd) || npu_bo_new(fd, 65536, 0, &src) ||
	    npu_bo_new(fd, 65536, 0, &dst))
		goto out;
	for (i = 0; i < 65536; i++)
		((uint8_t *)src.map)[i] = i * 7 + 3;
	npu_cs_begin(&cs);
	npu_cs_copy(&cs, src.va, dst.va, 65536);
	npu_submit_init(&s, cmd.handle, npu_cs_store(&cs, &cmd, 0), 1);
	refs[0] = (struct drm_npu_bo_ref){ src.handle, DRM_NPU_BO_ACCESS_READ };
	refs[1] = (struct drm_npu_bo_ref){ dst.handle, DRM_NPU_BO_ACCESS_WRITE };
	s.bo_refs = (uintptr_t)refs;
	s.bo_ref_count = 2;
	if (npu_submit(fd, &s) || npu_job_wait(fd, s.job_id, 20000, &info))
		goto out;
	ok = info.state == DRM_NPU_JOB_DONE && info.status == NPU_JOB_OK &&
	     !memcmp(src.map, dst.map, 65536);
out:
	/* A mapping keeps the file (and its context) open. */
	npu_bo_free(fd, &cmd);
	npu_bo_free(fd, &src);
	npu_bo_free(fd, &dst);
	close(fd);
	return ok;
}

static void dump_debugfs(const char *name)
{
	const char *dir = npu_debugfs_dir();
	char path[320], line[256];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("#   %s", line);
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr, "usage: npu_fuzz [-s SEED] [-n OPS] [-p PROCS] [-t SECONDS] [-f]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t seed = 1;
	long long ops = 100000, limit_s = 3600;
	int procs = 4, c, i, gen = 0, failed = 0, make_it_fail = 0;
	pid_t pids[MAX_PROCS];
	struct npu_counters now;
	int64_t t0;

	while ((c = getopt(argc, argv, "s:n:p:t:f")) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': ops = strtoll(optarg, NULL, 0); break;
		case 'p': procs = atoi(optarg); break;
		case 't': limit_s = strtoll(optarg, NULL, 0); break;
		case 'f': make_it_fail = 1; break;
		default: usage();
		}
	}
	if (procs < 1 || procs > MAX_PROCS || ops < 1 || limit_s < 1)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 2;
	memset(sh, 0, sizeof(*sh));
	sh->budget = ops;
	sh->make_it_fail = make_it_fail;
	rng_state = seed ^ 0xa5a5a5a5deadbeefull;
	printf("# npu_fuzz: seed %llu, %lld operations, %d processes%s\n",
	       (unsigned long long)seed, ops, procs,
	       make_it_fail ? ", kernel allocations of the workers fail at random" : "");
	if (!correctness_job()) {
		printf("not ok 1 - npu_fuzz: the correctness job fails before fuzzing\n");
		return 1;
	}
	t0 = npu_now_ns();
	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			worker(seed * 1000003ull + i * 7919 + gen);
	}
	/* Kill a random worker now and then; start another in its place. */
	for (;;) {
		int alive = 0, st;
		pid_t p;

		usleep(20000 + rn(200000));
		while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
			for (i = 0; i < procs; i++)
				if (pids[i] == p)
					pids[i] = 0;
		}
		if (budget_left() && chance(25)) {
			i = rn(procs);
			if (pids[i] > 0) {
				kill(pids[i], SIGKILL);
				atomic_fetch_add(&sh->kills, 1);
				waitpid(pids[i], NULL, 0);
				pids[i] = 0;
			}
		}
		for (i = 0; i < procs; i++) {
			if (pids[i] == 0 && budget_left()) {
				gen++;
				pids[i] = fork();
				if (pids[i] == 0)
					worker(seed * 1000003ull + i * 7919 + gen);
			}
			if (pids[i] > 0)
				alive++;
		}
		if (!alive && !budget_left())
			break;
		if ((npu_now_ns() - t0) / 1000000000ll > limit_s) {
			printf("# npu_fuzz: giving up after %lld s\n", limit_s);
			failed = 1;
			for (i = 0; i < procs; i++)
				if (pids[i] > 0)
					kill(pids[i], SIGKILL);
			break;
		}
	}
	while (wait(NULL) > 0)
		;
	printf("# npu_fuzz: %lld operations in %.1f s: %lld submits accepted, %lld checked jobs correct, %lld aborted/canceled, %lld forks, %lld kills, %lld exits\n",
	       (long long)atomic_load(&sh->ops),
	       (npu_now_ns() - t0) / 1e9, (long long)atomic_load(&sh->submits_ok),
	       (long long)atomic_load(&sh->jobs_ok),
	       (long long)atomic_load(&sh->jobs_excused),
	       (long long)atomic_load(&sh->forks), (long long)atomic_load(&sh->kills),
	       (long long)atomic_load(&sh->exits));

	/* Everything is closed: nothing may be left behind. */
	{
		struct npu_counters zero = { 0, 0, 0, 0 };

		if (npu_counters_settle(&zero, &now, 30000)) {
			finding("left behind after 30 s: bos %lld pages %lld jobs %lld contexts %lld",
				now.bos, now.pages, now.jobs, now.contexts);
			dump_debugfs("npu_contexts");
		} else {
			printf("# npu_fuzz: counters back to zero (bos, pages, jobs, contexts)\n");
		}
	}
	if (!correctness_job())
		finding("the correctness job fails after fuzzing");
	else
		printf("# npu_fuzz: correctness job after the run: ok\n");
	printf("# npu_fuzz: findings %lld\n", (long long)atomic_load(&sh->findings));
	if (atomic_load(&sh->findings) || failed) {
		printf("not ok 1 - npu_fuzz seed %llu: %lld findings\n",
		       (unsigned long long)seed, (long long)atomic_load(&sh->findings));
		return 1;
	}
	printf("ok 1 - npu_fuzz seed %llu: %lld operations, no findings\n",
	       (unsigned long long)seed, (long long)atomic_load(&sh->ops));
	return 0;
}
