// SPDX-License-Identifier: MIT
/*
 * Device layer, no jobs: opening (and failing to open), device info,
 * buffers, the command-stream builder's validation, binary stream
 * validation and the text assembler's error messages.
 *
 * Runs on whatever NPU_DEVICE selects (sim on the host, accel in the VM).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device_env.h"
#include "npu-tools/cs_asm.h"
#include "npu/npu.h"

static struct npu_device *open_dev(void)
{
	struct npu_device *dev = NULL;
	char err[512];

	if (npu_device_open(test_device_options(), &dev, err, sizeof(err)))
		fail_msg("open: %s", err);
	return dev;
}

static void open_reports_device_info(void **state)
{
	struct npu_device *dev = open_dev();
	struct npu_device_info in;

	(void)state;
	assert_int_equal(npu_device_get_info(dev, &in), NPU_OK);
	assert_int_equal(in.isa_version >> 16, NPU_ISA_VERSION_MAJOR);
	assert_int_equal(in.num_queues, NPU_NUM_QUEUES);
	assert_int_equal(in.mac_rows, NPU_MAC_ROWS);
	assert_int_equal(in.mac_cols, NPU_MAC_COLS);
	assert_int_equal(in.sram_size, NPU_SRAM_SIZE);
	assert_true(in.op_mask & NPU_OP_BIT(NPU_OP_CONV2D));
	assert_true(in.caps & NPU_CAP_MMU);
	assert_true(in.fw_version != 0);
	assert_true(in.va_end > in.va_start);
	assert_string_equal(npu_device_last_error(dev), "");
	npu_device_close(dev);
}

static void wrong_device_path_fails_clearly(void **state)
{
	struct npu_device_options o;
	struct npu_device *dev = (void *)1;
	char err[512];

	(void)state;
	npu_device_options_init(&o);
	o.path = "/dev/accel/accel63";
	o.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&o, &dev, err, sizeof(err)), NPU_ERR_NOT_FOUND);
	assert_null(dev);
	assert_non_null(strstr(err, "/dev/accel/accel63"));
	assert_non_null(strstr(err, "No such file"));

	/* a file that exists but is no npu device */
	o.path = "/dev/null";
	assert_int_not_equal(npu_device_open(&o, &dev, err, sizeof(err)), NPU_OK);
	assert_non_null(strstr(err, "/dev/null"));

	assert_int_equal(npu_device_options_parse(&o, "gpu"), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_device_options_parse(&o, "sim"), NPU_OK);
	assert_int_equal(o.backend, NPU_BACKEND_SIM);
}

/*
 * The simulator's host threads: npu_device_options.sim_threads and the
 * spec "sim:threads=N"; 0 is the default, more than 64 fails the open
 * with the value and the range, and a spec with no count, 0, a sign or
 * junk is not a device spec. (The in-process sim, on the host and in the VM.)
 */
static void sim_threads_option_and_spec(void **state)
{
	static const char *const bad[] = {
		"sim:threads=", "sim:threads=0", "sim:threads=-1", "sim:threads=2x",
		"sim:threads=99999999999", "sim:threads", "sim:", "sim:threads=+2",
	};
	struct npu_device_options o;
	struct npu_device *dev = (void *)1;
	char err[512];

	(void)state;
	npu_device_options_init(&o);
	assert_int_equal(o.sim_threads, 0);
	assert_int_equal(npu_device_options_parse(&o, "sim:threads=3"), NPU_OK);
	assert_int_equal(o.backend, NPU_BACKEND_SIM);
	assert_int_equal(o.sim_threads, 3);
	assert_true(o.flags & NPU_DEVICE_SIM_THREADS);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		npu_device_options_init(&o);
		if (npu_device_options_parse(&o, bad[i]) != NPU_ERR_INVALID_ARG)
			fail_msg("'%s' parsed as a device spec", bad[i]);
		assert_int_equal(o.sim_threads, 0);
	}

	/* Without the flag the field is not read (a 2.1 program's padding). */
	npu_device_options_init(&o);
	o.backend = NPU_BACKEND_SIM;
	o.sim_threads = 65;
	if (npu_device_open(&o, &dev, err, sizeof(err)))
		fail_msg("sim_threads without NPU_DEVICE_SIM_THREADS was read: %s", err);
	npu_device_close(dev);
	o.flags |= NPU_DEVICE_SIM_THREADS;
	assert_int_equal(npu_device_open(&o, &dev, err, sizeof(err)),
			 NPU_ERR_INVALID_ARG);
	assert_null(dev);
	assert_non_null(strstr(err, "sim_threads 65 is outside 1..64"));
	o.sim_threads = UINT32_MAX;
	assert_int_equal(npu_device_open(&o, &dev, err, sizeof(err)),
			 NPU_ERR_INVALID_ARG);
	for (uint32_t t = 0; t <= 3; t++) {
		o.sim_threads = t;
		if (npu_device_open(&o, &dev, err, sizeof(err)))
			fail_msg("sim_threads %u: %s", t, err);
		npu_device_close(dev);
	}
}

static void buffers_map_and_free(void **state)
{
	struct npu_device *dev = open_dev();
	struct npu_device_info in;
	struct npu_buffer *a, *b, *bad = (void *)1;
	uint8_t *pa, *pb;
	void *p;

	(void)state;
	npu_device_get_info(dev, &in);
	assert_int_equal(npu_buffer_alloc(dev, 100, 0, &a), NPU_OK);
	assert_int_equal(npu_buffer_size(a), 4096);	/* page rounded */
	assert_int_equal(npu_buffer_alloc(dev, 3 * 4096 + 1, NPU_BUFFER_DEVICE_READ_ONLY, &b), NPU_OK);
	assert_int_equal(npu_buffer_size(b), 4 * 4096);
	assert_true(npu_buffer_va(a) >= in.va_start && npu_buffer_va(a) < in.va_end);
	assert_true(npu_buffer_va(a) % 4096 == 0);
	assert_true(npu_buffer_va(a) + 4096 <= npu_buffer_va(b) ||
		    npu_buffer_va(b) + 4 * 4096 <= npu_buffer_va(a));
	assert_int_equal(npu_buffer_map(a, &p), NPU_OK);
	pa = p;
	assert_int_equal(npu_buffer_map(b, &p), NPU_OK);
	pb = p;
	for (int i = 0; i < 4096; i++)
		assert_int_equal(pa[i], 0);	/* fresh buffers are zeroed */
	memset(pa, 0xab, 4096);
	memset(pb, 0xcd, 4 * 4096);
	assert_int_equal(pa[4095], 0xab);

	assert_int_equal(npu_buffer_alloc(dev, 0, 0, &bad), NPU_ERR_INVALID_ARG);
	assert_null(bad);
	assert_non_null(strstr(npu_device_last_error(dev), "size is 0"));
	assert_int_equal(npu_buffer_alloc(dev, 64, 0x80, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_device_last_error(dev), "unknown flags"));

	npu_buffer_free(a);
	npu_buffer_free(b);
	npu_buffer_free(NULL);
	npu_device_close(dev);
}

static void dmabuf_export_matches_backend(void **state)
{
	struct npu_device *dev = open_dev();
	struct npu_device_info in;
	struct npu_buffer *a, *imp;
	int fd = -1;

	(void)state;
	npu_device_get_info(dev, &in);
	assert_int_equal(npu_buffer_alloc(dev, 8192, 0, &a), NPU_OK);
	if (in.backend == NPU_BACKEND_SIM) {
		assert_int_equal(npu_buffer_export_dmabuf(a, &fd), NPU_ERR_UNSUPPORTED);
		assert_non_null(strstr(npu_device_last_error(dev), "dma-buf"));
	} else {
		struct npu_device *dev2 = open_dev();
		void *p1, *p2;

		assert_int_equal(npu_buffer_export_dmabuf(a, &fd), NPU_OK);
		assert_true(fd >= 0);
		assert_int_equal(npu_buffer_import_dmabuf(dev2, fd, &imp), NPU_OK);
		npu_buffer_map(a, &p1);
		npu_buffer_map(imp, &p2);
		memset(p1, 0x42, 8192);
		assert_int_equal(((uint8_t *)p2)[8191], 0x42);
		npu_buffer_free(imp);
		npu_device_close(dev2);
	}
	npu_buffer_free(a);
	npu_device_close(dev);
}

static void builder_rejects_bad_instructions(void **state)
{
	struct npu_cmdbuf *cb;
	struct npu_insn_conv2d cv = {
		.input = 0, .weight = 4096, .bias = 8192, .quant = 12288,
		.output = 16384, .in_h = 8, .in_w = 8, .in_c = 16, .out_c = 16,
		.out_h = 8, .out_w = 8, .k_h = 3, .k_w = 3, .stride_h = 1,
		.stride_w = 1, .dil_h = 1, .dil_w = 1, .pad_top = 1,
		.pad_left = 1, .pad_bottom = 1, .pad_right = 1, .groups = 1,
		.in_row_stride = 128, .in_pixel_stride = 16,
		.out_row_stride = 128, .out_pixel_stride = 16,
		.act_min = -128, .act_max = 127,
	};
	struct npu_insn_conv2d bad;
	struct npu_insn_eltwise el = { .a = 0, .b = 64, .output = 128,
				       .count = 64, .shift = 0 };
	size_t size;

	(void)state;
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	npu_cmdbuf_data(cb, &size);
	assert_int_equal(size, sizeof(struct npu_cs_header));
	assert_int_equal(npu_cmdbuf_conv2d(cb, &cv), NPU_OK);
	assert_int_equal(npu_cmdbuf_barrier(cb), NPU_OK);

	bad = cv;
	bad.output = NPU_SRAM_SIZE - 100;
	assert_int_equal(npu_cmdbuf_conv2d(cb, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "conv2d #2"));
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "output"));
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "exceeds SRAM size 2097152"));

	bad = cv;
	bad.out_h = 7;
	assert_int_equal(npu_cmdbuf_conv2d(cb, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "out_h is 7, expected 8"));

	bad = cv;
	bad.zp_in = 200;
	assert_int_equal(npu_cmdbuf_conv2d(cb, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "zp_in 200"));

	/* ISA 1.4's output LUT: the table only with the flag, inside SRAM, int8 */
	bad = cv;
	bad.lut = 1;
	assert_int_equal(npu_cmdbuf_conv2d(cb, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "lut is 0x1 without flag OUT_LUT"));

	bad = cv;
	bad.flags |= NPU_CONV_OUT_LUT;
	bad.lut = NPU_SRAM_SIZE - 255;
	assert_int_equal(npu_cmdbuf_conv2d(cb, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "lut ["));
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "exceeds SRAM size"));

	bad = cv;
	bad.flags |= NPU_CONV_OUT_LUT;
	bad.hdr.flags |= NPU_INSN_I16;
	assert_int_equal(npu_cmdbuf_conv2d(cb, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "OUT_LUT with header flag I16"));

	bad = cv;
	bad.groups = 3;
	assert_int_equal(npu_cmdbuf_conv2d(cb, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "groups 3"));

	assert_int_equal(npu_cmdbuf_eltwise(cb, &el), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "eltwise #2: shift 0"));

	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, 0, NPU_SPACE_SRAM, 0,
						NPU_SPACE_SRAM, 100, 200),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "overlaps"));
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, 0, 7, 0, NPU_SPACE_VA, 0, 64),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "dst_space 7"));
	assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, 0, NPU_SPACE_SRAM, 0, 0, 0),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "row_bytes is 0"));
	assert_int_equal(npu_cmdbuf_timestamp(cb, 0, 0x1004), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "not 8-byte aligned"));
	assert_int_equal(npu_cmdbuf_nop(cb, 0x80), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "flags"));
	assert_int_equal(npu_cmdbuf_lut(cb, NPU_INSN_SYNC, 0, 4096, NPU_SRAM_SIZE - 128, 64),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "table"));

	/* failures leave the stream unchanged */
	assert_int_equal(npu_cmdbuf_count(cb), 2);
	npu_cmdbuf_data(cb, &size);
	assert_int_equal(size, sizeof(struct npu_cs_header) + sizeof(cv) + 8);
	npu_cmdbuf_destroy(cb);
}

static void binary_stream_validation_names_offsets(void **state)
{
	struct npu_cmdbuf *cb;
	const void *data;
	uint8_t buf[256];
	char msg[512];
	size_t size;

	(void)state;
	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_fill_1d(cb, 0, NPU_SPACE_SRAM, 0, 7, 256), NPU_OK);
	assert_int_equal(npu_cmdbuf_dma_copy_1d(cb, NPU_INSN_SYNC, NPU_SPACE_VA, 0x100000000ull,
						NPU_SPACE_SRAM, 0, 256), NPU_OK);
	data = npu_cmdbuf_data(cb, &size);
	assert_int_equal(size, 16 + 40 + 56);
	memcpy(buf, data, size);
	assert_int_equal(npu_cs_validate(buf, size, 0, 0, msg, sizeof(msg)), NPU_OK);
	/* truncated in the second instruction */
	assert_int_equal(npu_cs_validate(buf, size - 16, 0, 0, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(msg, "offset 56"));
	assert_non_null(strstr(msg, "truncated"));
	/* bad magic, bad opcode */
	buf[0] ^= 1;
	assert_int_equal(npu_cs_validate(buf, size, 0, 0, msg, sizeof(msg)), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(msg, "magic"));
	buf[0] ^= 1;
	buf[16] = 0x77;
	assert_int_equal(npu_cs_validate(buf, size, 0, 0, msg, sizeof(msg)), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(msg, "unknown opcode 0x77"));
	assert_int_equal(npu_cs_validate(buf, 8, 0, 0, msg, sizeof(msg)), NPU_ERR_INVALID_ARG);
	npu_cmdbuf_destroy(cb);
}

static void expect_asm_error(const char *text, const char *where, const char *what)
{
	struct npu_cs_program *p = NULL;
	char msg[1024];

	assert_int_equal(npu_cs_assemble(text, strlen(text), "t.npucs", &p, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_null(p);
	if (strncmp(msg, where, strlen(where)) || !strstr(msg, what))
		fail_msg("got '%s', want prefix '%s' and '%s'", msg, where, what);
}

static void assembler_errors_name_line_and_column(void **state)
{
	struct npu_cs_program *p;
	char msg[1024];
	const char *good =
		"# a comment\n"
		".buffer in 4K init=random:7\n"
		".buffer out 4096 init=fill:0x11\n"
		".buffer t 256 init=hex:0001020304 ro\n"
		".queue 0\n"
		"dma_copy dst=sram:0 src=in bytes=4096   # load\n"
		"dma_copy dst=sram:8192 src=in+64 rows=4 row_bytes=64 src_stride=128 dst_stride=64\n"
		"conv2d sync input=0 weight=4096 bias=8192 quant=12288 output=16384 in_h=4 in_w=4 in_c=8 out_c=8 k_h=3 k_w=3 pad_top=1 pad_left=1 pad_bottom=1 pad_right=1 flags=per_tensor|no_bias zp_in=-3\n"
		"pool mode=avg input=0 output=20000 c=8 in_h=4 in_w=4 k_h=2 k_w=2 stride_h=2 stride_w=2\n"
		"eltwise mode=add bcast=scalar a=0 b=64 output=128 count=64 shift=8 mult_a=256 mult_b=256\n"
		"lut input=0 output=300 table=1024 count=64\n"
		"dma_copy sync dst=out src=sram:16384 bytes=128\n"
		"timestamp va=out+8\n"
		"barrier\n"
		"nop\n";

	(void)state;
	assert_int_equal(npu_cs_assemble(good, strlen(good), "g.npucs", &p, msg, sizeof(msg)), NPU_OK);
	assert_int_equal(p->num_insns, 10);
	assert_int_equal(p->num_buffers, 3);
	assert_int_equal(p->buffers[0].size, 4096);
	assert_int_equal(p->buffers[2].num_bytes, 5);
	assert_true(p->buffers[2].read_only);
	assert_int_equal(p->queue, 0);
	assert_int_equal(p->num_relocs, 4);
	assert_int_equal(npu_cs_validate(p->code, p->code_size, 0, 0, msg, sizeof(msg)), NPU_OK);
	npu_cs_program_free(p);

	expect_asm_error("nop\nfrobnicate x=1\n", "t.npucs:2:1:", "unknown instruction 'frobnicate'");
	expect_asm_error(".buffer a 64\n  dma_copy dst=sram:0 src=b bytes=64\n", "t.npucs:2:27:",
			 "unknown buffer 'b'");
	expect_asm_error("dma_copy dst=0 src=va:0 bytes=8\n", "t.npucs:1:14:", "say sram:0 or va:0");
	expect_asm_error("lut input=0 output=64 table=128 count=64 colour=red\n", "t.npucs:1:42:",
			 "lut has no field 'colour'");
	expect_asm_error("lut input=0 output=64 table=128 count=x\n", "t.npucs:1:39:", "not a number");
	expect_asm_error("pool input=0 output=64 c=70000 in_h=1 in_w=1\n", "t.npucs:1:", "does not fit");
	expect_asm_error("conv2d input=0 weight=64 bias=128 quant=256 output=512 in_h=4 in_w=4 in_c=8 out_c=8 out_h=9\n",
			 "t.npucs:1:1:", "conv2d #0: out_h is 9, expected 4");
	expect_asm_error(".buffer a 64\ndma_copy dst=sram:0 src=a+32 bytes=64\n", "t.npucs:2:21:",
			 "runs past the end of buffer 'a'");
	expect_asm_error(".buffer a 64 init=hex:0g\n", "t.npucs:1:", "not a hex byte");
	expect_asm_error(".buffer a 64\n.buffer a 64\n", "t.npucs:2:9:", "already declared");
	expect_asm_error("# nothing\n", "t.npucs:1:", "no instructions");
	expect_asm_error(".queue 5\n", "t.npucs:1:1:", ".queue takes");
	expect_asm_error("eltwise a=0 b=0 output=0 count=4 shift=3 mode=sub\n", "t.npucs:1:", "add|mul");
}

/* ISA 1.1 in the text format and the builder: RESIZE and zero insertion. */
static void isa_1_1_ops_assemble_and_validate(void **state)
{
	struct npu_cs_program *p;
	struct npu_insn_resize r;
	struct npu_insn_conv2d cv;
	struct npu_cmdbuf *cb;
	char msg[1024];
	const char *text =
		"resize mode=bilinear input=0 output=4096 c=8 in_h=4 in_w=5 out_h=8 out_w=10\n"
		"conv2d input=0 weight=4096 bias=8192 quant=12288 output=16384 in_h=3 in_w=3 "
		"in_c=8 out_c=8 k_h=2 k_w=2 pad_top=1 pad_left=1 pad_bottom=1 pad_right=1 "
		"ins_h=1 ins_w=1\n";

	(void)state;
	assert_int_equal(npu_cs_assemble(text, strlen(text), "r.npucs", &p, msg, sizeof(msg)),
			 NPU_OK);
	assert_int_equal(p->num_insns, 2);
	memcpy(&r, p->code + sizeof(struct npu_cs_header), sizeof(r));
	assert_int_equal(r.hdr.opcode, NPU_OP_RESIZE);
	assert_int_equal(r.mode, NPU_RESIZE_BILINEAR);
	/* default coordinates: asymmetric, in / out */
	assert_int_equal(r.step_h, 4);
	assert_int_equal(r.den_h, 8);
	assert_int_equal(r.step_w, 5);
	assert_int_equal(r.den_w, 10);
	assert_int_equal(r.in_row_stride, 40);
	memcpy(&cv, p->code + sizeof(struct npu_cs_header) + sizeof(r), sizeof(cv));
	/* (3 - 1) * 2 + 1 = 5 rows after insertion, + 2 pad - 1 = out 6 */
	assert_int_equal(cv.out_h, 6);
	assert_int_equal(cv.ins_w, 1);
	npu_cs_program_free(p);

	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	assert_int_equal(npu_cmdbuf_resize(cb, &r), NPU_OK);
	r.den_w = 0;
	assert_int_equal(npu_cmdbuf_resize(cb, &r), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "resize #1: den_w is 0"));
	r.den_w = 10;
	r.mode = 3;
	assert_int_equal(npu_cmdbuf_resize(cb, &r), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "mode 3 is not 0 (nearest) or 1 (bilinear)"));
	cv.out_h = 5;
	assert_int_equal(npu_cmdbuf_conv2d(cb, &cv), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "out_h is 5, expected 6"));
	assert_int_equal(npu_cmdbuf_count(cb), 1);
	npu_cmdbuf_destroy(cb);
}


/* ISA 1.3 row ops in the text format and the builder. */
static void isa_1_3_row_ops_assemble_and_validate(void **state)
{
	struct npu_cs_program *p;
	struct npu_insn_softmax sm;
	struct npu_insn_layernorm ln;
	struct npu_insn_reduce rd;
	struct npu_cmdbuf *cb;
	size_t off = sizeof(struct npu_cs_header);
	char msg[1024];
	const char *text =
		"softmax input=0 output=4096 table=8192 rows=3 c=40 mult=1073741824 shift=84 zp_out=-128\n"
		"layernorm input=0 output=0 params=8192 rows=3 c=40 eps=144 shift=24\n"
		"reduce input=0 output=4096 rows=3 c=40 mult=26843546 shift=30 mode=1\n";

	(void)state;
	assert_int_equal(npu_cs_assemble(text, strlen(text), "r.npucs", &p, msg, sizeof(msg)),
			 NPU_OK);
	assert_int_equal(p->num_insns, 3);
	memcpy(&sm, p->code + off, sizeof(sm));
	memcpy(&ln, p->code + off + 48, sizeof(ln));
	memcpy(&rd, p->code + off + 96, sizeof(rd));
	assert_int_equal(sm.hdr.opcode, NPU_OP_SOFTMAX);
	assert_int_equal(sm.in_stride, 40);	/* dense rows by default */
	assert_int_equal(sm.zp_out, -128);
	assert_int_equal(sm.act_max, 127);
	assert_int_equal(ln.hdr.opcode, NPU_OP_LAYERNORM);
	assert_int_equal(ln.eps, 144);
	assert_int_equal(rd.mode, NPU_REDUCE_MAX);
	assert_int_equal(rd.out_stride, 1);
	npu_cs_program_free(p);

	assert_int_equal(npu_cmdbuf_create(&cb), NPU_OK);
	assert_int_equal(npu_cmdbuf_softmax(cb, &sm), NPU_OK);
	assert_int_equal(npu_cmdbuf_layernorm(cb, &ln), NPU_OK);
	assert_int_equal(npu_cmdbuf_reduce(cb, &rd), NPU_OK);
	sm.shift = 0;
	assert_int_equal(npu_cmdbuf_softmax(cb, &sm), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "softmax #3: shift 0 is outside 1..126"));
	ln.output = 5;	/* overlaps its input, not in place */
	assert_int_equal(npu_cmdbuf_layernorm(cb, &ln), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "overlaps input"));
	rd.mode = 2;
	assert_int_equal(npu_cmdbuf_reduce(cb, &rd), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_cmdbuf_last_error(cb), "mode 2 is not 0 (sum) or 1 (max)"));
	assert_int_equal(npu_cmdbuf_count(cb), 3);
	npu_cmdbuf_destroy(cb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(open_reports_device_info),
		cmocka_unit_test(wrong_device_path_fails_clearly),
		cmocka_unit_test(sim_threads_option_and_spec),
		cmocka_unit_test(buffers_map_and_free),
		cmocka_unit_test(dmabuf_export_matches_backend),
		cmocka_unit_test(builder_rejects_bad_instructions),
		cmocka_unit_test(binary_stream_validation_names_offsets),
		cmocka_unit_test(assembler_errors_name_line_and_column),
		cmocka_unit_test(isa_1_1_ops_assemble_and_validate),
		cmocka_unit_test(isa_1_3_row_ops_assemble_and_validate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
