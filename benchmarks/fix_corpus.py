"""How many bugs of tests/cases get a fix that ``gradcheck-l2c fix --verify`` proves by running it.

For every ``tests/cases/*/bug.py`` (run as the CLI runs a script), traces it, plans the mechanical fixes and
verifies them in a scratch copy, then prints one row per case: the kind the case expects (tests/cases/
expected.json), whether that kind has a mechanical fix, and the verdict on the finding at the expected line
(verified, verified with the other fixes on its path, not enough, not checked, or no such finding), and how
many of all its findings were verified / not enough / not checked. The last lines give the share of verified fixes among the cases whose kind has a mechanical fix (the goal is 70%).

    python benchmarks/fix_corpus.py [--max-seconds 20] [--case PREFIX]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

import torch

from gradcheck_l2c.fix.planner import TRANSFORMATIONS
from gradcheck_l2c.fixcommand import run_fix
from gradcheck_l2c.runner import ScriptRunner

CASES = Path(__file__).resolve().parents[1] / "tests" / "cases"


def verdict(case: dict, max_seconds: float) -> tuple[str, str, dict[str, int]]:
    """The verdict on the case's expected finding, its note, and how many of all its findings got each verdict."""
    script = CASES / case["case"] / "bug.py"
    runner = ScriptRunner(str(script))
    runner.prepare()
    with contextlib.redirect_stderr(io.StringIO()):
        result = run_fix(runner, verify=True, max_seconds=max_seconds)
    tally = {status: sum(1 for finding in result.findings if finding.verified == status)
             for status in ("verified", "not enough", "not checked")}
    matching = [finding for finding in result.findings
                if finding.kind == case["kind"] and finding.line == case["line"] and finding.file == str(script)]
    if not matching:
        return "no finding", "the trace does not give the expected finding", tally
    finding = matching[0]
    if finding.key() in result.fixed and finding.verified != "verified":
        return "verified (joint)", finding.verify_note, tally
    return finding.verified, finding.verify_note, tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seconds", type=float, default=20.0, help="limit of each verifying run")
    parser.add_argument("--case", default="", help="only the cases whose name starts with this")
    options = parser.parse_args()
    torch.set_num_threads(1)
    cases = [case for case in json.loads((CASES / "expected.json").read_text())
             if case["case"].startswith(options.case) and case.get("entry", "script") == "script"]
    counts: dict[str, int] = {}
    every: dict[str, int] = {}
    print(f"{'case':45} {'kind':22} {'mechanical':10} {'all findings V/NE/NC':20} verdict on the expected one")
    for case in cases:
        mechanical = case["kind"] in TRANSFORMATIONS
        status, note, tally = verdict(case, options.max_seconds)
        for name, number in tally.items():
            every[name] = every.get(name, 0) + number
        if mechanical:
            counts[status] = counts.get(status, 0) + 1
        shown = "/".join(str(number) for number in tally.values())
        print(f"{case['case']:45} {case['kind']:22} {'yes' if mechanical else 'no':10} {shown:20} {status}"
              + (f": {note[:100]}" if status != "verified" and mechanical else ""))
    print("\nall findings of all cases: " + ", ".join(f"{name}: {number}" for name, number in every.items()))
    total = sum(counts.values())
    verified = counts.get("verified", 0) + counts.get("verified (joint)", 0)
    print(f"\ncases whose kind has a mechanical fix: {total}; " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    print(f"verified: {verified}/{total} = {verified / max(total, 1):.0%} (goal 70%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
