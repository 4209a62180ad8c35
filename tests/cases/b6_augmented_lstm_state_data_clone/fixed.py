"""The fixed twin: the carried memory and state keep their history (clone() without .data), so gradients flow
back through every timestep."""
import torch
import torch.nn.functional as F
from torch import nn


class AugmentedLstm(nn.Module):
    def __init__(self, input_size=4, hidden_size=8):
        super().__init__()
        self.hidden_size = hidden_size
        self.input_linearity = nn.Linear(input_size, 4 * hidden_size, bias=False)
        self.state_linearity = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, sequence_tensor):
        batch_size, total_timesteps, _ = sequence_tensor.shape
        output_accumulator = []
        full_batch_previous_memory = sequence_tensor.new_zeros(batch_size, self.hidden_size)
        full_batch_previous_state = sequence_tensor.new_zeros(batch_size, self.hidden_size)
        for timestep in range(total_timesteps):
            previous_memory = full_batch_previous_memory
            previous_state = full_batch_previous_state
            projected_input = self.input_linearity(sequence_tensor[:, timestep])
            projected_state = self.state_linearity(previous_state)
            i, f, g, o = (projected_input + projected_state).chunk(4, dim=-1)
            memory = torch.sigmoid(i) * torch.tanh(g) + torch.sigmoid(f) * previous_memory
            timestep_output = torch.sigmoid(o) * torch.tanh(memory)
            full_batch_previous_memory = memory.clone()
            full_batch_previous_state = timestep_output.clone()
            output_accumulator.append(timestep_output)
        return torch.stack(output_accumulator, dim=1)


torch.manual_seed(0)
lstm, classifier = AugmentedLstm(), nn.Linear(8, 2)
optimizer = torch.optim.Adam(list(lstm.parameters()) + list(classifier.parameters()), lr=1e-2)
tokens, labels = torch.randn(6, 5, 4), torch.randint(0, 2, (6,))
for step in range(3):
    embedded = tokens.clone().requires_grad_(True)
    loss = F.cross_entropy(classifier(lstm(embedded)[:, -1]), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}, gradient reaching the first token: {embedded.grad[:, 0].abs().sum().item():.6f}")
