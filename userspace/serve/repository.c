// SPDX-License-Identifier: MIT
/* repository: models, versions, load / swap / unload / poll (see repository.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backend.h"
#include "ensemble.h"
#include "infer_codec.h"
#include "repository.h"
#include "response_cache.h"
#include "trace.h"

#define MAX_VERSIONS CONFIG_MAX_VERSIONS
#define MAX_CONFIG_BYTES (1 << 20)

struct model_version {
	int64_t version;
	uint64_t fingerprint;
	char device[SERVE_NAME_MAX];
	struct model_config cfg;
	struct npu_model *model;	/* an engine model's */
	struct backend_model *backend;	/* a backend library's */
	struct scheduler *sched;	/* either's */
	struct ensemble *ens;		/* an ensemble's (no scheduler of its own) */
	struct model_stats *stats;
	uint64_t load_id;		/* its response cache entries' (never reused) */
	/*
	 * Requests being decoded hold a reference, taken under the model's
	 * lock and dropped after the enqueue: decoding runs outside the lock,
	 * and a replaced version is freed only once nobody decodes for it.
	 */
	pthread_mutex_t ref_lock;
	pthread_cond_t ref_cond;
	int refs;
};

struct version_state {
	int64_t version;
	int ready;
	char reason[SERVE_ERR_MAX];
};

struct model_entry {
	char name[SERVE_NAME_MAX];
	pthread_rwlock_t lock;		/* guards loaded[] */
	size_t num_loaded;
	struct model_version *loaded[MAX_VERSIONS];	/* ascending versions */

	/* Under the repository's lock: */
	int wanted;			/* asked to load (readiness) */
	char reason[SERVE_ERR_MAX];	/* last failure of the model as a whole */
	size_t num_states;
	struct version_state states[MAX_VERSIONS];
	uint64_t applied_fp, seen_fp;	/* poll: loaded / last observed */
	struct model_entry *next;
};

struct repository {
	struct repo_options opts;
	struct ensemble_host ens_host;	/* what ensembles call back */
	struct codec_limits limits;
	char path[4096];
	char device[SERVE_NAME_MAX];
	struct npu_engine *engine;
	pthread_mutex_t lock;		/* the model list and their states */
	pthread_mutex_t op_lock;	/* one load / unload at a time */
	struct model_entry *models;

	int load_depth;			/* under op_lock: ensembles loading their steps */
	pthread_t poller;
	int polling;
	pthread_mutex_t poll_lock;
	pthread_cond_t poll_cond;
	int stop;
};

/* ---- Helpers ---------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= c[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t fnv_stat(uint64_t h, const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		h = fnv(h, "-", 1);
		return h;
	}
	h = fnv(h, &st.st_size, sizeof(st.st_size));
	h = fnv(h, &st.st_mtim, sizeof(st.st_mtim));
	h = fnv(h, &st.st_ino, sizeof(st.st_ino));
	return h;
}

static int valid_name(const char *name)
{
	size_t i;

	if (!name[0] || name[0] == '.' || strlen(name) >= SERVE_NAME_MAX)
		return 0;
	for (i = 0; name[i]; i++)
		if (name[i] == '/' || (unsigned char)name[i] < 0x20)
			return 0;
	return 1;
}

static int is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/*
 * Messages a client sees (load errors, index reasons) name files relative
 * to the repository root ("relu/1/model.onnx"): the server's directory
 * layout is not theirs to learn. Rewrites 'msg' in place.
 */
static void relative_paths(const struct repository *r, char *msg)
{
	size_t plen = strlen(r->path);
	char *p;

	if (!plen)
		return;
	while ((p = strstr(msg, r->path))) {
		size_t cut = plen + (p[plen] == '/');

		memmove(p, p + cut, strlen(p + cut) + 1);
	}
}

static char *read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = malloc(MAX_CONFIG_BYTES + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, MAX_CONFIG_BYTES + 1, f);
	fclose(f);
	if (n > MAX_CONFIG_BYTES) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/*
 * The model file of a version directory ("" if none). An ensemble's and a
 * backend library's model have none: their version directory stands for
 * it. Parameter "model_file" names a file elsewhere (backend_resolve_file():
 * relative to the model's directory, or cache:PATH in the model cache).
 */
static void model_file(const struct repository *r, const char *name, int64_t v,
		       const struct model_config *cfg, char *out, size_t size)
{
	static const char *const defaults[] = { "model.onnx", "model.npub" };
	const char *ref = cfg ? config_param(cfg, "model_file") : NULL;
	size_t i;

	if (cfg && (cfg->num_steps || backend_is_library(cfg) || ref)) {
		char dir[8192], err[SERVE_ERR_MAX];

		snprintf(out, size, "%s/%s/%" PRId64, r->path, name, v);
		if (!is_dir(out)) {
			out[0] = '\0';
		} else if (ref) {
			snprintf(dir, sizeof(dir), "%s/%s", r->path, name);
			if (backend_resolve_file(dir, ref, out, size, err))
				out[0] = '\0';
		}
		return;
	}
	if (cfg && cfg->default_model_filename[0]) {
		snprintf(out, size, "%s/%s/%" PRId64 "/%s", r->path, name, v,
			 cfg->default_model_filename);
		if (!is_file(out))
			out[0] = '\0';
		return;
	}
	for (i = 0; i < 2; i++) {
		snprintf(out, size, "%s/%s/%" PRId64 "/%s", r->path, name, v, defaults[i]);
		if (is_file(out))
			return;
	}
	out[0] = '\0';
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A version directory's name: the canonical decimal form only (1, 2, 10;
 * no leading zero, sign or space), so that no two directories name the
 * same version ('1' and '01'). Returns the version, 0 when the name is
 * not a version at all (another directory, or "0": ignored, as always),
 * -1 when it is digits but not canonical (refused).
 */
static int64_t version_of_dir(const char *d)
{
	int64_t v = 0;
	size_t i;

	if (!isdigit((unsigned char)d[0]))
		return 0;
	for (i = 0; d[i]; i++) {
		if (!isdigit((unsigned char)d[i]))
			return 0;
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (d[i] - '0');
	}
	return d[0] == '0' && d[1] ? -1 : v;
}

static size_t dedupe_sorted(int64_t *v, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

/*
 * Numeric version directories holding a model file, ascending, each once.
 * 'refused' (when not NULL) gets the first directory named with digits
 * that is not a canonical version number ("" if none).
 */
static size_t list_versions(const struct repository *r, const char *name,
			    const struct model_config *cfg, int64_t *out, char *refused,
			    size_t refused_size)
{
	char dir[4096 + SERVE_NAME_MAX], file[8192];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	if (refused)
		refused[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/%s", r->path, name);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < MAX_VERSIONS) {
		int64_t v = version_of_dir(de->d_name);

		if (v < 0 && refused && !refused[0])
			snprintf(refused, refused_size, "%s", de->d_name);
		if (v <= 0)
			continue;
		model_file(r, name, v, cfg, file, sizeof(file));
		if (file[0])
			out[n++] = v;
	}
	closedir(d);
	qsort(out, n, sizeof(*out), cmp_i64);
	return dedupe_sorted(out, n);
}

static struct model_entry *find_entry(struct repository *r, const char *name, int create)
{
	struct model_entry *e;

	for (e = r->models; e; e = e->next)
		if (!strcmp(e->name, name))
			return e;
	if (!create)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	snprintf(e->name, sizeof(e->name), "%s", name);
	{
		/* A swap must not wait behind an endless stream of requests
		 * (glibc prefers readers by default); no reader nests. */
		pthread_rwlockattr_t a;

		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&e->lock, &a);
		pthread_rwlockattr_destroy(&a);
	}
	e->next = r->models;
	r->models = e;
	return e;
}

static struct model_entry *get_entry(struct repository *r, const char *name, int create)
{
	struct model_entry *e;

	pthread_mutex_lock(&r->lock);
	e = find_entry(r, name, create);
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* How many versions serve now (e->lock is taken: any caller). */
static size_t loaded_count(struct model_entry *e)
{
	size_t n;

	pthread_rwlock_rdlock(&e->lock);
	n = e->num_loaded;
	pthread_rwlock_unlock(&e->lock);
	return n;
}

static struct version_state *state_of(struct model_entry *e, int64_t v)
{
	size_t i;

	for (i = 0; i < e->num_states; i++)
		if (e->states[i].version == v)
			return &e->states[i];
	if (e->num_states >= MAX_VERSIONS) {
		/* Forget the oldest state not loaded. */
		memmove(&e->states[0], &e->states[1], (MAX_VERSIONS - 1) * sizeof(e->states[0]));
		e->num_states--;
	}
	memset(&e->states[e->num_states], 0, sizeof(e->states[0]));
	e->states[e->num_states].version = v;
	return &e->states[e->num_states++];
}

static struct model_version *new_version(void)
{
	struct model_version *mv = calloc(1, sizeof(*mv));

	if (mv) {
		pthread_mutex_init(&mv->ref_lock, NULL);
		pthread_cond_init(&mv->ref_cond, NULL);
	}
	return mv;
}

/* Under the model's lock (any mode): keep 'mv' alive past the unlock. */
static void version_get(struct model_version *mv)
{
	pthread_mutex_lock(&mv->ref_lock);
	mv->refs++;
	pthread_mutex_unlock(&mv->ref_lock);
}

static void version_put(struct model_version *mv)
{
	pthread_mutex_lock(&mv->ref_lock);
	if (!--mv->refs)
		pthread_cond_broadcast(&mv->ref_cond);
	pthread_mutex_unlock(&mv->ref_lock);
}

/* 'mv' is out of e->loaded: wait for its last decoder, drain, free. */
static void free_version(struct model_version *mv)
{
	if (!mv)
		return;
	pthread_mutex_lock(&mv->ref_lock);
	while (mv->refs)
		pthread_cond_wait(&mv->ref_cond, &mv->ref_lock);
	pthread_mutex_unlock(&mv->ref_lock);
	ensemble_drain_destroy(mv->ens);
	scheduler_drain_destroy(mv->sched);
	backend_model_close(mv->backend);
	if (mv->load_id)
		response_cache_purge(mv->load_id);
	if (mv->model)
		npu_model_destroy(mv->model);
	pthread_cond_destroy(&mv->ref_cond);
	pthread_mutex_destroy(&mv->ref_lock);
	free(mv);
}

/* ---- Loading ------------------------------------------------------------------ */

static const char *resolve_device(const struct repository *r, const struct model_config *c)
{
	const char *p = config_param(c, "device");

	if (c->kind == KIND_CPU)
		return "cpu";
	if (p)
		return p;
	if (c->kind == KIND_NPU)
		return strcmp(r->device, "cpu") ? r->device : "sim";
	return r->device;
}

/*
 * What a version's scheduler bounds: the server's limits, with this
 * model's budget of new shapes and memory of recent ones.
 */
static void scheduler_limits_of(const struct repository *r, int new_shapes_per_minute,
				size_t shape_memory, struct scheduler_limits *sl)
{
	memset(sl, 0, sizeof(*sl));
	sl->default_max_queue_size = r->opts.default_max_queue_size;
	sl->max_new_shapes_per_minute = new_shapes_per_minute;
	sl->max_sequences = r->opts.max_sequences;
	sl->max_sequence_state_bytes = r->opts.max_sequence_state_bytes;
	sl->shape_memory = shape_memory;
}

static void log_loaded(const char *name, const struct model_version *mv, const char *file,
		       uint64_t t0)
{
	int n = mv->sched ? scheduler_num_instances(mv->sched) : 0;

	if (mv->ens) {
		serve_log(SERVE_LOG_INFO,
			  "loaded ensemble '%s' version %" PRId64 ": %zu steps, %zu inputs, %zu outputs (%.0f ms)",
			  name, mv->version, mv->cfg.num_steps, mv->cfg.num_inputs,
			  mv->cfg.num_outputs, (serve_now_ns() - t0) / 1e6);
		return;
	}
	serve_log(SERVE_LOG_INFO,
		  "loaded model '%s' version %" PRId64 " from %s on %s: %zu inputs, %zu outputs, max_batch_size %d, %d instance%s, %s (%.0f ms)",
		  name, mv->version, file, mv->device, mv->cfg.num_inputs, mv->cfg.num_outputs,
		  mv->cfg.max_batch_size, n, n == 1 ? "" : "s",
		  mv->cfg.dynamic_batching ? "dynamic batching" : "no batching",
		  (serve_now_ns() - t0) / 1e6);
}

/* An ensemble, or a model of a backend library: no engine model. */
static int load_composite(struct repository *r, const char *name, struct model_version *mv,
			  const char *version_dir, uint64_t t0, struct model_version **out,
			  char *err)
{
	struct scheduler_limits sl;
	char model_dir[8192];
	int st;

	snprintf(mv->device, sizeof(mv->device), "cpu");
	mv->stats = metrics_model(name, mv->version);
	if (!mv->stats) {
		free_version(mv);
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	}
	if (mv->cfg.num_steps) {
		st = ensemble_create(&mv->cfg, &r->ens_host, mv->stats, &mv->ens, err);
	} else {
		snprintf(model_dir, sizeof(model_dir), "%s/%s", r->path, name);
		st = backend_model_open(&mv->cfg, model_dir, version_dir, r->opts.backend_dir,
					&mv->backend, err);
		if (!st) {
			/* A backend compiles no plan: no budget of new shapes. */
			scheduler_limits_of(r, -1, 1, &sl);
			st = scheduler_create_backend(&mv->cfg, mv->backend, mv->stats, &sl,
						      &mv->sched, err);
		}
	}
	if (st) {
		free_version(mv);
		return st;
	}
	log_loaded(name, mv, version_dir, t0);
	*out = mv;
	return SERVE_OK;
}

static int load_version(struct repository *r, const char *name,
			const struct model_config *base, int config_given,
			int64_t v, uint64_t fp, struct model_version **out, char *err)
{
	struct model_version *mv = new_version();
	struct scheduler_limits sl;
	struct npu_model_options mo;
	char file[8192], calib[8192];
	const char *calib_param;
	uint64_t t0 = serve_now_ns();
	int st;

	*out = NULL;
	if (!mv)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	mv->version = v;
	mv->fingerprint = fp;
	mv->cfg = *base;
	snprintf(mv->device, sizeof(mv->device), "%s", resolve_device(r, base));
	model_file(r, name, v, base, file, sizeof(file));
	if (!file[0]) {
		free_version(mv);
		return serve_err(err, SERVE_NOT_FOUND, "version %" PRId64 " has no model file", v);
	}
	if (base->num_steps || backend_is_library(base))
		return load_composite(r, name, mv, file, t0, out, err);
	npu_model_options_init(&mo);
	mo.device = mv->device;
	calib_param = config_param(base, "calib_dir");
	if (calib_param) {
		if (calib_param[0] == '/')
			snprintf(calib, sizeof(calib), "%s", calib_param);
		else
			snprintf(calib, sizeof(calib), "%s/%s/%s", r->path, name, calib_param);
		mo.calib_dir = calib;
	}
	/* Without calib_dir an NPU model fails to load, unless the config asks
	 * for random calibration inputs by name (smoke tests). */
	calib_param = config_param(base, "calib");
	mo.calib_random = calib_param && !strcmp(calib_param, "random");
	mo.max_plans = (size_t)(base->max_batch_size > 0 ? base->max_batch_size : 0) + 4;
	{
		const char *k = config_param(base, "keep_small_segments");

		mo.keep_small_segments = k && (!strcmp(k, "true") || !strcmp(k, "1"));
	}
	/* Mixed precision (npu compile --keep-fp32 / --accuracy-target). */
	mo.keep_fp32 = config_param(base, "keep_fp32");
	calib_param = config_param(base, "accuracy_target");
	if (calib_param) {
		char *end;

		mo.accuracy_target = strtod(calib_param, &end);
		if (*end || end == calib_param || !(mo.accuracy_target > 0 && mo.accuracy_target <= 1)) {
			free_version(mv);
			return serve_err(err, SERVE_INVALID,
					 "parameter accuracy_target '%s': expected a cosine in (0, 1]",
					 calib_param);
		}
	}
	/* A model on several NPUs (Documentation/multi-npu.md). */
	{
		const char *mode = config_param(base, "parallel");

		if (mode && !strcmp(mode, "data")) {
			mo.parallel = NPU_PARALLEL_DATA;
		} else if (mode && !strcmp(mode, "pipeline")) {
			mo.parallel = NPU_PARALLEL_PIPELINE;
		} else if (mode && strcmp(mode, "auto")) {
			free_version(mv);
			return serve_err(err, SERVE_INVALID,
					 "parameter parallel '%s': expected data, pipeline or auto",
					 mode);
		}
	}
	/* Custom-op libraries register their ops before the model that needs them loads. */
	for (size_t k = 0; k < base->num_op_libraries; k++) {
		char model_dir[8192], version_dir[8192 + 32];

		snprintf(model_dir, sizeof(model_dir), "%s/%s", r->path, name);
		snprintf(version_dir, sizeof(version_dir), "%s/%" PRId64, model_dir, v);
		st = backend_load_op_library(r->engine, base->op_libraries[k], model_dir,
					     version_dir, r->opts.backend_dir, err);
		if (st) {
			free_version(mv);
			return st;
		}
	}
	if (npu_model_load_file(r->engine, file, &mo, &mv->model) != NPU_OK) {
		st = serve_err(err, SERVE_INVALID, "%s", npu_last_error());
		free_version(mv);
		return st;
	}
	st = config_complete(&mv->cfg, mv->model, config_given, err);
	if (st) {
		free_version(mv);
		return st;
	}
	mv->stats = metrics_model(name, v);
	if (!mv->stats) {
		free_version(mv);
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	}
	/* A reload, even of the same version number, never sees older entries. */
	mv->load_id = response_cache_new_load_id();
	if (mv->cfg.response_cache && !response_cache_size())
		serve_log(SERVE_LOG_WARN, "model '%s': response_cache is enabled but the server has no cache (--cache-config local,size=BYTES): responses are not cached",
			  name);
	/* As many recent shapes as the plan cache holds. */
	scheduler_limits_of(r, r->opts.max_new_shapes_per_minute, mo.max_plans, &sl);
	st = scheduler_create(&mv->cfg, mv->model, mv->device, mv->stats, &sl, &mv->sched, err);
	if (st) {
		free_version(mv);
		return st;
	}
	log_loaded(name, mv, file, t0);
	*out = mv;
	return SERVE_OK;
}

/* The config of a model: override, config.pbtxt or defaults. */
static int read_config(struct repository *r, const char *name, const json_t *override,
		       struct model_config *cfg, int *given, uint64_t *fp, char *err)
{
	char path[8192];
	char *text;
	size_t len;
	int st;

	config_init(cfg, name);
	*given = 0;
	*fp = 14695981039346656037ull;
	if (override) {
		char *s = json_dumps(override, JSON_COMPACT | JSON_SORT_KEYS);

		if (s) {
			*fp = fnv(*fp, s, strlen(s));
			free(s);
		}
		*given = 1;
		return config_parse_json(cfg, override, err);
	}
	snprintf(path, sizeof(path), "%s/%s/config.pbtxt", r->path, name);
	text = read_text(path, &len);
	if (!text) {
		if (errno == ENOENT)
			return SERVE_OK;
		return serve_err(err, SERVE_INVALID, "%s/config.pbtxt: %s", name, strerror(errno));
	}
	*fp = fnv(*fp, text, len);
	*given = 1;
	st = config_parse_pbtxt(cfg, text, len, "config.pbtxt", err);
	free(text);
	return st;
}

/* Versions the policy selects among those on disk. */
static size_t select_versions(const struct model_config *cfg, const int64_t *avail,
			      size_t n, int64_t *out)
{
	size_t k = 0, i, j;

	switch (cfg->vp_kind) {
	case VP_ALL:
		memcpy(out, avail, n * sizeof(*out));
		return n;
	case VP_LATEST:
		i = n > (size_t)cfg->vp_latest ? n - (size_t)cfg->vp_latest : 0;
		for (; i < n; i++)
			out[k++] = avail[i];
		return k;
	case VP_SPECIFIC:
		/* A version listed twice is selected once. */
		for (i = 0; i < n; i++)
			for (j = 0; j < cfg->vp_count; j++)
				if (avail[i] == cfg->vp_versions[j]) {
					out[k++] = avail[i];
					break;
				}
		return k;
	}
	return 0;
}

/* Each pointer once: a version freed twice is a double free. */
static size_t unique_versions(struct model_version **v, size_t n)
{
	size_t i, j, k = 0;

	for (i = 0; i < n; i++) {
		for (j = 0; j < k && v[j] != v[i]; j++)
			;
		if (j == k)
			v[k++] = v[i];
	}
	return k;
}

static struct model_version *pick(struct model_entry *e, int64_t version);

static int do_load(struct repository *r, const char *name, const json_t *override,
		   int64_t only, char *err)
{
	struct model_entry *e;
	struct model_config cfg;
	struct model_version *fresh[MAX_VERSIONS] = { 0 }, *next[MAX_VERSIONS] = { 0 },
		*old[MAX_VERSIONS] = { 0 };
	int64_t avail[MAX_VERSIONS], sel[MAX_VERSIONS];
	size_t navail, nsel, i, j, nnext = 0, nold = 0;
	uint64_t cfg_fp;
	int given, st = SERVE_OK;
	char dir[8192], refused[256];

	if (!valid_name(name))
		return serve_err(err, SERVE_INVALID, "'%s' is not a valid model name", name);
	snprintf(dir, sizeof(dir), "%s/%s", r->path, name);
	if (!is_dir(dir))
		return serve_err(err, SERVE_NOT_FOUND,
				 "failed to load '%s': no model directory '%s'", name, name);
	e = get_entry(r, name, 1);
	if (!e)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	pthread_mutex_lock(&r->lock);
	e->wanted = 1;
	pthread_mutex_unlock(&r->lock);
	st = read_config(r, name, override, &cfg, &given, &cfg_fp, err);
	if (st)
		goto failed_model;
	/* An ensemble's steps load first, as Triton's composing models do. */
	for (i = 0; i < cfg.num_steps; i++) {
		struct model_entry *se = get_entry(r, cfg.steps[i].model, 0);
		char msg[SERVE_ERR_MAX];
		int loaded;

		if (!strcmp(cfg.steps[i].model, name))
			continue;	/* ensemble_create() says what is wrong */
		if (se) {
			pthread_rwlock_rdlock(&se->lock);
			loaded = pick(se, cfg.steps[i].version) != NULL;
			pthread_rwlock_unlock(&se->lock);
			if (loaded)
				continue;
		}
		if (r->load_depth >= 4) {
			st = serve_err(err, SERVE_INVALID,
				       "failed to load '%s': ensembles nest more than 4 deep", name);
			goto failed_model;
		}
		r->load_depth++;
		st = do_load(r, cfg.steps[i].model, NULL, -1, msg);
		r->load_depth--;
		if (st) {
			st = serve_err(err, st, "failed to load ensemble '%s': step %zu: %s", name, i,
				       msg);
			goto failed_model;
		}
	}
	navail = list_versions(r, name, &cfg, avail, refused, sizeof(refused));
	if (refused[0]) {
		/* '01' next to '1' is ambiguous: which one did the operator mean? */
		st = serve_err(err, SERVE_INVALID,
			       "failed to load '%s': version directory '%s/%s' is not a version number in canonical form (1, 2, 10, ...: no leading zero, sign or space)",
			       name, name, refused);
		goto failed_model;
	}
	if (only > 0) {
		/* Our extension: this version besides the loaded ones. */
		nsel = 0;
		for (i = 0; i < navail; i++)
			if (avail[i] == only)
				sel[nsel++] = only;
		if (!nsel) {
			st = serve_err(err, SERVE_NOT_FOUND,
				       "failed to load '%s' version %" PRId64 ": no such version directory with a model file",
				       name, only);
			goto failed_model;
		}
		pthread_rwlock_rdlock(&e->lock);
		for (i = 0; i < e->num_loaded && nsel < MAX_VERSIONS; i++)
			if (e->loaded[i]->version != only)
				sel[nsel++] = e->loaded[i]->version;
		pthread_rwlock_unlock(&e->lock);
		qsort(sel, nsel, sizeof(*sel), cmp_i64);
	} else {
		nsel = select_versions(&cfg, avail, navail, sel);
	}
	nsel = dedupe_sorted(sel, nsel);
	if (!nsel && config_param(&cfg, "model_file")) {
		char file[8192];

		/* Say why the file it names is not there. */
		st = backend_resolve_file(dir, config_param(&cfg, "model_file"), file, sizeof(file),
					  err);
		if (st) {
			char msg[SERVE_ERR_MAX];

			snprintf(msg, sizeof(msg), "%s", err);
			st = serve_err(err, st, "failed to load '%s': parameter model_file %s", name,
				       msg);
			goto failed_model;
		}
	}
	if (!nsel) {
		st = serve_err(err, SERVE_INVALID,
			       "failed to load '%s': no version directory (1, 2, ...) with %s selected by the version policy",
			       name, cfg.default_model_filename[0] ? cfg.default_model_filename
								   : "model.onnx or model.npub");
		goto failed_model;
	}
	/* Load what is new or changed; keep the rest. */
	for (i = 0; i < nsel; i++) {
		char file[8192];
		uint64_t fp = cfg_fp;
		struct model_version *keep = NULL;

		model_file(r, name, sel[i], &cfg, file, sizeof(file));
		fp = fnv(fp, file, strlen(file));
		fp = fnv_stat(fp, file);
		fp = fnv(fp, r->device, strlen(r->device));
		pthread_rwlock_rdlock(&e->lock);
		for (j = 0; j < e->num_loaded; j++)
			if (e->loaded[j]->version == sel[i] && e->loaded[j]->fingerprint == fp)
				keep = e->loaded[j];
		pthread_rwlock_unlock(&e->lock);
		for (j = 0; keep && j < nnext; j++)
			if (next[j] == keep)
				keep = NULL;	/* already kept: never twice */
		if (keep) {
			next[nnext++] = keep;
			continue;
		}
		st = load_version(r, name, &cfg, given, sel[i], fp, &fresh[i], err);
		if (st) {
			char msg[SERVE_ERR_MAX];
			struct version_state *vs;

			snprintf(msg, sizeof(msg), "failed to load '%s' version %" PRId64 ": %s",
				 name, sel[i], err);
			relative_paths(r, msg);
			serve_err(err, st, "%s", msg);
			serve_log(SERVE_LOG_ERROR, "%s", msg);
			pthread_mutex_lock(&r->lock);
			vs = state_of(e, sel[i]);
			snprintf(vs->reason, sizeof(vs->reason), "%s", msg);
			/* Loading one more version failed: that version's row says
			 * so, not the rows of those still serving. */
			if (only <= 0)
				snprintf(e->reason, sizeof(e->reason), "%s", msg);
			pthread_mutex_unlock(&r->lock);
			for (j = 0; j < MAX_VERSIONS; j++)
				free_version(fresh[j]);
			return st;
		}
		next[nnext++] = fresh[i];
	}
	/* The swap. */
	pthread_rwlock_wrlock(&e->lock);
	for (i = 0; i < e->num_loaded; i++) {
		int kept = 0;

		for (j = 0; j < nnext; j++)
			kept |= next[j] == e->loaded[i];
		if (!kept)
			old[nold++] = e->loaded[i];
	}
	memcpy(e->loaded, next, nnext * sizeof(next[0]));
	e->num_loaded = nnext;
	pthread_rwlock_unlock(&e->lock);
	nold = unique_versions(old, nold);

	pthread_mutex_lock(&r->lock);
	e->reason[0] = '\0';
	for (i = 0; i < e->num_states; i++) {
		e->states[i].ready = 0;
		snprintf(e->states[i].reason, sizeof(e->states[i].reason), "unloaded");
	}
	for (i = 0; i < nnext; i++) {
		struct version_state *vs = state_of(e, next[i]->version);

		vs->ready = 1;
		vs->reason[0] = '\0';
	}
	pthread_mutex_unlock(&r->lock);
	/* Requests queued on the old versions finish there. */
	for (i = 0; i < nold; i++) {
		serve_log(SERVE_LOG_INFO, "unloading model '%s' version %" PRId64 " (replaced)",
			  name, old[i]->version);
		free_version(old[i]);
	}
	return SERVE_OK;

failed_model:
	relative_paths(r, err);
	serve_log(SERVE_LOG_ERROR, "model '%s': %s", name, err);
	pthread_mutex_lock(&r->lock);
	if (only <= 0)
		snprintf(e->reason, sizeof(e->reason), "%s", err);
	pthread_mutex_unlock(&r->lock);
	return st;
}

int repository_load(struct repository *r, const char *name, const json_t *config_override,
		    int64_t version, char *err)
{
	int st;

	pthread_mutex_lock(&r->op_lock);
	st = do_load(r, name, config_override, version, err);
	pthread_mutex_unlock(&r->op_lock);
	return st;
}

static int do_unload(struct repository *r, const char *name, int64_t version, char *err)
{
	struct model_entry *e = get_entry(r, name, 0);
	struct model_version *old[MAX_VERSIONS];
	size_t i, n = 0, keep = 0;

	if (!e)
		return serve_err(err, SERVE_NOT_FOUND, "failed to unload '%s': unknown model", name);
	pthread_rwlock_wrlock(&e->lock);
	for (i = 0; i < e->num_loaded; i++) {
		if (version < 0 || e->loaded[i]->version == version)
			old[n++] = e->loaded[i];
		else
			e->loaded[keep++] = e->loaded[i];
	}
	e->num_loaded = keep;
	pthread_rwlock_unlock(&e->lock);
	n = unique_versions(old, n);
	if (version > 0 && !n)
		return serve_err(err, SERVE_NOT_FOUND,
				 "failed to unload '%s' version %" PRId64 ": not loaded", name, version);
	pthread_mutex_lock(&r->lock);
	if (version < 0)
		e->wanted = 0;
	e->reason[0] = '\0';	/* what serves changed since the last failure */
	for (i = 0; i < n; i++) {
		struct version_state *vs = state_of(e, old[i]->version);

		vs->ready = 0;
		snprintf(vs->reason, sizeof(vs->reason), "unloaded");
	}
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < n; i++) {
		serve_log(SERVE_LOG_INFO, "unloading model '%s' version %" PRId64 " (draining)",
			  name, old[i]->version);
		free_version(old[i]);
	}
	return SERVE_OK;
}

int repository_unload(struct repository *r, const char *name, int64_t version, char *err)
{
	int st;

	pthread_mutex_lock(&r->op_lock);
	st = do_unload(r, name, version, err);
	pthread_mutex_unlock(&r->op_lock);
	return st;
}

enum control_mode repository_mode(const struct repository *r)
{
	return r->opts.mode;
}

/* ---- Queries --------------------------------------------------------------------- */

/* Model directories on disk, sorted. */
static size_t list_models(const struct repository *r, char (**names)[SERVE_NAME_MAX])
{
	struct dirent **list;
	char path[8192];
	int n, i;
	size_t k = 0;

	*names = NULL;
	n = scandir(r->path, &list, NULL, alphasort);
	if (n < 0)
		return 0;
	*names = calloc((size_t)n + 1, sizeof(**names));
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", r->path, list[i]->d_name);
		if (*names && valid_name(list[i]->d_name) && is_dir(path))
			snprintf((*names)[k++], SERVE_NAME_MAX, "%.*s", SERVE_NAME_MAX - 1,
				 list[i]->d_name);
		free(list[i]);
	}
	free(list);
	return k;
}

json_t *repository_index(struct repository *r, int ready_only)
{
	char (*names)[SERVE_NAME_MAX];
	size_t n = list_models(r, &names), i, j;
	json_t *arr = json_array();
	struct model_entry *e;

	pthread_mutex_lock(&r->lock);
	/* Models loaded but gone from disk are listed too. */
	for (e = r->models; e; e = e->next) {
		int on_disk = 0;

		for (i = 0; i < n; i++)
			on_disk |= !strcmp(names[i], e->name);
		if (!on_disk && loaded_count(e)) {
			char (*nn)[SERVE_NAME_MAX] = realloc(names, (n + 1) * sizeof(*names));

			if (nn) {
				names = nn;
				snprintf(names[n++], SERVE_NAME_MAX, "%s", e->name);
			}
		}
	}
	for (i = 0; i < n; i++) {
		e = find_entry(r, names[i], 0);
		if (!e || !e->num_states) {
			if (!ready_only) {
				json_t *o = json_pack("{s:s}", "name", names[i]);

				if (e && e->reason[0]) {
					json_object_set_new(o, "state", json_string("UNAVAILABLE"));
					json_object_set_new(o, "reason", json_string(e->reason));
				}
				json_array_append_new(arr, o);
			}
			continue;
		}
		for (j = 0; j < e->num_states; j++) {
			const struct version_state *vs = &e->states[j];
			char v[32];

			if (ready_only && !vs->ready)
				continue;
			snprintf(v, sizeof(v), "%" PRId64, vs->version);
			json_array_append_new(arr, json_pack(
				"{s:s, s:s, s:s, s:s}", "name", e->name, "version", v,
				"state", vs->ready ? "READY" : "UNAVAILABLE",
				"reason", vs->ready && e->reason[0] ? e->reason : vs->reason));
		}
	}
	pthread_mutex_unlock(&r->lock);
	free(names);
	return arr;
}

int repository_ready(struct repository *r)
{
	struct model_entry *e;
	int ready = 1;

	if (!r->opts.strict_readiness)
		return 1;
	pthread_mutex_lock(&r->lock);
	for (e = r->models; e; e = e->next)
		if (e->wanted && !loaded_count(e))
			ready = 0;
	pthread_mutex_unlock(&r->lock);
	return ready;
}

/* Under e->lock: the version asked for (-1: the latest). */
static struct model_version *pick(struct model_entry *e, int64_t version)
{
	size_t i;

	if (!e->num_loaded)
		return NULL;
	if (version < 0)
		return e->loaded[e->num_loaded - 1];
	for (i = 0; i < e->num_loaded; i++)
		if (e->loaded[i]->version == version)
			return e->loaded[i];
	return NULL;
}

static int not_found(char *err, const char *name, int64_t version, int known)
{
	if (!known)
		return serve_err(err, SERVE_NOT_FOUND, "unknown model '%s'", name);
	if (version < 0)
		return serve_err(err, SERVE_NOT_FOUND, "model '%s' has no loaded version", name);
	return serve_err(err, SERVE_NOT_FOUND, "model '%s' version %" PRId64 " is not loaded",
			 name, version);
}

int repository_model_ready(struct repository *r, const char *name, int64_t version)
{
	struct model_entry *e = get_entry(r, name, 0);
	int ready;

	if (!e)
		return 0;
	pthread_rwlock_rdlock(&e->lock);
	ready = pick(e, version) != NULL;
	pthread_rwlock_unlock(&e->lock);
	return ready;
}

/*
 * A decoded request to version 'mv': answered from its response cache
 * ('done' called), or queued on its ensemble or scheduler. A client's
 * request (traced) gets a trace. On an error nothing is queued.
 */
static int dispatch(struct model_version *mv, const char *name, struct infer_request *req,
		    int traced, char *err)
{
	int st;

	snprintf(req->model, sizeof(req->model), "%s", name);
	req->version = mv->version;
	if (traced)
		trace_begin(req);
	if (mv->cfg.response_cache && response_cache_lookup(mv->load_id, mv->stats, req) == 1) {
		/* Answered from the cache: neither queued nor run. */
		req->done(req, req->done_arg);
		return SERVE_OK;
	}
	st = mv->ens ? ensemble_enqueue(mv->ens, req, err) : scheduler_enqueue(mv->sched, req, err);
	if (st) {
		response_cache_abandon(req);
		if (traced)
			trace_abandon(req);
	}
	return st;
}

int repository_infer(struct repository *r, const char *name, int64_t version,
		     const char *body, size_t len, long long json_len,
		     struct infer_request *req, char *err)
{
	struct model_entry *e = get_entry(r, name, 0);
	struct model_version *mv;
	int st;

	if (!e)
		return not_found(err, name, version, 0);
	pthread_rwlock_rdlock(&e->lock);
	mv = pick(e, version);
	if (mv)
		version_get(mv);
	pthread_rwlock_unlock(&e->lock);
	if (!mv)
		return not_found(err, name, version, 1);
	/* Outside the lock: a slow decode stalls neither a swap nor, behind
	 * the writer-preferring lock, the model's other requests. */
	st = codec_decode(body, len, json_len, &mv->cfg, &r->limits, req, err);
	if (!st) {
		st = dispatch(mv, name, req, 1, err);
		if (st)
			infer_request_clear(req);
	}
	version_put(mv);
	return st;
}

json_t *repository_ensemble_steps(struct repository *r, const char *name, int64_t version)
{
	struct model_entry *e = get_entry(r, name, 0);
	struct model_version *mv;
	json_t *steps = NULL;
	size_t i;

	if (!e)
		return NULL;
	pthread_rwlock_rdlock(&e->lock);
	mv = pick(e, version);
	if (mv && mv->cfg.num_steps) {
		steps = json_array();
		for (i = 0; i < mv->cfg.num_steps; i++)
			json_array_append_new(steps, json_string(mv->cfg.steps[i].model));
	}
	pthread_rwlock_unlock(&e->lock);
	return steps;
}

/* ---- Ensembles' calls ------------------------------------------------------------ */

static int ens_step_config(void *arg, const char *name, int64_t version,
			   const struct model_config **cfg, char *err)
{
	struct repository *r = arg;
	struct model_entry *e = get_entry(r, name, 0);
	struct model_version *mv = NULL;

	/* Under op_lock (a load): no version of it is freed meanwhile. */
	if (e) {
		pthread_rwlock_rdlock(&e->lock);
		mv = pick(e, version);
		pthread_rwlock_unlock(&e->lock);
	}
	if (!mv)
		return not_found(err, name, version, e != NULL);
	*cfg = &mv->cfg;
	return SERVE_OK;
}

/*
 * A request an ensemble built, against the step model's config: inputs
 * put in the config's order, each of the config's datatype and shape,
 * the batch read off dim 0 when the model batches, the outputs it asks
 * for among the model's.
 */
static int check_request(const struct model_config *cfg, struct infer_request *req, char *err)
{
	struct infer_tensor in[SERVE_MAX_IO];
	int b = cfg->max_batch_size > 0, d;
	size_t i, k;

	if (req->num_inputs != cfg->num_inputs)
		return serve_err(err, SERVE_INVALID, "%zu inputs for a model of %zu", req->num_inputs,
				 cfg->num_inputs);
	for (i = 0; i < cfg->num_inputs; i++) {
		const struct config_tensor *c = &cfg->inputs[i];
		struct infer_tensor *t;
		size_t elems = 1, es;

		for (k = 0; k < req->num_inputs && strcmp(req->inputs[k].name, c->name); k++)
			;
		if (k == req->num_inputs)
			return serve_err(err, SERVE_INVALID, "input '%s' is missing", c->name);
		t = &req->inputs[k];
		if (t->dtype != c->dtype)
			return serve_err(err, SERVE_INVALID, "input '%s' is %s, the model takes %s",
					 c->name, serve_dtype_name(t->dtype), serve_dtype_name(c->dtype));
		if (t->rank != c->rank + b)
			return serve_err(err, SERVE_INVALID, "input '%s' has rank %d, the model takes %d",
					 c->name, t->rank, c->rank + b);
		for (d = 0; d < t->rank; d++) {
			if (d >= b && c->dims[d - b] >= 0 && t->dims[d] != c->dims[d - b])
				return serve_err(err, SERVE_INVALID,
						 "input '%s': dim %d is %" PRId64 ", the model takes %" PRId64,
						 c->name, d, t->dims[d], c->dims[d - b]);
			elems *= (size_t)t->dims[d];
		}
		if (b && (t->dims[0] < 1 || t->dims[0] > cfg->max_batch_size))
			return serve_err(err, SERVE_INVALID,
					 "input '%s': batch %" PRId64 " is outside 1..%d", c->name,
					 t->dims[0], cfg->max_batch_size);
		es = npu_data_type_size(t->dtype);
		if (t->dtype != NPU_TYPE_STRING && t->nbytes != es * elems)
			return serve_err(err, SERVE_INVALID, "input '%s': %zu bytes for %zu elements",
					 c->name, t->nbytes, elems);
		in[i] = *t;
		if (b)
			req->batch = t->dims[0];
	}
	memcpy(req->inputs, in, sizeof(in[0]) * cfg->num_inputs);
	if (!b)
		req->batch = 1;
	for (i = 0; i < req->num_outputs; i++) {
		for (k = 0; k < cfg->num_outputs && strcmp(req->outputs[i].name, cfg->outputs[k].name);
		     k++)
			;
		if (k == cfg->num_outputs)
			return serve_err(err, SERVE_INVALID, "'%s' is not an output of the model",
					 req->outputs[i].name);
	}
	return SERVE_OK;
}

static int ens_submit(void *arg, const char *name, int64_t version, struct infer_request *req,
		      char *err)
{
	struct repository *r = arg;
	struct model_entry *e = get_entry(r, name, 0);
	struct model_version *mv = NULL;
	int st;

	if (e) {
		pthread_rwlock_rdlock(&e->lock);
		mv = pick(e, version);
		if (mv)
			version_get(mv);
		pthread_rwlock_unlock(&e->lock);
	}
	if (!mv) {
		/* Unloaded since the ensemble loaded: it cannot serve now. */
		not_found(err, name, version, e != NULL);
		return SERVE_UNAVAILABLE;
	}
	st = check_request(&mv->cfg, req, err);
	if (!st) {
		req->t_arrive = serve_now_ns();
		/* A step model's own response cache answers its steps too. */
		st = dispatch(mv, name, req, 0, err);
	}
	version_put(mv);
	return st;
}

static json_t *tensors_meta(const struct config_tensor *t, size_t n, int b)
{
	json_t *a = json_array();
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		json_t *shape = json_array();

		if (b)
			json_array_append_new(shape, json_integer(-1));
		for (k = 0; k < t[i].rank; k++)
			json_array_append_new(shape, json_integer(t[i].dims[k]));
		json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "name", t[i].name,
						   "datatype", serve_dtype_name(t[i].dtype),
						   "shape", shape));
	}
	return a;
}

json_t *repository_model_metadata(struct repository *r, const char *name,
				  int64_t version, char *err, int *status)
{
	struct model_entry *e = get_entry(r, name, 0);
	struct model_version *mv;
	json_t *o, *versions;
	size_t i;

	if (!e) {
		*status = not_found(err, name, version, 0);
		return NULL;
	}
	pthread_rwlock_rdlock(&e->lock);
	mv = pick(e, version);
	if (!mv) {
		pthread_rwlock_unlock(&e->lock);
		*status = not_found(err, name, version, 1);
		return NULL;
	}
	versions = json_array();
	for (i = 0; i < e->num_loaded; i++) {
		char v[32];

		snprintf(v, sizeof(v), "%" PRId64, e->loaded[i]->version);
		json_array_append_new(versions, json_string(v));
	}
	o = json_pack("{s:s, s:o, s:s, s:o, s:o}", "name", name, "versions", versions,
		      "platform", mv->cfg.platform[0] ? mv->cfg.platform : "onnxruntime_onnx",
		      "inputs", tensors_meta(mv->cfg.inputs, mv->cfg.num_inputs,
					     mv->cfg.max_batch_size > 0),
		      "outputs", tensors_meta(mv->cfg.outputs, mv->cfg.num_outputs,
					      mv->cfg.max_batch_size > 0));
	json_object_set_new(o, "device", json_string(mv->device));
	pthread_rwlock_unlock(&e->lock);
	*status = SERVE_OK;
	return o;
}

json_t *repository_model_config(struct repository *r, const char *name,
				int64_t version, char *err, int *status)
{
	struct model_entry *e = get_entry(r, name, 0);
	struct model_version *mv;
	json_t *o;

	if (!e) {
		*status = not_found(err, name, version, 0);
		return NULL;
	}
	pthread_rwlock_rdlock(&e->lock);
	mv = pick(e, version);
	if (!mv) {
		pthread_rwlock_unlock(&e->lock);
		*status = not_found(err, name, version, 1);
		return NULL;
	}
	o = config_to_json(&mv->cfg);
	pthread_rwlock_unlock(&e->lock);
	*status = SERVE_OK;
	return o;
}

/* ---- Poll ---------------------------------------------------------------------------- */

/* Config text, version directories and model files: what a change touches. */
static uint64_t fingerprint(const struct repository *r, const char *name)
{
	char path[8192], file[8192], refused[256];
	struct model_config cfg;
	int64_t v[MAX_VERSIONS];
	size_t n, i, len;
	uint64_t h = 14695981039346656037ull;
	char *text;

	snprintf(path, sizeof(path), "%s/%s/config.pbtxt", r->path, name);
	text = read_text(path, &len);
	config_init(&cfg, name);
	if (text) {
		char err[SERVE_ERR_MAX];

		h = fnv(h, text, len);
		config_parse_pbtxt(&cfg, text, len, "config.pbtxt", err);
		free(text);
	}
	n = list_versions(r, name, &cfg, v, refused, sizeof(refused));
	h = fnv(h, refused, strlen(refused));	/* a refused directory appearing is a change */
	for (i = 0; i < n; i++) {
		model_file(r, name, v[i], &cfg, file, sizeof(file));
		h = fnv(h, file, strlen(file));
		h = fnv_stat(h, file);
	}
	return h;
}

static void poll_once(struct repository *r)
{
	char (*names)[SERVE_NAME_MAX];
	size_t n = list_models(r, &names), i;
	struct model_entry *e;

	for (i = 0; i < n; i++) {
		uint64_t fp = fingerprint(r, names[i]);
		int apply = 0;

		e = get_entry(r, names[i], 1);
		if (!e)
			continue;
		pthread_mutex_lock(&r->lock);
		if (fp != e->applied_fp) {
			/* Stable across two polls before it is loaded. */
			if (fp == e->seen_fp)
				apply = 1;
			e->seen_fp = fp;
		}
		pthread_mutex_unlock(&r->lock);
		if (apply) {
			char err[SERVE_ERR_MAX];

			serve_log(SERVE_LOG_INFO, "poll: model '%s' changed, loading", names[i]);
			pthread_mutex_lock(&r->op_lock);
			do_load(r, names[i], NULL, -1, err);
			pthread_mutex_unlock(&r->op_lock);
			pthread_mutex_lock(&r->lock);
			e->applied_fp = fp;
			pthread_mutex_unlock(&r->lock);
		}
	}
	/* Models whose directory is gone are unloaded. */
	pthread_mutex_lock(&r->lock);
restart:
	for (e = r->models; e; e = e->next) {
		int on_disk = 0;

		for (i = 0; i < n; i++)
			on_disk |= !strcmp(names[i], e->name);
		if (!on_disk && loaded_count(e)) {
			char err[SERVE_ERR_MAX], name[SERVE_NAME_MAX];

			snprintf(name, sizeof(name), "%s", e->name);
			e->applied_fp = e->seen_fp = 0;
			pthread_mutex_unlock(&r->lock);
			serve_log(SERVE_LOG_INFO, "poll: model '%s' removed, unloading", name);
			repository_unload(r, name, -1, err);
			pthread_mutex_lock(&r->lock);
			/* From the head again, the head included: the list may
			 * have changed; 'e' has nothing loaded now. */
			goto restart;
		}
	}
	pthread_mutex_unlock(&r->lock);
	free(names);
}

static void *poll_main(void *arg)
{
	struct repository *r = arg;

	pthread_mutex_lock(&r->poll_lock);
	while (!r->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += r->opts.poll_secs > 0 ? r->opts.poll_secs : 1;
		pthread_cond_timedwait(&r->poll_cond, &r->poll_lock, &ts);
		if (r->stop)
			break;
		pthread_mutex_unlock(&r->poll_lock);
		poll_once(r);
		pthread_mutex_lock(&r->poll_lock);
	}
	pthread_mutex_unlock(&r->poll_lock);
	return NULL;
}

/* ---- Create / start / destroy ---------------------------------------------------- */

static void engine_log(void *arg, enum npu_log_level level, const char *message)
{
	(void)arg;
	serve_log(level == NPU_LOG_ERROR ? SERVE_LOG_ERROR :
		  level == NPU_LOG_WARNING ? SERVE_LOG_WARN :
		  level == NPU_LOG_INFO ? SERVE_LOG_DEBUG : SERVE_LOG_DEBUG,
		  "engine: %s", message);
}

int repository_create(const struct repo_options *o, struct repository **out, char *err)
{
	struct repository *r = calloc(1, sizeof(*r));
	struct npu_engine_options eo;
	pthread_condattr_t ca;

	*out = NULL;
	if (!r)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	r->opts = *o;
	r->ens_host.arg = r;
	r->ens_host.step_config = ens_step_config;
	r->ens_host.submit = ens_submit;
	if (!r->opts.max_json_bytes)
		r->opts.max_json_bytes = CODEC_DEFAULT_MAX_JSON_BYTES;
	if (!r->opts.json_value_slack)
		r->opts.json_value_slack = CODEC_DEFAULT_JSON_VALUE_SLACK;
	if (!r->opts.default_max_queue_size)
		r->opts.default_max_queue_size = REPO_DEFAULT_MAX_QUEUE_SIZE;
	if (!r->opts.max_new_shapes_per_minute)
		r->opts.max_new_shapes_per_minute = REPO_DEFAULT_MAX_NEW_SHAPES_PER_MINUTE;
	r->limits.max_json_bytes = r->opts.max_json_bytes;
	r->limits.json_value_slack = r->opts.json_value_slack;
	if (!realpath(o->path, r->path)) {
		int st = serve_err(err, SERVE_INVALID, "--model-repository %s: %s", o->path,
				   strerror(errno));

		free(r);
		return st;
	}
	if (!is_dir(r->path)) {
		free(r);
		return serve_err(err, SERVE_INVALID, "--model-repository %s is not a directory", o->path);
	}
	snprintf(r->device, sizeof(r->device), "%s", o->device ? o->device : "cpu");
	npu_engine_options_init(&eo);
	eo.threads = o->threads;
	eo.log = engine_log;
	eo.log_level = serve_verbose >= SERVE_LOG_DEBUG ? NPU_LOG_INFO : NPU_LOG_WARNING;
	if (npu_engine_create(&eo, &r->engine) != NPU_OK) {
		int st = serve_err(err, SERVE_INTERNAL, "engine: %s", npu_last_error());

		free(r);
		return st;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->op_lock, NULL);
	pthread_mutex_init(&r->poll_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->poll_cond, &ca);
	pthread_condattr_destroy(&ca);
	serve_log(SERVE_LOG_INFO, "model repository %s, default device %s, %d CPU threads",
		  r->path, r->device, npu_engine_threads(r->engine));
	*out = r;
	return SERVE_OK;
}

void repository_start(struct repository *r)
{
	char (*names)[SERVE_NAME_MAX];
	char err[SERVE_ERR_MAX];
	size_t n, i;
	int all = r->opts.mode != CONTROL_EXPLICIT;

	for (i = 0; i < r->opts.num_load; i++)
		if (!strcmp(r->opts.load_models[i], "*"))
			all = 1;
	if (all) {
		n = list_models(r, &names);
		for (i = 0; i < n; i++) {
			if (r->opts.mode == CONTROL_POLL) {
				struct model_entry *e = get_entry(r, names[i], 1);
				uint64_t fp = fingerprint(r, names[i]);

				if (e) {
					pthread_mutex_lock(&r->lock);
					e->applied_fp = e->seen_fp = fp;
					pthread_mutex_unlock(&r->lock);
				}
			}
			repository_load(r, names[i], NULL, -1, err);
		}
		free(names);
	} else {
		for (i = 0; i < r->opts.num_load; i++)
			if (repository_load(r, r->opts.load_models[i], NULL, -1, err))
				serve_log(SERVE_LOG_ERROR, "--load-model %s: %s",
					  r->opts.load_models[i], err);
	}
	if (r->opts.mode == CONTROL_POLL) {
		if (pthread_create(&r->poller, NULL, poll_main, r) == 0)
			r->polling = 1;
		else
			serve_log(SERVE_LOG_ERROR, "cannot start the repository poll thread");
	}
}

void repository_destroy(struct repository *r)
{
	struct model_entry *e, *next;
	char err[SERVE_ERR_MAX];

	if (!r)
		return;
	if (r->polling) {
		pthread_mutex_lock(&r->poll_lock);
		r->stop = 1;
		pthread_cond_broadcast(&r->poll_cond);
		pthread_mutex_unlock(&r->poll_lock);
		pthread_join(r->poller, NULL);
	}
	for (e = r->models; e; e = e->next)
		if (loaded_count(e))
			repository_unload(r, e->name, -1, err);
	for (e = r->models; e; e = next) {
		next = e->next;
		pthread_rwlock_destroy(&e->lock);
		free(e);
	}
	npu_engine_destroy(r->engine);
	backend_op_libraries_close();	/* the engine held their ops */
	pthread_cond_destroy(&r->poll_cond);
	pthread_mutex_destroy(&r->poll_lock);
	pthread_mutex_destroy(&r->op_lock);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
