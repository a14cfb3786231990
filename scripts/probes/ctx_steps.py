# Times the CUDA driver's steps of a first context in a fresh process.
import ctypes, time
t0 = time.perf_counter()
cu = ctypes.CDLL("libcuda.so.1")
t1 = time.perf_counter()
assert cu.cuInit(0) == 0
t2 = time.perf_counter()
dev = ctypes.c_int()
cu.cuDeviceGet(ctypes.byref(dev), 0)
ctx = ctypes.c_void_p()
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
t3 = time.perf_counter()
cu.cuCtxSetCurrent(ctx)
p = ctypes.c_uint64()
cu.cuMemAlloc_v2(ctypes.byref(p), 1 << 20)
t4 = time.perf_counter()
print(f"dlopen {1e3*(t1-t0):.1f} cuInit {1e3*(t2-t1):.1f} retain {1e3*(t3-t2):.1f} first alloc {1e3*(t4-t3):.1f} ms")
