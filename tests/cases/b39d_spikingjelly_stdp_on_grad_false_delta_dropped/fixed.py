"""spikingjelly issue #337 (Chinese): the asker ran the stdp_trace.py example (one Linear(1, 1) synapse feeding an
IFNode, weight initialised to 0.4, trained by an STDPLearner plus an SGD optimizer) but did not want STDP to go
through the gradient, so changed `stdp_learner.step(on_grad=True)` to `on_grad=False`. With on_grad=True the learner
writes -delta_w into weight.grad and optimizer.step() applies it; with on_grad=False step() only *returns* delta_w.
The return value is dropped, weight.grad stays None, optimizer.step() skips the weight and it stays at 0.4 forever.
Maintainer's fix: with on_grad=False take the returned delta_w and update the weight by hand (w = w + lr * delta_w).
The STDP learner, monitors and IF neuron are reproduced in plain torch."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class IFNode(nn.Module):  # spikingjelly.activation_based.neuron.IFNode, single step, hard reset to 0
    def __init__(self, v_threshold=1.0):
        super().__init__()
        self.v_threshold = v_threshold
        self.v = 0.0

    def forward(self, x):
        self.v = self.v + x
        spike = (self.v >= self.v_threshold).to(x)
        self.v = self.v * (1.0 - spike)
        return spike


def stdp_linear_single_step(fc, in_spike, out_spike, trace_pre, trace_post, tau_pre, tau_post,
                            f_pre=lambda x: x, f_post=lambda x: x):  # spikingjelly.activation_based.learning
    if trace_pre is None:
        trace_pre = 0.
    if trace_post is None:
        trace_post = 0.
    weight = fc.weight.data
    trace_pre = trace_pre - trace_pre / tau_pre + in_spike
    trace_post = trace_post - trace_post / tau_post + out_spike
    delta_w_pre = -f_pre(weight) * (trace_post.unsqueeze(2) * in_spike.unsqueeze(1)).sum(0)
    delta_w_post = f_post(weight) * (trace_pre.unsqueeze(1) * out_spike.unsqueeze(2)).sum(0)
    return trace_pre, trace_post, delta_w_pre + delta_w_post


class STDPLearner:  # spikingjelly.activation_based.learning.STDPLearner, step_mode='s', Linear synapse
    def __init__(self, synapse, sn, tau_pre, tau_post, f_pre, f_post):
        self.synapse, self.tau_pre, self.tau_post, self.f_pre, self.f_post = synapse, tau_pre, tau_post, f_pre, f_post
        self.in_records, self.out_records = [], []  # monitor.InputMonitor / monitor.OutputMonitor
        synapse.register_forward_hook(lambda m, inp, out: self.in_records.append(inp[0]))
        sn.register_forward_hook(lambda m, inp, out: self.out_records.append(out))
        self.trace_pre = None
        self.trace_post = None

    def step(self, on_grad=True, scale=1.):
        delta_w = None
        for _ in range(len(self.in_records)):
            in_spike = self.in_records.pop(0)
            out_spike = self.out_records.pop(0)
            self.trace_pre, self.trace_post, dw = stdp_linear_single_step(
                self.synapse, in_spike, out_spike, self.trace_pre, self.trace_post,
                self.tau_pre, self.tau_post, self.f_pre, self.f_post)
            if scale != 1.:
                dw *= scale
            delta_w = dw if (delta_w is None) else (delta_w + dw)
        if on_grad:
            if self.synapse.weight.grad is None:
                self.synapse.weight.grad = -delta_w
            else:
                self.synapse.weight.grad = self.synapse.weight.grad - delta_w
        else:
            return delta_w


def f_weight(x):
    return torch.clamp(x, -1, 1.)


tau_pre = 2.
tau_post = 2.
T = 128
N = 1
lr = 0.01
net = nn.Sequential(
    nn.Linear(1, 1, bias=False),
    IFNode()
)
nn.init.constant_(net[0].weight.data, 0.4)
optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.)

in_spike = (torch.rand([T, N, 1]) > 0.7).float()
stdp_learner = STDPLearner(synapse=net[0], sn=net[1], tau_pre=tau_pre, tau_post=tau_post,
                           f_pre=f_weight, f_post=f_weight)

out_spike = []
weight = []
with torch.no_grad():
    for t in range(T):
        optimizer.zero_grad()
        out_spike.append(net(in_spike[t]).squeeze())
        delta_w = stdp_learner.step(on_grad=False)
        net[0].weight.data += lr * delta_w
        optimizer.step()
        weight.append(net[0].weight.data.clone().squeeze())

out_spike = torch.stack(out_spike)
weight = torch.stack(weight)
print('output spikes:', int(out_spike.sum().item()))
print('weight min/max over time:', weight.min().item(), weight.max().item())
