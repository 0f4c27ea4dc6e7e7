// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_faults - fault campaign: innocent processes run checksummed copy
 * jobs while the parent injects faults at random, and a guilty process
 * submits jobs that fault or hang on their own.
 *
 *   npu_faults [-s SEED] [-t SECONDS] [-p INNOCENT_PROCS]
 *
 * Injections (the parent, every 0.2 to 1.2 s, until SECONDS have passed):
 * (debugfs fault points, fault_attr fail_<what>/ or knob npu_inject_<what>:
 * see npu_inject_once_in() in npu_test.h)
 *   hang        the next job started never ends
 *               (the timeout handler resets the device, that job's
 *               context is banned)
 *   mmu_fault   the next job's stream
 *               address is unmapped
 *   fw_crash    boot_fail, then a PCI function reset:
 *               the re-boot of the firmware fails once and is retried
 *               (the device has no other way to crash its firmware)
 *   flr         /sys/bus/pci/devices/<bdf>/reset
 *   unbind      unbind the driver from the device and bind it again
 * After each one the parent runs a probe copy job (reopening the device
 * as needed) within 60 s: that is a recovery.
 *
 * The guilty process submits jobs that read an unmapped VA and jobs that
 * run longer than job_timeout_ms; each must end in an error (a device
 * status, CANCELED, or -ECANCELED for a banned context).
 *
 * Every job of an innocent process ends one of three ways: DONE with
 * status 0 and its output equal to its input's checksum (completed),
 * reported failed with a reason (a device status, CANCELED, a banned or
 * unplugged context at JOB_WAIT: -ECANCELED / -ENODEV), or lost (no
 * outcome within 60 s) -- lost and corrupted (status 0, wrong output)
 * must stay 0. A job hit by an injected hang or fault fails with a reason;
 * its process opens a new file when its context is banned.
 */
#include <glob.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "npu_test.h"

#define JOB_BYTES	65536
#define WAIT_NS		60000000000ll

struct counts {
	atomic_llong inj_hang, inj_fault, inj_fw, inj_flr, inj_unbind;
	atomic_llong recovered, not_recovered;
	atomic_llong ok, failed, lost, corrupted;
	atomic_llong fail_status, fail_canceled, fail_banned, fail_nodev, fail_submit;
	atomic_llong guilty_jobs, guilty_errors, guilty_silent;
	atomic_int stop;
};

static struct counts *cnt;
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

/* Open the device, whichever accel minor it has now (it changes on rebind). */
static int open_any(void)
{
	glob_t g;
	size_t i;
	int fd = -1;

	if (glob("/dev/accel/accel*", 0, NULL, &g))
		return -1;
	for (i = 0; i < g.gl_pathc && fd < 0; i++)
		fd = open(g.gl_pathv[i], O_RDWR | O_CLOEXEC);
	globfree(&g);
	/* The contexts npu_submit_init() names (uAPI version 2). */
	return npu_with_contexts(fd);
}

/* Open, retrying for up to 60 s while the device is away. */
static int open_retry(void)
{
	int64_t end = npu_now_ns() + 60000000000ll;
	int fd;

	while ((fd = open_any()) < 0 && npu_now_ns() < end)
		usleep(20000);
	return fd;
}

struct set {
	int fd;
	struct npu_bo cmd, src, dst;
};

static void set_close(struct set *s)
{
	if (s->fd < 0)
		return;
	npu_bo_free(s->fd, &s->cmd);
	npu_bo_free(s->fd, &s->src);
	npu_bo_free(s->fd, &s->dst);
	close(s->fd);
	s->fd = -1;
}

static int set_open(struct set *s)
{
	s->fd = open_retry();
	if (s->fd < 0)
		return -1;
	if (npu_bo_new(s->fd, 8192, 0, &s->cmd) ||
	    npu_bo_new(s->fd, JOB_BYTES, 0, &s->src) ||
	    npu_bo_new(s->fd, JOB_BYTES, 0, &s->dst)) {
		set_close(s);
		return -1;
	}
	return 0;
}

static uint32_t checksum(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/* One checksummed copy job; returns 1 to reopen the file. */
static int innocent_job(struct set *s, unsigned int n)
{
	struct drm_npu_bo_ref refs[2] = {
		{ s->src.handle, DRM_NPU_BO_ACCESS_READ },
		{ s->dst.handle, DRM_NPU_BO_ACCESS_WRITE },
	};
	struct drm_npu_job_wait w;
	struct drm_npu_submit sub;
	struct npu_cs cs;
	uint32_t want;
	int i, ret;

	for (i = 0; i < JOB_BYTES; i += 4)
		*(uint32_t *)((uint8_t *)s->src.map + i) = rnd();
	want = checksum(s->src.map, JOB_BYTES);
	memset(s->dst.map, 0, JOB_BYTES);
	npu_cs_begin(&cs);
	npu_cs_copy(&cs, s->src.va, s->dst.va, JOB_BYTES);
	npu_submit_init(&sub, s->cmd.handle, npu_cs_store(&cs, &s->cmd, 0), n % 2);
	sub.bo_refs = (uintptr_t)refs;
	sub.bo_ref_count = 2;
	ret = npu_submit(s->fd, &sub);
	if (ret) {
		/* Not accepted: no job to lose; a banned or gone context reopens. */
		atomic_fetch_add(&cnt->fail_submit, 1);
		return ret == -ECANCELED || ret == -ENODEV ? 1 : 0;
	}
	ret = npu_job_wait_ioctl(s->fd, sub.job_id, WAIT_NS,
				 NPU_WAIT_RELATIVE, &w);
	if (ret == -ENODEV || ret == -ECANCELED) {
		atomic_fetch_add(&cnt->failed, 1);
		atomic_fetch_add(ret == -ENODEV ? &cnt->fail_nodev : &cnt->fail_banned, 1);
		return 1;
	}
	if (ret) {
		printf("# innocent job %llu: JOB_WAIT %d (state %u): lost\n",
		       (unsigned long long)sub.job_id, ret, w.state);
		atomic_fetch_add(&cnt->lost, 1);
		return 1;
	}
	if (w.state == DRM_NPU_JOB_DONE && w.status == NPU_JOB_OK) {
		if (checksum(s->dst.map, JOB_BYTES) == want) {
			atomic_fetch_add(&cnt->ok, 1);
		} else {
			printf("# innocent job %llu: DONE, status 0, wrong output\n",
			       (unsigned long long)sub.job_id);
			atomic_fetch_add(&cnt->corrupted, 1);
		}
		return 0;
	}
	atomic_fetch_add(&cnt->failed, 1);
	atomic_fetch_add(w.state == DRM_NPU_JOB_CANCELED ? &cnt->fail_canceled :
			 &cnt->fail_status, 1);
	return 0;
}

static void innocent(uint64_t seed)
{
	struct set s = { .fd = -1 };
	unsigned int n = 0;

	rng_state = seed;
	while (!atomic_load(&cnt->stop)) {
		if (s.fd < 0 && set_open(&s)) {
			usleep(50000);
			continue;
		}
		if (innocent_job(&s, n++))
			set_close(&s);
	}
	set_close(&s);
	_exit(0);
}

/* Jobs that are wrong on their own: an unmapped read, or too long. */
static void guilty(uint64_t seed)
{
	struct set s = { .fd = -1 };
	struct npu_bo big = { 0 };
	unsigned int fills = 0;

	rng_state = seed;
	while (!atomic_load(&cnt->stop)) {
		struct drm_npu_bo_ref ref;
		struct drm_npu_submit sub;
		struct drm_npu_job_wait w;
		struct npu_cs cs;
		int ret, hang = rn(3) == 0;

		if (s.fd < 0) {
			if (set_open(&s)) {
				usleep(50000);
				continue;
			}
			if (npu_bo_new(s.fd, 16 << 20, 0, &big)) {
				set_close(&s);
				continue;
			}
			if (!fills)
				fills = npu_fills_for_ms(s.fd, &s.cmd, &big, 4000);
		}
		if (hang) {
			npu_cs_long(&cs, &big, fills, 1, big.va, 2);
		} else {
			npu_cs_begin(&cs);
			npu_cs_copy(&cs, (1ull << 39) + 4096 * rn(256), s.dst.va, 4096);
		}
		npu_submit_init(&sub, s.cmd.handle, npu_cs_store(&cs, &s.cmd, 0), 1);
		ref = (struct drm_npu_bo_ref){ big.handle, DRM_NPU_BO_ACCESS_WRITE };
		sub.bo_refs = (uintptr_t)&ref;
		sub.bo_ref_count = 1;
		ret = npu_submit(s.fd, &sub);
		if (ret == -ECANCELED || ret == -ENODEV) {
			/* Banned (its error) or unplugged: a new file. */
			npu_bo_free(s.fd, &big);
			set_close(&s);
			continue;
		}
		if (ret)
			continue;
		atomic_fetch_add(&cnt->guilty_jobs, 1);
		ret = npu_job_wait_ioctl(s.fd, sub.job_id, WAIT_NS,
					 NPU_WAIT_RELATIVE, &w);
		if (ret || w.state == DRM_NPU_JOB_CANCELED || w.status != NPU_JOB_OK) {
			atomic_fetch_add(&cnt->guilty_errors, 1);
		} else if (!hang) {
			/* An unmapped read that "succeeded". */
			printf("# guilty job %llu read an unmapped VA and succeeded\n",
			       (unsigned long long)sub.job_id);
			atomic_fetch_add(&cnt->guilty_silent, 1);
		} else {
			/* A long job that finished within the timeout: not an error. */
			atomic_fetch_sub(&cnt->guilty_jobs, 1);
		}
		if (ret == -ECANCELED || ret == -ENODEV) {
			npu_bo_free(s.fd, &big);
			set_close(&s);
		}
		usleep(100000 + rn(400000));
	}
	if (s.fd >= 0)
		npu_bo_free(s.fd, &big);
	set_close(&s);
	_exit(0);
}

/* ---- the parent: injections and recovery probes ---- */

static char bdf[64];

static int find_bdf(void)
{
	glob_t g;
	size_t i;

	if (glob("/sys/bus/pci/devices/*/vendor", 0, NULL, &g))
		return -1;
	for (i = 0; i < g.gl_pathc; i++) {
		char path[256], v[16] = "", d[16] = "";
		FILE *f;

		snprintf(path, sizeof(path), "%s", g.gl_pathv[i]);
		f = fopen(path, "r");
		if (f) {
			fscanf(f, "%15s", v);
			fclose(f);
		}
		strcpy(strrchr(path, '/'), "/device");
		f = fopen(path, "r");
		if (f) {
			fscanf(f, "%15s", d);
			fclose(f);
		}
		if (!strcmp(v, "0x1234") && !strcmp(d, "0x4e50")) {
			*strrchr(path, '/') = 0;
			snprintf(bdf, sizeof(bdf), "%s", strrchr(path, '/') + 1);
			globfree(&g);
			return 0;
		}
	}
	globfree(&g);
	return -1;
}

/* The driver's fault points: fault_attr or one-shot knob (npu_test.h). */
static int inject(const char *what)
{
	char dir[320];

	snprintf(dir, sizeof(dir), "/sys/kernel/debug/accel/%s", bdf);
	return npu_inject_once_in(dir, what);
}

static int flr(void)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", bdf);
	return npu_write_file(path, "1");
}

static int unbind_rebind(void)
{
	int ret = npu_write_file("/sys/bus/pci/drivers/npu/unbind", bdf);

	if (ret)
		return ret;
	usleep(rn(300000));
	return npu_write_file("/sys/bus/pci/drivers/npu/bind", bdf);
}

/* A copy job on a fresh file that must succeed within 60 s. */
static int probe(void)
{
	int64_t end = npu_now_ns() + 60000000000ll;

	while (npu_now_ns() < end) {
		struct set s = { .fd = -1 };
		struct drm_npu_bo_ref refs[2];
		struct drm_npu_job_wait w;
		struct drm_npu_submit sub;
		struct npu_cs cs;
		int ok;

		if (set_open(&s)) {
			usleep(100000);
			continue;
		}
		memset(s.src.map, 0x5a, JOB_BYTES);
		npu_cs_begin(&cs);
		npu_cs_copy(&cs, s.src.va, s.dst.va, JOB_BYTES);
		npu_submit_init(&sub, s.cmd.handle, npu_cs_store(&cs, &s.cmd, 0), 1);
		refs[0] = (struct drm_npu_bo_ref){ s.src.handle, DRM_NPU_BO_ACCESS_READ };
		refs[1] = (struct drm_npu_bo_ref){ s.dst.handle, DRM_NPU_BO_ACCESS_WRITE };
		sub.bo_refs = (uintptr_t)refs;
		sub.bo_ref_count = 2;
		ok = !npu_submit(s.fd, &sub) &&
		     !npu_job_wait_ioctl(s.fd, sub.job_id, 30000000000ll,
					 NPU_WAIT_RELATIVE, &w) &&
		     w.state == DRM_NPU_JOB_DONE && w.status == NPU_JOB_OK &&
		     !memcmp(s.src.map, s.dst.map, JOB_BYTES);
		set_close(&s);
		if (ok)
			return 1;
		usleep(100000);
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = 1;
	int seconds = 60, procs = 3, c, i, rc = 0;
	pid_t pids[17];
	int64_t end;

	while ((c = getopt(argc, argv, "s:t:p:")) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 't': seconds = atoi(optarg); break;
		case 'p': procs = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: npu_faults [-s SEED] [-t SECONDS] [-p PROCS]\n");
			return 2;
		}
	}
	if (procs < 1 || procs > 16)
		procs = 3;
	setvbuf(stdout, NULL, _IOLBF, 0);
	cnt = mmap(NULL, sizeof(*cnt), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cnt == MAP_FAILED || find_bdf()) {
		printf("not ok 1 - fault campaign: no NPU device\n");
		return 1;
	}
	memset(cnt, 0, sizeof(*cnt));
	rng_state = seed ? seed : 1;
	printf("# npu_faults: seed %llu, %d s, %d innocent processes + 1 guilty, device %s\n",
	       (unsigned long long)seed, seconds, procs, bdf);
	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			innocent(seed * 31 + i + 1);
	}
	pids[procs] = fork();
	if (pids[procs] == 0)
		guilty(seed * 31 + 1000);

	end = npu_now_ns() + (int64_t)seconds * 1000000000ll;
	while (npu_now_ns() < end) {
		const char *what;
		int r = rn(100), ret;

		usleep(200000 + rn(1000000));
		if (r < 30) {
			what = "hang";
			ret = inject("hang");
			atomic_fetch_add(&cnt->inj_hang, 1);
		} else if (r < 55) {
			what = "mmu_fault";
			ret = inject("mmu_fault");
			atomic_fetch_add(&cnt->inj_fault, 1);
		} else if (r < 70) {
			what = "fw_crash";
			ret = inject("boot_fail");
			if (!ret)
				ret = flr();
			atomic_fetch_add(&cnt->inj_fw, 1);
		} else if (r < 88) {
			what = "flr";
			ret = flr();
			atomic_fetch_add(&cnt->inj_flr, 1);
		} else {
			what = "unbind";
			ret = unbind_rebind();
			atomic_fetch_add(&cnt->inj_unbind, 1);
		}
		if (ret)
			printf("# injecting %s failed: %d\n", what, ret);
		/* Let the injection hit something before probing. */
		usleep(rn(500000));
		if (probe()) {
			atomic_fetch_add(&cnt->recovered, 1);
		} else {
			printf("# no recovery after %s\n", what);
			atomic_fetch_add(&cnt->not_recovered, 1);
		}
	}
	atomic_store(&cnt->stop, 1);
	for (i = 0; i <= procs; i++)
		waitpid(pids[i], NULL, 0);

	{
		long long inj = cnt->inj_hang + cnt->inj_fault + cnt->inj_fw +
				cnt->inj_flr + cnt->inj_unbind;
		struct npu_counters zero = { 0, 0, 0, 0 }, now;

		printf("# injected %lld (hang %lld, mmu_fault %lld, fw_crash %lld, flr %lld, unbind/rebind %lld), recovered %lld, not recovered %lld\n",
		       inj, (long long)cnt->inj_hang, (long long)cnt->inj_fault,
		       (long long)cnt->inj_fw, (long long)cnt->inj_flr,
		       (long long)cnt->inj_unbind, (long long)cnt->recovered,
		       (long long)cnt->not_recovered);
		printf("# innocent jobs: %lld completed correctly, %lld failed with a reason (status %lld, canceled %lld, banned %lld, unplugged %lld), %lld lost, %lld corrupted; %lld submits refused\n",
		       (long long)cnt->ok, (long long)cnt->failed,
		       (long long)cnt->fail_status, (long long)cnt->fail_canceled,
		       (long long)cnt->fail_banned, (long long)cnt->fail_nodev,
		       (long long)cnt->lost, (long long)cnt->corrupted,
		       (long long)cnt->fail_submit);
		printf("# guilty jobs: %lld, %lld ended in an error, %lld silently succeeded\n",
		       (long long)cnt->guilty_jobs, (long long)cnt->guilty_errors,
		       (long long)cnt->guilty_silent);
		if (npu_counters_settle(&zero, &now, 30000)) {
			printf("# left behind: bos %lld pages %lld jobs %lld contexts %lld\n",
			       now.bos, now.pages, now.jobs, now.contexts);
			rc = 1;
		}
		if (cnt->lost || cnt->corrupted || cnt->not_recovered ||
		    cnt->guilty_silent || !cnt->ok || !inj ||
		    (cnt->guilty_jobs && !cnt->guilty_errors))
			rc = 1;
	}
	printf("%sok 1 - fault campaign seed %llu: %lld innocent jobs lost, %lld corrupted\n",
	       rc ? "not " : "", (unsigned long long)seed, (long long)cnt->lost,
	       (long long)cnt->corrupted);
	return rc;
}
