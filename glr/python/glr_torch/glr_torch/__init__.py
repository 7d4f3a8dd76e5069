"""glr_torch — glr's CUDA gated linear recurrence as a PyTorch autograd op.

    from glr_torch import chunk_glr          # instead of: from fla.ops.gla import chunk_gla
    o, final_state = chunk_glr(q, k, v, g, scale=None, initial_state=h0, output_final_state=True)

Per sequence and head, with S_0 = initial_state (or 0):
    S_t = Diag(exp(g_t)) S_{t-1} + k_t^T v_t,    o_t = scale * q_t S_t,    final_state = S_T.

Arguments, layouts and return value are FLA's `chunk_gla`'s: q, k [B,T,H,K]; v [B,T,H,V]; g a
log-space gate, [B,T,H,K] (vector, GLA) or [B,T,H] (scalar, Mamba-2 / simple GLA); initial_state
[N,H,K,V] float32 (N = B, or the number of sequences with cu_seqlens); cu_seqlens [N+1] int64
(int32 accepted) with B == 1. Returns (o [B,T,H,V] in q's dtype, final_state float32 or None).
dtypes: float32, bfloat16, float16, float64 (with float64 inputs, g and the states are float64:
the path torch.autograd.gradcheck uses). Default scale K^-0.5.

The extension is the installed `glr_torch._C` (glr/python/glr_torch/setup.py), or else built on first
use by torch.utils.cpp_extension.load from this checkout (GLR_TORCH_VERBOSE=1 shows the build;
GLR_TORCH_ARCH=90a, 100a, ... picks the targets; default: the current GPU's; GLR_DEFINES=GLR_NEXT, a
;-list of include/glr/cuda/sm90/switches.cuh's kernel switches, builds those, as cmake -DGLR_DEFINES).
"""

import os
import re

import torch

__all__ = ["chunk_glr", "extension"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.abspath(os.path.join(_PACKAGE_DIR, "..", "..", "..", ".."))  # glr/python/glr_torch/glr_torch
_CSRC = os.path.abspath(os.path.join(_PACKAGE_DIR, "..", "csrc"))

_ext = None


def nvcc_flags(archs):
    """The nvcc flags of both builds: glr's kernels need the arch-specific targets (sm_90a, ...)
    and the half/bfloat16 operators that torch's extension flags switch off by default."""
    # NOTES: no -std here: torch adds its own (nvcc refuses a second one).
    flags = ["-O3", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
             "-U__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__"]
    # NOTES: an explicit -gencode makes torch add none of its own (torch's arch flags would add
    # plain sm_90, where sm_90a-only instructions do not assemble).
    for a in archs:
        flags.append(f"-gencode=arch=compute_{a},code=sm_{a}")
    return flags + switch_flags()


def switches():
    """The kernel switches GLR_DEFINES names (a ;- or ,-list, as cmake -DGLR_DEFINES takes it), each
    checked against include/glr/cuda/sm90/switches.cuh: how a benchmark runs a set a GLR_DEFINES build
    of glr tested (e.g. GLR_NEXT before it is the default). ValueError for a name that file does not list as a switch."""
    names = [n.strip() for n in os.environ.get("GLR_DEFINES", "").replace(",", ";").split(";") if n.strip()]
    if not names:
        return []
    with open(os.path.join(_REPO, "include", "glr", "cuda", "sm90", "switches.cuh")) as f:
        known = f.read()
    for n in names:
        # a switch is listed ("///   NAME  what it does") or is GLR_NEXT; one gone into the default is only mentioned
        if not re.fullmatch(r"GLR_[A-Z0-9_]+", n) or not re.search(r"^(///   |#ifdef )" + n + r"( |$)", known, re.M):
            raise ValueError(f"GLR_DEFINES: {n!r} is not a switch listed in include/glr/cuda/sm90/switches.cuh")
    return names


def switch_flags():
    return [f"-D{n}" for n in switches()]


def include_dirs():
    # include/ for the public headers (glr/cuda.hpp, ...), the repository root for glr/cuda/api.cu.
    return [os.path.join(_REPO, "include"), _REPO]


def _default_archs():
    env = os.environ.get("GLR_TORCH_ARCH", "").replace(",", ";").replace(" ", ";")
    if env.strip(";"):
        return [a for a in env.split(";") if a]
    major, minor = torch.cuda.get_device_capability()
    # sm_90 and sm_100 have arch-specific ("a") targets, which glr's kernels use.
    return [f"{major}{minor}a" if (major, minor) in ((9, 0), (10, 0)) else f"{major}{minor}"]


def extension():
    """The compiled module (fwd, bwd): installed, or built from this checkout on first use."""
    global _ext
    if _ext is not None:
        return _ext
    try:
        from glr_torch import _C as mod  # built by setup.py
    except ImportError as installed_error:
        if not os.path.isfile(os.path.join(_CSRC, "glr_torch.cpp")) or \
                not os.path.isfile(os.path.join(_REPO, "glr", "cuda", "api.cu")):
            raise ImportError("glr_torch: no compiled extension (glr_torch._C) and no checkout to build it "
                              f"from at {_REPO}: {installed_error}") from installed_error
        from torch.utils.cpp_extension import load
        mod = load(name="glr_torch_C",
                   sources=[os.path.join(_CSRC, "glr_torch.cpp"), os.path.join(_CSRC, "glr_cuda_api.cu")],
                   extra_include_paths=include_dirs(), extra_cflags=["-O3"],
                   extra_cuda_cflags=nvcc_flags(_default_archs()),
                   verbose=os.environ.get("GLR_TORCH_VERBOSE", "") not in ("", "0"))
    _ext = mod
    return _ext


class _ChunkGLR(torch.autograd.Function):
    """Inputs already checked, contiguous, in the API's dtypes (see chunk_glr)."""

    @staticmethod
    def forward(ctx, q, k, v, g, initial_state, scale, output_final_state, cu_seqlens, save_states):
        o, final_state, kept = extension().fwd(q, k, v, g, initial_state, cu_seqlens, scale, output_final_state,
                                               save_states)
        ctx.save_for_backward(q, k, v, g, initial_state, cu_seqlens)
        ctx.scale = scale
        ctx.kept = kept  # the chunk states the backward would otherwise recompute, or None
        return o, final_state

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, do, dht):
        q, k, v, g, initial_state, cu_seqlens = ctx.saved_tensors
        want_dh0 = initial_state is not None and ctx.needs_input_grad[4]
        kept, ctx.kept = ctx.kept, None  # once_differentiable: freed as soon as it is used
        dq, dk, dv, dg, dh0 = extension().bwd(q, k, v, g, initial_state, cu_seqlens, do.contiguous(),
                                               None if dht is None else dht.contiguous(), ctx.scale, want_dh0, kept)
        return dq, dk, dv, dg, dh0, None, None, None, None


_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


def _fail(kind, msg):
    raise kind(f"glr_torch.chunk_glr: {msg}")


def _check_device(q):
    if not q.is_cuda:
        _fail(ValueError, f"q must be a CUDA tensor (glr_torch runs on the GPU only), got device {q.device}")


def _check_cu_seqlens(cu, T):
    """cu_seqlens on the host: starts at 0, ends at T, never decreases (else the kernels would read
    out of bounds). A copy to the host when cu_seqlens_cpu is not given, as FLA's own prepare does."""
    vals = cu.tolist()
    if vals[0] != 0 or vals[-1] != T or any(b < a for a, b in zip(vals, vals[1:])):
        _fail(ValueError, f"cu_seqlens must start at 0, end at T={T} and never decrease, got "
                          f"{vals if len(vals) <= 16 else vals[:8] + ['...'] + vals[-4:]}")


def chunk_glr(q, k, v, g, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None, *,
              state_v_first=False, cu_seqlens_cpu=None, recompute_states=False):
    """The gated linear recurrence, forward on glr's CUDA kernels, differentiable through glr's
    backward (q, k, v, g and initial_state). FLA's `chunk_gla` arguments and return value; see the
    module's docstring. `state_v_first` ([N,H,V,K] states) and `cu_seqlens_cpu` (a host copy of
    cu_seqlens, which spares the check a device-to-host copy) are FLA's keyword extras.
    When a gradient will be wanted, the forward keeps its chunk states for the backward
    (glr::cuda::saved_states_bytes: bf16/f16, K <= 256); `recompute_states=True` keeps only the
    inputs and lets the backward recompute them (less memory between the two, a slower backward)."""
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g)):
        if not isinstance(t, torch.Tensor):
            _fail(TypeError, f"{name} must be a torch.Tensor, got {type(t).__name__}")
    _check_device(q)
    for name, t in (("k", k), ("v", v), ("g", g)):
        if t.device != q.device:
            _fail(ValueError, f"{name} is on {t.device}, q on {q.device}")
    if q.dtype not in _DTYPES:
        _fail(TypeError, f"q must be float32, bfloat16, float16 or float64, got {q.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        _fail(TypeError, f"q, k and v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.dim() != 4 or k.shape != q.shape:
        _fail(ValueError, f"q and k must be [B, T, H, K] of one shape, got {tuple(q.shape)} and {tuple(k.shape)}")
    B, T, H, K = q.shape
    if v.dim() != 4 or tuple(v.shape[:3]) != (B, T, H):
        _fail(ValueError, f"v must be [B, T, H, V] = [{B}, {T}, {H}, V], got {tuple(v.shape)}")
    V = v.shape[3]
    if tuple(g.shape) not in ((B, T, H, K), (B, T, H)):
        _fail(ValueError, f"g must be [B, T, H, K] (vector gate) or [B, T, H] (scalar gate) = "
                          f"[{B}, {T}, {H}, {K}] or [{B}, {T}, {H}], got {tuple(g.shape)}")
    if not g.is_floating_point():
        _fail(TypeError, f"g must be a floating-point log-gate, got {g.dtype}")
    state_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
    # NOTES: g in another float dtype is converted (FLA takes a bf16 g and upcasts it too); the
    # conversion is differentiable, so g's gradient comes back in g's own dtype.
    if g.dtype != state_dtype:
        g = g.to(state_dtype)

    N = B
    if cu_seqlens is not None:
        if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2 or \
                cu_seqlens.dtype not in (torch.int64, torch.int32):
            _fail(ValueError, "cu_seqlens must be a 1-D int64 (or int32) tensor [N+1] with N >= 1, got "
                              f"{cu_seqlens if not isinstance(cu_seqlens, torch.Tensor) else (cu_seqlens.dtype, tuple(cu_seqlens.shape))}")
        if B != 1:
            _fail(ValueError, f"the batch size is expected to be 1 rather than {B} when using cu_seqlens; "
                              "flatten variable-length inputs first")
        _check_cu_seqlens(cu_seqlens_cpu if cu_seqlens_cpu is not None else cu_seqlens, T)
        cu_seqlens = cu_seqlens.to(device=q.device, dtype=torch.int64).contiguous()
        N = cu_seqlens.numel() - 1

    if initial_state is not None:
        if not isinstance(initial_state, torch.Tensor):
            _fail(TypeError, f"initial_state must be a torch.Tensor or None, got {type(initial_state).__name__}")
        want = (N, H, V, K) if state_v_first else (N, H, K, V)
        if tuple(initial_state.shape) != want:
            _fail(ValueError, f"initial_state must be [N, H, {'V, K' if state_v_first else 'K, V'}] = {list(want)} "
                              f"(N = {'the number of sequences' if cu_seqlens is not None else 'B'}), "
                              f"got {tuple(initial_state.shape)}")
        if initial_state.dtype != state_dtype:
            _fail(TypeError, f"initial_state must be {state_dtype} (with {q.dtype} inputs), got {initial_state.dtype}")
        if initial_state.device != q.device:
            _fail(ValueError, f"initial_state is on {initial_state.device}, q on {q.device}")
        if state_v_first:
            initial_state = initial_state.transpose(-1, -2)
        initial_state = initial_state.contiguous()

    if scale is None:
        scale = K ** -0.5
    # NOTES: decided here, not in forward (which runs with grad off): keep states only for a backward.
    save_states = not recompute_states and torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (q, k, v, g, initial_state))
    o, final_state = _ChunkGLR.apply(q.contiguous(), k.contiguous(), v.contiguous(), g.contiguous(),
                                     initial_state, float(scale), bool(output_final_state), cu_seqlens, save_states)
    if final_state is not None and state_v_first:
        final_state = final_state.transpose(-1, -2).contiguous()
    return o, final_state
