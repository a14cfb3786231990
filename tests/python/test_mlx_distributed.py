"""mx.distributed in one process, against real MLX (also single-process here)."""
import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core
from mlx_oracle import random_array, same, same_error

COLLECTIVES = ["all_sum", "all_gather", "all_max", "all_min", "sum_scatter"]


def test_group():
    for m in (mx, mlx_core):
        assert m.distributed.is_available()
        g = m.distributed.init()
        assert (g.rank(), g.size()) == (0, 1)
        assert m.distributed.init(backend="mpi").size() == 1
        with pytest.raises(RuntimeError):
            g.split(0)
        with pytest.raises(RuntimeError):
            g.split(1, key=0)
        with pytest.raises(ValueError):
            m.distributed.init(backend="carrier-pigeon")
        with pytest.raises(TypeError):
            m.distributed.Group()
    assert mx.distributed.is_available("foo") == mlx_core.distributed.is_available("foo")


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collectives_single_process(rng, name):
    for shape, dtype in [((3, 4), "float32"), ((), "int32"), ((5,), "bfloat16")]:
        x = random_array(rng, shape, dtype)
        same(lambda m, a: getattr(m.distributed, name)(a, group=m.distributed.init()), x)
    a = mx.array([1.0, 2.0])
    assert getattr(mx.distributed, name)(a) is not a  # a new array, as in MLX
    same(lambda m: getattr(m.distributed, name)(3))
    same_error(lambda m, a: getattr(m.distributed, name)(a, group=3), np.ones(2, np.float32))


def test_point_to_point_raise():
    x = np.ones(3, np.float32)
    same_error(lambda m, a: m.distributed.send(a, 0), x)
    same_error(lambda m, a: m.distributed.recv_like(a, 0), x)
    same_error(lambda m: m.distributed.recv((3,), m.float32, 0))
    with pytest.raises(ValueError, match="singleton"):
        mx.distributed.send(mx.array(x), 0)


def test_init_strict_raises():
    with pytest.raises(RuntimeError):
        mx.distributed.init(strict=True)
