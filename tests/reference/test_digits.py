"""The embedded digits dataset and the three ways real data is split over nodes."""

from __future__ import annotations

import sys

import pytest
import torch

from reference import data as data_mod


def test_digits_pathological_split_gives_two_classes_per_node_and_clusters_of_equal_pairs():
    d = data_mod.digits(10, seed=0)
    assert d.name == "digits" and d.num_classes == 10 and d.input_shape == (1, 8, 8)
    assert d.clusters == (0, 1, 2, 3, 4, 0, 1, 2, 3, 4)
    for node in d.nodes:
        classes = set(node.train_y.tolist())
        assert len(classes) == 2 and set(node.test_y.tolist()) == classes and set(node.val_y.tolist()) <= classes
    sizes = sum(len(n.train_y) + len(n.val_y) + len(n.test_y) for n in d.nodes)
    assert sizes == 1797
    assert torch.equal(data_mod.digits(10, seed=0).nodes[7].train_x, d.nodes[7].train_x)


def test_permuted_split_clusters_disagree_on_every_label():
    d = data_mod.digits(6, partition="permuted", clusters=3, seed=0)
    assert d.clusters == (0, 0, 1, 1, 2, 2)
    bunch = pytest.importorskip("sklearn.datasets").load_digits()
    pixels = {tuple(row): label for row, label in zip(bunch.data.astype(int).tolist(), bunch.target.tolist())}
    raw_pixels = torch.as_tensor(bunch.data, dtype=torch.float32)
    scale, mean = raw_pixels.std().item(), raw_pixels.mean().item()

    def true_labels(node):
        raw = (node.train_x.flatten(1).double() * scale + mean).round().int().tolist()
        return torch.tensor([pixels[tuple(r)] for r in raw])

    for node, cluster in zip(d.nodes, d.clusters):
        expected = data_mod.cluster_label_map(cluster, 10, 3)[true_labels(node)]
        assert torch.equal(node.train_y, expected)
    assert not torch.equal(data_mod.cluster_label_map(0, 10, 3), data_mod.cluster_label_map(1, 10, 3))
    sizes = [len(n.train_y) for n in d.nodes]
    assert max(sizes) - min(sizes) <= 1  # dealt evenly


def test_dirichlet_split_has_no_clusters():
    assert data_mod.digits(4, partition="dirichlet", seed=0).clusters is None


def test_digits_without_scikit_learn_is_one_line_naming_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(data_mod.DatasetNotFoundError, match="^the digits dataset needs scikit-learn: pip install"):
        data_mod.load("digits", 4)


def test_unknown_partition_names_the_valid_ones():
    with pytest.raises(data_mod.UnknownDatasetError, match="valid names: pathological, dirichlet, permuted"):
        data_mod.digits(4, partition="shards")
