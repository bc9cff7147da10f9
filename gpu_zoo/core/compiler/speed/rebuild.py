"""Rebuilding njit functions for another target: the CUDA simulator, CUDA device functions, inlined CPU code.

An env's phase functions are ``numba.njit`` functions that call other njit helpers. For the
CUDA target each one is rebuilt from its Python code as a force-inlined CUDA device function,
and every njit function it reaches is swapped for such a rebuilt copy: the kernel then becomes
one function, and the state namedtuple is never passed (or copied) between calls. For the
simulator, the copies stay plain Python, since it hands kernels fake device arrays that
compiled functions cannot take. Either way the kernel runs the very same env source.

A twin passes the state on as the generated kernel does (`gpu_zoo.core.compiler.speed.state_fields`): each call
``helper(s, ...)`` gives the helper a tuple of only the fields it uses, of one type per set of
fields. Numba compiles a function once per argument types: passed its callers' states, a helper
called from eight phases (the RNG's ``uniform``) compiled eight times, each typing and lowering a
tuple of its caller's fields.
"""

from __future__ import annotations
import __future__

import ast
import functools
import inspect
import io
import keyword
import operator
import tokenize
import types
from collections import namedtuple
from collections.abc import Callable
from pathlib import Path

from numba.core.dispatcher import Dispatcher

from ...api.jit import CUDA_TWINS
from . import ENABLED
from .state_fields import state_fields


def rebuild(fn, wrap: Callable, memo: dict):
    """``wrap`` applied to a twin of njit function ``fn`` whose njit globals are rebuilt likewise."""
    if not isinstance(fn, Dispatcher):
        return fn
    if fn in memo:
        return memo[fn]
    if wrap is cuda_device and fn in CUDA_TWINS:
        memo[fn] = twin = CUDA_TWINS[fn]()
        return twin
    py = fn.py_func
    namespace: dict = {}
    twin = _narrowed_twin(py, namespace) if ENABLED and wrap in (cuda_device, plain) else None
    memo[fn] = wrapped = wrap(twin or _twin(py, namespace))
    for k, v in py.__globals__.items():
        namespace[k] = rebuild(v, wrap, memo) if isinstance(v, Dispatcher) else v
    return wrapped


def _twin(py, namespace: dict):
    """Python function ``py`` with ``namespace`` for its globals."""
    twin = types.FunctionType(py.__code__, namespace, py.__name__, py.__defaults__, py.__closure__)
    twin.__module__ = py.__module__
    twin.__qualname__ = py.__qualname__
    return twin


_narrow_types: dict[tuple[str, tuple[str, ...]], type] = {}
# a function's compiler flags from ``from __future__`` imports, which its module's source states above it
_FUTURE_FLAGS = functools.reduce(operator.or_,
                                 (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names))


def narrow_type(kind: str, fields: tuple[str, ...]) -> type:
    """The one ``kind`` ("State" or "Params") type of a set of fields, whoever passes it: a callee compiles once.

    The generated kernels take their narrowed tuples' types from here too, so that a helper that
    a kernel and a rebuilt function both call compiles once.
    """
    key = (kind, fields)
    if key not in _narrow_types:
        _narrow_types[key] = namedtuple(f"_Narrow{kind}{len(_narrow_types)}", fields)
    return _narrow_types[key]


def _narrowed_twin(py, namespace: dict):
    """``py`` compiled again from its source with each call that passes its state ``s`` narrowed, or None.

    The params ``p`` (the function's second parameter, if so named) are narrowed likewise where
    they are passed to a helper, to the params it uses, if they are only read (``p.name``) and
    passed whole: ``rate_limit(s.ep_count, p, e)``.
    None where nothing is narrowed or the source cannot be read so (no source, source that no
    longer compiles to ``py``'s code, a closure, a nested function, a use of ``s`` other than
    ``s.field`` and ``helper(s, ...)``): the plain twin passes ``s`` whole.
    """
    params = list(inspect.signature(py).parameters)
    if not params or params[0] != "s" or py.__closure__:
        return None
    try:
        lines = inspect.getsourcelines(py)[0]
        toks = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
    except (OSError, TypeError, tokenize.TokenError, IndentationError):
        return None
    # the lines where they were, so that code and errors point at the env's own source
    lead = _imported_names_line(py) + "\n" * (py.__code__.co_firstlineno - 1)
    if _function_code(lead + "".join(lines), py) != py.__code__:
        return None  # the file changed since it was imported, or the function is not at module level
    code = [t for t in toks if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                             tokenize.COMMENT)]
    body = next((i for i, t in enumerate(code) if t.string == ":" and code[i - 1].string == ")"), None)
    if body is None:
        return None
    p = "p" if params[1:2] == ["p"] else None
    edits, p_edits, p_free = {}, {}, p is not None
    for i in range(body + 1, len(code)):
        t = code[i]
        if t.type != tokenize.NAME or t.string not in ("s", p) or code[i - 1].string == "." \
                or code[i + 1].string == ".":
            continue
        if t.string == p:  # only read (``p.name``) or passed whole to a call: narrowed for a helper
            call = _call_of_argument(code, i)
            if call is None:
                p_free = False
                continue
            name, index = call
            callee = py.__globals__.get(name) if name not in py.__code__.co_varnames else None
            used = state_fields(callee, index) if isinstance(callee, Dispatcher) else None
            if used is not None:
                p_edits[t.start] = used
            continue
        name = code[i - 2].string
        # a local of that name (a helper bound in the function) is not the global the fields are read from
        callee = py.__globals__.get(name) if code[i - 1].string == "(" and name not in py.__code__.co_varnames else None
        if not isinstance(callee, Dispatcher) or code[i + 1].string not in (",", ")") or code[i - 3].string == ".":
            return None  # the state used some other way: the whole of it is passed
        fields = state_fields(callee, 0)
        if fields:  # a callee using no field keeps the caller's state: its fields need not include any
            edits[t.start] = (1, _narrowed("State", fields, namespace, "s"))
    if p_free:
        edits |= {at: (len(p), _narrowed("Params", used, namespace, p) if used else "()")
                  for at, used in p_edits.items()}
    if not edits:
        return None
    for (row, col), (length, new) in sorted(edits.items(), reverse=True):
        lines[row - 1] = lines[row - 1][:col] + new + lines[row - 1][col + length:]
    narrowed = _function_code(lead + "".join(lines), py)
    if narrowed is None:
        return None
    twin = types.FunctionType(narrowed, namespace, py.__name__, py.__defaults__)
    twin.__kwdefaults__ = py.__kwdefaults__
    twin.__module__, twin.__qualname__ = py.__module__, py.__qualname__
    return twin


def _call_of_argument(code: list, i: int) -> tuple[str, int] | None:
    """(the function's name, the argument's index) where token ``i`` is a positional argument of a call by name."""
    if code[i - 1].string not in ("(", ",") or code[i + 1].string not in (",", ")"):
        return None
    depth, index = 0, 0
    for j in range(i - 1, 0, -1):
        tok = code[j].string
        if tok in (")", "]", "}"):
            depth += 1
        elif tok in ("[", "{") or (tok == "(" and depth):
            if not depth:
                return None  # an element of a list, set or dict display
            depth -= 1
        elif tok == "(":
            head = code[j - 1]
            if head.type != tokenize.NAME or code[j - 2].string == "." or keyword.iskeyword(head.string):
                return None
            return head.string, index
        elif not depth and tok == ",":
            index += 1
        elif not depth and tok in ("=", ":", "*", "**", "lambda"):
            return None  # a keyword argument's value, or a starred or lambda one
    return None


def _narrowed(kind: str, fields: frozenset[str], namespace: dict, name: str) -> str:
    """Source of a ``kind`` tuple of ``fields`` read off ``name``, its type put in ``namespace``."""
    names = tuple(sorted(fields))
    narrow = narrow_type(kind, names)
    namespace[narrow.__name__] = narrow
    return f"{narrow.__name__}({', '.join(f'{name}.{n}' for n in names)})"


@functools.cache
def _module_imports(path: str) -> tuple[str, ...]:
    """The names that import statements bind at the top level of the module in ``path``."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return ()
    names, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo += list(ast.iter_child_nodes(node))
    return tuple(sorted(set(names)))


def _imported_names_line(py) -> str:
    """One line binding by import each name the module's imports bind, where the function's own lines start after it.

    CPython compiles ``np.float32(x)`` differently when ``np`` came from an import: without them
    the function's source would not compile to its code.
    """
    names = _module_imports(py.__code__.co_filename)
    if not names or py.__code__.co_firstlineno < 2:
        return ""
    return "import " + ", ".join(f"sys as {n}" for n in names)


def _function_code(source: str, py) -> types.CodeType | None:
    """The code of the function named like ``py`` that ``source`` defines, compiled as ``py``'s file; nothing runs."""
    try:
        module = compile(source, py.__code__.co_filename, "exec", flags=py.__code__.co_flags & _FUTURE_FLAGS,
                         dont_inherit=True)
    except SyntaxError:
        return None
    return next((c for c in module.co_consts if isinstance(c, types.CodeType) and c.co_name == py.__name__), None)


def plain(fn):
    return fn


def cpu_inline(fn):
    """A CPU twin inlined into its callers at Numba's IR level (no call, no state tuple passed)."""
    from numba import njit

    return njit(inline="always", _nrt=False, error_model="numpy", no_cpython_wrapper=True,
                no_cfunc_wrapper=True)(fn)


def cpu_inline_only(fn, helpers: tuple[str, ...], memo: dict):
    """``cpu_inline`` twin of njit function ``fn`` inlining only its helpers named in ``helpers``.

    Those are inlined with everything they reach (`rebuild`); ``fn``'s other njit helpers stay
    calls, each compiled once, where inlining types and optimises a copy of each at every call site.
    """
    py = fn.py_func
    return cpu_inline(_twin(py, {k: rebuild(v, cpu_inline, memo) if k in helpers else v
                                 for k, v in py.__globals__.items()}))


def cuda_device(fn):
    """A force-inlined CUDA device function of ``fn``, compiled once for literal and plain arguments alike."""
    from numba import cuda

    device = cuda.jit(device=True, forceinline=True)(fn)
    if not ENABLED:
        return device
    device.get_call_template = functools.partial(_plain_call_template, device.get_call_template)
    return device


def _plain_call_template(typed, args, kws):
    """``typed(args, kws)`` with literal argument types made plain, unless the function needs the literals.

    A call ``uniform(s, e, a, 2)`` types its last argument as the literal 2, and numba-cuda
    compiles a device function once per argument types: the economy's ``uniform`` compiled six
    times, once per constant it was called with. Inlined, the constant reaches the code all the
    same. A function whose body types only with the literal (a constant tuple index, a branch
    pruned on it) is compiled for it as before.
    """
    from numba.core import types as nb_types
    from numba.core.errors import NumbaError

    plain = tuple(nb_types.unliteral(a) for a in args)
    plain_kws = {k: nb_types.unliteral(v) for k, v in kws.items()}
    if plain != tuple(args) or plain_kws != kws:
        try:
            return typed(plain, plain_kws)
        except NumbaError:  # the literal's own compile says what is wrong, if anything
            pass
    return typed(args, kws)
