"""Which fields of the state tuple a kernel function uses, so that a call can pass it only those.

Numba types and lowers the state tuple, one array per field, at every call that passes it, and
compiles each callee for it: a kernel's compile time grows as its fields times its calls
(`benchmarks.state_tuple`: on a 2-core CPU, 60 calls compiled in 2.9 s with 5 fields and 19 to
27 s with 90). A call given a tuple of only the fields its callee reads or writes (its own and
those of every kernel function it passes the state to) costs what those fields cost.

The fields are read off Numba's untyped IR of the function: every use of the state parameter
must be an attribute (``s.pos_x``), a copy, or an argument of a call to another Numba function,
whose fields are found likewise. Any other use (indexing the tuple, iterating it, passing it to
anything else) means the function needs the whole state: the answer is then None.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import marshal
import os
import re
import sys
import tempfile
from typing import TYPE_CHECKING

from numba.core import ir
from numba.core.compiler import run_frontend
from numba.core.dispatcher import Dispatcher

from ..kernel_cache import cache_dir
from ..plan import STATE_FIELD, WHOLE_STATE
from . import ENABLED

if TYPE_CHECKING:
    from ..layout import Layout

_memo: dict[tuple, frozenset[str] | None] = {}
_disk: dict | None = None  # what `_direct` found, loaded from disk on first use
_dirty = False  # found here and not yet written
# a call whose first argument is the state: ``name(s,`` or ``name(s)``; and the params ``p`` second, if so
_PASSES_STATE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(s(?=[,)])(, p(?=[,)]))?")


def state_fields(fn, arg: int = 0) -> frozenset[str] | None:
    """The state fields that ``fn`` (a Numba function) uses through its parameter ``arg``; None for all."""
    py = getattr(fn, "py_func", fn)
    key = (py, arg)
    if key not in _memo:
        _memo[key] = None  # a recursive call needs the whole state
        _memo[key] = _closure(py, arg)
    return _memo[key]


def _closure(py, arg: int) -> frozenset[str] | None:
    direct = _direct(py, arg)
    if direct is None:
        return None
    attrs, calls = direct
    used = set(attrs)
    for module, qualname, index in calls:
        callee = _callee(module, qualname)
        sub = state_fields(callee, index) if callee is not None else None
        if sub is None:
            return None
        used |= sub
    return frozenset(used)


def _direct(py, arg: int) -> list | None:
    """[the attributes ``fn`` reads off its state, [(module, qualname, argument) of the calls it passes it to]].

    Read off Numba's IR (about 15 ms a function), so kept on disk beside the kernels (`flush`),
    keyed by the function's code: a warm process finds every answer there.
    """
    global _dirty
    key = f"{sys.version_info[:2]}:{py.__module__}:{py.__qualname__}:{arg}:" + \
        hashlib.sha256(marshal.dumps(py.__code__)).hexdigest()[:20]
    disk = _load_disk()
    if key not in disk or not _resolves(disk[key]):
        disk[key] = _read_ir(py, arg)
        _dirty = True
    return disk[key]


def _callee(module: str, qualname: str) -> Dispatcher | None:
    """The Numba function ``module.qualname``, None where there is none (the module is not loaded, say)."""
    callee = sys.modules.get(module)
    for part in qualname.split("."):
        callee = getattr(callee, part, None)
    return callee if isinstance(callee, Dispatcher) else None


def _resolves(direct: list | None) -> bool:
    """Whether every callee a kept answer names is still found where it names it.

    The key holds the function's own code, not where the functions it calls live: a callee moved to
    another module since the answer was kept makes the answer stale, read off the IR again.
    """
    return direct is None or all(_callee(module, qualname) is not None for module, qualname, _ in direct[1])


def flush():
    """Writes what this process read off Numba's IR to the disk cache, if anything."""
    global _dirty
    if not _dirty:
        return
    _dirty = False
    path = _disk_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(_disk, fh)
        os.replace(tmp, path)  # atomic; two processes writing at once lose an entry, found again later
    except OSError:
        pass


def _disk_path():
    return cache_dir() / "state_fields.json"


def _load_disk() -> dict:
    global _disk
    if _disk is None:
        try:
            _disk = json.loads(_disk_path().read_text())
        except (OSError, ValueError):
            _disk = {}
    return _disk


def _read_ir(py, arg: int) -> list | None:
    params = list(inspect.signature(py).parameters.values())
    if arg >= len(params) or params[arg].kind not in (params[arg].POSITIONAL_ONLY, params[arg].POSITIONAL_OR_KEYWORD):
        return None
    fir = _frontend(py)
    if fir is None:
        return None
    name = params[arg].name
    defs: dict[str, list] = {}
    for blk in fir.blocks.values():
        for st in blk.body:
            if isinstance(st, ir.Assign):
                defs.setdefault(st.target.name, []).append(st.value)
    aliases = set()
    grown = True
    while grown:
        grown = False
        for target, values in defs.items():
            if target not in aliases and any((isinstance(v, ir.Arg) and v.name == name)
                                             or (isinstance(v, ir.Var) and v.name in aliases) for v in values):
                aliases.add(target)
                grown = True
    attrs: set[str] = set()
    calls: set[tuple] = set()
    for blk in fir.blocks.values():
        for st in blk.body:
            if not any(v.name in aliases for v in st.list_vars()) or isinstance(st, ir.Del):
                continue
            if not isinstance(st, ir.Assign):
                return None
            value = st.value
            if isinstance(value, ir.Arg) or (isinstance(value, ir.Var) and value.name in aliases):
                continue
            if isinstance(value, ir.Expr) and value.op == "getattr" and value.value.name in aliases:
                attrs.add(value.attr)
                continue
            if isinstance(value, ir.Expr) and value.op == "call":
                passed = _calls(value, aliases, defs)
                if passed is None:
                    return None
                calls |= passed
                continue
            return None
    return [sorted(attrs), sorted(calls)]


@functools.lru_cache(maxsize=256)
def _frontend(py):
    """Numba's untyped IR of ``py``, read once for all its parameters (the state's and the params')."""
    try:
        return run_frontend(py)
    except Exception:  # noqa: BLE001 - what Numba cannot read here it will report when it compiles
        return None


def _calls(call: ir.Expr, aliases: set, defs: dict) -> set | None:
    """(module, qualname, argument) of each Numba function a call passes the state to, else None."""
    if call.func.name in aliases or call.vararg is not None or any(v.name in aliases for _, v in call.kws):
        return None
    callees = _callees(call.func.name, defs, 0)
    if callees is None:
        return None
    out = set()
    for target in callees:
        py = target.py_func
        if "<locals>" in py.__qualname__:
            return None
        out |= {(py.__module__, py.__qualname__, i) for i, a in enumerate(call.args) if a.name in aliases}
    return out


def _callees(var: str, defs: dict, depth: int) -> set | None:
    """The Numba functions variable ``var`` may hold (through copies), or None if it may hold anything else."""
    if depth > 16 or var not in defs:
        return None
    out = set()
    for value in defs[var]:
        if isinstance(value, ir.Var):
            sub = _callees(value.name, defs, depth + 1)
        elif isinstance(value, ir.Global | ir.FreeVar) and isinstance(value.value, Dispatcher):
            sub = {value.value}
        else:
            return None
        if sub is None:
            return None
        out |= sub
    return out


class SubStates:
    """Each call's state argument: a tuple of only the fields its callee uses (`state_fields`).

    Numba types, lowers and compiles for the state tuple at every call passing it, a cost that
    grows with its fields; a callee whose fields cannot be told (None) gets the whole state.
    """

    def __init__(self, layout: Layout, imports: dict, narrow_params: bool = True):
        self.layout = layout
        # On the CPU a driver's calls stay calls, and building each a tuple of its params cost more
        # than it saved: the economy's step at 256 envs on 2 cores, 3.7 -> 4.4 ms. On CUDA every
        # call is inlined; the whole params tuple spelled out in each call's IR was 2 MB of its 15.
        self.narrow_params = narrow_params
        self.imports = imports  # alias -> (module, name) of each function the kernel text calls
        self.helpers: dict[str, frozenset[str] | None] = {}  # generated functions: their fields
        self.types: dict[tuple, str] = {}  # (kind, fields) -> the name of its narrowed type here

    def fields_of_call(self, name: str) -> frozenset[str] | None:
        """The fields that the function called as ``name`` uses through its first argument."""
        if name in self.helpers:
            return self.helpers[name]
        where = self.imports.get(name)
        if where is None:
            return None
        return state_fields(getattr(sys.modules[where[0]], where[1]), 0)

    def fields_of_source(self, body: str) -> frozenset[str] | None:
        """The fields that generated function ``body`` uses through its parameter ``s``.

        Its attributes and what its calls passing ``s`` need; any other use of ``s``: None (and always
        None with the accelerations off: nothing is narrowed then).
        """
        if not ENABLED:
            return None
        body = re.sub(r"def (\w+)\(s\b", r"def \1(", body, count=1)  # the function's own parameter
        calls = [m.group(1) for m in _PASSES_STATE.finditer(body)]
        if len(WHOLE_STATE.findall(body)) != len(calls):
            return None
        used = set(STATE_FIELD.findall(body))
        for name in calls:
            sub = self.fields_of_call(name)
            if sub is None:
                return None
            used |= sub
        return frozenset(used)

    def params_of_call(self, name: str) -> frozenset[str] | None:
        """The params that the function called as ``name`` uses through its second argument (None: unknown)."""
        where = self.imports.get(name) if name not in self.helpers else None
        if where is None:
            return None
        return state_fields(getattr(sys.modules[where[0]], where[1]), 1)

    def arg(self, fields: frozenset[str] | None) -> str:
        """``s``, or a tuple of the fields given, in the layout's order."""
        if fields is None or not fields <= set(self.layout.fields) or len(fields) == len(self.layout.fields):
            return "s"
        return self._narrowed("State", tuple(f for f in self.layout.fields if f in fields) or ("t",), "s")

    def params_arg(self, used: frozenset[str] | None) -> str:
        """``p``, or a tuple of the params given (``()`` for none)."""
        if used is None:
            return "p"
        return self._narrowed("Params", tuple(sorted(used)), "p") if used else "()"

    def _narrowed(self, kind: str, names: tuple[str, ...], source: str) -> str:
        name = self.types.setdefault((kind, names), f"_{kind}{len(self.types)}")
        return f"{name}({', '.join(f'{source}.{n}' for n in names)})"

    def narrow(self, code: str) -> str:
        """``code`` with the state (and params) it passes to each known function narrowed to what that function uses."""
        if not ENABLED:  # the state and params passed whole
            return code

        def call(m):
            name, p = m.group(1), m.group(2) or ""
            if p and self.narrow_params:
                p = f", {self.params_arg(self.params_of_call(name))}"
            return f"{name}({self.arg(self.fields_of_call(name))}{p}"

        return _PASSES_STATE.sub(call, code)

    def source(self) -> list[str]:
        """Each narrowed type, the one `gpu_zoo.core.compiler.speed.rebuild` gives rebuilt functions for its fields."""
        if not self.types:
            return []
        return [f"from {__package__}.rebuild import narrow_type",
                *(f"{name} = narrow_type({kind!r}, {names!r})" for (kind, names), name in self.types.items())]
