"""Item 3 of the hostile-conditions issue: ``@trace()`` on generators and coroutines.

Their bodies run in pieces between the caller's code, so ``@trace()`` refuses them when it decorates,
with a `UsageError` that says what to do instead; plain functions are traced as before.
"""
import pytest
import torch

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.tracer import trace


def batches():
    yield torch.ones(3)


async def step():
    return 1


async def stream():
    yield 1


@pytest.mark.parametrize(("function", "what"), [(batches, "a generator"), (step, "a coroutine"),
                                                (stream, "a generator")])
def test_generators_and_coroutines_are_refused_when_decorated(function, what):
    with pytest.raises(UsageError) as error:
        trace()(function)
    assert str(error.value).startswith(f"@trace() cannot decorate {function.__qualname__}, {what} function")
    assert "put `with gradcheck_l2c.trace():` around the code that runs it instead" in str(error.value)


def test_a_plain_function_is_still_traced():
    tracer = trace(watch="w")

    @tracer
    def cut() -> torch.Tensor:
        w = torch.ones(3, requires_grad=True)
        torch.tensor(w.sum().item(), requires_grad=True).backward()
        return w

    assert cut().grad is None
    assert [(f.kind, f.tensor) for f in tracer.findings][:1] == [("item", "w")]
