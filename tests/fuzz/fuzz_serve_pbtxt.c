// SPDX-License-Identifier: MIT
/*
 * fuzz_serve_pbtxt: libFuzzer target over npu-serve's config.pbtxt parser
 * (userspace/serve/pbtxt.c) and the ModelConfig mapping on top of it. Any
 * text must give a config or a "line:col: reason" error, never a crash,
 * leak or undefined behaviour. Seeds: tests/fuzz/corpus/serve_pbtxt/.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model_config.h"
#include "pbtxt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct model_config cfg;
	char err[SERVE_ERR_MAX];
	struct pbtxt_node *root;
	json_t *j;

	serve_verbose = SERVE_LOG_ERROR;	/* no warnings for ignored fields */
	root = pbtxt_parse((const char *)data, size, err, sizeof(err));
	if (root)
		pbtxt_free(root);
	else if (!strchr(err, ':'))
		__builtin_trap();	/* every error has a position */
	config_init(&cfg, "fuzz");
	if (config_parse_pbtxt(&cfg, (const char *)data, size, "config.pbtxt", err) == SERVE_OK) {
		j = config_to_json(&cfg);
		json_decref(j);
	}
	return 0;
}
