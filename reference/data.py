"""Per-node train/validation/test splits for decentralized learning experiments.

Three datasets:

* ``synthetic`` (default, no files): CIFAR-shaped 3x32x32 images drawn around fixed class prototypes.
  Nodes fall into clusters and every cluster relabels the classes differently, so the same image has a
  different label in each cluster: collaborating inside a cluster helps, across clusters it hurts. The
  cluster of each node is known, which lets tests check whom L2C learned to trust.
* ``digits``: the 1,797 8x8 handwritten digits that ship inside scikit-learn (no download; scikit-learn
  is an optional dependency).
* ``cifar10``: torchvision CIFAR-10 read from a folder.

The two real datasets are split across nodes the same three ways (`PARTITIONS`): ``pathological`` (each
node holds two classes, as in the L2C paper; nodes holding the same pair form a cluster), ``dirichlet``
(class proportions drawn per node; no clusters) or ``permuted`` (samples dealt evenly, nodes in
``clusters`` contiguous blocks that each relabel the classes, as the synthetic data does).

Everything is deterministic given the seed.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

DATASETS = ("synthetic", "digits", "cifar10")
PARTITIONS = ("pathological", "dirichlet", "permuted")

_CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
_CIFAR_STD = (0.2470, 0.2435, 0.2616)


class DataError(Exception):
    """Base class of the data errors; the message is one line meant for the user."""


class UnknownDatasetError(DataError):
    """The dataset (or partition) name is not one this module knows."""


class DatasetNotFoundError(DataError):
    """The dataset files are missing, corrupt or could not be downloaded."""


@dataclass(frozen=True)
class NodeData:
    """One node's samples: images (N, C, H, W) float32 and integer labels (N,) for each split."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    val_x: torch.Tensor
    val_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor

    def to(self, device: torch.device | str) -> NodeData:
        """The same splits on another device."""
        return NodeData(*(getattr(self, f).to(device) for f in self.__dataclass_fields__))


@dataclass(frozen=True)
class FederatedData:
    """The splits of every node, plus the cluster of each node when the construction defines one."""

    name: str
    nodes: tuple[NodeData, ...]
    num_classes: int
    clusters: tuple[int, ...] | None = None

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one image, (C, H, W)."""
        return tuple(self.nodes[0].train_x.shape[1:])


def load(
    name: str,
    num_nodes: int,
    *,
    seed: int = 0,
    clusters: int = 2,
    data_root: str | Path = "data",
    download: bool = False,
    partition: str = "pathological",
    dirichlet_alpha: float = 0.5,
) -> FederatedData:
    """Build the named dataset for ``num_nodes`` nodes; raises a `DataError` with a one-line message."""
    if name == "synthetic":
        return synthetic(num_nodes, clusters=clusters, seed=seed)
    if name == "digits":
        return digits(num_nodes, partition=partition, clusters=clusters, dirichlet_alpha=dirichlet_alpha, seed=seed)
    if name == "cifar10":
        return cifar10(
            num_nodes,
            data_root=data_root,
            download=download,
            partition=partition,
            clusters=clusters,
            dirichlet_alpha=dirichlet_alpha,
            seed=seed,
        )
    raise UnknownDatasetError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")


def cluster_label_map(cluster: int, num_classes: int, num_clusters: int) -> torch.Tensor:
    """Labels of cluster ``c``: class k is called (k + c * shift) mod num_classes, shift = classes / clusters.

    Distinct clusters therefore disagree on the label of every class (as long as clusters <= classes).
    """
    shift = max(1, num_classes // num_clusters)
    return (torch.arange(num_classes) + cluster * shift) % num_classes


def _check_clusters(clusters: int, num_nodes: int) -> None:
    if not 1 <= clusters <= num_nodes:
        raise DataError(f"clusters must be between 1 and the node count {num_nodes}, got {clusters}")


def block_clusters(num_nodes: int, clusters: int) -> tuple[int, ...]:
    """Node i is in cluster ``i * clusters // num_nodes``: contiguous blocks of (nearly) equal size."""
    return tuple(i * clusters // num_nodes for i in range(num_nodes))


def synthetic(
    num_nodes: int,
    *,
    clusters: int = 2,
    num_classes: int = 10,
    train: int = 64,
    val: int = 32,
    test: int = 100,
    noise: float = 5.5,
    seed: int = 0,
) -> FederatedData:
    """Clustered synthetic data: node i is in cluster ``i * clusters // num_nodes`` (contiguous blocks).

    Each class has a smooth random prototype (8x8 noise upsampled to 32x32, unit variance); a sample is its
    class prototype plus Gaussian pixel noise of std ``noise``. The image distribution is the same on every
    node; only the labels differ between clusters (see `cluster_label_map`). With few samples per node and
    strong noise a node alone learns slowly, pooling with its cluster helps, and pooling across clusters
    averages contradictory labels.
    """
    _check_clusters(clusters, num_nodes)
    gen = torch.Generator().manual_seed(seed)
    coarse = torch.randn(num_classes, 3, 8, 8, generator=gen)
    prototypes = F.interpolate(coarse, size=(32, 32), mode="bilinear", align_corners=False)
    prototypes = (prototypes - prototypes.mean()) / prototypes.std()
    cluster_of = block_clusters(num_nodes, clusters)

    def draw(count: int, label_map: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        classes = torch.arange(count) % num_classes
        classes = classes[torch.randperm(count, generator=gen)]
        images = prototypes[classes] + noise * torch.randn(count, 3, 32, 32, generator=gen)
        return images, label_map[classes]

    nodes = []
    for c in cluster_of:
        label_map = cluster_label_map(c, num_classes, clusters)
        splits = [draw(count, label_map) for count in (train, val, test)]
        nodes.append(NodeData(*(t for split in splits for t in split)))
    return FederatedData("synthetic", tuple(nodes), num_classes, cluster_of)


def pathological_partition(
    labels: np.ndarray, num_nodes: int, classes_per_node: int = 2, seed: int = 0
) -> list[np.ndarray]:
    """Give each node ``classes_per_node`` classes and split every class evenly among its holders.

    Classes are shuffled once; node i takes the next ``classes_per_node`` classes cyclically, so with
    10 classes and 2 per node, nodes i and i+5 hold the same pair. Returns each node's indices into
    ``labels``; a class held by nobody is dropped.
    """
    labels = np.asarray(labels)
    classes = np.unique(labels)
    if classes_per_node > len(classes):
        raise DataError(f"classes_per_node={classes_per_node} exceeds the {len(classes)} classes present")
    rng = np.random.default_rng(seed)
    order = rng.permutation(classes)
    held = [
        [order[(i * classes_per_node + m) % len(order)] for m in range(classes_per_node)] for i in range(num_nodes)
    ]
    parts: list[list[np.ndarray]] = [[] for _ in range(num_nodes)]
    for c in classes:
        holders = [i for i in range(num_nodes) if c in held[i]]
        if not holders:
            continue
        idx = rng.permutation(np.flatnonzero(labels == c))
        for node, chunk in zip(holders, np.array_split(idx, len(holders))):
            parts[node].append(chunk)
    return [np.sort(np.concatenate(p)) if p else np.empty(0, dtype=np.int64) for p in parts]


def dirichlet_partition(
    labels: np.ndarray, num_nodes: int, alpha: float = 0.5, seed: int = 0, min_size: int = 10, tries: int = 100
) -> list[np.ndarray]:
    """Split every class among the nodes with proportions drawn from Dirichlet(alpha, ..., alpha).

    Small ``alpha`` gives very skewed nodes. Draws are repeated until every node holds ``min_size``
    samples (at most ``tries`` times). Returns each node's indices into ``labels``.
    """
    if alpha <= 0:
        raise DataError(f"dirichlet alpha must be positive, got {alpha}")
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    for _ in range(tries):
        parts: list[list[np.ndarray]] = [[] for _ in range(num_nodes)]
        for c in np.unique(labels):
            idx = rng.permutation(np.flatnonzero(labels == c))
            shares = rng.dirichlet(np.full(num_nodes, alpha))
            cuts = (np.cumsum(shares)[:-1] * len(idx)).astype(int)
            for node, chunk in enumerate(np.split(idx, cuts)):
                parts[node].append(chunk)
        result = [np.sort(np.concatenate(p)) for p in parts]
        if min(len(r) for r in result) >= min_size:
            return result
    raise DataError(
        f"no Dirichlet(alpha={alpha}) split gave every one of {num_nodes} nodes {min_size} samples "
        f"in {tries} draws; raise alpha or use fewer nodes"
    )


def split_like(
    parts: list[np.ndarray], labels: np.ndarray, other_labels: np.ndarray, seed: int = 0
) -> list[np.ndarray]:
    """Split a second set (e.g. the test set) so each node gets each class in the share it holds in ``parts``.

    If node i holds a fraction s of class c's samples in ``labels``, it receives a fraction s of class c's
    samples in ``other_labels``, so a node's test distribution matches its training distribution.
    Classes no node holds are left out.
    """
    labels, other_labels = np.asarray(labels), np.asarray(other_labels)
    rng = np.random.default_rng(seed)
    out: list[list[np.ndarray]] = [[] for _ in parts]
    for c in np.unique(labels):
        counts = np.array([(labels[p] == c).sum() for p in parts], dtype=float)
        if counts.sum() == 0:
            continue
        idx = rng.permutation(np.flatnonzero(other_labels == c))
        cuts = (np.cumsum(counts / counts.sum())[:-1] * len(idx)).astype(int)
        for node, chunk in enumerate(np.split(idx, cuts)):
            out[node].append(chunk)
    return [np.sort(np.concatenate(o)) for o in out]


def _read_cifar(root: Path, train: bool, download: bool) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 images (N, 32, 32, 3) uint8 and labels, or a `DatasetNotFoundError` saying how to fix it."""
    from torchvision.datasets import CIFAR10

    try:
        ds = CIFAR10(str(root), train=train, download=download)
    except (RuntimeError, OSError, EOFError, ValueError, pickle.UnpicklingError) as exc:
        if download:
            reason = f"could not download CIFAR-10 into {root} ({type(exc).__name__}: {exc})"
            raise DatasetNotFoundError(f"{reason}; check the network or fetch it by hand") from None
        raise DatasetNotFoundError(
            f"CIFAR-10 not found or corrupt in {root.resolve()} (looked for "
            f"{(root / 'cifar-10-batches-py').resolve()}); pass --download to fetch it, "
            f"or --data-root DIR for the folder that holds cifar-10-batches-py"
        ) from None
    return ds.data, np.asarray(ds.targets)


def _to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 HWC images to normalized float32 CHW tensors."""
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float().div_(255)
    mean = torch.tensor(_CIFAR_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(_CIFAR_STD).view(1, 3, 1, 1)
    return (x - mean) / std


def cifar10(
    num_nodes: int,
    *,
    data_root: str | Path = "data",
    download: bool = False,
    partition: str = "pathological",
    clusters: int = 2,
    dirichlet_alpha: float = 0.5,
    seed: int = 0,
) -> FederatedData:
    """CIFAR-10 from ``data_root`` split across nodes by `split_nodes`."""
    _check_partition(partition)
    root = Path(data_root)
    train_images, train_labels = _read_cifar(root, True, download)
    test_images, test_labels = _read_cifar(root, False, download)
    return split_nodes(
        "cifar10",
        (_to_tensor(train_images), train_labels),
        (_to_tensor(test_images), test_labels),
        num_nodes,
        partition=partition,
        clusters=clusters,
        dirichlet_alpha=dirichlet_alpha,
        seed=seed,
    )


def digits(
    num_nodes: int,
    *,
    partition: str = "pathological",
    clusters: int = 2,
    dirichlet_alpha: float = 0.5,
    test_fraction: float = 0.3,
    seed: int = 0,
) -> FederatedData:
    """scikit-learn's handwritten digits (1x8x8, standardized), a seeded ``test_fraction`` held out for testing."""
    _check_partition(partition)
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise DatasetNotFoundError(
            "the digits dataset needs scikit-learn: pip install scikit-learn (the project's [reference] extra)"
        ) from None
    bunch = load_digits()
    images = torch.as_tensor(bunch.data, dtype=torch.float32).view(-1, 1, 8, 8)
    images = (images - images.mean()) / images.std()
    labels = np.asarray(bunch.target)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(test_fraction * len(labels)))
    test_idx, train_idx = np.sort(order[:n_test]), np.sort(order[n_test:])
    return split_nodes(
        "digits",
        (images[train_idx], labels[train_idx]),
        (images[test_idx], labels[test_idx]),
        num_nodes,
        partition=partition,
        clusters=clusters,
        dirichlet_alpha=dirichlet_alpha,
        seed=seed,
    )


def _check_partition(partition: str) -> None:
    if partition not in PARTITIONS:
        raise UnknownDatasetError(f"unknown partition {partition!r}; valid names: {', '.join(PARTITIONS)}")


def split_nodes(
    name: str,
    train: tuple[torch.Tensor, np.ndarray],
    test: tuple[torch.Tensor, np.ndarray],
    num_nodes: int,
    *,
    partition: str = "pathological",
    classes_per_node: int = 2,
    clusters: int = 2,
    dirichlet_alpha: float = 0.5,
    val_fraction: float = 0.1,
    seed: int = 0,
) -> FederatedData:
    """Deal a labelled train and test pool to nodes; each node keeps ``val_fraction`` of its train part for validation.

    ``pathological``: two classes per node (`pathological_partition`); nodes with the same classes form a
    cluster. ``dirichlet``: `dirichlet_partition`, no clusters. ``permuted``: samples dealt evenly, nodes in
    ``clusters`` contiguous blocks, and each block relabels the classes with `cluster_label_map`. In the first
    two a node's test set follows its training class mix (`split_like`).
    """
    _check_partition(partition)
    (train_x, train_labels), (test_x, test_labels) = train, test
    train_labels, test_labels = np.asarray(train_labels), np.asarray(test_labels)
    num_classes = int(max(train_labels.max(), test_labels.max())) + 1
    rng = np.random.default_rng(seed)
    label_maps: list[torch.Tensor | None] = [None] * num_nodes
    cluster_of: tuple[int, ...] | None
    if partition == "permuted":
        _check_clusters(clusters, num_nodes)
        parts = np.array_split(rng.permutation(len(train_labels)), num_nodes)
        test_parts = np.array_split(rng.permutation(len(test_labels)), num_nodes)
        cluster_of = block_clusters(num_nodes, clusters)
        label_maps = [cluster_label_map(c, num_classes, clusters) for c in cluster_of]
    else:
        if partition == "pathological":
            parts = pathological_partition(train_labels, num_nodes, classes_per_node, seed)
            class_sets = [tuple(np.unique(train_labels[p])) for p in parts]
            ids = {s: k for k, s in enumerate(dict.fromkeys(class_sets))}
            cluster_of = tuple(ids[s] for s in class_sets)
        else:
            parts = dirichlet_partition(train_labels, num_nodes, dirichlet_alpha, seed)
            cluster_of = None
        test_parts = split_like(parts, train_labels, test_labels, seed)
    nodes = []
    for part, test_part, label_map in zip(parts, test_parts, label_maps):
        part = rng.permutation(part)
        n_val = max(1, int(round(val_fraction * len(part))))
        val_idx, train_idx = part[:n_val], part[n_val:]
        relabel = (lambda y: y) if label_map is None else (lambda y, m=label_map: m[y])
        nodes.append(
            NodeData(
                train_x[train_idx],
                relabel(torch.from_numpy(train_labels[train_idx])),
                train_x[val_idx],
                relabel(torch.from_numpy(train_labels[val_idx])),
                test_x[test_part],
                relabel(torch.from_numpy(test_labels[test_part])),
            )
        )
    return FederatedData(name, tuple(nodes), num_classes, cluster_of)
