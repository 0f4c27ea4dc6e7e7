/* SPDX-License-Identifier: MIT */
/*
 * test_fw_image.c - the images npu-fwgen writes: the reference image
 * boots, and each --corrupt kind is refused with its own BOOT_STATUS.
 *
 * usage: test_fw_image REF.bin CHECKSUM.bin MAGIC.bin VERSION.bin SIZE.bin
 *                      CONFIG.bin
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sim_test_host.h"

#define MEM_SIZE	(1u << 20)

enum { IMG_REF, IMG_CHECKSUM, IMG_MAGIC, IMG_VERSION, IMG_SIZE, IMG_CONFIG,
       IMG_COUNT };

static const char *image_paths[IMG_COUNT];

static uint32_t boot_file(const char *path, uint32_t *fw_version)
{
	static uint8_t buf[64 * 1024];
	struct sim_test_host host;
	FILE *file = fopen(path, "rb");
	size_t size;
	uint32_t status;

	assert_non_null(file);
	size = fread(buf, 1, sizeof(buf), file);
	fclose(file);
	assert_true(size > sizeof(struct npu_fw_header));
	assert_int_equal(sim_test_host_init(&host, MEM_SIZE), 0);
	sim_test_boot_image(&host, buf, size);
	status = sim_test_reg(&host, NPU_REG_BOOT_STATUS);
	if (fw_version)
		*fw_version = sim_test_reg(&host, NPU_REG_FW_VERSION);
	sim_test_host_fini(&host);
	return status;
}

static void reference_image_boots(void **state)
{
	uint32_t version;

	(void)state;
	assert_int_equal(boot_file(image_paths[IMG_REF], &version), NPU_BOOT_OK);
	assert_int_equal(version, NPU_VERSION(1, 0));
}

static void corrupt_images_get_their_boot_status(void **state)
{
	(void)state;
	assert_int_equal(boot_file(image_paths[IMG_CHECKSUM], NULL),
			 NPU_BOOT_BAD_CHECKSUM);
	assert_int_equal(boot_file(image_paths[IMG_MAGIC], NULL),
			 NPU_BOOT_BAD_MAGIC);
	assert_int_equal(boot_file(image_paths[IMG_VERSION], NULL),
			 NPU_BOOT_BAD_VERSION);
	assert_int_equal(boot_file(image_paths[IMG_SIZE], NULL),
			 NPU_BOOT_BAD_SIZE);
	assert_int_equal(boot_file(image_paths[IMG_CONFIG], NULL),
			 NPU_BOOT_BAD_CONFIG);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reference_image_boots),
		cmocka_unit_test(corrupt_images_get_their_boot_status),
	};

	if (argc != 1 + IMG_COUNT) {
		fprintf(stderr, "usage: %s REF CHECKSUM MAGIC VERSION SIZE CONFIG\n",
			argv[0]);
		return 2;
	}
	for (int i = 0; i < IMG_COUNT; i++)
		image_paths[i] = argv[1 + i];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
