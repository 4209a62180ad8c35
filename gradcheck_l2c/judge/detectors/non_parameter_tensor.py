"""`non_parameter_tensor`: a module holds a grad-requiring tensor, or Parameters in a plain list/dict,
that is not registered — so ``parameters()``, ``state_dict``, ``.to()`` and optimizers never see it; or
a plain tensor attribute that user code treats as learnable (reads its ``.grad``, gives it to an optimizer),
or a plain tensor fresh from ``torch.zeros``/``randn`` that nothing ever wrote, in a model an optimizer trains;
or a Parameter made in a module's ``__init__`` that it keeps elsewhere or only as a copy, so no module registers it.

Modules are looked at while they are alive (at the first backward calls and at the end of the trace).
"""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "non_parameter_tensor"


def scan(run) -> list[Finding]:
    found = []
    for (owner, attr), entry in run.record.unregistered.items():
        site, problem, symptom, hidden = entry.site, entry.problem, entry.symptom, entry.keys
        name = f"{owner}.{attr}"
        if not run.wants(name, attr):
            continue
        if problem.startswith("plain"):  # a tensor that never required grad, which the script treats as learnable
            found.append(run.finding(KIND, "error", name, site, *_plain_words(problem, name, attr),
                                     related={"symptom": symptom}))
            continue
        if problem == "initialised":
            found.append(run.finding(
                KIND, "error", name, site,
                f"{name} is a plain tensor made by {entry.factory}(...) and never changed: not an nn.Parameter "
                "(requires_grad=False), so backward gives it no gradient and the optimizer that trains the model "
                "around it never changes it.",
                f"make it a parameter: self.{attr} = nn.Parameter(...) (or register_buffer if it is a fixed "
                "constant).",
            ))
            continue
        if problem == "buffer":
            watched = run.record.watched_at(next(iter(hidden)))
            if watched.optimized or not watched.ever_grad or run.record.differentiated(watched.key):
                continue  # given to an optimizer, learnt by hand (autograd.grad asked for its gradient), or never
                # given a gradient: a buffer that requires grad does no harm
            found.append(run.finding(
                KIND, "warning", name, site,
                f"{name} is registered as a buffer (register_buffer) although it requires grad: a buffer is no "
                "parameter, so parameters() and the optimizers built from it do not hold it; it gets gradients but "
                "never learns.",
                f"register it as a parameter: self.register_parameter('{attr}', nn.Parameter(...)) (or "
                f"self.{attr} = nn.Parameter(...)); keep register_buffer for tensors that should not learn.",
            ))
            continue
        if problem in ("copied", "elsewhere"):
            found_at = not attr.startswith("<")
            held = ("only a tensor computed from it (the copy `.to()`, `.float()` or `.cuda()` returns)"
                    if problem == "copied" else "it in a plain object or container, not as its own attribute"
                    if found_at else "it nowhere as its own attribute")
            shown = name if found_at else run.name(next(iter(hidden)))
            found.append(run.finding(
                KIND, "warning", shown, site,
                f"{shown} is an nn.Parameter made in {owner}.__init__, but {owner} holds {held}, so no module "
                "registers it: parameters(), state_dict() and optimizers do not see it; it gets gradients but never "
                "learns.",
                "assign the Parameter itself to the module (self.<name> = nn.Parameter(...)) and use that "
                "attribute; convert the tensor before wrapping it: nn.Parameter(t.to(device)).",
            ))
            continue
        if problem == "tensor":
            if hidden and all(run.record.differentiated(key) for key in hidden):
                continue  # learnt by hand: the script asks autograd.grad (or backward(inputs=)) for its gradient
            message = (f"{name} is a tensor with requires_grad=True but not an nn.Parameter: "
                       "parameters(), state_dict(), .to() and optimizers do not see it.")
            fix = f"register it: self.{attr} = nn.Parameter(...) (or register_buffer if it should not learn)."
        elif problem.endswith("of modules"):
            if not any(run.record.watched_at(key).ever_grad for key in hidden):
                continue  # kept out of parameters() on purpose (a frozen teacher in a list): nothing it trains
            message = (f"{name} is a plain {problem}: their parameters are not registered, so parameters(), "
                       "state_dict(), .to() and optimizers do not see them; they get gradients but never learn.")
            fix = f"use nn.ModuleList / nn.ModuleDict for self.{attr}."
        else:
            message = (f"{name} is a plain {problem} of Parameters: they are not registered, "
                       "so parameters(), state_dict(), .to() and optimizers do not see them.")
            fix = f"use nn.ParameterList / nn.ParameterDict for self.{attr} (nested: nn.ModuleDict of them)."
        found.append(run.finding(KIND, "warning", name, site, message, fix))
    return found


def _plain_words(problem: str, name: str, attr: str) -> tuple[str, str]:
    """Message and fix for a plain tensor attribute, a buffer, or a plain list, tuple or dict of tensors."""
    if problem in ("plain", "plain buffer"):
        what = "a buffer (register_buffer)" if problem == "plain buffer" else "a plain tensor attribute"
        return (f"{name} is {what}, not an nn.Parameter (requires_grad=False): backward never gives it a gradient, "
                "and an optimizer never changes it.",
                f"make it a parameter: self.{attr} = nn.Parameter(...)"
                + (" instead of registering a buffer." if problem == "plain buffer" else "."))
    container = problem.split()[1]
    held = "ParameterDict" if container == "dict" else "ParameterList"
    return (f"{name} is a plain {container} of tensors, not of nn.Parameters (requires_grad=False): backward never "
            "gives them a gradient, and an optimizer never changes them.",
            f"make each an nn.Parameter(...) and hold them in an nn.{held} (self.{attr} = nn.{held}(...)), so that "
            "parameters() and the optimizer see them.")
