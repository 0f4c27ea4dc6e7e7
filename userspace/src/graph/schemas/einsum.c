// SPDX-License-Identifier: MIT
/* The schemas of op_einsum.c's ops: Einsum. */
#include "graph/schemas/schema_common.h"
#include "graph/schemas/einsum.h"

#include <stdlib.h>
#include <string.h>

static int npu_ein_letter(char c)
{
	if (c >= 'a' && c <= 'z')
		return c - 'a';
	if (c >= 'A' && c <= 'Z')
		return 26 + c - 'A';
	return -1;
}

/*
 * Parses one term of 'len' chars into labels; 'rank' is the operand's
 * rank (or -1 for the output, where the ellipsis takes ell_rank dims).
 */
static npu_status npu_ein_term(const struct npu_node *node, const char *s,
			       size_t len, int rank, int ell_rank, int *labels,
			       int *n_out, int *ell_out, struct npu_error *err)
{
	int letters = 0, n = 0, ell = -1, k;
	size_t i;

	for (i = 0; i < len; i++)
		if (npu_ein_letter(s[i]) >= 0)
			letters++;
	for (i = 0; i < len; i++) {
		if (s[i] == '.') {
			if (ell >= 0 || i + 2 >= len || s[i + 1] != '.' ||
			    s[i + 2] != '.')
				return npu_op_invalid(err, node,
						      "attribute 'equation': malformed ellipsis");
			ell = rank < 0 ? ell_rank : rank - letters;
			if (ell < 0)
				return npu_op_invalid(err, node,
						      "attribute 'equation': term has more labels than its input's rank %d",
						      rank);
			/* An ellipsis of r dims takes the last r ellipsis labels. */
			for (k = 0; k < ell; k++) {
				if (n >= NPU_MAX_RANK)
					goto too_many;
				labels[n++] = EIN_MAX_LABELS + ell_rank - ell + k;
			}
			i += 2;
			continue;
		}
		if (npu_ein_letter(s[i]) < 0)
			return npu_op_invalid(err, node,
					      "attribute 'equation': unexpected character '%c'",
					      s[i]);
		if (n >= NPU_MAX_RANK)
			goto too_many;
		labels[n++] = npu_ein_letter(s[i]);
	}
	*n_out = n;
	*ell_out = ell;
	return NPU_OK;
too_many:
	return npu_op_unsupported(err, node,
				  "attribute 'equation': more than %d dims in a term",
				  NPU_MAX_RANK);
}

/* Parses the equation against the inputs' shapes. */
npu_status npu_ein_parse(const struct npu_node *node,
			 const struct npu_shape *const *shapes, int n_in,
			 struct npu_einsum *e, struct npu_error *err)
{
	const char *eq_raw = npu_node_attr_string_or(node, "equation", NULL);
	char eq[256];
	const char *arrow, *p, *end;
	int i, d, pass, count[EIN_LABELS] = { 0 };
	size_t len = 0;
	npu_status st;

	if (!eq_raw)
		return npu_op_invalid(err, node, "attribute 'equation' is missing");
	for (p = eq_raw; *p; p++)
		if (*p != ' ') {
			if (len + 1 >= sizeof(eq))
				return npu_op_unsupported(err, node,
							  "attribute 'equation' is too long");
			eq[len++] = *p;
		}
	eq[len] = '\0';
	memset(e, 0, sizeof(*e));
	if (n_in > EIN_MAX_IN)
		return npu_op_unsupported(err, node, "more than %d inputs",
					  EIN_MAX_IN);
	e->n_in = n_in;
	arrow = strstr(eq, "->");
	end = arrow ? arrow : eq + len;
	for (p = eq, i = 1; p < end; p++)
		i += *p == ',';
	if (i != n_in)
		return npu_op_invalid(err, node,
				      "attribute 'equation' has %d terms for %d inputs",
				      i, n_in);
	/*
	 * Twice: first to find the ellipsis rank (the most dims any input's
	 * ellipsis covers), then with it so that ellipsis labels line up.
	 */
	for (pass = 0; pass < 2; pass++) {
		p = eq;
		for (i = 0; i < n_in; i++) {
			const char *comma = memchr(p, ',', (size_t)(end - p));
			const char *te = comma ? comma : end;
			int ell;

			st = npu_ein_term(node, p, (size_t)(te - p),
					  shapes[i]->rank, pass ? e->ell_rank : 0,
					  e->label[i], &e->rank[i], &ell, err);
			if (st)
				return st;
			if (!pass && ell > e->ell_rank)
				e->ell_rank = ell;
			if (pass && e->rank[i] != shapes[i]->rank)
				return npu_op_invalid(err, node,
						      "attribute 'equation': term %d has %d labels, input %d has rank %d",
						      i, e->rank[i], i,
						      shapes[i]->rank);
			p = te + 1;
		}
	}
	for (d = 0; d < EIN_LABELS; d++)
		e->size[d] = -2;	/* not seen */
	for (i = 0; i < n_in; i++)
		for (d = 0; d < e->rank[i]; d++) {
			int l = e->label[i][d];
			int64_t s = shapes[i]->dims[d];
			bool ell_label = l >= EIN_MAX_LABELS;

			count[l]++;
			e->used[l] = true;
			if (e->size[l] == -2 || e->size[l] == -1 ||
			    (ell_label && e->size[l] == 1))
				e->size[l] = s;
			else if (s >= 0 && s != e->size[l] &&
				 !(ell_label && s == 1))
				return npu_op_invalid(err, node,
						      "label '%c' is %lld in one input and %lld in another",
						      l < 26 ? 'a' + l : l < 52 ? 'A' + l - 26 : '.',
						      (long long)e->size[l],
						      (long long)s);
		}
	if (arrow) {
		int ell;

		st = npu_ein_term(node, arrow + 2, strlen(arrow + 2), -1,
				  e->ell_rank, e->out_label, &e->out_rank, &ell,
				  err);
		if (st)
			return st;
		for (d = 0; d < e->out_rank; d++) {
			int k;

			if (!e->used[e->out_label[d]])
				return npu_op_invalid(err, node,
						      "attribute 'equation': output label %d is in no input",
						      d);
			for (k = 0; k < d; k++)
				if (e->out_label[k] == e->out_label[d])
					return npu_op_invalid(err, node,
							      "attribute 'equation': output label %d repeats",
							      d);
		}
	} else {
		/* Implicit: the ellipsis, then labels seen once, sorted. */
		e->out_rank = 0;
		for (d = 0; d < e->ell_rank; d++)
			e->out_label[e->out_rank++] = EIN_MAX_LABELS + d;
		for (d = 0; d < EIN_MAX_LABELS; d++)
			if (count[d] == 1) {
				if (e->out_rank >= NPU_MAX_RANK)
					return npu_op_unsupported(err, node,
								  "output rank > %d",
								  NPU_MAX_RANK);
				e->out_label[e->out_rank++] = d;
			}
	}
	return NPU_OK;
}

static npu_status einsum_infer(struct npu_infer_ctx *ctx)
{
	static const enum npu_dtype types[] = {
		NPU_DTYPE_FLOAT, NPU_DTYPE_DOUBLE, NPU_DTYPE_UNDEFINED,
	};
	const struct npu_node *node = ctx->node;
	const struct npu_shape *shapes[EIN_MAX_IN];
	struct npu_einsum e;
	size_t i;
	int d;
	npu_status st;

	st = npu_op_check_arity(ctx, 1, EIN_MAX_IN);
	if (!st)
		st = npu_op_check_attrs(ctx, NPU_OP_ATTRS("equation"));
	if (st)
		return st;
	for (i = 0; i < node->num_inputs; i++) {
		if (!node->inputs[i])
			return npu_op_invalid(ctx->err, node,
					      "input %zu is missing", i);
		st = npu_op_check_dtype(ctx, i, types);
		if (st)
			return st;
		if (node->inputs[i]->dtype != node->inputs[0]->dtype)
			return npu_op_invalid(ctx->err, node,
					      "input %zu has type %s, input 0 %s", i,
					      npu_dtype_name(node->inputs[i]->dtype),
					      npu_dtype_name(node->inputs[0]->dtype));
		shapes[i] = &node->inputs[i]->shape;
	}
	st = npu_ein_parse(node, shapes, (int)node->num_inputs, &e, ctx->err);
	if (st)
		return st;
	ctx->out_dtypes[0] = node->inputs[0]->dtype;
	ctx->out_shapes[0].rank = e.out_rank;
	for (d = 0; d < e.out_rank; d++)
		ctx->out_shapes[0].dims[d] = e.size[e.out_label[d]];
	return NPU_OK;
}

NPU_OP_SCHEMA_DEF(einsum) = {
	.op_type = "Einsum", .domain = "",
	.since_version = 12, .max_version = 21,
	.infer = einsum_infer,
};
