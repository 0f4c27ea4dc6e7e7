// SPDX-License-Identifier: MIT
/* infer_codec: v2 inference requests and responses (see infer_codec.h). */
#include <inttypes.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bytes.h"
#include "infer_codec.h"
#include "shm.h"

#define MAX_JSON_DEPTH 16
#define MAX_ELEMENTS (1ull << 31)

/* ---- fp16 ----------------------------------------------------------------- */

static uint16_t float_to_half(float f)
{
	uint32_t x, sign, mant;
	int32_t exp;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	mant = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		if (exp < -10)
			return (uint16_t)sign;
		mant |= 0x800000;
		{
			uint32_t shift = (uint32_t)(14 - exp);
			uint32_t h = mant >> shift;

			if ((mant >> (shift - 1)) & 1)
				h++;
			return (uint16_t)(sign | h);
		}
	}
	{
		uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);

		if (mant & 0x1000)
			h++;	/* round half up; carries into the exponent */
		return (uint16_t)h;
	}
}

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f,
		 mant = h & 0x3ff, x;
	float f;

	if (exp == 0) {
		f = ldexpf((float)mant, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		x = sign | 0x7f800000 | (mant << 13);
	else
		x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
	memcpy(&f, &x, 4);
	return f;
}

/* ---- Decoding ---------------------------------------------------------------- */

struct flat {
	enum npu_data_type dtype;
	char *buf;
	size_t count, max;
	const char *name;
	char *err;
	int status;
	size_t used, cap;	/* BYTES: serialized so far, and room */
};

/* A BYTES element, serialized onto f->buf (grown as needed). */
static int put_bytes(struct flat *f, const json_t *v)
{
	size_t len;
	unsigned char *p;

	if (!json_is_string(v))
		return f->status = serve_err(f->err, SERVE_INVALID,
					     "input '%s': data[%zu] is not a string (datatype BYTES)",
					     f->name, f->count);
	len = json_string_length(v);
	if (len > UINT32_MAX)
		return f->status = serve_err(f->err, SERVE_INVALID,
					     "input '%s': data[%zu] is over 4 GiB", f->name, f->count);
	if (f->cap - f->used < 4 + len) {
		size_t cap = f->cap * 2 > f->used + 4 + len ? f->cap * 2 : f->used + 4 + len;
		char *b = realloc(f->buf, cap);

		if (!b)
			return f->status = serve_err(f->err, SERVE_INTERNAL, "out of memory");
		f->buf = b;
		f->cap = cap;
	}
	p = (unsigned char *)f->buf + f->used;
	p[0] = (unsigned char)len;
	p[1] = (unsigned char)(len >> 8);
	p[2] = (unsigned char)(len >> 16);
	p[3] = (unsigned char)(len >> 24);
	memcpy(p + 4, json_string_value(v), len);
	f->used += 4 + len;
	f->count++;
	return 0;
}

static int put(struct flat *f, const json_t *v)
{
	size_t es = npu_data_type_size(f->dtype);
	char *p;
	double d;
	json_int_t i;

	if (f->count >= f->max)
		return f->status = serve_err(f->err, SERVE_INVALID,
					     "input '%s': 'data' has more elements than its shape (%zu)",
					     f->name, f->max);
	if (f->dtype == NPU_TYPE_STRING)
		return put_bytes(f, v);
	p = f->buf + f->count * es;
	if (f->dtype == NPU_TYPE_BOOL) {
		if (!json_is_boolean(v))
			return f->status = serve_err(f->err, SERVE_INVALID,
						     "input '%s': data[%zu] is not true or false",
						     f->name, f->count);
		*(uint8_t *)p = json_is_true(v);
		f->count++;
		return 0;
	}
	if (!json_is_number(v))
		return f->status = serve_err(f->err, SERVE_INVALID,
					     "input '%s': data[%zu] is not a number", f->name, f->count);
	d = json_number_value(v);
	i = json_is_integer(v) ? json_integer_value(v) : 0;	/* real: no cast, it may not fit */
	if ((f->dtype == NPU_TYPE_FLOAT || f->dtype == NPU_TYPE_FLOAT16) && isfinite(d) &&
	    fabs(d) > FLT_MAX)
		return f->status = serve_err(f->err, SERVE_INVALID,
					     "input '%s': data[%zu] = %g does not fit %s",
					     f->name, f->count, d, serve_dtype_name(f->dtype));
	switch (f->dtype) {
	case NPU_TYPE_FLOAT: { float x = (float)d; memcpy(p, &x, 4); break; }
	case NPU_TYPE_DOUBLE: memcpy(p, &d, 8); break;
	case NPU_TYPE_FLOAT16: { uint16_t x = float_to_half((float)d); memcpy(p, &x, 2); break; }
	default:
		if (!json_is_integer(v))
			return f->status = serve_err(f->err, SERVE_INVALID,
						     "input '%s': data[%zu] is not an integer (%s)",
						     f->name, f->count, serve_dtype_name(f->dtype));
		switch (f->dtype) {
		case NPU_TYPE_UINT8:
		case NPU_TYPE_INT8: { uint8_t x = (uint8_t)i; memcpy(p, &x, 1); break; }
		case NPU_TYPE_UINT16:
		case NPU_TYPE_INT16: { uint16_t x = (uint16_t)i; memcpy(p, &x, 2); break; }
		case NPU_TYPE_UINT32:
		case NPU_TYPE_INT32: { uint32_t x = (uint32_t)i; memcpy(p, &x, 4); break; }
		default: { int64_t x = i; memcpy(p, &x, 8); break; }
		}
		if ((f->dtype == NPU_TYPE_INT8 && (i < -128 || i > 127)) ||
		    (f->dtype == NPU_TYPE_UINT8 && (i < 0 || i > 255)) ||
		    (f->dtype == NPU_TYPE_INT16 && (i < -32768 || i > 32767)) ||
		    (f->dtype == NPU_TYPE_UINT16 && (i < 0 || i > 65535)) ||
		    (f->dtype == NPU_TYPE_INT32 && (i < INT32_MIN || i > INT32_MAX)) ||
		    (f->dtype == NPU_TYPE_UINT32 && (i < 0 || i > (json_int_t)UINT32_MAX)) ||
		    (f->dtype == NPU_TYPE_UINT64 && i < 0))
			return f->status = serve_err(f->err, SERVE_INVALID,
						     "input '%s': data[%zu] = %" JSON_INTEGER_FORMAT " does not fit %s",
						     f->name, f->count, i, serve_dtype_name(f->dtype));
	}
	f->count++;
	return 0;
}

static int flatten(struct flat *f, const json_t *v, int depth)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v))
		return put(f, v);
	if (depth > MAX_JSON_DEPTH)
		return f->status = serve_err(f->err, SERVE_INVALID,
					     "input '%s': 'data' nested deeper than %d",
					     f->name, MAX_JSON_DEPTH);
	json_array_foreach(v, i, e)
		if (flatten(f, e, depth + 1))
			return f->status;
	return 0;
}

/*
 * The leaves of a 'data' array, counted before anything is allocated for
 * them: a shape the client declares is only trusted once the body backs
 * it. Stops counting past 'limit'.
 */
static int count_leaves(const json_t *v, int depth, size_t limit, size_t *count)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v)) {
		(*count)++;
		return 0;
	}
	if (depth > MAX_JSON_DEPTH)
		return -1;
	json_array_foreach(v, i, e) {
		if (count_leaves(e, depth + 1, limit, count))
			return -1;
		if (*count > limit)
			return 0;
	}
	return 0;
}

static int get_bool_param(const json_t *params, const char *key, int *out, char *err,
			  const char *where)
{
	json_t *v = json_object_get(params, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return serve_err(err, SERVE_INVALID, "%s parameters.%s must be true or false", where, key);
	*out = json_is_true(v);
	return 0;
}

/*
 * The shared-memory parameters of an input or output (Triton's
 * extension): 0 with *region NULL when there are none, else the region,
 * offset (default 0) and byte size, or an error naming 'what'.
 */
static int shm_params(const json_t *params, const char *what, const char **region,
		      uint64_t *offset, uint64_t *size, char *err)
{
	const json_t *r = json_object_get(params, "shared_memory_region"),
		     *sz = json_object_get(params, "shared_memory_byte_size"),
		     *off = json_object_get(params, "shared_memory_offset");

	*region = NULL;
	*offset = 0;
	if (!r && !sz && !off)
		return SERVE_OK;
	if (!r || !sz)
		return serve_err(err, SERVE_INVALID,
				 "%s: shared memory needs both parameters.shared_memory_region and parameters.shared_memory_byte_size",
				 what);
	if (!json_is_string(r))
		return serve_err(err, SERVE_INVALID,
				 "%s: parameters.shared_memory_region is not a string", what);
	if (!json_is_integer(sz) || json_integer_value(sz) < 0)
		return serve_err(err, SERVE_INVALID,
				 "%s: parameters.shared_memory_byte_size is not a non-negative integer",
				 what);
	if (off && (!json_is_integer(off) || json_integer_value(off) < 0))
		return serve_err(err, SERVE_INVALID,
				 "%s: parameters.shared_memory_offset is not a non-negative integer",
				 what);
	*region = json_string_value(r);
	*size = (uint64_t)json_integer_value(sz);
	*offset = off ? (uint64_t)json_integer_value(off) : 0;
	return SERVE_OK;
}

static int decode_input(const json_t *in, size_t index, const struct model_config *cfg,
			struct infer_request *req, const char **bin, size_t *bin_left,
			char *err)
{
	const json_t *name = json_object_get(in, "name"), *shape, *dt, *data, *params, *v;
	const struct config_tensor *ct = NULL;
	struct infer_tensor *t;
	enum npu_data_type dtype;
	uint64_t elems = 1, shm_off = 0, shm_size = 0;
	size_t i, bytes;
	int b = cfg->max_batch_size > 0, k, r, is_bytes;
	const char *region = NULL;
	char what[SERVE_NAME_MAX + 16];

	if (!json_is_object(in))
		return serve_err(err, SERVE_INVALID, "inputs[%zu] is not an object", index);
	if (!json_is_string(name))
		return serve_err(err, SERVE_INVALID, "inputs[%zu]: 'name' is missing or not a string",
				 index);
	for (i = 0; i < cfg->num_inputs; i++)
		if (!strcmp(cfg->inputs[i].name, json_string_value(name)))
			ct = &cfg->inputs[i];
	if (!ct)
		return serve_err(err, SERVE_INVALID, "unexpected inference input '%s' for model '%s'",
				 json_string_value(name), cfg->name);
	t = &req->inputs[ct - cfg->inputs];
	if (t->name[0])
		return serve_err(err, SERVE_INVALID, "input '%s' is given twice", ct->name);
	snprintf(t->name, sizeof(t->name), "%s", ct->name);
	dt = json_object_get(in, "datatype");
	if (!json_is_string(dt))
		return serve_err(err, SERVE_INVALID, "input '%s': 'datatype' is missing or not a string",
				 ct->name);
	dtype = serve_dtype_parse(json_string_value(dt));
	if (dtype == NPU_TYPE_UNDEFINED)
		return serve_err(err, SERVE_INVALID, "input '%s': datatype '%s' is not supported",
				 ct->name, json_string_value(dt));
	if (dtype != ct->dtype)
		return serve_err(err, SERVE_INVALID,
				 "input '%s': datatype %s but model '%s' expects %s", ct->name,
				 serve_dtype_name(dtype), cfg->name, serve_dtype_name(ct->dtype));
	t->dtype = dtype;
	shape = json_object_get(in, "shape");
	if (!json_is_array(shape))
		return serve_err(err, SERVE_INVALID, "input '%s': 'shape' is missing or not an array",
				 ct->name);
	if (json_array_size(shape) != (size_t)(ct->rank + b))
		return serve_err(err, SERVE_INVALID,
				 "input '%s': shape has %zu dims but model '%s' expects %d%s",
				 ct->name, json_array_size(shape), cfg->name, ct->rank + b,
				 b ? " (the batch dim first)" : "");
	t->rank = ct->rank + b;
	for (k = 0; k < t->rank; k++) {
		v = json_array_get(shape, (size_t)k);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > INT32_MAX)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': shape[%d] is not a non-negative integer", ct->name, k);
		t->dims[k] = json_integer_value(v);
		if (k >= b && ct->dims[k - b] >= 0 && ct->dims[k - b] != t->dims[k])
			return serve_err(err, SERVE_INVALID,
					 "input '%s': shape[%d] is %" PRId64 " but model '%s' expects %" PRId64,
					 ct->name, k, t->dims[k], cfg->name, ct->dims[k - b]);
		elems *= (uint64_t)t->dims[k];
		if (elems > MAX_ELEMENTS)
			return serve_err(err, SERVE_INVALID, "input '%s': shape is too large", ct->name);
	}
	if (b) {
		if (t->dims[0] < 1)
			return serve_err(err, SERVE_INVALID, "input '%s': batch size 0", ct->name);
		if (t->dims[0] > cfg->max_batch_size)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': batch size %" PRId64 " exceeds max_batch_size %d of model '%s'",
					 ct->name, t->dims[0], cfg->max_batch_size, cfg->name);
	}
	/* BYTES: the serialized size is only known from the data. */
	is_bytes = dtype == NPU_TYPE_STRING;
	bytes = is_bytes ? 0 : (size_t)elems * npu_data_type_size(dtype);
	params = json_object_get(in, "parameters");
	if (params && !json_is_object(params))
		return serve_err(err, SERVE_INVALID, "input '%s': 'parameters' is not an object",
				 ct->name);
	v = params ? json_object_get(params, "binary_data_size") : NULL;
	data = json_object_get(in, "data");
	snprintf(what, sizeof(what), "input '%s'", ct->name);
	r = params ? shm_params(params, what, &region, &shm_off, &shm_size, err) : SERVE_OK;
	if (r)
		return r;
	if (params && region) {
		void *p;

		if (data || v)
			return serve_err(err, SERVE_INVALID,
					 "input '%s' has both shared memory parameters and %s",
					 ct->name, data ? "'data'" : "parameters.binary_data_size");
		if (!is_bytes && shm_size != bytes)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': shared_memory_byte_size %" PRIu64 " but shape of %" PRIu64 " %s elements needs %zu bytes",
					 ct->name, shm_size, elems, serve_dtype_name(dtype), bytes);
		r = shm_acquire(region, shm_off, shm_size, what, &t->shm, &p, err);
		if (r)
			return r;
		/* In place: the session reads the region itself. */
		t->shm_offset = shm_off;
		t->data = p;
		t->nbytes = (size_t)shm_size;
		t->owned = 0;
		return is_bytes ? bytes_check(p, t->nbytes, elems, what, err) : SERVE_OK;
	}
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': parameters.binary_data_size is not a non-negative integer",
					 ct->name);
		if (data)
			return serve_err(err, SERVE_INVALID,
					 "input '%s' has both 'data' and parameters.binary_data_size",
					 ct->name);
		if (is_bytes) {
			bytes = (size_t)json_integer_value(v);
			if (bytes > *bin_left)
				return serve_err(err, SERVE_INVALID,
						 "input '%s': binary_data_size %zu but only %zu bytes of binary data remain in the body",
						 ct->name, bytes, *bin_left);
			r = bytes_check(*bin, bytes, elems, what, err);
			if (r)
				return r;
		} else if ((uint64_t)json_integer_value(v) != bytes)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': binary_data_size %" JSON_INTEGER_FORMAT " but shape of %" PRIu64 " %s elements needs %zu bytes",
					 ct->name, json_integer_value(v), elems,
					 serve_dtype_name(dtype), bytes);
		if (bytes > *bin_left)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': binary_data_size %zu but only %zu bytes of binary data remain in the body",
					 ct->name, bytes, *bin_left);
		/* In place: the engine copies misaligned data itself, once,
		 * and counts it (npu_io_stats.input_copies). */
		t->data = (void *)*bin;
		t->owned = 0;
		t->nbytes = bytes;
		*bin += bytes;
		*bin_left -= bytes;
		return SERVE_OK;
	}
	if (!data)
		return serve_err(err, SERVE_INVALID,
				 "input '%s': no 'data' and no parameters.binary_data_size", ct->name);
	if (!json_is_array(data))
		return serve_err(err, SERVE_INVALID, "input '%s': 'data' is not an array", ct->name);
	{
		struct flat f = { dtype, NULL, 0, (size_t)elems, ct->name, err, 0, 0, 0 };
		size_t leaves = 0;

		if (count_leaves(data, 0, (size_t)elems, &leaves))
			return serve_err(err, SERVE_INVALID,
					 "input '%s': 'data' nested deeper than %d",
					 ct->name, MAX_JSON_DEPTH);
		if (leaves > elems)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': 'data' has more elements than its shape (%" PRIu64 ")",
					 ct->name, elems);
		if (leaves < elems)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': 'data' has %zu elements but shape needs %" PRIu64,
					 ct->name, leaves, elems);
		if (is_bytes) {
			/* Grown by put_bytes(): the strings' lengths are the data's. */
			r = flatten(&f, data, 0);
			t->data = f.buf;
			t->nbytes = f.used;
			t->owned = 1;
			if (r)
				return r;
			if (!t->data && !(t->data = malloc(1)))
				return serve_err(err, SERVE_INTERNAL, "out of memory");
		} else {
			f.buf = malloc(bytes ? bytes : 1);
			if (!f.buf)
				return serve_err(err, SERVE_INTERNAL, "out of memory");
			t->data = f.buf;
			t->nbytes = bytes;
			t->owned = 1;
			r = flatten(&f, data, 0);
			if (r)
				return r;
		}
		if (f.count != elems)
			return serve_err(err, SERVE_INVALID,
					 "input '%s': 'data' has %zu elements but shape needs %" PRIu64,
					 ct->name, f.count, elems);
	}
	return SERVE_OK;
}

/*
 * The tensor elements a request for 'cfg' may carry: max_batch_size (or 1)
 * times the elements of every input; 0 when a dim is variable (-1).
 */
static uint64_t max_request_elements(const struct model_config *cfg)
{
	uint64_t total = 0, batch = cfg->max_batch_size > 0 ? (uint64_t)cfg->max_batch_size : 1;
	size_t i;
	int d;

	for (i = 0; i < cfg->num_inputs; i++) {
		uint64_t n = batch;

		for (d = 0; d < cfg->inputs[i].rank; d++) {
			if (cfg->inputs[i].dims[d] < 0)
				return 0;
			n *= (uint64_t)cfg->inputs[i].dims[d];
			if (n > MAX_ELEMENTS)
				return 0;	/* the shape check refuses more */
		}
		total += n;
	}
	return total;
}

/*
 * An upper bound on the JSON values in 'n' bytes of JSON, without parsing:
 * every value but the root follows a ',' or opens its container, so
 * values <= 1 + commas + '[' + '{' outside strings. Stops past 'limit'.
 */
static size_t json_values_bound(const char *p, size_t n, size_t limit)
{
	size_t i, count = 1;

	for (i = 0; i < n && count <= limit; i++) {
		switch (p[i]) {
		case '"':
			for (i++; i < n && p[i] != '"'; i++)
				if (p[i] == '\\')
					i++;
			break;
		case ',':
		case '[':
		case '{':
			count++;
			break;
		}
	}
	return count;
}

int codec_decode(const char *body, size_t len, long long json_len,
		 const struct model_config *cfg, const struct codec_limits *lim,
		 struct infer_request *req, char *err)
{
	json_error_t jerr;
	json_t *root, *v, *inputs, *outputs, *params;
	const char *bin;
	size_t bin_left, i, n;
	int r = SERVE_INVALID;

	if (json_len >= 0 && (unsigned long long)json_len > len)
		return serve_err(err, SERVE_INVALID,
				 "Inference-Header-Content-Length %lld exceeds the body of %zu bytes",
				 json_len, len);
	n = json_len >= 0 ? (size_t)json_len : len;
	/* jansson takes ~50 bytes per value parsed: bound both before parsing. */
	if (lim->max_json_bytes && n > lim->max_json_bytes)
		return serve_err(err, SERVE_INVALID,
				 "the request's JSON is %zu bytes, over the limit of %zu (--max-json-bytes): send large tensors as binary data (Inference-Header-Content-Length)",
				 n, lim->max_json_bytes);
	{
		uint64_t elements = max_request_elements(cfg);

		if (elements) {
			size_t limit = (size_t)elements + lim->json_value_slack;

			if (json_values_bound(body, n, limit) > limit)
				return serve_err(err, SERVE_INVALID,
						 "the request's JSON has more than %zu values: model '%s' takes at most %" PRIu64 " tensor elements (max_batch_size x dims) plus %zu for names, shapes and parameters",
						 limit, cfg->name, elements, lim->json_value_slack);
		}
	}
	root = json_loadb(body, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return serve_err(err, SERVE_INVALID, "malformed JSON in the request at line %d column %d: %s",
				 jerr.line, jerr.column, jerr.text);
	bin = body + n;
	bin_left = len - n;
	if (!json_is_object(root)) {
		serve_err(err, SERVE_INVALID, "the request is not a JSON object");
		goto out;
	}
	v = json_object_get(root, "id");
	if (v) {
		if (!json_is_string(v)) {
			serve_err(err, SERVE_INVALID, "'id' is not a string");
			goto out;
		}
		/* Whole or refused: a cut could split a UTF-8 character. */
		if (json_string_length(v) >= sizeof(req->id)) {
			serve_err(err, SERVE_INVALID,
				  "'id' is %zu bytes, longer than the limit of %zu",
				  json_string_length(v), sizeof(req->id) - 1);
			goto out;
		}
		memcpy(req->id, json_string_value(v), json_string_length(v) + 1);
	}
	params = json_object_get(root, "parameters");
	if (params) {
		if (!json_is_object(params)) {
			serve_err(err, SERVE_INVALID, "'parameters' is not an object");
			goto out;
		}
		if (get_bool_param(params, "binary_data_output", &req->binary_output, err, "request"))
			goto out;
		v = json_object_get(params, "priority");
		if (v) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > 1000000) {
				serve_err(err, SERVE_INVALID, "parameters.priority is not a non-negative integer");
				goto out;
			}
			req->priority = (int)json_integer_value(v);
		}
		v = json_object_get(params, "timeout");
		if (v) {
			if (!json_is_integer(v) || json_integer_value(v) < 0) {
				serve_err(err, SERVE_INVALID,
					  "parameters.timeout is not a non-negative integer (microseconds)");
				goto out;
			}
			req->timeout_us = (uint64_t)json_integer_value(v);
		}
		if (sequence_parse_params(params, req, err))
			goto out;
	}
	inputs = json_object_get(root, "inputs");
	if (!json_is_array(inputs) || !json_array_size(inputs)) {
		serve_err(err, SERVE_INVALID, "'inputs' is missing or not a non-empty array");
		goto out;
	}
	memset(req->inputs, 0, sizeof(req->inputs));
	req->num_inputs = cfg->num_inputs;
	json_array_foreach(inputs, i, v) {
		r = decode_input(v, i, cfg, req, &bin, &bin_left, err);
		if (r)
			goto out;
	}
	r = SERVE_INVALID;
	for (i = 0; i < cfg->num_inputs; i++)
		if (!req->inputs[i].name[0]) {
			serve_err(err, SERVE_INVALID, "expected %zu inputs but got %zu: input '%s' of model '%s' is missing",
				  cfg->num_inputs, json_array_size(inputs), cfg->inputs[i].name, cfg->name);
			goto out;
		}
	if (bin_left) {
		serve_err(err, SERVE_INVALID,
			  "%zu bytes of binary data after the inputs' binary_data_size (Inference-Header-Content-Length or binary_data_size is wrong)",
			  bin_left);
		goto out;
	}
	req->batch = 1;
	if (cfg->max_batch_size > 0) {
		req->batch = req->inputs[0].dims[0];
		for (i = 1; i < cfg->num_inputs; i++)
			if (req->inputs[i].dims[0] != req->batch) {
				serve_err(err, SERVE_INVALID,
					  "input '%s' has batch size %" PRId64 " but input '%s' has %" PRId64,
					  req->inputs[i].name, req->inputs[i].dims[0],
					  req->inputs[0].name, req->batch);
				goto out;
			}
	}
	outputs = json_object_get(root, "outputs");
	req->num_outputs = 0;
	if (outputs) {
		if (!json_is_array(outputs)) {
			serve_err(err, SERVE_INVALID, "'outputs' is not an array");
			goto out;
		}
		json_array_foreach(outputs, i, v) {
			json_t *name = json_object_get(v, "name"), *op;
			struct infer_tensor *o;
			size_t k;
			int found = 0;

			if (!json_is_string(name)) {
				serve_err(err, SERVE_INVALID, "outputs[%zu]: 'name' is missing or not a string", i);
				goto out;
			}
			for (k = 0; k < cfg->num_outputs; k++)
				found |= !strcmp(cfg->outputs[k].name, json_string_value(name));
			if (!found) {
				serve_err(err, SERVE_INVALID, "unexpected inference output '%s' for model '%s'",
					  json_string_value(name), cfg->name);
				goto out;
			}
			if (req->num_outputs >= SERVE_MAX_IO) {
				serve_err(err, SERVE_INVALID, "too many outputs");
				goto out;
			}
			o = &req->outputs[req->num_outputs++];
			memset(o, 0, sizeof(*o));
			snprintf(o->name, sizeof(o->name), "%s", json_string_value(name));
			o->binary = req->binary_output;
			op = json_object_get(v, "parameters");
			if (op && !json_is_object(op)) {
				serve_err(err, SERVE_INVALID, "output '%s': 'parameters' is not an object", o->name);
				goto out;
			}
			if (op && get_bool_param(op, "binary_data", &o->binary, err, "output"))
				goto out;
			if (op) {
				char what[SERVE_NAME_MAX + 16];
				const char *region = NULL;
				uint64_t off = 0, size = 0;
				void *p;

				snprintf(what, sizeof(what), "output '%s'", o->name);
				if (shm_params(op, what, &region, &off, &size, err))
					goto out;
				if (region) {
					if (shm_acquire(region, off, size, what, &o->shm, &p, err))
						goto out;
					o->data = p;
					o->nbytes = (size_t)size;
					o->shm_offset = off;
					o->binary = 0;
				}
			}
		}
	}
	r = SERVE_OK;
out:
	json_decref(root);
	if (r)
		infer_request_clear(req);
	return r;
}

/* ---- Encoding ------------------------------------------------------------------ */

static json_t *data_json(const struct infer_tensor *t)
{
	json_t *a = json_array();
	size_t n = npu_data_type_size(t->dtype), i, count = n ? t->nbytes / n : 0;
	const char *p = t->data;

	if (t->dtype == NPU_TYPE_STRING) {
		/* One JSON string per element; the batcher sends an output
		 * that is not UTF-8 in binary (bytes_utf8), so none is NULL. */
		const unsigned char *q = t->data;
		size_t off = 0;

		while (t->nbytes - off >= 4) {
			size_t len = (size_t)q[off] | (size_t)q[off + 1] << 8 |
				     (size_t)q[off + 2] << 16 | (size_t)q[off + 3] << 24;
			json_t *v;

			off += 4;
			if (len > t->nbytes - off)
				break;
			v = json_stringn((const char *)q + off, len);
			json_array_append_new(a, v ? v : json_null());
			off += len;
		}
		return a;
	}

	for (i = 0; i < count; i++, p += n) {
		json_t *v;

		switch (t->dtype) {
		case NPU_TYPE_FLOAT: { float x; memcpy(&x, p, 4); v = json_real(x); break; }
		case NPU_TYPE_DOUBLE: { double x; memcpy(&x, p, 8); v = json_real(x); break; }
		case NPU_TYPE_FLOAT16: { uint16_t x; memcpy(&x, p, 2); v = json_real(half_to_float(x)); break; }
		case NPU_TYPE_BOOL: v = json_boolean(*p != 0); break;
		case NPU_TYPE_UINT8: v = json_integer(*(const uint8_t *)p); break;
		case NPU_TYPE_INT8: v = json_integer(*(const int8_t *)p); break;
		case NPU_TYPE_UINT16: { uint16_t x; memcpy(&x, p, 2); v = json_integer(x); break; }
		case NPU_TYPE_INT16: { int16_t x; memcpy(&x, p, 2); v = json_integer(x); break; }
		case NPU_TYPE_UINT32: { uint32_t x; memcpy(&x, p, 4); v = json_integer(x); break; }
		case NPU_TYPE_INT32: { int32_t x; memcpy(&x, p, 4); v = json_integer(x); break; }
		case NPU_TYPE_UINT64: { uint64_t x; memcpy(&x, p, 8); v = json_integer((json_int_t)x); break; }
		default: { int64_t x; memcpy(&x, p, 8); v = json_integer(x); break; }
		}
		/* NaN and infinities are not JSON: jansson gives NULL. */
		json_array_append_new(a, v ? v : json_null());
	}
	return a;
}

int codec_encode(const struct infer_request *req, int header_only, char **out, size_t *len,
		 size_t *json_len)
{
	json_t *root = json_object(), *outs = json_array();
	size_t i, bin = 0, jl;
	char *js, *buf;
	char ver[32];

	snprintf(ver, sizeof(ver), "%" PRId64, req->version);
	json_object_set_new(root, "model_name", json_string(req->model));
	json_object_set_new(root, "model_version", json_string(ver));
	if (req->id[0])
		json_object_set_new(root, "id", json_string(req->id));
	for (i = 0; i < req->num_results; i++) {
		const struct infer_tensor *t = &req->results[i];
		json_t *o = json_object(), *shape = json_array();
		int k;

		for (k = 0; k < t->rank; k++)
			json_array_append_new(shape, json_integer(t->dims[k]));
		json_object_set_new(o, "name", json_string(t->name));
		json_object_set_new(o, "datatype", json_string(serve_dtype_name(t->dtype)));
		json_object_set_new(o, "shape", shape);
		if (t->shm) {
			/* Written into the region: its parameters, no data (Triton's). */
			json_t *p = json_pack("{s:s, s:I}", "shared_memory_region",
					      shm_region_name(t->shm), "shared_memory_byte_size",
					      (json_int_t)t->nbytes);

			if (t->shm_offset)
				json_object_set_new(p, "shared_memory_offset",
						    json_integer((json_int_t)t->shm_offset));
			json_object_set_new(o, "parameters", p);
		} else if (t->binary) {
			json_object_set_new(o, "parameters",
					    json_pack("{s:I}", "binary_data_size", (json_int_t)t->nbytes));
			bin += t->nbytes;
		} else {
			json_object_set_new(o, "data", data_json(t));
		}
		json_array_append_new(outs, o);
	}
	json_object_set_new(root, "outputs", outs);
	js = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (!js)
		return SERVE_INTERNAL;
	jl = strlen(js);
	if (!bin || header_only) {
		*out = js;
		*len = jl;
		*json_len = bin ? jl : 0;
		return SERVE_OK;
	}
	buf = malloc(jl + bin);
	if (!buf) {
		free(js);
		return SERVE_INTERNAL;
	}
	memcpy(buf, js, jl);
	free(js);
	*len = jl;
	for (i = 0; i < req->num_results; i++)
		if (req->results[i].binary) {
			memcpy(buf + *len, req->results[i].data, req->results[i].nbytes);
			*len += req->results[i].nbytes;
		}
	*out = buf;
	*json_len = jl;
	return SERVE_OK;
}

char *codec_error_json(const char *msg, size_t *len)
{
	char clean[SERVE_ERR_MAX];
	json_t *o;
	char *s;
	size_t i;

	/* Names from the URL may not be UTF-8: JSON strings must be. */
	for (i = 0; msg[i] && i < sizeof(clean) - 1; i++)
		clean[i] = (unsigned char)msg[i] < 0x80 ? msg[i] : '?';
	clean[i] = '\0';
	o = json_pack("{s:s}", "error", clean);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	*len = s ? strlen(s) : 0;
	return s;
}
