"""glr_torch's JIT path, as a checkout without installing uses it: sys.path gets glr/python/glr_torch,
the first call builds the extension with torch.utils.cpp_extension.load (TORCH_EXTENSIONS_DIR),
then one forward and backward against the float64 recurrence of tests/python/test_glr_torch.py.
Run from the repo root by device_gates.sh, beside the setup.py build. Exit 0: built and right."""
import importlib.util
import os
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GLR_TORCH = os.path.join(REPO, "glr", "python", "glr_torch")
sys.path.insert(0, GLR_TORCH)
import glr_torch  # noqa: E402
import torch  # noqa: E402

assert os.path.dirname(glr_torch.__file__) == os.path.join(GLR_TORCH, "glr_torch"), glr_torch.__file__
spec = importlib.util.spec_from_file_location("t", os.path.join(REPO, "tests", "python", "test_glr_torch.py"))
t = importlib.util.module_from_spec(spec)
spec.loader.exec_module(t)

t0 = time.time()
ext = glr_torch.extension()
print(f"built/loaded {ext.__file__} in {time.time() - t0:.0f} s")
ins = [x.requires_grad_(True) for x in t.draw(2, 100, 2, 32, 16, device="cuda")]
o, hT = glr_torch.chunk_glr(*ins[:4], initial_state=ins[4], output_final_state=True)
(o.sum() + hT.sum()).backward()
ref = [x.requires_grad_(True) for x in t.as64(*ins)]
ro, rhT = t.reference(*ref, 32 ** -0.5)
(ro.sum() + rhT.sum()).backward()
errs = {"o": t.rel_err(o, ro), "hT": t.rel_err(hT, rhT)}
errs.update({f"d{n}": t.rel_err(a.grad, b.grad) for n, a, b in zip(("q", "k", "v", "g", "h0"), ins, ref)})
print("max error / max |reference|:", {k: f"{v:.2e}" for k, v in errs.items()})
sys.exit(0 if all(v <= 1e-4 for v in errs.values()) else 1)
