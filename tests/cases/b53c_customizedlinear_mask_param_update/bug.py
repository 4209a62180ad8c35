# "error in test" (uchida-takumi/CustomizedLinear, a masked/pruned-connection Linear)
# https://github.com/uchida-takumi/CustomizedLinear/issues/2
# What went wrong: CustomizedLinear keeps its connection (pruning) mask as an
# nn.Parameter with requires_grad=False, so it shows up in model.parameters().
# The hand-written SGD loop in how_to_use.py updates every parameter with
# `param -= learning_rate * param.grad`; the mask never gets a .grad, so the loop raises
# TypeError: unsupported operand type(s) for *: 'float' and 'NoneType'.
# Fix (maintainer, how_to_use.py): only update parameters with `if param.requires_grad:`.
import math
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)


class CustomizedLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None, mask=None):
        if mask is not None:
            # change weight to 0 where mask == 0
            weight = weight * mask
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        ctx.save_for_backward(input, weight, bias, mask)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias, mask = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = grad_mask = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
            if mask is not None:
                # change grad_weight to 0 where mask == 0
                grad_weight = grad_weight * mask
        if ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0).squeeze(0)
        return grad_input, grad_weight, grad_bias, grad_mask


class CustomizedLinear(nn.Module):
    def __init__(self, mask, bias=True):
        super(CustomizedLinear, self).__init__()
        self.input_features = mask.shape[0]
        self.output_features = mask.shape[1]
        self.mask = nn.Parameter(mask.t(), requires_grad=False)
        self.weight = nn.Parameter(torch.Tensor(self.output_features, self.input_features))
        if bias:
            self.bias = nn.Parameter(torch.Tensor(self.output_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()
        # mask weight
        self.weight.data = self.weight.data * self.mask.data

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input):
        return CustomizedLinearFunction.apply(input, self.weight, self.bias, self.mask)


# ---- how_to_use.py ----
dtype = torch.float
Dim_INPUT = 4
Dim_HIDDEN = 5
Dim_OUTPUT = 1

get_bin_matrix = lambda Dim0, Dim1: np.random.choice([0, 1], size=(Dim0, Dim1))
mask = torch.tensor(get_bin_matrix(Dim_INPUT, Dim_HIDDEN), dtype=dtype)

batch = 8
x = torch.randn(batch, Dim_INPUT, dtype=dtype)
y = torch.randn(batch, Dim_OUTPUT, dtype=dtype)

model = torch.nn.Sequential(
    CustomizedLinear(mask, bias=None),
    torch.nn.Linear(Dim_HIDDEN, Dim_OUTPUT, bias=None),
)

learning_rate = 0.1
for t in range(3):
    y_pred = model(x)
    loss = (y_pred - y).abs().mean()
    model.zero_grad()
    loss.backward()

    # Update the weights
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad  # <- optimizer
    print('epoch={}, loss={:.4f}'.format(t, loss.item()))
