# Shape of xuxu-wei/SUAVE#60: the HI-VAE behaviour of the SUAVE estimator keeps the mean of each
# mixture component of the prior p(z|s) in a PriorMean layer (a Linear from one-hot assignments to
# latent means). Its parameters are handed to Adam, but the helper the ELBO's Gaussian KL term reads
# the prior means from still returns the old frozen zero tensor, so the layer never takes part in the
# loss and its weights never move (the regression test added by the fix checks that they do).
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Parameter

torch.manual_seed(0)


class PriorMean(nn.Module):
    def __init__(self, n_components, latent_dim):
        super().__init__()
        self.n_components = n_components
        self.linear = nn.Linear(n_components, latent_dim)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, assignments):
        return self.linear(assignments)

    def component_means(self):
        return self.forward(torch.eye(self.n_components))


def kl_normal_mixture(mu, logvar, prior_mu, prior_logvar, probs):
    # KL(q(z|x,s) || p(z|s)) per component, weighted by q(s|x)
    kl = 0.5 * (prior_logvar - logvar + (logvar.exp() + (mu - prior_mu) ** 2) / prior_logvar.exp() - 1)
    return (probs * kl.sum(-1)).sum(-1)


class SUAVE:
    def __init__(self, n_features=6, n_components=2, latent_dim=3):
        self.n_components, self.latent_dim = n_components, latent_dim
        self._prior_component_logits = Parameter(torch.zeros(n_components), requires_grad=False)
        self._prior_component_mu = Parameter(torch.zeros(n_components, latent_dim), requires_grad=False)
        self._prior_component_logvar = Parameter(torch.zeros(n_components, latent_dim), requires_grad=False)
        self._prior_mean_layer = PriorMean(n_components, latent_dim)
        self._encoder = nn.Linear(n_features, n_components * (1 + 2 * latent_dim))
        self._decoder = nn.Linear(latent_dim, n_features)

    def _prior_parameters_for_optimizer(self):
        return list(self._prior_mean_layer.parameters())

    def _prior_component_means_tensor(self):
        return self._prior_mean_layer.component_means()

    def fit(self, X, epochs=20):
        params = list(self._encoder.parameters()) + list(self._decoder.parameters())
        params.extend(self._prior_parameters_for_optimizer())
        optimizer = torch.optim.Adam(params, lr=1e-2)
        K, D = self.n_components, self.latent_dim
        for epoch in range(epochs):
            out = self._encoder(X)
            logits = out[:, :K]
            mu, logvar = out[:, K:].view(-1, K, 2 * D).chunk(2, dim=-1)
            probs = logits.softmax(-1)
            z = mu + (0.5 * logvar).exp() * torch.randn_like(mu)
            log_px = -((self._decoder(z) - X.unsqueeze(1)) ** 2).sum(-1)
            cat_kl = (probs * (probs.log() - F.log_softmax(self._prior_component_logits, -1))).sum(-1)
            gauss_kl = kl_normal_mixture(mu, logvar, self._prior_component_means_tensor(),
                                         self._prior_component_logvar, probs)
            loss = -((probs * log_px).sum(-1) - cat_kl - gauss_kl).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return self


X = torch.randn(16, 6)
model = SUAVE()
before = [p.detach().clone() for p in model._prior_mean_layer.parameters()]
model.fit(X)
after = list(model._prior_mean_layer.parameters())
print("prior mean layer weight grad:", model._prior_mean_layer.linear.weight.grad)
print("prior mean layer updated:", any(not torch.equal(a, b) for a, b in zip(after, before)))  # <- symptom
