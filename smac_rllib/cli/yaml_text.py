"""A tuned example's text before YAML reads it: the path's mistakes (a URL, a directory, a Python script, a backslash
the shell dropped), the bytes (UTF-8, at most ``MAX_YAML_BYTES``; a pipe read once), and characters pasted from web
pages or templates (no-break spaces, ``{{ placeholders }}``)."""

from __future__ import annotations

import difflib
import os
import re
import unicodedata

from smac_rllib.cli.errors import UserError

MAX_YAML_BYTES = 1 << 20  # a tuned example is a few kB; more is a wrong file


# Spaces YAML reads as letters (pasted from web pages and word processors): U+00A0 no-break, U+2000-U+200B, ...
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}")  # {{ seed }}, {% if ... %}: a template's, not YAML's
_ODD_SPACES = re.compile("[\u00a0\u1680\u2000-\u200b\u202f\u205f\u3000\ufeff]")


def check_pasted_text(text: str, path: str) -> None:
    """A no-break (or other Unicode) space outside a comment: YAML takes it for a letter, so an indentation or a
    ``key: value`` written with one breaks far from it, or makes a key or value with an invisible character. So does
    an unrendered template placeholder (``{{ seed }}``: a mapping as a key)."""
    for number, line in enumerate(text.splitlines(), 1):
        code = re.split(r"(?:^|\s)#", line, maxsplit=1)[0]
        if template := _TEMPLATE.search(code):
            raise UserError(
                f"{template.group()} is a template placeholder (Jinja, Helm, Ansible) that was never rendered; render "
                "the file with its tool first, or write the value",
                f"{path}:{number}:{template.start() + 1}",
            )
        if found := _ODD_SPACES.search(code):
            name = unicodedata.name(found.group(), f"U+{ord(found.group()):04X}").lower()
            raise UserError(
                f"the line holds a {name} (U+{ord(found.group()):04X}, pasted from a web page or a document?), which "
                f"YAML reads as a letter, not a space; retype it as a plain space",
                f"{path}:{number}:{found.start() + 1}",
            )


_STREAMS: dict[str, bytes] = {}


def read_text(path: str) -> str:
    if re.match(r"^[a-z][a-z0-9+.-]*://", path) and not os.path.exists(path):  # https://..., s3://...
        name = os.path.basename(path.split("?")[0]) or "experiment.yaml"
        raise UserError(
            f"rllib train file reads a local file, not a URL ({path}); download it first (e.g. curl -o {name} "
            f"'{path}') and pass {name}"
        )
    if not os.path.exists(path):
        file, _, name = path.rpartition(":")
        if file and os.path.isfile(file):  # `two.yaml:smac-k8`, as some tools select one entry of a file
            raise UserError(
                f"no such file: {path}; {file} exists, and rllib train file runs every experiment in it (no "
                f"':{name}' selection): put {name} in a file of its own, or keep the others as templates ('.' names)"
            )
        raise UserError(
            f"no such file: {path}{_other_suffix(path) or _eaten_separator(path) or _tuned_examples_hint(path)}"
        )
    if path.endswith(".py") and os.path.isfile(path):
        raise UserError(
            f"{path} is a Python script: rllib train file reads a YAML (or JSON) experiment file; run the script "
            "with python, or write the experiment as YAML (e.g. a copy of tuned_examples/smac_state_quick.yaml)"
        )
    if os.path.isdir(path):
        raise UserError(f"{path} is a directory; pass a YAML file, e.g. {os.path.join(path, 'smac_state.yaml')}")
    try:
        size = os.path.getsize(path)
        if size > MAX_YAML_BYTES:
            raise UserError(
                f"{path} is larger than {MAX_YAML_BYTES >> 20} MiB ({size:,} bytes), not a tuned example; pass the "
                "YAML file"
            )
        data = _STREAMS.get(path)
        if data is None:
            with open(path, "rb") as f:
                data = f.read(MAX_YAML_BYTES + 1)
            if not os.path.isfile(path):  # a pipe (`<(sed ...)`, /dev/stdin) is read once: kept for the next read
                _STREAMS[path] = data
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror}); check the path and its permissions") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise UserError(
            f"the file is not UTF-8 text (byte 0x{data[e.start]:02x}); save it as UTF-8", f"{path}:{line}"
        ) from None


def _other_suffix(path: str) -> str:
    """``case.yml`` beside ``case.yaml`` (or the reverse, or .json)."""
    stem, _ = os.path.splitext(path)
    found = [stem + suffix for suffix in (".yaml", ".yml", ".json") if os.path.isfile(stem + suffix)]
    return f"; did you mean {found[0]}?" if found else ""


def _eaten_separator(path: str) -> str:
    """``configscase.yaml`` for ``configs\\case.yaml``: an unquoted backslash the shell dropped (a Windows path)."""
    folder, name = os.path.split(path)
    for i in range(1, len(name)):
        if os.path.isfile(os.path.join(folder, name[:i], name[i:])):
            meant = os.path.join(folder, name[:i], name[i:])
            return f"; did you mean {meant}? (the shell drops an unquoted backslash: paths here are written with /)"
    return ""


def _tuned_examples_hint(path: str) -> str:
    here = os.path.join(os.getcwd(), "tuned_examples")
    if os.path.isdir(here):
        names = sorted(n for n in os.listdir(here) if n.endswith(".yaml"))
        close = difflib.get_close_matches(os.path.basename(path), names, n=1)
        if close:
            return f"; did you mean tuned_examples/{close[0]}?"
        if names:
            return f"; tuned examples: {', '.join('tuned_examples/' + n for n in names)}"
    return ""
