"""One environment source, two kernels: a CUDA kernel and a parallel CPU driver.

The kernels are generated as a small Python module written to a cache directory, then imported.
A real file lets Numba's ``cache=True`` persist the machine code, so a second process starts in
a fraction of a second instead of recompiling (functions built in a closure never hit that cache).
The file name is a hash of the generated source and of the sources it calls, because Numba's own
cache does not notice when a called function in another module changes.

The parts: `gpu_zoo.core.compiler.plan` (the stages of each kernel, free of any target),
`gpu_zoo.core.compiler.codegen_cpu` and `gpu_zoo.core.compiler.codegen_cuda` (those stages as source), and
`gpu_zoo.core.compiler.launch_shape` (how CUDA threads map to envs and agents). This module joins them
into one module per configuration and loads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import logging
import os
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher

from ..api import rng as _rng
from ..api import sequential as _sequential
from . import episode as _episode
from .codegen_cpu import CPU_HELPER, cpu_drivers
from .codegen_cuda import cuda_body, cuda_driver
from .kernel_cache import cache_dir
from .launch_shape import LaunchShape
from .layout import LIVE_INT_PARAMS, Layout
from .plan import Stages, fields_direct, keeps_state_tuple, ladder_source, stages, state_tuple, step_kernels, wide_call
from .speed import ENABLED as _ACCELERATED
from .speed import rebuild as _rebuild
from .speed import state_fields as _state_fields
from .speed.state_fields import SubStates, flush

_OBSERVING = (_episode.__name__, "observing")  # imported as _observing by every generated module
CUDA_KERNELS = ("drive", "step_phases", "step_observe", "step_finished")
"""The kernels a generated CUDA module may hold: ``drive`` (a step or a reset), or the split step's three."""


def _const_literal(v) -> str:
    """Source of a compile-time scalar: float32 for a Python float, np.float64 kept."""
    if isinstance(v, bool | np.bool_):
        return repr(bool(v))
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, np.float64):
        return f"np.float64({float(v)!r})"
    return f"np.float32({float(v)!r})"


def _table_source(name: str, values: tuple) -> str:
    """A tuple constant as a module-level array, which Numba freezes into the kernels.

    Indexed at run time (``p.size[j]``, ``j`` a lane's agent), a tuple would compile to a switch
    over its entries with an out-of-range branch; an array compiles to one load from constant
    data (`GENERATED_CODE` in `benchmarks/tuning_records.py`).
    """
    kinds = {type(x) for x in values}
    if not values or len(kinds) != 1 or not kinds <= {bool, np.bool_, int, float, np.float64}:
        raise ValueError(f"constant {name!r}: a table must be a non-empty tuple of one kind of number, got {values!r}")
    kind = kinds.pop()
    dtype = ("np.bool_" if kind in (bool, np.bool_) else "np.int64" if kind is int
             else "np.float64" if kind is np.float64 else "np.float32")
    items = "".join(f"{float(x)!r}, " if dtype.startswith("np.float") else f"{x!r}, " for x in values)
    return f"_table_{name} = np.array(({items}), dtype={dtype})"


def _params_source(layout: Layout, deco: str) -> tuple[str, list[str]]:
    names, values, tables = [], [], []
    for k, v in layout.kernel_constants.items():
        names.append(k)
        if isinstance(v, tuple):
            tables.append(_table_source(k, v))
            values.append(f"_table_{k}")
        else:
            values.append(_const_literal(v))
    for i, k in enumerate(layout.runtime_params):
        names.append(k)
        values.append(f"s.params[e, {i}]")
    for k in LIVE_INT_PARAMS:
        names.append(k)
        values.append(f"s.{k}[e]")
    body = [*tables, deco, "def _params(s, e):", f"    return {wide_call('Params', values)}"]
    return "\n".join(body), names


def _dependency_hash(kernels: list[Stages]) -> str:
    """Hash of the sources the generated module imports: rng, sequential, episode, rebuild, state_fields, the envs.

    Numba's cache keys a kernel on its own file, so it would not see these change. The generator
    (this module, `plan`, `codegen_cpu`, `codegen_cuda`, `launch_shape`) is left out: the module
    never imports it, and every change it makes to the kernels shows in the generated text.
    """
    files = {inspect.getsourcefile(m) for m in (_rng, _sequential, _episode, _rebuild, _state_fields)}
    phases = [getattr(sys.modules[mod], name) for st in kernels for mod, name in st.imports.values()]
    files |= _sources_reached(phases)
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(Path(f).read_bytes())
    return h.hexdigest()[:16]


def _sources_reached(functions) -> set[str]:
    """The source files of ``functions`` and of every jitted function they call, however deep.

    A phase's helpers often live in another module (a board game's shared helpers, chess's move
    generator): a change there must name a new kernel as surely as a change in the phase's own file.
    """
    files, seen, todo = set(), set(), list(functions)
    while todo:
        fn = todo.pop()
        py = getattr(fn, "py_func", fn)
        if id(py) in seen or not inspect.isfunction(py):
            continue
        seen.add(id(py))
        files.add(inspect.getsourcefile(py))
        called = (py.__globals__.get(name) for name in py.__code__.co_names)
        todo += [f for f in called if isinstance(f, Dispatcher)]
    return files


def _cpu_inlined(layout: Layout, imports: dict, per_obs: list[str]) -> list[str]:
    """Source rebuilding each observation function to be inlined on the CPU (`Tuning.cpu_inline_helpers`)."""
    tuning = layout.spec.tuning
    helpers = None if tuning is None else tuning.cpu_inline_helpers
    if helpers is None:
        return [f"{a} = rebuild({a}, cpu_inline, _inline)" for a in per_obs]
    functions = [getattr(sys.modules[imports[a][0]], imports[a][1]) for a in per_obs]
    called = {k for fn in functions for k, v in fn.py_func.__globals__.items() if isinstance(v, Dispatcher)}
    unknown = sorted(set(helpers) - called)
    if unknown:
        raise ValueError(f"{layout.spec.id}: Tuning.cpu_inline_helpers names {unknown}, which no observation "
                         f"function calls; they call {sorted(called)}")
    return [f"{a} = cpu_inline_only({a}, {tuple(helpers)!r}, _inline)" for a in per_obs]


def generate_source(layout: Layout, target: str, shape: LaunchShape | None) -> str:
    step, reset = stages(layout)
    imports = {**step.imports, **reset.imports}
    sim = target == "cudasim"
    cuda = target != "cpu"
    wrap = "plain" if sim else "cuda_device"
    deco = {"cpu": CPU_HELPER, "cudasim": "",
            "cuda": "@cuda.jit(device=True, forceinline=True)"}[target]
    params_src, param_names = _params_source(layout, deco)
    layout.scratch_fields  # noqa: B018 - checks the scratch names on every target
    head = [
        f"# gpu_zoo kernels for {layout.spec.id}, target {target}, launch {shape}",
        f"# dependencies {_dependency_hash([step, reset])}, numba {numba.__version__}",
        # in the text, so in the module's name: the two settings never share a cached kernel
        f"# compile accelerations {'on' if _ACCELERATED else 'off'} (GPU_ZOO_COMPILE_ACCELERATIONS)",
        "import numpy as np",
        "from collections import namedtuple",
        "from functools import partial",
        *(["from numba import njit, prange"] if target == "cpu" else ["from numba import njit, cuda"]),
        *sorted(f"from {m} import {n} as {a}" for a, (m, n) in imports.items()),
        f"from {_OBSERVING[0]} import {_OBSERVING[1]} as _observing",
        *([f"from {_rebuild.__name__} import rebuild, plain, cuda_device", "_memo = {}"] if cuda else []),
        *(["_observing = rebuild(_observing, " + wrap + ", _memo)"] if cuda else []),
        *(f"{a} = rebuild({a}, {wrap}, _memo)" for a in (sorted(imports) if cuda else ())),
        # On the CPU an observation function and its helpers are inlined into the element loop: a
        # call per element, passing the state tuple (every field's array), costs more than most elements.
        *([f"from {_rebuild.__name__} import rebuild, cpu_inline, cpu_inline_only", "_inline = {}"]
          if not cuda else []),
        *(() if cuda else _cpu_inlined(layout, imports, sorted(step.per_obs | reset.per_obs))),
        f"State = namedtuple('State', {tuple(layout.fields)!r})",
        f"Params = namedtuple('Params', {tuple(param_names)!r})",
    ]
    # A row filled block by block (`plan.Stages.ladders`): inlined into the element loop like an observation.
    ladder_deco = {"cpu": "@njit(inline='always', _nrt=False, error_model='numpy', no_cpython_wrapper=True, "
                          "no_cfunc_wrapper=True)", "cudasim": "", "cuda": "@cuda.jit(device=True, forceinline=True)"}
    ladders = {**step.ladders, **reset.ladders}
    parts = ["\n".join(head), params_src,
             *(ladder_source(name, ladder, ladder_deco[target]) for name, ladder in sorted(ladders.items()))]
    # each call passes the state fields its callee uses (`gpu_zoo.core.compiler.speed.state_fields`):
    # their types are defined here
    subs = SubStates(layout, {**imports, "_observing": _OBSERVING}, narrow_params=cuda)
    subs.helpers["_params"] = subs.fields_of_source(params_src[params_src.index("def _params("):])
    if target == "cpu":
        helpers: dict = {}
        drivers = cpu_drivers(step, reset, layout, helpers, subs)
        parts += [src for _, src in helpers.values()] + [drivers]
    elif shape.split_observe:  # the reset is the last kernel's other branch
        phases, observe, finished = step_kernels(layout)
        parts += [_cuda_kernel(cuda_body("step_phases", phases, layout, shape.for_phases(), sim), layout, subs),
                  _cuda_kernel(cuda_body("step_observe", observe, layout, shape, sim), layout, subs),
                  _cuda_kernel(cuda_driver("step_finished", finished, reset, layout, shape.for_phases(), sim), layout,
                               subs)]
    else:
        parts.append(_cuda_kernel(cuda_driver("drive", step, reset, layout, shape, sim), layout, subs))
    if subs.types:
        parts.insert(2, "\n".join(subs.source()))
    flush()
    return "\n\n\n".join(parts) + "\n"


def _cuda_kernel(src: str, layout: Layout, subs: SubStates) -> str:
    """A CUDA kernel's source with each call's state narrowed and the fields read off its arguments.

    The state tuple is built only where a callee takes all of it.
    """
    lines = [fields_direct(line, layout) for line in subs.narrow(src).splitlines()]
    built = f"    s = {state_tuple(layout)}"
    if not keeps_state_tuple([line for line in lines if line != built]):
        lines.remove(built)
    return "\n".join(lines)


def _written(layout: Layout, target: str, shape: LaunchShape | None) -> tuple[str, Path]:
    """(the generated module's name, its file in the cache), the file written if it is not there yet."""
    src = generate_source(layout, target, shape)
    digest = hashlib.sha256(src.encode()).hexdigest()[:20]
    modname = f"gpu_zoo_kernels_{layout.spec.id}_{target}_{digest}"
    folder = cache_dir()
    path = folder / f"{modname}.py"
    if modname in sys.modules:
        return modname, path
    folder.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != src:
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(src)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    return modname, path


def load_kernels(layout: Layout, target: str, shape: LaunchShape | None):
    """Writes (once) and imports the generated module; returns it (``.step``, ``.reset``)."""
    modname, path = _written(layout, target, shape)
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return module


def kernel_signature(module, name: str, layout: Layout) -> tuple:
    """Numba's argument types of a generated CUDA kernel: its flag if it has one, then each field's array."""
    import numba

    dtypes = {"f64": numba.float64, "f32": numba.float32, "i32": numba.int32, "u8": numba.uint8}
    arrays = tuple(numba.types.Array(dtypes[f.dtype], 1 + len(f.shape), "C") for f in layout.fields.values())
    fn = getattr(module, name).py_func
    first = next(iter(inspect.signature(fn).parameters))
    return (numba.boolean, *arrays) if first == "resetting" else arrays  # `codegen_cuda.cuda_driver`'s flag


class CudaKernels:
    """A generated CUDA module's kernels as cubins (`gpu_zoo.core.compiler.cubin.Kernel`), by name."""

    def __init__(self, name: str, path: Path, kernels: dict):
        self.__name__, self.__file__ = name, str(path)
        for k, v in kernels.items():
            setattr(self, k, v)


def load_cuda_kernels(layout: Layout, shape: LaunchShape, cc: tuple[int, int]) -> CudaKernels:
    """The kernels of a configuration for a GPU of compute capability ``cc``, compiled once for all processes.

    A process finding every cubin in the cache loads them and imports neither the generated
    module nor numba-cuda; otherwise it compiles (one process at a time per module: the others
    wait, then load what it wrote).
    """
    from . import cubin, ptxas
    from .speed import compat

    modname, path = _written(layout, "cuda", shape)
    names = _kernel_names(shape)
    compiler = cuda_compiler()
    kernels = cubin.cached(path.parent, modname, names, cc, compiler)
    if kernels is None:
        with compile_lock(path):
            kernels = cubin.cached(path.parent, modname, names, cc, compiler)
            if kernels is None:
                cuda = compat.import_cuda()  # made usable on this NumPy before the module imports it
                module = load_kernels(layout, "cuda", shape)
                # Compiling a kernel makes its PTX and cubin for the current device, under numba-cuda's own
                # name for its architecture (sm_90a for 9.0): asking for them by that device reuses them,
                # where naming ``cc`` ran NVVM twice more and linked again.
                arch = None if tuple(cuda.get_current_device().compute_capability) == cc else cc
                kernels = {}
                with ptxas.whole_programs():  # numba-cuda's compile makes the cubin: assembled whole
                    for name in names:
                        kernel = getattr(module, name).compile(kernel_signature(module, name, layout))
                        image = kernel.library.get_cubin(cc=arch)  # bytes, or a cuda.core ObjectCode wrapping them
                        kernels[name] = cubin.store(path.parent, modname, name, cc, compiler,
                                                    bytes(getattr(image, "code", image)), kernel.inspect_asm(cc=arch))
    return CudaKernels(modname, path, kernels)


def cuda_compiler() -> str:
    """The compiler release in the name of every CUDA product kept in the cache (cubins, PTX markers).

    ``whole``: cubins assembled as whole programs (`gpu_zoo.core.compiler.ptxas`); those of earlier
    releases, linked as relocatable code, are not reused.
    """
    from importlib.metadata import version

    return f"numba-cuda-{version('numba-cuda')}-whole"


def _kernel_names(shape: LaunchShape) -> tuple[str, ...]:
    return CUDA_KERNELS[1:] if shape.split_observe else CUDA_KERNELS[:1]


@contextlib.contextmanager
def compile_lock(path):
    """Held while the kernels of the generated module at ``path`` first compile: other processes wait.

    A waiting process then loads what this one wrote (Numba's cache, or the cubins of
    `load_cuda_kernels`) where it would have compiled the same kernels again: training ranks,
    vector-env workers and test workers started together compile each configuration once. The
    lock is an advisory file lock beside the module, freed by the system if its holder dies;
    where there is none (not POSIX), each process compiles.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(Path(path).with_suffix(".lock"), "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            logging.getLogger("gpu_zoo").info("waiting for another process compiling %s", Path(path).stem)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
