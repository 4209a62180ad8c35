"""What the recorder keeps per module and per op is few objects: each object the tool keeps brings the script's next
walk of its whole heap by the collector sooner, which on a model of thousands of layers cost more than the tool's own
work. A stack noted on every node of a first iteration is one tuple per distinct stack, and a table entry that goes
with its module is one weak reference, not a reference with a callback closure."""
from __future__ import annotations

import gc

import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record.entries import entry_ref
from gradcheck_l2c.record.origins import MADE
from gradcheck_l2c.record.stacks import user_stack


def test_the_same_stack_is_one_tuple_and_another_line_another() -> None:
    stacks = []
    for _ in range(3):
        stacks.append(user_stack(0))
    other = user_stack(0)
    assert stacks[0] is stacks[1] is stacks[2]  # the same frames at the same instruction: the tuple made first
    assert other is not stacks[0] and other[0][2].line == stacks[0][0][2].line + 1
    assert [entry[1] for entry in other] == [entry[1] for entry in stacks[0]]  # the same code objects, innermost first


def test_a_first_iteration_notes_one_stack_on_the_nodes_of_a_line() -> None:
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(20)])
    with trace():
        out = model(torch.randn(2, 4))
        nodes, node = [], out.grad_fn
        while node is not None:
            nodes.append(node)
            node = next((child for child, _ in node.next_functions if child is not None and child.next_functions),
                        None)
        noted = [n.metadata[MADE] for n in nodes if MADE in n.metadata]
        out.sum().backward()
    assert len(noted) >= 20 and all(stack is noted[0] for stack in noted)


def test_an_entry_goes_with_its_object_and_keeps_no_closure() -> None:
    table: dict[int, tuple] = {}
    kept, dropped = nn.Linear(2, 2), nn.Linear(2, 2)
    for module in (kept, dropped):
        table[id(module)] = (entry_ref(module, table, id(module)), "line")
    ident = id(dropped)
    del dropped, module
    gc.collect()
    assert ident not in table and table[id(kept)][0]() is kept
    another = entry_ref(kept, table, -1)
    assert table[id(kept)][0].__callback__ is another.__callback__  # one function for all: no closure per entry
