// SPDX-License-Identifier: MIT
/* batcher: the dynamic batcher and the instances (see batcher.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "batcher.h"
#include "bytes.h"
#include "panel.h"
#include "rate_limiter.h"
#include "shm.h"

#define MAX_BATCH_REQUESTS 1024
#define MAX_SHAPE_MEMORY 256
#define SHAPE_WINDOW_NS 60000000000ull

struct level_queue {
	struct infer_request *head, *tail;
	uint64_t count;
	struct queue_policy policy;
};

struct instance {
	struct scheduler *s;
	struct npu_session *session;	/* an engine model's */
	struct backend_instance *backend;	/* a backend library's (backend.h) */
	pthread_t thread;
	int started;
	int index;
	int group;			/* its instance_group (rate_limiter resources) */
	/* The device its runs go to: the model's, or one NPU of its set. */
	char device[SERVE_NAME_MAX];
	uint64_t device_mask;		/* its session's (0: the model's one device) */
};

struct scheduler {
	const struct model_config *cfg;
	struct npu_model *model;	/* NULL for a backend library's model */
	struct backend_model *backend;
	char device[SERVE_NAME_MAX];
	struct model_stats *stats;
	size_t out_index[SERVE_MAX_IO];	/* config output -> model output */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	int levels;			/* >= 1 */
	struct level_queue q[CONFIG_MAX_LEVELS + 1];	/* [1..levels] */
	uint64_t pending;
	int stopping;
	/* preserve_ordering: responses leave in the order requests came. */
	uint64_t next_seq, next_release;
	struct infer_request *held;	/* done, waiting for earlier ones */

	/* Models with a variable dim: recent input shapes, most recent first,
	 * and the new ones admitted in the current minute. */
	struct scheduler_limits limits;
	int variable_dims;
	size_t num_shapes;
	uint64_t shapes[MAX_SHAPE_MEMORY];
	uint64_t shape_window_start;
	int new_shapes_in_window;

	struct seq_table *seqs;		/* a sequence model's live sequences (sequence.c) */

	int num_instances;
	struct instance inst[64];
	/* Per NPU of the model's set: the failovers already in the metrics. */
	_Atomic uint64_t failovers_seen[NPU_DEVICE_SET_MAX];
};

/*
 * The model's failovers per NPU since the last look, into the metrics:
 * each count is taken once (the largest seen wins the compare-exchange,
 * so instances looking at once add each failover once).
 */
static void device_health(struct scheduler *s)
{
	size_t k, devs = s->model ? npu_model_num_devices(s->model) : 0;

	for (k = 0; devs > 1 && k < devs && k < NPU_DEVICE_SET_MAX; k++) {
		struct npu_model_device_stats ds;
		uint64_t seen;

		npu_model_device_stats_init(&ds);
		if (npu_model_device_stats(s->model, k, &ds) != NPU_OK)
			continue;
		seen = atomic_load(&s->failovers_seen[k]);
		while (ds.failovers > seen &&
		       !atomic_compare_exchange_weak(&s->failovers_seen[k], &seen, ds.failovers))
			;
		if (ds.failovers > seen || ds.out_of_rotation)
			metrics_device_health(ds.name, ds.failovers > seen ? ds.failovers - seen : 0,
					      ds.out_of_rotation != 0);
	}
}

void infer_request_clear(struct infer_request *req)
{
	size_t i;

	for (i = 0; i < req->num_inputs; i++) {
		if (req->inputs[i].owned)
			free(req->inputs[i].data);
		shm_release(req->inputs[i].shm);
		req->inputs[i].shm = NULL;
	}
	for (i = 0; i < req->num_outputs; i++) {
		shm_release(req->outputs[i].shm);
		req->outputs[i].shm = NULL;
	}
	for (i = 0; i < req->num_results; i++)
		if (req->results[i].owned)
			free(req->results[i].data);
	req->num_inputs = 0;
	req->num_results = 0;
}

static int64_t batch_of(const struct scheduler *s, const struct infer_request *r)
{
	return s->cfg->max_batch_size > 0 ? r->batch : 1;
}

/* Requests that can share a batch: the same dims after the batch dim. */
static int compatible(const struct infer_request *a, const struct infer_request *b)
{
	size_t i;
	int k;

	if (a->num_inputs != b->num_inputs)
		return 0;
	for (i = 0; i < a->num_inputs; i++) {
		if (a->inputs[i].rank != b->inputs[i].rank ||
		    a->inputs[i].dtype != b->inputs[i].dtype)
			return 0;
		for (k = 1; k < a->inputs[i].rank; k++)
			if (a->inputs[i].dims[k] != b->inputs[i].dims[k])
				return 0;
	}
	return 1;
}

/* ---- Completion ------------------------------------------------------------ */

/*
 * Hand a finished request back. With preserve_ordering it waits until
 * every request queued before it is back too (they may run on another
 * instance), then the run of consecutive ones leaves in order.
 */
static void complete(struct scheduler *s, struct infer_request *r)
{
	struct infer_request *ready = NULL, **tail = &ready, **pp;
	int found;

	if (!s->cfg->preserve_ordering) {
		r->done(r, r->done_arg);
		return;
	}
	pthread_mutex_lock(&s->lock);
	r->next = s->held;
	s->held = r;
	do {
		found = 0;
		for (pp = &s->held; *pp; pp = &(*pp)->next)
			if ((*pp)->seq == s->next_release) {
				struct infer_request *x = *pp;

				*pp = x->next;
				x->next = NULL;
				*tail = x;
				tail = &x->next;
				s->next_release++;
				found = 1;
				break;
			}
	} while (found);
	pthread_mutex_unlock(&s->lock);
	while (ready) {
		struct infer_request *x = ready;

		ready = x->next;
		x->done(x, x->done_arg);
	}
}

/* ---- Running a batch --------------------------------------------------------- */

/* Whether request r asks for config output i, and in binary. */
int infer_request_asks(const struct infer_request *r, const char *name, int *binary)
{
	int asked = r->num_outputs == 0;
	size_t k;

	*binary = r->binary_output;
	for (k = 0; k < r->num_outputs; k++)
		if (!strcmp(r->outputs[k].name, name)) {
			asked = 1;
			*binary = r->outputs[k].binary;
		}
	return asked;
}

static int asks(const struct scheduler *s, const struct infer_request *r, size_t i,
		int *binary)
{
	return infer_request_asks(r, s->cfg->outputs[i].name, binary);
}

/* The output request r names 'name' in (NULL: asked for all outputs, or not this one). */
static struct infer_tensor *out_spec(struct infer_request *r, const char *name)
{
	size_t k;

	for (k = 0; k < r->num_outputs; k++)
		if (!strcmp(r->outputs[k].name, name))
			return &r->outputs[k];
	return NULL;
}

/*
 * IO binding for a batch: only the outputs some request asks for are
 * computed; for a batch of one request, each output whose size the plan
 * fixes is written by the session straight into the buffer the response
 * sends (pre[i], handed to the request after the run), or into the
 * shared memory region the request names for it (shm_at[i]). Best
 * effort: an output left out here is computed in the session and copied
 * as before.
 */
static void bind_outputs(struct instance *in, struct infer_request **reqs, size_t n,
			 const struct npu_host_tensor *tin, size_t num_in,
			 struct npu_host_tensor *outs, size_t *num_outs, void **pre,
			 void **shm_at, struct npu_plan **plan)
{
	struct scheduler *s = in->s;
	const struct model_config *cfg = s->cfg;
	size_t i, j;
	int binary;

	*num_outs = 0;
	*plan = NULL;
	if (n == 1 && npu_model_get_plan(s->model, tin, num_in, plan) != NPU_OK)
		*plan = NULL;	/* the run reports what is wrong with the inputs */
	for (i = 0; i < cfg->num_outputs; i++) {
		struct npu_host_tensor *o = &outs[*num_outs];
		struct npu_tensor_info info;
		size_t bytes;
		int d;

		for (j = 0; j < n && !asks(s, reqs[j], i, &binary); j++)
			;
		if (j == n)
			continue;
		memset(o, 0, sizeof(*o));
		o->name = cfg->outputs[i].name;
		(*num_outs)++;
		if (!*plan || npu_plan_output_info(*plan, s->out_index[i], &info) != NPU_OK ||
		    !(bytes = npu_data_type_size(info.dtype)) || info.dtype == NPU_TYPE_STRING ||
		    info.rank < 0)
			continue;
		for (d = 0; d < info.rank && info.dims[d] >= 0; d++)
			bytes *= (size_t)info.dims[d];
		if (d < info.rank || !bytes)
			continue;
		{
			struct infer_tensor *spec = out_spec(reqs[0], cfg->outputs[i].name);

			if (spec && spec->shm) {
				/* Too small: left to the copy, which says so. */
				if (bytes > spec->nbytes)
					continue;
				shm_at[i] = spec->data;
			} else if (!(pre[i] = malloc(bytes))) {
				continue;
			}
		}
		o->dtype = info.dtype;
		o->rank = info.rank;
		memcpy(o->dims, info.dims, sizeof(o->dims));
		o->data = pre[i] ? pre[i] : shm_at[i];
		o->nbytes = bytes;
	}
	if (s->seqs) {
		/* State outputs are computed for the next request of each sequence. */
		const char *names[SEQ_MAX_STATES];
		size_t k, ns = sequence_state_outputs(s->seqs, names, SEQ_MAX_STATES);

		for (k = 0; k < ns && *num_outs < SERVE_MAX_IO; k++) {
			for (j = 0; j < *num_outs && strcmp(outs[j].name, names[k]); j++)
				;
			if (j < *num_outs)
				continue;
			memset(&outs[*num_outs], 0, sizeof(outs[0]));
			outs[(*num_outs)++].name = names[k];
		}
	}
}

/*
 * A result the request asked into shared memory: copied there unless the
 * session wrote it in place already. Returns nonzero (r->status set) when
 * the region is too small.
 */
static int result_to_region(struct infer_request *r, struct infer_tensor *spec,
			    struct infer_tensor *res, uint64_t *copies, uint64_t *copy_bytes)
{
	if (res->nbytes > spec->nbytes) {
		r->status = serve_err(r->err, SERVE_INVALID,
				      "output '%s' is %zu bytes but shared_memory_byte_size of region '%s' gives %zu",
				      res->name, res->nbytes, shm_region_name(spec->shm),
				      spec->nbytes);
		return -1;
	}
	if (res->nbytes)
		memcpy(spec->data, res->data, res->nbytes);
	(*copies)++;
	*copy_bytes += res->nbytes;
	if (res->owned)
		free(res->data);
	res->data = NULL;
	res->owned = 0;
	res->binary = 0;
	res->shm = spec->shm;
	res->shm_offset = spec->shm_offset;
	return 0;
}

/* The number of elements of a host tensor's shape. */
static size_t elements(const struct npu_host_tensor *t)
{
	size_t n = 1;
	int d;

	for (d = 0; d < t->rank; d++)
		n *= (size_t)t->dims[d];
	return n;
}

static void fail_all(struct infer_request **reqs, size_t n, int status, const char *msg)
{
	size_t i;

	for (i = 0; i < n; i++) {
		reqs[i]->status = status;
		serve_err(reqs[i]->err, status, "%s", msg);
	}
}

static void run_batch(struct instance *in, struct infer_request **reqs, size_t n,
		      uint64_t *queue_ns)
{
	struct scheduler *s = in->s;
	const struct model_config *cfg = s->cfg;
	struct npu_host_tensor tin[SERVE_MAX_IO], outs[SERVE_MAX_IO], bouts[SERVE_MAX_IO];
	void *stacked[SERVE_MAX_IO] = { 0 }, *pre[SERVE_MAX_IO] = { 0 };
	void *shm_at[SERVE_MAX_IO] = { 0 };
	struct npu_plan *plan = NULL;
	struct npu_io_stats io;
	uint64_t copies = 0, copy_bytes = 0;
	size_t num_outs = 0;
	struct npu_run_options ro;
	int64_t total = 0;
	uint64_t t0 = serve_now_ns(), t1 = 0, t2 = 0, t3 = 0;
	size_t i, j;
	int batching = cfg->max_batch_size > 0;

	for (j = 0; j < n; j++)
		total += batch_of(s, reqs[j]);
	/* Compute input: stack along dim 0. */
	for (i = 0; i < reqs[0]->num_inputs; i++) {
		const struct infer_tensor *t = &reqs[0]->inputs[i];

		memset(&tin[i], 0, sizeof(tin[i]));
		tin[i].name = t->name;
		tin[i].dtype = t->dtype;
		tin[i].rank = t->rank;
		memcpy(tin[i].dims, t->dims, sizeof(t->dims));
		if (n == 1) {
			tin[i].data = t->data;
			tin[i].nbytes = t->nbytes;
			continue;
		}
		tin[i].dims[0] = total;
		for (j = 0; j < n; j++)
			tin[i].nbytes += reqs[j]->inputs[i].nbytes;
		stacked[i] = malloc(tin[i].nbytes ? tin[i].nbytes : 1);
		if (!stacked[i]) {
			fail_all(reqs, n, SERVE_INTERNAL, "out of memory stacking a batch");
			goto out;
		}
		tin[i].data = stacked[i];
		{
			size_t off = 0;

			for (j = 0; j < n; j++) {
				memcpy((char *)stacked[i] + off, reqs[j]->inputs[i].data,
				       reqs[j]->inputs[i].nbytes);
				off += reqs[j]->inputs[i].nbytes;
				copies++;
				copy_bytes += reqs[j]->inputs[i].nbytes;
			}
		}
	}
	memset(bouts, 0, sizeof(bouts));
	/* BYTES inputs of an engine model: Triton's serialized form to the
	 * engine's string tensor (a backend reads the serialized form). */
	for (i = 0; in->session && i < reqs[0]->num_inputs; i++) {
		char msg[SERVE_ERR_MAX];
		void *conv;
		size_t cb;

		if (tin[i].dtype != NPU_TYPE_STRING)
			continue;
		if (bytes_to_engine(tin[i].data, tin[i].nbytes, elements(&tin[i]), &conv, &cb,
				    msg)) {
			fail_all(reqs, n, SERVE_INTERNAL, msg);
			goto out;
		}
		free(stacked[i]);
		stacked[i] = conv;
		tin[i].data = conv;
		tin[i].nbytes = cb;
		copies++;
		copy_bytes += cb;
	}
	if (in->session)
		bind_outputs(in, reqs, n, tin, reqs[0]->num_inputs, outs, &num_outs, pre, shm_at,
			     &plan);
	t1 = serve_now_ns();
	panel_device_begin(in->device);
	if (in->backend) {
		char msg[SERVE_ERR_MAX];
		int st = backend_execute(in->backend, tin, reqs[0]->num_inputs, bouts, msg);

		t2 = serve_now_ns();
		panel_device_end(in->device, NULL, t2 - t1);
		if (st) {
			if (st != SERVE_INVALID)
				serve_log(SERVE_LOG_WARN, "model '%s' version %" PRId64 ": %s",
					  reqs[0]->model, reqs[0]->version, msg);
			fail_all(reqs, n, st, msg);
			t3 = t2;
			goto stats;
		}
		goto split;
	}
	/* Measure this run's steps only when the panel will keep its timeline. */
	npu_run_options_init(&ro);
	ro.timings = panel_timeline_due(s->stats);
	ro.outputs = outs;
	ro.num_outputs = num_outs;
	if (npu_session_run_with(in->session, plan, tin, reqs[0]->num_inputs, &ro) != NPU_OK) {
		char msg[SERVE_ERR_MAX];

		snprintf(msg, sizeof(msg), "inference failed: %s", npu_last_error());
		serve_log(SERVE_LOG_WARN, "model '%s' version %" PRId64 ": %s",
			  reqs[0]->model, reqs[0]->version, msg);
		fail_all(reqs, n, SERVE_INTERNAL, msg);
		t2 = t3 = serve_now_ns();
		panel_device_end(in->device, in->session, t2 - t1);
		goto stats;
	}
	t2 = serve_now_ns();
	panel_device_end(in->device, in->session, t2 - t1);
	npu_io_stats_init(&io);
	if (npu_session_io_stats(in->session, &io) == NPU_OK) {
		copies += io.input_copies + io.output_copies;
		copy_bytes += io.input_copy_bytes + io.output_copy_bytes;
	}
split:
	/* Compute output: split along dim 0. */
	for (j = 0; j < n; j++) {
		struct infer_request *r = reqs[j];
		int64_t off = 0;
		size_t k;

		for (k = 0; k < j; k++)
			off += batch_of(s, reqs[k]);
		r->status = SERVE_OK;
		r->num_results = 0;
		for (i = 0; i < cfg->num_outputs; i++) {
			struct npu_host_tensor out;
			struct infer_tensor *res, *spec;
			size_t per, want = 0;
			int binary, bi = 0;

			if (!asks(s, r, i, &binary))
				continue;
			if (in->backend) {
				bi = backend_output_index(s->backend, cfg->outputs[i].name);
				out = bouts[bi];
			} else if (npu_session_output(in->session, s->out_index[i], &out) != NPU_OK) {
				r->status = serve_err(r->err, SERVE_INTERNAL, "output '%s': %s",
						      cfg->outputs[i].name, npu_last_error());
				break;
			}
			res = &r->results[r->num_results++];
			memset(res, 0, sizeof(*res));
			snprintf(res->name, sizeof(res->name), "%s", cfg->outputs[i].name);
			res->dtype = out.dtype;
			res->rank = out.rank;
			memcpy(res->dims, out.dims, sizeof(out.dims));
			res->binary = binary;
			spec = out_spec(r, res->name);
			if (shm_at[i] && out.data == shm_at[i]) {
				/* The session wrote it into the client's region. */
				res->shm = spec->shm;
				res->shm_offset = spec->shm_offset;
				res->nbytes = out.nbytes;
				res->binary = 0;
				continue;
			}
			if (out.dtype == NPU_TYPE_STRING && in->session) {
				/* The engine's strings to Triton's serialized form:
				 * this request's rows of them. */
				size_t count = elements(&out), first = 0;

				if (batching) {
					if (out.rank < 1 || out.dims[0] != total) {
						r->status = serve_err(r->err, SERVE_INTERNAL,
								      "output '%s' has %" PRId64 " rows for a batch of %" PRId64,
								      res->name,
								      out.rank ? out.dims[0] : 0, total);
						break;
					}
					per = count / (size_t)total;
					res->dims[0] = batch_of(s, r);
					first = per * (size_t)off;
					count = per * (size_t)res->dims[0];
				}
				if (bytes_from_engine(&out, first, count, &res->data, &want,
						      r->err)) {
					r->status = SERVE_INTERNAL;
					break;
				}
				copies++;
				copy_bytes += want;
			} else if (pre[i] && out.data == pre[i]) {
				/* The session wrote it into the response's buffer. */
				res->data = pre[i];
				pre[i] = NULL;
				want = out.nbytes;
			} else if (in->backend && !batching && bouts[bi].data &&
				   !sequence_implicit_tensor(cfg, cfg->outputs[i].name, 0)) {
				/* A backend's output is the response's: handed over whole. */
				res->data = bouts[bi].data;
				bouts[bi].data = NULL;
				want = out.nbytes;
			} else if (batching) {
				if (out.rank < 1 || out.dims[0] != total) {
					r->status = serve_err(r->err, SERVE_INTERNAL,
							      "output '%s' has %" PRId64 " rows for a batch of %" PRId64,
							      res->name, out.rank ? out.dims[0] : 0, total);
					break;
				}
				per = out.nbytes / (size_t)total;
				res->dims[0] = batch_of(s, r);
				want = per * (size_t)res->dims[0];
				res->data = malloc(want ? want : 1);
				/* A zero-element output may have no data pointer at all. */
				if (res->data && want)
					memcpy(res->data, (const char *)out.data + per * (size_t)off, want);
				copies++;
				copy_bytes += want;
			} else {
				want = out.nbytes;
				res->data = malloc(want ? want : 1);
				if (res->data && want)
					memcpy(res->data, out.data, want);
				copies++;
				copy_bytes += want;
			}
			if (!res->data) {
				r->status = serve_err(r->err, SERVE_INTERNAL, "out of memory");
				break;
			}
			res->nbytes = want;
			res->owned = 1;
			if (spec && spec->shm) {
				if (result_to_region(r, spec, res, &copies, &copy_bytes))
					break;
			} else if (res->dtype == NPU_TYPE_STRING && !res->binary &&
				   !bytes_utf8(res->data, res->nbytes)) {
				/* Not UTF-8: no JSON string holds it (Documentation/serving.md, "BYTES"). */
				res->binary = 1;
			}
		}
	}
	t3 = serve_now_ns();
	panel_batch_timeline(s->stats, in->device, in->session, reqs[0], total, n, t0, t1, t2, t3);
stats:
	metrics_batch(s->stats, total, t1 - t0, t2 - t1, t3 - t2);
	metrics_copies(s->stats, copies, copy_bytes);
	{
		uint64_t cycles = 0;
		const char *device = in->device;
		struct npu_model_device_stats ds;

		if (in->session && strcmp(in->device, "cpu")) {
			struct npu_npu_stats ns;

			npu_npu_stats_init(&ns);
			if (npu_session_npu_stats(in->session, &ns) == NPU_OK)
				cycles = ns.last_cycles;
		}
		/* A run that failed over ran on another NPU than its instance's
		 * (a pipeline run counts on its first stage's). */
		npu_model_device_stats_init(&ds);
		if (s->model && npu_model_num_devices(s->model) > 1 &&
		    npu_model_device_stats(s->model, npu_session_last_device(in->session),
					   &ds) == NPU_OK)
			device = ds.name;
		metrics_device(device, t2 - t1, cycles);
		device_health(s);
	}
out:
	npu_plan_release(plan);
	for (i = 0; i < SERVE_MAX_IO; i++) {
		free(stacked[i]);
		free(pre[i]);	/* not handed to a request (a failed run) */
	}
	if (s->seqs) {
		pthread_mutex_lock(&s->lock);
		sequence_batch_ran(s->seqs, in->session, bouts, SERVE_MAX_IO, reqs, n);
		pthread_mutex_unlock(&s->lock);
	}
	for (i = 0; i < SERVE_MAX_IO; i++)
		free(bouts[i].data);	/* a backend's output nobody took */
	for (j = 0; j < n; j++) {
		struct sequence *sq = reqs[j]->sequence;
		uint64_t now = serve_now_ns();

		reqs[j]->t_compute_start = t0;
		reqs[j]->t_input_end = t1;
		reqs[j]->t_output_start = t2;
		reqs[j]->t_compute_end = t3;
		/* Never counted twice: out of 'executing' first. */
		metrics_executing(s->stats, -1);
		metrics_request(s->stats, reqs[j]->status == SERVE_OK, queue_ns[j],
				now - reqs[j]->t_arrive);
		if (reqs[j]->status == SERVE_OK)
			panel_request_done(s->stats, now - reqs[j]->t_arrive);
		complete(s, reqs[j]);
		if (sq) {
			/* Only once it is answered: its sequence's responses leave in order. */
			pthread_mutex_lock(&s->lock);
			sequence_release(s->seqs, sq, serve_now_ns());
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
		}
	}
}

/* ---- The queue ------------------------------------------------------------- */

/* now + us, saturated: a client's timeout of INT64_MAX us is "never", not the past. */
static uint64_t deadline_after(uint64_t now_ns, uint64_t us)
{
	if (us > (UINT64_MAX - now_ns) / 1000)
		return UINT64_MAX;
	return now_ns + us * 1000;
}

static void unlink_req(struct level_queue *q, struct infer_request *prev,
		       struct infer_request *r)
{
	if (prev)
		prev->next = r->next;
	else
		q->head = r->next;
	if (q->tail == r)
		q->tail = prev;
	r->next = NULL;
	q->count--;
}

static int is_cancelled(struct infer_request *r)
{
	return atomic_load_explicit(&r->cancelled, memory_order_relaxed);
}

/*
 * Under the lock: move expired requests (timeout action REJECT) and those
 * whose client is gone to 'expired'; return the earliest deadline still
 * ahead (0: none). It runs before every batch is formed, so no cancelled
 * request that is still queued then is ever run.
 */
static uint64_t expire(struct scheduler *s, uint64_t now, struct infer_request **expired)
{
	uint64_t next = 0;
	int l;

	for (l = 1; l <= s->levels; l++) {
		struct infer_request *prev = NULL, *r = s->q[l].head;

		while (r) {
			struct infer_request *nx = r->next;

			if ((r->t_deadline && r->t_deadline <= now) || is_cancelled(r)) {
				unlink_req(&s->q[l], prev, r);
				s->pending--;
				if (s->seqs)
					sequence_dropped(s->seqs, r, now);
				r->next = *expired;
				*expired = r;
			} else {
				if (r->t_deadline && (!next || r->t_deadline < next))
					next = r->t_deadline;
				prev = r;
			}
			r = nx;
		}
	}
	return next;
}

static void timed_wait(struct scheduler *s, uint64_t until_ns)
{
	struct timespec ts;
	uint64_t now = serve_now_ns(), wait;

	if (!until_ns) {
		pthread_cond_wait(&s->cond, &s->lock);
		return;
	}
	if (until_ns <= now)
		return;
	wait = until_ns - now;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(wait / 1000000000ull);
	ts.tv_nsec += (long)(wait % 1000000000ull);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

/*
 * Under the lock: pick the next batch, or return 0 and the time to wake.
 * The head is the oldest request of the highest non-empty level; every
 * compatible request follows in priority order up to max_batch_size.
 */
static size_t form_batch(struct scheduler *s, int inst, uint64_t now, struct infer_request **out,
			 uint64_t *wake)
{
	const struct model_config *cfg = s->cfg;
	struct infer_request *head = NULL, *r;
	int64_t sum = 0, target;
	size_t n = 0;
	int l, full = 0, send;

	for (l = 1; l <= s->levels && !head; l++)
		head = s->q[l].head;
	if (!head)
		return 0;
	if (s->seqs) {
		/* One level: a sequence's requests stay in their order. */
		n = sequence_form_batch(s->seqs, inst, s->q[1].head, now, s->stopping, out,
					MAX_BATCH_REQUESTS, wake);
		if (!n)
			return 0;
	} else if (cfg->max_batch_size <= 0 || !cfg->dynamic_batching) {
		out[0] = head;
		n = 1;
	} else {
		for (l = 1; l <= s->levels && !full; l++)
			for (r = s->q[l].head; r && !full; r = r->next) {
				if (!compatible(head, r))
					continue;
				if (sum + r->batch > cfg->max_batch_size ||
				    n >= MAX_BATCH_REQUESTS) {
					full = 1;
					break;
				}
				out[n++] = r;
				sum += r->batch;
			}
		target = cfg->max_batch_size;
		if (cfg->num_preferred) {
			size_t i;

			target = 0;
			for (i = 0; i < cfg->num_preferred; i++)
				if (cfg->preferred[i] > target)
					target = cfg->preferred[i];
		}
		send = full || sum >= target || s->stopping ||
		       now >= deadline_after(head->t_enqueue, cfg->max_queue_delay_us);
		if (!send) {
			*wake = deadline_after(head->t_enqueue, cfg->max_queue_delay_us);
			return 0;
		}
		/* Early on a preferred size: the largest one that fits. */
		if (cfg->num_preferred && sum > target) {
			int64_t keep = 0;
			size_t k = 0;

			while (k < n && keep + out[k]->batch <= target)
				keep += out[k++]->batch;
			if (k)
				n = k;
		}
	}
	/* Take them out of their queues. */
	{
		size_t i;

		for (i = 0; i < n; i++) {
			for (l = 1; l <= s->levels; l++) {
				struct infer_request *prev = NULL;

				for (r = s->q[l].head; r; prev = r, r = r->next)
					if (r == out[i])
						break;
				if (r) {
					unlink_req(&s->q[l], prev, r);
					break;
				}
			}
		}
		s->pending -= n;
	}
	return n;
}

static void *instance_main(void *arg)
{
	struct instance *in = arg;
	struct scheduler *s = in->s;
	struct infer_request **batch = calloc(MAX_BATCH_REQUESTS, sizeof(*batch));
	uint64_t *queue_ns = calloc(MAX_BATCH_REQUESTS, sizeof(*queue_ns));

	if (!batch || !queue_ns) {
		free(batch);
		free(queue_ns);
		serve_log(SERVE_LOG_ERROR, "instance %d: out of memory", in->index);
		return NULL;
	}
	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct infer_request *expired = NULL;
		uint64_t now = serve_now_ns(), wake = 0, deadline;
		size_t n, i;

		deadline = expire(s, now, &expired);
		if (s->seqs) {
			uint64_t idle = sequence_reap(s->seqs, now);

			if (idle && (!deadline || idle < deadline))
				deadline = idle;
		}
		if (expired) {
			pthread_mutex_unlock(&s->lock);
			while (expired) {
				struct infer_request *r = expired;
				uint64_t waited_us = (now - r->t_enqueue) / 1000;

				expired = r->next;
				metrics_pending(s->stats, -1);
				if (is_cancelled(r)) {
					r->status = serve_err(r->err, SERVE_CANCELLED,
						"cancelled by the client after %" PRIu64 " us in the queue of model '%s'",
						waited_us, r->model);
					metrics_cancelled(s->stats);
				} else {
					r->status = serve_err(r->err, SERVE_UNAVAILABLE,
						"request timeout expired after %" PRIu64 " us in the queue of model '%s'",
						waited_us, r->model);
					metrics_rejected(s->stats, 1);
					metrics_request(s->stats, 0, 0,
							serve_now_ns() - r->t_arrive);
				}
				complete(s, r);
			}
			pthread_mutex_lock(&s->lock);
			continue;
		}
		n = form_batch(s, in->index, now, batch, &wake);
		if (!n) {
			if (s->stopping && !s->pending)
				break;
			if (deadline && (!wake || deadline < wake))
				wake = deadline;
			timed_wait(s, wake);
			continue;
		}
		pthread_mutex_unlock(&s->lock);
		now = serve_now_ns();
		for (i = 0; i < n; i++) {
			queue_ns[i] = now - batch[i]->t_enqueue;
			metrics_pending(s->stats, -1);
		}
		/* The rate limiter's resources of its group, held while it runs. */
		rate_limiter_acquire(s->cfg, in->group, in->device);
		now = serve_now_ns();
		for (i = 0; i < n; i++)
			queue_ns[i] = now - batch[i]->t_enqueue;
		metrics_executing(s->stats, (int)n);
		run_batch(in, batch, n, queue_ns);
		rate_limiter_release(s->cfg, in->group, in->device);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	free(batch);
	free(queue_ns);
	return NULL;
}

/* The dims of every input but the batch dim: what picks a plan besides the batch size. */
static uint64_t shape_signature(const struct scheduler *s, const struct infer_request *req)
{
	uint64_t h = 14695981039346656037ull;
	int b = s->cfg->max_batch_size > 0, k;
	size_t i;

	for (i = 0; i < req->num_inputs; i++) {
		const struct infer_tensor *t = &req->inputs[i];

		for (k = b; k <= t->rank; k++) {
			/* The rank too ends each input's dims. */
			uint64_t d = k < t->rank ? (uint64_t)t->dims[k]
						 : UINT64_MAX - (uint64_t)t->rank;
			int byte;

			for (byte = 0; byte < 8; byte++) {
				h ^= (d >> (8 * byte)) & 0xff;
				h *= 1099511628211ull;
			}
		}
	}
	return h;
}

/*
 * Under the lock: admit the request's input shape. A shape seen lately
 * moves to the front; a new one (a plan to compile, on an NPU device
 * seconds of work) is taken while the minute's budget lasts.
 */
static int admit_shape(struct scheduler *s, const struct infer_request *req, uint64_t now,
		       char *err)
{
	uint64_t sig;
	size_t i, n;

	if (!s->variable_dims)
		return SERVE_OK;	/* the config's dims fix every shape */
	sig = shape_signature(s, req);
	for (i = 0; i < s->num_shapes && s->shapes[i] != sig; i++)
		;
	if (i == s->num_shapes) {
		if (now - s->shape_window_start >= SHAPE_WINDOW_NS) {
			s->shape_window_start = now;
			s->new_shapes_in_window = 0;
		}
		if (s->limits.max_new_shapes_per_minute >= 0 &&
		    s->new_shapes_in_window >= s->limits.max_new_shapes_per_minute)
			return serve_err(err, SERVE_UNAVAILABLE,
					 "model '%s' version %" PRId64 " already took %d new input shapes this minute (--max-new-shapes-per-minute): each compiles a plan; retry with a shape used lately, or later",
					 req->model, req->version, s->new_shapes_in_window);
		s->new_shapes_in_window++;
		n = s->limits.shape_memory;
		if (i >= n)
			i = n - 1;	/* forget the least recent */
		else
			s->num_shapes++;
	}
	memmove(&s->shapes[1], &s->shapes[0], i * sizeof(s->shapes[0]));
	s->shapes[0] = sig;
	return SERVE_OK;
}

int scheduler_enqueue(struct scheduler *s, struct infer_request *req, char *err)
{
	struct level_queue *q;
	int level = req->priority;
	uint64_t timeout;

	if (level == 0 || s->seqs)	/* a sequence model has one level */
		level = s->cfg->priority_levels ? s->cfg->default_priority_level : 1;
	if (level < 1 || level > s->levels)
		return serve_err(err, SERVE_INVALID,
				 "'priority' %d is outside [1, %d] (priority_levels of model '%s')",
				 req->priority, s->levels, req->model);
	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->lock);
		return serve_err(err, SERVE_UNAVAILABLE, "model '%s' version %" PRId64 " is unloading",
				 req->model, req->version);
	}
	q = &s->q[level];
	if (q->policy.max_queue_size && q->count >= q->policy.max_queue_size) {
		pthread_mutex_unlock(&s->lock);
		metrics_rejected(s->stats, 0);
		metrics_request(s->stats, 0, 0, serve_now_ns() - req->t_arrive);
		return serve_err(err, SERVE_UNAVAILABLE,
				 "exceeds maximum queue size %" PRIu64 " of model '%s' priority level %d",
				 q->policy.max_queue_size, req->model, level);
	}
	/* After the queue bound: a request refused there spends no new shape. */
	if (admit_shape(s, req, serve_now_ns(), err)) {
		pthread_mutex_unlock(&s->lock);
		metrics_request(s->stats, 0, 0, serve_now_ns() - req->t_arrive);
		return SERVE_UNAVAILABLE;
	}
	req->sequence = NULL;
	if (s->seqs) {
		int st = sequence_admit(s->seqs, req, serve_now_ns(), err);

		if (st) {
			pthread_mutex_unlock(&s->lock);
			metrics_request(s->stats, 0, 0, serve_now_ns() - req->t_arrive);
			return st;
		}
	}
	timeout = q->policy.default_timeout_us;
	if (req->timeout_us && (q->policy.allow_timeout_override || !timeout))
		timeout = req->timeout_us;
	req->t_enqueue = serve_now_ns();
	req->t_deadline = timeout && !q->policy.timeout_action_delay ?
		deadline_after(req->t_enqueue, timeout) : 0;
	req->next = NULL;
	req->seq = s->next_seq++;
	if (q->tail)
		q->tail->next = req;
	else
		q->head = req;
	q->tail = req;
	q->count++;
	s->pending++;
	metrics_pending(s->stats, 1);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return SERVE_OK;
}

/* ---- Create / destroy ----------------------------------------------------------- */

/* Warm-up: plans for the config's batch sizes and one run per instance. */
static int warm_up(struct scheduler *s, char *err)
{
	const struct model_config *cfg = s->cfg;
	struct npu_host_tensor t[SERVE_MAX_IO];
	void *zeros[SERVE_MAX_IO] = { 0 };
	int64_t sizes[CONFIG_MAX_PREFERRED + 2];
	size_t nsizes = 0, i, k;
	int b = cfg->max_batch_size > 0, r = SERVE_OK, inst;

	if (cfg->sequence.enabled)
		return SERVE_OK;	/* its control and state inputs are the table's: plans on use */
	for (i = 0; i < cfg->num_inputs; i++) {
		int d;

		if (cfg->inputs[i].dtype == NPU_TYPE_STRING)
			return SERVE_OK;	/* no zeros for strings: plans on use */
		for (d = 0; d < cfg->inputs[i].rank; d++)
			if (cfg->inputs[i].dims[d] < 0)
				return SERVE_OK;	/* shapes not known: plans on use */
	}
	sizes[nsizes++] = 1;
	if (b && cfg->dynamic_batching) {
		for (k = 0; k < cfg->num_preferred; k++)
			sizes[nsizes++] = cfg->preferred[k];
		if (cfg->max_batch_size > 1)
			sizes[nsizes++] = cfg->max_batch_size;
	}
	for (k = 0; k < nsizes && r == SERVE_OK; k++) {
		for (i = 0; i < cfg->num_inputs; i++) {
			size_t n = npu_data_type_size(cfg->inputs[i].dtype);
			int d;

			memset(&t[i], 0, sizeof(t[i]));
			t[i].name = cfg->inputs[i].name;
			t[i].dtype = cfg->inputs[i].dtype;
			t[i].rank = cfg->inputs[i].rank + b;
			if (b)
				t[i].dims[0] = sizes[k];
			for (d = 0; d < cfg->inputs[i].rank; d++)
				t[i].dims[d + b] = cfg->inputs[i].dims[d];
			for (d = 0; d < t[i].rank; d++)
				n *= (size_t)t[i].dims[d];
			t[i].nbytes = n;
			free(zeros[i]);
			zeros[i] = calloc(1, n ? n : 1);
			if (!zeros[i]) {
				r = serve_err(err, SERVE_INTERNAL, "out of memory in the warm-up");
				goto out;
			}
			t[i].data = zeros[i];
		}
		if (k == 0) {
			for (inst = 0; inst < s->num_instances; inst++)
				if (npu_session_run(s->inst[inst].session, t, cfg->num_inputs) != NPU_OK) {
					r = serve_err(err, SERVE_INVALID, "warm-up run: %s", npu_last_error());
					goto out;
				}
		} else {
			struct npu_plan *plan;

			if (npu_model_get_plan(s->model, t, cfg->num_inputs, &plan) != NPU_OK) {
				r = serve_err(err, SERVE_INVALID, "warm-up plan for batch %" PRId64 ": %s",
					      sizes[k], npu_last_error());
				goto out;
			}
			npu_plan_release(plan);
		}
	}
out:
	for (i = 0; i < SERVE_MAX_IO; i++)
		free(zeros[i]);
	return r;
}

static void destroy(struct scheduler *s)
{
	int i;

	for (i = 0; i < s->num_instances; i++) {
		if (s->inst[i].session)
			npu_session_destroy(s->inst[i].session);
		backend_instance_destroy(s->inst[i].backend);
	}
	sequence_table_destroy(s->seqs);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int scheduler_num_instances(const struct scheduler *s)
{
	return s->num_instances;
}

/*
 * The instances and their devices. On a model with one device (or the
 * CPU) the groups' counts add up. On a set of NPUs (npu serve --device
 * sim:4), as Triton places 'count' instances on each GPU a group lists
 * (every GPU without 'gpus'), each group places 'count' instances on each
 * NPU it lists, each instance's runs pinned to its NPU.
 */
static int place_instances(struct scheduler *s, const struct model_config *cfg, char *err)
{
	size_t devs = s->model ? npu_model_num_devices(s->model) : 0, k;
	int g, c, groups = cfg->num_groups ? cfg->num_groups : 1;

	s->num_instances = 0;
	for (g = 0; g < groups; g++) {
		int count = cfg->num_groups ? cfg->group_count[g] : cfg->instance_count;
		uint64_t gpus = cfg->num_groups ? cfg->group_gpus[g] : 0;

		if (count < 1)
			count = 1;
		if (!devs && gpus) {	/* a Triton repository's KIND_GPU on the CPU */
			serve_log(SERVE_LOG_INFO, "instance_group %d: 'gpus' ignored on device '%s'",
				  g, s->device);
			gpus = 0;
		}
		for (k = devs; gpus && k < 64; k++)
			if (gpus >> k & 1)
				return serve_err(err, SERVE_INVALID,
						 "instance_group %d: 'gpus' lists NPU %zu, but device '%s' has %zu NPU%s (npu serve --device sim:N or accel:* for more)",
						 g, k, s->device, devs, devs == 1 ? "" : "s");
		for (k = 0; k < (devs > 1 ? devs : 1); k++) {
			struct npu_model_device_stats ds;

			if (gpus && !(gpus >> k & 1))
				continue;
			npu_model_device_stats_init(&ds);
			for (c = 0; c < count; c++) {
				struct instance *in = &s->inst[s->num_instances];

				if (s->num_instances == 64)
					return serve_err(err, SERVE_INVALID,
							 "more than 64 instances (instance_group counts times NPUs)");
				in->group = cfg->num_groups ? g : -1;
				if (devs > 1 && npu_model_device_stats(s->model, k, &ds) == NPU_OK) {
					snprintf(in->device, sizeof(in->device), "%s", ds.name);
					in->device_mask = 1ull << k;
				} else {
					snprintf(in->device, sizeof(in->device), "%s", s->device);
				}
				s->num_instances++;
			}
		}
	}
	return SERVE_OK;
}

static int create(const struct model_config *cfg, struct npu_model *model,
		  struct backend_model *backend, const char *device, struct model_stats *stats,
		  const struct scheduler_limits *limits, struct scheduler **out, char *err)
{
	struct scheduler *s = calloc(1, sizeof(*s));
	size_t i, j;
	int l, r;

	*out = NULL;
	if (!s)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	s->cfg = cfg;
	s->model = model;
	s->backend = backend;
	s->stats = stats;
	snprintf(s->device, sizeof(s->device), "%s", device);
	pthread_mutex_init(&s->lock, NULL);
	{
		/* timed_wait() counts on CLOCK_MONOTONIC. */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	s->levels = cfg->priority_levels > 0 ? cfg->priority_levels : 1;
	for (l = 1; l <= s->levels; l++) {
		s->q[l].policy = cfg->level_policy_set[l] ? cfg->level_policy[l]
							  : cfg->default_queue_policy;
		/* Triton's 0 means unbounded: here the server's bound instead. */
		if (!s->q[l].policy.max_queue_size)
			s->q[l].policy.max_queue_size = limits->default_max_queue_size;
	}
	s->limits = *limits;
	if (!s->limits.shape_memory)
		s->limits.shape_memory = 1;
	if (s->limits.shape_memory > MAX_SHAPE_MEMORY)
		s->limits.shape_memory = MAX_SHAPE_MEMORY;
	/* A backend compiles no plan: its new shapes cost nothing. */
	for (i = 0; i < cfg->num_inputs; i++)
		for (l = 0; l < cfg->inputs[i].rank; l++)
			s->variable_dims |= model && cfg->inputs[i].dims[l] < 0;
	s->shape_window_start = serve_now_ns();
	for (i = 0; model && i < cfg->num_outputs; i++) {
		int found = 0;

		for (j = 0; j < npu_model_num_outputs(model) && !found; j++) {
			struct npu_tensor_info info;

			if (npu_model_output_info(model, j, &info) == NPU_OK &&
			    !strcmp(info.name, cfg->outputs[i].name)) {
				s->out_index[i] = j;
				found = 1;
			}
		}
		if (!found) {
			destroy(s);
			return serve_err(err, SERVE_INVALID, "output '%s' is not in the model",
					 cfg->outputs[i].name);
		}
	}
	r = place_instances(s, cfg, err);
	if (!r)
		for (l = 0; l < s->num_instances && !r; l++)
			r = rate_limiter_register(cfg, s->inst[l].group, s->inst[l].device, err);
	if (r) {
		destroy(s);
		return r;
	}
	for (l = 0; l < s->num_instances; l++) {
		struct npu_session_options so;

		s->inst[l].s = s;
		s->inst[l].index = l;
		if (backend) {
			r = backend_instance_create(backend, &s->inst[l].backend, err);
			if (r) {
				destroy(s);
				return r;
			}
			continue;
		}
		npu_session_options_init(&so);
		so.device_mask = s->inst[l].device_mask;
		if (npu_session_create(model, &so, &s->inst[l].session) != NPU_OK) {
			r = serve_err(err, SERVE_INTERNAL, "session of instance %d: %s", l,
				      npu_last_error());
			destroy(s);
			return r;
		}
	}
	if (cfg->sequence.enabled) {
		struct seq_limits sl = { limits->max_sequences, limits->max_sequence_state_bytes };

		r = sequence_table_create(cfg, model, stats, &sl, s->num_instances, &s->lock,
					  &s->seqs, err);
		if (r) {
			destroy(s);
			return r;
		}
	}
	r = model ? warm_up(s, err) : SERVE_OK;
	if (r) {
		destroy(s);
		return r;
	}
	for (l = 0; l < s->num_instances; l++) {
		if (pthread_create(&s->inst[l].thread, NULL, instance_main, &s->inst[l])) {
			r = serve_err(err, SERVE_INTERNAL, "cannot start instance thread %d", l);
			scheduler_drain_destroy(s);
			return r;
		}
		s->inst[l].started = 1;
	}
	*out = s;
	return SERVE_OK;
}

int scheduler_create(const struct model_config *cfg, struct npu_model *model,
		     const char *device, struct model_stats *stats,
		     const struct scheduler_limits *limits, struct scheduler **out, char *err)
{
	return create(cfg, model, NULL, device, stats, limits, out, err);
}

int scheduler_create_backend(const struct model_config *cfg, struct backend_model *backend,
			     struct model_stats *stats, const struct scheduler_limits *limits,
			     struct scheduler **out, char *err)
{
	return create(cfg, NULL, backend, "cpu", stats, limits, out, err);
}

void scheduler_drain_destroy(struct scheduler *s)
{
	int i;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < s->num_instances; i++)
		if (s->inst[i].started)
			pthread_join(s->inst[i].thread, NULL);
	destroy(s);
}
