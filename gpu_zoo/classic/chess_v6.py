"""``chess_v6``: PettingZoo's chess, turn-based; the rules are in `gpu_zoo.classic.chess`.

PettingZoo's env also sets every agent's info to ``{"legal_moves": []}`` when a move ends the
game; `ChessAECEnv` does the same.
"""

from pettingzoo.utils import wrappers

from gpu_zoo.classic.boards import ILLEGAL_REWARD
from gpu_zoo.classic.chess import SPEC
from gpu_zoo.core.faces.aec import GpuZooAECEnv, turn_based_entry_points


class ChessAECEnv(GpuZooAECEnv):
    """The AEC face of chess: `GpuZooAECEnv`, with PettingZoo's infos at the game's end."""

    def __init__(self, render_mode=None, device="cpu", **params):
        super().__init__(SPEC, render_mode, device, **params)

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        super().step(action)
        if any(self.terminations.values()):  # a move ended the game (illegal ones are refused, or the wrapper's)
            self.infos = {a: {"legal_moves": []} for a in self.agents}


def raw_env(**kwargs) -> ChessAECEnv:
    """The AEC env without wrappers of ``chess_v6``; keyword arguments are its params."""
    return ChessAECEnv(**kwargs)


def env(**kwargs):
    """The AEC env with PettingZoo's wrappers of ``chess_v6``, as PettingZoo's: keyword arguments are its params."""
    out = wrappers.TerminateIllegalWrapper(raw_env(**kwargs), illegal_reward=ILLEGAL_REWARD)
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(out))


batched_env = turn_based_entry_points(SPEC, illegal_reward=ILLEGAL_REWARD)[2]
