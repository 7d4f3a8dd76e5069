# Positive control: a legitimate solution that tries a 4-wide vectorized row sum first and falls
# back to the plain sum when torch refuses the view (a row length not a multiple of 4, as the
# problem's 33). torch refuses by throwing a C++ exception (c10::Error) that Python catches, as
# torch itself does at import on a CUDA build without a visible GPU. Under the cpu sanitizer gate
# the worker runs with libasan preloaded; without libstdc++ preloaded beside it, ASan's __cxa_throw
# interceptor has no real function to call and aborts (CHECK failed, exit 86): a correct kernel
# reported as a sanitizer crash (session 19, torch 2.11 on the H200's host).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        try:
            rows = x.view(x.shape[0], -1, 4).sum(dim=2).sum(dim=1, keepdim=True)
        except RuntimeError:  # torch's C++ exception, caught
            rows = x.sum(dim=1, keepdim=True)
        return torch.relu(x) * 2.0 + rows
