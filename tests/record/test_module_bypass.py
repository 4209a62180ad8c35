"""torch's own layers run past the tracer's torch-function mode once a call of theirs recorded nothing: the results
stay bitwise those of an untraced run, the mode no longer sees their ops, and whatever could cut a path in them
brings the mode back (a hook added later, a user function as a layer's activation, an attribute changed, gradients
off, a new kind of input, a layer that writes in place)."""
from __future__ import annotations

from collections import Counter
from contextlib import nullcontext

import pytest
import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record.interceptor import Interceptor


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[Counter[str]]:
    """The torch calls the tracer's mode sees, one counter per training step (`step` starts the next)."""
    steps: list[Counter[str]] = [Counter()]
    original = Interceptor.__torch_function__

    def counting(self, func, types, args=(), kwargs=None):
        steps[-1][getattr(func, "__name__", repr(func))] += 1
        return original(self, func, types, args, kwargs)

    monkeypatch.setattr(Interceptor, "__torch_function__", counting)
    return steps


def train(model: nn.Module, steps: int, seen: list[Counter[str]] | None = None, before_step=None) -> list[torch.Tensor]:
    """SGD steps on fixed data; ``before_step(step)`` may change the model; the trained weights."""
    torch.manual_seed(0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(6, 4)
    for step in range(steps):
        if seen is not None:
            seen.append(Counter())
        if before_step is not None:
            before_step(step)
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def mlp() -> nn.Module:
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.GELU(), nn.Dropout(0.2), nn.Linear(8, 1))


def test_after_the_first_iteration_torch_layers_run_past_the_mode_with_the_same_results(seen) -> None:
    expected = train(mlp(), 5)
    with trace() as traced:
        weights = train(mlp(), 5, seen)
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))  # dropout's draws included
    first, *later = seen[1:]
    assert first["linear"] == 2 and first["layer_norm"] == 1 and first["gelu"] == 1
    assert all(step["linear"] == step["layer_norm"] == step["gelu"] == step["dropout"] == 0 for step in later[1:])
    assert all(step["backward"] == 1 for step in later)  # the user's own calls are still seen
    assert traced.findings == []


def test_a_model_that_ends_in_a_softmax_layer_runs_past_the_mode(seen) -> None:
    """A softmax over several classes records nothing: the model holding it is learnt like any other."""
    def classifier() -> nn.Module:
        torch.manual_seed(1)
        return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3), nn.LogSoftmax(dim=1))

    expected = train(classifier(), 5)
    with trace() as traced:
        weights = train(classifier(), 5, seen)
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))
    assert seen[1]["log_softmax"] == 1
    assert all(step["log_softmax"] == step["linear"] == 0 for step in seen[3:])
    assert traced.findings == []


def test_a_softmax_layer_over_one_element_keeps_the_mode(seen) -> None:
    """``nn.Softmax(dim=1)`` over one output is a constant: reported, and the layer never runs past the mode."""
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 1), nn.Softmax(dim=1))
    with trace() as traced:
        train(model, 4, seen)
    assert all(step["softmax"] == 1 for step in seen[1:])
    assert [(f.kind, f.tensor) for f in traced.findings] == [("non_differentiable", "Sequential.0.weight"),
                                                              ("non_differentiable", "Sequential.0.bias")]
    assert all("size 1" in f.message and f.count == 4 for f in traced.findings)


class Net(nn.Module):
    """A user model whose forward is straight-line code calling torch (`straight_code`)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.hidden, self.out = nn.Linear(4, 8), nn.Linear(8, 1)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)) * 0.5)


class BranchingNet(Net):
    def forward(self, x):
        h = torch.relu(self.hidden(x))
        if h.shape[0] > 100:
            h = h * 2
        return self.out(h * 0.5)


class DetachingNet(Net):
    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)).detach() * 0.5)


def test_a_user_model_of_straight_line_code_runs_past_the_mode(seen) -> None:
    expected = train(Net(), 5)
    with trace() as traced:
        weights = train(Net(), 5, seen)
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))
    assert seen[1]["relu"] == seen[1]["mul"] == 1
    assert all(step["relu"] == step["mul"] == step["linear"] == 0 for step in seen[3:])
    assert traced.findings == []


def test_a_user_model_that_branches_keeps_the_mode(seen) -> None:
    with trace():
        train(BranchingNet(), 5, seen)
    assert all(step["relu"] == step["mul"] == 1 for step in seen[1:])


def test_a_cut_in_straight_line_code_is_seen_at_every_call(seen) -> None:
    with trace() as traced:
        train(DetachingNet(), 4, seen)
    assert all(step["detach"] == 1 and step["relu"] == 1 for step in seen[1:-1])  # the last: train()'s own copies
    assert [(f.kind, f.tensor) for f in traced.findings] == [("detach", "DetachingNet.hidden.weight"),
                                                             ("detach", "DetachingNet.hidden.bias")]


class ScaledNet(Net):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.5

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)) * self.scale)


@pytest.mark.parametrize("change", ["a new layer", "a constant"])
def test_an_attribute_set_on_a_learnt_user_model_is_looked_at_again(seen, change: str) -> None:
    model = ScaledNet()

    def set_attribute(step: int) -> None:
        if step == 3:
            if change == "a new layer":
                model.out = nn.Linear(8, 1)
            else:
                model.scale = 0.25

    with trace():
        train(model, 5, seen, set_attribute)
    assert seen[3]["relu"] == 0 and seen[4]["relu"] == 1 and seen[5]["relu"] == 0


def test_a_hook_added_later_brings_the_mode_back(seen) -> None:
    model = mlp()

    def add_hook(step: int) -> None:
        if step == 3:
            model[2].register_forward_hook(lambda module, inputs, output: output * 1.0)

    with trace():
        train(model, 5, seen, add_hook)
    assert seen[3]["gelu"] == 0 and seen[4]["gelu"] == 1 and seen[4]["mul"] == 1 and seen[5]["mul"] == 1


def activation(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) * 0.5


def encoder_steps(layer: nn.Module, steps: int, seen: list[Counter[str]], before_step=lambda step: None) -> None:
    x = torch.randn(2, 3, 8)
    for step in range(steps):
        seen.append(Counter())
        before_step(step)
        layer(x).sum().backward()


def test_a_user_function_as_a_layers_activation_is_always_seen(seen) -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation=activation, batch_first=True)
    with trace():
        encoder_steps(layer, 4, seen)
    assert all(step["mul"] == 1 for step in seen[1:])


def test_an_attribute_changed_later_is_seen(seen) -> None:
    """``layer.activation = activation`` after the layer ran: the user's function runs under the mode again."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)

    def set_activation(step: int) -> None:
        if step == 3:
            layer.activation = activation

    with trace():
        encoder_steps(layer, 5, seen, set_activation)
    assert seen[3]["linear"] == 0  # passed in the steps before
    assert seen[4]["mul"] == 1 and seen[5]["mul"] == 1


def test_gradients_off_and_new_inputs_go_through_the_mode(seen) -> None:
    model = mlp()
    with trace() as traced:
        train(model, 3, seen)
        seen.append(Counter())
        with torch.no_grad():
            model(torch.randn(2, 4))
        seen.append(Counter())
        model(torch.randn(2, 4, requires_grad=True)).sum().backward()
    # a leaf that requires grad is new to the first layer, not to the second (it got a result with history)
    assert seen[-2]["linear"] == 2 and seen[-1]["linear"] == 1
    assert traced.findings == []


def test_with_gradients_off_layers_whose_weights_need_no_gradient_run_past_the_mode(seen) -> None:
    """A frozen network evaluated under ``no_grad`` records nothing: learnt like a call with gradients on."""
    def evaluate(model: nn.Module, seen: list[Counter[str]] | None) -> list[torch.Tensor]:
        torch.manual_seed(0)
        outputs = []
        for _ in range(4):
            if seen is not None:
                seen.append(Counter())
            with torch.no_grad():
                outputs.append(model(torch.randn(6, 4)))
        return outputs

    expected = evaluate(mlp().requires_grad_(False).eval(), None)
    with trace():
        torch.ones(1, requires_grad=True).sum().backward()  # the first iteration (recorded whole) is over
        outputs = evaluate(mlp().requires_grad_(False).eval(), seen)
    assert all(torch.equal(a, b) for a, b in zip(outputs, expected))
    assert seen[1]["linear"] == 2 and all(step["linear"] == step["gelu"] == 0 for step in seen[2:])


def test_with_gradients_off_weights_that_require_grad_are_always_seen(seen) -> None:
    """Weights swapped in by ``functional_call`` that need no gradient let the model be learnt under ``no_grad``; its
    own parameters, which do, are cut by the same call: it goes through the mode, and the cut is reported."""
    from torch.func import functional_call

    model = mlp()
    frozen = {name: value.detach().clone() for name, value in model.named_parameters()}
    x, scale = torch.randn(6, 4), torch.ones(1, requires_grad=True)
    line = test_with_gradients_off_weights_that_require_grad_are_always_seen.__code__.co_firstlineno + 18
    with trace() as traced:
        optimizer = torch.optim.SGD([*model.parameters(), scale], lr=0.1)
        (scale * 2).sum().backward()  # the first iteration (recorded whole) is over
        for _ in range(3):
            seen.append(Counter())
            with torch.no_grad():
                functional_call(model, frozen, (x,))
        seen.append(Counter())
        with torch.no_grad():
            target = model(x)
        seen.append(Counter())
        (target * scale).sum().backward()
        optimizer.step()
    assert seen[-5]["linear"] == 2 and seen[-4]["linear"] == seen[-3]["linear"] == 0  # the frozen weights' calls
    assert seen[-2]["linear"] == 2  # its own parameters under no_grad: seen
    assert {(f.kind, f.line) for f in traced.findings} == {("no_grad", line)}


def test_a_layer_that_writes_in_place_keeps_the_mode() -> None:
    """Its writes can break a later backward: they are kept, and autograd's error still names the layer's line."""
    model = nn.Sequential(nn.Linear(4, 8), nn.Sigmoid())
    x = torch.randn(3, 4)
    with trace() as traced:
        relu = nn.ReLU(inplace=True)
        made = test_a_layer_that_writes_in_place_keeps_the_mode.__code__.co_firstlineno + 5
        for step in range(4):
            hidden = model(x)
            if step == 3:  # sigmoid saved its output: writing it in place breaks the backward
                out = relu(hidden)
            else:
                out = relu(hidden * 1.0)
            try:
                out.sum().backward()
            except RuntimeError:
                pass
    assert [(f.kind, f.line) for f in traced.findings] == [("inplace_saved", made)]


def test_autograd_refusing_a_layers_in_place_write_in_a_later_iteration_is_explained() -> None:
    """A view of a leaf that requires grad reaches ``nn.ReLU(inplace=True)`` only at the fourth step: the error
    is still explained at the line that called the layer."""
    model, relu, x = nn.Linear(4, 8), nn.ReLU(inplace=True), torch.randn(3, 4)
    first = test_autograd_refusing_a_layers_in_place_write_in_a_later_iteration_is_explained.__code__.co_firstlineno
    with pytest.raises(RuntimeError, match="view of a leaf"), trace() as traced:
        model(x).sum().backward()  # the first iteration, recorded whole, does not use the layer
        for step in range(4):
            out = relu(model(x).view(3, 8)) if step < 3 else relu(torch.randn(3, 8, requires_grad=True).view(3, 8))
            out.sum().backward()
    assert [(f.kind, f.line) for f in traced.findings] == [("autograd_error", first + 8)]


def test_switching_train_and_eval_every_step_keeps_what_was_learnt(seen) -> None:
    """``model.train()`` sets ``training`` on every layer; it is part of what a call is learnt by, not a change."""
    model = mlp()

    def validate(step: int) -> None:
        model.eval()
        model(torch.randn(6, 4))
        model.train()

    with trace():
        train(model, 5, seen, validate)
    assert all(step["linear"] == 0 and step["dropout"] == 0 for step in seen[3:])


#: Whether `passing_with` runs its traced training now (its untraced one comes first).
TRACED_RUN = [False]


def passing_with(change) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The weights of a model trained untraced and traced, ``change(model, step)`` applied before each step."""
    def trained(traced: bool) -> list[torch.Tensor]:
        model = mlp()
        TRACED_RUN[0] = traced
        with trace() if traced else nullcontext():
            return train(model, 6, before_step=lambda step: change(model, step))

    return trained(False), trained(True)


def test_a_layer_compiled_under_a_passing_one_runs_compiled() -> None:
    """Past the mode, the layers of a learnt model are called straight to ``forward`` only where
    ``nn.Module.__call__`` would go there too: not a layer that ``compile()`` gave a compiled call."""
    graph_runs: list[bool] = []

    def counting_backend(graph, example_inputs):
        def run(*args):
            graph_runs.append(TRACED_RUN[0])
            return graph.forward(*args)
        return run

    def compile_gelu(model: nn.Module, step: int) -> None:
        if step == 3:
            model[2].compile(backend=counting_backend)

    expected, weights = passing_with(compile_gelu)
    if not any(traced is False for traced in graph_runs):
        pytest.skip(f"dynamo leaves a torch layer's call uncompiled on torch {torch.__version__}")
    assert graph_runs == [False] * 3 + [True] * 3  # at each of the last three steps, untraced and traced
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))


def test_a_global_backward_hook_sees_the_layers_under_a_passing_one() -> None:
    """A global backward hook registered after the model was learnt sees every layer's gradients, as untraced."""
    noted: list[list[str]] = [[], []]

    def hook_later(model: nn.Module, step: int) -> None:
        if step == 0:  # the untraced run's hook goes before the traced run starts
            while hooks:
                hooks.pop().remove()
        if step == 3:
            run = noted[0] if not noted[0] else noted[1]
            hooks.append(nn.modules.module.register_module_full_backward_hook(
                lambda module, grad_input, grad_output: run.append(type(module).__name__)))

    hooks: list = []
    try:
        expected, weights = passing_with(hook_later)
    finally:
        for handle in hooks:
            handle.remove()
    assert noted[1] == noted[0] and noted[0].count("Linear") == 6  # two layers, three steps
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))
