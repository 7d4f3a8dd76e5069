#!/usr/bin/env python3
"""Tests of glr_torch.chunk_glr (glr/python/glr_torch), the PyTorch op over glr's CUDA kernels.

    python3 tests/python/test_glr_torch.py [-v] [TestClass.test_name ...]

GlrCudaTests, on a GPU: forward and backward against a plain float64 recurrence in torch (fixed
length and varlen with an empty and a length-1 sequence, vector and scalar gates, with and without
initial_state and final state), float32 to fp32 accuracy (TF32 would miss it by ~100x), bf16 and
f16 within one 16-bit rounding of every product's operands, torch.autograd.gradcheck in float64
on every differentiable input (initial_state included), the caller's stream, non-contiguous
inputs, bitwise repeatability and the refusals.

StandInTests, everywhere: the same argument handling and autograd plumbing with a CPU stand-in
for the compiled extension (the float64 recurrence itself), so the Python half is tested where
there is no GPU.

Where torch has no CUDA it prints "SKIP: <reason>" after the stand-in tests and exits 0 (ctest
reports it skipped). GLR_TORCH_REQUIRE_CUDA=1 makes that a failure (the device run sets it).
"""

import math
import os
import sys
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

try:
    import torch
except Exception as e:  # noqa: BLE001 - any broken torch is a reason to skip, said out loud
    print(f"SKIP: torch cannot be imported by {sys.executable}: {type(e).__name__}: {e}")
    sys.exit(0)

try:  # an installed / built glr_torch (PYTHONPATH) first, else this checkout's (JIT build)
    import glr_torch
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "glr", "python", "glr_torch"))
    import glr_torch

CUDA = torch.cuda.is_available()


# ---- the float64 reference: the recurrence step by step, differentiable by torch's autograd ----

def sequences(B, T, cu):
    """(batch row, start, end) per sequence."""
    if cu is None:
        return [(b, 0, T) for b in range(B)]
    cu = [int(c) for c in cu]
    return [(0, cu[n], cu[n + 1]) for n in range(len(cu) - 1)]


def reference(q, k, v, g, h0, scale, cu=None):
    """o [B,T,H,V] and hT [N,H,K,V] in float64 from float64 (CPU) tensors; S_t = exp(g_t) S_{t-1} + k_t^T v_t."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    gk = g if g.dim() == 4 else g.unsqueeze(-1).expand(B, T, H, K)
    rows = {}
    finals = []
    for n, (b, s, e) in enumerate(sequences(B, T, cu)):
        S = h0[n] if h0 is not None else torch.zeros(H, K, V, dtype=q.dtype)
        for t in range(s, e):
            S = torch.exp(gk[b, t]).unsqueeze(-1) * S + k[b, t].unsqueeze(-1) * v[b, t].unsqueeze(-2)
            rows[(b, t)] = scale * torch.einsum("hk,hkv->hv", q[b, t], S)
        finals.append(S)
    o = torch.stack([torch.stack([rows[(b, t)] for t in range(T)]) if T else torch.zeros(0, H, V, dtype=q.dtype)
                     for b in range(B)])
    return o, torch.stack(finals)


def draw(B, T, H, K, V, gate="vector", dtype=torch.float32, device="cpu", h0=True, seed=0, N=None):
    """q, k, v (dtype), g (log sigmoid of N(2, 1.5): decays around 0.88), h0 (float32/64), on device."""
    gen = torch.Generator().manual_seed(seed)
    state = torch.float64 if dtype == torch.float64 else torch.float32
    q, k = (torch.randn(B, T, H, K, generator=gen) for _ in range(2))
    v = torch.randn(B, T, H, V, generator=gen)
    gshape = (B, T, H, K) if gate == "vector" else (B, T, H)
    g = torch.nn.functional.logsigmoid(2 + 1.5 * torch.randn(*gshape, generator=gen))
    s0 = torch.randn(N if N is not None else B, H, K, V, generator=gen) if h0 else None
    out = [x.to(dtype).to(device) for x in (q, k, v)] + [g.to(state).to(device)]
    return out + [s0.to(state).to(device) if s0 is not None else None]


def as64(*xs):
    return [x.detach().double().cpu() if x is not None else None for x in xs]


def rel_err(got, want):
    """max |got - want| / max(1, max |want|): error relative to the tensor's largest value."""
    got, want = got.detach().double().cpu(), want.detach().double().cpu()
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.numel() == 0:
        return 0.0
    if not torch.isfinite(got).all():
        return math.inf
    return ((got - want).abs().max() / max(1.0, want.abs().max().item())).item()


# fp32 accumulation against the fp64 recurrence: observed ~1e-7; TF32 products give ~1e-3.
TOL = {torch.float32: 2e-5, torch.float64: 1e-12, torch.bfloat16: 3e-2, torch.float16: 5e-3}


# ---- the tests, for the real extension (cuda) and the CPU stand-in ----

class Cases:
    device = "cpu"
    small = False  # the stand-in runs the same cases at smaller sizes

    def T(self, t):
        return min(t, 20) if self.small else t

    def check_forward(self, B, T, H, K, V, gate, dtype, with_h0, final, cu=None, seed=0):
        N = len(cu) - 1 if cu is not None else None
        q, k, v, g, h0 = draw(B, T, H, K, V, gate, dtype, self.device, with_h0, seed, N)
        cu_t = torch.tensor(cu, dtype=torch.int64, device=self.device) if cu is not None else None
        o, hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=final, cu_seqlens=cu_t)
        self.assertEqual(o.dtype, dtype)
        self.assertEqual(tuple(o.shape), (B, T, H, V))
        ro, rhT = reference(*as64(q, k, v, g, h0), K ** -0.5, cu)
        tol = TOL[dtype]
        self.assertLessEqual(rel_err(o, ro), tol, f"o: B={B} T={T} H={H} K={K} V={V} {gate} {dtype} h0={with_h0}")
        if final:
            self.assertEqual(hT.dtype, torch.float64 if dtype == torch.float64 else torch.float32)
            self.assertLessEqual(rel_err(hT, rhT), tol, "final_state")
        else:
            self.assertIsNone(hT)

    def check_backward(self, B, T, H, K, V, gate, dtype, with_h0, final, cu=None, seed=1):
        N = len(cu) - 1 if cu is not None else None
        ins = draw(B, T, H, K, V, gate, dtype, self.device, with_h0, seed, N)
        leaves = [x.clone().requires_grad_(True) if x is not None else None for x in ins]
        q, k, v, g, h0 = leaves
        cu_t = torch.tensor(cu, dtype=torch.int64, device=self.device) if cu is not None else None
        o, hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=final, cu_seqlens=cu_t)
        gen = torch.Generator().manual_seed(seed + 100)
        do = torch.randn(o.shape, generator=gen).to(dtype)
        dhT = torch.randn(hT.shape, generator=gen).to(hT.dtype) if final else None
        torch.autograd.backward([o, hT] if final else [o], [do.to(self.device), dhT.to(self.device)] if final
                                else [do.to(self.device)])
        ref = [x.requires_grad_(True) if x is not None else None for x in as64(*leaves)]
        ro, rhT = reference(*ref, K ** -0.5, cu)
        outs, grads = [ro], [do.double()]
        if final:
            outs.append(rhT), grads.append(dhT.double())
        torch.autograd.backward(outs, grads)
        tol = TOL[dtype] * (4 if dtype in (torch.float32, torch.float64) else 1)
        for name, got, want in zip(("dq", "dk", "dv", "dg", "dh0"), leaves, ref):
            if got is None:
                continue
            self.assertIsNotNone(got.grad, name)
            self.assertEqual(got.grad.dtype, got.dtype, name)
            self.assertLessEqual(rel_err(got.grad, want.grad), tol,
                                 f"{name}: B={B} T={T} H={H} K={K} V={V} {gate} {dtype} h0={with_h0} final={final}")

    # -- forward --
    def test_forward_fixed_float32(self):
        for gate in ("vector", "scalar"):
            for with_h0 in (False, True):
                for final in (False, True):
                    self.check_forward(2, self.T(150), 2, 32, 16, gate, torch.float32, with_h0, final)

    def test_forward_awkward_sizes(self):
        for (B, T, H, K, V) in ((1, 1, 1, 1, 1), (3, 13, 1, 7, 3), (1, 127, 3, 13, 127), (2, 65, 2, 128, 64)):
            self.check_forward(B, self.T(T), H, K, V, "vector", torch.float32, True, True)

    def test_forward_varlen(self):
        # an empty sequence (its final state is its initial one) and one of length 1
        cu = [0, 0, 1, 37, 100, 165] if not self.small else [0, 0, 1, 9, 20]
        for gate in ("vector", "scalar"):
            for with_h0 in (False, True):
                self.check_forward(1, cu[-1], 2, 16, 32, gate, torch.float32, with_h0, True, cu=cu)

    def test_varlen_int32_cu_seqlens_and_host_copy(self):
        cu = [0, 5, 5, 17]
        q, k, v, g, h0 = draw(1, 17, 2, 8, 8, device=self.device, N=3)
        want, want_hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=True,
                                            cu_seqlens=torch.tensor(cu, device=self.device))
        got, got_hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=True,
                                          cu_seqlens=torch.tensor(cu, dtype=torch.int32, device=self.device),
                                          cu_seqlens_cpu=torch.tensor(cu))
        self.assertTrue(torch.equal(got, want) and torch.equal(got_hT, want_hT))
        self.assertTrue(torch.equal(got_hT[1].cpu(), h0[1].cpu()), "the empty sequence's state passes through")

    def test_empty_sequence_length(self):
        q, k, v, g, h0 = draw(2, 0, 2, 8, 4, device=self.device)
        o, hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=True)
        self.assertEqual(tuple(o.shape), (2, 0, 2, 4))
        self.assertTrue(torch.equal(hT.cpu(), h0.cpu()))

    def test_scale_and_state_v_first(self):
        q, k, v, g, h0 = draw(2, self.T(40), 2, 8, 4, device=self.device)
        o, hT = glr_torch.chunk_glr(q, k, v, g, scale=0.3, initial_state=h0, output_final_state=True)
        ro, rhT = reference(*as64(q, k, v, g, h0), 0.3)
        self.assertLessEqual(rel_err(o, ro), TOL[torch.float32])
        o2, hT2 = glr_torch.chunk_glr(q, k, v, g, scale=0.3, initial_state=h0.transpose(-1, -2).contiguous(),
                                      output_final_state=True, state_v_first=True)
        self.assertTrue(torch.equal(o2, o))
        self.assertEqual(tuple(hT2.shape), (2, 2, 4, 8))
        self.assertTrue(torch.equal(hT2.transpose(-1, -2), hT))

    def test_gate_in_bfloat16_is_upcast(self):
        q, k, v, g, h0 = draw(1, self.T(30), 1, 8, 8, device=self.device)
        g16 = g.bfloat16().requires_grad_(True)
        o, _ = glr_torch.chunk_glr(q, k, v, g16)
        ro, _ = reference(*as64(q, k, v, g16, None), 8 ** -0.5)
        self.assertLessEqual(rel_err(o, ro), TOL[torch.float32])
        o.sum().backward()
        self.assertEqual(g16.grad.dtype, torch.bfloat16)

    def test_noncontiguous_inputs(self):
        B, T, H, K, V = 2, self.T(70), 2, 16, 8
        q, k, v, g, h0 = draw(B, T, H, K, V, device=self.device)
        # the same values through strided views: [B,H,T,K] storage transposed back, a padded v
        qt = q.transpose(1, 2).contiguous().transpose(1, 2)
        vp = torch.zeros(B, T, H, V + 3, device=self.device)[..., 1:V + 1]
        vp.copy_(v)
        self.assertFalse(qt.is_contiguous() or vp.is_contiguous())
        want, want_hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=True)
        got, got_hT = glr_torch.chunk_glr(qt, k, vp, g, initial_state=h0, output_final_state=True)
        self.assertTrue(torch.equal(got, want) and torch.equal(got_hT, want_hT))

    # -- backward --
    def test_backward_fixed_float32(self):
        for gate in ("vector", "scalar"):
            for with_h0, final in ((False, False), (True, False), (False, True), (True, True)):
                self.check_backward(2, self.T(100), 2, 16, 32, gate, torch.float32, with_h0, final)

    def test_backward_varlen(self):
        cu = [0, 3, 3, 70, 131] if not self.small else [0, 3, 3, 12, 20]
        for gate in ("vector", "scalar"):
            self.check_backward(1, cu[-1], 2, 8, 16, gate, torch.float32, True, True, cu=cu)

    def test_backward_awkward_sizes(self):
        for (B, T, H, K, V) in ((1, 1, 1, 1, 1), (2, 13, 1, 3, 7), (1, 129, 2, 33, 5)):
            self.check_backward(B, self.T(T), H, K, V, "vector", torch.float32, True, True)

    def test_only_final_state_used(self):
        q, k, v, g, h0 = (x.requires_grad_(True) for x in draw(1, self.T(30), 1, 4, 4, device=self.device))
        _, hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=True)
        hT.sum().backward()
        ref = [x.requires_grad_(True) for x in as64(q, k, v, g, h0)]
        reference(*ref, 0.5)[1].sum().backward()
        for got, want in zip((q, k, v, g, h0), ref):  # q does not reach hT: its gradient is 0
            want_grad = want.grad if want.grad is not None else torch.zeros_like(want)
            self.assertLessEqual(rel_err(got.grad, want_grad), 4 * TOL[torch.float32])

    # -- reduced precision --
    def test_bfloat16_and_float16(self):
        for dtype in (torch.bfloat16, torch.float16):
            for gate in ("vector", "scalar"):
                self.check_forward(2, self.T(130), 2, 64, 64, gate, dtype, True, True)
                self.check_backward(2, self.T(130), 2, 64, 32, gate, dtype, True, True)

    # -- gradcheck, float64, every differentiable input --
    def gradcheck(self, B, T, H, K, V, gate, cu=None, final=True):
        N = len(cu) - 1 if cu is not None else None
        ins = [x.requires_grad_(True) for x in draw(B, T, H, K, V, gate, torch.float64, self.device, True, 7, N)]
        cu_t = torch.tensor(cu, dtype=torch.int64, device=self.device) if cu is not None else None

        def f(q, k, v, g, h0):
            o, hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=final, cu_seqlens=cu_t)
            return (o, hT) if final else o
        self.assertTrue(torch.autograd.gradcheck(f, ins, eps=1e-6, atol=1e-6, rtol=1e-4))

    def test_gradcheck_float64(self):
        if self.small:
            self.gradcheck(1, 4, 1, 2, 3, "vector")
            return
        self.gradcheck(1, 70, 1, 3, 5, "vector")            # crosses the 64-step chunk boundary
        self.gradcheck(2, 19, 2, 4, 2, "scalar")
        self.gradcheck(1, 41, 1, 3, 3, "vector", cu=[0, 3, 3, 41])
        self.gradcheck(1, 23, 1, 2, 3, "scalar", cu=[0, 1, 23], final=False)

    # -- refusals: clear errors before anything runs --
    def test_refusals(self):
        q, k, v, g, h0 = draw(2, 8, 2, 4, 4, device=self.device)
        with self.assertRaisesRegex(TypeError, "one dtype"):
            glr_torch.chunk_glr(q, k.double(), v, g)
        with self.assertRaisesRegex(ValueError, r"v must be \[B, T, H, V\]"):
            glr_torch.chunk_glr(q, k, v[:, :4], g)
        with self.assertRaisesRegex(ValueError, "vector gate"):
            glr_torch.chunk_glr(q, k, v, g[..., :2])
        with self.assertRaisesRegex(ValueError, "initial_state must be"):
            glr_torch.chunk_glr(q, k, v, g, initial_state=h0[:1])
        with self.assertRaisesRegex(TypeError, "initial_state must be torch.float32"):
            glr_torch.chunk_glr(q, k, v, g, initial_state=h0.bfloat16())
        with self.assertRaisesRegex(ValueError, "batch size is expected to be 1"):
            glr_torch.chunk_glr(q, k, v, g, cu_seqlens=torch.tensor([0, 8], device=self.device))
        with self.assertRaisesRegex(ValueError, "never decrease"):
            glr_torch.chunk_glr(q[:1], k[:1], v[:1], g[:1], cu_seqlens=torch.tensor([0, 5, 3, 8], device=self.device))
        with self.assertRaisesRegex(ValueError, "end at T=8"):
            glr_torch.chunk_glr(q[:1], k[:1], v[:1], g[:1], cu_seqlens=torch.tensor([0, 9], device=self.device))
        with self.assertRaisesRegex(TypeError, "float32, bfloat16, float16 or float64"):
            glr_torch.chunk_glr(q.int(), k.int(), v.int(), g)


class StandIn:
    """The compiled extension's fwd/bwd, done by the float64 reference on the CPU."""

    calls = []  # (what, save_states or the kept object bwd received): the plumbing of kept states

    @staticmethod
    def fwd(q, k, v, g, h0, cu, scale, output_final_state, save_states=False):
        cu_list = cu.tolist() if cu is not None else None
        o, hT = reference(*as64(q, k, v, g, h0), scale, cu_list)
        state = torch.float64 if q.dtype == torch.float64 else torch.float32
        kept = torch.zeros(3, dtype=torch.uint8) if save_states else None  # what the extension would keep
        StandIn.calls.append(("fwd", save_states, kept))
        return o.to(q.dtype), (hT.to(state) if output_final_state else None), kept

    @staticmethod
    def bwd(q, k, v, g, h0, cu, do, dht, scale, want_dh0, saved=None):
        StandIn.calls.append(("bwd", saved))
        with torch.enable_grad():  # autograd runs a backward with grad mode off
            ins = [x.requires_grad_(True) if x is not None else None for x in as64(q, k, v, g, h0)]
            o, hT = reference(*ins, scale, cu.tolist() if cu is not None else None)
            outs, grads = [o], [do.double()]
            if dht is not None:
                outs.append(hT), grads.append(dht.double())
            torch.autograd.backward(outs, grads)
        dq, dk, dv, dg = (x.grad.to(y.dtype) if x.grad is not None else torch.zeros_like(y)
                          for x, y in zip(ins[:4], (q, k, v, g)))
        dh0 = None
        if want_dh0:
            dh0 = ins[4].grad.to(h0.dtype) if ins[4].grad is not None else torch.zeros_like(h0)
        return dq, dk, dv, dg, dh0


class StandInTests(Cases, unittest.TestCase):
    """The Python half (argument handling, conversions, autograd plumbing) on the CPU."""
    small = True

    @classmethod
    def setUpClass(cls):
        cls.saved = (glr_torch._ext, glr_torch._check_device)
        glr_torch._ext = StandIn()
        glr_torch._check_device = lambda q: None

    @classmethod
    def tearDownClass(cls):
        glr_torch._ext, glr_torch._check_device = cls.saved

    def test_kernel_switches_from_glr_defines(self):  # both builds' nvcc flags (setup.py and the JIT load)
        saved = os.environ.get("GLR_DEFINES")
        try:
            os.environ["GLR_DEFINES"] = "GLR_NEXT;GLR_NOHOIST"
            self.assertEqual(glr_torch.switches(), ["GLR_NEXT", "GLR_NOHOIST"])
            self.assertEqual(glr_torch.nvcc_flags(["90a"])[-2:], ["-DGLR_NEXT", "-DGLR_NOHOIST"])
            # GLR_WALK_3CTAS: gone into the default (switches.cuh mentions it, lists it no more)
            for bad in ("GLR_BOGUS", "glr_next", "GLR_NEXT -DX", "GLR_WALK_3CTAS"):
                os.environ["GLR_DEFINES"] = bad
                with self.assertRaisesRegex(ValueError, "not a switch listed in"):
                    glr_torch.nvcc_flags(["90a"])
            os.environ["GLR_DEFINES"] = ""
            self.assertFalse([f for f in glr_torch.nvcc_flags(["90a"]) if f.startswith("-D")])
        finally:
            if saved is None:
                os.environ.pop("GLR_DEFINES", None)
            else:
                os.environ["GLR_DEFINES"] = saved

    def test_bfloat16_and_float16(self):  # the stand-in rounds nothing: only the plumbing is checked
        for dtype in (torch.bfloat16, torch.float16):
            self.check_forward(1, 9, 1, 4, 4, "vector", dtype, True, True)
            self.check_backward(1, 9, 1, 4, 4, "scalar", dtype, True, True)

    def test_keeps_states_only_for_a_backward(self):
        ins = draw(1, 9, 1, 4, 4)
        StandIn.calls.clear()
        with torch.no_grad():
            glr_torch.chunk_glr(*[x.clone().requires_grad_(True) for x in ins[:4]])
        glr_torch.chunk_glr(*ins[:4])  # nothing requires a gradient
        self.assertEqual([c[1] for c in StandIn.calls], [False, False])
        for recompute in (False, True):
            StandIn.calls.clear()
            leaves = [x.clone().requires_grad_(True) for x in ins[:4]]
            o, _ = glr_torch.chunk_glr(*leaves, recompute_states=recompute)
            o.sum().backward()
            (_, saved_flag, kept), (_, got) = StandIn.calls
            self.assertEqual(saved_flag, not recompute)
            self.assertIs(got, kept, "bwd must receive what fwd kept (None when recomputing)")

    def test_refuses_cpu_tensors(self):
        glr_torch._check_device = self.saved[1]
        try:
            with self.assertRaisesRegex(ValueError, "must be a CUDA tensor"):
                glr_torch.chunk_glr(*draw(1, 4, 1, 2, 2)[:4])
        finally:
            glr_torch._check_device = lambda q: None


@unittest.skipUnless(CUDA, "torch has no CUDA")
class GlrCudaTests(Cases, unittest.TestCase):
    device = "cuda"

    def test_unsupported_size_is_a_clear_error(self):
        q, k, v, g, _ = draw(1, 8, 1, 300, 4, device="cuda")
        with self.assertRaisesRegex(RuntimeError, "glr_torch: unsupported: .*K and V in \\[1, 256\\]"):
            glr_torch.chunk_glr(q, k, v, g)

    def test_on_the_current_stream(self):
        # inputs written on a side stream just before the call; only that stream is synchronized
        q, k, v, g, h0 = draw(2, 200, 2, 64, 64, device="cuda")
        want, want_hT = glr_torch.chunk_glr(q, k, v, g, initial_state=h0, output_final_state=True)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            q2 = torch.zeros_like(q)
            torch.cuda._sleep(10_000_000)  # ~ms of GPU time: an op on another stream would read zeros
            q2.copy_(q)
            got, got_hT = glr_torch.chunk_glr(q2, k, v, g, initial_state=h0, output_final_state=True)
        side.synchronize()
        self.assertTrue(torch.equal(got, want) and torch.equal(got_hT, want_hT))

    def test_kept_states_give_the_recomputed_bits(self):
        for dtype, gate in ((torch.bfloat16, "vector"), (torch.float16, "scalar")):
            ins = [x.requires_grad_(True) for x in draw(2, 300, 2, 128, 96, gate, dtype, "cuda", True, 5)]
            runs = []
            for recompute in (False, True):
                o, hT = glr_torch.chunk_glr(*ins[:4], initial_state=ins[4], output_final_state=True,
                                            recompute_states=recompute)
                grads = torch.autograd.grad([o, hT], ins, [torch.ones_like(o), torch.ones_like(hT)])
                runs.append([o, hT, *grads])
            for a, b in zip(*runs):
                self.assertTrue(torch.equal(a, b), f"{dtype} {gate}: kept and recomputed states differ")

    def test_bitwise_repeatable(self):
        ins = [x.requires_grad_(True) for x in draw(2, 300, 2, 64, 64, device="cuda")]
        runs = []
        for _ in range(3):
            o, hT = glr_torch.chunk_glr(*ins[:4], initial_state=ins[4], output_final_state=True)
            grads = torch.autograd.grad([o, hT], ins, [torch.ones_like(o), torch.ones_like(hT)])
            runs.append([o, hT, *grads])
        for run in runs[1:]:
            for a, b in zip(runs[0], run):
                self.assertTrue(torch.equal(a, b))


def main():
    require = os.environ.get("GLR_TORCH_REQUIRE_CUDA", "") not in ("", "0")
    if not CUDA and require:
        print(f"FAIL: GLR_TORCH_REQUIRE_CUDA is set but torch {torch.__version__} ({sys.executable}) has no CUDA")
        return 1
    prog = unittest.main(exit=False, argv=sys.argv)
    result = prog.result
    if not result.wasSuccessful():
        return 1
    if not CUDA:
        print(f"SKIP: torch {torch.__version__} ({sys.executable}) has no CUDA, so glr's kernels did not run; "
              f"the Python half passed {result.testsRun - len(result.skipped)} tests against a CPU stand-in")
    return 0


if __name__ == "__main__":
    sys.exit(main())
