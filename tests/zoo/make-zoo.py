#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Generate the model zoo: varied architectures with random weights.

    tests/zoo/make-zoo.py OUTDIR [--only NAME[,NAME...]] [--list]

Writes OUTDIR/<name>.onnx for each model and OUTDIR/manifest.tsv, one line
per model: name, input name, input dims ("N" is the dynamic batch), kind of
input ("image", "audio", "seq": all float32, filled by bench/ort_compare.js
gen). Every model has one float input whose first dimension is the batch
"N", so the same file runs at batch 1 and 8, except the two *-edges
recurrent models (a fixed batch of 3: their sequence_lens is a constant),
which run once.

Deterministic: each model's weights come from numpy's PCG64 seeded with a
fixed number per model, and onnx serializes the same graph to the same
bytes. Needs Debian's python3-onnx and python3-numpy (tools/setup-deps).
Opset 17 (the newest that bookworm's onnx 1.12 knows); Gelu is the Erf
pattern BERT exporters write.

Weights are He-scaled and BatchNormalization statistics are random but
sane, so activations neither explode nor vanish through 50 layers: the
cosine against onnxruntime then measures arithmetic, not noise around 0.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class G:
    """A graph under construction: nodes, initializers, unique names."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def uid(self, p):
        self.n += 1
        return "%s_%d" % (p, self.n)

    def const(self, arr, p="w"):
        name = self.uid(p)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def op(self, op, ins, p=None, nout=1, **attrs):
        outs = [self.uid(p or op.lower()) for _ in range(nout)]
        self.nodes.append(helper.make_node(op, ins, outs, name=self.uid(op), **attrs))
        return outs[0] if nout == 1 else outs

    def randn(self, *shape, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def uniform(self, lo, hi, *shape):
        return self.rng.uniform(lo, hi, shape).astype(np.float32)

    # -- layers ---------------------------------------------------------
    def conv(self, x, cin, cout, k, s=1, g=1, bias=True, pad=None, dil=1):
        ks = k if isinstance(k, (tuple, list)) else (k, k)
        fan = (cin // g) * int(np.prod(ks))
        w = self.const(self.randn(cout, cin // g, *ks, scale=np.sqrt(2.0 / fan)))
        if pad is None:
            pad = [(kk - 1) * dil // 2 for kk in ks] * 2
        ins = [x, w]
        if bias:
            ins.append(self.const(self.randn(cout, scale=0.05), "b"))
        return self.op("Conv", ins, kernel_shape=list(ks), strides=[s] * len(ks), group=g,
                       pads=pad, dilations=[dil] * len(ks))

    def conv1d(self, x, cin, cout, k, s=1, g=1, bias=True):
        w = self.const(self.randn(cout, cin // g, k, scale=np.sqrt(2.0 / (cin // g * k))))
        ins = [x, w] + ([self.const(self.randn(cout, scale=0.05), "b")] if bias else [])
        return self.op("Conv", ins, kernel_shape=[k], strides=[s], group=g,
                       pads=[(k - 1) // 2] * 2)

    def bn(self, x, c):
        return self.op("BatchNormalization", [
            x, self.const(self.uniform(0.5, 1.5, c), "gamma"),
            self.const(self.randn(c, scale=0.1), "beta"),
            self.const(self.randn(c, scale=0.1), "mean"),
            self.const(self.uniform(0.5, 1.5, c), "var")], epsilon=1e-5)

    def relu(self, x):
        return self.op("Relu", [x])

    def relu6(self, x):
        return self.op("Clip", [x, self.const(np.float32(0), "lo"), self.const(np.float32(6), "hi")])

    def dense(self, x, cin, cout):
        return self.op("Gemm", [x, self.const(self.randn(cout, cin, scale=np.sqrt(1.0 / cin))),
                                self.const(self.randn(cout, scale=0.05), "b")], transB=1)

    def head(self, x, c, classes):
        x = self.op("GlobalAveragePool", [x])
        x = self.op("Flatten", [x], axis=1)
        return self.dense(x, c, classes)

    def linear(self, x, cin, cout):
        """MatMul + Add (a dense layer on the last axis, as exporters write it)."""
        y = self.op("MatMul", [x, self.const(self.randn(cin, cout, scale=np.sqrt(1.0 / cin)))])
        return self.op("Add", [y, self.const(self.randn(cout, scale=0.05), "b")])

    def model(self, in_name, in_dims, out):
        def vi(name, dims):
            return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
        self.nodes.append(helper.make_node("Identity", [out], ["y"], name=self.uid("Identity")))
        graph = helper.make_graph(self.nodes, self.name, [vi(in_name, in_dims)], [vi("y", None)],
                                  self.inits)
        m = helper.make_model(graph, producer_name="npu-stack tests/zoo",
                              opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        # The output's shape as ONNX infers it (symbolic batch "N" kept).
        inferred = onnx.shape_inference.infer_shapes(m)
        shape = [v for v in inferred.graph.value_info if v.name == out][0].type.tensor_type.shape
        m.graph.output[0].type.tensor_type.shape.CopyFrom(shape)
        onnx.checker.check_model(m, full_check=True)
        return m


def mobilenetv2(g, size=96, classes=100):
    x = g.relu6(g.bn(g.conv("x", 3, 32, 3, 2, bias=False), 32))
    c = 32
    for t, co, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                        (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            inp, h = x, c * t
            if t != 1:
                x = g.relu6(g.bn(g.conv(x, c, h, 1, bias=False), h))
            x = g.relu6(g.bn(g.conv(x, h, h, 3, s if i == 0 else 1, g=h, bias=False), h))
            x = g.bn(g.conv(x, h, co, 1, bias=False), co)
            if i > 0 or (s == 1 and c == co):
                x = g.op("Add", [inp, x])
            c = co
    x = g.relu6(g.bn(g.conv(x, c, 1280, 1, bias=False), 1280))
    return g.model("x", ["N", 3, size, size], g.head(x, 1280, classes))


def mobilenetv3_small(g, size=96, classes=100):
    def hswish(x):
        return g.op("HardSwish", [x])

    def se(x, c):
        r = max(8, c // 4)
        s = g.op("GlobalAveragePool", [x])
        s = g.relu(g.conv(s, c, r, 1))
        s = g.op("HardSigmoid", [g.conv(s, r, c, 1)], alpha=1.0 / 6, beta=0.5)
        return g.op("Mul", [x, s])
    x = hswish(g.conv("x", 3, 16, 3, 2))
    c = 16
    for k, h, co, use_se, act, s in [(3, 16, 16, 1, "RE", 2), (3, 72, 24, 0, "RE", 2),
                                     (3, 88, 24, 0, "RE", 1), (5, 96, 40, 1, "HS", 2),
                                     (5, 240, 40, 1, "HS", 1), (5, 240, 40, 1, "HS", 1),
                                     (5, 120, 48, 1, "HS", 1), (5, 144, 48, 1, "HS", 1),
                                     (5, 288, 96, 1, "HS", 2), (5, 576, 96, 1, "HS", 1),
                                     (5, 576, 96, 1, "HS", 1)]:
        a = g.relu if act == "RE" else hswish
        inp = x
        if h != c:
            x = a(g.conv(x, c, h, 1))
        x = a(g.conv(x, h, h, k, s, g=h))
        if use_se:
            x = se(x, h)
        x = g.conv(x, h, co, 1)
        if s == 1 and c == co:
            x = g.op("Add", [inp, x])
        c = co
    x = hswish(g.conv(x, c, 576, 1))
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = hswish(g.dense(x, 576, 1024))
    return g.model("x", ["N", 3, size, size], g.dense(x, 1024, classes))


def resnet(g, blocks, bottleneck, size, classes=100):
    x = g.relu(g.bn(g.conv("x", 3, 64, 7, 2, bias=False), 64))
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for stage, n in enumerate(blocks):
        w = 64 << stage
        co = w * 4 if bottleneck else w
        for i in range(n):
            s = 2 if i == 0 and stage > 0 else 1
            inp = x
            if bottleneck:
                y = g.relu(g.bn(g.conv(x, c, w, 1, bias=False), w))
                y = g.relu(g.bn(g.conv(y, w, w, 3, s, bias=False), w))
                y = g.bn(g.conv(y, w, co, 1, bias=False), co)
            else:
                y = g.relu(g.bn(g.conv(x, c, w, 3, s, bias=False), w))
                y = g.bn(g.conv(y, w, w, 3, bias=False), w)
            if s != 1 or c != co:
                inp = g.bn(g.conv(x, c, co, 1, s, bias=False), co)
            x = g.relu(g.op("Add", [y, inp]))
            c = co
    return g.model("x", ["N", 3, size, size], g.head(x, c, classes))


def efficientnet_lite0(g, size=96, classes=100):
    x = g.relu6(g.bn(g.conv("x", 3, 32, 3, 2, bias=False), 32))
    c = 32
    for t, k, s, co, n in [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                           (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]:
        for i in range(n):
            inp, h, st = x, c * t, s if i == 0 else 1
            if t != 1:
                x = g.relu6(g.bn(g.conv(x, c, h, 1, bias=False), h))
            x = g.relu6(g.bn(g.conv(x, h, h, k, st, g=h, bias=False), h))
            x = g.bn(g.conv(x, h, co, 1, bias=False), co)
            if st == 1 and c == co:
                x = g.op("Add", [inp, x])
            c = co
    x = g.relu6(g.bn(g.conv(x, c, 1280, 1, bias=False), 1280))
    return g.model("x", ["N", 3, size, size], g.head(x, 1280, classes))


def shufflenetv2(g, size=96, classes=100):
    def shuffle(x, c, hw):
        x = g.op("Reshape", [x, g.const(np.array([-1, 2, c // 2, hw, hw], np.int64), "shape")])
        x = g.op("Transpose", [x], perm=[0, 2, 1, 3, 4])
        return g.op("Reshape", [x, g.const(np.array([-1, c, hw, hw], np.int64), "shape")])

    def branch(x, cin, co, s):
        y = g.relu(g.bn(g.conv(x, cin, co, 1, bias=False), co))
        y = g.bn(g.conv(y, co, co, 3, s, g=co, bias=False), co)
        return g.relu(g.bn(g.conv(y, co, co, 1, bias=False), co))
    x = g.relu(g.bn(g.conv("x", 3, 24, 3, 2, bias=False), 24))
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c, hw = 24, size // 4
    for co, n in [(116, 4), (232, 8), (464, 4)]:
        for i in range(n):
            if i == 0:
                l = g.bn(g.conv(x, c, c, 3, 2, g=c, bias=False), c)
                l = g.relu(g.bn(g.conv(l, c, co // 2, 1, bias=False), co // 2))
                r = branch(x, c, co // 2, 2)
                hw = (hw + 1) // 2
            else:
                l, r = g.op("Split", [x, g.const(np.array([co // 2] * 2, np.int64), "split")],
                            nout=2, axis=1)
                r = branch(r, co // 2, co // 2, 1)
            x = shuffle(g.op("Concat", [l, r], axis=1), co, hw)
            c = co
    x = g.relu(g.bn(g.conv(x, c, 1024, 1, bias=False), 1024))
    return g.model("x", ["N", 3, size, size], g.head(x, 1024, classes))


def tf_nhwc_cnn(g, h=64, w=64, classes=12):
    """What tf2onnx writes for a Keras audio CNN: NHWC tensors, each Conv
    wrapped in Transposes, LeakyRelu and Maximum in NHWC, MaxPool too."""
    def conv_nhwc(x, cin, co, k, s=1):
        x = g.op("Transpose", [x], perm=[0, 3, 1, 2])
        x = g.conv(x, cin, co, k, s)
        return g.op("Transpose", [x], perm=[0, 2, 3, 1])

    def pool_nhwc(x):
        x = g.op("Transpose", [x], perm=[0, 3, 1, 2])
        x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        return g.op("Transpose", [x], perm=[0, 2, 3, 1])
    x, c = "x", 1
    for co in [16, 32, 64, 128]:
        a = g.op("LeakyRelu", [conv_nhwc(x, c, co, 3)], alpha=0.1)
        b = g.op("LeakyRelu", [conv_nhwc(x, c, co, 3)], alpha=0.3)
        x = g.op("Max", [a, b])
        x = g.op("LeakyRelu", [conv_nhwc(x, co, co, 3)], alpha=0.2)
        x = pool_nhwc(x)
        c = co
    x = g.op("ReduceMean", [x], axes=[1, 2], keepdims=0)
    x = g.op("Relu", [g.linear(x, c, 64)])
    x = g.op("Softmax", [g.linear(x, 64, classes)], axis=-1)
    return g.model("x", ["N", h, w, 1], x)


def audio_conv1d(g, samples=8000, classes=35):
    """M5-style raw-waveform classifier: 1-D convolutions, BN, MaxPool."""
    x = g.relu(g.bn(g.conv1d("x", 1, 64, 80, 4), 64))
    x = g.op("MaxPool", [x], kernel_shape=[4], strides=[4])
    c = 64
    for co in [64, 128, 256]:
        x = g.relu(g.bn(g.conv1d(x, c, co, 3), co))
        x = g.relu(g.bn(g.conv1d(x, co, co, 3, g=co), co))
        x = g.op("MaxPool", [x], kernel_shape=[4], strides=[4])
        c = co
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    return g.model("x", ["N", 1, samples], g.dense(x, c, classes))


def mel_filterbank(n_freq, n_mels, sr=16000):
    def hz2mel(f):
        return 2595 * np.log10(1 + f / 700)
    pts = 700 * (10 ** (np.linspace(0, hz2mel(sr / 2), n_mels + 2) / 2595) - 1)
    freqs = np.linspace(0, sr / 2, n_freq)
    fb = np.zeros((n_freq, n_mels), np.float32)
    for m in range(n_mels):
        lo, c, hi = pts[m], pts[m + 1], pts[m + 2]
        fb[:, m] = np.maximum(0, np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)))
    return fb


def dft_basis(n_fft, n_freq):
    n = np.arange(n_fft)
    win = 0.5 - 0.5 * np.cos(2 * np.pi * n / n_fft)
    k = np.arange(n_freq)[:, None]
    return ((win * np.cos(2 * np.pi * k * n / n_fft)).astype(np.float32),
            (-win * np.sin(2 * np.pi * k * n / n_fft)).astype(np.float32))


def melspec_head(g, x, n_mels, frames, classes):
    """log-mel (N x frames x mels) -> a small 2-D CNN -> classes."""
    x = g.op("Log", [g.op("Add", [x, g.const(np.float32(1e-6), "eps")])])
    x = g.op("Unsqueeze", [x, g.const(np.array([1], np.int64), "axes")])
    c = 1
    for co in [16, 32, 64]:
        x = g.relu(g.bn(g.conv(x, c, co, 3), co))
        x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        c = co
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    return g.dense(x, c, classes)


def melspec_conv(g, samples=8000, n_fft=256, hop=128, n_mels=40, classes=10):
    """STFT as a strided Conv1d with windowed cos / sin kernels (the
    torchaudio-free export of a melspectrogram), power, mel MatMul, log."""
    nf = n_fft // 2 + 1
    cos, sin = dft_basis(n_fft, nf)
    w = g.const(np.concatenate([cos, sin])[:, None, :])
    x = g.op("Conv", ["x", w], kernel_shape=[n_fft], strides=[hop])	# N x 2nf x T
    x = g.op("Mul", [x, x])
    re, im = g.op("Split", [x, g.const(np.array([nf, nf], np.int64), "split")], nout=2, axis=1)
    p = g.op("Transpose", [g.op("Add", [re, im])], perm=[0, 2, 1])	# N x T x nf
    mel = g.op("MatMul", [p, g.const(mel_filterbank(nf, n_mels))])
    frames = (samples - n_fft) // hop + 1
    return g.model("x", ["N", 1, samples], melspec_head(g, mel, n_mels, frames, classes))


def melspec_matmul(g, samples=8192, n_fft=256, n_mels=40, classes=10):
    """STFT as a MatMul: frames of the waveform (Reshape, hop = n_fft)
    times the windowed DFT matrix, magnitude by Pow and Sqrt, mel MatMul."""
    nf = n_fft // 2 + 1
    cos, sin = dft_basis(n_fft, nf)
    frames = samples // n_fft
    x = g.op("Reshape", ["x", g.const(np.array([-1, frames, n_fft], np.int64), "shape")])
    spec = g.op("MatMul", [x, g.const(np.concatenate([cos, sin]).T.copy())])	# N x T x 2nf
    spec = g.op("Pow", [spec, g.const(np.float32(2), "two")])
    re, im = g.op("Split", [spec, g.const(np.array([nf, nf], np.int64), "split")], nout=2, axis=2)
    mag = g.op("Sqrt", [g.op("Add", [re, im])])
    mel = g.op("MatMul", [mag, g.const(mel_filterbank(nf, n_mels))])
    return g.model("x", ["N", samples], melspec_head(g, mel, n_mels, frames, classes))


def rnn(g, kind, steps=50, feat=40, hidden=128, classes=30):
    """Two recurrent layers (the second bidirectional) over N x T x F
    features, a linear layer per step: N x T x classes."""
    x = g.op("Transpose", ["x"], perm=[1, 0, 2])	# T x N x F
    gates = 4 if kind == "LSTM" else 3
    cin = feat
    for dirs in [1, 2]:
        s = np.sqrt(1.0 / hidden)
        d = "bidirectional" if dirs == 2 else "forward"
        attrs = {"hidden_size": hidden, "direction": d}
        if kind == "GRU":
            attrs["linear_before_reset"] = 1
        y = g.op(kind, [x, g.const(g.uniform(-s, s, dirs, gates * hidden, cin)),
                        g.const(g.uniform(-s, s, dirs, gates * hidden, hidden)),
                        g.const(g.uniform(-s, s, dirs, 2 * gates * hidden))], nout=1, **attrs)
        y = g.op("Transpose", [y], perm=[0, 2, 1, 3])	# T x N x D x H
        x = g.op("Reshape", [y, g.const(np.array([0, 0, dirs * hidden], np.int64), "shape")])
        cin = dirs * hidden
    x = g.op("Transpose", [x], perm=[1, 0, 2])	# N x T x 2H
    return g.model("x", ["N", steps, feat], g.linear(x, cin, classes))


def rnn_edges(g, kind, steps=7, batch=3, feat=8, hidden=16):
    """One bidirectional layer with what the zoo's other RNNs leave out:
    sequence_lens (7, 3, 1: rows stop early, the reverse direction starts
    at each row's own end), initial states, LSTM peepholes, GRU without
    linear_before_reset. A fixed batch of 3 (sequence_lens is a constant)."""
    gates, s = (4, 0.3) if kind == "LSTM" else (3, 0.3)
    ins = ["x", g.const(g.uniform(-s, s, 2, gates * hidden, feat)),
           g.const(g.uniform(-s, s, 2, gates * hidden, hidden)),
           g.const(g.uniform(-s, s, 2, 2 * gates * hidden)),
           g.const(np.array([7, 3, 1], np.int32), "seq_lens"),
           g.const(g.uniform(-1, 1, 2, batch, hidden), "h0")]
    attrs = {"hidden_size": hidden, "direction": "bidirectional"}
    if kind == "LSTM":
        ins += [g.const(g.uniform(-1, 1, 2, batch, hidden), "c0"),
                g.const(g.uniform(-s, s, 2, 3 * hidden), "peep")]
    y, yh = g.op(kind, ins, nout=2, **attrs)
    y = g.op("Reshape", [y, g.const(np.array([steps, -1], np.int64), "shape")])
    yh = g.op("Reshape", [yh, g.const(np.array([1, -1], np.int64), "shape")])
    x = g.op("Concat", [y, yh], axis=0)
    return g.model("x", [steps, batch, feat], x)


def bert(g, seq=64, d=128, heads=4, layers=2, ff=512):
    """A BERT-style encoder on N x S x D embeddings: LayerNormalization,
    MatMul + Add projections, multi-head attention (Reshape, Transpose,
    MatMul, scale, Softmax), Gelu as x * 0.5 * (1 + erf(x / sqrt 2))."""
    dh = d // heads

    def ln(x):
        return g.op("LayerNormalization", [x, g.const(g.uniform(0.8, 1.2, d), "gamma"),
                                           g.const(g.randn(d, scale=0.05), "beta")],
                    axis=-1, epsilon=1e-12)

    def split_heads(x):
        x = g.op("Reshape", [x, g.const(np.array([0, 0, heads, dh], np.int64), "shape")])
        return g.op("Transpose", [x], perm=[0, 2, 1, 3])
    x = ln("x")
    for _ in range(layers):
        q, k, v = (split_heads(g.linear(x, d, d)) for _ in range(3))
        a = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        a = g.op("Softmax", [g.op("Div", [a, g.const(np.float32(np.sqrt(dh)), "scale")])], axis=-1)
        o = g.op("Transpose", [g.op("MatMul", [a, v])], perm=[0, 2, 1, 3])
        o = g.op("Reshape", [o, g.const(np.array([0, 0, d], np.int64), "shape")])
        x = ln(g.op("Add", [x, g.linear(o, d, d)]))
        h = g.linear(x, d, ff)
        e = g.op("Erf", [g.op("Div", [h, g.const(np.float32(np.sqrt(2)), "sqrt2")])])
        e = g.op("Add", [e, g.const(np.float32(1), "one")])
        h = g.op("Mul", [g.op("Mul", [h, e]), g.const(np.float32(0.5), "half")])
        x = ln(g.op("Add", [x, g.linear(h, ff, d)]))
    return g.model("x", ["N", seq, d], x)


# name: (builder, seed, kind of input)
ZOO = {
    "mobilenetv2": (mobilenetv2, 101, "image"),
    "mobilenetv3-small": (mobilenetv3_small, 102, "image"),
    "resnet18": (lambda g: resnet(g, [2, 2, 2, 2], False, 96), 103, "image"),
    "resnet50": (lambda g: resnet(g, [3, 4, 6, 3], True, 64), 104, "image"),
    "efficientnet-lite0": (efficientnet_lite0, 105, "image"),
    "shufflenetv2": (shufflenetv2, 106, "image"),
    "tf-nhwc-cnn": (tf_nhwc_cnn, 107, "image"),
    "audio-conv1d": (audio_conv1d, 108, "audio"),
    "melspec-conv": (melspec_conv, 109, "audio"),
    "melspec-matmul": (melspec_matmul, 110, "audio"),
    "lstm": (lambda g: rnn(g, "LSTM"), 111, "seq"),
    "gru": (lambda g: rnn(g, "GRU"), 112, "seq"),
    "bert": (bert, 113, "seq"),
    "lstm-edges": (lambda g: rnn_edges(g, "LSTM"), 114, "seq"),
    "gru-edges": (lambda g: rnn_edges(g, "GRU"), 115, "seq"),
}


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    if argv[1] == "--list":
        print("\n".join(ZOO))
        return 0
    out = argv[1]
    only = list(ZOO)
    if len(argv) > 3 and argv[2] == "--only":
        only = argv[3].split(",")
        bad = [n for n in only if n not in ZOO]
        if bad:
            print("make-zoo: unknown model %s (--list names them)" % ", ".join(bad), file=sys.stderr)
            return 2
    os.makedirs(out, exist_ok=True)
    lines = []
    for name in only:
        build, seed, kind = ZOO[name]
        m = build(G(name, seed))
        onnx.save(m, os.path.join(out, name + ".onnx"))
        dims = [d.dim_param or str(d.dim_value) for d in m.graph.input[0].type.tensor_type.shape.dim]
        lines.append("\t".join([name, m.graph.input[0].name, "x".join(dims), kind]))
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
