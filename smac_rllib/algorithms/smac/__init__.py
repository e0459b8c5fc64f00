"""SMAC: its config and algorithm (``smac.py``), field table, RLModules and learners. The names import lazily, so
that the field table (``smac_fields.py``) loads without ray."""


def __getattr__(name):
    if name in ("SMAC", "SMACConfig"):
        from smac_rllib.algorithms.smac import smac  # lazy: the package's field table loads without ray

        return getattr(smac, name)
    raise AttributeError(f"module 'smac_rllib.algorithms.smac' has no attribute {name!r}")


__all__ = ["SMAC", "SMACConfig"]
