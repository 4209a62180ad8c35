# torch.nn.utils.prune.remove prevents future model training
# https://github.com/pytorch/pytorch/issues/33618
# What went wrong: an LSTM's weights were pruned with prune.l1_unstructured and the
# reparametrization made permanent with prune.remove. The RNN keeps its own list
# `_flat_weights`, refreshed only through __setattr__. Pruning setattr'ed the masked
# tensor (weight_orig * weight_mask, which has a grad_fn) into that list; remove()
# re-registered the Parameter with register_parameter(), which never calls
# __setattr__, so `_flat_weights` kept the stale masked tensor built once at prune
# time. The first backward frees that tiny graph; the second raises
# "Trying to backward through the graph a second time".
# Fix (maintainer answer + PR #34170): remove() re-installs the parameter with
# setattr(module, name, orig) so RNNBase.__setattr__ refreshes `_flat_weights`.
# Plain-torch rewrite of the parts of torch.nn.modules.rnn / torch.nn.utils.prune
# the bug goes through (class and function names kept).
import torch
import torch.nn as nn

torch.manual_seed(0)


class LSTM(nn.Module):
    """Single-layer LSTM that, like RNNBase, runs from the cached `_flat_weights`."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        g = 4 * hidden_size
        self.weight_ih_l0 = nn.Parameter(torch.randn(g, input_size) * 0.1)
        self.weight_hh_l0 = nn.Parameter(torch.randn(g, hidden_size) * 0.1)
        self.bias_ih_l0 = nn.Parameter(torch.zeros(g))
        self.bias_hh_l0 = nn.Parameter(torch.zeros(g))
        self._flat_weights_names = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
        self._flat_weights = [getattr(self, wn) for wn in self._flat_weights_names]

    def __setattr__(self, attr, value):
        if hasattr(self, "_flat_weights_names") and attr in self._flat_weights_names:
            idx = self._flat_weights_names.index(attr)
            self._flat_weights[idx] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self):
        pass  # no-op on CPU, as in torch

    def forward(self, x):
        w_ih, w_hh, b_ih, b_hh = self._flat_weights
        h = x.new_zeros(x.shape[0], self.hidden_size)
        c = x.new_zeros(x.shape[0], self.hidden_size)
        outs = []
        for t in range(x.shape[1]):
            gates = x[:, t] @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh
            i, f, g, o = gates.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, 1), (h, c)


class L1Unstructured:
    """Mirrors torch.nn.utils.prune.L1Unstructured / BasePruningMethod."""

    def __init__(self, amount):
        self.amount = amount
        self._tensor_name = None

    def compute_mask(self, t):
        k = int(round(self.amount * t.numel()))
        mask = torch.ones_like(t)
        idx = torch.topk(t.abs().view(-1), k=k, largest=False).indices
        mask.view(-1)[idx] = 0
        return mask

    def apply_mask(self, module):
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * mask

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @classmethod
    def apply(cls, module, name, amount):
        method = cls(amount)
        method._tensor_name = name
        orig = getattr(module, name)
        module.register_parameter(name + "_orig", orig)
        module.register_buffer(name + "_mask", method.compute_mask(orig.detach()))
        del module._parameters[name]
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def remove(self, module):
        weight = self.apply_mask(module)
        delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        module.register_parameter(self._tensor_name, orig)  # <- autograd_error


def l1_unstructured(module, name, amount):
    L1Unstructured.apply(module, name, amount)
    return module


def remove(module, name):
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, L1Unstructured) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(name)


class ExampleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = LSTM(16, 16)
        self.linear = nn.Linear(16, 4)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.linear(out)


model = ExampleModel()

lstm_weights = [p for p in dict(model.lstm.named_parameters()).keys() if "weight" in p]
for p in lstm_weights:
    l1_unstructured(model.lstm, p, 0.5)
    remove(model.lstm, p)
model.lstm.flatten_parameters()

criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(2, 5, 16)
    y = torch.randn(2, 5, 4)
    optimizer.zero_grad()
    z = model(x)
    loss = criterion(z, y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
