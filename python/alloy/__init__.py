"""Alloy: MLX-compatible arrays whose Metal kernels run on NVIDIA GPUs and CPUs.

Use it as MLX: ``import alloy.core as mx``.
"""
