// SPDX-License-Identifier: MIT
/* http: the REST front end on libmicrohttpd (see http.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "http.h"
#include "infer_codec.h"
#include "logging.h"
#include "metrics.h"
#include "panel.h"
#include "trace.h"
#include "shm.h"

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
	int loopback;		/* listening on 127.0.0.0/8: Host names are checked */
	atomic_size_t buffered;	/* request body bytes held by all connections */
	/* Every open TCP connection, for the deadline and disconnect watch. */
	pthread_mutex_t clients_lock;
	struct client *clients;
	pthread_t watch;
	int watch_started;
	atomic_bool stopping;
};

/*
 * One TCP connection (libmicrohttpd's socket context), for what the
 * library does not bound itself: its inactivity timeout restarts on
 * every byte, so a client trickling a header line a minute holds a
 * connection forever. The watch thread closes a connection whose phase
 * outlives its deadline and cancels a waiting request whose client left.
 */
enum client_phase {
	PHASE_HEADERS,		/* awaiting a request's headers */
	PHASE_BODY,		/* headers in, the body arriving */
	PHASE_HANDLER,		/* being answered: the inactivity timeout applies */
	PHASE_WAITING,		/* an inference request queued: watch for a hang-up */
};

struct client {
	struct client *prev, *next;
	int fd;
	enum client_phase phase;	/* under the server's clients_lock */
	uint64_t phase_start_ns;
	int closing;		/* shut down by the watch */
	struct conn *waiting;	/* PHASE_WAITING: its request */
};

struct args {
	const char *asset;	/* {a}: a panel asset's file name */
	const char *region;	/* {r}: a shared memory region's name */
	const char *model;
	const char *version;	/* NULL: not in the path */
	int64_t v;		/* -1 */
};

struct endpoint;

enum conn_state { CONN_RECEIVING, CONN_WAITING, CONN_DONE };

struct conn {
	struct http_server *srv;
	struct client *client;
	char *body;		/* body_mem + pad */
	char *body_mem;		/* malloc'd */
	size_t len, cap, pad;
	size_t reserved;	/* of srv->buffered, returned when the request ends */
	char *path;		/* the URL split into segments: args point into it */
	const struct endpoint *ep;	/* the route, chosen on the headers */
	struct args args;
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
	/* Sent after body, without copying them into it (binary outputs):
	 * malloc'd, freed with the response. */
	size_t num_parts;
	void *parts[SERVE_MAX_IO];
	size_t part_len[SERVE_MAX_IO];
};

/* What a response sent from several buffers frees once it is sent. */
struct parts_holder {
	size_t n;
	void *mem[SERVE_MAX_IO + 1];
};

static void free_parts(void *cls)
{
	struct parts_holder *h = cls;
	size_t i;

	for (i = 0; i < h->n; i++)
		free(h->mem[i]);
	free(h);
}

static void free_response_parts(struct response *r)
{
	size_t i;

	for (i = 0; i < r->num_parts; i++)
		free(r->parts[i]);
	r->num_parts = 0;
}

/* The body and its parts as one response (no copy of the parts). */
static struct MHD_Response *parts_response(struct response *r)
{
	struct MHD_IoVec iov[SERVE_MAX_IO + 1];
	struct parts_holder *h = calloc(1, sizeof(*h));
	struct MHD_Response *resp;
	size_t i;

	if (!h)
		return NULL;
	iov[0].iov_base = r->body;
	iov[0].iov_len = r->len;
	h->mem[h->n++] = r->body;
	for (i = 0; i < r->num_parts; i++) {
		iov[i + 1].iov_base = r->parts[i];
		iov[i + 1].iov_len = r->part_len[i];
		h->mem[h->n++] = r->parts[i];
	}
	resp = MHD_create_response_from_iovec(iov, (unsigned int)(r->num_parts + 1), free_parts, h);
	if (!resp) {
		free(h);
		return NULL;
	}
	r->num_parts = 0;	/* the response owns them now */
	r->body = NULL;
	return resp;
}

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

	if (r->num_parts && r->body)
		resp = parts_response(r);
	else
		resp = MHD_create_response_from_buffer(r->len, r->body ? r->body : (void *)"",
						       r->body && !r->static_body ?
						       MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(r->body);
		free_response_parts(r);
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

typedef int (*handler_fn)(struct conn *c, struct args *a, struct response *r);

static void set_phase(struct http_server *s, struct client *cl, enum client_phase p,
		      struct conn *waiting);

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
	set_json(r, 200, json_pack("{s:s, s:s, s:[s, s, s, s, s, s, s, s]}", "name", "npu-serve",
				   "version", npu_version(), "extensions",
				   "binary_tensor_data", "model_repository", "statistics",
				   "schedule_policy", "model_configuration", "trace", "logging",
				   "system_shared_memory"));
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

/* GET/POST v2[/models/{m}]/trace/setting: Triton's trace extension (trace.h). */
static int h_trace(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	json_t *j, *out;
	int bad, st;

	if (a->model) {
		/* Settings only for a model the repository has. */
		json_t *m = repository_model_metadata(c->srv->repo, a->model, -1, err, &st);

		if (!m) {
			set_error(r, st, err);
			return 0;
		}
		json_decref(m);
	}
	j = c->len ? body_json(c, r, &bad) : NULL;
	if (c->len && bad)
		return 0;
	if (!j) {
		set_json(r, 200, trace_settings_json(a->model));
		return 0;
	}
	st = trace_settings_update(a->model, j, &out, err);
	json_decref(j);
	if (st)
		set_error(r, st, err);
	else
		set_json(r, 200, out);
	return 0;
}

/* GET/POST v2/logging: Triton's logging extension (logging.h). */
static int h_logging(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	json_t *j, *out;
	int bad, st;

	(void)a;
	j = c->len ? body_json(c, r, &bad) : NULL;
	if (c->len && bad)
		return 0;
	if (!j) {
		set_json(r, 200, log_settings_json());
		return 0;
	}
	st = log_settings_update(j, &out, err);
	json_decref(j);
	if (st)
		set_error(r, st, err);
	else
		set_json(r, 200, out);
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
	size_t i;

	if (codec_encode(&c->req, 1, &r->body, &r->len, &r->json_len)) {
		set_error(r, SERVE_INTERNAL, "cannot encode the response");
		return;
	}
	/* The binary outputs go out from the buffers the session wrote. */
	for (i = 0; r->json_len && i < c->req.num_results; i++) {
		struct infer_tensor *t = &c->req.results[i];

		if (!t->binary || !t->nbytes)
			continue;
		if (!t->owned) {	/* not ours to hand over: copy, as before */
			void *d = malloc(t->nbytes);

			if (!d) {
				free(r->body);
				free_response_parts(r);
				set_error(r, SERVE_INTERNAL, "out of memory");
				return;
			}
			memcpy(d, t->data, t->nbytes);
			t->data = d;
		}
		r->parts[r->num_parts] = t->data;
		r->part_len[r->num_parts++] = t->nbytes;
		t->owned = 0;	/* the response frees it */
		t->data = NULL;
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
		set_phase(s, c->client, PHASE_WAITING, c);
		MHD_suspend_connection(c->mhd);
		pthread_mutex_unlock(&c->lock);
		return SUSPENDED;
	}
	pthread_mutex_unlock(&c->lock);
	infer_response(c, r);
	return 0;
}

/* ---- System shared memory (shm.h) -------------------------------------------------- */

static int h_shm_status(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	struct shm_info *info;
	json_t *j;
	size_t n, i;
	int st;

	(void)c;
	st = shm_status(a->region, &info, &n, err);
	if (st) {
		set_error(r, st, err);
		return 0;
	}
	j = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(j, json_pack("{s:s, s:s, s:I, s:I}", "name", info[i].name,
						   "key", info[i].key,
						   "offset", (json_int_t)info[i].offset,
						   "byte_size", (json_int_t)info[i].byte_size));
	free(info);
	set_json(r, 200, j);
	return 0;
}

static int h_shm_register(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	json_t *j, *key, *off, *size;
	int bad, st;

	j = body_json(c, r, &bad);
	if (bad)
		return 0;
	key = json_object_get(j, "key");
	off = json_object_get(j, "offset");
	size = json_object_get(j, "byte_size");
	if (!json_is_string(key) || !json_is_integer(size) || json_integer_value(size) <= 0 ||
	    (off && (!json_is_integer(off) || json_integer_value(off) < 0))) {
		json_decref(j);
		set_error(r, SERVE_INVALID,
			  "the register request needs {\"key\": string, \"offset\": integer >= 0, \"byte_size\": integer > 0}");
		return 0;
	}
	st = shm_register(a->region, json_string_value(key),
			  off ? (uint64_t)json_integer_value(off) : 0,
			  (uint64_t)json_integer_value(size), err);
	json_decref(j);
	if (st)
		set_error(r, st, err);
	else
		set_empty(r, 200);
	return 0;
}

static int h_shm_unregister(struct conn *c, struct args *a, struct response *r)
{
	char err[SERVE_ERR_MAX];
	int st;

	(void)c;
	st = shm_unregister(a->region, err);
	if (st)
		set_error(r, st, err);
	else
		set_empty(r, 200);
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

	const char *authz = MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_AUTHORIZATION);
	json_t *models = repository_index(c->srv->repo, 0), *m;
	size_t i;

	(void)a;
	/* Failure reasons are the repository index's, which the API token may not read. */
	if (auth_check(au, AUTH_ADMIN, authz) != AUTH_OK)
		json_array_foreach(models, i, m)
			json_object_del(m, "reason");
	/* An ensemble is shown as its steps. */
	json_array_foreach(models, i, m) {
		const char *v = json_string_value(json_object_get(m, "version"));
		json_t *steps = repository_ensemble_steps(c->srv->repo,
							  json_string_value(json_object_get(m, "name")),
							  v ? strtoll(v, NULL, 10) : -1);

		if (steps)
			json_object_set_new(m, "steps", steps);
	}
	json_object_set_new(j, "models", models);
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
	/* Trace and logging settings choose what the server writes: management calls. */
	{ "GET", "v2/trace/setting", h_trace, 0, AUTH_ADMIN },
	{ "POST", "v2/trace/setting", h_trace, 0, AUTH_ADMIN },
	{ "GET", "v2/models/{m}/trace/setting", h_trace, 0, AUTH_ADMIN },
	{ "POST", "v2/models/{m}/trace/setting", h_trace, 0, AUTH_ADMIN },
	{ "GET", "v2/logging", h_logging, 0, AUTH_ADMIN },
	{ "POST", "v2/logging", h_logging, 0, AUTH_ADMIN },
	/* Registering maps server memory: a management call (Documentation/serving.md). */
	{ "GET", "v2/systemsharedmemory/status", h_shm_status, 0, AUTH_API },
	{ "GET", "v2/systemsharedmemory/region/{r}/status", h_shm_status, 0, AUTH_API },
	{ "POST", "v2/systemsharedmemory/region/{r}/register", h_shm_register, 0, AUTH_ADMIN },
	{ "POST", "v2/systemsharedmemory/unregister", h_shm_unregister, 0, AUTH_ADMIN },
	{ "POST", "v2/systemsharedmemory/region/{r}/unregister", h_shm_unregister, 0, AUTH_ADMIN },
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
		else if (!strcmp(ps[i], "{r}"))
			a->region = seg[i];
		else if (strcmp(ps[i], seg[i]))
			return 0;
	}
	return 1;
}

/* ---- Checks on the headers --------------------------------------------------------- */

static void set_auth_error(struct response *r, enum auth_result ar, enum auth_scope scope)
{
	set_error(r, auth_http_status(ar), auth_message(ar, scope));
	r->www_auth = ar == AUTH_MISSING ? "Bearer realm=\"npu-serve\"" :
		      ar == AUTH_MALFORMED ? "Bearer realm=\"npu-serve\", error=\"invalid_request\"" :
		      ar == AUTH_INVALID ? "Bearer realm=\"npu-serve\", error=\"invalid_token\"" :
		      NULL;
}

/* "host", "host:port", "[v6]:port" -> the host part in 'out'; 0 if malformed. */
static int host_part(const char *hostport, char *out, size_t size)
{
	const char *end;
	size_t n;

	if (hostport[0] == '[') {
		end = strchr(hostport, ']');
		if (!end)
			return 0;
		n = (size_t)(end + 1 - hostport);
	} else {
		end = strchr(hostport, ':');
		n = end ? (size_t)(end - hostport) : strlen(hostport);
	}
	if (!n || n >= size)
		return 0;
	memcpy(out, hostport, n);
	out[n] = '\0';
	return 1;
}

static int is_ip_literal(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;
	char v6[64];
	size_t n = strlen(host);

	if (inet_pton(AF_INET, host, &a4) == 1)
		return 1;
	if (n > 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(v6)) {
		memcpy(v6, host + 1, n - 2);
		v6[n - 2] = '\0';
		return inet_pton(AF_INET6, v6, &a6) == 1;
	}
	return 0;
}

/*
 * DNS rebinding: a page of evil.example whose name then resolves to
 * 127.0.0.1 is same-origin with this server in the browser's eyes, but
 * its requests say "Host: evil.example". On a loopback listener (or with
 * --allowed-host) only IP literals, localhost and the allowed names pass.
 */
static int host_allowed(const struct http_server *s, const char *hostport)
{
	char host[256];
	size_t i;

	if (!s->loopback && !s->o.num_allowed_hosts)
		return 1;
	if (!hostport || !host_part(hostport, host, sizeof(host)))
		return 0;
	if (is_ip_literal(host) || !strcasecmp(host, "localhost"))
		return 1;
	for (i = 0; i < s->o.num_allowed_hosts; i++)
		if (!strcasecmp(host, s->o.allowed_hosts[i]))
			return 1;
	return 0;
}

/*
 * Cross-site requests: browsers send Origin with every cross-origin
 * request and every POST. This server sends no CORS headers, so a page
 * of another origin has no business here: its Origin must name this
 * very host and port (the panel's own requests do).
 */
static int origin_allowed(const struct http_server *s, const char *origin, const char *hostport)
{
	const char *scheme_end, *oh;
	const char *dflt = s->o.tls_cert_pem ? "443" : "80";
	char ohost[256], hhost[256];
	const char *oport, *hport;

	if (!origin)
		return 1;
	if (!hostport)
		return 0;
	scheme_end = strstr(origin, "://");
	if (!scheme_end)
		return 0;	/* "null" (sandboxed frames, file://) and garbage */
	oh = scheme_end + 3;
	if (!host_part(oh, ohost, sizeof(ohost)) || !host_part(hostport, hhost, sizeof(hhost)))
		return 0;
	if (strcasecmp(ohost, hhost))
		return 0;
	oport = oh + strlen(ohost);
	oport = *oport == ':' ? oport + 1 :
		!strncasecmp(origin, "https://", 8) ? "443" : "80";
	hport = hostport + strlen(hhost);
	hport = *hport == ':' ? hport + 1 : dflt;
	return !strcmp(oport, hport);
}

/*
 * A POST a browser can send cross-site without a preflight has one of
 * the CORS-safelisted content types. Refusing those (unless the request
 * carries a token, which no page can add cross-site) means a state
 * change always needs a request a web page cannot forge.
 */
static int simple_content_type(const char *ct)
{
	static const char *const simple[] = { "application/x-www-form-urlencoded",
					      "multipart/form-data", "text/plain" };
	size_t i, n;

	if (!ct)
		return 0;
	while (*ct == ' ')
		ct++;
	for (i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
		n = strlen(simple[i]);
		if (!strncasecmp(ct, simple[i], n) && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' '))
			return 1;
	}
	return 0;
}

/* ---- Routing --------------------------------------------------------------------- */

/* The request ends: give back its share of the body budget. */
static void release_body(struct conn *c)
{
	if (c->reserved) {
		atomic_fetch_sub(&c->srv->buffered, c->reserved);
		c->reserved = 0;
	}
}

/* Reserve 'n' more body bytes of the server-wide budget; 0 if it is spent. */
static int reserve_body(struct conn *c, size_t n)
{
	struct http_server *s = c->srv;
	size_t cur = atomic_load(&s->buffered);

	do {
		if (cur + n > s->o.max_buffered_bytes)
			return 0;
	} while (!atomic_compare_exchange_weak(&s->buffered, &cur, cur + n));
	c->reserved += n;
	return 1;
}

static void set_body_too_large(struct conn *c, struct response *r)
{
	char msg[SERVE_ERR_MAX];

	snprintf(msg, sizeof(msg), "the request body exceeds %zu bytes (--http-max-body-bytes)",
		 c->srv->o.max_body_bytes);
	set_error(r, 413, msg);
	r->close = 1;
}

static void set_busy(struct response *r)
{
	metrics_limit_hit(LIMIT_HTTP_BODY_BUDGET);
	set_error(r, SERVE_UNAVAILABLE,
		  "the server holds as many request bodies as it allows (--http-max-buffered-bytes): retry later");
	r->close = 1;
}

/*
 * Everything decided on the request line and headers, before a byte of
 * the body is read or buffered: the route, the method, the token, the
 * Host and Origin, the content type of a state change, the body's
 * declared size. Returns 1 with the route in c->ep / c->args, or 0 with
 * the refusal in 'r'.
 */
static int route_headers(struct conn *c, const char *url, const char *method, struct response *r)
{
	struct http_server *s = c->srv;
	struct MHD_Connection *mc = c->mhd;
	const char *host = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *authz = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_AUTHORIZATION);
	const char *cl, *ct;
	char *seg[MAX_SEGMENTS + 1];
	char msg[SERVE_ERR_MAX];
	size_t n, i;
	int path_known = 0;

	pthread_mutex_lock(&s->lock);
	if (s->draining) {
		pthread_mutex_unlock(&s->lock);
		set_error(r, SERVE_UNAVAILABLE, "the server is shutting down");
		r->close = 1;
		return 0;
	}
	pthread_mutex_unlock(&s->lock);
	if (!host_allowed(s, host)) {
		snprintf(msg, sizeof(msg), "Host '%.100s' is not this server's: use its address, localhost, or a name given with --allowed-host",
			 host ? host : "");
		set_error(r, 403, msg);
		return 0;
	}
	if (!origin_allowed(s, MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Origin"), host)) {
		set_error(r, 403, "cross-origin requests are refused: the Origin header names another site");
		return 0;
	}
	c->path = strdup(url);
	if (!c->path) {
		set_error(r, SERVE_INTERNAL, "out of memory");
		return 0;
	}
	n = split(c->path, seg);
	for (i = 0; i < NUM_ENDPOINTS; i++) {
		const struct endpoint *e = &endpoints[i];

		if (s->o.metrics_only && !e->metrics_port)
			continue;
		if (n > MAX_SEGMENTS || !match(e->pattern, seg, n, &c->args))
			continue;
		path_known = 1;
		if (strcmp(method, e->method) &&
		    !(!strcmp(method, "HEAD") && !strcmp(e->method, "GET")))
			continue;
		c->ep = e;
		break;
	}
	if (!c->ep) {
		if (path_known)
			snprintf(msg, sizeof(msg), "method %.16s is not allowed on %.200s", method, url);
		else
			snprintf(msg, sizeof(msg), "unknown endpoint %.200s", url);
		set_error(r, path_known ? 405 : SERVE_NOT_FOUND, msg);
		return 0;
	}
	if (c->ep->scope != AUTH_OPEN) {
		enum auth_result ar = auth_check(s->o.auth, c->ep->scope, authz);

		if (ar != AUTH_OK) {
			set_auth_error(r, ar, c->ep->scope);
			return 0;
		}
	}
	ct = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!strcmp(c->ep->method, "POST") && !authz && simple_content_type(ct)) {
		snprintf(msg, sizeof(msg), "Content-Type '%.80s' is what a web page can send cross-site: send 'Content-Type: application/json' (or application/octet-stream with binary tensors)",
			 ct);
		set_error(r, 415, msg);
		return 0;
	}
	if (c->args.version) {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(c->args.version, &end, 10);
		if (errno || end == c->args.version || *end || v < 1) {
			snprintf(msg, sizeof(msg), "model version '%.64s' is not a positive integer",
				 c->args.version);
			set_error(r, SERVE_INVALID, msg);
			return 0;
		}
		c->args.v = v;
	}
	cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		char *end;
		unsigned long long want;

		errno = 0;
		want = strtoull(cl, &end, 10);
		if (errno || end == cl || *end || want > s->o.max_body_bytes) {
			set_body_too_large(c, r);
			return 0;
		}
		/* The declared size is held now, so a client cannot overcommit by trickling. */
		if (want && !reserve_body(c, (size_t)want)) {
			set_busy(r);
			return 0;
		}
	}
	return 1;
}

/* Append a chunk of the body; 0 with the refusal in 'r' past a limit. */
static int take_body(struct conn *c, const char *data, size_t n, struct response *r)
{
	struct http_server *s = c->srv;

	if (c->len + n > s->o.max_body_bytes) {
		set_body_too_large(c, r);
		return 0;
	}
	/* A chunked body (no Content-Length) reserves as it grows. */
	if (c->len + n > c->reserved && !reserve_body(c, c->len + n - c->reserved)) {
		set_busy(r);
		return 0;
	}
	if (c->len + n + 1 > c->cap) {
		size_t cap = c->cap ? c->cap : 4096, pad;
		const char *hl = MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND,
							     "Inference-Header-Content-Length");
		unsigned long long json_len = hl ? strtoull(hl, NULL, 10) : 0;
		char *nb;

		while (cap < c->len + n + 1)
			cap *= 2;
		if (cap > s->o.max_body_bytes + 1)
			cap = s->o.max_body_bytes + 1;
		/* 64 bytes to spare: the binary tensors after the JSON header start
		 * 64-byte aligned, so the engine reads them where they are. */
		nb = realloc(c->body_mem, cap + 64);
		if (!nb) {
			set_error(r, SERVE_INTERNAL, "out of memory for the request body");
			r->close = 1;
			return 0;
		}
		pad = (64 - ((uintptr_t)nb + json_len) % 64) % 64;
		if (c->len && pad != c->pad)
			memmove(nb + pad, nb + c->pad, c->len);
		c->body_mem = nb;
		c->body = nb + pad;
		c->pad = pad;
		c->cap = cap;
	}
	memcpy(c->body + c->len, data, n);
	c->len += n;
	c->body[c->len] = '\0';
	return 1;
}

/* ---- Connection phases and the watch thread ----------------------------------------- */

static struct client *client_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void set_phase(struct http_server *s, struct client *cl, enum client_phase p,
		      struct conn *waiting)
{
	if (!cl)
		return;
	pthread_mutex_lock(&s->clients_lock);
	cl->phase = p;
	cl->phase_start_ns = serve_now_ns();
	cl->waiting = waiting;
	pthread_mutex_unlock(&s->clients_lock);
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	struct client *cl = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);

		cl = calloc(1, sizeof(*cl));
		if (!cl)
			return;		/* not watched: the inactivity timeout still applies */
		cl->fd = ci ? ci->connect_fd : -1;
		cl->phase = PHASE_HEADERS;
		cl->phase_start_ns = serve_now_ns();
		pthread_mutex_lock(&s->clients_lock);
		cl->next = s->clients;
		if (s->clients)
			s->clients->prev = cl;
		s->clients = cl;
		pthread_mutex_unlock(&s->clients_lock);
		*socket_context = cl;
		return;
	}
	/* Closed: libmicrohttpd closes the socket after this returns. */
	if (!cl)
		return;
	pthread_mutex_lock(&s->clients_lock);
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		s->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
	pthread_mutex_unlock(&s->clients_lock);
	free(cl);
	*socket_context = NULL;
}

/* The peer closed or reset its side (a TLS close_notify comes with its FIN). */
static int peer_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

#define WATCH_PERIOD_MS 200

static void *watch_main(void *arg)
{
	struct http_server *s = arg;
	const uint64_t header_ns = (uint64_t)s->o.header_timeout_secs * 1000000000ull;
	const uint64_t body_ns = (uint64_t)s->o.body_timeout_secs * 1000000000ull;

	while (!atomic_load(&s->stopping)) {
		struct client *cl;
		uint64_t now;

		pthread_mutex_lock(&s->clients_lock);
		/* Read under the lock: a phase set just before must not look aeons old. */
		now = serve_now_ns();
		for (cl = s->clients; cl; cl = cl->next) {
			uint64_t age = now - cl->phase_start_ns;
			int late = (cl->phase == PHASE_HEADERS && age > header_ns) ||
				   (cl->phase == PHASE_BODY && age > body_ns);
			int receiving = cl->phase == PHASE_HEADERS || cl->phase == PHASE_BODY;

			/*
			 * A client that closed with its request unfinished: libmicrohttpd
			 * would keep the slot until the inactivity timeout.
			 */
			if (receiving && !late && !cl->closing && cl->fd >= 0 && peer_gone(cl->fd)) {
				cl->closing = 1;
				shutdown(cl->fd, SHUT_RDWR);
				continue;
			}
			if (late && !cl->closing && cl->fd >= 0) {
				/* libmicrohttpd sees the end of the stream and closes it. */
				cl->closing = 1;
				shutdown(cl->fd, SHUT_RDWR);
				metrics_limit_hit(cl->phase == PHASE_HEADERS ? LIMIT_HTTP_HEADER_TIMEOUT
									     : LIMIT_HTTP_BODY_TIMEOUT);
				serve_log(SERVE_LOG_DEBUG, "http: closed a connection whose %s took over %u s",
					  cl->phase == PHASE_HEADERS ? "headers" : "body",
					  cl->phase == PHASE_HEADERS ? s->o.header_timeout_secs
								     : s->o.body_timeout_secs);
			}
			if (cl->phase == PHASE_WAITING && cl->waiting && cl->fd >= 0 &&
			    !atomic_load(&cl->waiting->req.cancelled) && peer_gone(cl->fd)) {
				atomic_store(&cl->waiting->req.cancelled, true);
				serve_log(SERVE_LOG_DEBUG, "http: the client of a queued request left: cancelled");
			}
		}
		pthread_mutex_unlock(&s->clients_lock);
		usleep(WATCH_PERIOD_MS * 1000);
	}
	return NULL;
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

	(void)version;
	if (!c) {
		/* The headers are complete: decide on them, before any body. */
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		c->srv = s;
		c->mhd = connection;
		c->client = client_of(connection);
		pthread_mutex_init(&c->lock, NULL);
		*con_cls = c;
		set_phase(s, c->client, PHASE_BODY, NULL);
		if (!route_headers(c, url, method, &r)) {
			/* A body that follows is not read: the connection cannot carry on. */
			if (MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_CONTENT_LENGTH) ||
			    MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_TRANSFER_ENCODING))
				r.close = 1;
			c->state = CONN_DONE;
			set_phase(s, c->client, PHASE_HANDLER, NULL);
			return send_response(connection, &r);
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (c->state == CONN_DONE)
			return MHD_YES;		/* answered early: the rest is discarded */
		if (!take_body(c, upload_data, n, &r)) {
			c->state = CONN_DONE;
			set_phase(s, c->client, PHASE_HANDLER, NULL);
			return send_response(connection, &r);
		}
		return MHD_YES;
	}
	if (c->state == CONN_WAITING) {
		/* Resumed: the batch is done. */
		c->state = CONN_DONE;
		c->suspended = 0;
		set_phase(s, c->client, PHASE_HANDLER, NULL);
		infer_response(c, &r);
		return send_response(connection, &r);
	}
	if (c->state == CONN_DONE)
		return MHD_YES;
	set_phase(s, c->client, PHASE_HANDLER, NULL);
	if (c->ep->fn(c, &c->args, &r) == SUSPENDED)
		return MHD_YES;
	c->state = CONN_DONE;
	return send_response(connection, &r);
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn *c = *con_cls;
	struct http_server *s = cls;

	(void)toe;
	/* The connection awaits its next request: the header deadline starts again. */
	set_phase(s, client_of(connection), PHASE_HEADERS, NULL);
	if (!c)
		return;
	if (c->counted) {
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
	release_body(c);
	free(c->body_mem);
	free(c->path);
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
	struct MHD_OptionItem pool[5];
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
	if (!s->o.header_timeout_secs)
		s->o.header_timeout_secs = 30;
	if (!s->o.body_timeout_secs)
		s->o.body_timeout_secs = 120;
	if (!s->o.max_connections)
		s->o.max_connections = 1024;
	if (!s->o.per_client_connections)
		s->o.per_client_connections = 128;
	if (!s->o.max_buffered_bytes)
		s->o.max_buffered_bytes = 512u << 20;
	if (s->o.max_buffered_bytes < s->o.max_body_bytes)
		s->o.max_buffered_bytes = s->o.max_body_bytes;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)o->port);
	if (inet_pton(AF_INET, o->address ? o->address : "127.0.0.1", &addr.sin_addr) != 1) {
		free(s);
		return serve_err(err, SERVE_INVALID, "'%s' is not an IPv4 address", o->address);
	}
	s->loopback = (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	pthread_mutex_init(&s->clients_lock, NULL);
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
			pthread_mutex_destroy(&s->clients_lock);
			free(s);
			return serve_err(err, SERVE_UNSUPPORTED,
					 "this libmicrohttpd is built without TLS (GnuTLS): --tls-cert cannot be served");
		}
		flags |= MHD_USE_TLS;
		pool[k].option = MHD_OPTION_HTTPS_MEM_KEY;
		pool[k++].ptr_value = (void *)s->o.tls_key_pem;
		pool[k].option = MHD_OPTION_HTTPS_MEM_CERT;
		pool[k++].ptr_value = (void *)s->o.tls_cert_pem;
		pool[k].option = MHD_OPTION_HTTPS_PRIORITIES;
		pool[k++].ptr_value = (void *)SERVE_TLS_PRIORITIES;
	}
	pool[k].option = MHD_OPTION_END;
	s->d = MHD_start_daemon(flags,
				0, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
				MHD_OPTION_ARRAY, pool,
				MHD_OPTION_CONNECTION_TIMEOUT, s->o.timeout_secs,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->o.max_header_bytes,
				MHD_OPTION_CONNECTION_LIMIT, s->o.max_connections,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->o.per_client_connections,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
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
		pthread_mutex_destroy(&s->clients_lock);
		free(s);
		return st;
	}
	atomic_store(&s->started, true);
	if (pthread_create(&s->watch, NULL, watch_main, s))
		serve_log(SERVE_LOG_WARN, "http: no watch thread: header and body deadlines are not enforced");
	else
		s->watch_started = 1;
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
	atomic_store(&s->stopping, true);
	if (s->watch_started)
		pthread_join(s->watch, NULL);
	MHD_stop_daemon(s->d);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->clients_lock);
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
