# Plain-torch rendering of a Keras (torch backend) stateful GRU layer on the fused path:
# the layer keeps its recurrent state in a Variable, feeds that tensor as h0 to the fused
# GRU kernel (which saves h0 for backward), then after the forward pass writes the new
# state back into the same Variable in place (Variable.assign -> copy_).
import torch
from torch import nn

torch.manual_seed(0)


class Variable:
    """Minimal stand-in for keras.Variable on the torch backend."""

    def __init__(self, initial_value):
        self._value = initial_value

    @property
    def value(self):
        return self._value

    def assign(self, value):
        with torch.no_grad():
            self._value.copy_(value)


class StatefulGRU(nn.Module):
    def __init__(self, input_dim, units, batch_size):
        super().__init__()
        self.units = units
        self.gru = nn.GRU(input_dim, units, batch_first=True)  # fused (cuDNN-style) kernel
        self.states = [Variable(torch.zeros(1, batch_size, units))]

    def inner_loop(self, sequences, initial_state):
        h0 = initial_state[0]  # <- inplace_saved
        outputs, h_n = self.gru(sequences, h0)
        return outputs[:, -1], outputs, [h_n]

    def forward(self, sequences):
        initial_state = [s.value for s in self.states]
        last_output, outputs, new_states = self.inner_loop(sequences, initial_state)
        for self_state, state in zip(self.states, new_states):
            self_state.assign(state)
        return last_output


batch, seq_len, input_dim, units = 2, 3, 4, 5
layer = StatefulGRU(input_dim, units, batch)
head = nn.Linear(units, 1)
optimizer = torch.optim.SGD(list(layer.parameters()) + list(head.parameters()), lr=0.1)

# consecutive chunks of the same long streams (why the layer is stateful)
stream = torch.randn(batch, 4 * seq_len, input_dim)
target = torch.randn(batch, 4, 1)

for i in range(4):
    chunk = stream[:, i * seq_len:(i + 1) * seq_len]
    optimizer.zero_grad()
    pred = head(layer(chunk))
    loss = ((pred - target[:, i]) ** 2).mean()
    loss.backward()
    optimizer.step()
    print("chunk", i, "loss", round(loss.item(), 4),
          "weight_hh grad norm", round(layer.gru.weight_hh_l0.grad.norm().item(), 4))
