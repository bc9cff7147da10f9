"""The trainer's Adam (`trainers.adam`) against torch.optim.Adam: the same steps, states that move between them."""

import copy

import torch

from trainers.adam import Adam


def pair(seed: int = 0):
    torch.manual_seed(seed)
    a = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    b = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    b.load_state_dict(a.state_dict())
    return a, b


def steps(model, opt, n: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(n):
        opt.zero_grad()
        model(torch.randn(7, 5, generator=gen)).pow(2).sum().backward()
        opt.step()


def test_steps_are_torch_optims():
    a, b = pair()
    ours, theirs = Adam(a.parameters(), lr=1e-2, eps=1e-5), torch.optim.Adam(b.parameters(), lr=1e-2, eps=1e-5)
    steps(a, ours, 6, seed=1)
    steps(b, theirs, 6, seed=1)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)


def test_a_state_moves_between_it_and_torch_optims_and_steps_on_alike():
    a, b = pair()
    ours, theirs = Adam(a.parameters(), lr=3e-3, eps=1e-5), torch.optim.Adam(b.parameters(), lr=3e-3, eps=1e-5)
    steps(a, ours, 3, seed=2)
    theirs.load_state_dict(copy.deepcopy(ours.state_dict()))  # as a checkpoint carries it: no shared tensors
    b.load_state_dict(a.state_dict())
    steps(a, ours, 3, seed=3)
    steps(b, theirs, 3, seed=3)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
    again = Adam(a.parameters(), lr=1.0, eps=1e-5)
    again.load_state_dict(copy.deepcopy(theirs.state_dict()))
    assert float(again.param_groups[0]["lr"]) == torch.tensor(3e-3).item()  # a float32 on the device
    for p in a.parameters():
        for k in ("step", "exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(again.state[p][k].float(), theirs.state[next(
                q for q, r in zip(b.parameters(), a.parameters(), strict=True) if r is p)][k].float())


def test_a_state_for_other_parameters_is_refused():
    a, _ = pair()
    opt = Adam(a.parameters(), lr=1e-3)
    other = torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), lr=1e-3)
    try:
        opt.load_state_dict(other.state_dict())
    except ValueError as err:
        assert "does not fit" in str(err)
    else:
        raise AssertionError("a state of 2 parameters was taken by an optimiser of 4")
