"""Adam for one group's policy: torch's fused Adam kernel, with torch.optim.Adam's state and interface.

torch.optim's optimisers load ``torch._dynamo`` when the first one is made (their methods are
wrapped to keep compilation out), about 3 s of a training command's start-up on the machines we
measured, for a trainer that never compiles. This calls the same fused kernel that
``torch.optim.Adam(fused=True, capturable=True)`` calls, with its learning rate and step counts
on the device, so a CUDA graph replays the step. ``state``, ``param_groups``, ``state_dict`` and
``load_state_dict`` follow torch.optim.Adam's, so checkpoints move between the two.
"""

from __future__ import annotations

import torch

_SETTINGS = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")


class Adam:
    """Adam without weight decay over ``params``; ``lr`` is held as a one-element device tensor."""

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        params = list(params)
        if not params:
            raise ValueError("Adam needs at least one parameter")
        self.device = params[0].device
        self.param_groups = [{"params": params, "lr": torch.tensor(float(lr), device=self.device),
                              "betas": tuple(betas), "eps": float(eps), "weight_decay": 0.0, "amsgrad": False,
                              "maximize": False, "foreach": None, "capturable": True, "differentiable": False,
                              "fused": True, "decoupled_weight_decay": False}]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}

    @property
    def _params(self) -> list[torch.Tensor]:
        return self.param_groups[0]["params"]

    def _state_of(self, p: torch.Tensor) -> dict[str, torch.Tensor]:
        if p not in self.state:
            self.state[p] = {"step": torch.zeros((), dtype=torch.float32, device=p.device),
                             "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                             "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}
        return self.state[p]

    def zero_grad(self):
        for p in self._params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        group = self.param_groups[0]
        params = [p for p in self._params if p.grad is not None]
        if not params:
            return
        states = [self._state_of(p) for p in params]
        steps = [s["step"] for s in states]
        torch._foreach_add_(steps, 1.0)
        beta1, beta2 = group["betas"]
        torch._fused_adam_(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                           [s["exp_avg_sq"] for s in states], [], steps, lr=group["lr"], beta1=beta1, beta2=beta2,
                           weight_decay=0.0, eps=group["eps"], amsgrad=False, maximize=False)

    def state_dict(self) -> dict:
        """torch.optim.Adam's layout: per parameter index its step and moments, then the settings."""
        index = {p: i for i, p in enumerate(self._params)}
        # the settings, not how this one steps (fused, capturable): another optimiser keeps its own way
        group = {k: v for k, v in self.param_groups[0].items() if k in _SETTINGS}
        group["lr"] = float(group["lr"])
        group["params"] = list(range(len(self._params)))
        return {"state": {index[p]: dict(s) for p, s in self.state.items()}, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict):
        """Takes a state in torch.optim.Adam's layout (one parameter group); its tensors are copied in."""
        groups = state_dict["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self._params):
            raise ValueError(f"an optimiser state of {[len(g['params']) for g in groups]} parameters does not fit "
                             f"one group of {len(self._params)}")
        saved = state_dict["state"]
        state = {}
        for i, p in enumerate(self._params):
            if i not in saved:
                continue
            s = saved[i]
            state[p] = {"step": torch.as_tensor(s["step"], dtype=torch.float32).to(p.device).reshape(()).clone(),
                        "exp_avg": s["exp_avg"].to(p.device, p.dtype).clone(),
                        "exp_avg_sq": s["exp_avg_sq"].to(p.device, p.dtype).clone()}
        own = self.param_groups[0]
        settings = {k: v for k, v in groups[0].items() if k in _SETTINGS}
        lr = settings.pop("lr", own["lr"])
        self.param_groups[0] = {**own, **settings, "lr": torch.tensor(float(lr), device=self.device)}
        self.state = state
