// SPDX-License-Identifier: MIT
/*
 * npu onnx-test: run ONNX backend test directories (model.onnx +
 * test_data_set_N/{input,output}_K.pb) and compare with ONNX Runtime's
 * backend-test tolerances: |got - expected| <= atol + rtol * |expected|
 * for floating point (rtol 1e-3, atol 1e-5), exact for ints and bools.
 *
 * On an NPU device (sim, accel) the model is compiled to int8: it is
 * calibrated on the test's own inputs, every NPU-capable node stays on the
 * NPU however small, and float outputs pass within the int8 tolerance
 * |got - expected| <= 5% of the expected output's scale + 1e-5, the scale
 * being the larger of its range (max - min) and its largest magnitude. A test
 * where no node runs on the NPU is skipped: it would not test the NPU.
 * Unsupported ops / types / attributes are skips; wrong numbers fail.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "npu-tools/onnx_data.h"
#include "npu/npu_model.h"
#include "npu_cli.h"

#define RTOL 1e-3
#define ATOL 1e-5
#define MAX_IO 64

enum verdict { V_PASS, V_FAIL, V_SKIP };

#define INT8_RANGE_TOL 0.05	/* of the expected output's scale */

struct test_opts {
	const char *device;
	int threads;
	int verbose;
	int isolate;
};

/*
 * Tests whose expected outputs no correct implementation reproduces: they
 * are skipped with the defect as the reason (an expectation list, as ONNX
 * Runtime keeps one), so a correct engine neither fails nor hides them.
 */
static const struct {
	const char *test;
	const char *reason;
} known_defects[] = {
	{ "test_adam_multiple",
	  "test data defect: expects Adam with epsilon = 1e-2, the node leaves epsilon at its default 0 (onnx issue #7749)" },
#define UNSEEDED "random output: the node has no seed and the expected data is one draw of numpy's global generator"
#define SEED_IGNORED "random output: the reference drew from numpy's global generator, ignoring the node's seed"
	{ "test_bernoulli", UNSEEDED },
	{ "test_bernoulli_double", UNSEEDED },
	{ "test_bernoulli_expanded", UNSEEDED },
	{ "test_bernoulli_double_expanded", UNSEEDED },
	{ "test_bernoulli_seed", SEED_IGNORED },
	{ "test_bernoulli_seed_expanded", SEED_IGNORED },
#undef UNSEEDED
#undef SEED_IGNORED
};

static const char *known_defect(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(known_defects) / sizeof(known_defects[0]); i++)
		if (!strcmp(name, known_defects[i].test))
			return known_defects[i].reason;
	return NULL;
}

static int is_dir(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode);
}

/* snprintf into a path buffer; a too-long path is an empty string. */
static __attribute__((format(printf, 3, 4))) void path_fmt(char *out, size_t size,
						   const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		out[0] = '\0';
}

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff, bits;
	float f;

	if (exp == 0) {
		f = ldexpf((float)mant, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000u | (mant << 13);
	else
		bits = sign | ((exp + 112) << 23) | (mant << 13);
	memcpy(&f, &bits, sizeof(f));
	return f;
}

static double elem(const void *data, enum npu_data_type t, size_t i)
{
	switch (t) {
	case NPU_TYPE_FLOAT: return ((const float *)data)[i];
	case NPU_TYPE_DOUBLE: return ((const double *)data)[i];
	case NPU_TYPE_FLOAT16: return half_to_float(((const uint16_t *)data)[i]);
	case NPU_TYPE_BFLOAT16: {
		uint32_t u = (uint32_t)((const uint16_t *)data)[i] << 16;
		float f;

		memcpy(&f, &u, sizeof(f));
		return f;
	}
	case NPU_TYPE_INT8: return ((const int8_t *)data)[i];
	case NPU_TYPE_UINT8: return ((const uint8_t *)data)[i];
	case NPU_TYPE_BOOL: return ((const uint8_t *)data)[i] != 0;
	case NPU_TYPE_INT16: return ((const int16_t *)data)[i];
	case NPU_TYPE_UINT16: return ((const uint16_t *)data)[i];
	case NPU_TYPE_INT32: return ((const int32_t *)data)[i];
	case NPU_TYPE_UINT32: return ((const uint32_t *)data)[i];
	case NPU_TYPE_INT64: return (double)((const int64_t *)data)[i];
	case NPU_TYPE_UINT64: return (double)((const uint64_t *)data)[i];
	default: return 0;
	}
}

static bool exact_type(enum npu_data_type t)
{
	return t != NPU_TYPE_FLOAT && t != NPU_TYPE_DOUBLE &&
	       t != NPU_TYPE_FLOAT16 && t != NPU_TYPE_BFLOAT16;
}

static bool int_equal(const void *a, const void *b, enum npu_data_type t, size_t i)
{
	size_t es = npu_data_type_size(t);

	if (t == NPU_TYPE_BOOL)
		return (((const uint8_t *)a)[i] != 0) == (((const uint8_t *)b)[i] != 0);
	return !memcmp((const char *)a + i * es, (const char *)b + i * es, es);
}

static void index_text(const struct npu_host_tensor *t, size_t flat, char *buf,
		       size_t size)
{
	size_t idx[NPU_MODEL_MAX_RANK], len = 0;
	int d;

	for (d = t->rank - 1; d >= 0; d--) {
		size_t dim = t->dims[d] > 0 ? (size_t)t->dims[d] : 1;

		idx[d] = flat % dim;
		flat /= dim;
	}
	len += (size_t)snprintf(buf, size, "[");
	for (d = 0; d < t->rank && len < size; d++)
		len += (size_t)snprintf(buf + len, size - len, "%s%zu",
					d ? "," : "", idx[d]);
	if (len < size)
		snprintf(buf + len, size - len, "]");
}

/* "1x3x4", "scalar", "?" for an unknown dim. */
static const char *shape_text(const struct npu_host_tensor *t, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	if (!size)
		return buf;
	buf[0] = '\0';
	if (t->rank == 0) {
		snprintf(buf, size, "scalar");
		return buf;
	}
	for (i = 0; i < t->rank && len < size; i++) {
		int n;

		if (t->dims[i] < 0)
			n = snprintf(buf + len, size - len, "%s?", i ? "x" : "");
		else
			n = snprintf(buf + len, size - len, "%s%lld", i ? "x" : "",
				     (long long)t->dims[i]);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	return buf;
}

static size_t numel(const struct npu_host_tensor *t)
{
	size_t n = 1;
	int d;

	for (d = 0; d < t->rank; d++)
		n *= t->dims[d] > 0 ? (size_t)t->dims[d] : 0;
	return n;
}

/* 0 when 'got' matches 'exp'; else writes the reason into msg. */
/*
 * The int8 tolerance of a float output: a share of its scale, the larger of
 * its range and its largest magnitude (a one-element output has no range).
 */
static double int8_tolerance(const struct npu_host_tensor *exp)
{
	size_t n = numel(exp), i;
	double lo = INFINITY, hi = -INFINITY, scale;

	for (i = 0; i < n; i++) {
		double e = elem(exp->data, exp->dtype, i);

		if (isfinite(e)) {
			lo = e < lo ? e : lo;
			hi = e > hi ? e : hi;
		}
	}
	if (hi < lo)
		return ATOL;
	scale = fmax(hi - lo, fmax(fabs(lo), fabs(hi)));
	return INT8_RANGE_TOL * scale + ATOL;
}

static int compare(const char *name, const struct npu_host_tensor *exp,
		   const struct npu_host_tensor *got, bool int8, char *msg,
		   size_t size);

/* Sequences and optionals: the same number of items, each compared. */
static int compare_container(const char *name, const struct npu_host_tensor *exp,
			     const struct npu_host_tensor *got, bool int8, char *msg,
			     size_t size)
{
	size_t ne, ng, i;
	char item_name[300];

	if (npu_sequence_length(exp, &ne) || npu_sequence_length(got, &ng)) {
		snprintf(msg, size, "output '%s': %s", name, npu_last_error());
		return 1;
	}
	if (ne != ng) {
		snprintf(msg, size, "output '%s' has %zu items, expected %zu", name, ng, ne);
		return 1;
	}
	for (i = 0; i < ne; i++) {
		struct npu_host_tensor ei, gi;

		npu_sequence_item(exp, i, &ei);
		npu_sequence_item(got, i, &gi);
		snprintf(item_name, sizeof(item_name), "%s[%zu]", name, i);
		if (compare(item_name, &ei, &gi, int8, msg, size))
			return 1;
	}
	return 0;
}

/* String tensors: every string byte for byte. */
static int compare_strings(const char *name, const struct npu_host_tensor *exp,
			   const struct npu_host_tensor *got, size_t n, char *msg, size_t size)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const char *e, *g;
		size_t el, gl;
		char at[160];

		if (npu_string_tensor_get(exp, i, &e, &el) != NPU_OK) {
			snprintf(msg, size, "expected output: %s", npu_last_error());
			return 1;
		}
		if (npu_string_tensor_get(got, i, &g, &gl) != NPU_OK) {
			snprintf(msg, size, "output '%s': %s", name, npu_last_error());
			return 1;
		}
		if (el != gl || memcmp(e, g, el)) {
			index_text(exp, i, at, sizeof(at));
			snprintf(msg, size, "output '%s' at %s is \"%.*s\", expected \"%.*s\"", name,
				 at, (int)(gl > 60 ? 60 : gl), g, (int)(el > 60 ? 60 : el), e);
			return 1;
		}
	}
	return 0;
}

static int compare(const char *name, const struct npu_host_tensor *exp,
		   const struct npu_host_tensor *got, bool int8, char *msg,
		   size_t size)
{
	char a[160], b[160], at[160];
	size_t n, i, worst = SIZE_MAX, bad = 0;
	double worst_err = -1, tol8 = 0;

	if (got->dtype == exp->dtype &&
	    (exp->dtype == NPU_TYPE_SEQUENCE || exp->dtype == NPU_TYPE_OPTIONAL))
		return compare_container(name, exp, got, int8, msg, size);
	if (got->dtype != exp->dtype) {
		snprintf(msg, size, "output '%s' is %s, expected %s", name,
			 npu_data_type_name(got->dtype), npu_data_type_name(exp->dtype));
		return 1;
	}
	if (got->rank != exp->rank ||
	    memcmp(got->dims, exp->dims, sizeof(int64_t) * (size_t)got->rank)) {
		snprintf(msg, size, "output '%s' has shape %s, expected %s", name,
			 shape_text(got, a, sizeof(a)), shape_text(exp, b, sizeof(b)));
		return 1;
	}
	n = numel(exp);
	if (exp->dtype == NPU_TYPE_STRING)
		return compare_strings(name, exp, got, n, msg, size);
	if (int8 && !exact_type(exp->dtype))
		tol8 = int8_tolerance(exp);
	for (i = 0; i < n; i++) {
		double e = elem(exp->data, exp->dtype, i);
		double g = elem(got->data, exp->dtype, i);
		double err;
		bool ok;

		if (exact_type(exp->dtype)) {
			ok = int_equal(exp->data, got->data, exp->dtype, i);
			err = fabs(g - e);
		} else if (isnan(e) || isnan(g)) {
			ok = isnan(e) && isnan(g);
			err = ok ? 0 : INFINITY;
		} else if (isinf(e) || isinf(g)) {
			ok = e == g;
			err = ok ? 0 : INFINITY;
		} else {
			err = fabs(g - e);
			ok = int8 ? err <= tol8 : err <= ATOL + RTOL * fabs(e);
		}
		if (!ok) {
			bad++;
			if (err > worst_err || worst == SIZE_MAX) {
				worst_err = err;
				worst = i;
			}
		}
	}
	if (!bad)
		return 0;
	index_text(exp, worst, at, sizeof(at));
	snprintf(msg, size,
		 "output '%s' max abs err %.6g at %s (expected %.9g, got %.9g; %zu of %zu elements off)",
		 name, worst_err, at, elem(exp->data, exp->dtype, worst),
		 elem(got->data, exp->dtype, worst), bad, n);
	return 1;
}

/* Strip a leading "<model path>: " from a message. */
static const char *short_msg(const char *msg, const char *model)
{
	size_t len = strlen(model);

	if (!strncmp(msg, model, len) && msg[len] == ':' && msg[len + 1] == ' ')
		return msg + len + 2;
	return msg;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in 'dir' that start with 'prefix' (NULL-terminated). */
static char **list_dir(const char *dir, const char *prefix, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;

	*count = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		if (n + 1 >= cap) {
			char **nn;

			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*nn));
			if (!nn)
				break;
			names = nn;
		}
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	if (names) {
		qsort(names, n, sizeof(*names), cmp_str);
		names[n] = NULL;
	}
	*count = n;
	return names;
}

static void free_list(char **names, size_t n)
{
	size_t i;

	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

/* rm -r of a calibration directory (two levels at most). */
static void remove_tree(const char *dir)
{
	size_t n, i;
	char **names = list_dir(dir, "", &n);
	char path[4096];

	for (i = 0; i < n; i++) {
		path_fmt(path, sizeof(path), "%s/%s", dir, names[i]);
		if (is_dir(path))
			remove_tree(path);
		else
			unlink(path);
	}
	free_list(names, n);
	rmdir(dir);
}

/*
 * The test's inputs as the calibration set of an NPU compilation (which
 * the model defers to its first run): calib/0.npy for one input, else
 * calib/0/<input name>.npy.
 */
static int write_calibration(const struct npu_model *m, const char *calib,
			     const struct npu_host_tensor *hs, size_t n_in,
			     char *msg, size_t size)
{
	char path[4096];
	size_t i;

	if (n_in > 1) {
		path_fmt(path, sizeof(path), "%s/0", calib);
		if (mkdir(path, 0700)) {
			snprintf(msg, size, "%.900s: %s", path, strerror(errno));
			return -1;
		}
	}
	for (i = 0; i < n_in; i++) {
		struct npu_tensor_info info;
		const char *name = hs[i].name;

		if (!name && npu_model_input_info(m, i, &info) == NPU_OK)
			name = info.name;
		if (n_in == 1)
			path_fmt(path, sizeof(path), "%s/0.npy", calib);
		else
			path_fmt(path, sizeof(path), "%s/0/%s.npy", calib, name ? name : "?");
		if (npu_tensor_file_write_npy(path, &hs[i]) != NPU_OK) {
			snprintf(msg, size, "calibration input: %s", npu_last_error());
			return -1;
		}
	}
	return 0;
}

static enum verdict run_data_set(struct npu_session *s, const struct npu_model *m,
				 const char *model_path,
				 const char *set_dir, const char *calib,
				 bool int8, char *msg, size_t size)
{
	/* ins: as read (they own data and name); hs: as the session takes them */
	struct npu_host_tensor ins[MAX_IO] = { 0 }, exp[MAX_IO] = { 0 }, hs[MAX_IO];
	size_t n_in = 0, n_exp = 0, i, k;
	enum verdict v = V_FAIL;
	char path[4096];
	npu_status st;

	for (i = 0; i < MAX_IO; i++) {
		struct npu_tensor_info decl = { 0 };

		path_fmt(path, sizeof(path), "%s/input_%zu.pb", set_dir, i);
		if (!is_file(path))
			break;
		/* A sequence or optional input is read as one (by position). */
		npu_model_input_info(m, i, &decl);
		st = npu_onnx_data_read(path, decl.dtype, &ins[i], msg, size);
		if (st != NPU_OK) {
			v = st == NPU_ERR_UNSUPPORTED ? V_SKIP : V_FAIL;
			goto out;
		}
		hs[i] = ins[i];
		hs[i].name = NULL;
		/* By name when it names a model input, else by position. */
		for (k = 0; k < npu_model_num_inputs(m); k++) {
			struct npu_tensor_info info;

			npu_model_input_info(m, k, &info);
			if (ins[i].name && !strcmp(ins[i].name, info.name))
				hs[i].name = info.name;
		}
		/* ONNX 1.12's test data store bfloat16 as its uint16 bits. */
		if (decl.dtype == NPU_TYPE_BFLOAT16 && ins[i].dtype == NPU_TYPE_UINT16)
			hs[i].dtype = NPU_TYPE_BFLOAT16;
		/* Data that contradict the model's declared rank: a defect of the test. */
		if (decl.name && decl.rank >= 0 && hs[i].dtype != NPU_TYPE_SEQUENCE &&
		    hs[i].dtype != NPU_TYPE_OPTIONAL && hs[i].rank != decl.rank) {
			snprintf(msg, size, "test data: input '%s' has rank %d, the model declares rank %d",
				 decl.name, hs[i].rank, decl.rank);
			v = V_SKIP;
			goto out;
		}
		n_in++;
	}
	/* All named or all positional: mixing would double-bind inputs. */
	for (i = 0; i < n_in; i++)
		if (!hs[i].name)
			for (k = 0; k < n_in; k++)
				hs[k].name = NULL;
	for (i = 0; calib && i < n_in; i++)
		if (hs[i].dtype == NPU_TYPE_SEQUENCE || hs[i].dtype == NPU_TYPE_OPTIONAL ||
		    hs[i].dtype == NPU_TYPE_BFLOAT16 || hs[i].dtype == NPU_TYPE_STRING) {
			/* Calibration data are .npy files, which hold none of these. */
			snprintf(msg, size, "input %zu is %s: no .npy calibration data for it",
				 i, npu_data_type_name(hs[i].dtype));
			v = V_SKIP;
			goto out;
		}
	if (calib && write_calibration(m, calib, hs, n_in, msg, size))
		goto out;
	st = npu_session_run(s, hs, n_in);
	if (st != NPU_OK) {
		snprintf(msg, size, "%s", short_msg(npu_last_error(), model_path));
		v = st == NPU_ERR_UNSUPPORTED ? V_SKIP : V_FAIL;
		goto out;
	}
	/* Expected outputs, read as what the model made (tensor or container). */
	for (i = 0; i < MAX_IO; i++) {
		struct npu_host_tensor got = { 0 };

		path_fmt(path, sizeof(path), "%s/output_%zu.pb", set_dir, i);
		if (!is_file(path))
			break;
		if (i < npu_model_num_outputs(m))
			npu_session_output(s, i, &got);
		st = npu_onnx_data_read(path, got.dtype, &exp[i], msg, size);
		if (st != NPU_OK) {
			v = st == NPU_ERR_UNSUPPORTED ? V_SKIP : V_FAIL;
			goto out;
		}
		if (exp[i].dtype == NPU_TYPE_UINT16 && got.dtype == NPU_TYPE_BFLOAT16)
			exp[i].dtype = NPU_TYPE_BFLOAT16;	/* as for inputs */
		n_exp++;
	}
	if (n_exp != npu_model_num_outputs(m)) {
		snprintf(msg, size, "%zu expected outputs, the model has %zu",
			 n_exp, npu_model_num_outputs(m));
		goto out;
	}
	for (i = 0; i < n_exp; i++) {
		struct npu_host_tensor got;

		npu_session_output(s, i, &got);
		if (compare(got.name, &exp[i], &got, int8, msg, size))
			goto out;
	}
	v = V_PASS;
out:
	for (i = 0; i < MAX_IO; i++) {
		npu_host_tensor_free(&ins[i]);
		npu_host_tensor_free(&exp[i]);
	}
	return v;
}

static enum verdict run_test(const char *dir, const struct test_opts *o,
			     char *msg, size_t size)
{
	struct npu_model_options mo;
	struct npu_engine_options eo;
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	struct npu_session *s = NULL;
	const struct npu_plan *plan;
	char model[4096], set[4096], calib[64] = "";
	bool npu = strcmp(o->device, "cpu") != 0;
	char **sets;
	size_t n_sets, i;
	enum verdict v = V_PASS;
	npu_status st;

	path_fmt(model, sizeof(model), "%s/model.onnx", dir);
	npu_model_options_init(&mo);
	npu_cli_engine_options(&eo, o->threads);
	mo.device = o->device;
	if (npu) {
		/* int8: calibrated on this test's inputs, every NPU node kept. */
		snprintf(calib, sizeof(calib), "/tmp/npu-onnx-test-calib.XXXXXX");
		if (!mkdtemp(calib)) {
			snprintf(msg, size, "mkdtemp: %s", strerror(errno));
			return V_FAIL;
		}
		mo.calib_dir = calib;
		mo.keep_small_segments = 1;
	}
	if (npu_engine_create(&eo, &e) != NPU_OK) {
		snprintf(msg, size, "%s", npu_last_error());
		return V_FAIL;
	}
	st = npu_model_load_file(e, model, &mo, &m);
	if (st == NPU_OK)
		st = npu_session_create(m, NULL, &s);
	if (st != NPU_OK) {
		snprintf(msg, size, "%s", short_msg(npu_last_error(), model));
		npu_model_destroy(m);
		npu_engine_destroy(e);
		if (npu)
			remove_tree(calib);
		return st == NPU_ERR_UNSUPPORTED ? V_SKIP : V_FAIL;
	}
	sets = list_dir(dir, "test_data_set_", &n_sets);
	if (!n_sets) {
		snprintf(msg, size, "no test_data_set_* directories");
		v = V_FAIL;
	}
	for (i = 0; i < n_sets && v == V_PASS; i++) {
		path_fmt(set, sizeof(set), "%s/%s", dir, sets[i]);
		if (!is_dir(set))
			continue;
		v = run_data_set(s, m, model, set, npu && i == 0 ? calib : NULL, npu, msg, size);
		if (v != V_PASS && n_sets > 1) {
			size_t len = strlen(msg);

			snprintf(msg + len, size - len, " [%s]", sets[i]);
		}
	}
	free_list(sets, n_sets);
	if (npu && v == V_PASS) {
		struct npu_node_placement p;
		size_t k, on_npu = 0;

		plan = npu_session_plan(s);
		for (k = 0; k < npu_plan_num_placements(plan); k++)
			if (npu_plan_placement(plan, k, &p) == NPU_OK && p.on_npu)
				on_npu++;
		if (!on_npu) {
			v = V_SKIP;
			if (npu_plan_placement(plan, 0, &p) == NPU_OK)
				snprintf(msg, size, "no node runs on the NPU (%s: %s)", p.op_type, p.reason);
			else
				snprintf(msg, size, "no node runs on the NPU");
		}
	}
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	if (npu)
		remove_tree(calib);
	return v;
}

/* Run one test in a child so a crash is a failure, not the end of the run. */
static enum verdict run_isolated(const char *dir, const struct test_opts *o,
				 char *msg, size_t size)
{
	int fds[2], status;
	pid_t pid;
	ssize_t r;
	size_t got = 0;

	if (pipe(fds))
		return run_test(dir, o, msg, size);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return run_test(dir, o, msg, size);
	}
	if (pid == 0) {
		char buf[1024];
		unsigned char v;

		close(fds[0]);
		buf[0] = '\0';
		v = (unsigned char)run_test(dir, o, buf, sizeof(buf));
		if (write(fds[1], &v, 1) != 1 ||
		    write(fds[1], buf, strlen(buf) + 1) < 0)
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	{
		char buf[1100];

		while (got < sizeof(buf) - 1 &&
		       (r = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)r;
		buf[got] = '\0';
		close(fds[0]);
		waitpid(pid, &status, 0);
		if (WIFSIGNALED(status)) {
			snprintf(msg, size, "crashed (signal %d: %s)",
				 WTERMSIG(status), strsignal(WTERMSIG(status)));
			return V_FAIL;
		}
		if (got < 1) {
			snprintf(msg, size, "test process exited with %d",
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			return V_FAIL;
		}
		path_fmt(msg, size, "%.1000s", buf + 1);
		return (enum verdict)(unsigned char)buf[0];
	}
}

static void test_usage(FILE *out)
{
	fprintf(out,
		"usage: npu onnx-test DIR... [--device cpu|sim|accel] [--filter REGEX]\n"
		"                    [--threads N] [--isolate]\n\n"
		"DIR is one test (model.onnx + test_data_set_*/) or a directory of tests.\n"
		"Prints PASS / FAIL / SKIP per test and ends with\n"
		"\"N passed, N failed, N skipped\". Tolerance: rtol %g, atol %g for\n"
		"floating point, exact for integers and bools. --isolate runs each test\n"
		"in a child process so that a crash fails only that test.\n",
		RTOL, ATOL);
}

int npu_cmd_onnx_test(int argc, char **argv)
{
	struct test_opts o = { .threads = 1, .device = "cpu" };
	const char *filter = NULL, *device = "cpu";
	const char *dirs[256];
	size_t n_dirs = 0, i, j, pass = 0, fail = 0, skip = 0;
	regex_t re;
	int have_re = 0;

	for (i = 1; i < (size_t)argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			test_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--isolate")) {
			o.isolate = 1;
		} else if (!strcmp(a, "--filter") && i + 1 < (size_t)argc) {
			filter = argv[++i];
		} else if (!strcmp(a, "--device") && i + 1 < (size_t)argc) {
			device = argv[++i];
		} else if (!strcmp(a, "--threads") && i + 1 < (size_t)argc) {
			o.threads = atoi(argv[++i]);
			if (o.threads < 1) {
				fprintf(stderr, "npu onnx-test: bad thread count\n");
				return 2;
			}
		} else if (a[0] == '-') {
			fprintf(stderr, "npu onnx-test: unknown option '%s'\n", a);
			test_usage(stderr);
			return 2;
		} else if (n_dirs < sizeof(dirs) / sizeof(dirs[0])) {
			dirs[n_dirs++] = a;
		}
	}
	if (!n_dirs) {
		test_usage(stderr);
		return 2;
	}
	if (strcmp(device, "cpu") && strcmp(device, "sim") &&
	    strcmp(device, "accel")) {
		fprintf(stderr, "npu onnx-test: unknown device '%s'\n", device);
		return 2;
	}
	o.device = device;
	if (filter) {
		if (regcomp(&re, filter, REG_EXTENDED | REG_NOSUB)) {
			fprintf(stderr, "npu onnx-test: bad --filter regex '%s'\n",
				filter);
			return 2;
		}
		have_re = 1;
	}
	for (i = 0; i < n_dirs; i++) {
		char path[4096], **names = NULL;
		size_t n = 0;
		int single;

		path_fmt(path, sizeof(path), "%s/model.onnx", dirs[i]);
		single = is_file(path);
		if (!single) {
			names = list_dir(dirs[i], "", &n);
			if (!is_dir(dirs[i])) {
				printf("FAIL %s: not a test directory\n", dirs[i]);
				fail++;
				continue;
			}
		}
		for (j = 0; j < (single ? 1 : n); j++) {
			char dir[4096], msg[1024] = "";
			const char *name;
			enum verdict v;

			if (single) {
				path_fmt(dir, sizeof(dir), "%s", dirs[i]);
				name = strrchr(dirs[i], '/');
				name = name && name[1] ? name + 1 : dirs[i];
			} else {
				path_fmt(dir, sizeof(dir), "%s/%s", dirs[i], names[j]);
				path_fmt(path, sizeof(path), "%s/model.onnx", dir);
				if (!is_file(path))
					continue;
				name = names[j];
			}
			if (have_re && regexec(&re, name, 0, NULL, 0))
				continue;
			if (known_defect(name)) {
				snprintf(msg, sizeof(msg), "%s", known_defect(name));
				v = V_SKIP;
			} else {
				v = o.isolate ? run_isolated(dir, &o, msg, sizeof(msg))
					      : run_test(dir, &o, msg, sizeof(msg));
			}
			switch (v) {
			case V_PASS:
				printf("PASS %s\n", name);
				pass++;
				break;
			case V_SKIP:
				printf("SKIP %s: %s\n", name, msg);
				skip++;
				break;
			default:
				printf("FAIL %s: %s\n", name, msg);
				fail++;
				break;
			}
			fflush(stdout);
		}
		free_list(names, n);
	}
	if (have_re)
		regfree(&re);
	printf("%zu passed, %zu failed, %zu skipped\n", pass, fail, skip);
	return fail ? 1 : 0;
}
