"""Slot Attention's slot initialisation (imbue-ai/slot_attention#8): slots_mu and slots_log_sigma, the mean and
log-sigma the initial slots are sampled from, are created with register_buffer, so they are not parameters, never
get a gradient and "are indeed the same throughout the training process", while the official and other
implementations learn them (the fix makes them nn.Parameter)."""
import torch
import torch.nn.functional as F
from torch import nn


class SlotAttention(nn.Module):
    def __init__(self, in_features, num_iterations, num_slots, slot_size, mlp_hidden_size, epsilon=1e-8):
        super().__init__()
        self.num_iterations, self.num_slots, self.slot_size, self.epsilon = num_iterations, num_slots, slot_size, epsilon
        self.norm_inputs = nn.LayerNorm(in_features)
        self.norm_slots = nn.LayerNorm(slot_size)
        self.norm_mlp = nn.LayerNorm(slot_size)
        self.project_q = nn.Linear(slot_size, slot_size, bias=False)
        self.project_k = nn.Linear(in_features, slot_size, bias=False)
        self.project_v = nn.Linear(in_features, slot_size, bias=False)
        self.gru = nn.GRUCell(slot_size, slot_size)
        self.mlp = nn.Sequential(nn.Linear(slot_size, mlp_hidden_size), nn.ReLU(), nn.Linear(mlp_hidden_size, slot_size))
        self.register_buffer("slots_mu", nn.init.xavier_uniform_(torch.zeros((1, 1, slot_size))))  # <- non_parameter_tensor
        self.register_buffer("slots_log_sigma", nn.init.xavier_uniform_(torch.zeros((1, 1, slot_size))))

    def forward(self, inputs):
        batch_size = inputs.shape[0]
        inputs = self.norm_inputs(inputs)
        k, v = self.project_k(inputs), self.project_v(inputs)
        slots_init = torch.randn((batch_size, self.num_slots, self.slot_size))
        slots = self.slots_mu + self.slots_log_sigma.exp() * slots_init
        for _ in range(self.num_iterations):
            slots_prev = slots
            q = self.project_q(self.norm_slots(slots))
            attn = F.softmax(torch.matmul(k, q.transpose(2, 1)) * self.slot_size ** -0.5, dim=-1) + self.epsilon
            attn = attn / attn.sum(dim=1, keepdim=True)
            updates = torch.matmul(attn.transpose(1, 2), v)
            slots = self.gru(updates.reshape(-1, self.slot_size), slots_prev.reshape(-1, self.slot_size))
            slots = slots.reshape(batch_size, self.num_slots, self.slot_size)
            slots = slots + self.mlp(self.norm_mlp(slots))
        return slots


torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(3, 16), nn.ReLU())
slot_attention = SlotAttention(in_features=16, num_iterations=3, num_slots=4, slot_size=16, mlp_hidden_size=32)
decoder = nn.Linear(16, 3 * 8)
params = [*encoder.parameters(), *slot_attention.parameters(), *decoder.parameters()]
optimizer = torch.optim.Adam(params, lr=4e-4)
pixels = torch.rand(8, 64, 3)
mu_before = slot_attention.slots_mu.detach().clone()
for step in range(10):
    slots = slot_attention(encoder(pixels))
    recon = decoder(slots.mean(1)).view(8, 8, 3).repeat_interleave(8, dim=1)
    loss = F.mse_loss(recon, pixels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; slots_mu requires grad: {slot_attention.slots_mu.requires_grad}; "
      f"slots_mu changed: {not torch.equal(slot_attention.slots_mu, mu_before)}")
