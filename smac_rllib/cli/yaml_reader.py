"""Reading a tuned-example YAML file: YAML 1.2 floats, line numbers on every mapping (``MarkedDict``), and limits on
size, nesting and alias expansion, each mistake a one-line ``UserError`` naming the fix.

Conventions from CI and compose files work as there: ``<<: *anchor`` merges an anchored mapping (YAML 1.1 merge
key: keys written next to it win; ``<<: [*a, *b]`` merges several, the earlier winning), each merged key keeping
the line it was written on; the merge is shallow, so a mapping written next to ``<<:`` (``config: {...}``)
replaces the merged one as a whole, which is said in a warning naming the keys it drops when it drops most of
them (write ``config: {<<: *config, ...}`` to merge it too). ``<<:`` twice in one mapping is refused (as YAML's
duplicate key). A top-level entry named ``.name`` (GitLab CI) or ``x-name`` (compose) is a template, not an experiment
(``is_template``): it holds anchors for the experiments to merge."""

from __future__ import annotations

import re
from typing import Any

import yaml

from smac_rllib.cli.yaml_errors import syntax_hint
from smac_rllib.cli.yaml_text import check_pasted_text, read_text
from smac_rllib.cli.errors import UserError, one_line, warn


# YAML 1.2 floats: YAML 1.1 (PyYAML) reads `3e-4` or `1e6` as the *string* "3e-4".
_FLOAT_RE = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)[eE][-+]?[0-9]+
        |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class MarkedDict(dict):
    """A YAML mapping that remembers the (1-based) line of each of its keys, for error messages."""

    line: int | None = None
    key_lines: dict

    def line_of(self, key: Any) -> int | None:
        return getattr(self, "key_lines", {}).get(key, self.line)


MAX_YAML_DEPTH = 64  # nesting levels (PyYAML composes recursively: 1000 levels would be a RecursionError)
MAX_YAML_VALUES = 100_000  # values after expanding '*' aliases ("billion laughs": 9 lines -> 10**9 values)


class _LimitError(yaml.MarkedYAMLError):
    """A file beyond MAX_YAML_DEPTH / MAX_YAML_VALUES, or with a key that is not a plain value."""


# JSON Schema's annotations at the top of a JSON/YAML file (editors read "$schema" to complete and check the file)
SCHEMA_ANNOTATIONS = ("$schema", "$id", "$comment")


def is_template(name: Any) -> bool:
    """A top-level ``.name`` (GitLab CI's hidden job) or ``x-name`` (compose's extension field): anchors to merge
    from, not an experiment; so is a JSON Schema annotation (``SCHEMA_ANNOTATIONS``), which is for the editor."""
    return isinstance(name, str) and (name.startswith((".", "x-")) or name in SCHEMA_ANNOTATIONS)


class _Loader(yaml.SafeLoader):
    _depth = 0

    def __init__(self, stream):
        super().__init__(stream)
        self.merge_notes: list[tuple[int, str]] = []  # (line, warning) about shallow merges
        self.aliased: set[str] = set()  # the anchors some `*alias` refers to

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _LimitError(None, None, _too_deep(), self.peek_event().start_mark)
            event = self.peek_event()
            node = super().compose_node(parent, index)
            if isinstance(event, yaml.AliasEvent):
                self.aliased.add(event.anchor)
            elif event.anchor:
                node.anchor_name = event.anchor  # for the merge warnings' `<<: *name`
            return node
        finally:
            self._depth -= 1

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            _expanded_size(node, {}, 1)
        self.root = node
        return node

    def construct_key(self, node: yaml.Node, key_node: yaml.Node) -> Any:
        """A key as written; the top level's keys (experiment names) always as their text: ``2026-11-29:`` is a
        name, not YAML 1.1's date, as ``1:`` or ``on:`` are not an integer or a bool."""
        if node is getattr(self, "root", None) and isinstance(key_node, yaml.ScalarNode) and not key_node.style:
            return key_node.value
        return self.construct_object(key_node, deep=True)


def _expanded_size(node: yaml.Node, seen: dict, depth: int) -> tuple[int, int]:
    """(values, levels) under ``node`` with every alias expanded, memoized (linear in the file); too many values,
    too many levels (``depth`` counts those above) or a recursive alias raise ``_LimitError``."""
    key = id(node)
    if key in seen:
        if seen[key] is None:
            raise _LimitError(
                None,
                None,
                "an alias refers to the mapping or list that contains it; remove that '*' alias",
                node.start_mark,
            )
        size, height = seen[key]
    else:
        if depth > MAX_YAML_DEPTH:
            raise _LimitError(None, None, _too_deep(), node.start_mark)
        seen[key] = None  # in progress
        children = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        sizes = [_expanded_size(child, seen, depth + 1) for child in children]
        size, height = 1 + sum(s for s, _ in sizes), 1 + max((h for _, h in sizes), default=0)
        seen[key] = size, height
    if size > MAX_YAML_VALUES:
        raise _LimitError(
            None,
            None,
            f"the file expands to more than {MAX_YAML_VALUES:,} values through its '*' aliases "
            "(an alias bomb?); write the values out or use fewer aliases",
            node.start_mark,
        )
    if depth + height - 1 > MAX_YAML_DEPTH:
        raise _LimitError(None, None, _too_deep(" through '*' aliases"), node.start_mark)
    return size, height


def _too_deep(via: str = "") -> str:
    return f"values are nested deeper than {MAX_YAML_DEPTH} levels{via}; flatten the file"


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> MarkedDict:
    first_line: dict = {}
    merges = [(k, v) for k, v in node.value if k.tag == "tag:yaml.org,2002:merge"]
    if len(merges) > 1:  # PyYAML merges both; YAML (and compose's Go parser) call it a duplicate key
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"duplicate key '<<' (first on line {merges[0][0].start_mark.line + 1}); merge several mappings with "
            "one `<<: [*a, *b]` (the earlier one wins)",
            merges[1][0].start_mark,
        )
    if merges and isinstance(merges[0][1], yaml.SequenceNode):
        _note_merge_list_order(loader, merges[0][0], merges[0][1])
    if merges:
        _check_experiment_merged_inside(loader, node, merges[0])
    for key_node, _ in node.value:  # duplicates among the keys written here (PyYAML silently keeps the last)
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
            raise _LimitError(
                None,
                None,
                f"a {kind} is used as a mapping key; keys are plain names or numbers "
                "(check for a stray '?', '[' or '{' before the ':')",
                key_node.start_mark,
            )
        key = loader.construct_key(node, key_node)
        if key in first_line:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {first_line[key]}); keep one", key_node.start_mark
            )
        first_line[key] = key_node.start_mark.line + 1
    own = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
    merged_from = merges[0][1] if merges else None
    loader.flatten_mapping(node)  # `<<: *anchor` merges first; keys written here override them
    if merged_from is not None:
        _note_shallow_merges(loader, node, own, merged_from)
    mapping = MarkedDict()
    mapping.line, mapping.key_lines = node.start_mark.line + 1, {}
    for key_node, value_node in node.value:
        key = loader.construct_key(node, key_node)
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1
    return mapping


def _check_experiment_merged_inside(loader: _Loader, node: yaml.MappingNode, merge: tuple) -> None:
    """``config: {<<: *base}`` where ``&base`` is a whole experiment (run, config, ...): its run/env/stop land among
    the config keys. Said where the merge is, naming the anchor to merge instead (the experiment's config)."""
    key_node, value = merge
    root = getattr(loader, "root", None)
    if root is None or any(v is node for _, v in root.value):
        return  # an experiment merging an experiment: what templates are for
    for base in value.value if isinstance(value, yaml.SequenceNode) else [value]:
        parts = {k.value: v for k, v in base.value} if isinstance(base, yaml.MappingNode) else {}
        if "run" not in parts or "config" not in parts:
            continue
        config, anchor = parts["config"], getattr(base, "anchor_name", "?")
        inner = getattr(config, "anchor_name", None)
        fix = (
            f"merge its config instead: `<<: *{inner}` (the anchor on line {config.start_mark.line + 1})"
            if inner
            else f"anchor its config (`config: &{anchor}_config`, line {config.start_mark.line + 1}) and merge that"
        )
        inside = next(
            (f"{k.value}:" for _, e in root.value if isinstance(e, yaml.MappingNode) for k, v in e.value if v is node),
            "a mapping inside an experiment",
        )
        raise _LimitError(
            None,
            None,
            f"`<<: *{anchor}` merges the whole experiment {anchor} ({', '.join(k for k in parts if k != '<<')}) into "
            f"{inside}; {fix}",
            key_node.start_mark,
        )


def _note_shallow_merges(loader: _Loader, node: yaml.MappingNode, own: set, merged_from: yaml.Node) -> None:
    """A mapping written next to ``<<:`` replaces the merged mapping of that key as a whole (YAML merges one level):
    a warning naming the keys it drops when it drops most of them (``config: {seed: 1}``: the template's config is
    gone), unless it merges that mapping itself."""
    merged = {}
    for key_node, value_node in node.value:
        if id(key_node) not in own and isinstance(key_node, yaml.ScalarNode):
            merged.setdefault(key_node.value, value_node)  # the first merged one wins, as in the mapping
    for key_node, value_node in node.value:
        base = merged.get(key_node.value) if id(key_node) in own else None
        if not (isinstance(base, yaml.MappingNode) and isinstance(value_node, yaml.MappingNode)):
            continue
        if any(k.tag == "tag:yaml.org,2002:merge" and _merges(v, base) for k, v in value_node.value):
            continue
        written = {k.value for k, _ in value_node.value if isinstance(k, yaml.ScalarNode)}
        dropped = [k.value for k, _ in base.value if isinstance(k, yaml.ScalarNode) and k.value not in written]
        dropped = [k for k in dropped if k != "<<"]
        kept = [k.value for k, _ in base.value if isinstance(k, yaml.ScalarNode) and k.value in written]
        if len(dropped) <= len(kept):
            continue  # most of its keys written out again: a replacement meant as one
        anchor = getattr(base, "anchor_name", None)
        fix = (
            f"`{key_node.value}: {{<<: *{anchor}, ...}}`"
            if anchor
            else f"an anchor on it and `<<: *name` in {key_node.value}:"
        )
        shown = ", ".join(dropped[:5]) + (", ..." if len(dropped) > 5 else "")
        loader.merge_notes.append(
            (
                key_node.start_mark.line + 1,
                f"`{key_node.value}:` here replaces the `{key_node.value}:` merged by `<<:` (line "
                f"{base.start_mark.line + 1}) as a whole, without its {shown} (YAML's merge is shallow); to keep "
                f"them merge it too: {fix}",
            )
        )


def _note_merge_list_order(loader: _Loader, key_node: yaml.Node, bases: yaml.SequenceNode) -> None:
    """``<<: [*defaults, *quick]`` where both set a key to different values: YAML keeps the earlier one, the opposite
    of the usual "later overrides" reading; said once, with the order that lets the later one win."""
    seen: dict[str, tuple[str, str]] = {}  # key -> (value, anchor) of the first mapping that sets it
    for base in bases.value:
        if not isinstance(base, yaml.MappingNode):
            continue
        name = getattr(base, "anchor_name", None) or "?"
        for k, v in base.value:
            if not (isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode)) or k.value == "<<":
                continue
            if k.value in seen and seen[k.value][0] != v.value:
                first_value, first = seen[k.value]
                loader.merge_notes.append(
                    (
                        key_node.start_mark.line + 1,
                        f"`<<:` keeps *{first}'s {k.value}: {first_value} over *{name}'s {k.value}: {v.value} (in a "
                        f"merge list the earlier mapping wins); to let *{name} override, list it first: "
                        f"`<<: [*{name}, *{first}]`",
                    )
                )
                return
            seen.setdefault(k.value, (v.value, name))


def _merges(value: yaml.Node, base: yaml.Node) -> bool:
    """``<<: *base`` or ``<<: [..., *base, ...]``."""
    return value is base or (isinstance(value, yaml.SequenceNode) and any(v is base for v in value.value))


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    """YAML 1.1 reads ``0256`` as octal (174) and ``1:30`` as base 60 (90): numbers nobody writes in a config on
    purpose, refused with the decimal reading (``hidden_dim: 0256`` had built a 174-unit layer in silence)."""
    value = loader.construct_yaml_int(node)
    sign, digits = ("-" if node.value.startswith("-") else ""), node.value.lstrip("+-").replace("_", "")
    if ":" in digits:
        kind, fix = "base 60", str(value)
    elif re.fullmatch(r"0[0-7]+", digits) and int(digits, 10) != abs(value):
        kind, fix = "octal", f"{sign}{int(digits, 10)} without the zero"
    else:
        return value
    raise _LimitError(
        None,
        None,
        f"{node.value} is {kind} in YAML 1.1 (read as {value}); write {fix}, or quote it if it is text",
        node.start_mark,
    )


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE, list("-+0123456789."))
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: str) -> MarkedDict:
    """Parse ``path``; a missing file, a syntax error, non-UTF-8 bytes or a file beyond the limits (size, nesting,
    aliases) is a ``UserError`` with ``file:line:column``."""
    text = read_text(path)
    check_pasted_text(text, path)
    loader = None
    try:
        loader = _Loader(text)  # (its reader refuses control characters already here)
        doc = loader.get_single_data()
    except _LimitError as e:
        mark = e.problem_mark
        raise UserError(e.problem, f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path) from None
    except yaml.MarkedYAMLError as e:
        hint, where = syntax_hint(e, text, path)
        raise UserError(f"YAML syntax error: {hint}", where) from None
    except yaml.reader.ReaderError as e:  # a control character (NUL, ...): no mark, a position in the text
        line = text[: e.position].count("\n") + 1
        raise UserError(
            f"the file contains the control character U+{e.character:04X}; remove it (save the file as plain text)",
            f"{path}:{line}",
        ) from None
    except yaml.YAMLError as e:
        raise UserError(f"YAML error: {one_line(e)}", path) from None
    except RecursionError:  # a limit above should come first; never a traceback
        raise UserError(
            f"values are nested too deeply; flatten the file (at most {MAX_YAML_DEPTH} levels)", path
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(doc, dict) or not doc:
        raise UserError("expected a mapping {experiment_name: {run: ..., env: ..., config: {...}}}", path)
    for line, note in sorted(set(loader.merge_notes)):  # once each, even when an alias constructs a mapping twice
        warn(f"{path}:{line}: {note}")
    _check_unused_experiment_templates(loader, path)
    return doc


def _check_unused_experiment_templates(loader: _Loader, path: str) -> None:
    """A whole experiment (``run:`` with ``config:``/``stop:``) under a template's name that no ``*alias`` merges:
    meant to run (``x-large-k16:``), skipped without a word."""
    if all(is_template(k.value) for k, _ in loader.root.value):
        return  # a file of templates only: load_experiments says so
    for key_node, value in loader.root.value:
        name = key_node.value
        if not (is_template(name) and isinstance(value, yaml.MappingNode)):
            continue
        keys = {k.value for k, _ in value.value if isinstance(k, yaml.ScalarNode)}
        if "run" in keys and keys & {"config", "stop"} and not _anchors(value) & loader.aliased:
            prefix = "." if name.startswith(".") else "x-"
            raise UserError(
                f"{name} is a whole experiment ({', '.join(sorted(keys & EXPERIMENT_PARTS))}) but is not run: a "
                f"top-level name starting with '{prefix}' is a template, and no `*alias` merges this one; rename it "
                f"(`{name[len(prefix) :].lstrip('.-_') or 'my-run'}:`) to run it, or delete it",
                f"{path}:{key_node.start_mark.line + 1}",
            )


EXPERIMENT_PARTS = {"run", "env", "stop", "config"}


def _anchors(node: yaml.Node) -> set[str]:
    """The anchors on ``node`` and inside it."""
    found, stack = set(), [node]
    while stack:
        n = stack.pop()
        if getattr(n, "anchor_name", None):
            found.add(n.anchor_name)
        if isinstance(n, yaml.MappingNode):
            stack += [v for pair in n.value for v in pair]
        elif isinstance(n, yaml.SequenceNode):
            stack += n.value
    return found
