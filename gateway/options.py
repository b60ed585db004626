"""Command-line flags, declared on the configuration fields they set.

Each flag of `python -m gateway` is declared once, in the metadata of the dataclass
field it sets (`field(default=…, metadata=option("--flag", "help"))`): its name, its
help and its section of `--help`. Its default is the field's own, which `--help` shows,
so no flag restates a default. `parser` builds the parser from the dataclasses,
`values` reads a dataclass's fields back from the parsed arguments, `check_bounds`
refuses a value outside a field's declared bounds, as the parser refuses a bad type.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import MISSING, Field, dataclass, fields
from typing import Any, Callable, Iterator, Mapping, Sequence

__all__ = ["Option", "check_bounds", "option", "parser", "values"]

_KEY = "option"
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Option:
    """How a field is set from the command line (see the module's docstring)."""

    flag: str
    help: str
    #: The `--help` section (an argument group); None: the general options.
    section: str | None = None
    #: A switch: the flag takes no value and sets the field to this one.
    sets: Any = _UNSET
    #: How a value is read; None: as the type of the field's default.
    type: Callable[[str], Any] | None = None
    #: Repeatable: the field holds a tuple of every value given.
    many: bool = False
    #: The words taken, and the value each stands for.
    choices: Mapping[str, Any] | None = None
    #: The default is this environment variable, when it is set and not empty.
    env: str | None = None
    #: Inclusive bounds (None: open on that side), checked by `check_bounds`.
    within: tuple[float | None, float | None] | None = None
    metavar: str | None = None


def option(flag: str, help: str, **how: Any) -> dict[str, Option]:
    """A field's metadata declaring the flag that sets it (`Option`'s fields)."""
    return {_KEY: Option(flag, help, **how)}


def _flagged(cls: type) -> Iterator[tuple[Field[Any], Option]]:
    for f in fields(cls):
        if _KEY in f.metadata:
            yield f, f.metadata[_KEY]


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    raise TypeError(f"{f.name} has no default: a flag cannot leave it unset")


def _dest(cls: type, f: Field[Any]) -> str:
    # Two dataclasses may name a field alike (`streams_per_client`).
    return f"{cls.__name__}.{f.name}"


class _HelpFormatter(argparse.HelpFormatter):
    """Each flag's default, from its field, after its help (not for switches, whose
    default is "not given", nor where there is none)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.nargs != 0 and action.default not in (None, argparse.SUPPRESS) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def parser(prog: str, description: str | None, configs: Sequence[type],
           sections: Mapping[str, str]) -> argparse.ArgumentParser:
    """A parser with every flag the fields of `configs` declare, in their order, each
    in its section (`sections`: name → description, in the order `--help` shows them)."""
    p = argparse.ArgumentParser(prog=prog, description=description, formatter_class=_HelpFormatter)
    groups: dict[str | None, Any] = {None: p}
    for name, about in sections.items():
        groups[name] = p.add_argument_group(name, about)
    for cls in configs:
        for f, o in _flagged(cls):
            default = _default(f)
            where = groups[o.section]
            kw: dict[str, Any] = {"dest": _dest(cls, f), "help": o.help}
            if o.sets is not _UNSET:
                where.add_argument(o.flag, action="store_const", const=o.sets, default=default, **kw)
                continue
            if o.env and os.environ.get(o.env):
                default = os.environ[o.env]
            if o.choices is not None:
                named = [word for word, value in o.choices.items() if value == default and default is not None]
                kw.update(choices=tuple(o.choices), default=named[0] if named else None)
            elif o.many:
                kw.update(action="append", default=None, type=o.type or str)
            else:
                kw.update(default=default, type=o.type or type(default))
            if o.choices is None:
                # As argparse names a flag's value by default, not by its dest.
                kw["metavar"] = o.metavar or o.flag.lstrip("-").upper().replace("-", "_")
            where.add_argument(o.flag, **kw)
    return p


def values(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The keyword arguments for `cls` that its flagged fields took from `args`."""
    out: dict[str, Any] = {}
    for f, o in _flagged(cls):
        value = getattr(args, _dest(cls, f))
        if o.choices is not None:
            value = None if value is None else o.choices[value]
        elif o.many:
            value = tuple(value or ())
        out[f.name] = value
    return out


def check_bounds(p: argparse.ArgumentParser, args: argparse.Namespace, configs: Sequence[type]) -> None:
    """Exit through `p.error` (status 2) on the first value outside its field's bounds."""
    for cls in configs:
        for f, o in _flagged(cls):
            if o.within is None:
                continue
            low, high = o.within
            value = getattr(args, _dest(cls, f))
            if (low is not None and value < low) or (high is not None and value > high):
                if high is None:
                    p.error(f"{o.flag} must be at least {low:g}")
                p.error(f"{o.flag} must be within {low:g}..{high:g}")
