"""Local SGD for the nodes of one process: node by node or batched with vmap, each node on its own batch order."""

from __future__ import annotations

import pytest
import torch

from reference import data as data_mod
from reference import local_step
from reference.models import model_for

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def setting():
    """Five digits nodes of unequal size (Dirichlet split) and one shared starting point."""
    data = data_mod.digits(5, partition="dirichlet", seed=1)
    torch.manual_seed(0)
    model = model_for(data.input_shape, data.num_classes)
    layout = local_step.Layout(model)
    theta = torch.stack([layout.flatten(model) + 0.01 * torch.randn(layout.size) for _ in range(5)])
    return data, model, layout, theta


def train(setting, path: str, nodes: list[int], chunk: int = 2) -> torch.Tensor:
    data, model, layout, theta = setting
    generators = [local_step.node_generator(0, i) for i in nodes]
    held = [data.nodes[i] for i in nodes]
    if path == "loop":
        return local_step.loop(model, layout, theta[nodes], held, generators, 2, 0.05, 16)
    steps = local_step.steps_per_epoch([len(n.train_y) for n in data.nodes], 16)
    return local_step.vmap_chunks(model, layout, theta[nodes], held, generators, 2, 0.05, 16, steps, chunk)


def test_layout_round_trips_flat_vectors(setting):
    _, model, layout, theta = setting
    assert layout.size == sum(p.numel() for p in model.parameters())
    named = layout.unflatten(theta[0])
    assert [v.shape for v in named.values()] == [p.shape for p in model.parameters()]
    assert torch.equal(layout.rows(layout.stacked(theta)), theta)


def test_node_generators_differ_by_node_and_repeat_by_seed():
    draw = lambda seed, node: torch.randperm(20, generator=local_step.node_generator(seed, node))  # noqa: E731
    assert torch.equal(draw(0, 3), draw(0, 3))
    assert not torch.equal(draw(0, 3), draw(0, 4)) and not torch.equal(draw(0, 3), draw(1, 3))


def test_a_node_trains_the_same_whichever_nodes_share_its_process(setting):
    """Both paths: node 3's result does not depend on its neighbours in the process or its chunk position."""
    for path in ("loop", "vmap"):
        together = train(setting, path, [0, 1, 2, 3, 4])
        alone = train(setting, path, [3, 4])
        assert torch.equal(together[3:], alone), path


def test_vmap_matches_the_loop_up_to_float_rounding(setting):
    """Same batches, same SGD; only the kernels' summation order differs (masked sums vs means)."""
    _, _, _, theta = setting
    loop, batched = train(setting, "loop", [0, 1, 2, 3, 4]), train(setting, "vmap", [0, 1, 2, 3, 4])
    assert (loop - theta).abs().max() > 0.01  # it trained
    torch.testing.assert_close(batched, loop, rtol=0, atol=1e-4)
