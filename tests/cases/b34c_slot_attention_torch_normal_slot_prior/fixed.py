"""Slot Attention auto-encoder (evelinehong/slot-attention-pytorch#5): the initial slots are drawn with
slots = torch.normal(mu, sigma) from the learned slot prior (slots_mu, slots_sigma). torch.normal is not
reparameterized: its gradient to mean and std is zero, so the slot prior never trains while the rest of the
auto-encoder does. The PR "resolved the non-trainability of mu and sigma through the reparameterization
trick": slots = mu + exp(log_sigma) * randn_like(...)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class SlotAttention(nn.Module):
    def __init__(self, num_slots, dim, iters=2, eps=1e-8, hidden_dim=32):
        super().__init__()
        self.num_slots, self.iters, self.eps, self.scale = num_slots, iters, eps, dim ** -0.5
        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
        self.slots_log_sigma = nn.Parameter(torch.rand(1, 1, dim))  # log(sigma) for numerical stability
        self.to_q, self.to_k, self.to_v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.gru = nn.GRUCell(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, hidden_dim), nn.Linear(hidden_dim, dim)
        self.norm_input, self.norm_slots, self.norm_pre_ff = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, inputs):
        b, n, d = inputs.shape
        mu = self.slots_mu.expand(b, self.num_slots, -1)
        sigma = torch.exp(self.slots_log_sigma.expand(b, self.num_slots, -1))
        slots = mu + sigma * torch.randn_like(sigma)  # reparameterization trick
        inputs = self.norm_input(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        for _ in range(self.iters):
            slots_prev = slots
            q = self.to_q(self.norm_slots(slots))
            attn = torch.einsum('bid,bjd->bij', q, k).mul(self.scale).softmax(dim=1) + self.eps
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum('bjd,bij->bid', v, attn)
            slots = self.gru(updates.reshape(-1, d), slots_prev.reshape(-1, d)).reshape(b, -1, d)
            slots = slots + self.fc2(F.relu(self.fc1(self.norm_pre_ff(slots))))
        return slots


class SlotAttentionAutoEncoder(nn.Module):
    def __init__(self, n_pix=16, num_slots=3, hid_dim=16):
        super().__init__()
        self.n_pix = n_pix
        self.encoder_cnn = nn.Sequential(nn.Linear(3, hid_dim), nn.ReLU(), nn.Linear(hid_dim, hid_dim))
        self.fc1, self.fc2 = nn.Linear(hid_dim, hid_dim), nn.Linear(hid_dim, hid_dim)
        self.slot_attention = SlotAttention(num_slots, hid_dim)
        self.decoder = nn.Linear(hid_dim, n_pix * 4)  # per slot: rgb + alpha for every pixel

    def forward(self, image):
        x = self.encoder_cnn(image)
        x = F.layer_norm(x, x.shape[1:])
        x = self.fc2(F.relu(self.fc1(x)))
        slots = self.slot_attention(x)
        out = self.decoder(slots).reshape(image.shape[0], -1, self.n_pix, 4)
        recons, masks = out.split([3, 1], dim=-1)
        masks = masks.softmax(dim=1)
        recon_combined = torch.sum(recons * masks, dim=1)
        return recon_combined, recons, masks, slots


model = SlotAttentionAutoEncoder()
optimizer = torch.optim.Adam(model.parameters(), lr=4e-4)
criterion = nn.MSELoss()
images = torch.rand(32, 16, 3)  # stands in for CLEVR images, flattened to (batch, pixels, rgb)
mu_before = model.slot_attention.slots_mu.detach().clone()
sigma_before = model.slot_attention.slots_log_sigma.detach().clone()

for step in range(5):
    image = images[torch.randint(0, 32, (8,))]
    recon_combined, recons, masks, slots = model(image)
    loss = criterion(recon_combined, image)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("slots_mu.grad:", model.slot_attention.slots_mu.grad.abs().sum().item())
print("slots_mu changed:", not torch.equal(mu_before, model.slot_attention.slots_mu))
print("slots_log_sigma changed:", not torch.equal(sigma_before, model.slot_attention.slots_log_sigma))
print("to_q.weight.grad:", model.slot_attention.to_q.weight.grad.abs().sum().item())
