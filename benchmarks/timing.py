"""Wall-clock timing shared by the benchmarks: one warm-up call, then `reps`
timed calls of `fn` (which must wait for its own work: mx.eval, or a
stream synchronize), in milliseconds."""
import statistics
import time


def times_ms(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return ts


def best_ms(fn, reps):
    return min(times_ms(fn, reps))


def median_ms(fn, reps=5):
    return statistics.median(times_ms(fn, reps))
