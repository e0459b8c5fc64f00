"""Dreamer-v1 conv encoder / decoder for 64x64 RGB observations (the SMAC reference architecture).

Legend for shape suffixes: N = flattened leading dims, E = embedding dim (32 * depth), F = feature dim
(stoch + deter), H, W, C = 64, 64, 3. Images are channels-last everywhere outside this module, as the
env produces them; ``*lead`` = any leading dims, e.g. (B,) or (B, T).

Only 64x64 images are supported (the paper's setting); small presets shrink ``depth`` instead.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["IMAGE_SHAPE", "preprocess_image", "ConvEncoder", "ConvDecoder"]

IMAGE_SHAPE = (64, 64, 3)  # (H, W, C)


def preprocess_image(image: torch.Tensor, device: torch.device | str | None = None) -> torch.Tensor:
    """uint8 (*lead, H, W, C) in [0, 255] -> float32 in [-0.5, 0.5], on ``device``.

    The uint8 tensor is moved first (4x fewer bytes to copy). Floating inputs are taken as already
    normalized and only moved.
    """
    image = torch.as_tensor(image).to(device)
    if image.dtype == torch.uint8:
        return image.float() / 255.0 - 0.5  # reference: image / 255.0 - 0.5
    if not image.is_floating_point():
        raise TypeError(f"images must be uint8 (raw) or float (normalized to [-0.5, 0.5]); got {image.dtype}")
    return image


def _check_image_shape(image: torch.Tensor) -> None:
    if tuple(image.shape[-3:]) != IMAGE_SHAPE:
        raise ValueError(
            f"conv encoder expects channels-last images (*lead, 64, 64, 3); got {tuple(image.shape)} "
            "(render 64x64 RGB pixels, and keep the channel axis last)"
        )


class ConvEncoder(nn.Module):
    """4 convs, kernel 4, stride 2, channels depth * (1, 2, 4, 8), ReLU: 64 -> 31 -> 14 -> 6 -> 2.

    (*lead, 64, 64, 3) uint8 or normalized float -> (*lead, E) with E = 2 * 2 * 8 * depth = 32 * depth.
    """

    def __init__(self, depth: int = 32):
        super().__init__()
        self.depth = depth
        self.embed_dim = 32 * depth
        layers, in_channels = [], IMAGE_SHAPE[-1]
        for mult in (1, 2, 4, 8):
            layers += [nn.Conv2d(in_channels, mult * depth, kernel_size=4, stride=2), nn.ReLU()]
            in_channels = mult * depth
        self.convs = nn.Sequential(*layers)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        _check_image_shape(image)
        image = preprocess_image(image, self.convs[0].weight.device)
        lead = image.shape[:-3]
        image_N_C_H_W = image.reshape(-1, *IMAGE_SHAPE).permute(0, 3, 1, 2)
        embed_N_E = self.convs(image_N_C_H_W).flatten(start_dim=1)
        return embed_N_E.reshape(*lead, self.embed_dim)


class ConvDecoder(nn.Module):
    """Dense -> (32 * depth, 1, 1), then 4 transposed convs, kernels (5, 5, 6, 6), stride 2, ReLU between.

    1 -> 5 -> 13 -> 30 -> 64. (*lead, F) -> image mean (*lead, 64, 64, 3) in the normalized [-0.5, 0.5] scale
    (the likelihood is N(mean, 1) per pixel, see ``elbo.gaussian_image_log_lik``).
    """

    def __init__(self, feat_dim: int, depth: int = 32):
        super().__init__()
        self.depth = depth
        self.fc = nn.Linear(feat_dim, 32 * depth)
        self.deconvs = nn.Sequential(
            nn.ConvTranspose2d(32 * depth, 4 * depth, kernel_size=5, stride=2),
            nn.ReLU(),
            nn.ConvTranspose2d(4 * depth, 2 * depth, kernel_size=5, stride=2),
            nn.ReLU(),
            nn.ConvTranspose2d(2 * depth, 1 * depth, kernel_size=6, stride=2),
            nn.ReLU(),
            nn.ConvTranspose2d(1 * depth, IMAGE_SHAPE[-1], kernel_size=6, stride=2),
        )

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        lead = feat.shape[:-1]
        x_N_C = self.fc(feat).reshape(-1, 32 * self.depth)
        # The first transposed conv sees a 1x1 input, so it is a dense layer: run it as one matmul with the
        # same weights (~10x faster than the CPU deconv kernel; same parameters and result).
        first = self.deconvs[0]
        c_out, k_h, k_w = first.weight.shape[1:]
        x_N_C_5_5 = F.linear(x_N_C, first.weight.flatten(1).T).reshape(-1, c_out, k_h, k_w)
        x_N_C_5_5 = x_N_C_5_5 + first.bias[:, None, None]
        mean_N_C_H_W = self.deconvs[1:](x_N_C_5_5)
        return mean_N_C_H_W.permute(0, 2, 3, 1).reshape(*lead, *IMAGE_SHAPE)
