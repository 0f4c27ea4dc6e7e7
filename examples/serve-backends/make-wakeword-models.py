#!/usr/bin/python3
"""Write the three stateful window models of examples/serve's wakeword
ensemble (openWakeWord's streaming front end as ONNX graphs, each with its
window as Triton implicit state; Documentation/serving.md, "Wake-word as
one model"):

  ww_audio        AUDIO [1280] + TAIL [480] (state)
                  -> MEL_IN [1,1760] (the last 480 samples, then the chunk), TAIL_OUT
  ww_mel_window   MEL [1,1,8,32] + WINDOW [76,32] (state) + START [1] (control)
                  -> EMB_IN [1,76,32,1]: the window of 76 mel frames (x / 10 + 2)
                     after the chunk's 8 new ones; ones before the first
                     (openWakeWord's start), WINDOW_OUT
  ww_feat_window  EMB [1,1,1,96] + FEATURES [16,96] (state)
                  -> CLS_IN [1,16,96]: the last 16 embeddings (zeros before), FEATURES_OUT

usage: examples/serve-backends/make-wakeword-models.py examples/serve   (writes REPO/<model>/1/model.onnx)
Needs Debian's python3-onnx (tools/setup-deps)."""
import os
import sys

from onnx import TensorProto, helper, save


def const(name, vals, dtype=TensorProto.INT64, dims=None):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name + "_v", dtype, dims if dims is not None else [len(vals)], vals))


def model(name, nodes, inputs, outputs):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, producer_name="npu-stack examples/serve",
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def vi(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def audio():
    return model("ww_audio", [
        helper.make_node("Concat", ["TAIL", "AUDIO"], ["cat"], axis=0),
        const("shape", [1, 1760]),
        helper.make_node("Reshape", ["cat", "shape"], ["MEL_IN"]),
        const("s", [1280]), const("e", [1760]), const("ax", [0]),
        helper.make_node("Slice", ["cat", "s", "e", "ax"], ["TAIL_OUT"]),
    ], [vi("AUDIO", [1280]), vi("TAIL", [480])], [vi("MEL_IN", [1, 1760]), vi("TAIL_OUT", [480])])


def mel_window():
    return model("ww_mel_window", [
        const("fshape", [8, 32]),
        helper.make_node("Reshape", ["MEL", "fshape"], ["frames"]),
        const("ten", [10.0], TensorProto.FLOAT, []), const("two", [2.0], TensorProto.FLOAT, []),
        helper.make_node("Div", ["frames", "ten"], ["scaled"]),
        helper.make_node("Add", ["scaled", "two"], ["new"]),
        # Before the first chunk the window holds ones (openWakeWord's start).
        helper.make_node("Cast", ["START"], ["start"], to=TensorProto.BOOL),
        const("ones", [1.0] * (76 * 32), TensorProto.FLOAT, [76, 32]),
        helper.make_node("Where", ["start", "ones", "WINDOW"], ["prev"]),
        const("s", [8]), const("e", [76]), const("ax", [0]),
        helper.make_node("Slice", ["prev", "s", "e", "ax"], ["kept"]),
        helper.make_node("Concat", ["kept", "new"], ["WINDOW_OUT"], axis=0),
        const("eshape", [1, 76, 32, 1]),
        helper.make_node("Reshape", ["WINDOW_OUT", "eshape"], ["EMB_IN"]),
    ], [vi("MEL", [1, 1, 8, 32]), vi("WINDOW", [76, 32]),
        helper.make_tensor_value_info("START", TensorProto.INT32, [1])],
        [vi("EMB_IN", [1, 76, 32, 1]), vi("WINDOW_OUT", [76, 32])])


def feat_window():
    return model("ww_feat_window", [
        const("eshape", [1, 96]),
        helper.make_node("Reshape", ["EMB", "eshape"], ["emb"]),
        const("s", [1]), const("e", [16]), const("ax", [0]),
        helper.make_node("Slice", ["FEATURES", "s", "e", "ax"], ["kept"]),
        helper.make_node("Concat", ["kept", "emb"], ["FEATURES_OUT"], axis=0),
        const("cshape", [1, 16, 96]),
        helper.make_node("Reshape", ["FEATURES_OUT", "cshape"], ["CLS_IN"]),
    ], [vi("EMB", [1, 1, 1, 96]), vi("FEATURES", [16, 96])],
        [vi("CLS_IN", [1, 16, 96]), vi("FEATURES_OUT", [16, 96])])


def main():
    repo = sys.argv[1]
    for name, m in (("ww_audio", audio()), ("ww_mel_window", mel_window()),
                    ("ww_feat_window", feat_window())):
        d = os.path.join(repo, name, "1")
        os.makedirs(d, exist_ok=True)
        save(m, os.path.join(d, "model.onnx"))


if __name__ == "__main__":
    main()
