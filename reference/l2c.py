"""L2C: learning whom to collaborate with, for decentralized learning of personalized models.

Reference implementation of non-meta L2C from Shuangtong Li, Tianyi Zhou, Xinmei Tian and Dacheng Tao,
"Learning to Collaborate in Decentralized Learning of Personalized Models", CVPR 2022.

Every node i keeps its own model θ_i and a row α_i of learnable mixing logits. In round t:

1. local SGD for S epochs from θ_i^t gives θ_i^{t+½}; the change is Δθ_i = θ_i^t − θ_i^{t+½};
2. mixing weights w_ij = softmax over j ∈ N(i) ∪ {i} of α_ij;
3. aggregation θ_i^{t+1}(α_i) = θ_i^t − Σ_j w_ij Δθ_j;
4. α_i takes an Adam step (lr β, weight decay 0.01) on node i's validation loss at θ_i^{t+1}(α_i), the
   gradient flowing through the aggregation (`torch.func.functional_call` runs the network on the
   aggregated tensors, so nothing is copied into a module and the graph to α stays intact);
5. θ_i^{t+1} is recomputed with the *updated* α, as the paper keeps the aggregate made with the new
   weights; this runs under `torch.no_grad` since nothing differentiates it;
6. at round T_0 each node drops the K_0 neighbours it weights least (never itself).

The nodes are split over the processes torchrun starts (`reference.comm`; one process is the P = 1 case of
the same code): each process trains its own nodes, sends their changes Δθ to the processes whose nodes have
them as neighbours and receives the ones its nodes need, so after pruning only the remaining neighbours'
changes travel. Parameters are flat vectors, one row per node. α is one (n, n) ``nn.Parameter`` on every
process; a process trains the rows of its own nodes (the others get no gradient and Adam leaves them at
zero), and each round the summed validation losses of its nodes take ``alpha_steps`` Adam steps (one by
default) through ``loss.backward()``: node i's loss depends only on row i and Adam is elementwise, so this
equals one Adam step per node on its own loss. Every node draws its batches from its own generator, so the
result does not depend on the number of processes (bitwise on the CPU with the same thread count).

Baselines use the same loop with a fixed mixing matrix: ``local`` (W = I), ``uniform`` (equal weights over
N(i) ∪ {i}, D-PSGD-like) and ``oracle`` (equal weights over the node's own cluster); a node receives only
the changes its fixed weights use.

Run ``python -m reference.l2c --help``; the defaults are tuned on the synthetic clustered data. Several
processes: ``torchrun --nproc_per_node 2 -m reference.l2c ...``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call
from tqdm import tqdm

from . import comm
from . import data as data_mod
from . import local_step
from .models import model_for

log = logging.getLogger(__name__)

ALGOS = ("l2c", "local", "uniform", "oracle")
LOCAL_STEPS = ("auto", *local_step.PATHS)
EXIT_OK, EXIT_ERROR = 0, 2

Params = dict[str, torch.Tensor]


class L2CConfigError(ValueError):
    """The configuration cannot run (unknown algorithm, oracle without clusters, ...); one-line message."""


@dataclass
class L2CConfig:
    """Settings of one run; defaults are the synthetic setting of ``benchmarks/l2c_quality.py``."""

    nodes: int = 12  # number of nodes; the graph starts fully connected
    rounds: int = 30  # communication rounds T
    local_epochs: int = 2  # S: epochs of local SGD per round
    lr: float = 0.05  # local SGD learning rate
    batch_size: int = 16  # local SGD batch size
    beta: float = 0.1  # Adam learning rate for α
    alpha_weight_decay: float = 0.01  # Adam weight decay for α
    alpha_steps: int = 1  # Adam steps on α per round (each on the full validation set)
    t0: int = 5  # T_0: the round (0-based) after which edges are pruned; >= rounds never prunes
    k0: int = 5  # K_0: neighbours each node drops at T_0
    algo: str = "l2c"  # one of ALGOS
    dataset: str = "synthetic"  # one of reference.data.DATASETS
    clusters: int = 2  # synthetic, and the permuted partition: number of label-conflicting clusters
    data_root: str = "data"  # cifar10 only: folder holding cifar-10-batches-py
    download: bool = False  # cifar10 only: download when missing
    partition: str = "pathological"  # digits and cifar10: one of reference.data.PARTITIONS
    dirichlet_alpha: float = 0.5  # the dirichlet partition only
    seed: int = 0  # seeds data, initial weights and every node's batch order
    device: str | None = None  # None: "cuda" when available, else "cpu"
    local_step: str = "auto"  # one of LOCAL_STEPS; auto: vmap on CUDA, loop on the CPU
    vmap_chunk: int = 8  # nodes per vmap call
    backend: str = "auto"  # torch.distributed backend under torchrun: one of reference.comm.BACKENDS
    progress: bool = False  # show a tqdm bar over rounds

    def resolved_device(self, group: comm.Group | None = None) -> torch.device:
        """The configured device; under NCCL, CUDA means this process's GPU."""
        device = torch.device(self.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if device.type == "cuda" and device.index is None and group is not None and group.device.type == "cuda":
            return group.device
        return device

    def resolved_local_step(self, device: torch.device) -> str:
        """The local-SGD path that runs: ``auto`` is vmap on CUDA and the loop on the CPU (see the README)."""
        if self.local_step == "auto":
            return "vmap" if device.type == "cuda" else "loop"
        return self.local_step


@dataclass
class Traffic:
    """Change vectors received in one round: by all nodes if each were a machine, and between this run's processes."""

    node_bytes: int
    process_bytes: int


@dataclass
class L2CResult:
    """What a run learned and how well it did; tensors are on the CPU and the same on every process."""

    config: L2CConfig
    mixing: torch.Tensor  # (n, n) final mixing matrix W, rows sum to 1
    alpha: torch.Tensor | None  # (n, n) learned logits (None for the baselines)
    accuracies: torch.Tensor  # (rounds, n) test accuracy of every node after every round
    same_cluster_share: list[float]  # per round: mean share of neighbour weight on same-cluster nodes
    alpha_grad_norms: torch.Tensor  # (rounds, n) norm of each node's α-gradient row (zeros for baselines)
    removed_edges: list[tuple[int, int]]  # (i, j): node i dropped neighbour j at T_0
    params: Params  # final parameters, each (n, *shape)
    adjacency: torch.Tensor  # (n, n) bool: the final N(i) ∪ {i} of every node
    clusters: tuple[int, ...] | None
    seconds_per_round: float  # mean of round_seconds
    round_seconds: list[float] = field(default_factory=list)  # wall time of each round (rank 0's under torchrun)
    round_cpu_seconds: list[float] = field(default_factory=list)  # CPU time of this process in each round
    processes: int = 1
    backend: str | None = None  # torch.distributed backend (None for one process)
    local_step: str = "loop"  # the local-SGD path that ran
    traffic: list[Traffic] = field(default_factory=list)  # per round

    @property
    def mean_accuracy(self) -> float:
        """Mean test accuracy over nodes after the last round."""
        return self.accuracies[-1].mean().item()

    @property
    def removed_cross_cluster_share(self) -> float | None:
        """Fraction of removed edges that joined different clusters (None without clusters or removals)."""
        if self.clusters is None or not self.removed_edges:
            return None
        cross = sum(self.clusters[i] != self.clusters[j] for i, j in self.removed_edges)
        return cross / len(self.removed_edges)

    def bytes_per_round(self) -> dict[str, dict[str, int]]:
        """Bytes of Δθ received in the first and the last round (before and after pruning at T_0)."""
        first, last = self.traffic[0], self.traffic[-1]
        return {
            "one_node_per_machine": {"first_round": first.node_bytes, "last_round": last.node_bytes},
            "between_processes": {"first_round": first.process_bytes, "last_round": last.process_bytes},
        }

    def summary(self) -> dict:
        """A JSON-ready digest of the run."""

        def finite(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "algo": self.config.algo,
            "dataset": self.config.dataset,
            "config": dataclasses.asdict(self.config),
            "processes": self.processes,
            "backend": self.backend,
            "local_step": self.local_step,
            "final_mean_accuracy": self.mean_accuracy,
            "final_accuracies": self.accuracies[-1].tolist(),
            "mean_accuracy_per_round": self.accuracies.mean(dim=1).tolist(),
            "same_cluster_share_per_round": [finite(s) for s in self.same_cluster_share],
            "alpha_grad_norms": self.alpha_grad_norms.tolist(),
            "removed_edges": [list(e) for e in self.removed_edges],
            "removed_cross_cluster_share": self.removed_cross_cluster_share,
            "bytes_per_round": self.bytes_per_round(),
            "seconds_per_round": self.seconds_per_round,
            "round_seconds": self.round_seconds,
            "round_cpu_seconds": self.round_cpu_seconds,
            "clusters": list(self.clusters) if self.clusters is not None else None,
            "mixing_matrix": self.mixing.tolist(),
        }


def mixing_weights(alpha_i: torch.Tensor, neighbours: torch.Tensor) -> torch.Tensor:
    """w_ij = exp(α_ij) / Σ_{l ∈ N(i) ∪ {i}} exp(α_il); zero outside ``neighbours`` (a bool mask incl. i)."""
    return torch.softmax(alpha_i.masked_fill(~neighbours, float("-inf")), dim=-1)


def combine(theta_i: torch.Tensor, deltas: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """θ_i − Σ_j w_j Δθ_j on flat vectors: ``deltas`` has one row per entry of ``weights``."""
    return theta_i - weights @ deltas


def aggregate(
    theta_i: torch.Tensor, deltas: torch.Tensor, alpha_i: torch.Tensor, neighbours: torch.Tensor
) -> torch.Tensor:
    """Node i's aggregate θ_i^{t+1}(α_i), differentiable in ``alpha_i``.

    ``neighbours`` is node i's bool mask over all nodes (incl. i); ``deltas`` holds the changes of exactly
    those nodes, in node order.
    """
    return combine(theta_i, deltas, mixing_weights(alpha_i, neighbours)[neighbours])


def validation_loss(
    model: nn.Module, params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Negative log-likelihood of ``model`` run with ``params`` in place of its own weights."""
    return F.nll_loss(functional_call(model, dict(params), (x,)), y)


def fixed_mixing(algo: str, adjacency: torch.Tensor, clusters: Sequence[int] | None) -> torch.Tensor:
    """The baselines' mixing matrix: identity, uniform over N(i) ∪ {i}, or uniform over the own cluster."""
    n = adjacency.shape[0]
    if algo == "local":
        mask = torch.eye(n, dtype=torch.bool, device=adjacency.device)
    elif algo == "uniform":
        mask = adjacency
    elif algo == "oracle":
        c = torch.as_tensor(clusters, device=adjacency.device)
        mask = adjacency & (c[:, None] == c[None, :])
    else:
        raise L2CConfigError(f"no fixed mixing for algorithm {algo!r}")
    mask = mask.float()
    return mask / mask.sum(dim=1, keepdim=True)


def same_cluster_share(mixing: torch.Tensor, clusters: Sequence[int] | None) -> float:
    """Mean over nodes of the neighbour weight (self excluded) that lands on same-cluster nodes.

    NaN when clusters are unknown or no node puts weight on a neighbour (``local``).
    """
    if clusters is None:
        return float("nan")
    c = torch.as_tensor(clusters, device=mixing.device)
    off = mixing * (1 - torch.eye(len(c), device=mixing.device))
    total = off.sum(dim=1)
    same = (off * (c[:, None] == c[None, :])).sum(dim=1)
    has = total > 0
    return (same[has] / total[has]).mean().item() if has.any() else float("nan")


def prune(adjacency: torch.Tensor, mixing: torch.Tensor, k0: int) -> list[tuple[int, int]]:
    """Drop, in place, each node's ``k0`` least-weighted neighbours (never itself); returns the removed edges."""
    removed = []
    n = adjacency.shape[0]
    for i in range(n):
        candidates = adjacency[i].clone()
        candidates[i] = False
        k = min(k0, int(candidates.sum()))
        scores = mixing[i].masked_fill(~candidates, float("inf"))
        for j in torch.argsort(scores, stable=True)[:k].tolist():
            adjacency[i, j] = False
            removed.append((i, j))
    return removed


def accuracy(model: nn.Module, params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of correct predictions, as a 0-dim tensor."""
    with torch.no_grad():
        return (functional_call(model, dict(params), (x,)).argmax(dim=1) == y).float().mean()


def _check_algo(config: L2CConfig) -> None:
    if config.algo not in ALGOS:
        raise L2CConfigError(f"unknown algorithm {config.algo!r}; valid names: {', '.join(ALGOS)}")
    if config.local_step not in LOCAL_STEPS:
        raise L2CConfigError(f"unknown local step {config.local_step!r}; valid names: {', '.join(LOCAL_STEPS)}")


def _check_data(config: L2CConfig, data: data_mod.FederatedData, group: comm.Group) -> None:
    if config.algo == "oracle" and data.clusters is None:
        raise L2CConfigError(
            f"--algo oracle needs known clusters, and {data.name} data "
            f"{'with this partition ' if data.name != 'synthetic' else ''}has none; "
            "use --dataset synthetic or --partition pathological"
        )
    if data.num_nodes != config.nodes:
        raise L2CConfigError(f"the data has {data.num_nodes} nodes but the config asks for {config.nodes}")
    if config.nodes < group.world:
        raise L2CConfigError(f"{config.nodes} nodes cannot be split over {group.world} processes")


def load_data(config: L2CConfig) -> data_mod.FederatedData:
    """The dataset the config names (raises `reference.data.DataError` with a one-line message)."""
    return data_mod.load(
        config.dataset,
        config.nodes,
        seed=config.seed,
        clusters=config.clusters,
        data_root=config.data_root,
        download=config.download,
        partition=config.partition,
        dirichlet_alpha=config.dirichlet_alpha,
    )


class _Neighbourhoods:
    """For each node a process holds: which rows of the exchanged changes its aggregate uses."""

    def __init__(self, needs: torch.Tensor, plan: comm.Plan, own: range) -> None:
        position = {j: pos for pos, j in enumerate(plan.held)}
        self.masks = [needs[i] for i in own]
        self.rows: list[torch.Tensor | None] = []
        for mask in self.masks:
            nodes = torch.nonzero(mask.cpu()).flatten().tolist()
            whole = nodes == list(plan.held)
            self.rows.append(None if whole else torch.tensor([position[j] for j in nodes], device=needs.device))

    def deltas(self, held: torch.Tensor, k: int) -> torch.Tensor:
        """The changes node ``k`` (position among this process's nodes) aggregates, in node order."""
        rows = self.rows[k]
        return held if rows is None else held.index_select(0, rows)


def run_l2c(
    config: L2CConfig, data: data_mod.FederatedData | None = None, group: comm.Group | None = None
) -> L2CResult:
    """Train every node with ``config.algo`` for ``config.rounds`` rounds and return what it learned.

    Under torchrun every process calls this with the same config (``group`` defaults to the process group
    when one is set up) and trains its share of the nodes; every process returns the whole result.
    """
    _check_algo(config)
    group = group or comm.current_group()
    data = data if data is not None else load_data(config)
    _check_data(config, data, group)
    device = config.resolved_device(group)
    n = config.nodes
    own = group.owned(n)
    nodes = [data.nodes[i].to(device) for i in own]
    path = config.resolved_local_step(device)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = model_for(data.input_shape, data.num_classes).to(device)
    layout = local_step.Layout(model)
    theta = layout.flatten(model).repeat(len(own), 1)
    generators = [local_step.node_generator(config.seed, i) for i in own]
    steps = local_step.steps_per_epoch([len(node.train_y) for node in data.nodes], config.batch_size)
    adjacency = torch.ones(n, n, dtype=torch.bool, device=device)

    learn = config.algo == "l2c"
    alpha = nn.Parameter(torch.zeros(n, n, device=device)) if learn else None
    alpha_optimizer = (
        torch.optim.Adam([alpha], lr=config.beta, weight_decay=config.alpha_weight_decay) if learn else None
    )
    fixed = None if learn else fixed_mixing(config.algo, adjacency, data.clusters)
    needs = adjacency if learn else fixed > 0
    plan = comm.plan(group, needs)
    hood = _Neighbourhoods(needs, plan, own)
    row_bytes = layout.size * theta.element_size()

    accuracies = torch.zeros(config.rounds, n)
    grad_norms = torch.zeros(config.rounds, n)
    shares: list[float] = []
    traffic: list[Traffic] = []
    removed: list[tuple[int, int]] = []
    round_seconds: list[float] = []
    round_cpu_seconds: list[float] = []

    with _deterministic_cudnn():
        for t in tqdm(range(config.rounds), desc=config.algo, disable=not config.progress, leave=False):
            started, started_cpu = time.perf_counter(), time.process_time()
            if path == "vmap":
                half = local_step.vmap_chunks(model, layout, theta, nodes, generators, config.local_epochs,
                                              config.lr, config.batch_size, steps, config.vmap_chunk)
            else:
                half = local_step.loop(model, layout, theta, nodes, generators, config.local_epochs,
                                       config.lr, config.batch_size)  # fmt: skip
            held = comm.exchange(group, plan, theta - half)
            traffic.append(Traffic(plan.node_rows * row_bytes, plan.process_rows * row_bytes))

            own_norms = torch.zeros(len(own), device=device)
            if learn:
                for _ in range(config.alpha_steps):
                    alpha_optimizer.zero_grad()
                    losses = [
                        validation_loss(
                            model,
                            layout.unflatten(aggregate(theta[k], hood.deltas(held, k), alpha[i], adjacency[i])),
                            node.val_x,
                            node.val_y,
                        )
                        for k, (i, node) in enumerate(zip(own, nodes))
                    ]
                    torch.stack(losses).sum().backward()
                    alpha_optimizer.step()
                own_norms = alpha.grad[own.start : own.stop].norm(dim=1)

            with torch.no_grad():
                rows = [mixing_weights(alpha[i], adjacency[i]) if learn else fixed[i] for i in own]
                theta = torch.stack(
                    [combine(theta[k], hood.deltas(held, k), rows[k][hood.masks[k]]) for k in range(len(own))]
                )
                own_accuracy = torch.stack(
                    [accuracy(model, layout.unflatten(theta[k]), node.test_x, node.test_y) for k, node in enumerate(nodes)]
                )
                stats = group.gather_rows(torch.cat([own_accuracy[:, None], own_norms[:, None], torch.stack(rows)], 1), n)
            accuracies[t], grad_norms[t], mixing = stats[:, 0].cpu(), stats[:, 1].cpu(), stats[:, 2:]
            if learn and t == config.t0:
                removed = prune(adjacency, mixing, config.k0)  # every process prunes every node alike
                plan = comm.plan(group, adjacency)
                hood = _Neighbourhoods(adjacency, plan, own)

            round_seconds.append(time.perf_counter() - started)
            round_cpu_seconds.append(time.process_time() - started_cpu)
            shares.append(same_cluster_share(mixing, data.clusters))
            line = f"round {t + 1}/{config.rounds} [{config.algo}]: mean test accuracy {accuracies[t].mean():.1%}"
            if data.clusters is not None and not math.isnan(shares[-1]):
                line += f", same-cluster neighbour weight {shares[-1]:.2f}"
            log.info(line)

    learned_alpha = None
    if learn:
        with torch.no_grad():
            own_alpha = alpha[own.start : own.stop]
            learned_alpha = group.gather_rows(own_alpha.detach(), n).cpu()
            mixing = torch.stack([mixing_weights(learned_alpha[i], adjacency[i].cpu()) for i in range(n)])
    thetas = group.gather_rows(theta, n).cpu()
    return L2CResult(
        config=config,
        mixing=mixing.cpu(),
        alpha=learned_alpha,
        accuracies=accuracies,
        same_cluster_share=shares,
        alpha_grad_norms=grad_norms,
        removed_edges=removed,
        params=layout.stacked(thetas),
        adjacency=adjacency.cpu(),
        clusters=data.clusters,
        seconds_per_round=sum(round_seconds) / max(1, len(round_seconds)),
        round_seconds=round_seconds,
        round_cpu_seconds=round_cpu_seconds,
        processes=group.world,
        backend=group.backend,
        local_step=path,
        traffic=traffic,
    )


class _deterministic_cudnn:
    """Select deterministic cuDNN kernels for the run and restore the previous settings afterwards."""

    def __enter__(self) -> None:
        self._saved = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False

    def __exit__(self, *exc: object) -> None:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = self._saved


def save(result: L2CResult, out: str | Path) -> tuple[Path, Path]:
    """Write ``summary.json`` and ``mixing.png`` (heatmap of W, nodes grouped by cluster) into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary_path, png_path = out / "summary.json", out / "mixing.png"
    summary_path.write_text(json.dumps(result.summary(), indent=2) + "\n")

    n = result.mixing.shape[0]
    order = sorted(range(n), key=lambda i: (result.clusters[i], i)) if result.clusters else list(range(n))
    shown = result.mixing[order][:, order]
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    image = ax.imshow(shown.numpy(), cmap="viridis", vmin=0)
    fig.colorbar(image, ax=ax, label="w_ij")
    if result.clusters:
        for k in range(1, n):
            if result.clusters[order[k]] != result.clusters[order[k - 1]]:
                ax.axhline(k - 0.5, color="white", lw=1)
                ax.axvline(k - 0.5, color="white", lw=1)
    ticks = range(n) if n <= 20 else range(0, n, max(1, n // 10))
    ax.set_xticks(list(ticks), [str(order[k]) for k in ticks])
    ax.set_yticks(list(ticks), [str(order[k]) for k in ticks])
    ax.set_xlabel("neighbour j")
    ax.set_ylabel("node i")
    ax.set_title(f"{result.config.algo} mixing weights after {result.config.rounds} rounds")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return summary_path, png_path


def parse_args(argv: Sequence[str] | None) -> tuple[L2CConfig, Path]:
    """The command line as a config and an output folder."""
    d = L2CConfig()
    p = argparse.ArgumentParser(prog="python -m reference.l2c", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=d.nodes, help="number of nodes (default %(default)s)")
    p.add_argument("--rounds", type=int, default=d.rounds, help="communication rounds T (default %(default)s)")
    p.add_argument("--local-epochs", type=int, default=d.local_epochs, help="S (default %(default)s)")
    p.add_argument("--lr", type=float, default=d.lr, help="local SGD learning rate (default %(default)s)")
    p.add_argument("--beta", type=float, default=d.beta, help="Adam learning rate for alpha (default %(default)s)")
    p.add_argument("--t0", type=int, default=d.t0, help="0-based pruning round T_0 (default %(default)s)")
    p.add_argument("--k0", type=int, default=d.k0, help="neighbours each node drops at T_0 (default %(default)s)")
    p.add_argument("--algo", default=d.algo, help=f"one of {', '.join(ALGOS)} (default %(default)s)")
    p.add_argument("--dataset", default=d.dataset, help=f"one of {', '.join(data_mod.DATASETS)} (default %(default)s)")
    p.add_argument("--clusters", type=int, default=d.clusters, help="clusters of synthetic data and of --partition permuted (default %(default)s)")
    p.add_argument("--data-root", default=d.data_root, help="folder holding cifar-10-batches-py (default %(default)s)")
    p.add_argument("--download", action="store_true", help="download CIFAR-10 into --data-root when missing")
    p.add_argument("--partition", default=d.partition, help=f"digits and cifar10 split: {', '.join(data_mod.PARTITIONS)} (default %(default)s)")
    p.add_argument("--dirichlet-alpha", type=float, default=d.dirichlet_alpha, help="(default %(default)s)")
    p.add_argument("--seed", type=int, default=d.seed, help="(default %(default)s)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--local-step", default=d.local_step, help=f"local SGD path: {', '.join(LOCAL_STEPS)} (default %(default)s: vmap on CUDA, else loop)")
    p.add_argument("--vmap-chunk", type=int, default=d.vmap_chunk, help="nodes per vmap call (default %(default)s)")
    p.add_argument("--backend", default=d.backend, help=f"under torchrun: {', '.join(comm.BACKENDS)} (default %(default)s: nccl on GPUs, else gloo)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice)")
    p.add_argument("--out", default="runs/l2c", help="folder for summary.json and mixing.png (default %(default)s)")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    config = L2CConfig(
        nodes=a.nodes, rounds=a.rounds, local_epochs=a.local_epochs, lr=a.lr, beta=a.beta, t0=a.t0, k0=a.k0,
        algo=a.algo, dataset=a.dataset, clusters=a.clusters, data_root=a.data_root, download=a.download,
        partition=a.partition, dirichlet_alpha=a.dirichlet_alpha, seed=a.seed, device=a.device,
        local_step=a.local_step, vmap_chunk=a.vmap_chunk, backend=a.backend, progress=True,
    )  # fmt: skip
    return config, Path(a.out)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry: run, log one line per round, write the summary and heatmap; exit 2 on bad input.

    Under torchrun every process runs this; only rank 0 logs, prints and writes files.
    """
    config, out = parse_args(argv)
    from tqdm.contrib.logging import logging_redirect_tqdm

    try:
        with comm.process_group(config.backend) as group:
            logging.basicConfig(level=logging.INFO if group.rank == 0 else logging.WARNING, format="%(message)s")
            config.progress = config.progress and group.rank == 0
            with logging_redirect_tqdm():
                result = run_l2c(config, group=group)
    except (data_mod.DataError, L2CConfigError, comm.CommError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if group.rank != 0:
        return EXIT_OK
    summary_path, png_path = save(result, out)
    share = result.removed_cross_cluster_share
    traffic = result.bytes_per_round()["one_node_per_machine"]
    print(
        f"final mean test accuracy {result.mean_accuracy:.1%}"
        + (f", removed edges cross-cluster {share:.0%}" if share is not None else "")
        + f"; {result.processes} process{'es' if result.processes > 1 else ''}"
        + (f" ({result.backend})" if result.backend else "")
        + f", local step {result.local_step}, {result.seconds_per_round:.2f} s/round"
        + f"; Δθ per round {_size(traffic['first_round'])} before pruning, {_size(traffic['last_round'])} after"
        + f"; wrote {summary_path} and {png_path}"
    )
    return EXIT_OK


def _size(count: int) -> str:
    """Bytes in a short human form (kB, MB, GB: powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


if __name__ == "__main__":
    sys.exit(main())
