# KernelBench-format solution for problem.py / problem_bf16.py: FLA's chunk_gla (Triton), as a GLA
# layer calls it. The gate is the problem's own expression, in torch, as in solution_glr.py.
#
# FLA is never committed here: bench/glr/device_gates.sh finds its tree (the directory holding
# fla/) on PYTHONPATH or under .xfer/fla of this checkout. The import is the narrowest that works:
# the packages `fla` and `fla.ops` are entered without running their __init__ files, which import
# every layer and model (transformers) and every other op; fla.ops.gla and what it imports
# (fla.ops.utils, fla.ops.common, fla.ops.backends, fla.utils: torch, triton, packaging) load as
# usual.
import os
import sys
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.abspath(os.path.join(_HERE, "..", "..", ".."))


def _fla_root():
    for p in sys.path + [os.path.join(_REPO, ".xfer", "fla")]:
        if p and os.path.isfile(os.path.join(p, "fla", "ops", "gla", "chunk.py")):
            return os.path.abspath(p)
    raise ImportError("FLA not found: no fla/ops/gla/chunk.py on PYTHONPATH nor under " +
                      os.path.join(_REPO, ".xfer", "fla"))


def _fla_version(root):
    import re
    with open(os.path.join(root, "fla", "__init__.py")) as f:
        m = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    return m.group(1) if m else "0"


def _import_chunk_gla():
    root = _fla_root()
    # Compiled Triton kernels shared by kcv's workers (each has a fresh HOME): the first worker
    # compiles, later ones (the sanitizer's four) load. Best effort; the default cache otherwise.
    cache = os.path.join(root, "..", "triton-cache")
    try:
        os.makedirs(cache, exist_ok=True)
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.abspath(cache))
    except OSError:
        pass
    for name, rel in (("fla", "fla"), ("fla.ops", os.path.join("fla", "ops"))):
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = [os.path.join(root, rel)]
            pkg.__version__ = _fla_version(root)
            sys.modules[name] = pkg
    sys.modules["fla"].ops = sys.modules["fla.ops"]
    from fla.ops.gla import chunk_gla
    return chunk_gla


chunk_gla = _import_chunk_gla()


def gate(gk):
    return torch.clamp_min(F.logsigmoid(gk) / 16, -1.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gk, h0):
        o, ht = chunk_gla(q, k, v, gate(gk.float()), initial_state=h0.float(), output_final_state=True)
        return o.to(q.dtype), ht.to(q.dtype)
