/* SPDX-License-Identifier: MIT */
/*
 * op_list.h - every CPU op, one line each: NPU_CPU_OP(sym) names the
 * definition npu_cpu_op_<sym> in its family's op_<family>.c. Included by
 * op_registry.c to build the table; keep it grouped by family.
 */

/* op_elementwise.c */
NPU_CPU_OP(add)
NPU_CPU_OP(sub)
NPU_CPU_OP(mul)
NPU_CPU_OP(div)
NPU_CPU_OP(pow)
NPU_CPU_OP(max)
NPU_CPU_OP(min)
NPU_CPU_OP(sum)
NPU_CPU_OP(mean)
NPU_CPU_OP(equal)
NPU_CPU_OP(greater)
NPU_CPU_OP(less)
NPU_CPU_OP(greater_or_equal)
NPU_CPU_OP(less_or_equal)
NPU_CPU_OP(and)
NPU_CPU_OP(or)
NPU_CPU_OP(xor)
NPU_CPU_OP(not)
NPU_CPU_OP(where)
NPU_CPU_OP(prelu)
NPU_CPU_OP(sqrt)
NPU_CPU_OP(exp)
NPU_CPU_OP(log)
NPU_CPU_OP(relu)
NPU_CPU_OP(leaky_relu)
NPU_CPU_OP(thresholded_relu)
NPU_CPU_OP(elu)
NPU_CPU_OP(selu)
NPU_CPU_OP(clip)
NPU_CPU_OP(sigmoid)
NPU_CPU_OP(tanh)
NPU_CPU_OP(hard_sigmoid)
NPU_CPU_OP(hard_swish)
NPU_CPU_OP(erf)
NPU_CPU_OP(neg)
NPU_CPU_OP(abs)
NPU_CPU_OP(reciprocal)
NPU_CPU_OP(floor)
NPU_CPU_OP(ceil)
NPU_CPU_OP(round)
NPU_CPU_OP(sign)
NPU_CPU_OP(sin)
NPU_CPU_OP(cos)
NPU_CPU_OP(softplus)
NPU_CPU_OP(softsign)
NPU_CPU_OP(tan)
NPU_CPU_OP(asin)
NPU_CPU_OP(acos)
NPU_CPU_OP(atan)
NPU_CPU_OP(sinh)
NPU_CPU_OP(cosh)
NPU_CPU_OP(asinh)
NPU_CPU_OP(acosh)
NPU_CPU_OP(atanh)
NPU_CPU_OP(celu)
NPU_CPU_OP(shrink)
NPU_CPU_OP(is_nan)
NPU_CPU_OP(is_inf)
NPU_CPU_OP(cast)
NPU_CPU_OP(identity)
NPU_CPU_OP(mod)
NPU_CPU_OP(bit_shift)
NPU_CPU_OP(cast_like)

/* op_softmax.c */
NPU_CPU_OP(softmax)
NPU_CPU_OP(log_softmax)

/* op_norm.c */
NPU_CPU_OP(batch_normalization)
NPU_CPU_OP(instance_normalization)
NPU_CPU_OP(layer_normalization)
NPU_CPU_OP(lrn)
NPU_CPU_OP(mean_variance_normalization)

/* op_reduce.c */
NPU_CPU_OP(reduce_sum)
NPU_CPU_OP(reduce_mean)
NPU_CPU_OP(reduce_max)
NPU_CPU_OP(reduce_min)
NPU_CPU_OP(reduce_prod)
NPU_CPU_OP(reduce_l1)
NPU_CPU_OP(reduce_l2)
NPU_CPU_OP(reduce_sum_square)
NPU_CPU_OP(reduce_log_sum)
NPU_CPU_OP(reduce_log_sum_exp)

/* op_matmul.c */
NPU_CPU_OP(matmul)
NPU_CPU_OP(gemm)
NPU_CPU_OP(det)

/* op_conv.c */
NPU_CPU_OP(conv)
NPU_CPU_OP(fused_conv)	/* domain ai.npu.cpu: made by the CPU fusion pass */
NPU_CPU_OP(fused_conv_transpose)	/* ai.npu.cpu, as FusedConv */
NPU_CPU_OP(conv_transpose)

/* op_nchwc.c: ai.npu.cpu, made by the layout pass (pass_cpu_nchwc.c) */
NPU_CPU_OP(nchwc_reorder_input)
NPU_CPU_OP(nchwc_reorder_output)
NPU_CPU_OP(nchwc_conv)
NPU_CPU_OP(nchwc_global_average_pool)
NPU_CPU_OP(nchwc_upsample)

/* op_pool.c */
NPU_CPU_OP(max_pool)
NPU_CPU_OP(average_pool)
NPU_CPU_OP(global_average_pool)
NPU_CPU_OP(global_max_pool)
NPU_CPU_OP(max_unpool)

/* op_shape.c */
NPU_CPU_OP(reshape)
NPU_CPU_OP(flatten)
NPU_CPU_OP(transpose)
NPU_CPU_OP(concat)
NPU_CPU_OP(split)
NPU_CPU_OP(slice)
NPU_CPU_OP(squeeze)
NPU_CPU_OP(unsqueeze)
NPU_CPU_OP(gather)
NPU_CPU_OP(pad)
NPU_CPU_OP(shape)
NPU_CPU_OP(size)
NPU_CPU_OP(constant)
NPU_CPU_OP(constant_of_shape)
NPU_CPU_OP(expand)
NPU_CPU_OP(dropout)
NPU_CPU_OP(tile)

/* op_resize.c */
NPU_CPU_OP(resize)
NPU_CPU_OP(upsample)

/* op_quant.c */
NPU_CPU_OP(quantize_linear)
NPU_CPU_OP(dequantize_linear)
NPU_CPU_OP(qlinear_matmul)
NPU_CPU_OP(qlinear_conv)
NPU_CPU_OP(conv_integer)
NPU_CPU_OP(matmul_integer)
NPU_CPU_OP(dynamic_quantize_linear)

/* op_loss.c */
NPU_CPU_OP(negative_log_likelihood_loss)
NPU_CPU_OP(softmax_cross_entropy_loss)

/* op_index.c */
NPU_CPU_OP(gather_elements)
NPU_CPU_OP(scatter_elements)
NPU_CPU_OP(scatter)
NPU_CPU_OP(gather_nd)
NPU_CPU_OP(scatter_nd)
NPU_CPU_OP(compress)
NPU_CPU_OP(non_zero)

/* op_layout.c */
NPU_CPU_OP(trilu)
NPU_CPU_OP(depth_to_space)
NPU_CPU_OP(space_to_depth)
NPU_CPU_OP(reverse_sequence)

/* op_generate.c */
NPU_CPU_OP(range)
NPU_CPU_OP(eye_like)
NPU_CPU_OP(one_hot)
NPU_CPU_OP(hann_window)
NPU_CPU_OP(hamming_window)
NPU_CPU_OP(blackman_window)

/* op_sort.c */
NPU_CPU_OP(arg_max)
NPU_CPU_OP(arg_min)
NPU_CPU_OP(hardmax)
NPU_CPU_OP(top_k)
NPU_CPU_OP(unique)

/* op_cumsum.c */
NPU_CPU_OP(cum_sum)

/* op_detect.c */
NPU_CPU_OP(non_max_suppression)
NPU_CPU_OP(roi_align)

/* op_grid_sample.c */
NPU_CPU_OP(grid_sample)

/* op_einsum.c */
NPU_CPU_OP(einsum)

/* op_rnn.c */
NPU_CPU_OP(rnn)
NPU_CPU_OP(gru)
NPU_CPU_OP(lstm)

/* op_text.c */
NPU_CPU_OP(tfidf_vectorizer)

/* op_string.c (string tensors, graph/npu_str.h) */
NPU_CPU_OP(string_normalizer)

/* op_random.c (numpy's MT19937 stream) */
NPU_CPU_OP(random_uniform)
NPU_CPU_OP(random_uniform_like)
NPU_CPU_OP(random_normal)
NPU_CPU_OP(random_normal_like)
NPU_CPU_OP(bernoulli)

/* op_optimizer.c (domain ai.onnx.preview.training) */
NPU_CPU_OP(adagrad)
NPU_CPU_OP(momentum)
NPU_CPU_OP(adam)

/* op_gradient.c (made by the importer's Gradient lowering) */
NPU_CPU_OP(sum_to_shape)

/* op_dft.c */
NPU_CPU_OP(dft)
NPU_CPU_OP(stft)
NPU_CPU_OP(mel_weight_matrix)

/* op_control.c (subgraphs run by the runtime) */
NPU_CPU_OP(if)
NPU_CPU_OP(loop)
NPU_CPU_OP(scan)

/* op_sequence.c (sequences and optionals, graph/npu_seq.h) */
NPU_CPU_OP(sequence_empty)
NPU_CPU_OP(sequence_construct)
NPU_CPU_OP(sequence_insert)
NPU_CPU_OP(sequence_erase)
NPU_CPU_OP(sequence_at)
NPU_CPU_OP(sequence_length)
NPU_CPU_OP(split_to_sequence)
NPU_CPU_OP(concat_from_sequence)
NPU_CPU_OP(sequence_map)
NPU_CPU_OP(optional)
NPU_CPU_OP(optional_has_element)
NPU_CPU_OP(optional_get_element)
