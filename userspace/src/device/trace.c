// SPDX-License-Identifier: MIT
/*
 * trace.c - per-device job tracing in the Chrome trace-event format.
 *
 * A device opened with a trace file (npu_device_options.trace_file; an
 * engine passes its own) appends two complete ("X") events per job: the
 * host span (submit -> completion seen) and the device span (device start
 * -> end, on the host clock), plus
 * thread-name metadata when it opens. The file uses the JSON Array Format
 * ("[" then one event per line, each followed by ","), which Perfetto and
 * chrome://tracing load as is, and which many devices and processes can
 * append to: every write holds an flock. `npu trace` rewrites it into the
 * object form {"traceEvents": [...]}.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/device_internal.h"

static void trace_write(struct npu_device *dev, const char *text, size_t len)
{
	struct stat st;

	pthread_mutex_lock(&dev->trace_lock);
	if (flock(dev->trace_fd, LOCK_EX) == 0) {
		if (fstat(dev->trace_fd, &st) == 0 && st.st_size == 0 &&
		    write(dev->trace_fd, "[\n", 2) != 2)
			dev->tracing = false;
		if (write(dev->trace_fd, text, len) != (ssize_t)len)
			dev->tracing = false;	/* disk full: stop, don't fail jobs */
		flock(dev->trace_fd, LOCK_UN);
	}
	pthread_mutex_unlock(&dev->trace_lock);
}

static unsigned int tid(const struct npu_device *dev, uint32_t queue, bool host)
{
	return dev->trace_id * 16 + queue * 2 + (host ? 1 : 0);
}

void npu_trace_open(struct npu_device *dev, const char *path)
{
	char buf[2048];
	size_t n = 0;
	uint32_t q;
	int pid = (int)getpid();

	dev->trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (dev->trace_fd < 0)
		return;	/* tracing is best-effort: never fail the device */
	dev->tracing = true;
	dev->trace_id = (uint32_t)((npu_now_ns() / 1000) % 997) + 1;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n,
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"npu pid %d\"}},\n",
		pid, pid);
	for (q = 0; q < dev->info.num_queues && q < 4; q++) {
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"%s dev%u queue %u: device\"}},\n"
			"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"%s dev%u queue %u: host\"}},\n",
			pid, tid(dev, q, false), dev->ops->name, dev->trace_id, q,
			pid, tid(dev, q, true), dev->ops->name, dev->trace_id, q);
	}
	if (n < sizeof(buf))
		trace_write(dev, buf, n);
}

void npu_trace_job(struct npu_device *dev, const struct npu_job *job)
{
	const struct npu_job_result *r = &job->result;
	char buf[1536];
	int pid = (int)getpid();
	double dstart, ddur;
	double modeled_us;
	int n;

	if (!dev->tracing)
		return;
	dstart = (double)((int64_t)r->device_start_ns + dev->dev_to_host_ns) / 1000.0;
	ddur = r->device_end_ns > r->device_start_ns ?
	       (double)(r->device_end_ns - r->device_start_ns) / 1000.0 : 0.0;
	modeled_us = dev->info.clock_mhz ?
		     (double)r->cycles / dev->info.clock_mhz : 0.0;
	n = snprintf(buf, sizeof(buf),
		"{\"name\":\"job %" PRIu64 "\",\"cat\":\"npu.host\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,"
		"\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"status\":\"%s\",\"queue\":%u,\"context\":%u,"
		"\"host_latency_us\":%.3f,\"async\":%s,\"backend\":\"%s\"}},\n"
		"{\"name\":\"job %" PRIu64 "\",\"cat\":\"npu.device\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,"
		"\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"status\":\"%s\",\"queue\":%u,\"context\":%u,"
		"\"cycles\":%" PRIu64 ",\"macs\":%" PRIu64 ",\"modeled_us\":%.3f,"
		"\"device_start_ns\":%" PRIu64 ",\"device_end_ns\":%" PRIu64 ","
		"\"error_offset\":%u,\"fault_addr\":\"0x%" PRIx64 "\"}},\n",
		r->job_id, pid, tid(dev, r->queue, true),
		(double)r->host_submit_ns / 1000.0,
		(double)(r->host_complete_ns - r->host_submit_ns) / 1000.0,
		npu_job_status_str(r->device_status), r->queue, r->context,
		(double)(r->host_complete_ns - r->host_submit_ns) / 1000.0,
		job->async ? "true" : "false", dev->ops->name,
		r->job_id, pid, tid(dev, r->queue, false), dstart, ddur,
		npu_job_status_str(r->device_status), r->queue, r->context,
		r->cycles, r->macs, modeled_us, r->device_start_ns,
		r->device_end_ns, r->error_offset, r->fault_addr);
	if (n > 0 && (size_t)n < sizeof(buf))
		trace_write(dev, buf, (size_t)n);
}

void npu_trace_close(struct npu_device *dev)
{
	if (dev->tracing || dev->trace_fd > 0) {
		if (dev->trace_fd > 0)
			close(dev->trace_fd);
	}
	dev->tracing = false;
	dev->trace_fd = -1;
}
