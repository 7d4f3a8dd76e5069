"""fp32 evaluation orders for kcv's torch controls of the derived bound (issue 27; the same as
tests/python/test_torch_bound.py): a reduction or scan rewritten in another legitimate order, and
the same with a bf16 accumulator, which kcv must reject. Imported by the solutions beside it."""
import torch


def split_sum(x, dim, parts=64, acc=torch.float32, keepdim=False):
    """Inductor's split reduction: `parts` partial sums, then their pairwise sum. acc bf16: every
    partial a running bf16 sum and every addition rounded to bf16 (a bf16 accumulator)."""
    x = x.movedim(dim, -1)  # [..., n]
    n = x.shape[-1]
    per = max(1, -(-n // parts))
    pad = per * parts - n
    if pad:
        x = torch.cat([x, x.new_zeros(x.shape[:-1] + (pad,))], -1)
    x = x.reshape(x.shape[:-1] + (parts, per))  # [..., parts, per]
    if acc == torch.float32:
        part = x.sum(-1)
    else:
        part = _running(x, acc)  # each partial a running sum in acc (a thread's accumulator)
    while part.shape[-1] > 1:
        if part.shape[-1] % 2:
            part = torch.cat([part, part.new_zeros(part.shape[:-1] + (1,))], -1)
        part = part[..., 0::2] + part[..., 1::2]
    out = part[..., 0].float()
    return out.unsqueeze(dim) if keepdim else out


def pairwise_sum(x, dim, keepdim=False):
    x = x.movedim(dim, -1)
    if x.shape[-1] == 0:
        out = x.sum(-1)
    else:
        while x.shape[-1] > 1:
            if x.shape[-1] % 2:
                x = torch.cat([x, x.new_zeros(x.shape[:-1] + (1,))], -1)
            x = x[..., 0::2] + x[..., 1::2]
        out = x[..., 0]
    return out.unsqueeze(dim) if keepdim else out


def hillis_steele(x, dim, op, acc=torch.float32):
    """A parallel inclusive scan: log2(n) steps, each combining with the element `off` back."""
    x = x.movedim(dim, -1).to(acc)
    off = 1
    while off < x.shape[-1]:
        x = torch.cat([x[..., :off], op(x[..., off:], x[..., :-off])], -1)
        off *= 2
    return x.movedim(-1, dim).float()


def chunked_cumsum(x, dim, chunk=64):
    """A split scan: each chunk's own scan, plus the running total of the chunks before it."""
    x = x.movedim(dim, -1)
    n = x.shape[-1]
    pad = (-n) % chunk
    if pad:
        x = torch.cat([x, x.new_zeros(x.shape[:-1] + (pad,))], -1)
    c = x.reshape(x.shape[:-1] + (-1, chunk))
    inner = torch.cumsum(c, -1)
    totals = torch.cumsum(inner[..., -1], -1)  # exclusive: the chunks before this one
    carry = torch.cat([torch.zeros_like(totals[..., :1]), totals[..., :-1]], -1)
    out = (inner + carry.unsqueeze(-1)).reshape(x.shape)[..., :n]
    return out.movedim(-1, dim)


def _running(x, acc):
    """The running total along the last dim, one term at a time, in order, kept in acc (every
    addition rounded to it); 0 over no terms."""
    if x.shape[-1] == 0:
        return torch.zeros(x.shape[:-1], dtype=acc)
    s = x[..., 0].to(acc)
    for j in range(1, x.shape[-1]):
        s = s + x[..., j].to(acc)
    return s


def running_sum(x, dim, acc=torch.float32):
    """A thread's sequential sum along `dim`: one running total, one term at a time, in order. acc
    bf16: the total kept (every addition rounded) in bf16."""
    return _running(x.movedim(dim, -1), acc).float()


def online_logsumexp(x, dim, acc=torch.float32, lanes=64):
    """logsumexp along `dim` in one pass, as a GPU kernel's lanes compute it: lane l takes elements
    l, l + lanes, ... keeping a running max m and the sum s of exp(x - m), rescaled by exp(m_old - m)
    when m grows; then the lanes merge pairwise, and the result is m + log(s). The guards of
    flash-attention's online softmax: a lane whose max is -inf adds nothing, one whose max is +inf
    carries +inf (no inf - inf); NaN propagates through the max. acc bf16: s kept in bf16."""
    x = x.movedim(dim, -1).float()
    n = x.shape[-1]
    pad = (-n) % lanes
    if pad:
        x = torch.cat([x, x.new_full(x.shape[:-1] + (pad,), float("-inf"))], -1)
    x = x.reshape(x.shape[:-1] + (-1, lanes))  # [..., steps, lanes]

    def scale(m_old, m_new):  # exp(m_old - m_new), 1 where both are the same infinity
        return torch.where(m_old == m_new, torch.ones_like(m_old), torch.exp(m_old - m_new))

    m = x.new_full(x.shape[:-2] + (lanes,), float("-inf"))
    s = torch.zeros(m.shape, dtype=acc)
    for j in range(x.shape[-2]):
        v = x[..., j, :]
        nm = torch.maximum(m, v)
        s = (s.float() * scale(m, nm)).to(acc) + scale(v, nm).to(acc)
        m = nm
    while m.shape[-1] > 1:
        m0, m1, s0, s1 = m[..., 0::2], m[..., 1::2], s[..., 0::2].float(), s[..., 1::2].float()
        nm = torch.maximum(m0, m1)
        s = (s0 * scale(m0, nm) + s1 * scale(m1, nm)).to(acc)
        m = nm
    m, s = m[..., 0], s[..., 0].float()
    # a row of -inf only: log(0) = -inf, m = -inf, the sum -inf (torch's answer)
    return torch.where(torch.isneginf(m), m, m + torch.log(s))
