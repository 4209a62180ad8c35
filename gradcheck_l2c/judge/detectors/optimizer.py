"""`optimizer`: a watched parameter sits in two optimizers that both step it after the second was built
(rebinding ``opt = SGD(...)`` for a new phase is silent, unless the new one leaves out parameters that still get
gradients), or gets gradients but is in none; or a ``step()`` finds every gradient erased since the last backward,
or runs in a run without any backward; or its parameters' loss is made at every step of a run that never differentiates
it (`undifferentiated`).

Both are noticed while the tensors live: at an optimizer's construction, and at a parameter's first
gradient.
"""
from __future__ import annotations

from gradcheck_l2c.judge.backward_branch import branch_around_backward
from gradcheck_l2c.judge.crashed_reads import crashed_read
from gradcheck_l2c.judge.listing import listed
from gradcheck_l2c.judge.remade import drawn_in_forward, made_in_every_forward, remade_key, remade_sites
from gradcheck_l2c.judge.scopes import follows_in_scope, next_statement
from gradcheck_l2c.judge.undifferentiated import never_differentiated
from gradcheck_l2c.judge.unread_gradients import unread_findings
from gradcheck_l2c.records import Finding

KIND = "optimizer"


def scan(run) -> list[Finding]:
    record = run.record
    found = []
    remade = remade_sites(run)
    backwardless = not (record.backwards or record.autograd_errors or record.untraced)  # none here, nor elsewhere
    stepped = False  # a step in a run without any backward was told
    for event in record.events(KIND):
        if event.detail == "erased":
            optimizer = event.extra["optimizer"]
            found.append(run.finding(
                KIND, "error", f"{optimizer} ({event.extra['size']} parameters)", event.site,
                f"{optimizer}.step() found no gradient on any of its parameters although gradients arrived since "
                "the previous step: they were erased in between, so this step changes nothing.",
                "call optimizer.zero_grad() before the gradients are made (before loss.backward(), or before "
                "assigning .grad), or right after step(); never between them and step().",
                event.count, related={"symptom": event.extra.get("step")},
            ))
            continue
        if event.detail == "swapped":
            optimizer, other = event.extra["optimizer"], event.extra["records"][1]
            there = other.params_site or other.site
            found.append(run.finding(
                KIND, "warning", f"{optimizer} ({event.extra['size']} parameters)", event.site,
                f"the {optimizer} given this list finds no gradient at its step() (at {event.extra.get('step')}): the "
                f"backward before it reached only parameters of the {other.name} given the list at {there}, none of "
                "these, so the two optimizers look given each other's parameters and neither changes a weight.",
                f"give the {optimizer} here the parameters its loss trains, and the {other.name} at {there} its own.",
                event.count, related={"symptom": event.extra.get("step"), "used": there},
            ))
            continue
        if event.detail == "read_cleared":
            if event.key in run.keys:
                name, read, by = run.name(event.key), event.extra["read"], event.extra["by"]
                found.append(run.finding(
                    KIND, "warning", name, event.site,
                    f"{name}.grad read at {read} is None because {by}.zero_grad() here set it to None after the "
                    "backward that gave it (set_to_none=True, the default since PyTorch 2.0): the gradient did arrive.",
                    "read or log the gradient between loss.backward() and zero_grad(), or call zero_grad() at the start "
                    "of the step, before the forward.", event.count, related={"symptom": read}))
            continue
        if event.detail == "left":
            gone, newest = event.extra["records"]
            if event.key in run.keys:
                name, there = run.name(event.key), newest.params_site or newest.site
                found.append(run.finding(
                    KIND, "warning", name, there,
                    f"{name} was in the {gone.name} built at {gone.site}, which is gone; the {newest.name} built at "
                    f"{newest.site} in its place does not hold it, so it stops changing although backwards still "
                    "give it gradients.",
                    f"give this {newest.name} the parameters the {gone.name} had (the same list), or freeze "
                    f"{name} with requires_grad_(False) if it should stop learning.",
                    event.count, related={"used": gone.site}))
            continue
        if event.detail == "no_backward":
            if backwardless:
                stepped = True
                found.append(_no_backward(run, event))
            continue
        if event.key not in run.keys:
            continue
        name = run.name(event.key)
        if event.detail == "none":
            watched = record.watched_at(event.key)
            tensor = watched.tensor
            if watched.optimized or (tensor is not None and any(r.holds(tensor) for r in record.optimizers)):
                continue  # an optimizer built later took it
            if watched.stepped_by_script:
                continue  # the script steps it itself (a multiplier raised along its gradient by hand)
            if any(event.key in hidden.keys for hidden in record.unregistered.values()):
                continue  # no module registers it: that (non_parameter_tensor) is the line to change
            meant = _meant_for(run, name, watched)
            anew = remade_key(watched) in remade
            if anew and watched.made_in_forward and watched.owner is not None and meant is not None \
                    and _made_after(run, watched, meant):
                found.append(made_in_every_forward(run, watched, event, meant))
                continue
            message, fix = _none(run, watched, meant, anew)
            site, related = event.site, {"defined": event.site}
            if meant is not None:
                site = meant.site
                if (watched.made_in_forward or anew) and _made_after(run, watched, meant):
                    site, related = event.site, {"used": meant.site}  # the lazy creation is the line to change
                elif _made_after(run, watched, meant) and watched.built_at is not None \
                        and (run.replaces(watched) or _trains_instead(run, watched, meant)):
                    # the rebuild, or the new model trained in the old one's place, not the optimizer
                    site, related = watched.joined or watched.built_at, {"used": meant.site}
                elif event.key in meant.group_keys and not _made_after(run, watched, meant):
                    site, related["used"] = meant.group_site, meant.site  # the group built and never given
                elif meant.params_site is not None and not _made_after(run, watched, meant):
                    site, related["used"] = meant.params_site, meant.site  # the list that left it out
            found.append(run.finding(KIND, "warning", name, site, message, fix, event.count, related=related))
            continue
        first, second = event.extra["records"]
        if not (first.step_order > second.created and second.step_order >= 0):
            continue  # the first optimizer was done before the second was built: a new phase, not a clash
        if any(record.undone == record.steps for record in (first, second)):
            continue  # every step of one was taken back by reloading the weights (MAML's inner step): no clash
        attr = name.split(".", 1)[-1]
        if len(first.params) > len(second.params) and first.site is not None:
            # the first took every parameter (model.parameters()), the second the few meant for it: the first
            # is the line to change (DARTS' architecture weights, a head with its own optimizer)
            found.append(run.finding(
                KIND, "warning", name, first.site,
                f"{name} is in two optimizers ({event.extra['first']} and {event.detail}): this "
                f"{event.extra['first']} took all {len(first.params)} parameters, so each step updates it with "
                f"both rules.",
                f"build this {event.extra['first']} from the other parameters only: "
                f"[p for n, p in model.named_parameters() if n != '{attr}'].",
                event.count, related={"used": event.site},
            ))
            continue
        found.append(run.finding(
            KIND, "warning", name, event.site,
            f"{name} is in two optimizers ({event.extra['first']} and {event.detail}): each step updates it "
            "with both rules.",
            f"give each optimizer its own parameters: leave it out of this {event.detail}, or build the "
            f"{event.extra['first']}{f' at {first.site}' if first.site else ''} from "
            f"[p for n, p in model.named_parameters() if n != '{attr}'].",
            event.count,
        ))
    if backwardless and not stepped:
        found.extend(never_differentiated(run, KIND))
    never = _never_stepped(run)
    # the backwards of an optimizer that never stepped: its missing step is the finding (at the backward, or at the
    # scheduler step that stands in its place, with the backward as symptom)
    lines = {(f.file, f.line) for f in never}
    lines |= {(p.file, p.line) for f in never for p in f.related if p.role == "symptom"}
    return found + unread_findings(run, lines) + never + drawn_in_forward(run) + crashed_read(run)


def _never_stepped(run) -> list[Finding]:
    """Optimizers whose parameters got gradients from several backwards, but that never stepped: the one
    ``step()`` call the script has for them never ran (a condition that is never true), or the script has
    none, and a backward that reached only their parameters is where it belongs."""
    found = []
    if run.record.backwards < 2:
        return found
    refused = {error.call for error in run.record.autograd_errors}  # a refused backward skips the step after it
    # the parameters of a refused backward: their optimizer's step, meant to follow it, never came
    refused_keys = frozenset().union(*(error.reaches for error in run.record.autograd_errors))
    stepped = {key for other in run.record.optimizers if other.step_order >= 0 for key in other.keys}
    for record in run.record.optimizers:
        keys = [key for key in record.keys if key in run.keys and key not in stepped
                and run.record.watched_at(key).ever_grad and not run.record.watched_at(key).grad_used]
        if (record.step_order >= 0 or not keys or record.site is None or _after_refusal(record, refused)
                or not refused_keys.isdisjoint(keys) or _container(run, keys, stepped)):
            continue
        shown = listed(sorted({run.name(key) for key in keys}))
        call = f"{min(record.names)}.step()" if record.names else "step()"
        if record.step_call is None and record.scheduler_step is not None and \
                record.scheduler_steps >= run.record.backwards:
            found.append(run.finding(
                KIND, "warning", shown, record.scheduler_step,
                f"this line steps the learning-rate schedule of the {record.name} built at {record.site} after each of "
                f"the {run.record.backwards} backward passes that gave its parameters gradients, but the script never "
                "calls the optimizer's own step(): a schedule changes the learning rate, not the parameters, so they "
                "never changed.",
                f"call {call} here, before the scheduler's step().",
                related={"used": record.site, "symptom": record.lone_backward},
            ))
            continue
        instead = _stepped_instead(run, record) if record.step_call is None else None
        if instead is not None:
            found.append(run.finding(
                KIND, "warning", shown, instead.step_site,
                f"this step() is the {instead.name}'s (built at {instead.site}), right after a backward (at "
                f"{record.lone_backward}) that reaches none of its parameters: the gradients of that backward go to "
                f"the parameters of the {record.name} built at {record.site}, whose step() the script never calls, "
                "so they never changed.",
                f"step the optimizer that holds them here: {call}.",
                related={"used": record.site, "symptom": record.lone_backward},
            ))
            continue
        if record.step_call is None and record.lone_backward is not None:
            found.append(run.finding(
                KIND, "warning", shown, record.lone_backward,
                f"{run.record.backwards} backward passes gave gradients to the parameters of the {record.name} "
                f"built at {record.site}, but the script never calls its step(): the gradients of the backward here "
                "reach only its parameters, and no step ever uses them, so they never changed.",
                f"call {call} after this backward (and zero_grad() before the next one).",
                related={"used": record.site},
            ))
            continue
        partner = _stepped_beside(run, record) if record.step_call is None else None
        if partner is not None:
            found.append(run.finding(
                KIND, "warning", shown, partner.step_site,
                f"{run.record.backwards} backward passes gave gradients to the parameters of the {record.name} "
                f"built at {record.site}, but the script never calls its step(): the backward at "
                f"{record.shared_backward} gives gradients to them and to those of the {partner.name} built at "
                f"{partner.site}, and only that one steps, here, so they never changed.",
                f"call {call} here too (and its zero_grad() beside the other's), or give the {partner.name} these "
                "parameters as well.",
                related={"used": record.site, "symptom": record.shared_backward},
            ))
            continue
        if record.step_guard is not None:
            where = f"its step() at {record.step_call} never ran: the condition here was never true"
        elif record.step_call is not None:
            where = f"its step() at {record.step_call} never ran"
        else:
            where = "no step() call ran for it"
        fix = ("make the step run: check the condition around it (with gradient accumulation, step when "
               "(i + 1) % accumulation_steps == 0, and after the last batch when an epoch is shorter)."
               if record.step_call is not None else
               f"call {call} after the backward() of the loss meant to train these parameters: the script has no "
               "step() call for this optimizer.")
        found.append(run.finding(
            "no_update", "warning", shown, record.step_guard or record.step_call or record.site,
            f"{run.record.backwards} backward passes gave gradients to the parameters of the {record.name} built at "
            f"{record.site}, but {where}, so they never changed.", fix, related={"used": record.site},
        ))
    return found


def _container(run, keys: list[int], stepped: set[int]) -> bool:
    """An optimizer that never steps, whose parameters the script differentiates itself with ``autograd.grad`` while
    another optimizer steps (a differentiable inner loop given its ``param_groups``, as ``higher`` takes a torch
    optimizer): a container of settings, whose step is not meant to run."""
    return bool(stepped) and all(run.record.differentiated(key) for key in keys)


def _stepped_beside(run, record):
    """The optimizer that steps, in the function of a joint backward's line, the parameters that backward gave
    gradients besides those of ``record`` (which never steps): where ``record``'s step belongs."""
    shared = record.shared_backward
    if shared is None:
        return None
    return next((other for other in run.record.optimizers if other.position in record.shared_with
                 and other.step_order >= 0 and other.step_site is not None
                 and follows_in_scope(shared, other.step_site)), None)


def _none(run, watched, record, anew: bool = False) -> tuple[str, str]:
    """Message and fix for a parameter in no optimizer: made after the optimizer, or left out of its list."""
    name = watched.name
    freeze = "; freeze it with requires_grad_(False) if it should not learn."
    if record is None:
        return (f"{name} gets gradients but is in no optimizer, so it never changes.",
                "pass it to an optimizer (model.parameters() holds every parameter), or add it with "
                "optimizer.add_param_group({'params': [param]})" + freeze)
    if anew and _made_after(run, watched, record):
        return (f"{name} gets gradients but is in no optimizer, so it never changes: this line makes a new "
                f"Parameter at every call, after the {record.name} built at {record.site}, so each step's "
                "gradient lands on a fresh one that no optimizer holds and the next call starts again from the "
                "initial value.",
                "make it once, as a Parameter of the model (self.x = nn.Parameter(...) in __init__), build the "
                f"{record.name} from model.parameters(), and use that Parameter here" + freeze)
    if _made_after(run, watched, record) and watched.made_in_forward:
        return (f"{name} gets gradients but is in no optimizer, so it never changes: it is made here, in a forward "
                f"(at its first call), after the {record.name} built at {record.site}, which holds only the "
                "parameters that existed then.",
                f"create it in __init__ with its final shape, or build the {record.name} after a first forward "
                "(a dry run), as lazy modules need" + freeze)
    if _made_after(run, watched, record) and watched.built_at is not None and run.replaces(watched):
        return (f"{name} gets gradients but is in no optimizer, so it never changes: it was made here to replace a "
                f"parameter of the same shape that the {record.name} built at {record.site} holds, and that "
                "optimizer keeps updating the old one.",
                "put the values into the existing parameters instead of making new ones (module.load_state_dict(...), "
                f"or `with torch.no_grad(): param.copy_(...)`), or build the {record.name} again after this line.")
    if _made_after(run, watched, record) and watched.built_at is not None and _trains_instead(run, watched, record):
        return (f"{name} gets gradients but is in no optimizer, so it never changes: its model (or module) was made "
                f"after the {record.name} built at {record.site} and is trained in place of the parameters that "
                "optimizer holds, which no backward reached since.",
                f"build the {record.name} for the new model after this line (from its parameters()), or put the "
                "values into the old model (old.load_state_dict(new.state_dict())) instead of making a new one.")
    if _made_after(run, watched, record):
        return (f"{name} gets gradients but is in no optimizer, so it never changes: it was made after the "
                f"{record.name} built here, which holds only the parameters that existed then.",
                f"build the {record.name} after the model is complete, from model.parameters(), or add the new "
                "parameters with optimizer.add_param_group({'params': [...]})" + freeze)
    if record.group_guarded and watched.key in record.group_keys:
        return (f"{name} gets gradients but is in no optimizer, so it never changes: the list the {record.name} built "
                f"at {record.site} takes gets its group only in a branch of this `if`, which the run did not take.",
                "let the condition hold for this run's configuration too, or add the group whatever it is" + freeze)
    built = "built here" if record.params_site is None else f"built at {record.site}"
    return (f"{name} gets gradients but is in no optimizer, so it never changes: it already existed when the "
            f"{record.name} {built} was given a list of parameters without it.",
            (f"give the {record.name} all parameters (model.parameters())" if record.params_site is None else
             f"add it to the parameter list built here, which the {record.name} takes")
            + ", or add the left-out ones with optimizer.add_param_group({'params': [...]})" + freeze)


def _stepped_instead(run, record):
    """The optimizer whose ``step()`` stands right below the backward that reaches only ``record``'s parameters
    (``distil_loss.backward()`` then ``optimizer.step()``: the other model's optimizer, a slip of the name), when
    that step holds none of them; else None."""
    backward = record.lone_backward
    after = next_statement(backward) if backward is not None else None
    if after is None:
        return None
    return next((other for other in run.record.optimizers if other is not record and other.step_site == after
                 and other.keys.isdisjoint(record.keys)), None)


def _made_after(run, watched, record) -> bool:
    """The parameter was made after the optimizer was built (a layer added or replaced later)."""
    return record.ordinal > 0 and watched.optimizers_before >= record.ordinal


def _trains_instead(run, watched, record) -> bool:
    """A new model bound to a name after the optimizer (``net = Net2()``, ``copy = deepcopy(model)``) is trained,
    while no backward since reached any parameter the optimizer holds: it steps a model the script left."""
    return watched.rebound and not any(run.record.watched_at(key).last_reached > watched.born
                                       for key in record.keys)


def _no_backward(run, event) -> Finding:
    """A step in a run that called no backward at all: its parameters never get a gradient, every step is void; named
    at the branch that kept the step's function from its one ``backward()`` call, when it has one."""
    optimizer = event.extra["optimizer"]
    seen = _read_empty(run, event.site)
    branch = branch_around_backward(event.site)
    if branch is not None:
        guard, call = branch
        return run.finding(
            KIND, "error", f"{optimizer} ({event.extra['size']} parameters)", guard,
            f"no backward ran in the whole run: the backward() at {call} sits in this branch, which the run never "
            f"took, so {optimizer}.step() found no gradient and never changed its parameters.",
            "call backward() on every path that reaches optimizer.step(): take it out of the branch (scale the loss "
            "in the branch, then backpropagate after it).", event.count,
            related={"symptom": seen or event.site, "used": call})
    return run.finding(
        KIND, "error", f"{optimizer} ({event.extra['size']} parameters)", event.site,
        f"{optimizer}.step() ran, but no backward ran in the whole run: its parameters never "
        "got a gradient, so no step changed them.",
        "call loss.backward() after optimizer.zero_grad() and before optimizer.step().", event.count,
        related={"symptom": seen} if seen is not None else None)


def _read_empty(run, step_site):
    """A line where the script read the ``.grad`` of a parameter the optimizer stepping at ``step_site`` holds (in a
    run without backward, it found None): where the script saw the missing backward."""
    held = sorted(set().union(*(record.keys for record in run.record.optimizers if record.step_site == step_site)))
    return next((read for read in (run.record.watched_at(key).grad_read for key in held) if read is not None), None)


def _after_refusal(record, refused: set) -> bool:
    """Its one ``step()`` line comes after a backward that PyTorch refused, in the same function: the step never
    ran because the script stopped there (or skipped it), which that error already explains."""
    call = record.step_call
    return call is not None and any(site is not None and follows_in_scope(site, call) for site in refused)


def _meant_for(run, name: str, watched):
    """The optimizer that should hold the parameter ``name``: the only one, the only one whose first step came right
    after the backward that first gave it a gradient (a critic's optimizer after the value loss's backward), or the one
    holding the parameters nearest to it in the module tree (``shared.decoder.w`` goes with
    ``shared.encoder``'s optimizer, not with the one of the experts beside ``shared``)."""
    records = [r for r in run.record.optimizers if r.site is not None]
    if len(records) == 1:
        return records[0]
    after = [r for r in records if watched.first_reached and r.first_step_backwards == watched.first_reached]
    if len(after) == 1:
        return after[0]
    path = name.split(".")
    best, depth = None, 0
    for record in records:
        shared = max((_common(path, run.name(key).split(".")) for key in record.keys), default=0)
        if shared > depth:
            best, depth = record, shared
    return best


def _common(a: list[str], b: list[str]) -> int:
    """How many leading components two dotted names share."""
    count = 0
    for x, y in zip(a, b):
        if x != y:
            break
        count += 1
    return count
