"""`no_update`: an optimizer stepped a parameter with its gradient, yet the parameter ends the run with the
values it had before its first step. The gradient was there; the update was not (a learning rate of 0 at
every step, a gradient zeroed between backward and each step). Or an optimizer's learning rate fell to 0
and stayed 0 to the end: its parameters stopped learning there. Steps too small to move a value in
floating point (vanishing gradients) are not reported here. And a parameter the script froze (or made with
``requires_grad=False``) and never switched back on, whose ``.grad`` it reads by name: it expected that gradient. And
a ``load_state_dict`` given the module's own state (a target network synced from itself): it changes nothing."""
from __future__ import annotations

from gradcheck_l2c.record.facts import ONTO_ITSELF
from gradcheck_l2c.records import Finding

KIND = "no_update"


def scan(run) -> list[Finding]:
    found = _frozen_and_read(run) + _loaded_onto_itself(run)
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


def _loaded_onto_itself(run) -> list[Finding]:
    """Each line that loaded a module's own state into it: one finding, naming the module. Not where that state is a
    snapshot ``state_dict()`` gave earlier, still the live weights: `state_dict_alias` names where it was taken."""
    aliased = {event.key for event in run.record.events("state_dict_alias")}
    loads: dict = {}
    for event in run.record.events(KIND):
        if event.detail == ONTO_ITSELF and event.key in run.keys:
            loads.setdefault(event.site, []).append(event)
    loads = {site: events for site, events in loads.items() if not any(e.key in aliased for e in events)}
    found = []
    for site, events in loads.items():
        module = _common_module([run.name(event.key) for event in events])
        held = f"its {len(events)} parameters are" if len(events) > 1 else "its parameter is"
        found.append(run.finding(  # named by the module, not a tensor: its parameters' gradients are not in question
            KIND, "warning", module, site,
            f"this load_state_dict() gives {module} its own state: {held} copied onto themselves, so nothing "
            f"changes (a target network synced so keeps its first values).",
            "load the state of the network it should copy (target.load_state_dict(source.state_dict())), not the "
            "module's own state_dict().", events[0].count))
    return found


def _common_module(names: list[str]) -> str:
    """The module that holds the parameters named so (``target.fc.weight``, ``target.out.bias``: ``target``)."""
    parts = [name.split(".")[:-1] for name in names]
    common = []
    for level in zip(*parts):
        if len(set(level)) > 1:
            break
        common.append(level[0])
    return ".".join(common) or "the module"


def _frozen_and_read(run) -> list[Finding]:
    """Parameters that take no gradient because the script froze them, whose ``.grad`` it then read by name (a read
    of every parameter in a loop says nothing of one of them): at the freeze, the read as symptom. One that got a
    gradient before the freeze was trained in an earlier stage, on purpose frozen since; one frozen in its module's
    constructor is frozen by the model's design; one whose whole block is frozen (a backbone, a language model) is
    what fine-tuning does."""
    reads = run.record.empty_reads
    found = []
    for key, read in reads.watched.items():
        watched = run.record.watched_at(key)
        if key not in run.keys or not watched.frozen or watched.frozen_at is None or watched.ever_grad \
                or key in reads.designed or not _in_a_training_block(run, watched):
            continue
        found.append(run.finding(
            KIND, "warning", read.name, watched.frozen_at,
            f"{read.name} was frozen here (requires_grad=False) and never switched back on, so no backward gives it "
            f"a gradient: the script reads its .grad, which stays None, and no optimizer step changes it.",
            "leave it out of the freeze (the loop's condition, the layers or names it matches), or switch it back "
            "on with requires_grad_(True) before building the optimizer.",
            related={"symptom": read.site}))
    for fact in reads.frozen_made():
        found.append(run.finding(
            KIND, "warning", fact.read.name, fact.made,
            f"{fact.read.name} was made here with requires_grad=False, so no backward gives it a gradient: the "
            f"script reads its .grad, which stays None, and no optimizer step changes it.",
            "drop requires_grad=False (a Parameter requires grad by default) if it is meant to learn; a constant "
            "belongs in register_buffer().",
            related={"symptom": fact.read.site}))
    return found


def _in_a_training_block(run, watched) -> bool:
    """Whether the module above the one holding ``watched`` holds parameters that train: a layer frozen inside a
    block whose other layers learn is a hole a freezing loop's condition or name filter made, not a frozen block."""
    if len(watched.calls) < 2:
        return False
    block = watched.calls[1][0]
    return any(other.key != watched.key and other.trainable() and any(call[0] == block for call in other.calls)
               for other in run.record.watched())
