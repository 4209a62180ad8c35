"""`no_update`: an optimizer stepped a parameter with its gradient, yet the parameter ends the run with the
values it had before its first step. The gradient was there; the update was not (a learning rate of 0 at
every step, a gradient zeroed between backward and each step). Or an optimizer's learning rate fell to 0
and stayed 0 to the end: its parameters stopped learning there. Steps too small to move a value in
floating point (vanishing gradients) are not reported here."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "no_update"


def scan(run) -> list[Finding]:
    found = []
    for fact in run.record.unchanged:
        if fact.key not in run.keys:
            continue
        watched = run.record.watched_at(fact.key)
        if not watched.trainable() or not watched.nonzero_grad:
            continue  # frozen on purpose (a freezing schedule), or its gradient was zero: no step moves it
        name = watched.name
        if fact.stalled_at:
            found.append(_stalled(run, fact, name))
            continue
        if fact.lr_always_zero:
            why = f"its parameter group's learning rate was 0 at every step of {fact.optimizer}" + (
                ", the factor this scheduler function returned" if fact.schedule else "")
            fix = ("give the group a learning rate above 0; where a scheduler sets it, its factor at step 0 must not "
                   "be 0 (a linear warmup current_step / warmup_steps is: use (current_step + 1) / warmup_steps).")
        else:
            why = f"the gradient each {fact.optimizer} step read was all zeros, although backward() had given it one"
            if fact.zeroed_at:
                why += " (this line last wrote into it, or clipped it to 0)"
            fix = ("do not zero or mask the gradient between backward() and step() (a manual .grad write, "
                   "zero_grad() in between, a mask multiplied into .grad, clipping with a max norm of 0).")
        placed = fact.schedule or fact.zeroed_at  # the scheduler's factor, or the line that zeroed the gradient
        found.append(run.finding(
            KIND, "warning", name, placed or fact.step_site,
            f"{name} got its gradient, but its values never changed over the run: {why}.", fix,
            related={"used": fact.step_site} if placed else None,
        ))
    return found


def _stalled(run, fact, name: str) -> Finding:
    """The learning rate fell to 0 at a step and stayed there: named where the scheduler was built."""
    where = "set by the scheduler built here" if fact.schedule else "no scheduler of the trace's set it"
    return run.finding(
        KIND, "warning", name, fact.schedule or fact.step_site,
        f"{name} and the other parameters of {fact.optimizer} stopped changing at step {fact.stalled_at} of "
        f"{fact.steps}: from then on the learning rate was 0 ({where}).",
        "make the schedule as long as the run (num_training_steps = epochs * steps per epoch), step the scheduler "
        "as often as its length counts (per epoch or per batch), or keep its factor above 0 (StepLR's gamma).",
        related={"used": fact.step_site} if fact.schedule else None,
    )
