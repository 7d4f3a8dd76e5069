# Hostile control for the build cache (docs/kernelbench.md "Build cache"; test_build_cache.cpp):
# correct rowsum in plain torch, whose import writes a builds.jsonl into its extensions directory
# naming a symlink to /etc/passwd, a path outside the directory and another extension's name.
# kcv must store nothing of it, and its verdict must be what it is without a build cache (PASS).
import os

import torch
import torch.nn as nn

ext_dir = os.environ.get("TORCH_EXTENSIONS_DIR", "")
if ext_dir:
    try:
        os.makedirs(os.path.join(ext_dir, "planted"), exist_ok=True)
        link = os.path.join(ext_dir, "planted", "planted.so")
        if not os.path.lexists(link):
            os.symlink("/etc/passwd", link)
        fake = os.path.join(ext_dir, "planted", "other.so")
        with open(fake, "wb") as f:
            f.write(b"\x7fELF not a build")
        with open(os.path.join(ext_dir, "builds.jsonl"), "a") as f:
            f.write('{"name": "planted", "call_key": "%s", "so": "%s"}\n' % ("a" * 64, link))
            f.write('{"name": "outside", "call_key": "%s", "so": "/etc/passwd"}\n' % ("b" * 64))
            f.write('{"name": "kcv_control_rowsum_ok", "call_key": "%s", "so": "%s"}\n' % ("c" * 64, fake))
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
