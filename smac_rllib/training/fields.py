"""One home per setting: each of our configs declares its fields as rows of a table (``{name: Field(...)}``), and
every use of a field is generated from its row -- the default set in ``__init__``, the ``training()`` keyword, the
type and range checks that ``validate()`` and the command line apply (before Ray starts), whether the field applies
to pixel runs, state runs or both, and its value per modality where the default is "automatic" (``auto``: the
``resolved_<name>`` properties). The settings objects the update reads (``ObjectiveSettings``, ``PixelSettings``,
``OptimSettings``) have no defaults of their own: they are built from a config's ``resolved_fields()``, or from
``resolved_defaults(table, pixels)`` where no config can be built (benchmarks on a machine without ray).

``FieldTableConfig`` (first in a config's bases) merges the ``FIELDS`` tables of the class and its bases. This module
imports no ray (the tables load without it); the rows of the training layer itself (the loop's, the learner shell's)
are at the bottom.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from typing import Any

from smac_rllib.core.values import Range, is_int, is_number

MAX_UPDATES_PER_ENV_STEP = 64  # updates_per_env_step: high-ratio methods use ~20 (REDQ, DroQ); 1000 is per iteration
MIN_UPDATES_PER_ENV_STEP = 0.01  # one update per 100 env steps; 0.001 is "every 1000 steps" (a period, SB3 train_freq)
RLLIB = object()  # the default of a row for one of RLlib's fields that we leave at RLlib's default: the row adds checks


@dataclasses.dataclass(frozen=True)
class When:
    """The condition under which a setting is read at all: another field equal to ``value`` (or, ``above``, greater
    than it). A sweep of the setting where the condition fails runs identical trials (``cli/same_trials.py``)."""

    field: str
    value: Any
    above: bool = False

    def holds(self, other: Any) -> bool:
        if self.above:
            return is_number(other) and other > self.value
        return other == self.value and type(other) is type(self.value)

    def describe(self) -> str:
        """``estimator: mlmc``, ``async_learning: true``, ``beta > 0``"""
        if self.above:
            return f"{self.field} > {self.value}"
        return f"{self.field}: {str(self.value).lower() if isinstance(self.value, bool) else self.value}"


@dataclasses.dataclass(frozen=True)
class Field:
    """One setting: ``default`` and ``doc`` (its meaning, the reference's name and value); the value's ``kind``
    (``int``, ``float`` -- integers accepted --, ``bool`` or ``str``; by default the default's type), ``nullable``
    (None accepted: "automatic"), the allowed numbers ``low``/``high`` (each end included unless ``*_open``) or
    ``choices``, the ``hint`` every error ends with, and ``pixels``: True for pixel runs only, False for state runs
    only (then ``instead`` names what a pixel run uses), None for both; ``read_when``: the condition (``When``) on
    another field under which the setting is read at all. ``auto``: (state value, pixel value) that a None default
    resolves to. ``rllib``: one of RLlib's own fields (RLlib's ``training()`` takes it; the row sets our default and
    adds the checks)."""

    default: Any
    doc: str
    kind: type | None = None
    nullable: bool = False
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    hint: str = ""
    pixels: bool | None = None
    instead: str = ""
    auto: tuple | None = None
    rllib: bool = False
    read_when: When | tuple[When, ...] | None = None  # the condition(s) on other fields under which it is read at all

    @property
    def conditions(self) -> tuple[When, ...]:
        when = self.read_when
        return () if when is None else (when,) if isinstance(when, When) else when

    @property
    def value_kind(self) -> type | None:
        if self.kind is not None or self.choices is not None:
            return self.kind
        return None if self.default is None or self.default is RLLIB else type(self.default)

    def annotation(self) -> Any:
        """The type the command line checks a written value against (``cli/checks.py``)."""
        if self.choices is not None:
            kinds = {type(c) for c in self.choices if c is not None}
            kind = kinds.pop() if len(kinds) == 1 else Any
            return typing.Optional[kind] if None in self.choices else kind
        kind = self.value_kind or Any
        return typing.Optional[kind] if self.nullable or self.default is None else kind

    def range(self) -> Range | None:
        """The allowed numbers (the command line checks the same), None without bounds."""
        if self.low is None and self.high is None:
            return None
        return Range(self.low, self.high, self.low_open, self.high_open, self.hint)

    def error(self, name: str, value: Any) -> str | None:
        """A one-line message naming the fix when ``value`` is not allowed, else None."""
        if value is None and (self.nullable or self.default is None or (self.choices and None in self.choices)):
            return None
        hint = f" {self.hint}" if self.hint else ""
        if self.choices is not None:
            if any(value == c and type(value) is type(c) for c in self.choices if c is not None):
                return None
            if len(self.choices) == 1:
                return f"{name}={value!r} must be {self.choices[0]!r}{hint}"
            named = ", ".join("null" if c is None else repr(c) for c in self.choices)
            return f"{name}={value!r} is unknown; use one of {named}{hint}"
        kind, ok = self.value_kind, True
        if kind is bool:
            if not isinstance(value, bool):
                return f"{name}={value!r} must be true or false{hint}"
            return None
        if kind is int:
            ok, what = is_int(value), "an integer"
        elif kind is float:
            ok, what = is_number(value), "a number"
        elif kind is str:
            ok, what = isinstance(value, str), "a string"
        else:
            what = "a value"
        allowed = self.range()
        if ok and (allowed is None or value in allowed):
            return None
        null = " or None" if self.nullable or self.default is None else ""
        return f"{name}={value!r} must be {what}{' ' + allowed.describe() if allowed else ''}{null}{hint}"


def seed_actions(source: str) -> Field:
    """``random_actions_before_learning``: the warm-up's uniform random actions (``source``: where the reference
    has them); read only when there is a warm-up."""
    return Field(
        True,
        f"uniform random actions for exactly the first num_steps_sampled_before_learning_starts agent steps ({source})",
        read_when=When("num_steps_sampled_before_learning_starts", 0, above=True),
    )


def positive(default, doc: str, hint: str = "", **kw) -> Field:
    """A number > 0 (learning rates, temperatures, clip norms)."""
    return Field(default, doc, kind=float, hint=hint, **{"low": 0, "low_open": True, **kw})


def count(default, doc: str, low: int = 1, hint: str = "", **kw) -> Field:
    """An integer >= ``low`` (widths, layers, batch sizes)."""
    return Field(default, doc, kind=int, low=low, hint=hint, **kw)


def resolve(field: Field, value: Any, pixels: bool) -> Any:
    """``value``, or the row's ``auto`` value for the modality where ``value`` is None."""
    return field.auto[bool(pixels)] if value is None and field.auto is not None else value


def resolved_defaults(fields: dict[str, Field], pixels: bool, **overrides) -> dict[str, Any]:
    """Every field's default resolved for one modality, with ``overrides``: the settings of a fresh config, for code
    that runs where the config class cannot be imported (no ray)."""
    values = {name: f.default for name, f in fields.items() if f.default is not RLLIB} | overrides
    return {name: resolve(fields[name], value, pixels) if name in fields else value for name, value in values.items()}


def set_defaults(config, fields: dict[str, Field]) -> None:
    """Each field of ``fields`` set to its default on ``config`` (a copy of a mutable one; ``RLLIB`` rows are left to
    RLlib)."""
    for name, field in fields.items():
        if field.default is not RLLIB:
            setattr(config, name, copy.deepcopy(field.default))


def set_provided(config, kwargs: dict, fields: dict[str, Field]) -> None:
    """``training(**kwargs)`` for fields RLlib does not know: each given in ``kwargs`` (and not RLlib's ``NotProvided``)
    is set on ``config`` and removed from ``kwargs``, which then go to the parent's ``training``."""
    from ray.rllib.algorithms.algorithm_config import NotProvided  # lazy: this module loads without ray (see above)

    for name, field in fields.items():
        if field.rllib or field.default is RLLIB:
            continue
        value = kwargs.pop(name, NotProvided)
        if value is not NotProvided:
            setattr(config, name, value)


class FieldTableConfig:
    """Put first in a config's bases. ``ALL_FIELDS`` is the class's ``FIELDS`` table merged over its bases (a subclass's
    row replaces its base's); ``__init__`` sets their defaults, ``training(**kwargs)`` takes them, ``validate()`` and
    the command line check them (``config_errors``; ``cross_errors`` adds the checks between fields)."""

    FIELDS: dict[str, Field] = {}
    ALL_FIELDS: dict[str, Field] = {}
    FIELD_TYPES: dict[str, Any] = {}  # read by the command line's type check (cli/checks.py)
    LEARNER_ONLY: tuple[str, ...] = ()  # fields only the updates read: an evaluation_config value is never read
    READS_TWIN_Q = False  # RLlib's twin_q: read where RLlib's SAC module builds the critics (SACBaseline's family)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        merged: dict[str, Field] = {}
        for base in reversed(cls.__mro__):
            merged |= base.__dict__.get("FIELDS", {})
        cls.ALL_FIELDS = merged
        cls.FIELD_TYPES = {name: field.annotation() for name, field in merged.items() if field.default is not RLLIB}
        for name, field in merged.items():
            if field.auto is not None:  # resolved_<name>: the value, or the modality's for None
                setattr(cls, f"resolved_{name}", property(lambda self, n=name: self.resolved(n)))

    @property
    def is_pixels(self) -> bool:
        return isinstance(self.env_config, dict) and bool(self.env_config.get("from_pixels"))

    def switched_off_keys(self, written: dict) -> dict[str, str]:
        """{written setting: message} for each setting another one switches off (``Field.read_when``): a sweep over
        it would run identical trials. A setting whose switch is itself switched off by it (TD3's target noise and
        its clip, both 0) is left to the other's report."""
        off: dict[str, tuple[str, str]] = {}
        for key, field in self.ALL_FIELDS.items():
            for when in field.conditions if key in written else ():
                if not hasattr(self, when.field):
                    continue
                value = self.resolved(when.field) if when.field in self.ALL_FIELDS else getattr(self, when.field)
                if not when.holds(value):
                    off[key] = (
                        when.field,
                        f"{key}={written[key]!r} is not read with {when.field}={value!r} (only with "
                        f"{when.describe()}); set that or remove {key}",
                    )
                    break
        return {key: message for key, (switch, message) in off.items() if switch not in off}

    def resolved(self, name: str) -> Any:
        return resolve(self.ALL_FIELDS[name], getattr(self, name), self.is_pixels)

    def resolved_fields(self) -> dict[str, Any]:
        """Every field of the table with its value for this run (``auto`` rows resolved for the modality)."""
        return {name: self.resolved(name) for name in self.ALL_FIELDS}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        set_defaults(self, self.ALL_FIELDS)

    def training(self, **kwargs):
        set_provided(self, kwargs, self.ALL_FIELDS)
        super().training(**kwargs)
        return self

    @classmethod
    def field_ranges(cls) -> dict[str, Range]:
        """The command line's range check of our own fields (RLlib's have theirs in ``cli/ranges.py``)."""
        return {
            name: r
            for name, field in cls.ALL_FIELDS.items()
            if not field.rllib and field.default is not RLLIB and (r := field.range()) is not None
        }

    @classmethod
    def modality_fields(cls, pixels: bool) -> dict[str, Field]:
        """The fields that apply to one modality only: ``pixels=True`` the pixel-only ones."""
        return {name: field for name, field in cls.ALL_FIELDS.items() if field.pixels is pixels}

    def config_errors(self) -> list[str]:
        """Every invalid setting, each as a one-line message naming the fix: the rows' checks, then ``cross_errors``."""
        errors = [
            message
            for name, field in self.ALL_FIELDS.items()
            if (message := field.error(name, getattr(self, name, None))) is not None
        ]
        return errors + (self.cross_errors() if not errors else [])

    def cross_errors(self) -> list[str]:
        """Checks between fields (each field's own value already passed its row)."""
        return []

    def validate(self) -> None:
        super().validate()
        errors = self.config_errors()
        if errors:
            raise ValueError(errors[0])


# --- the training layer's own rows ----------------------------------------------------------------------------------
ASYNC_FIELDS = {  # the loop's (training/off_policy.py, async_driver.py), on every config of the package
    "async_learning": Field(
        True,
        "act and learn at the same time (docs/design.md §8); False = the synchronous loop "
        "(sample, update, sync), reproducible step by step",
    ),
    "weight_sync_every_updates": count(
        None,
        "async: updates between weight syncs to the env runners; None = the "
        "reference's policy lag (pixels: every 500 agent steps) or the synchronous "
        "loop's cadence (states)",
        hint="(None: automatic)",
        read_when=When("async_learning", True),
    ),
    "async_max_lead_env_steps": count(
        None,
        "async: how many env steps the runners may sample ahead of the updates "
        "(rate limiter slack); None = 2 x fragment x envs x runners",
        hint="(None: automatic)",
        read_when=When("async_learning", True),
    ),
    "cuda_deterministic": Field(
        False,
        "keep what RLlib's seeding sets on a CUDA learner (CUBLAS_WORKSPACE_CONFIG=:4096:8, "
        "cuDNN deterministic): 1.4-1.7x slower pixel updates on an H100 "
        "(docs/gpu.md); False = the seeds only",
        read_when=When("num_gpus_per_learner", 0, above=True),  # a CPU learner has no CUDA settings to keep
    ),
}

LEARNER_FIELDS = {  # the learner shell's (training/step_learner.py), on every config whose learner has it
    "max_consecutive_nonfinite_updates": count(
        100, "stop the run after this many skipped non-finite updates in a row", hint="(default 100)"
    ),
    "torch_num_threads": count(
        1,
        "torch threads per CPU learner / env runner process (docs/design.md §3); 0 = torch default",
        low=0,
        hint="(0: torch's default)",
    ),
    "fast_update": Field(
        True,
        "retired: every run takes the one update (docs/design.md §9); kept so that older checkpoints' configs "
        "restore, false is refused",
        choices=(True,),
        hint="(the switch was retired: every run takes the one update; remove fast_update)",
    ),
}

OFF_POLICY_RLLIB_FIELDS = {  # RLlib's fields that every config of the package sets for the off-policy loop
    "replay_buffer_config": Field(
        {"type": "EpisodeReplayBuffer", "capacity": 1_000_000},
        "uniform replay of 1M env steps (training/replay.py builds it; its capacity is read)",
        kind=object,
        rllib=True,
    ),
    "store_buffer_in_checkpoints": Field(
        True,
        "the replay buffer in every checkpoint: RLlib 2.60 would drop it on restore (docs/design.md §3)",
        rllib=True,
    ),
    "rollout_fragment_length": Field(10, "env steps per sample request and env", kind=object, rllib=True),
    "min_sample_timesteps_per_iteration": count(
        1000, ">= one DMC episode per iteration (1000 agent steps at action repeat 1)", low=0, rllib=True
    ),
    "min_time_s_per_iteration": Field(0, "no minimum: iterations end on the steps above", kind=object, rllib=True),
}

SAC_RLLIB_FIELDS = {  # RLlib SAC's fields that SMAC and the SAC baseline set alike (the paper's SAC settings)
    "actor_lr": positive(3e-4, "actor Adam learning rate (RLlib SAC: 3e-5)", hint="(paper: 3e-4)", rllib=True),
    "critic_lr": positive(3e-4, "critic Adam learning rate", hint="(paper: 3e-4)", rllib=True),
    "alpha_lr": positive(3e-4, "temperature Adam learning rate", hint="(paper: 3e-4)", rllib=True),
    "tau": Field(
        0.005, "Polyak rate of the target critics", kind=float, low=0, high=1, hint="(paper: 0.005)", rllib=True
    ),
    "gamma": Field(0.99, "discount", kind=float, low=0, high=1, low_open=True, hint="(paper: 0.99)", rllib=True),
}
