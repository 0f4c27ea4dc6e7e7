// SPDX-License-Identifier: MIT
/*
 * ensemble: Triton's ensemble_scheduling over the models' own schedulers.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensemble.h"

#define MAX_TENSORS (SERVE_MAX_IO * (CONFIG_MAX_STEPS + 1))

/* A tensor of the ensemble: an input of it, or an output of a step. */
struct ens_tensor {
	char name[SERVE_NAME_MAX];
	enum npu_data_type dtype;
	int rank;			/* with the batch dim when the producer batches */
	int64_t dims[NPU_MODEL_MAX_RANK];
	int producer;			/* step index, -1: an ensemble input */
};

struct ens_step {
	const struct ensemble_step *cfg;
	size_t num_in, num_out;
	int in_tensor[SERVE_MAX_IO];	/* cfg->in[k] reads this tensor */
	int out_tensor[SERVE_MAX_IO];	/* cfg->out[k] makes this one */
};

struct ensemble {
	const struct model_config *cfg;
	const struct ensemble_host *host;
	struct model_stats *stats;
	size_t num_tensors;
	struct ens_tensor t[MAX_TENSORS];
	struct ens_step steps[CONFIG_MAX_STEPS];
	int out_tensor[SERVE_MAX_IO];	/* the ensemble's output i */

	pthread_mutex_t lock;
	pthread_cond_t idle;
	int in_flight;			/* runs started or waiting for their sequence */
	struct ens_seq *seqs;		/* sequences with a run in flight */
};

/*
 * A sequence's requests go through the ensemble one at a time, in order:
 * a stateful step sees them in the order the client sent them even when
 * an earlier step of the next one could finish first.
 */
#define ENS_SEQ_MAX_WAITING 64

struct ens_seq {
	uint64_t id;
	char str[SERVE_NAME_MAX];
	struct ens_run *wait_head, *wait_tail;	/* runs behind the one in flight */
	size_t waiting;
	struct ens_seq *next;
};

enum { STEP_WAITING, STEP_RUNNING, STEP_DONE };

/* One request going through the steps. */
struct ens_run {
	struct ensemble *e;
	struct infer_request *req;
	struct ens_run *next_waiting;	/* in its sequence's queue */
	pthread_mutex_t lock;
	int running;
	int failed;
	int state[CONFIG_MAX_STEPS];
	unsigned char have[MAX_TENSORS];
	struct infer_tensor val[MAX_TENSORS];	/* owned: made by a step */
};

static int find_tensor(const struct ensemble *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->num_tensors; i++)
		if (!strcmp(e->t[i].name, name))
			return (int)i;
	return -1;
}

static const struct config_tensor *find_io(const struct config_tensor *t, size_t n,
					   const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

/* A config tensor's full shape: the batch dim first when the model batches. */
static void full_shape(const struct config_tensor *c, int batching, int *rank, int64_t *dims)
{
	int k;

	*rank = c->rank + (batching > 0);
	if (batching > 0)
		dims[0] = -1;
	for (k = 0; k < c->rank; k++)
		dims[k + (batching > 0)] = c->dims[k];
}

static int shapes_agree(int ra, const int64_t *a, int rb, const int64_t *b)
{
	int k;

	if (ra != rb)
		return 0;
	for (k = 0; k < ra; k++)
		if (a[k] >= 0 && b[k] >= 0 && a[k] != b[k])
			return 0;
	return 1;
}

static void shape_str(int rank, const int64_t *dims, char *out, size_t size)
{
	size_t k = 0;
	int d;

	k += (size_t)snprintf(out, size, "[");
	for (d = 0; d < rank && k < size; d++)
		k += (size_t)snprintf(out + k, size - k, "%s%" PRId64, d ? "," : "", dims[d]);
	if (k < size)
		snprintf(out + k, size - k, "]");
}

/* A tensor read as a step's input or the ensemble's output: the same datatype and shape. */
static int check_use(const struct ensemble *e, const struct ens_tensor *t,
		     enum npu_data_type dtype, int rank, const int64_t *dims, const char *where,
		     char *err)
{
	char a[128], b[128];

	if (t->dtype != dtype)
		return serve_err(err, SERVE_INVALID,
				 "ensemble '%s': %s reads '%s' as %s, but it is %s", e->cfg->name, where,
				 t->name, serve_dtype_name(dtype), serve_dtype_name(t->dtype));
	if (!shapes_agree(t->rank, t->dims, rank, dims)) {
		shape_str(t->rank, t->dims, a, sizeof(a));
		shape_str(rank, dims, b, sizeof(b));
		return serve_err(err, SERVE_INVALID,
				 "ensemble '%s': %s reads '%s' with shape %s, but it has shape %s",
				 e->cfg->name, where, t->name, b, a);
	}
	return SERVE_OK;
}

int ensemble_create(const struct model_config *cfg, const struct ensemble_host *host,
		    struct model_stats *stats, struct ensemble **out, char *err)
{
	struct ensemble *e = calloc(1, sizeof(*e));
	int ready[MAX_TENSORS] = { 0 }, done[CONFIG_MAX_STEPS] = { 0 };
	size_t i, k, left;
	int st = SERVE_OK;

	*out = NULL;
	if (!e)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	e->cfg = cfg;
	e->host = host;
	e->stats = stats;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->idle, NULL);
	if (!cfg->num_inputs || !cfg->num_outputs) {
		st = serve_err(err, SERVE_INVALID,
			       "ensemble '%s': the config must list its inputs and outputs", cfg->name);
		goto fail;
	}
	for (i = 0; i < cfg->num_inputs; i++) {
		struct ens_tensor *t = &e->t[e->num_tensors++];

		snprintf(t->name, sizeof(t->name), "%s", cfg->inputs[i].name);
		t->dtype = cfg->inputs[i].dtype;
		full_shape(&cfg->inputs[i], cfg->max_batch_size, &t->rank, t->dims);
		t->producer = -1;
	}
	/* What each step makes, from its model's config. */
	for (i = 0; i < cfg->num_steps; i++) {
		const struct ensemble_step *sc = &cfg->steps[i];
		struct ens_step *s = &e->steps[i];
		const struct model_config *mc;
		char where[SERVE_NAME_MAX + 64];

		s->cfg = sc;
		s->num_in = sc->num_in;
		s->num_out = sc->num_out;
		snprintf(where, sizeof(where), "step %zu ('%s')", i, sc->model);
		if (!strcmp(sc->model, cfg->name)) {
			st = serve_err(err, SERVE_INVALID, "ensemble '%s': %s is the ensemble itself",
				       cfg->name, where);
			goto fail;
		}
		st = host->step_config(host->arg, sc->model, sc->version, &mc, err);
		if (st) {
			char msg[SERVE_ERR_MAX];

			snprintf(msg, sizeof(msg), "%s", err);
			st = serve_err(err, st, "ensemble '%s' step %zu: %s", cfg->name, i, msg);
			goto fail;
		}
		if (cfg->max_batch_size > 0 && mc->max_batch_size < cfg->max_batch_size) {
			st = serve_err(err, SERVE_INVALID,
				       "ensemble '%s': max_batch_size %d, but %s takes at most %d",
				       cfg->name, cfg->max_batch_size, where, mc->max_batch_size);
			goto fail;
		}
		for (k = 0; k < sc->num_in; k++)
			if (!find_io(mc->inputs, mc->num_inputs, sc->in[k].key)) {
				st = serve_err(err, SERVE_INVALID,
					       "ensemble '%s': %s: input_map names '%s', which is not an input of model '%s'",
					       cfg->name, where, sc->in[k].key, sc->model);
				goto fail;
			}
		for (k = 0; k < mc->num_inputs; k++) {
			size_t j;

			for (j = 0; j < sc->num_in && strcmp(sc->in[j].key, mc->inputs[k].name); j++)
				;
			if (j == sc->num_in) {
				st = serve_err(err, SERVE_INVALID,
					       "ensemble '%s': %s: input '%s' of model '%s' is not in its input_map",
					       cfg->name, where, mc->inputs[k].name, sc->model);
				goto fail;
			}
		}
		for (k = 0; k < sc->num_out; k++) {
			const struct config_tensor *ct = find_io(mc->outputs, mc->num_outputs,
								 sc->out[k].key);
			struct ens_tensor *t;
			int prev = find_tensor(e, sc->out[k].value);

			if (!ct) {
				st = serve_err(err, SERVE_INVALID,
					       "ensemble '%s': %s: output_map names '%s', which is not an output of model '%s'",
					       cfg->name, where, sc->out[k].key, sc->model);
				goto fail;
			}
			if (prev >= 0) {
				st = serve_err(err, SERVE_INVALID,
					       "ensemble '%s': %s makes '%s', which %s already", cfg->name,
					       where, sc->out[k].value,
					       e->t[prev].producer < 0 ? "is an input of the ensemble"
								       : "another step makes");
				goto fail;
			}
			t = &e->t[e->num_tensors];
			snprintf(t->name, sizeof(t->name), "%s", sc->out[k].value);
			t->dtype = ct->dtype;
			full_shape(ct, mc->max_batch_size, &t->rank, t->dims);
			t->producer = (int)i;
			s->out_tensor[k] = (int)e->num_tensors++;
		}
		/* What it reads is checked once every step's outputs are known. */
	}
	for (i = 0; i < cfg->num_steps; i++) {
		const struct ensemble_step *sc = &cfg->steps[i];
		struct ens_step *s = &e->steps[i];
		const struct model_config *mc;
		char where[SERVE_NAME_MAX + 64];

		snprintf(where, sizeof(where), "step %zu ('%s')", i, sc->model);
		st = host->step_config(host->arg, sc->model, sc->version, &mc, err);
		if (st)
			goto fail;
		for (k = 0; k < sc->num_in; k++) {
			int t = find_tensor(e, sc->in[k].value), rank;
			int64_t dims[NPU_MODEL_MAX_RANK];

			if (t < 0) {
				st = serve_err(err, SERVE_INVALID,
					       "ensemble '%s': %s reads '%s', which no step makes and the ensemble does not take",
					       cfg->name, where, sc->in[k].value);
				goto fail;
			}
			full_shape(find_io(mc->inputs, mc->num_inputs, sc->in[k].key),
				   mc->max_batch_size, &rank, dims);
			st = check_use(e, &e->t[t], find_io(mc->inputs, mc->num_inputs,
							    sc->in[k].key)->dtype,
				       rank, dims, where, err);
			if (st)
				goto fail;
			s->in_tensor[k] = t;
		}
	}
	for (i = 0; i < cfg->num_outputs; i++) {
		int t = find_tensor(e, cfg->outputs[i].name), rank;
		int64_t dims[NPU_MODEL_MAX_RANK];

		if (t < 0) {
			st = serve_err(err, SERVE_INVALID, "ensemble '%s': no step makes output '%s'",
				       cfg->name, cfg->outputs[i].name);
			goto fail;
		}
		full_shape(&cfg->outputs[i], cfg->max_batch_size, &rank, dims);
		st = check_use(e, &e->t[t], cfg->outputs[i].dtype, rank, dims, "its output", err);
		if (st)
			goto fail;
		e->out_tensor[i] = t;
	}
	/* Every step can run: no cycle, nobody waits for a tensor never made. */
	for (i = 0; i < cfg->num_inputs; i++)
		ready[i] = 1;
	left = cfg->num_steps;
	for (;;) {
		size_t progressed = 0;

		for (i = 0; i < cfg->num_steps; i++) {
			if (done[i])
				continue;
			for (k = 0; k < e->steps[i].num_in && ready[e->steps[i].in_tensor[k]]; k++)
				;
			if (k < e->steps[i].num_in)
				continue;
			done[i] = 1;
			for (k = 0; k < e->steps[i].num_out; k++)
				ready[e->steps[i].out_tensor[k]] = 1;
			progressed++;
			left--;
		}
		if (!progressed)
			break;
	}
	if (left) {
		char names[256] = "";
		size_t n = 0;

		for (i = 0; i < cfg->num_steps && n < sizeof(names) - 1; i++)
			if (!done[i])
				n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%zu ('%s')",
						      n ? ", " : "", i, cfg->steps[i].model);
		st = serve_err(err, SERVE_INVALID,
			       "ensemble '%s': steps %s wait on each other's outputs (a cycle)",
			       cfg->name, names);
		goto fail;
	}
	*out = e;
	return SERVE_OK;
fail:
	pthread_cond_destroy(&e->idle);
	pthread_mutex_destroy(&e->lock);
	free(e);
	return st;
}

/* ---- Running ------------------------------------------------------------------ */

static void run_free(struct ens_run *run)
{
	size_t i;

	for (i = 0; i < run->e->num_tensors; i++)
		if (run->val[i].owned)
			free(run->val[i].data);
	pthread_mutex_destroy(&run->lock);
	free(run);
}

static int has_sequence(const struct infer_request *req)
{
	return req->seq_id || req->seq_str[0];
}

/* Under e->lock: the sequence's entry, or where to link a new one. */
static struct ens_seq **find_seq(struct ensemble *e, uint64_t id, const char *str)
{
	struct ens_seq **pp;

	for (pp = &e->seqs; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id && !strcmp((*pp)->str, str))
			return pp;
	return pp;
}

static int start_run(struct ens_run *run, char *err);

/*
 * A request of sequence (id, str) has left: start the sequence's next
 * waiting run, or forget the sequence.
 */
static void sequence_next(struct ensemble *e, uint64_t id, const char *str)
{
	struct ens_seq **pp, *sq;
	struct ens_run *next;
	char err[SERVE_ERR_MAX];
	int st;

	if (!id && !str[0])
		return;
	for (;;) {
		pthread_mutex_lock(&e->lock);
		pp = find_seq(e, id, str);
		sq = *pp;
		next = sq ? sq->wait_head : NULL;
		if (next) {
			sq->wait_head = next->next_waiting;
			if (!sq->wait_head)
				sq->wait_tail = NULL;
			sq->waiting--;
		} else if (sq) {
			*pp = sq->next;
			free(sq);
		}
		pthread_mutex_unlock(&e->lock);
		if (!next)
			return;
		st = start_run(next, err);
		if (!st)
			return;
		/* It could not start: it fails, and the one after it goes. */
		next->req->status = serve_err(next->req->err, st, "%s", err);
		metrics_request(e->stats, 0, 0, serve_now_ns() - next->req->t_arrive);
		next->req->done(next->req, next->req->done_arg);
		run_free(next);
		pthread_mutex_lock(&e->lock);
		if (!--e->in_flight)
			pthread_cond_broadcast(&e->idle);
		pthread_mutex_unlock(&e->lock);
	}
}

/* The last step is back: the ensemble's outputs to the request, and done. */
static void finish(struct ens_run *run)
{
	struct ensemble *e = run->e;
	struct infer_request *req = run->req;
	char seq_str[SERVE_NAME_MAX];
	uint64_t seq_id;
	size_t i;

	if (!run->failed) {
		req->status = SERVE_OK;
		req->num_results = 0;
		for (i = 0; i < e->cfg->num_outputs; i++) {
			struct infer_tensor *v = &run->val[e->out_tensor[i]];
			struct infer_tensor *res;
			int binary;

			if (!infer_request_asks(req, e->cfg->outputs[i].name, &binary))
				continue;
			res = &req->results[req->num_results++];
			*res = *v;
			snprintf(res->name, sizeof(res->name), "%s", e->cfg->outputs[i].name);
			res->binary = binary;
			if (v->owned) {
				v->owned = 0;	/* handed over */
			} else {
				/* An input passed straight through: the request's own copy. */
				res->data = malloc(v->nbytes ? v->nbytes : 1);
				if (!res->data) {
					req->num_results--;
					req->status = serve_err(req->err, SERVE_INTERNAL, "out of memory");
					break;
				}
				memcpy(res->data, v->data, v->nbytes);
				res->owned = 1;
			}
		}
	}
	metrics_request(e->stats, req->status == SERVE_OK, 0, serve_now_ns() - req->t_arrive);
	run_free(run);
	/* The front end may free the request in done(): its id first. */
	seq_id = req->seq_id;
	snprintf(seq_str, sizeof(seq_str), "%s", req->seq_str);
	req->done(req, req->done_arg);
	sequence_next(e, seq_id, seq_str);
	pthread_mutex_lock(&e->lock);
	if (!--e->in_flight)
		pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->lock);
}

static void step_done(struct infer_request *sreq, void *arg);

/* Under run->lock: the steps whose inputs are all there, marked running. */
static size_t take_ready(struct ens_run *run, int *which)
{
	struct ensemble *e = run->e;
	size_t i, k, n = 0;

	if (run->failed)
		return 0;
	for (i = 0; i < e->cfg->num_steps; i++) {
		if (run->state[i] != STEP_WAITING)
			continue;
		for (k = 0; k < e->steps[i].num_in && run->have[e->steps[i].in_tensor[k]]; k++)
			;
		if (k < e->steps[i].num_in)
			continue;
		run->state[i] = STEP_RUNNING;
		run->running++;
		which[n++] = (int)i;
	}
	return n;
}

static void fail_run(struct ens_run *run, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Under run->lock: the first failure is the one the client sees. */
static void fail_run(struct ens_run *run, int status, const char *fmt, ...)
{
	va_list ap;

	if (run->failed)
		return;
	run->failed = 1;
	run->req->status = status;
	va_start(ap, fmt);
	vsnprintf(run->req->err, SERVE_ERR_MAX, fmt, ap);
	va_end(ap);
}

/* A step's request, and where it belongs. */
struct step_req {
	struct infer_request req;	/* first: 'done' gets its address */
	struct ens_run *run;
	int step;
};

/* Queue step i of the run (run->lock not held); nothing queued on an error. */
static int submit_step(struct ens_run *run, int i, char *err)
{
	struct ensemble *e = run->e;
	const struct ens_step *s = &e->steps[i];
	struct step_req *sr;
	struct infer_request *sreq;
	size_t k;
	int st;

	if (atomic_load(&run->req->cancelled))
		return serve_err(err, SERVE_CANCELLED,
				 "cancelled by the client before step %d ('%s')", i, s->cfg->model);
	sr = calloc(1, sizeof(*sr));
	if (!sr)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	sr->run = run;
	sr->step = i;
	sreq = &sr->req;
	snprintf(sreq->id, sizeof(sreq->id), "%s", run->req->id);
	sreq->num_inputs = s->num_in;
	for (k = 0; k < s->num_in; k++) {
		sreq->inputs[k] = run->val[s->in_tensor[k]];
		sreq->inputs[k].owned = 0;	/* the run keeps it */
		snprintf(sreq->inputs[k].name, sizeof(sreq->inputs[k].name), "%s",
			 s->cfg->in[k].key);
	}
	sreq->num_outputs = s->num_out;
	for (k = 0; k < s->num_out; k++) {
		snprintf(sreq->outputs[k].name, sizeof(sreq->outputs[k].name), "%s",
			 s->cfg->out[k].key);
		sreq->outputs[k].binary = 1;
	}
	sreq->binary_output = 1;
	sreq->priority = run->req->priority;
	sreq->timeout_us = run->req->timeout_us;
	/* A sequence's parameters go to every step, as Triton's ensembles do. */
	sreq->seq_id = run->req->seq_id;
	snprintf(sreq->seq_str, sizeof(sreq->seq_str), "%s", run->req->seq_str);
	sreq->seq_start = run->req->seq_start;
	sreq->seq_end = run->req->seq_end;
	sreq->done = step_done;
	sreq->done_arg = sr;
	st = e->host->submit(e->host->arg, s->cfg->model, s->cfg->version, sreq, err);
	if (st) {
		char msg[SERVE_ERR_MAX];

		snprintf(msg, sizeof(msg), "%s", err);
		serve_err(err, st, "ensemble '%s' step %d ('%s'): %s", e->cfg->name, i,
			  s->cfg->model, msg);
		free(sr);
	}
	return st;
}

/* Queue steps marked running; one that cannot be queued fails the run. */
static void launch(struct ens_run *run, const int *which, size_t n)
{
	char err[SERVE_ERR_MAX];
	size_t j;
	int st, last;

	for (j = 0; j < n; j++) {
		st = submit_step(run, which[j], err);
		if (!st)
			continue;
		pthread_mutex_lock(&run->lock);
		fail_run(run, st, "%s", err);
		run->state[which[j]] = STEP_DONE;
		last = !--run->running;
		pthread_mutex_unlock(&run->lock);
		if (last)
			finish(run);
	}
}

static void step_done(struct infer_request *sreq, void *arg)
{
	struct step_req *sr = arg;
	struct ens_run *run = sr->run;
	struct ensemble *e = run->e;
	const struct ens_step *s = &e->steps[sr->step];
	int which[CONFIG_MAX_STEPS];
	size_t n = 0, i, k;
	int last;

	pthread_mutex_lock(&run->lock);
	if (sreq->status != SERVE_OK) {
		fail_run(run, sreq->status, "ensemble '%s' step %d ('%s'): %s", e->cfg->name,
			 sr->step, s->cfg->model, sreq->err);
	} else {
		for (k = 0; k < s->num_out; k++) {
			int t = s->out_tensor[k];

			for (i = 0; i < sreq->num_results; i++)
				if (!strcmp(sreq->results[i].name, s->cfg->out[k].key))
					break;
			if (i == sreq->num_results) {
				fail_run(run, SERVE_INTERNAL,
					 "ensemble '%s' step %d ('%s') did not return '%s'",
					 e->cfg->name, sr->step, s->cfg->model, s->cfg->out[k].key);
				break;
			}
			/* Taken over by the run. */
			run->val[t] = sreq->results[i];
			snprintf(run->val[t].name, sizeof(run->val[t].name), "%s", e->t[t].name);
			sreq->results[i].owned = 0;
			run->have[t] = 1;
		}
		n = take_ready(run, which);
	}
	run->state[sr->step] = STEP_DONE;
	last = !--run->running && !n;
	pthread_mutex_unlock(&run->lock);
	infer_request_clear(sreq);
	free(sr);
	if (last) {
		finish(run);
		return;
	}
	launch(run, which, n);
}

/* Queue the run's first steps; nothing runs on an error. */
static int start_run(struct ens_run *run, char *err)
{
	int which[CONFIG_MAX_STEPS];
	size_t n = take_ready(run, which);
	int st;

	/* ensemble_create() saw every step become ready: one is, now. */
	if (!n)
		return serve_err(err, SERVE_INTERNAL, "ensemble '%s': no step can start",
				 run->e->cfg->name);
	/* The first step queued or not at all: then the caller answers. */
	st = submit_step(run, which[0], err);
	if (st)
		return st;
	launch(run, which + 1, n - 1);
	return SERVE_OK;
}

int ensemble_enqueue(struct ensemble *e, struct infer_request *req, char *err)
{
	struct ens_run *run = calloc(1, sizeof(*run));
	size_t i;
	int st;

	if (!run)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	run->e = e;
	run->req = req;
	pthread_mutex_init(&run->lock, NULL);
	for (i = 0; i < req->num_inputs; i++) {
		run->val[i] = req->inputs[i];	/* the config's order: tensors 0.. */
		run->val[i].owned = 0;
		run->have[i] = 1;
	}
	pthread_mutex_lock(&e->lock);
	if (has_sequence(req)) {
		struct ens_seq **pp = find_seq(e, req->seq_id, req->seq_str), *sq = *pp;

		if (sq && sq->waiting >= ENS_SEQ_MAX_WAITING) {
			pthread_mutex_unlock(&e->lock);
			run_free(run);
			return serve_err(err, SERVE_UNAVAILABLE,
					 "ensemble '%s': %d requests of this sequence are already waiting",
					 e->cfg->name, ENS_SEQ_MAX_WAITING);
		}
		if (sq) {
			/* Behind the sequence's request in flight. */
			if (sq->wait_tail)
				sq->wait_tail->next_waiting = run;
			else
				sq->wait_head = run;
			sq->wait_tail = run;
			sq->waiting++;
			e->in_flight++;
			pthread_mutex_unlock(&e->lock);
			return SERVE_OK;
		}
		sq = calloc(1, sizeof(*sq));
		if (!sq) {
			pthread_mutex_unlock(&e->lock);
			run_free(run);
			return serve_err(err, SERVE_INTERNAL, "out of memory");
		}
		sq->id = req->seq_id;
		snprintf(sq->str, sizeof(sq->str), "%s", req->seq_str);
		*pp = sq;
	}
	e->in_flight++;
	pthread_mutex_unlock(&e->lock);
	st = start_run(run, err);
	if (st) {
		run_free(run);
		metrics_request(e->stats, 0, 0, serve_now_ns() - req->t_arrive);
		/* Its sequence's next waiting run (if one came meanwhile) goes. */
		sequence_next(e, req->seq_id, req->seq_str);
		pthread_mutex_lock(&e->lock);
		if (!--e->in_flight)
			pthread_cond_broadcast(&e->idle);
		pthread_mutex_unlock(&e->lock);
		return st;
	}
	return SERVE_OK;
}

void ensemble_drain_destroy(struct ensemble *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	while (e->in_flight)
		pthread_cond_wait(&e->idle, &e->lock);
	pthread_mutex_unlock(&e->lock);
	pthread_cond_destroy(&e->idle);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
