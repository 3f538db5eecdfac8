"""The configuration reference, generated from the attrs config classes.

Each key's type and default come from the attrs field, its allowed range
from the field's validators, and its meaning from the comment written beside
the field in the source (a trailing ``# ...``, or ``#:``/``#`` lines right
above it); a subclass that overrides a field without a comment inherits the
base class's. There is no fallback: a field without a comment has an empty
meaning, and :func:`undocumented_fields` names it (``tests/test_docs.py``
fails on any). Only the engine and the first-party plugin distributions are
documented, so the page is the same whatever else is installed.
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import textwrap
import tokenize
from typing import Any, Iterator

import attrs

FIRST_PARTY_DISTRIBUTIONS = ("rlengine", "rlengine-gym", "rlengine-algorithms", "rlengine-transformers", "rlengine-tools",
                             "rlengine-writers", "rlengine-ray", "rlengine-envpool", "rlengine-offline", "rlengine-pettingzoo")


@attrs.frozen
class FieldSource:
    """What the source says about one attrs field."""

    annotation: str
    comment: str


@functools.cache  # a class's source is parsed once, not once per field
def field_sources(cls: type) -> dict[str, FieldSource]:
    """Field name -> annotation text and comment, as written in ``cls``'s own body."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    comments = {tok.start[0]: tok.string.lstrip("#:").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    lines = source.splitlines()
    out = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            row = node.lineno - 1
            while row >= 1 and lines[row - 1].strip().startswith("#"):
                above.insert(0, comments[row])
                row -= 1
            beside = [comments[r] for r in range(node.lineno, (node.end_lineno or node.lineno) + 1) if r in comments]
            out[node.target.id] = FieldSource(ast.unparse(node.annotation), " ".join(above + beside))
    return out


def field_source(cls: type, name: str) -> FieldSource:
    """The annotation and comment of field ``name``: from ``cls``, else from the nearest base that has them."""
    annotation, comment = "", ""
    for klass in cls.__mro__:  # the class that declares the field, then its bases
        found = field_sources(klass).get(name) if attrs.has(klass) else None
        if found:
            annotation = annotation or found.annotation
            comment = comment or found.comment
    return FieldSource(annotation, comment)


def undocumented_fields(cls: type) -> list[str]:
    """``Class.field`` of each field of ``cls`` with no comment in the source (its page row has no meaning)."""
    return [f"{cls.__name__}.{f.name}" for f in attrs.fields(cls) if not field_source(cls, f.name).comment]


def describe_field(cls: type, field: Any) -> dict[str, str]:
    """``key``, ``type``, ``default`` and ``meaning`` of one field, for a table row."""
    source = field_source(cls, field.name)
    type_text = source.annotation or _type_name(field.type)
    limits = describe_validator(field.validator)
    return {"key": field.name, "type": type_text + (f" ({limits})" if limits else ""),
            "default": _default_text(cls, field), "meaning": source.comment}


def describe_validator(validator: Any) -> str:
    """``> 0``, ``>= 0, <= 1``, ``one of a, b``; '' for validators that are plain functions."""
    if validator is None:
        return ""
    parts = getattr(validator, "_validators", None)
    if parts is not None:
        return ", ".join(filter(None, (describe_validator(v) for v in parts)))
    if hasattr(validator, "compare_op"):
        return f"{validator.compare_op} {validator.bound!r}"
    if hasattr(validator, "options"):
        return "one of " + ", ".join(str(o) for o in validator.options)
    return ""


def _default_text(cls: type, field: Any) -> str:
    if field.default is attrs.NOTHING:
        return "required"
    try:  # an instance resolves factories, also those computed from other keys
        return toml_value(getattr(cls(), field.name))
    except TypeError:  # another key is required
        return toml_value(field.default)


def toml_value(value: Any) -> str:
    """``value`` as it is written in a TOML file (``unset`` for None)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, (list, tuple)):
        return "`[" + ", ".join(toml_value(v).strip("`") for v in value) + "]`"
    if isinstance(value, dict):
        return "`{" + ", ".join(f"{k} = {toml_value(v).strip('`')}" for k, v in value.items()) + "}`"
    return f"`{value!r}`"


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def section_table(title: str, intro: str, cls: type) -> list[str]:
    lines = [f"## {title}", "", intro, ""]
    fields = attrs.fields(cls) if attrs.has(cls) else ()
    if not fields:
        return lines + ["Takes no keys.", ""]
    lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
    for f in fields:
        row = describe_field(cls, f)
        lines.append("| " + " | ".join(table_cell(row[k]) for k in ("key", "type", "default", "meaning"))
                     + " |")
    return lines + [""]


def table_cell(text: str) -> str:
    """Table-cell text on one line: pipes escaped, and ``<name>`` kept as text rather than read as an HTML tag."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def engine_sections() -> Iterator[tuple[str, type]]:
    """``(section, class)`` of each section the engine itself owns (``train``, ``async``, ...)."""
    from rlengine.config import CORE_SECTIONS

    yield from CORE_SECTIONS.items()


def plugin_sections() -> Iterator[tuple[str, str, str, type]]:
    """``(section, kind, distribution, config class)`` of every first-party plugin class."""
    from rlengine.plugin.manager import build_plugins
    from rlengine.run.build import config_classes

    plugins = build_plugins()
    plugins.raise_failures()
    distribution = {info.name: info.distribution for info in plugins.infos}
    classes = config_classes(plugins)
    from rlengine.plugin.registry import config_section_kinds

    for kind in config_section_kinds():
        for entry in sorted(plugins.registries[kind], key=lambda e: e.name):
            if distribution.get(entry.plugin) in FIRST_PARTY_DISTRIBUTIONS:
                yield entry.name, kind, distribution[entry.plugin], classes[entry.name]


def preset_rows() -> Iterator[tuple[str, str, int]]:
    """``(name, source, budget)`` of every first-party preset: the first line of its file's header comment,
    and its ``train.num_env_steps``."""
    from rlengine.config import Preset, read_toml
    from rlengine.plugin.manager import build_plugins

    plugins = build_plugins()
    plugins.raise_failures()
    distribution = {info.name: info.distribution for info in plugins.infos}
    for entry in sorted(plugins.registries.presets, key=lambda e: e.name):
        if distribution.get(entry.plugin) in FIRST_PARTY_DISTRIBUTIONS:
            preset = Preset(entry.name, str(entry.obj), entry.plugin)
            yield entry.name, preset.summary(), read_toml(preset.path)["train"]["num_env_steps"]


def presets_table() -> list[str]:
    lines = ["## Presets", "",
             "`rlengine train --algorithm A --env E` without a config file starts from the preset `A/E` when a",
             "plugin registered one (`--no-preset`: every key's default instead; [configuration](configuration.md#presets)).",
             "The first-party ones, each a TOML file in `plugins/algorithms/rlengine_algorithms/presets/` whose",
             "header says what could not be translated:", "",
             "| preset | source | budget (env steps) |", "|---|---|---|"]
    lines += [f"| `{name}` | {table_cell(source)} | {budget:,} |" for name, source, budget in preset_rows()]
    return lines + [""]


def config_reference() -> str:
    lines = ["# Configuration reference", "",
             "Every key of the engine's sections and of every first-party plugin's section, generated",
             "from the attrs config classes by `python -m devtools.docgen`. Types are as annotated,",
             "with the range the validators enforce; a key left out takes its default. How to write a",
             "config and override keys: [Configuration](configuration.md).", ""]
    for name, cls in engine_sections():
        lines += section_table(f"`[{name}]`", f"The engine's `{cls.__name__}` (`{cls.__module__}`).", cls)
    for name, kind, dist, cls in plugin_sections():
        lines += section_table(f"`[{name}]`", f"The {kind} `{name}` of `{dist}` (`{cls.__name__}`).", cls)
    return "\n".join(lines + presets_table())
