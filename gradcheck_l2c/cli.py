"""The ``gradcheck-l2c`` command: ``trace`` runs a script under the tracer and reports, ``fix`` writes the
mechanical fixes (``fixcommand.py``), ``demo`` shows the L2C case, ``rules`` lists the rule codes.

``gradcheck-l2c trace [options] script.py [args...]`` works like ``python script.py [args...]`` (and
``-m module`` like ``python -m``): the script's output is untouched, the report goes to stderr when
it ends, and the exit status says whether gradients went missing.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import TextIO

import gradcheck_l2c
from gradcheck_l2c.cli_words import VALUE_OPTIONS, count, split_trace_argv
from gradcheck_l2c.errors import GradcheckError, UsageError
from gradcheck_l2c.fixcommand import VALUE_OPTIONS as FIX_VALUE_OPTIONS
from gradcheck_l2c.fixcommand import add_fix_parser
from gradcheck_l2c.launch import Report, finish_rank, launch, rank_env
from gradcheck_l2c.paths import distinct_outputs, output_file, output_folder
from gradcheck_l2c.present.concise import format_concise
from gradcheck_l2c.present.github import format_github
from gradcheck_l2c.present.gitlab import codequality_document, write_codequality
from gradcheck_l2c.present.jsonreport import json_document, write_json
from gradcheck_l2c.present.merge import RankResult
from gradcheck_l2c.present.repository import repository_root
from gradcheck_l2c.present.sarifreport import sarif_document, write_sarif
from gradcheck_l2c.present.textreport import format_report, summary_line, unmatched_message
from gradcheck_l2c.records import Finding, WatchedTensor, fails
from gradcheck_l2c.rules import RULES
from gradcheck_l2c.runner import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    ScriptRunner,
    exit_code,
    is_terminal,
    show_exception,
    traced_run,
    use_color,
)
from gradcheck_l2c.termination import Terminated

PROG = "gradcheck-l2c"

OUTPUT_FORMATS = ("full", "concise", "github")
#: Options a distributed run's merging process handles; its ranks run without them.
_MERGED_OUTPUTS = ("--nproc-per-node", "--json", "--sarif", "--gitlab-codequality")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`UsageError` instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, with the ``trace`` and ``demo`` subcommands."""
    parser = _Parser(
        prog=PROG,
        description="Explain why a PyTorch tensor got no gradient: the file and line that cut it.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {gradcheck_l2c.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    trace = commands.add_parser(
        "trace",
        help="run a Python script under the tracer and report missing gradients",
        description="Run a script as `python script.py args...` would, then report on stderr every "
        "watched tensor that got no gradient and the file:line that cut it. Options go before the "
        "script; everything after the script's name is passed to the script.",
        epilog="exit status: 0 when no finding reaches the --fail-on level; 1 when one does or the script "
        "raised an exception; the script's own non-zero exit status as it is; 2 for a usage error; "
        "130 after Ctrl-C; 143 after SIGTERM.",
        allow_abbrev=False,
    )
    trace.add_argument("-m", dest="module", metavar="MODULE",
                       help="run a library module as a script, like `python -m`")
    trace.add_argument("--watch", action="append", metavar="PATTERN",
                       help="watch only tensors whose name matches: `alpha`, `*.alpha`, `model.fc1.*` "
                       "(repeatable; default: every parameter and every leaf that requires grad)")
    trace.add_argument("--json", metavar="FILE", help="also write the findings as JSON to FILE")
    trace.add_argument("--sarif", metavar="FILE",
                       help="also write the findings as SARIF 2.1.0 to FILE (for GitHub code scanning)")
    trace.add_argument("--gitlab-codequality", metavar="FILE",
                       help="also write the findings as a GitLab code quality report to FILE")
    trace.add_argument("--output-format", choices=OUTPUT_FORMATS, metavar="{full,concise,github}",
                       help="the report on stderr: full (the default), concise (one `path:line:col: CODE "
                       "message` line per finding) or github (workflow-command annotations; the default "
                       "when GITHUB_ACTIONS=true and stderr is not a terminal)")
    trace.add_argument("--fail-on", choices=("error", "warning", "never"), default="error",
                       help="lowest severity that makes the exit status 1 (default: %(default)s)")
    trace.add_argument("--max-findings", type=count, metavar="N", help="list at most N entries")
    trace.add_argument("--nan", action="store_true", help="also find where the first NaN or Inf was born")
    trace.add_argument("--grad-stats", action="store_true", help="also keep gradient norms per layer: vanishing, "
                       "exploding, dead units; the numbers in --json, a plot in --render DIR")
    trace.add_argument("--render", metavar="DIR",
                       help="draw the graphs where gradients went missing into DIR")
    trace.add_argument("--html", metavar="DIR",
                       help="write an HTML report into DIR: the findings in a table, the source with the cut lines "
                       "marked, and the graphs (open DIR/index.html)")
    trace.add_argument("--format", metavar="FORMAT",
                       help="image format for --render: svg (default), png, pdf or dot")
    trace.add_argument("--full", action="store_true", help="with --render or --html, draw whole graphs, not only the cut")
    trace.add_argument("--nproc-per-node", type=count, metavar="N",
                       help="run N ranks through torchrun's launcher (standalone, this machine), trace each, "
                       "and print one report merged from all ranks")
    loudness = trace.add_mutually_exclusive_group()
    loudness.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")
    loudness.add_argument("-v", "--verbose", action="store_true",
                          help="also list notes, the tensors that got gradients, and the tool's own frames "
                          "in tracebacks")
    trace.add_argument("script", nargs="?", help="the Python file (or folder with __main__.py) to run")
    trace.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    trace.set_defaults(handler=_trace_command)

    demo = commands.add_parser(
        "demo",
        help="trace the L2C question's script, then train the fixed L2C briefly",
        description="Trace reference/seed_l2c.py (the L2C question where alpha.grad stays None), "
        "write the report, JSON and graphs, then run the reference L2C for a few rounds to show "
        "alpha receiving gradients.",
        allow_abbrev=False,
    )
    demo.add_argument("--out", default="gradcheck-out", metavar="DIR",
                      help="folder for the JSON report and graphs (default: %(default)s)")
    demo.set_defaults(handler=_demo_command)

    rules = commands.add_parser(
        "rules",
        help="list the rule codes: code, kind, what it means, the fix",
        description="List every rule: its permanent code (used by SARIF, the concise and github outputs and "
        "`# gradcheck: ignore[CODE]` comments), its kind, what happened, and the usual fix.",
        allow_abbrev=False,
    )
    rules.set_defaults(handler=_rules_command)
    add_fix_parser(commands, count)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line; for ``trace`` the script and its arguments are split off first."""
    parser = build_parser()
    argv = list(argv)
    if argv and argv[0] in ("trace", "fix"):
        values = VALUE_OPTIONS if argv[0] == "trace" else FIX_VALUE_OPTIONS
        options, target, script_args, as_module = split_trace_argv(argv[1:], values)
        namespace, unknown = parser.parse_known_args([argv[0], *options])
        if unknown:
            raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (see {PROG} {argv[0]} --help)")
        namespace.script = None if as_module else target
        namespace.module = target if as_module else None
        namespace.args = script_args
        namespace.options = options
        return namespace
    namespace = parser.parse_args(argv)
    if namespace.command is None:
        raise UsageError(f"missing command: `{PROG} trace script.py`, `{PROG} fix script.py`, `{PROG} demo` or "
                         f"`{PROG} rules` (see {PROG} --help)")
    return namespace


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the ``EXIT_*`` constants)."""
    try:
        try:
            namespace = parse_args(sys.argv[1:] if argv is None else argv)
        except SystemExit as exc:  # --help and --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        return namespace.handler(namespace)
    except GradcheckError as exc:  # UsageError, or graphs that Graphviz could not draw
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _trace_command(options: argparse.Namespace) -> int:
    """``gradcheck-l2c trace``: run the script, report, write JSON and graphs, choose the exit status."""
    stderr = sys.stderr
    if options.script is None and options.module is None:
        raise UsageError("trace needs a script: gradcheck-l2c trace [options] script.py [args...]")
    if options.format and not options.render:
        raise UsageError("--format needs --render DIR")
    if options.full and not (options.render or options.html):
        raise UsageError("--full needs --render DIR or --html DIR")
    if options.json:
        options.json = output_file(options.json, "--json")
    if options.sarif:
        options.sarif = output_file(options.sarif, "--sarif")
    if options.gitlab_codequality:
        options.gitlab_codequality = output_file(options.gitlab_codequality, "--gitlab-codequality")
    outputs = {option: path for option, path in (
        ("--json", options.json), ("--sarif", options.sarif), ("--gitlab-codequality", options.gitlab_codequality))
        if path}
    distinct_outputs(options.script, outputs)
    output_format = options.output_format or default_output_format(stderr)
    root = repository_root(os.getcwd())  # before the script can change the working folder
    if options.render:
        from gradcheck_l2c.present.draw.render import check_format

        options.format = check_format(options.format or "svg")
        options.render = output_folder(options.render, "--render")
    if options.html:
        options.html = output_folder(options.html, "--html")
        if options.render and os.path.realpath(options.html) == os.path.realpath(options.render):
            raise UsageError("--html and --render each write an index.html: give them different folders")
    if options.nproc_per_node:
        target = options.module or os.path.abspath(options.script)
        return launch(options.nproc_per_node, _rank_command(options),
                      _reporter(options, target, [], output_format, root))
    env = rank_env()
    if env is not None:
        options.render = options.render and os.path.join(options.render, f"rank-{env.rank}")
        options.html = options.html and os.path.join(options.html, f"rank-{env.rank}")
    runner = ScriptRunner(options.module or options.script, options.args, as_module=bool(options.module))
    try:
        runner.prepare()
    except SyntaxError as exc:
        show_exception(exc)
        return EXIT_FINDINGS
    if options.module:  # its file is known now
        distinct_outputs(runner.filename, outputs)
    if env is not None:
        env.register()

    tracer, outcome = traced_run(
        runner,
        watch=options.watch,
        record_sites=bool(options.render or options.html),
        nan=options.nan, grad_stats=options.grad_stats,
        stream=stderr,
        show_status=not options.quiet and is_terminal(stderr) and env is None,
        keep_tool_frames=options.verbose,
    )
    stderr = sys.stderr if getattr(stderr, "closed", False) else stderr  # the script closed it: a new one
    if tracer.forked:  # a child the script forked ended: it exits with its own status; the parent reports
        return exit_code(outcome, (), "never")
    findings, watched = tracer.findings, tracer.watched
    status = exit_code(outcome, (), "never")  # how the script ended, findings aside
    if tracer.disabled:
        from gradcheck_l2c.tracer import DISABLE_VARIABLE

        print(f"{PROG}: tracing is off ({DISABLE_VARIABLE} is set): the script ran untraced.", file=stderr)
        return exit_code(outcome, findings, options.fail_on)

    if tracer.unmatched_patterns:
        ended = outcome.exception is None and not outcome.exit_status  # else it may not have got that far
        vacuous = ended and not tracer.watched  # no pattern matched at all
        print(unmatched_message(tracer.unmatched_patterns, tracer.watched_names,
                                "error" if vacuous else "warning"), file=stderr)
        if vacuous:  # the check watched nothing, as the API's UsageError says; a typo beside others warns
            return EXIT_USAGE
    if outcome.exception is not None:
        how = "was stopped by SIGTERM" if isinstance(outcome.exception, Terminated) else \
            f"stopped with {type(outcome.exception).__name__}"
        print(f"{PROG}: the script {how}; the report covers what ran before.", file=stderr)
    argv = [runner.argv0, *runner.args]
    report = _reporter(options, runner.filename, argv, output_format, root)
    code = status
    if env is None:
        code = report(findings, watched, status, "", True)
    if options.grad_stats and env is None:
        from gradcheck_l2c.present.gradstats import write_grad_stats
        code = max(code, write_grad_stats(tracer.grad_stats, options))
    if options.render or options.html:
        from gradcheck_l2c.present.drawn import write_drawn

        try:
            drawn = write_drawn(tracer, render=options.render, html=options.html, fmt=options.format or "svg",
                                full=options.full)
            for line in [] if options.quiet else drawn.lines:
                print(f"{PROG}: {line}", file=stderr)
            if drawn.hint:  # even with -q: images were asked for and none were drawn
                print(f"{PROG}: {drawn.hint}", file=stderr)
        except OSError as error:  # the script removed the folder, or turned it into a file
            print(f"{PROG}: error: {'--render' if options.render else '--html'}: cannot write graphs in "
                  f"{options.render or options.html!r}: "
                  f"{error.strerror or error}", file=stderr)
            code = max(code, EXIT_FINDINGS)
    if env is not None:
        result = RankResult(env.rank, status, bool(status), time.time(), runner.filename or "", argv, findings,
                            watched)
        code = finish_rank(env, result, report)
    return code


def default_output_format(stderr: TextIO) -> str:
    """``github`` inside a GitHub Actions job whose stderr is a log, not a terminal; ``full`` elsewhere."""
    if os.environ.get("GITHUB_ACTIONS") == "true" and not is_terminal(stderr):
        return "github"
    return "full"


def format_rules() -> str:
    """``gradcheck-l2c rules``: one block per rule: code, kind, the levels it is reported at (the usual one
    first), what happened, the fix."""
    lines = []
    for rule in RULES:
        levels = ", ".join(rule.levels)
        lines += [f"{rule.code} {rule.kind} ({levels})", f"    {rule.description}", f"    fix: {rule.fix}"]
    return "\n".join(lines) + "\n"


def _rules_command(options: argparse.Namespace) -> int:
    sys.stdout.write(format_rules())
    return EXIT_OK


def _reporter(options: argparse.Namespace, script: str | None, argv: list[str], output_format: str,
              root: str | None) -> Report:
    """The function that prints the report (and writes ``--json``, ``--sarif``, ``--gitlab-codequality``)
    for one process or a merged run; ``label`` prefixes every line (``[rank 1] ``), ``write`` allows the
    files."""
    stderr = sys.stderr

    def report(findings: Sequence[Finding], watched: Sequence[WatchedTensor], failed: int, label: str,
               write: bool) -> int:
        code = failed or (EXIT_FINDINGS if fails(findings, options.fail_on) else EXIT_OK)
        color = use_color(stderr) and not label
        if options.quiet:
            text = summary_line(findings, watched, color=color) + "\n"
        elif output_format == "concise":
            text = format_concise(findings, watched, verbose=options.verbose)
        elif output_format == "github":
            text = format_github(findings, watched, verbose=options.verbose)
        else:
            text = format_report(findings, watched, color=color, max_findings=options.max_findings,
                                 verbose=options.verbose)
        stderr.write("".join(label + line for line in text.splitlines(keepends=True)) if label else text)
        if options.json and write:
            document = json_document(script=script or "", exit_code=code,
                                     argv=argv or [options.module or options.script, *options.args],
                                     watched=watched, findings=findings)
            write_json(options.json, document)
            if not options.quiet:
                print(f"{PROG}: wrote the JSON report to {options.json}", file=stderr)
        if options.sarif and write:
            write_sarif(options.sarif, sarif_document(findings, version=gradcheck_l2c.__version__, root=root,
                                                      exit_code=code))
            if not options.quiet:
                print(f"{PROG}: wrote the SARIF report to {options.sarif}", file=stderr)
        if options.gitlab_codequality and write:
            write_codequality(options.gitlab_codequality, codequality_document(findings, root=root))
            if not options.quiet:
                print(f"{PROG}: wrote the code quality report to {options.gitlab_codequality}", file=stderr)
        return code

    return report


def _rank_command(options: argparse.Namespace) -> list[str]:
    """The command each rank runs: this tool's ``trace`` with the options that matter inside a rank."""
    words, skip = [], False
    for word in options.options:
        if skip:
            skip = False
        elif word in _MERGED_OUTPUTS:
            skip = True
        elif not word.startswith(tuple(f"{option}=" for option in _MERGED_OUTPUTS)):
            words.append(word)
    target = ["-m", options.module] if options.module else [options.script]
    return [sys.executable, "-m", "gradcheck_l2c", "trace", *words, *target, *options.args]


def _demo_command(options: argparse.Namespace) -> int:
    from gradcheck_l2c.demo import run_demo

    return run_demo(options.out)
