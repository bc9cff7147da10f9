"""An env's params checked against their annotations before the env's own checks, and long before a compile."""

from __future__ import annotations

import dataclasses
import math
import types
import typing

import numpy as np


class ParamTypeError(TypeError, ValueError):
    """A param of the wrong type: a TypeError, and a ValueError as the envs' own checks raise, for callers of either."""


FLOAT32_MAX = float(np.finfo(np.float32).max)  # float params are float32 in the kernels' state
_NAMES = {bool: "a bool", int: "an int", float: f"a finite number within float32's range (|x| <= {FLOAT32_MAX:.4g})",
          str: "a string", type(None): "None"}


def is_int(value) -> bool:
    """True for a Python int that is not a bool: what an int parameter takes (``True`` or ``3.0`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_count(name: str, value, least: int = 1, none_ok: bool = False) -> None:
    """Refuses ``value`` unless it is an int (a Python one, not a bool) of at least ``least``, or None if ``none_ok``.

    Counts and sizes become compile-time constants, so they are checked strictly: ``3.0`` or
    ``True`` for a count is refused here, by name, rather than turned into another kernel.
    """
    if none_ok and value is None:
        return
    if not is_int(value) or value < least:
        wanted = {1: "a positive int", 0: "a non-negative int"}.get(least, f"an int >= {least}")
        raise ValueError(f"{name} must be {wanted}{' or None' if none_ok else ''}, got {value!r}")


def _accepts(kind, value):
    """``(True, value as stored)`` when ``value`` is of ``kind``; ``(False, None)`` when not."""
    if kind is type(None):
        return value is None, None
    if kind is bool:
        return isinstance(value, bool | np.bool_), bool(value) if isinstance(value, bool | np.bool_) else None
    if isinstance(value, bool | np.bool_):  # a bool is no number here: ``True`` for a count is a mistake
        return False, None
    if kind is int:
        return (True, int(value)) if isinstance(value, int | np.integer) else (False, None)
    if kind is float:
        if isinstance(value, int | float | np.integer | np.floating) and math.isfinite(value) \
                and abs(float(value)) <= FLOAT32_MAX:
            return True, float(value)
        return False, None
    if kind is str:
        return isinstance(value, str), value
    return True, value  # tuples, lists and the like: the env's own checks see them


def _kinds(annotation) -> tuple:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return typing.get_args(annotation)
    return (annotation,)


def checked(cls, values: dict) -> dict:
    """``values`` for fields of the params dataclass ``cls``, each checked against its annotation.

    A ``bool`` field takes bools (NumPy's too), an ``int`` field integers but not bools, a
    ``float`` field finite real numbers within float32's range (stored as float), a ``str`` field strings; ``X | None``
    also takes None. Returns the values as stored; a wrong one raises `ParamTypeError` (a
    TypeError and a ValueError) naming the field, what it takes and what it got.
    """
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        value, kinds = values[f.name], _kinds(hints.get(f.name, object))
        for kind in kinds:
            ok, stored = _accepts(kind, value)
            if ok:
                out[f.name] = stored if kind in _NAMES else value
                break
        else:
            wanted = " or ".join(_NAMES.get(k, getattr(k, "__name__", str(k))) for k in kinds)
            raise ParamTypeError(f"{cls.__name__}.{f.name} must be {wanted}, got {value!r}")
    return {**values, **out}
