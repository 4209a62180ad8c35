"""The one table of kinds: every kind of finding has a permanent code (``GC001 item``), the severities it is
reported at, whether it explains a missing gradient, its label on a graph, a one-line description and the
fix pattern, as linters' rules do. Detectors, SARIF, GitLab, the concise and GitHub outputs, the graphs,
``gradcheck-l2c rules`` and inline suppressions (``# gradcheck: ignore[GC001]``) all read this table.

A code never changes meaning once released: a new kind takes the next free code, a retired one keeps its
code unused. Adding a kind is one ``Rule`` line below.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One kind's rule: ``code`` (``GC001``), ``kind`` (``item``, also the rule's name), ``levels`` (every
    severity its findings are reported at, the usual one first), ``cause`` (it explains why a tensor got no
    gradient, rather than flagging a bug beside the gradient path), ``label`` (how a graph names it), what
    happened in one line, and the usual fix."""

    code: str
    kind: str
    levels: tuple[str, ...]
    cause: bool
    label: str
    description: str
    fix: str

    @property
    def level(self) -> str:
        """The severity it is usually reported at (SARIF's default level)."""
        return self.levels[0]


RULES: tuple[Rule, ...] = (
    Rule("GC001", "item", ("error",), True, ".item()",
         "A value computed from the tensor became a Python number (.item(), float(), int(), .tolist()), which "
         "carries no gradient.", "Keep it a tensor; call .item() only for logging."),
    Rule("GC002", "numpy", ("error",), True, ".numpy()",
         "A value computed from the tensor became a NumPy array (.numpy(), np.asarray), which carries no "
         "gradient.", "Keep the computation in torch; convert only for logging."),
    Rule("GC003", "tensor_rewrap", ("error",), True, "torch.tensor(...)",
         "torch.tensor(...), as_tensor or from_numpy built a new tensor from values that had an autograd "
         "history.", "Use the tensor itself (torch.stack/cat to combine)."),
    Rule("GC004", "detach", ("error",), True, ".detach()",
         ".detach() on the gradient's path, including the detached tensors state_dict() returns.",
         "Drop the .detach() (or use named_parameters() instead of state_dict())."),
    Rule("GC005", "data_attr", ("error",), True, ".data",
         ".data read on the gradient's path, or a tensor's .data assigned.",
         "Use the tensor itself; for in-place updates use torch.no_grad() on the parameter."),
    Rule("GC006", "no_grad", ("error",), True, "torch.no_grad()",
         "The computation ran under no_grad, inference_mode or set_grad_enabled(False), the user's or a library "
         "function's (Distribution.sample()).",
         "Compute the values the loss needs outside the no_grad block."),
    Rule("GC007", "state_dict_reload", ("error",), True, "load_state_dict()",
         "load_state_dict(), copy_ or set_ wrote values computed from the tensor into parameters, as constants.",
         "Evaluate the model at the computed weights with torch.func.functional_call(model, params, (inputs,))."),
    Rule("GC008", "new_parameter", ("error",), True, "nn.Parameter(...)",
         "nn.Parameter(...) wrapped a computed tensor, starting a new leaf without history.",
         "Create Parameters once in __init__; use computed tensors directly."),
    Rule("GC009", "non_parameter_tensor", ("warning", "error"), False, "plain tensor attribute",
         "A module attribute holds a tensor that requires grad (or Parameters in a plain list or dict) without "
         "registering it, or a plain tensor fresh from torch.zeros/randn that never changed in a trained model.",
         "Register it: nn.Parameter(...), nn.ParameterList/ParameterDict, or register_buffer."),
    Rule("GC010", "unused_parameter", ("error", "warning"), True, "unused parameter",
         "The tensor never took part in a loss (a submodule that is never called is named).",
         "Use it in forward, or leave it out of the optimizer."),
    Rule("GC011", "module_in_forward", ("error",), False, "module built in forward",
         "A module with weights is built inside another module's forward, so new weights are made on every "
         "call.", "Build the submodule once in __init__."),
    Rule("GC012", "non_leaf_watched", ("error",), True, "non-leaf tensor",
         ".grad read on a non-leaf tensor (made by .to(), .cuda(), an operation), which never holds a gradient.",
         "Read the leaf's .grad, or create the tensor on its device directly (or call retain_grad())."),
    Rule("GC013", "non_differentiable", ("error", "warning", "info"), True, "non-differentiable op",
         "A non-differentiable step on the path (argmax, comparisons, integer casts, round/floor/sign), all-zero "
         "gradients, a custom autograd.Function returning None, or log_prob of the distribution's own rsample().",
         "Use a differentiable relaxation (softmax, sigmoid, straight-through) or keep the float values."),
    Rule("GC014", "inplace_saved", ("error", "info"), True, "in-place on a saved tensor",
         "A tensor that autograd saved for backward was modified in place before backward ran.",
         "Write the new value out of place (x = x + y, not x += y), or clone first."),
    Rule("GC015", "state_dict_alias", ("warning",), False, "state_dict alias",
         "A state_dict() snapshot (a shallow .copy() too) shares storage with live weights and was used after "
         "they changed.", "Take real copies: {k: v.detach().clone() for k, v in model.state_dict().items()}."),
    Rule("GC016", "optimizer", ("error", "warning"), False, "optimizer",
         "A parameter is in two optimizers, or gets gradients but is in none; or step() ran after zero_grad() "
         "erased every gradient, or in a run where no backward ran.",
         "Give each parameter to exactly one optimizer; call zero_grad() before backward."),
    Rule("GC017", "untraced_thread", ("warning",), False, "untraced_thread",
         "Backward calls ran in a thread the trace does not cover (torch-function modes are per thread), so "
         "nothing judged them.",
         "Run the training step in the thread that starts the trace, or start the trace in that thread."),
    Rule("GC018", "ddp_unused", ("error", "warning"), True, "ddp_unused",
         "DistributedDataParallel waited for a gradient that never came (its 'Expected to have finished "
         "reduction' error, a static_graph=True mismatch), or find_unused_parameters=True found a parameter "
         "unused in every iteration.",
         "Use the parameter in forward so its output reaches the loss, or delete it; freeze it with "
         "requires_grad_(False) before DDP(...); find_unused_parameters=True is the costly last resort."),
    Rule("GC019", "grad_no_graph", ("error",), True, "autograd.grad()",
         "torch.autograd.grad() without create_graph=True returned gradients as constants, and a loss was "
         "computed from them.", "Pass create_graph=True to torch.autograd.grad."),
    Rule("GC020", "cut_term", ("warning",), False, "cut loss term",
         "A term of the loss carries no gradient to tensors the other terms train (or none to what the steps after "
         "its backward update): it reached them only through a cut, so it adds nothing to their update; or a term "
         "made from trained tensors was dropped unused before any backward ran through it.",
         "Compute the term from the tensors themselves (drop the cut), or add a dropped term to the loss."),
    Rule("GC021", "autograd_error", ("error",), True, "autograd error",
         "PyTorch refused a backward, autograd.grad or an op for the graph's sake (a graph freed by an earlier "
         "backward, a non-scalar loss, an in-place write into a leaf, an inference tensor saved for backward, a "
         "custom backward's wrong gradients, deepcopy of a tensor with history), and no other finding names the "
         "cause; reported even when the script caught the error.",
         "Change the line named: .detach() a value carried across iterations, reduce the loss with .mean(), "
         "update leaves under torch.no_grad(), use no_grad instead of inference_mode, return one gradient per "
         "forward input."),
    Rule("GC022", "no_update", ("warning",), False, "no update",
         "An optimizer stepped a parameter that had its gradient, yet its values never changed over the run: a "
         "learning rate of 0 at every step, or a gradient masked to zero before each step; or the learning rate "
         "fell to 0 and stayed 0 to the end (a schedule shorter than the run).",
         "Give its parameter group a learning rate above 0 (check the scheduler's first factor and its length), "
         "or stop zeroing its gradient between backward() and step()."),
    Rule("GC023", "untraced_process", ("warning",), False, "untraced_process",
         "Child processes started with multiprocessing (Process, Pool, ProcessPoolExecutor, torch.multiprocessing) "
         "that could not be traced (a Process subclass with its own run(), a child killed or still running when "
         "the trace ended) ran untraced: a gradient cut inside them is not in the report.",
         "Give the Process a target instead of overriding run(), join the children before the script ends, or "
         "trace the training code in the worker with gradcheck_l2c.trace(); use --nproc-per-node for torchrun ranks."),
    Rule("GC024", "module_requires_grad", ("error", "warning"), True, "module.requires_grad",
         "`module.requires_grad = True` (or False) set an attribute of the Module object, which no parameter reads: "
         "its parameters kept their own flags (still frozen, so no gradient; or still learning after a freeze).",
         "Call module.requires_grad_(True) (or False), which sets the flag of every parameter it holds."),
    Rule("GC030", "non_finite", ("error", "warning"), False, "NaN/Inf",
         "With --nan: the first NaN, forward or backward, at the line of the op that made it from finite values "
         "(log of 0, 0/0, sqrt at 0 in backward, the masked branch of torch.where, float16 overflow in exp), or "
         "where it came in from the data; an Inf that never turned into NaN is a warning.",
         "Keep the op's input inside its domain: clamp or add eps to the input (not the output), or use a stable "
         "form (logsumexp, log_softmax, F.normalize(eps=...))."),
    Rule("GC031", "vanishing_gradient", ("warning",), False, "vanishing gradient",
         "With --grad-stats: a layer's gradient stayed below 1e-7 of its weight's norm for the last backwards "
         "while the loss had not converged.",
         "Use ReLU/GELU rather than sigmoid/tanh in deep stacks, add normalisation or residual connections, or "
         "initialise for the activation."),
    Rule("GC032", "exploding_gradient", ("warning",), False, "exploding gradient",
         "With --grad-stats: a layer's gradient was not finite, or grew more than 1e3 times over the run to end "
         "above 1e3 times its weight's norm.",
         "Clip the gradients (clip_grad_norm_), lower the learning rate, or initialise recurrent weights "
         "orthogonally."),
    Rule("GC033", "dead_units", ("warning",), False, "dead units",
         "With --grad-stats: more than half the rows of a layer's weight, not all, got exactly zero gradient at "
         "every one of 10 or more backwards: their units are dead.",
         "Lower the learning rate, use LeakyReLU/GELU, or initialise so that the units start active."),
    Rule("GC900", "unused_suppression", ("info",), False, "unused_suppression",
         "A '# gradcheck: ignore' comment silenced no finding during the run.",
         "Remove the comment, or name the code it should silence."),
)

_BY_KIND = {rule.kind: rule for rule in RULES}
_BY_CODE = {rule.code: rule for rule in RULES}
#: Every kind a detector may report, in the order the README documents them.
KINDS: tuple[str, ...] = tuple(rule.kind for rule in RULES)
#: Kinds that explain why a tensor got no gradient; the others flag bugs beside the gradient path.
CAUSES: frozenset[str] = frozenset(rule.kind for rule in RULES if rule.cause)


def rule_for(kind: str) -> Rule:
    """The rule of a kind; ``KeyError`` for a kind without one."""
    return _BY_KIND[kind]


def code_of(kind: str) -> str:
    """A kind's code, or the kind itself when it has none (output never fails over a missing row)."""
    rule = _BY_KIND.get(kind)
    return rule.code if rule is not None else kind


def label_of(kind: str) -> str:
    """How a graph names a kind's cut box."""
    rule = _BY_KIND.get(kind)
    return rule.label if rule is not None else kind


def lookup(name: str) -> Rule | None:
    """The rule a suppression names, by code (``GC001``, any case) or by kind (``item``)."""
    return _BY_CODE.get(name.upper()) or _BY_KIND.get(name)
