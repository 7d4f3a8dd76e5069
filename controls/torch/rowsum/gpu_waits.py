# What the cuda "waits" controls (controls.cmake) check: whether this process's threads sleep while
# they wait for the GPU (its primary context has CU_CTX_SCHED_BLOCKING_SYNC), as kcv's torch
# worker and reference server ask the driver before anything makes a context. They add 1 to the
# output when the context spins instead, so that the numerics gate sees it.
import ctypes

import torch

CU_CTX_SCHED_MASK = 0x07
CU_CTX_SCHED_BLOCKING_SYNC = 0x04


def waits_by_blocking():
    driver = ctypes.CDLL("libcuda.so.1")
    device, flags, active = ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0)
    if driver.cuDeviceGet(ctypes.byref(device), torch.cuda.current_device()) != 0:
        return False
    if driver.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active)) != 0:
        return False
    return bool(active.value) and flags.value & CU_CTX_SCHED_MASK == CU_CTX_SCHED_BLOCKING_SYNC


def penalty():
    """0.0 when this process waits for the GPU by blocking, else 1.0."""
    return 0.0 if waits_by_blocking() else 1.0
