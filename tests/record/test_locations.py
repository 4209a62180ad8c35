"""Where user code assigned a module's attribute, for modules built before the trace (whose
registration the trace never saw): read from the methods of the user's classes."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c.record.source_sites import attribute_site


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(2, 2)


class Base(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()

    def grow(self) -> None:
        self.extra = nn.Linear(2, 2)


class Child(Base):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Parameter(torch.zeros(2))


def _line(cls: type, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(cls)
    (offset,) = [i for i, line in enumerate(lines) if text in line]
    return first + offset


def test_the_deepest_user_class_on_the_path_names_the_line():
    model = Child()
    model.grow()
    assert attribute_site(model, "gate").line == _line(Child, "self.gate =")
    assert attribute_site(model, "block.inner.weight").line == _line(Block, "self.inner =")  # not Base's `self.block`
    assert attribute_site(model, "extra.weight").line == _line(Base, "self.extra =")  # a base class, another method
    assert attribute_site(model, "block.inner.weight").file == __file__


def test_a_class_defined_in_a_function_and_torch_classes():
    def build() -> nn.Module:
        class Local(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.head = nn.Linear(2, 2)

        return Local()

    local = build()
    assert attribute_site(local, "head.bias").line == _line(type(local), "self.head =")
    assert attribute_site(nn.Sequential(nn.Linear(2, 2)), "0.weight") is None  # no user class assigns it
