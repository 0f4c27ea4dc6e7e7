/* SPDX-License-Identifier: MIT */
/*
 * schema_list.h - every built-in op schema, one line each: NPU_OP_SCHEMA(sym)
 * names the schema npu_schema_<sym> in its family's graph/schemas/<family>.c.
 * Included by npu_op_schema.c to build the table; keep it grouped by family.
 */

/* softmax.c */
NPU_OP_SCHEMA(softmax)
NPU_OP_SCHEMA(log_softmax)

/* cumsum.c */
NPU_OP_SCHEMA(cum_sum)

/* detect.c */
NPU_OP_SCHEMA(non_max_suppression)
NPU_OP_SCHEMA(roi_align)

/* dft.c */
NPU_OP_SCHEMA(dft)
NPU_OP_SCHEMA(stft)
NPU_OP_SCHEMA(mel_weight_matrix)

/* layout.c */
NPU_OP_SCHEMA(trilu)
NPU_OP_SCHEMA(depth_to_space)
NPU_OP_SCHEMA(space_to_depth)
NPU_OP_SCHEMA(reverse_sequence)

/* loss.c */
NPU_OP_SCHEMA(negative_log_likelihood_loss)
NPU_OP_SCHEMA(softmax_cross_entropy_loss)

/* matmul.c */
NPU_OP_SCHEMA(matmul)
NPU_OP_SCHEMA(gemm)
NPU_OP_SCHEMA(det)

/* norm.c */
NPU_OP_SCHEMA(batch_normalization)
NPU_OP_SCHEMA(instance_normalization)
NPU_OP_SCHEMA(layer_normalization)
NPU_OP_SCHEMA(lrn)
NPU_OP_SCHEMA(mean_variance_normalization)

/* pool.c */
NPU_OP_SCHEMA(max_pool)
NPU_OP_SCHEMA(average_pool)
NPU_OP_SCHEMA(global_average_pool)
NPU_OP_SCHEMA(global_max_pool)
NPU_OP_SCHEMA(max_unpool)

/* quant.c */
NPU_OP_SCHEMA(quantize_linear)
NPU_OP_SCHEMA(dequantize_linear)
NPU_OP_SCHEMA(qlinear_matmul)
NPU_OP_SCHEMA(qlinear_conv)
NPU_OP_SCHEMA(conv_integer)
NPU_OP_SCHEMA(matmul_integer)
NPU_OP_SCHEMA(dynamic_quantize_linear)

/* shape.c */
NPU_OP_SCHEMA(flatten)
NPU_OP_SCHEMA(squeeze)
NPU_OP_SCHEMA(unsqueeze)
NPU_OP_SCHEMA(pad)
NPU_OP_SCHEMA(shape)
NPU_OP_SCHEMA(size)
NPU_OP_SCHEMA(constant)
NPU_OP_SCHEMA(constant_of_shape)
NPU_OP_SCHEMA(dropout)
NPU_OP_SCHEMA(reshape)
NPU_OP_SCHEMA(transpose)
NPU_OP_SCHEMA(concat)
NPU_OP_SCHEMA(split)
NPU_OP_SCHEMA(slice)
NPU_OP_SCHEMA(gather)
NPU_OP_SCHEMA(expand)
NPU_OP_SCHEMA(tile)

/* control.c */
NPU_OP_SCHEMA(if)
NPU_OP_SCHEMA(loop)
NPU_OP_SCHEMA(scan)

/* index.c */
NPU_OP_SCHEMA(gather_elements)
NPU_OP_SCHEMA(scatter_elements)
NPU_OP_SCHEMA(scatter)
NPU_OP_SCHEMA(gather_nd)
NPU_OP_SCHEMA(scatter_nd)
NPU_OP_SCHEMA(compress)
NPU_OP_SCHEMA(non_zero)

/* text.c */
NPU_OP_SCHEMA(tfidf_vectorizer)

/* grid_sample.c */
NPU_OP_SCHEMA(grid_sample)

/* einsum.c */
NPU_OP_SCHEMA(einsum)

/* generate.c */
NPU_OP_SCHEMA(range)
NPU_OP_SCHEMA(eye_like)
NPU_OP_SCHEMA(one_hot)
NPU_OP_SCHEMA(hann_window)
NPU_OP_SCHEMA(hamming_window)
NPU_OP_SCHEMA(blackman_window)

/* reduce.c */
NPU_OP_SCHEMA(reduce_sum)
NPU_OP_SCHEMA(reduce_mean)
NPU_OP_SCHEMA(reduce_max)
NPU_OP_SCHEMA(reduce_min)
NPU_OP_SCHEMA(reduce_prod)
NPU_OP_SCHEMA(reduce_l1)
NPU_OP_SCHEMA(reduce_l2)
NPU_OP_SCHEMA(reduce_sum_square)
NPU_OP_SCHEMA(reduce_log_sum)
NPU_OP_SCHEMA(reduce_log_sum_exp)

/* optimizer.c */
NPU_OP_SCHEMA(adagrad)
NPU_OP_SCHEMA(momentum)
NPU_OP_SCHEMA(adam)

/* random.c */
NPU_OP_SCHEMA(random_uniform)
NPU_OP_SCHEMA(random_uniform_like)
NPU_OP_SCHEMA(random_normal)
NPU_OP_SCHEMA(random_normal_like)
NPU_OP_SCHEMA(bernoulli)

/* rnn.c */
NPU_OP_SCHEMA(rnn)
NPU_OP_SCHEMA(gru)
NPU_OP_SCHEMA(lstm)

/* string.c */
NPU_OP_SCHEMA(string_normalizer)

/* elementwise.c */
NPU_OP_SCHEMA(equal)
NPU_OP_SCHEMA(where)
NPU_OP_SCHEMA(clip)
NPU_OP_SCHEMA(identity)
NPU_OP_SCHEMA(cast)
NPU_OP_SCHEMA(cast_like)
NPU_OP_SCHEMA(sqrt)
NPU_OP_SCHEMA(exp)
NPU_OP_SCHEMA(log)
NPU_OP_SCHEMA(relu)
NPU_OP_SCHEMA(leaky_relu)
NPU_OP_SCHEMA(thresholded_relu)
NPU_OP_SCHEMA(sigmoid)
NPU_OP_SCHEMA(tanh)
NPU_OP_SCHEMA(hard_sigmoid)
NPU_OP_SCHEMA(hard_swish)
NPU_OP_SCHEMA(erf)
NPU_OP_SCHEMA(neg)
NPU_OP_SCHEMA(abs)
NPU_OP_SCHEMA(reciprocal)
NPU_OP_SCHEMA(floor)
NPU_OP_SCHEMA(ceil)
NPU_OP_SCHEMA(round)
NPU_OP_SCHEMA(sin)
NPU_OP_SCHEMA(cos)
NPU_OP_SCHEMA(softplus)
NPU_OP_SCHEMA(softsign)
NPU_OP_SCHEMA(elu)
NPU_OP_SCHEMA(selu)
NPU_OP_SCHEMA(sign)
NPU_OP_SCHEMA(not)
NPU_OP_SCHEMA(tan)
NPU_OP_SCHEMA(asin)
NPU_OP_SCHEMA(acos)
NPU_OP_SCHEMA(atan)
NPU_OP_SCHEMA(sinh)
NPU_OP_SCHEMA(cosh)
NPU_OP_SCHEMA(asinh)
NPU_OP_SCHEMA(acosh)
NPU_OP_SCHEMA(atanh)
NPU_OP_SCHEMA(celu)
NPU_OP_SCHEMA(shrink)
NPU_OP_SCHEMA(is_nan)
NPU_OP_SCHEMA(is_inf)
NPU_OP_SCHEMA(add)
NPU_OP_SCHEMA(sub)
NPU_OP_SCHEMA(mul)
NPU_OP_SCHEMA(div)
NPU_OP_SCHEMA(pow)
NPU_OP_SCHEMA(max)
NPU_OP_SCHEMA(min)
NPU_OP_SCHEMA(sum)
NPU_OP_SCHEMA(mean)
NPU_OP_SCHEMA(greater)
NPU_OP_SCHEMA(less)
NPU_OP_SCHEMA(greater_or_equal)
NPU_OP_SCHEMA(less_or_equal)
NPU_OP_SCHEMA(and)
NPU_OP_SCHEMA(or)
NPU_OP_SCHEMA(xor)
NPU_OP_SCHEMA(prelu)
NPU_OP_SCHEMA(mod)
NPU_OP_SCHEMA(bit_shift)

/* sort.c */
NPU_OP_SCHEMA(arg_max)
NPU_OP_SCHEMA(arg_min)
NPU_OP_SCHEMA(hardmax)
NPU_OP_SCHEMA(top_k)
NPU_OP_SCHEMA(unique)

/* sequence.c */
NPU_OP_SCHEMA(sequence_empty)
NPU_OP_SCHEMA(sequence_construct)
NPU_OP_SCHEMA(sequence_insert)
NPU_OP_SCHEMA(sequence_erase)
NPU_OP_SCHEMA(sequence_at)
NPU_OP_SCHEMA(sequence_length)
NPU_OP_SCHEMA(split_to_sequence)
NPU_OP_SCHEMA(concat_from_sequence)
NPU_OP_SCHEMA(sequence_map)
NPU_OP_SCHEMA(optional)
NPU_OP_SCHEMA(optional_has_element)
NPU_OP_SCHEMA(optional_get_element)

/* resize.c */
NPU_OP_SCHEMA(resize)
NPU_OP_SCHEMA(upsample)

/* conv.c */
NPU_OP_SCHEMA(conv)
NPU_OP_SCHEMA(conv_transpose)
