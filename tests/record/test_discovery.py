"""Discovery walks the live modules again only when something that names tensors changed: a steady training loop
pays for the walk once, and a tensor set on a module late in a long run is still named after it."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record import discovery


def test_steady_training_names_its_tensors_once(monkeypatch) -> None:
    walks = []
    resolve = discovery.resolve_names
    monkeypatch.setattr(discovery, "resolve_names", lambda registry: (walks.append(1), resolve(registry)))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with trace() as traced:
        for _ in range(120):  # past the 50th and 100th backward, where discovery looks again
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    assert len(walks) == 1  # the first backward's; the trace's own last look is not discovery's
    assert {w.name for w in traced.watched} == {"Sequential.0.weight", "Sequential.0.bias", "Sequential.2.weight",
                                                "Sequential.2.bias"}


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.linear(x)
        scales = getattr(self, "scales", [])
        return out * scales[0].sum() if scales else out


def train_with_late_attribute() -> None:
    """The module and ``scale`` die before the trace ends: only discovery during the run can name ``scale`` after the
    list attribute user code set on the module at the 10th step."""
    scale = torch.ones(2, requires_grad=True)
    model = Scaled()
    x = torch.randn(5, 3)
    for step in range(60):
        if step == 10:
            model.scales = [scale]
        model(x).sum().backward()


def test_a_tensor_set_on_a_module_late_in_a_long_run_is_named_after_it() -> None:
    with trace() as traced:
        train_with_late_attribute()
    scale = next(w for w in traced.watched if w.shape == (2,))
    assert scale.name == "Scaled.scales[0]"


def test_a_loops_fresh_leaves_are_one_tensor_whether_discovery_saw_them_alive_or_not() -> None:
    # discovery (backwards 1-3, then every 50th) finds the leaf alive in `x` only at those steps: the others died
    # first and would be named by their line, and one rounding cut reported under two names
    torch.manual_seed(0)
    weight = torch.randn(8, 8)
    with trace() as traced:
        for _ in range(60):
            x = torch.randn(8, requires_grad=True)
            (weight @ (torch.round(x * 4) / 4)).tanh().sum().backward()
    assert {w.name for w in traced.watched} == {"x"}
    assert [f.tensor for f in traced.findings] == ["x"]


def test_leaves_one_helper_makes_for_two_variables_keep_their_names() -> None:
    def leaf() -> torch.Tensor:
        return torch.randn(3, requires_grad=True)

    with trace() as traced:
        for _ in range(4):
            first, second = leaf(), leaf()
            (first * second).sum().backward()
    names = {w.name for w in traced.watched}
    assert {"first", "second"} <= names and len(names) == 3  # and the line's name for the leaves no pass saw alive


def train_an_ensemble_of_which_one_model_learns() -> None:
    torch.manual_seed(0)
    models = [nn.Linear(3, 1), nn.Linear(3, 1)]
    optimizer = torch.optim.SGD([p for m in models for p in m.parameters()], lr=0.1)
    x = torch.randn(4, 3)
    for _ in range(3):
        optimizer.zero_grad()
        models[0](x).sum().backward()
        optimizer.step()


def test_modules_held_in_a_list_are_named_by_their_place_in_it() -> None:
    with trace() as traced:
        train_an_ensemble_of_which_one_model_learns()
    assert [w.name for w in traced.watched] == ["models[0].weight", "models[0].bias", "models[1].weight",
                                                "models[1].bias"]
    assert {(f.kind, f.tensor) for f in traced.findings} == {("unused_parameter", "models[1].weight"),
                                                             ("unused_parameter", "models[1].bias")}


def test_a_dict_that_holds_more_than_modules_is_not_looked_through() -> None:
    results = {"model": nn.Linear(3, 1), "loss": 0.5}  # another run's model, kept beside its numbers
    with trace() as traced:
        train_an_ensemble_of_which_one_model_learns()
    assert not any(w.tensor is results["model"].weight for w in traced._state.registry.all)
    assert len(traced.watched) == 4
