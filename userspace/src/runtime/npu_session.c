// SPDX-License-Identifier: MIT
/*
 * npu_session.c - sessions (npu/npu_model.h): one thread's run state. A
 * session keeps an execution state (tensors, host arena, its own NPU
 * arena and command streams) for each of the last few plans it ran, so
 * switching between cached shapes allocates nothing and compiles nothing.
 */
#include "runtime/npu_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/npu_alloc.h"
#include "compiler/compiler.h"
#include "compiler/segment_rt.h"
#include "compiler/arena.h"
#include "cpu/kernels/cpu_kernels.h"

#define NPU_DEFAULT_PLAN_STATES 4

struct plan_state {
	struct npu_plan *plan;		/* a reference */
	size_t device;			/* of the model's set */
	struct npu_exec *exec;
	uint64_t last_used;
};

struct npu_session {
	struct npu_model *model;	/* a reference */
	atomic_bool busy;		/* a thread is inside a call */
	struct npu_threadpool *pool;	/* a view of the engine's pool */
	struct plan_state *states;
	size_t num_states, max_states;
	struct plan_state *cur;		/* of the last run */
	uint64_t device_mask;		/* the devices its runs may use */
	size_t pinned;			/* a run's device inputs' device + 1, or 0 */
	uint64_t clock;
	double last_run_s;
	bool last_timed;		/* the last run succeeded and measured its steps */
	/* Per model input: aligned copies of misaligned inputs (outputs may
	 * alias them), and a run's bound tensors and shapes. */
	void **aligned;
	struct npu_tensor *bound;
	const struct npu_tensor **bound_ptrs;
	struct npu_shape *bound_shapes;
	struct npu_host_tensor *merged;	/* host and device inputs of a run */
	/* Per model output: IO binding of a run (npu_run_options.outputs). */
	bool *wanted;			/* computed by the last run */
	bool chose;			/* ... which chose its outputs */
	struct npu_tensor *out_caller;	/* caller memory */
	const struct npu_tensor **out_caller_ptrs;
	struct npu_io_stats io;		/* the last run, if io_valid */
	bool io_valid;
	/* An async run queued or running (npu_session_run_async). */
	pthread_mutex_t async_lock;
	pthread_cond_t async_done;
	bool async_inflight;		/* under async_lock */
	bool destroy_deferred;		/* npu_session_destroy() in its callback */
};

/* The session whose completion callback this thread is running. */
static _Thread_local struct npu_session *in_callback;

NPU_API void npu_session_options_init_sized(struct npu_session_options *o, size_t size)
{
	struct npu_session_options d = { .struct_size = size };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

NPU_API npu_status npu_session_create(struct npu_model *m,
				      const struct npu_session_options *opts,
				      struct npu_session **out)
{
	struct npu_session_options o;
	struct npu_session *s;
	uint64_t all;
	npu_status st;

	if (!out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_create: out is NULL");
	*out = NULL;
	if (!m)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_create: model is NULL");
	if (atomic_load(&m->destroyed))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_create: the model was destroyed");
	npu_session_options_init(&o);
	if (opts) {
		st = npu_api_copy_options(&o, sizeof(o), opts, "npu_session_options");
		if (st)
			return st;
	}
	all = (1ull << m->num_devs) - 1;	/* num_devs <= NPU_DEVICE_SET_MAX */
	if (o.device_mask && m->num_devs && !(o.device_mask & all))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_create: device_mask 0x%llx names none of %s's %zu device%s",
				    (unsigned long long)o.device_mask, m->source, m->num_devs,
				    m->num_devs == 1 ? "" : "s");
	s = calloc(1, sizeof(*s));
	if (!s)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	/* A state per plan and device: each device of a set may take a run. */
	s->max_states = (o.max_plan_states ? o.max_plan_states : NPU_DEFAULT_PLAN_STATES) *
			(m->num_devs > 1 ? m->num_devs : 1);
	s->device_mask = o.device_mask & all ? o.device_mask & all : all;
	s->states = calloc(s->max_states, sizeof(*s->states));
	s->aligned = calloc(m->num_inputs + 1, sizeof(*s->aligned));
	s->bound = calloc(m->num_inputs + 1, sizeof(*s->bound));
	s->bound_ptrs = calloc(m->num_inputs + 1, sizeof(*s->bound_ptrs));
	s->bound_shapes = calloc(m->num_inputs + 1, sizeof(*s->bound_shapes));
	s->merged = calloc(m->num_inputs + 1, sizeof(*s->merged));
	s->wanted = calloc(m->num_outputs + 1, sizeof(*s->wanted));
	s->out_caller = calloc(m->num_outputs + 1, sizeof(*s->out_caller));
	s->out_caller_ptrs = calloc(m->num_outputs + 1, sizeof(*s->out_caller_ptrs));
	if (m->engine->pool)
		s->pool = npu_threadpool_create_view(m->engine->pool);
	if (!s->states || !s->aligned || !s->bound || !s->bound_ptrs || !s->bound_shapes ||
	    !s->merged || !s->wanted || !s->out_caller || !s->out_caller_ptrs ||
	    (m->engine->pool && !s->pool)) {
		free(s->merged);
		free(s->wanted);
		free(s->out_caller);
		free(s->out_caller_ptrs);
		free(s->states);
		free(s->aligned);
		free(s->bound);
		free(s->bound_ptrs);
		free(s->bound_shapes);
		npu_threadpool_destroy(s->pool);
		free(s);
		return npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
	}
	pthread_mutex_init(&s->async_lock, NULL);
	pthread_cond_init(&s->async_done, NULL);
	npu_model_ref(m);
	s->model = m;
	*out = s;
	return NPU_OK;
}

static void drop_state(struct plan_state *ps)
{
	npu_exec_destroy(ps->exec);
	npu_plan_release(ps->plan);
	memset(ps, 0, sizeof(*ps));
}

static void session_free(struct npu_session *s)
{
	size_t i;

	for (i = 0; i < s->num_states; i++)
		drop_state(&s->states[i]);
	for (i = 0; i < s->model->num_inputs; i++)
		free(s->aligned[i]);
	free(s->aligned);
	free(s->bound);
	free(s->bound_ptrs);
	free(s->bound_shapes);
	free(s->merged);
	free(s->wanted);
	free(s->out_caller);
	free(s->out_caller_ptrs);
	free(s->states);
	npu_threadpool_destroy(s->pool);
	pthread_mutex_destroy(&s->async_lock);
	pthread_cond_destroy(&s->async_done);
	npu_model_unref(s->model);
	free(s);
}

NPU_API void npu_session_destroy(struct npu_session *s)
{
	if (!s)
		return;
	if (in_callback == s) {		/* the worker frees it once the callback returned */
		s->destroy_deferred = true;
		return;
	}
	pthread_mutex_lock(&s->async_lock);
	while (s->async_inflight)
		pthread_cond_wait(&s->async_done, &s->async_lock);
	pthread_mutex_unlock(&s->async_lock);
	session_free(s);
}

static bool enter(struct npu_session *s, const char *what)
{
	bool expected = false;

	if (!atomic_compare_exchange_strong(&s->busy, &expected, true)) {
		npu_api_fail(NPU_ERR_BUSY,
			     "%s: the session is in use by another thread or by an async run not yet ended (npu_session_wait()); a session runs one run at a time: make one per thread",
			     what);
		return false;
	}
	return true;
}

static void leave(struct npu_session *s)
{
	atomic_store(&s->busy, false);
}

/* This session's execution state for 'plan' on 'device', made (or recycled) on first use. */
static npu_status state_for(struct npu_session *s, struct npu_plan *plan, size_t device,
			    struct plan_state **out)
{
	bool pipeline = device == NPU_PLAN_PIPELINE;
	struct npu_exec_options eo = {
		.pool = s->pool, .threads = 1, .device_replica = pipeline ? 0 : device,
		.segment_replicas = pipeline ? plan->seg_device : NULL,
	};
	struct npu_error err = { 0 };
	struct plan_state *ps = NULL;
	size_t i;
	npu_status st;

	for (i = 0; i < s->num_states; i++)
		if (s->states[i].plan == plan && s->states[i].device == device) {
			ps = &s->states[i];
			break;
		}
	if (!ps) {
		if (s->num_states < s->max_states) {
			ps = &s->states[s->num_states++];
		} else {	/* least recently used out */
			ps = &s->states[0];
			for (i = 1; i < s->num_states; i++)
				if (s->states[i].last_used < ps->last_used)
					ps = &s->states[i];
			if (s->cur == ps)
				s->cur = NULL;
			drop_state(ps);
		}
		eo.schedule = plan->exec;
		eo.profile = s->model->opts.profile != 0;
		eo.trace_file = s->model->engine->opts.trace_file;
		st = npu_plan_on_device(plan, device);
		if (!st && npu_exec_create(plan->g, &eo, &ps->exec, &err))
			st = npu_api_fail_err(&err);
		if (st) {
			*ps = s->states[--s->num_states];
			memset(&s->states[s->num_states], 0, sizeof(*ps));
			return st;
		}
		npu_plan_ref(plan);
		npu_model_ref(s->model);	/* as npu_plan_release() drops one */
		ps->plan = plan;
		ps->device = device;
	}
	ps->last_used = ++s->clock;
	*out = ps;
	return NPU_OK;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A device input as a host tensor over the buffer's mapping, checked. */
static npu_status device_input(const struct npu_model *m, size_t k,
			       const struct npu_device_tensor *d, struct npu_host_tensor *h,
			       size_t *pinned)
{
	const char *name = d->name ? d->name : "(no name)";
	size_t esize = npu_data_type_size(d->dtype), on;
	uint64_t size;
	void *map;

	if (!d->name)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: npu_run_options.device_inputs[%zu]: name is NULL (device inputs are given by name)",
				    m->source, k);
	if (!m->dev)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: input '%s' is in a device buffer, but the model runs on the CPU (device \"%s\"): device buffers need a model loaded for an NPU device",
				    m->source, name, m->device_name);
	if (!d->buffer)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: device input '%s': buffer is NULL",
				    m->source, name);
	for (on = 0; on < m->num_devs && npu_buffer_device(d->buffer) != m->devs[on]; on++)
		;
	if (on == m->num_devs)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: device input '%s': the buffer belongs to another device than the model's (\"%s\"); allocate it on npu_engine_get_device(engine, \"%s\")",
				    m->source, name, m->device_name, m->dev_names[0]);
	if (*pinned && *pinned != on + 1)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: device input '%s' is on device '%s', an earlier one on '%s': a run's device inputs must be on one device",
				    m->source, name, m->dev_names[on], m->dev_names[*pinned - 1]);
	*pinned = on + 1;
	size = npu_buffer_size(d->buffer);
	if (d->offset > size || d->nbytes > size - d->offset)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: device input '%s': %zu bytes at offset %llu do not fit in its %llu-byte buffer",
				    m->source, name, d->nbytes, (unsigned long long)d->offset,
				    (unsigned long long)size);
	if (esize > 1 && d->offset % esize)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: device input '%s': offset %llu is not aligned to its %s elements (%zu bytes)",
				    m->source, name, (unsigned long long)d->offset,
				    npu_data_type_name(d->dtype), esize);
	if (npu_buffer_map(d->buffer, &map) != NPU_OK)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: device input '%s': cannot map its buffer: %s",
				    m->source, name, npu_device_last_error(m->dev));
	memset(h, 0, sizeof(*h));
	h->name = d->name;
	h->dtype = d->dtype;
	h->rank = d->rank;
	memcpy(h->dims, d->dims, sizeof(h->dims));
	h->data = (char *)map + d->offset;
	h->nbytes = d->nbytes;
	return NPU_OK;
}

/* "float [1,3,4,4] (192 bytes)" */
static const char *tensor_str(enum npu_data_type dtype, int rank, const int64_t *dims,
			      size_t nbytes, char *buf, size_t n)
{
	struct npu_shape sh = { .rank = rank };
	char sbuf[160];

	if (rank >= 0 && rank <= NPU_MAX_RANK)
		memcpy(sh.dims, dims, (size_t)rank * sizeof(*dims));
	else
		sh.rank = 0;
	snprintf(buf, n, "%s %s (%zu bytes)", npu_data_type_name(dtype),
		 npu_shape_str(&sh, sbuf, sizeof(sbuf)), nbytes);
	return buf;
}

/*
 * npu_run_options.outputs against the plan: s->wanted and s->out_caller
 * from it, every entry checked (a shape the plan leaves open is checked
 * after the run).
 */
static npu_status bind_outputs(struct npu_session *s, const struct npu_plan *plan,
			       const struct npu_run_options *o, bool *any_caller)
{
	const struct npu_model *m = s->model;
	size_t k, i;

	*any_caller = false;
	memset(s->out_caller_ptrs, 0, m->num_outputs * sizeof(*s->out_caller_ptrs));
	for (i = 0; i < m->num_outputs; i++)
		s->wanted[i] = o->num_outputs == 0;
	if (o->num_outputs && !o->outputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: npu_run_options.outputs is NULL with num_outputs %zu",
				    m->source, o->num_outputs);
	for (k = 0; k < o->num_outputs; k++) {
		const struct npu_host_tensor *h = &o->outputs[k];
		const struct npu_tensor_info *want;
		char a[240], b[240];
		size_t esize;
		int64_t numel = 1;
		bool fixed = true;
		int d;

		if (!h->name)
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: npu_run_options.outputs[%zu]: name is NULL (outputs are chosen by name)",
					    m->source, k);
		for (i = 0; i < m->num_outputs && strcmp(m->outputs[i].name, h->name); i++)
			;
		if (i == m->num_outputs) {
			char names[400] = "";
			size_t j, len = 0;

			for (j = 0; j < m->num_outputs && len < sizeof(names); j++)
				len += (size_t)snprintf(names + len, sizeof(names) - len, "%s'%s'",
							j ? ", " : "", m->outputs[j].name);
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: npu_run_options.outputs[%zu]: the model has no output '%s' (its outputs: %s)",
					    m->source, k, h->name, names);
		}
		if (s->wanted[i])
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: output '%s' is chosen twice in npu_run_options.outputs",
					    m->source, h->name);
		s->wanted[i] = true;
		if (!h->data) {
			if (h->nbytes)
				return npu_api_fail(NPU_ERR_INVALID_ARG,
						    "%s: output '%s': %zu bytes of caller memory at NULL",
						    m->source, h->name, h->nbytes);
			continue;
		}
		want = &plan->outputs[i].info;
		esize = npu_data_type_size(want->dtype);
		for (d = 0; d < want->rank; d++) {
			fixed &= want->dims[d] >= 0;
			numel *= want->dims[d] >= 0 ? want->dims[d] : 1;
		}
		if (h->dtype != want->dtype || want->rank < 0 ||
		    (fixed && (h->rank != want->rank ||
			       memcmp(h->dims, want->dims, (size_t)want->rank * sizeof(*h->dims)) ||
			       h->nbytes != (size_t)numel * esize)))
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: output '%s': the caller's memory is for %s, the output is %s",
					    m->source, h->name,
					    tensor_str(h->dtype, h->rank, h->dims, h->nbytes, a, sizeof(a)),
					    tensor_str(want->dtype, want->rank, want->dims,
						       fixed ? (size_t)numel * esize : 0, b, sizeof(b)));
		if (esize > 1 && (uintptr_t)h->data % esize)
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: output '%s': caller memory %p is not aligned to its %s elements (%zu bytes)",
					    m->source, h->name, h->data, npu_data_type_name(h->dtype),
					    esize);
		memset(&s->out_caller[i], 0, sizeof(s->out_caller[i]));
		s->out_caller[i].dtype = (enum npu_dtype)h->dtype;
		s->out_caller[i].shape.rank = h->rank;
		memcpy(s->out_caller[i].shape.dims, h->dims,
		       (size_t)(h->rank > 0 ? h->rank : 0) * sizeof(*h->dims));
		s->out_caller[i].data = h->data;
		s->out_caller[i].nbytes = h->nbytes;
		s->out_caller_ptrs[i] = &s->out_caller[i];
		*any_caller = true;
	}
	return NPU_OK;
}

/* After a run: outputs their producer did not write into caller memory are copied there. */
static npu_status fill_caller_outputs(struct npu_session *s, struct npu_exec *exec)
{
	const struct npu_model *m = s->model;
	size_t i;

	for (i = 0; i < m->num_outputs; i++) {
		const struct npu_tensor *c = s->out_caller_ptrs[i];
		const struct npu_tensor *t = c ? npu_exec_output(exec, i) : NULL;
		char a[240], b[240];

		if (!c)
			continue;
		if (!t)
			return npu_api_fail(NPU_ERR_INTERNAL, "%s: output '%s' was not computed",
					    m->source, m->outputs[i].name);
		if (t->data == c->data && t->nbytes == c->nbytes) {
			s->io.outputs_in_place++;
			continue;
		}
		if (t->dtype != c->dtype || t->nbytes != c->nbytes ||
		    t->shape.rank != c->shape.rank ||
		    memcmp(t->shape.dims, c->shape.dims,
			   (size_t)(t->shape.rank > 0 ? t->shape.rank : 0) * sizeof(*t->shape.dims)))
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: output '%s': the caller's memory is for %s, the run gave %s",
					    m->source, m->outputs[i].name,
					    tensor_str((enum npu_data_type)c->dtype, c->shape.rank,
						       c->shape.dims, c->nbytes, a, sizeof(a)),
					    tensor_str((enum npu_data_type)t->dtype, t->shape.rank,
						       t->shape.dims, t->nbytes, b, sizeof(b)));
		if (t->nbytes)
			memcpy(c->data, t->data, t->nbytes);
		s->io.output_copies++;
		s->io.output_copy_bytes += t->nbytes;
	}
	return NPU_OK;
}

/* In pick_device()'s avoid mask: a pipeline attempt of the run failed. */
#define PIPELINE_FAILED (1ull << 63)

/* Less modeled work outstanding, then fewer runs in flight. */
static bool lighter(const struct npu_model_device_load *a, const struct npu_model_device_load *b)
{
	uint64_t ai = atomic_load(&a->inflight), bi = atomic_load(&b->inflight);

	if (a->outstanding_cycles != b->outstanding_cycles)
		return a->outstanding_cycles < b->outstanding_cycles;
	return ai < bi;
}

/* Device k is among 'mask' and in rotation (a set has at most 16). */
static bool can_take(const struct npu_model *m, size_t k, uint64_t mask)
{
	return (mask >> k & 1) && !atomic_load(&m->load[k].out_of_rotation);
}

/*
 * The device of the model's set a run goes to: the one its device inputs
 * are on, else the allowed one with the least modeled work outstanding
 * (then the fewest runs in flight, then the first), which takes the run's
 * work (*work) until device_done(). Runs one after another thus stay on
 * the first device; runs at once spread. 'avoid': devices a failed
 * attempt of this run used. SIZE_MAX when no device is left to retry on
 * (a first attempt always gets one).
 */
static size_t pick_device(struct npu_session *s, struct npu_plan *plan, uint64_t avoid,
			  uint64_t *work)
{
	struct npu_model *m = s->model;
	size_t best = SIZE_MAX, k;
	int pass;

	*work = atomic_load(&plan->work_cycles);
	pthread_mutex_lock(&m->load_lock);
	/*
	 * A pipeline run takes every stage's work on its device. Device
	 * inputs pin a run to their device, a session's mask without every
	 * stage's device keeps it off the pipeline, and a pipeline that
	 * failed as a device fails runs again on one device (avoid's
	 * PIPELINE_FAILED).
	 */
	if (plan->seg_device && !s->pinned && !(avoid & PIPELINE_FAILED) &&
	    !atomic_load(&plan->pipeline_off) &&
	    (~s->device_mask & ((1ull << plan->parallel.stages) - 1)) == 0) {
		for (k = 0; k < plan->parallel.stages; k++) {
			m->load[k].outstanding_cycles += plan->stage_cycles[k];
			atomic_fetch_add(&m->load[k].inflight, 1);
		}
		pthread_mutex_unlock(&m->load_lock);
		return NPU_PLAN_PIPELINE;
	}
	avoid &= ~PIPELINE_FAILED;
	if (s->pinned) {
		best = avoid ? SIZE_MAX : s->pinned - 1;
	} else if (m->num_devs <= 1) {
		best = avoid ? SIZE_MAX : 0;
	} else {
		/* The session's devices; when they all failed, any other. */
		for (pass = 0; pass < 2 && best == SIZE_MAX; pass++)
			for (k = 0; k < m->num_devs; k++)
				if (can_take(m, k, (pass ? UINT64_MAX : s->device_mask) & ~avoid) &&
				    (best == SIZE_MAX || lighter(&m->load[k], &m->load[best])))
					best = k;
		/* All out of rotation: a first attempt still tries its own. */
		for (k = 0; best == SIZE_MAX && !avoid && k < m->num_devs; k++)
			if (s->device_mask >> k & 1)
				best = k;
	}
	if (best != SIZE_MAX) {
		m->load[best].outstanding_cycles += *work;
		atomic_fetch_add(&m->load[best].inflight, 1);
	}
	pthread_mutex_unlock(&m->load_lock);
	return best;
}

/* A failure that another device of the set may not have. */
static bool device_failure(npu_status st)
{
	return st == NPU_ERR_DEVICE || st == NPU_ERR_JOB_FAILED || st == NPU_ERR_TIMEOUT ||
	       st == NPU_ERR_NO_MEMORY;
}

/* A pipeline run ended: each stage's device gives its work back and counts what it did. */
static void pipeline_done(struct npu_model *m, struct npu_plan *plan, const struct plan_state *ps)
{
	const struct npu_compiled_run *r = ps ? npu_exec_compiled_run(ps->exec) : NULL;
	uint64_t cycles[NPU_DEVICE_SET_MAX] = { 0 };
	size_t i, k;

	pthread_mutex_lock(&m->load_lock);
	for (k = 0; k < plan->parallel.stages; k++)
		m->load[k].outstanding_cycles -= plan->stage_cycles[k];
	pthread_mutex_unlock(&m->load_lock);
	for (i = 0; r && i < r->c->num_segments; i++)
		cycles[r->seg_replica[i]] += npu_segment_rt_run_cycles(r->rts[i]);
	for (k = 0; k < plan->parallel.stages; k++) {
		atomic_fetch_sub(&m->load[k].inflight, 1);
		if (!ps)
			continue;
		atomic_fetch_add(&m->load[k].runs, 1);
		atomic_fetch_add(&m->load[k].modeled_cycles, cycles[k]);
	}
}

/* A run picked for 'device' ended; 'ps' after one that ran. */
static void device_done(struct npu_model *m, struct npu_plan *plan, size_t device,
			uint64_t work, const struct plan_state *ps)
{
	const struct npu_compiled_run *r = ps ? npu_exec_compiled_run(ps->exec) : NULL;
	uint64_t cycles = 0;
	size_t i;

	if (device == NPU_PLAN_PIPELINE) {
		pipeline_done(m, plan, ps);
		return;
	}
	pthread_mutex_lock(&m->load_lock);
	m->load[device].outstanding_cycles -= work;
	pthread_mutex_unlock(&m->load_lock);
	atomic_fetch_sub(&m->load[device].inflight, 1);
	if (!ps)
		return;
	for (i = 0; r && i < r->c->num_segments; i++)
		cycles += npu_segment_rt_run_cycles(r->rts[i]);
	atomic_fetch_add(&m->load[device].runs, 1);
	atomic_fetch_add(&m->load[device].modeled_cycles, cycles);
	if (cycles)	/* the measure of the next run's work */
		atomic_store(&ps->plan->work_cycles, cycles);
}

static npu_status run(struct npu_session *s, struct npu_plan *given,
		      const struct npu_host_tensor *inputs, size_t count,
		      const struct npu_run_options *o)
{
	struct npu_model *m = s->model;
	struct npu_tensor *ts = s->bound;
	const struct npu_tensor **ptrs = s->bound_ptrs;
	struct npu_shape *shapes = s->bound_shapes;
	struct npu_error err = { 0 };
	struct npu_plan *plan = given;
	struct plan_state *ps = NULL;
	void **aligned = s->aligned;
	bool timed = o->timings != 0, any_caller = false, own_plan = false;
	struct npu_cancel *cancel = o->cancel;
	size_t i, device = SIZE_MAX, failed = SIZE_MAX;
	uint64_t work = 0, avoid = 0;
	char first_error[NPU_ERROR_MSG_MAX];
	npu_status st;
	double t0;

	s->last_timed = false;
	s->io_valid = false;
	s->chose = false;
	s->pinned = 0;
	npu_io_stats_init(&s->io);
	if (atomic_load(&m->destroyed))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_run: the session's model (%s) was destroyed",
				    m->source);
	if (given && given->model != m)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_run_plan: the plan belongs to model %s, the session to %s",
				    given->model->source, m->source);
	/* Before binding and planning: a cancelled run compiles nothing. */
	if (npu_cancel_is_triggered(cancel))
		return npu_api_fail(NPU_ERR_CANCELLED,
				    "%s: run cancelled (npu_cancel_trigger) before it started",
				    m->source);
	if (o->num_device_inputs) {
		if (!o->device_inputs)
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: npu_run_options.device_inputs is NULL with num_device_inputs %zu",
					    m->source, o->num_device_inputs);
		if (count + o->num_device_inputs != m->num_inputs)
			return npu_api_fail(NPU_ERR_INVALID_ARG,
					    "%s: %zu host and %zu device inputs given, the model has %zu",
					    m->source, count, o->num_device_inputs, m->num_inputs);
		for (i = 0; i < count; i++)
			s->merged[i] = inputs[i];
		for (i = 0; i < o->num_device_inputs; i++) {
			st = device_input(m, i, &o->device_inputs[i], &s->merged[count + i],
					  &s->pinned);
			if (st)
				return st;
		}
		inputs = s->merged;
		count += o->num_device_inputs;
	}
	st = npu_model_bind_inputs(m, inputs, count, false, ts, ptrs);
	if (st)
		return st;
	for (i = 0; i < m->num_inputs; i++)
		shapes[i] = ptrs[i]->shape;
	/* Kernels read whole elements: misaligned input data is copied first. */
	for (i = 0; i < m->num_inputs; i++) {
		free(aligned[i]);	/* the last run's: its outputs are void now */
		aligned[i] = NULL;
	}
	for (i = 0; i < m->num_inputs; i++) {
		size_t esize = npu_dtype_size(ts[i].dtype);

		if (ts[i].nbytes && esize > 1 && (uintptr_t)ts[i].data % esize) {
			void *copy = npu_alloc_aligned(ts[i].nbytes);

			if (!copy) {
				st = npu_api_fail(NPU_ERR_NO_MEMORY, "out of memory");
				goto out;
			}
			memcpy(copy, ts[i].data, ts[i].nbytes);
			ts[i].data = copy;
			aligned[i] = copy;
			s->io.input_copies++;
			s->io.input_copy_bytes += ts[i].nbytes;
		} else {
			s->io.inputs_in_place++;
		}
	}
	s->io.device_inputs = o->num_device_inputs;
	if (given) {
		for (i = 0; i < m->num_inputs; i++)
			if (memcmp(&shapes[i], &given->shapes[i], sizeof(shapes[i]))) {
				char a[160], b[160];

				st = npu_api_fail(NPU_ERR_INVALID_ARG,
						  "%s: input '%s' has shape %s, the plan is for %s",
						  m->source, m->inputs[i].name,
						  npu_shape_str(&shapes[i], a, sizeof(a)),
						  npu_shape_str(&given->shapes[i], b, sizeof(b)));
				goto out;
			}
	} else {
		st = npu_model_plan_for(m, shapes, &plan);
		if (st)
			goto out;
		own_plan = true;
	}
	/*
	 * On a set of devices, a run that fails as a device fails (a job
	 * error, a hang the watchdog ended, a device out of memory) is run
	 * again on another; if that one succeeds, the first device is taken
	 * out of rotation. A run that fails everywhere is the run's fault.
	 */
	for (;;) {
		device = pick_device(s, plan, avoid, &work);
		if (device == SIZE_MAX)
			break;
		st = state_for(s, plan, device, &ps);
		if (!st) {
			s->cur = ps;
			st = bind_outputs(s, plan, o, &any_caller);
			if (!st && npu_exec_bind_outputs(ps->exec, o->num_outputs ? s->wanted : NULL,
							 any_caller ? s->out_caller_ptrs : NULL, &err))
				st = npu_api_fail_err(&err);
			if (st) {
				/* Nothing ran: the last run's outputs are gone, none chosen. */
				npu_exec_bind_outputs(ps->exec, NULL, NULL, &err);
				goto out;
			}
			s->chose = o->num_outputs != 0;
			t0 = now_s();
			npu_exec_set_cancel(ps->exec, cancel);
			st = npu_exec_run_timed(ps->exec, ptrs, timed, &err);
			npu_exec_set_cancel(ps->exec, NULL);
			s->last_run_s = now_s() - t0;
			if (st)
				npu_api_fail_err(&err);
		}
		device_done(m, plan, device, work, st ? NULL : ps);
		if (!st || !device_failure(st) || m->num_devs < 2 || s->pinned)
			break;
		if (device == NPU_PLAN_PIPELINE) {
			/* The run again on one device; the plan's later runs too. */
			if (!atomic_exchange(&plan->pipeline_off, true))
				npu_engine_log(m->engine, NPU_LOG_WARNING,
					       "%s: a pipeline run failed (%s); it and the runs after it run data parallel",
					       m->source, npu_last_error());
			avoid |= PIPELINE_FAILED;
			continue;
		}
		if (failed == SIZE_MAX) {
			failed = device;
			snprintf(first_error, sizeof(first_error), "%s", npu_last_error());
		}
		avoid |= 1ull << device;
		atomic_fetch_add(&m->load[device].failovers, 1);
	}
	device = SIZE_MAX;
	if (!st && failed != SIZE_MAX &&
	    !atomic_exchange(&m->load[failed].out_of_rotation, true))
		npu_engine_log(m->engine, NPU_LOG_WARNING,
			       "%s: device '%s' taken out of rotation: a run failed there and succeeded on '%s' (%s)",
			       m->source, m->dev_names[failed], m->dev_names[s->cur->device],
			       first_error);
	if (st)
		goto out;
	st = fill_caller_outputs(s, ps->exec);
	if (st)
		goto out;
	s->last_timed = timed;
	s->io.nodes_run = npu_exec_io(ps->exec)->nodes_run;
	s->io.nodes_skipped = npu_exec_io(ps->exec)->nodes_skipped;
	s->io_valid = true;
out:
	if (device != SIZE_MAX)		/* picked, never ran */
		device_done(m, plan, device, work, NULL);
	if (own_plan)
		npu_plan_unref(plan);	/* a state holds its own reference */
	return st;
}

NPU_API npu_status npu_session_run(struct npu_session *s, const struct npu_host_tensor *inputs,
				   size_t count)
{
	npu_status st;

	if (!s)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_run: session is NULL");
	if (!enter(s, "npu_session_run"))
		return NPU_ERR_BUSY;
	struct npu_run_options o;

	npu_run_options_init(&o);
	st = run(s, NULL, inputs, count, &o);
	leave(s);
	return st;
}

NPU_API npu_status npu_session_run_plan(struct npu_session *s, struct npu_plan *plan,
					const struct npu_host_tensor *inputs, size_t count)
{
	npu_status st;

	if (!s || !plan)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_run_plan: %s is NULL",
				    !s ? "session" : "plan");
	if (!enter(s, "npu_session_run_plan"))
		return NPU_ERR_BUSY;
	struct npu_run_options o;

	npu_run_options_init(&o);
	st = run(s, plan, inputs, count, &o);
	leave(s);
	return st;
}

NPU_API void npu_run_options_init_sized(struct npu_run_options *o, size_t size)
{
	struct npu_run_options d = { .struct_size = size };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

/* The caller's run options, checked; 'what' names the call in messages. */
static npu_status run_options(const struct npu_run_options *opts, struct npu_run_options *o,
			      const char *what)
{
	npu_status st;

	npu_run_options_init(o);
	if (opts) {
		st = npu_api_copy_options(o, sizeof(*o), opts, "npu_run_options");
		if (st)
			return st;
	}
	if (o->timings != 0 && o->timings != 1)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: npu_run_options.timings is %d, must be 0 or 1", what,
				    o->timings);
	return NPU_OK;
}

NPU_API npu_status npu_session_run_with(struct npu_session *s, struct npu_plan *plan,
					const struct npu_host_tensor *inputs, size_t count,
					const struct npu_run_options *opts)
{
	struct npu_run_options o;
	npu_status st;

	if (!s)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_run_with: session is NULL");
	st = run_options(opts, &o, "npu_session_run_with");
	if (st)
		return st;
	if (!enter(s, "npu_session_run_with"))
		return NPU_ERR_BUSY;
	st = run(s, plan, inputs, count, &o);
	leave(s);
	return st;
}

/* An async run: what npu_session_run_async() was given. */
struct async_run {
	struct npu_session *s;
	struct npu_plan *plan;		/* a reference, or NULL */
	struct npu_run_options opts;
	npu_run_callback done;
	void *arg;
	size_t count;
	struct npu_host_tensor inputs[];	/* the caller's array, copied */
};

/* On a run worker: run, report, then let waiters (and destroy) go on. */
static void async_run_job(void *arg)
{
	struct async_run *r = arg;
	struct npu_session *s = r->s;
	bool deferred;
	npu_status st;

	st = run(s, r->plan, r->count ? r->inputs : NULL, r->count, &r->opts);
	npu_plan_unref(r->plan);
	in_callback = s;
	r->done(st, s, r->arg);
	in_callback = NULL;
	free(r);
	pthread_mutex_lock(&s->async_lock);
	deferred = s->destroy_deferred;
	s->async_inflight = false;
	leave(s);
	pthread_cond_broadcast(&s->async_done);
	pthread_mutex_unlock(&s->async_lock);
	if (deferred)
		session_free(s);
}

NPU_API npu_status npu_session_run_async(struct npu_session *s, struct npu_plan *plan,
					 const struct npu_host_tensor *inputs, size_t count,
					 const struct npu_run_options *opts,
					 npu_run_callback done, void *arg)
{
	struct async_run *r;
	npu_status st;

	if (!s || !done)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_run_async: %s is NULL",
				    !s ? "session" : "the callback 'done'");
	if (count && !inputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_run_async: inputs is NULL with count %zu", count);
	if (count > s->model->num_inputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_run_async: %zu inputs given, model %s has %zu",
				    count, s->model->source, s->model->num_inputs);
	if (plan && plan->model != s->model)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_run_async: the plan belongs to model %s, the session to %s",
				    plan->model->source, s->model->source);
	if (atomic_load(&s->model->destroyed))
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_run_async: the session's model (%s) was destroyed",
				    s->model->source);
	r = calloc(1, sizeof(*r) + (count + 1) * sizeof(r->inputs[0]));
	if (!r)
		return npu_api_fail(NPU_ERR_NO_MEMORY, "npu_session_run_async: out of memory");
	st = run_options(opts, &r->opts, "npu_session_run_async");
	if (st) {
		free(r);
		return st;
	}
	r->s = s;
	r->done = done;
	r->arg = arg;
	r->count = count;
	if (count)
		memcpy(r->inputs, inputs, count * sizeof(*inputs));
	if (!enter(s, "npu_session_run_async")) {
		free(r);
		return NPU_ERR_BUSY;
	}
	if (plan) {
		npu_plan_ref(plan);
		r->plan = plan;
	}
	pthread_mutex_lock(&s->async_lock);
	s->async_inflight = true;
	pthread_mutex_unlock(&s->async_lock);
	st = npu_async_submit(s->model->engine, async_run_job, r);
	if (st) {
		pthread_mutex_lock(&s->async_lock);
		s->async_inflight = false;
		leave(s);
		pthread_cond_broadcast(&s->async_done);
		pthread_mutex_unlock(&s->async_lock);
		npu_plan_unref(r->plan);
		free(r);
	}
	return st;
}

NPU_API npu_status npu_session_wait(struct npu_session *s)
{
	if (!s)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_wait: session is NULL");
	if (in_callback == s)
		return npu_api_fail(NPU_ERR_BUSY,
				    "npu_session_wait: called from the session's own completion callback (its run ends when the callback returns)");
	pthread_mutex_lock(&s->async_lock);
	while (s->async_inflight)
		pthread_cond_wait(&s->async_done, &s->async_lock);
	pthread_mutex_unlock(&s->async_lock);
	return NPU_OK;
}

/* The steps of the last run if it was timed; else an error for 'what'. */
static npu_status last_steps(const struct npu_session *s, const char *what,
			     const struct npu_exec_step **steps, size_t *n,
			     uint64_t *start, uint64_t *end)
{
	if (!s)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "%s: session is NULL", what);
	*n = s->cur && s->last_timed ? npu_exec_steps(s->cur->exec, steps, start, end) : 0;
	if (!*n)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "%s: the last run of this session did not measure its steps (npu_session_run_with() with npu_run_options.timings = 1, and a run that succeeded)",
				    what);
	return NPU_OK;
}

NPU_API npu_status npu_session_run_timing(const struct npu_session *s,
					  struct npu_run_timing *out)
{
	struct npu_run_timing t = { .struct_size = sizeof(t) };
	const struct npu_compiled *c;
	const struct npu_exec_step *steps;
	uint64_t start, end;
	npu_status st;

	if (!out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_run_timing: timing is NULL");
	st = last_steps(s, "npu_session_run_timing", &steps, &t.steps, &start, &end);
	if (st)
		return st;
	t.start_ns = start;
	t.total_ns = end - start;
	c = s->cur->plan->compiled;
	t.clock_mhz = c && c->num_segments ? c->dev_info.clock_mhz : 0;
	return npu_api_copy_stats(out, &t, sizeof(t), "npu_run_timing");
}

NPU_API npu_status npu_session_step_timing(const struct npu_session *s, size_t index,
					   struct npu_step_timing *out)
{
	struct npu_step_timing t = { .struct_size = sizeof(t) };
	const struct npu_exec_step *steps, *e;
	uint64_t start, end;
	size_t n = 0;
	npu_status st;

	if (!out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_step_timing: step is NULL");
	st = last_steps(s, "npu_session_step_timing", &steps, &n, &start, &end);
	if (st)
		return st;
	if (index >= n)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_step_timing: the last run has %zu steps, not %zu",
				    n, index + 1);
	e = &steps[index];
	t.name = e->node->name;
	t.op_type = e->node->op_type;
	t.start_ns = e->start_ns - start;
	t.end_ns = e->end_ns - start;
	t.segment = -1;
	t.nodes = 1;
	if (npu_segment_node_compiled(e->node) && e->state) {
		const struct npu_segment_rt *rt = e->state;
		const struct npu_job_result *r = &rt->last;

		t.kind = NPU_STEP_NPU;
		t.segment = rt->seg->index;
		t.nodes = rt->seg->num_nodes;
		t.first_node = rt->seg->first_node;
		t.last_node = rt->seg->last_node;
		t.cycles = r->cycles;
		/* The device layer's clock is CLOCK_MONOTONIC too. */
		t.submit_ns = r->host_submit_ns > start ? r->host_submit_ns - start : 0;
		t.done_ns = r->host_complete_ns > start ? r->host_complete_ns - start : 0;
	} else {
		t.kind = NPU_STEP_CPU;
		t.first_node = t.last_node = e->node->name;
	}
	return npu_api_copy_stats(out, &t, sizeof(t), "npu_step_timing");
}

NPU_API npu_status npu_session_output(const struct npu_session *s, size_t index,
				      struct npu_host_tensor *out)
{
	const struct npu_tensor *t;

	if (!s || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_output: NULL argument");
	if (!s->cur)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_output: nothing has run yet");
	if (index >= s->model->num_outputs)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_output: %s has %zu outputs, not %zu",
				    s->model->source, s->model->num_outputs, index + 1);
	if (s->chose && !s->wanted[index])
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_output: output '%s' of %s was not computed: the last run chose its outputs (npu_run_options.outputs) without it",
				    s->model->outputs[index].name, s->model->source);
	t = npu_exec_output(s->cur->exec, index);
	if (!t)
		return npu_api_fail(NPU_ERR_INTERNAL, "npu_session_output: output %zu missing", index);
	memset(out, 0, sizeof(*out));
	out->name = s->model->outputs[index].name;
	out->dtype = (enum npu_data_type)t->dtype;
	out->rank = t->shape.rank;
	memcpy(out->dims, t->shape.dims, sizeof(out->dims));
	out->data = t->data;
	out->nbytes = t->nbytes;
	/* Bound to caller memory: that, whether its producer wrote it or the run copied it. */
	if (s->io_valid && s->out_caller_ptrs[index])
		out->data = s->out_caller_ptrs[index]->data;
	return NPU_OK;
}

NPU_API npu_status npu_session_io_stats(const struct npu_session *s, struct npu_io_stats *out)
{
	if (!s || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_io_stats: NULL argument");
	if (!s->io_valid)
		return npu_api_fail(NPU_ERR_INVALID_ARG,
				    "npu_session_io_stats: the session has no successful run");
	return npu_api_copy_stats(out, &s->io, sizeof(s->io), "npu_io_stats");
}

NPU_API size_t npu_session_last_device(const struct npu_session *s)
{
	return s && s->cur && s->cur->device != NPU_PLAN_PIPELINE ? s->cur->device : 0;
}

NPU_API const struct npu_plan *npu_session_plan(const struct npu_session *s)
{
	return s && s->cur ? s->cur->plan : NULL;
}

NPU_API double npu_session_last_run_seconds(const struct npu_session *s)
{
	return s ? s->last_run_s : 0;
}

NPU_API size_t npu_session_num_op_stats(const struct npu_session *s)
{
	const struct npu_op_stat *stats;

	if (!s || !s->cur)
		return 0;
	return npu_exec_op_stats(s->cur->exec, &stats);
}

NPU_API npu_status npu_session_op_stat(const struct npu_session *s, size_t index,
				       const char **op_type, size_t *nodes, uint64_t *calls,
				       double *total_ms)
{
	const struct npu_op_stat *stats;
	size_t n;

	if (!s || !s->cur)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_op_stat: nothing has run yet");
	n = npu_exec_op_stats(s->cur->exec, &stats);
	if (index >= n)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_op_stat: no statistic %zu",
				    index);
	if (op_type)
		*op_type = stats[index].op_type;
	if (nodes)
		*nodes = stats[index].nodes;
	if (calls)
		*calls = stats[index].calls;
	if (total_ms)
		*total_ms = stats[index].total_ms;
	return NPU_OK;
}

static const struct npu_compiled_run *cur_run(const struct npu_session *s)
{
	return s && s->cur ? npu_exec_compiled_run(s->cur->exec) : NULL;
}

static const struct npu_segment_rt *seg_rt(const struct npu_session *s, size_t i)
{
	const struct npu_compiled_run *r = cur_run(s);

	return r && i < r->c->num_segments ? r->rts[i] : NULL;
}

static void plan_stats(const struct npu_plan *p, struct npu_npu_stats *st)
{
	const struct npu_compiled *c = p->compiled;
	struct npu_arena_stats host;
	bool planned;
	size_t i;

	npu_exec_schedule_memory(p->exec, &planned, &host);
	st->host_arena_bytes = host.arena_bytes;
	st->host_sum_bytes = host.sum_bytes;
	st->host_lower_bound = host.lower_bound;
	if (!c)
		return;
	st->segments = c->num_segments;
	st->total_macs = c->total_macs;
	st->npu_macs = c->npu_macs;
	st->arena_bytes = c->arena_bytes;
	st->arena_sum_bytes = c->arena_sum_bytes;
	st->arena_lower_bound = c->arena_lower_bound;
	st->compile_ms = c->compile_ms;
	st->clock_mhz = c->num_segments ? c->dev_info.clock_mhz : 0;
	for (i = 0; i < c->num_segments; i++)
		st->ideal_mac_cycles += c->segments[i]->code.ideal_mac_cycles;
}

NPU_API npu_status npu_plan_npu_stats(const struct npu_plan *p, struct npu_npu_stats *out)
{
	struct npu_npu_stats st = { .struct_size = sizeof(st) };

	if (!p || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_plan_npu_stats: NULL argument");
	plan_stats(p, &st);
	return npu_api_copy_stats(out, &st, sizeof(st), "npu_npu_stats");
}

NPU_API npu_status npu_session_npu_stats(const struct npu_session *s, struct npu_npu_stats *out)
{
	struct npu_npu_stats st = { .struct_size = sizeof(st) };
	const struct npu_compiled *c;
	size_t i;

	if (!s || !out)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_npu_stats: NULL argument");
	if (!s->cur)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_npu_stats: nothing has run yet");
	plan_stats(s->cur->plan, &st);
	c = s->cur->plan->compiled;
	for (i = 0; c && i < c->num_segments; i++) {
		const struct npu_segment_rt *rt = seg_rt(s, i);

		/* Every job of the run: a Loop body's segment runs once per iteration. */
		st.last_cycles += npu_segment_rt_run_cycles(rt);
		st.last_npu_wall_ms += npu_segment_rt_run_wall_ms(rt);
		st.ideal_mac_cycles += c->segments[i]->code.ideal_mac_cycles *
				       (npu_segment_rt_run_jobs(rt) - 1);
	}
	return npu_api_copy_stats(out, &st, sizeof(st), "npu_npu_stats");
}

NPU_API npu_status npu_session_npu_segment(const struct npu_session *s, size_t index,
					   struct npu_segment_stats *out)
{
	struct npu_segment_stats st = { .struct_size = sizeof(st) };
	const struct npu_compiled *c = s && s->cur ? s->cur->plan->compiled : NULL;
	const struct npu_segment_rt *rt;
	const struct npu_segment *seg;

	if (!out || !c || index >= c->num_segments)
		return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_npu_segment: no segment %zu",
				    index);
	seg = c->segments[index];
	rt = seg_rt(s, index);
	st.nodes = seg->num_nodes;
	st.first_node = seg->first_node;
	st.last_node = seg->last_node;
	/* Per run: a Loop body's segment counts every iteration. */
	st.macs = seg->code.macs * npu_segment_rt_run_jobs(rt);
	st.ideal_mac_cycles = seg->code.ideal_mac_cycles * npu_segment_rt_run_jobs(rt);
	st.instructions = seg->code.instructions;
	st.dram_bytes = seg->code.dram_bytes * npu_segment_rt_run_jobs(rt);
	st.last_cycles = npu_segment_rt_run_cycles(rt);
	return npu_api_copy_stats(out, &st, sizeof(st), "npu_segment_stats");
}

NPU_API size_t npu_session_npu_num_ops(const struct npu_session *s)
{
	const struct npu_compiled *c = s && s->cur ? s->cur->plan->compiled : NULL;
	size_t i, n = 0;

	for (i = 0; c && i < c->num_segments; i++)
		n += c->segments[i]->prog.num_lops;
	return n;
}

NPU_API npu_status npu_session_npu_op(const struct npu_session *s, size_t index,
				      struct npu_op_stats *out)
{
	static const char *const kinds[] = { "conv", "matmul", "pool", "eltwise", "lut",
					     "resize", "copy" };
	const struct npu_compiled *c = s && s->cur ? s->cur->plan->compiled : NULL;
	size_t i;

	for (i = 0; out && c && i < c->num_segments; i++) {
		const struct npu_segment *seg = c->segments[i];
		const struct npu_segment_rt *rt = seg_rt(s, i);
		struct npu_op_stats st = { .struct_size = sizeof(st) };
		const struct npu_lop *l;

		if (index >= seg->prog.num_lops) {
			index -= seg->prog.num_lops;
			continue;
		}
		l = &seg->prog.lops[index];
		st.segment = seg->index;
		st.node = l->name;
		st.kind = l->kind == NPU_LOP_ROWS ?
			  (l->rows.opcode == NPU_OP_SOFTMAX ? "softmax" :
			   l->rows.opcode == NPU_OP_REDUCE ? "reduce" : "layernorm") :
			  (size_t)l->kind < sizeof(kinds) / sizeof(kinds[0]) ?
			  kinds[l->kind] : "other";
		st.macs = (seg->code.lop_macs ? seg->code.lop_macs[index] : 0) *
			  npu_segment_rt_run_jobs(rt);
		st.dram_bytes = (seg->code.lop_dram_bytes ? seg->code.lop_dram_bytes[index] : 0) *
				npu_segment_rt_run_jobs(rt);
		st.ideal_mac_cycles = (st.macs + NPU_MAC_ROWS * NPU_MAC_COLS - 1) /
				      (NPU_MAC_ROWS * NPU_MAC_COLS);
		st.fused = seg->code.lop_fused ? seg->code.lop_fused[index] : 0;
		st.predicted_cycles = (seg->code.lop_pred_cycles ?
				       seg->code.lop_pred_cycles[index] : 0) *
				      npu_segment_rt_run_jobs(rt);
		if (rt && rt->lop_cycles && npu_segment_rt_run_cycles(rt))
			st.cycles = rt->lop_cycles[index];
		return npu_api_copy_stats(out, &st, sizeof(st), "npu_op_stats");
	}
	return npu_api_fail(NPU_ERR_INVALID_ARG, "npu_session_npu_op: no NPU op %zu", index);
}
