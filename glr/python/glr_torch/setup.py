"""Builds glr_torch against the installed torch: the binding (csrc/glr_torch.cpp) and glr's CUDA
library (glr/cuda/api.cu, through csrc/glr_cuda_api.cu), one extension glr_torch._C.

    cd glr/python/glr_torch && python3 setup.py build --build-base /tmp/glr-build   # or: pip install .
    GLR_TORCH_ARCH="90a;100a"   targets (default 90a: the H200; glr's kernels are sm_90a)
    MAX_JOBS=N                  parallel compiles (torch's ninja build)

Without installing, `import glr_torch` from this checkout builds the same extension on first use
(torch.utils.cpp_extension.load; see glr_torch/__init__.py).
"""
import os
import sys

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from glr_torch import include_dirs, nvcc_flags  # noqa: E402  (one list of flags for both builds)

archs = [a for a in os.environ.get("GLR_TORCH_ARCH", "90a").replace(",", ";").split(";") if a.strip()]

setup(
    name="glr_torch",
    version="0.1.0",
    description="glr's CUDA gated linear recurrence (forward and backward) as a PyTorch op",
    packages=["glr_torch"],
    ext_modules=[CUDAExtension(
        name="glr_torch._C",
        sources=["csrc/glr_torch.cpp", "csrc/glr_cuda_api.cu"],
        include_dirs=include_dirs(),
        extra_compile_args={"cxx": ["-O3"], "nvcc": nvcc_flags([a.strip() for a in archs])},
    )],
    cmdclass={"build_ext": BuildExtension},
)
