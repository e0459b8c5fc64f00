from smac_rllib.algorithms.slac.slac import SLAC, SLACConfig

__all__ = ["SLAC", "SLACConfig"]
