# ADADP-style DP-SGD with "expanded" linear layers: every weight carries one copy per
# sample of the processing batch, so p.grad holds per-sample gradients. They are clipped
# and accumulated into cum_grads, p.grad is zeroed, and at the end of the batch
# add_noise_with_cum_grads should write the noisy sum back into p.grad before the step.
from collections import OrderedDict as od

import torch
import torch.nn as nn

torch.manual_seed(0)

batch_size = 20
batch_proc_size = 1
grad_norm_max, noise_sigma = 10.0, 2.0
input_dim, latent_dim, output_dim = 16, 32, 10


class Linear(nn.Module):
    def __init__(self, in_features, out_features, batch_size):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(batch_size, out_features, in_features))
        bound = 1.0 / in_features ** 0.5
        self.weight.data.uniform_(-bound, bound)

    def forward(self, x):  # x: [batch_proc_size, 1, in]
        return torch.bmm(x, self.weight.transpose(1, 2))


class simpleExpandedDNN(nn.Module):
    def __init__(self, batch_size, batch_proc_size):
        super().__init__()
        self.relu = nn.ReLU()
        self.batch_size = batch_size
        self.batch_proc_size = batch_proc_size
        self.linears = nn.ModuleList([Linear(input_dim, latent_dim, batch_proc_size)])
        self.final_fc = Linear(latent_dim, output_dim, batch_proc_size)

    def forward(self, x):
        x = torch.unsqueeze(x.view(-1, input_dim), 1)
        for k_linear in self.linears:
            x = self.relu(k_linear(x))
        x = self.final_fc(x)
        return nn.functional.log_softmax(x.view(-1, output_dim), dim=1)


def acc_scaled_grads(model, C, cum_grads):
    bs = model.batch_proc_size
    g_norm = torch.zeros(bs)
    for p in filter(lambda p: p.requires_grad, model.parameters()):
        if p.grad is not None:
            g_norm += torch.sum(p.grad.view(bs, -1) ** 2, 1)
    g_norm = torch.sqrt(g_norm)
    for p, key in zip(filter(lambda p: p.requires_grad, model.parameters()), cum_grads.keys()):
        cum_grads[key] += torch.sum(p.grad / torch.clamp(g_norm.view(-1, 1, 1) / C, min=1), dim=0)


def add_noise_with_cum_grads(model, C, sigma, cum_grads):
    bs = model.batch_proc_size
    for p, key in zip(filter(lambda p: p.requires_grad, model.parameters()), cum_grads.keys()):
        if p.grad is not None:
            if bs > 1:  # <- no_update
                noise = (sigma * C) * torch.normal(mean=torch.zeros_like(p.grad[0]), std=1.0)
                p.grad = (cum_grads[key].expand(bs, -1, -1) + noise.expand(bs, -1, -1)) / model.batch_size


model = simpleExpandedDNN(batch_size, batch_proc_size)
for p in model.parameters():
    p.data.copy_(p[0].data.clone().repeat(batch_proc_size, 1, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
loss_function = nn.NLLLoss(reduction="sum")

data = torch.randn(batch_size, input_dim)
target = torch.randint(0, output_dim, (batch_size,))
before = model.final_fc.weight.detach().clone()

for epoch in range(3):
    optimizer.zero_grad(set_to_none=False)  # zero in place, as PyTorch < 2.0 did
    loss_tot = 0.0
    cum_grads = od()
    for i, p in enumerate(model.parameters()):
        if p.requires_grad:
            cum_grads[str(i)] = torch.zeros(p.shape[1:])
    for i_batch in range(batch_size // batch_proc_size):
        data_proc = data[i_batch * batch_proc_size:(i_batch + 1) * batch_proc_size]
        target_proc = target[i_batch * batch_proc_size:(i_batch + 1) * batch_proc_size]
        output = model(data_proc)
        loss = loss_function(output, target_proc)
        loss_tot += loss.item()
        loss.backward()
        acc_scaled_grads(model=model, C=grad_norm_max, cum_grads=cum_grads)
        optimizer.zero_grad(set_to_none=False)
    add_noise_with_cum_grads(model=model, C=grad_norm_max, sigma=noise_sigma, cum_grads=cum_grads)
    optimizer.step()
    print(f"epoch {epoch} loss {loss_tot / batch_size:.4f}")

print("final_fc weight changed:", not torch.equal(before, model.final_fc.weight))
