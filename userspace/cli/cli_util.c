// SPDX-License-Identifier: MIT
#include "cli_util.h"

#include "npu/npu_device.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int npu_cli_parse_dims(const char *s, int64_t *dims)
{
	int rank = 0;
	char *end;

	if (!*s || !strcmp(s, "scalar"))
		return 0;
	for (;;) {
		long long d;

		if (rank == NPU_MODEL_MAX_RANK)
			return -1;
		errno = 0;
		d = strtoll(s, &end, 10);
		if (end == s || d < 0 || errno)
			return -1;
		dims[rank++] = d;
		if (!*end)
			return rank;
		if (*end != 'x' && *end != ',' && *end != 'X')
			return -1;
		s = end + 1;
	}
}

void npu_cli_engine_options(struct npu_engine_options *eo, int threads)
{
	const char *stats = getenv("NPU_POOL_STATS");

	npu_engine_options_init(eo);
	eo->threads = threads;
	eo->cpu_isa = getenv("NPU_CPU_ISA");
	if (eo->cpu_isa && !*eo->cpu_isa)
		eo->cpu_isa = NULL;
	eo->pool_stats = stats && *stats && strcmp(stats, "0");
	eo->trace_file = getenv("NPU_TRACE_FILE");
}

int npu_cli_device_default(struct npu_device_options *o, const char *cmd)
{
	const char *env = getenv("NPU_DEVICE");

	npu_device_options_init(o);
	if (env && *env && npu_device_options_parse(o, env)) {
		fprintf(stderr, "npu %s: NPU_DEVICE='%s': expected sim, accel, auto or a /dev/accel/accelN path\n",
			cmd, env);
		return -1;
	}
	o->trace_file = getenv("NPU_TRACE_FILE");	/* npu trace points it here */
	return 0;
}

const char *npu_cli_cpu_env(char *buf, size_t size)
{
	static const char *const vars[][2] = {
		{ "NPU_CPU_FUSE", "fuse" },
		{ "NPU_CPU_NCHWC", "nchwc" },
		{ "NPU_CPU_WINOGRAD", "winograd" },
	};
	size_t n = 0, i;

	buf[0] = '\0';
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i][0]);

		if (v && *v && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%s=%s", n ? "," : "",
					      vars[i][1], v);
	}
	return buf[0] ? buf : NULL;
}

int npu_cli_open(struct npu_cli_model *cm, const char *path,
		 const struct npu_model_options *opts, int threads, const char *cmd)
{
	return npu_cli_open_setup(cm, path, opts, threads, cmd, NULL, NULL);
}

int npu_cli_open_setup(struct npu_cli_model *cm, const char *path,
		       const struct npu_model_options *opts, int threads, const char *cmd,
		       int (*setup)(struct npu_engine *engine, void *arg), void *arg)
{
	struct npu_engine_options eo;
	struct npu_model_options mo;
	char cpu[128];

	memset(cm, 0, sizeof(*cm));
	npu_cli_engine_options(&eo, threads);
	if (opts && !opts->cpu) {	/* no --cpu: NPU_CPU_* from the environment */
		mo = *opts;
		mo.cpu = npu_cli_cpu_env(cpu, sizeof(cpu));
		opts = &mo;
	}
	if (npu_engine_create(&eo, &cm->engine) != NPU_OK ||
	    (setup && setup(cm->engine, arg)) ||
	    npu_model_load_file(cm->engine, path, opts, &cm->model) != NPU_OK) {
		fprintf(stderr, "npu %s: %s\n", cmd, npu_last_error());
		npu_cli_close(cm);
		return -1;
	}
	return 0;
}

void npu_cli_close(struct npu_cli_model *cm)
{
	npu_session_destroy(cm->session);
	npu_plan_release(cm->plan);
	npu_model_destroy(cm->model);
	npu_engine_destroy(cm->engine);
	memset(cm, 0, sizeof(*cm));
}

int npu_cli_apply_shape(struct npu_cli_model *cm, const char *arg, const char *cmd)
{
	const char *eq = strrchr(arg, '=');
	struct npu_host_tensor *t;
	size_t i, n = npu_model_num_inputs(cm->model);
	int rank;

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(cm->shape_names[0])) {
		fprintf(stderr, "npu %s: --shape '%s': expected NAME=DIMS, e.g. x=1x3x640x640\n",
			cmd, arg);
		return -1;
	}
	if (cm->num_shapes == NPU_CLI_MAX_SHAPES) {
		fprintf(stderr, "npu %s: --shape: at most %d\n", cmd, NPU_CLI_MAX_SHAPES);
		return -1;
	}
	t = &cm->shapes[cm->num_shapes];
	memcpy(cm->shape_names[cm->num_shapes], arg, (size_t)(eq - arg));
	cm->shape_names[cm->num_shapes][eq - arg] = '\0';
	rank = npu_cli_parse_dims(eq + 1, t->dims);
	if (rank < 0) {
		fprintf(stderr, "npu %s: --shape '%s': '%s' is not a list of dims like 1x3x640x640\n",
			cmd, arg, eq + 1);
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct npu_tensor_info info;
		int d;

		npu_model_input_info(cm->model, i, &info);
		if (strcmp(info.name, cm->shape_names[cm->num_shapes]))
			continue;
		if (info.rank >= 0 && info.rank != rank) {
			fprintf(stderr, "npu %s: --shape %s: input '%s' has rank %d\n", cmd, arg,
				info.name, info.rank);
			return -1;
		}
		for (d = 0; d < rank && info.rank >= 0; d++)
			if (info.dims[d] >= 0 && info.dims[d] != t->dims[d]) {
				fprintf(stderr, "npu %s: --shape %s: dim %d of input '%s' is fixed to %lld\n",
					cmd, arg, d, info.name, (long long)info.dims[d]);
				return -1;
			}
		t->name = cm->shape_names[cm->num_shapes];
		t->rank = rank;
		cm->num_shapes++;
		return 0;
	}
	fprintf(stderr, "npu %s: --shape %s: %s has no input '%s'\n", cmd, arg,
		npu_model_name(cm->model), cm->shape_names[cm->num_shapes]);
	return -1;
}

int npu_cli_input_info(const struct npu_cli_model *cm, size_t index,
		       struct npu_tensor_info *info)
{
	size_t k;

	if (npu_model_input_info(cm->model, index, info) != NPU_OK)
		return -1;
	for (k = 0; k < cm->num_shapes; k++)
		if (!strcmp(cm->shapes[k].name, info->name)) {
			info->rank = cm->shapes[k].rank;
			memcpy(info->dims, cm->shapes[k].dims, sizeof(info->dims));
		}
	return 0;
}

int npu_cli_plan(struct npu_cli_model *cm, const char *cmd)
{
	size_t i, n = npu_model_num_inputs(cm->model);
	struct npu_host_tensor *want = calloc(n + 1, sizeof(*want));
	int rc = -1;

	if (!want) {
		fprintf(stderr, "npu %s: out of memory\n", cmd);
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct npu_tensor_info info;
		int d;

		npu_cli_input_info(cm, i, &info);
		for (d = 0; d < info.rank; d++)
			if (info.dims[d] < 0) {
				fprintf(stderr, "npu %s: input '%s' has a dynamic dimension %d (%s): fix it with --shape %s=DIMS\n",
					cmd, info.name, d, info.dim_names[d] ? info.dim_names[d] : "?",
					info.name);
				goto out;
			}
		want[i].name = info.name;
		want[i].rank = info.rank;
		memcpy(want[i].dims, info.dims, sizeof(want[i].dims));
	}
	npu_plan_release(cm->plan);
	cm->plan = NULL;
	if (npu_model_get_plan(cm->model, want, n, &cm->plan) != NPU_OK ||
	    (!cm->session && npu_session_create(cm->model, NULL, &cm->session) != NPU_OK)) {
		fprintf(stderr, "npu %s: %s\n", cmd, npu_last_error());
		goto out;
	}
	rc = 0;
out:
	free(want);
	return rc;
}

/* splitmix64: deterministic across platforms for a seed. */
static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int npu_cli_fill_random(struct npu_host_tensor *t, uint64_t *rng, float lo, float hi)
{
	size_t n = t->nbytes / (npu_data_type_size(t->dtype) ?
				npu_data_type_size(t->dtype) : 1), i;

	for (i = 0; i < n; i++) {
		uint64_t r = splitmix(rng);
		double u = (double)(r >> 11) / 9007199254740992.0;

		switch (t->dtype) {
		case NPU_TYPE_FLOAT: ((float *)t->data)[i] = (float)(lo + (hi - lo) * u); break;
		case NPU_TYPE_DOUBLE: ((double *)t->data)[i] = lo + (hi - lo) * u; break;
		case NPU_TYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)(r % 10); break;
		case NPU_TYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)(r % 10); break;
		case NPU_TYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)(r % 10); break;
		case NPU_TYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)(r % 10); break;
		case NPU_TYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(r & 1); break;
		default:
			return -1;
		}
	}
	return 0;
}

/* The dims a "NAME=DIMS" option in 'shapes' gives input 'name' (rank or -1). */
static int shape_for(const char *name, const char *const *shapes, size_t count,
		     int64_t *dims)
{
	size_t i, len = strlen(name);

	for (i = 0; i < count; i++)
		if (!strncmp(shapes[i], name, len) && shapes[i][len] == '=')
			return npu_cli_parse_dims(shapes[i] + len + 1, dims);
	return -1;
}

int npu_cli_random_inputs(const struct npu_cli_model *cm, uint64_t seed, float lo,
			  float hi, const char *const *shapes, size_t num_shapes,
			  struct npu_host_tensor *out, const char *cmd)
{
	size_t n = npu_model_num_inputs(cm->model), i;

	memset(out, 0, n * sizeof(*out));
	for (i = 0; i < n; i++) {
		struct npu_tensor_info info;
		size_t numel = 1, esize;
		int d;

		if (npu_cli_input_info(cm, i, &info)) {
			fprintf(stderr, "npu %s: %s\n", cmd, npu_last_error());
			goto fail;
		}
		/* --shape NAME=DIMS fixes an input's dynamic dims. */
		shape_for(info.name, shapes, num_shapes, info.dims);
		for (d = 0; d < info.rank; d++) {
			if (info.dims[d] < 0) {
				fprintf(stderr, "npu %s: input '%s' has a dynamic dimension %d (%s): fix it with --shape %s=DIMS\n",
					cmd, info.name, d, info.dim_names[d] ? info.dim_names[d] : "?",
					info.name);
				goto fail;
			}
			numel *= (size_t)info.dims[d];
		}
		esize = npu_data_type_size(info.dtype);
		out[i].name = info.name;
		out[i].dtype = info.dtype;
		out[i].rank = info.rank;
		memcpy(out[i].dims, info.dims, sizeof(out[i].dims));
		out[i].nbytes = numel * esize;
		out[i].data = calloc(1, out[i].nbytes ? out[i].nbytes : 1);
		if (!out[i].data) {
			fprintf(stderr, "npu %s: out of memory for input '%s'\n", cmd, info.name);
			goto fail;
		}
		if (npu_cli_fill_random(&out[i], &seed, lo, hi)) {
			fprintf(stderr, "npu %s: input '%s': no random values for type %s\n",
				cmd, info.name, npu_data_type_name(info.dtype));
			goto fail;
		}
	}
	return (int)n;
fail:
	npu_cli_free_inputs(out, (int)n);
	return -1;
}

void npu_cli_free_inputs(struct npu_host_tensor *t, int count)
{
	int i;

	for (i = 0; i < count; i++) {
		free(t[i].data);
		t[i].data = NULL;
	}
}

void npu_cli_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

int npu_cli_parse_int(const char *cmd, const char *opt, const char *v,
		      int min, int max)
{
	char *end;
	long n;

	errno = 0;
	n = v ? strtol(v, &end, 10) : 0;
	if (!v || errno || *end || end == v || n < min || n > max) {
		fprintf(stderr, "npu %s: %s '%s': expected an integer in %d..%d\n",
			cmd, opt, v ? v : "", min, max);
		return -1;
	}
	return (int)n;
}

int npu_cli_parse_parallel(const char *cmd, const char *v, enum npu_parallel_mode *mode)
{
	if (!strcmp(v, "data"))
		*mode = NPU_PARALLEL_DATA;
	else if (!strcmp(v, "pipeline"))
		*mode = NPU_PARALLEL_PIPELINE;
	else if (!strcmp(v, "auto"))
		*mode = NPU_PARALLEL_AUTO;
	else if (!strcmp(v, "tiles"))
		fprintf(stderr, "npu %s: --parallel tiles: not built yet (data, pipeline or auto)\n",
			cmd);
	else
		fprintf(stderr, "npu %s: --parallel '%s': expected data, pipeline or auto\n", cmd, v);
	return !strcmp(v, "data") || !strcmp(v, "pipeline") || !strcmp(v, "auto") ? 0 : -1;
}

int npu_cli_parse_link(const char *v, double *mbit, double *rtt_ms)
{
	char *end;

	*rtt_ms = 0;
	*mbit = strtod(v, &end);
	if (end == v || !(*mbit > 0) || *mbit > 1e6)
		return -1;
	if (*end == ',') {
		const char *r = end + 1;

		*rtt_ms = strtod(r, &end);
		if (end == r || *rtt_ms < 0 || *rtt_ms > 60000)
			return -1;
	}
	return *end ? -1 : 0;
}

static int npy_file(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 4 && !strcmp(d->d_name + n - 4, ".npy");
}

static int not_hidden(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int npu_cli_list_samples(const char *dir, bool npy_files, char ***names)
{
	struct dirent **ents = NULL;
	char **out;
	int n = scandir(dir, &ents, npy_files ? npy_file : not_hidden, alphasort), i, bad = 0;

	*names = NULL;
	if (n < 0)
		return -1;
	out = calloc((size_t)n + 1, sizeof(*out));
	for (i = 0; i < n; i++) {
		if (out && !(out[i] = strdup(ents[i]->d_name)))
			bad = 1;
		free(ents[i]);
	}
	free(ents);
	if (!out || bad) {
		npu_cli_free_names(out, n);
		return -1;
	}
	*names = out;
	return n;
}

void npu_cli_free_names(char **names, int count)
{
	int i;

	for (i = 0; names && i < count; i++)
		free(names[i]);
	free(names);
}
