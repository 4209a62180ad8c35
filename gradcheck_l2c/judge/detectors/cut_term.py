"""`cut_term`: a term of the loss carries no gradient although it is computed from tensors the loss's other
terms train: its values reached the tensors only through a cut, so it adds nothing to their update.

The finding sits on the cut (the line to change), with the line that added the term as its symptom. A term
cut for another optimizer's step (a GAN's discriminator loss on a detached fake) is not dead: it has a
gradient of its own, so it is never reported here.
"""
from __future__ import annotations

import ast
import linecache

from gradcheck_l2c.judge.listing import listed
from gradcheck_l2c.judge.scopes import innermost_scope, parse
from gradcheck_l2c.record.facts import Site
from gradcheck_l2c.records import Finding

KIND = "cut_term"


def scan(run) -> list[Finding]:
    found = []
    for (added_at, key, chain), count in run.record.dead_terms.items():
        if key not in run.keys:
            continue
        watched = run.record.watched_at(key)
        if not (run.optimized_param(watched) or watched.grad_used):
            continue  # neither an optimizer nor the script's own update uses its gradient: the cut changes nothing
        name = watched.name
        for event in chain:
            cut = run.cut_finding(event, name)  # its fix, and its place (a call made inside a no_grad block)
            site = run.cut_site(event)
            detail = f"{event.sampled_by}()" if event.sampled_by else event.detail  # Normal.sample(), not its expand
            op = f"`{detail}`" if site == event.site else f"`{detail}` at {event.site}"
            how = f"{op} ran with gradients disabled and" if event.kind == "no_grad" else op
            found.append(run.finding(
                KIND, "warning", name, site,
                f"{how} cut a term of the loss from {name}: the term added at {added_at} carries no gradient to it, "
                f"so it adds nothing to {name}'s update, although the loss's other terms reach it.",
                cut.fix, count, related={"symptom": added_at},
            ))
    return found + _first_order(run) + _unused_gradients(run) + _dropped(run)


def _first_order(run) -> list[Finding]:
    """A gradient step ``w - lr * g`` with ``g`` taken without ``create_graph=True`` fed a loss whose backward reached
    ``w`` (MAML's inner loop): the loss reaches ``w`` only directly, the term through ``g`` is cut. At the cut."""
    found = []
    for (step_at, key, chain), count in run.record.first_order_steps.items():
        watched = run.record.watched_at(key)
        if key not in run.keys or not run.optimized_param(watched):
            continue
        name, event = watched.name, chain[-1]
        found.append(run.finding(
            KIND, "warning", name, run.cut_site(event),
            f"`{event.detail}` returned the gradient of {name} without a graph, and the step at {step_at} "
            f"({name} - lr * grad) fed a loss: that loss reaches {name} only directly, so the second-order term of its "
            "update, through the gradient, is cut (a first-order update).",
            "pass create_graph=True to torch.autograd.grad here for the full (second-order) update; if a first-order "
            "approximation is meant, suppress this finding.",
            count, related={"symptom": step_at},
        ))
    return found


def _unused_gradients(run) -> list[Finding]:
    """Gradients taken with ``create_graph=True`` (a penalty on them, as WGAN-GP's and R1's) that no backward
    ever ran through: the penalty never reached a loss. The finding sits on the loss it was meant for."""
    found = []
    for taken in run.record.taken_gradients:
        keys = [key for key in taken.keys if key in run.keys]
        if taken.used or not keys or not any(run.optimized_param(run.record.watched_at(k)) for k in keys):
            continue
        shown = listed(sorted({run.name(key) for key in keys}))
        where = taken.loss_site or taken.site
        found.append(run.finding(
            KIND, "warning", shown, where,
            f"the gradients taken at {taken.site} with create_graph=True never reached a backward: what was "
            f"computed from them (a gradient penalty) is in no loss, so it adds nothing to the update of {shown}.",
            "add the term computed from those gradients to this loss (loss = loss + penalty) before backward(); "
            "if the gradients are only logged, drop create_graph=True.",
            taken.taken, related={"defined": taken.site},
        ))
    return found


def _dropped(run) -> list[Finding]:
    """Scalars user code made from tensors a backward trained, dropped before any backward ran through them
    (`record.dropped_terms`): at the line that dropped them, the ``return`` that left them behind, or, for one
    rebound at its own line every step, the loss that should have summed it."""
    found = []
    for (made, dropped), (term, count) in run.record.dropped_terms.items():
        keys = [key for key in sorted(term.keys) if key in run.keys]
        if not any(run.optimized_param(run.record.watched_at(k)) or run.record.watched_at(k).grad_used for k in keys):
            continue
        shown = listed([run.name(key) for key in keys])
        term_at = f"the term made at {made} (`{term.op}`) from {shown}"
        where, what = dropped, f"{term_at} was dropped at {dropped} (rebound or discarded) before any backward ran through it"
        if term.returned and _calls(dropped, term.returned):
            where = _single_return(made) or dropped
            what = f"{term_at} was left behind when its function returned, and no backward ran through it"
        elif term.returned:
            what = f"{term_at} was left behind when the function called at {dropped} returned, and no backward ran through it"
        elif term.late and made == dropped and term.loss is not None:
            where = term.loss
            what = (f"{term_at} is made at every step and never used: the loss made at {term.loss}, which the "
                    "backward differentiates, leaves it out")
        found.append(run.finding(
            KIND, "warning", shown, where, f"{what}, so it adds nothing to the update of {shown}.",
            "add it to the loss that is backpropagated (loss = loss + term, or return the total that includes it); if "
            "it is only logged, compute it under torch.no_grad() or read it with .item().",
            count, related={"defined": made},
        ))
    return found


def _calls(site: Site, function: str) -> bool:
    """Whether the statement at ``site`` calls a function or method named ``function``."""
    tree = parse("".join(linecache.getlines(site.file)))
    return tree is not None and any(
        isinstance(node, ast.Call) and node.lineno <= site.line <= (node.end_lineno or node.lineno)
        and (node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)) == function
        for node in ast.walk(tree))


def _single_return(made: Site) -> Site | None:
    """The ``return`` statement of the function around ``made``, when it has only one."""
    tree = parse("".join(linecache.getlines(made.file)))
    if tree is None:
        return None
    scope = innermost_scope(tree, made.line)
    if isinstance(scope, ast.Module):
        return None
    returns = [node for node in ast.walk(scope) if isinstance(node, ast.Return)
               and innermost_scope(tree, node.lineno) is scope]
    return Site(made.file, returns[0].lineno) if len(returns) == 1 else None
