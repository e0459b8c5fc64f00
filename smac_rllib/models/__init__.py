"""torch nn.Modules of SMAC (no Ray imports): conv encoder/decoder, RSSM, world model, MLPs, policy, critic.

Import from the submodules, e.g. ``from smac_rllib.models.world_model import WorldModel, WorldModelConfig``.
"""
