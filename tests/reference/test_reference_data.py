"""Per-node splits: the clustered synthetic data, the CIFAR-10 partitions (on fake labels) and the data errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reference import data as data_mod
from reference.data import (
    DatasetNotFoundError,
    UnknownDatasetError,
    cluster_label_map,
    dirichlet_partition,
    pathological_partition,
    split_like,
    synthetic,
)


def fake_labels(per_class: int = 60, classes: int = 10) -> np.ndarray:
    return np.random.default_rng(7).permutation(np.repeat(np.arange(classes), per_class))


def assert_disjoint_cover(parts, n_total):
    __tracebackhide__ = True
    joined = np.concatenate(parts)
    assert len(joined) == len(np.unique(joined)) == n_total


def test_synthetic_shapes_clusters_and_determinism():
    d = synthetic(6, clusters=3, train=20, val=10, test=30, seed=1)
    assert d.name == "synthetic" and d.num_nodes == 6 and d.num_classes == 10
    assert d.clusters == (0, 0, 1, 1, 2, 2)
    node = d.nodes[0]
    assert node.train_x.shape == (20, 3, 32, 32) and node.train_x.dtype == torch.float32
    assert node.val_y.shape == (10,) and node.test_y.shape == (30,)
    again = synthetic(6, clusters=3, train=20, val=10, test=30, seed=1)
    assert torch.equal(again.nodes[5].train_x, d.nodes[5].train_x)
    assert not torch.equal(synthetic(6, clusters=3, train=20, val=10, test=30, seed=2).nodes[5].train_x, node.train_x)


def test_clusters_disagree_on_every_label():
    maps = [cluster_label_map(c, 10, 2) for c in range(2)]
    assert sorted(maps[1].tolist()) == list(range(10))
    assert (maps[0] != maps[1]).all()


def test_same_image_class_gets_the_cluster_label():
    """Nodes of different clusters share the class prototypes, so their labels conflict for similar images."""
    d = synthetic(2, clusters=2, train=200, val=1, test=1, noise=0.0, seed=0)
    a, b = d.nodes
    # noise-free images equal their class prototype; match images across the two nodes
    for x, y in zip(a.train_x[:20], a.train_y[:20]):
        match = (b.train_x == x).flatten(1).all(dim=1)
        assert match.any()
        assert (b.train_y[match] == (y + 5) % 10).all()


def test_load_rejects_unknown_names_with_the_valid_ones():
    with pytest.raises(UnknownDatasetError, match=r"^unknown dataset 'mnist'; valid names: synthetic, digits, cifar10$"):
        data_mod.load("mnist", 4)
    with pytest.raises(UnknownDatasetError, match="valid names: pathological, dirichlet, permuted"):
        data_mod.cifar10(4, partition="shards")


def test_pathological_partition_gives_two_classes_per_node():
    labels = fake_labels()
    parts = pathological_partition(labels, 10, classes_per_node=2, seed=0)
    assert_disjoint_cover(parts, len(labels))
    assert all(len(np.unique(labels[p])) == 2 for p in parts)
    assert all(len(p) == 60 for p in parts)  # each class is split between its two holders
    same = [np.array_equal(np.unique(labels[parts[i]]), np.unique(labels[parts[i + 5]])) for i in range(5)]
    assert all(same)


def test_pathological_partition_with_more_classes_than_exist():
    with pytest.raises(data_mod.DataError, match="classes_per_node=11"):
        pathological_partition(fake_labels(), 4, classes_per_node=11)


def test_dirichlet_partition_covers_everything_and_skews_with_small_alpha():
    labels = fake_labels(per_class=100)
    parts = dirichlet_partition(labels, 8, alpha=0.1, seed=3)
    assert_disjoint_cover(parts, len(labels))
    assert min(len(p) for p in parts) >= 10
    assert [p.tolist() for p in parts] == [p.tolist() for p in dirichlet_partition(labels, 8, alpha=0.1, seed=3)]

    def top_class_share(ps):
        return np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in ps])

    assert top_class_share(parts) > top_class_share(dirichlet_partition(labels, 8, alpha=100.0, seed=3)) + 0.2


def test_dirichlet_partition_gives_up_with_a_clear_message():
    with pytest.raises(data_mod.DataError, match="raise alpha or use fewer nodes"):
        dirichlet_partition(fake_labels(per_class=5), 20, alpha=0.5, min_size=10, tries=3)


def test_split_like_follows_each_nodes_class_mix():
    labels, test_labels = fake_labels(per_class=60), fake_labels(per_class=20)
    parts = pathological_partition(labels, 10, seed=0)
    test_parts = split_like(parts, labels, test_labels, seed=0)
    assert_disjoint_cover(test_parts, len(test_labels))
    for p, q in zip(parts, test_parts):
        assert set(np.unique(test_labels[q])) == set(np.unique(labels[p]))
        assert len(q) == 20


@pytest.mark.needs_torchvision
def test_missing_cifar_folder_is_one_line_naming_the_folder_and_the_fix(tmp_path):
    root = tmp_path / "nowhere"
    with pytest.raises(DatasetNotFoundError) as info:
        data_mod.load("cifar10", 4, data_root=root)
    message = str(info.value)
    assert "\n" not in message
    assert str(root / "cifar-10-batches-py") in message and "--download" in message and "--data-root" in message


@pytest.mark.needs_torchvision
def test_corrupt_cifar_folder_is_the_same_error(tmp_path):
    batches = tmp_path / "cifar-10-batches-py"
    batches.mkdir()
    for name in ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch"]:
        (batches / name).write_bytes(b"not a pickle")
    with pytest.raises(DatasetNotFoundError, match="not found or corrupt"):
        data_mod.cifar10(4, data_root=tmp_path)


def test_cifar10_assembles_nodes_from_the_files(monkeypatch):
    rng = np.random.default_rng(0)
    train_labels, test_labels = fake_labels(per_class=80), fake_labels(per_class=10)
    fake = {
        True: (rng.integers(0, 256, (len(train_labels), 32, 32, 3), dtype=np.uint8), train_labels),
        False: (rng.integers(0, 256, (len(test_labels), 32, 32, 3), dtype=np.uint8), test_labels),
    }
    monkeypatch.setattr(data_mod, "_read_cifar", lambda root, train, download: fake[train])
    d = data_mod.cifar10(10, seed=0)
    assert d.num_nodes == 10 and d.clusters == (0, 1, 2, 3, 4, 0, 1, 2, 3, 4)
    node = d.nodes[0]
    assert len(node.train_y) + len(node.val_y) == 80 and len(node.val_y) == 8
    assert node.train_x.shape[1:] == (3, 32, 32) and node.train_x.dtype == torch.float32
    assert set(node.test_y.tolist()) == set(node.train_y.tolist())
    assert data_mod.cifar10(10, partition="dirichlet", seed=0).clusters is None
