"""The timing the CPU reference scripts share (torch_cpu.py, ort_gemm.py)."""
import statistics
import time


def timed(fn, iters, warmup):
    """Median and minimum ms of iters calls of fn after warmup calls."""
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t), min(t)
