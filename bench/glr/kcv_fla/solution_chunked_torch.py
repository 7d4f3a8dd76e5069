# KernelBench-format solution for problem.py / problem_bf16.py, and a control of the problem's
# fairness: glr's chunk-64 algorithm (docs/glr.md, "CPU chunked algorithm") in plain torch, fp32
# accumulation and state. Local cumulative log-gates b per chunk; the intra-chunk matrix
# A_ij = sum_k q_ik k_jk exp(b_ik - b_jk) for j <= i (masking by select); the inter-chunk state
# pass S <- exp(b_last) S + sum_j (k_j exp(b_last - b_j))^T v_j. A correct chunked algorithm, so it
# must pass every gate this problem runs: where it does not, the problem (or kcv's calibrated
# bound) is unfair to chunked kernels such as glr's and FLA's, not the kernel.
import torch
import torch.nn as nn
import torch.nn.functional as F

CHUNK = 64


def gate(gk):
    return torch.clamp_min(F.logsigmoid(gk) / 16, -1.0)


def chunked(q, k, v, g, h0, scale):
    B, T, H, K = q.shape
    V = v.shape[-1]
    S = h0.clone()
    o = q.new_empty(B, T, H, V)
    for s in range(0, T, CHUNK):
        e = min(T, s + CHUNK)
        L = e - s
        b = torch.cumsum(g[:, s:e], dim=1)                        # [B, L, H, K]
        qc, kc, vc = q[:, s:e], k[:, s:e], v[:, s:e]
        d = b.unsqueeze(2) - b.unsqueeze(1)                       # [B, L(i), L(j), H, K]: b_i - b_j
        causal = torch.tril(torch.ones(L, L, dtype=torch.bool, device=q.device)).view(1, L, L, 1, 1)
        zero = torch.zeros((), dtype=d.dtype, device=q.device)
        # NOTES: every product with a position j > i is selected away, never multiplied by 0: a NaN
        # or Inf at a later step must not reach an earlier output (0 * NaN = NaN).
        qkw = qc.unsqueeze(2) * kc.unsqueeze(1) * torch.exp(torch.where(causal, d, zero))
        A = torch.where(causal, qkw, zero).sum(-1)                # [B, L(i), L(j), H]
        Av = A.unsqueeze(-1) * vc.unsqueeze(1)                    # [B, L(i), L(j), H, V]
        intra = torch.where(causal, Av, zero).sum(2)              # [B, L, H, V]
        o[:, s:e] = (intra + torch.einsum("bihk,bhkv->bihv", qc * torch.exp(b), S)) * scale
        last = b[:, -1]                                           # [B, H, K]
        S = torch.exp(last).unsqueeze(-1) * S + torch.einsum("bjhk,bjhv->bhkv", kc * torch.exp(last.unsqueeze(1) - b), vc)
    return o, S


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gk, h0):
        acc = torch.float32
        o, S = chunked(q.to(acc), k.to(acc), v.to(acc), gate(gk.to(acc)), h0.to(acc), q.shape[-1] ** -0.5)
        return o.to(q.dtype), S.to(q.dtype)
