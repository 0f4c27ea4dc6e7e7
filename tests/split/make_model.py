#!/usr/bin/env python3
"""Write a small CNN for the split suite, without the onnx package (the
protobuf wire format by hand, as tests/serve/make_model.py):

  x [1,3,S,S] -> Conv(8) -> Relu (r1) -> Conv(C2) -> Relu (r2)
    -> GlobalAveragePool (gap) -> Flatten (flat) -> Gemm(4) -> y [1,4]

usage: make_model.py OUT.onnx [S [C2 [SEED [BATCH]]]]   (defaults 16 8 1 1;
BATCH may be a name, a dynamic batch dimension)
Weights are pseudo-random from SEED.

make_model.py --heavy OUT.onnx S L C [STEM]: a model with a small
intermediate and a heavy tail, for the benchmark (bench/split-bench):

  x [1,3,S,S] -> Conv(STEM=8, 4x4, stride 4) -> Relu (stem: STEM/48 of x)
    -> L x [Conv(C, 3x3, pad 1) -> Relu] -> GlobalAveragePool -> Flatten
    -> Gemm(4) -> y [1,4]"""
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "serve"))
from make_model import field_bytes, field_varint, value_info  # noqa: E402


def tensor(name, dims, values):
    t = b"".join(field_varint(1, d) for d in dims) + field_varint(2, 1)
    t += field_bytes(8, name) + field_bytes(9, struct.pack("<%df" % len(values), *values))
    return t


def node(op, name, ins, outs, attrs=b""):
    n = b"".join(field_bytes(1, i) for i in ins) + b"".join(field_bytes(2, o) for o in outs)
    return field_bytes(1, n + field_bytes(3, name) + field_bytes(4, op) + attrs)


def ints_attr(name, values):
    """An AttributeProto of type INTS (7): name = 1, ints = 8, type = 20."""
    a = field_bytes(1, name) + b"".join(field_varint(8, v) for v in values) + field_varint(20, 7)
    return field_bytes(5, a)


def heavy(out, s, layers, ch, stem):
    rng = random.Random(1)
    r = lambda n, k: [rng.uniform(-k, k) for _ in range(n)]  # noqa: E731
    inits = [tensor("ws", [stem, 3, 4, 4], r(stem * 48, 0.3)), tensor("bs", [stem], r(stem, 0.1))]
    g = node("Conv", "stem", ["x", "ws", "bs"], ["stem_c"],
             ints_attr("kernel_shape", [4, 4]) + ints_attr("strides", [4, 4]))
    g += node("Relu", "stem_relu", ["stem_c"], ["stem"])
    prev, pc = "stem", stem
    for k in range(layers):
        inits += [tensor("w%d" % k, [ch, pc, 3, 3], r(ch * pc * 9, 0.15)),
                  tensor("b%d" % k, [ch], r(ch, 0.05))]
        g += node("Conv", "conv%d" % k, [prev, "w%d" % k, "b%d" % k], ["c%d" % k],
                  ints_attr("kernel_shape", [3, 3]) + ints_attr("pads", [1, 1, 1, 1]))
        g += node("Relu", "relu%d" % k, ["c%d" % k], ["r%d" % k])
        prev, pc = "r%d" % k, ch
    inits += [tensor("wg", [pc, 4], r(pc * 4, 0.5)), tensor("bg", [4], r(4, 0.1))]
    g += node("GlobalAveragePool", "gap", [prev], ["gap"])
    g += node("Flatten", "flatten", ["gap"], ["flat"])
    g += node("Gemm", "gemm", ["flat", "wg", "bg"], ["y"])
    g += field_bytes(2, "split-heavy")
    g += b"".join(field_bytes(5, t) for t in inits)
    g += field_bytes(11, value_info("x", ["1", "3", str(s), str(s)], 1))
    g += field_bytes(12, value_info("y", ["1", "4"], 1))
    opset = field_bytes(1, "") + field_varint(2, 13)
    m = field_varint(1, 8) + field_bytes(2, "split-test") + field_bytes(7, g) + \
        field_bytes(8, opset)
    with open(out, "wb") as f:
        f.write(m)


def main():
    if sys.argv[1] == "--heavy":
        heavy(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
              int(sys.argv[6]) if len(sys.argv) > 6 else 8)
        return
    out = sys.argv[1]
    s = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    c2 = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    batch = sys.argv[5] if len(sys.argv) > 5 else "1"
    r = lambda n, k: [rng.uniform(-k, k) for _ in range(n)]  # noqa: E731
    inits = [
        tensor("w1", [8, 3, 3, 3], r(8 * 27, 0.3)), tensor("b1", [8], r(8, 0.1)),
        tensor("w2", [c2, 8, 3, 3], r(c2 * 72, 0.2)), tensor("b2", [c2], r(c2, 0.1)),
        tensor("wg", [c2, 4], r(c2 * 4, 0.5)), tensor("bg", [4], r(4, 0.1)),
    ]
    g = node("Conv", "conv1", ["x", "w1", "b1"], ["c1"])
    g += node("Relu", "relu1", ["c1"], ["r1"])
    g += node("Conv", "conv2", ["r1", "w2", "b2"], ["c2"])
    g += node("Relu", "relu2", ["c2"], ["r2"])
    g += node("GlobalAveragePool", "gap", ["r2"], ["gap"])
    g += node("Flatten", "flatten", ["gap"], ["flat"])
    g += node("Gemm", "gemm", ["flat", "wg", "bg"], ["y"])
    g += field_bytes(2, "split-test")
    g += b"".join(field_bytes(5, t) for t in inits)
    g += field_bytes(11, value_info("x", [batch, "3", str(s), str(s)], 1))
    g += field_bytes(12, value_info("y", [batch, "4"], 1))
    opset = field_bytes(1, "") + field_varint(2, 13)
    m = field_varint(1, 8) + field_bytes(2, "split-test") + field_bytes(7, g) + \
        field_bytes(8, opset)
    with open(out, "wb") as f:
        f.write(m)


if __name__ == "__main__":
    main()
