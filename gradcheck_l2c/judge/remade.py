"""Weights made anew at every call: a module's Parameter a forward makes at each call, free Parameters a loss or a
forward makes again after an optimizer was built, and plain leaves a forward draws with requires_grad at each call;
none is held by an optimizer, none ever learns."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "optimizer"
#: The nodes of an addition: a leaf that enters only so is a start value or an offset, no weight drawn anew
_ADDITIONS = frozenset(("AddBackward0", "AddBackward1", "SubBackward0", "SubBackward1"))


def drawn_in_forward(run) -> list[Finding]:
    """Plain leaves that a module's forward makes with requires_grad at every call (loss weights drawn anew), each
    given a gradient no code reads, held by no optimizer while optimizers step the model: none ever learns."""
    record = run.record
    if not any(other.step_order >= 0 for other in record.optimizers):
        return []
    made: dict = {}
    for watched in record.watched():
        if (watched.user_leaf and not watched.is_parameter and watched.ever_grad and not watched.optimized
                and not watched.grad_used and watched.grad_read is None and not watched.stepped_by_script
                and watched.forward_line is not None
                and not record.differentiated(watched.key)):
            made.setdefault(watched.forward_line, []).append(watched)
    found = []
    for site, leaves in made.items():
        if len(leaves) < 2 or any((record.consumer(leaf.key) or ("",))[0] in _ADDITIONS for leaf in leaves):
            continue  # a start the terms are added to (``loss = torch.tensor([0.], requires_grad=True)``), no weight
        name = leaves[-1].name
        found.append(run.finding(
            KIND, "warning", name, site,
            f"{name} gets gradients but is in no optimizer, so it never changes: this line, in a forward, makes a new "
            f"leaf with requires_grad at every call ({len(leaves)} of them got gradients), so each gradient lands on a "
            "fresh tensor that no optimizer holds and the next call starts again from new values.",
            "make it once, as a Parameter of the module (self.<name> = nn.Parameter(...) in __init__), and use that "
            "here: an optimizer built from model.parameters() then holds it.",
        ))
    return found


def made_in_every_forward(run, watched, event, record) -> Finding:
    """A module's Parameter made anew at every call of a forward (``self.gammas = nn.Parameter(torch.ones(...))`` run
    by it): weights built inside forward, as a layer built there is, named at the forward's line that runs it."""
    holder = watched.holder or (watched.owner.cls if watched.owner is not None else "the module")
    site = watched.forward_line or event.site
    made = ", through the call on this line" if site != event.site else ""
    return run.finding(
        "module_in_forward", "error", watched.name, site,
        f"{watched.name} is made anew at every call of {holder}.forward (nn.Parameter at {event.site}{made}): each call "
        f"starts it again from its initial values, and the {record.name} built at {record.site} never holds any of "
        "these Parameters, so it never learns.",
        f"create it once in {holder}.__init__ (self.<name> = nn.Parameter(...)) and only use it in forward.",
        event.count, related={"defined": event.site, "used": record.site})


def remade_sites(run) -> set:
    """Where user code made free Parameters (``nn.Parameter(...)`` on no module), or a module's Parameter in a
    forward, more than once after an optimizer was built (`remade_key`): code that runs at every step (a loss
    function, a forward) makes a new one at each call."""
    seen, again = set(), set()
    for watched in run.record.watched():
        key = remade_key(watched)
        if key is not None and watched.optimizers_before > 0:
            (again if key in seen else seen).add(key)
    return again


def remade_key(watched) -> object:
    """The line that made a free Parameter; with the module attribute it sits on, for one a forward made (a model
    built anew per fold, making its Parameter lazily at its first call, makes no Parameter twice on one module)."""
    if not watched.user_leaf or watched.site is None:
        return None
    if watched.owner is None:
        return watched.site
    return (watched.site, watched.owner.ident, watched.owner.attribute) if watched.made_in_forward else None
