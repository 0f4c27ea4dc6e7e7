// SPDX-License-Identifier: MIT
/* npu_npy.c - .npy read / write (see npu_npy.h). */
#include "runtime/npu_npy.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/npu_file.h"

static const struct {
	const char *descr;
	enum npu_dtype dtype;
} npy_types[] = {
	{ "<f4", NPU_DTYPE_FLOAT }, { "<f8", NPU_DTYPE_DOUBLE },
	{ "<f2", NPU_DTYPE_FLOAT16 }, { "<i8", NPU_DTYPE_INT64 },
	{ "<i4", NPU_DTYPE_INT32 }, { "<i2", NPU_DTYPE_INT16 },
	{ "|i1", NPU_DTYPE_INT8 }, { "<u8", NPU_DTYPE_UINT64 },
	{ "<u4", NPU_DTYPE_UINT32 }, { "<u2", NPU_DTYPE_UINT16 },
	{ "|u1", NPU_DTYPE_UINT8 }, { "|b1", NPU_DTYPE_BOOL },
};

#define NUM_NPY_TYPES (sizeof(npy_types) / sizeof(npy_types[0]))

/* Find "'key':" in the header dict; returns the text after the colon. */
static const char *dict_value(const char *h, const char *key)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), "'%s'", key);
	p = strstr(h, pat);
	if (!p) {
		snprintf(pat, sizeof(pat), "\"%s\"", key);
		p = strstr(h, pat);
	}
	if (!p)
		return NULL;
	p += strlen(pat);
	while (isspace((unsigned char)*p))
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

npu_status npu_npy_parse(const void *data, size_t size, const char *src,
			 struct npu_tensor **out, struct npu_error *err)
{
	const unsigned char *b = data;
	size_t hlen, hstart, i, esize, want;
	struct npu_shape shape = { 0 };
	enum npu_dtype dtype = NPU_DTYPE_UNDEFINED;
	char descr[16] = "", *h;
	const char *p;
	struct npu_tensor *t;
	int64_t numel;

	*out = NULL;
	if (size < 10 || memcmp(b, "\x93NUMPY", 6))
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: not a .npy file (bad magic)", src);
	if (b[6] == 1) {
		hlen = b[8] | (size_t)b[9] << 8;
		hstart = 10;
	} else if (b[6] == 2 || b[6] == 3) {
		if (size < 12)
			return npu_error_set(err, NPU_ERR_INVALID_ARG,
					     "%s: truncated .npy header", src);
		hlen = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
		       (size_t)b[11] << 24;
		hstart = 12;
	} else {
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: .npy format version %d.%d is not supported",
				     src, b[6], b[7]);
	}
	if (hlen > size - hstart)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: truncated .npy header", src);
	h = malloc(hlen + 1);
	if (!h)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	memcpy(h, b + hstart, hlen);
	h[hlen] = '\0';

	p = dict_value(h, "descr");
	if (!p || (*p != '\'' && *p != '"'))
		goto bad_header;
	for (i = 0; p[i + 1] && p[i + 1] != p[0] && i < sizeof(descr) - 1; i++)
		descr[i] = p[i + 1];
	descr[i] = '\0';
	/* One-byte types may be spelled with '<', '=' or '|'. */
	if (strlen(descr) == 3 && descr[2] == '1' && (descr[0] == '<' ||
						      descr[0] == '='))
		descr[0] = '|';
	if (descr[0] == '=')
		descr[0] = '<';	/* native order: this is a little-endian host */
	for (i = 0; i < NUM_NPY_TYPES; i++)
		if (!strcmp(descr, npy_types[i].descr))
			dtype = npy_types[i].dtype;
	if (dtype == NPU_DTYPE_UNDEFINED) {
		npu_error_set(err, NPU_ERR_UNSUPPORTED,
			      "%s: dtype '%s' is not supported (%s)", src, descr,
			      descr[0] == '>' ? "big-endian data"
					      : "use <f4 <f8 <f2 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1");
		free(h);
		return err->status;
	}
	p = dict_value(h, "fortran_order");
	if (!p)
		goto bad_header;
	if (!strncmp(p, "True", 4)) {
		free(h);
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
			"%s: fortran_order True is not supported (save a C-order array: np.ascontiguousarray)",
			src);
	}
	if (strncmp(p, "False", 5))
		goto bad_header;
	p = dict_value(h, "shape");
	if (!p || *p != '(')
		goto bad_header;
	p++;
	for (;;) {
		char *end;
		long long d;

		while (isspace((unsigned char)*p))
			p++;
		if (*p == ')')
			break;
		errno = 0;
		d = strtoll(p, &end, 10);
		if (end == p || d < 0 || errno)
			goto bad_header;
		if (shape.rank == NPU_MAX_RANK) {
			free(h);
			return npu_error_set(err, NPU_ERR_UNSUPPORTED,
					     "%s: rank above %d", src,
					     NPU_MAX_RANK);
		}
		shape.dims[shape.rank++] = d;
		p = end;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == ',')
			p++;
		else if (*p != ')')
			goto bad_header;
	}
	free(h);
	numel = npu_shape_numel(&shape);
	esize = npu_dtype_size(dtype);
	if (numel < 0 || (uint64_t)numel > (1ull << 40) / esize)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: shape too large", src);
	want = (size_t)numel * esize;
	if (size - hstart - hlen < want)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "%s: %zu bytes of data, the header says %zu",
				     src, size - hstart - hlen, want);
	t = npu_tensor_create(dtype, &shape);
	if (!t)
		return npu_error_set(err, NPU_ERR_NO_MEMORY, "out of memory");
	if (want)
		memcpy(t->data, b + hstart + hlen, want);
	*out = t;
	return NPU_OK;
bad_header:
	free(h);
	return npu_error_set(err, NPU_ERR_INVALID_ARG,
			     "%s: malformed .npy header", src);
}

npu_status npu_npy_read(const char *path, struct npu_tensor **out,
			struct npu_error *err)
{
	void *data;
	size_t size;
	npu_status st = npu_read_file(path, &data, &size, err);

	*out = NULL;
	if (st != NPU_OK)
		return st;
	st = npu_npy_parse(data, size, path, out, err);
	free(data);
	return st;
}

npu_status npu_npy_write(const char *path, const struct npu_tensor *t,
			 struct npu_error *err)
{
	char dict[512], hdr[640];
	const char *descr = NULL;
	size_t i, len, total, pre;
	int n, d;
	FILE *f;

	for (i = 0; i < NUM_NPY_TYPES; i++)
		if (npy_types[i].dtype == t->dtype)
			descr = npy_types[i].descr;
	if (!descr)
		return npu_error_set(err, NPU_ERR_UNSUPPORTED,
				     "%s: cannot store type %s in .npy", path,
				     npu_dtype_name(t->dtype));
	n = snprintf(dict, sizeof(dict),
		     "{'descr': '%s', 'fortran_order': False, 'shape': (",
		     descr);
	for (d = 0; d < t->shape.rank; d++)
		n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%lld,%s",
			      (long long)t->shape.dims[d],
			      d + 1 < t->shape.rank ? " " : "");
	if (t->shape.rank > 1)
		n--;	/* "(2, 3)" but "(5,)" */
	n += snprintf(dict + n, sizeof(dict) - (size_t)n, "), }");
	len = (size_t)n;
	/* magic(6) + version(2) + len(2) + dict + spaces + '\n', % 64 == 0 */
	pre = 10;
	total = (pre + len + 1 + 63) / 64 * 64;
	memcpy(hdr, "\x93NUMPY\x01\x00", 8);
	hdr[8] = (char)((total - pre) & 0xff);
	hdr[9] = (char)((total - pre) >> 8);
	memcpy(hdr + pre, dict, len);
	memset(hdr + pre + len, ' ', total - pre - len - 1);
	hdr[total - 1] = '\n';
	f = fopen(path, "wb");
	if (!f)
		return npu_error_set(err, NPU_ERR_IO, "%s: %s", path,
				     strerror(errno));
	if (fwrite(hdr, 1, total, f) != total ||
	    (t->nbytes && fwrite(t->data, 1, t->nbytes, f) != t->nbytes)) {
		fclose(f);
		return npu_error_set(err, NPU_ERR_IO, "%s: write failed", path);
	}
	if (fclose(f))
		return npu_error_set(err, NPU_ERR_IO, "%s: %s", path,
				     strerror(errno));
	return NPU_OK;
}

static int npy_file(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 4 && !strcmp(d->d_name + n - 4, ".npy");
}

static int not_hidden(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int npu_npy_list_samples(const char *dir, bool npy_files, char ***names)
{
	struct dirent **ents = NULL;
	char **out;
	int n = scandir(dir, &ents, npy_files ? npy_file : not_hidden, alphasort), i;

	*names = NULL;
	if (n < 0)
		return -1;
	out = calloc((size_t)n + 1, sizeof(*out));
	for (i = 0; i < n; i++) {
		if (out)
			out[i] = strdup(ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	for (i = 0; out && i < n; i++) {
		if (!out[i]) {
			npu_npy_free_names(out, n);
			return -1;
		}
	}
	if (!out)
		return -1;
	*names = out;
	return n;
}

void npu_npy_free_names(char **names, int count)
{
	int i;

	for (i = 0; names && i < count; i++)
		free(names[i]);
	free(names);
}
