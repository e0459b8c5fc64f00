from smac_rllib.algorithms.smac.smac import SMAC, SMACConfig

__all__ = ["SMAC", "SMACConfig"]
