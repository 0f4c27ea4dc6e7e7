/* SPDX-License-Identifier: MIT */
/*
 * fw.c - firmware images: CRC-32, building the reference image, and the
 * device side of the boot handshake (DMA in, validate, apply config).
 */
#include <string.h>

#include "sim_internal.h"

/* Read the image in pieces of this size: no 16 MiB allocation at boot. */
#define NPU_FW_READ_CHUNK	4096

static uint32_t npu_crc32_table[256];
static atomic_bool npu_crc32_ready;

static void npu_crc32_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		npu_crc32_table[n] = c;
	}
	atomic_store_explicit(&npu_crc32_ready, true, memory_order_release);
}

/* zlib's crc32(): chain calls by passing the previous result as 'crc'. */
uint32_t npu_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* Filling twice from two threads writes identical values: harmless. */
	if (!atomic_load_explicit(&npu_crc32_ready, memory_order_acquire))
		npu_crc32_init();
	crc = ~crc;
	while (len--)
		crc = npu_crc32_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

void npu_fw_default_config(struct npu_fw_config *config)
{
	memset(config, 0, sizeof(*config));
	config->watchdog_cycles = 2000000000u;	/* 2 s at 1 GHz */
	config->tlb_entries = 64;
	config->op_mask = NPU_OP_MASK_ALL;
}

size_t npu_fw_build(void *buf, size_t cap, uint32_t fw_version,
		    const char *build_id, const struct npu_fw_config *config,
		    const void *payload, size_t payload_size)
{
	struct npu_fw_header header;
	size_t payload_offset = sizeof(header) + sizeof(*config);
	uint8_t *image = buf;

	if (!buf || !config || (payload_size && !payload) ||
	    payload_size > NPU_FW_MAX_SIZE - payload_offset ||
	    cap < payload_offset + payload_size)
		return 0;
	memset(&header, 0, sizeof(header));
	header.magic = NPU_FW_MAGIC;
	header.abi_major = NPU_FW_ABI_MAJOR;
	header.abi_minor = NPU_FW_ABI_MINOR;
	header.fw_version = fw_version;
	header.header_size = sizeof(header);
	header.image_size = (uint32_t)(payload_offset + payload_size);
	header.config_offset = sizeof(header);
	header.config_size = sizeof(*config);
	if (build_id)
		strncpy(header.build_id, build_id, sizeof(header.build_id) - 1);
	memcpy(image, &header, sizeof(header));
	memcpy(image + sizeof(header), config, sizeof(*config));
	if (payload_size)
		memcpy(image + payload_offset, payload, payload_size);
	header.checksum = npu_crc32(0, image, header.image_size);
	memcpy(image + offsetof(struct npu_fw_header, checksum),
	       &header.checksum, sizeof(header.checksum));
	return header.image_size;
}

static bool npu_is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static uint32_t npu_fw_check_config(const struct npu_fw_config *config)
{
	for (unsigned int i = 0; i < 5; i++)
		if (config->reserved[i])
			return NPU_BOOT_BAD_CONFIG;
	if (!npu_is_pow2(config->tlb_entries) ||
	    config->tlb_entries > NPU_TLB_MAX_ENTRIES)
		return NPU_BOOT_BAD_CONFIG;
	if (config->op_mask & ~NPU_HW_OP_MASK)
		return NPU_BOOT_BAD_CONFIG;
	return NPU_BOOT_OK;
}

/*
 * Stream the image through a small buffer: CRC it (checksum field as
 * zero) and pick the config section out on the way.
 */
static uint32_t npu_fw_read_image(struct npu_sim *sim, uint64_t addr,
				  const struct npu_fw_header *header,
				  struct npu_fw_config *config)
{
	uint8_t chunk[NPU_FW_READ_CHUNK];
	uint32_t crc = 0;

	for (uint32_t off = 0; off < header->image_size;) {
		uint32_t n = header->image_size - off;

		if (n > sizeof(chunk))
			n = sizeof(chunk);
		if (sim->ops.dma_read(sim->opaque, addr + off, chunk, n))
			return NPU_BOOT_DMA_ERROR;
		/* The checksum field sits in the first chunk. */
		if (off == 0)
			memset(chunk + offsetof(struct npu_fw_header, checksum), 0,
			       sizeof(header->checksum));
		for (uint32_t i = 0; i < n; i++) {
			uint64_t pos = (uint64_t)off + i;
			uint8_t *dst = (uint8_t *)config;

			if (pos >= header->config_offset &&
			    pos < (uint64_t)header->config_offset + sizeof(*config))
				dst[pos - header->config_offset] = chunk[i];
		}
		crc = npu_crc32(crc, chunk, n);
		off += n;
	}
	return crc == header->checksum ? NPU_BOOT_OK : NPU_BOOT_BAD_CHECKSUM;
}

/* Reads host memory only: safe off the serialized side. */
static uint32_t npu_fw_validate(struct npu_sim *sim, uint64_t addr,
				uint32_t size, struct npu_fw_header *out,
				struct npu_fw_config *config)
{
	struct npu_fw_header header;
	uint32_t status;

	if (size < sizeof(header) || size > NPU_FW_MAX_SIZE)
		return NPU_BOOT_BAD_SIZE;
	if (addr > UINT64_MAX - size ||
	    sim->ops.dma_read(sim->opaque, addr, &header, sizeof(header)))
		return NPU_BOOT_DMA_ERROR;
	if (header.magic != NPU_FW_MAGIC)
		return NPU_BOOT_BAD_MAGIC;
	if (header.abi_major != NPU_FW_ABI_MAJOR)
		return NPU_BOOT_BAD_VERSION;
	if (header.header_size != sizeof(header) || header.image_size != size)
		return NPU_BOOT_BAD_SIZE;
	status = npu_fw_read_image(sim, addr, &header, config);
	if (status != NPU_BOOT_OK)
		return status;
	if (header.config_size != sizeof(*config) ||
	    header.config_offset < sizeof(header) ||
	    header.config_offset % 4 ||
	    header.config_offset > header.image_size - sizeof(*config))
		return NPU_BOOT_BAD_CONFIG;
	*out = header;
	return npu_fw_check_config(config);
}

void npu_sim_boot_execute(struct npu_sim *sim, struct npu_sim_boot *boot)
{
	if (!sim || !boot)
		return;
	memset(&boot->header, 0, sizeof(boot->header));
	memset(&boot->config, 0, sizeof(boot->config));
	boot->status = npu_fw_validate(sim, boot->addr, boot->size,
				       &boot->header, &boot->config);
}

void npu_sim_boot_finish(struct npu_sim *sim, struct npu_sim_boot *boot)
{
	if (!sim || !boot || boot->epoch != atomic_load(&sim->epoch) ||
	    sim->state != NPU_STATE_BOOTING)
		return;		/* a reset came in between: dropped */
	sim->boot_status = boot->status;
	if (boot->status == NPU_BOOT_OK) {
		sim->fw_version = boot->header.fw_version;
		sim->op_mask = boot->config.op_mask;
		sim->tlb_entries = boot->config.tlb_entries;
		sim->watchdog_cycles = boot->config.watchdog_cycles;
		/* A new TLB size reindexes every entry. */
		npu_mmu_invalidate(sim, NPU_MMU_INVALIDATE_ALL);
		sim->state = NPU_STATE_READY;
	} else {
		sim->state = NPU_STATE_FW_ERROR;
	}
	npu_sim_raise(sim, NPU_IRQ_BOOT);
}

void npu_sim_set_async_boot(struct npu_sim *sim, bool async)
{
	if (sim)
		sim->async_boot = async;
}

bool npu_sim_boot_fetch(struct npu_sim *sim, struct npu_sim_boot *boot)
{
	if (!sim || !boot || !sim->boot_requested)
		return false;
	sim->boot_requested = false;
	memset(boot, 0, sizeof(*boot));
	boot->addr = sim->fw_addr;
	boot->size = sim->fw_size;
	boot->epoch = atomic_load(&sim->epoch);
	return true;
}

void npu_fw_boot(struct npu_sim *sim)
{
	struct npu_sim_boot boot;

	if (sim->state != NPU_STATE_OFF) {
		sim->boot_status = NPU_BOOT_NOT_OFF;
		npu_sim_raise(sim, NPU_IRQ_BOOT);
		return;
	}
	sim->state = NPU_STATE_BOOTING;
	sim->boot_requested = true;
	if (sim->async_boot)
		return;		/* the host runs it: npu_sim_boot_fetch() */
	npu_sim_boot_fetch(sim, &boot);
	npu_sim_boot_execute(sim, &boot);
	npu_sim_boot_finish(sim, &boot);
}
