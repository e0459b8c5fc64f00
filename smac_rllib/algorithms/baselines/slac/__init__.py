from smac_rllib.algorithms.baselines.slac.slac import SLAC, SLACConfig

__all__ = ["SLAC", "SLACConfig"]
