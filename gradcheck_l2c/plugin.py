"""pytest plugin: trace a test's training step and fail it with the report when a gradient is cut.

Thin glue over :mod:`gradcheck_l2c.tracer` and :mod:`gradcheck_l2c.assertions`. pytest loads it
for every session, so torch is imported only once a test is actually traced.

The ``gradcheck`` fixture makes traces scoped to the test, like ``mocker`` makes patches::

    def test_step(gradcheck):
        with gradcheck(watch="*.alpha") as t:   # t is a Trace
            train_step()                        # the with fails the test with t.report()
        assert t.backward_count == 1            # ... or look at the structured result

``gradcheck(watch=None, fail_on="error")``: ``fail_on`` is the least severe finding that fails
the test (``"error"``, ``"warning"``, ``"info"``; ``"never"`` only records). Traces left open
are closed at teardown.

The marker traces the whole test body::

    @pytest.mark.gradcheck(watch="*.alpha", fail_on="warning")
    def test_step(): ...

Options: ``--gradcheck`` traces every test as if it had the marker (tests that use the fixture
trace themselves; a ``trace()`` the test starts joins the test's trace and judges by its own ``watch``;
``assert_grad_flows`` should not run under it); ``--gradcheck-render DIR`` writes the graphs of
failing traced tests to ``DIR/<test id>/``, and ``--gradcheck-html DIR`` their HTML report (findings, the
source with the cut lines marked, the graphs) to ``DIR/<test id>/index.html``; ``--gradcheck-nan`` also
finds where the first NaN or Inf of a traced test was born. When a traced test fails for another reason, its
report is attached to the failure as a "gradcheck" section.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

MARKER = "gradcheck"
_MARKER_KWARGS = ("watch", "fail_on")


@dataclass(frozen=True)
class _Plan:
    """How to trace one test: the trace the marker (or ``--gradcheck``) asked for, and when to fail."""

    trace: Any
    fail_on: str


@dataclass
class _TestTraces:
    """The traces one test ran, and which of them already failed it with their report."""

    traces: list[Any] = field(default_factory=list)
    reported: set[int] = field(default_factory=set)


_PLAN = pytest.StashKey[_Plan]()
_TRACES = pytest.StashKey[_TestTraces]()


class _TraceBlock:
    """``with gradcheck(...) as t``: runs the block under a trace, then checks it."""

    def __init__(self, owner: _TestTraces, watch: Any, fail_on: str) -> None:
        from gradcheck_l2c.tracer import trace

        self._owner = owner
        self._fail_on = fail_on
        self.trace = trace(watch=watch)

    def __enter__(self) -> Any:
        __tracebackhide__ = True
        self._owner.traces.append(self.trace)
        return self.trace.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        __tracebackhide__ = True
        from gradcheck_l2c.assertions import assert_trace_clean

        self.trace.__exit__(*exc_info)
        if exc_info[0] is None:
            try:
                assert_trace_clean(self.trace, fail_on=self._fail_on)
            except AssertionError:
                self._owner.reported.add(id(self.trace))
                raise


class GradcheckFixture:
    """The ``gradcheck`` fixture: call it to get a ``with`` block that traces and then checks."""

    def __init__(self, owner: _TestTraces) -> None:
        self._owner = owner

    def __call__(self, watch: Any = None, *, fail_on: str = "error") -> _TraceBlock:
        """A context manager: ``with gradcheck(watch="*.alpha") as t`` gives the Trace ``t``."""
        __tracebackhide__ = True
        from gradcheck_l2c.assertions import check_fail_on

        check_fail_on(fail_on)
        return _TraceBlock(self._owner, watch, fail_on)

    def _close(self) -> None:
        """Stop any trace the test entered but never left."""
        from gradcheck_l2c.tracer import active_trace

        for t in self._owner.traces:
            if active_trace() is t:
                t.__exit__(None, None, None)


@pytest.fixture
def gradcheck(request: pytest.FixtureRequest) -> Any:
    """Traces scoped to this test: ``with gradcheck(watch=..., fail_on=...) as t:``."""
    fixture = GradcheckFixture(_test_traces(request.node))
    yield fixture
    fixture._close()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradcheck", "gradcheck-l2c: say why a tensor got no gradient")
    group.addoption(
        "--gradcheck",
        action="store_true",
        default=False,
        help="trace every test and fail those in which a gradient was cut",
    )
    group.addoption(
        "--gradcheck-nan",
        action="store_true",
        default=False,
        help="in traced tests, also find where the first NaN or Inf was born (non_finite findings)",
    )
    group.addoption(
        "--gradcheck-render",
        metavar="DIR",
        default=None,
        help="write the autograd graphs of failing traced tests to DIR/<test id>/",
    )
    group.addoption(
        "--gradcheck-html",
        metavar="DIR",
        default=None,
        help="write the HTML report of failing traced tests to DIR/<test id>/index.html",
    )


def pytest_configure(config: pytest.Config) -> None:
    for option in ("--gradcheck-render", "--gradcheck-html"):
        folder = config.getoption(option)
        if folder:  # checked before any test runs: a bad folder is one line, not an INTERNALERROR later
            from gradcheck_l2c.errors import UsageError
            from gradcheck_l2c.paths import output_folder

            try:
                output_folder(folder, option)
            except UsageError as err:
                raise pytest.UsageError(str(err)) from None
    config.addinivalue_line(
        "markers",
        f"{MARKER}(watch=None, fail_on='error'): trace the test and fail it with the report "
        "when a gradient is cut",
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    if config.getoption("gradcheck"):
        lines.append("gradcheck: tracing every test")
    if config.getoption("gradcheck_render"):
        lines.append(f"gradcheck: graphs of failing tests go to {config.getoption('gradcheck_render')}")
    if config.getoption("gradcheck_html"):
        lines.append(f"gradcheck: HTML reports of failing tests go to {config.getoption('gradcheck_html')}")
    return lines


def pytest_runtest_setup(item: pytest.Item) -> None:
    plan = _plan(item)
    if plan is not None:
        item.stash[_PLAN] = plan


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    plan = item.stash.get(_PLAN, None)
    if plan is None:
        return (yield)
    from gradcheck_l2c.assertions import assert_trace_clean

    traces = _test_traces(item)
    traces.traces.append(plan.trace)
    with plan.trace:
        result = yield
    try:
        assert_trace_clean(plan.trace, fail_on=plan.fail_on)
    except AssertionError as err:
        report = str(err)
    else:
        return result
    traces.reported.add(id(plan.trace))
    pytest.fail(report, pytrace=False)  # outside the except: the report alone, no chained traceback


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    traces = item.stash.get(_TRACES, None)
    if report.when == "call" and report.failed and traces is not None and traces.traces:
        for t in traces.traces:
            if id(t) not in traces.reported and t.findings:
                report.sections.append(("gradcheck", t.report()))
        out_dir = item.config.getoption("gradcheck_render")
        if out_dir:
            paths = _render(traces.traces, Path(out_dir) / _safe_name(item.nodeid))
            report.sections.append(("gradcheck render", "\n".join(str(p) for p in paths)))
        html_dir = item.config.getoption("gradcheck_html")
        if html_dir:
            paths = _write_html(traces.traces, Path(html_dir) / _safe_name(item.nodeid))
            report.sections.append(("gradcheck html", str(paths[0])))
    return report


def _plan(item: pytest.Item) -> _Plan | None:
    """The trace the marker (checked) or ``--gradcheck`` asks for, or ``None`` for no tracing."""
    marker = item.get_closest_marker(MARKER)
    uses_fixture = "gradcheck" in getattr(item, "fixturenames", ())
    if marker is None and not (item.config.getoption("gradcheck") and not uses_fixture):
        return None
    from gradcheck_l2c.errors import UsageError
    from gradcheck_l2c.tracer import trace

    # forward lines on the drawn nodes
    sites = bool(item.config.getoption("gradcheck_render") or item.config.getoption("gradcheck_html"))
    nan = bool(item.config.getoption("gradcheck_nan"))
    if marker is None:
        return _Plan(trace(record_sites=sites, nan=nan), "error")
    problem = _marker_problem(marker, uses_fixture)
    if problem is None:
        try:
            return _Plan(trace(watch=marker.kwargs.get("watch"), record_sites=sites, nan=nan),
                         marker.kwargs.get("fail_on", "error"))
        except (UsageError, TypeError) as err:
            problem = str(err)
    pytest.fail(f"{item.nodeid}: @pytest.mark.{MARKER}: {problem}", pytrace=False)


def _marker_problem(marker: pytest.Mark, uses_fixture: bool) -> str | None:
    """What is wrong with the marker's arguments, in one sentence, or ``None``."""
    from gradcheck_l2c.assertions import check_fail_on

    if marker.args:
        given = ", ".join(repr(a) for a in marker.args)
        return f"takes keyword arguments only (watch=..., fail_on=...), got positional {given}"
    unknown = sorted(set(marker.kwargs) - set(_MARKER_KWARGS))
    if unknown:
        return f"unknown argument(s) {', '.join(unknown)}; it takes watch= and fail_on="
    try:
        check_fail_on(marker.kwargs.get("fail_on", "error"))
    except ValueError as err:
        return str(err)
    if uses_fixture:
        return "the test also uses the gradcheck fixture, which traces too; use one of them"
    return None


def _test_traces(item: pytest.Item) -> _TestTraces:
    if _TRACES not in item.stash:
        item.stash[_TRACES] = _TestTraces()
    return item.stash[_TRACES]


def _render(traces: list[Any], out_dir: Path) -> list[Path]:
    from gradcheck_l2c.present.draw.render import write_render_dir

    graphs = [g for t in traces for g in t.graphs]
    findings = [f for t in traces for f in t.findings]
    return write_render_dir(graphs, findings, out_dir)


def _write_html(traces: list[Any], out_dir: Path) -> list[Path]:
    from gradcheck_l2c.present.html.report import write_html_report

    graphs = [g for t in traces for g in t.graphs]
    findings = [f for t in traces for f in t.findings]
    return write_html_report(out_dir, findings, [w for t in traces for w in t.watched], graphs)


def _safe_name(nodeid: str) -> str:
    """A test id as a folder name: ``tests/test_a.py::test_b[1]`` -> ``tests_test_a.py_test_b_1``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")
