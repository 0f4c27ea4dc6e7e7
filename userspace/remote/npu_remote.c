// SPDX-License-Identifier: MIT
/*
 * npu_remote.c - the client side of split computing: a KServe v2 inference
 * request with Triton's binary tensor extension (libcurl, one kept-alive
 * connection; JSON by jansson), the tail's metadata check, and a paced
 * sender that emulates a slow link on loopback.
 */
#include "npu/npu_remote.h"
#include "common/npu_struct_size.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

struct remote_output {
	char *name;
	enum npu_data_type dtype;
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
	void *data;
	size_t nbytes;
};

/* What the tail declares (metadata), fetched once. */
struct remote_io {
	char *name;
	char datatype[16];
	int rank;
	int64_t dims[NPU_MODEL_MAX_RANK];
};

/* A token bucket of one MSS: bytes leave at the link's rate, never faster. */
struct pacer {
	double bytes_per_ms;	/* 0: unpaced */
	double t0;		/* when the first byte went out */
	uint64_t bytes;
};

struct npu_remote {
	struct npu_remote_options opts;
	char *url, *model, *version;
	CURL *curl;
	bool checked;
	struct remote_io *inputs;
	size_t num_inputs;
	/* The request being sent. */
	unsigned char *body;
	size_t body_size, body_off;
	struct pacer up, down;
	/* The response being received. */
	unsigned char *resp;
	size_t resp_size, resp_cap;
	long header_len;	/* Inference-Header-Content-Length, -1 if none */
	struct remote_output *outs;
	size_t num_outs;
	struct npu_remote_stats stats;
	char curl_err[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_status;

static void curl_init(void)
{
	curl_init_status = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_until(double t_ms)
{
	double d = t_ms - now_ms();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)(d / 1e3);
	ts.tv_nsec = (long)((d - ts.tv_sec * 1e3) * 1e6);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* How many of 'want' bytes may go now; sleeps until the link has room. */
static size_t pace(struct pacer *p, size_t want)
{
	size_t chunk;

	if (p->bytes_per_ms <= 0)
		return want;
	if (!p->bytes)
		p->t0 = now_ms();
	/* About a millisecond of the link, at least one segment. */
	chunk = (size_t)p->bytes_per_ms;
	if (chunk < 1448)
		chunk = 1448;
	if (chunk > want)
		chunk = want;
	/* The bytes before these have left the wire. */
	sleep_until(p->t0 + (double)p->bytes / p->bytes_per_ms);
	p->bytes += chunk;
	return chunk;
}

static void pace_finish(struct pacer *p)
{
	if (p->bytes_per_ms > 0 && p->bytes)
		sleep_until(p->t0 + (double)p->bytes / p->bytes_per_ms);
}

/* The caller's options of its own struct_size into ours (npu_struct_size.h). */
static npu_status copy_options(struct npu_remote_options *dst, const struct npu_remote_options *src)
{
	size_t given, byte = 0;

	switch (npu_struct_copy_in(dst, sizeof(*dst), src, &given, &byte)) {
	case NPU_STRUCT_UNSIZED:
		return npu_last_error_set(NPU_ERR_INVALID_ARG,
					  "npu_remote_options: struct_size is %zu: initialise the struct with npu_remote_options_init()",
					  given);
	case NPU_STRUCT_NEWER:
		return npu_last_error_set(NPU_ERR_UNSUPPORTED,
					  "npu_remote_options: struct_size %zu is larger than this library's %zu and byte %zu is set: the application was built against a newer libnpu-remote",
					  given, sizeof(*dst), byte);
	case NPU_STRUCT_FITS:
		break;
	}
	return NPU_OK;
}

NPU_API void npu_remote_options_init_sized(struct npu_remote_options *o, size_t size)
{
	struct npu_remote_options d = { .struct_size = size, .timeout_s = 30 };

	if (!o || size < sizeof(size_t))
		return;
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
}

static void free_outputs(struct npu_remote *r)
{
	size_t i;

	for (i = 0; i < r->num_outs; i++) {
		free(r->outs[i].name);
		free(r->outs[i].data);
	}
	free(r->outs);
	r->outs = NULL;
	r->num_outs = 0;
}

static void free_inputs(struct npu_remote *r)
{
	size_t i;

	for (i = 0; i < r->num_inputs; i++)
		free(r->inputs[i].name);
	free(r->inputs);
	r->inputs = NULL;
	r->num_inputs = 0;
}

NPU_API void npu_remote_destroy(struct npu_remote *r)
{
	if (!r)
		return;
	if (r->curl)
		curl_easy_cleanup(r->curl);
	free_outputs(r);
	free_inputs(r);
	free(r->body);
	free(r->resp);
	free(r->url);
	free(r->model);
	free(r->version);
	free(r);
}

NPU_API npu_status npu_remote_create(const struct npu_remote_options *opts,
				     struct npu_remote **out)
{
	struct npu_remote *r;
	npu_status st;
	size_t len;

	if (!out)
		return npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_create: out is NULL");
	*out = NULL;
	if (!opts)
		return npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_create: options are NULL (url and model are needed)");
	r = calloc(1, sizeof(*r));
	if (!r)
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	r->stats.struct_size = sizeof(r->stats);
	npu_remote_options_init(&r->opts);
	st = copy_options(&r->opts, opts);
	if (st) {
		free(r);
		return st;
	}
	if (!r->opts.url || (strncmp(r->opts.url, "http://", 7) && strncmp(r->opts.url, "https://", 8)))
		st = npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_create: url '%s' is not http://HOST:PORT",
				  r->opts.url ? r->opts.url : "(null)");
	else if (!r->opts.model || !r->opts.model[0] || strpbrk(r->opts.model, "/?#% "))
		st = npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_create: model name '%s' is not a model name",
				  r->opts.model ? r->opts.model : "(null)");
	else if (r->opts.version && (!r->opts.version[0] ||
				     strspn(r->opts.version, "0123456789") != strlen(r->opts.version)))
		st = npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_create: version '%s' is not a version number",
				  r->opts.version);
	else if (r->opts.timeout_s < 0 || r->opts.link_mbit < 0 || r->opts.link_rtt_ms < 0)
		st = npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_create: a negative timeout or link figure");
	if (st) {
		free(r);
		return st;
	}
	if (r->opts.timeout_s == 0)
		r->opts.timeout_s = 30;
	r->url = strdup(r->opts.url);
	r->model = strdup(r->opts.model);
	r->version = r->opts.version ? strdup(r->opts.version) : NULL;
	if (!r->url || !r->model || (r->opts.version && !r->version)) {
		npu_remote_destroy(r);
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	}
	len = strlen(r->url);
	while (len && r->url[len - 1] == '/')
		r->url[--len] = '\0';
	r->opts.url = r->url;
	r->opts.model = r->model;
	r->opts.version = r->version;
	pthread_once(&curl_once, curl_init);
	if (curl_init_status != CURLE_OK || !(r->curl = curl_easy_init())) {
		npu_remote_destroy(r);
		return npu_last_error_set(NPU_ERR_INTERNAL, "npu_remote_create: libcurl does not initialise");
	}
	*out = r;
	return NPU_OK;
}

/* ---- HTTP ---- */

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct npu_remote *r = arg;
	size_t want = size * n, left = r->body_size - r->body_off;

	if (!left) {
		pace_finish(&r->up);
		return 0;
	}
	if (want > left)
		want = left;
	want = pace(&r->up, want);
	memcpy(buf, r->body + r->body_off, want);
	r->body_off += want;
	return want;
}

static size_t on_write(char *data, size_t size, size_t n, void *arg)
{
	struct npu_remote *r = arg;
	size_t len = size * n, done = 0;

	if (r->resp_size + len > r->resp_cap) {
		size_t cap = r->resp_cap ? r->resp_cap : 65536;
		unsigned char *p;

		while (cap < r->resp_size + len)
			cap *= 2;
		p = realloc(r->resp, cap);
		if (!p)
			return 0;	/* curl reports a write error */
		r->resp = p;
		r->resp_cap = cap;
	}
	memcpy(r->resp + r->resp_size, data, len);
	r->resp_size += len;
	/* The other direction of the link: the response arrives at its rate. */
	while (done < len)
		done += pace(&r->down, len - done);
	return len;
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
	struct npu_remote *r = arg;
	size_t len = size * n;
	static const char key[] = "inference-header-content-length:";

	if (len > sizeof(key) - 1 && !strncasecmp(line, key, sizeof(key) - 1))
		r->header_len = strtol(line + sizeof(key) - 1, NULL, 10);
	return len;
}

static const char *where(const struct npu_remote *r, char *buf, size_t size)
{
	if (r->version)
		snprintf(buf, size, "model '%s' version %s at %s", r->model, r->version, r->url);
	else
		snprintf(buf, size, "model '%s' at %s", r->model, r->url);
	return buf;
}

/* The server's {"error": "..."} or the first bytes of whatever it said. */
static void server_message(const struct npu_remote *r, char *buf, size_t size)
{
	json_t *j = r->resp_size ? json_loadb((const char *)r->resp, r->resp_size, 0, NULL) : NULL;
	const char *e = j ? json_string_value(json_object_get(j, "error")) : NULL;

	if (e)
		snprintf(buf, size, "%s", e);
	else
		snprintf(buf, size, "%.*s", (int)(r->resp_size < 200 ? r->resp_size : 200),
			 r->resp_size ? (const char *)r->resp : "(empty reply)");
	json_decref(j);
}

/*
 * One exchange: GET (body NULL) or POST of the request body. Fails with a
 * message for connection errors, timeouts and non-200 replies.
 */
static npu_status http(struct npu_remote *r, const char *path, const unsigned char *body,
		       size_t body_size, size_t header_len, double rtt_ms)
{
	char url[2048], hdr[80], w[512], msg[300];
	struct curl_slist *headers = NULL;
	CURLcode rc;
	long code = 0;
	CURL *c = r->curl;

	snprintf(url, sizeof(url), "%s%s", r->url, path);
	r->resp_size = 0;
	r->header_len = -1;
	r->body = (unsigned char *)body;
	r->body_size = body_size;
	r->body_off = 0;
	memset(&r->up, 0, sizeof(r->up));
	memset(&r->down, 0, sizeof(r->down));
	r->up.bytes_per_ms = r->down.bytes_per_ms = r->opts.link_mbit * 1e6 / 8 / 1e3;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->curl_err);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(r->opts.timeout_s * 1e3 + rtt_ms));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(r->opts.timeout_s * 1e3));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	/* Loopback or a LAN server: a proxy from the environment is never meant. */
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (body) {
		headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
		snprintf(hdr, sizeof(hdr), "Inference-Header-Content-Length: %zu", header_len);
		headers = curl_slist_append(headers, hdr);
		/* No "Expect: 100-continue" round trip. */
		headers = curl_slist_append(headers, "Expect:");
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_size);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, r);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	}
	r->curl_err[0] = '\0';
	/* The link's round trip, once per request. */
	if (rtt_ms > 0)
		sleep_until(now_ms() + rtt_ms);
	rc = curl_easy_perform(c);
	curl_slist_free_all(headers);
	r->body = NULL;
	where(r, w, sizeof(w));
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return npu_last_error_set(NPU_ERR_TIMEOUT, "%s: no answer within %.3g s (the remote timeout)",
				    w, r->opts.timeout_s);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		return npu_last_error_set(NPU_ERR_IO, "%s: cannot connect: %s (is npu serve running there?)",
				    w, r->curl_err[0] ? r->curl_err : curl_easy_strerror(rc));
	if (rc != CURLE_OK)
		return npu_last_error_set(NPU_ERR_IO, "%s: %s", w,
				    r->curl_err[0] ? r->curl_err : curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		server_message(r, msg, sizeof(msg));
		return npu_last_error_set(code == 404 ? NPU_ERR_NOT_FOUND : NPU_ERR_DEVICE,
				    "%s: the server answered %ld: %s", w, code, msg);
	}
	return NPU_OK;
}

/* ---- Datatypes ---- */

static const struct {
	enum npu_data_type t;
	const char *name;
} kserve_types[] = {
	{ NPU_TYPE_FLOAT, "FP32" }, { NPU_TYPE_FLOAT16, "FP16" }, { NPU_TYPE_DOUBLE, "FP64" },
	{ NPU_TYPE_BFLOAT16, "BF16" },
	{ NPU_TYPE_INT8, "INT8" }, { NPU_TYPE_INT16, "INT16" }, { NPU_TYPE_INT32, "INT32" },
	{ NPU_TYPE_INT64, "INT64" }, { NPU_TYPE_UINT8, "UINT8" }, { NPU_TYPE_UINT16, "UINT16" },
	{ NPU_TYPE_UINT32, "UINT32" }, { NPU_TYPE_UINT64, "UINT64" }, { NPU_TYPE_BOOL, "BOOL" },
};

static const char *kserve_name(enum npu_data_type t)
{
	size_t i;

	for (i = 0; i < sizeof(kserve_types) / sizeof(kserve_types[0]); i++)
		if (kserve_types[i].t == t)
			return kserve_types[i].name;
	return NULL;
}

static enum npu_data_type kserve_type(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(kserve_types) / sizeof(kserve_types[0]); i++)
		if (!strcmp(kserve_types[i].name, name))
			return kserve_types[i].t;
	return NPU_TYPE_UNDEFINED;
}

static const char *dims_str(int rank, const int64_t *dims, char *buf, size_t size)
{
	size_t len = 0;
	int d;

	if (rank < 0)
		return snprintf(buf, size, "any shape"), buf;
	if (!rank)
		return snprintf(buf, size, "a scalar"), buf;
	buf[0] = '\0';
	for (d = 0; d < rank && len < size; d++)
		len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? "x" : "",
					(long long)dims[d]);
	return buf;
}

/* ---- Metadata ---- */

static npu_status fetch_metadata(struct npu_remote *r)
{
	char path[512], w[512];
	json_t *j, *ins, *it;
	json_error_t je;
	size_t i;
	npu_status st;

	if (r->version)
		snprintf(path, sizeof(path), "/v2/models/%s/versions/%s", r->model, r->version);
	else
		snprintf(path, sizeof(path), "/v2/models/%s", r->model);
	st = http(r, path, NULL, 0, 0, 0);
	if (st != NPU_OK)
		return st;
	where(r, w, sizeof(w));
	j = json_loadb((const char *)r->resp, r->resp_size, 0, &je);
	ins = j ? json_object_get(j, "inputs") : NULL;
	if (!json_is_array(ins)) {
		json_decref(j);
		return npu_last_error_set(NPU_ERR_IO, "%s: the metadata has no 'inputs' list%s%s", w,
				    j ? "" : ": ", j ? "" : je.text);
	}
	free_inputs(r);
	r->inputs = calloc(json_array_size(ins) + 1, sizeof(*r->inputs));
	if (!r->inputs) {
		json_decref(j);
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	}
	json_array_foreach(ins, i, it) {
		struct remote_io *io = &r->inputs[r->num_inputs];
		const char *name = json_string_value(json_object_get(it, "name"));
		const char *dt = json_string_value(json_object_get(it, "datatype"));
		json_t *shape = json_object_get(it, "shape"), *d;
		size_t k;

		if (!name || !dt || !json_is_array(shape) ||
		    json_array_size(shape) > NPU_MODEL_MAX_RANK) {
			json_decref(j);
			return npu_last_error_set(NPU_ERR_IO, "%s: metadata input %zu is malformed", w, i);
		}
		io->name = strdup(name);
		if (!io->name) {
			json_decref(j);
			return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
		}
		r->num_inputs++;
		snprintf(io->datatype, sizeof(io->datatype), "%s", dt);
		io->rank = (int)json_array_size(shape);
		json_array_foreach(shape, k, d)
			io->dims[k] = json_is_integer(d) ? json_integer_value(d) : -1;
	}
	json_decref(j);
	return NPU_OK;
}

NPU_API npu_status npu_remote_check(struct npu_remote *r, const struct npu_tensor_info *sent,
				    size_t count)
{
	char w[512], a[128], b[128];
	size_t i, k;
	npu_status st;

	if (!r || (count && !sent))
		return npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_check: NULL argument");
	st = fetch_metadata(r);
	if (st != NPU_OK)
		return st;
	where(r, w, sizeof(w));
	for (i = 0; i < count; i++) {
		const struct remote_io *io = NULL;
		const char *dt = kserve_name(sent[i].dtype);
		int d;

		for (k = 0; k < r->num_inputs && !io; k++)
			if (!strcmp(r->inputs[k].name, sent[i].name))
				io = &r->inputs[k];
		if (!io)
			return npu_last_error_set(NPU_ERR_INVALID_ARG,
					    "%s: tensor '%s' of the head is not an input of the tail (the tail's inputs: %s%s%s%s)",
					    w, sent[i].name, r->num_inputs ? r->inputs[0].name : "none",
					    r->num_inputs > 1 ? ", " : "",
					    r->num_inputs > 1 ? r->inputs[1].name : "",
					    r->num_inputs > 2 ? ", ..." : "");
		if (!dt || strcmp(dt, io->datatype))
			return npu_last_error_set(NPU_ERR_INVALID_ARG,
					    "%s: tensor '%s': the head sends %s, the tail takes %s",
					    w, sent[i].name, dt ? dt : npu_data_type_name(sent[i].dtype),
					    io->datatype);
		if (sent[i].rank >= 0 && sent[i].rank != io->rank)
			return npu_last_error_set(NPU_ERR_INVALID_ARG,
					    "%s: tensor '%s': the head sends %s, the tail takes %s (rank %d, not %d)",
					    w, sent[i].name, dims_str(sent[i].rank, sent[i].dims, a, sizeof(a)),
					    dims_str(io->rank, io->dims, b, sizeof(b)), io->rank, sent[i].rank);
		for (d = 0; sent[i].rank >= 0 && d < io->rank; d++)
			if (io->dims[d] >= 0 && sent[i].dims[d] >= 0 && io->dims[d] != sent[i].dims[d])
				return npu_last_error_set(NPU_ERR_INVALID_ARG,
						    "%s: tensor '%s': the head sends %s, the tail takes %s (dim %d)",
						    w, sent[i].name,
						    dims_str(sent[i].rank, sent[i].dims, a, sizeof(a)),
						    dims_str(io->rank, io->dims, b, sizeof(b)), d);
	}
	for (k = 0; k < r->num_inputs; k++) {
		bool found = false;

		for (i = 0; i < count && !found; i++)
			found = !strcmp(r->inputs[k].name, sent[i].name);
		if (!found)
			return npu_last_error_set(NPU_ERR_INVALID_ARG,
					    "%s: the tail needs input '%s', which the head does not produce",
					    w, r->inputs[k].name);
	}
	r->checked = true;
	return NPU_OK;
}

/* ---- Inference ---- */

static npu_status parse_response(struct npu_remote *r)
{
	char w[512];
	json_t *j, *outs, *o;
	json_error_t je;
	size_t i, off;

	where(r, w, sizeof(w));
	free_outputs(r);
	if (r->header_len < 0 || (size_t)r->header_len > r->resp_size)
		return npu_last_error_set(NPU_ERR_IO,
				    "%s: the reply has no binary tensors (Inference-Header-Content-Length %ld, %zu bytes)",
				    w, r->header_len, r->resp_size);
	j = json_loadb((const char *)r->resp, (size_t)r->header_len, 0, &je);
	outs = j ? json_object_get(j, "outputs") : NULL;
	if (!json_is_array(outs)) {
		json_decref(j);
		return npu_last_error_set(NPU_ERR_IO, "%s: the reply has no 'outputs' list", w);
	}
	r->outs = calloc(json_array_size(outs) + 1, sizeof(*r->outs));
	if (!r->outs) {
		json_decref(j);
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	}
	off = (size_t)r->header_len;
	json_array_foreach(outs, i, o) {
		struct remote_output *ro = &r->outs[r->num_outs];
		const char *name = json_string_value(json_object_get(o, "name"));
		const char *dt = json_string_value(json_object_get(o, "datatype"));
		json_t *shape = json_object_get(o, "shape"), *d;
		json_t *bsz = json_object_get(json_object_get(o, "parameters"), "binary_data_size");
		size_t k, want;
		int64_t numel = 1;

		if (!name || !json_is_array(shape) || json_array_size(shape) > NPU_MODEL_MAX_RANK ||
		    !json_is_integer(bsz) || (ro->dtype = kserve_type(dt)) == NPU_TYPE_UNDEFINED) {
			json_decref(j);
			return npu_last_error_set(NPU_ERR_IO, "%s: reply output %zu is malformed or not binary",
					    w, i);
		}
		ro->rank = (int)json_array_size(shape);
		json_array_foreach(shape, k, d) {
			ro->dims[k] = json_integer_value(d);
			numel *= ro->dims[k] >= 0 ? ro->dims[k] : 0;
		}
		want = (size_t)json_integer_value(bsz);
		if (want != (size_t)numel * npu_data_type_size(ro->dtype) ||
		    want > r->resp_size - off) {
			json_decref(j);
			return npu_last_error_set(NPU_ERR_IO,
					    "%s: reply output '%s': %zu bytes announced for a %s tensor of %lld elements, %zu left",
					    w, name, want, dt, (long long)numel, r->resp_size - off);
		}
		ro->name = strdup(name);
		ro->data = malloc(want ? want : 1);
		if (!ro->name || !ro->data) {
			free(ro->name);
			free(ro->data);
			json_decref(j);
			return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
		}
		memcpy(ro->data, r->resp + off, want);
		ro->nbytes = want;
		off += want;
		r->num_outs++;
	}
	json_decref(j);
	return NPU_OK;
}

NPU_API npu_status npu_remote_infer(struct npu_remote *r, const struct npu_host_tensor *in,
				    size_t count)
{
	json_t *req = NULL, *ins;
	char *header = NULL, path[512];
	unsigned char *body = NULL;
	size_t hlen, total, i;
	double t0;
	npu_status st = NPU_OK;

	if (!r || (count && !in))
		return npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_infer: NULL argument");
	req = json_object();
	ins = json_array();
	if (!req || !ins) {
		json_decref(ins);
		st = npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	json_object_set_new(req, "inputs", ins);
	total = 0;
	for (i = 0; i < count; i++) {
		const char *dt = kserve_name(in[i].dtype);
		json_t *t = json_object(), *shape = json_array();
		int d;

		if (!in[i].name || !dt || in[i].rank < 0 || in[i].rank > NPU_MODEL_MAX_RANK) {
			json_decref(t);
			json_decref(shape);
			st = npu_last_error_set(NPU_ERR_INVALID_ARG,
					  "npu_remote_infer: input %zu ('%s'): %s", i,
					  in[i].name ? in[i].name : "",
					  !in[i].name ? "no name" : !dt ? "a type the protocol has no datatype for"
									: "bad rank");
			goto out;
		}
		for (d = 0; d < in[i].rank; d++)
			json_array_append_new(shape, json_integer(in[i].dims[d]));
		json_object_set_new(t, "name", json_string(in[i].name));
		json_object_set_new(t, "shape", shape);
		json_object_set_new(t, "datatype", json_string(dt));
		json_object_set_new(t, "parameters",
				    json_pack("{sI}", "binary_data_size", (json_int_t)in[i].nbytes));
		json_array_append_new(ins, t);
		total += in[i].nbytes;
	}
	json_object_set_new(req, "parameters", json_pack("{sb}", "binary_data_output", 1));
	header = json_dumps(req, JSON_COMPACT);
	if (!header) {
		st = npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
		goto out;
	}
	hlen = strlen(header);
	body = malloc(hlen + total + 1);
	if (!body) {
		st = npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory (%zu bytes of tensors)", total);
		goto out;
	}
	memcpy(body, header, hlen);
	total = hlen;
	for (i = 0; i < count; i++) {
		if (in[i].nbytes)
			memcpy(body + total, in[i].data, in[i].nbytes);
		total += in[i].nbytes;
	}
	if (r->version)
		snprintf(path, sizeof(path), "/v2/models/%s/versions/%s/infer", r->model, r->version);
	else
		snprintf(path, sizeof(path), "/v2/models/%s/infer", r->model);
	t0 = now_ms();
	st = http(r, path, body, total, hlen, r->opts.link_rtt_ms);
	r->stats.last_request_ms = now_ms() - t0;
	r->stats.requests++;
	r->stats.last_bytes_sent = total;
	r->stats.bytes_sent += total;
	r->stats.last_bytes_received = r->resp_size;
	r->stats.bytes_received += r->resp_size;
	if (st == NPU_OK)
		st = parse_response(r);
out:
	free(body);
	free(header);
	json_decref(req);
	return st;
}

NPU_API npu_status npu_remote_run_split(struct npu_remote *r, struct npu_session *head,
					const struct npu_host_tensor *inputs, size_t count)
{
	struct npu_host_tensor *outs = NULL;
	struct npu_tensor_info *info = NULL;
	size_t n, i;
	npu_status st;

	if (!r || !head)
		return npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_run_split: NULL argument");
	st = npu_session_run(head, inputs, count);
	if (st != NPU_OK)
		return st;
	r->stats.last_head_ms = npu_session_last_run_seconds(head) * 1e3;
	n = npu_model_num_outputs(npu_plan_model(npu_session_plan(head)));
	outs = calloc(n + 1, sizeof(*outs));
	if (!outs)
		return npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
	for (i = 0; i < n; i++) {
		st = npu_session_output(head, i, &outs[i]);
		if (st != NPU_OK)
			goto out;
	}
	if (!r->checked) {
		info = calloc(n + 1, sizeof(*info));
		if (!info) {
			st = npu_last_error_set(NPU_ERR_NO_MEMORY, "out of memory");
			goto out;
		}
		for (i = 0; i < n; i++) {
			info[i].name = outs[i].name;
			info[i].dtype = outs[i].dtype;
			info[i].rank = outs[i].rank;
			memcpy(info[i].dims, outs[i].dims, sizeof(info[i].dims));
		}
		st = npu_remote_check(r, info, n);
		if (st != NPU_OK)
			goto out;
	}
	st = npu_remote_infer(r, outs, n);
out:
	free(info);
	free(outs);
	return st;
}

NPU_API size_t npu_remote_num_outputs(const struct npu_remote *r)
{
	return r ? r->num_outs : 0;
}

NPU_API npu_status npu_remote_output(const struct npu_remote *r, size_t index,
				     struct npu_host_tensor *out)
{
	const struct remote_output *o;

	if (!r || !out)
		return npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_output: NULL argument");
	if (index >= r->num_outs)
		return npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_output: index %zu of %zu outputs",
				    index, r->num_outs);
	o = &r->outs[index];
	memset(out, 0, sizeof(*out));
	out->name = o->name;
	out->dtype = o->dtype;
	out->rank = o->rank;
	memcpy(out->dims, o->dims, sizeof(out->dims));
	out->data = o->data;
	out->nbytes = o->nbytes;
	return NPU_OK;
}

NPU_API npu_status npu_remote_get_stats(const struct npu_remote *r,
					struct npu_remote_stats *stats)
{
	size_t given;

	if (!r || !stats)
		return npu_last_error_set(NPU_ERR_INVALID_ARG, "npu_remote_get_stats: NULL argument");
	if (npu_struct_copy_out(stats, &r->stats, sizeof(r->stats), &given) == NPU_STRUCT_UNSIZED)
		return npu_last_error_set(NPU_ERR_INVALID_ARG,
					  "npu_remote_stats: struct_size is %zu: initialise the struct with npu_remote_stats_init()",
					  given);
	return NPU_OK;
}
