/* SPDX-License-Identifier: MIT */
/*
 * npu-fwgen - write the reference NPU firmware image (npu_hw.h format)
 * that the kernel driver loads, or a deliberately broken one for tests.
 *
 *   npu-fwgen -o FILE [--version X.Y] [--corrupt KIND]
 *
 * KIND is one of: checksum, magic, version, size, config. Every kind but
 * 'checksum' keeps a valid CRC so the device reports that exact fault.
 * The output is deterministic: the same arguments give the same bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_sim.h"

#define NPU_FWGEN_PAYLOAD_SIZE	4096
#define NPU_FWGEN_DEFAULT_MAJOR	1
#define NPU_FWGEN_DEFAULT_MINOR	0

static void npu_fwgen_usage(FILE *out)
{
	fprintf(out,
		"usage: npu-fwgen -o FILE [--version X.Y] [--corrupt KIND]\n"
		"  KIND: checksum | magic | version | size | config\n");
}

static int npu_fwgen_parse_version(const char *text, uint32_t *version)
{
	unsigned long major, minor;
	char *end;

	errno = 0;
	major = strtoul(text, &end, 10);
	if (errno || end == text || *end != '.' || major > 0xffff)
		return -1;
	text = end + 1;
	minor = strtoul(text, &end, 10);
	if (errno || end == text || *end || minor > 0xffff)
		return -1;
	*version = NPU_VERSION((uint32_t)major, (uint32_t)minor);
	return 0;
}

static void npu_fwgen_reseal(uint8_t *image, size_t size)
{
	struct npu_fw_header header;

	memcpy(&header, image, sizeof(header));
	header.checksum = 0;
	memcpy(image, &header, sizeof(header));
	header.checksum = npu_crc32(0, image, size);
	memcpy(image, &header, sizeof(header));
}

/* Break the image the way 'kind' says; -1 for an unknown kind. */
static int npu_fwgen_corrupt(uint8_t *image, size_t size, const char *kind)
{
	struct npu_fw_header header;
	struct npu_fw_config config;

	memcpy(&header, image, sizeof(header));
	if (!strcmp(kind, "checksum")) {
		image[size - 1] ^= 0x5a;	/* payload changed after sealing */
		return 0;
	}
	if (!strcmp(kind, "magic")) {
		header.magic = 0x4b4c4f4e;	/* "NOLK" */
	} else if (!strcmp(kind, "version")) {
		header.abi_major = NPU_FW_ABI_MAJOR + 1;
	} else if (!strcmp(kind, "size")) {
		header.image_size += 64;	/* disagrees with the file size */
	} else if (!strcmp(kind, "config")) {
		memcpy(&config, image + header.config_offset, sizeof(config));
		config.tlb_entries = 3;		/* not a power of two */
		memcpy(image + header.config_offset, &config, sizeof(config));
	} else {
		return -1;
	}
	memcpy(image, &header, sizeof(header));
	npu_fwgen_reseal(image, size);
	return 0;
}

/* A recognizable, deterministic payload standing in for firmware code. */
static void npu_fwgen_payload(uint8_t *payload, size_t size)
{
	static const char banner[] = "NPU reference firmware: queue engine, "
				     "MMU walker, ISA executor\n";
	uint32_t x = 0x12345678;

	memset(payload, 0, size);
	memcpy(payload, banner, sizeof(banner));
	for (size_t i = sizeof(banner); i < size; i++) {
		x = x * 1103515245u + 12345u;
		payload[i] = (uint8_t)(x >> 24);
	}
}

int main(int argc, char **argv)
{
	const char *out_path = NULL, *corrupt = NULL;
	uint32_t version = NPU_VERSION(NPU_FWGEN_DEFAULT_MAJOR,
				       NPU_FWGEN_DEFAULT_MINOR);
	static uint8_t payload[NPU_FWGEN_PAYLOAD_SIZE];
	static uint8_t image[sizeof(struct npu_fw_header) +
			     sizeof(struct npu_fw_config) + sizeof(payload)];
	struct npu_fw_config config;
	char build_id[32];
	size_t size;
	FILE *out;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out_path = argv[++i];
		} else if (!strcmp(argv[i], "--version") && i + 1 < argc) {
			if (npu_fwgen_parse_version(argv[++i], &version)) {
				fprintf(stderr, "npu-fwgen: bad --version '%s' (want X.Y)\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--corrupt") && i + 1 < argc) {
			corrupt = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			npu_fwgen_usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "npu-fwgen: unknown argument '%s'\n", argv[i]);
			npu_fwgen_usage(stderr);
			return 2;
		}
	}
	if (!out_path) {
		npu_fwgen_usage(stderr);
		return 2;
	}

	npu_fw_default_config(&config);
	npu_fwgen_payload(payload, sizeof(payload));
	snprintf(build_id, sizeof(build_id), "npu-fw-ref %u.%u",
		 version >> 16, version & 0xffff);
	size = npu_fw_build(image, sizeof(image), version, build_id, &config,
			    payload, sizeof(payload));
	if (!size) {
		fprintf(stderr, "npu-fwgen: image does not fit\n");
		return 1;
	}
	if (corrupt && npu_fwgen_corrupt(image, size, corrupt)) {
		fprintf(stderr, "npu-fwgen: unknown --corrupt kind '%s'\n", corrupt);
		npu_fwgen_usage(stderr);
		return 2;
	}

	out = fopen(out_path, "wb");
	if (!out) {
		fprintf(stderr, "npu-fwgen: %s: %s\n", out_path, strerror(errno));
		return 1;
	}
	if (fwrite(image, 1, size, out) != size || fclose(out)) {
		fprintf(stderr, "npu-fwgen: %s: write failed\n", out_path);
		return 1;
	}
	return 0;
}
