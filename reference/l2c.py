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

All nodes' parameters are stacked tensors, one leading row per node. Each round the validation losses of
all nodes are summed and α (one row per node, an `nn.Parameter`) takes ``alpha_steps`` Adam steps (one by
default) through ``loss.backward()``: node i's loss depends only on row i and Adam is elementwise, so this
equals one Adam step per node on its own loss. Local SGD uses the template `CNNCifar` as a working copy,
one node at a time. `torch.func.vmap` over nodes was measured and not used: no faster on the CPU; on an
H200 about 3x faster for the local step, but it needs equal-size node datasets (a Dirichlet split is not).

Baselines use the same loop with a fixed mixing matrix: ``local`` (W = I), ``uniform`` (equal weights over
N(i) ∪ {i}, D-PSGD-like) and ``oracle`` (equal weights over the node's own cluster).

Run ``python -m reference.l2c --help``; the defaults are tuned on the synthetic clustered data.
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
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call
from tqdm import tqdm

from reference import data as data_mod
from reference.models import CNNCifar

log = logging.getLogger(__name__)

ALGOS = ("l2c", "local", "uniform", "oracle")
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
    clusters: int = 2  # synthetic only: number of label-conflicting clusters
    data_root: str = "data"  # cifar10 only: folder holding cifar-10-batches-py
    download: bool = False  # cifar10 only: download when missing
    partition: str = "pathological"  # cifar10 only: "pathological" (2 classes per node) or "dirichlet"
    dirichlet_alpha: float = 0.5  # cifar10 with the dirichlet partition only
    seed: int = 0  # seeds data, initial weights and batch order
    device: str | None = None  # None: "cuda" when available, else "cpu"
    progress: bool = False  # show a tqdm bar over rounds

    def resolved_device(self) -> torch.device:
        return torch.device(self.device or ("cuda" if torch.cuda.is_available() else "cpu"))


@dataclass
class L2CResult:
    """What a run learned and how well it did; tensors are on the CPU."""

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
    seconds_per_round: float

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

    def summary(self) -> dict:
        """A JSON-ready digest of the run."""

        def finite(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "algo": self.config.algo,
            "dataset": self.config.dataset,
            "config": dataclasses.asdict(self.config),
            "final_mean_accuracy": self.mean_accuracy,
            "mean_accuracy_per_round": self.accuracies.mean(dim=1).tolist(),
            "same_cluster_share_per_round": [finite(s) for s in self.same_cluster_share],
            "removed_edges": [list(e) for e in self.removed_edges],
            "removed_cross_cluster_share": self.removed_cross_cluster_share,
            "seconds_per_round": self.seconds_per_round,
            "clusters": list(self.clusters) if self.clusters is not None else None,
            "mixing_matrix": self.mixing.tolist(),
        }


def mixing_weights(alpha_i: torch.Tensor, neighbours: torch.Tensor) -> torch.Tensor:
    """w_ij = exp(α_ij) / Σ_{l ∈ N(i) ∪ {i}} exp(α_il); zero outside ``neighbours`` (a bool mask incl. i)."""
    return torch.softmax(alpha_i.masked_fill(~neighbours, float("-inf")), dim=-1)


def combine(theta_i: Mapping[str, torch.Tensor], deltas: Mapping[str, torch.Tensor], weights_i: torch.Tensor) -> Params:
    """θ_i − Σ_j w_ij Δθ_j for every tensor; ``deltas`` holds one row per node."""
    return {name: theta_i[name] - torch.tensordot(weights_i, deltas[name], dims=1) for name in theta_i}


def aggregate(
    theta_i: Mapping[str, torch.Tensor],
    deltas: Mapping[str, torch.Tensor],
    alpha_i: torch.Tensor,
    neighbours: torch.Tensor,
) -> Params:
    """Node i's aggregate θ_i^{t+1}(α_i), differentiable in ``alpha_i``."""
    return combine(theta_i, deltas, mixing_weights(alpha_i, neighbours))


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


def stack_params(model: nn.Module, n: int) -> Params:
    """n copies of the model's weights, stacked along a new leading node dimension."""
    with torch.no_grad():
        return {name: p.unsqueeze(0).repeat(n, *([1] * p.dim())) for name, p in model.named_parameters()}


def local_sgd(
    model: nn.Module,
    theta: Params,
    node: int,
    x: torch.Tensor,
    y: torch.Tensor,
    config: L2CConfig,
    generator: torch.Generator,
    out: Params,
) -> None:
    """Run S epochs of SGD for one node, starting from row ``node`` of ``theta``; write the result into ``out``.

    The model is a working copy: its parameters are set to θ_i, trained with ordinary backward/step, and
    read back. The batch order comes from ``generator`` (on the CPU, so CPU and CUDA runs see the same order).
    """
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(theta[name][node])
    optimizer = torch.optim.SGD(params.values(), lr=config.lr)
    for _ in range(config.local_epochs):
        order = torch.randperm(len(y), generator=generator).to(x.device)
        for batch in order.split(config.batch_size):
            optimizer.zero_grad()
            F.nll_loss(model(x[batch]), y[batch]).backward()
            optimizer.step()
    with torch.no_grad():
        for name, p in params.items():
            out[name][node].copy_(p)


def accuracy(model: nn.Module, params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of correct predictions, as a 0-dim tensor."""
    with torch.no_grad():
        return (functional_call(model, dict(params), (x,)).argmax(dim=1) == y).float().mean()


def _check_algo(config: L2CConfig) -> None:
    if config.algo not in ALGOS:
        raise L2CConfigError(f"unknown algorithm {config.algo!r}; valid names: {', '.join(ALGOS)}")


def _check_data(config: L2CConfig, data: data_mod.FederatedData) -> None:
    if config.algo == "oracle" and data.clusters is None:
        raise L2CConfigError(
            f"--algo oracle needs known clusters, and {data.name} data "
            f"{'with this partition ' if data.name == 'cifar10' else ''}has none; "
            "use --dataset synthetic or --partition pathological"
        )
    if data.num_nodes != config.nodes:
        raise L2CConfigError(f"the data has {data.num_nodes} nodes but the config asks for {config.nodes}")


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


def run_l2c(config: L2CConfig, data: data_mod.FederatedData | None = None) -> L2CResult:
    """Train every node with ``config.algo`` for ``config.rounds`` rounds and return what it learned."""
    _check_algo(config)
    data = data if data is not None else load_data(config)
    _check_data(config, data)
    device = config.resolved_device()
    nodes = [node.to(device) for node in data.nodes]
    n = config.nodes

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = CNNCifar(data.num_classes).to(device)
    generator = torch.Generator().manual_seed(config.seed)
    theta = stack_params(model, n)
    adjacency = torch.ones(n, n, dtype=torch.bool, device=device)

    learn = config.algo == "l2c"
    alpha = nn.Parameter(torch.zeros(n, n, device=device)) if learn else None
    alpha_optimizer = (
        torch.optim.Adam([alpha], lr=config.beta, weight_decay=config.alpha_weight_decay) if learn else None
    )

    accuracies = torch.zeros(config.rounds, n)
    grad_norms = torch.zeros(config.rounds, n)
    shares: list[float] = []
    removed: list[tuple[int, int]] = []
    mixing = fixed_mixing(config.algo, adjacency, data.clusters) if not learn else None
    started = time.perf_counter()

    with _deterministic_cudnn():
        for t in tqdm(range(config.rounds), desc=config.algo, disable=not config.progress, leave=False):
            half = {name: torch.empty_like(v) for name, v in theta.items()}
            for i, node in enumerate(nodes):
                local_sgd(model, theta, i, node.train_x, node.train_y, config, generator, half)
            deltas = {name: theta[name] - half[name] for name in theta}

            if learn:
                for _ in range(config.alpha_steps):
                    alpha_optimizer.zero_grad()
                    losses = [
                        validation_loss(
                            model,
                            aggregate({k: v[i] for k, v in theta.items()}, deltas, alpha[i], adjacency[i]),
                            node.val_x,
                            node.val_y,
                        )
                        for i, node in enumerate(nodes)
                    ]
                    torch.stack(losses).sum().backward()
                    alpha_optimizer.step()
                grad_norms[t] = alpha.grad.norm(dim=1).cpu()
                with torch.no_grad():
                    mixing = mixing_weights(alpha, adjacency)

            with torch.no_grad():
                theta = {name: theta[name] - torch.tensordot(mixing, deltas[name], dims=1) for name in theta}
            if learn and t == config.t0:
                removed = prune(adjacency, mixing, config.k0)

            for i, node in enumerate(nodes):
                accuracies[t, i] = accuracy(model, {k: v[i] for k, v in theta.items()}, node.test_x, node.test_y)
            shares.append(same_cluster_share(mixing, data.clusters))
            line = f"round {t + 1}/{config.rounds} [{config.algo}]: mean test accuracy {accuracies[t].mean():.1%}"
            if data.clusters is not None and not math.isnan(shares[-1]):
                line += f", same-cluster neighbour weight {shares[-1]:.2f}"
            log.info(line)

    seconds = (time.perf_counter() - started) / max(1, config.rounds)
    learned_alpha = None
    if learn:
        with torch.no_grad():
            mixing = mixing_weights(alpha, adjacency)  # the adjacency may have changed at T_0
            learned_alpha = alpha.clone().cpu()
    return L2CResult(
        config=config,
        mixing=mixing.cpu(),
        alpha=learned_alpha,
        accuracies=accuracies,
        same_cluster_share=shares,
        alpha_grad_norms=grad_norms,
        removed_edges=removed,
        params={k: v.cpu() for k, v in theta.items()},
        adjacency=adjacency.cpu(),
        clusters=data.clusters,
        seconds_per_round=seconds,
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
    p.add_argument("--clusters", type=int, default=d.clusters, help="synthetic clusters (default %(default)s)")
    p.add_argument("--data-root", default=d.data_root, help="folder holding cifar-10-batches-py (default %(default)s)")
    p.add_argument("--download", action="store_true", help="download CIFAR-10 into --data-root when missing")
    p.add_argument("--partition", default=d.partition, help=f"cifar10 split: {', '.join(data_mod.PARTITIONS)}")
    p.add_argument("--dirichlet-alpha", type=float, default=d.dirichlet_alpha, help="(default %(default)s)")
    p.add_argument("--seed", type=int, default=d.seed, help="(default %(default)s)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice)")
    p.add_argument("--out", default="runs/l2c", help="folder for summary.json and mixing.png (default %(default)s)")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    config = L2CConfig(
        nodes=a.nodes, rounds=a.rounds, local_epochs=a.local_epochs, lr=a.lr, beta=a.beta, t0=a.t0, k0=a.k0,
        algo=a.algo, dataset=a.dataset, clusters=a.clusters, data_root=a.data_root, download=a.download,
        partition=a.partition, dirichlet_alpha=a.dirichlet_alpha, seed=a.seed, device=a.device, progress=True,
    )  # fmt: skip
    return config, Path(a.out)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry: run, log one line per round, write the summary and heatmap; exit 2 on bad input."""
    config, out = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from tqdm.contrib.logging import logging_redirect_tqdm

    try:
        with logging_redirect_tqdm():
            result = run_l2c(config)
    except (data_mod.DataError, L2CConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    summary_path, png_path = save(result, out)
    share = result.removed_cross_cluster_share
    print(
        f"final mean test accuracy {result.mean_accuracy:.1%}"
        + (f", removed edges cross-cluster {share:.0%}" if share is not None else "")
        + f", {result.seconds_per_round:.2f} s/round; wrote {summary_path} and {png_path}"
    )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
