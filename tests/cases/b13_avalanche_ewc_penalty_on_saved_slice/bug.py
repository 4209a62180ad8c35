"""Avalanche's EWC plugin (ContinualAI/avalanche#1099): the penalty slices the *saved* parameter,
`cur_param = saved_param[:n_units]`, instead of the current one, so `imp * (cur_param - saved_param)**2` is
always 0 and carries no gradient: EWC silently trains like naive fine-tuning. The fix slices the live
parameter (`cur_param = cur_param[:n_units]`)."""
import torch
import torch.nn.functional as F
from torch import nn


class EWCPlugin:
    def __init__(self, ewc_lambda):
        self.ewc_lambda = ewc_lambda
        self.saved_params, self.importances = {}, {}

    def after_training_exp(self, model, x, y):
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        self.importances = {n: p.grad.clone().pow(2) for n, p in model.named_parameters()}
        self.saved_params = {n: p.detach().clone() for n, p in model.named_parameters()}

    def before_backward(self, model, loss):
        if not self.saved_params:
            return loss
        penalty = torch.tensor(0).float()
        for k, cur_param in model.named_parameters():
            saved_param, imp = self.saved_params[k], self.importances[k]
            n_units = saved_param.shape[0]
            cur_param = saved_param[:n_units]  # <- cut_term
            penalty += (imp * (cur_param - saved_param).pow(2)).sum()
        print(f"  ewc penalty {penalty.item():.6f}, requires grad: {penalty.requires_grad}")
        return loss + self.ewc_lambda * penalty


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
plugin = EWCPlugin(ewc_lambda=100.0)
stream = [(torch.randn(32, 8), torch.randint(0, 2, (32,))), (torch.randn(32, 8), torch.randint(2, 4, (32,)))]
for exp, (x, y) in enumerate(stream):
    print(f"experience {exp}")
    for it in range(2):
        optimizer.zero_grad()
        loss = plugin.before_backward(model, F.cross_entropy(model(x), y))
        loss.backward()
        optimizer.step()
    plugin.after_training_exp(model, x, y)
