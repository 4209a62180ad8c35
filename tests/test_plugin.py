"""The pytest plugin, run on real test files through pytester in a subprocess."""
from __future__ import annotations

from pathlib import Path

import pytest

# A user's project: the seed's L2C mistake in small (alpha's mixing weights leave the graph
# through .item(), the aggregate is loaded into the model) and its fix with functional_call.
STEP = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.alpha = nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return self.fc(x)


def broken_step(model, deltas, x, y):
    w = torch.softmax(model.alpha, dim=0)
    theta = {n: p.detach().clone() for n, p in model.fc.named_parameters()}
    for j, delta in enumerate(deltas):
        for n in theta:
            theta[n] -= w[j].item() * delta[n]  # <- item
    model.fc.load_state_dict(theta)  # <- reload
    F.cross_entropy(model(x), y).backward()


def fixed_step(model, deltas, x, y):
    w = torch.softmax(model.alpha, dim=0)
    theta = {f"fc.{n}": p.detach() - sum(w[j] * d[n] for j, d in enumerate(deltas))
             for n, p in model.fc.named_parameters()}
    F.cross_entropy(functional_call(model, theta, (x,)), y).backward()


def make_inputs():
    torch.manual_seed(0)
    model = Net()
    deltas = [{n: torch.randn_like(p) for n, p in model.fc.named_parameters()} for _ in range(2)]
    return model, deltas, torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])
"""


def line_of(pytester: pytest.Pytester, mark: str) -> int:
    """The line of the written ``l2c_step.py`` that ends with ``# <- mark``."""
    text = (pytester.path / "l2c_step.py").read_text()
    (number,) = [n for n, line in enumerate(text.splitlines(), 1) if line.endswith(f"# <- {mark}")]
    return number


@pytest.fixture
def project(pytester):
    pytester.makepyfile(l2c_step=STEP)
    return pytester


def test_marker_and_fixture_fail_with_the_cuts_and_pass_the_fix(project):
    project.makepyfile(
        test_steps="""
        import pytest
        from l2c_step import broken_step, fixed_step, make_inputs


        @pytest.mark.gradcheck(watch="*.alpha")
        def test_marker_broken():
            broken_step(*make_inputs())


        @pytest.mark.gradcheck(watch="*.alpha")
        def test_marker_fixed():
            fixed_step(*make_inputs())


        def test_fixture_broken(gradcheck):
            with gradcheck(watch="*.alpha"):
                broken_step(*make_inputs())


        def test_fixture_fixed(gradcheck):
            with gradcheck(watch="*.alpha") as t:
                fixed_step(*make_inputs())
            assert [(w.shape, w.got_grad) for w in t.watched] == [((2,), True)]


        def test_fixture_records_without_failing(gradcheck):
            with gradcheck(watch="*.alpha", fail_on="never") as t:
                broken_step(*make_inputs())
            assert [f.kind for f in t.findings] == ["item", "state_dict_reload"]


        @pytest.mark.gradcheck(watch="*.alpha", fail_on="never")
        def test_own_assertion_fails():
            model, *rest = make_inputs()
            broken_step(model, *rest)
            assert model.alpha.grad is not None


        def test_fixture_left_open(gradcheck):
            gradcheck(watch="*.alpha").__enter__()


        def test_left_open_trace_was_closed():
            from gradcheck_l2c.tracer import active_trace
            assert active_trace() is None
        """
    )
    result = project.runpytest_subprocess("-rN")

    result.assert_outcomes(passed=5, failed=3)
    item, reload = line_of(project, "item"), line_of(project, "reload")
    result.stdout.fnmatch_lines(
        [
            "*_ test_marker_broken _*",
            "gradcheck-l2c: 1 of 1 watched tensor got no gradient*; 2 errors",
            f"  1. l2c_step.py:{item}: error: item (×4)",
            "         theta[n] -= w[j].item() * delta[n]  # <- item",
            "     fix: keep it a tensor in the computation (drop .item())*",
            f"  2. l2c_step.py:{reload}: error: state_dict_reload (×2)",
            "     fix: evaluate the model at the computed weights with torch.func.functional_call*",
            "*_ test_fixture_broken _*",
            '>       with gradcheck(watch="*.alpha"):',
            "E       AssertionError: gradcheck-l2c: 1 of 1 watched tensor got no gradient*",
            f"E         1. l2c_step.py:{item}: error: item (×4)",
            "test_steps.py:*: AssertionError",
            "*_ test_own_assertion_fails _*",
            "E       assert None is not None",
            "*- gradcheck -*",
            "gradcheck-l2c: 1 of 1 watched tensor got no gradient*",
            f"  1. l2c_step.py:{item}: error: item (×4)",
        ]
    )
    output = result.stdout.str()
    assert output.count("watched tensor got no gradient") == 3  # the report is never shown twice
    result.stdout.no_fnmatch_line("*gradcheck_l2c/*.py*")  # the tool's own frames are hidden


def test_option_traces_every_test_and_renders_the_failing_ones(project):
    project.makepyfile(
        test_all="""
        import pytest
        import torch
        from l2c_step import broken_step, fixed_step, make_inputs


        def test_broken():
            model, *rest = make_inputs()
            broken_step(model, *rest)
            print(f"gradient of alpha is {model.alpha.grad}")  # as the seed does


        def test_plain_regression():
            w = torch.zeros(3, requires_grad=True)
            ((torch.ones(4, 3) @ w - 1) ** 2).mean().backward()
            assert w.grad is not None


        @pytest.mark.gradcheck(watch="*.alpha")
        def test_marker_overrides_the_option():
            fixed_step(*make_inputs())  # the fc weights are detached on purpose


        def test_fixture_is_not_traced_twice(gradcheck):
            with gradcheck(watch="*.alpha"):
                fixed_step(*make_inputs())
        """
    )
    result = project.runpytest_subprocess("--gradcheck", "--gradcheck-render", "graphs", "--gradcheck-html", "html",
                                          "-rN")

    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "gradcheck: tracing every test",
            "gradcheck: graphs of failing tests go to graphs",
            "gradcheck: HTML reports of failing tests go to html",
            "*_ test_broken _*",
            "gradcheck-l2c: * got no gradient*",
            f"  1. l2c_step.py:{line_of(project, 'item')}: error: item*",
            "*- gradcheck render -*",
            "graphs/test_all.py_test_broken/*",
            "*- gradcheck html -*",
            "html/test_all.py_test_broken/index.html",
        ]
    )
    rendered = project.path / "graphs"
    assert [p.name for p in rendered.iterdir()] == ["test_all.py_test_broken"]
    assert list((rendered / "test_all.py_test_broken").glob("graph-1.*"))
    report = project.path / "html" / "test_all.py_test_broken"
    assert f'href="source-1-l2c_step.py.html#L{line_of(project, "item")}"' in (report / "index.html").read_text()
    assert [p.name for p in (project.path / "html").iterdir()] == ["test_all.py_test_broken"]


def test_bad_marker_arguments_name_the_test(project):
    project.makepyfile(
        test_marks="""
        import sys
        import pytest


        def test_plugin_does_not_load_torch():
            assert "torch" not in sys.modules


        @pytest.mark.gradcheck("*.alpha")
        def test_positional():
            pass


        @pytest.mark.gradcheck(wach="*.alpha")
        def test_unknown():
            pass


        @pytest.mark.gradcheck(fail_on="fatal")
        def test_fail_on():
            pass


        @pytest.mark.gradcheck(watch=[3])
        def test_watch():
            pass


        @pytest.mark.gradcheck()
        def test_with_fixture(gradcheck):
            pass
        """
    )
    result = project.runpytest_subprocess()

    result.assert_outcomes(passed=1, errors=5)
    result.stdout.fnmatch_lines_random(
        [
            "test_marks.py::test_positional: @pytest.mark.gradcheck: takes keyword arguments only "
            "(watch=..., fail_on=...), got positional '*.alpha'",
            "test_marks.py::test_unknown: @pytest.mark.gradcheck: unknown argument(s) wach; "
            "it takes watch= and fail_on=",
            "test_marks.py::test_fail_on: @pytest.mark.gradcheck: fail_on='fatal' is not one of "
            "'error', 'warning', 'info', 'never'",
            "test_marks.py::test_watch: @pytest.mark.gradcheck: watch: expected names, tensors or modules, "
            "got int (3)",
            "test_marks.py::test_with_fixture: @pytest.mark.gradcheck: the test also uses the gradcheck "
            "fixture, which traces too; use one of them",
        ]
    )


def test_assertions_print_their_full_message_in_a_test(project):
    project.makepyfile(
        test_reaches="""
        import torch
        from torch import nn
        from gradcheck_l2c.assertions import assert_grad_reaches


        def test_reaches():
            model = nn.Linear(3, 2)
            gate = nn.Parameter(torch.ones(2))
            loss = model(torch.ones(1, 3)).sum() + (gate * 0).sum()
            assert_grad_reaches(loss, model, gate, exclude="bias")
        """
    )
    result = project.runpytest_subprocess()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            ">       assert_grad_reaches(loss, model, gate, exclude=\"bias\")",
            "E       AssertionError: 1 of 2 tensors got no gradient from the loss:",
            "E         gate (2,): gradient is all zeros",
            "E       Run the step under gradcheck_l2c.trace() or @pytest.mark.gradcheck to see the "
            "file:line that cut each one.",
            "test_reaches.py:*: AssertionError",
        ]
    )
    result.stdout.no_fnmatch_line("*gradcheck_l2c/assertions.py*")


def seed_line(code: str) -> int:
    """The line of reference/seed_l2c.py whose statement starts with ``code``."""
    from gradcheck_l2c_reference import seed_l2c

    lines = Path(seed_l2c.__file__).read_text().splitlines()
    (number,) = [n for n, line in enumerate(lines, 1) if line.strip().startswith(code)]
    return number


def test_the_seeds_loop_fails_with_its_cuts_and_the_corrected_step_passes(pytester):
    pytester.makepyfile(
        test_seed="""
        import pytest
        import torch
        import torch.nn.functional as F
        from torch.func import functional_call
        from gradcheck_l2c_reference import seed_l2c


        @pytest.mark.gradcheck(watch="*.alpha")
        def test_seed_training_loop():
            seed_l2c.train()


        @pytest.mark.gradcheck(watch="*.alpha")
        def test_corrected_step():
            torch.manual_seed(0)
            model, k, i = seed_l2c.CNNCifar(), 3, 0
            theta = {n: p.detach() for n, p in model.named_parameters() if n != "alpha"}
            delta = [{n: 1e-3 * torch.randn_like(v) for n, v in theta.items()} for _ in range(k)]
            w = torch.softmax(model.alpha[i, :k], dim=0)
            theta_next = {n: v - sum(w[j] * delta[j][n] for j in range(k)) for n, v in theta.items()}
            x, y = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
            F.cross_entropy(functional_call(model, theta_next, (x,)), y).backward()
            assert model.alpha.grad[i, :k].abs().sum() > 0
        """
    )
    result = pytester.runpytest_subprocess("-rN")

    result.assert_outcomes(passed=1, failed=1)
    item = seed_line("theta_next[name] -= model.w[i][j].item()")
    reload = seed_line("model.load_state_dict(theta_next)")
    result.stdout.fnmatch_lines(
        [
            "*_ test_seed_training_loop _*",
            "gradcheck-l2c: 1 of 1 watched tensor got no gradient (CNNCifar.alpha); 2 errors*",
            f"  1. *reference/seed_l2c.py:{item}: error: item*",
            "         theta_next[name] -= model.w[i][j].item() * delta_theta[i][name][j].clone()",
            f"  2. *reference/seed_l2c.py:{reload}: error: state_dict_reload*",
            "         model.load_state_dict(theta_next)",
            "     fix: evaluate the model at the computed weights with torch.func.functional_call*",
        ]
    )


def test_models_from_fixtures_are_judged_in_every_form(pytester):
    """Model and optimizer come from a fixture, built before the trace starts: a .detach() in the
    step still fails the marker, the fixture and --gradcheck, naming its line."""
    pytester.makepyfile(
        test_fixture_model="""
        import pytest
        import torch
        from torch import nn


        @pytest.fixture
        def trained():
            torch.manual_seed(0)
            model = nn.ModuleDict({"enc": nn.Linear(4, 8), "head": nn.Linear(8, 3)})
            return model, torch.optim.SGD(model.parameters(), lr=0.1)


        def step(model, optimizer):
            x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
            feats = torch.relu(model["enc"](x)).detach()  # <- detach
            loss = nn.functional.cross_entropy(model["head"](feats), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


        @pytest.mark.gradcheck
        def test_marker(trained):
            step(*trained)


        def test_fixture(trained, gradcheck):
            with gradcheck():
                step(*trained)


        def test_option(trained):
            step(*trained)
        """
    )
    text = (pytester.path / "test_fixture_model.py").read_text()
    (line,) = [n for n, source in enumerate(text.splitlines(), 1) if source.endswith("# <- detach")]
    result = pytester.runpytest_subprocess("-rN", "--gradcheck")
    result.assert_outcomes(failed=3)
    assert result.stdout.str().count(f"test_fixture_model.py:{line}: error: detach") >= 3
