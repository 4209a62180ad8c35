"""``gradcheck-l2c fix [--diff | --write] [--verify] script.py [args...]``: trace the script, turn each finding
whose fix is mechanical into a source change, print it as a unified diff (the default, on stdout, ready for
``git apply``) or write it (``--write``: a ``.orig`` copy kept, nothing outside the project, no file with
uncommitted changes unless ``--force``), and with ``--verify`` run the patched copy to see whether it works.

The script's own output goes to stderr here, so stdout carries only the diff. The report on stderr shows each
finding with its diff and, with ``--verify``, its verdict; then the diff printed or written holds only the
fixes that verified (alone or with the others on their path).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from typing import Any

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.fix.source import require_libcst
from gradcheck_l2c.present.jsonreport import json_document, write_json
from gradcheck_l2c.present.sarifreport import sarif_document, write_sarif
from gradcheck_l2c.present.textreport import format_report
from gradcheck_l2c.records import Finding
from gradcheck_l2c.runner import EXIT_FINDINGS, EXIT_OK, ScriptRunner, show_exception, traced_run

#: Options of ``fix`` that take a value (the command line splits the script's arguments off after them).
VALUE_OPTIONS = frozenset({"--watch", "--json", "--sarif", "--html", "--max-steps", "--max-seconds"})


def add_fix_parser(commands: Any, count: Any) -> None:
    """The ``fix`` subcommand's options, on the command line's subparsers."""
    fix = commands.add_parser(
        "fix", help="trace a script and write the mechanical fixes as a diff (or into the files), verified by a rerun",
        description="Trace a script as `trace` does, then for each finding whose fix is mechanical print the change "
        "as a unified diff on stdout (`| git apply` takes it) or write it. Options go before the script; everything "
        "after the script's name is passed to the script. Needs LibCST: pip install 'gradcheck-l2c[fix]'.",
        epilog="exit status: 0 when every error has a fix (verified, with --verify); 1 otherwise; 2 for a usage error.",
        allow_abbrev=False)
    output = fix.add_mutually_exclusive_group()
    output.add_argument("--diff", action="store_true", help="print the changes as a unified diff (the default)")
    output.add_argument("--write", action="store_true",
                        help="change the files, keeping each original as FILE.orig; refuses files outside the "
                        "project and files with uncommitted changes")
    fix.add_argument("--force", action="store_true",
                     help="with --write, also change files with uncommitted changes or an existing .orig")
    fix.add_argument("--verify", action="store_true",
                     help="run the patched script in a scratch copy of its folder and say whether each fix works")
    fix.add_argument("--max-steps", type=count, metavar="N",
                     help="with --verify, stop each run of the copy after N optimizer steps")
    fix.add_argument("--max-seconds", type=count, metavar="S", help="with --verify, stop each run after S seconds")
    fix.add_argument("--watch", action="append", metavar="PATTERN", help="watch only tensors whose name matches")
    fix.add_argument("--json", metavar="FILE", help="also write the findings, diffs and verdicts as JSON to FILE")
    fix.add_argument("--sarif", metavar="FILE", help="also write them as SARIF 2.1.0 (with fixes) to FILE")
    fix.add_argument("--html", metavar="DIR", help="also write the HTML report, each diff and verdict beside its line, "
                     "into DIR (open DIR/index.html)")
    fix.add_argument("script", nargs="?", help="the Python file to run")
    fix.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    fix.set_defaults(handler=fix_command)


def fix_command(options: argparse.Namespace) -> int:
    """``gradcheck-l2c fix``: trace, plan, diff or write, verify, report."""
    require_libcst()
    if options.script is None or options.module is not None:
        raise UsageError("fix needs a script file: gradcheck-l2c fix [options] script.py [args...]")
    if options.force and not options.write:
        raise UsageError("--force goes with --write")
    if (options.max_steps is not None or options.max_seconds is not None) and not options.verify:
        raise UsageError("--max-steps and --max-seconds go with --verify")
    from gradcheck_l2c.fix.applier import patched, project_root, unified_diff, write_patched
    from gradcheck_l2c.paths import output_folder

    options.html = options.html and output_folder(options.html, "--html")
    stderr = sys.stderr
    runner = ScriptRunner(options.script, options.args)
    try:
        runner.prepare()
    except SyntaxError as exc:
        show_exception(exc)
        return EXIT_FINDINGS
    result = run_fix(runner, watch=options.watch, verify=options.verify, max_steps=options.max_steps,
                     max_seconds=options.max_seconds)
    findings, watched, plan = result.findings, result.watched, result.plan
    stderr.write(format_report(findings, watched, color=False))
    chosen = [edit for edit in plan.edits if not options.verify or any(
        finding.key() in result.fixed for finding in edit.findings)]  # with --verify, only what works
    texts = patched(chosen)
    errors = {finding.key() for finding in findings if finding.severity == "error" and not finding.suppressed}
    code = EXIT_OK if errors <= result.fixed else EXIT_FINDINGS
    if options.json:
        write_json(options.json, json_document(script=runner.filename or "", argv=[runner.argv0, *runner.args],
                                               exit_code=code, watched=watched, findings=findings))
    if options.sarif:
        from gradcheck_l2c import __version__

        write_sarif(options.sarif, sarif_document(findings, version=__version__,
                                                  root=project_root(runner.filename), exit_code=code))
    if options.html:
        from gradcheck_l2c.present.html.report import html_summary, write_html_report

        print(f"gradcheck-l2c fix: {html_summary(write_html_report(options.html, findings, watched))}", file=stderr)
    if not texts:
        print("gradcheck-l2c fix: no finding has a mechanical fix" + (" that verified" if options.verify else "")
              + "; the report above says why.", file=stderr)
    elif options.write:
        for file in write_patched(texts, project_root(runner.filename), force=options.force):
            print(f"gradcheck-l2c fix: wrote {os.path.relpath(file)} (the original is {os.path.relpath(file)}.orig)",
                  file=stderr)
    else:
        sys.stdout.write(unified_diff(texts))
    return code


@dataclasses.dataclass
class FixResult:
    """What ``fix`` found: the findings (with ``fix_diff``, and verdicts when verified), the watched tensors, the
    plan of edits, and the keys of the findings whose fix works (with ``--verify``) or exists (without)."""

    findings: list[Finding]
    watched: list[Any]
    plan: Any
    fixed: set[tuple]


def run_fix(runner: ScriptRunner, *, watch: list[str] | None = None, verify: bool = False,
            max_steps: int | None = None, max_seconds: float | None = None) -> FixResult:
    """Trace a prepared script (its output on stderr), plan the mechanical fixes, and verify them if asked."""
    from gradcheck_l2c.fix.applier import patched, unified_diff
    from gradcheck_l2c.fix.planner import plan_fixes

    with contextlib.redirect_stdout(sys.stderr):
        tracer, outcome = traced_run(runner, watch=watch, record_sites=False, stream=sys.stderr, show_status=False)
    findings, watched = tracer.findings, tracer.watched
    plan = plan_fixes(findings)
    findings = [dataclasses.replace(finding, fix_diff=unified_diff(patched([edit])))
                if (edit := plan.edit_for(finding)) is not None else finding for finding in findings]
    fixed = {finding.key() for finding in findings if plan.edit_for(finding) is not None}
    if verify:
        findings, fixed = _verified(runner, plan, findings, watched, outcome, watch, max_steps, max_seconds)
    return FixResult(findings, watched, plan, fixed)


def _verified(runner: ScriptRunner, plan: Any, findings: list[Finding], watched: Any, outcome: Any,
              watch: list[str] | None, max_steps: int | None, max_seconds: float | None,
              ) -> tuple[list[Finding], set[tuple]]:
    """The findings with their verdicts, from reruns of the patched copy, and the keys of those whose fix
    works (alone, or with the other fixes on the same path)."""
    from gradcheck_l2c.fix.applier import patched, unified_diff
    from gradcheck_l2c.fix.verifier import verify
    from gradcheck_l2c.rerun import ScratchRuns, original_run

    script = runner.filename or runner.target
    original = original_run(findings, watched, outcome, os.path.dirname(script))
    runs = ScratchRuns(script, runner.args, watch=watch, max_steps=max_steps, max_seconds=max_seconds)
    verdicts = verify(plan, findings, original, runs)
    revealed = [dataclasses.replace(finding, fix_diff=unified_diff(patched([plan.edit_for(finding)])),
                                    severity="error") for finding in plan.revealed]
    shown = {finding.key() for finding in revealed}
    judged = [dataclasses.replace(finding, verified=verdicts[finding.key()].status,
                                  verify_note=("found by the rerun, behind a fixed cut; " if finding.key() in shown
                                               else "") + verdicts[finding.key()].note)
              if finding.key() in verdicts else finding for finding in [*findings, *revealed]]
    return judged, {key for key, verdict in verdicts.items() if verdict.status == "verified" or verdict.joint}
