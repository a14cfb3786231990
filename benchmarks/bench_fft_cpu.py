"""CPU FFTs: Alloy against real MLX (mlx[cpu], the same pocketfft library)
and numpy (pocketfft too; numpy 2 transforms float32 in float32), each
framework in its own process.

Cases (complex64 / float32, evaluated results; median of 25 rounds, ms):
  rfft of 64 rows of 4096, irfft back, fft of 256 rows of 1000 (not a power
  of two), fft2 of 512 x 512, rfftn over (64, 64, 64), and the STFT a TTS
  front end takes (rfft of 800-point frames, hop 200, 10 s of 24 kHz audio).

  python benchmarks/bench_fft_cpu.py
"""
import json
import statistics
import subprocess
import sys
import time


def measure(framework):
    import numpy as np

    rng = np.random.default_rng(0)
    if framework == "numpy":
        fft, ev, arr = np.fft, (lambda *a: None), (lambda v: v)
    else:
        mx = __import__("mlx.core" if framework == "mlx" else "alloy.core", fromlist=["fft"])
        mx.set_default_device(mx.cpu)
        fft, ev, arr = mx.fft, mx.eval, mx.array

    rows = rng.standard_normal((64, 4096)).astype(np.float32)
    spectrum = np.fft.rfft(rows).astype(np.complex64)
    odd = (rng.standard_normal((256, 1000)) + 1j * rng.standard_normal((256, 1000))).astype(np.complex64)
    square = (rng.standard_normal((512, 512)) + 1j * rng.standard_normal((512, 512))).astype(np.complex64)
    cube = rng.standard_normal((64, 64, 64)).astype(np.float32)
    audio = rng.standard_normal(240000).astype(np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(audio, 800)[::200].copy()
    data = {k: arr(v) for k, v in dict(rows=rows, spectrum=spectrum, odd=odd, square=square, cube=cube,
                                        frames=frames).items()}
    if framework != "numpy":
        ev(*data.values())
    cases = {
        "rfft 64 x 4096": lambda: fft.rfft(data["rows"]),
        "irfft 64 x 2049 -> 4096": lambda: fft.irfft(data["spectrum"]),
        "fft 256 x 1000": lambda: fft.fft(data["odd"]),
        "fft2 512 x 512": lambda: fft.fft2(data["square"]),
        "rfftn 64^3": lambda: fft.rfftn(data["cube"]),
        "stft frames 1197 x 800": lambda: fft.rfft(data["frames"]),
    }
    out = {}
    for name, fn in cases.items():
        ev(fn())
        rounds = []
        for _ in range(25):
            t = time.perf_counter()
            ev(fn())
            rounds.append((time.perf_counter() - t) * 1e3)
        out[name] = statistics.median(rounds)
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(measure(sys.argv[2])))
        return
    results = {}
    for framework in ("alloy", "mlx", "numpy"):
        run = subprocess.run([sys.executable, __file__, "--one", framework], capture_output=True, text=True,
                             check=True)
        results[framework] = json.loads(run.stdout.strip().splitlines()[-1])
    print("| case | Alloy ms | mlx-cpu ms | numpy ms | Alloy / MLX | Alloy / numpy |")
    print("|---|---|---|---|---|---|")
    for name, t in results["alloy"].items():
        m, n = results["mlx"][name], results["numpy"][name]
        print(f"| {name} | {t:.3f} | {m:.3f} | {n:.3f} | {t / m:.2f}x | {t / n:.2f}x |")


if __name__ == "__main__":
    main()
