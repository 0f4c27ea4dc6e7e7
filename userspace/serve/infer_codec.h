/* SPDX-License-Identifier: MIT */
/*
 * infer_codec: inference requests and responses of the Open Inference
 * Protocol v2 over HTTP: JSON tensors (nested or flat 'data') and Triton's
 * binary tensor data extension (a JSON header of
 * Inference-Header-Content-Length bytes, then the tensors' bytes in the
 * order of the inputs with parameters.binary_data_size).
 */
#ifndef NPU_SERVE_INFER_CODEC_H
#define NPU_SERVE_INFER_CODEC_H

#include "batcher.h"

/* Parsing costs up to ~21 bytes of memory per JSON byte ("1,1,..."): 8 MiB, ~175 MB. */
#define CODEC_DEFAULT_MAX_JSON_BYTES (8u << 20)
/* Names, shapes, parameters and outputs of 16 inputs and outputs fit with room to spare. */
#define CODEC_DEFAULT_JSON_VALUE_SLACK 4096

/* What a request body may make the decoder allocate (repo_options sets them). */
struct codec_limits {
	size_t max_json_bytes;		/* the JSON part of a body; 0: only the body limit */
	size_t json_value_slack;	/* JSON values beyond the tensor elements a model takes */
};

/*
 * Decode 'len' bytes of body into 'req' and check it against the model's
 * config: names, datatypes, shapes, byte counts, batch size. json_len is
 * the Inference-Header-Content-Length, or -1 when the header is absent
 * (the whole body is JSON). Binary inputs point into 'body' (keep it
 * until the request is done); JSON data is converted into owned buffers.
 * Before parsing, the JSON must fit lim->max_json_bytes and, for a model
 * whose dims are all known, hold no more values than its max_batch_size x
 * dims elements plus lim->json_value_slack. An 'id' is kept whole, up to
 * SERVE_NAME_MAX - 1 bytes. Returns SERVE_OK or SERVE_INVALID with a
 * message naming the field or the limit.
 */
int codec_decode(const char *body, size_t len, long long json_len,
		 const struct model_config *cfg, const struct codec_limits *lim,
		 struct infer_request *req, char *err);

/*
 * The response for a finished request: JSON, or JSON then binary outputs
 * (*json_len set to the JSON's size, 0 when all is JSON). free() *out.
 * header_only: *out is the JSON alone even with binary outputs, whose
 * data the caller sends after it, in the order of req->results.
 */
int codec_encode(const struct infer_request *req, int header_only, char **out, size_t *len,
		 size_t *json_len);

/* {"error": msg} as a string to free(). */
char *codec_error_json(const char *msg, size_t *len);

#endif /* NPU_SERVE_INFER_CODEC_H */
