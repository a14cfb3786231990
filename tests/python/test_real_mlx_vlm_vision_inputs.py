"""mlx-vlm's vision towers that need inputs or settings of their own, unchanged,
on Alloy against real MLX.

The companion of test_real_mlx_vlm_vision.py, whose tiny configuration,
comparison (`close`) and way of loading each model's `vision.py` are reused.
The towers here need what the model's own `get_input_embeddings` and
processor hand them: patch grids, aspect ratio ids and masks, crop masks,
pooling indices, spatial shapes and padding masks, crop layouts, text
embeddings and token positions. Each case below builds those inputs (integer
and boolean ones from numpy, given identically to both frameworks) and the
configuration fields the tower needs on top of the shared ones. As there:
same fresh random weights (loaded with strict=True), same fresh random
inputs, every output array must agree with MLX's, and so must the gradient of
a random projection of the largest output with respect to the pixels. Towers
run in eval mode, as mlx-vlm's loader leaves them.

Covered: the 21 towers the companion left out for their inputs or settings
(deepseekocr, fastvlm, gemma3n, got, inkling, internvl_chat, kimi_k25,
kimi_k3, kimi_vl, lfm2_vl, locateanything, mllama, molmo, molmo2,
molmo_point, moondream2, moondream3, paddleocr_vl, phi3_v, phi4_siglip,
youtu_vl), and three more the companion could not build (florence2,
llama4, mage_vl: configuration fields of their own). Left out:
- deepseekocr_2: its VisionModel ignores the pixels (it encodes SAM features
  given to it), so there is no pixel gradient to compare.
- qwen3_5, qwen3_5_moe, qwen4_exp: qwen3_vl's tower re-exported (covered by
  the companion), imported through a package __init__ that needs `requests`.
- d1_omni (transformers), multi_modality (cv2): packages not installed.
- deepseek_v4, deepseek_v41, moge3, phi4mm, rfdetr, rt_detr_v2, sam3, sam3_1,
  sam3d_objects: no VisionModel (or no VisionConfig); sam3d_body's
  VisionModel only raises NotImplementedError.
"""
import dataclasses
import types

import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader, arrays_in, as_alloy, normal
from test_real_mlx_vlm_vision import close, random_weights, vision_config

import mlx.core as mx

import alloy.core as ax


@dataclasses.dataclass
class Case:
    """inputs(rng) -> (pixels, args, kwargs): what the model passes its tower,
    pixels first (the gradient is taken with respect to them).
    config: VisionConfig fields over the companion's VISION, or a function of
    the loaded config module giving them (for nested config objects).
    prepare(config, vision): what no dataclass field can say (attributes a
    config class declares without annotations, architecture tables that
    vision.py hard-codes).
    weight_gain: of the random weights (see random_weights)."""

    inputs: object
    config: object = dataclasses.field(default_factory=dict)
    prepare: object = None
    weight_gain: float = 1.0


def ints(values, dtype=np.int64):
    return np.array(values, dtype=dtype)


# ---- the towers' inputs -----------------------------------------------------

def moonvit_patches(rng, grids):
    """Kimi-VL style: one 8x8 RGB patch per row (NHWC, as the model transposes
    them), with each image's (h, w) or (t, h, w) patch grid. Two images of
    different grids: the block-diagonal attention (or per-image attention)
    and per-image position interpolation."""
    count = sum(int(np.prod(g)) for g in grids)
    return normal(rng, count, 8, 8, 3), (ints(grids),), {}


def paddleocr_packed(rng):
    """Two images of different grids packed in one sequence:
    (1, patches, channels, 8, 8) with their (t, h, w) grids."""
    grids = [[1, 4, 4], [1, 2, 4]]
    return normal(rng, 1, 24, 3, 8, 8), (ints(grids),), {}


def paddleocr_same_grid_batch(rng):
    """Two images of the same grid as a batch: the tower's batched path."""
    return normal(rng, 2, 16, 3, 8, 8), (ints([[1, 4, 4], [1, 4, 4]]),), {}


def mllama_tiles(rng):
    """(batch, images, tiles, channels, 16, 16) with the aspect ratio id of the
    image's tiling and the mask of its real tiles (the rest are padding)."""
    tiles = 3
    real = int(rng.integers(1, tiles))  # at least one padding tile
    mask = ints([[[1] * real + [0] * (tiles - real)]])
    ratio_id = ints([[rng.integers(1, 5)]])
    return normal(rng, 1, 1, tiles, 3, 16, 16), (ratio_id, mask), {}


def molmo_crops(rng):
    """(batch, crops, 3x3 patches, 8*8*3 pixels) and per-patch masks: the share
    of real pixels in each patch (0, partial, 1). The last crop is padding:
    all -1 (the tower zeroes its features), masked 0."""
    crops = normal(rng, 1, 3, 9, 192)
    crops[0, 2] = -1
    masks = rng.choice([0.0, 0.25, 0.5, 1.0], size=(1, 3, 9)).astype(np.float32)
    masks[0, 2] = 0
    return crops, (masks,), {}


def molmo2_crops(rng):
    """(batch, crops, 4x4 patches, 8*8*3 pixels) and, per output token, the
    indices of the patches it pools (-1: none). One token pools nothing and
    is dropped."""
    idx = rng.permutation(32)[:20].reshape(5, 4)
    idx[1, 3] = -1
    idx[3, 1:] = -1
    idx[4, :] = -1
    return normal(rng, 1, 2, 16, 192), (ints(idx[None]),), {}


def youtu_patches(rng):
    """Two images flattened to rows of 8*8*3 values, with their (h, w) patch
    grids: windows of 2x2 merged patches, one window padded."""
    shapes = [[4, 8], [6, 4]]
    return normal(rng, 1, 56, 192), (ints(shapes),), {}


def siglip2_patches(rng, shapes, masked):
    """Siglip2 style: each image's patches as rows of 8*8*3 values, padded to
    the longest (padding rows are zero, as the processor leaves them), with
    the images' (h, w) grids and, where the tower takes one, the padding
    mask."""
    longest = max(h * w for h, w in shapes)
    pixels = np.zeros((len(shapes), longest, 192), dtype=np.float32)
    mask = np.zeros((len(shapes), longest), dtype=np.int32)
    for i, (h, w) in enumerate(shapes):
        pixels[i, : h * w] = normal(rng, h * w, 192)
        mask[i, : h * w] = 1
    kwargs = dict(output_hidden_states=True, spatial_shapes=ints(shapes))
    if masked:
        kwargs["pixel_attention_mask"] = mask
    return pixels, (), kwargs


def moondream_crops(rng):
    """Per image a global 32x32 crop and its local crops, with the crops' grid
    layout: (2 local crops side by side) and (2x2 local crops), their overlap
    margins trimmed and the features pooled back to the global grid."""
    return normal(rng, 8, 32, 32, 3), (), dict(num_crops=[3, 5], crop_layouts=[(1, 2), (2, 2)])


def phi3_v_crops(rng):
    """One 336x336 image as a global crop and one sub-crop (NCHW), its size,
    the text embeddings and the positions of its image tokens, found as the
    model finds them (negative token ids)."""
    tokens = np.ones((1, 320), dtype=np.int64)
    start = int(rng.integers(0, 320 - 313))
    tokens[0, start : start + 313] = -1  # (1x1 crops + global) * 144 + 1 + 2 * 12
    positions = np.argwhere(tokens < 0).tolist()
    return (normal(rng, 1, 2, 3, 336, 336),
            (normal(rng, 1, 320, 32), ints([[336, 336]]), positions), {})


def mage_patches(rng):
    """Qwen2-VL style patch rows (channels x 8 x 8) of an image and a 6-frame
    video (attended in windows of 4 frames), with each patch's (t, h, w)
    position in the processor's order: 2x2 merge blocks, row by row."""
    grids = [(1, 4, 4), (6, 2, 2)]
    positions = []
    for t, h, w in grids:
        frame, block_row, block_col, dh, dw = np.meshgrid(
            np.arange(t), np.arange(h // 2), np.arange(w // 2), np.arange(2), np.arange(2), indexing="ij")
        positions.append(np.stack([frame, 2 * block_row + dh, 2 * block_col + dw], axis=-1).reshape(-1, 3))
    return normal(rng, 40, 192), (ints(np.concatenate(positions), np.int32), grids), {}


def image(rng, size, layout="nhwc", batch=1):
    x = normal(rng, batch, size, size, 3)
    return (x if layout == "nhwc" else np.ascontiguousarray(x.transpose(0, 3, 1, 2))), (), {}


# ---- configuration the shared one lacks --------------------------------------

def fastvlm_tiny(config, vision):
    """FastViTHD's stage table is class attributes, not dataclass fields: five
    one-block stages, the last two attention (head_dim 32, so 32 and 64
    channels)."""
    config.layers = [1, 1, 1, 1, 1]
    config.embed_dims = [8, 16, 32, 32, 64]
    config.mlp_ratios = [2, 2, 2, 2, 2]


def gemma3n_tiny(config, vision):
    """MobileNetV5's block table is hard-coded (300M parameters); this one has
    every kind of block in four stages, and keeps the 640 + 1280 channels of
    stages 3 and 4 that the multi-scale fusion adapter hard-codes."""
    er, uir, mmqa = vision._er, vision._uir, vision._mmqa
    vision.gemma3n_mobilenet_def = lambda: [
        [er(3, 16, 2, 1.0), er(3, 16, 1, 2.0)],
        [uir(3, 5, 32, 2, 2.0), uir(5, 0, 32)],
        [uir(5, 5, 640, 2, 0.25), mmqa(2, 16, 2), uir(0, 0, 640, 1, 0.25)],
        [uir(5, 5, 1280, 2, 0.125), mmqa(2, 16, 1), uir(0, 0, 1280, 1, 0.125, is_multiscale=True)],
    ]


def phi3_v_tiny(config, vision):
    """phi3_v's CLIP ViT-L/14-336 is a class constant; two layers with a small
    MLP. Its width (1024) and 24x24 grid stay: the rest of the tower
    hard-codes them."""
    clip = vars(vision.VisionModel.CLIP_VIT_LARGE_PATCH14_336_CONFIG)
    vision.VisionModel.CLIP_VIT_LARGE_PATCH14_336_CONFIG = types.SimpleNamespace(
        **{**clip, "num_hidden_layers": 2, "intermediate_size": 64})


def molmo2_config(m):
    return dict(
        vit_config=m.VitConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=2,
                               num_key_value_heads=1, head_dim=16, image_patch_size=8, image_num_pos=16,
                               image_default_input_size=[32, 32]),
        adapter_config=m.AdapterConfig(hidden_size=32, intermediate_size=64, text_hidden_size=32,
                                       num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                                       vit_layers=[-1, -3]),
    )


# Positional-embedding grids other than the patch grid, so the towers
# interpolate them.
MOONVIT = dict(init_pos_emb_height=6, init_pos_emb_width=5)
KIMI_K3 = dict(vt_hidden_size=32, vt_num_attention_heads=2, vt_num_hidden_layers=2, vt_intermediate_size=64,
               qkv_hidden_size=48, init_pos_emb_height=6, init_pos_emb_width=5)
# Molmo's position table matches its 3x3 patch grid, as the real one (24x24)
# does: the tower's resize path transposes to channels-first before
# nn.Upsample (channels-last), so only matching grids run.
MOLMO = dict(image_default_input_size=(24, 24), image_patch_size=8, image_num_pos=10, image_emb_dim=32,
             image_num_heads=2, image_num_key_value_heads=1, image_head_dim=16, image_num_layers=2,
             image_mlp_dim=64, vit_layers=[-1, -2], hidden_size=64, d_model=32, intermediate_size=None)
MOONDREAM = dict(crop_size=32, overlap_margin=1, proj_inner_dim=64, proj_out_dim=32)

CASES = {
    "kimi_vl": Case(lambda rng: moonvit_patches(rng, [[4, 4], [2, 4]]), MOONVIT),
    # (t, h, w) grids: an image and a two-frame video (temporal embedding and
    # temporal pooling).
    "kimi_k25": Case(lambda rng: moonvit_patches(rng, [[1, 4, 4], [2, 2, 4]]), MOONVIT),
    "locateanything": Case(lambda rng: moonvit_patches(rng, [[4, 4], [2, 4]]), MOONVIT),
    "kimi_k3": Case(lambda rng: moonvit_patches(rng, [[1, 4, 4], [2, 2, 4]]), KIMI_K3),
    "paddleocr_vl": Case(paddleocr_packed),
    "paddleocr_vl/same_grid_batch": Case(paddleocr_same_grid_batch),
    "mllama": Case(mllama_tiles, dict(image_size=16, max_num_tiles=3, max_aspect_ratio_id=4, num_global_layers=1,
                                      intermediate_layers_indices=[0, 1], norm_eps=1e-5)),
    "molmo": Case(molmo_crops, MOLMO),
    # Its position table matches its 4x4 patch grid too (same resize path).
    "molmo2": Case(molmo2_crops, molmo2_config),
    "molmo_point": Case(lambda rng: (normal(rng, 2, 16, 192), (), {}),
                        dict(image_default_input_size=(32, 32), image_patch_size=8, image_num_pos=16,
                             num_key_value_heads=1)),
    # Windows of 32 pixels: 2x2 merged patches; layer 1 attends globally.
    "youtu_vl": Case(youtu_patches, dict(window_size=32)),
    # 5x5 position tables resized (antialiased bilinear / bicubic) to each grid.
    "lfm2_vl": Case(lambda rng: siglip2_patches(rng, [[4, 4], [2, 6]], masked=True), dict(num_patches=25)),
    "phi4_siglip": Case(lambda rng: siglip2_patches(rng, [[4, 4], [3, 5]], masked=False), dict(num_patches=25)),
    "moondream2": Case(moondream_crops, MOONDREAM),
    "moondream3": Case(moondream_crops, MOONDREAM),
    # 256x256: stage 3 comes out at the adapter's 16x16 output resolution.
    "gemma3n": Case(lambda rng: image(rng, 256, "nchw"), prepare=gemma3n_tiny),
    # Its re-parameterised convolutions have no residual path and GELU halves
    # small signals: at weight gain 1 the pixels move its output by ~3e-4 of
    # its size (barely above the tolerance), at 1.5 by a quarter.
    "fastvlm": Case(lambda rng: image(rng, 128), prepare=fastvlm_tiny, weight_gain=1.5),
    # SAM ViTDet on an 8x8 grid: windows of 3 (padded to 9), block 1 global.
    "got": Case(lambda rng: image(rng, 64), dict(img_size=64, out_chans=16, out_dim=32, window_size=3,
                                                   global_attn_indexes=(1,))),
    # HMLP: 8x8x2-frame patches folded 2x2, 2x2, 2x2 then in time.
    "inkling": Case(lambda rng: (normal(rng, 6, 2, 8, 8, 3), (), {}), dict(text_hidden_size=32)),
    # CLIP at its fixed 224 input; 32-pixel patches give a 7x7 grid, the size
    # of its position table (the model's SAM features come at its size too).
    "deepseekocr": Case(lambda rng: image(rng, 224), dict(layers=2, patch_size=32)),
    # InternViT-6B's variant: RMS norms and q/k normalisation; drop path
    # (dropout) off in eval mode.
    "internvl_chat": Case(lambda rng: image(rng, 32)[:2] + (dict(output_hidden_states=True),),
                          dict(qk_normalization=True, norm_type="rms_norm")),
    "phi3_v": Case(phi3_v_crops, prepare=phi3_v_tiny),
    # Two tiles; the projector's input width is the pixel-shuffled width
    # (4 x 32), as the real config's (4 x 1408).
    "llama4": Case(lambda rng: image(rng, 32, "nchw", batch=2),
                   dict(intermediate_size=128, pixel_shuffle_ratio=0.5, projector_input_dim=32,
                        projector_output_dim=32, norm_eps=1e-5, initializer_range=0.02, projector_dropout=0.0,
                        vision_feature_layer=-1, vision_feature_select_strategy="default")),
    # Head dim 32: its 3D RoPE splits head_dim / 2 as 4:6:6 sixteenths.
    "mage_vl": Case(mage_patches, dict(hidden_size=64, use_patch_position_encoding=True,
                                       max_position_embeddings=16)),
    # DaViT, two stages (40x40 -> 10x10 -> 5x5), windows of 3 (padded).
    "florence2": Case(lambda rng: image(rng, 40, "nchw"),
                      dict(depths=[1, 1], dim_embed=[16, 32], num_heads=[2, 2], num_groups=[2, 2], window_size=3,
                           patch_size=[7, 3], patch_stride=[4, 2], patch_padding=[3, 1],
                           patch_prenorm=[False, True])),
}


# ---- building and running -----------------------------------------------------

def build(framework, case_name):
    name = case_name.split("/")[0]
    case = CASES[case_name]
    loader = Loader(FRAMEWORKS[framework], kernels=False)
    config_module = loader.load(f"mlx_vlm.models.{name}.config")
    vision = loader.load(f"mlx_vlm.models.{name}.vision")
    settings = case.config(config_module) if callable(case.config) else case.config
    config = dataclasses.replace(vision_config(config_module, name), **settings)
    if case.prepare:
        case.prepare(config, vision)
    tower = vision.VisionModel(config)
    tower.eval()
    return tower


def on(core, value):
    """numpy arrays (also inside lists and dicts) as arrays of `core`; fresh on
    every call, as towers may write into their inputs (phi3_v does)."""
    if isinstance(value, np.ndarray):
        return core.array(value)
    if isinstance(value, (list, tuple)):
        return type(value)(on(core, v) for v in value)
    if isinstance(value, dict):
        return {k: on(core, v) for k, v in value.items()}
    return value


# kimi_vl, kimi_k25, locateanything and llama4 rotate q and k by complex
# e^(i theta) (view_as_complex): their pixel gradients go through the VJPs of
# complex multiply, matmul and exp, which conjugate the derivative as MLX's do.


@pytest.mark.parametrize("case_name", sorted(CASES))
def test_vision_tower_matches_mlx(rng, case_name):
    mlx_tower = build("mlx", case_name)
    weights = random_weights(rng, mlx_tower, CASES[case_name].weight_gain)
    assert weights, f"{case_name}: the tower has no parameters"
    mlx_tower.load_weights(weights, strict=True)
    alloy_tower = build("alloy", case_name)
    alloy_tower.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)

    pixels, args, kwargs = CASES[case_name].inputs(rng)

    def run(core, tower, x):
        return arrays_in(tower(x, *on(core, args), **on(core, kwargs)), core)

    want = run(mx, mlx_tower, mx.array(pixels))
    got = run(ax, alloy_tower, ax.array(pixels))
    assert want and len(got) == len(want), f"{case_name}: {len(got)} output arrays, MLX {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        close(g, w, f"{case_name} output {i}")

    # The pixels' gradient through the largest output (the features).
    largest = max(range(len(want)), key=lambda i: want[i].size)
    cot = rng.standard_normal(want[largest].shape).astype(np.float32)

    def loss(core, tower):
        return lambda x: (run(core, tower, x)[largest].astype(core.float32) * core.array(cot)).sum()

    want_grad = mx.grad(loss(mx, mlx_tower))(mx.array(pixels))
    got_grad = ax.grad(loss(ax, alloy_tower))(ax.array(pixels))
    close(got_grad, want_grad, f"{case_name} gradient")
