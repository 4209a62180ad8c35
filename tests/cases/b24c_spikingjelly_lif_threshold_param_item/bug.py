"""fangwei123456/spikingjelly issue #371 "MultiStepLIFNode等神经元的阈值是可训练的吗？或者有什么方法可以把阈值变成一个
可训练的参数吗", https://github.com/fangwei123456/spikingjelly/issues/371: to learn the firing threshold of a LIF
layer the user (writing in Chinese) wrapped it in a Parameter, `self.v_th = nn.Parameter(torch.tensor([v_th]))`,
and built the neuron with `MultiStepLIFNode(tau=2.0, v_threshold=self.v_th.item(), detach_reset=True, ...)`;
the threshold he logged never changed during CIFAR-10 training. `.item()` turns the Parameter into a Python float
when the neuron is built, so the neuron compares the membrane potential with a constant: v_th never enters the
graph, its .grad stays None and the optimizer (built from model.parameters(), which does hold v_th) never moves it.
The maintainer's fix: pass the Parameter itself, `v_threshold=self.v_th` (spikingjelly's constructor asserts a
float, so the thread goes on to subclass MultiStepLIFNode; the stand-in below has no such assert, so the fix is
that one argument). spikingjelly's MultiStepLIFNode (torch backend) and its ATan surrogate are a short stand-in;
the network and data are shrunk to a small spiking MLP on random inputs."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- spikingjelly (surrogate.ATan, MultiStepLIFNode, backend='torch') stand-in -----------------
class atan_spike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x >= 0).to(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        grad_x = ctx.alpha / 2 / (1 + (math.pi / 2 * ctx.alpha * x).pow(2)) * grad_output
        return grad_x, None


class MultiStepLIFNode(nn.Module):
    def __init__(self, tau=2., decay_input=True, v_threshold=1., v_reset=0., detach_reset=False, backend='torch'):
        super().__init__()
        self.tau, self.decay_input, self.v_reset, self.detach_reset = tau, decay_input, v_reset, detach_reset
        self.v_threshold = v_threshold
        self.backend = backend

    def forward(self, x_seq):
        v = torch.full_like(x_seq[0], self.v_reset)
        spike_seq = []
        for t in range(x_seq.shape[0]):
            v = v + (x_seq[t] - (v - self.v_reset)) / self.tau
            spike = atan_spike.apply(v - self.v_threshold, 2.0)
            spike_d = spike.detach() if self.detach_reset else spike
            v = (1. - spike_d) * v + spike_d * self.v_reset
            spike_seq.append(spike)
        return torch.stack(spike_seq)


# --- the user's model ----------------------------------------------------------------------------
class SpikingMLP(nn.Module):
    def __init__(self, in_features=32, hidden=64, num_classes=10, v_th=1.0, T=4):
        super().__init__()
        self.T = T
        self.fc1 = nn.Linear(in_features, hidden)
        self.v_th = nn.Parameter(torch.tensor([v_th]))
        self.lif = MultiStepLIFNode(tau=2.0, v_threshold=self.v_th.item(), detach_reset=True, backend='torch')  # <- item
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x_seq = self.fc1(x).unsqueeze(0).repeat(self.T, 1, 1)  # direct encoding, [T, B, hidden]
        spikes = self.lif(x_seq)
        return self.fc2(spikes.mean(0))


torch.manual_seed(0)
torch.set_num_threads(1)
net = SpikingMLP()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
images = torch.randn(64, 32) * 2
labels = torch.randint(0, 10, (64,))
v_th_before = net.v_th.detach().clone()
for step in range(20):
    out = net(images)
    loss = F.cross_entropy(out, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
print("v_th.grad is None:", net.v_th.grad is None)
print("v_th after training:", net.v_th.item(), "changed:", not torch.equal(v_th_before, net.v_th.detach()))
