"""How a backward that reached a graph an earlier backward freed is told: by where the line the trace names sits
(a loss backpropagated twice, a forward run once for two backwards, a value kept on a module, a value made in one
iteration or for one loss and taken into another), what happened there and the change to make."""
from __future__ import annotations

from gradcheck_l2c.record.facts import AutogradError, Site


def freed_graph_words(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    """The message and the fix of a ``freed_graph`` autograd error (`AutogradError`)."""
    freed_by = fact.detail.get("freed_by")
    earlier = f"an earlier backward() (at {freed_by})" if isinstance(freed_by, Site) else "an earlier backward()"
    if fact.cause is None:
        return (f"backward(){call} reached a graph that {earlier} had already freed: a value computed before "
                f"that backward is used again, so its old graph would be backpropagated through twice{said}.",
                "find the value that outlives its iteration (a hidden state, a running total, a tensor computed "
                "once before the loop) and .detach() it where it is carried over, or compute it anew each "
                "iteration; pass retain_graph=True to the earlier backward() only if both must backpropagate "
                "through it.")
    inner = fact.detail.get("inner")
    first = fact.detail.get("first_call")
    if isinstance(first, Site):
        return (f"this line backpropagates `{name}` a second time (backward(){call}): the call at {first} already ran "
                f"backward() on it and freed its graph, and nothing was computed anew in between{said}.",
                f"delete this backward (the gradients of `{name}` arrived with the first one), or the one the call at "
                f"line {first.line} runs; pass retain_graph=True to the first only if both must run.")
    if fact.detail.get("by_grad"):
        return (f"this torch.autograd.grad() ran without retain_graph=True and freed the graph behind its outputs; "
                f"backward(){call} then runs through that graph again (its loss uses a value computed in it){said}.",
                "pass retain_graph=True to this torch.autograd.grad() (and create_graph=True if a loss uses the "
                "gradients it returns, as a force-matching loss does), or compute the value again for the loss.")
    if fact.detail.get("root") and isinstance(inner, Site):
        return (f"the forward pass that starts on this line and ends in the loss at {inner} ran once, and "
                f"backward(){call} runs through its graph again after {earlier} freed it: nothing new is "
                f"computed for this backward{said}.",
                f"move the forward pass, from this line to the loss at {inner}, to where each backward() gets a "
                "graph of its own (inside the loop); pass retain_graph=True to the first backward() only if "
                "the same graph must be backpropagated twice.")
    if fact.detail.get("root"):
        return (f"backward(){call} runs through the graph of the value made on this line a second time: "
                f"{earlier} already backpropagated through it and freed it{said}.",
                "compute the value again before the second backward(), or pass retain_graph=True to the first "
                "backward() if both must run through this graph.")
    node = fact.detail.get("node", "a node")
    if fact.detail.get("taken_earlier"):
        value = f"the value made at {inner}" if isinstance(inner, Site) else "a value made before it"
        return (f"the loss of {earlier} takes {value} in on this line, so that backward also ran through the value's "
                f"graph and freed it ({node}), though the step after it updates none of the weights that made the "
                f"value; backward(){call} then needs that graph for its own loss{said}.",
                "use .detach() of the value on this line (a target, a peer's or a teacher's output: the loss here "
                "should not train what made it); pass retain_graph=True to the earlier backward() only if both "
                "losses must train those weights.")
    if fact.detail.get("taken_in"):
        value = f"the value made at {inner}" if isinstance(inner, Site) else "a value made earlier"
        return (f"this line takes {value} into the computation of backward(){call}, but {earlier} already "
                f"backpropagated through that value's graph and freed it ({node}){said}.",
                "if this loss should not train what made the value (a discriminator's loss on the generator's "
                "output), use .detach() of it on this line; else compute the value anew for this loss, or pass "
                "retain_graph=True to the earlier backward() if both must backpropagate through it.")
    if fact.detail.get("beside"):
        name, other, _ = fact.detail["beside"]
        return (f"`{name}`, kept on the module (set at {fact.detail['kept_at']}), outlives its iteration: {earlier} "
                f"backpropagated through it and freed its graph, and backward(){call} reached it a second time "
                f"({node}); `{other}`, kept beside it, is detached in place here between iterations, but `{name}` is "
                f"not{said}.",
                f"detach `{name}` here too, as `{other}` is (its .detach_()), or store .detach() of it where it is "
                "set; pass retain_graph=True to the earlier backward() only if gradients must flow back through "
                "earlier iterations.")
    if fact.detail.get("reset"):
        op = fact.detail["reset"]  # an op's name (`zero_`, `__imul__`) or a layer's (`ReLU(inplace=True)`)
        method = op.isidentifier() and op.endswith("_") and not op.startswith("_")  # `x.zero_()`, not `x *= 0`
        arguments = "" if op == "zero_" else "..."
        detach = f"`.{op}({arguments}).detach_()`" if method else "`.detach_()` right after this write"
        return (f"this line resets the value kept on the module (set at {fact.detail['kept_at']}) in place ({op}), "
                f"which clears its values but keeps its graph: {earlier} backpropagated through that graph and freed "
                f"it, and backward(){call} reached it a second time ({node}){said}.",
                f"detach it as it is reset ({detach}), or set a new tensor "
                "without history in its place; pass retain_graph=True to the earlier backward() only if gradients "
                "must flow back through earlier iterations.")
    if fact.detail.get("kept"):
        made = "the value this line keeps on the module" + (f" (made at {inner})" if isinstance(inner, Site) else "")
        return (f"{made} outlives its iteration: it is used again after {earlier} backpropagated through it and "
                f"freed its graph, and carries that freed graph ({node}) into the computation of backward(){call}, "
                f"which reached it a second time{said}.",
                "keep it without its graph: store .detach() of it here (the next iteration then starts from its "
                "value), or reset it before each iteration; pass retain_graph=True to the earlier backward() only "
                "if gradients must flow back through earlier iterations.")
    made = f"the value this line computes (at {inner})" if isinstance(inner, Site) else "the value made on this line"
    return (f"{made} is used again after {earlier} backpropagated through it and freed its "
            f"graph: it carries that freed graph ({node}) into the computation of backward(){call}, which "
            f"reached it a second time{said}.",
            "cut it from its old graph where it is reused: .detach() the value made here before the next "
            "iteration (or the other loss) uses it, or compute it anew; pass retain_graph=True to the earlier "
            "backward() only if both backward passes must go through that graph.")
