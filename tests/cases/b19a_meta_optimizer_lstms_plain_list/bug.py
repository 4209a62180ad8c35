"""pytorch-meta-optimizer (ikostrikov/pytorch-meta-optimizer#11,
https://github.com/ikostrikov/pytorch-meta-optimizer/issues/11): "LSTM weights not optimised". The learned
optimizer (Learning to learn by gradient descent by gradient descent) keeps its LSTM cells in a plain Python
list, `self.lstms = []` + `self.lstms.append(LayerNormLSTMCell(...))`.
Symptom: the LSTM cells' weights never change during meta-training, only linear1/ln1/linear2 learn.
Why: modules in a plain list are not registered, so meta_optimizer.parameters() (what optim.Adam is given)
does not contain them; backward fills their .grad, but no optimizer ever steps them.
Fix: register them, `self.lstms = nn.ModuleList()` (the issue suggests nn.Sequential(*[...]))."""
from functools import reduce
from operator import mul

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def preprocess_gradients(x):
    p = 10
    eps = 1e-6
    indicator = (x.abs() > torch.exp(torch.tensor(-p))).float()
    x1 = (x.abs() + eps).log() / p * indicator - (1 - indicator)
    x2 = x.sign() * indicator + torch.exp(torch.tensor(p)) * x * (1 - indicator)
    return torch.cat((x1, x2), 1)


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.linear1 = nn.Linear(4, 8)
        self.linear2 = nn.Linear(8, 1)

    def forward(self, x):
        return self.linear2(torch.tanh(self.linear1(x)))


class MetaModel:
    def __init__(self, model):
        self.model = model

    def reset(self):
        for module in self.model.children():
            module._parameters['weight'] = module._parameters['weight'].data
            module._parameters['bias'] = module._parameters['bias'].data

    def get_flat_params(self):
        params = []
        for module in self.model.children():
            params.append(module._parameters['weight'].view(-1))
            params.append(module._parameters['bias'].view(-1))
        return torch.cat(params)

    def set_flat_params(self, flat_params):
        offset = 0
        for i, module in enumerate(self.model.children()):
            weight_shape = module._parameters['weight'].size()
            bias_shape = module._parameters['bias'].size()
            weight_flat_size = reduce(mul, weight_shape, 1)
            bias_flat_size = reduce(mul, bias_shape, 1)
            module._parameters['weight'] = flat_params[offset:offset + weight_flat_size].view(*weight_shape)
            module._parameters['bias'] = flat_params[
                offset + weight_flat_size:offset + weight_flat_size + bias_flat_size].view(*bias_shape)
            offset += weight_flat_size + bias_flat_size

    def copy_params_from(self, model):
        for modelA, modelB in zip(self.model.parameters(), model.parameters()):
            modelA.data.copy_(modelB.data)

    def copy_params_to(self, model):
        for modelA, modelB in zip(self.model.parameters(), model.parameters()):
            modelB.data.copy_(modelA.data)


class MetaOptimizer(nn.Module):

    def __init__(self, model, num_layers, hidden_size):
        super(MetaOptimizer, self).__init__()
        self.meta_model = model
        self.hidden_size = hidden_size

        self.linear1 = nn.Linear(3, hidden_size)
        self.ln1 = nn.LayerNorm(hidden_size)  # the repo's LayerNorm1D

        self.lstms = []  # <- non_parameter_tensor
        for i in range(num_layers):
            self.lstms.append(nn.LSTMCell(hidden_size, hidden_size))  # the repo's LayerNormLSTMCell

        self.linear2 = nn.Linear(hidden_size, 1)
        self.linear2.weight.data.mul_(0.1)
        self.linear2.bias.data.fill_(0.0)

    def reset_lstm(self, keep_states=False, model=None):
        self.meta_model.reset()
        self.meta_model.copy_params_from(model)
        if keep_states:
            for i in range(len(self.lstms)):
                self.hx[i] = self.hx[i].data
                self.cx[i] = self.cx[i].data
        else:
            self.hx = []
            self.cx = []
            for i in range(len(self.lstms)):
                self.hx.append(torch.zeros(1, self.hidden_size))
                self.cx.append(torch.zeros(1, self.hidden_size))

    def forward(self, x):
        x = torch.tanh(self.ln1(self.linear1(x)))
        for i in range(len(self.lstms)):
            if x.size(0) != self.hx[i].size(0):
                self.hx[i] = self.hx[i].expand(x.size(0), self.hx[i].size(1))
                self.cx[i] = self.cx[i].expand(x.size(0), self.cx[i].size(1))
            self.hx[i], self.cx[i] = self.lstms[i](x, (self.hx[i], self.cx[i]))
            x = self.hx[i]
        x = self.linear2(x)
        return x.squeeze()

    def meta_update(self, model_with_grads):
        grads = []
        for module in model_with_grads.children():
            grads.append(module._parameters['weight'].grad.data.view(-1))
            grads.append(module._parameters['bias'].grad.data.view(-1))
        flat_params = self.meta_model.get_flat_params()
        flat_grads = preprocess_gradients(torch.cat(grads).unsqueeze(1))
        inputs = torch.cat((flat_grads, flat_params.data.unsqueeze(1)), 1)
        # Meta update itself
        flat_params = flat_params + self(inputs)
        self.meta_model.set_flat_params(flat_params)
        # Finally, copy values from the meta model to the normal one.
        self.meta_model.copy_params_to(model_with_grads)
        return self.meta_model.model


def get_batch(batch_size, g):
    x = torch.randn(batch_size, 4, generator=g)
    return x, x.sum(1, keepdim=True) * 0.5


torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
meta_optimizer = MetaOptimizer(MetaModel(Model()), num_layers=2, hidden_size=10)
optimizer = optim.Adam(meta_optimizer.parameters(), lr=1e-3)
loss_fn = lambda f_x, y: (f_x - y).pow(2).mean()
lstm_before = meta_optimizer.lstms[0].weight_ih.detach().clone()

for i in range(3):
    model = Model()
    for k in range(2):
        meta_optimizer.reset_lstm(keep_states=k > 0, model=model)
        loss_sum = 0
        for j in range(3):
            x, y = get_batch(16, g)
            f_x = model(x)
            loss = loss_fn(f_x, y)
            model.zero_grad()
            loss.backward()
            meta_model = meta_optimizer.meta_update(model)
            f_x = meta_model(x)
            loss = loss_fn(f_x, y)
            loss_sum += loss
        meta_optimizer.zero_grad()
        loss_sum.backward()
        for param in meta_optimizer.parameters():
            param.grad.data.clamp_(-1, 1)
        optimizer.step()
    print(f"task {i}: meta loss {loss_sum.item():.4f}")

print("LSTM weight has a grad:", meta_optimizer.lstms[0].weight_ih.grad is not None)
print("LSTM weights changed:", not torch.equal(lstm_before, meta_optimizer.lstms[0].weight_ih))
