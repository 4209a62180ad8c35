# Plain-torch rendering of snnTorch's recurrent LIF neuron (snn.RLeaky) with
# init_hidden=True, trained with truncated backpropagation through time.
# The neuron keeps its spike `spk` and membrane `mem` as instance state; the
# recurrent connection feeds `spk` back in the next step. RLeaky.detach_hidden()
# (called between truncation windows) detached only `mem`, not `spk`.
import torch
from torch import nn

torch.manual_seed(0)


class ATan(torch.autograd.Function):
    """snntorch.surrogate.atan: Heaviside forward, arctan surrogate backward."""

    @staticmethod
    def forward(ctx, input_, alpha=2.0):
        ctx.save_for_backward(input_)
        ctx.alpha = alpha
        return (input_ > 0).float()

    @staticmethod
    def backward(ctx, grad_output):
        (input_,) = ctx.saved_tensors
        grad = ctx.alpha / 2 / (1 + (torch.pi / 2 * ctx.alpha * input_).pow(2)) * grad_output
        return grad, None


class RLeaky(nn.Module):
    instances = []

    def __init__(self, beta, linear_features, threshold=1.0):
        super().__init__()
        RLeaky.instances.append(self)
        self.register_buffer("beta", torch.as_tensor(beta))
        self.threshold = threshold
        self.recurrent = nn.Linear(linear_features, linear_features)
        self.spk = torch.zeros(1)
        self.mem = torch.zeros(1)

    def forward(self, input_):
        if not self.spk.shape == input_.shape:
            self.spk = torch.zeros_like(input_)
        if not self.mem.shape == input_.shape:
            self.mem = torch.zeros_like(input_)
        reset = ATan.apply(self.mem - self.threshold).detach()
        self.mem = (self.beta.clamp(0, 1) * self.mem + input_
                    + self.recurrent(self.spk) - reset * self.threshold)
        self.spk = ATan.apply(self.mem - self.threshold)
        return self.spk

    @classmethod
    def detach_hidden(cls):
        """Detach hidden states from the graph (truncated BPTT)."""
        for layer in range(len(cls.instances)):
            if isinstance(cls.instances[layer], RLeaky):
                cls.instances[layer].mem.detach_()  # <- autograd_error

    @classmethod
    def reset_hidden(cls):
        for layer in range(len(cls.instances)):
            if isinstance(cls.instances[layer], RLeaky):
                cls.instances[layer].mem = torch.zeros_like(cls.instances[layer].mem)


class Net(nn.Module):
    def __init__(self, num_in=8, num_hidden=16, num_out=2):
        super().__init__()
        self.fc1 = nn.Linear(num_in, num_hidden)
        self.lif1 = RLeaky(beta=0.9, linear_features=num_hidden)
        self.fc2 = nn.Linear(num_hidden, num_out)

    def forward(self, x):
        return self.fc2(self.lif1(self.fc1(x)))


net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)

num_steps, K, batch = 20, 5, 4
data = torch.rand(num_steps, batch, 8) * 3
targets = torch.rand(num_steps, batch, 2)

RLeaky.reset_hidden()
for start in range(0, num_steps, K):  # truncated BPTT windows of K steps
    loss = 0.0
    for t in range(start, start + K):
        out = net(data[t])
        loss = loss + ((out - targets[t]) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()  # <- symptom
    optimizer.step()
    RLeaky.detach_hidden()
    print("window", start // K, "loss", round(loss.item(), 4))
