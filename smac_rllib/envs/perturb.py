"""Pixel perturbations of the robustness experiment (paper Table 1). Pure numpy: uint8 image in, uint8 out.

Both act on every pixel *value* (each of H x W x C entries) independently; ``rng`` is a
``numpy.random.Generator`` (the env passes its seeded ``np_random``), so a seed reproduces the noise.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["validate_perturbations", "gaussian_noise", "sensor_missing", "perturb"]


def validate_perturbations(pixel_noise_std: float, sensor_missing_prob: float) -> None:
    """Raise a ValueError naming the fix for a noise std outside [0, 1] or a probability outside [0, 1]."""
    if not (math.isfinite(pixel_noise_std) and pixel_noise_std >= 0.0):
        raise ValueError(
            f"pixel_noise_std={pixel_noise_std!r} must be a finite std >= 0 in units of the [0, 1] pixel range "
            "(paper Table 1 uses 0.01 and 0.05; 0 disables the noise)"
        )
    if pixel_noise_std > 1.0:  # a std wider than the whole range: noise frames, the scene gone
        raise ValueError(
            f"pixel_noise_std={pixel_noise_std!r} is wider than the whole [0, 1] pixel range (gray levels are divided "
            f"by 255: {pixel_noise_std:g} levels is {pixel_noise_std / 255:.3g}); paper Table 1 uses 0.01 and 0.05"
        )
    if not (0.0 <= sensor_missing_prob <= 1.0):
        raise ValueError(
            f"sensor_missing_prob={sensor_missing_prob!r} must be a probability in [0, 1] "
            "(paper Table 1 uses 0.01 and 0.05; 0 disables it)"
        )


def gaussian_noise(image: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    """Additive Gaussian noise N(0, std^2) on the [0, 1] pixel scale, clipped to [0, 1], rounded back to uint8."""
    x = image.astype(np.float32) / 255.0 + rng.normal(0.0, std, size=image.shape).astype(np.float32)
    return np.rint(np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)


def sensor_missing(image: np.ndarray, prob: float, rng: np.random.Generator) -> np.ndarray:
    """Zero each pixel value independently with probability ``prob`` (a dead sensor reads 0)."""
    keep = rng.random(image.shape) >= prob
    return (image * keep).astype(np.uint8)


def perturb(
    image: np.ndarray, *, pixel_noise_std: float, sensor_missing_prob: float, rng: np.random.Generator
) -> np.ndarray:
    """Noise first, then missing values (a missing value stays exactly 0). Zero settings are exact no-ops."""
    if pixel_noise_std > 0.0:
        image = gaussian_noise(image, pixel_noise_std, rng)
    if sensor_missing_prob > 0.0:
        image = sensor_missing(image, sensor_missing_prob, rng)
    return image
