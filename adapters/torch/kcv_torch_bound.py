"""kcv's derived error bound for a PyTorch Model (docs/kernelbench.md, "The error bound, derived").

The float64 Model runs once more under BoundMode, a TorchDispatchMode that keeps, beside every
float64 tensor the Model makes, three per-element quantities (a first-order running error
analysis, in units of u = 2^-24, fp32's unit roundoff):

  E  worst case: |fp32 value - exact value| <= u*E for an fp32 evaluation of the same ops in any
     legitimate order (any summation tree, any split of a reduction, any scan order).
  W  spread: the standard deviation of that error on random data is <= u*W under Higham and
     Mary's model (each rounding's relative error mean-zero, independent of what came before);
     the population test (docs/population-test.md) uses it as its walk.
  S  status: 0 derived; 1 calibrated (an op without a rule made it or fed it: judged by the
     calibrated bound as a floor); 2 free (its class depends on the order: a partial product or
     intermediate of some legitimate fp32 order overflows or leaves its function's domain, DESIGN
     section 4 (c); any class and value is accepted).

Inputs and weights are exact (fp32 values widened); a tensor the Model makes from nothing (a
constant, arange) errs by its own rounding to fp32. The rules, one mechanism per family:

  elementwise   the op evaluated at the corners of its inputs' error intervals (x +- u*E, an
                inexact Python float +- its rounding, a bool that may flip): the largest
                deviation is the propagated error (|f'|*E to first order, kinks and jumps
                included), plus the op's own rounding rho*|y| (rho per op, ROUNDING below).
  multilinear   mm/bmm/addmm/baddbmm/mv/dot/convolution: E_y = op(|a|,E_b) + op(E_a,|b|) +
                n*op(|a|,|b|), n the reduction length (products plus additions in any tree);
                a bias adds one term and its own error.
  reductions    sum/mean: sum(E) + (n-1)*sum(|x|) (mean: divided by n, plus its rounding);
                amax/amin/max/min/sort/topk: the largest E the selection could pick;
                cumsum: as sum with n the position; prod/cumprod: relative errors add, and
                fp32 segment products that can overflow or underflow mark the element (below).
  structural    views, copies, cat, index, gather, pad, ...: the same op applied to E, W, S.
  decomposed    any other op torch._decomp can decompose (softmax, log_softmax, layer_norm,
                batch_norm, group_norm, var/std, norms, gelu, silu, mse_loss, ...): the
                decomposition runs under the mode, each of its ops by its rule.
  unruled       anything else: S = 1 on its outputs (and, by propagation, downstream); the op's
                name is reported.

Comparisons give bool tensors whose E is 1 where the comparison flips within its inputs' error
intervals; where(), masked_fill() and conversions to float take both sides there.
"""

import collections
import math
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

try:
    from torch._decomp import decomposition_table as _DECOMP
except Exception:  # noqa: BLE001 - no decompositions: those ops are unruled
    _DECOMP = {}

U = 2.0 ** -24
DBL_MAX = float(torch.finfo(torch.float64).max)
F32_MAX = float(torch.finfo(torch.float32).max)
LOG_F32_MAX = math.log(F32_MAX)                 # a product beyond this overflows fp32
LOG_F32_TINY = math.log(2.0 ** -126)           # below this, fp32 loses relative precision
# NOTES: every rounding op may also underflow: absolute error 2^-150 with gradual underflow,
# 2^-126 where a GPU kernel flushes subnormals to zero. In units of u: 2^-126 / 2^-24.
ETA = 2.0 ** -102

aten = torch.ops.aten

# NOTES: rho, the op's own rounding in units of u*|y|. 0: exact in fp32 (selection, sign, move).
# 1: correctly rounded by IEEE (+ - * / sqrt, conversions). Transcendentals: 8, four ulps: glibc
# and SLEEF's u10 functions err <= 1 ulp, CUDA's libdevice expf/logf/tanhf/erff <= 2 ulp, and
# Inductor's fast paths (ex2.approx, rsqrt.approx) a few ulps more; the H200 host's AVX512
# vectorized erf erred 5.4 u absolutely near |erf| = 1 (that is, relatively: erf is ~1 there),
# which rho = 8 covers. GELU's cancellation (1 + erf(x/sqrt2) at x << 0) then needs no constant
# of its own: GELU is decomposed into erf, add and mul, and erf's 8u*|erf| through 1 + erf and
# 0.5*x becomes the absolute allowance 4*|x|*u (measured 2.7*|x|*u, 4.7e-7 at x = -2.916).
# Composite arithmetic kernels (addcmul, lerp, leaky_relu's mul, hardswish's clamp*mul/6): 3.
ROUNDING = {}
for _n in ("abs neg relu clamp clamp_min clamp_max maximum minimum fmax fmin where masked_fill sign sgn floor ceil "
           "round trunc hardtanh threshold copysign eq ne lt le gt ge logical_and logical_or logical_not "
           "logical_xor isnan isinf isfinite signbit bitwise_not bitwise_and bitwise_or nan_to_num "
           "positive heaviside relu6").split():
    ROUNDING[_n] = 0
for _n in "add sub rsub mul div sqrt square reciprocal true_divide _to_copy to frac remainder fmod".split():
    ROUNDING[_n] = 1
for _n in "addcmul addcdiv lerp leaky_relu hardswish hardsigmoid".split():
    ROUNDING[_n] = 3
for _n in ("exp exp2 expm1 log log1p log2 log10 rsqrt sin cos tan tanh sinh cosh asin acos atan atan2 sigmoid erf "
           "erfc pow xlogy logaddexp hypot").split():
    ROUNDING[_n] = 8
ROUNDING["convert_element_type"] = 1
# NOTES: absolute allowances, in units of u, for the bounded odd functions that models use as
# 1 + f(x) (GELU's erf form and tanh form): their vectorized fp32 kernels err absolutely, not
# relatively, near 0 as near +-1. Measured: the H200 host's AVX512 erf 5.4 u near |erf| = 1; this
# machine's fp32 gelu 8 u relative at x = -0.034 (gelu = 0.5x(1 + erf(x/sqrt2)): an erf error
# absolute near 0). 8 u covers both; through 1 + f and 0.5*x it gives GELU's 4*|x|*u.
ABSOLUTE = {"erf": 8.0, "erfc": 8.0, "tanh": 8.0}

STRUCTURAL = set(("view _unsafe_view reshape _reshape_alias permute transpose t expand expand_as squeeze unsqueeze "
                  "slice select narrow as_strided clone contiguous detach alias lift_fresh lift_fresh_copy cat "
                  "concat stack split split_with_sizes chunk unbind flip roll repeat index index_select gather "
                  "take reflection_pad1d reflection_pad2d reflection_pad3d replication_pad1d replication_pad2d "
                  "replication_pad3d pixel_shuffle pixel_unshuffle channel_shuffle native_channel_shuffle "
                  "upsample_nearest1d upsample_nearest2d upsample_nearest3d _upsample_nearest_exact1d "
                  "_upsample_nearest_exact2d embedding diagonal tril triu movedim unfold im2col col2im_ "
                  "view_as_real slice_scatter select_scatter diagonal_scatter unsqueeze_copy view_copy "
                  "permute_copy expand_copy squeeze_copy transpose_copy t_copy _unsafe_index broadcast_in_dim "
                  "collapse_view split_dim squeeze reshape flatten unflatten ravel "
                  "constant_pad_nd masked_select index_put").split())
NONNEG_ALWAYS = set("abs exp exp2 sqrt rsqrt relu relu6 sigmoid square hardsigmoid softplus".split())
SELECTION = set("amax amin max min sort topk kthvalue median cummax cummin max_pool1d max_pool2d "
                "max_pool2d_with_indices max_pool3d_with_indices adaptive_max_pool2d adaptive_max_pool1d".split())
SOURCES_OK = set("zeros ones full empty empty_like zeros_like ones_like full_like new_zeros new_ones new_full "
                 "new_empty empty_strided arange linspace scalar_tensor eye tensor _tensor_constant".split())


def _lower(t):
    """The smallest element of an exact (or once-rounded) tensor, rounded down: a lower bound in
    every fp32 order; None where unknown."""
    if not (isinstance(t, torch.Tensor) and t.is_floating_point()) or t.numel() == 0:
        return False
    m = float(t.min())
    if not math.isfinite(m):
        return False
    return m * (1 - 2 * U) if m > 0 else m * (1 + 2 * U)


def _fp32_exact(t, chunk=1 << 20):
    """Every element of float64 t equal to its rounding to fp32 (NaN counted exact), tested a chunk
    at a time. The rounding error E of such a tensor is all zeros: one scalar instead of a tensor of
    t's size (the full form made five temporaries of t's size on the way; a 2^27-element input then
    took over 5 GB of the reference server's memory)."""
    flat = t.reshape(-1)
    for c in flat.split(chunk):
        if not bool(((c.float().double() == c) | torch.isnan(c)).all()):
            return False
    return True


def _finite(t):
    """torch.isfinite for a floating tensor in one pass (torch 1.13's takes four)."""
    return t.abs() <= torch.finfo(t.dtype).max


def _is_float(t):
    return isinstance(t, torch.Tensor) and t.is_floating_point()


def _tensors(x):
    """The tensors of a (possibly nested) argument list."""
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for a in x:
            yield from _tensors(a)
    elif isinstance(x, dict):
        for a in x.values():
            yield from _tensors(a)


def _map(x, f):
    """x with every tensor t replaced by f(t)."""
    if isinstance(x, torch.Tensor):
        return f(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map(a, f) for a in x)
    if isinstance(x, dict):
        return {k: _map(v, f) for k, v in x.items()}
    return x


# NOTES: the phrases of kcv's mentions_out_of_memory (src/kcv/engine.cpp) a Python exception carries.
_OUT_OF_MEMORY = ("CUDA out of memory", "CUDA error: out of memory", "cudaErrorMemoryAllocation", "_STATUS_ALLOC_FAILED",
                  "cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICES_UNAVAILABLE", "is/are busy or unavailable")


def out_of_memory(e):
    """The machine's memory ran out (a GPU allocator's message, or the host's MemoryError): not a
    rule's failure nor the Model's, so never a reason to fall back to the calibrated bound."""
    return isinstance(e, MemoryError) or any(p in str(e) for p in _OUT_OF_MEMORY)


def _inexact_float(s):
    return isinstance(s, float) and math.isfinite(s) and float(torch.tensor(s, dtype=torch.float32)) != s


class Track:
    """E, W (float64, broadcastable to the value), S (uint8 or None: all derived) and O (uint8 or
    None: 1 where the float64 value is finite but beyond fp32's range)."""
    __slots__ = ("E", "W", "S", "O", "L")

    def __init__(self, E, W, S=None, O=None, P=False):
        # L: a lower bound of every element in every fp32 order, or None. A square, an exp, a sum
        # of such is >= 0 (rounding keeps signs), var + eps >= eps: the lower end of the error
        # interval is clipped there where an op evaluates its corners (rsqrt(var + eps) stays
        # finite however large var's error). P=True means L = 0; a float, that bound.
        self.E, self.W, self.S, self.O = E, W, S, O
        self.L = (0.0 if P is True else None if P is False else float(P))

    @property
    def P(self):
        return self.L is not None and self.L >= 0

    def status_in(self):
        """S as an input of a later op: an element beyond fp32's range overflows there in every
        fp32 order, and what an op makes of it (Inf - Inf, Inf * 0) depends on the order: free.
        The element itself is not free (its class is +-Inf, as the reference rounds it)."""
        if self.O is None:
            return self.S
        over = self.O * 2
        return over if self.S is None else torch.maximum(torch.broadcast_to(self.S, over.shape), over)


class BoundMode(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.table = {}                       # id(tensor) -> (weakref, Track)
        self.unruled = collections.Counter()  # op name -> calls without a rule
        self.decomposing = set()

    # ---- the side table ------------------------------------------------------------------
    def put(self, t, track):
        if not isinstance(t, torch.Tensor):
            return
        key = id(t)
        self.table[key] = (weakref.ref(t, lambda _r, k=key, tb=self.table: tb.pop(k, None)), track)

    def get(self, t):
        hit = self.table.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
        # Not made under the mode: an input or a weight (fp32 values widened: exact), or a
        # float64 constant the Model holds: its rounding to fp32.
        if t.is_floating_point() and t.dtype == torch.float64 and not _fp32_exact(t):
            E = (t - t.float().double()).abs() / U
            E = E.masked_fill_(~(E <= DBL_MAX), 0.0)
        else:  # exact (a widened fp32 input or weight, the common case): E = 0, one scalar
            E = torch.zeros((), dtype=torch.float64, device=t.device)
        track = Track(E, E, P=_lower(t))
        self.put(t, track)
        return track

    # ---- dispatch --------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name.endswith("_") and not name.startswith("_"):
            return self.dispatch(func, name, args, kwargs)  # mutates: not run twice
        try:
            return self.dispatch(func, name, args, kwargs)
        except Exception as e:  # noqa: BLE001 - a rule that cannot take these arguments
            # NOTES: a rule's failure must not become the reference's: the op is then unruled
            # (its outputs and what follows judged by the calibrated floor), and named. Out of
            # memory is the machine's, not the rule's: the reference fails and says so, and a corpus
            # run reruns the pair beside fewer (session 49, an H100 beside 5 pairs: level2/79's mul
            # and var_mean judged by the calibrated floor for want of 198 MiB).
            if out_of_memory(e):
                raise
            self.unruled[f"{func} (its rule failed: {type(e).__name__}: {str(e).splitlines()[0][:120]})"] += 1
            return self.unruled_op(func, name, args, kwargs, count=False)

    def dispatch(self, func, name, args, kwargs):
        if name.endswith("_") and not name.startswith("_") and name not in ("copy_",):
            return self.inplace(func, name, args, kwargs)
        if name == "copy_":
            dst, src = args[0], args[1]
            func(*args, **kwargs)
            t = self.get(src) if isinstance(src, torch.Tensor) else Track(torch.zeros(()), torch.zeros(()))
            self.put(dst, Track(t.E.expand(dst.shape).clone() if t.E.dim() else t.E,
                                t.W.expand(dst.shape).clone() if t.W.dim() else t.W,
                                None if t.status_in() is None else t.status_in().expand(dst.shape).clone()))
            self.mark_base(dst, "copy_")
            return dst
        manual = (MANUAL_PRIMS if str(func).startswith("prims.") else MANUAL).get(name)
        if manual is not None and func not in self.decomposing:
            self.decomposing.add(func)
            try:
                with self:
                    return manual(*args, **kwargs)
            finally:
                self.decomposing.discard(func)
        if name in STRUCTURAL or (name in ("_to_copy", "to", "convert_element_type") and self.same_dtype(args, kwargs)):
            return self.structural(func, args, kwargs)
        if name in ROUNDING:
            return self.elementwise(func, name, args, kwargs)
        if name in ("mm", "bmm", "addmm", "baddbmm", "mv", "addmv", "dot", "convolution", "addbmm"):
            return self.multilinear(func, name, args, kwargs)
        if name in ("sum", "mean", "nansum"):
            return self.reduce_sum(func, name, args, kwargs)
        if name in SELECTION:
            return self.selection(func, name, args, kwargs)
        if name == "cumsum":
            return self.cumsum(func, args, kwargs)
        if name in ("cumprod", "prod"):
            return self.product(func, name, args, kwargs)
        if name in ("avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
                    "_adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool3d", "upsample_bilinear2d",
                    "upsample_linear1d", "upsample_trilinear3d"):
            return self.positive_linear(func, name, args, kwargs)
        if name in SOURCES_OK or not list(_tensors((args, kwargs))):
            return self.source(func, args, kwargs)
        if func in _DECOMP and func not in self.decomposing:
            self.decomposing.add(func)
            try:
                with self:
                    out = _DECOMP[func](*args, **kwargs)
            finally:
                self.decomposing.discard(func)
            return out
        return self.unruled_op(func, name, args, kwargs)

    # ---- helpers ---------------------------------------------------------------------------
    @staticmethod
    def same_dtype(args, kwargs):
        x = args[0] if args else None
        dt = kwargs.get("dtype", None)
        if dt is None:
            for a in args[1:]:
                if isinstance(a, torch.dtype):
                    dt = a
        return isinstance(x, torch.Tensor) and (dt is None or dt == x.dtype)

    def mark_base(self, dst, why):
        base = getattr(dst, "_base", None)
        if base is not None:
            # NOTES: an in-place write into a view changes its base, whose E the table does not
            # follow through the view: the base is judged by the calibrated floor from here.
            t = self.get(base)
            self.put(base, Track(t.E, t.W, torch.ones(base.shape, dtype=torch.uint8, device=base.device)))
            self.unruled[f"{why} into a view"] += 1

    def nonneg(self, *ts):
        """Every floating tensor among ts is non-negative in every fp32 order."""
        fl = [t for t in _tensors(ts) if _is_float(t)]
        return bool(fl) and all(self.get(t).P for t in fl)

    def finish(self, y, E, W, S, P=False):
        """Stores E, W, S for y (a float tensor), with the overflow check every rule shares."""
        if not isinstance(y, torch.Tensor):
            return
        if y.dtype == torch.bool:
            self.put(y, Track(E, W, S))
            return
        if not y.is_floating_point():
            return
        E = torch.broadcast_to(E, y.shape) if isinstance(E, torch.Tensor) else torch.full_like(y, E)
        W = torch.broadcast_to(W, y.shape) if isinstance(W, torch.Tensor) else torch.full_like(y, W)
        # A value finite in float64 but beyond fp32's range overflows in every fp32 order: kept as
        # O, which makes it free as the input of a later op (Track.status_in).
        O = None
        if y.dtype == torch.float64:
            a = y.abs()
            over = (a > F32_MAX) & (a <= DBL_MAX)
            O = over.to(torch.uint8) if bool(over.any()) else None
        if S is not None and S.shape != y.shape:
            S = torch.broadcast_to(S, y.shape)
        self.put(y, Track(E, W, S, O, P))

    def status_of(self, args, kwargs):
        return [(t, self.get(t).status_in()) for t in _tensors((args, kwargs)) if self.get(t).status_in() is not None]

    def propagate_status(self, func, args, kwargs, outs):
        """S of the outputs of a non-elementwise op: where a NaN put at the inputs' marked
        elements reaches (once per level, only when some input is marked)."""
        marked = self.status_of(args, kwargs)
        if not marked:
            return [None] * len(outs)
        result = [None] * len(outs)
        for level in (1, 2):
            if not any(bool((s >= level).any()) for _, s in marked):
                continue
            ids = {id(t): s for t, s in marked}

            def poison(t):
                s = ids.get(id(t))
                if s is None or not t.is_floating_point():
                    return t
                return torch.where(s >= level, torch.full_like(t, float("nan")), t)
            got = func(*_map(args, poison), **_map(kwargs, poison))
            got = list(got) if isinstance(got, (tuple, list)) else [got]
            for k, (y, g) in enumerate(zip(outs, got)):
                if not (_is_float(y) and _is_float(g)):
                    continue
                reached = (torch.isnan(g) & ~torch.isnan(y)).to(torch.uint8) * level
                result[k] = reached if result[k] is None else torch.maximum(result[k], reached)
        return result

    # ---- rules -----------------------------------------------------------------------------
    def source(self, func, args, kwargs):
        y = func(*args, **kwargs)
        for t in ([y] if isinstance(y, torch.Tensor) else list(_tensors(y))):
            if _is_float(t) and t.dtype == torch.float64:
                E = (t - t.float().double()).abs() / U
                E = E.masked_fill_(~(E <= DBL_MAX), 0.0)
                self.finish(t, E, E, None, P=_lower(t))
        return y

    def unruled_op(self, func, name, args, kwargs, count=True):
        y = func(*args, **kwargs)
        if count and any(_is_float(t) for t in _tensors(y)):
            # (an op whose outputs are all integer or bool, argmax say, makes nothing to bound:
            # its outputs are judged exactly; that its input's error may flip them is a limit)
            self.unruled[str(func)] += 1
        for t in _tensors(y):
            if _is_float(t):
                self.finish(t, torch.zeros((), dtype=torch.float64, device=t.device),
                            torch.zeros((), dtype=torch.float64, device=t.device),
                            torch.ones(t.shape, dtype=torch.uint8, device=t.device))
        return y

    def inplace(self, func, name, args, kwargs):
        base = getattr(aten, name[:-1], None)
        outplace = getattr(base, func._overloadname, None) if base is not None else None
        if outplace is None:
            return self.unruled_op(func, name, args, kwargs)
        y = self.__torch_dispatch__(outplace, (), args, kwargs)
        dst = args[0]
        t = self.get(y) if isinstance(y, torch.Tensor) else None
        dst.copy_(y)  # inside the handler: not dispatched to the mode again
        if t is not None:
            self.put(dst, t)
        self.mark_base(dst, name)
        return dst

    def structural(self, func, args, kwargs):
        y = func(*args, **kwargs)
        outs = list(y) if isinstance(y, (tuple, list)) else [y]
        if not any(_is_float(o) or (isinstance(o, torch.Tensor) and o.dtype == torch.bool) for o in outs):
            return y
        name = func.overloadpacket.__name__

        # A bool tensor is data where the op moves bools (a view of a mask), else an index (x[mask]).
        bool_data = any(isinstance(o, torch.Tensor) and o.dtype == torch.bool for o in outs)

        def with_(attr, dtype):
            def f(t):
                if not (t.is_floating_point() or (bool_data and t.dtype == torch.bool)):
                    return t  # an index
                tr = self.get(t)
                v = getattr(tr, attr)
                if v is None:
                    v = torch.zeros(t.shape, dtype=dtype, device=t.device)
                v = torch.broadcast_to(v, t.shape)
                return v.to(dtype) if v.dtype != dtype else v.contiguous() if name == "view" else v
            return f
        margs = list(args)
        if name == "constant_pad_nd" and len(margs) > 2:
            margs[2] = 0.0  # the pad value is exact in E's sense: its own rounding is added below
        res = {}
        for attr, dtype in (("E", torch.float64), ("W", torch.float64), ("S", torch.float64)):
            if attr == "S" and not self.status_of(args, kwargs):
                res[attr] = [None] * len(outs)
                continue
            got = func(*_map(tuple(margs), with_(attr, dtype)), **_map(kwargs, with_(attr, dtype)))
            res[attr] = list(got) if isinstance(got, (tuple, list)) else [got]
        for k, o in enumerate(outs):
            if not (_is_float(o) or (isinstance(o, torch.Tensor) and o.dtype == torch.bool)):
                continue
            S = res["S"][k]
            self.finish(o, res["E"][k], res["W"][k], None if S is None else S.round().to(torch.uint8),
                        P=self.nonneg(args, kwargs))
        return y

    def elementwise(self, func, name, args, kwargs):
        y = func(*args, **kwargs)
        outs = list(y) if isinstance(y, (tuple, list)) else [y]
        rho = ROUNDING[name]
        if name in ("_to_copy", "to"):
            rho = 1 if (isinstance(outs[0], torch.Tensor) and outs[0].is_floating_point()
                        and outs[0].dtype != torch.float64) else 0
        # The perturbable inputs: (position, alternatives, W/E ratio or None).
        spots = []
        flat = list(args)
        for i, a in enumerate(flat):
            if isinstance(a, torch.Tensor) and a.dtype == torch.bool:
                flip = self.get(a).E
                if bool((flip > 0).any()):
                    spots.append((i, [torch.logical_xor(a, torch.broadcast_to(flip > 0, a.shape))], None))
            elif _is_float(a):
                tr = self.get(a)
                if bool((tr.E > 0).any()):
                    # (a non-finite value is that value in every order: no interval around it)
                    d = (U * tr.E).masked_fill_(~_finite(a), 0.0) if tr.E.shape == a.shape else \
                        torch.where(_finite(a), U * tr.E, torch.zeros_like(tr.E))
                    ratio = torch.where(tr.E > 0, tr.W / tr.E.clamp_min(1e-300), torch.zeros_like(tr.E))
                    spots.append((i, [(a - d).clamp_min(tr.L) if tr.L is not None else a - d, a + d], ratio))
            elif _inexact_float(a):
                spots.append((i, [a * (1 - U), a * (1 + U)], None))

        def at(changes):
            b = list(flat)
            for i, v in changes:
                b[i] = v
            r = func(*b, **kwargs)
            return list(r) if isinstance(r, (tuple, list)) else [r]

        results = []
        for k, o in enumerate(outs):
            if not isinstance(o, torch.Tensor) or not (o.is_floating_point() or o.dtype == torch.bool):
                results.append(None)
                continue
            # NOTES: None until an input's interval adds to it (0 then): an op on exact inputs, the
            # common case, holds no deviation tensors (three of the output's size, and E, W their sums).
            results.append({"dev": None, "wdev": None, "free": None})

        finite_out = {}

        def deviation(k, o, g):
            if o.dtype == torch.bool:
                return (o != g).to(torch.float64) / U, torch.zeros(o.shape, dtype=torch.bool, device=o.device)
            if k not in finite_out:
                finite_out[k] = _finite(o)
            dev = (g.to(torch.float64) - o).abs_()
            # Finite here, not finite at a corner: an fp32 order can leave the domain (sqrt of a
            # cancelled tiny negative, log of a zero, 1/0) or overflow: the class is order-dependent.
            bad = ~(dev <= DBL_MAX)  # NaN or Inf
            return dev.masked_fill_(bad, 0.0).div_(U), bad.logical_and_(finite_out[k])

        def unit(ratio, o):
            return torch.broadcast_to(ratio, o.shape) if ratio is not None else 1.0

        def add_free(r, free):
            r["free"] = free if r["free"] is None else r["free"].logical_or_(free)

        if len(spots) == 2:
            # NOTES: two perturbed inputs: their four joint corners (the cross term of a product,
            # x*y's dx*dy, included). The spread scales with the larger of the two W/E ratios.
            (i, ai, ri), (j, aj, rj) = spots
            for x in ai:
                for z in aj:
                    got = at([(i, x), (j, z)])
                    for k, o in enumerate(outs):
                        if results[k] is not None:
                            dev, free = deviation(k, o, got[k])
                            r = results[k]  # (its dev is this op's own: kept in place)
                            r["dev"] = dev if r["dev"] is None else torch.maximum(r["dev"], dev, out=r["dev"])
                            add_free(r, free)
            ratio = ri if rj is None else rj if ri is None else torch.maximum(ri, rj)
            if ri is None or rj is None:
                ratio = None if (ri is None and rj is None) else (torch.clamp_min(ratio, 1.0))
            for k, o in enumerate(outs):
                if results[k] is not None and results[k]["dev"] is not None:
                    results[k]["wdev"] = results[k]["dev"] * unit(ratio, o)
        else:
            # One, or three and more: each input's interval alone (its two ends), summed.
            for i, alts, ratio in spots:
                per = [None] * len(outs)
                for alt in alts:
                    got = at([(i, alt)])
                    for k, o in enumerate(outs):
                        if results[k] is not None:
                            dev, free = deviation(k, o, got[k])
                            per[k] = dev if per[k] is None else torch.maximum(per[k], dev, out=per[k])
                            add_free(results[k], free)
                for k, o in enumerate(outs):
                    if results[k] is not None and per[k] is not None:
                        r = results[k]
                        w = per[k] * unit(ratio, o)
                        r["dev"] = per[k] if r["dev"] is None else r["dev"].add_(per[k])
                        r["wdev"] = w if r["wdev"] is None else r["wdev"].add_(w)
        S_in = None
        for t in _tensors((args, kwargs)):
            s = self.get(t).status_in()
            if s is not None:
                s = torch.broadcast_to(s, outs[0].shape) if s.shape != outs[0].shape else s
                S_in = s if S_in is None else torch.maximum(S_in, s)
        for k, o in enumerate(outs):
            r = results[k]
            if r is None:
                continue
            if o.dtype == torch.bool:
                flips = torch.zeros(o.shape, dtype=torch.float64, device=o.device) if r["dev"] is None else \
                    (r["dev"] > 0).to(torch.float64)
                self.finish(o, flips, flips.clone(), S_in)
                continue
            # (in place: the same three roundings as rho·|o| + ETA + ABSOLUTE, without two temporaries)
            own = o.abs().to(torch.float64).mul_(rho).add_(ETA if rho else 0.0).add_(ABSOLUTE.get(name, 0.0))
            E = own if r["dev"] is None else r["dev"] + own
            W = own if r["wdev"] is None else r["wdev"] + own  # E and W may be one tensor: never written in place
            S = S_in
            if r["free"] is not None and bool(r["free"].any()):
                f = r["free"].to(torch.uint8) * 2
                S = f if S is None else torch.maximum(S.expand(f.shape), f)
            self.finish(o, E, W, S, P=self.elementwise_nonneg(name, args))
        return y

    def elementwise_nonneg(self, name, args):
        """A lower bound of the op's result in every fp32 order (rounding keeps signs; True: 0;
        False: none known)."""
        if name == "add" and len(args) >= 2:
            lows = []
            for a in args[:2]:
                if isinstance(a, torch.Tensor) and a.is_floating_point():
                    lows.append(self.get(a).L)
                elif isinstance(a, (int, float)) and not isinstance(a, bool):
                    lows.append(float(a))
                else:
                    lows.append(None)
            if len(args) < 3 and all(lo is not None and lo >= 0 for lo in lows):
                return sum(lows) * (1 - 4 * U)  # (the roundings of the constant and the sum: down)
        if name in NONNEG_ALWAYS:
            return True
        tens = [a for a in args if isinstance(a, torch.Tensor)]
        scal = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
        if name == "mul" and len(tens) == 2 and tens[0] is tens[1]:
            return True
        if name == "pow" and len(args) > 1 and isinstance(args[1], (int, float)) and float(args[1]) % 2 == 0:
            return True
        if name in ("clamp", "clamp_min") and len(args) > 1 and isinstance(args[1], (int, float)) and args[1] >= 0:
            return True
        if name in ("add", "mul", "div", "maximum", "true_divide", "_to_copy", "to", "convert_element_type",
                    "clone", "where", "masked_fill"):
            fl = [t for t in tens if t.is_floating_point()]
            return bool(fl) and all(self.get(t).P for t in fl) and all(x >= 0 for x in scal)
        return False

    def multilinear(self, func, name, args, kwargs):
        y = func(*args, **kwargs)
        a_args = list(args)
        beta = kwargs.get("beta", 1)
        alpha = kwargs.get("alpha", 1)
        if name in ("addmm", "baddbmm", "addmv", "addbmm"):
            c, a, b = a_args[0], a_args[1], a_args[2]
            if len(a_args) > 3:
                beta = a_args[3]
            if len(a_args) > 4:
                alpha = a_args[4]
            core = {"addmm": aten.mm.default, "baddbmm": aten.bmm.default, "addmv": aten.mv.default,
                    "addbmm": None}[name]
            if core is None:
                def op(p, q):
                    return aten.bmm.default(p, q).sum(0)
            else:
                def op(p, q, core=core):
                    return core(p, q)
            n = a.shape[-1] * (a.shape[0] if name == "addbmm" else 1)
        elif name == "convolution":
            a, b, c = a_args[0], a_args[1], a_args[2]
            rest = a_args[3:]
            groups = rest[5] if len(rest) > 5 else 1
            transposed = rest[3] if len(rest) > 3 else False
            k = 1
            for s in b.shape[2:]:
                k *= s
            n = (b.shape[0] // groups if transposed else b.shape[1]) * k

            def op(p, q):
                return aten.convolution.default(p, q, None, *rest)
        else:
            a, b, c = a_args[0], a_args[1], None
            n = a.shape[-1]

            def op(p, q):
                return func(p, q)
        ta, tb = self.get(a), self.get(b)
        A, B = a.abs(), b.abs()
        AB = op(A, B)
        E = n * AB
        W = torch.zeros_like(AB)
        if bool((tb.E > 0).any()):
            E = E + op(A, torch.broadcast_to(tb.E, b.shape).contiguous())
            W = W + op(A, torch.broadcast_to(tb.W, b.shape).contiguous())
        if bool((ta.E > 0).any()):
            E = E + op(torch.broadcast_to(ta.E, a.shape).contiguous(), B)
            W = W + op(torch.broadcast_to(ta.W, a.shape).contiguous(), B)
        # NOTES: the spread of the reduction's own rounding (docs/population-test.md,
        # random_walk_scale): with r the sum of the n products and q the sum of their squares,
        # sqrt((n+1)(2r^2+q)/6 + q).
        r = op(a, b)
        q = op(a * a, b * b)
        W = W + torch.sqrt((n + 1) * (2 * r * r + q) / 6 + q)
        sa, sb = abs(float(alpha)), abs(float(beta))
        E, W, AB = sa * E, sa * W, sa * AB
        if c is not None:
            tc = self.get(c)
            Ec, Wc = torch.broadcast_to(tc.E, c.shape), torch.broadcast_to(tc.W, c.shape)
            if name == "convolution":  # the bias is per output channel: [1, C_out, 1, ...]
                to_channels = (1, -1) + (1,) * (y.dim() - 2)
                c, Ec, Wc = c.reshape(to_channels), Ec.reshape(to_channels), Wc.reshape(to_channels)
            C = c.abs()
            # A bias adds one term (one more addition in any tree) and its own error.
            E = E + sb * Ec + (sb * C + AB)
            W = W + sb * Wc + (sb * C + AB)
            if _inexact_float(alpha) or _inexact_float(beta) or sa != 1 or sb != 1:
                E = E + (sb * C + AB)
                W = W + (sb * C + AB)
        elif sa != 1:
            E = E + AB
            W = W + AB
        E = E + ETA * (n + 1)
        (S,) = self.propagate_status(func, args, kwargs, [y])
        self.finish(y, E, W, S, P=self.nonneg(args[:3] if name != 'convolution' else args[:3]))
        return y

    def reduce_sum(self, func, name, args, kwargs):
        y = func(*args, **kwargs)
        x = args[0]
        if not (_is_float(y) and _is_float(x)):
            return self.unruled_op(func, name, args, kwargs) if _is_float(y) else y
        tr = self.get(x)
        n = max(1, x.numel() // max(1, y.numel()))
        rest = list(args[1:])
        # NOTES: n terms, any tree: each term passes through at most n - 1 additions.
        Ex = torch.broadcast_to(tr.E, x.shape)
        Wx = torch.broadcast_to(tr.W, x.shape)
        E = func(Ex, *rest, **kwargs) + (n - 1) * func(x.abs(), *rest, **kwargs)
        q = func(x * x, *rest, **kwargs)
        if name == "mean":
            # the walk of the sum of n terms (r = n*y, q = n*mean(x^2)), then divided by n
            walk = torch.sqrt((n + 1) * (2 * (n * y) ** 2 + n * q) / 6 + n * q) / n
            E = E + y.abs()
            W = func(Wx, *rest, **kwargs) + walk + y.abs()
        else:
            walk = torch.sqrt((n + 1) * (2 * y * y + q) / 6 + q)
            W = func(Wx, *rest, **kwargs) + walk
        E = E + ETA * n
        (S,) = self.propagate_status(func, args, kwargs, [y])
        self.finish(y, E, W, S, P=self.nonneg(x))
        return y

    def selection(self, func, name, args, kwargs):
        y = func(*args, **kwargs)
        outs = list(y) if isinstance(y, (tuple, list)) else [y]
        x = args[0]
        if not _is_float(x):
            return y
        tr = self.get(x)
        Ex = torch.broadcast_to(tr.E, x.shape).contiguous()
        Wx = torch.broadcast_to(tr.W, x.shape).contiguous()
        vals = outs[0]
        if name in ("max_pool1d", "max_pool2d", "max_pool2d_with_indices", "max_pool3d_with_indices",
                    "adaptive_max_pool2d", "adaptive_max_pool1d", "cummax"):
            # The same window over E: the largest error the selection could pick.
            gE = func(Ex, *args[1:], **kwargs)
            gW = func(Wx, *args[1:], **kwargs)
            E = gE[0] if isinstance(gE, (tuple, list)) else gE
            W = gW[0] if isinstance(gW, (tuple, list)) else gW
        else:
            # max/min/sort/topk/median along a dim (or over everything): |sel(x~) - sel(x)| <=
            # the largest |x~ - x| among the candidates.
            dim = None
            if name in ("amax", "amin"):
                dim = args[1] if len(args) > 1 else kwargs.get("dim", [])
                dim = list(dim) if isinstance(dim, (list, tuple)) else [dim]
                if not dim:
                    dim = None
            elif len(args) > 1 and isinstance(args[1], int):
                dim = [args[1]]
            elif "dim" in kwargs:
                dim = [kwargs["dim"]]
            elif name in ("sort", "topk", "kthvalue", "median") and x.dim() > 0:
                dim = [-1]
            if name == "topk":
                dim = [args[2] if len(args) > 2 else kwargs.get("dim", -1)]
            if name in ("kthvalue",):
                dim = [args[2] if len(args) > 2 else kwargs.get("dim", -1)]
            if dim is None or x.dim() == 0:
                E, W = Ex.max(), Wx.max()
            else:
                E = torch.amax(Ex, dim=dim, keepdim=True)
                W = torch.amax(Wx, dim=dim, keepdim=True)
            if vals.dim() == 0:
                E, W = E.reshape(()), W.reshape(())
            elif E.dim() == vals.dim():
                E, W = torch.broadcast_to(E, vals.shape), torch.broadcast_to(W, vals.shape)
            else:
                E, W = torch.broadcast_to(E.squeeze(dim[0]), vals.shape), torch.broadcast_to(W.squeeze(dim[0]), vals.shape)
        S = self.propagate_status(func, args, kwargs, outs)
        self.finish(vals, E, W, S[0], P=self.nonneg(x))
        return y

    def cumsum(self, func, args, kwargs):
        y = func(*args, **kwargs)
        x = args[0]
        dim = args[1] if len(args) > 1 else kwargs["dim"]
        tr = self.get(x)
        shape = [1] * x.dim()
        if x.dim():
            shape[dim] = x.shape[dim]
        pos = torch.arange(1, (x.shape[dim] if x.dim() else 1) + 1, dtype=torch.float64,
                           device=x.device).reshape(shape)
        # NOTES: position i sums i terms; any scan (sequential, Hillis-Steele, Blelloch, Inductor's
        # split scan) passes each through at most i - 1 additions.
        Ex = torch.broadcast_to(tr.E, x.shape)
        E = torch.cumsum(Ex, dim) + (pos - 1) * torch.cumsum(x.abs(), dim) + ETA * pos
        q = torch.cumsum(x * x, dim)
        W = torch.cumsum(torch.broadcast_to(tr.W, x.shape), dim) + torch.sqrt((pos + 1) * (2 * y * y + q) / 6 + q)
        (S,) = self.propagate_status(func, args, kwargs, [y])
        self.finish(y, E, W, S, P=self.nonneg(x))
        return y

    def product(self, func, name, args, kwargs):
        y = func(*args, **kwargs)
        x = args[0]
        if not (_is_float(x) and _is_float(y)):
            return y
        tr = self.get(x)
        scan = name == "cumprod"
        dim = None
        if scan:
            dim = args[1] if len(args) > 1 else kwargs["dim"]
        elif len(args) > 1 and isinstance(args[1], int):
            dim = args[1]
        keep = bool(args[2]) if (not scan and len(args) > 2 and isinstance(args[2], bool)) else kwargs.get("keepdim", False)
        xs = x.reshape(-1) if dim is None else x
        d = 0 if dim is None else dim
        if xs.dim() == 0:
            xs = xs.reshape(1)
        Ex = torch.broadcast_to(tr.E, x.shape).reshape(xs.shape)
        ax = xs.abs()
        rel = torch.where(ax > 0, Ex / ax.clamp_min(1e-300), torch.zeros_like(ax))
        # An inexact zero (its E > 0) could be non-zero in fp32: its product's error is the product
        # of the others times E there, which the relative form cannot say: calibrated floor.
        loose_zero = ((ax == 0) & (Ex > 0)).to(torch.float64)
        pos = torch.ones_like(xs)
        # NOTES: the segment products of fp32 partial orders, in logs. L the prefix sums of
        # log|x| over the finite non-zero terms; the largest and smallest product of a contiguous
        # segment within the first i terms: max_{b<=i} (L_b - min_{a<b} L_a) and the like. An
        # infinite term overflows, a zero underflows, every segment that holds it: counted apart
        # (as +-1e300 they would swamp the other terms' logs). NaN: the element is NaN anyway.
        regular = torch.isfinite(xs) & (ax > 0)
        z = torch.where(regular, torch.log(torch.where(regular, ax, torch.ones_like(ax))), torch.zeros_like(ax))
        inf_term = torch.isinf(xs).to(torch.float64)
        zero_term = (xs == 0).to(torch.float64)
        L = torch.cumsum(z, d)
        zero_front = torch.zeros_like(L.narrow(d, 0, 1))
        Lprev = torch.cat([zero_front, L.narrow(d, 0, L.shape[d] - 1)], d)
        seg_hi = torch.cummax(L - torch.cummin(Lprev, d).values, d).values
        seg_lo = torch.cummin(L - torch.cummax(Lprev, d).values, d).values
        if scan:
            cnt = torch.cumsum(pos, d)
            R = torch.cumsum(rel, d)
            loose = torch.cumsum(loose_zero, d) > 0
            over = (seg_hi > LOG_F32_MAX) | (torch.cumsum(inf_term, d) > 0)
            under = (seg_lo < LOG_F32_TINY) | (torch.cumsum(zero_term, d) > 0)
        else:
            cnt = pos.sum(d, keepdim=True)
            R = rel.sum(d, keepdim=True)
            loose = loose_zero.sum(d, keepdim=True) > 0
            over = (seg_hi.narrow(d, seg_hi.shape[d] - 1, 1) > LOG_F32_MAX) | (inf_term.sum(d, keepdim=True) > 0)
            under = (seg_lo.narrow(d, seg_lo.shape[d] - 1, 1) < LOG_F32_TINY) | (zero_term.sum(d, keepdim=True) > 0)
        shape_y = y.shape
        ay = y.abs().reshape(R.shape) if y.numel() == R.numel() else y.abs().reshape(-1)
        # relative errors add: each of the n terms' own error and n - 1 roundings.
        E = ay * (R + torch.clamp_min(cnt - 1, 0)) + ETA * cnt
        # A segment that underflows while the whole does not: that order loses the element's
        # relative precision (0 where the reference is not): up to 2|y|.
        E = E + under.to(torch.float64) * 2 * ay / U
        # Free: a segment overflows while the product is within fp32's range (that order gives
        # Inf), or one overflows and another underflows (Inf * 0 = NaN). A product beyond the range
        # with nothing underflowing is +-Inf in every order: not free (the reference rounds to it).
        free = over & (under | (ay <= F32_MAX))
        S = torch.where(free, torch.full_like(ay, 2), torch.where(loose, torch.ones_like(ay), torch.zeros_like(ay)))
        if not keep and not scan and dim is not None:
            E, S = E.squeeze(d), S.squeeze(d)
        E, S = E.reshape(shape_y), S.reshape(shape_y)
        (S_in,) = self.propagate_status(func, args, kwargs, [y])
        S = S.to(torch.uint8)
        if S_in is not None:
            S = torch.maximum(S, S_in)
        self.finish(y, E, E, S if bool(S.any()) else None, P=self.nonneg(x))
        return y

    def positive_linear(self, func, name, args, kwargs):
        y = func(*args, **kwargs)
        x = args[0]
        tr = self.get(x)
        Ex = torch.broadcast_to(tr.E, x.shape).contiguous()
        Wx = torch.broadcast_to(tr.W, x.shape).contiguous()
        # NOTES: averages and interpolations with non-negative weights summing to 1: n terms (at
        # most the largest window), their products with the weights and the division: n + 1.
        n = max(1, x.numel() // max(1, y.numel()))
        if name.startswith("avg_pool") and len(args) > 1:
            k = args[1]
            k = list(k) if isinstance(k, (list, tuple)) else [k]
            n = 1
            for v in k:
                n *= int(v)
            if len(k) == 1 and name != "avg_pool1d":  # a single size for every spatial dim
                n = int(k[0]) ** (x.dim() - 2)
        if name.startswith("adaptive") or name.startswith("_adaptive"):
            n = 1
            for s_in, s_out in zip(x.shape[2:], y.shape[2:]):
                n *= -(-s_in // max(1, s_out)) + 1
        if name.startswith("upsample"):
            n = 2 ** (x.dim() - 2)
        Lx = func(x.abs(), *args[1:], **kwargs)
        E = func(Ex, *args[1:], **kwargs) + (n + 1) * Lx + ETA * n
        W = func(Wx, *args[1:], **kwargs) + (n + 1) * Lx
        (S,) = self.propagate_status(func, args, kwargs, [y])
        self.finish(y, E, W, S, P=self.nonneg(x))
        return y


def run(model64, args64):
    """Runs model64 on args64 under BoundMode. Returns (outputs, [Track per output], unruled).
    Where the run itself fails, every output is calibrated and the reason is the one unruled."""
    mode = BoundMode()
    try:
        with torch.no_grad():
            with mode:
                outs = model64(*args64)
    except Exception as e:  # noqa: BLE001
        if out_of_memory(e):
            raise  # the machine's memory, not the bound's (BoundMode.__torch_dispatch__)
        with torch.no_grad():
            outs = model64(*args64)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        why = f"the bound's run failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        tracks = [None if not (isinstance(o, torch.Tensor) and o.is_floating_point()) else
                  Track(torch.zeros(o.shape, dtype=torch.float64), torch.zeros(o.shape, dtype=torch.float64),
                        torch.ones(o.shape, dtype=torch.uint8)) for o in outs]
        return outs, tracks, {why: 1}
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    tracks = []
    for o in outs:
        if not isinstance(o, torch.Tensor) or not o.is_floating_point():
            tracks.append(None)
            continue
        t = mode.get(o)
        E = torch.broadcast_to(t.E, o.shape).to(torch.float64)
        W = torch.broadcast_to(t.W, o.shape).to(torch.float64)
        S = torch.zeros(o.shape, dtype=torch.uint8, device=o.device) if t.S is None else \
            torch.broadcast_to(t.S, o.shape).to(torch.uint8)
        # A bound that is not a number where the value is finite: not derived (a masked
        # non-finite input, say): calibrated floor.
        # (beyond fp32's range the class is +-Inf, as the reference rounds it: E does not matter)
        bad = torch.isfinite(o) & (o.abs() <= F32_MAX) & ~(torch.isfinite(E) & torch.isfinite(W)) & (S < 2)
        S = torch.where(bad, torch.ones_like(S), S)
        E = torch.where(torch.isfinite(E), E, torch.zeros_like(E))
        W = torch.where(torch.isfinite(W), W, torch.zeros_like(W))
        tracks.append(Track(E.contiguous(), W.contiguous(), S.contiguous()))
    return outs, tracks, dict(mode.unruled)


# ---- manual decompositions: ops whose torch._decomp form lowers to prims, or has none ---------
# Each runs under the mode (its ops by their rules), written as the textbook fp32 kernel computes
# it: two-pass variance, sqrt of a sum of squares.

def _dims_of(x, dim):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.dim()))
    return list(dim) if isinstance(dim, (list, tuple)) else [dim]


def _var_args(args, kwargs):
    x, rest = args[0], list(args[1:])
    dim, correction, keepdim = None, None, kwargs.get("keepdim", False)
    if rest and (rest[0] is None or isinstance(rest[0], (list, tuple, int)) and not isinstance(rest[0], bool)):
        dim = rest.pop(0)
    for r in rest:
        if isinstance(r, bool):
            if correction is None and "unbiased_seen" not in kwargs:
                correction = 1 if r else 0
                kwargs = dict(kwargs, unbiased_seen=True)
            else:
                keepdim = r
        elif isinstance(r, (int, float)) and not isinstance(r, bool):
            correction = r
    if "unbiased" in kwargs:
        correction = 1 if kwargs["unbiased"] else 0
    if kwargs.get("correction") is not None:
        correction = kwargs["correction"]
    if correction is None:
        correction = 1
    return x, _dims_of(x, dim), float(correction), keepdim


def _var_mean(x, dims, correction, keepdim):
    n = 1
    for d in dims:
        n *= x.shape[d]
    mean = torch.mean(x, dims, keepdim=True)
    d = x - mean
    var = torch.sum(d * d, dims, keepdim=keepdim) / max(n - correction, 0)
    if not keepdim:
        for d in sorted((d % max(1, x.dim()) for d in dims), reverse=True):
            mean = mean.squeeze(d)
    return var, mean


def _var(*args, **kwargs):
    return _var_mean(*_var_args(args, kwargs))[0]


def _std(*args, **kwargs):
    return torch.sqrt(_var(*args, **kwargs))


def _var_mean_op(*args, **kwargs):
    return _var_mean(*_var_args(args, kwargs))


def _std_mean_op(*args, **kwargs):
    v, m = _var_mean(*_var_args(args, kwargs))
    return torch.sqrt(v), m


def _prims_var(x, dims, correction=1, **kwargs):
    return _var_mean(x, _dims_of(x, dims), float(kwargs.get("correction", correction)), False)[0]


def _norm_p(x, p, dim, keepdim):
    dims = _dims_of(x, dim)
    p = 2.0 if p is None else float(p)
    if p == 2.0:
        return torch.sqrt(torch.sum(x * x, dims, keepdim=keepdim))
    if p == 1.0:
        return torch.sum(torch.abs(x), dims, keepdim=keepdim)
    if p == float("inf"):
        return torch.amax(torch.abs(x), dims, keepdim=keepdim)
    if p == float("-inf"):
        return torch.amin(torch.abs(x), dims, keepdim=keepdim)
    if p == 0.0:
        return torch.sum((x != 0).to(x.dtype), dims, keepdim=keepdim)
    return torch.pow(torch.sum(torch.pow(torch.abs(x), p), dims, keepdim=keepdim), 1.0 / p)


def _linalg_vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    return _norm_p(x, ord, dim, keepdim)


def _norm(x, p=2, dim=None, keepdim=False, dtype=None):
    if isinstance(p, torch.dtype):  # norm.ScalarOpt_dtype
        p = 2
    return _norm_p(x, p, dim, keepdim)


def _reduce(v, reduction):
    return v if reduction == 0 else torch.mean(v) if reduction == 1 else torch.sum(v)


def _smooth_l1(x, y, reduction=1, beta=1.0):
    d = torch.abs(x - y)
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(torch.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


MANUAL = {"var": _var, "std": _std, "var_mean": _var_mean_op, "std_mean": _std_mean_op,
          "linalg_vector_norm": _linalg_vector_norm, "norm": _norm, "smooth_l1_loss": _smooth_l1}
MANUAL_PRIMS = {"var": _prims_var}
