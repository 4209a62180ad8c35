"""Which user modules' ``forward`` is straight-line code calling only torch (`straight_code.straight_forward`): what
makes the same torch calls on every call, decided by its inputs and layers alone, and what does not."""
from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gradcheck_l2c.record.straight_code import straight_class, straight_forward

SCALE = 2.0


def doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


class Layers(nn.Module):
    """A linear layer, a parameter and a buffer, for the forwards below to read."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.gain = nn.Parameter(torch.ones(4))
        self.register_buffer("offset", torch.zeros(4))
        self.scale, self.shape = 2.0, (None, 4)
        self.plain = torch.ones(4, requires_grad=True)


class Straight(Layers):
    def forward(self, x):
        h = F.relu(self.linear(x)) * self.gain + self.offset.sum()
        h = torch.cat([h, x], dim=1).flatten(1)
        return F.dropout(h, 0.1, training=self.training) + self.linear.weight.t().sum()


class Branch(Layers):
    def forward(self, x):
        if x.sum() > 0:
            return self.linear(x)
        return x


class Loop(Layers):
    def forward(self, x):
        for _ in range(2):
            x = self.linear(x)
        return x


class Helper(Layers):
    def forward(self, x):
        return self.twice(self.linear(x))

    def twice(self, x):
        return x * 2


class UserGlobal(Layers):
    def forward(self, x):
        return doubled(self.linear(x))


class ConstantGlobal(Layers):
    def forward(self, x):
        return self.linear(x) * SCALE


class Constant(Layers):
    def forward(self, x):
        return self.linear(x).view(-1, self.shape[1]) * self.scale


class ListAttribute(Layers):
    def __init__(self) -> None:
        super().__init__()
        self.scales = [2.0]

    def forward(self, x):
        return self.linear(x) * self.scales[0]


class ClassConstant(Layers):
    SCALE = 2.0

    def forward(self, x):
        return self.linear(x) * self.SCALE


class PlainTensor(Layers):
    def forward(self, x):
        return self.linear(x) * self.plain


class NoGrad(Layers):
    def forward(self, x):
        with torch.no_grad():
            x = x * 2
        return self.linear(x)


class PassesSelf(Layers):
    def forward(self, x):
        return run_linear(self, x)


class Lambda(Layers):
    def forward(self, x):
        return (lambda h: h * 2)(self.linear(x))


class StoresState(Layers):
    def forward(self, x):
        self.last = self.linear(x)
        return self.last


class Super(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


class Decorated(Layers):
    @torch.no_grad()
    def forward(self, x):
        return self.linear(x)


class CallsForward(Layers):
    def forward(self, x):
        return self.linear.forward(x)


def run_linear(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return module.linear(x)


@pytest.mark.parametrize("cls", [Straight, Constant], ids=lambda cls: cls.__name__)
def test_straight_line_code_reading_layers_parameters_buffers_training_and_constants(cls) -> None:
    module = cls()
    assert straight_forward(module) and straight_class(cls)
    module(torch.randn(2, 4))  # and it runs


@pytest.mark.parametrize("cls", [Branch, Loop, Helper, UserGlobal, ConstantGlobal, ListAttribute, ClassConstant,
                                 PlainTensor, NoGrad, PassesSelf, Lambda, StoresState, Decorated, CallsForward],
                         ids=lambda cls: cls.__name__)
def test_code_whose_calls_can_depend_on_more_than_its_inputs(cls) -> None:
    assert not straight_forward(cls())


def test_super_and_torch_layers_themselves() -> None:
    assert not straight_forward(Super(4, 4))  # super() reads a closure cell
    assert straight_forward(nn.Linear(4, 4))  # F.linear(input, self.weight, self.bias)
    assert not straight_forward(nn.Conv2d(3, 3, 1))  # self._conv_forward(...): a method of its own


def test_what_an_instance_holds_decides_as_well_as_the_code() -> None:
    """The same forward reads ``self.head``: a layer on one instance, a user function on another."""
    class Headed(nn.Module):
        def __init__(self, head) -> None:
            super().__init__()
            self.head = head

        def forward(self, x):
            return self.head(x)

    assert straight_class(Headed)
    assert straight_forward(Headed(nn.Linear(4, 4)))
    assert not straight_forward(Headed(functools.partial(doubled)))
