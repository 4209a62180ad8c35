"""torch's own optimizer code (``zero_grad``, a ``step()`` without closure) runs past the interceptor,
which is where most of a small model's tracing cost went; everything else stays traced: a closure's
forward, a user's own optimizer, and the code after a ``step()`` that raised."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record.patches import _library_step


class SignSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.01):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                p.add_(p.grad.sign(), alpha=-group["lr"])


def test_only_torchs_own_steps_are_quiet():
    params = [nn.Parameter(torch.zeros(2))]
    for optimizer in (torch.optim.SGD(params, lr=0.1), torch.optim.Adam(params), SignSGD(params)):
        assert _library_step(type(optimizer)) == (type(optimizer) is not SignSGD)


def test_a_cut_after_a_step_that_raised_is_still_found(snippet):
    script = snippet("""
    import torch
    from torch import nn
    emb = nn.Embedding(10, 3, sparse=True)
    opt = torch.optim.Adam(emb.parameters())
    emb(torch.tensor([1, 2])).sum().backward()
    try:
        opt.step()  # Adam refuses sparse gradients: raises inside the step
    except RuntimeError:
        pass
    scale = torch.ones(1, requires_grad=True)
    loss = torch.tensor(scale.item() * 2.0, requires_grad=True)  # <- item
    loss.backward()
    """)
    t = script.run()
    assert ("item", script.line("item")) in {(f.kind, f.line) for f in t.findings if f.tensor == "scale"}


def test_a_closure_is_traced(snippet):
    script = snippet("""
    import torch
    from torch import nn
    w = nn.Parameter(torch.ones(3))
    lbfgs = torch.optim.LBFGS([w], max_iter=2)

    def closure():
        lbfgs.zero_grad()
        loss = torch.tensor((w.detach() * 2).sum().item(), requires_grad=True)  # <- cut
        loss.backward()
        return loss

    for _ in range(2):
        lbfgs.step(closure)
    """)
    t = script.run()
    assert ("detach", script.line("cut")) in {(f.kind, f.line) for f in t.findings}


def test_steps_are_quiet_only_while_traced_and_a_users_step_never():
    w = nn.Parameter(torch.ones(2))
    SignSGD([w])  # torch wraps a class's step() at its first optimizer
    sgd_step, user_step = torch.optim.SGD.__dict__["step"], SignSGD.__dict__["step"]
    with trace():
        for optimizer in (torch.optim.SGD([w], lr=0.1), SignSGD([w])):
            w.sum().backward()
            optimizer.step()
        assert torch.optim.SGD.__dict__["step"] is not sgd_step
        assert SignSGD.__dict__["step"] is user_step
    assert torch.optim.SGD.__dict__["step"] is sgd_step
