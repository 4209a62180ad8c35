# Bayes-by-backprop Siamese network (blitz-style BayesianLinear written in plain
# torch). The same Bayesian layers run twice (one pass per input of the pair)
# before the loss is gathered and backpropagated.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features, prior_sigma=0.5, rho_init=-6.0):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).normal_(0, 0.1))
        self.weight_rho = nn.Parameter(torch.empty(out_features, in_features).normal_(rho_init, 0.1))
        self.bias_mu = nn.Parameter(torch.empty(out_features).normal_(0, 0.1))
        self.bias_rho = nn.Parameter(torch.empty(out_features).normal_(rho_init, 0.1))
        # epsilon for the weights lives on a torch buffer
        self.register_buffer("eps_weight", torch.empty(out_features, in_features))
        self.prior = torch.distributions.Normal(0.0, prior_sigma)
        self.log_prior = 0
        self.log_variational_posterior = 0

    def sample(self, mu, rho, eps):
        sigma = torch.log1p(torch.exp(rho))
        w = mu + sigma * eps
        log_post = (-math.log(math.sqrt(2 * math.pi)) - torch.log(sigma)
                    - ((w - mu) ** 2) / (2 * sigma ** 2)).sum()
        return w, log_post

    def forward(self, x):
        self.eps_weight.data.normal_()
        w, w_post = self.sample(self.weight_mu, self.weight_rho, self.eps_weight)
        b, b_post = self.sample(self.bias_mu, self.bias_rho, torch.randn_like(self.bias_mu))
        self.log_variational_posterior = w_post + b_post
        self.log_prior = self.prior.log_prob(w).sum() + self.prior.log_prob(b).sum()
        return F.linear(x, w, b)


class SiameseNet(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embedding1 = nn.Embedding(vocab, dim)
        self.e1 = BayesianLinear(dim, 16)
        self.e2 = BayesianLinear(16, 8)
        self.e3 = BayesianLinear(8, 8)

    def branch(self, tokens):
        h = self.embedding1(tokens).mean(dim=1)
        h = self.e1(h)
        h = self.e2(h)
        return self.e3(h)

    def forward(self, input_1, input_2):
        out_1 = self.branch(input_1)
        out_2 = self.branch(input_2)
        dist = ((out_1 - out_2) ** 2).sum(dim=1)
        return torch.sigmoid(dist)

    def nn_kl_divergence(self):
        return sum(m.log_variational_posterior - m.log_prior
                   for m in self.modules() if isinstance(m, BayesianLinear))


net = SiameseNet(vocab=50, dim=12)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)

a = torch.randint(0, 50, (16, 7))
b = torch.randint(0, 50, (16, 7))
labels = torch.randint(0, 2, (16,)).float()

for step in range(3):
    optimizer.zero_grad()
    out = net(a, b)
    loss = F.binary_cross_entropy(out, labels) + 1e-3 * net.nn_kl_divergence()
    loss.backward()
    optimizer.step()
    print(step, loss.item(), net.e1.weight_rho.grad.abs().sum().item())
