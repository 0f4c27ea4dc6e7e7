/* SPDX-License-Identifier: MIT */
/*
 * npu-tools/cs_asm.h - command-stream files, for the tools (libnpu-tools.a:
 * `npu submit`, tests); not part of libnpu-user. Uses only the public API.
 *
 * A file is either a binary stream (starts with NPU_CS_MAGIC) or the text
 * form of Documentation/command-stream-text.md. Assembling yields a
 * program: the stream with relocations against named buffers, which
 * npu_cs_instantiate() allocates and initialises on a device and patches
 * with their VAs, ready to submit any number of times.
 */
#ifndef NPU_TOOLS_CS_ASM_H
#define NPU_TOOLS_CS_ASM_H

#include <stddef.h>
#include <stdint.h>

#include "npu/npu_device.h"

enum npu_cs_init {
	NPU_CS_INIT_ZERO,
	NPU_CS_INIT_RANDOM,	/* seeded splitmix64 bytes */
	NPU_CS_INIT_HEX,	/* bytes given; rest zero */
	NPU_CS_INIT_FILL,	/* every byte = fill */
};

struct npu_cs_buffer_decl {
	char name[64];
	uint64_t size;
	enum npu_cs_init init;
	uint64_t seed;
	uint8_t fill;
	uint8_t *bytes;		/* NPU_CS_INIT_HEX */
	size_t num_bytes;
	bool read_only;		/* device read-only */
	unsigned int line;
};

/* A 64-bit VA field at 'offset' in code = VA of 'buffer' + addend. */
struct npu_cs_reloc {
	size_t offset;
	unsigned int buffer;
	uint64_t addend;
};

struct npu_cs_program {
	struct npu_cs_buffer_decl *buffers;
	unsigned int num_buffers;
	struct npu_cs_reloc *relocs;
	unsigned int num_relocs;
	uint8_t *code;		/* header + instructions */
	size_t code_size;
	unsigned int num_insns;
	uint32_t queue;		/* .queue, default 1 */
	bool binary;		/* read from a binary file */
};

/* errors are "file:line:column: message" */
npu_status npu_cs_assemble(const char *text, size_t len, const char *filename,
			   struct npu_cs_program **out, char *msg, size_t msg_size);
/* a binary stream, validated instruction by instruction (unless !validate) */
npu_status npu_cs_from_binary(const void *data, size_t size,
			      const char *filename, bool validate,
			      struct npu_cs_program **out, char *msg,
			      size_t msg_size);
/* read a file, binary or text by its first 4 bytes */
npu_status npu_cs_read_file(const char *path, bool validate,
			    struct npu_cs_program **out, char *msg,
			    size_t msg_size);
void npu_cs_program_free(struct npu_cs_program *prog);

struct npu_cs_instance {
	struct npu_device *dev;
	struct npu_buffer *cmd;
	struct npu_buffer **bufs;	/* one per declared buffer */
	struct npu_buffer_use *uses;
	unsigned int num_bufs;
	struct npu_submit submit;	/* ready to pass to npu_job_* */
};

/*
 * Allocate + initialise the buffers, place the patched stream in 'cmd'.
 * On failure 'msg' says which buffer and why ("buffer 'x' (line 3): ...").
 */
npu_status npu_cs_instantiate(struct npu_device *dev,
			      const struct npu_cs_program *prog,
			      struct npu_cs_instance **out, char *msg, size_t msg_size);
void npu_cs_instance_free(struct npu_cs_instance *inst);
/* -1 if no buffer has that name */
int npu_cs_find_buffer(const struct npu_cs_program *prog, const char *name);

/* The hardware's name of an opcode ("CONV2D"), or NULL if it has none. */
const char *npu_cs_opcode_name(uint32_t opcode);
/* zlib's CRC-32 of a buffer, as `npu submit --dump` prints it. */
uint32_t npu_cs_crc32(const void *data, size_t size);

#endif /* NPU_TOOLS_CS_ASM_H */
