# Positive control (issue 25, sandbox): a solution whose first call starts a helper process and
# keeps it for the life of the module, as torch.compile's Inductor keeps its pool of compile
# workers. The answer is computed in the calling process, correctly. A runtime's processes are
# legitimate in a torch candidate: the worker's PID namespace contains them and kills them with it,
# so kcv must not fail the call that started one ("process outlived the call"); a kcv-worker
# candidate (a plain .so) that leaves a process still fails (controls/cpu/hostile).
import subprocess
import sys

import torch
import torch.nn as nn

_helpers = []


class ModelNew(nn.Module):
    def forward(self, x):
        if not _helpers:
            _helpers.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"],
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL))
        return torch.clamp(x, min=0.0) * 2.0 + x.sum(dim=1, keepdim=True)
