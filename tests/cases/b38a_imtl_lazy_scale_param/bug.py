# IMTL (Impartial Multi-Task Learning) loss balancer whose learnable loss
# scales s_t are only created on the first forward call.
import itertools

import torch
import torch.nn as nn

torch.manual_seed(0)


class IMTL(nn.Module):
    def __init__(self, method='gradient'):
        super().__init__()
        self.method = method
        self.s_t = False
        self.num_losses = -1
        self.ind = []
        self.register_buffer('e', torch.exp(torch.ones([1])))

    def instantiate(self, device, losses):
        del self.s_t
        self.device = device
        for i, loss in enumerate(losses):
            self.ind.append(-1)
            if loss.requires_grad:
                self.num_losses += 1
                self.ind[-1] = self.num_losses
        self.register_parameter('s_t', nn.Parameter(torch.ones(self.num_losses + 1).squeeze(), requires_grad=True))  # <- optimizer

    def forward(self, data, losses):
        if isinstance(self.s_t, bool):
            self.instantiate(data.device, losses)

        # >>> Loss Balance
        L_t = torch.empty(self.s_t.numel(), device=self.device)
        g_t = torch.empty([self.num_losses + 1, 1, data.shape[-1]], device=self.device)
        for i, loss in zip(self.ind, losses):
            if loss.requires_grad:
                L_t[i] = loss * self.e.pow(self.s_t[i]) - self.s_t[i]
                g_t[i, ::] = torch.autograd.grad(L_t[i], data, retain_graph=True, create_graph=True)[0].mean(dim=0, keepdim=True)
        u_t = g_t / (torch.linalg.norm(g_t, 2, (-1, -2)) + 1e-6).unsqueeze(-1).unsqueeze(-1)

        # >>> Gradient Balance
        D = g_t[0, ::].unsqueeze(0).repeat(self.num_losses, 1, 1) - g_t[1:, ::]
        UT = u_t[0, :].unsqueeze(0).repeat(self.num_losses, 1, 1).mT - u_t[1:, ::].mT
        alpha_2T = g_t[0, ::].unsqueeze(0).matmul(UT).matmul(torch.linalg.pinv(D.matmul(UT)))
        alpha = torch.cat([torch.ones([1, alpha_2T.shape[1], alpha_2T.shape[2]], device=self.device)
                           - alpha_2T.sum(dim=0, keepdim=True), alpha_2T], dim=0).squeeze()
        return torch.sum(L_t * alpha)


class TwoHeadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head_a = nn.Linear(16, 1)
        self.head_b = nn.Linear(16, 3)

    def forward(self, x):
        feat = self.shared(x)
        return feat, self.head_a(feat), self.head_b(feat)


model = TwoHeadNet()
imtl = IMTL(method='gradient')
parameters = itertools.chain(model.parameters(), imtl.parameters())
optimizer = torch.optim.Adam(parameters, lr=1e-2)

x = torch.randn(32, 8)
y_reg = torch.randn(32, 1)
y_cls = torch.randint(0, 3, (32,))

s_before = None
for step in range(5):
    optimizer.zero_grad()
    feat, out_a, out_b = model(x)
    loss_a = nn.functional.mse_loss(out_a, y_reg)
    loss_b = nn.functional.cross_entropy(out_b, y_cls)
    total = imtl(feat, [loss_a, loss_b])
    total.backward()
    optimizer.step()
    if s_before is None:
        s_before = imtl.s_t.detach().clone()  # value after the first step

print('s_t grad:', imtl.s_t.grad)
print('s_t after step 1:', s_before)
print('s_t after step 5:', imtl.s_t.detach())
print('s_t changed:', not torch.equal(s_before, imtl.s_t.detach()))
