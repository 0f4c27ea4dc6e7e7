// SPDX-License-Identifier: MIT
/*
 * fuzz_serve_request: libFuzzer target over npu-serve's inference request
 * decoding (userspace/serve/infer_codec.c): JSON tensors and Triton's
 * binary tensor data extension, checked against a fixed model config. The
 * first byte picks the Inference-Header-Content-Length (none, or an
 * offset into the body). Accepted requests are encoded back as responses.
 * Seeds: tests/fuzz/corpus/serve_request/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infer_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct model_config cfg;
static const struct codec_limits limits = {
	CODEC_DEFAULT_MAX_JSON_BYTES, CODEC_DEFAULT_JSON_VALUE_SLACK
};

static void setup(void)
{
	static const char text[] =
		"name: \"fuzz\"\n"
		"max_batch_size: 8\n"
		"input { name: \"x\" data_type: TYPE_FP32 dims: [ 2, -1 ] }\n"
		"input { name: \"i\" data_type: TYPE_INT64 dims: [ 3 ] }\n"
		"input { name: \"h\" data_type: TYPE_FP16 dims: [ 2 ] }\n"
		"input { name: \"b\" data_type: TYPE_BOOL dims: [ 1 ] }\n"
		"output { name: \"y\" data_type: TYPE_FP32 dims: [ 2, -1 ] }\n"
		"output { name: \"z\" data_type: TYPE_INT8 dims: [ 3 ] }\n";
	char err[SERVE_ERR_MAX];

	config_init(&cfg, "fuzz");
	if (config_parse_pbtxt(&cfg, text, sizeof(text) - 1, "fuzz", err))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static struct infer_request req;
	char err[SERVE_ERR_MAX], *out;
	long long json_len = -1;
	size_t len, jl, i;

	if (!ready) {
		setup();
		ready = 1;
	}
	if (size < 1)
		return 0;
	if (data[0] != 0xff)
		json_len = data[0] < size ? (long long)(size - 1 - data[0]) : -1;
	memset(&req, 0, sizeof(req));
	if (codec_decode((const char *)data + 1, size - 1, json_len, &cfg, &limits, &req,
			 err) != SERVE_OK)
		return 0;
	/* Echo the inputs as results to cover the encoder. */
	req.num_results = 0;
	for (i = 0; i < req.num_inputs && i < SERVE_MAX_IO; i++) {
		req.results[i] = req.inputs[i];
		req.results[i].owned = 0;
		req.results[i].binary = (int)(i & 1);
		req.num_results++;
	}
	snprintf(req.model, sizeof(req.model), "fuzz");
	if (codec_encode(&req, 0, &out, &len, &jl) == SERVE_OK)
		free(out);
	/* The header alone, as the HTTP front end sends binary outputs after it. */
	if (codec_encode(&req, 1, &out, &len, &jl) == SERVE_OK)
		free(out);
	req.num_results = 0;
	infer_request_clear(&req);
	return 0;
}
