"""alloy.nn.Module bookkeeping against mlx.nn.Module: parameter trees,
children, freezing, update, apply, modes, attribute semantics, weight files."""
import numpy as np
import pytest

import alloy.core as ax
import alloy.nn as ann
import mlx.core as mc
import mlx.nn as mnn
from alloy.utils import tree_flatten
from mlx_oracle import MLX_DEVICE, assert_same_value, to_numpy
from nn_oracle import pair, to_mlx


def build_model(nn):
    """A model with parameters in sub-modules, lists, dicts, tuples and a
    private key, so every branch of the tree walk is exercised."""
    core = ax if nn is ann else mc

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(7, 4)
            self.blocks = [nn.Sequential(nn.Linear(4, 4), nn.ReLU()), nn.Linear(4, 3, bias=False)]
            self.extra = {"scale": core.ones((3,)), "pair": [core.zeros((2,)), 5]}
            self.shape = (core.ones((1,)), "tag")
            self._hidden = core.ones((2,))
            self.norm = nn.GroupNorm(1, 3)
            self.count = 3

        def __call__(self, ids):
            h = self.embed(ids)
            h = self.blocks[0](h)
            return self.norm(self.blocks[1](h) * self.extra["scale"])

    return Model()


def keys(tree, is_leaf=None):
    return [k for k, _ in tree_flatten(tree, is_leaf=is_leaf)]


def both(fn):
    """fn applied to a fresh alloy model and a fresh MLX model."""
    return fn(build_model(ann)), fn(build_model(mnn))


def test_parameter_trees_match_mlx():
    for get in (lambda m: m.parameters(), lambda m: m.trainable_parameters()):
        mine, theirs = both(lambda m: keys(get(m)))
        assert mine == theirs
    mine, theirs = both(lambda m: keys(m.children(), is_leaf=ann.Module.is_module) if isinstance(m, ann.Module)
                        else keys(m.children(), is_leaf=mnn.Module.is_module))
    assert mine == theirs
    mine, theirs = both(lambda m: [k for k, _ in m.named_modules()])
    assert mine == theirs
    mine, theirs = both(lambda m: [type(x).__name__ for x in m.modules()])
    assert mine == theirs
    leaf_is = lambda m: lambda x: isinstance(x, (ann.Module, mnn.Module))
    mine, theirs = both(lambda m: [(k, type(v).__name__) for k, v in tree_flatten(m.leaf_modules(),
                                                                                  is_leaf=leaf_is(m))])
    assert mine == theirs


def test_freeze_unfreeze_match_mlx():
    cases = [
        lambda m: m.freeze(),
        lambda m: m.freeze(recurse=False),
        lambda m: m.freeze(keys=["extra"], recurse=False),
        lambda m: m.freeze(keys="weight"),
        lambda m: m.freeze().unfreeze(keys=["bias"]),
        lambda m: m.freeze().unfreeze(recurse=False),
        lambda m: m.blocks[0].freeze(),
        lambda m: m.freeze(keys=["nothing"]),
    ]
    for case in cases:
        mine, theirs = both(lambda m: keys(case(m) or m.trainable_parameters()))
        assert mine == theirs
    for m in (build_model(ann), build_model(mnn)):
        with pytest.raises(KeyError):
            m.freeze(keys=["nothing"], strict=True)


def test_attribute_semantics():
    m = ann.Linear(2, 3)
    assert "weight" in m and m.weight is m["weight"]
    m.tag = "x"           # plain attribute, not a parameter
    assert "tag" not in m and m.tag == "x"
    m.table = [ax.ones((1,))]
    assert "table" in m
    m.weight = None       # a non-array replaces the entry, as in MLX
    assert "weight" not in m and m.weight is None
    del m.bias
    assert "bias" not in m
    with pytest.raises(AttributeError):
        m.missing  # noqa: B018
    ref = mnn.Linear(2, 3)
    ref.weight = None
    assert "weight" not in ref


def test_update_apply_and_errors(rng):
    mine, theirs = pair(build_model)
    new = {"blocks": [{"layers": [{"weight": ax.array(rng.standard_normal((4, 4)).astype(np.float32))}]}],
           "extra": {"scale": ax.array(rng.standard_normal(3).astype(np.float32))}}
    mine.update(new)
    theirs.update(to_mlx(new))
    assert np.array_equal(np.array(mine.blocks[0].layers[0].weight), np.array(new["blocks"][0]["layers"][0]["weight"]))
    assert np.array_equal(np.array(mine.extra["scale"]), np.array(new["extra"]["scale"]))
    for m, core in ((mine, ax), (theirs, mc)):
        with pytest.raises(ValueError):
            m.update({"nope": core.ones(1)})
        with pytest.raises(ValueError):
            m.update({"extra": {"scale": 3}})
        m.update({"nope": core.ones(1)}, strict=False)
        m.apply(lambda p: p * 2)
        m.set_dtype(core.float16)
    assert_same_value(mine.embed.weight, theirs.embed.weight, 4e-3, 4e-3)
    assert mine.embed.weight.dtype == ax.float16
    # The filter sees every level: containers must pass for biases inside them to be reached.
    only_bias = lambda mod, k, v: isinstance(v, (dict, list)) or k == "bias"
    # A plain dict's dropped entries come back as {} and strict update refuses them, in both.
    for m in (build_model(ann), build_model(mnn)):
        with pytest.raises(ValueError):
            m.apply(lambda p: p * 0, filter_fn=only_bias)
    mine.blocks[0].apply(lambda p: p * 0, filter_fn=only_bias)
    theirs.blocks[0].apply(lambda p: p * 0, filter_fn=only_bias)
    assert float(ax.abs(mine.blocks[0].layers[0].bias.astype(ax.float32)).sum()) == 0
    assert float(ax.abs(mine.blocks[0].layers[0].weight.astype(ax.float32)).sum()) > 0
    assert_same_value(mine.parameters(), theirs.parameters(), 4e-3, 4e-3)


def test_update_modules():
    for nn in (ann, mnn):
        m = build_model(nn)
        m.update_modules({"blocks": [{}, nn.Identity()]})
        assert isinstance(m.blocks[1], nn.Identity)
        with pytest.raises(ValueError):
            m.update_modules({"nope": nn.Identity()})
        with pytest.raises(ValueError):
            m.update_modules({"embed": 3})


def test_train_eval_propagate():
    m = build_model(ann)
    assert m.training and m.blocks[0].layers[1].training
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())


def test_value_and_grad_matches_mlx(rng):
    mine, theirs = pair(build_model)
    mine.blocks[0].freeze()
    theirs.blocks[0].freeze()
    ids = rng.integers(0, 7, (2, 5)).astype(np.int32)
    cot = rng.standard_normal((2, 5, 3)).astype(np.float32)
    got = ann.value_and_grad(mine, lambda i: ax.sum(mine(i) * ax.array(cot)))(ax.array(ids))
    with mc.stream(MLX_DEVICE):
        want = mnn.value_and_grad(theirs, lambda i: mc.sum(theirs(i) * mc.array(cot)))(mc.array(ids))
        mc.eval(want)
    assert_same_value(got, want)
    assert "blocks" in got[1] and keys(got[1]) == keys(want[1])


def test_value_and_grad_without_parameters_raises():
    for nn, core in ((ann, ax), (mnn, mc)):
        relu = nn.ReLU()
        with pytest.raises(ValueError):
            nn.value_and_grad(relu, lambda x: relu(x).sum())(core.ones(3))


def test_repr_matches_mlx():
    build = lambda nn: nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2, bias=False)))
    assert repr(build(ann)) == repr(build(mnn))


def test_load_weights_from_list(rng):
    mine, theirs = pair(build_model)
    fresh = build_model(ann)
    fresh.load_weights(tree_flatten(mine.parameters()))
    assert_same_value(fresh.parameters(), theirs.parameters())
    params = tree_flatten(mine.parameters())
    for bad in (params[:-1], params + [("ghost", ax.ones(1))],
                [(k, ax.ones((9,)) if k == "embed.weight" else v) for k, v in params],
                [(k, 1.0 if k == "embed.weight" else v) for k, v in params]):
        with pytest.raises(ValueError):
            build_model(ann).load_weights(bad)
    partial = build_model(ann).load_weights(params[:2], strict=False)
    assert np.array_equal(np.array(partial.embed.weight), np.array(mine.embed.weight))
    with pytest.raises(ValueError):
        mine.save_weights("weights.bin")


@pytest.mark.parametrize("ext", ["safetensors", "npz"])
def test_weight_files_round_trip_and_cross_load(tmp_path, ext):
    mine, theirs = pair(build_model)
    mine_file, theirs_file = str(tmp_path / f"alloy.{ext}"), str(tmp_path / f"mlx.{ext}")
    mine.save_weights(mine_file)
    theirs.save_weights(theirs_file)
    # Each framework loads its own file and the other's.
    for f in (mine_file, theirs_file):
        got = build_model(ann).load_weights(f)
        assert_same_value(got.parameters(), theirs.parameters())
        want = build_model(mnn).load_weights(f)
        assert keys(want.parameters()) == keys(mine.parameters())
        for (k, a), (_, b) in zip(tree_flatten(mine.parameters()), tree_flatten(want.parameters())):
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=k)
