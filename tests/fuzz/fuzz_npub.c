// SPDX-License-Identifier: MIT
/*
 * fuzz_npub: libFuzzer target over compiled-model files (.npub), through
 * the public API as an application loads them: any byte string must load
 * as a model or fail with a message, and a model that loads is planned on
 * the simulated NPU and run once on zero inputs (its relocated command
 * streams executed by firmware-sim), never a crash, leak or undefined
 * behaviour. The file parser, the graph reader and the stream relocation
 * are compiled in for coverage. The header's CRC-32 is made right for the
 * mutated bytes, else nearly every input would stop at the checksum. Seeds:
 * tests/fuzz/corpus/npub/, written by `test_compiled_file --write-seeds DIR`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "npu/npu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Inputs larger than this are not run (a mutated shape may be huge). */
#define MAX_INPUT_BYTES (16u << 20)

static struct npu_engine *engine;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct npu_engine_options eo;

	(void)argc;
	(void)argv;
	npu_engine_options_init(&eo);
	eo.threads = 1;
	if (npu_engine_create(&eo, &engine) != NPU_OK)
		abort();
	return 0;
}

static void run_once(struct npu_model *m)
{
	struct npu_host_tensor in[8] = { 0 };
	struct npu_session *s = NULL;
	size_t n = npu_model_num_inputs(m), i, k;

	if (n > 8)
		return;
	for (i = 0; i < n; i++) {
		struct npu_tensor_info info;
		size_t count = 1;

		if (npu_model_input_info(m, i, &info) != NPU_OK || info.rank < 0 ||
		    npu_data_type_size(info.dtype) == 0)
			goto out;
		in[i].name = info.name;
		in[i].dtype = info.dtype;
		in[i].rank = info.rank;
		for (k = 0; k < (size_t)info.rank; k++) {
			if (info.dims[k] <= 0 || (uint64_t)info.dims[k] > MAX_INPUT_BYTES)
				goto out;
			in[i].dims[k] = info.dims[k];
			count *= (size_t)info.dims[k];
			if (count > MAX_INPUT_BYTES)
				goto out;
		}
		in[i].nbytes = count * npu_data_type_size(info.dtype);
		if (in[i].nbytes > MAX_INPUT_BYTES)
			goto out;
		in[i].data = calloc(1, in[i].nbytes ? in[i].nbytes : 1);
		if (!in[i].data)
			goto out;
	}
	if (npu_session_create(m, NULL, &s) == NPU_OK)
		npu_session_run(s, in, n);
	npu_session_destroy(s);
out:
	for (i = 0; i < n; i++)
		free(in[i].data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct npu_model_options mo;
	struct npu_model *m = NULL;

	uint8_t *copy = malloc(size ? size : 1);
	npu_status st;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (size >= 32) {	/* the CRC-32 at 12 covers the bytes after the 32-byte header */
		uint32_t crc = (uint32_t)crc32_z(0, copy + 32, size - 32);

		memcpy(copy + 12, &crc, 4);
	}
	npu_model_options_init(&mo);
	mo.device = "sim";
	st = npu_model_load_memory(engine, copy, size, "fuzz.npub", &mo, &m);
	free(copy);
	if (st != NPU_OK)
		return 0;
	run_once(m);
	npu_model_destroy(m);
	return 0;
}
