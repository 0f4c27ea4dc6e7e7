# SPDX-License-Identifier: MIT
"""libnpu-user from Python, with ONNX Runtime's interface.

    import npu
    sess = npu.InferenceSession("det.onnx",
                                providers=["NPUExecutionProvider", "CPUExecutionProvider"],
                                provider_options=[{"device": "sim", "calib_dir": "calib/"}, {}])
    x = sess.get_inputs()[0]
    (y,) = sess.run(None, {x.name: image})

An ONNX Runtime user changes one import. What ONNX Runtime does not have:
npu.compile() calibrates from numpy arrays and writes a compiled model
(.npub); sess.placement() says where every node runs and why; sess.last_run()
gives the modeled NPU time of the last run. Runs release the GIL, and one
session runs on several threads at once. Errors carry the library's message.
"""
import os
import tempfile

import numpy as np

from npu import _npu

__all__ = ["InferenceSession", "SessionOptions", "NodeArg", "get_available_providers",
           "get_device", "compile", "__version__"]
__version__ = _npu.version()

# ONNX Runtime's provider names, and ours, to the library's.
_PROVIDERS = {
    "NPUExecutionProvider": "npu",
    "CPUExecutionProvider": "cpu",
    "npu": "npu",
    "cpu": "cpu",
}
_ORT_NAMES = {"npu": "NPUExecutionProvider", "cpu": "CPUExecutionProvider"}
# NPUExecutionProvider's options.
_NPU_OPTIONS = ("device", "calib_dir", "calib")


def get_available_providers():
    return ["NPUExecutionProvider", "CPUExecutionProvider"]


def get_device():
    """ONNX Runtime's get_device(): the default device this build runs on."""
    return "NPU"


class SessionOptions:
    """The options ONNX Runtime's SessionOptions has and this library uses."""

    def __init__(self):
        self.intra_op_num_threads = 0      # 0: all cores
        self.inter_op_num_threads = 0      # accepted; runs take one pool
        self.graph_optimization_level = None  # accepted; passes always run
        self.log_severity_level = 2


class NodeArg:
    """An input or output: name, shape (ints, or str for symbolic dims), type."""

    def __init__(self, name, dtype, shape):
        self.name = name
        self.shape = shape
        self.type = "tensor(%s)" % _npu.type_name(dtype)

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _provider_list(providers, provider_options):
    """(library list, device, calib_dir, calib_random) from ORT-style arguments."""
    if providers is None:
        providers = ["CPUExecutionProvider"]
    if provider_options is not None and len(provider_options) != len(providers):
        raise ValueError("provider_options: %d entries for %d providers"
                         % (len(provider_options), len(providers)))
    names, device, calib_dir, calib_random = [], None, None, False
    for i, p in enumerate(providers):
        opts = {}
        if isinstance(p, tuple):    # ("NPUExecutionProvider", {...}), as ORT takes them
            p, opts = p
        if provider_options is not None:
            opts = dict(opts, **provider_options[i])
        if not isinstance(p, str):
            raise TypeError("providers: names (str) or (name, options) tuples, not %r" % (p,))
        name = _PROVIDERS.get(p, p)
        for key, value in opts.items():
            if name != "npu" or key not in _NPU_OPTIONS:
                raise ValueError("provider %s has no option %r%s" % (
                    p, key, " (it takes: %s)" % ", ".join(_NPU_OPTIONS) if name == "npu" else ""))
            if key == "device":
                device = str(value)
            elif key == "calib_dir":
                calib_dir = os.fspath(value)
            elif key == "calib":
                if value != "random":
                    raise ValueError("NPUExecutionProvider: calib=%r: only 'random' (else calib_dir)"
                                     % (value,))
                calib_random = True
        names.append(name)
    return ",".join(names), device, calib_dir, calib_random


class InferenceSession:
    """A model, as onnxruntime.InferenceSession loads it (an .onnx or a compiled .npub)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        if kwargs:
            raise TypeError("InferenceSession: unexpected arguments %s" % ", ".join(kwargs))
        if isinstance(path_or_bytes, (bytes, bytearray)):
            # The library loads files; keep the bytes in one for its life.
            self._tmp = tempfile.NamedTemporaryFile(suffix=".onnx")
            self._tmp.write(path_or_bytes)
            self._tmp.flush()
            path = self._tmp.name
        else:
            path = os.fspath(path_or_bytes)
        self._options = sess_options or SessionOptions()
        plist, device, calib_dir, calib_random = _provider_list(providers, provider_options)
        self._providers = plist.split(",")
        if "cpu" not in self._providers:
            self._providers.append("cpu")   # always the last resort, as in ORT
        self._provider_options = provider_options
        self._sess = _npu.Session(path, int(self._options.intra_op_num_threads or 0),
                                  device or ("sim" if "npu" in self._providers else None),
                                  plist, calib_dir, calib_random)
        self._inputs = [NodeArg(*i) for i in self._sess.inputs()]
        self._outputs = [NodeArg(*o) for o in self._sess.outputs()]

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return [_ORT_NAMES.get(p, p) for p in self._providers]

    def get_provider_options(self):
        return {_ORT_NAMES.get(p, p): {} for p in self._providers}

    def get_session_options(self):
        return self._options

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named (None: all), as numpy arrays, for input_feed {name: array}."""
        if not isinstance(input_feed, dict):
            raise TypeError("input_feed: a dict {input name: numpy array}")
        outputs = self._sess.run(output_names, input_feed)
        self._last_shapes = {k: list(np.shape(v)) for k, v in input_feed.items()}
        return outputs

    def placement(self, shapes=None):
        """[(node, op_type, provider, reason)] for these input shapes ({name: dims});
        default: the last run's, else the declared ones (symbolic dims: give shapes)."""
        if shapes is None:
            shapes = getattr(self, "_last_shapes", None)
        if shapes is None:
            if any(not isinstance(d, int) for i in self._inputs for d in (i.shape or [None])):
                raise ValueError("placement: the inputs have symbolic dims: give shapes {name: dims} (or run once)")
            shapes = {i.name: i.shape for i in self._inputs}
        return self._sess.placement(shapes)

    def last_run(self):
        """The last run: seconds, modeled NPU cycles and their clock (npu_ms), segments, MACs."""
        r = self._sess.last_run()
        r["npu_ms"] = r["npu_cycles"] / (r["clock_mhz"] * 1e3) if r["clock_mhz"] else 0.0
        return r

    def device(self):
        return self._sess.device()

    def close(self):
        """Free the model now; the session refuses to run afterwards."""
        self._sess.close()


def compile(model, output, calib, device="sim", sess_options=None):
    """Calibrate 'model' on numpy samples and write it compiled to 'output' (.npub),
    at the shapes of the first sample.

    calib: a list of samples, each a dict {input name: array} (or an array
    for a one-input model). They reach the library as .npy files in a
    temporary directory, the form it reads calibration data in."""
    if not calib:
        raise ValueError("compile: calib is empty: the NPU compiles to int8 and needs samples")
    probe = InferenceSession(model, sess_options)
    names = [i.name for i in probe.get_inputs()]
    probe.close()

    def as_dict(sample):
        if isinstance(sample, dict):
            return sample
        if len(names) != 1:
            raise ValueError("compile: the model has %d inputs: give each sample as {name: array}"
                             % len(names))
        return {names[0]: sample}

    with tempfile.TemporaryDirectory() as tmp:
        for k, sample in enumerate(calib):
            sub = os.path.join(tmp, "%06d" % k)
            os.mkdir(sub)
            for name, value in as_dict(sample).items():
                np.save(os.path.join(sub, name + ".npy"), np.ascontiguousarray(value))
        sess = InferenceSession(model, sess_options,
                                ["NPUExecutionProvider", "CPUExecutionProvider"],
                                [{"device": device, "calib_dir": tmp}, {}])
        try:
            sess.run(None, as_dict(calib[0]))    # calibrates and compiles these shapes
            sess._sess.save_compiled(os.fspath(output))
        finally:
            sess.close()
