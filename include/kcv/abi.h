/* kcv candidate ABI, version 1.
 *
 * A candidate is a shared object (or a .c/.cpp/.cu source that kcv compiles) exporting one symbol,
 * kcv_run. kcv fills a kcv_call with the contract's inputs, outputs and scalars in the order the
 * contract fixes, and calls it. Plain C: usable from C, C++ and CUDA.
 */
#ifndef KCV_ABI_H
#define KCV_ABI_H

#include <stdint.h>

#define KCV_ABI_VERSION 1

enum kcv_dtype { KCV_F64 = 0, KCV_F32 = 1, KCV_F16 = 2, KCV_BF16 = 3,
                 KCV_I32 = 4, KCV_I64 = 5, KCV_U8 = 6 };

typedef struct {
  void*   data;        /* first element: host pointer (cpu) or device pointer (cuda) */
  int32_t dtype;       /* enum kcv_dtype */
  int32_t ndim;        /* 0..8 */
  int64_t shape[8];
  int64_t stride[8];   /* in elements; may be non-contiguous; data may be offset/misaligned */
} kcv_tensor;

typedef struct {
  int32_t abi_version;              /* KCV_ABI_VERSION */
  int32_t n_inputs, n_outputs, n_scalars;
  const kcv_tensor* inputs;         /* order fixed by the contract */
  const kcv_tensor* outputs;        /* allocated by the verifier; the candidate writes them */
  const double* scalars;            /* order fixed by the contract */
  void* stream;                     /* cudaStream_t on cuda, NULL on cpu */
  char* error; int32_t error_len;   /* the candidate may write a message here */
} kcv_call;

#ifdef __cplusplus
#define KCV_EXTERN_C extern "C"
#else
#define KCV_EXTERN_C
#endif

#if defined(_WIN32)
#define KCV_EXPORT KCV_EXTERN_C __declspec(dllexport)
#else
#define KCV_EXPORT KCV_EXTERN_C __attribute__((visibility("default")))
#endif

/* The one symbol a candidate shared object exports. 0 = done. Non-zero = clean refusal
   ("this shape/layout is not supported"), with a message in error. */
KCV_EXTERN_C int kcv_run(const kcv_call* call);

/* Optional: a candidate that writes KCV_DECLARE_ABI_VERSION; at file scope also exports the ABI
   version it was built against, so kcv rejects a mismatch up front (exit 2) instead of calling
   into it. Candidates without it are called with abi_version set and must check it themselves. */
#define KCV_DECLARE_ABI_VERSION \
  KCV_EXPORT const int32_t kcv_abi_version = KCV_ABI_VERSION

#endif /* KCV_ABI_H */
