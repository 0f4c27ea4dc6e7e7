// SPDX-License-Identifier: MIT
/*
 * npu_module.c - npu._npu, the CPython extension under the npu package
 * (npu/__init__.py gives it ONNX Runtime's interface). One Session type
 * over the public libnpu-user API: a model on its own engine, runs from
 * any thread with the GIL released (a pool of library sessions, one per
 * concurrent run), numpy arrays in and out.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <npu/npu_engine.h>
#include <npu/npu_model.h>
#include <npu/npu_plan.h>
#include <npu/npu_session.h>
#include <npu/npu_version.h>

typedef struct {
	PyObject_HEAD
	struct npu_engine *engine;
	struct npu_model *model;
	pthread_mutex_t lock;		/* the pool */
	struct npu_session **idle;	/* sessions no run holds */
	size_t num_idle, cap_idle;
	int running;			/* runs in flight */
	bool closed;
	struct npu_npu_stats last;	/* the last run's NPU figures (under lock) */
	struct npu_io_stats io;		/* ... and its copies */
	double last_seconds;
} SessionObject;

/* numpy's type for an element type, or -1. */
static int npy_type(enum npu_data_type t)
{
	switch (t) {
	case NPU_TYPE_FLOAT: return NPY_FLOAT32;
	case NPU_TYPE_DOUBLE: return NPY_FLOAT64;
	case NPU_TYPE_FLOAT16: return NPY_FLOAT16;
	case NPU_TYPE_UINT8: return NPY_UINT8;
	case NPU_TYPE_INT8: return NPY_INT8;
	case NPU_TYPE_UINT16: return NPY_UINT16;
	case NPU_TYPE_INT16: return NPY_INT16;
	case NPU_TYPE_INT32: return NPY_INT32;
	case NPU_TYPE_INT64: return NPY_INT64;
	case NPU_TYPE_UINT32: return NPY_UINT32;
	case NPU_TYPE_UINT64: return NPY_UINT64;
	case NPU_TYPE_BOOL: return NPY_BOOL;
	default: return -1;
	}
}

static PyObject *fail(PyObject *type)
{
	PyErr_SetString(type, npu_last_error());
	return NULL;
}

static int check_open(SessionObject *self)
{
	if (!self->closed)
		return 0;
	PyErr_SetString(PyExc_RuntimeError, "the session is closed");
	return -1;
}

/* Session(path, threads, device, providers, calib_dir, calib_random, shapes) */
static int session_init(SessionObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = { "path", "threads", "device", "providers", "calib_dir",
				 "calib_random", NULL };
	const char *path, *device = NULL, *providers = NULL, *calib_dir = NULL;
	int threads = 0, calib_random = 0;
	struct npu_engine_options eo;
	struct npu_model_options mo;
	npu_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|izzzp", names, &path, &threads, &device,
					 &providers, &calib_dir, &calib_random))
		return -1;
	if (self->engine) {
		PyErr_SetString(PyExc_RuntimeError, "Session.__init__ called twice");
		return -1;
	}
	if (threads < 0) {
		PyErr_Format(PyExc_ValueError, "threads %d: 0 (all cores) or more", threads);
		return -1;
	}
	npu_engine_options_init(&eo);
	eo.threads = threads;
	npu_model_options_init(&mo);
	if (device)
		mo.device = device;
	mo.providers = providers;
	mo.calib_dir = calib_dir;
	mo.calib_random = calib_random;
	Py_BEGIN_ALLOW_THREADS
	st = npu_engine_create(&eo, &self->engine);
	if (st == NPU_OK)
		st = npu_model_load_file(self->engine, path, &mo, &self->model);
	Py_END_ALLOW_THREADS
	if (st != NPU_OK) {
		PyErr_SetString(st == NPU_ERR_IO || st == NPU_ERR_NOT_FOUND ? PyExc_FileNotFoundError
			       : st == NPU_ERR_INVALID_ARG ? PyExc_ValueError : PyExc_RuntimeError,
			       npu_last_error());
		return -1;
	}
	pthread_mutex_init(&self->lock, NULL);
	return 0;
}

static void session_close_now(SessionObject *self)
{
	size_t i;

	for (i = 0; i < self->num_idle; i++)
		npu_session_destroy(self->idle[i]);
	PyMem_RawFree(self->idle);
	self->idle = NULL;
	self->num_idle = self->cap_idle = 0;
	npu_model_destroy(self->model);
	npu_engine_destroy(self->engine);
	self->model = NULL;
	self->engine = NULL;
	self->closed = true;
}

static void session_dealloc(SessionObject *self)
{
	if (self->engine) {
		session_close_now(self);
		pthread_mutex_destroy(&self->lock);
	}
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *session_close(SessionObject *self, PyObject *unused)
{
	(void)unused;
	if (self->closed || !self->engine)
		Py_RETURN_NONE;
	pthread_mutex_lock(&self->lock);
	if (self->running) {
		pthread_mutex_unlock(&self->lock);
		PyErr_SetString(PyExc_RuntimeError, "close: a run is in flight on another thread");
		return NULL;
	}
	self->closed = true;
	pthread_mutex_unlock(&self->lock);
	session_close_now(self);
	Py_RETURN_NONE;
}

/* One input's or output's description: (name, dtype number, [dims or names]). */
static PyObject *io_list(SessionObject *self, bool inputs)
{
	size_t n, i;
	PyObject *list;

	if (check_open(self))
		return NULL;
	n = inputs ? npu_model_num_inputs(self->model) : npu_model_num_outputs(self->model);
	list = PyList_New((Py_ssize_t)n);
	for (i = 0; list && i < n; i++) {
		struct npu_tensor_info info;
		PyObject *shape, *item;
		int d;

		if ((inputs ? npu_model_input_info(self->model, i, &info)
			    : npu_model_output_info(self->model, i, &info)) != NPU_OK) {
			Py_DECREF(list);
			return fail(PyExc_RuntimeError);
		}
		if (info.rank < 0) {
			shape = Py_None;
			Py_INCREF(shape);
		} else {
			shape = PyList_New(info.rank);
			for (d = 0; shape && d < info.rank; d++)
				PyList_SET_ITEM(shape, d,
						info.dims[d] >= 0 ? PyLong_FromLongLong(info.dims[d])
						: info.dim_names[d] ? PyUnicode_FromString(info.dim_names[d])
						: (Py_INCREF(Py_None), Py_None));
		}
		item = shape ? Py_BuildValue("(siN)", info.name, (int)info.dtype, shape) : NULL;
		if (!item) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, item);
	}
	return list;
}

static PyObject *session_inputs(SessionObject *self, PyObject *unused)
{
	(void)unused;
	return io_list(self, true);
}

static PyObject *session_outputs(SessionObject *self, PyObject *unused)
{
	(void)unused;
	return io_list(self, false);
}

/* An idle library session, or a new one; NULL with the error set. */
static struct npu_session *take_session(SessionObject *self)
{
	struct npu_session *s = NULL;

	pthread_mutex_lock(&self->lock);
	if (self->num_idle)
		s = self->idle[--self->num_idle];
	self->running++;
	pthread_mutex_unlock(&self->lock);
	if (!s && npu_session_create(self->model, NULL, &s) != NPU_OK) {
		pthread_mutex_lock(&self->lock);
		self->running--;
		pthread_mutex_unlock(&self->lock);
		return NULL;
	}
	return s;
}

static void give_back(SessionObject *self, struct npu_session *s, bool ran)
{
	pthread_mutex_lock(&self->lock);
	if (ran) {
		npu_npu_stats_init(&self->last);
		npu_session_npu_stats(s, &self->last);
		npu_io_stats_init(&self->io);
		npu_session_io_stats(s, &self->io);
		self->last_seconds = npu_session_last_run_seconds(s);
	}
	if (self->num_idle == self->cap_idle) {
		size_t cap = self->cap_idle ? self->cap_idle * 2 : 4;
		struct npu_session **l = PyMem_RawRealloc(self->idle, cap * sizeof(*l));

		if (l) {
			self->idle = l;
			self->cap_idle = cap;
		}
	}
	if (self->num_idle < self->cap_idle)
		self->idle[self->num_idle++] = s;
	else
		npu_session_destroy(s);
	self->running--;
	pthread_mutex_unlock(&self->lock);
}

/* The model's input index called 'name', or -1 with the error set. */
static Py_ssize_t input_index(SessionObject *self, const char *name)
{
	size_t i, n = npu_model_num_inputs(self->model);
	struct npu_tensor_info info;

	for (i = 0; i < n; i++)
		if (npu_model_input_info(self->model, i, &info) == NPU_OK && !strcmp(info.name, name))
			return (Py_ssize_t)i;
	PyErr_Format(PyExc_ValueError, "input_feed: the model has no input '%s'", name);
	return -1;
}

/* run(output_names or None, {name: array}) -> [arrays] */
static PyObject *session_run(SessionObject *self, PyObject *args)
{
	PyObject *names, *feed, *key, *value, *result = NULL;
	PyArrayObject **arrays = NULL;
	struct npu_host_tensor *ins = NULL, *bound = NULL;
	struct npu_plan *plan = NULL;
	struct npu_run_options ro;
	size_t n_in, i, n_out;
	Py_ssize_t pos = 0, *want = NULL, num_want;
	struct npu_session *s;
	npu_status st;
	int d;

	if (!PyArg_ParseTuple(args, "OO!", &names, &PyDict_Type, &feed))
		return NULL;
	if (check_open(self))
		return NULL;
	n_in = npu_model_num_inputs(self->model);
	n_out = npu_model_num_outputs(self->model);
	if ((size_t)PyDict_Size(feed) != n_in) {
		/* Name what is missing (an extra name is reported below). */
		for (i = 0; i < n_in; i++) {
			struct npu_tensor_info info;

			npu_model_input_info(self->model, i, &info);
			if (!PyDict_GetItemString(feed, info.name)) {
				PyErr_Format(PyExc_ValueError, "input_feed: input '%s' is missing",
					     info.name);
				return NULL;
			}
		}
	}
	arrays = PyMem_Calloc(n_in + 1, sizeof(*arrays));
	ins = PyMem_Calloc(n_in + 1, sizeof(*ins));
	want = PyMem_Calloc(n_out + 1, sizeof(*want));
	if (!arrays || !ins || !want) {
		PyErr_NoMemory();
		goto out;
	}
	while (PyDict_Next(feed, &pos, &key, &value)) {
		const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		struct npu_tensor_info info;
		Py_ssize_t k;
		int want_type;

		if (!name) {
			PyErr_SetString(PyExc_TypeError, "input_feed: keys are input names (str)");
			goto out;
		}
		k = input_index(self, name);
		if (k < 0)
			goto out;
		npu_model_input_info(self->model, (size_t)k, &info);
		want_type = npy_type(info.dtype);
		if (want_type < 0) {
			PyErr_Format(PyExc_TypeError, "input '%s': type %s is not supported from Python",
				     name, npu_data_type_name(info.dtype));
			goto out;
		}
		if (!PyArray_Check(value) && !PyArray_IsScalar(value, Generic) &&
		    !PyList_Check(value) && !PyFloat_Check(value) && !PyLong_Check(value)) {
			PyErr_Format(PyExc_TypeError, "input '%s': expected a numpy array, got %s",
				     name, Py_TYPE(value)->tp_name);
			goto out;
		}
		if (PyArray_Check(value) &&
		    PyArray_TYPE((PyArrayObject *)value) != want_type) {
			PyErr_Format(PyExc_TypeError,
				     "input '%s': the model takes %s, the array is %s (convert it with astype)",
				     name, npu_data_type_name(info.dtype),
				     PyArray_DESCR((PyArrayObject *)value)->typeobj->tp_name);
			goto out;
		}
		/* C order, aligned: no copy when it already is (ONNX Runtime copies too). */
		arrays[k] = (PyArrayObject *)PyArray_FromAny(value, PyArray_DescrFromType(want_type),
							     0, 0, NPY_ARRAY_CARRAY_RO, NULL);
		if (!arrays[k])
			goto out;
		if (PyArray_NDIM(arrays[k]) > NPU_MODEL_MAX_RANK) {
			PyErr_Format(PyExc_ValueError, "input '%s': rank %d (at most %d)", name,
				     PyArray_NDIM(arrays[k]), NPU_MODEL_MAX_RANK);
			goto out;
		}
		ins[k].name = info.name;
		ins[k].dtype = info.dtype;
		ins[k].rank = PyArray_NDIM(arrays[k]);
		for (d = 0; d < ins[k].rank; d++)
			ins[k].dims[d] = PyArray_DIM(arrays[k], d);
		ins[k].data = PyArray_DATA(arrays[k]);
		ins[k].nbytes = (size_t)PyArray_NBYTES(arrays[k]);
	}
	/* Which outputs, by name (None: all). */
	if (names == Py_None) {
		num_want = (Py_ssize_t)n_out;
		for (i = 0; i < n_out; i++)
			want[i] = (Py_ssize_t)i;
	} else {
		PyObject *seq = PySequence_Fast(names, "output_names: a list of names or None");

		if (!seq)
			goto out;
		num_want = PySequence_Fast_GET_SIZE(seq);
		if ((size_t)num_want > n_out) {
			Py_DECREF(seq);
			PyErr_Format(PyExc_ValueError, "output_names: %zd names, the model has %zu outputs",
				     num_want, n_out);
			goto out;
		}
		for (pos = 0; pos < num_want; pos++) {
			PyObject *o = PySequence_Fast_GET_ITEM(seq, pos);
			const char *name = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
			struct npu_tensor_info info;

			want[pos] = -1;
			for (i = 0; name && i < n_out; i++)
				if (npu_model_output_info(self->model, i, &info) == NPU_OK &&
				    !strcmp(info.name, name))
					want[pos] = (Py_ssize_t)i;
			if (want[pos] < 0) {
				PyErr_Format(PyExc_ValueError, "output_names: the model has no output '%s'",
					     name ? name : "(not a str)");
				Py_DECREF(seq);
				goto out;
			}
		}
		Py_DECREF(seq);
	}
	/*
	 * The plan for these shapes gives the outputs' shapes: those fully
	 * known are allocated as arrays first and written in place by the run
	 * (IO binding: no copy); the others (sized by the data) are copied
	 * after. Only the outputs asked for are computed.
	 */
	Py_BEGIN_ALLOW_THREADS
	st = npu_model_get_plan(self->model, ins, n_in, &plan);
	Py_END_ALLOW_THREADS
	if (st != NPU_OK) {
		PyErr_SetString(st == NPU_ERR_INVALID_ARG ? PyExc_ValueError : PyExc_RuntimeError,
				npu_last_error());
		goto out;
	}
	result = PyList_New(num_want);
	bound = PyMem_Calloc((size_t)num_want + 1, sizeof(*bound));
	if (!result || !bound) {
		if (result)
			PyErr_NoMemory();
		goto fail;
	}
	for (pos = 0; pos < num_want; pos++) {
		struct npu_tensor_info info;
		npy_intp dims[NPU_MODEL_MAX_RANK];
		bool known;
		PyObject *a;
		int t;

		npu_plan_output_info(plan, (size_t)want[pos], &info);
		bound[pos].name = info.name;
		t = npy_type(info.dtype);
		known = t >= 0 && info.rank >= 0;
		for (d = 0; known && d < info.rank; d++)
			known = info.dims[d] >= 0;
		if (!known)
			continue;	/* chosen, copied after the run */
		for (d = 0; d < info.rank; d++)
			dims[d] = (npy_intp)info.dims[d];
		a = PyArray_SimpleNew(info.rank, dims, t);
		if (!a)
			goto fail;
		PyList_SET_ITEM(result, pos, a);
		bound[pos].dtype = info.dtype;
		bound[pos].rank = info.rank;
		memcpy(bound[pos].dims, info.dims, sizeof(bound[pos].dims));
		bound[pos].data = PyArray_DATA((PyArrayObject *)a);
		bound[pos].nbytes = (size_t)PyArray_NBYTES((PyArrayObject *)a);
	}
	s = take_session(self);
	if (!s) {
		fail(PyExc_RuntimeError);
		goto fail;
	}
	npu_run_options_init(&ro);
	ro.outputs = bound;
	ro.num_outputs = (size_t)num_want;
	Py_BEGIN_ALLOW_THREADS
	st = num_want ? npu_session_run_with(s, plan, ins, n_in, &ro)
		      : npu_session_run_plan(s, plan, ins, n_in);
	Py_END_ALLOW_THREADS
	if (st != NPU_OK) {
		PyErr_SetString(st == NPU_ERR_INVALID_ARG ? PyExc_ValueError : PyExc_RuntimeError,
				npu_last_error());
		give_back(self, s, false);
		goto fail;
	}
	for (pos = 0; pos < num_want; pos++) {
		struct npu_host_tensor out;
		npy_intp dims[NPU_MODEL_MAX_RANK];
		PyObject *a;
		int t;

		if (bound[pos].data)
			continue;	/* written in place */
		if (npu_session_output(s, (size_t)want[pos], &out) != NPU_OK) {
			fail(PyExc_RuntimeError);
			give_back(self, s, true);
			goto fail;
		}
		t = npy_type(out.dtype);
		if (t < 0) {
			PyErr_Format(PyExc_TypeError, "output '%s': type %s is not supported from Python",
				     out.name, npu_data_type_name(out.dtype));
			give_back(self, s, true);
			goto fail;
		}
		for (d = 0; d < out.rank; d++)
			dims[d] = (npy_intp)out.dims[d];
		a = PyArray_SimpleNew(out.rank, dims, t);
		if (!a) {
			give_back(self, s, true);
			goto fail;
		}
		if (out.nbytes)
			memcpy(PyArray_DATA((PyArrayObject *)a), out.data, out.nbytes);
		PyList_SET_ITEM(result, pos, a);
	}
	give_back(self, s, true);
	goto out;
fail:
	Py_CLEAR(result);
out:
	npu_plan_release(plan);
	PyMem_Free(bound);
	for (i = 0; arrays && i < n_in; i++)
		Py_XDECREF(arrays[i]);
	PyMem_Free(arrays);
	PyMem_Free(ins);
	PyMem_Free(want);
	return result;
}

/* The last run's figures: wall seconds, modeled NPU cycles and clock, segments. */
static PyObject *session_last_run(SessionObject *self, PyObject *unused)
{
	PyObject *r;

	(void)unused;
	if (check_open(self))
		return NULL;
	pthread_mutex_lock(&self->lock);
	r = Py_BuildValue("{s:d,s:K,s:I,s:n,s:K,s:K,s:K,s:K,s:K,s:K}", "seconds", self->last_seconds,
			  "npu_cycles", (unsigned long long)self->last.last_cycles,
			  "clock_mhz", (unsigned int)self->last.clock_mhz,
			  "segments", (Py_ssize_t)self->last.segments,
			  "npu_macs", (unsigned long long)self->last.npu_macs,
			  "total_macs", (unsigned long long)self->last.total_macs,
			  "outputs_in_place", (unsigned long long)self->io.outputs_in_place,
			  "output_copies", (unsigned long long)self->io.output_copies,
			  "nodes_run", (unsigned long long)self->io.nodes_run,
			  "nodes_skipped", (unsigned long long)self->io.nodes_skipped);
	pthread_mutex_unlock(&self->lock);
	return r;
}

/* placement({input: shape}) -> [(node, op_type, provider, reason)] for those shapes. */
static PyObject *session_placement(SessionObject *self, PyObject *args)
{
	PyObject *shapes, *key, *value, *list = NULL;
	struct npu_host_tensor *in = NULL;
	struct npu_plan *plan = NULL;
	Py_ssize_t pos = 0;
	size_t n, i;
	npu_status st;

	if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &shapes) || check_open(self))
		return NULL;
	n = (size_t)PyDict_Size(shapes);
	in = PyMem_Calloc(n + 1, sizeof(*in));
	if (!in)
		return PyErr_NoMemory();
	for (i = 0; PyDict_Next(shapes, &pos, &key, &value); i++) {
		PyObject *seq = PySequence_Fast(value, "placement: shapes are sequences of ints");
		Py_ssize_t d;

		if (!seq || !PyUnicode_Check(key) ||
		    PySequence_Fast_GET_SIZE(seq) > NPU_MODEL_MAX_RANK) {
			Py_XDECREF(seq);
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_ValueError, "placement: {name: [dims]}");
			goto out;
		}
		in[i].name = PyUnicode_AsUTF8(key);
		in[i].rank = (int)PySequence_Fast_GET_SIZE(seq);
		for (d = 0; d < in[i].rank; d++)
			in[i].dims[d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, d));
		Py_DECREF(seq);
		if (PyErr_Occurred())
			goto out;
	}
	Py_BEGIN_ALLOW_THREADS
	st = npu_model_get_plan(self->model, in, n, &plan);
	Py_END_ALLOW_THREADS
	if (st != NPU_OK) {
		fail(PyExc_ValueError);
		goto out;
	}
	list = PyList_New((Py_ssize_t)npu_plan_num_placements(plan));
	for (i = 0; list && i < npu_plan_num_placements(plan); i++) {
		struct npu_node_placement pl;
		PyObject *t;

		npu_plan_placement(plan, i, &pl);
		t = Py_BuildValue("(ssss)", pl.node, pl.op_type,
				  npu_plan_placement_provider(plan, i), pl.reason);
		if (!t) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, t);
	}
out:
	npu_plan_release(plan);
	PyMem_Free(in);
	return list;
}

/* save_compiled(path): the plan of the last run, as a compiled model (.npub). */
static PyObject *session_save_compiled(SessionObject *self, PyObject *args)
{
	const char *path;
	const struct npu_plan *plan = NULL;
	npu_status st;

	if (!PyArg_ParseTuple(args, "s", &path) || check_open(self))
		return NULL;
	pthread_mutex_lock(&self->lock);
	if (self->num_idle)
		plan = npu_session_plan(self->idle[self->num_idle - 1]);
	if (!plan) {
		pthread_mutex_unlock(&self->lock);
		PyErr_SetString(PyExc_RuntimeError, "save_compiled: run the model once first (it compiles for those shapes)");
		return NULL;
	}
	st = npu_plan_save_compiled(plan, path);
	pthread_mutex_unlock(&self->lock);
	if (st != NPU_OK)
		return fail(PyExc_RuntimeError);
	Py_RETURN_NONE;
}

static PyObject *session_device(SessionObject *self, PyObject *unused)
{
	(void)unused;
	if (check_open(self))
		return NULL;
	return PyUnicode_FromString(npu_model_device(self->model));
}

static PyMethodDef session_methods[] = {
	{ "inputs", (PyCFunction)session_inputs, METH_NOARGS, "[(name, dtype, shape)]" },
	{ "outputs", (PyCFunction)session_outputs, METH_NOARGS, "[(name, dtype, shape)]" },
	{ "run", (PyCFunction)session_run, METH_VARARGS, "run(output_names, feed) -> [arrays]" },
	{ "last_run", (PyCFunction)session_last_run, METH_NOARGS, "the last run's figures" },
	{ "placement", (PyCFunction)session_placement, METH_VARARGS,
	  "placement({input: shape}) -> [(node, op_type, provider, reason)]" },
	{ "device", (PyCFunction)session_device, METH_NOARGS, "the NPU device, or 'cpu'" },
	{ "save_compiled", (PyCFunction)session_save_compiled, METH_VARARGS,
	  "save_compiled(path): the last run's plan as a .npub" },
	{ "close", (PyCFunction)session_close, METH_NOARGS, "free the model now" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject SessionType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "npu._npu.Session",
	.tp_basicsize = sizeof(SessionObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A model loaded by libnpu-user, on its own engine.",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)session_init,
	.tp_dealloc = (destructor)session_dealloc,
	.tp_methods = session_methods,
};

static PyObject *module_version(PyObject *m, PyObject *unused)
{
	(void)m;
	(void)unused;
	return PyUnicode_FromString(npu_version());
}

static PyObject *module_type_name(PyObject *m, PyObject *args)
{
	int t;

	(void)m;
	if (!PyArg_ParseTuple(args, "i", &t))
		return NULL;
	return PyUnicode_FromString(npu_data_type_name((enum npu_data_type)t));
}

static PyMethodDef module_methods[] = {
	{ "version", module_version, METH_NOARGS, "libnpu-user's version" },
	{ "type_name", module_type_name, METH_VARARGS, "an element type's name" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef npu_module = {
	PyModuleDef_HEAD_INIT, "npu._npu", "libnpu-user from Python (use the npu package)", -1,
	module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__npu(void)
{
	PyObject *m;

	import_array();
	if (PyType_Ready(&SessionType) < 0)
		return NULL;
	m = PyModule_Create(&npu_module);
	if (!m)
		return NULL;
	Py_INCREF(&SessionType);
	if (PyModule_AddObject(m, "Session", (PyObject *)&SessionType) < 0) {
		Py_DECREF(&SessionType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
