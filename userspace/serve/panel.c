// SPDX-License-Identifier: MIT
/* panel: the web panel's server-side state (see panel.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "panel.h"
#include "sequence.h"

#define LAT_MAX 2048		/* latencies kept per second per series */
#define MAX_SPANS 64
#define TIMELINE_EVERY_NS 200000000ull

struct series {
	struct model_stats *s;
	/* Counters at the previous sample. */
	uint64_t prev_success, prev_fail, prev_rejected, prev_inferences;
	/* This second's request latencies (a reservoir past LAT_MAX). */
	double lat[LAT_MAX];
	size_t nlat;
	uint64_t seen;
	/* The ring. */
	size_t head, count;
	int64_t t_ms[PANEL_SAMPLES];
	float rps[PANEL_SAMPLES], ips[PANEL_SAMPLES];
	float p50[PANEL_SAMPLES], p90[PANEL_SAMPLES], p99[PANEL_SAMPLES];	/* ms; <0: none */
	int32_t queue[PANEL_SAMPLES], executing[PANEL_SAMPLES];
	uint32_t failures[PANEL_SAMPLES], rejections[PANEL_SAMPLES];
	uint64_t last_timeline_ns;
	struct series *next;
};

struct device {
	char name[SERVE_NAME_MAX];
	int inflight;
	uint64_t busy_ns, cycles, clock_mhz, npu_wall_ns, arena_bytes, runs;
	uint64_t prev_busy_ns, prev_cycles, prev_npu_wall_ns;
	size_t head, count;
	int64_t t_ms[PANEL_SAMPLES];
	float busy[PANEL_SAMPLES];	/* wall time running batches / second */
	float npu_modeled[PANEL_SAMPLES];	/* modeled NPU cycles / clock / second */
	float host[PANEL_SAMPLES];	/* busy time outside NPU segments / second */
	int32_t inflight_s[PANEL_SAMPLES];
	struct device *next;
};

struct span {
	char name[96];
	const char *cat;	/* "queue", "input", "npu", "cpu", "output", "decode" */
	uint64_t start_ns, dur_ns;
	uint64_t cycles;	/* npu: modeled cycles */
	uint64_t job_ns, job_dur_ns;	/* npu: its job, submit -> done */
	size_t nodes;
	int segment;		/* npu: segment index */
};

struct timeline {
	int valid;
	char model[SERVE_NAME_MAX], device[SERVE_NAME_MAX], id[SERVE_NAME_MAX];
	int64_t version, batch;
	size_t requests;
	uint32_t clock_mhz;
	int64_t wall_ms;	/* when it ran (Unix ms) */
	uint64_t run_ns, run_dur_ns;	/* npu_session_run_with(), from the arrival */
	size_t nspans;
	struct span spans[MAX_SPANS];
	char note[160];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct series *series_list;
static struct device *devices;
static struct timeline latest;	/* of any model */
static struct timeline per_model[16];	/* the latest of each of the first 16 models */
static uint64_t rnd = 88172645463325252ull;
static pthread_t sampler;
static int sampler_running, sampler_stop;
/* The process: CPU time (cores busy) and resident memory. */
static size_t proc_head, proc_count;
static int64_t proc_t_ms[PANEL_SAMPLES];
static float proc_cpu[PANEL_SAMPLES];
static uint64_t proc_rss[PANEL_SAMPLES];
static uint64_t prev_cpu_ns, prev_wall_ns;

static int64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Under the lock. */
static struct series *series_of(struct model_stats *s)
{
	struct series *x, **tail;

	for (tail = &series_list; (x = *tail); tail = &x->next)
		if (x->s == s)
			return x;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->s = s;
	*tail = x;
	return x;
}

static struct device *device_of(const char *name)
{
	struct device *d, **tail;

	for (tail = &devices; (d = *tail); tail = &d->next)
		if (!strcmp(d->name, name))
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	snprintf(d->name, sizeof(d->name), "%s", name);
	*tail = d;
	return d;
}

void panel_request_done(struct model_stats *s, uint64_t request_ns)
{
	struct series *x;

	pthread_mutex_lock(&lock);
	x = series_of(s);
	if (x) {
		double ms = request_ns / 1e6;

		x->seen++;
		if (x->nlat < LAT_MAX) {
			x->lat[x->nlat++] = ms;
		} else {
			/* Reservoir: every latency of the second is kept with equal odds. */
			uint64_t k;

			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			k = rnd % x->seen;
			if (k < LAT_MAX)
				x->lat[k] = ms;
		}
	}
	pthread_mutex_unlock(&lock);
}

void panel_device_begin(const char *device)
{
	struct device *d;

	pthread_mutex_lock(&lock);
	d = device_of(device);
	if (d)
		d->inflight++;
	pthread_mutex_unlock(&lock);
}

void panel_device_end(const char *device, struct npu_session *session, uint64_t wall_ns)
{
	struct npu_npu_stats ns;
	struct device *d;
	int npu = 0;

	npu_npu_stats_init(&ns);
	if (strcmp(device, "cpu") && npu_session_npu_stats(session, &ns) == NPU_OK)
		npu = 1;
	pthread_mutex_lock(&lock);
	d = device_of(device);
	if (d) {
		d->inflight--;
		d->busy_ns += wall_ns;
		d->runs++;
		if (npu) {
			d->cycles += ns.last_cycles;
			if (ns.clock_mhz)
				d->clock_mhz = ns.clock_mhz;
			d->npu_wall_ns += (uint64_t)(ns.last_npu_wall_ms * 1e6);
			d->arena_bytes = ns.arena_bytes;
		}
	}
	pthread_mutex_unlock(&lock);
}

/* ---- The timeline of one request ----------------------------------------------- */

static struct span *add_span(struct timeline *t, const char *cat, uint64_t start,
			     uint64_t dur, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static struct span *add_span(struct timeline *t, const char *cat, uint64_t start,
			     uint64_t dur, const char *fmt, ...)
{
	struct span *sp;
	va_list ap;

	if (t->nspans >= MAX_SPANS)
		return NULL;
	sp = &t->spans[t->nspans++];
	memset(sp, 0, sizeof(*sp));
	sp->cat = cat;
	sp->start_ns = start;
	sp->dur_ns = dur;
	va_start(ap, fmt);
	vsnprintf(sp->name, sizeof(sp->name), fmt, ap);
	va_end(ap);
	return sp;
}

/*
 * The run's measured steps (npu_session_step_timing()) as spans, 'base' ns
 * after the request arrived. With more steps than spans, each stretch of
 * consecutive CPU steps becomes one span (first start to last end), and
 * what still does not fit one "more steps" span.
 */
static int steps_to_spans(struct timeline *t, struct npu_session *session, uint64_t arrive)
{
	struct npu_run_timing rt;
	struct npu_step_timing st, first;
	size_t i, room = MAX_SPANS - 1 - t->nspans, cpu_run = 0;
	uint64_t base;
	int merge;

	npu_run_timing_init(&rt);
	if (npu_session_run_timing(session, &rt) != NPU_OK || rt.start_ns < arrive)
		return -1;
	base = rt.start_ns - arrive;
	t->clock_mhz = rt.clock_mhz;
	merge = rt.steps > room;
	memset(&first, 0, sizeof(first));
	for (i = 0; i < rt.steps; i++) {
		struct span *sp;
		int last_cpu;

		npu_step_timing_init(&st);
		npu_session_step_timing(session, i, &st);
		if (merge && t->nspans == MAX_SPANS - 2 && i + 1 < rt.steps) {
			/* Out of room: the rest (and the stretch begun) in one span. */
			struct npu_step_timing end;
			uint64_t from = cpu_run ? first.start_ns : st.start_ns;

			npu_step_timing_init(&end);
			npu_session_step_timing(session, rt.steps - 1, &end);
			sp = add_span(t, "cpu", base + from, end.end_ns - from, "%zu more steps",
				      rt.steps - i + cpu_run);
			if (sp)
				sp->nodes = rt.steps - i + cpu_run;
			break;
		}
		if (st.kind == NPU_STEP_NPU) {
			sp = add_span(t, "npu", base + st.start_ns, st.end_ns - st.start_ns,
				      "NPU segment %d (%s .. %s)", st.segment, st.first_node,
				      st.last_node);
			if (sp) {
				sp->cycles = st.cycles;
				sp->nodes = st.nodes;
				sp->segment = st.segment;
				sp->job_ns = base + st.submit_ns;
				sp->job_dur_ns = st.done_ns - st.submit_ns;
			}
			continue;
		}
		if (!merge) {
			sp = add_span(t, "cpu", base + st.start_ns, st.end_ns - st.start_ns, "%s %s",
				      st.op_type, st.name);
			if (sp)
				sp->nodes = 1;
			continue;
		}
		/* Merging: a stretch of CPU steps ends before an NPU step or at the end. */
		if (!cpu_run++)
			first = st;
		last_cpu = i + 1 == rt.steps;
		if (!last_cpu) {
			struct npu_step_timing next;

			npu_step_timing_init(&next);
			npu_session_step_timing(session, i + 1, &next);
			last_cpu = next.kind != NPU_STEP_CPU;
		}
		if (!last_cpu)
			continue;
		if (cpu_run == 1)
			sp = add_span(t, "cpu", base + st.start_ns, st.end_ns - st.start_ns, "%s %s",
				      st.op_type, st.name);
		else
			sp = add_span(t, "cpu", base + first.start_ns, st.end_ns - first.start_ns,
				      "CPU ops %s .. %s (%zu nodes)", first.name, st.name, cpu_run);
		if (sp)
			sp->nodes = cpu_run;
		cpu_run = 0;
	}
	snprintf(t->note, sizeof(t->note), "%s",
		 "measured: each CPU node and NPU segment of the run as timed by the engine");
	return 0;
}

int panel_timeline_due(struct model_stats *s)
{
	struct series *x;
	uint64_t now = serve_now_ns();
	int due;

	pthread_mutex_lock(&lock);
	x = series_of(s);
	due = x && (!x->last_timeline_ns || now - x->last_timeline_ns >= TIMELINE_EVERY_NS);
	pthread_mutex_unlock(&lock);
	return due;
}

void panel_batch_timeline(struct model_stats *s, const char *device,
			  struct npu_session *session, const struct infer_request *r,
			  int64_t batch, size_t requests, uint64_t t_start, uint64_t t_input,
			  uint64_t t_infer, uint64_t t_output)
{
	struct timeline t;
	struct series *x;
	struct npu_run_timing rt;
	uint64_t now = serve_now_ns();
	int k;

	/* Only a run that measured its steps (the batcher asked: it was due). */
	npu_run_timing_init(&rt);
	if (!session || npu_session_run_timing(session, &rt) != NPU_OK)
		return;
	pthread_mutex_lock(&lock);
	x = series_of(s);
	if (!x || (x->last_timeline_ns && now - x->last_timeline_ns < TIMELINE_EVERY_NS)) {
		pthread_mutex_unlock(&lock);
		return;
	}
	x->last_timeline_ns = now;
	pthread_mutex_unlock(&lock);

	memset(&t, 0, sizeof(t));
	t.valid = 1;
	snprintf(t.model, sizeof(t.model), "%s", s->model);
	snprintf(t.device, sizeof(t.device), "%s", device);
	snprintf(t.id, sizeof(t.id), "%s", r->id);
	t.version = s->version;
	t.batch = batch;
	t.requests = requests;
	t.wall_ms = unix_ms();
	/* Offsets from the request's arrival. */
	add_span(&t, "decode", 0, r->t_enqueue - r->t_arrive, "decode request");
	add_span(&t, "queue", r->t_enqueue - r->t_arrive, t_start - r->t_enqueue, "queue");
	add_span(&t, "input", t_start - r->t_arrive, t_input - t_start,
		 "input copy (batch of %" PRId64 ")", batch);
	t.run_ns = t_input - r->t_arrive;
	t.run_dur_ns = t_infer - t_input;
	if (steps_to_spans(&t, session, r->t_arrive))
		return;
	add_span(&t, "output", t_infer - r->t_arrive, t_output - t_infer, "output copy");
	pthread_mutex_lock(&lock);
	latest = t;
	for (k = 0; k < 16; k++)
		if (!per_model[k].valid || !strcmp(per_model[k].model, t.model)) {
			per_model[k] = t;
			break;
		}
	pthread_mutex_unlock(&lock);
}

/* ---- The sampler ------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static float pct(const double *v, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);

	if (!n)
		return -1;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return (float)v[rank - 1];
}

struct sample_ctx {
	int64_t t_ms;
	double secs;
};

static void sample_series(struct model_stats *s, void *arg)
{
	struct sample_ctx *c = arg;
	uint64_t success, fail, rejected, inferences;
	int64_t pending, executing;
	struct series *x;
	size_t i;

	pthread_mutex_lock(&s->lock);
	success = s->success.count;
	fail = s->fail.count;
	rejected = s->rejected_queue_full + s->rejected_timeout;
	inferences = s->inference_count;
	pending = s->pending;
	executing = s->executing;
	pthread_mutex_unlock(&s->lock);

	pthread_mutex_lock(&lock);
	x = series_of(s);
	if (!x) {
		pthread_mutex_unlock(&lock);
		return;
	}
	i = x->head;
	x->t_ms[i] = c->t_ms;
	x->rps[i] = (float)((success + fail - x->prev_success - x->prev_fail) / c->secs);
	x->ips[i] = (float)((inferences - x->prev_inferences) / c->secs);
	qsort(x->lat, x->nlat, sizeof(x->lat[0]), cmp_double);
	x->p50[i] = pct(x->lat, x->nlat, 50);
	x->p90[i] = pct(x->lat, x->nlat, 90);
	x->p99[i] = pct(x->lat, x->nlat, 99);
	x->queue[i] = (int32_t)(pending > 0 ? pending : 0);
	x->executing[i] = (int32_t)(executing > 0 ? executing : 0);
	x->failures[i] = (uint32_t)(fail - x->prev_fail);
	x->rejections[i] = (uint32_t)(rejected - x->prev_rejected);
	x->prev_success = success;
	x->prev_fail = fail;
	x->prev_rejected = rejected;
	x->prev_inferences = inferences;
	x->nlat = 0;
	x->seen = 0;
	x->head = (x->head + 1) % PANEL_SAMPLES;
	if (x->count < PANEL_SAMPLES)
		x->count++;
	pthread_mutex_unlock(&lock);
}

static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sample_all(void)
{
	struct sample_ctx c;
	uint64_t now = serve_now_ns(), cpu = cpu_ns(), rss = rss_bytes();
	struct device *d;

	c.t_ms = unix_ms();
	c.secs = prev_wall_ns ? (now - prev_wall_ns) / 1e9 : 1.0;
	if (c.secs <= 0)
		c.secs = 1.0;
	metrics_foreach(sample_series, &c);
	pthread_mutex_lock(&lock);
	for (d = devices; d; d = d->next) {
		size_t i = d->head;
		uint64_t busy = d->busy_ns - d->prev_busy_ns, nw = d->npu_wall_ns - d->prev_npu_wall_ns;

		d->t_ms[i] = c.t_ms;
		d->busy[i] = (float)(busy / 1e9 / c.secs);
		d->npu_modeled[i] = d->clock_mhz ?
			(float)((d->cycles - d->prev_cycles) / (double)d->clock_mhz / 1e6 / c.secs) : 0;
		d->host[i] = (float)((busy > nw ? busy - nw : 0) / 1e9 / c.secs);
		d->inflight_s[i] = d->inflight;
		d->prev_busy_ns = d->busy_ns;
		d->prev_cycles = d->cycles;
		d->prev_npu_wall_ns = d->npu_wall_ns;
		d->head = (d->head + 1) % PANEL_SAMPLES;
		if (d->count < PANEL_SAMPLES)
			d->count++;
	}
	proc_t_ms[proc_head] = c.t_ms;
	proc_cpu[proc_head] = prev_wall_ns ? (float)((cpu - prev_cpu_ns) / 1e9 / c.secs) : 0;
	proc_rss[proc_head] = rss;
	proc_head = (proc_head + 1) % PANEL_SAMPLES;
	if (proc_count < PANEL_SAMPLES)
		proc_count++;
	prev_cpu_ns = cpu;
	prev_wall_ns = now;
	pthread_mutex_unlock(&lock);
}

static void *sampler_main(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&lock);
	while (!sampler_stop) {
		ts.tv_sec++;
		if (pthread_cond_timedwait(&cond, &lock, &ts) == 0 && sampler_stop)
			break;
		pthread_mutex_unlock(&lock);
		sample_all();
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int panel_start(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&cond);
	pthread_cond_init(&cond, &ca);
	pthread_condattr_destroy(&ca);
	sample_all();	/* the baseline of the counters */
	if (pthread_create(&sampler, NULL, sampler_main, NULL))
		return -1;
	sampler_running = 1;
	return 0;
}

void panel_stop(void)
{
	struct series *x;
	struct device *d;

	if (sampler_running) {
		pthread_mutex_lock(&lock);
		sampler_stop = 1;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
		pthread_join(sampler, NULL);
		sampler_running = 0;
	}
	pthread_mutex_lock(&lock);
	while ((x = series_list)) {
		series_list = x->next;
		free(x);
	}
	while ((d = devices)) {
		devices = d->next;
		free(d);
	}
	pthread_mutex_unlock(&lock);
}

/* ---- JSON ----------------------------------------------------------------------------- */

/* The ring [head - count, head) oldest first. */
#define RING(arr, head, count, k) (arr)[((head) + PANEL_SAMPLES - (count) + (k)) % PANEL_SAMPLES]

static json_t *real_or_null(double v)
{
	return v < 0 ? json_null() : json_real((double)(int64_t)(v * 1000) / 1000);
}

static json_t *timeline_json(const struct timeline *t)
{
	json_t *spans = json_array();
	size_t i;

	for (i = 0; i < t->nspans; i++) {
		const struct span *sp = &t->spans[i];
		json_t *o = json_pack("{s:s, s:s, s:f, s:f}", "name", sp->name, "cat", sp->cat,
				      "start_us", sp->start_ns / 1e3, "dur_us", sp->dur_ns / 1e3);

		if (!strcmp(sp->cat, "npu")) {
			json_object_set_new(o, "segment", json_integer(sp->segment));
			json_object_set_new(o, "cycles", json_integer((json_int_t)sp->cycles));
			if (t->clock_mhz)
				json_object_set_new(o, "modeled_us",
						    json_real((double)sp->cycles / t->clock_mhz));
			json_object_set_new(o, "job_start_us", json_real(sp->job_ns / 1e3));
			json_object_set_new(o, "job_dur_us", json_real(sp->job_dur_ns / 1e3));
		}
		if (sp->nodes)
			json_object_set_new(o, "nodes", json_integer((json_int_t)sp->nodes));
		json_array_append_new(spans, o);
	}
	return json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:f, s:f, s:o}",
			 "model", t->model,
			 "version", (json_int_t)t->version, "id", t->id, "device", t->device,
			 "batch", (json_int_t)t->batch, "requests_in_batch", (json_int_t)t->requests,
			 "time_ms", (json_int_t)t->wall_ms, "clock_mhz", (json_int_t)t->clock_mhz,
			 "note", t->note, "run_start_us", t->run_ns / 1e3,
			 "run_us", t->run_dur_ns / 1e3, "spans", spans);
}

json_t *panel_state_json(void)
{
	json_t *series = json_array(), *devs = json_array(), *proc, *timelines = json_array();
	json_t *pt = json_array(), *pc = json_array(), *pr = json_array();
	struct series *x;
	struct device *d;
	size_t k;
	int m;

	pthread_mutex_lock(&lock);
	for (x = series_list; x; x = x->next) {
		json_t *t = json_array(), *rps = json_array(), *ips = json_array(),
		       *p50 = json_array(), *p90 = json_array(), *p99 = json_array(),
		       *q = json_array(), *ex = json_array(), *fl = json_array(),
		       *rj = json_array(), *hist = json_object(), *seqs;
		char v[32];
		int b;

		for (k = 0; k < x->count; k++) {
			json_array_append_new(t, json_integer(RING(x->t_ms, x->head, x->count, k)));
			json_array_append_new(rps, real_or_null(RING(x->rps, x->head, x->count, k)));
			json_array_append_new(ips, real_or_null(RING(x->ips, x->head, x->count, k)));
			json_array_append_new(p50, real_or_null(RING(x->p50, x->head, x->count, k)));
			json_array_append_new(p90, real_or_null(RING(x->p90, x->head, x->count, k)));
			json_array_append_new(p99, real_or_null(RING(x->p99, x->head, x->count, k)));
			json_array_append_new(q, json_integer(RING(x->queue, x->head, x->count, k)));
			json_array_append_new(ex, json_integer(RING(x->executing, x->head, x->count, k)));
			json_array_append_new(fl, json_integer(RING(x->failures, x->head, x->count, k)));
			json_array_append_new(rj, json_integer(RING(x->rejections, x->head, x->count, k)));
		}
		/* A sequence model's live correlation ids (taken before the stats lock). */
		seqs = sequence_stats_json(x->s);
		pthread_mutex_lock(&x->s->lock);
		for (b = 1; b <= METRICS_MAX_BATCH_STATS; b++)
			if (x->s->batch_infer[b].count) {
				char key[16];

				snprintf(key, sizeof(key), "%d", b);
				json_object_set_new(hist, key,
						    json_integer((json_int_t)x->s->batch_infer[b].count));
			}
		snprintf(v, sizeof(v), "%" PRId64, x->s->version);
		json_array_append_new(series, json_pack(
			"{s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			"model", x->s->model, "version", v,
			"requests_total", (json_int_t)(x->s->success.count + x->s->fail.count),
			"failures_total", (json_int_t)x->s->fail.count,
			"rejections_total", (json_int_t)(x->s->rejected_queue_full + x->s->rejected_timeout),
			"t_ms", t, "requests_per_s", rps, "inferences_per_s", ips,
			"p50_ms", p50, "p90_ms", p90, "p99_ms", p99, "queue", q, "executing", ex,
			"failures", fl, "rejections", rj, "batch_sizes", hist));
		pthread_mutex_unlock(&x->s->lock);
		if (seqs)
			json_object_set_new(json_array_get(series, json_array_size(series) - 1),
					    "sequences", seqs);
	}
	for (d = devices; d; d = d->next) {
		json_t *t = json_array(), *busy = json_array(), *npu = json_array(),
		       *host = json_array(), *inf = json_array();

		for (k = 0; k < d->count; k++) {
			json_array_append_new(t, json_integer(RING(d->t_ms, d->head, d->count, k)));
			json_array_append_new(busy, real_or_null(RING(d->busy, d->head, d->count, k)));
			json_array_append_new(npu, real_or_null(RING(d->npu_modeled, d->head, d->count, k)));
			json_array_append_new(host, real_or_null(RING(d->host, d->head, d->count, k)));
			json_array_append_new(inf, json_integer(RING(d->inflight_s, d->head, d->count, k)));
		}
		json_array_append_new(devs, json_pack(
			"{s:s, s:i, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o}",
			"device", d->name, "jobs_in_flight", d->inflight,
			"runs_total", (json_int_t)d->runs, "modeled_cycles_total", (json_int_t)d->cycles,
			"clock_mhz", (json_int_t)d->clock_mhz, "arena_bytes", (json_int_t)d->arena_bytes,
			"t_ms", t, "busy", busy, "npu_modeled", npu, "host", host, "in_flight", inf));
	}
	for (k = 0; k < proc_count; k++) {
		json_array_append_new(pt, json_integer(RING(proc_t_ms, proc_head, proc_count, k)));
		json_array_append_new(pc, real_or_null(RING(proc_cpu, proc_head, proc_count, k)));
		json_array_append_new(pr, json_integer((json_int_t)RING(proc_rss, proc_head, proc_count, k)));
	}
	proc = json_pack("{s:o, s:o, s:o}", "t_ms", pt, "cpu_cores", pc, "rss_bytes", pr);
	for (m = 0; m < 16; m++)
		if (per_model[m].valid)
			json_array_append_new(timelines, timeline_json(&per_model[m]));
	pthread_mutex_unlock(&lock);
	return json_pack("{s:I, s:i, s:o, s:o, s:o, s:o}", "now_ms", (json_int_t)unix_ms(),
			 "period_ms", 1000, "series", series, "devices", devs, "process", proc,
			 "timelines", timelines);
}

json_t *panel_trace_json(const char *model)
{
	const struct timeline *t = NULL;
	json_t *ev, *o;
	size_t i;
	int m;

	pthread_mutex_lock(&lock);
	if (!model) {
		t = latest.valid ? &latest : NULL;
	} else {
		for (m = 0; m < 16; m++)
			if (per_model[m].valid && !strcmp(per_model[m].model, model))
				t = &per_model[m];
	}
	if (!t) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	ev = json_array();
	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "process_name",
					    "ph", "M", "pid", 1, "tid", 1, "args", "name", "npu-serve"));
	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name",
					    "ph", "M", "pid", 1, "tid", 1, "args", "name", "request (host)"));
	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name",
					    "ph", "M", "pid", 1, "tid", 2, "args", "name", "NPU jobs"));
	for (i = 0; i < t->nspans; i++) {
		const struct span *sp = &t->spans[i];
		json_t *args = json_pack("{s:s, s:I, s:s}", "model", t->model,
					 "version", (json_int_t)t->version, "device", t->device);

		if (!strcmp(sp->cat, "npu")) {
			json_object_set_new(args, "modeled_cycles", json_integer((json_int_t)sp->cycles));
			if (t->clock_mhz)
				json_object_set_new(args, "modeled_us",
						    json_real((double)sp->cycles / t->clock_mhz));
			/* The job on its own track, as the CLI's trace shows jobs. */
			json_array_append_new(ev, json_pack(
				"{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:i, s:I}}",
				"name", sp->name, "cat", "npu.job", "ph", "X",
				"ts", sp->job_ns / 1e3, "dur", sp->job_dur_ns / 1e3, "pid", 1, "tid", 2,
				"args", "segment", sp->segment, "modeled_cycles", (json_int_t)sp->cycles));
		}
		if (sp->nodes)
			json_object_set_new(args, "nodes", json_integer((json_int_t)sp->nodes));
		json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}",
						    "name", sp->name, "cat", sp->cat, "ph", "X",
						    "ts", sp->start_ns / 1e3, "dur", sp->dur_ns / 1e3,
						    "pid", 1, "tid", 1, "args", args));
	}
	o = json_pack("{s:o, s:s, s:{s:s, s:I, s:s, s:I, s:s, s:f, s:f}}", "traceEvents", ev,
		      "displayTimeUnit", "ms", "metadata", "model", t->model,
		      "version", (json_int_t)t->version, "device", t->device,
		      "batch", (json_int_t)t->batch, "id", t->id,
		      "run_start_us", t->run_ns / 1e3, "run_us", t->run_dur_ns / 1e3);
	pthread_mutex_unlock(&lock);
	return o;
}
