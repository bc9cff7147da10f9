"""BenchMARL tasks over gpu_zoo envs: BenchMARL's algorithms (MAPPO, IPPO, MASAC, QMIX, ...) train on them.

BenchMARL builds each experiment's envs from a task (a `benchmarl.environments.TaskClass`). The
tasks here build `gpu_zoo.torchrl.GpuZooEnv`: one batched env of ``num_envs`` copies on
BenchMARL's sampling device, so a BenchMARL run on ``sampling_device="cuda"`` collects without
leaving the GPU::

    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models import MlpConfig
    from gpu_zoo.benchmarl import GpuZooTask

    task = GpuZooTask.SIMPLE_TAG_V3.get_task(config={"max_cycles": 25})
    Experiment(task=task, algorithm_config=MappoConfig.get_from_yaml(), model_config=MlpConfig.get_from_yaml(),
               seed=0, config=ExperimentConfig.get_from_yaml()).run()

``GpuZooTask`` has one member per env registered when this module is imported (its name in
capitals); `gpu_zoo_task` makes the task of any registered id, one added later included. A
task's config holds the env's arguments, as `gpu_zoo.make` takes them. BenchMARL's command line
reads tasks from its own package's yaml files only, so gpu_zoo's tasks are used from Python.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import gymnasium

from gpu_zoo.core.api.spec import EnvSpec
from gpu_zoo.core.compiler.layout import Layout
from gpu_zoo.core.runtime.batched import BatchedEnv
from gpu_zoo.registry import get_spec, registered_envs

try:
    from benchmarl.environments.common import Task, TaskClass
    from torchrl.data import Composite
except ImportError as err:
    raise ImportError(f"gpu_zoo.benchmarl needs BenchMARL ({err}); install it with `pip install gpu_zoo[benchmarl]`") \
        from err

from gpu_zoo.torchrl import GpuZooEnv

# Keywords of BatchedEnv and GpuZooEnv themselves, which a task's config may hold besides the env's arguments
_ENV_OPTIONS = (frozenset(inspect.signature(BatchedEnv.__init__).parameters)
                | frozenset(inspect.signature(GpuZooEnv.__init__).parameters)) - {"self", "spec", "env", "params"}


def _action_kinds(spec: EnvSpec, params: dict[str, Any]) -> tuple[bool, bool]:
    """(discrete offered, continuous offered): both where the env takes ``continuous_actions``."""
    fields = {f.name for f in dataclasses.fields(spec.params)}
    if "continuous_actions" in fields and "continuous_actions" not in params:
        return True, True
    layout = Layout(spec, spec.make_params(**params))  # the spaces, without compiling a kernel
    boxes = [isinstance(g.action_space, gymnasium.spaces.Box) for g in layout.groups.values()]
    return not all(boxes), all(boxes)


class GpuZooClass(TaskClass):
    """A BenchMARL task of one gpu_zoo env: ``name`` is its id in capitals, ``config`` its arguments."""

    def __init__(self, name: str, config: dict[str, Any] | None):
        env_id = name.lower()
        spec = get_spec(env_id)  # an unknown id is refused here, naming the registered ones
        config = dict(config or {})
        for reserved in ("num_envs", "device", "categorical_actions"):
            if reserved in config:
                raise ValueError(f"{reserved!r} is not a task argument: BenchMARL sets it (the number of envs by "
                                 f"on/off_policy_n_envs_per_worker, the device by sampling_device; its algorithms "
                                 f"take action indices)")
        super().__init__(name=name.upper(), config=config)
        self.env_id, self.spec = env_id, spec
        self._kinds: tuple[bool, bool] | None = None
        spec.make_params(**self._env_params())  # the env's checks, before any compile

    def _env_params(self) -> dict[str, Any]:
        return {k: v for k, v in self.config.items() if k not in _ENV_OPTIONS}

    def _action_kinds(self) -> tuple[bool, bool]:
        if self._kinds is None:
            self._kinds = _action_kinds(self.spec, self._env_params())
        return self._kinds

    def get_env_fun(self, num_envs: int, continuous_actions: bool, seed: int | None, device):
        config = dict(self.config)
        discrete, continuous = self._action_kinds()
        if discrete and continuous:
            config["continuous_actions"] = bool(continuous_actions)
        env_id = self.env_id

        def make() -> GpuZooEnv:
            env = GpuZooEnv(env_id, num_envs=num_envs, device=device, **config)
            if seed is not None:
                env.set_seed(seed)
            return env

        return make

    def supports_continuous_actions(self) -> bool:
        return self._action_kinds()[1]

    def supports_discrete_actions(self) -> bool:
        return self._action_kinds()[0]

    def max_steps(self, env) -> int:
        return int(_gpu_zoo_env(env).batched.params.max_cycles)

    def has_render(self, env) -> bool:
        return self.spec.render is not None

    @staticmethod
    def render_callback(experiment, env, data):
        return _gpu_zoo_env(env).batched.render(0)

    def group_map(self, env) -> dict[str, list[str]]:
        return _gpu_zoo_env(env).group_map

    def observation_spec(self, env):
        return self._group_entries(env, keep="observation")

    def action_mask_spec(self, env):
        spec = self._group_entries(env, keep="action_mask")
        return None if spec.is_empty() else spec

    def info_spec(self, env):
        return None

    def state_spec(self, env):
        spec = env.full_observation_spec_unbatched
        if "state" not in spec.keys():
            return None
        return Composite({"state": spec["state"].clone()})

    def action_spec(self, env):
        return env.full_action_spec_unbatched.clone()

    def _group_entries(self, env, keep: str):
        """Each group's ``keep`` entry of the unbatched observation spec, without the state."""
        spec = env.full_observation_spec_unbatched.clone()
        if "state" in spec.keys():
            del spec["state"]
        for group in self.group_map(env):
            for key in list(spec[group].keys()):
                if key != keep:
                    del spec[group, key]
            if spec[group].is_empty():
                del spec[group]
        return spec

    @staticmethod
    def env_name() -> str:
        return "gpu_zoo"


def _gpu_zoo_env(env) -> GpuZooEnv:
    """The `GpuZooEnv` under BenchMARL's transforms."""
    base = getattr(env, "base_env", env)
    if not isinstance(base, GpuZooEnv):
        raise TypeError(f"expected a GpuZooEnv (or a TransformedEnv over one), got {type(base).__name__}")
    return base


class _GpuZooTasks(Task):
    """Tasks of gpu_zoo envs; their default config is the env's defaults (BenchMARL's yaml is not read)."""

    @staticmethod
    def associated_class():
        return GpuZooClass

    def get_from_yaml(self, path: str | None = None) -> GpuZooClass:
        if path is not None:
            return super().get_from_yaml(path)
        return GpuZooClass(self.name, {})


GpuZooTask = _GpuZooTasks("GpuZooTask", [(env_id.upper(), None) for env_id in registered_envs()],
                          module=__name__)
GpuZooTask.__doc__ = "One BenchMARL task per gpu_zoo env: ``GpuZooTask.SIMPLE_TAG_V3.get_task(config={...})``."


def gpu_zoo_task(env_id: str, **params) -> GpuZooClass:
    """The BenchMARL task of any registered env id, with the env's arguments.

    ``gpu_zoo_task("simple_spread_v3", N=4)``; an env registered after this module's import included.
    """
    return GpuZooClass(env_id, params)
