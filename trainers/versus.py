"""A trained two-player board-game policy against a fixed opponent, with both colours: wins, draws, losses.

    python -m trainers.versus runs/connect_four_v3/checkpoint.pt --opponent one_ply --games 1000
    python -m trainers.versus runs/tictactoe_v3/checkpoint.pt --opponent random

Every game is one env of a batched turn-based env without auto-reset; the policy takes the first
seat in half of them and the second in the others. Opponents:

- ``random``: uniform over the legal moves (any turn-based game);
- ``one_ply`` (connect four): win now if it can, else block the other's immediate win, else random.

The policy samples from its distribution under the legal-move mask (``--greedy``: its most
likely move). A game's result is the policy's final reward: +1 a win, 0 a draw, -1 a loss.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass

import torch

import gpu_zoo
from trainers.evaluate import load_checkpoint

Opponent = Callable[[object, torch.Generator], torch.Tensor]  # (env, generator) -> a move per env: (E,)


@dataclass
class Record:
    """The policy's results over ``games`` games: counts of each outcome, and the same by seat."""

    wins: int
    draws: int
    losses: int
    by_seat: dict[int, tuple[int, int, int]]

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def summary(self) -> dict:
        return {"games": self.games, "win_rate": self.wins / self.games, "draw_rate": self.draws / self.games,
                "loss_rate": self.losses / self.games,
                "by_seat": {str(k): dict(zip(("wins", "draws", "losses"), v, strict=True))
                            for k, v in self.by_seat.items()}}


def legal_moves(env) -> torch.Tensor:
    """(E, moves) bools: the mover's legal moves in each env."""
    masks = env.action_masks["player"]  # (E, 2, moves)
    return masks[torch.arange(env.num_envs, device=env.device), env.current_player.long()]


def uniform_pick(allowed: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A uniform choice among the allowed entries of each row (rows with none pick 0)."""
    scores = torch.rand(allowed.shape, device=allowed.device, generator=generator)
    return scores.masked_fill_(~allowed, -1.0).argmax(-1)


def random_opponent(env, generator: torch.Generator) -> torch.Tensor:
    return uniform_pick(legal_moves(env), generator)


def four_in_a_row(board: torch.Tensor) -> torch.Tensor:
    """(E,) whether each (E, 6, 7) bool board holds four in a row: across, down or diagonal."""
    b = board
    across = b[:, :, 0:4] & b[:, :, 1:5] & b[:, :, 2:6] & b[:, :, 3:7]
    down = b[:, 0:3, :] & b[:, 1:4, :] & b[:, 2:5, :] & b[:, 3:6, :]
    falling = b[:, 0:3, 0:4] & b[:, 1:4, 1:5] & b[:, 2:5, 2:6] & b[:, 3:6, 3:7]
    rising = b[:, 0:3, 3:7] & b[:, 1:4, 2:6] & b[:, 2:5, 1:5] & b[:, 3:6, 0:4]
    return torch.stack([x.flatten(1).any(1) for x in (across, down, falling, rising)]).any(0)


def one_ply_opponent(env, generator: torch.Generator) -> torch.Tensor:
    """Connect four: a column that wins now, else one that stops the other's win next move, else a random legal one."""
    board = env.state.board.view(-1, 6, 7).long()
    mover = env.current_player.long() + 1  # (E,) the mover's piece
    legal = legal_moves(env)
    rows = torch.arange(env.num_envs, device=env.device)
    completes = {}
    for piece, name in ((mover, "win"), (3 - mover, "block")):
        hits = torch.zeros_like(legal)
        for col in range(7):
            landing = 5 - (board[:, :, col] != 0).sum(1)  # the row a piece dropped there stops at
            placed = board.clone()
            ok = landing >= 0
            placed[rows[ok], landing[ok], col] = piece[ok]
            hits[:, col] = ok & four_in_a_row(placed == piece.view(-1, 1, 1))
        completes[name] = hits & legal
    choice = torch.where(completes["block"].any(1, keepdim=True), completes["block"], legal)
    choice = torch.where(completes["win"].any(1, keepdim=True), completes["win"], choice)
    return uniform_pick(choice, generator)


OPPONENTS: dict[str, Opponent] = {"random": random_opponent, "one_ply": one_ply_opponent}


@torch.no_grad()
def play_games(env, policy, opponent: Opponent, seed: int = 0, greedy: bool = False) -> Record:
    """One game in each env of ``env`` (turn-based, no auto-reset): the policy in seat ``e % 2`` of env ``e``."""
    if env.current_player is None or env.autoreset:
        raise ValueError("play_games takes a turn-based batched env without auto-reset")
    generator = torch.Generator(device=env.device).manual_seed(seed)
    torch.manual_seed(seed)
    env.reset(seed=seed)
    rows = torch.arange(env.num_envs, device=env.device)
    seat = rows % 2
    result = torch.zeros(env.num_envs, device=env.device)
    finished = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    while not bool(finished.all()):
        mine = policy.sample(env.obs["player"], mask=env.action_masks["player"], greedy=greedy)[0]  # (E, 2)
        theirs = opponent(env, generator)
        mover = env.current_player.long()
        moves = torch.zeros_like(env.actions["player"])
        moves[rows, mover] = torch.where(mover == seat, mine[rows, mover], theirs).to(moves.dtype)
        _, rewards, *_, info = env.step({"player": moves})
        ended = info["done"].bool() & ~finished
        result = torch.where(ended, rewards["player"][rows, seat], result)
        finished |= ended
    outcome = result.sign().long().cpu()
    seats = seat.cpu()

    def counts(sel):
        o = outcome[sel]
        return int((o > 0).sum()), int((o == 0).sum()), int((o < 0).sum())

    wins, draws, losses = counts(torch.ones_like(seats, dtype=torch.bool))
    return Record(wins, draws, losses, {s: counts(seats == s) for s in (0, 1)})


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m trainers.versus", description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--opponent", choices=sorted(OPPONENTS), default="random")
    ap.add_argument("--games", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--greedy", action="store_true", help="the policy's most likely move instead of a sample")
    ap.add_argument("--device", default=None)
    ns = ap.parse_args(argv)
    args, policies = load_checkpoint(ns.checkpoint, ns.device)
    if args.env_id != "connect_four_v3" and ns.opponent == "one_ply":
        raise SystemExit("the one_ply opponent plays connect four only")
    env = gpu_zoo.make(args.env_id, num_envs=ns.games, device=ns.device, autoreset=False, validate=False,
                       **args.env_kwargs)
    record = play_games(env, policies["player"], OPPONENTS[ns.opponent], ns.seed, ns.greedy)
    print(json.dumps({"env": args.env_id, "opponent": ns.opponent, "greedy": ns.greedy, **record.summary()}))


if __name__ == "__main__":
    main()
