# [Bug] RuntimeError: Trying to backward through the graph a second time, but the saved
# intermediate results have already been freed.
# https://github.com/synsense/sinabs/issues/5
# sinabs StatefulLayer.reset_states() zeroed the state buffers in place (buffer.zero_()).
# After a forward pass the buffer (v_mem) is the output of the membrane recursion, so it
# carries a grad_fn; zero_() keeps that history (ZeroBackward -> old graph). The next batch's
# forward starts from that buffer, and backward walks into the previous batch's freed graph.
# Fix (commit ffae161): detach the buffers after resetting: buffer.zero_().detach_().
from typing import List
import torch
import torch.nn as nn

torch.manual_seed(0)


class StatefulLayer(nn.Module):
    def __init__(self, state_names: List[str]):
        super().__init__()
        for state_name in state_names:
            self.register_buffer(state_name, torch.zeros((0)))

    def is_state_initialised(self) -> bool:
        for buffer in self.buffers():
            if buffer.shape == torch.Size([0]):
                return False
        return True

    def state_has_shape(self, shape) -> bool:
        for buff in self.buffers():
            if buff.shape != shape:
                return False
        return True

    def init_state_with_shape(self, shape, randomize: bool = False) -> None:
        for name, buffer in self.named_buffers():
            self.register_buffer(name, torch.zeros(shape, device=buffer.device))
        self.reset_states(randomize=randomize)

    def reset_states(self, randomize=False):
        if self.is_state_initialised():
            for buffer in self.buffers():
                if randomize:
                    torch.nn.init.uniform_(buffer)
                else:
                    buffer.zero_()  # <- autograd_error


class SingleSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v_mem, spike_threshold):
        ctx.save_for_backward(v_mem)
        ctx.spike_threshold = spike_threshold
        return (v_mem >= spike_threshold).float()

    @staticmethod
    def backward(ctx, grad_output):
        (v_mem,) = ctx.saved_tensors
        grad = grad_output / (1 + (v_mem - ctx.spike_threshold).abs()) ** 2
        return grad, None


def lif_forward(input_data, alpha_mem, state, spike_threshold):
    v_mem = state["v_mem"]
    output_spikes = []
    for step in range(input_data.shape[1]):
        v_mem = alpha_mem * v_mem + input_data[:, step]
        spikes = SingleSpike.apply(v_mem, spike_threshold)
        v_mem = v_mem - spikes * spike_threshold
        output_spikes.append(spikes)
    state["v_mem"] = v_mem
    return torch.stack(output_spikes, 1), state


class LIF(StatefulLayer):
    def __init__(self, tau_mem: float, spike_threshold: float = 1.0):
        super().__init__(state_names=["v_mem"])
        self.tau_mem = torch.tensor(tau_mem)
        self.spike_threshold = spike_threshold

    def forward(self, input_data: torch.Tensor):
        batch_size, time_steps, *trailing_dim = input_data.shape
        if not self.is_state_initialised() or not self.state_has_shape((batch_size, *trailing_dim)):
            self.init_state_with_shape((batch_size, *trailing_dim))
        alpha_mem = torch.exp(-1.0 / self.tau_mem)
        spikes, state = lif_forward(input_data, alpha_mem, dict(self.named_buffers()), self.spike_threshold)
        self.v_mem = state["v_mem"]
        return spikes


class SNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(8, 16)
        self.lif1 = LIF(tau_mem=20.0)
        self.lin2 = nn.Linear(16, 2)

    def forward(self, x):  # x: (batch, time, features)
        out = self.lif1(self.lin1(x))
        return self.lin2(out).sum(1)

    def reset_states(self):
        self.lif1.reset_states()


model = SNN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()

for batch in range(3):
    x = torch.rand(4, 10, 8) * 3
    y = torch.randint(0, 2, (4,))
    model.reset_states()
    optimizer.zero_grad()
    out = model(x)
    loss = loss_fn(out, y)
    loss.backward()
    print("batch", batch, "loss", loss.item(), "lin1.weight.grad norm", model.lin1.weight.grad.norm().item())
    optimizer.step()
