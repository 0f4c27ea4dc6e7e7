// SPDX-License-Identifier: MIT
/* grpc: GRPCInferenceService over h2c or TLS with nghttp2 + protobuf-c (see grpc.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <nghttp2/nghttp2.h>
#ifdef NPU_SERVE_HAVE_GRPC_TLS
#include <gnutls/gnutls.h>
#endif

#include "grpc.h"
#include "grpc_service.pb-c.h"
#include "logging.h"
#include "metrics.h"
#include "trace.h"
#include "shm.h"

#define SERVICE "/inference.GRPCInferenceService/"
#define ACCEPT_BACKOFF_MS 100	/* out of fds or memory: wait this long, then accept again */
#define DRAIN_GOAWAY_MS 1000	/* from the shutdown notice to the final GOAWAY (RFC 9113 6.8) */

/* gRPC status codes. */
enum {
	GRPC_OK = 0,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
};

struct grpc_server {
	struct repository *repo;
	struct grpc_options o;
	int listen_fd;
	int port;
	pthread_t acceptor;
	int accepting;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int in_flight;		/* calls received and not yet answered */
	int conns;
	int finishing;		/* connections past their loop, waiting for running inferences */
	int evicting;		/* connections closed for a newcomer, not yet gone */
	int stop;
	atomic_int draining;	/* grpc_quiesce: GOAWAY everywhere, no new calls */
	size_t buffered;	/* request bytes held by every connection (under lock) */
	struct gconn *conn_list;	/* newest first */
#ifdef NPU_SERVE_HAVE_GRPC_TLS
	gnutls_certificate_credentials_t cred;	/* NULL: h2c */
	gnutls_priority_t priority;
#endif
};

struct gstream;

struct gconn {
	struct grpc_server *srv;
	int fd, efd;
	nghttp2_session *session;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct gstream *done;	/* inferences finished, to answer */
	struct gsub *sub_done;	/* the same for messages of ModelStreamInfer calls */
	int pending;		/* inferences queued */
	struct gstream *streams;	/* every stream (connection thread only) */
	struct gconn *next;
	uint32_t peer;		/* the client's IPv4 address (network order) */
	uint64_t t_accept, t_idle;	/* accepted; the last stream closed (ns) */
	atomic_int nstreams;	/* open streams, read by the acceptor */
	int evicted;		/* closed by the acceptor for a newcomer (under srv->lock) */
	int finishing;		/* counted in srv->finishing (under srv->lock) */
	int got_settings;	/* the client's preface and SETTINGS came */
	int closing;		/* GOAWAY sent for idleness: close once written */
	int drain;		/* 1: shutdown notice sent, 2: final GOAWAY sent */
	uint64_t t_drain;
	size_t buffered;	/* request bytes held by this connection */
#ifdef NPU_SERVE_HAVE_GRPC_TLS
	gnutls_session_t tls;		/* NULL: h2c */
	int tls_up;			/* the handshake completed */
	int tls_retry;			/* a record send is waiting to be resumed */
#endif
};

struct gstream {
	struct gconn *conn;
	int32_t id;
	char path[160];
	char *authz;		/* the "authorization" metadata (auth.h) */
	char *body;
	size_t len, cap;
	int refused;		/* answered before its end: its DATA is dropped */
	int dispatched;		/* the request ended and was handled */
	int finished;		/* ModelStreamInfer: trailers sent */
	int closed;		/* the HTTP/2 stream is gone */
	int reset_after;	/* RST_STREAM once the answer is sent: error code + 1 */
	uint64_t t_body;	/* a request (or a stream's message) began: body_timeout_ms */
	size_t owed;		/* received, not yet given back to the stream's window */
	size_t owed_conn;	/* ... and to the connection's */
	size_t acct;		/* counted in conn->buffered and srv->buffered */
	uint8_t *held;		/* ModelStreamInfer: bytes waiting for the backlog to shrink */
	size_t held_len, held_cap;
	size_t sub_bytes;	/* ModelStreamInfer: inputs of the messages in flight */
	struct gsub *subs;	/* ... and those messages (to cancel them) */
	int counted;		/* in srv->in_flight */
	/* The response message (5-byte prefix included) and its trailer. */
	uint8_t *resp;
	size_t resp_len, resp_off;
	/* An inference in flight. */
	int infer_pending;
	struct infer_request req;
	char *infer_body;
	struct gstream *next_done;
	struct gstream *prev, *next;	/* in conn->streams */
	/* ModelStreamInfer: 1 once its headers came (and stays 1 when the
	 * call was refused), 2 answering; 'resp' then queues the responses
	 * not yet sent (resp_cap allocated). */
	int streaming, half_closed, deferred;
	size_t resp_cap;
	size_t skip;		/* bytes left of a message over the limit */
};

/* A message of a ModelStreamInfer call, while it is queued or running. */
struct gsub {
	struct gstream *s;
	struct infer_request req;
	char *body;
	size_t len;
	struct gsub *sprev, *snext;	/* in s->subs */
	char *model, *id;	/* for an error answer */
	struct gsub *next_done;
};

static int status_to_grpc(int st)
{
	switch (st) {
	case SERVE_OK: return GRPC_OK;
	case SERVE_NOT_FOUND: return GRPC_NOT_FOUND;
	case SERVE_UNAVAILABLE: return GRPC_UNAVAILABLE;
	case SERVE_UNSUPPORTED: return GRPC_UNIMPLEMENTED;
	case SERVE_INTERNAL: return GRPC_INTERNAL;
	default: return GRPC_INVALID_ARGUMENT;
	}
}

/* ---- Streams and responses -------------------------------------------------- */

/* Request bytes a stream holds, counted per connection and in all (the buffer limits). */
static void stream_account(struct gstream *s)
{
	struct gconn *c = s->conn;
	struct grpc_server *srv = c->srv;
	size_t now = s->len + s->held_len;

	if (now == s->acct)
		return;
	c->buffered = c->buffered - s->acct + now;
	pthread_mutex_lock(&srv->lock);
	srv->buffered = srv->buffered - s->acct + now;
	pthread_mutex_unlock(&srv->lock);
	s->acct = now;
}

/* Drop what a stream holds of its request (answered, refused or done with). */
static void stream_drop_body(struct gstream *s)
{
	free(s->body);
	s->body = NULL;
	s->len = s->cap = 0;
	free(s->held);
	s->held = NULL;
	s->held_len = s->held_cap = 0;
	s->t_body = 0;
	stream_account(s);
}

static void stream_free(struct gstream *s)
{
	struct gconn *c = s->conn;

	if (s->prev)
		s->prev->next = s->next;
	else
		c->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	stream_drop_body(s);
	/* Bytes of a gone stream still count against the connection's window. */
	if (s->owed_conn && c->session)
		nghttp2_session_consume_connection(c->session, s->owed_conn);
	if (atomic_fetch_sub(&c->nstreams, 1) == 1)
		c->t_idle = serve_now_ns();
	infer_request_clear(&s->req);
	free(s->authz);
	free(s->infer_body);
	free(s->resp);
	free(s);
}

/* ModelStreamInfer: responses queued and inputs in flight past the limit. */
static int stream_backlogged(const struct gstream *s)
{
	return s->resp_len - s->resp_off + s->sub_bytes >= s->conn->srv->o.max_stream_pending_bytes;
}

/*
 * Give received bytes back to the client's windows (WINDOW_UPDATE) only
 * while this connection and the server hold less than their limits, and
 * not to a stream whose answers wait for a client that does not read:
 * otherwise the client waits (back-pressure). Past the connection's limit
 * its oldest unfinished request still goes on, so that one always can
 * finish (at most max_message_bytes more): the connection's window is
 * given back for every stream, each stream's window holds its own bytes.
 */
static int full_now(struct grpc_server *srv)
{
	int full;

	pthread_mutex_lock(&srv->lock);
	full = srv->buffered > srv->o.max_buffer_bytes;
	pthread_mutex_unlock(&srv->lock);
	return full;
}

static void conn_repay(struct gconn *c)
{
	struct grpc_server *srv = c->srv;
	struct gstream *s, *oldest = NULL;

	for (s = c->streams; s; s = s->next)
		if (!s->streaming && s->t_body && !s->refused && !s->dispatched &&
		    (!oldest || s->t_body < oldest->t_body))
			oldest = s;
	for (s = c->streams; s; s = s->next) {
		if (!s->owed || (s->streaming == 2 && (s->held_len || stream_backlogged(s)))) {
			if (s->owed_conn && !full_now(srv)) {
				nghttp2_session_consume_connection(c->session, s->owed_conn);
				s->owed_conn = 0;
			}
			continue;
		}
		if (full_now(srv))
			return;
		nghttp2_session_consume_connection(c->session, s->owed_conn);
		s->owed_conn = 0;
		if (c->buffered > srv->o.max_connection_buffer_bytes && s != oldest)
			continue;
		nghttp2_session_consume_stream(c->session, s->id, s->owed);
		s->owed = 0;
	}
}

static void call_done(struct gstream *s)
{
	struct grpc_server *srv = s->conn->srv;

	if (!s->counted)
		return;
	s->counted = 0;
	pthread_mutex_lock(&srv->lock);
	srv->in_flight--;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), \
		   NGHTTP2_NV_FLAG_NONE }

/* grpc-message is percent-encoded outside printable ASCII and '%'. */
static void percent_encode(const char *in, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *in && n + 4 < size; in++) {
		unsigned char c = (unsigned char)*in;

		if (c < 0x20 || c > 0x7e || c == '%') {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		} else {
			out[n++] = (char)c;
		}
	}
	out[n] = '\0';
}

static ssize_t read_resp(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
			 size_t length, uint32_t *data_flags, nghttp2_data_source *source,
			 void *user_data)
{
	struct gstream *s = source->ptr;
	size_t n = s->resp_len - s->resp_off;

	(void)user_data;
	if (n > length)
		n = length;
	memcpy(buf, s->resp + s->resp_off, n);
	s->resp_off += n;
	if (s->resp_off == s->resp_len) {
		nghttp2_nv trailers[] = { NV("grpc-status", "0") };

		*data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		nghttp2_submit_trailer(session, stream_id, trailers, 1);
	}
	return (ssize_t)n;
}

static void respond_error(struct gstream *s, int code, const char *msg)
{
	char status[16], enc[3 * SERVE_ERR_MAX + 1];
	nghttp2_nv hdrs[] = {
		NV(":status", "200"),
		NV("content-type", "application/grpc"),
		NV("grpc-status", ""),
		NV("grpc-message", ""),
	};

	snprintf(status, sizeof(status), "%d", code);
	percent_encode(msg, enc, sizeof(enc));
	hdrs[2].value = (uint8_t *)status;
	hdrs[2].valuelen = strlen(status);
	hdrs[3].value = (uint8_t *)enc;
	hdrs[3].valuelen = strlen(enc);
	metrics_http_request(code == GRPC_NOT_FOUND ? 404 : code == GRPC_UNAVAILABLE ? 503 :
			     code == GRPC_INTERNAL ? 500 : code == GRPC_UNIMPLEMENTED ? 501 : 400);
	nghttp2_submit_response(s->conn->session, s->id, hdrs, 4, NULL);
	call_done(s);
}

/*
 * A call answered before its request ended (refused at its headers, too
 * large): what it holds is dropped and so is the DATA that follows, given
 * back to the windows unread; once the answer is out the stream is reset
 * with NO_ERROR (RFC 9113 8.1: stop sending, no error). A RST_STREAM
 * submitted with the answer would cancel it (nghttp2), hence on_frame_send.
 */
static void stream_refuse(struct gstream *s, int ended)
{
	s->refused = 1;
	stream_drop_body(s);
	if (!ended)
		s->reset_after = NGHTTP2_NO_ERROR + 1;
}

static void respond(struct gstream *s, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	nghttp2_nv hdrs[] = {
		NV(":status", "200"),
		NV("content-type", "application/grpc"),
	};
	nghttp2_data_provider dp;

	s->resp = malloc(n + 5);
	if (!s->resp) {
		respond_error(s, GRPC_INTERNAL, "out of memory");
		return;
	}
	s->resp[0] = 0;
	s->resp[1] = (uint8_t)(n >> 24);
	s->resp[2] = (uint8_t)(n >> 16);
	s->resp[3] = (uint8_t)(n >> 8);
	s->resp[4] = (uint8_t)n;
	protobuf_c_message_pack(m, s->resp + 5);
	s->resp_len = n + 5;
	s->resp_off = 0;
	dp.source.ptr = s;
	dp.read_callback = read_resp;
	metrics_http_request(200);
	nghttp2_submit_response(s->conn->session, s->id, hdrs, 2, &dp);
	call_done(s);
}

/* ---- Calls ------------------------------------------------------------------------- */

static int64_t parse_version(const char *v, int *bad)
{
	char *end;
	long long x;

	*bad = 0;
	if (!v || !v[0])
		return -1;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end || x < 1) {
		*bad = 1;
		return -1;
	}
	return x;
}

static void call_metadata(struct gstream *s, Inference__ModelMetadataRequest *rq)
{
	Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
	Inference__ModelMetadataResponse__TensorMetadata tm[2 * SERVE_MAX_IO];
	Inference__ModelMetadataResponse__TensorMetadata *tp[2 * SERVE_MAX_IO];
	int64_t shapes[2 * SERVE_MAX_IO][NPU_MODEL_MAX_RANK + 1];
	char *versions[CONFIG_MAX_VERSIONS];
	char err[SERVE_ERR_MAX];
	int st, bad, side;
	int64_t v = parse_version(rq->version, &bad);
	json_t *j, *e;
	size_t i, k = 0;

	if (bad) {
		respond_error(s, GRPC_INVALID_ARGUMENT, "'version' is not a positive integer");
		return;
	}
	j = repository_model_metadata(s->conn->srv->repo, rq->name, v, err, &st);
	if (!j) {
		respond_error(s, status_to_grpc(st), err);
		return;
	}
	r.name = (char *)json_string_value(json_object_get(j, "name"));
	r.platform = (char *)json_string_value(json_object_get(j, "platform"));
	json_array_foreach(json_object_get(j, "versions"), i, e)
		if (i < CONFIG_MAX_VERSIONS)
			versions[r.n_versions++] = (char *)json_string_value(e);
	r.versions = versions;
	for (side = 0; side < 2; side++) {
		json_t *arr = json_object_get(j, side ? "outputs" : "inputs");
		size_t first = k;

		json_array_foreach(arr, i, e) {
			json_t *d;
			size_t q;

			if (k >= 2 * SERVE_MAX_IO)
				break;
			inference__model_metadata_response__tensor_metadata__init(&tm[k]);
			tm[k].name = (char *)json_string_value(json_object_get(e, "name"));
			tm[k].datatype = (char *)json_string_value(json_object_get(e, "datatype"));
			json_array_foreach(json_object_get(e, "shape"), q, d)
				if (q <= NPU_MODEL_MAX_RANK)
					shapes[k][tm[k].n_shape++] = json_integer_value(d);
			tm[k].shape = shapes[k];
			tp[k] = &tm[k];
			k++;
		}
		if (side) {
			r.n_outputs = k - first;
			r.outputs = tp + first;
		} else {
			r.n_inputs = k;
			r.inputs = tp;
		}
	}
	respond(s, &r.base);
	json_decref(j);
}

static void fill_duration(Inference__StatisticDuration *d, json_t *j)
{
	inference__statistic_duration__init(d);
	d->count = (uint64_t)json_integer_value(json_object_get(j, "count"));
	d->ns = (uint64_t)json_integer_value(json_object_get(j, "ns"));
}

static void call_statistics(struct gstream *s, Inference__ModelStatisticsRequest *rq)
{
	Inference__ModelStatisticsResponse r = INFERENCE__MODEL_STATISTICS_RESPONSE__INIT;
	int bad;
	int64_t v = parse_version(rq->version, &bad);
	json_t *j, *arr, *e;
	size_t n, i;
	Inference__ModelStatistics *ms, **mp;
	Inference__InferStatistics *is;
	Inference__StatisticDuration *durs;

	if (bad) {
		respond_error(s, GRPC_INVALID_ARGUMENT, "'version' is not a positive integer");
		return;
	}
	if (rq->name[0] && !repository_model_ready(s->conn->srv->repo, rq->name, v)) {
		char err[SERVE_ERR_MAX];
		int st;
		json_t *m = repository_model_metadata(s->conn->srv->repo, rq->name, v, err, &st);

		if (!m) {
			respond_error(s, status_to_grpc(st), err);
			return;
		}
		json_decref(m);
	}
	j = metrics_stats_json(rq->name[0] ? rq->name : NULL, v);
	arr = json_object_get(j, "model_stats");
	n = json_array_size(arr);
	ms = calloc(n + 1, sizeof(*ms));
	mp = calloc(n + 1, sizeof(*mp));
	is = calloc(n + 1, sizeof(*is));
	durs = calloc(8 * (n + 1), sizeof(*durs));
	if (!ms || !mp || !is || !durs) {
		respond_error(s, GRPC_INTERNAL, "out of memory");
		goto out;
	}
	json_array_foreach(arr, i, e) {
		json_t *st = json_object_get(e, "inference_stats");
		static const char *const names[] = { "success", "fail", "queue", "compute_input",
						     "compute_infer", "compute_output", "cache_hit",
						     "cache_miss" };
		int k;

		inference__model_statistics__init(&ms[i]);
		inference__infer_statistics__init(&is[i]);
		ms[i].name = (char *)json_string_value(json_object_get(e, "name"));
		ms[i].version = (char *)json_string_value(json_object_get(e, "version"));
		ms[i].last_inference = (uint64_t)json_integer_value(json_object_get(e, "last_inference"));
		ms[i].inference_count = (uint64_t)json_integer_value(json_object_get(e, "inference_count"));
		ms[i].execution_count = (uint64_t)json_integer_value(json_object_get(e, "execution_count"));
		for (k = 0; k < 8; k++)
			fill_duration(&durs[8 * i + (size_t)k], json_object_get(st, names[k]));
		is[i].success = &durs[8 * i];
		is[i].fail = &durs[8 * i + 1];
		is[i].queue = &durs[8 * i + 2];
		is[i].compute_input = &durs[8 * i + 3];
		is[i].compute_infer = &durs[8 * i + 4];
		is[i].compute_output = &durs[8 * i + 5];
		is[i].cache_hit = &durs[8 * i + 6];
		is[i].cache_miss = &durs[8 * i + 7];
		ms[i].inference_stats = &is[i];
		mp[i] = &ms[i];
	}
	r.n_model_stats = n;
	r.model_stats = mp;
	respond(s, &r.base);
out:
	free(ms);
	free(mp);
	free(is);
	free(durs);
	json_decref(j);
}

static void call_index(struct gstream *s, Inference__RepositoryIndexRequest *rq)
{
	Inference__RepositoryIndexResponse r = INFERENCE__REPOSITORY_INDEX_RESPONSE__INIT;
	json_t *j = repository_index(s->conn->srv->repo, rq->ready), *e;
	size_t n = json_array_size(j), i;
	Inference__RepositoryIndexResponse__ModelIndex *mi = calloc(n + 1, sizeof(*mi));
	Inference__RepositoryIndexResponse__ModelIndex **mp = calloc(n + 1, sizeof(*mp));

	if (!mi || !mp) {
		respond_error(s, GRPC_INTERNAL, "out of memory");
	} else {
		json_array_foreach(j, i, e) {
			const char *v;

			inference__repository_index_response__model_index__init(&mi[i]);
			mi[i].name = (char *)json_string_value(json_object_get(e, "name"));
			v = json_string_value(json_object_get(e, "version"));
			mi[i].version = (char *)(v ? v : "");
			v = json_string_value(json_object_get(e, "state"));
			mi[i].state = (char *)(v ? v : "");
			v = json_string_value(json_object_get(e, "reason"));
			mi[i].reason = (char *)(v ? v : "");
			mp[i] = &mi[i];
		}
		r.n_models = n;
		r.models = mp;
		respond(s, &r.base);
	}
	free(mi);
	free(mp);
	json_decref(j);
}

static int control_allowed(struct gstream *s)
{
	enum control_mode m = repository_mode(s->conn->srv->repo);

	if (m == CONTROL_EXPLICIT)
		return 1;
	respond_error(s, GRPC_UNAVAILABLE,
		      m == CONTROL_POLL ? "explicit model load / unload is not allowed if polling is enabled (--model-control-mode=poll)"
					: "explicit model load / unload is not allowed with --model-control-mode=none");
	return 0;
}

static void call_load(struct gstream *s, Inference__RepositoryModelLoadRequest *rq)
{
	Inference__RepositoryModelLoadResponse r = INFERENCE__REPOSITORY_MODEL_LOAD_RESPONSE__INIT;
	char err[SERVE_ERR_MAX];
	json_t *cfg = NULL;
	size_t i;
	int st;

	if (!control_allowed(s))
		return;
	for (i = 0; i < rq->n_parameters; i++) {
		Inference__ModelRepositoryParameter *p = rq->parameters[i]->value;

		if (strcmp(rq->parameters[i]->key, "config"))
			continue;
		if (!p || p->parameter_choice_case !=
		    INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_STRING_PARAM) {
			respond_error(s, GRPC_INVALID_ARGUMENT, "parameters.config must be a string_param");
			return;
		}
		cfg = json_loads(p->string_param, JSON_REJECT_DUPLICATES, NULL);
		if (!cfg) {
			respond_error(s, GRPC_INVALID_ARGUMENT, "parameters.config: malformed JSON");
			return;
		}
	}
	st = repository_load(s->conn->srv->repo, rq->model_name, cfg, -1, err);
	json_decref(cfg);
	if (st)
		respond_error(s, status_to_grpc(st), err);
	else
		respond(s, &r.base);
}

static void call_unload(struct gstream *s, Inference__RepositoryModelUnloadRequest *rq)
{
	Inference__RepositoryModelUnloadResponse r = INFERENCE__REPOSITORY_MODEL_UNLOAD_RESPONSE__INIT;
	char err[SERVE_ERR_MAX];
	int st;

	if (!control_allowed(s))
		return;
	st = repository_unload(s->conn->srv->repo, rq->model_name, -1, err);
	if (st)
		respond_error(s, status_to_grpc(st), err);
	else
		respond(s, &r.base);
}

/* TraceSetting: Triton's trace extension (trace.h), the settings as HTTP's JSON. */
static void call_trace(struct gstream *s, Inference__TraceSettingRequest *rq)
{
	Inference__TraceSettingResponse r = INFERENCE__TRACE_SETTING_RESPONSE__INIT;
	Inference__TraceSettingResponse__SettingsEntry ent[8], *ep[8];
	Inference__TraceSettingResponse__SettingValue val[8];
	char *strs[8][4], err[SERVE_ERR_MAX];
	const char *model = rq->model_name && rq->model_name[0] ? rq->model_name : NULL;
	json_t *in = json_object(), *out = NULL, *v;
	const char *key;
	size_t i, n = 0;
	int st = SERVE_OK;

	if (model) {
		json_t *m = repository_model_metadata(s->conn->srv->repo, model, -1, err, &st);

		if (!m) {
			json_decref(in);
			respond_error(s, status_to_grpc(st), err);
			return;
		}
		json_decref(m);
	}
	for (i = 0; i < rq->n_settings; i++) {
		Inference__TraceSettingRequest__SettingValue *sv = rq->settings[i]->value;
		const char *k = rq->settings[i]->key;
		json_t *x;
		size_t j;

		if (!sv || !sv->n_value) {
			x = json_null();	/* a model's setting back to the server's */
		} else if (!strcmp(k, "trace_level")) {
			x = json_array();
			for (j = 0; j < sv->n_value; j++)
				json_array_append_new(x, json_string(sv->value[j]));
		} else if (sv->n_value > 1) {
			st = serve_err(err, SERVE_INVALID, "trace setting '%.64s' takes one value", k);
			break;
		} else {
			x = json_string(sv->value[0]);
		}
		json_object_set_new(in, k, x);
	}
	if (!st) {
		if (rq->n_settings)
			st = trace_settings_update(model, in, &out, err);
		else
			out = trace_settings_json(model);
	}
	json_decref(in);
	if (st || !out) {
		json_decref(out);
		respond_error(s, status_to_grpc(st ? st : SERVE_INTERNAL), st ? err : "out of memory");
		return;
	}
	json_object_foreach(out, key, v) {
		if (n == 8)
			break;
		inference__trace_setting_response__settings_entry__init(&ent[n]);
		inference__trace_setting_response__setting_value__init(&val[n]);
		ent[n].key = (char *)key;
		ent[n].value = &val[n];
		if (json_is_array(v)) {
			for (i = 0; i < json_array_size(v) && i < 4; i++)
				strs[n][i] = (char *)json_string_value(json_array_get(v, i));
			val[n].n_value = i;
		} else {
			strs[n][0] = (char *)json_string_value(v);
			val[n].n_value = 1;
		}
		val[n].value = strs[n];
		ep[n] = &ent[n];
		n++;
	}
	r.n_settings = n;
	r.settings = ep;
	respond(s, &r.base);
	json_decref(out);
}

/* LogSettings: Triton's logging extension (logging.h), the settings as HTTP's JSON. */
static void call_log_settings(struct gstream *s, Inference__LogSettingsRequest *rq)
{
	Inference__LogSettingsResponse r = INFERENCE__LOG_SETTINGS_RESPONSE__INIT;
	Inference__LogSettingsResponse__SettingsEntry ent[8], *ep[8];
	Inference__LogSettingsResponse__SettingValue val[8];
	char err[SERVE_ERR_MAX];
	json_t *in = json_object(), *out = NULL, *v;
	const char *key;
	size_t i, n = 0;
	int st = SERVE_OK;

	for (i = 0; i < rq->n_settings && !st; i++) {
		Inference__LogSettingsRequest__SettingValue *sv = rq->settings[i]->value;
		json_t *x = NULL;

		switch (sv ? sv->parameter_choice_case : 0) {
		case INFERENCE__LOG_SETTINGS_REQUEST__SETTING_VALUE__PARAMETER_CHOICE_BOOL_PARAM:
			x = json_boolean(sv->bool_param);
			break;
		case INFERENCE__LOG_SETTINGS_REQUEST__SETTING_VALUE__PARAMETER_CHOICE_UINT32_PARAM:
			x = json_integer(sv->uint32_param);
			break;
		case INFERENCE__LOG_SETTINGS_REQUEST__SETTING_VALUE__PARAMETER_CHOICE_STRING_PARAM:
			x = json_string(sv->string_param);
			break;
		default:
			st = serve_err(err, SERVE_INVALID, "log setting '%.64s' has no value",
				       rq->settings[i]->key);
		}
		if (x)
			json_object_set_new(in, rq->settings[i]->key, x);
	}
	if (!st) {
		if (rq->n_settings)
			st = log_settings_update(in, &out, err);
		else
			out = log_settings_json();
	}
	json_decref(in);
	if (st || !out) {
		json_decref(out);
		respond_error(s, status_to_grpc(st ? st : SERVE_INTERNAL), st ? err : "out of memory");
		return;
	}
	json_object_foreach(out, key, v) {
		if (n == 8)
			break;
		inference__log_settings_response__settings_entry__init(&ent[n]);
		inference__log_settings_response__setting_value__init(&val[n]);
		ent[n].key = (char *)key;
		ent[n].value = &val[n];
		if (json_is_boolean(v)) {
			val[n].parameter_choice_case =
				INFERENCE__LOG_SETTINGS_RESPONSE__SETTING_VALUE__PARAMETER_CHOICE_BOOL_PARAM;
			val[n].bool_param = json_is_true(v);
		} else if (json_is_integer(v)) {
			val[n].parameter_choice_case =
				INFERENCE__LOG_SETTINGS_RESPONSE__SETTING_VALUE__PARAMETER_CHOICE_UINT32_PARAM;
			val[n].uint32_param = (uint32_t)json_integer_value(v);
		} else {
			val[n].parameter_choice_case =
				INFERENCE__LOG_SETTINGS_RESPONSE__SETTING_VALUE__PARAMETER_CHOICE_STRING_PARAM;
			val[n].string_param = (char *)json_string_value(v);
		}
		ep[n] = &ent[n];
		n++;
	}
	r.n_settings = n;
	r.settings = ep;
	respond(s, &r.base);
	json_decref(out);
}

/* Called by an instance thread. */
static void infer_done(struct infer_request *req, void *arg)
{
	struct gstream *s = arg;
	struct gconn *c = s->conn;
	uint64_t one = 1;
	ssize_t w;

	(void)req;
	pthread_mutex_lock(&c->lock);
	s->next_done = c->done;
	c->done = s;
	w = write(c->efd, &one, sizeof(one));
	(void)w;
	pthread_mutex_unlock(&c->lock);
}

/* The same for a message of a ModelStreamInfer call. */
static void stream_infer_done(struct infer_request *req, void *arg)
{
	struct gsub *m = arg;
	struct gconn *c = m->s->conn;
	uint64_t one = 1;
	ssize_t w;

	(void)req;
	pthread_mutex_lock(&c->lock);
	m->next_done = c->sub_done;
	c->sub_done = m;
	w = write(c->efd, &one, sizeof(one));
	(void)w;
	pthread_mutex_unlock(&c->lock);
}

/* The parameters of outputs written into shared memory (region, size, offset). */
struct shm_out_params {
	Inference__ModelInferResponse__InferOutputTensor__ParametersEntry e[SERVE_MAX_IO][3];
	Inference__ModelInferResponse__InferOutputTensor__ParametersEntry *p[SERVE_MAX_IO][3];
	Inference__InferParameter v[SERVE_MAX_IO][3];
};

/* Output i's shared-memory parameters, as Triton's: no contents, the region's. */
static void shm_output_params(Inference__ModelInferResponse__InferOutputTensor *ot,
			      const struct infer_tensor *t, struct shm_out_params *sp, size_t i)
{
	static const char *const keys[] = { "shared_memory_region", "shared_memory_byte_size",
					    "shared_memory_offset" };
	size_t k, n = t->shm_offset ? 3 : 2;

	for (k = 0; k < n; k++) {
		Inference__ModelInferResponse__InferOutputTensor__ParametersEntry *e = &sp->e[i][k];

		inference__model_infer_response__infer_output_tensor__parameters_entry__init(e);
		inference__infer_parameter__init(&sp->v[i][k]);
		sp->e[i][k].key = (char *)keys[k];
		sp->e[i][k].value = &sp->v[i][k];
		if (k == 0) {
			sp->v[i][k].parameter_choice_case =
				INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
			sp->v[i][k].string_param = (char *)shm_region_name(t->shm);
		} else {
			sp->v[i][k].parameter_choice_case =
				INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
			sp->v[i][k].int64_param = k == 1 ? (int64_t)t->nbytes
							 : (int64_t)t->shm_offset;
		}
		sp->p[i][k] = &sp->e[i][k];
	}
	ot->n_parameters = n;
	ot->parameters = sp->p[i];
}

/*
 * A finished request as a ModelInferResponse; the arrays are the caller's
 * and the message points into req until it is packed. An output in shared
 * memory gets an empty raw_output_contents entry (the indices stay the
 * outputs') and its region's parameters.
 */
static void fill_infer_response(Inference__ModelInferResponse *r, const struct infer_request *req,
				Inference__ModelInferResponse__InferOutputTensor *ot,
				Inference__ModelInferResponse__InferOutputTensor **op,
				ProtobufCBinaryData *raw, struct shm_out_params *sp,
				char *ver, size_t ver_size)
{
	size_t i;

	snprintf(ver, ver_size, "%" PRId64, req->version);
	r->model_name = (char *)req->model;
	r->model_version = ver;
	r->id = (char *)req->id;
	for (i = 0; i < req->num_results; i++) {
		const struct infer_tensor *t = &req->results[i];

		inference__model_infer_response__infer_output_tensor__init(&ot[i]);
		ot[i].name = (char *)t->name;
		ot[i].datatype = (char *)serve_dtype_name(t->dtype);
		ot[i].n_shape = (size_t)t->rank;
		ot[i].shape = (int64_t *)t->dims;
		op[i] = &ot[i];
		raw[i].data = t->shm ? NULL : t->data;
		raw[i].len = t->shm ? 0 : t->nbytes;
		if (t->shm)
			shm_output_params(&ot[i], t, sp, i);
	}
	r->n_outputs = req->num_results;
	r->outputs = op;
	r->n_raw_output_contents = req->num_results;
	r->raw_output_contents = raw;
}

static void infer_answer(struct gstream *s)
{
	Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
	Inference__ModelInferResponse__InferOutputTensor ot[SERVE_MAX_IO], *op[SERVE_MAX_IO];
	ProtobufCBinaryData raw[SERVE_MAX_IO];
	struct shm_out_params sp;
	char ver[32];

	if (s->req.status) {
		respond_error(s, status_to_grpc(s->req.status), s->req.err);
		return;
	}
	fill_infer_response(&r, &s->req, ot, op, raw, &sp, ver, sizeof(ver));
	respond(s, &r.base);
}

/* Typed contents as raw bytes of the declared datatype. */
static int contents_bytes(const Inference__InferTensorContents *c, enum npu_data_type t,
			  uint8_t **out, size_t *len)
{
	size_t n = 0, es = npu_data_type_size(t), i;
	uint8_t *b;

	*out = NULL;
	*len = 0;
	if (!c)
		return 0;
	if (t == NPU_TYPE_STRING) {
		/* bytes_contents, serialized as Triton's raw form (bytes.h). */
		size_t total = 0, off = 0;

		for (i = 0; i < c->n_bytes_contents; i++) {
			if (c->bytes_contents[i].len > UINT32_MAX)
				return -1;
			total += 4 + c->bytes_contents[i].len;
		}
		b = malloc(total + 1);
		if (!b)
			return -1;
		for (i = 0; i < c->n_bytes_contents; i++) {
			size_t l = c->bytes_contents[i].len;

			b[off] = (uint8_t)l;
			b[off + 1] = (uint8_t)(l >> 8);
			b[off + 2] = (uint8_t)(l >> 16);
			b[off + 3] = (uint8_t)(l >> 24);
			if (l)
				memcpy(b + off + 4, c->bytes_contents[i].data, l);
			off += 4 + l;
		}
		*out = b;
		*len = total;
		return 0;
	}
	switch (t) {
	case NPU_TYPE_FLOAT: n = c->n_fp32_contents; break;
	case NPU_TYPE_DOUBLE: n = c->n_fp64_contents; break;
	case NPU_TYPE_INT8: case NPU_TYPE_INT16: case NPU_TYPE_INT32: n = c->n_int_contents; break;
	case NPU_TYPE_INT64: n = c->n_int64_contents; break;
	case NPU_TYPE_UINT8: case NPU_TYPE_UINT16: case NPU_TYPE_UINT32: n = c->n_uint_contents; break;
	case NPU_TYPE_UINT64: n = c->n_uint64_contents; break;
	case NPU_TYPE_BOOL: n = c->n_bool_contents; break;
	default: return -1;	/* FP16: raw contents only */
	}
	b = malloc(n * es + 1);
	if (!b)
		return -1;
	for (i = 0; i < n; i++) {
		uint8_t *p = b + i * es;

		switch (t) {
		case NPU_TYPE_FLOAT: memcpy(p, &c->fp32_contents[i], 4); break;
		case NPU_TYPE_DOUBLE: memcpy(p, &c->fp64_contents[i], 8); break;
		case NPU_TYPE_INT8: { int8_t x = (int8_t)c->int_contents[i]; memcpy(p, &x, 1); break; }
		case NPU_TYPE_INT16: { int16_t x = (int16_t)c->int_contents[i]; memcpy(p, &x, 2); break; }
		case NPU_TYPE_INT32: memcpy(p, &c->int_contents[i], 4); break;
		case NPU_TYPE_INT64: memcpy(p, &c->int64_contents[i], 8); break;
		case NPU_TYPE_UINT8: { uint8_t x = (uint8_t)c->uint_contents[i]; memcpy(p, &x, 1); break; }
		case NPU_TYPE_UINT16: { uint16_t x = (uint16_t)c->uint_contents[i]; memcpy(p, &x, 2); break; }
		case NPU_TYPE_UINT32: memcpy(p, &c->uint_contents[i], 4); break;
		case NPU_TYPE_UINT64: memcpy(p, &c->uint64_contents[i], 8); break;
		default: *p = c->bool_contents[i] ? 1 : 0; break;
		}
	}
	*out = b;
	*len = n * es;
	return 0;
}

/*
 * A shared-memory parameter of an input or output into the REST form's
 * parameters (o), typed as sent: the decoder checks the types.
 */
static int shm_param_json(json_t *o, const char *key, const Inference__InferParameter *v)
{
	if (strcmp(key, "shared_memory_region") && strcmp(key, "shared_memory_byte_size") &&
	    strcmp(key, "shared_memory_offset"))
		return 0;
	if (!v)
		json_object_set_new(o, key, json_null());
	else if (v->parameter_choice_case ==
		 INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM)
		json_object_set_new(o, key, json_string(v->string_param));
	else if (v->parameter_choice_case ==
		 INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM)
		json_object_set_new(o, key, json_integer(v->int64_param));
	else
		json_object_set_new(o, key, json_boolean(v->bool_param));
	return !strcmp(key, "shared_memory_region");
}

/*
 * A ModelInferRequest in the REST form (a JSON header and binary tensors),
 * so both protocols share one decoder and its checks: *body (malloc'd) of
 * *len bytes whose first *hl are the JSON. Returns GRPC_OK or a status
 * with the message in err.
 */
static int infer_body(const Inference__ModelInferRequest *rq, char **body, size_t *len,
		      size_t *hl, char *err)
{
	json_t *root = json_object(), *inputs = json_array(), *outputs = json_array(), *params;
	uint8_t *blobs[SERVE_MAX_IO] = { 0 };
	size_t blen[SERVE_MAX_IO] = { 0 }, total = 0, i, k, raw = 0, num_shm = 0;
	json_t *shm_in[SERVE_MAX_IO] = { 0 };
	char *hdr = NULL;
	int code = GRPC_OK;

	*body = NULL;
	if (rq->n_inputs > SERVE_MAX_IO) {
		code = GRPC_INVALID_ARGUMENT;
		snprintf(err, SERVE_ERR_MAX, "too many inputs");
		goto out;
	}
	/* Inputs in shared memory have no raw_input_contents entry (Triton's clients). */
	for (i = 0; i < rq->n_inputs; i++) {
		shm_in[i] = json_object();
		for (k = 0; k < rq->inputs[i]->n_parameters; k++)
			if (shm_param_json(shm_in[i], rq->inputs[i]->parameters[k]->key,
					   rq->inputs[i]->parameters[k]->value))
				num_shm++;
	}
	if (rq->n_raw_input_contents && rq->n_raw_input_contents != rq->n_inputs - num_shm) {
		code = GRPC_INVALID_ARGUMENT;
		snprintf(err, SERVE_ERR_MAX,
			 "raw_input_contents has %zu entries but there are %zu inputs not in shared memory",
			 rq->n_raw_input_contents, rq->n_inputs - num_shm);
		goto out;
	}
	if (rq->id[0])
		json_object_set_new(root, "id", json_string(rq->id));
	params = json_pack("{s:b}", "binary_data_output", 1);
	for (i = 0; i < rq->n_parameters; i++) {
		Inference__InferParameter *p = rq->parameters[i]->value;
		const char *key = rq->parameters[i]->key;

		if ((!strcmp(key, "priority") || !strcmp(key, "timeout")) && p &&
		    p->parameter_choice_case == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM)
			json_object_set_new(params, key, json_integer(p->int64_param));
		/* Sequence parameters as they came: the decoder checks their types. */
		if ((!strcmp(key, "sequence_id") || !strcmp(key, "sequence_start") ||
		     !strcmp(key, "sequence_end")) && p) {
			json_t *v;

			switch (p->parameter_choice_case) {
			case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM:
				v = json_boolean(p->bool_param);
				break;
			case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM:
				v = json_integer(p->int64_param);
				break;
			case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM:
				if (p->uint64_param > INT64_MAX) {
					code = GRPC_INVALID_ARGUMENT;
					snprintf(err, SERVE_ERR_MAX,
						 "parameters.%s: %" PRIu64 " is above 2^63-1, the largest id npu-serve takes",
						 key, p->uint64_param);
					json_decref(params);
					goto out;
				}
				v = json_integer((json_int_t)p->uint64_param);
				break;
			case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM:
				v = json_string(p->string_param);
				break;
			default:
				v = json_real(p->double_param);
				break;
			}
			if (v)
				json_object_set_new(params, key, v);
		}
	}
	json_object_set_new(root, "parameters", params);
	for (i = 0; i < rq->n_inputs; i++) {
		Inference__ModelInferRequest__InferInputTensor *t = rq->inputs[i];
		json_t *shape = json_array();

		for (k = 0; k < t->n_shape; k++)
			json_array_append_new(shape, json_integer(t->shape[k]));
		if (json_object_get(shm_in[i], "shared_memory_region")) {
			json_array_append_new(inputs, json_pack("{s:s, s:s, s:o, s:O}",
				"name", t->name, "datatype", t->datatype, "shape", shape,
				"parameters", shm_in[i]));
			continue;
		}
		if (rq->n_raw_input_contents) {
			blobs[i] = rq->raw_input_contents[raw].data;
			blen[i] = rq->raw_input_contents[raw++].len;
		} else {
			enum npu_data_type dt = serve_dtype_parse(t->datatype);

			if (dt != NPU_TYPE_UNDEFINED && contents_bytes(t->contents, dt, &blobs[i], &blen[i])) {
				json_decref(shape);
				code = GRPC_INVALID_ARGUMENT;
				snprintf(err, SERVE_ERR_MAX,
					 "input '%.100s': %s tensors must come in raw_input_contents",
					 t->name, t->datatype);
				goto out;
			}
		}
		total += blen[i];
		json_array_append_new(inputs, json_pack("{s:s, s:s, s:o, s:{s:I}}",
			"name", t->name, "datatype", t->datatype, "shape", shape,
			"parameters", "binary_data_size", (json_int_t)blen[i]));
	}
	json_object_set(root, "inputs", inputs);
	for (i = 0; i < rq->n_outputs; i++) {
		json_t *op = json_pack("{s:b}", "binary_data", 1);

		for (k = 0; k < rq->outputs[i]->n_parameters; k++)
			shm_param_json(op, rq->outputs[i]->parameters[k]->key,
				       rq->outputs[i]->parameters[k]->value);
		json_array_append_new(outputs, json_pack("{s:s, s:o}", "name",
			rq->outputs[i]->name, "parameters", op));
	}
	if (rq->n_outputs)
		json_object_set(root, "outputs", outputs);
	hdr = json_dumps(root, JSON_COMPACT);
	if (!hdr) {
		code = GRPC_INVALID_ARGUMENT;
		snprintf(err, SERVE_ERR_MAX, "names must be UTF-8");
		goto out;
	}
	*hl = strlen(hdr);
	*body = malloc(*hl + total + 1);
	if (!*body) {
		code = GRPC_INTERNAL;
		snprintf(err, SERVE_ERR_MAX, "out of memory");
		goto out;
	}
	memcpy(*body, hdr, *hl);
	for (i = 0, k = *hl; i < rq->n_inputs; i++) {
		if (blen[i])
			memcpy(*body + k, blobs[i], blen[i]);
		k += blen[i];
	}
	*len = *hl + total;
out:
	if (!rq->n_raw_input_contents)
		for (i = 0; i < SERVE_MAX_IO; i++)
			free(blobs[i]);
	for (i = 0; i < SERVE_MAX_IO; i++)
		json_decref(shm_in[i]);
	free(hdr);
	json_decref(inputs);
	json_decref(outputs);
	json_decref(root);
	return code;
}

static void call_infer(struct gstream *s, Inference__ModelInferRequest *rq)
{
	char err[SERVE_ERR_MAX];
	size_t len, hl;
	int bad, st;
	int64_t v = parse_version(rq->model_version, &bad);

	if (bad) {
		respond_error(s, GRPC_INVALID_ARGUMENT, "'model_version' is not a positive integer");
		return;
	}
	st = infer_body(rq, &s->infer_body, &len, &hl, err);
	if (st) {
		respond_error(s, st, err);
		return;
	}
	memset(&s->req, 0, sizeof(s->req));
	s->req.t_arrive = serve_now_ns();
	s->req.done = infer_done;
	s->req.done_arg = s;
	pthread_mutex_lock(&s->conn->lock);
	s->conn->pending++;
	s->infer_pending = 1;
	pthread_mutex_unlock(&s->conn->lock);
	st = repository_infer(s->conn->srv->repo, rq->model_name, v, s->infer_body, len,
			      (long long)hl, &s->req, err);
	if (st) {
		pthread_mutex_lock(&s->conn->lock);
		s->conn->pending--;
		s->infer_pending = 0;
		pthread_mutex_unlock(&s->conn->lock);
		respond_error(s, status_to_grpc(st), err);
	}
}

/* ---- System shared memory (shm.h) ------------------------------------------------------ */

static void call_shm_status(struct gstream *s, Inference__SystemSharedMemoryStatusRequest *rq)
{
	Inference__SystemSharedMemoryStatusResponse r =
		INFERENCE__SYSTEM_SHARED_MEMORY_STATUS_RESPONSE__INIT;
	Inference__SystemSharedMemoryStatusResponse__RegionsEntry *e = NULL, **ep = NULL;
	Inference__SystemSharedMemoryStatusResponse__RegionStatus *rs = NULL;
	char err[SERVE_ERR_MAX];
	struct shm_info *info;
	size_t n, i;
	int st = shm_status(rq->name, &info, &n, err);

	if (st) {
		respond_error(s, status_to_grpc(st), err);
		return;
	}
	e = calloc(n + 1, sizeof(*e));
	ep = calloc(n + 1, sizeof(*ep));
	rs = calloc(n + 1, sizeof(*rs));
	if (!e || !ep || !rs) {
		respond_error(s, GRPC_INTERNAL, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		inference__system_shared_memory_status_response__regions_entry__init(&e[i]);
		inference__system_shared_memory_status_response__region_status__init(&rs[i]);
		rs[i].name = info[i].name;
		rs[i].key = info[i].key;
		rs[i].offset = info[i].offset;
		rs[i].byte_size = info[i].byte_size;
		e[i].key = info[i].name;
		e[i].value = &rs[i];
		ep[i] = &e[i];
	}
	r.n_regions = n;
	r.regions = ep;
	respond(s, &r.base);
out:
	free(e);
	free(ep);
	free(rs);
	free(info);
}

static void call_shm_register(struct gstream *s, Inference__SystemSharedMemoryRegisterRequest *rq)
{
	Inference__SystemSharedMemoryRegisterResponse r =
		INFERENCE__SYSTEM_SHARED_MEMORY_REGISTER_RESPONSE__INIT;
	char err[SERVE_ERR_MAX];
	int st = shm_register(rq->name, rq->key, rq->offset, rq->byte_size, err);

	if (st)
		respond_error(s, status_to_grpc(st), err);
	else
		respond(s, &r.base);
}

static void call_shm_unregister(struct gstream *s,
				Inference__SystemSharedMemoryUnregisterRequest *rq)
{
	Inference__SystemSharedMemoryUnregisterResponse r =
		INFERENCE__SYSTEM_SHARED_MEMORY_UNREGISTER_RESPONSE__INIT;
	char err[SERVE_ERR_MAX];
	int st = shm_unregister(rq->name, err);

	if (st)
		respond_error(s, status_to_grpc(st), err);
	else
		respond(s, &r.base);
}

/* ---- ModelStreamInfer ---------------------------------------------------------------- */

static int call_allowed(struct gstream *s, const char *method);

/*
 * A bidirectional stream: every ModelInferRequest the client sends gets a
 * ModelStreamInferResponse, in the order the requests finish (the id says
 * which). An error is that message's error_message; the stream goes on.
 * The call ends with grpc-status 0 once the client has half-closed and
 * every request is answered. Responses queue in s->resp, sent by
 * read_stream as nghttp2 asks for data.
 */
static ssize_t read_stream(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
			   size_t length, uint32_t *data_flags, nghttp2_data_source *source,
			   void *user_data)
{
	struct gstream *s = source->ptr;
	size_t n = s->resp_len - s->resp_off;

	(void)user_data;
	if (!n) {
		if (s->half_closed && !s->infer_pending && !s->held_len) {
			nghttp2_nv trailers[] = { NV("grpc-status", "0") };

			*data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
			nghttp2_submit_trailer(session, stream_id, trailers, 1);
			s->finished = 1;
			call_done(s);
			return 0;
		}
		/* Draining: the work queued is answered, the call ends here. */
		if (atomic_load(&s->conn->srv->draining) && !s->infer_pending && !s->held_len) {
			nghttp2_nv trailers[] = { NV("grpc-status", "14"),
						  NV("grpc-message", "the server is shutting down") };

			*data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
			nghttp2_submit_trailer(session, stream_id, trailers, 2);
			s->finished = 1;
			call_done(s);
			if (!s->half_closed)
				s->reset_after = NGHTTP2_NO_ERROR + 1;
			return 0;
		}
		s->deferred = 1;
		return NGHTTP2_ERR_DEFERRED;
	}
	if (n > length)
		n = length;
	memcpy(buf, s->resp + s->resp_off, n);
	s->resp_off += n;
	if (s->resp_off == s->resp_len)
		s->resp_off = s->resp_len = 0;
	return (ssize_t)n;
}

/* Something to send (a response, or the end): wake the data provider. */
static void stream_kick(struct gstream *s)
{
	if (s->deferred) {
		s->deferred = 0;
		nghttp2_session_resume_data(s->conn->session, s->id);
	}
}

static void stream_send(struct gstream *s, const char *error, const char *model, const char *id,
			const struct infer_request *req)
{
	Inference__ModelStreamInferResponse r = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
	Inference__ModelInferResponse ir = INFERENCE__MODEL_INFER_RESPONSE__INIT;
	Inference__ModelInferResponse__InferOutputTensor ot[SERVE_MAX_IO], *op[SERVE_MAX_IO];
	ProtobufCBinaryData raw[SERVE_MAX_IO];
	struct shm_out_params sp;
	char ver[32];
	size_t n;
	uint8_t *p;

	if (error) {
		/* The id and model say which request failed. */
		r.error_message = (char *)error;
		ir.model_name = (char *)(model ? model : "");
		ir.id = (char *)(id ? id : "");
	} else {
		fill_infer_response(&ir, req, ot, op, raw, &sp, ver, sizeof(ver));
	}
	r.infer_response = &ir;
	n = protobuf_c_message_get_packed_size(&r.base);
	if (s->resp_len + n + 5 > s->resp_cap) {
		size_t cap = s->resp_cap ? s->resp_cap : 4096;

		while (cap < s->resp_len + n + 5)
			cap *= 2;
		p = realloc(s->resp, cap);
		if (!p) {
			serve_log(SERVE_LOG_ERROR, "gRPC stream: out of memory for a response");
			return;
		}
		s->resp = p;
		s->resp_cap = cap;
	}
	p = s->resp + s->resp_len;
	p[0] = 0;
	p[1] = (uint8_t)(n >> 24);
	p[2] = (uint8_t)(n >> 16);
	p[3] = (uint8_t)(n >> 8);
	p[4] = (uint8_t)n;
	protobuf_c_message_pack(&r.base, p + 5);
	s->resp_len += n + 5;
	stream_kick(s);
}

static void stream_error(struct gstream *s, int code, const char *msg, const char *model,
			 const char *id)
{
	metrics_http_request(code == GRPC_NOT_FOUND ? 404 : code == GRPC_UNAVAILABLE ? 503 :
			     code == GRPC_INTERNAL ? 500 : code == GRPC_UNIMPLEMENTED ? 501 : 400);
	stream_send(s, msg, model, id, NULL);
}

static void sub_free(struct gsub *m)
{
	infer_request_clear(&m->req);
	free(m->body);
	free(m->model);
	free(m->id);
	free(m);
}

static void sub_unlist(struct gsub *m)
{
	struct gstream *s = m->s;

	if (m->sprev)
		m->sprev->snext = m->snext;
	else
		s->subs = m->snext;
	if (m->snext)
		m->snext->sprev = m->sprev;
	s->sub_bytes -= m->len;
}

/* One complete message of the stream. */
static void stream_message(struct gstream *s, const uint8_t *msg, size_t n, int compressed)
{
	Inference__ModelInferRequest *rq;
	struct gsub *m;
	char err[SERVE_ERR_MAX];
	size_t len, hl;
	int bad, st;
	int64_t v;

	if (compressed) {
		stream_error(s, GRPC_UNIMPLEMENTED, "compressed messages are not supported", NULL, NULL);
		return;
	}
	rq = inference__model_infer_request__unpack(NULL, n, msg);
	if (!rq) {
		stream_error(s, GRPC_INVALID_ARGUMENT, "cannot parse the ModelInferRequest message",
			     NULL, NULL);
		return;
	}
	v = parse_version(rq->model_version, &bad);
	if (bad) {
		stream_error(s, GRPC_INVALID_ARGUMENT, "'model_version' is not a positive integer",
			     rq->model_name, rq->id);
		goto out;
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->model = strdup(rq->model_name)) || !(m->id = strdup(rq->id))) {
		if (m)
			free(m->model);
		free(m);
		stream_error(s, GRPC_INTERNAL, "out of memory", rq->model_name, rq->id);
		goto out;
	}
	m->s = s;
	st = infer_body(rq, &m->body, &len, &hl, err);
	if (st) {
		stream_error(s, st, err, rq->model_name, rq->id);
		sub_free(m);
		goto out;
	}
	m->req.t_arrive = serve_now_ns();
	m->req.done = stream_infer_done;
	m->req.done_arg = m;
	m->len = len;
	pthread_mutex_lock(&s->conn->lock);
	s->conn->pending++;
	s->infer_pending++;
	pthread_mutex_unlock(&s->conn->lock);
	/* Listed before it is queued: a cancel may come before it is done. */
	m->snext = s->subs;
	if (s->subs)
		s->subs->sprev = m;
	s->subs = m;
	s->sub_bytes += len;
	st = repository_infer(s->conn->srv->repo, rq->model_name, v, m->body, len, (long long)hl,
			      &m->req, err);
	if (st) {
		pthread_mutex_lock(&s->conn->lock);
		s->conn->pending--;
		s->infer_pending--;
		pthread_mutex_unlock(&s->conn->lock);
		sub_unlist(m);
		stream_error(s, status_to_grpc(st), err, rq->model_name, rq->id);
		sub_free(m);
	}
out:
	inference__model_infer_request__free_unpacked(rq, NULL);
}

/*
 * Received bytes of a stream: every complete message is taken from the
 * front of s->body; a message over the limit is answered with an error and
 * its bytes are skipped as they come.
 */
static void stream_data(struct gstream *s, const uint8_t *data, size_t len)
{
	size_t max = s->conn->srv->o.max_message_bytes;

	while (len) {
		size_t take;

		if (s->skip) {
			take = len < s->skip ? len : s->skip;
			s->skip -= take;
			data += take;
			len -= take;
			continue;
		}
		/* The 5-byte prefix first, then the message it announces. */
		if (s->len < 5) {
			take = 5 - s->len < len ? 5 - s->len : len;
		} else {
			uint32_t n = (uint32_t)(uint8_t)s->body[1] << 24 |
				     (uint32_t)(uint8_t)s->body[2] << 16 |
				     (uint32_t)(uint8_t)s->body[3] << 8 | (uint8_t)s->body[4];

			if (n > max) {
				stream_error(s, GRPC_RESOURCE_EXHAUSTED,
					     "the message exceeds the server's limit", NULL, NULL);
				s->skip = n;
				s->len = 0;
				continue;
			}
			take = 5 + (size_t)n - s->len < len ? 5 + (size_t)n - s->len : len;
		}
		if (s->len + take > s->cap) {
			size_t cap = s->cap ? s->cap : 4096;
			char *nb;

			while (cap < s->len + take)
				cap *= 2;
			nb = realloc(s->body, cap);
			if (!nb) {
				stream_error(s, GRPC_INTERNAL, "out of memory", NULL, NULL);
				s->len = 0;
				return;
			}
			s->body = nb;
			s->cap = cap;
		}
		memcpy(s->body + s->len, data, take);
		s->len += take;
		data += take;
		len -= take;
		if (s->len >= 5) {
			uint32_t n = (uint32_t)(uint8_t)s->body[1] << 24 |
				     (uint32_t)(uint8_t)s->body[2] << 16 |
				     (uint32_t)(uint8_t)s->body[3] << 8 | (uint8_t)s->body[4];

			if (n <= max && s->len == 5 + (size_t)n) {
				stream_message(s, (const uint8_t *)s->body + 5, n, s->body[0] != 0);
				s->len = 0;
			}
		}
	}
	/* A message begun and not ended is on the clock (body_timeout_ms). */
	if (!s->len)
		s->t_body = 0;
	else if (!s->t_body)
		s->t_body = serve_now_ns();
}

/* Bytes of a backlogged stream kept unread (not consumed) until it shrinks. */
static int stream_hold(struct gstream *s, const uint8_t *data, size_t len)
{
	if (s->held_len + len > s->held_cap) {
		size_t cap = s->held_cap ? s->held_cap : 16384;
		uint8_t *p;

		while (cap < s->held_len + len)
			cap *= 2;
		p = realloc(s->held, cap);
		if (!p)
			return -1;
		s->held = p;
		s->held_cap = cap;
	}
	memcpy(s->held + s->held_len, data, len);
	s->held_len += len;
	return 0;
}

static void stream_end(struct gstream *s);

/* The held bytes, as far as the backlog allows now (the connection thread's pass). */
static void stream_unhold(struct gstream *s)
{
	size_t off = 0;

	while (off < s->held_len && !stream_backlogged(s)) {
		size_t n = s->held_len - off < 16384 ? s->held_len - off : 16384;

		stream_data(s, s->held + off, n);
		off += n;
	}
	memmove(s->held, s->held + off, s->held_len - off);
	s->held_len -= off;
	stream_account(s);
	if (!s->held_len && s->half_closed)
		stream_end(s);
}

/* The request headers of a ModelStreamInfer call: answer with ours now. */
static void stream_begin(struct gstream *s)
{
	nghttp2_nv hdrs[] = {
		NV(":status", "200"),
		NV("content-type", "application/grpc"),
	};
	nghttp2_data_provider dp;
	struct grpc_server *srv = s->conn->srv;

	pthread_mutex_lock(&srv->lock);
	srv->in_flight++;
	pthread_mutex_unlock(&srv->lock);
	s->counted = 1;
	s->t_body = 0;	/* from now on, per message */
	if (!call_allowed(s, "ModelStreamInfer"))
		return;	/* answered; the caller refuses the rest */
	s->streaming = 2;	/* answering */
	dp.source.ptr = s;
	dp.read_callback = read_stream;
	nghttp2_submit_response(s->conn->session, s->id, hdrs, 2, &dp);
}

/* The client half-closed: the call ends when every request is answered. */
static void stream_end(struct gstream *s)
{
	s->half_closed = 1;
	if (s->held_len)
		return;	/* checked once the held messages are taken (stream_unhold) */
	if (s->len)
		stream_error(s, GRPC_INVALID_ARGUMENT, "the stream ended inside a message", NULL, NULL);
	s->len = 0;
	s->t_body = 0;
	stream_account(s);
	stream_kick(s);
}

/* ---- ModelConfig ----------------------------------------------------------------------- */

/* Every allocation of one ModelConfig response, freed together once packed. */
struct arena {
	void *p[512];
	size_t n;
};

static void *arena_new(struct arena *a, size_t size)
{
	void *p;

	if (a->n == sizeof(a->p) / sizeof(a->p[0]) || !(p = calloc(1, size ? size : 1)))
		return NULL;
	a->p[a->n++] = p;
	return p;
}

#define NEW(p, count) do { if (!((p) = arena_new(&a, (count) * sizeof(*(p))))) goto oom; } while (0)

static int enum_value(const ProtobufCEnumDescriptor *d, const char *name, int dflt)
{
	const ProtobufCEnumValue *v = name ? protobuf_c_enum_descriptor_get_value_by_name(d, name) : NULL;

	return v ? v->value : dflt;
}

static const char *jstr(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "";
}

static uint64_t juint(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (uint64_t)v : 0;
}

static Inference__ModelQueuePolicy *queue_policy(struct arena *ap, json_t *j)
{
	Inference__ModelQueuePolicy *q = arena_new(ap, sizeof(*q));

	if (!q)
		return NULL;
	inference__model_queue_policy__init(q);
	q->timeout_action = !strcmp(jstr(j, "timeout_action"), "DELAY") ?
		INFERENCE__MODEL_QUEUE_POLICY__TIMEOUT_ACTION__DELAY :
		INFERENCE__MODEL_QUEUE_POLICY__TIMEOUT_ACTION__REJECT;
	q->default_timeout_microseconds = juint(j, "default_timeout_microseconds");
	q->allow_timeout_override = json_is_true(json_object_get(j, "allow_timeout_override"));
	q->max_queue_size = (uint32_t)juint(j, "max_queue_size");
	return q;
}

/* The "sequence_batching" of GET .../config as Triton's ModelSequenceBatching. */
static Inference__ModelSequenceBatching *sequence_batching(struct arena *ap, json_t *sb)
{
	Inference__ModelSequenceBatching *b;
	json_t *arr = json_object_get(sb, "control_input"), *e, *strat;
	size_t i, k;

#define ANEW(p, count) do { if (!((p) = arena_new(ap, (count) * sizeof(*(p))))) return NULL; } while (0)
	ANEW(b, 1);
	inference__model_sequence_batching__init(b);
	b->max_sequence_idle_microseconds = juint(sb, "max_sequence_idle_microseconds");
	ANEW(b->control_input, json_array_size(arr));
	json_array_foreach(arr, i, e) {
		Inference__ModelSequenceBatching__ControlInput *ci;
		Inference__ModelSequenceBatching__Control *c;
		json_t *cj = json_array_get(json_object_get(e, "control"), 0), *v;

		ANEW(ci, 1);
		inference__model_sequence_batching__control_input__init(ci);
		ci->name = (char *)jstr(e, "name");
		ANEW(ci->control, 1);
		ANEW(c, 1);
		inference__model_sequence_batching__control__init(c);
		c->kind = (Inference__ModelSequenceBatching__Control__Kind)enum_value(
			&inference__model_sequence_batching__control__kind__descriptor, jstr(cj, "kind"), 0);
		c->data_type = (Inference__DataType)enum_value(&inference__data_type__descriptor,
							       jstr(cj, "data_type"), 0);
		if ((v = json_object_get(cj, "int32_false_true"))) {
			ANEW(c->int32_false_true, 2);
			for (k = 0; k < 2; k++)
				c->int32_false_true[k] = (int32_t)json_integer_value(json_array_get(v, k));
			c->n_int32_false_true = 2;
		} else if ((v = json_object_get(cj, "fp32_false_true"))) {
			ANEW(c->fp32_false_true, 2);
			for (k = 0; k < 2; k++)
				c->fp32_false_true[k] = (float)json_number_value(json_array_get(v, k));
			c->n_fp32_false_true = 2;
		} else if ((v = json_object_get(cj, "bool_false_true"))) {
			ANEW(c->bool_false_true, 2);
			for (k = 0; k < 2; k++)
				c->bool_false_true[k] = json_is_true(json_array_get(v, k));
			c->n_bool_false_true = 2;
		}
		ci->control[ci->n_control++] = c;
		b->control_input[b->n_control_input++] = ci;
	}
	arr = json_object_get(sb, "state");
	ANEW(b->state, json_array_size(arr));
	json_array_foreach(arr, i, e) {
		Inference__ModelSequenceBatching__State *st;
		Inference__ModelSequenceBatching__InitialState *is;
		json_t *init = json_array_get(json_object_get(e, "initial_state"), 0);
		json_t *dims = json_object_get(e, "dims"), *d;
		size_t q;

		ANEW(st, 1);
		inference__model_sequence_batching__state__init(st);
		st->input_name = (char *)jstr(e, "input_name");
		st->output_name = (char *)jstr(e, "output_name");
		st->data_type = (Inference__DataType)enum_value(&inference__data_type__descriptor,
								jstr(e, "data_type"), 0);
		ANEW(st->dims, json_array_size(dims));
		json_array_foreach(dims, q, d)
			st->dims[st->n_dims++] = json_integer_value(d);
		ANEW(st->initial_state, 1);
		ANEW(is, 1);
		inference__model_sequence_batching__initial_state__init(is);
		is->data_type = st->data_type;
		is->name = (char *)jstr(init, "name");
		dims = json_object_get(init, "dims");
		ANEW(is->dims, json_array_size(dims));
		json_array_foreach(dims, q, d)
			is->dims[is->n_dims++] = json_integer_value(d);
		is->state_data_case = INFERENCE__MODEL_SEQUENCE_BATCHING__INITIAL_STATE__STATE_DATA_ZERO_DATA;
		is->zero_data = 1;
		st->initial_state[st->n_initial_state++] = is;
		b->state[b->n_state++] = st;
	}
	if ((strat = json_object_get(sb, "direct"))) {
		ANEW(b->direct, 1);
		inference__model_sequence_batching__strategy_direct__init(b->direct);
		b->direct->max_queue_delay_microseconds = juint(strat, "max_queue_delay_microseconds");
		b->direct->minimum_slot_utilization =
			(float)json_number_value(json_object_get(strat, "minimum_slot_utilization"));
		b->strategy_choice_case = INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_DIRECT;
	} else if ((strat = json_object_get(sb, "oldest"))) {
		json_t *pref = json_object_get(strat, "preferred_batch_size"), *v;

		ANEW(b->oldest, 1);
		inference__model_sequence_batching__strategy_oldest__init(b->oldest);
		b->oldest->max_candidate_sequences =
			(int32_t)json_integer_value(json_object_get(strat, "max_candidate_sequences"));
		b->oldest->max_queue_delay_microseconds = juint(strat, "max_queue_delay_microseconds");
		b->oldest->preserve_ordering = json_is_true(json_object_get(strat, "preserve_ordering"));
		ANEW(b->oldest->preferred_batch_size, json_array_size(pref));
		json_array_foreach(pref, i, v)
			b->oldest->preferred_batch_size[b->oldest->n_preferred_batch_size++] =
				(int32_t)json_integer_value(v);
		b->strategy_choice_case = INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_OLDEST;
	}
#undef ANEW
	return b;
}

/*
 * The config as REST GET .../config gives it (repository_model_config:
 * the config as used, completed from the model), as Triton's ModelConfig.
 */
static void call_config(struct gstream *s, Inference__ModelConfigRequest *rq)
{
	Inference__ModelConfigResponse r = INFERENCE__MODEL_CONFIG_RESPONSE__INIT;
	Inference__ModelConfig *mc;
	struct arena a = { .n = 0 };
	char err[SERVE_ERR_MAX];
	json_t *j, *vp, *e, *db, *ig, *params, *v;
	const char *key;
	size_t i, k;
	int st, bad;
	int64_t version = parse_version(rq->version, &bad);

	if (bad) {
		respond_error(s, GRPC_INVALID_ARGUMENT, "'version' is not a positive integer");
		return;
	}
	j = repository_model_config(s->conn->srv->repo, rq->name, version, err, &st);
	if (!j) {
		respond_error(s, status_to_grpc(st), err);
		return;
	}
	NEW(mc, 1);
	inference__model_config__init(mc);
	mc->name = (char *)jstr(j, "name");
	mc->platform = (char *)jstr(j, "platform");
	mc->backend = (char *)jstr(j, "backend");
	mc->default_model_filename = (char *)jstr(j, "default_model_filename");
	mc->max_batch_size = (int32_t)json_integer_value(json_object_get(j, "max_batch_size"));

	vp = json_object_get(j, "version_policy");
	NEW(mc->version_policy, 1);
	inference__model_version_policy__init(mc->version_policy);
	if ((e = json_object_get(vp, "all"))) {
		NEW(mc->version_policy->all, 1);
		inference__model_version_policy__all__init(mc->version_policy->all);
		mc->version_policy->policy_choice_case = INFERENCE__MODEL_VERSION_POLICY__POLICY_CHOICE_ALL;
	} else if ((e = json_object_get(vp, "specific"))) {
		Inference__ModelVersionPolicy__Specific *sp;
		json_t *vs = json_object_get(e, "versions");

		NEW(sp, 1);
		inference__model_version_policy__specific__init(sp);
		NEW(sp->versions, json_array_size(vs));
		json_array_foreach(vs, i, v)
			sp->versions[sp->n_versions++] = json_integer_value(v);
		mc->version_policy->specific = sp;
		mc->version_policy->policy_choice_case = INFERENCE__MODEL_VERSION_POLICY__POLICY_CHOICE_SPECIFIC;
	} else {
		Inference__ModelVersionPolicy__Latest *l;

		NEW(l, 1);
		inference__model_version_policy__latest__init(l);
		l->num_versions = (uint32_t)juint(json_object_get(vp, "latest"), "num_versions");
		mc->version_policy->latest = l;
		mc->version_policy->policy_choice_case = INFERENCE__MODEL_VERSION_POLICY__POLICY_CHOICE_LATEST;
	}

	for (k = 0; k < 2; k++) {
		json_t *arr = json_object_get(j, k ? "output" : "input");
		size_t n = json_array_size(arr);

		if (k) {
			NEW(mc->output, n);
		} else {
			NEW(mc->input, n);
		}
		json_array_foreach(arr, i, e) {
			json_t *dims = json_object_get(e, "dims"), *d;
			int dt = enum_value(&inference__data_type__descriptor, jstr(e, "data_type"), 0);
			int64_t *dv;
			size_t q;

			NEW(dv, json_array_size(dims));
			json_array_foreach(dims, q, d)
				dv[q] = json_integer_value(d);
			if (k) {
				Inference__ModelOutput *o;

				NEW(o, 1);
				inference__model_output__init(o);
				o->name = (char *)jstr(e, "name");
				o->data_type = (Inference__DataType)dt;
				o->n_dims = json_array_size(dims);
				o->dims = dv;
				mc->output[mc->n_output++] = o;
			} else {
				Inference__ModelInput *in;

				NEW(in, 1);
				inference__model_input__init(in);
				in->name = (char *)jstr(e, "name");
				in->data_type = (Inference__DataType)dt;
				in->n_dims = json_array_size(dims);
				in->dims = dv;
				mc->input[mc->n_input++] = in;
			}
		}
	}

	db = json_object_get(j, "dynamic_batching");
	if (db) {
		Inference__ModelDynamicBatching *b;
		json_t *pref = json_object_get(db, "preferred_batch_size");
		json_t *levels = json_object_get(db, "priority_queue_policy");

		NEW(b, 1);
		inference__model_dynamic_batching__init(b);
		NEW(b->preferred_batch_size, json_array_size(pref));
		json_array_foreach(pref, i, v)
			b->preferred_batch_size[b->n_preferred_batch_size++] = (int32_t)json_integer_value(v);
		b->max_queue_delay_microseconds = juint(db, "max_queue_delay_microseconds");
		b->preserve_ordering = json_is_true(json_object_get(db, "preserve_ordering"));
		b->priority_levels = juint(db, "priority_levels");
		b->default_priority_level = juint(db, "default_priority_level");
		if (!(b->default_queue_policy = queue_policy(&a, json_object_get(db, "default_queue_policy"))))
			goto oom;
		NEW(b->priority_queue_policy, json_object_size(levels));
		json_object_foreach(levels, key, v) {
			Inference__ModelDynamicBatching__PriorityQueuePolicyEntry *pe;

			NEW(pe, 1);
			inference__model_dynamic_batching__priority_queue_policy_entry__init(pe);
			pe->key = strtoull(key, NULL, 10);
			if (!(pe->value = queue_policy(&a, v)))
				goto oom;
			b->priority_queue_policy[b->n_priority_queue_policy++] = pe;
		}
		mc->dynamic_batching = b;
		mc->scheduling_choice_case = INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_DYNAMIC_BATCHING;
	}

	if ((db = json_object_get(j, "sequence_batching"))) {
		if (!(mc->sequence_batching = sequence_batching(&a, db)))
			goto oom;
		mc->scheduling_choice_case = INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_SEQUENCE_BATCHING;
	}
	db = json_object_get(json_object_get(j, "ensemble_scheduling"), "step");
	if (db) {
		Inference__ModelEnsembling *en;

		NEW(en, 1);
		inference__model_ensembling__init(en);
		NEW(en->step, json_array_size(db));
		json_array_foreach(db, i, e) {
			Inference__ModelEnsembling__Step *sp;

			NEW(sp, 1);
			inference__model_ensembling__step__init(sp);
			sp->model_name = (char *)jstr(e, "model_name");
			sp->model_version = json_integer_value(json_object_get(e, "model_version"));
			v = json_object_get(e, "input_map");
			NEW(sp->input_map, json_object_size(v));
			json_object_foreach(v, key, params) {
				Inference__ModelEnsembling__Step__InputMapEntry *me;

				NEW(me, 1);
				inference__model_ensembling__step__input_map_entry__init(me);
				me->key = (char *)key;
				me->value = (char *)json_string_value(params);
				sp->input_map[sp->n_input_map++] = me;
			}
			v = json_object_get(e, "output_map");
			NEW(sp->output_map, json_object_size(v));
			json_object_foreach(v, key, params) {
				Inference__ModelEnsembling__Step__OutputMapEntry *me;

				NEW(me, 1);
				inference__model_ensembling__step__output_map_entry__init(me);
				me->key = (char *)key;
				me->value = (char *)json_string_value(params);
				sp->output_map[sp->n_output_map++] = me;
			}
			en->step[en->n_step++] = sp;
		}
		mc->ensemble_scheduling = en;
		mc->scheduling_choice_case = INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_ENSEMBLE_SCHEDULING;
	}

	ig = json_object_get(j, "instance_group");
	NEW(mc->instance_group, json_array_size(ig));
	json_array_foreach(ig, i, e) {
		Inference__ModelInstanceGroup *g;

		NEW(g, 1);
		inference__model_instance_group__init(g);
		g->kind = (Inference__ModelInstanceGroup__Kind)enum_value(
			&inference__model_instance_group__kind__descriptor, jstr(e, "kind"), 0);
		g->count = (int32_t)json_integer_value(json_object_get(e, "count"));
		{
			json_t *gpus = json_object_get(e, "gpus"), *gpu;
			size_t k;

			if (json_array_size(gpus))
				NEW(g->gpus, json_array_size(gpus));
			json_array_foreach(gpus, k, gpu)
				g->gpus[g->n_gpus++] = (int32_t)json_integer_value(gpu);
		}
		if (json_object_get(e, "rate_limiter")) {
			json_t *rl = json_object_get(e, "rate_limiter"), *res, *x;
			size_t k;

			NEW(g->rate_limiter, 1);
			inference__model_rate_limiter__init(g->rate_limiter);
			g->rate_limiter->priority = (uint32_t)juint(rl, "priority");
			res = json_object_get(rl, "resources");
			NEW(g->rate_limiter->resources, json_array_size(res));
			json_array_foreach(res, k, x) {
				Inference__ModelRateLimiter__Resource *rr;

				NEW(rr, 1);
				inference__model_rate_limiter__resource__init(rr);
				rr->name = (char *)jstr(x, "name");
				rr->global = json_is_true(json_object_get(x, "global"));
				rr->count = (uint32_t)juint(x, "count");
				g->rate_limiter->resources[g->rate_limiter->n_resources++] = rr;
			}
		}
		mc->instance_group[mc->n_instance_group++] = g;
	}

	params = json_object_get(j, "parameters");
	NEW(mc->parameters, json_object_size(params));
	json_object_foreach(params, key, v) {
		Inference__ModelConfig__ParametersEntry *pe;

		NEW(pe, 1);
		inference__model_config__parameters_entry__init(pe);
		pe->key = (char *)key;
		NEW(pe->value, 1);
		inference__model_parameter__init(pe->value);
		pe->value->string_value = (char *)jstr(v, "string_value");
		mc->parameters[mc->n_parameters++] = pe;
	}

	if (json_is_true(json_object_get(json_object_get(j, "response_cache"), "enable"))) {
		NEW(mc->response_cache, 1);
		inference__model_response_cache__init(mc->response_cache);
		mc->response_cache->enable = 1;
	}

	r.config = mc;
	respond(s, &r.base);
	goto out;
oom:
	respond_error(s, GRPC_INTERNAL, "out of memory");
out:
	for (i = 0; i < a.n; i++)
		free(a.p[i]);
	json_decref(j);
}

#undef NEW

/*
 * Bearer tokens (auth.h), as on REST: health calls are open, the
 * repository calls need the admin token, everything else the API token.
 * UNAUTHENTICATED (16) for a missing, malformed or unknown token,
 * PERMISSION_DENIED (7) for the API token on a repository call.
 */
static int call_allowed(struct gstream *s, const char *method)
{
	/* Registering maps server memory: a management call, as on REST. */
	enum auth_scope scope = !strcmp(method, "ServerLive") || !strcmp(method, "ServerReady") ?
		AUTH_OPEN : !strncmp(method, "Repository", 10) || !strcmp(method, "TraceSetting") ||
		!strcmp(method, "LogSettings") || !strcmp(method, "SystemSharedMemoryRegister") ||
		!strcmp(method, "SystemSharedMemoryUnregister") ? AUTH_ADMIN : AUTH_API;
	enum auth_result r = auth_check(s->conn->srv->o.auth, scope, s->authz);

	if (r == AUTH_OK)
		return 1;
	respond_error(s, auth_grpc_code(r), auth_message(r, scope));
	return 0;
}

static void dispatch(struct gstream *s)
{
	const char *method;
	ProtobufCMessage *m = NULL;
	const ProtobufCMessageDescriptor *d = NULL;
	uint32_t n;
	struct grpc_server *srv = s->conn->srv;

	pthread_mutex_lock(&srv->lock);
	srv->in_flight++;
	pthread_mutex_unlock(&srv->lock);
	s->counted = 1;
	/* The service and the token were checked on the headers (call_headers). */
	method = s->path + strlen(SERVICE);
	if (s->len < 5) {
		respond_error(s, GRPC_INVALID_ARGUMENT, "no gRPC message in the request");
		return;
	}
	if (s->body[0]) {
		respond_error(s, GRPC_UNIMPLEMENTED, "compressed messages are not supported");
		return;
	}
	n = (uint32_t)(uint8_t)s->body[1] << 24 | (uint32_t)(uint8_t)s->body[2] << 16 |
	    (uint32_t)(uint8_t)s->body[3] << 8 | (uint8_t)s->body[4];
	if (n != s->len - 5) {
		respond_error(s, GRPC_INVALID_ARGUMENT, "the gRPC message length disagrees with the data");
		return;
	}
#define CALL(name, desc) else if (!strcmp(method, name)) d = &desc
	if (0) {}
	CALL("ServerLive", inference__server_live_request__descriptor);
	CALL("ServerReady", inference__server_ready_request__descriptor);
	CALL("ModelReady", inference__model_ready_request__descriptor);
	CALL("ServerMetadata", inference__server_metadata_request__descriptor);
	CALL("ModelMetadata", inference__model_metadata_request__descriptor);
	CALL("ModelInfer", inference__model_infer_request__descriptor);
	CALL("ModelConfig", inference__model_config_request__descriptor);
	CALL("ModelStatistics", inference__model_statistics_request__descriptor);
	CALL("RepositoryIndex", inference__repository_index_request__descriptor);
	CALL("RepositoryModelLoad", inference__repository_model_load_request__descriptor);
	CALL("RepositoryModelUnload", inference__repository_model_unload_request__descriptor);
	CALL("TraceSetting", inference__trace_setting_request__descriptor);
	CALL("LogSettings", inference__log_settings_request__descriptor);
	CALL("SystemSharedMemoryStatus", inference__system_shared_memory_status_request__descriptor);
	CALL("SystemSharedMemoryRegister",
	     inference__system_shared_memory_register_request__descriptor);
	CALL("SystemSharedMemoryUnregister",
	     inference__system_shared_memory_unregister_request__descriptor);
#undef CALL
	if (!d) {
		char msg[SERVE_ERR_MAX];

		snprintf(msg, sizeof(msg), "method %.100s is not implemented", method);
		respond_error(s, GRPC_UNIMPLEMENTED, msg);
		return;
	}
	m = protobuf_c_message_unpack(d, NULL, n, (const uint8_t *)s->body + 5);
	if (!m) {
		char msg[SERVE_ERR_MAX];

		snprintf(msg, sizeof(msg), "cannot parse the %s request message", d->short_name);
		respond_error(s, GRPC_INVALID_ARGUMENT, msg);
		return;
	}
	if (d == &inference__server_live_request__descriptor) {
		Inference__ServerLiveResponse r = INFERENCE__SERVER_LIVE_RESPONSE__INIT;

		r.live = 1;
		respond(s, &r.base);
	} else if (d == &inference__server_ready_request__descriptor) {
		Inference__ServerReadyResponse r = INFERENCE__SERVER_READY_RESPONSE__INIT;

		r.ready = repository_ready(srv->repo);
		respond(s, &r.base);
	} else if (d == &inference__model_ready_request__descriptor) {
		Inference__ModelReadyRequest *rq = (Inference__ModelReadyRequest *)m;
		Inference__ModelReadyResponse r = INFERENCE__MODEL_READY_RESPONSE__INIT;
		int bad;
		int64_t v = parse_version(rq->version, &bad);

		r.ready = !bad && repository_model_ready(srv->repo, rq->name, v);
		respond(s, &r.base);
	} else if (d == &inference__server_metadata_request__descriptor) {
		Inference__ServerMetadataResponse r = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
		static char *ext[] = { "binary_tensor_data", "model_repository", "statistics",
				       "schedule_policy", "model_configuration", "trace", "logging",
				       "system_shared_memory" };

		r.name = "npu-serve";
		r.version = (char *)npu_version();
		r.n_extensions = sizeof(ext) / sizeof(ext[0]);
		r.extensions = ext;
		respond(s, &r.base);
	} else if (d == &inference__model_metadata_request__descriptor) {
		call_metadata(s, (Inference__ModelMetadataRequest *)m);
	} else if (d == &inference__model_infer_request__descriptor) {
		call_infer(s, (Inference__ModelInferRequest *)m);
	} else if (d == &inference__model_config_request__descriptor) {
		call_config(s, (Inference__ModelConfigRequest *)m);
	} else if (d == &inference__model_statistics_request__descriptor) {
		call_statistics(s, (Inference__ModelStatisticsRequest *)m);
	} else if (d == &inference__repository_index_request__descriptor) {
		call_index(s, (Inference__RepositoryIndexRequest *)m);
	} else if (d == &inference__repository_model_load_request__descriptor) {
		call_load(s, (Inference__RepositoryModelLoadRequest *)m);
	} else if (d == &inference__trace_setting_request__descriptor) {
		call_trace(s, (Inference__TraceSettingRequest *)m);
	} else if (d == &inference__log_settings_request__descriptor) {
		call_log_settings(s, (Inference__LogSettingsRequest *)m);
	} else if (d == &inference__system_shared_memory_status_request__descriptor) {
		call_shm_status(s, (Inference__SystemSharedMemoryStatusRequest *)m);
	} else if (d == &inference__system_shared_memory_register_request__descriptor) {
		call_shm_register(s, (Inference__SystemSharedMemoryRegisterRequest *)m);
	} else if (d == &inference__system_shared_memory_unregister_request__descriptor) {
		call_shm_unregister(s, (Inference__SystemSharedMemoryUnregisterRequest *)m);
	} else {
		call_unload(s, (Inference__RepositoryModelUnloadRequest *)m);
	}
	protobuf_c_message_free_unpacked(m, NULL);
}

/* ---- nghttp2 callbacks ---------------------------------------------------------------- */

static ssize_t on_send(nghttp2_session *session, const uint8_t *data, size_t length,
		       int flags, void *user_data)
{
	struct gconn *c = user_data;
	ssize_t n;

	(void)session;
	(void)flags;
#ifdef NPU_SERVE_HAVE_GRPC_TLS
	if (c->tls) {
		/*
		 * A send that returned GNUTLS_E_AGAIN is resumed with NULL, 0;
		 * nghttp2 offers the same unsent bytes again, and the count
		 * GnuTLS returns then is of those bytes.
		 */
		n = c->tls_retry ? gnutls_record_send(c->tls, NULL, 0)
				 : gnutls_record_send(c->tls, data, length);
		c->tls_retry = n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED;
		if (c->tls_retry)
			return NGHTTP2_ERR_WOULDBLOCK;
		if (n < 0)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		return (size_t)n < length ? n : (ssize_t)length;
	}
#endif
	n = send(c->fd, data, length, MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? NGHTTP2_ERR_WOULDBLOCK
							       : NGHTTP2_ERR_CALLBACK_FAILURE;
	return n;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame,
			    void *user_data)
{
	struct gconn *c = user_data;
	struct gstream *s;

	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->conn = c;
	s->id = frame->hd.stream_id;
	s->t_body = serve_now_ns();
	s->next = c->streams;
	if (c->streams)
		c->streams->prev = s;
	c->streams = s;
	atomic_fetch_add(&c->nstreams, 1);
	nghttp2_session_set_stream_user_data(session, s->id, s);
	return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame,
		     const uint8_t *name, size_t namelen, const uint8_t *value,
		     size_t valuelen, uint8_t flags, void *user_data)
{
	struct gstream *s;

	(void)flags;
	(void)user_data;
	if (frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
	if (s && namelen == 5 && !memcmp(name, ":path", 5))
		snprintf(s->path, sizeof(s->path), "%.*s", (int)valuelen, (const char *)value);
	if (s && namelen == 13 && !memcmp(name, "authorization", 13) && !s->authz)
		s->authz = strndup((const char *)value, valuelen);
	return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
			 const uint8_t *data, size_t len, void *user_data)
{
	struct gconn *c = user_data;
	struct gstream *s = nghttp2_session_get_stream_user_data(session, stream_id);
	int ended = flags & NGHTTP2_FLAG_END_STREAM;

	if (!s || s->refused || s->finished || s->dispatched ||
	    (s->streaming && atomic_load(&c->srv->draining))) {
		/* Dropped unread: given back to the windows at once. */
		nghttp2_session_consume(session, stream_id, len);
		return 0;
	}
	if (s->streaming) {
		if (s->held_len || stream_backlogged(s)) {
			if (stream_hold(s, data, len)) {
				nghttp2_session_consume(session, stream_id, len);
				stream_error(s, GRPC_INTERNAL, "out of memory", NULL, NULL);
				return 0;
			}
		} else {
			stream_data(s, data, len);
		}
		s->owed += len;
		s->owed_conn += len;
		stream_account(s);
		conn_repay(c);
		return 0;
	}
	if (s->len + len > c->srv->o.max_message_bytes) {
		nghttp2_session_consume(session, stream_id, len);
		respond_error(s, GRPC_RESOURCE_EXHAUSTED, "the message exceeds the server's limit");
		stream_refuse(s, ended);
		return 0;
	}
	if (s->len + len > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		char *nb;

		while (cap < s->len + len)
			cap *= 2;
		nb = realloc(s->body, cap);
		if (!nb) {
			nghttp2_session_consume(session, stream_id, len);
			respond_error(s, GRPC_INTERNAL, "out of memory");
			stream_refuse(s, ended);
			return 0;
		}
		s->body = nb;
		s->cap = cap;
	}
	memcpy(s->body + s->len, data, len);
	s->len += len;
	s->owed += len;
	s->owed_conn += len;
	stream_account(s);
	conn_repay(c);
	return 0;
}

/*
 * A call's headers, complete: the service, the draining state and the
 * token are checked now, so a refused call is answered at once and its
 * DATA is never buffered.
 */
static void call_headers(struct gstream *s, int ended)
{
	if (atomic_load(&s->conn->srv->draining)) {
		respond_error(s, GRPC_UNAVAILABLE, "the server is shutting down");
		stream_refuse(s, ended);
		return;
	}
	if (strncmp(s->path, SERVICE, strlen(SERVICE))) {
		respond_error(s, GRPC_UNIMPLEMENTED, "unknown service");
		stream_refuse(s, ended);
		return;
	}
	/* A streaming call is answered as its messages come, not at the end. */
	if (!strcmp(s->path, SERVICE "ModelStreamInfer")) {
		s->streaming = 1;
		stream_begin(s);
		if (s->streaming == 1)
			stream_refuse(s, ended);
		return;
	}
	if (!call_allowed(s, s->path + strlen(SERVICE)))
		stream_refuse(s, ended);
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
	struct gconn *c = user_data;
	struct gstream *s;
	int ended = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;

	if (frame->hd.type == NGHTTP2_SETTINGS)
		c->got_settings = 1;	/* the preface is complete */
	if (frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
	if (!s)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
		call_headers(s, ended);
	if (ended && (s->refused || s->finished)) {
		s->reset_after = 0;	/* the client's side is done: nothing to reset */
		return 0;
	}
	if (!ended || s->refused || s->dispatched)
		return 0;
	if (s->streaming) {
		if (s->streaming == 2)
			stream_end(s);
		return 0;
	}
	s->dispatched = 1;
	s->t_body = 0;
	dispatch(s);
	stream_drop_body(s);	/* decoded: the request's bytes are no longer held */
	conn_repay(c);
	return 0;
}

/* An answer is out: a stream whose client is still sending is reset now. */
static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
	struct gstream *s;

	(void)user_data;
	if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
	if (s && s->reset_after) {
		nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, s->id,
					  (uint32_t)s->reset_after - 1);
		s->reset_after = 0;
	}
	return 0;
}

/* Cancel what a stream has queued: the batcher drops it, never run, and calls its 'done'. */
static void stream_cancel(struct gstream *s)
{
	struct gsub *m;

	if (!s->streaming)
		atomic_store(&s->req.cancelled, true);
	for (m = s->subs; m; m = m->snext)
		atomic_store(&m->req.cancelled, true);
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
			   void *user_data)
{
	struct gconn *c = user_data;
	struct gstream *s = nghttp2_session_get_stream_user_data(session, stream_id);
	int pending;

	(void)error_code;
	if (!s)
		return 0;
	nghttp2_session_set_stream_user_data(session, stream_id, NULL);
	pthread_mutex_lock(&c->lock);
	pending = s->infer_pending;
	s->closed = 1;
	pthread_mutex_unlock(&c->lock);
	if (!pending) {
		call_done(s);
		stream_free(s);
		return 0;
	}
	stream_drop_body(s);
	/*
	 * The client is gone (RST_STREAM) before the answer: the call is over
	 * (no answer can reach it, so it no longer holds up a drain), work
	 * still queued is dropped by the batcher; the stream is freed after
	 * its 'done'.
	 */
	call_done(s);
	stream_cancel(s);
	return 0;
}

/* ---- Connections ------------------------------------------------------------------------ */

static void answer_done(struct gconn *c)
{
	struct gstream *list, *s;
	struct gsub *subs, *m;
	uint64_t x;
	ssize_t r = read(c->efd, &x, sizeof(x));

	(void)r;
	pthread_mutex_lock(&c->lock);
	list = c->done;
	c->done = NULL;
	subs = c->sub_done;
	c->sub_done = NULL;
	pthread_mutex_unlock(&c->lock);
	/* Answer in the order they finished (pushed newest first): a sequence's stay in order. */
	for (m = NULL; subs; ) {
		struct gsub *nx = subs->next_done;

		subs->next_done = m;
		m = subs;
		subs = nx;
	}
	subs = m;
	while ((m = subs)) {
		int closed, left;

		subs = m->next_done;
		s = m->s;
		sub_unlist(m);
		pthread_mutex_lock(&c->lock);
		left = --s->infer_pending;
		c->pending--;
		closed = s->closed;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		if (closed) {
			if (!left) {
				call_done(s);
				stream_free(s);
			}
		} else if (m->req.status) {
			stream_error(s, status_to_grpc(m->req.status), m->req.err, m->model, m->id);
		} else {
			metrics_http_request(200);
			stream_send(s, NULL, NULL, NULL, &m->req);
		}
		sub_free(m);
	}
	while ((s = list)) {
		int closed;

		list = s->next_done;
		pthread_mutex_lock(&c->lock);
		s->infer_pending = 0;
		c->pending--;
		closed = s->closed;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		if (closed) {
			call_done(s);
			stream_free(s);
		} else {
			infer_answer(s);
		}
	}
}

/* Bytes from the client: > 0, 0 at its end, -1 on an error, -2 for "none yet". */
static ssize_t conn_recv(struct gconn *c, uint8_t *buf, size_t size)
{
	ssize_t n;

#ifdef NPU_SERVE_HAVE_GRPC_TLS
	if (c->tls) {
		n = gnutls_record_recv(c->tls, buf, size);
		/* Not fatal: a warning alert, EAGAIN; the connection goes on. */
		if (n < 0 && !gnutls_error_is_fatal((int)n))
			return -2;
		return n < 0 ? -1 : n;
	}
#endif
	n = recv(c->fd, buf, size, 0);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -2 : -1;
	return n;
}

/* Decrypted bytes GnuTLS holds that poll() on the socket cannot see. */
static int conn_pending(struct gconn *c)
{
#ifdef NPU_SERVE_HAVE_GRPC_TLS
	return c->tls && gnutls_record_check_pending(c->tls) > 0;
#else
	(void)c;
	return 0;
#endif
}

#ifdef NPU_SERVE_HAVE_GRPC_TLS
/*
 * The TLS handshake, ALPN "h2" required (gRPC over TLS). A client that
 * speaks plaintext HTTP/2, offers no h2 or stalls past preface_timeout_ms
 * (from the accept) is logged and dropped; 0 when the connection may carry gRPC.
 */
static int tls_accept(struct gconn *c)
{
	static const gnutls_datum_t h2 = { (unsigned char *)"h2", 2 };
	struct grpc_server *srv = c->srv;
	uint64_t deadline = c->t_accept + (uint64_t)srv->o.preface_timeout_ms * 1000000ull;
	gnutls_datum_t alpn = { 0 };
	int r;

	if (gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL) ||
	    gnutls_priority_set(c->tls, srv->priority) ||
	    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, srv->cred) ||
	    gnutls_alpn_set_protocols(c->tls, &h2, 1, GNUTLS_ALPN_MANDATORY)) {
		serve_log(SERVE_LOG_WARN, "gRPC: cannot set up a TLS session");
		return -1;
	}
	gnutls_transport_set_int(c->tls, c->fd);
	gnutls_handshake_set_timeout(c->tls, 0);	/* bounded here, by 'deadline' */
	for (;;) {
		struct pollfd p = { c->fd, POLLIN, 0 };
		int stop;

		r = gnutls_handshake(c->tls);
		if (r == GNUTLS_E_SUCCESS)
			break;
		if (r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED && gnutls_error_is_fatal(r)) {
			serve_log(SERVE_LOG_INFO, "gRPC: TLS handshake failed: %s%s", gnutls_strerror(r),
				  r == GNUTLS_E_UNEXPECTED_PACKET_LENGTH || r == GNUTLS_E_UNEXPECTED_PACKET ?
				  " (a plaintext client on the TLS port?)" : "");
			/* A TLS client learns why (best effort: the socket never blocks). */
			gnutls_alert_send_appropriate(c->tls, r);
			return -1;
		}
		pthread_mutex_lock(&srv->lock);
		stop = srv->stop || c->evicted;
		pthread_mutex_unlock(&srv->lock);
		if (stop || serve_now_ns() > deadline) {
			if (!stop) {
				serve_log(SERVE_LOG_INFO, "gRPC: TLS handshake not finished within %d ms: dropped",
					  srv->o.preface_timeout_ms);
				metrics_limit_hit(LIMIT_GRPC_PREFACE_TIMEOUT);
			}
			return -1;
		}
		if (gnutls_record_get_direction(c->tls))
			p.events = POLLOUT;
		if (poll(&p, 1, 200) < 0 && errno != EINTR)
			return -1;
	}
	c->tls_up = 1;
	if (gnutls_alpn_get_selected_protocol(c->tls, &alpn) || alpn.size != 2 ||
	    memcmp(alpn.data, "h2", 2)) {
		serve_log(SERVE_LOG_INFO, "gRPC: a TLS client did not negotiate ALPN \"h2\": dropped");
		return -1;
	}
	return 0;
}
#endif

/*
 * Once per turn of a connection's loop: messages held for a backlog that
 * has shrunk, requests past body_timeout_ms, and the windows.
 */
static void conn_service(struct gconn *c)
{
	struct grpc_server *srv = c->srv;
	uint64_t now = serve_now_ns(), limit = (uint64_t)srv->o.body_timeout_ms * 1000000ull;
	int draining = atomic_load(&srv->draining);
	struct gstream *s;

	for (s = c->streams; s; s = s->next) {
		if (s->closed || s->refused || s->finished)
			continue;
		if (s->held_len && draining) {
			s->held_len = 0;	/* no new work while draining */
			stream_account(s);
			stream_kick(s);
		} else if (s->held_len && !stream_backlogged(s)) {
			stream_unhold(s);
		}
		/* t_body may be later than 'now': set by stream_unhold just above. */
		if (s->t_body && now > s->t_body && now - s->t_body > limit) {
			char msg[96];

			snprintf(msg, sizeof(msg), "the request did not end within %d s (%s)",
				 srv->o.body_timeout_ms / 1000, s->streaming ? "a message" : "its body");
			serve_log(SERVE_LOG_INFO, "gRPC: stream %d: %s: reset", (int)s->id, msg);
			metrics_limit_hit(LIMIT_GRPC_BODY_TIMEOUT);
			if (s->streaming) {
				stream_drop_body(s);
				nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id,
							  NGHTTP2_CANCEL);
			} else {
				respond_error(s, GRPC_DEADLINE_EXCEEDED, msg);
				stream_refuse(s, 0);
				s->reset_after = NGHTTP2_CANCEL + 1;
			}
		}
	}
	conn_repay(c);
}

/*
 * GOAWAY for a connection: on drain a shutdown notice, then after
 * DRAIN_GOAWAY_MS the final one with the last stream we took (new calls
 * in between are refused, UNAVAILABLE); on idleness the final one at once.
 */
static void conn_goaway(struct gconn *c, uint64_t now)
{
	struct grpc_server *srv = c->srv;
	struct gstream *s;

	if (atomic_load(&srv->draining) && c->drain == 0) {
		nghttp2_submit_shutdown_notice(c->session);
		c->drain = 1;
		c->t_drain = now;
		for (s = c->streams; s; s = s->next)
			if (s->streaming == 2)
				stream_kick(s);	/* an idle stream can end now */
	}
	if (c->drain == 1 && now - c->t_drain >= DRAIN_GOAWAY_MS * 1000000ull) {
		nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
				      nghttp2_session_get_last_proc_stream_id(c->session),
				      NGHTTP2_NO_ERROR, NULL, 0);
		c->drain = 2;
	}
	if (!c->drain && !c->closing && c->got_settings && !atomic_load(&c->nstreams) &&
	    now - c->t_idle > (uint64_t)srv->o.idle_timeout_ms * 1000000ull) {
		static const char why[] = "idle";

		metrics_limit_hit(LIMIT_GRPC_IDLE_TIMEOUT);
		nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
				      nghttp2_session_get_last_proc_stream_id(c->session),
				      NGHTTP2_NO_ERROR, (const uint8_t *)why, sizeof(why) - 1);
		c->closing = 1;
	}
}

/* The connection is done with: its calls end, their queued work is cancelled. */
static void conn_abandon(struct gconn *c)
{
	struct gstream *s;

	for (s = c->streams; s; s = s->next) {
		call_done(s);
		/* answer_done frees it once its work is back, before the session goes. */
		nghttp2_session_set_stream_user_data(c->session, s->id, NULL);
		pthread_mutex_lock(&c->lock);
		s->closed = 1;
		pthread_mutex_unlock(&c->lock);
		stream_cancel(s);
	}
}

/* A connection, from the TLS handshake to its close; frees c. */
static void *conn_main(void *arg)
{
	struct gconn *c = arg;
	struct grpc_server *srv = c->srv;
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	nghttp2_settings_entry settings[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)srv->o.max_streams },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (uint32_t)srv->o.stream_window_bytes },
	};
	uint64_t preface_ns = (uint64_t)srv->o.preface_timeout_ms * 1000000ull;
	uint8_t buf[16384];

#ifdef NPU_SERVE_HAVE_GRPC_TLS
	if (srv->cred && tls_accept(c))
		goto drop;
#endif
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
	/* Windows move only for bytes taken into a bounded buffer (conn_repay). */
	nghttp2_option_new(&opt);
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_session_server_new2(&c->session, cb, c, opt);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 2);
	nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0,
					      (int32_t)srv->o.connection_window_bytes);
	for (;;) {
		struct pollfd p[2] = {
			{ c->fd, POLLIN, 0 },
			{ c->efd, POLLIN, 0 },
		};
		uint64_t now = serve_now_ns();
		int stop;

		pthread_mutex_lock(&srv->lock);
		stop = srv->stop || c->evicted;
		pthread_mutex_unlock(&srv->lock);
		if (stop)
			break;
		if (!c->got_settings && now - c->t_accept > preface_ns) {
			serve_log(SERVE_LOG_INFO, "gRPC: no HTTP/2 preface within %d ms: closed",
				  srv->o.preface_timeout_ms);
			metrics_limit_hit(LIMIT_GRPC_PREFACE_TIMEOUT);
			break;
		}
		conn_goaway(c, now);
		conn_service(c);
		if (nghttp2_session_send(c->session))
			break;
		if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session))
			break;
		/* After the last GOAWAY: closed once it is written and no stream is left. */
		if ((c->closing || (c->drain == 2 && !atomic_load(&c->nstreams))) &&
		    !nghttp2_session_want_write(c->session))
			break;
		if (nghttp2_session_want_write(c->session))
			p[0].events |= POLLOUT;
		if (poll(p, 2, conn_pending(c) ? 0 : 500) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN)
			answer_done(c);
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) || conn_pending(c)) {
			ssize_t n = conn_recv(c, buf, sizeof(buf));

			if (n == 0 || n == -1)
				break;
			if (n > 0 && nghttp2_session_mem_recv(c->session, buf, (size_t)n) < 0)
				break;
		}
	}
	/*
	 * The client is gone (EOF, a reset, eviction) or the server stops: no
	 * answer can be sent any more. Every call of the connection is over
	 * (none may stay counted in srv->in_flight and hold up a drain) and
	 * what it queued is cancelled, as for RST_STREAM; the inferences
	 * already running finish before their streams go, answered to no one.
	 */
	conn_abandon(c);
	pthread_mutex_lock(&srv->lock);
	srv->finishing++;
	c->finishing = 1;
	pthread_mutex_unlock(&srv->lock);
	pthread_mutex_lock(&c->lock);
	while (c->pending) {
		pthread_mutex_unlock(&c->lock);
		{
			struct pollfd p = { c->efd, POLLIN, 0 };

			if (poll(&p, 1, 1000) > 0)
				answer_done(c);
		}
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	nghttp2_session_del(c->session);
	c->session = NULL;
	while (c->streams) {	/* streams the session did not close */
		call_done(c->streams);
		stream_free(c->streams);
	}
#ifdef NPU_SERVE_HAVE_GRPC_TLS
drop:
	if (c->tls) {
		if (c->tls_up && !c->tls_retry)
			gnutls_bye(c->tls, GNUTLS_SHUT_WR);	/* best effort: never waits */
		gnutls_deinit(c->tls);
	}
#endif
	/* Unlisted before the close: the acceptor may shut the fd down while listed. */
	pthread_mutex_lock(&srv->lock);
	{
		struct gconn **pp;

		for (pp = &srv->conn_list; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
	}
	if (c->evicted)
		srv->evicting--;
	srv->conns--;
	srv->finishing -= c->finishing;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	close(c->fd);
	close(c->efd);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return NULL;
}

/*
 * Room for a connection from 'peer' (under srv->lock): at most
 * max_connections_per_client from one address; at max_connections the
 * oldest connection with no open stream is closed for it (a silent or idle
 * client yields to a newcomer), and only when every connection has a call
 * open is the newcomer refused.
 */
static int conn_admit(struct grpc_server *srv, uint32_t peer)
{
	struct gconn *c, *oldest = NULL;
	int same = 0;

	if (srv->stop || atomic_load(&srv->draining))
		return 0;
	for (c = srv->conn_list; c; c = c->next) {
		if (c->evicted)
			continue;
		same += c->peer == peer;
		if (!atomic_load(&c->nstreams))
			oldest = c;	/* the list is newest first */
	}
	if (same >= srv->o.max_connections_per_client)
		return 0;
	if (srv->conns - srv->evicting < srv->o.max_connections)
		return 1;
	if (!oldest)
		return 0;
	oldest->evicted = 1;
	srv->evicting++;
	metrics_limit_hit(LIMIT_GRPC_CONNECTIONS);
	shutdown(oldest->fd, SHUT_RDWR);	/* its thread wakes and closes it */
	return 1;
}

static struct gconn *conn_new(struct grpc_server *srv, int fd, uint32_t peer)
{
	struct gconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = srv;
	c->fd = fd;
	c->peer = peer;
	c->t_accept = c->t_idle = serve_now_ns();
	atomic_init(&c->nstreams, 0);
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->efd < 0) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	return c;
}

/*
 * Out of fds or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM...) for a
 * connection: wait for resources, never give up; logged once per burst
 * (it ends when connections are served with no failure for a second).
 */
static void accept_backoff(uint64_t *burst, int err)
{
	if (!*burst)
		serve_log(SERVE_LOG_WARN, "gRPC: cannot accept a connection: %s; retrying every %d ms",
			  strerror(err), ACCEPT_BACKOFF_MS);
	*burst = serve_now_ns();
	poll(NULL, 0, ACCEPT_BACKOFF_MS);
}

static void *accept_main(void *arg)
{
	struct grpc_server *srv = arg;
	uint64_t burst = 0;	/* the last accept failure of a burst (ns) */

	for (;;) {
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(srv->listen_fd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC), one = 1;
		struct gconn *c;
		pthread_t t;
		pthread_attr_t attr;
		int admit, refused_peer = 0;

		if (fd < 0) {
			int e = errno;

			if (atomic_load(&srv->draining))
				break;	/* closed by grpc_quiesce */
			if (e == EINTR || e == ECONNABORTED)
				continue;
			accept_backoff(&burst, e);
			continue;
		}
		pthread_mutex_lock(&srv->lock);
		admit = conn_admit(srv, peer.sin_addr.s_addr);
		c = admit ? conn_new(srv, fd, peer.sin_addr.s_addr) : NULL;
		if (c) {
			srv->conns++;
			c->next = srv->conn_list;
			srv->conn_list = c;
		}
		refused_peer = !admit;
		pthread_mutex_unlock(&srv->lock);
		if (!c) {
			int e = errno;

			close(fd);
			if (refused_peer) {
				serve_log(SERVE_LOG_DEBUG, "gRPC: a connection refused (per-client or global cap)");
				metrics_limit_hit(LIMIT_GRPC_CONNECTIONS);
			}
			else
				accept_backoff(&burst, e);	/* no fd for its eventfd, or no memory */
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (!pthread_create(&t, &attr, conn_main, c)) {
			if (burst && serve_now_ns() - burst > 1000000000ull) {
				serve_log(SERVE_LOG_INFO, "gRPC: accepting connections again");
				burst = 0;
			}
		} else {
			pthread_mutex_lock(&srv->lock);
			{
				struct gconn **pp;

				for (pp = &srv->conn_list; *pp; pp = &(*pp)->next)
					if (*pp == c) {
						*pp = c->next;
						break;
					}
			}
			if (c->evicted)
				srv->evicting--;
			srv->conns--;
			pthread_mutex_unlock(&srv->lock);
			close(c->efd);
			close(fd);
			pthread_cond_destroy(&c->cond);
			pthread_mutex_destroy(&c->lock);
			free(c);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

static void grpc_free_tls(struct grpc_server *s)
{
#ifdef NPU_SERVE_HAVE_GRPC_TLS
	if (s->priority)
		gnutls_priority_deinit(s->priority);
	if (s->cred)
		gnutls_certificate_free_credentials(s->cred);
#else
	(void)s;
#endif
}

/* The limits left 0 get their defaults (grpc.h). */
static void grpc_defaults(struct grpc_options *o)
{
	if (!o->max_message_bytes)
		o->max_message_bytes = 64u << 20;
	if (!o->max_connections)
		o->max_connections = 256;
	if (!o->max_connections_per_client)
		o->max_connections_per_client = 64;
	if (!o->max_streams)
		o->max_streams = 64;
	if (!o->stream_window_bytes)
		o->stream_window_bytes = 1u << 20;
	if (!o->connection_window_bytes)
		o->connection_window_bytes = 4u << 20;
	/* HTTP/2 windows are 31-bit. */
	if (o->stream_window_bytes > 0x7fffffff)
		o->stream_window_bytes = 0x7fffffff;
	if (o->connection_window_bytes > 0x7fffffff)
		o->connection_window_bytes = 0x7fffffff;
	if (!o->max_connection_buffer_bytes)
		o->max_connection_buffer_bytes = 2 * o->max_message_bytes;
	if (!o->max_buffer_bytes)
		o->max_buffer_bytes = 4 * o->max_message_bytes;
	if (!o->max_stream_pending_bytes)
		o->max_stream_pending_bytes = o->max_message_bytes;
	if (!o->preface_timeout_ms)
		o->preface_timeout_ms = 10000;
	if (!o->idle_timeout_ms)
		o->idle_timeout_ms = 300000;
	if (!o->body_timeout_ms)
		o->body_timeout_ms = 60000;
}

int grpc_start(struct repository *repo, const struct grpc_options *o,
	       struct grpc_server **out, char *err)
{
	struct grpc_server *s = calloc(1, sizeof(*s));
	struct sockaddr_in addr;
	socklen_t alen = sizeof(addr);
	int one = 1;

	*out = NULL;
	if (!s)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	s->repo = repo;
	s->o = *o;
	grpc_defaults(&s->o);
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)o->port);
	if (inet_pton(AF_INET, o->address ? o->address : "127.0.0.1", &addr.sin_addr) != 1) {
		free(s);
		return serve_err(err, SERVE_INVALID, "'%s' is not an IPv4 address", o->address);
	}
	s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 ||
	    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(s->listen_fd, 128) ||
	    getsockname(s->listen_fd, (struct sockaddr *)&addr, &alen)) {
		int st = serve_err(err, SERVE_UNAVAILABLE, "cannot listen on %s:%d: %s",
				   o->address ? o->address : "127.0.0.1", o->port, strerror(errno));

		if (s->listen_fd >= 0)
			close(s->listen_fd);
		free(s);
		return st;
	}
	s->port = ntohs(addr.sin_port);
	if (o->tls_cert_pem) {
#ifdef NPU_SERVE_HAVE_GRPC_TLS
		gnutls_datum_t cert = { (unsigned char *)o->tls_cert_pem,
					(unsigned int)strlen(o->tls_cert_pem) };
		gnutls_datum_t key = { (unsigned char *)o->tls_key_pem,
				       (unsigned int)strlen(o->tls_key_pem) };
		int r = gnutls_certificate_allocate_credentials(&s->cred);

		if (!r)
			r = gnutls_certificate_set_x509_key_mem(s->cred, &cert, &key,
								GNUTLS_X509_FMT_PEM);
		if (!r)
			r = gnutls_priority_init(&s->priority, SERVE_TLS_PRIORITIES, NULL);
		if (r) {
			int st = serve_err(err, SERVE_INVALID,
					   "TLS: the certificate or key (--tls-cert, --tls-key): %s",
					   gnutls_strerror(r));

			if (s->cred)
				gnutls_certificate_free_credentials(s->cred);
			close(s->listen_fd);
			free(s);
			return st;
		}
#else
		close(s->listen_fd);
		free(s);
		return serve_err(err, SERVE_INVALID, "built without GnuTLS: gRPC cannot serve TLS");
#endif
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (pthread_create(&s->acceptor, NULL, accept_main, s)) {
		close(s->listen_fd);
		grpc_free_tls(s);
		free(s);
		return serve_err(err, SERVE_INTERNAL, "cannot start the gRPC thread");
	}
	s->accepting = 1;
	*out = s;
	return SERVE_OK;
}

int grpc_port(const struct grpc_server *s)
{
	return s->port;
}

void grpc_quiesce(struct grpc_server *s)
{
	if (!s || !s->accepting)
		return;
	/* Each connection's thread sends GOAWAY on its next turn (conn_goaway). */
	atomic_store(&s->draining, 1);
	shutdown(s->listen_fd, SHUT_RDWR);
	pthread_join(s->acceptor, NULL);
	close(s->listen_fd);
	s->accepting = 0;
}

int grpc_wait_idle(struct grpc_server *s, int timeout_ms)
{
	struct timespec ts;
	int idle;

	if (!s)
		return 1;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (s->in_flight > 0)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) == ETIMEDOUT)
			break;
	idle = s->in_flight <= 0;
	pthread_mutex_unlock(&s->lock);
	return idle;
}

void grpc_stop(struct grpc_server *s)
{
	struct timespec ts;
	int stuck, logged = 0;

	if (!s)
		return;
	grpc_quiesce(s);
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	/*
	 * Connection threads see 'stop' within their poll timeout, then wait
	 * for their inferences still running (their queued ones are
	 * cancelled): as long as a model run takes, which the repository's
	 * drain after this waits for anyway. Only a thread that is neither
	 * gone nor finishing after 10 s is stuck.
	 */
	while (s->conns > 0) {
		if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
			continue;
		if (s->conns > s->finishing)
			break;
		if (!logged)
			serve_log(SERVE_LOG_INFO, "gRPC: %d connections wait for their running inferences",
				  s->conns);
		logged = 1;
		ts.tv_sec += 10;
	}
	stuck = s->conns > 0;
	pthread_mutex_unlock(&s->lock);
	if (stuck)
		return;	/* a thread is stuck: leak rather than free under it */
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	grpc_free_tls(s);
	free(s);
}

int grpc_serve_connection(struct repository *repo, const struct grpc_options *o, int fd)
{
	struct grpc_server *s = calloc(1, sizeof(*s));
	struct gconn *c;

	if (!s) {
		close(fd);
		return -1;
	}
	s->repo = repo;
	s->o = *o;
	s->o.tls_cert_pem = s->o.tls_key_pem = NULL;
	grpc_defaults(&s->o);
	s->listen_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c = conn_new(s, fd, 0);
	if (!c) {
		close(fd);
	} else {
		s->conns = 1;
		s->conn_list = c;
		conn_main(c);
	}
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return c ? 0 : -1;
}
