# Negative timing control: returns a tensor subclass that computes its values only when they are
# read (torch_function on any use), so the gates, which read the outputs, find them right, and a
# timer that stops at the return sees no work. kcv times only plain torch.Tensor outputs: not
# timed, with the reason (docs/timing.md).
import torch
import torch.nn as nn


class Lazy(torch.Tensor):
    @staticmethod
    def __new__(cls, a, b):
        t = torch.Tensor._make_subclass(cls, torch.empty(a.shape[0], b.shape[1], dtype=a.dtype), False)
        t._pending = (a, b)
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for x in list(args) + list((kwargs or {}).values()):
            if isinstance(x, Lazy) and getattr(x, "_pending", None) is not None:
                a, b = x._pending
                x._pending = None
                with torch._C.DisableTorchFunction():
                    torch.matmul(a, b, out=x.as_subclass(torch.Tensor))
        with torch._C.DisableTorchFunction():
            return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def forward(self, a, b):
        return Lazy(a, b)
