"""NPAttack issue #3 "Some questions about the self_attention module", https://github.com/Sandy-Zeng/NPAttack/issues/3:
"Why are q_conv, k_conv, v_conv in self_attention module redefined during each forward of the model?" The
authors answered that this is a mistake: "the parameters of the self attention module are not fully trained,
you can regard our implement as the original NP without attention."
Why: ANP's self_attention builds nn.Conv1d q/k/v projections and the SAGAN-style gate `gamma` inside the
method on every call, so they are never registered on the model, never reach the optimizer, and are re-drawn
each pass; with the fresh gamma = 0 the block is an identity. Fix: build them once in __init__ (self.q_conv,
self.k_conv, self.v_conv, self.gamma) and use those in self_attention. Shrunk attentive neural process on
2-D pixel coordinates."""
import torch
import torch.nn as nn
from torch.nn import functional as F

torch.manual_seed(0)
c, r_dim, z_dim, hidden_dim = 2, 16, 16, 32


class NP(nn.Module):
    def __init__(self):
        super(NP, self).__init__()
        self.h_4 = nn.Linear(c + 1, hidden_dim)
        self.h_5 = nn.Linear(hidden_dim, hidden_dim)
        self.h_6 = nn.Linear(hidden_dim, r_dim)
        self.s_dense = nn.Linear(r_dim, r_dim)
        self.s_to_z_mean = nn.Linear(r_dim, z_dim)
        self.s_to_z_logvar = nn.Linear(r_dim, z_dim)
        self.g_1 = nn.Linear(z_dim + c, hidden_dim)
        self.g_2 = nn.Linear(hidden_dim, hidden_dim)
        self.g_mean = nn.Linear(hidden_dim, 1)
        self.g_var = nn.Linear(hidden_dim, 1)
        self.q_conv = nn.Conv1d(in_channels=r_dim, out_channels=r_dim // 8, kernel_size=1)
        self.k_conv = nn.Conv1d(in_channels=r_dim, out_channels=r_dim // 8, kernel_size=1)
        self.v_conv = nn.Conv1d(in_channels=r_dim, out_channels=r_dim, kernel_size=1)
        self.gamma = nn.Parameter(torch.zeros(1))

    def encoder_latent(self, x_y):
        x_y = F.relu(self.h_4(x_y))
        x_y = F.relu(self.h_5(x_y))
        return F.relu(self.h_6(x_y))

    def self_attention(self, input_xy):
        input_xy = input_xy.permute(0, 2, 1)
        m_batchsize, C, width_height = input_xy.size()
        q_conv, k_conv, v_conv, gamma = self.q_conv, self.k_conv, self.v_conv, self.gamma
        q = q_conv(input_xy).view(m_batchsize, -1, width_height).permute(0, 2, 1)
        k = k_conv(input_xy).view(m_batchsize, -1, width_height)
        attention = F.softmax(torch.bmm(q, k), dim=-1)
        v = v_conv(input_xy).view(m_batchsize, -1, width_height)
        rep = torch.bmm(v, attention.permute(0, 2, 1)).view(m_batchsize, C, width_height)
        rep = gamma * rep + input_xy
        return rep.permute(0, 2, 1), attention

    def xy_to_z(self, x, y):
        input_xy = self.encoder_latent(torch.cat([x, y], dim=2))
        s_i, _ = self.self_attention(input_xy)
        s = F.relu(self.s_dense(torch.mean(s_i, dim=1)))
        mu, logvar = self.s_to_z_mean(s), self.s_to_z_logvar(s)
        return mu, (0.1 + 0.9 * torch.sigmoid(logvar)) * 0.1

    def forward(self, x_context, y_context, x_target, x_all, y_all):
        z_context = self.xy_to_z(x_context, y_context)
        z_all = self.xy_to_z(x_all, y_all)
        z_sample = torch.distributions.Normal(*z_all).rsample().unsqueeze(1).expand(-1, x_target.shape[1], -1)
        h = F.relu(self.g_2(F.relu(self.g_1(torch.cat([z_sample, x_target], dim=2)))))
        sigma = 0.1 + 0.9 * F.softplus(self.g_var(h))
        return torch.distributions.Normal(self.g_mean(h), sigma), z_all, z_context


model = NP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
grid = torch.stack(torch.meshgrid(torch.linspace(0, 1, 8), torch.linspace(0, 1, 8), indexing="ij"), -1).view(1, 64, 2)
for step in range(5):
    images = torch.rand(4, 64, 1)
    x_all, y_all = grid.expand(4, -1, -1), images
    idx = torch.randperm(64)[:20]
    y_dis, z_all, z_context = model(x_all[:, idx], y_all[:, idx], x_all, x_all, y_all)
    kl = torch.distributions.kl_divergence(torch.distributions.Normal(*z_all),
                                           torch.distributions.Normal(*z_context)).sum(-1).mean()
    loss = -y_dis.log_prob(y_all).mean() + kl
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

names = [n for n, _ in model.named_parameters()]
print("self-attention weights among model parameters:", [n for n in names if "conv" in n or "gamma" in n])
feat = torch.randn(2, 10, r_dim)
print("self_attention is the identity:", torch.equal(model.self_attention(feat)[0], feat))
print("gamma after training:", model.gamma.item(), "q_conv.weight.grad is None:", model.q_conv.weight.grad is None)
