// SPDX-License-Identifier: MIT
/*
 * npu info: what device a program would get, and what it can do; given a
 * model, what the model says about itself.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "npu-tools/cs_asm.h"
#include "npu/npu.h"
#include "npu_cli.h"

static void info_usage(FILE *out)
{
	fprintf(out,
		"usage: npu info [--device sim|sim:N|accel|accel:K|accel:*|auto|/dev/accel/accelN] [--json]\n"
		"       npu info [--json] MODEL.onnx|MODEL.npub\n"
		"\n"
		"Open the NPUs and print each one's identity and capabilities: backend, firmware\n"
		"and ISA versions, supported opcodes, queues, MAC array, SRAM, clock, DMA\n"
		"bandwidth and the device VA range.\n"
		"Given a model: its inputs and outputs as declared, and its metadata\n"
		"(producer, version, domain, model version, doc strings, graph name and\n"
		"the metadata_props key/value pairs).\n"
		"\n"
		"  --device D   sim: the in-process simulator (sim:N: N of them); accel: the\n"
		"               first npu /dev/accel node, accel:K the K-th, accel:* every one;\n"
		"               a path: that node; auto (default): every accel node if there\n"
		"               is one, else sim. NPU_DEVICE sets the default.\n"
		"  --json       one JSON object on stdout, for scripts: the first device's\n"
		"               fields, and a \"devices\" array with every device's\n");
}

static const char *const cap_names[] = {
	"int8", "int32_bias", "per_channel_quant", "depthwise", "dilation",
	"mmu", "watchdog", "timestamp", "zero_insert", "resize", "int16",
	"out_lut", "array_modes", "sparse",
};

static const uint8_t all_opcodes[] = {
	NPU_OP_NOP, NPU_OP_DMA_COPY, NPU_OP_DMA_FILL, NPU_OP_CONV2D,
	NPU_OP_MATMUL, NPU_OP_POOL, NPU_OP_ELTWISE, NPU_OP_LUT,
	NPU_OP_TIMESTAMP, NPU_OP_BARRIER, NPU_OP_RESIZE,
	NPU_OP_SOFTMAX, NPU_OP_LAYERNORM, NPU_OP_REDUCE,
};

static void print_version(FILE *f, uint32_t v)
{
	fprintf(f, "%u.%u", v >> 16, v & 0xffff);
}

static void print_list(FILE *f, bool json, uint32_t caps, uint32_t ops)
{
	unsigned int i;
	bool first = true;

	if (caps != UINT32_MAX) {
		for (i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
			if (caps & (1u << i)) {
				fprintf(f, json ? "%s\"%s\"" : "%s%s", first ? "" : json ? ", " : " ",
					cap_names[i]);
				first = false;
			}
		return;
	}
	for (i = 0; i < sizeof(all_opcodes); i++)
		if (ops & NPU_OP_BIT(all_opcodes[i])) {
			const char *n = npu_cs_opcode_name(all_opcodes[i]);

			fprintf(f, json ? "%s\"%s\"" : "%s%s", first ? "" : json ? ", " : " ",
				n ? n : "?");
			first = false;
		}
}

static void print_io(const struct npu_tensor_info *t, bool json)
{
	int d;

	if (json) {
		printf("{\"name\": ");
		npu_cli_json_string(stdout, t->name);
		printf(", \"type\": \"%s\", \"shape\": ", npu_data_type_name(t->dtype));
		if (t->rank < 0) {
			printf("null}");
			return;
		}
		printf("[");
		for (d = 0; d < t->rank; d++) {
			printf("%s", d ? ", " : "");
			if (t->dims[d] >= 0)
				printf("%lld", (long long)t->dims[d]);
			else
				npu_cli_json_string(stdout, t->dim_names[d] ? t->dim_names[d] : "?");
		}
		printf("]}");
		return;
	}
	printf("  %s: %s[", t->name, npu_data_type_name(t->dtype));
	for (d = 0; d < t->rank; d++) {
		printf("%s", d ? "," : "");
		if (t->dims[d] >= 0)
			printf("%lld", (long long)t->dims[d]);
		else
			printf("%s", t->dim_names[d] ? t->dim_names[d] : "?");
	}
	printf(t->rank < 0 ? "?]\n" : "]\n");
}

/* npu info MODEL: the model's interface and metadata. */
static int model_info(const char *path, bool json)
{
	struct npu_model_metadata md;
	struct npu_tensor_info t;
	struct npu_model_options mo;
	struct npu_engine *e;
	struct npu_model *m;
	const char *key, *value;
	size_t i, n;
	struct {
		const char *label, *json, *value;
	} fields[7];

	npu_model_options_init(&mo);
	mo.device = "cpu";	/* only the file is read: nothing is compiled */
	if (npu_engine_create(NULL, &e) != NPU_OK ||
	    npu_model_load_file(e, path, &mo, &m) != NPU_OK) {
		fprintf(stderr, "npu info: %s\n", npu_last_error());
		npu_engine_destroy(e);
		return 1;
	}
	npu_model_metadata_init(&md);
	npu_model_get_metadata(m, &md);
	fields[0].label = "producer", fields[0].json = "producer_name", fields[0].value = md.producer_name;
	fields[1].label = "version", fields[1].json = "producer_version", fields[1].value = md.producer_version;
	fields[2].label = "domain", fields[2].json = "domain", fields[2].value = md.domain;
	fields[3].label = "doc", fields[3].json = "doc_string", fields[3].value = md.doc_string;
	fields[4].label = "graph", fields[4].json = "graph_name", fields[4].value = md.graph_name;
	fields[5].label = "graph doc", fields[5].json = "graph_doc_string", fields[5].value = md.graph_doc_string;
	fields[6].label = NULL;
	if (json) {
		printf("{\n  \"model\": ");
		npu_cli_json_string(stdout, path);
		for (i = 0; fields[i].label; i++) {
			printf(",\n  \"%s\": ", fields[i].json);
			npu_cli_json_string(stdout, fields[i].value);
		}
		printf(",\n  \"model_version\": %lld,\n  \"metadata_props\": {",
		       (long long)md.model_version);
		for (i = 0; i < md.num_props; i++) {
			npu_model_metadata_prop(m, i, &key, &value);
			printf("%s", i ? ", " : "");
			npu_cli_json_string(stdout, key);
			printf(": ");
			npu_cli_json_string(stdout, value);
		}
		printf("},\n  \"inputs\": [");
	} else {
		printf("model      %s\n", path);
		for (i = 0; fields[i].label; i++)
			if (fields[i].value[0])
				printf("%-10s %s\n", fields[i].label, fields[i].value);
		if (md.model_version)
			printf("model ver  %lld\n", (long long)md.model_version);
		for (i = 0; i < md.num_props; i++) {
			npu_model_metadata_prop(m, i, &key, &value);
			printf("%-10s %s = %s\n", i ? "" : "metadata", key, value);
		}
		printf("inputs     %zu\n", npu_model_num_inputs(m));
	}
	n = npu_model_num_inputs(m);
	for (i = 0; i < n && npu_model_input_info(m, i, &t) == NPU_OK; i++) {
		if (json)
			printf("%s", i ? ", " : "");
		print_io(&t, json);
	}
	n = npu_model_num_outputs(m);
	if (json)
		printf("],\n  \"outputs\": [");
	else
		printf("outputs    %zu\n", n);
	for (i = 0; i < n && npu_model_output_info(m, i, &t) == NPU_OK; i++) {
		if (json)
			printf("%s", i ? ", " : "");
		print_io(&t, json);
	}
	if (json)
		printf("]\n}\n");
	npu_model_destroy(m);
	npu_engine_destroy(e);
	return 0;
}

/* One device's identity and capabilities: JSON fields (no braces) or text. */
static void print_device(const struct npu_device_info *in, const char *name, bool json,
			 const char *ind)
{
	double tops = 2.0 * in->mac_rows * in->mac_cols * in->clock_mhz / 1e6;

	if (json) {
		printf("\n%s\"device\": ", ind);
		npu_cli_json_string(stdout, name);
		printf(",\n%s\"name\": \"%s\",\n%s\"backend\": \"%s\",\n%s\"driver\": \"%s\",\n",
		       ind, in->name, ind, npu_backend_name(in->backend), ind, in->driver);
		printf("%s\"fw_version\": \"", ind); print_version(stdout, in->fw_version);
		printf("\",\n%s\"hw_version\": \"", ind); print_version(stdout, in->hw_version);
		printf("\",\n%s\"isa_version\": \"", ind); print_version(stdout, in->isa_version);
		printf("\",\n%s\"caps\": %u,\n%s\"cap_names\": [", ind, in->caps, ind);
		print_list(stdout, true, in->caps, 0);
		printf("],\n%s\"op_mask\": %u,\n%s\"ops\": [", ind, in->op_mask, ind);
		print_list(stdout, true, UINT32_MAX, in->op_mask);
		printf("],\n%s\"num_queues\": %u,\n%s\"mac_rows\": %u,\n%s\"mac_cols\": %u,\n"
		       "%s\"sram_bytes\": %u,\n%s\"clock_mhz\": %u,\n%s\"dma_bytes_per_cycle\": %u,\n"
		       "%s\"peak_tops_int8\": %.3f,\n%s\"context_id\": %u,\n"
		       "%s\"va_start\": %" PRIu64 ",\n%s\"va_end\": %" PRIu64 ",\n"
		       "%s\"memory_bytes\": %" PRIu64,
		       ind, in->num_queues, ind, in->mac_rows, ind, in->mac_cols, ind, in->sram_size,
		       ind, in->clock_mhz, ind, in->dma_bytes_per_cycle, ind, tops, ind,
		       in->context_id, ind, in->va_start, ind, in->va_end, ind, in->memory_bytes);
		return;
	}
	printf("device     %s (backend %s, driver %s)\n", in->name,
	       npu_backend_name(in->backend), in->driver);
	printf("firmware   "); print_version(stdout, in->fw_version);
	printf("\nhardware   "); print_version(stdout, in->hw_version);
	printf(", ISA "); print_version(stdout, in->isa_version);
	printf("\ncaps       0x%08x: ", in->caps);
	print_list(stdout, false, in->caps, 0);
	printf("\nops        0x%08x: ", in->op_mask);
	print_list(stdout, false, UINT32_MAX, in->op_mask);
	printf("\nqueues     %u (queue 0 runs first when both have work)\n", in->num_queues);
	printf("MAC array  %u x %u int8 (%u MACs/cycle, peak %.2f TOPS)\n",
	       in->mac_rows, in->mac_cols, in->mac_rows * in->mac_cols, tops);
	printf("SRAM       %u KiB\n", in->sram_size >> 10);
	printf("clock      %u MHz\n", in->clock_mhz);
	printf("DMA        %u bytes/cycle (%.1f GB/s)\n", in->dma_bytes_per_cycle,
	       (double)in->dma_bytes_per_cycle * in->clock_mhz / 1000.0);
	printf("context    %u, VA 0x%" PRIx64 " - 0x%" PRIx64 "\n",
	       in->context_id, in->va_start, in->va_end);
	if (in->memory_bytes)
		printf("memory     %" PRIu64 " MiB simulated DMA space\n", in->memory_bytes >> 20);
}

int npu_cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct npu_device_spec_entry entries[NPU_DEVICE_SET_MAX];
	struct npu_device_options opts;
	struct npu_device_info in;
	struct npu_device *dev;
	const char *spec = NULL;
	char err[512];
	bool json = false;
	size_t count, i;
	int c;

	/* NPU_DEVICE, any spec (npu_device_spec_resolve), else auto. */
	npu_device_options_init(&opts);
	opts.trace_file = getenv("NPU_TRACE_FILE");
	spec = getenv("NPU_DEVICE");
	if (spec && (!*spec || !strcmp(spec, "auto")))
		spec = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			spec = strcmp(optarg, "auto") ? optarg : NULL;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			info_usage(stdout);
			return 0;
		default:
			info_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 == argc)
		return model_info(argv[optind], json);
	if (optind < argc) {
		fprintf(stderr, "npu info: unexpected argument '%s'\n", argv[optind + 1]);
		info_usage(stderr);
		return 2;
	}
	if (!spec)	/* auto: every npu accel node, else the simulator */
		spec = npu_device_list_accel(NULL, 0) ? "accel:*" : "sim";
	if (npu_device_spec_resolve(spec, entries, NPU_DEVICE_SET_MAX, &count, err, sizeof(err))) {
		fprintf(stderr, "npu info: %s\n", err);
		return 1;
	}
	if (json)
		printf("{");
	for (i = 0; i < count; i++) {
		if (entries[i].options.backend == NPU_BACKEND_ACCEL)
			entries[i].options.path = entries[i].name;
		entries[i].options.trace_file = opts.trace_file;
		if (npu_device_open(&entries[i].options, &dev, err, sizeof(err))) {
			fprintf(stderr, "npu info: %s: %s\n", entries[i].name, err);
			if (json)
				printf("}\n");
			return 1;
		}
		npu_device_get_info(dev, &in);
		if (json && !i) {	/* the first device's fields, as before 2.3 */
			print_device(&in, entries[i].name, true, "  ");
			printf(",\n  \"devices\": [");
		}
		if (json) {
			printf("%s\n   {", i ? "," : "");
			print_device(&in, entries[i].name, true, "    ");
			printf("}");
		} else {
			if (count > 1)
				printf("%s[%zu] %s\n", i ? "\n" : "", i, entries[i].name);
			print_device(&in, entries[i].name, false, "");
		}
		npu_device_close(dev);
	}
	if (json)
		printf("]\n}\n");
	return 0;
}
