"""IPython extension: ``%load_ext gradcheck_l2c``, then ``%%gradcheck`` traces a cell.

::

    %%gradcheck --watch model.alpha --render
    loss = step(model, batch)
    loss.backward()

runs the cell under :func:`gradcheck_l2c.trace`, then prints the report and, with ``--render``,
shows the autograd graph of each backward that missed a watched tensor; ``--html`` shows the report as HTML
in the notebook: the findings, the cell's lines with the cut marked, and the graphs. When the cell raises, the
report covers what ran and the cell's exception is raised again after it, so "Run All" stops there. ``--watch`` takes a
name or glob the tracer knows (``"*.alpha"``) or a variable of the notebook (``model.alpha``,
``model``); repeat it to watch several. ``-o`` returns the :class:`~gradcheck_l2c.tracer.Trace`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from IPython.core.error import UsageError as IPythonUsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from gradcheck_l2c.errors import UsageError


@magics_class
class GradcheckMagics(Magics):
    """The ``%%gradcheck`` cell magic."""

    @magic_arguments()
    @argument(
        "-w",
        "--watch",
        action="append",
        metavar="NAME",
        help="tensor to judge: a variable (model.alpha, model) or a name/glob (*.alpha); repeatable",
    )
    @argument("-r", "--render", action="store_true", help="show the graph of each backward that missed one")
    @argument("--html", action="store_true",
              help="show the report as HTML: findings, the marked lines with their fixes, and the graphs")
    @argument("-o", "--output", action="store_true", help="return the Trace (it becomes the cell's Out)")
    @cell_magic
    def gradcheck(self, line: str, cell: str) -> Any:
        """Run the cell under the gradient tracer, then print its report (and graphs with --render)."""
        from gradcheck_l2c.assertions import assert_trace_clean
        from gradcheck_l2c.present.textreport import unmatched_message
        from gradcheck_l2c.tracer import trace

        __tracebackhide__ = True  # a cell's error is raised again from here: show the cell's frames only
        args = parse_argstring(self.gradcheck, line)
        watch = _watch(args.watch or [], self.shell.user_ns)
        try:
            t = trace(watch=watch, record_sites=args.render or args.html)
            with t, _errors_not_shown(self.shell):  # shown once, after the report, when raised again
                result = self.shell.run_cell(cell)
            if t.unmatched_patterns and t.watched:  # a typo beside names that matched: say so, keep the report
                print(unmatched_message(t.unmatched_patterns, t.watched_names, "warning"))
            elif result.success:
                assert_trace_clean(t, fail_on="never")  # only a watch name that matched nothing raises
        except UsageError as err:
            raise IPythonUsageError(str(err)) from None
        if not t.disabled:
            print(t.report())
        if args.render:
            _show_graphs(t)
        if args.html and not t.disabled:
            _show_html(t)
        if not result.success:  # after the report, so that "Run All" and nbclient stop at this cell
            raise result.error_before_exec or result.error_in_exec
        return t if args.output else None


@contextlib.contextmanager
def _errors_not_shown(shell: Any) -> Iterator[None]:
    """The inner ``run_cell`` keeps its error without printing it (the magic raises it afterwards)."""
    shell.showtraceback = shell.showsyntaxerror = lambda *args, **kwargs: None
    try:
        yield
    finally:
        del shell.showtraceback, shell.showsyntaxerror  # the class's methods again


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%gradcheck`` in ``ipython`` (called by ``%load_ext gradcheck_l2c``)."""
    ipython.register_magics(GradcheckMagics)


def _watch(names: list[str], namespace: dict[str, Any]) -> Any:
    """``--watch`` values as the tracer takes them: notebook objects where the name is one."""
    import torch

    resolved: list[Any] = []
    for name in map(_unquoted, names):
        value = _lookup(name, namespace)
        resolved.append({name: value} if isinstance(value, (torch.Tensor, torch.nn.Module)) else name)
    return resolved or None


def _unquoted(word: str) -> str:
    """``'*.alpha'`` as a shell would pass it: the magic's parser keeps the quotes a user types."""
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


def _lookup(dotted: str, namespace: dict[str, Any]) -> Any:
    """The object ``a.b.c`` names in ``namespace`` (looked up, never evaluated), or None."""
    head, *rest = dotted.split(".")
    if not all(part.isidentifier() for part in [head, *rest]) or head not in namespace:
        return None
    value = namespace[head]
    for part in rest:
        value = getattr(value, part, None)
    return value


def _show_html(t: Any) -> None:
    from IPython.display import HTML

    from gradcheck_l2c.present.html.report import inline_html

    display(HTML(inline_html(t.findings, t.watched, t.graphs)))


def _show_graphs(t: Any) -> None:
    from gradcheck_l2c.present.draw.render import render

    for graph in t.graphs:
        display(render(graph))
