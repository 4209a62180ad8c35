"""Code in installed packages (site-packages: timm, transformers, ...) is library code: a finding never
points into it, a Parameter it makes is no leaf the user asked for, and the line to change is the user's
call into it. The traced script's own folder stays user code even when it lies among installed packages."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

LIBRARY = '''
import torch
from torch import nn


class Frozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.token = nn.Parameter(torch.zeros(4))
        self.token.requires_grad_(False)
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x + self.token)


def embed(model, x):
    with torch.no_grad():
        return model(x)
'''
SCRIPT = '''
import torch
from vendored import Frozen, embed

model = Frozen()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(2, 4)
for step in range(2):
    loss = {loss}
    opt.zero_grad()
    loss.requires_grad_(True)
    loss.backward()
    opt.step()
'''


def _trace(tmp_path: Path, loss: str, script_folder: str,
           packages: str = "lib/site-packages") -> subprocess.CompletedProcess:
    packages = tmp_path / packages
    packages.mkdir(parents=True)
    (packages / "vendored.py").write_text(textwrap.dedent(LIBRARY))
    folder = tmp_path / script_folder
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "train.py"
    script.write_text(SCRIPT.format(loss=loss))
    env = {"PYTHONPATH": str(packages), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "--output-format", "concise",
                           str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_a_correct_program_on_an_installed_library_is_silent(tmp_path):
    result = _trace(tmp_path, "model(x).pow(2).mean()", "project")
    assert result.returncode == 0, result.stderr
    assert "site-packages" not in result.stderr and "GC0" not in result.stderr


def test_a_cut_inside_an_installed_library_is_named_at_the_users_call(tmp_path):
    result = _trace(tmp_path, "embed(model, x).pow(2).mean()  # <- call", "project")
    findings = [line for line in result.stderr.splitlines() if " GC0" in line]
    assert findings and all("site-packages" not in line for line in findings), result.stderr
    assert all(line.startswith(str(tmp_path / "project" / "train.py") + ":9:") or "train.py:9:" in line
               for line in findings), findings


def test_the_traced_scripts_own_folder_is_user_code_even_among_installed_packages(tmp_path):
    result = _trace(tmp_path, "model(x).detach().pow(2).mean()", "lib/site-packages/tool")
    assert "GC004" in result.stderr and "tool/train.py:9" in result.stderr, result.stderr


def test_a_venv_inside_the_scripts_project_stays_library_code(tmp_path):
    result = _trace(tmp_path, "embed(model, x).pow(2).mean()  # <- call", ".",
                    packages=".venv/lib/python3.11/site-packages")
    findings = [line for line in result.stderr.splitlines() if " GC0" in line]
    assert findings and all("site-packages" not in line and "train.py:9:" in line for line in findings), \
        result.stderr
