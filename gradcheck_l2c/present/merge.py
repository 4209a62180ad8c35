"""One report from the ranks of a distributed run: each rank's findings as a file, merged by one process.

A rank writes its result (:func:`write_result`) atomically when its script ends; the merging process
reads what exists (:func:`read_results`) and :func:`merge` folds the same finding from several ranks
into one, with the ranks it came from in ``Finding.ranks``. Child processes the script started with
multiprocessing write the same results, named by process; :func:`with_children` adds them to the parent's.
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gradcheck_l2c.records import Finding, WatchedTensor

_RESULT = "rank-{rank}.json"


@dataclass
class RankResult:
    """What one rank's trace found, and how its script ended."""

    rank: int
    status: int  # the rank's exit status as the script set it (not counting findings)
    failed: bool  # the script raised or exited with a non-zero status
    ended: float  # time.time() when it ended
    script: str
    argv: list[str]
    findings: list[Finding] = field(default_factory=list)
    watched: list[WatchedTensor] = field(default_factory=list)
    process: str = ""  # a child process's name (``Process-1``, ``SpawnPoolWorker-2``); empty for a rank


def write_result(folder: str, result: RankResult) -> str:
    """Write ``result`` into ``folder`` as ``rank-K.json``: to a temporary name, then renamed, so a
    reader never sees half a file."""
    path = os.path.join(folder, _RESULT.format(rank=result.rank))
    document = dataclasses.asdict(result)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    os.replace(temporary, path)
    return path


def result_path(folder: str, rank: int) -> str:
    return os.path.join(folder, _RESULT.format(rank=rank))


def read_results(folder: str) -> list[RankResult]:
    """Every rank result in ``folder``, by rank; unreadable files are skipped."""
    results = []
    for path in glob.glob(os.path.join(folder, _RESULT.format(rank="*"))):
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
        except (OSError, ValueError):
            continue
        results.append(_result(document))
    return sorted(results, key=lambda result: result.rank)


def _result(document: dict[str, Any]) -> RankResult:
    findings = [Finding.from_dict(item) for item in document.pop("findings")]
    watched = [WatchedTensor(w["name"], tuple(w["shape"]), w["got_grad"]) for w in document.pop("watched")]
    return RankResult(**document, findings=findings, watched=watched)


def merge(results: Sequence[RankResult]) -> tuple[list[Finding], list[WatchedTensor]]:
    """The findings of all ranks, each once with the ranks that found it, and the watched tensors with
    one verdict each (no gradient on any rank wins, then a gradient on any rank)."""
    findings: dict[tuple[str, str, str, int], Finding] = {}
    for result in results:
        for finding in result.findings:
            key = finding.key()
            seen = findings.get(key)
            if seen is None:
                findings[key] = dataclasses.replace(finding, ranks=(result.rank,))
            else:
                findings[key] = dataclasses.replace(seen, count=max(seen.count, finding.count),
                                                    ranks=(*seen.ranks, result.rank))
    verdicts: dict[str, WatchedTensor] = {}
    for result in results:
        for tensor in result.watched:
            seen_tensor = verdicts.get(tensor.name)
            if seen_tensor is None or _stronger(tensor.got_grad, seen_tensor.got_grad):
                verdicts[tensor.name] = tensor
    return list(findings.values()), list(verdicts.values())


def with_children(findings: Sequence[Finding], watched: Sequence[WatchedTensor],
                  children: Sequence[RankResult]) -> tuple[list[Finding], list[WatchedTensor]]:
    """The parent's findings and watched tensors with its child processes' results: each child finding once,
    marked with the processes that found it (``main`` first when the parent found it too)."""
    merged = {finding.key(): finding for finding in findings}
    for child in children:
        for finding in child.findings:
            seen = merged.get(finding.key())
            if seen is None:
                merged[finding.key()] = dataclasses.replace(finding, processes=_within(child.process, finding))
            else:
                merged[finding.key()] = dataclasses.replace(
                    seen, count=seen.count + finding.count,
                    processes=(*(seen.processes or ("main",)), *_within(child.process, finding)))
    verdicts = {tensor.name: tensor for tensor in watched}
    for tensor in (tensor for child in children for tensor in child.watched):
        seen_tensor = verdicts.get(tensor.name)
        if seen_tensor is None or _stronger(tensor.got_grad, seen_tensor.got_grad):
            verdicts[tensor.name] = tensor
    ordered = [merged.pop(finding.key(), finding) for finding in findings]
    return ordered + list(merged.values()), list(verdicts.values())


def _within(process: str, finding: Finding) -> tuple[str, ...]:
    """Where a child's finding came from: the child, or its own children (``Process-1/Process-2``)."""
    if not finding.processes:
        return (process,)
    return tuple(process if inner == "main" else f"{process}/{inner}" for inner in finding.processes)


def _stronger(verdict: bool | None, than: bool | None) -> bool:
    order = {False: 2, True: 1, None: 0}
    return order[verdict] > order[than]


def rank_list(ranks: Sequence[int]) -> str:
    """``0, 1, 3``, or ``0-7`` for a run of consecutive ranks."""
    ranks = sorted(ranks)
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))
