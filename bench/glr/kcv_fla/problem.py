# KernelBench-format problem: the gated linear recurrence of GLA (FLA's chunk_gla), forward, with an
# initial state and the final state returned, as a plain step-by-step recurrence in torch. Judged
# by `kcv verify --kernelbench` (docs/kernelbench.md): solution_glr.py (glr_torch.chunk_glr) and
# solution_fla.py (fla.ops.gla.chunk_gla) beside each other, and this file as its own candidate.
# problem_bf16.py is the same problem with bf16 q, k, v (its outputs bf16, as KernelBench's
# reduced-precision problems return theirs).
#
# Per sequence b and head h, with S_0 = h0, g = gate(gk):
#   S_t = Diag(exp(g_t)) S_{t-1} + k_t^T v_t,   o_t = K^-1/2 · q_t S_t,   returns (o, S_T)
#
# NOTES: the gate is GLA's own parametrization (FLA's GLA layer: logsigmoid, gate_logit_normalizer
# 16, and its clamp_min option), so that every input kcv draws, scales or negates is a valid gate
# (g in [-1, 0]) and the log-gate input needs no domain. The clamp at -1 (a decay of at least
# e^-1 per step) changes nothing at N(0,1) inputs; it bounds a chunk's cumulative log-gate
# (|b| <= 64), which a chunked kernel subtracts (exp(b_i - b_j)). Without it the values gate's
# 1e4-scaled and wide-range inputs give |b| ~ 1e5, and a correct fp32 chunk-64 algorithm (emulated
# in torch on the CPU) then errs 11x (scaled) and ~300x (wide range) above the bound kcv calibrates
# on this eager recurrence, which forms no such differences; with the clamp it stays below 0.13 of
# it at every value kind. glr's own contracts (glr_fwd, with the error model's exp-argument term)
# judge unbounded gates; this problem judges the two kernels on the same footing.
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
seq_len = 256
num_heads = 2
head_dim = 64  # K = V: one symbol, so the shapes gate's sweep costs FLA half the Triton autotuning
dtype = torch.float32  # of q, k, v and the outputs; gk and h0 stay float32


def gate(gk):
    """GLA's log-gate from an unconstrained input: logsigmoid / 16, clamped at -1 (NaN stays NaN)."""
    return torch.clamp_min(F.logsigmoid(gk) / 16, -1.0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gk, h0):
        # fp32 accumulation and state for fp32/bf16 inputs (fp64 when kcv runs the reference)
        acc = torch.float64 if q.dtype == torch.float64 else torch.float32
        g = gate(gk.to(acc))
        qf, kf, vf = q.to(acc), k.to(acc), v.to(acc)
        scale = q.shape[-1] ** -0.5
        S = h0.to(acc)  # [B, H, K, V]
        o = []
        for t in range(q.shape[1]):
            S = torch.exp(g[:, t]).unsqueeze(-1) * S + kf[:, t].unsqueeze(-1) * vf[:, t].unsqueeze(-2)
            o.append(torch.einsum("bhk,bhkv->bhv", qf[:, t], S) * scale)
        o = torch.stack(o, dim=1) if o else vf.new_zeros(v.shape)
        return o.to(q.dtype), S.to(q.dtype)


def get_inputs():
    B, T, H, K, V = batch_size, seq_len, num_heads, head_dim, head_dim
    q = torch.randn(B, T, H, K).to(dtype)
    k = torch.randn(B, T, H, K).to(dtype)
    v = torch.randn(B, T, H, V).to(dtype)
    gk = torch.randn(B, T, H, K)  # gate logits: g = gate(gk), decays around e^(-0.05)
    h0 = torch.randn(B, H, K, V)
    return [q, k, v, gk, h0]


def get_init_inputs():
    return []
