# Diffusion-convolutional GRU cell (DCRNN style) with fully-connected reset/update gates.
# Fixed: _fc returns matmul + bias out of place (the redundant inner sigmoid is dropped),
# so nothing saved for backward is modified in place.
import torch
from torch import nn

torch.manual_seed(0)


class DCGRUCell(nn.Module):
    def __init__(self, num_units, support, num_nodes, input_dim, use_gc_for_ru=False):
        super().__init__()
        self._num_nodes = num_nodes
        self._num_units = num_units
        self._use_gc_for_ru = use_gc_for_ru
        self.register_buffer("_support", support)

        input_size_fc = num_units + input_dim
        input_size_gconv = input_size_fc * 2
        input_size_ru = input_size_gconv if use_gc_for_ru else input_size_fc

        self._ru_weights = nn.Parameter(torch.empty(input_size_ru, 2 * num_units))
        self._ru_biases = nn.Parameter(torch.empty(2 * num_units))
        nn.init.xavier_normal_(self._ru_weights)
        nn.init.constant_(self._ru_biases, 1.0)
        self._gconv_weights = nn.Parameter(torch.empty(input_size_gconv, num_units))
        self._gconv_biases = nn.Parameter(torch.zeros(num_units))
        nn.init.xavier_normal_(self._gconv_weights)

    def forward(self, inputs, hx):
        fn = self._gconv if self._use_gc_for_ru else self._fc
        output_size = 2 * self._num_units
        value = torch.sigmoid(fn(inputs, hx, output_size, reset=True))
        value = torch.reshape(value, (-1, self._num_nodes, output_size))
        r, u = torch.split(value, self._num_units, dim=-1)
        r = torch.reshape(r, (-1, self._num_nodes * self._num_units))
        u = torch.reshape(u, (-1, self._num_nodes * self._num_units))
        c = torch.tanh(self._gconv(inputs, r * hx, self._num_units))
        return u * hx + (1.0 - u) * c

    def _fc(self, inputs, state, output_size, reset=True):
        batch_size = inputs.shape[0]
        shape = (batch_size * self._num_nodes, -1)
        inputs = torch.reshape(inputs, shape)
        state = torch.reshape(state, shape)
        x = torch.cat([inputs, state], dim=-1)
        return torch.matmul(x, self._ru_weights) + self._ru_biases

    def _gconv(self, inputs, state, output_size, reset=False):
        batch_size = inputs.shape[0]
        shape = (batch_size, self._num_nodes, -1)
        x = torch.cat([torch.reshape(inputs, shape), torch.reshape(state, shape)], dim=2)
        input_size = x.size(2)
        x0 = torch.reshape(x.permute(1, 2, 0), (self._num_nodes, input_size * batch_size))
        x1 = torch.mm(self._support, x0)
        x = torch.stack([x0, x1])
        x = torch.reshape(x, (2, self._num_nodes, input_size, batch_size))
        x = torch.reshape(x.permute(3, 1, 2, 0), (batch_size * self._num_nodes, input_size * 2))
        if reset:
            weights, biases = self._ru_weights, self._ru_biases
        else:
            weights, biases = self._gconv_weights, self._gconv_biases
        x = torch.matmul(x, weights) + biases
        return torch.reshape(x, (batch_size, self._num_nodes * output_size))


num_nodes, input_dim, num_units, batch, seq_len = 5, 2, 8, 4, 6
adj = torch.rand(num_nodes, num_nodes)
support = adj / adj.sum(dim=1, keepdim=True)
cell = DCGRUCell(num_units, support, num_nodes, input_dim, use_gc_for_ru=False)
proj = nn.Linear(num_units, 1)
optimizer = torch.optim.Adam(list(cell.parameters()) + list(proj.parameters()), lr=1e-2)

x = torch.randn(seq_len, batch, num_nodes * input_dim)
y = torch.randn(batch, num_nodes)

for step in range(3):
    optimizer.zero_grad()
    h = torch.zeros(batch, num_nodes * num_units)
    for t in range(seq_len):
        h = cell(x[t], h)
    pred = proj(h.view(batch, num_nodes, num_units)).squeeze(-1)
    loss = nn.functional.mse_loss(pred, y)
    loss.backward()
    optimizer.step()
    print("step", step, "loss", loss.item(), "ru_weights grad norm", cell._ru_weights.grad.norm().item())
