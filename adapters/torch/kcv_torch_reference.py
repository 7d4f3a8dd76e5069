"""kcv torch reference server: the trusted side of a KernelBench verification.

Usage: python kcv_torch_reference.py PROBLEM.py DEVICE INIT_SEED

It never loads the solution. kcv sends requests on stdin and reads answers on the original stdout
(the problem's own prints go to stderr). A message is one JSON line, followed by the raw bytes of
each blob its "blobs" list gives the length of.

  describe  {bindings}          -> the problem at these sizes: inputs, outputs, argument template;
                                   at nominal also the module sizes and which of them shape an input
  inputs    {bindings, seed}    -> get_inputs() under torch.manual_seed(seed), one blob per tensor
  reference {bindings} + blobs  -> per output: Model in float64 and Model in float32 (eager), both
                                   as float64 blobs, on the same inputs and weights; with the derived
                                   bound (the default; KCV_TORCH_BOUND=calibrated turns it off) also
                                   E and W (float64, units of u = 2^-24) and S (uint8: 0 derived,
                                   1 calibrated, 2 free) from the float64 Model run once more under
                                   kcv_torch_bound.BoundMode; the answer's "bound" says which, and
                                   names the ops without a rule
  eager     {bindings} + blobs  -> per output: Model in float32 (eager) alone, as a float64 blob
                                   (KernelBench's own check)
  quit
"""

import json
import os
import sys
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kcv_torch_common as common  # noqa: E402
import kcv_torch_bound  # noqa: E402


def bound_mode():
    """'derived' (the default) or 'calibrated' (env KCV_TORCH_BOUND=calibrated: the bound of
    kcv before issue 27, 32 x fp32 eager's worst error)."""
    return "calibrated" if os.environ.get("KCV_TORCH_BOUND", "").strip().lower() == "calibrated" else "derived"


class NotAFunction(Exception):
    """Model gave other outputs when called again on the same inputs: kcv cannot judge it."""


def same_bits(a, b):
    """a and b hold the same bytes (NaN payloads included), compared where they live."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return torch.equal(a.contiguous().view(ints), b.contiguous().view(ints))


def double_everything(model):
    """model.double(), and also the floating tensors it keeps as plain attributes."""
    # NOTES: .double() converts parameters and buffers only. KernelBench's LSTM and GRU problems
    # keep their initial states as plain attributes (self.h0 = torch.randn(...)), which would
    # stay float32 and stop the float64 Model.
    model = model.double()
    for module in model.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                setattr(module, name, value.double())
    return model


def matrix_structure(a):
    """The structure of a's last two dimensions that get_inputs() gives every matrix: "upper" or
    "lower" (zero below or above the diagonal, not zero on both sides), "symmetric" (equal to its
    transpose, neither diagonal nor constant), else "none". kcv keeps it in every case it makes
    (docs/kernelbench.md, "Inputs keep their structure"): a kernel may read only the triangle its
    problem promises."""
    if a.dim() < 2 or a.shape[-1] != a.shape[-2] or a.shape[-1] < 2 or a.numel() == 0:
        return "none"
    below_zero = bool((torch.tril(a, -1) == 0).all())
    above_zero = bool((torch.triu(a, 1) == 0).all())
    if below_zero != above_zero:
        return "upper" if below_zero else "lower"
    # NOTES: a constant matrix (torch.ones) is symmetric by accident, not by promise: keeping it so
    # would hide a kernel that reads it transposed.
    if not below_zero and bool(a.max() != a.min()) and torch.equal(a, a.transpose(-1, -2)):
        return "symmetric"
    return "none"


class Server:
    def __init__(self, problem, device, init_seed):
        self.device = torch.device(device)
        self.init_seed = init_seed
        self.mod = common.load_module(problem, "kcv_problem")
        self.nominal = common.module_sizes(self.mod)
        self.models = {}       # bindings key -> (model32, model64)
        self.described = {}    # bindings key -> description
        # Model keeps state between calls (found at nominal): a fresh model for every call.
        self.fresh_model = False

    def key(self, bindings):
        return json.dumps(sorted(bindings.items()))

    def args_at(self, bindings, seed):
        common.set_sizes(self.mod, self.nominal, bindings)
        torch.manual_seed(seed)
        args = list(self.mod.get_inputs())
        return args

    def models_at(self, bindings, rebuild=False):
        k = self.key(bindings)
        if rebuild or self.fresh_model or k not in self.models:
            common.set_sizes(self.mod, self.nominal, bindings)
            init = list(self.mod.get_init_inputs())
            m32 = common.build_model(self.mod.Model, init, self.init_seed, self.device)
            # NOTES: built again, not deep-copied: a copy shares the Model's closures (KernelBench's
            # MiniGPTBlock keeps its MLP as a lambda over self.mlp), which would still call the
            # fp32 submodules.
            m64 = double_everything(common.build_model(self.mod.Model, init, self.init_seed, self.device))
            self.models = {k: (m32, m64)}  # one shape at a time: memory stays bounded
        return self.models[k]

    def describe(self, bindings):
        k = self.key(bindings)
        if k in self.described:
            return self.described[k]
        args = self.args_at(bindings, 0)
        inputs, template = [], []
        for a in args:
            if isinstance(a, torch.Tensor):
                if a.dtype not in common.CARRIED:
                    raise RuntimeError(f"get_inputs() returns a {a.dtype} tensor, which the kcv ABI cannot carry")
                floating = a.dtype.is_floating_point
                inputs.append({"dtype": common.CARRIED[a.dtype], "shape": list(a.shape),
                               "integer": not floating,
                               "nonneg": bool(a.numel() > 0 and floating and a.min().item() >= 0),
                               "structure": matrix_structure(a) if floating else "none"})
                template.append({"tensor": len(inputs) - 1, **({"bool": True} if a.dtype == torch.bool else {})})
            else:
                json.dumps(a)  # a constant argument must be plain data
                template.append({"const": a})
        m32, _ = self.models_at(bindings)
        on_device = [a.to(self.device) if isinstance(a, torch.Tensor) else a for a in args]
        def same(xs, ys):
            return len(xs) == len(ys) and all(same_bits(a, b) for a, b in zip(xs, ys)
                                              if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor))

        with torch.no_grad():
            outs = common.as_tuple(m32(*on_device))
            # NOTES: both sides call their model a different number of times, so a Model whose
            # output depends on earlier calls (KernelBench's VanillaRNN keeps its hidden state)
            # is judged one call from its initial state: a fresh model, from the same seed, for
            # every call on both sides. A Model that differs from itself even then (it draws
            # random numbers, or sums in a run-dependent order) cannot be a reference: refused up
            # front (at nominal, once) rather than every case failing.
            if not bindings and not same(outs, common.as_tuple(m32(*on_device))):
                m32, _ = self.models_at(bindings, rebuild=True)
                # Building seeds torch's generator: another seed before the call, so that a
                # Model drawing random numbers cannot pass for one that keeps state.
                torch.manual_seed(self.init_seed + 1)
                if not same(outs, common.as_tuple(m32(*on_device))):
                    raise NotAFunction("Model gives other outputs when called again on the same inputs, even "
                                       "as a fresh model from the same seed (it draws random numbers, or sums "
                                       "in a run-dependent order); kcv judges a Model that is a function of "
                                       "its inputs")
                self.fresh_model = True
        outputs = []
        for o in outs:
            if not isinstance(o, torch.Tensor) or o.dtype not in common.CARRIED:
                raise RuntimeError("Model returns something other than tensors of a kcv dtype")
            outputs.append({"dtype": common.CARRIED[o.dtype], "shape": list(o.shape)})
        d = {"inputs": inputs, "outputs": outputs, "args": template}
        if not bindings:
            d["sizes"] = self.nominal
            d["symbols"] = self.shape_symbols(inputs)
            d["fresh_model"] = self.fresh_model
        self.described[k] = d
        return d

    def shape_symbols(self, nominal_inputs):
        """The module sizes that shape an input: changed by one, some input's shape changes."""
        shapes = [i["shape"] for i in nominal_inputs]
        out = []
        for name, v in self.nominal.items():
            if v < 1:
                continue
            try:
                args = self.args_at({name: v + 1}, 0)
            except Exception as e:  # noqa: BLE001 - a size get_inputs cannot take is not a symbol
                if kcv_torch_bound.out_of_memory(e):
                    raise  # the machine's memory, not the size's: no symbol dropped for it (session 49)
                continue
            got = [list(a.shape) for a in args if isinstance(a, torch.Tensor)]
            if got != shapes:
                out.append(name)
        common.set_sizes(self.mod, self.nominal, {})
        return out

    def inputs(self, bindings, seed):
        args = self.args_at(bindings, seed)
        return [common.tensor_bytes(a) for a in args if isinstance(a, torch.Tensor)]

    def args_from(self, bindings, blobs):
        """The Model's arguments, its tensors from kcv's blobs, on the device."""
        d = self.describe(bindings)
        tensors = []
        bools = {a["tensor"] for a in d["args"] if a.get("bool")}
        for n, (spec, blob) in enumerate(zip(d["inputs"], blobs)):
            t = common.tensor_from_bytes(blob, common.DTYPES[spec["dtype"]], spec["shape"])
            tensors.append((t.view(torch.bool) if n in bools else t).to(self.device))
        return [tensors[a["tensor"]] if "tensor" in a else a["const"] for a in d["args"]]

    def reference(self, bindings, blobs):
        """The blobs of the answer and what it says about the bound."""
        args32 = self.args_from(bindings, blobs)
        args64 = [x.double() if isinstance(x, torch.Tensor) and x.dtype.is_floating_point else x for x in args32]
        m32, m64 = self.models_at(bindings)
        with torch.no_grad():
            o64 = common.as_tuple(m64(*args64))
            o32 = common.as_tuple(m32(*args32))
        mode = bound_mode()
        tracks, unruled = [None] * len(o64), {}
        if mode == "derived":
            # NOTES: once more, under the mode: a fresh Model where the Model keeps state (the
            # plain run above took its step). The values are the plain run's; the mode's run
            # gives only the bound.
            _, mb = self.models_at(bindings) if self.fresh_model else (m32, m64)
            _, tracks, unruled = kcv_torch_bound.run(mb, args64)
        out = []
        for k, (a, b) in enumerate(zip(o64, o32)):
            out.append(common.tensor_bytes(a.double()))
            out.append(common.tensor_bytes(b.double()))
            if mode == "derived":
                t = tracks[k] if k < len(tracks) else None
                if t is None:  # an integer or bool output: exact, judged bitwise
                    z = torch.zeros(a.shape, dtype=torch.float64)
                    out += [common.tensor_bytes(z), common.tensor_bytes(z),
                            common.tensor_bytes(torch.zeros(a.shape, dtype=torch.uint8))]
                else:
                    out += [common.tensor_bytes(t.E.cpu()), common.tensor_bytes(t.W.cpu()),
                            common.tensor_bytes(t.S.cpu())]
        return out, {"mode": mode, "unruled": sorted(unruled)}

    def eager(self, bindings, blobs):
        """The fp32 Model alone: the reference of KernelBench's own check."""
        args32 = self.args_from(bindings, blobs)
        m32, _ = self.models_at(bindings)
        with torch.no_grad():
            return [common.tensor_bytes(b.double()) for b in common.as_tuple(m32(*args32))]


def read_message(inp):
    line = inp.readline()
    if not line:
        return None, []
    msg = json.loads(line)
    blobs = []
    for n in msg.get("blobs", []):
        b = bytearray(n)
        got = inp.readinto(b) if n else 0
        while got < n:  # a pipe hands over what it has
            more = inp.readinto(memoryview(b)[got:])
            if not more:
                raise EOFError("kcv closed the pipe mid-message")
            got += more
        blobs.append(b)
    return msg, blobs


def write_message(out, msg, blobs=()):
    msg = dict(msg)
    msg["blobs"] = [len(b) for b in blobs]
    out.write((json.dumps(msg) + "\n").encode())
    for b in blobs:
        out.write(b)
    out.flush()


def main():
    # The protocol owns the original stdout; whatever the problem prints goes to stderr.
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    proto_in = sys.stdin.buffer
    problem, device, init_seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if device.startswith("cuda"):
        common.sleep_while_waiting_for_the_gpu()  # before the problem or torch makes a context
    common.library_settings()
    try:
        server = Server(problem, device, init_seed)
    except Exception as e:  # noqa: BLE001
        write_message(proto_out, {"ok": False, "error": f"cannot load problem: {type(e).__name__}: {e}"})
        return 1
    hello = {"ok": True, "torch": str(torch.__version__), "bound": bound_mode()}
    if torch.version.cuda:
        hello["torch_cuda"] = str(torch.version.cuda)
    if server.device.type == "cuda":
        hello["gpu"] = torch.cuda.get_device_name(server.device)
    write_message(proto_out, hello)  # the versions are provenance for the report (issue 21 item 8)
    while True:
        msg, blobs = read_message(proto_in)
        if msg is None or msg.get("op") == "quit":
            return 0
        bindings = {k: int(v) for k, v in msg.get("bindings", {}).items()}
        try:
            if msg["op"] == "describe":
                write_message(proto_out, {"ok": True, "description": server.describe(bindings)})
            elif msg["op"] == "inputs":
                write_message(proto_out, {"ok": True}, server.inputs(bindings, int(msg["seed"])))
            elif msg["op"] == "reference":
                got, bound = server.reference(bindings, blobs)
                write_message(proto_out, {"ok": True, "bound": bound}, got)
            elif msg["op"] == "eager":
                write_message(proto_out, {"ok": True}, server.eager(bindings, blobs))
            else:
                write_message(proto_out, {"ok": False, "error": f"unknown request {msg['op']!r}"})
        except NotAFunction as e:
            write_message(proto_out, {"ok": False, "error": str(e), "not_a_function": True})
        except Exception as e:  # noqa: BLE001 - the reference rejecting a shape is an answer
            traceback.print_exc(file=sys.stderr)
            write_message(proto_out, {"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0][:500]})
        if server.device.type == "cuda" and msg["op"] in ("reference", "eager"):
            # NOTES: a float64 Model's activations can take tens of GB; kept in torch's cache, they
            # starve the other verifications of a `kcv corpus run --jobs N` on the same GPU
            # (session 7: one process held 57 GB while pairs beside it ran out of memory). Given
            # back after every request that ran a Model: a cudaFree/cudaMalloc pair per request,
            # small beside the float64 forward itself.
            torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
