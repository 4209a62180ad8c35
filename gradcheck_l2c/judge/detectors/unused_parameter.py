"""`unused_parameter`: the watched tensor never took part in computing any loss."""
from __future__ import annotations

from gradcheck_l2c.judge.crashed_reads import uneven_gathers
from gradcheck_l2c.judge.dropped_arguments import DroppedArgument, dropped_argument
from gradcheck_l2c.record.facts import Site
from gradcheck_l2c.records import Finding

KIND = "unused_parameter"
#: The autograd node of a graph torch.compile built (AOTAutograd): the ops inside ran compiled.
COMPILED_NODE = "CompiledFunctionBackward"


def scan(run) -> list[Finding]:
    record = run.record
    if record.backwards == 0:
        return []

    found = []
    families = _Families(run)
    # DDP's unused parameters, and those a backward of a leaf left out (`leaf_backward`), explained
    told = {f.tensor for f in run.findings if f.kind in ("ddp_unused", KIND)}
    # in the graph of a backward PyTorch refused: they took part in a loss, and that refusal is the finding
    refused = frozenset().union(*(error.reaches for error in record.autograd_errors))
    for watched in run.watched():
        if watched.ever_grad or record.missed(watched.key) is not None or watched.name in told:
            continue
        if watched.key in refused:
            continue
        if watched.gone_unused:
            continue  # the script dropped it before its first backward (a model replaced before training)
        if not watched.trainable() or run.replaced(watched):
            continue  # frozen, or replaced by a new parameter its optimizer does not hold (told as `optimizer`)
        expected = run.expected(watched)
        if not run.expected_or_optimized(watched) or watched.born >= record.backwards:
            continue  # not meant to learn, or no backward ran since it was made
        if run.probe(watched):
            continue  # made with requires_grad=True to evaluate, never differentiated, while optimizers train others
        site = _unused_module_site(run, watched, families) or record.defined_at(watched)
        consumer, returned = record.consumer(watched.key) or (None, None)
        if consumer == COMPILED_NODE:
            found.append(run.finding(
                "non_differentiable", "error" if expected else "warning", watched.name, site,
                f"{watched.name} is in the loss's graph, but the graph torch.compile built ({consumer}) passed it "
                "no gradient: a cut inside compiled code, whose operations this backend runs out of the tracer's "
                "sight.",
                'find the cut\'s line by tracing with torch.compile(..., backend="eager") or without torch.compile, '
                "then remove it.",
            ))
            continue
        gate = record.gate(watched.key) if consumer is not None else None
        if gate is not None:
            line, tested, position = gate
            found.append(run.finding(  # a user's Function's backward skipped it on a requires_grad test
                "non_differentiable", "error" if expected else "warning", watched.name, line,
                f"{watched.name} is in the loss's graph, but {consumer} passed it no gradient: its backward leaves the "
                f"gradient of input {position} None here unless {tested}.requires_grad, and a tensor made in forward "
                "(which runs with gradients off: a reshape's copy, a cast) never requires grad, whatever its input "
                "did.",
                f"test ctx.needs_input_grad[{position}] instead of {tested}.requires_grad.",
                related={"defined": site, "symptom": watched.grad_read},
            ))
            continue
        if consumer is not None:
            found.append(run.finding(  # at the return of a user's Function's backward, which hands it out
                "non_differentiable", "error" if expected else "warning", watched.name, returned or site,
                f"{watched.name} is in the loss's graph, but {consumer} passed it no gradient"
                + (f": the return of its backward here gives None for the input it came in through (it is defined "
                   f"at {site})." if returned else " (a custom autograd.Function whose backward returns None for it, "
                   "or an input it does not differentiate)."),
                f"return a gradient for this input from {consumer}'s backward, or compute the path with "
                "differentiable torch ops.",
                related={"defined": site if returned else None, "symptom": watched.grad_read},
            ))
            continue
        if run.uses(watched):
            continue  # its values were cut on the way: those cuts are the findings
        if record.under_derivative(watched.key) and _siblings_learn(run, watched):
            continue  # its layer reached the loss through a derivative, which does not depend on it (a bias)
        if run.last_of_a_loop(watched):
            continue  # the last of the leaves a loop remakes on this line, whose earlier ones got gradients
        fix = ("use it in the computation of the loss, or set requires_grad_(False) on it if it is not meant "
               "to learn.")
        used = None
        if watched.is_parameter and watched.owner is not None:
            module = watched.holder or watched.owner.cls
            own_forward, parent_forward = watched.forwards
            if _siblings_learn(run, watched) and watched.read_in_forward is not None:
                site = watched.read_in_forward  # read there, and what it made went nowhere
                where = (f"; {module}.forward computes with it here, but what it makes never reaches the loss (a "
                         "result dropped, or overwritten before use)")
                fix = ("keep the result and pass it on (`x = ...`): a call that returns a new object (an "
                       "out-of-place method such as `set_value`, `add`, `masked_fill`) leaves the one it was called "
                       "on unchanged.")
            elif _siblings_learn(run, watched) and (dropped := _dropped(watched, site)) is not None:
                site = dropped.site
                where = (f"; `{dropped.given_to}` is given it as `{_own_name(watched)}` and never uses it: this call "
                         f"to `{dropped.callee}`, which takes `{_own_name(watched)}`, leaves it out")
                fix = f"pass it on here (`{_own_name(watched)}={_own_name(watched)}`), so that the loss depends on it."
            elif _siblings_learn(run, watched) and own_forward is None:  # no forward of the user's uses it
                where = f"; the other parameters of {module} reach the loss, and this one never does"
                fix = ("make the code that uses the other parameters use this one too (a value computed from it and "
                       "passed on is lost where a callee never reads it), or set requires_grad_(False) on it if it "
                       "is not meant to learn.")
            elif _siblings_learn(run, watched):
                where, used = f"; {module}.forward does not use it", own_forward
                fix = (f"use it in {module}.forward so that the loss depends on it, or set requires_grad_(False) "
                       "on it (or register it as a buffer) if it is not meant to learn.")
            elif (call := _unlearnt_call(watched, families)) is not None:
                caller, used, users = call
                where = (f"; {caller} was called at {used}, but no backward went through its output (none of its "
                         "parameters got a gradient)")
                fix = (f"make the loss that backward() starts from depend on the output of this {caller} call (an "
                       "output dropped by `x, _ = ...` or overwritten is lost), or stop calling it and remove it "
                       "(freeze it with requires_grad_(False) if it should stay but not learn).")
                if watched.thawed_at is not None and not users:  # a library's layer a user line switched on
                    site, where = watched.thawed_at, where + "; this line made it trainable"
                    fix = (f"freeze this {caller} after this line (its requires_grad_(False)) if the loss is not meant "
                           f"to use its output, or make the loss depend on the output of the {caller} call.")
            elif (instead := record.called_instead(watched.key)) is not None:  # a sibling called twice, here second
                attribute, sibling, site = instead
                where = (f"; `{attribute}` is never called, while `{sibling}`, of the same class, is called a second "
                         "time here")
                fix = (f"call `{attribute}` here if this is where it belongs (a copy of the `{sibling}` call written "
                       f"twice), or remove `{attribute}` if it is not meant to be used.")
            elif (skipped := _skipped_by_its_call(run, watched, families)) is not None:
                cls, site, used, part = skipped
                where = (f"; `{part}` learns in the other {cls} modules, but this {cls}, called here, never ran it: "
                         f"this call does not give it what theirs do (one is at {used})")
                fix = (f"call this {cls} as the others are called (compare with {used}), so that its "
                       f"`{part.split('.')[0]}` runs, or leave that part out of this {cls} if it is not meant to be "
                       "used here.")
            else:
                where = (f"; no parameter of {module} got a gradient, so its forward was never called "
                         "or its output was not used")
                used = parent_forward
                layer = watched.name.split(".")[-2] if watched.name.count(".") >= 2 else None
                fix = (f"call this {module}{f' (`{layer}`)' if layer else ''} in the model's forward so that its "
                       "output reaches the loss, or remove it (freeze it with requires_grad_(False) if it "
                       "should stay but not learn).")
        else:
            where = ""
        found.append(run.finding(  # a module built before the trace: its forward is the line we know
            KIND, "error" if expected else "warning", watched.name, site or used,
            f"{watched.name} never took part in computing a loss{where}.",
            fix, related={"used": used},
        ))
    return found + uneven_gathers(run)


class _Families:
    """The modules user code set or called during the trace, each with the trainable tensors below it; built on first
    use, once per scan."""

    def __init__(self, run) -> None:
        self.run = run
        self._learnt: dict[int, bool] | None = None
        self._modules: dict[int, tuple[str, frozenset[tuple[str, ...]], set[tuple[str, ...]], Site | None]] | None = None

    def modules(self) -> dict[int, tuple[str, frozenset[tuple[str, ...]], set[tuple[str, ...]], Site | None]]:
        """Each module user code called: its class, the paths of the parameters below it, those that got a gradient,
        and its first call."""
        if self._modules is None:
            found: dict[int, tuple[str, set, set, Site | None]] = {}
            for w in self.run.record.watched():
                path = w.name.split(".")
                for depth, (ident, cls, site, _) in enumerate(w.calls[:len(path) - 1]):
                    entry = found.setdefault(ident, (cls, set(), set(), site))
                    entry[1].add(tuple(path[-(depth + 1):]))
                    if w.ever_grad:
                        entry[2].add(tuple(path[-(depth + 1):]))
            self._modules = {ident: (cls, frozenset(params), learnt, site)
                             for ident, (cls, params, learnt, site) in found.items()}
        return self._modules

    def learnt(self, ident: int) -> bool:
        """Whether a trainable tensor below the module ``ident`` got a gradient."""
        if self._learnt is None:
            self._learnt = {}
            record = self.run.record
            for w in record.watched():
                if w.trainable():
                    for module in {ident for ident, _ in w.placed} | {ident for ident, *_ in w.calls}:
                        self._learnt[module] = self._learnt.get(module, False) or w.ever_grad
        return self._learnt.get(ident, False)


def _unused_module_site(run, watched, families: _Families):
    """Where user code set the outermost module on the way none of whose parameters learnt (a submodule the
    forward never calls): the parent's ``self.block = Block()``, not the ``nn.Conv2d`` inside the block."""
    for ident, site in reversed(watched.placed):  # the outermost first
        if not families.learnt(ident):
            return site
    return None


def _unlearnt_call(watched, families: _Families):
    """The outermost module above the tensor none of whose parameters learnt, if user code called it: its class, the
    line of its first call (it ran; its output reached no backward) and whether its forward is the user's code."""
    found = None
    for ident, cls, site, users in watched.calls:  # the holder first
        if families.learnt(ident):
            break
        if site is not None:
            found = cls, site, users
    return found


def _own_name(watched) -> str:
    """The tensor's own attribute name (``logit_bias`` of ``CLIP.logit_bias``)."""
    return watched.name.rpartition(".")[2]


def _dropped(watched, site: Site | None) -> DroppedArgument | None:
    """A call in the user's files that drops an argument of the tensor's own name (`dropped_arguments`)."""
    files = [place.file for place in (site, watched.grad_read) if place is not None]
    return dropped_argument(files, _own_name(watched)) if files else None


def _siblings_learn(run, watched) -> bool:
    """Whether another parameter of its module (or of a submodule) got a gradient: that forward ran."""
    return any(run.record.watched_at(key).ever_grad for key in watched.siblings if key != watched.key)


def _skipped_by_its_call(run, watched, families: _Families):
    """When the innermost module above the tensor that user code called learnt otherwise, and another module of that
    class with the same parameters learnt the same tensor (``final_block(x)`` where the other blocks get
    ``block(x, t)``, whose ``time_mlp`` runs only given ``t``): that class, this module's call, the other's call,
    and the part of the module the tensor is in; else None. A module built otherwise (other layers) differs by design."""
    path = watched.name.split(".")  # the model's label, then the attribute path down to the tensor
    for depth, (ident, cls, site, _) in enumerate(watched.calls):
        if site is None:
            continue
        if not families.learnt(ident) or depth + 1 >= len(path):  # none of it learnt, or the model itself
            return None
        part, modules = tuple(path[-(depth + 1):]), families.modules()
        params = modules[ident][1]
        for other, (other_cls, other_params, learnt, other_site) in modules.items():
            if other != ident and other_cls == cls and other_params == params and part in learnt and other_site:
                return cls, site, other_site, ".".join(part[:-1])
        return None
    return None
