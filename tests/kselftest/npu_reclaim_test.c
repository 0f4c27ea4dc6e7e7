// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reclaim under real memory pressure: BOs of a process in a memory cgroup
 * limited well below their total size go to swap (zram, set up here) and
 * come back with every byte, through jobs and through the CPU, with no
 * OOM kill; a BO a queued job holds stays resident meanwhile.
 *
 * The work runs in a child inside the cgroup (an OOM kill takes it, not
 * the harness), which reports through a shared page.
 */
#include <signal.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "npu_test.h"
#include "kselftest_harness.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CG_DIR		CG_ROOT "/npu-reclaim-test"
#define CG_LIMIT	(48ull << 20)
#define ZRAM		"/sys/block/zram0"
#define ZRAM_DEV	"/dev/zram0"
#define ZRAM_SIZE	"384M"
#define ZRAM_MODULES	"/npu/modules.zram"

#define NBOS		40
#define BO_SIZE		(4u << 20)
#define CHUNK		(1u << 20)	/* one job's copy: fits the SRAM */
#define FILL_BYTES	64		/* a job writes these at each CHUNK */
#define PUSH_SIZE	(32u << 20)
#define PUSH_PASSES	6
#define WORK_S		300		/* the child's whole run */
#define WAIT_MS		30000

/* What the child found, for the parent's assertions. */
struct reclaim_report {
	int stage;			/* last stage reached */
	int done;			/* the child finished every stage */
	char error[256];		/* its first failure */
	long long reclaimed_fill;	/* pages evicted while filling */
	long long reclaimed_held;	/* pages evicted while a job held one */
	long long swap_after_fill;	/* memory.swap.current then */
	long long mem_after_fill;	/* memory.current then */
	long long held_resident_kib;	/* the held BO's fd, fdinfo */
	int held_status;
	int jobs_checked;
	int bos_checked_cpu;
	int restored;			/* bos_restored grew */
};

/* ---- the data ---- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	x ^= x >> 33;
	return x;
}

/* Incompressible words: a BO's bytes are worth swapping. */
static uint64_t cpu_word(int bo, size_t word)
{
	return mix64(((uint64_t)bo << 40) ^ word ^ 0x9e3779b97f4a7c15ull);
}

/*
 * Even BOs are written by the CPU; odd ones by a job: each CHUNK a copy
 * of the seed BO (seed words, bo -1), its first FILL_BYTES a DMA_FILL
 * of fill_byte().
 */
static uint8_t fill_byte(int bo, size_t chunk)
{
	return (uint8_t)(bo * 7 + chunk * 3 + 1);
}

static uint8_t expect_byte(int bo, size_t off)
{
	uint64_t w;

	if (bo % 2) {
		if (off % CHUNK < FILL_BYTES)
			return fill_byte(bo, off / CHUNK);
		off %= CHUNK;
		bo = -1;
	}
	w = cpu_word(bo, off / 8);
	return (uint8_t)(w >> (8 * (off % 8)));
}

static void write_cpu(void *map, int bo, size_t size)
{
	uint64_t *p = map;
	size_t i;

	for (i = 0; i < size / 8; i++)
		p[i] = cpu_word(bo, i);
}

/* The first wrong byte of [off, off + n) of BO 'bo' in 'p', or -1. */
static long check_bytes(const uint8_t *p, int bo, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != expect_byte(bo, off + i))
			return (long)(off + i);
	return -1;
}

/* ---- cgroup, swap ---- */

static long long read_key(const char *path, const char *key)
{
	char k[64];
	long long v, ret = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!key) {
		if (fscanf(f, "%lld", &v) == 1)
			ret = v;
	} else {
		while (fscanf(f, "%63s %lld", k, &v) == 2)
			if (!strcmp(k, key))
				ret = v;
	}
	fclose(f);
	return ret;
}

/* The memory cgroup, limited; NULL or why not. */
static const char *cg_create(void)
{
	char max[32];

	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return "no cgroup v2";
	if (npu_write_file(CG_ROOT "/cgroup.subtree_control", "+memory"))
		return "no memory controller (CONFIG_MEMCG)";
	if (mkdir(CG_DIR, 0755) && errno != EEXIST)
		return "cannot create the cgroup";
	snprintf(max, sizeof(max), "%llu", CG_LIMIT);
	if (npu_write_file(CG_DIR "/memory.max", max) ||
	    npu_write_file(CG_DIR "/memory.swap.max", "max"))
		return "cannot limit the cgroup";
	return NULL;
}

/* tools/npu-vm lists zram and its compressors there, in load order. */
static const char *zram_load(void)
{
	char name[128], path[320];
	struct utsname u;
	int n = 0, fd;
	FILE *f;

	if (!access(ZRAM, F_OK))
		return NULL;
	f = fopen(ZRAM_MODULES, "r");
	if (!f)
		return "no " ZRAM_MODULES " (tools/npu-vm writes it)";
	uname(&u);
	while (fscanf(f, "%127s", name) == 1) {
		snprintf(path, sizeof(path), "/lib/modules/%s/%s", u.release,
			 name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST)
			n = -1;
		close(fd);
		if (n >= 0)
			n++;
	}
	fclose(f);
	if (access(ZRAM, F_OK))
		return "zram is not available in this kernel";
	return NULL;
}

/* mkswap: the version-1 header in the first page. */
static int swap_format(const char *dev, unsigned long long bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *hdr = calloc(1, page);
	uint32_t info[3] = { 1, (uint32_t)(bytes / page - 1), 0 };
	int fd, ret = 0;

	if (!hdr)
		return -ENOMEM;
	memcpy(hdr + 1024, info, sizeof(info));
	memcpy(hdr + page - 10, "SWAPSPACE2", 10);
	fd = open(dev, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || pwrite(fd, hdr, page, 0) != page || fsync(fd))
		ret = -errno;
	if (fd >= 0)
		close(fd);
	free(hdr);
	return ret;
}

/* ---- the child in the cgroup ---- */

static struct reclaim_report *report;

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (report->error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(report->error, sizeof(report->error), fmt, ap);
	va_end(ap);
}

static int64_t deadline;

static int late(void)
{
	if (npu_now_ns() < deadline)
		return 0;
	fail("stage %d: out of time (%d s)", report->stage, WORK_S);
	return 1;
}

/* Submit 'cs' listing 'bos' (read and write) and wait; the status or -errno. */
static int run_job(int fd, struct npu_bo *cmd, struct npu_cs *cs,
		   const uint32_t *handles, int n, uint64_t *job_id, int wait)
{
	struct drm_npu_job_info info;
	uint64_t id;
	int ret;

	ret = npu_submit_rw(fd, cmd, cs, handles, n, &id);
	if (ret)
		return ret;
	if (job_id)
		*job_id = id;
	if (!wait)
		return 0;
	ret = npu_job_wait(fd, id, WAIT_MS, &info);
	return ret ? ret : (int)info.status;
}

/* Touches its anonymous memory PUSH_PASSES times; a byte down 'done' per pass. */
static void pusher(int done)
{
	volatile uint8_t *p = mmap(NULL, PUSH_SIZE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t i;
	int pass;

	if (p == MAP_FAILED)
		_exit(1);
	for (pass = 0; pass < PUSH_PASSES && npu_now_ns() < deadline; pass++) {
		for (i = 0; i < PUSH_SIZE; i += 4096)
			p[i] = (uint8_t)(pass + i / 4096);
		if (write(done, "p", 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/* drm-resident-memory of 'fd' in KiB, or -1. */
static long long fd_resident_kib(int fd)
{
	char path[64], line[256], unit[8];
	long long v, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unit[0] = 0;
		if (sscanf(line, "drm-resident-memory: %lld %7s", &v, unit) < 1)
			continue;
		ret = !strcmp(unit, "MiB") ? v << 10 :
		      !strcmp(unit, "KiB") ? v : v >> 10;
	}
	fclose(f);
	return ret;
}

static int worker(void)
{
	struct npu_bo cmd, seed, result, bos[NBOS], held, cmd2, result2;
	long long reclaimed, restored;
	uint32_t handles[2];
	struct drm_npu_job_info info;
	uint64_t held_job;
	int fd, fd2, i, ret, push[2];
	pid_t pusher_pid;
	struct npu_cs cs;
	size_t c;
	long bad;
	char b;

	deadline = npu_now_ns() + (int64_t)WORK_S * 1000000000ll;
	report->stage = 1;
	fd = npu_open();
	fd2 = npu_open();
	if (fd < 0 || fd2 < 0)
		return fail("open: %s", strerror(errno)), 1;
	if (npu_bo_new(fd, 16384, 0, &cmd) || npu_bo_new(fd, CHUNK, 0, &seed) ||
	    npu_bo_new(fd, CHUNK, 0, &result))
		return fail("small BOs"), 1;
	write_cpu(seed.map, -1, CHUNK);
	reclaimed = npu_counter("pages_reclaimed");
	restored = npu_counter("bos_restored");

	/* Stage 2: 160 MiB of BOs in a 48 MiB cgroup. */
	report->stage = 2;
	for (i = 0; i < NBOS && !late(); i++) {
		ret = npu_bo_new(fd, BO_SIZE, 0, &bos[i]);
		if (ret)
			return fail("BO %d of %d: %s", i, NBOS, strerror(-ret)), 1;
		if (i % 2 == 0) {
			write_cpu(bos[i].map, i, BO_SIZE);
			continue;
		}
		npu_cs_begin(&cs);
		for (c = 0; c < BO_SIZE / CHUNK; c++) {
			npu_cs_copy(&cs, seed.va, bos[i].va + c * CHUNK, CHUNK);
			npu_cs_fill(&cs, bos[i].va + c * CHUNK,
				    fill_byte(i, c), FILL_BYTES);
		}
		handles[0] = seed.handle;
		handles[1] = bos[i].handle;
		ret = run_job(fd, &cmd, &cs, handles, 2, NULL, 1);
		if (ret)
			return fail("job writing BO %d: %d", i, ret), 1;
	}
	report->reclaimed_fill = npu_counter("pages_reclaimed") - reclaimed;
	report->swap_after_fill = read_key(CG_DIR "/memory.swap.current", NULL);
	report->mem_after_fill = read_key(CG_DIR "/memory.current", NULL);

	/* Stage 3: anonymous memory pushes the cgroup from now on. */
	report->stage = 3;
	if (pipe(push))
		return fail("pipe"), 1;
	pusher_pid = fork();
	if (pusher_pid < 0)
		return fail("fork"), 1;
	if (!pusher_pid) {
		close(push[0]);
		pusher(push[1]);
	}
	close(push[1]);

	/*
	 * Stage 4: a job of another file holds 'held', queued (queues
	 * paused) while the pusher passes and the CPU reads a few BOs back:
	 * reclaim runs, 'held' stays resident.
	 */
	report->stage = 4;
	if (npu_bo_new(fd2, 16384, 0, &cmd2) ||
	    npu_bo_new(fd2, BO_SIZE, 0, &held) ||
	    npu_bo_new(fd2, CHUNK, 0, &result2))
		return fail("BOs of the second file"), 1;
	write_cpu(held.map, NBOS, BO_SIZE);
	if (npu_pause_queues(1))
		return fail("npu_pause_queues"), 1;
	npu_cs_begin(&cs);
	npu_cs_copy(&cs, held.va + BO_SIZE - CHUNK, result2.va, CHUNK);
	handles[0] = held.handle;
	handles[1] = result2.handle;
	ret = run_job(fd2, &cmd2, &cs, handles, 2, &held_job, 0);
	if (ret) {
		npu_pause_queues(0);
		return fail("held job submit: %d", ret), 1;
	}
	reclaimed = npu_counter("pages_reclaimed");
	if (read(push[0], &b, 1) != 1)
		fail("the pusher died");
	for (i = 0; i < NBOS; i += 8) {
		bad = check_bytes(bos[i].map, i, 0, 4096);
		if (bad >= 0)
			fail("BO %d byte %ld (CPU, queues paused)", i, bad);
	}
	report->reclaimed_held = npu_counter("pages_reclaimed") - reclaimed;
	report->held_resident_kib = fd_resident_kib(fd2);
	npu_pause_queues(0);
	ret = npu_job_wait(fd2, held_job, WAIT_MS, &info);
	report->held_status = ret ? ret : (int)info.status;
	bad = check_bytes(result2.map, NBOS, BO_SIZE - CHUNK, CHUNK);
	if (bad >= 0)
		fail("the held BO's job read byte %ld wrong", bad);

	/* Stage 5: a job reads every byte of every BO. */
	report->stage = 5;
	for (i = 0; i < NBOS && !late(); i++) {
		for (c = 0; c < BO_SIZE / CHUNK; c++) {
			memset(result.map, 0, CHUNK);
			npu_cs_begin(&cs);
			npu_cs_copy(&cs, bos[i].va + c * CHUNK, result.va, CHUNK);
			handles[0] = bos[i].handle;
			handles[1] = result.handle;
			ret = run_job(fd, &cmd, &cs, handles, 2, NULL, 1);
			if (ret)
				return fail("job reading BO %d: %d", i, ret), 1;
			bad = check_bytes(result.map, i, c * CHUNK, CHUNK);
			if (bad >= 0)
				return fail("BO %d byte %ld (job)", i, bad), 1;
		}
		report->jobs_checked++;
	}

	/* Stage 6: the CPU reads every byte, in reverse (the LRU's head last). */
	report->stage = 6;
	for (i = NBOS - 1; i >= 0 && !late(); i--) {
		bad = check_bytes(bos[i].map, i, 0, BO_SIZE);
		if (bad >= 0)
			return fail("BO %d byte %ld (CPU)", i, bad), 1;
		report->bos_checked_cpu++;
	}
	report->restored = npu_counter("bos_restored") > restored;

	kill(pusher_pid, SIGKILL);
	waitpid(pusher_pid, NULL, 0);
	for (i = 0; i < NBOS; i++)
		npu_bo_free(fd, &bos[i]);
	npu_bo_free(fd2, &held);
	close(fd2);
	close(fd);
	report->done = !report->error[0];
	return report->done ? 0 : 1;
}

FIXTURE(reclaim) {
	int swap_on;
	int cgroup;
};

FIXTURE_SETUP(reclaim)
{
	self->swap_on = 0;
	self->cgroup = 0;
}

/* In the parent: the test's process may have been killed. */
FIXTURE_TEARDOWN_PARENT(reclaim)
{
	if (self->swap_on) {
		swapoff(ZRAM_DEV);
		npu_write_file(ZRAM "/reset", "1");
	}
	syscall(SYS_delete_module, "zram", O_NONBLOCK);
	if (self->cgroup) {
		npu_write_file(CG_DIR "/cgroup.kill", "1");
		rmdir(CG_DIR);
	}
}

/*
 * 40 BOs of 4 MiB (half written by the CPU, half by jobs) in a cgroup
 * of 48 MiB: the memcg-aware shrinker evicts the idle ones, their pages
 * go to swap; with an anonymous-memory pusher running, jobs and the CPU
 * read every byte back. Without eviction the pinned pages cannot leave
 * and the cgroup OOM-kills the child.
 */
TEST_F_TIMEOUT(reclaim, bos_of_a_memcg_at_its_limit_are_swapped_out_and_come_back_intact,
	       WORK_S + 60)
{
	struct reclaim_report *r;
	const char *why;
	int64_t end;
	int status = 0;
	pid_t pid;
	char buf[32];

	/* Set up here, not in the setup: the teardown then undoes any part. */
	why = cg_create();
	self->cgroup = 1;
	if (why)
		SKIP(return, "%s", why);
	why = zram_load();
	if (why)
		SKIP(return, "%s", why);
	if (read_key(ZRAM "/disksize", NULL) != 0)
		SKIP(return, "zram0 is in use");
	ASSERT_EQ(0, npu_write_file(ZRAM "/disksize", ZRAM_SIZE));
	self->swap_on = 1;
	ASSERT_EQ(0, swap_format(ZRAM_DEV, read_key(ZRAM "/disksize", NULL)));
	ASSERT_EQ(0, swapon(ZRAM_DEV, 0)) TH_LOG("swapon: %s", strerror(errno));

	r = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	memset(r, 0, sizeof(*r));
	ASSERT_EQ(0, read_key(CG_DIR "/memory.events", "oom_kill"));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		report = r;
		snprintf(buf, sizeof(buf), "%d", getpid());
		if (npu_write_file(CG_DIR "/cgroup.procs", buf)) {
			fail("cannot join the cgroup");
			_exit(1);
		}
		_exit(worker());
	}
	end = npu_now_ns() + (int64_t)(WORK_S + 30) * 1000000000ll;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (npu_now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(100000);
	}
	/* The pusher, if the child died before it could end it. */
	npu_write_file(CG_DIR "/cgroup.kill", "1");
	npu_pause_queues(0);

	TH_LOG("stage %d; evicted while filling %lld pages, while held %lld; after filling memory %lld swap %lld KiB",
	       r->stage, r->reclaimed_fill, r->reclaimed_held,
	       r->mem_after_fill >> 10, r->swap_after_fill >> 10);
	EXPECT_EQ(0, read_key(CG_DIR "/memory.events", "oom_kill"))
		TH_LOG("the cgroup OOM-killed (stage %d): pinned BOs could not leave RAM",
		       r->stage);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child: %s%s", WIFSIGNALED(status) ? "killed by signal, " : "",
		       r->error[0] ? r->error : "no error recorded");
	ASSERT_TRUE(r->done);
	/* All of the BOs' bytes are in memory or in swap, and memory is 48 MiB. */
	EXPECT_LE((long long)(NBOS * (unsigned long long)BO_SIZE - CG_LIMIT),
		  r->swap_after_fill);
	EXPECT_LE((long long)(NBOS * (BO_SIZE >> 12) - (CG_LIMIT >> 12)),
		  r->reclaimed_fill);
	EXPECT_LT(0, r->reclaimed_held);
	EXPECT_LE((long long)(BO_SIZE >> 10), r->held_resident_kib);
	EXPECT_EQ(NPU_JOB_OK, r->held_status);
	EXPECT_EQ(NBOS, r->jobs_checked);
	EXPECT_EQ(NBOS, r->bos_checked_cpu);
	EXPECT_TRUE(r->restored);
	munmap(r, 4096);
}

TEST_HARNESS_MAIN
