# Differentiable encoder for adversarial attacks?
# https://github.com/norse/norse/issues/264
# The reporter ran a gradient attack (foolbox PGD) on a norse SNN whose first stage is
# norse.torch.PoissonEncoder. poisson_encode builds the spikes with a comparison
# (torch.rand(...) < dt * f_max * x).float(), which has no gradient, so the loss has no path
# back to the input image: the attack's x.grad is None and the PGD step fails.
# Fix (reporter's, confirmed working in the thread): a DifferentiablePoissonEncoder that
# computes the spikes as hardsigmoid((dt * f_max * x - rand) * 100000), i.e. the same spikes
# with a (steep) differentiable path to x.
from typing import NamedTuple, Tuple
import torch
import torch.nn as nn

torch.manual_seed(0)


def poisson_encode(input_values: torch.Tensor, seq_length: int, f_max: float = 100, dt: float = 0.001):
    rand = torch.rand(seq_length, *input_values.shape, device=input_values.device).float()
    return torch.nn.functional.hardsigmoid((dt * f_max * input_values - rand) * 100000)


class PoissonEncoder(nn.Module):
    def __init__(self, seq_length: int, f_max: float = 100, dt: float = 0.001):
        super().__init__()
        self.seq_length = seq_length
        self.f_max = f_max
        self.dt = dt

    def forward(self, x):
        return poisson_encode(x, self.seq_length, f_max=self.f_max, dt=self.dt)


class SuperSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_tensor: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(input_tensor)
        ctx.alpha = alpha
        return torch.gt(input_tensor, torch.as_tensor(0.0)).to(input_tensor.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        (inp,) = ctx.saved_tensors
        grad = grad_output / (ctx.alpha * torch.abs(inp) + 1.0).pow(2)
        return grad, None


class LIFParameters(NamedTuple):
    tau_syn_inv: float = 200.0
    tau_mem_inv: float = 100.0
    v_leak: float = 0.0
    v_th: float = 1.0
    v_reset: float = 0.0
    alpha: float = 100.0


class LIFFeedForwardState(NamedTuple):
    v: torch.Tensor
    i: torch.Tensor


def lif_feed_forward_step(input_tensor, state: LIFFeedForwardState, p: LIFParameters, dt: float = 0.001):
    dv = dt * p.tau_mem_inv * ((p.v_leak - state.v) + state.i)
    v_decayed = state.v + dv
    di = -dt * p.tau_syn_inv * state.i
    i_decayed = state.i + di
    z_new = SuperSpike.apply(v_decayed - p.v_th, p.alpha)
    v_new = (1 - z_new) * v_decayed + z_new * p.v_reset
    i_new = i_decayed + input_tensor
    return z_new, LIFFeedForwardState(v=v_new, i=i_new)


class LIFCell(nn.Module):
    def __init__(self, p: LIFParameters = LIFParameters()):
        super().__init__()
        self.p = p

    def forward(self, input_tensor, state=None):
        if state is None:
            state = LIFFeedForwardState(v=torch.zeros_like(input_tensor), i=torch.zeros_like(input_tensor))
        return lif_feed_forward_step(input_tensor, state, self.p)


class LILinearCell(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, tau_syn_inv=200.0, tau_mem_inv=100.0):
        super().__init__()
        self.input_weights = nn.Parameter(torch.randn(hidden_size, input_size) / input_size ** 0.5)
        self.tau_syn_inv = tau_syn_inv
        self.tau_mem_inv = tau_mem_inv

    def forward(self, input_tensor, state=None, dt: float = 0.001):
        if state is None:
            z = torch.zeros(input_tensor.shape[0], self.input_weights.shape[0])
            state = (z, z)
        v, i = state
        i_jump = i + nn.functional.linear(input_tensor, self.input_weights)
        v_new = v + dt * self.tau_mem_inv * (i_jump - v)
        i_new = i_jump - dt * self.tau_syn_inv * i_jump
        return v_new, (v_new, i_new)


class SNN(nn.Module):
    def __init__(self, input_features=28 * 28, hidden_features=100, output_features=10):
        super().__init__()
        self.fc_in = nn.Linear(input_features, hidden_features, bias=False)
        self.lif = LIFCell()
        self.out = LILinearCell(hidden_features, output_features)

    def forward(self, x):  # x: (seq, batch, features)
        s1 = so = None
        voltages = []
        for ts in range(x.shape[0]):
            z = self.fc_in(x[ts]) * 10
            z, s1 = self.lif(z, s1)
            vo, so = self.out(z, so)
            voltages.append(vo)
        return torch.stack(voltages)


def decode(x):
    x, _ = torch.max(x, 0)
    return torch.nn.functional.log_softmax(x, dim=1)


class Model(nn.Module):
    def __init__(self, encoder, snn, decoder):
        super().__init__()
        self.encoder = encoder
        self.snn = snn
        self.decoder = decoder

    def forward(self, x):
        x = self.encoder(x)
        x = self.snn(x)
        return self.decoder(x)


model = Model(encoder=PoissonEncoder(seq_length=32, f_max=100), snn=SNN(), decoder=decode)
model.eval()

images = torch.rand(4, 28 * 28)
labels = torch.randint(0, 10, (4,))

# one PGD (L_inf) step, as foolbox's PGD does on the model's input
epsilon, step_size = 0.3, 0.01
x = images.clone().requires_grad_(True)
loss = nn.functional.nll_loss(model(x), labels)
loss.backward()
x_adv = x + step_size * x.grad.sign()
x_adv = torch.min(torch.max(x_adv, images - epsilon), images + epsilon).clamp(0, 1).detach()
print("loss", loss.item(), "mean |perturbation|", (x_adv - images).abs().mean().item())
