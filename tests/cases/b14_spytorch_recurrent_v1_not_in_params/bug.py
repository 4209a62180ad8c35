"""SpyTorch tutorial 4, a recurrent spiking network on the Spiking Heidelberg Digits (fzenke/spytorch#7): the tutorial
adds recurrent weights v1 to the hidden layer and uses them in run_snn, but train() hands only `[w1, w2]` to
Adamax, so "the recurrent weights (v1) are not updating" although they get a gradient every batch. The fix puts v1
in the parameter list."""
import numpy as np
import torch
import torch.nn as nn

nb_inputs, nb_hidden, nb_outputs = 40, 16, 5
time_step, nb_steps, batch_size = 1e-3, 20, 8
dtype, device = torch.float, torch.device("cpu")
tau_mem, tau_syn = 10e-3, 5e-3
alpha = float(np.exp(-time_step / tau_syn))
beta = float(np.exp(-time_step / tau_mem))

torch.manual_seed(0)
weight_scale = 0.2
w1 = torch.empty((nb_inputs, nb_hidden), device=device, dtype=dtype, requires_grad=True)
torch.nn.init.normal_(w1, mean=0.0, std=weight_scale / np.sqrt(nb_inputs))
w2 = torch.empty((nb_hidden, nb_outputs), device=device, dtype=dtype, requires_grad=True)
torch.nn.init.normal_(w2, mean=0.0, std=weight_scale / np.sqrt(nb_hidden))
v1 = torch.empty((nb_hidden, nb_hidden), device=device, dtype=dtype, requires_grad=True)
torch.nn.init.normal_(v1, mean=0.0, std=weight_scale / np.sqrt(nb_hidden))


class SurrGradSpike(torch.autograd.Function):
    scale = 100.0

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        out = torch.zeros_like(input)
        out[input > 0] = 1.0
        return out

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        return grad_input / (SurrGradSpike.scale * torch.abs(input) + 1.0) ** 2


spike_fn = SurrGradSpike.apply


def run_snn(inputs):
    syn = torch.zeros((batch_size, nb_hidden), device=device, dtype=dtype)
    mem = torch.zeros((batch_size, nb_hidden), device=device, dtype=dtype)
    spk_rec = [mem]
    h1 = torch.zeros((batch_size, nb_hidden), device=device, dtype=dtype)
    h1_from_input = torch.einsum("abc,cd->abd", (inputs, w1))
    for t in range(nb_steps):
        h1 = h1_from_input[:, t] + torch.einsum("ab,bc->ac", (h1, v1))
        mthr = mem - 1.0
        out = spike_fn(mthr)
        rst = torch.zeros_like(mem)
        c = (mthr > 0)
        rst[c] = torch.ones_like(mem)[c]
        new_syn = alpha * syn + h1
        new_mem = beta * mem + syn - rst
        mem, syn = new_mem, new_syn
        spk_rec.append(out)
    spk_rec = torch.stack(spk_rec, dim=1)
    h2 = torch.einsum("abc,cd->abd", (spk_rec, w2))
    flt = torch.zeros((batch_size, nb_outputs), device=device, dtype=dtype)
    out = torch.zeros((batch_size, nb_outputs), device=device, dtype=dtype)
    out_rec = [out]
    for t in range(nb_steps):
        new_flt = alpha * flt + h2[:, t]
        new_out = beta * out + flt
        flt, out = new_flt, new_out
        out_rec.append(out)
    return torch.stack(out_rec, dim=1), [spk_rec]


def train(x_data, y_data, lr=1e-2, nb_epochs=3):
    params = [w1, w2]  # <- optimizer
    optimizer = torch.optim.Adamax(params, lr=lr, betas=(0.9, 0.999))
    log_softmax_fn = nn.LogSoftmax(dim=1)
    loss_fn = nn.NLLLoss()
    loss_hist = []
    for e in range(nb_epochs):
        output, recs = run_snn(x_data)
        m, _ = torch.max(output, 1)
        log_p_y = log_softmax_fn(m)
        loss_val = loss_fn(log_p_y, y_data)
        optimizer.zero_grad()
        loss_val.backward()
        optimizer.step()
        loss_hist.append(loss_val.item())
        print("Epoch %i: loss=%.5f" % (e + 1, loss_hist[-1]))
    return loss_hist


x_data = (torch.rand(batch_size, nb_steps, nb_inputs) < 0.2).float()
y_data = torch.randint(0, nb_outputs, (batch_size,))
v1_before = v1.detach().clone()
train(x_data, y_data)
print(f"v1 grad set: {v1.grad is not None}; v1 changed: {not torch.equal(v1_before, v1)}")
