// SPDX-License-Identifier: MIT
/* http: the REST front end on libmicrohttpd (see http.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "http.h"
#include "infer_codec.h"
#include "metrics.h"
#include "panel.h"

#define MAX_SEGMENTS 12

struct http_server {
	struct repository *repo;
	struct http_options o;
	struct MHD_Daemon *d;
	int port;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	int in_flight;		/* inference requests queued or running */
	int draining;		/* SIGTERM: new requests are refused */
	char last_log[256];	/* libmicrohttpd's last message (start errors) */
	atomic_bool started;	/* MHD_start_daemon returned: its threads log */
};

enum conn_state { CONN_RECEIVING, CONN_WAITING, CONN_DONE };

struct conn {
	struct http_server *srv;
	char *body;
	size_t len, cap;
	int too_large;
	enum conn_state state;
	pthread_mutex_t lock;
	int finished, suspended;
	int counted;		/* an inference request: in_flight until sent */
	struct MHD_Connection *mhd;
	struct infer_request req;
};

struct response {
	int status;
	char *body;		/* malloc'd */
	size_t len;
	size_t json_len;	/* binary: the JSON header's size */
	const char *content_type;
	int close;		/* Connection: close */
	const char *www_auth;	/* WWW-Authenticate (401) */
	const char *disposition;	/* Content-Disposition */
	const char *cache;	/* Cache-Control */
	int static_body;	/* body is not malloc'd */
};

/* ---- Responses --------------------------------------------------------------- */

static void set_json(struct response *r, int status, json_t *j)
{
	r->status = status;
	r->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	r->len = r->body ? strlen(r->body) : 0;
	r->content_type = "application/json";
	json_decref(j);
}

static void set_error(struct response *r, int status, const char *msg)
{
	r->status = status;
	r->body = codec_error_json(msg, &r->len);
	r->content_type = "application/json";
}

static void set_empty(struct response *r, int status)
{
	r->status = status;
	r->body = NULL;
	r->len = 0;
	r->content_type = NULL;
}

static enum MHD_Result send_response(struct MHD_Connection *conn, struct response *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(r->len, r->body ? r->body : (void *)"",
					       r->body && !r->static_body ? MHD_RESPMEM_MUST_FREE
									  : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(r->body);
		return MHD_NO;
	}
	if (r->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	if (r->close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (r->www_auth)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, r->www_auth);
	if (r->disposition)
		MHD_add_response_header(resp, "Content-Disposition", r->disposition);
	if (r->cache)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, r->cache);
	/* The panel's pages: no framing by other sites, no inline script. */
	if (r->content_type && !strncmp(r->content_type, "text/html", 9))
		MHD_add_response_header(resp, "Content-Security-Policy",
					"default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (r->json_len) {
		char n[32];

		snprintf(n, sizeof(n), "%zu", r->json_len);
		MHD_add_response_header(resp, "Inference-Header-Content-Length", n);
	}
	metrics_http_request(r->status);
	ret = MHD_queue_response(conn, (unsigned int)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- Handlers ------------------------------------------------------------------- */

struct args {
	const char *asset;	/* {a}: a panel asset's file name */
	const char *model;
	const char *version;	/* NULL: not in the path */
	int64_t v;		/* -1 */
};

typedef int (*handler_fn)(struct conn *c, struct args *a, struct response *r);

#define SUSPENDED 1

static json_t *body_json(struct conn *c, struct response *r, int *bad)
{
	json_error_t e;
	json_t *j;

	*bad = 0;
	if (!c->len)
		return NULL;
	j = json_loadb(c->body, c->len, JSON_REJECT_DUPLICATES, &e);
	if (!j || !json_is_object(j)) {
		char msg[SERVE_ERR_MAX];

		if (j)
			snprintf(msg, sizeof(msg), "the request body is not a JSON object");
		else
			snprintf(msg, sizeof(msg), "malformed JSON in the request at line %d column %d: %s",
				 e.line, e.column, e.text);
		json_decref(j);
		set_error(r, SERVE_INVALID, msg);
		*bad = 1;
		return NULL;
	}
	return j;
}

static int h_live(struct conn *c, struct args *a, struct response *r)
{
	(void)c;
	(void)a;
	set_empty(r, 200);
	return 0;
}

static int h_ready(struct conn *c, struct args *a, struct response *r)
{
	(void)a;
	set_empty(r, repository_ready(c->srv->repo) ? 200 : 400);
	return 0;
}

static int h_server_meta(struct conn *c, struct args *a, struct response *r)
{
	(void)c;
	(void)a;
	set_json(r, 200, json_pack("{s:s, s:s, s:[s, s, s, s, s]}", "name", "npu-serve",
				   "version", npu_version(), "extensions",
				   "binary_tensor_data", "model_repository", "statistics",
				   "schedule_policy", "model_configuration"));
	return 0;
}

static int h_model_meta(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	int st;
	json_t *j = repository_model_metadata(c->srv->repo, a->model, a->v, err, &st);

	if (!j)
		set_error(r, st, err);
	else
		set_json(r, 200, j);
	return 0;
}

static int h_model_ready(struct conn *c, struct args *a, struct response *r)
{
	set_empty(r, repository_model_ready(c->srv->repo, a->model, a->v) ? 200 : 400);
	return 0;
}

static int h_model_config(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	int st;
	json_t *j = repository_model_config(c->srv->repo, a->model, a->v, err, &st);

	if (!j)
		set_error(r, st, err);
	else
		set_json(r, 200, j);
	return 0;
}

static int h_model_stats(struct conn *c, struct args *a, struct response *r)
{
	json_t *j;

	if (a->model && !repository_model_ready(c->srv->repo, a->model, a->v)) {
		char err[SERVE_ERR_MAX];
		int st;
		json_t *m = repository_model_metadata(c->srv->repo, a->model, a->v, err, &st);

		if (!m) {
			set_error(r, st, err);
			return 0;
		}
		json_decref(m);
	}
	j = metrics_stats_json(a->model, a->v);
	set_json(r, 200, j);
	return 0;
}

static int h_metrics(struct conn *c, struct args *a, struct response *r)
{
	(void)c;
	(void)a;
	r->body = metrics_render(&r->len);
	if (!r->body) {
		set_error(r, SERVE_INTERNAL, "cannot render the metrics");
		return 0;
	}
	r->status = 200;
	r->content_type = "text/plain; version=0.0.4; charset=utf-8";
	return 0;
}

static int h_index(struct conn *c, struct args *a, struct response *r)
{
	int bad, ready = 0;
	json_t *j = body_json(c, r, &bad), *v;

	(void)a;
	if (bad)
		return 0;
	v = j ? json_object_get(j, "ready") : NULL;
	if (v && !json_is_boolean(v)) {
		json_decref(j);
		set_error(r, SERVE_INVALID, "'ready' must be true or false");
		return 0;
	}
	ready = v && json_is_true(v);
	json_decref(j);
	set_json(r, 200, repository_index(c->srv->repo, ready));
	return 0;
}

static int control_allowed(struct conn *c, struct response *r)
{
	enum control_mode m = repository_mode(c->srv->repo);

	if (m == CONTROL_EXPLICIT)
		return 1;
	set_error(r, SERVE_UNAVAILABLE,
		  m == CONTROL_POLL ? "explicit model load / unload is not allowed if polling is enabled (--model-control-mode=poll)"
				    : "explicit model load / unload is not allowed with --model-control-mode=none");
	return 0;
}

static int h_load(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	int bad, st;
	json_t *j, *params, *cfg = NULL, *parsed = NULL;

	if (!control_allowed(c, r))
		return 0;
	j = body_json(c, r, &bad);
	if (bad)
		return 0;
	params = j ? json_object_get(j, "parameters") : NULL;
	if (params && !json_is_object(params)) {
		json_decref(j);
		set_error(r, SERVE_INVALID, "'parameters' is not an object");
		return 0;
	}
	cfg = params ? json_object_get(params, "config") : NULL;
	if (cfg) {
		json_error_t e;

		if (!json_is_string(cfg)) {
			json_decref(j);
			set_error(r, SERVE_INVALID, "parameters.config must be a string holding the model config as JSON");
			return 0;
		}
		parsed = json_loads(json_string_value(cfg), JSON_REJECT_DUPLICATES, &e);
		if (!parsed) {
			snprintf(err, sizeof(err), "parameters.config: malformed JSON at line %d column %d: %s",
				 e.line, e.column, e.text);
			json_decref(j);
			set_error(r, SERVE_INVALID, err);
			return 0;
		}
	}
	st = repository_load(c->srv->repo, a->model, parsed, a->version ? a->v : -1, err);
	json_decref(parsed);
	json_decref(j);
	if (st)
		set_error(r, st, err);
	else
		set_empty(r, 200);
	return 0;
}

static int h_unload(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	int st;

	if (!control_allowed(c, r))
		return 0;
	st = repository_unload(c->srv->repo, a->model, a->version ? a->v : -1, err);
	if (st)
		set_error(r, st, err);
	else
		set_empty(r, 200);
	return 0;
}

/* Called by an instance thread when the request is done. */
static void infer_done(struct infer_request *req, void *arg)
{
	struct conn *c = arg;
	struct http_server *s = c->srv;

	(void)req;
	pthread_mutex_lock(&c->lock);
	c->finished = 1;
	if (c->suspended)
		MHD_resume_connection(c->mhd);
	pthread_mutex_unlock(&c->lock);
	(void)s;
}

static void infer_response(struct conn *c, struct response *r)
{
	if (c->req.status) {
		set_error(r, c->req.status, c->req.err);
		return;
	}
	if (codec_encode(&c->req, &r->body, &r->len, &r->json_len)) {
		set_error(r, SERVE_INTERNAL, "cannot encode the response");
		return;
	}
	r->status = 200;
	r->content_type = r->json_len ? "application/octet-stream" : "application/json";
}

static int h_infer(struct conn *c, struct args *a, struct response *r)
{
	const char *hl = MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND,
						     "Inference-Header-Content-Length");
	struct http_server *s = c->srv;
	char err[SERVE_ERR_MAX];
	long long json_len = -1;
	int st;

	if (hl) {
		char *end;

		errno = 0;
		json_len = strtoll(hl, &end, 10);
		if (errno || end == hl || *end || json_len < 0) {
			set_error(r, SERVE_INVALID, "Inference-Header-Content-Length is not a non-negative integer");
			return 0;
		}
	}
	memset(&c->req, 0, sizeof(c->req));
	c->req.t_arrive = serve_now_ns();
	c->req.done = infer_done;
	c->req.done_arg = c;
	pthread_mutex_lock(&s->lock);
	s->in_flight++;
	pthread_mutex_unlock(&s->lock);
	c->counted = 1;
	st = repository_infer(s->repo, a->model, a->v, c->body ? c->body : "", c->len, json_len,
			      &c->req, err);
	if (st) {
		serve_log(SERVE_LOG_DEBUG, "infer '%s': %d %s", a->model, st, err);
		set_error(r, st, err);
		return 0;
	}
	pthread_mutex_lock(&c->lock);
	if (!c->finished) {
		c->state = CONN_WAITING;
		c->suspended = 1;
		MHD_suspend_connection(c->mhd);
		pthread_mutex_unlock(&c->lock);
		return SUSPENDED;
	}
	pthread_mutex_unlock(&c->lock);
	infer_response(c, r);
	return 0;
}

/* ---- The panel -------------------------------------------------------------------- */

static int h_panel_asset(struct conn *c, struct args *a, struct response *r)
{
	const char *url = a->asset;
	size_t i;

	(void)c;
	for (i = 0; i < panel_num_assets; i++)
		if (!strcmp(panel_assets[i].path, url)) {
			r->status = 200;
			r->body = (char *)panel_assets[i].data;
			r->len = panel_assets[i].len;
			r->static_body = 1;
			r->content_type = panel_assets[i].content_type;
			r->cache = "no-cache";
			return 0;
		}
	set_error(r, SERVE_NOT_FOUND, "no such panel asset");
	return 0;
}

static int h_panel_index(struct conn *c, struct args *a, struct response *r)
{
	a->asset = "index.html";
	return h_panel_asset(c, a, r);
}

/*
 * Chart.js from Debian's libjs-chart.js (MIT), read at each request so
 * the package's updates apply; the panel needs nothing from the network.
 */
static int h_panel_chartjs(struct conn *c, struct args *a, struct response *r)
{
	const char *path = c->srv->o.chartjs_path;
	char msg[SERVE_ERR_MAX];
	FILE *f;
	long n;

	(void)a;
	if (!path)
		path = "/usr/share/javascript/chart.js/chart.min.js";
	f = fopen(path, "rb");
	if (!f) {
		snprintf(msg, sizeof(msg), "the panel's charts need %.300s (Debian package libjs-chart.js): %s",
			 path, strerror(errno));
		serve_log(SERVE_LOG_WARN, "%s", msg);
		set_error(r, SERVE_UNAVAILABLE, msg);
		return 0;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(r->body = malloc((size_t)n + 1)) || fread(r->body, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(r->body);
		r->body = NULL;
		snprintf(msg, sizeof(msg), "cannot read %.300s", path);
		set_error(r, SERVE_INTERNAL, msg);
		return 0;
	}
	fclose(f);
	r->len = (size_t)n;
	r->status = 200;
	r->content_type = "text/javascript; charset=utf-8";
	r->cache = "max-age=3600";
	return 0;
}

static int h_panel_state(struct conn *c, struct args *a, struct response *r)
{
	json_t *j = panel_state_json();
	const struct serve_auth *au = c->srv->o.auth;
	static const char *const modes[] = { "none", "explicit", "poll" };

	(void)a;
	json_object_set_new(j, "models", repository_index(c->srv->repo, 0));
	json_object_set_new(j, "server", json_pack(
		"{s:s, s:s, s:b, s:b, s:b}", "version", npu_version(),
		"model_control_mode", modes[repository_mode(c->srv->repo)],
		"api_token_required", au && au->api_token,
		"admin_token_required", au && au->admin_token,
		"tls", c->srv->o.tls_cert_pem != NULL));
	/* Six digits are plenty for charts and keep the poll small. */
	r->status = 200;
	r->body = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
	r->len = r->body ? strlen(r->body) : 0;
	r->content_type = "application/json";
	json_decref(j);
	r->cache = "no-store";
	return 0;
}

static int h_panel_trace(struct conn *c, struct args *a, struct response *r)
{
	const char *model = MHD_lookup_connection_value(c->mhd, MHD_GET_ARGUMENT_KIND, "model");
	json_t *j = panel_trace_json(model && *model ? model : NULL);

	(void)a;
	if (!j) {
		set_error(r, SERVE_NOT_FOUND, model ? "no request of this model has run yet"
						    : "no request has run yet");
		return 0;
	}
	set_json(r, 200, j);
	r->disposition = "attachment; filename=\"npu-serve-request.trace.json\"";
	r->cache = "no-store";
	return 0;
}

/* ---- The endpoint table ---------------------------------------------------------- */

struct endpoint {
	const char *method;
	const char *pattern;	/* {m} model, {v} version */
	handler_fn fn;
	int metrics_port;	/* also on --metrics-port */
	enum auth_scope scope;	/* the token it needs (auth.h) */
};

/*
 * Health and /metrics stay open (probes and Prometheus scrapes carry no
 * token); the panel's static files too (they hold no data). The rest
 * needs the API token, the repository API the admin token.
 */
static const struct endpoint endpoints[] = {
	{ "GET", "v2/health/live", h_live, 0, AUTH_OPEN },
	{ "GET", "v2/health/ready", h_ready, 0, AUTH_OPEN },
	{ "GET", "v2", h_server_meta, 0, AUTH_API },
	{ "GET", "v2/models/stats", h_model_stats, 0, AUTH_API },
	{ "GET", "v2/models/{m}", h_model_meta, 0, AUTH_API },
	{ "GET", "v2/models/{m}/versions/{v}", h_model_meta, 0, AUTH_API },
	{ "GET", "v2/models/{m}/ready", h_model_ready, 0, AUTH_API },
	{ "GET", "v2/models/{m}/versions/{v}/ready", h_model_ready, 0, AUTH_API },
	{ "GET", "v2/models/{m}/config", h_model_config, 0, AUTH_API },
	{ "GET", "v2/models/{m}/versions/{v}/config", h_model_config, 0, AUTH_API },
	{ "GET", "v2/models/{m}/stats", h_model_stats, 0, AUTH_API },
	{ "GET", "v2/models/{m}/versions/{v}/stats", h_model_stats, 0, AUTH_API },
	{ "POST", "v2/models/{m}/infer", h_infer, 0, AUTH_API },
	{ "POST", "v2/models/{m}/versions/{v}/infer", h_infer, 0, AUTH_API },
	{ "POST", "v2/repository/index", h_index, 0, AUTH_ADMIN },
	{ "POST", "v2/repository/models/{m}/load", h_load, 0, AUTH_ADMIN },
	{ "POST", "v2/repository/models/{m}/unload", h_unload, 0, AUTH_ADMIN },
	{ "POST", "v2/repository/models/{m}/versions/{v}/load", h_load, 0, AUTH_ADMIN },
	{ "POST", "v2/repository/models/{m}/versions/{v}/unload", h_unload, 0, AUTH_ADMIN },
	{ "GET", "metrics", h_metrics, 1, AUTH_OPEN },
	{ "GET", "", h_panel_index, 0, AUTH_OPEN },
	{ "GET", "panel/chart.js", h_panel_chartjs, 0, AUTH_OPEN },
	{ "GET", "panel/{a}", h_panel_asset, 0, AUTH_OPEN },
	{ "GET", "v2/panel/state", h_panel_state, 0, AUTH_API },
	{ "GET", "v2/panel/trace", h_panel_trace, 0, AUTH_API },
};

#define NUM_ENDPOINTS (sizeof(endpoints) / sizeof(endpoints[0]))

static size_t split(char *path, char **seg)
{
	size_t n = 0;
	char *p = path, *save = NULL, *t;

	while ((t = strtok_r(p, "/", &save)) && n < MAX_SEGMENTS) {
		seg[n++] = t;
		p = NULL;
	}
	if (t)
		return MAX_SEGMENTS + 1;
	return n;
}

static int match(const char *pattern, char **seg, size_t n, struct args *a)
{
	char pat[128], *ps[MAX_SEGMENTS];
	size_t k, i;

	snprintf(pat, sizeof(pat), "%s", pattern);
	k = split(pat, ps);
	if (k != n)
		return 0;
	memset(a, 0, sizeof(*a));
	a->v = -1;
	for (i = 0; i < n; i++) {
		if (!strcmp(ps[i], "{m}"))
			a->model = seg[i];
		else if (!strcmp(ps[i], "{v}"))
			a->version = seg[i];
		else if (!strcmp(ps[i], "{a}"))
			a->asset = seg[i];
		else if (strcmp(ps[i], seg[i]))
			return 0;
	}
	return 1;
}

static void route(struct conn *c, const char *url, const char *method, struct response *r,
		  int *suspended)
{
	char *path = strdup(url), *seg[MAX_SEGMENTS + 1];
	size_t n, i;
	int path_known = 0;
	struct args a;

	*suspended = 0;
	pthread_mutex_lock(&c->srv->lock);
	if (c->srv->draining) {
		pthread_mutex_unlock(&c->srv->lock);
		free(path);
		set_error(r, SERVE_UNAVAILABLE, "the server is shutting down");
		r->close = 1;
		return;
	}
	pthread_mutex_unlock(&c->srv->lock);
	if (!path) {
		set_error(r, SERVE_INTERNAL, "out of memory");
		return;
	}
	n = split(path, seg);
	for (i = 0; i < NUM_ENDPOINTS; i++) {
		if (c->srv->o.metrics_only && !endpoints[i].metrics_port)
			continue;
		if (n > MAX_SEGMENTS || !match(endpoints[i].pattern, seg, n, &a))
			continue;
		path_known = 1;
		if (strcmp(method, endpoints[i].method) &&
		    !(!strcmp(method, "HEAD") && !strcmp(endpoints[i].method, "GET")))
			continue;
		if (endpoints[i].scope != AUTH_OPEN) {
			const char *h = MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND,
								    MHD_HTTP_HEADER_AUTHORIZATION);
			enum auth_result ar = auth_check(c->srv->o.auth, endpoints[i].scope, h);

			if (ar != AUTH_OK) {
				set_error(r, ar == AUTH_FORBIDDEN ? 403 : 401,
					  auth_message(ar, endpoints[i].scope));
				r->www_auth = ar == AUTH_MISSING ? "Bearer realm=\"npu-serve\"" :
					      ar == AUTH_MALFORMED ? "Bearer realm=\"npu-serve\", error=\"invalid_request\"" :
					      ar == AUTH_INVALID ? "Bearer realm=\"npu-serve\", error=\"invalid_token\"" :
					      NULL;
				free(path);
				return;
			}
		}
		if (a.version) {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(a.version, &end, 10);
			if (errno || end == a.version || *end || v < 1) {
				char msg[SERVE_ERR_MAX];

				snprintf(msg, sizeof(msg), "model version '%.64s' is not a positive integer",
					 a.version);
				set_error(r, SERVE_INVALID, msg);
				free(path);
				return;
			}
			a.v = v;
		}
		if (c->too_large) {
			char msg[SERVE_ERR_MAX];

			snprintf(msg, sizeof(msg), "the request body exceeds %zu bytes (--http-max-body-bytes)",
				 c->srv->o.max_body_bytes);
			set_error(r, 413, msg);
			free(path);
			return;
		}
		*suspended = endpoints[i].fn(c, &a, r) == SUSPENDED;
		free(path);
		return;
	}
	free(path);
	if (path_known) {
		char msg[SERVE_ERR_MAX];

		snprintf(msg, sizeof(msg), "method %.16s is not allowed on %.200s", method, url);
		set_error(r, 405, msg);
	} else {
		char msg[SERVE_ERR_MAX];

		snprintf(msg, sizeof(msg), "unknown endpoint %.200s", url);
		set_error(r, SERVE_NOT_FOUND, msg);
	}
}

/* ---- libmicrohttpd callbacks ------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection,
				  const char *url, const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *s = cls;
	struct conn *c = *con_cls;
	struct response r = { 0 };
	int suspended;

	(void)version;
	if (!c) {
		const char *cl;

		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		c->srv = s;
		c->mhd = connection;
		pthread_mutex_init(&c->lock, NULL);
		*con_cls = c;
		cl = MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > s->o.max_body_bytes)
			c->too_large = 1;	/* answered once the body is read */
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		if (!c->too_large && c->len + n > s->o.max_body_bytes)
			c->too_large = 1;
		if (!c->too_large) {
			if (c->len + n + 1 > c->cap) {
				size_t cap = c->cap ? c->cap : 4096;
				char *nb;

				while (cap < c->len + n + 1)
					cap *= 2;
				nb = realloc(c->body, cap);
				if (!nb)
					return MHD_NO;
				c->body = nb;
				c->cap = cap;
			}
			memcpy(c->body + c->len, upload_data, n);
			c->len += n;
			c->body[c->len] = '\0';
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (c->state == CONN_WAITING) {
		/* Resumed: the batch is done. */
		c->state = CONN_DONE;
		c->suspended = 0;
		infer_response(c, &r);
		return send_response(connection, &r);
	}
	if (c->state == CONN_DONE)
		return MHD_YES;
	route(c, url, method, &r, &suspended);
	if (suspended)
		return MHD_YES;
	c->state = CONN_DONE;
	return send_response(connection, &r);
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn *c = *con_cls;

	(void)cls;
	(void)connection;
	(void)toe;
	if (!c)
		return;
	if (c->counted) {
		struct http_server *s = c->srv;

		pthread_mutex_lock(&s->lock);
		s->in_flight--;
		pthread_cond_broadcast(&s->idle);
		pthread_mutex_unlock(&s->lock);
	}
	/* The instance thread that resumed us may still hold the lock. */
	pthread_mutex_lock(&c->lock);
	pthread_mutex_unlock(&c->lock);
	infer_request_clear(&c->req);
	pthread_mutex_destroy(&c->lock);
	free(c->body);
	free(c);
	*con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *s = cls;
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	/* starting: kept for the error (s->d is not set until then) */
	if (!atomic_load(&s->started))
		snprintf(s->last_log, sizeof(s->last_log), "%.200s", msg);
	serve_log(SERVE_LOG_DEBUG, "http: %s", msg);
}

int http_start(struct repository *repo, const struct http_options *o,
	       struct http_server **out, char *err)
{
	struct http_server *s = calloc(1, sizeof(*s));
	struct sockaddr_in addr;
	const union MHD_DaemonInfo *info;
	struct MHD_OptionItem pool[4];
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	int k = 0;

	*out = NULL;
	if (!s)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	s->repo = repo;
	s->o = *o;
	if (!s->o.threads)
		s->o.threads = 4;
	if (!s->o.max_body_bytes)
		s->o.max_body_bytes = 64u << 20;
	if (!s->o.timeout_secs)
		s->o.timeout_secs = 60;
	if (!s->o.max_header_bytes)
		s->o.max_header_bytes = 64u << 10;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)o->port);
	if (inet_pton(AF_INET, o->address ? o->address : "127.0.0.1", &addr.sin_addr) != 1) {
		free(s);
		return serve_err(err, SERVE_INVALID, "'%s' is not an IPv4 address", o->address);
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	/* A pool only for more than one thread (MHD warns otherwise). */
	memset(pool, 0, sizeof(pool));
	if (s->o.threads > 1) {
		pool[k].option = MHD_OPTION_THREAD_POOL_SIZE;
		pool[k++].value = s->o.threads;
	}
	if (s->o.tls_cert_pem) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			pthread_cond_destroy(&s->idle);
			pthread_mutex_destroy(&s->lock);
			free(s);
			return serve_err(err, SERVE_UNSUPPORTED,
					 "this libmicrohttpd is built without TLS (GnuTLS): --tls-cert cannot be served");
		}
		flags |= MHD_USE_TLS;
		pool[k].option = MHD_OPTION_HTTPS_MEM_KEY;
		pool[k++].ptr_value = (void *)s->o.tls_key_pem;
		pool[k].option = MHD_OPTION_HTTPS_MEM_CERT;
		pool[k++].ptr_value = (void *)s->o.tls_cert_pem;
	}
	pool[k].option = MHD_OPTION_END;
	s->d = MHD_start_daemon(flags,
				0, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
				MHD_OPTION_ARRAY, pool,
				MHD_OPTION_CONNECTION_TIMEOUT, s->o.timeout_secs,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->o.max_header_bytes,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)1024,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
				MHD_OPTION_END);
	if (!s->d) {
		int e = errno, st;

		if (s->o.tls_cert_pem)
			st = serve_err(err, SERVE_UNAVAILABLE, "cannot start HTTPS on %s:%d: %s",
				       o->address ? o->address : "127.0.0.1", o->port,
				       s->last_log[0] ? s->last_log : strerror(e));
		else
			st = serve_err(err, SERVE_UNAVAILABLE, "cannot listen on %s:%d: %s",
				       o->address ? o->address : "127.0.0.1", o->port, strerror(e));
		pthread_cond_destroy(&s->idle);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return st;
	}
	atomic_store(&s->started, true);
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : o->port;
	*out = s;
	return SERVE_OK;
}

int http_port(const struct http_server *s)
{
	return s->port;
}

/*
 * The listening socket closes (MHD_quiesce_daemon: new connections are
 * refused) and a new request on a connection already open gets 503 with
 * "Connection: close"; requests received before go on.
 */
void http_quiesce(struct http_server *s)
{
	MHD_socket fd;

	if (!s || !s->d)
		return;
	pthread_mutex_lock(&s->lock);
	s->draining = 1;
	pthread_mutex_unlock(&s->lock);
	fd = MHD_quiesce_daemon(s->d);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

int http_wait_idle(struct http_server *s, int timeout_ms)
{
	struct timespec ts;
	int idle;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (s->in_flight > 0)
		if (pthread_cond_timedwait(&s->idle, &s->lock, &ts) == ETIMEDOUT)
			break;
	idle = s->in_flight <= 0;
	pthread_mutex_unlock(&s->lock);
	return idle;
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/*
 * Hand the server a connected socket as if it had been accepted (the HTTP
 * request-path fuzzer feeds one end of a socketpair). The peer address is
 * reported as 127.0.0.1. The server owns 'fd' from here: libmicrohttpd
 * closes it on failure too.
 */
int http_add_connection(struct http_server *s, int fd, char *err)
{
	struct sockaddr_in peer = { .sin_family = AF_INET };

	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (MHD_add_connection(s->d, fd, (const struct sockaddr *)&peer, sizeof(peer)) != MHD_YES)
		return serve_err(err, SERVE_UNAVAILABLE, "cannot add connection fd %d: %s", fd,
				 strerror(errno));
	return SERVE_OK;
}
