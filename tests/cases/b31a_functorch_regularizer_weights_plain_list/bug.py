"""functorch issue #904, "make_functional + parameter sharing with a list doesn't work",
https://github.com/pytorch/functorch/issues/904 (first reported by @MichaelArbel in
https://github.com/pytorch/functorch/pull/620).

MyModule keeps its Linear's parameters a second time in a plain Python list, `self.weights =
list(self.linear.parameters())`, and its forward adds a regularization term computed from `self.weights[0]`.
Evaluated functionally (functorch's make_functional then, torch.func.functional_call now) at another set of
parameters, the data term uses the supplied tensors but the regularization still reads the module's original
Parameter from the list: with all-zero parameters the loss should be 0, yet it prints 10.3369 in the report. In a
bilevel / functional training loop the functional (inner) weights never get the regularization's gradient; it goes
to the module's own weight, which nothing optimizes. The list is invisible to the functional swap because it is not
registered. Fix (the reporter's workaround in the PR thread): register the shared weights as attributes of the
module (`setattr(self, 'weight_' + str(i), w)`) and read them from there, so the functional call swaps them too.
"""
import torch
import torch.nn as nn
from torch.func import functional_call

torch.manual_seed(0)
torch.set_num_threads(1)


class MyModule(nn.Module):
    def __init__(self, linear):
        super(MyModule, self).__init__()
        self.linear = linear
        self.weights = list(self.linear.parameters())  # <- non_parameter_tensor

    def forward(self, x):
        loss = torch.sum(self.linear(x) ** 2)
        regularization = torch.sum(self.weights[0] ** 2)
        return loss + regularization


linear = nn.Linear(20, 30)
module = MyModule(linear)
data = torch.ones([20])

# the report's check: at all-zero parameters the functional loss must be 0
zeros_params = {name: torch.zeros_like(p, requires_grad=True) for name, p in module.named_parameters()}
print("loss at zero params:", functional_call(module, zeros_params, (data,)).item())

# functional (inner-loop) weights, trained by their own optimizer
params = {name: p.detach().clone().requires_grad_(True) for name, p in module.named_parameters()}
W, B = list(params)  # names of the weight and the bias
inner_opt = torch.optim.SGD(params.values(), lr=1e-3)
for step in range(5):
    loss = functional_call(module, params, (data,))
    inner_opt.zero_grad()
    loss.backward()
    inner_opt.step()
    print("step", step, "loss", round(loss.item(), 4))

inner_opt.zero_grad()
functional_call(module, params, (data,)).backward()  # gradient at the final functional weights
w, b = params[W].detach(), params[B].detach()
full_grad = 2 * torch.outer(w @ data + b, data) + 2 * w  # d/dW of data term + regularization
print("functional weight got the regularization's gradient:", torch.allclose(params[W].grad, full_grad, atol=1e-4))
print("module.linear.weight.grad (held by no optimizer):", None if module.linear.weight.grad is None else "set, norm %.3f" % module.linear.weight.grad.norm())
