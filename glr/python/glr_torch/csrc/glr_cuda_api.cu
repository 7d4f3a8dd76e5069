// glr_torch's copy of glr's CUDA library: the one translation unit of glr/cuda/api.cu, included
// (not copied) so that the extension and the CMake library glr_cuda compile the same source. A
// wrapper rather than a relative path in setup.py's sources: setuptools would put the object of
// "../../../cuda/api.cu" outside its build directory. The repository root is on the include path
// (glr_torch.include_dirs()).
#include "glr/cuda/api.cu"
