"""The core's own phases around an environment's: step bookkeeping, episode ends, statistics.

Compiled into every kernel beside the env's phases, on both targets.
"""

from ..api.jit import kernel_fn
from ..api.sequential import cycle_ends


@kernel_fn
def observing(s, e, a):
    """Whether agent a gets a real observation: in the game, or leaving it at this very step.

    An agent's terminal observation is a real one; after that it observes zeros.
    """
    # Both flags read without a branch: callers test it once per element, and branch-free the
    # compiler reads them once for all of an agent's elements.
    return (s.alive[e, a] | s.term[e, a]) != 0


@kernel_fn
def idle_env(s, p, e):
    """A step of an env that finished without auto-reset: nothing advances, and nothing new is reported."""
    s.done[e] = 0


@kernel_fn
def idle_agent(s, p, e, a):
    s.rew[e, a] = 0
    s.term[e, a] = 0
    s.trunc[e, a] = 0
    s.active[e, a] = 0


@kernel_fn
def begin_env(s, p, e):
    s.t[e] += 1
    s.over[e] = 0
    s.done[e] = 0


@kernel_fn
def begin_sub_step(s, p, e):
    """`begin_env` of a game played in sequence: the step count is its cycles, advanced by the launch ending one."""
    if cycle_ends(s, p, e):
        s.t[e] += 1
    s.over[e] = 0
    s.done[e] = 0


@kernel_fn
def begin_agent(s, p, e, a):
    s.active[e, a] = s.alive[e, a]
    s.term[e, a] = 0
    s.trunc[e, a] = 0
    s.rew[e, a] = 0


@kernel_fn
def end_env(s, p, e):
    if s.over[e] or s.t[e] >= p.max_cycles:
        s.done[e] = 1


@kernel_fn
def end_agent(s, p, e, a):
    """Per-agent episode flags: the game's end terminates, the time limit truncates."""
    if s.active[e, a]:
        if s.over[e]:
            s.term[e, a] = 1
        elif s.done[e] and not s.term[e, a]:
            s.trunc[e, a] = 1
    s.ep_ret[e, a] += s.rew[e, a]


@kernel_fn
def save_return(s, p, e, a):
    s.last_ret[e, a] = s.ep_ret[e, a]


@kernel_fn
def finish_env(s, p, e):
    s.last_len[e] = s.t[e] - s.start_t[e]
    s.ep_count[e] += 1
    if not s.autoreset[e]:
        s.finished[e] = 1


@kernel_fn
def restart_env(s, p, e):
    """Starts the next episode of an env that just finished (auto-reset)."""
    s.episode[e] += 1
    s.t[e] = 0
    s.start_t[e] = 0
    s.over[e] = 0


@kernel_fn
def restart_agent(s, p, e, a):
    s.alive[e, a] = 1
    s.ep_ret[e, a] = 0


@kernel_fn
def reset_env(s, p, e):
    """An explicit reset: nothing of the previous step remains visible.

    The step count and the step the episode starts at are the host's to set before the launch
    (`BatchedEnv.reset`): 0, or where each env's first episode starts, which the env's reset phases
    and first observation then see.
    """
    s.over[e] = 0
    s.done[e] = 0
    s.finished[e] = 0


@kernel_fn
def reset_agent(s, p, e, a):
    s.alive[e, a] = 1
    s.active[e, a] = 1
    s.ep_ret[e, a] = 0
    s.rew[e, a] = 0
    s.term[e, a] = 0
    s.trunc[e, a] = 0
