"""float64 references of parakeet-mlx's local-attention kernels
(`local_qk_perf`, `local_pv_matmul`), written from their math: query i
attends keys S_k - S_q + i - w .. + w (queries stick to the right end)."""
import numpy as np


def band_qk64(q, k, w):
    """out[b, h, i, r] = q[b, h, i] . k[b, h, S_k - S_q + i + r - w], -inf off the keys."""
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
    out = np.full((B, H, Sq, 2 * w + 1), -np.inf)
    for r in range(2 * w + 1):
        j = Sk - Sq + np.arange(Sq) + r - w
        ok = (j >= 0) & (j < Sk)
        out[:, :, ok, r] = np.einsum("bhid,bhid->bhi", q[:, :, ok], k[:, :, j[ok]])
    return out


def band_pv64(p, v, w):
    """out[b, i, h, :] = sum_r p[b, h, i, r] v[b, h, S_v - S_p + i + r - w] over the values that exist."""
    B, H, Sp, _ = p.shape
    Sv, Dv = v.shape[2], v.shape[3]
    out = np.zeros((B, Sp, H, Dv))
    for r in range(2 * w + 1):
        j = Sv - Sp + np.arange(Sp) + r - w
        ok = (j >= 0) & (j < Sv)
        out[:, ok] += np.einsum("bhi,bhid->bihd", p[:, :, ok, r], v[:, :, j[ok]])
    return out
