"""Run real torchrun jobs (two ranks, CPU and gloo unless asked otherwise) with a timeout that fails
instead of hanging."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("ddp_train.py")
TIMEOUT = 120


@dataclass
class Job:
    status: int
    stdout: str
    stderr: str


#: What a rank prints when torch's gloo teardown races at process exit, after its work is done (a C++ thread
#: still joinable while its owner is destroyed; seen on a loaded machine in untraced jobs too). Such a job
#: is run once more; any other failure counts at once.
TEARDOWN_ABORT = "terminate called without an active exception"


def run_job(args: list[str], cwd: Path, **env: str) -> Job:
    """Run ``args`` (once more after a teardown abort); fail after TIMEOUT seconds instead of hanging."""
    job = _run_once(args, cwd, **env)
    if job.status != 0 and TEARDOWN_ABORT in job.stderr:
        job = _run_once(args, cwd, **env)
    return job


def _run_once(args: list[str], cwd: Path, **env: str) -> Job:
    """Run ``args`` in its own process group; kill the whole group and fail after TIMEOUT seconds."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1", **env}
    process = subprocess.Popen(args, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"the job did not end within {TIMEOUT} s: {' '.join(args)}\n{stderr[-3000:]}")
    return Job(process.returncode, stdout, stderr)


def torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *args]


def traced(*args: str) -> list[str]:
    """``gradcheck-l2c trace --nproc-per-node 2 ...``: the tool launches torchrun itself."""
    return [sys.executable, "-m", "gradcheck_l2c", "trace", "--nproc-per-node", "2", *args]


def line(mark: str) -> int:
    """The line of ddp_train.py marked ``# <- mark``."""
    for number, text in enumerate(SCRIPT.read_text().splitlines(), start=1):
        if re.search(rf"#\s*<-\s*{mark}\b", text):
            return number
    raise LookupError(mark)
