// SPDX-License-Identifier: GPL-2.0-only
/*
 * Firmware: load the image once into DMA memory, boot it on every start.
 */

#include <linux/dma-mapping.h>
#include <linux/firmware.h>
#include <linux/iopoll.h>
#include <linux/string.h>

#include "npu_drv.h"

static const char * const npu_boot_status_names[NPU_BOOT_STATUS_COUNT] =
	NPU_BOOT_STATUS_NAMES;

static const char *npu_boot_status_str(u32 status)
{
	if (status < NPU_BOOT_STATUS_COUNT && npu_boot_status_names[status])
		return npu_boot_status_names[status];
	return "UNKNOWN";
}

int npu_fw_load(struct npu_device *ndev)
{
	struct device *dev = &ndev->pdev->dev;
	const struct npu_fw_header *hdr;
	const struct firmware *fw;
	int ret;

	ret = request_firmware(&fw, NPU_FW_NAME, dev);
	if (ret) {
		drm_err(&ndev->drm, "cannot load firmware %s: %d\n",
			NPU_FW_NAME, ret);
		return ret;
	}

	hdr = (const struct npu_fw_header *)fw->data;
	if (fw->size < sizeof(*hdr) || fw->size > NPU_FW_MAX_SIZE ||
	    le32_to_cpu(hdr->magic) != NPU_FW_MAGIC ||
	    le16_to_cpu(hdr->abi_major) != NPU_FW_ABI_MAJOR) {
		drm_err(&ndev->drm, "%s: not an NPU ABI %d firmware image (%zu bytes)\n",
			NPU_FW_NAME, NPU_FW_ABI_MAJOR, fw->size);
		ret = -EINVAL;
		goto out;
	}

	ndev->fw_cpu = dmam_alloc_coherent(dev, fw->size, &ndev->fw_dma,
					   GFP_KERNEL);
	if (!ndev->fw_cpu) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(ndev->fw_cpu, fw->data, fw->size);
	ndev->fw_size = fw->size;
	ndev->fw_version = le32_to_cpu(hdr->fw_version);
	strscpy(ndev->fw_build_id, hdr->build_id, sizeof(ndev->fw_build_id));
	npu_dbg(ndev, FW, "firmware %s: %zu bytes, version %#x\n",
		ndev->fw_build_id, fw->size, ndev->fw_version);
out:
	release_firmware(fw);
	return ret;
}

static int npu_fw_boot_once(struct npu_device *ndev, bool corrupt)
{
	u32 status, state;
	int ret;

	npu_write(ndev, NPU_REG_FW_ADDR_LO, lower_32_bits(ndev->fw_dma));
	npu_write(ndev, NPU_REG_FW_ADDR_HI, upper_32_bits(ndev->fw_dma));
	/* Fault injection: a size that disagrees with the header. */
	npu_write(ndev, NPU_REG_FW_SIZE, ndev->fw_size - (corrupt ? 8 : 0));
	npu_write(ndev, NPU_REG_FW_BOOT, NPU_BOOT_START);

	/* The boot IRQ is optional for us: polling STATUS is authoritative. */
	ret = readl_poll_timeout(ndev->regs + NPU_REG_STATUS, status,
				 (status & NPU_STATUS_STATE_MASK) != NPU_STATE_BOOTING &&
				 (status & NPU_STATUS_STATE_MASK) != NPU_STATE_OFF,
				 20, 2000000);
	state = status & NPU_STATUS_STATE_MASK;
	if (ret) {
		drm_err(&ndev->drm, "firmware boot timed out (state %u)\n", state);
		return -ETIMEDOUT;
	}
	if (state != NPU_STATE_READY) {
		u32 boot = npu_read(ndev, NPU_REG_BOOT_STATUS);

		drm_err(&ndev->drm, "firmware boot failed: %s (%u)%s\n",
			npu_boot_status_str(boot), boot,
			corrupt ? " [injected]" : "");
		return -EIO;
	}
	return 0;
}

int npu_fw_boot(struct npu_device *ndev)
{
	bool corrupt = npu_inject(ndev, NPU_INJECT_BOOT_FAIL);
	int ret;

	ret = npu_fw_boot_once(ndev, corrupt);
	if (ret && ret != -ETIMEDOUT) {
		/* One retry from a clean reset: a refused boot leaves FW_ERROR. */
		ret = npu_device_reset_hw(ndev);
		if (!ret)
			ret = npu_fw_boot_once(ndev, false);
	}
	if (!ret)
		npu_dbg(ndev, FW, "firmware booted\n");
	return ret;
}
