"""Where the values autograd's errors are about came from: the user lines that made the first iteration's
autograd nodes and inference tensors, and how far the graphs freed by backward passes reach.

PyTorch raises its graph errors where it notices them (the backward, the op that saves a tensor), which
is rarely the line to change: the hidden state carried into the next iteration, the loss left with one
value per sample, the features made under ``inference_mode``. Remembering a line costs a walk up the
stack, so it is done only until the first backward that frees its graph ends (the first iteration, where these
errors happen or their values are made) and for at most ``BUDGET`` values; after that one attribute read per op.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.entries import entry_ref
from gradcheck_l2c.record.graph import grad_fn_of
from gradcheck_l2c.record.locations import Site, user_frame
from gradcheck_l2c.record.stacks import StackEntry, user_stack, user_stack_sites
from gradcheck_l2c.record.torch_internals import sequence_nr

Tensor = torch.Tensor
#: The key, in an autograd node's metadata, of the user lines that made it (`user_stack`).
MADE = "gradcheck_made"
#: The key, in an autograd node's metadata, of the user line that last set its tensor as a module attribute.
KEPT = "gradcheck_kept"
#: The key, in an autograd node's metadata, of the user lines that made the node of the first graph-freeing backward's
#: graph that took it in (`Origins.note_takers`).
TAKEN = "gradcheck_taken"
#: What a backward that does not keep its graph frees: its newest root's sequence number, where it was called,
#: the user frames on the way, and whether it was ``autograd.grad`` (gradients returned, not accumulated).
Freeing = tuple[int, Site | None, tuple[Site, ...], bool]
BUDGET = 20_000
_is_inference_mode = torch.is_inference_mode_enabled


class Origins:
    """The lines that made autograd nodes and inference tensors early in the run, and the newest node a
    graph-freeing backward has reached (every node made up to it belongs to a graph that was freed)."""

    def __init__(self) -> None:
        self.recording = True  # until the first graph-freeing backward ends, or the budget is spent
        self._left = BUDGET
        self._inference: dict[int, tuple[weakref.ref, tuple[Site | None, ...]]] = {}
        self.freed_up_to: int | None = None  # sequence number of the newest root a backward freed
        self.freed_by: Site | None = None  # the user line of that backward
        self.freed_path: tuple[Site, ...] = ()  # the user lines that called it, innermost first
        self.freed_by_grad = False  # that backward was ``autograd.grad`` (forces taken inside a forward)
        self.detached_states: dict[int, dict[str, Site]] = {}  # module id -> kept attributes detached in place, where
        # (innermost user line, all of them) of the backward() about to run, told by its handler (one walk for both)
        self.called_from: tuple[Site | None, tuple[Site, ...]] | None = None

    def made(self, out: Any) -> None:
        """An op in grad mode returned ``out`` (a tensor or a tuple of them): note its line on their nodes."""
        outputs = out if isinstance(out, tuple) else (out,)
        stack = None
        for tensor in outputs:
            node = grad_fn_of(tensor) if isinstance(tensor, Tensor) else None
            if node is None:
                continue
            metadata = node.metadata
            if MADE not in metadata:
                stack = stack or user_stack(1)
                metadata[MADE] = stack
        self._spend()

    def made_without_grad(self, out: Any) -> None:
        """An op ran with grad mode off: under ``inference_mode``, remember the line that made the tensor."""
        if not _is_inference_mode() or not isinstance(out, Tensor):
            return
        ident, inference = id(out), self._inference
        sites = tuple(site for _, _, site in user_stack(1))
        inference[ident] = (entry_ref(out, inference, ident), sites)
        self._spend()

    def stored(self, tensor: Tensor, site: Site | None) -> None:
        """User code set an inference tensor as a module attribute (a cache made under ``inference_mode``):
        remember the line, whenever it happens (later iterations are not recorded op by op)."""
        ident, inference = id(tensor), self._inference
        if ident not in inference:
            inference[ident] = (entry_ref(tensor, inference, ident), (site,))

    @staticmethod
    def kept(tensor: Tensor, site: Site | None) -> None:
        """User code set a tensor with history as a module attribute (a memory, a hidden state kept on the module):
        note the line on its node, at every iteration (one metadata entry), for a later backward that finds that
        graph freed: the value outlived its iteration there."""
        if site is not None:
            tensor.grad_fn.metadata[KEPT] = site

    @staticmethod
    def kept_at(node: Any) -> Site | None:
        """The line that last set the tensor ``node`` made as a module attribute, if user code did."""
        return node.metadata.get(KEPT)

    def _spend(self) -> None:
        self._left -= 1
        if self._left <= 0:
            self.recording = False

    def backward_starts(self, roots: Any, keep_graph: bool, returns: bool = False) -> Freeing | None:
        """A backward of the traced thread is about to run: what it frees if it returns (read now, while the
        interpreter's caches are warm from the forward, not after the engine's work evicted them)."""
        called_from, self.called_from = self.called_from, None
        if keep_graph:
            return None
        newest = -1
        if type(roots) is tuple and len(roots) == 1 and type(roots[0]) is Tensor:  # one loss, the common backward
            node = roots[0].grad_fn
            number = sequence_nr(node) if node is not None else None
            if number is not None:
                newest = number
        else:
            for node in _nodes(roots):
                number = sequence_nr(node)
                if number is not None and number > newest:
                    newest = number
        if newest < 0:
            return None
        if self.recording:
            self.note_takers(roots)
        return (newest, *(called_from or user_stack_sites(1)), returns)

    @staticmethod
    def note_takers(roots: Any) -> None:
        """The first backward that frees its graph is about to run: note on each node of that graph the lines that
        made the node taking it in (a value a later backward finds freed was taken in there: a peer's output used as
        a target without ``.detach()``). One walk, once a run."""
        for node in graph.iter_nodes(_nodes(roots), graph.SAFE_WALK):
            stack = node.metadata.get(MADE)
            if stack is None:
                continue
            for child, _ in node.next_functions:
                if child is not None and not hasattr(child, "variable") and TAKEN not in child.metadata:
                    child.metadata[TAKEN] = stack

    @staticmethod
    def taken_at(node: Any) -> tuple[StackEntry, ...] | None:
        """The user lines that made the node of the first graph-freeing backward's graph that took ``node`` in."""
        return node.metadata.get(TAKEN)

    def backward_ran(self, freeing: Freeing | None) -> None:
        """That backward returned: one that did not keep its graph freed every node made up to its newest root
        (``freeing``), and the first such ends the recording (the gradients a PINN's or a penalty's step takes with
        ``create_graph`` before its loss are part of that first iteration)."""
        if freeing is not None:
            self.recording = False
            newest, self.freed_by, self.freed_path, self.freed_by_grad = freeing
            self.freed_up_to = max(newest, self.freed_up_to if self.freed_up_to is not None else -1)

    # ---- answers, read when an error is recorded ----------------------------------------------------

    @staticmethod
    def stack_of(node: Any) -> tuple[StackEntry, ...] | None:
        """The user frames that made ``node`` (innermost first), if they were remembered."""
        return node.metadata.get(MADE) if node is not None else None

    @staticmethod
    def site_of(node: Any) -> Site | None:
        """The innermost user line that made ``node``, if it was remembered."""
        stack = Origins.stack_of(node)
        return stack[0][2] if stack else None

    @staticmethod
    def made_at(node: Any) -> Site | None:
        """The user line that made ``node``: the first iteration's, or else the one an op on a user's leaf (or a
        drawing trace) kept on it (`handlers.remember_site`)."""
        made = Origins.site_of(node)
        if made is not None or node is None:
            return made
        kept = node.metadata.get("gradcheck_site")
        return Site(kept[0], kept[1]) if kept else None

    @staticmethod
    def site_in_running(stack: tuple[StackEntry, ...] | None) -> Site | None:
        """Of the lines that made a value, the one in the innermost user frame that is still running (the
        loop that carried the value from one iteration into the next); else the innermost line."""
        entry = Origins.entry_in_running(stack)
        return entry[2] if entry is not None else (stack[0][2] if stack else None)

    @staticmethod
    def entry_in_running(stack: tuple[StackEntry, ...] | None,
                         running: set[tuple[int, Any]] | None = None) -> StackEntry | None:
        """Of the frames that made a value, the innermost one that is still running (of ``running_frames()``
        when given), if any."""
        if not stack:
            return None
        running = running if running is not None else running_frames()
        return next((entry for entry in stack if (entry[0], entry[1]) in running), None)

    @staticmethod
    def first_made_by(roots: Any, op: str) -> Site | None:
        """The user line that made the oldest node of the op autograd names ``op`` (``Unbind``, ``Split``) in the graph
        of ``roots``, if it was remembered: where a backward refused one of the several views that op returned,
        whose base was written into after it (`autograd_errors`)."""
        first, site = None, None
        for node in graph.iter_nodes(_nodes(roots), graph.SAFE_WALK):
            made = Origins.site_of(node) if type(node).__name__.startswith(op) else None
            number = sequence_nr(node) if made is not None else None
            if number is not None and (first is None or number < first):
                first, site = number, made
        return site

    def inference_sites(self, tensor: Tensor) -> tuple[Site | None, ...]:
        """The user lines that made an inference tensor, or one whose memory it shares (a slice taken outside
        inference mode is no tracked view), innermost first, if they were remembered: the making line, then
        the line in each caller (one of them runs under the ``inference_mode`` that made it an inference
        tensor). Asked only when autograd refused one."""
        entry = self._inference.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1]
        memory = tensor.untyped_storage().data_ptr()
        for ref, sites in list(self._inference.values()):
            other = ref()
            if other is not None and other.untyped_storage().data_ptr() == memory:
                return sites
        return ()

    def freed(self, node: Any) -> bool:
        """Whether ``node`` was made before the newest root a graph-freeing backward reached."""
        number = sequence_nr(node)
        return number is not None and self.freed_up_to is not None and number <= self.freed_up_to \
            and not hasattr(node, "variable")


def running_frames() -> set[tuple[int, Any]]:
    """The user frames running now, as the (id, code) pairs a `StackEntry` starts with."""
    running = set()
    frame = user_frame(1)
    while frame is not None:
        running.add((id(frame), frame.f_code))
        frame = frame.f_back
    return running


def _nodes(roots: Any) -> list[Any]:
    """The autograd nodes of a backward's roots (tensors, or ``GradientEdge``s)."""
    if isinstance(roots, Tensor):
        roots = (roots,)
    nodes = []
    for root in roots or ():
        node = getattr(root, "grad_fn", None) if isinstance(root, Tensor) else getattr(root, "node", None)
        if node is not None:
            nodes.append(node)
    return nodes
