/* SPDX-License-Identifier: MIT */
/*
 * test_boot.c - firmware images and the boot handshake: a good image boots,
 * every kind of bad image is refused with its own BOOT_STATUS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim_test_host.h"

#define MEM_SIZE	(4u << 20)

struct image {
	uint8_t bytes[512];
	size_t size;
};

static int host_setup(void **state)
{
	static struct sim_test_host host;

	if (sim_test_host_init(&host, MEM_SIZE))
		return -1;
	*state = &host;
	return 0;
}

static int host_teardown(void **state)
{
	sim_test_host_fini(*state);
	return 0;
}

static void image_build(struct image *img, const struct npu_fw_config *config)
{
	static const char payload[] = "reference firmware payload bytes";

	img->size = npu_fw_build(img->bytes, sizeof(img->bytes), NPU_VERSION(3, 7),
				 "test", config, payload, sizeof(payload));
	assert_int_not_equal(img->size, 0);
}

static void image_default(struct image *img)
{
	struct npu_fw_config config;

	npu_fw_default_config(&config);
	image_build(img, &config);
}

static struct npu_fw_header *image_header(struct image *img)
{
	return (struct npu_fw_header *)img->bytes;
}

/* Recompute the checksum after editing a field, so only that field is bad. */
static void image_reseal(struct image *img)
{
	struct npu_fw_header *h = image_header(img);

	h->checksum = 0;
	h->checksum = npu_crc32(0, img->bytes, img->size);
}

static uint32_t boot_status(struct sim_test_host *host)
{
	return sim_test_reg(host, NPU_REG_BOOT_STATUS);
}

static void crc32_matches_zlib_check_value(void **state)
{
	(void)state;
	assert_int_equal(npu_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(npu_crc32(0, "", 0), 0);
	/* Chaining equals one pass. */
	assert_int_equal(npu_crc32(npu_crc32(0, "1234", 4), "56789", 5),
			 0xcbf43926u);
}

static void fw_build_lays_out_header_config_payload(void **state)
{
	struct image img;
	struct npu_fw_config config, read_back;
	struct npu_fw_header *h;
	uint32_t sum;

	(void)state;
	npu_fw_default_config(&config);
	assert_int_equal(config.tlb_entries, 64);
	assert_int_equal(config.op_mask, NPU_OP_MASK_ALL);
	assert_true(config.watchdog_cycles >= 1000000000u);
	image_build(&img, &config);
	h = image_header(&img);
	assert_int_equal(h->magic, NPU_FW_MAGIC);
	assert_int_equal(h->abi_major, NPU_FW_ABI_MAJOR);
	assert_int_equal(h->header_size, sizeof(*h));
	assert_int_equal(h->image_size, img.size);
	assert_int_equal(h->fw_version, NPU_VERSION(3, 7));
	assert_string_equal(h->build_id, "test");
	memcpy(&read_back, img.bytes + h->config_offset, sizeof(read_back));
	assert_memory_equal(&read_back, &config, sizeof(config));
	sum = h->checksum;
	image_reseal(&img);
	assert_int_equal(h->checksum, sum);
	/* Too small a buffer is refused, not overrun. */
	assert_int_equal(npu_fw_build(img.bytes, 64, 1, "x", &config, NULL, 0), 0);
}

static void good_image_boots_ready_and_applies_config(void **state)
{
	struct sim_test_host *host = *state;
	struct npu_fw_config config;
	struct image img;

	npu_fw_default_config(&config);
	config.op_mask &= ~NPU_OP_BIT(NPU_OP_POOL);
	config.watchdog_cycles = 12345;
	image_build(&img, &config);
	assert_int_equal(sim_test_reg(host, NPU_REG_OP_MASK), NPU_OP_MASK_ALL);
	assert_int_equal(sim_test_reg(host, NPU_REG_FW_VERSION), 0);
	sim_test_set_reg(host, NPU_REG_IRQ_MASK, NPU_IRQ_BOOT);

	assert_int_equal(sim_test_boot_image(host, img.bytes, img.size),
			 NPU_STATE_READY);
	assert_int_equal(boot_status(host), NPU_BOOT_OK);
	assert_int_equal(sim_test_reg(host, NPU_REG_FW_VERSION), NPU_VERSION(3, 7));
	assert_int_equal(sim_test_reg(host, NPU_REG_OP_MASK), config.op_mask);
	assert_int_equal(sim_test_reg(host, NPU_REG_WATCHDOG_CYCLES), 12345);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_BOOT);
	assert_int_equal(sim_test_irq_count(host, NPU_MSIX_VEC_ERROR), 1);
}

static void boot_while_ready_reports_not_off(void **state)
{
	struct sim_test_host *host = *state;

	assert_int_equal(sim_test_boot(host), NPU_STATE_READY);
	sim_test_set_reg(host, NPU_REG_FW_BOOT, NPU_BOOT_START);
	assert_int_equal(boot_status(host), NPU_BOOT_NOT_OFF);
	assert_int_equal(sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_STATE_MASK,
			 NPU_STATE_READY);
}

/* Boot 'img' on a freshly reset device; returns the boot status. */
static uint32_t boot_refused(struct sim_test_host *host, struct image *img)
{
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	assert_int_equal(sim_test_boot_image(host, img->bytes, img->size),
			 NPU_STATE_FW_ERROR);
	assert_int_equal(sim_test_reg(host, NPU_REG_FW_VERSION), 0);
	assert_int_equal(sim_test_reg(host, NPU_REG_OP_MASK), NPU_OP_MASK_ALL);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_BOOT);
	return boot_status(host);
}

static void bad_magic_is_refused(void **state)
{
	struct image img;

	image_default(&img);
	image_header(&img)->magic ^= 1;
	image_reseal(&img);
	assert_int_equal(boot_refused(*state, &img), NPU_BOOT_BAD_MAGIC);
}

static void other_abi_major_is_refused(void **state)
{
	struct image img;

	image_default(&img);
	image_header(&img)->abi_major = NPU_FW_ABI_MAJOR + 1;
	image_reseal(&img);
	assert_int_equal(boot_refused(*state, &img), NPU_BOOT_BAD_VERSION);
}

static void newer_abi_minor_boots(void **state)
{
	struct sim_test_host *host = *state;
	struct image img;

	image_default(&img);
	image_header(&img)->abi_minor = NPU_FW_ABI_MINOR + 5;
	image_reseal(&img);
	assert_int_equal(sim_test_boot_image(host, img.bytes, img.size),
			 NPU_STATE_READY);
}

static void size_register_mismatch_is_refused(void **state)
{
	struct sim_test_host *host = *state;
	struct image img;

	image_default(&img);
	/* The header claims 8 bytes more than the size register. */
	image_header(&img)->image_size += 8;
	image_reseal(&img);
	assert_int_equal(boot_refused(host, &img), NPU_BOOT_BAD_SIZE);

	/* Size register beyond NPU_FW_MAX_SIZE. */
	image_default(&img);
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	sim_test_boot_image(host, img.bytes, img.size);
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	sim_test_set_reg(host, NPU_REG_FW_SIZE, NPU_FW_MAX_SIZE + 1);
	sim_test_set_reg(host, NPU_REG_FW_BOOT, NPU_BOOT_START);
	assert_int_equal(boot_status(host), NPU_BOOT_BAD_SIZE);
	/* Smaller than a header. */
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	sim_test_set_reg(host, NPU_REG_FW_SIZE, 10);
	sim_test_set_reg(host, NPU_REG_FW_BOOT, NPU_BOOT_START);
	assert_int_equal(boot_status(host), NPU_BOOT_BAD_SIZE);
}

static void corrupted_payload_fails_checksum(void **state)
{
	struct image img;

	image_default(&img);
	img.bytes[img.size - 3] ^= 0x40;
	assert_int_equal(boot_refused(*state, &img), NPU_BOOT_BAD_CHECKSUM);
}

static void bad_config_values_are_refused(void **state)
{
	struct sim_test_host *host = *state;
	struct npu_fw_config config;
	struct image img;
	const uint32_t bad_tlb[] = { 0, 3, 8192 };

	for (unsigned int i = 0; i < 3; i++) {
		npu_fw_default_config(&config);
		config.tlb_entries = bad_tlb[i];
		image_build(&img, &config);
		assert_int_equal(boot_refused(host, &img), NPU_BOOT_BAD_CONFIG);
	}
	npu_fw_default_config(&config);
	config.op_mask |= 1u << 31;	/* not a hardware opcode */
	image_build(&img, &config);
	assert_int_equal(boot_refused(host, &img), NPU_BOOT_BAD_CONFIG);

	npu_fw_default_config(&config);
	config.reserved[4] = 1;
	image_build(&img, &config);
	assert_int_equal(boot_refused(host, &img), NPU_BOOT_BAD_CONFIG);

	image_default(&img);
	image_header(&img)->config_size = 16;
	image_reseal(&img);
	assert_int_equal(boot_refused(host, &img), NPU_BOOT_BAD_CONFIG);

	image_default(&img);
	image_header(&img)->config_offset = (uint32_t)img.size - 8;
	image_reseal(&img);
	assert_int_equal(boot_refused(host, &img), NPU_BOOT_BAD_CONFIG);

	/* The largest legal TLB boots. */
	npu_fw_default_config(&config);
	config.tlb_entries = 4096;
	image_build(&img, &config);
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	assert_int_equal(sim_test_boot_image(host, img.bytes, img.size),
			 NPU_STATE_READY);
}

static void unreadable_image_address_is_dma_error(void **state)
{
	struct sim_test_host *host = *state;

	sim_test_set_reg64(host, NPU_REG_FW_ADDR_LO, MEM_SIZE - 32);
	sim_test_set_reg(host, NPU_REG_FW_SIZE, 4096);
	sim_test_set_reg(host, NPU_REG_FW_BOOT, NPU_BOOT_START);
	assert_int_equal(boot_status(host), NPU_BOOT_DMA_ERROR);
	assert_int_equal(sim_test_reg(host, NPU_REG_STATUS) & NPU_STATUS_STATE_MASK,
			 NPU_STATE_FW_ERROR);

	/* An address + size that wraps 64 bits. */
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	sim_test_set_reg64(host, NPU_REG_FW_ADDR_LO, UINT64_MAX - 16);
	sim_test_set_reg(host, NPU_REG_FW_SIZE, 4096);
	sim_test_set_reg(host, NPU_REG_FW_BOOT, NPU_BOOT_START);
	assert_int_equal(boot_status(host), NPU_BOOT_DMA_ERROR);
}

static void reset_after_fw_error_allows_a_new_boot(void **state)
{
	struct sim_test_host *host = *state;
	struct image img;

	image_default(&img);
	img.bytes[100] ^= 1;
	assert_int_equal(sim_test_boot_image(host, img.bytes, img.size),
			 NPU_STATE_FW_ERROR);
	sim_test_set_reg(host, NPU_REG_FW_BOOT, NPU_BOOT_START);
	assert_int_equal(boot_status(host), NPU_BOOT_NOT_OFF);
	sim_test_set_reg(host, NPU_REG_CTRL, NPU_CTRL_RESET);
	assert_int_equal(boot_status(host), NPU_BOOT_OK);
	assert_int_equal(sim_test_boot(host), NPU_STATE_READY);
}

static void doorbell_before_boot_stops_queue_not_ready(void **state)
{
	struct sim_test_host *host = *state;

	sim_test_ring_init(host, 1, 8);
	sim_test_set_reg(host, NPU_REG_IRQ_MASK, NPU_IRQ_JOB_ERROR);
	sim_test_set_reg(host, NPU_REG_QUEUE(1, NPU_QREG_TAIL), 1);
	sim_test_doorbell(host, 1);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(1, NPU_QREG_STATUS)),
			 NPU_QUEUE_ERR_NOT_READY);
	assert_int_equal(sim_test_reg(host, NPU_REG_QUEUE(1, NPU_QREG_CTRL)), 0);
	assert_true(sim_test_reg(host, NPU_REG_IRQ_STATUS) & NPU_IRQ_JOB_ERROR);
	assert_int_equal(sim_test_irq_count(host, NPU_MSIX_VEC_ERROR), 1);
	assert_false(npu_sim_has_work(host->sim));
}

static void names_cover_every_status(void **state)
{
	(void)state;
	assert_string_equal(npu_job_status_name(NPU_JOB_ERR_MMU_UNMAPPED),
			    "MMU_UNMAPPED");
	assert_string_equal(npu_job_status_name(NPU_JOB_OK), "OK");
	assert_string_equal(npu_job_status_name(NPU_JOB_ERR_ABORTED), "ABORTED");
	assert_string_equal(npu_job_status_name(999), "UNKNOWN");
	for (uint32_t s = 0; s < NPU_JOB_STATUS_COUNT; s++)
		assert_non_null(npu_job_status_name(s));
	assert_string_equal(npu_boot_status_name(NPU_BOOT_BAD_CHECKSUM),
			    "BAD_CHECKSUM");
	assert_string_equal(npu_boot_status_name(77), "UNKNOWN");
	assert_string_equal(npu_opcode_name(NPU_OP_CONV2D), "CONV2D");
	assert_string_equal(npu_opcode_name(NPU_OP_BARRIER), "BARRIER");
	assert_null(npu_opcode_name(0x33));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc32_matches_zlib_check_value),
		cmocka_unit_test(fw_build_lays_out_header_config_payload),
		cmocka_unit_test(names_cover_every_status),
#define T(fn) cmocka_unit_test_setup_teardown(fn, host_setup, host_teardown)
		T(good_image_boots_ready_and_applies_config),
		T(boot_while_ready_reports_not_off),
		T(bad_magic_is_refused),
		T(other_abi_major_is_refused),
		T(newer_abi_minor_boots),
		T(size_register_mismatch_is_refused),
		T(corrupted_payload_fails_checksum),
		T(bad_config_values_are_refused),
		T(unreadable_image_address_is_dma_error),
		T(reset_after_fw_error_allows_a_new_boot),
		T(doorbell_before_boot_stops_queue_not_ready),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
