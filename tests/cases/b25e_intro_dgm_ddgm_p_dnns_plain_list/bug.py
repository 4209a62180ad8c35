"""Jakub Tomczak's "Deep Generative Modeling" book code (jmtomczak/intro_dgm), issue #6 "Learnable modules in ddgm
example", https://github.com/jmtomczak/intro_dgm/issues/6: the diffusion-based deep generative model (DDGM) example
stores the T-1 reverse-diffusion networks it is given as a plain Python list, `self.p_dnns = p_dnns`. nn.Module does
not look inside lists, so none of their weights is registered: `model.parameters()` holds only the decoder's weights,
the Adamax optimizer built from it never sees the p_dnns, and although every p_dnns[i] is called in forward (its
weights do get a .grad after backward, never zeroed either) they keep their initial values for the whole run. The
reader who filed the issue pointed out that the networks are "left unoptimized"; derivative notebooks carry the fix.
Fix: register them, `self.p_dnns = nn.ModuleList(p_dnns)`.
Reduction: the book's DDGM class, helpers and training loop, with random data in [-1, 1] instead of sklearn's digits
and a small D, M and T."""
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)

PI = torch.from_numpy(np.asarray(np.pi))


def log_normal_diag(x, mu, log_var, reduction=None, dim=None):
    log_p = -0.5 * torch.log(2. * PI) - 0.5 * log_var - 0.5 * torch.exp(-log_var) * (x - mu)**2.
    if reduction == 'avg':
        return torch.mean(log_p, dim)
    elif reduction == 'sum':
        return torch.sum(log_p, dim)
    else:
        return log_p


def log_standard_normal(x, reduction=None, dim=None):
    log_p = -0.5 * torch.log(2. * PI) - 0.5 * x**2.
    if reduction == 'avg':
        return torch.mean(log_p, dim)
    elif reduction == 'sum':
        return torch.sum(log_p, dim)
    else:
        return log_p


class DDGM(nn.Module):
    def __init__(self, p_dnns, decoder_net, beta, T, D):
        super(DDGM, self).__init__()

        print('DDGM by JT.')

        self.p_dnns = p_dnns  # a list of sequentials  # <- non_parameter_tensor

        self.decoder_net = decoder_net

        # other params
        self.D = D

        self.T = T

        self.beta = torch.FloatTensor([beta])

    @staticmethod
    def reparameterization(mu, log_var):
        std = torch.exp(0.5*log_var)
        eps = torch.randn_like(std)
        return mu + std * eps

    def reparameterization_gaussian_diffusion(self, x, i):
        return torch.sqrt(1. - self.beta) * x + torch.sqrt(self.beta) * torch.randn_like(x)

    def forward(self, x, reduction='avg'):
        # =====
        # forward difussion
        zs = [self.reparameterization_gaussian_diffusion(x, 0)]

        for i in range(1, self.T):
            zs.append(self.reparameterization_gaussian_diffusion(zs[-1], i))

        # =====
        # backward diffusion
        mus = []
        log_vars = []

        for i in range(len(self.p_dnns) - 1, -1, -1):
            h = self.p_dnns[i](zs[i+1])
            mu_i, log_var_i = torch.chunk(h, 2, dim=1)
            mus.append(mu_i)
            log_vars.append(log_var_i)

        mu_x = self.decoder_net(zs[0])

        # =====ELBO
        # RE
        RE = log_standard_normal(x - mu_x).sum(-1)

        # KL
        KL = (log_normal_diag(zs[-1], torch.sqrt(1. - self.beta) * zs[-1], torch.log(self.beta)) - log_standard_normal(zs[-1])).sum(-1)

        for i in range(len(mus)):
            KL_i = (log_normal_diag(zs[i], torch.sqrt(1. - self.beta) * zs[i], torch.log(self.beta)) - log_normal_diag(zs[i], mus[i], log_vars[i])).sum(-1)

            KL = KL + KL_i

        # Final ELBO
        if reduction == 'sum':
            loss = -(RE - KL).sum()
        else:
            loss = -(RE - KL).mean()

        return loss


def training(num_epochs, model, optimizer, training_loader):
    for e in range(num_epochs):
        # TRAINING
        model.train()
        for indx_batch, batch in enumerate(training_loader):
            loss = model.forward(batch)

            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            optimizer.step()


# random "digits" scaled to [-1, 1], as the book's transforms do
training_loader = [2. * torch.rand(16, 8) - 1. for _ in range(4)]

D = 8    # input dimension
M = 16   # the number of neurons in scale (s) and translation (t) nets
T = 4
beta = 0.9
lr = 1e-3  # learning rate
num_epochs = 2

p_dnns = [nn.Sequential(nn.Linear(D, M), nn.LeakyReLU(),
                        nn.Linear(M, M), nn.LeakyReLU(),
                        nn.Linear(M, M), nn.LeakyReLU(),
                        nn.Linear(M, 2 * D)) for _ in range(T-1)]

decoder_net = nn.Sequential(nn.Linear(D, M*2), nn.LeakyReLU(),
                            nn.Linear(M*2, M*2), nn.LeakyReLU(),
                            nn.Linear(M*2, M*2), nn.LeakyReLU(),
                            nn.Linear(M*2, D), nn.Tanh())

model = DDGM(p_dnns, decoder_net, beta=beta, T=T, D=D)

optimizer = torch.optim.Adamax([p for p in model.parameters() if p.requires_grad == True], lr=lr)

before = [p_dnns[i][0].weight.detach().clone() for i in range(T-1)]
dec_before = decoder_net[0].weight.detach().clone()
training(num_epochs=num_epochs, model=model, optimizer=optimizer, training_loader=training_loader)

print("p_dnns weights registered in model.parameters():",
      any(p is p_dnns[0][0].weight for p in model.parameters()))
print("p_dnns[0][0].weight.grad is None:", p_dnns[0][0].weight.grad is None)
print("p_dnns changed during training:",
      [not torch.equal(b, p_dnns[i][0].weight) for i, b in enumerate(before)])
print("decoder changed during training:", not torch.equal(dec_before, decoder_net[0].weight))
