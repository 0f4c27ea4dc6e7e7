#!/usr/bin/env python3
"""Write a one-node ONNX model with a dynamic batch dim, without the onnx
package: the protobuf wire format by hand.

usage: make_model.py OUT.onnx OP NUM_INPUTS DIMS [ELEM_TYPE]
       make_model.py OUT.onnx slow K ROWS COLS
  DIMS: comma-separated, 'N' for a symbolic dim, e.g. N,4
  ELEM_TYPE: ONNX TensorProto.DataType (default 1: float)
Inputs are named x0, x1, ...; the output is y. 'slow' is a chain of K
MatMuls of x0 [N, ROWS, COLS] with one COLS x COLS weight (a model that
keeps an instance busy)."""
import struct
import sys


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((num << 3) | 2) + varint(len(data)) + data


def value_info(name, dims, elem):
    shape = b""
    for d in dims:
        if d.isdigit():
            shape += field_bytes(1, field_varint(1, int(d)))
        else:
            shape += field_bytes(1, field_bytes(2, d))
    tensor = field_varint(1, elem) + field_bytes(2, shape)
    return field_bytes(1, name) + field_bytes(2, field_bytes(1, tensor))


def model(op, n_inputs, dims, elem):
    names = ["x%d" % i for i in range(n_inputs)]
    node = b"".join(field_bytes(1, n) for n in names) + field_bytes(2, "y") + \
        field_bytes(3, "node0") + field_bytes(4, op)
    graph = field_bytes(1, node) + field_bytes(2, "g")
    for n in names:
        graph += field_bytes(11, value_info(n, dims, elem))
    graph += field_bytes(12, value_info("y", dims, elem))
    opset = field_bytes(1, "") + field_varint(2, 13)
    return field_varint(1, 8) + field_bytes(2, "serve-test") + \
        field_bytes(7, graph) + field_bytes(8, opset)


def slow(k, rows, cols):
    # The identity: values keep their size through the chain (a shrinking
    # chain ends in denormals, which run many times slower).
    w = struct.pack("<%df" % (cols * cols),
                    *[1.0 if i // cols == i % cols else 0.0 for i in range(cols * cols)])
    init = field_varint(1, cols) + field_varint(1, cols) + field_varint(2, 1) + \
        field_bytes(8, "w") + field_bytes(9, w)
    graph = b""
    prev = "x0"
    for i in range(k):
        out = "y" if i == k - 1 else "t%d" % i
        node = field_bytes(1, prev) + field_bytes(1, "w") + field_bytes(2, out) + \
            field_bytes(3, "mm%d" % i) + field_bytes(4, "MatMul")
        graph += field_bytes(1, node)
        prev = out
    graph += field_bytes(2, "g") + field_bytes(5, init)
    dims = ["N", str(rows), str(cols)]
    graph += field_bytes(11, value_info("x0", dims, 1))
    graph += field_bytes(12, value_info("y", dims, 1))
    opset = field_bytes(1, "") + field_varint(2, 13)
    return field_varint(1, 8) + field_bytes(2, "serve-test") + \
        field_bytes(7, graph) + field_bytes(8, opset)


if __name__ == "__main__":
    if sys.argv[2] == "slow":
        k, rows, cols = (int(a) for a in sys.argv[3:6])
        with open(sys.argv[1], "wb") as f:
            f.write(slow(k, rows, cols))
        sys.exit(0)
    out, op, n, dims = sys.argv[1:5]
    elem = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    with open(out, "wb") as f:
        f.write(model(op, int(n), dims.split(","), elem))
