"""Distributed runs: every rank traced under torchrun, and one report merged from all ranks.

``torchrun --nproc_per_node N -m gradcheck_l2c trace train.py`` traces each rank; torchrun's
environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``) says which. ``gradcheck-l2c trace
--nproc-per-node N train.py`` starts torchrun's elastic launcher in a child process, and this process
only merges and prints. The ranks never talk to each other through the tool (no collective that a dead
rank could leave hanging): each writes its result to a run folder when its script ends, and one process
merges the files. Under plain torchrun that is local rank 0, which waits only for ranks that are still
alive, and at most :data:`RANK_WAIT` seconds; under the launcher it is the parent, once torchrun returns.
"""
from __future__ import annotations

import getpass
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gradcheck_l2c.present.merge import RankResult, merge, rank_list, read_results, result_path, write_result
from gradcheck_l2c.records import Finding, WatchedTensor

#: Set by ``--nproc-per-node`` for its ranks: the run folder, and that the parent merges.
RUN_DIR_VARIABLE = "GRADCHECK_L2C_RUN_DIR"
#: The longest local rank 0 waits, once its own script ended, for ranks still running.
RANK_WAIT = 60.0
#: How long a rank that has not registered yet (still importing, or it died first) is waited for.
_START_WAIT = 5.0
_POLL = 0.05
_FAILURES = "launcher.json"

#: ``report(findings, watched, exit status, label, write_json) -> exit status``: the CLI's output.
Report = Callable[[Sequence[Finding], Sequence[WatchedTensor], int, str, bool], int]


@dataclass
class RankEnv:
    """This process's place in a torchrun job, and the run folder its result goes to."""

    rank: int
    local_rank: int
    local_world_size: int
    folder: str
    launched: bool  # started by ``--nproc-per-node``: the parent merges, ranks print nothing

    @property
    def merger(self) -> bool:
        return not self.launched and self.local_rank == 0

    def register(self) -> None:
        """Say this rank runs (its pid), so the merger knows whom to wait for while it lives."""
        _write_atomically(os.path.join(self.folder, f"rank-{self.rank}.pid"), str(os.getpid()))


def rank_env() -> RankEnv | None:
    """The rank this process is in a torchrun job of two or more processes; None otherwise."""
    env = os.environ
    try:
        world, rank = int(env.get("WORLD_SIZE", "1")), int(env["RANK"])
        local_rank = int(env.get("LOCAL_RANK", rank))
        local_world = int(env.get("LOCAL_WORLD_SIZE", world))
    except (KeyError, ValueError):
        return None
    folder = env.get(RUN_DIR_VARIABLE)
    if world < 2 and folder is None:
        return None
    launched = folder is not None
    if folder is None:  # one folder per torchrun agent (the ranks' parent) and restart
        job = f"{env.get('TORCHELASTIC_RUN_ID', 'run')}-{os.getppid()}-{env.get('TORCHELASTIC_RESTART_COUNT', '0')}"
        folder = os.path.join(tempfile.gettempdir(), f"gradcheck-l2c-{getpass.getuser()}", job)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return RankEnv(rank, local_rank, local_world, folder, launched)


def finish_rank(env: RankEnv, result: RankResult, report: Report) -> int:
    """A rank's script ended: write its result; the merger merges, a failing rank tells its own story.

    Returns the rank's exit status: the script's own, except for the merger, which also fails on
    findings (once, for the whole job) as a single process would.
    """
    write_result(env.folder, result)
    if env.launched:
        return result.status
    label = f"[rank {env.rank}] "
    if not env.merger:
        if result.failed or os.path.exists(os.path.join(env.folder, "merged")):
            report(result.findings, result.watched, result.status, label, False)  # torchrun may kill the merger
        return result.status
    running = [] if result.failed else _wait_for_ranks(env)
    results = read_results(env.folder)
    code = _present(results, running, result.status if result.failed else 0, report)
    _done(env.folder, results, env.local_world_size)
    return code


def launch(nproc: int, rank_command: Sequence[str], report: Report) -> int:
    """``--nproc-per-node``: run ``rank_command`` on ``nproc`` local ranks through torchrun's elastic
    launcher in a child process, then merge and print. Returns the failing rank's exit status, else
    the status the merged findings give."""
    folder = tempfile.mkdtemp(prefix="gradcheck-l2c-run-")
    environment = {**os.environ, RUN_DIR_VARIABLE: folder}
    launcher = [sys.executable, "-m", "gradcheck_l2c.launch", folder, str(nproc), *rank_command]
    try:
        child = subprocess.Popen(launcher, env=environment)
        try:
            returncode = child.wait()
        except KeyboardInterrupt:  # the launcher got Ctrl-C too and stops the ranks
            returncode = child.wait()
        results = read_results(folder)
        failing, status = _failing(results, _read_failures(folder), returncode)
        if failing is not None:
            print(f"gradcheck-l2c: rank {failing} failed first (exit status {status}); "
                  "the job ends with its status.", file=sys.stderr)
        ranks = {r.rank for r in results}
        missing = [rank for rank in range(nproc) if rank not in ranks]
        return _present(results, missing, status, report, lost=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _present(results: list[RankResult], missing: list[int], failed: int, report: Report,
             lost: bool = False) -> int:
    """Print the merged report (and write the JSON); the exit status is ``failed`` if non-zero."""
    findings, watched = merge(results)
    ranks = [r.rank for r in results]
    if ranks:
        print(f"gradcheck-l2c: report merged from {len(ranks)} {'rank' if len(ranks) == 1 else 'ranks'} "
              f"({rank_list(ranks)}); each finding lists the ranks that found it.", file=sys.stderr)
    if missing:
        why = "ended without a report (killed, or died before the tracer)" if lost else "still running"
        print(f"gradcheck-l2c: rank {rank_list(missing)} {why}: not in this report.", file=sys.stderr)
    return report(findings, watched, failed, "", True)


def _failing(results: list[RankResult], failures: dict[int, int], returncode: int) -> tuple[int | None, int]:
    """The rank that failed first and its exit status, or (None, 0); the launcher's own failure is 1.

    A rank torchrun saw die without writing a result, killed or crashed (status 128 + signal), comes
    first: the others' errors (a closed connection) follow from it. Then the rank whose script failed
    first. A rank ended by SIGTERM comes last: that is how torchrun stops the others after a failure.
    """
    reported = {r.rank for r in results}
    dead = {rank: 128 - code if code < 0 else code or 1 for rank, code in failures.items() if rank not in reported}
    killed = [rank for rank in sorted(dead) if dead[rank] != 128 + signal.SIGTERM]
    if killed:
        return killed[0], dead[killed[0]]
    failed = sorted((r for r in results if r.failed), key=lambda r: r.ended)
    if failed:
        return failed[0].rank, failed[0].status or 1
    if dead:
        rank = min(dead)
        return rank, dead[rank]
    return None, 1 if returncode else 0


def _wait_for_ranks(env: RankEnv) -> list[int]:
    """Wait while the other ranks of this node are alive and have not written results; the ranks
    still running when :data:`RANK_WAIT` ran out are returned."""
    start = time.monotonic()
    while True:
        pids = _registered(env.folder)
        running = [rank for rank, pid in pids.items()
                   if not os.path.exists(result_path(env.folder, rank)) and process_alive(pid)]
        waited = time.monotonic() - start
        if not running and (len(pids) >= env.local_world_size or waited > _START_WAIT):
            return []
        if waited > RANK_WAIT:
            return sorted(running)
        time.sleep(_POLL)


def _registered(folder: str) -> dict[int, int]:
    pids = {}
    for name in os.listdir(folder):
        if name.startswith("rank-") and name.endswith(".pid"):
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    pids[int(name[5:-4])] = int(handle.read())
            except (OSError, ValueError):
                continue
    return pids


def process_alive(pid: int) -> bool:
    """Whether the process runs (a zombie, dead but not yet reaped by torchrun, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _done(folder: str, results: list[RankResult], expected: int) -> None:
    """Remove the run folder when every rank reported; else leave a mark so late ranks print their own."""
    if len(results) >= expected:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        _write_atomically(os.path.join(folder, "merged"), "")


def _write_atomically(path: str, text: str) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


def _read_failures(folder: str) -> dict[int, int]:
    """What torchrun's launcher saw: rank -> exit code (negative: the signal that ended it)."""
    import json

    try:
        with open(os.path.join(folder, _FAILURES), encoding="utf-8") as handle:
            return {int(rank): int(code) for rank, code in json.load(handle).items()}
    except (OSError, ValueError, TypeError):
        return {}


def _launcher(argv: list[str]) -> int:
    """The child process: torchrun's elastic launcher, standalone rendezvous, no restarts. The exit
    status of each failed rank goes to the run folder."""
    import json
    import logging
    import uuid

    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    folder, nproc, command = argv[0], int(argv[1]), argv[2:]
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)  # the parent tells who failed
    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id=str(uuid.uuid4()),
                          rdzv_backend="c10d", rdzv_endpoint="localhost:0", max_restarts=0)
    try:
        elastic_launch(config, command[0])(*command[1:])
    except ChildFailedError as error:
        failures: dict[str, Any] = {str(rank): failure.exitcode for rank, failure in error.failures.items()}
        _write_atomically(os.path.join(folder, _FAILURES), json.dumps(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_launcher(sys.argv[1:]))
