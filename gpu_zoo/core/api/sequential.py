"""What a game played in sequence (``EnvSpec(play="sequential")``) reads in its step phases.

Its agents act one after another within a cycle, and the world advances after the last of them.
The core's field ``mover`` says which moves a launch applies: ``-1`` for the whole cycle (every
agent in agent order, then the world: the batched face, always), or one agent's global index for
that agent's move alone (PettingZoo's AEC face, a launch per agent step). The launch that moves
the last agent (or the whole cycle) also advances the world and the step count.
"""

from .jit import kernel_fn

WHOLE_CYCLE = -1
"""``s.mover[e]`` of a launch that plays a whole cycle."""


@kernel_fn
def moves(s, e, a):
    """Whether agent ``a``'s move is applied at this launch."""
    m = s.mover[e]
    return m < 0 or m == a


@kernel_fn
def whole_cycle(s, e):
    """Whether this launch applies every agent's move (the batched face's step)."""
    return s.mover[e] < 0


@kernel_fn
def cycle_ends(s, p, e):
    """Whether this launch ends the cycle: the whole cycle, or the last agent's move. The world then advances."""
    m = s.mover[e]
    return m < 0 or m == p.num_agents - 1
