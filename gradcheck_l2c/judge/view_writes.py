"""The words for an in-place write autograd refused because of what the written tensor is: a leaf that requires
grad, one of several views an op returned (refused at the write, or at a later backward that needed such a view), a
view taken under no_grad, a view a custom Function returned (or torch's own, for a module with a full backward
hook), a view detached in place."""
from __future__ import annotations

from gradcheck_l2c.record.facts import AutogradError


def inplace_leaf_words(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    op = fact.detail.get("op", "an in-place op")
    view = " (through a view of it)" if fact.detail.get("view") else ""
    if fact.detail.get("has_grad"):
        fix = (f"run the update under `with torch.no_grad():` (as optimizer.step() does), so autograd does not "
               f"record it; or let an optimizer update {name}.")
    else:
        fix = ("write under `with torch.no_grad():` (as nn.init and optimizer.step() do), so autograd does not "
               "record it; if the change should be differentiated, build a new tensor out of place instead.")
    return (f"`{op}` wrote in place into {name}{view}, a leaf tensor that requires grad, while grad mode was on: "
            f"autograd cannot record an in-place change of a tensor whose gradient it accumulates, so PyTorch "
            f"refused it{said}.", fix)


def multi_view_words(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    op = fact.detail.get("op", "an in-place op")
    made_by = fact.detail.get("made_by")
    made = f" (autograd names its op {made_by})" if made_by else ""
    if fact.detail.get("at_backward"):
        here = "on this line" if fact.cause is not None else "in the forward pass"
        return (f"backward(){call} needs one of the several views a single op returned {here}{made}: unbind, chunk, "
                f"split, or iterating over a tensor; the tensor they were taken from was written into in place after "
                f"they were made (a row stored into a preallocated buffer), and autograd cannot rebuild the backward "
                f"of such views, so PyTorch refused the backward{said}.",
                "take the views of a copy: .clone() the tensor before taking it apart here (a, b = t.clone()); or "
                "build the tensor they come from out of place (collect the rows in a list, then torch.stack them).")
    if fact.detail.get("base_changed") and not op.endswith("_"):
        return (f"`{op}` used {name}, one of several views a single op returned{made}: unbind, chunk, split, or "
                f"iterating over a tensor (`list(weight)`); the tensor they were taken from was changed in place since "
                f"(an optimizer's step updates parameters so), and autograd cannot follow such views past an in-place "
                f"change, so PyTorch refused the op{said}.",
                "keep the tensor itself where it is stored for later ([weight], not list(weight), which iterates over "
                "its rows), or take the views anew after each change.")
    return (f"`{op}` wrote in place into {name}, one of several views a single op returned{made}: unbind, chunk, "
            f"split, or iterating over a tensor; autograd cannot rewrite the backward of such views, so PyTorch "
            f"refused the write{said}.",
            "compute the result out of place (y = t.sub(m) ... and torch.stack the parts, or a mask: "
            "t = torch.where(cond, value, t)), or .clone() the view before writing into it.")


def nograd_view_words(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"`{fact.detail.get('op', 'an in-place op')}` wrote in place with grad mode on into {name}, a view "
            f"taken under no_grad or inference_mode: autograd cannot tell whether the write should be recorded, "
            f"so PyTorch refused it{said}.",
            "take the view and write into it on the same side of the no_grad block (both inside when the write "
            "is not to be differentiated, both outside when it is), or .clone() the view first.")


def function_view_words(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    op = fact.detail.get("op", "an in-place op")
    if fact.detail.get("hooked"):
        layer = "the layer made on this line to write in place" if fact.detail.get("layer") else f"`{op}`"
        return (f"{layer} wrote into {name}, the output of a module with a full backward hook "
                f"(register_full_backward_hook: Opacus, Captum, a script's own hook), which torch hands on as a view "
                f"of its BackwardHookFunction; an in-place write would bypass the hook, so PyTorch refused it{said}.",
                "make the layer write out of place (inplace=False on this layer, `out = out + x` rather than `+=`), or "
                "register the hook on a module whose output nothing changes in place.")
    return (f"this custom autograd.Function's forward returns a view (or one of its inputs as is), and "
            f"`{fact.detail.get('op', 'an in-place op')}` later wrote in place into it ({name}): the write would "
            f"bypass the Function's backward, so PyTorch refused it{said}.",
            "return a clone from the Function's forward (return x.clone(), not x or a view of it), or write out "
            "of place.")


def detach_view_words(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"detach_() was called on {name}, a view, which cannot be detached in place{said}.",
            "use the out-of-place form: t = t.detach() (for DDP's gradient_as_bucket_view gradients, "
            "zero them with optimizer.zero_grad()).")
