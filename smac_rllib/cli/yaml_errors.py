"""What a YAML syntax error means, in the words of the fix: PyYAML's problem text mapped to a hint (``_YAML_HINTS``),
and the mistakes whose error PyYAML reports elsewhere than where they are (``key:value`` without a space, a comment
in ``//`` from JSONC, an alias before its anchor, an anchor name used twice, keys below a ``key: *alias``, a tag
such as ``!include``)."""

from __future__ import annotations

import re

import yaml


def syntax_hint(e: yaml.MarkedYAMLError, text: str, path: str) -> tuple[str, str]:
    """(the hint, ``path:line[:column]``) for the syntax error ``e`` in ``text``."""
    mark = e.problem_mark or e.context_mark
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
    problem = e.problem or "invalid YAML"
    hint = next((h or problem for pattern, h in _YAML_HINTS if pattern in problem or pattern in str(e.context)), None)
    if "found undefined alias" in problem:
        hint = _undefined_alias(problem, text)
    duplicate = re.search(r"found duplicate anchor '?([^';\s]+)", str(e.context))
    if duplicate and e.context_mark:  # PyYAML's context is the first &name, its problem the second
        name, first = duplicate.group(1), e.context_mark.line + 1
        hint = (
            f"the anchor &{name} is already defined on line {first}; each anchor needs its own name: rename this one "
            f"(e.g. &{name}_2) and write the one you mean in `*{name}`"
        )
    tag = re.search(r"for the tag '(![^']*)'", problem)  # !include, !Ref, ...: no constructor here
    if tag and not tag.group(1).startswith(("!!python", "!reference")):  # those two have hints of their own
        hint = (
            f"the tag {tag.group(1)} is not read here (plain YAML only: numbers, strings, lists, mappings); "
            "shared settings go in a template of this file (`.defaults: &defaults {...}`, merged with "
            "`<<: *defaults`)"
        )
    near_a_colon = any(p in problem for p in ("expected ':'", "mapping values", "<block end>"))
    if near_a_colon and (glued := _colon_without_space(text, mark.line if mark else None)):
        line, key, value = glued
        where = f"{path}:{line}"
        hint = f"`{key}:{value}` needs a space after ':' (`{key}: {value}`): YAML reads it as one string"
    if (aliased := _keys_under_an_alias(text, mark.line if mark else None)) is not None:
        line, key, name, sub = aliased
        where = f"{path}:{line}"
        hint = (
            f"`{key}: *{name}` is the anchored mapping as a whole and takes no keys below it; to add or change keys, "
            f"merge it: `{key}: {{<<: *{name}, {sub}}}` (or `<<: *{name}` as the first line under {key}:)"
        )
    row = text.splitlines()[mark.line] if mark and mark.line < len(text.splitlines()) else ""
    nested = re.match(r"^(\s*)([\w./-]+):\s+([\w./-]+):\s+(\S.*?)\s*$", row.split(" #")[0])
    if "mapping values" in problem and nested:  # `stop: training_iteration: 2`: a mapping inside a line
        _, key, sub, value = nested.groups()
        hint = (
            f"`{key}: {sub}: {value}` nests a mapping on one line, which YAML needs in braces: "
            f"`{key}: {{{sub}: {value}}}` (or `{sub}: {value}` on its own line below, indented under {key}:)"
        )
    comment = re.search(r"^[ \t]*(?://|/\*)|,[ \t]*//", text, re.M)
    if hint is None and comment:  # JSONC: a .json file with comments, read as YAML (whose comments start with #)
        line = text.count("\n", 0, comment.start()) + 1
        hint, where = (
            "// and /* */ comments are neither JSON nor YAML; start a comment with # (YAML)",
            f"{path}:{line}",
        )
    opened = e.context_mark
    if "quoted scalar" in str(e.context) and "end of stream" in problem and opened:  # the quote is where it opened
        quote = text.splitlines()[opened.line][opened.column] if opened.line < len(text.splitlines()) else '"'
        where = f"{path}:{opened.line + 1}:{opened.column + 1}"
        hint = f"the {quote} opened here is never closed; close it at the end of the value (or drop it)"
    if hint is None:
        context = f" ({e.context})" if e.context and e.problem else ""
        hint = f"{problem}{context}; check the indentation, the ':' and the quoting there"
    return hint, where


def _colon_without_space(text: str, problem_line: int | None) -> tuple[int, str, str] | None:
    """(line, key, value) of a ``key:value`` line (no space after ':') at or up to 3 lines above a syntax error."""
    if problem_line is None:
        return None
    lines = text.splitlines()
    for i in range(min(problem_line, len(lines) - 1), max(problem_line - 4, -1), -1):
        match = re.match(r"^\s*(?:- )?([A-Za-z_][\w.\-/]*):([^\s/'\"#][^#]*?)\s*(?:#.*)?$", lines[i])
        if match:
            return i + 1, match.group(1), match.group(2)
    return None


def _keys_under_an_alias(text: str, problem_line: int | None) -> tuple[int, str, str, str] | None:
    """(line, key, anchor, the first key below) of ``key: *anchor`` followed by more deeply indented ``sub: value``
    lines at a syntax error (YAML ends the mapping at the alias)."""
    lines = text.splitlines()
    if problem_line is None or not 0 < problem_line < len(lines):
        return None
    above = next((i for i in range(problem_line - 1, -1, -1) if lines[i].split("#")[0].strip()), None)
    alias = re.match(r"^(\s*)([\w./-]+):\s*\*([\w.-]+)\s*(?:#.*)?$", lines[above]) if above is not None else None
    sub = re.match(r"^(\s*)(\S.*?)\s*(?:#.*)?$", lines[problem_line])
    if not (alias and sub and len(sub.group(1)) > len(alias.group(1))):
        return None
    return above + 1, alias.group(2), alias.group(3), sub.group(2)


def _undefined_alias(problem: str, text: str) -> str:
    """``*name`` with no ``&name`` before it: an anchor further down (YAML reads top to bottom), or none at all."""
    match = re.search(r"undefined alias '?([^'\s]+)", problem)
    name = match.group(1) if match else ""
    lines = [i for i, row in enumerate(text.splitlines(), 1) if re.search(rf"&{re.escape(name)}\b", row.split("#")[0])]
    if name and lines:
        line = lines[0]
        return (
            f"alias *{name} is used before its anchor &{name} (line {line}): YAML reads top to bottom; move the "
            f"anchored mapping above its first use (e.g. a `.{name}` template at the top, not run)"
        )
    if name:
        return f"alias *{name} has no anchor &{name} in the file; define `x-{name}: &{name} {{...}}` above its use"
    return "an undefined '*alias'; quote values that start with '*'"


_YAML_HINTS = (
    ("expected <block end>", "this line's indentation does not match the lines above it; align it with its siblings"),
    (
        "mapping values are not allowed",
        "unexpected ':'; put a space after the key's ':' or quote a value that contains ': '",
    ),
    ("found character '\\t'", "tabs are not allowed in YAML; indent with spaces"),
    ("could not find expected ':'", "a key without ':'; write `key: value`"),
    ("found undefined alias", "an undefined '*alias'; quote values that start with '*'"),
    ("duplicate key", None),  # the problem says it all
    (
        "for merging",
        "`<<:` merges a mapping: write `<<: *name` after `name: &name {...}` (or `<<: [*a, *b]`), not a plain value",
    ),
    (
        "tag '!reference'",
        "GitLab's !reference tag is not YAML; anchor the mapping (`.defaults: &defaults {...}`) and merge it with "
        "`<<: *defaults`",
    ),
    (
        "could not determine a constructor for the tag",
        "tags like !!python/... are not allowed in a tuned example; write "
        "plain values (numbers, strings, lists, mappings)",
    ),
    (
        "expected a single document",
        "the file holds more than one YAML document (a '---' line); keep one YAML document, "
        "with every experiment in it",
    ),
)
