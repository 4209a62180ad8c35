"""A loss that is made at every step and never differentiated: in a run where no backward ran at all (and no
``step()`` either, which `optimizer` tells at the step), a line made a scalar from parameters an optimizer holds twice
or more (a loop's loss). Named at the branch that keeps that line's function from its one ``backward()`` call (an
accumulation condition never true, a flag that skips the update), else at the line that made the loss."""
from __future__ import annotations

from gradcheck_l2c.judge.backward_branch import branch_around_backward
from gradcheck_l2c.records import Finding


def never_differentiated(run, kind: str) -> list[Finding]:
    """The first line that made such a loss, as a finding of ``kind``; none when no line did (a single forward, an
    evaluation with no optimizer holding its weights, a script that stopped before its first backward)."""
    record = run.record
    for made, (count, keys) in record.undifferentiated.items():
        holders = [optimizer for optimizer in record.optimizers if keys & optimizer.keys & run.keys]
        if count < 2 or not holders:
            continue
        optimizer = holders[0]
        trained = sorted(keys & optimizer.keys & run.keys)
        where = f" built at {optimizer.site}" if optimizer.site is not None else ""
        symptom = next((read for read in (record.watched_at(key).grad_read for key in trained) if read), None)
        never = (f"the {len(trained)} parameters the {optimizer.name}{where} holds never got a gradient and no step "
                 "changed them")
        branch = branch_around_backward(made)
        if branch is not None:
            guard, call = branch
            return [run.finding(
                kind, "error", f"{optimizer.name} ({len(trained)} parameters)", guard,
                f"no backward ran in the whole run: the backward() at {call} sits in this branch, which the run never "
                f"took, so the loss made at {made} ({count} times) was never differentiated: {never}.",
                "let the branch run for this configuration (its condition is never true here), or call backward() "
                "on every path that makes the loss.", count, related={"symptom": symptom, "used": made})]
        return [run.finding(
            kind, "error", f"{optimizer.name} ({len(trained)} parameters)", made,
            f"no backward ran in the whole run: the loss made here ({count} times) was never differentiated, so {never}.",
            "call loss.backward() on this loss at every step, then optimizer.step().", count,
            related={"symptom": symptom})]
    return []
