"""shivamsaboo17/Overcoming-Catastrophic-forgetting-in-Neural-Networks issue #2, "Fisher Update causing errors",
https://github.com/shivamsaboo17/Overcoming-Catastrophic-forgetting-in-Neural-Networks/issues/2 : the asker runs the
repo's ElasticWeightConsolidation on a ResNet-50. `_update_fisher_params` keeps every batch's log-likelihood in a list
(`log_liklihoods.append(output[:, target])`), averages them and calls `autograd.grad(log_likelihood,
model.parameters())` to get the Fisher diagonal. To save GPU memory they `.detach()`ed what goes in the list; the
autograd.grad call then raised a RuntimeError (the asker quotes the "One of the differentiated Tensors appears to not
have been used" form; with every entry detached, as here, PyTorch raises the "does not require grad" form), and
forcing it with allow_unused=True gave no gradients at all. The
maintainer: "detach() won't work because then pytorch cannot track gradients for that tensor", keep the
log-likelihoods attached (a running mean instead of a list to save memory). A small MLP stands in for ResNet-50,
random tensors for the dataset."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch import autograd
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class ElasticWeightConsolidation:

    def __init__(self, model, crit, lr=0.001, weight=1000000):
        self.model = model
        self.weight = weight
        self.crit = crit
        self.optimizer = optim.Adam(self.model.parameters(), lr)

    def _update_mean_params(self):
        for param_name, param in self.model.named_parameters():
            _buff_param_name = param_name.replace('.', '__')
            self.model.register_buffer(_buff_param_name + '_estimated_mean', param.data.clone())

    def _update_fisher_params(self, current_ds, batch_size, num_batch):
        dl = DataLoader(current_ds, batch_size, shuffle=True)
        log_liklihoods = []
        for i, (input, target) in enumerate(dl):
            if i > num_batch:
                break
            output = F.log_softmax(self.model(input), dim=1)
            log_liklihoods.append(output[:, target])
        log_likelihood = torch.cat(log_liklihoods).mean()
        grad_log_liklihood = autograd.grad(log_likelihood, self.model.parameters())
        _buff_param_names = [param[0].replace('.', '__') for param in self.model.named_parameters()]
        for _buff_param_name, param in zip(_buff_param_names, grad_log_liklihood):
            self.model.register_buffer(_buff_param_name + '_estimated_fisher', param.data.clone() ** 2)

    def register_ewc_params(self, dataset, batch_size, num_batches):
        self._update_fisher_params(dataset, batch_size, num_batches)
        self._update_mean_params()

    def _compute_consolidation_loss(self, weight):
        try:
            losses = []
            for param_name, param in self.model.named_parameters():
                _buff_param_name = param_name.replace('.', '__')
                estimated_mean = getattr(self.model, '{}_estimated_mean'.format(_buff_param_name))
                estimated_fisher = getattr(self.model, '{}_estimated_fisher'.format(_buff_param_name))
                losses.append((estimated_fisher * (param - estimated_mean) ** 2).sum())
            return (weight / 2) * sum(losses)
        except AttributeError:
            return 0

    def forward_backward_update(self, input, target):
        output = self.model(input)
        loss = self._compute_consolidation_loss(self.weight) + self.crit(output, target)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))
ewc = ElasticWeightConsolidation(model, crit=nn.CrossEntropyLoss(), lr=1e-3, weight=100)

task_a = TensorDataset(torch.randn(64, 20), torch.randint(0, 5, (64,)))
task_b = TensorDataset(torch.randn(64, 20), torch.randint(0, 5, (64,)))

# task A
for x, y in DataLoader(task_a, batch_size=16, shuffle=True):
    ewc.forward_backward_update(x, y)

# consolidate: Fisher diagonal + anchor weights of task A
ewc.register_ewc_params(task_a, batch_size=16, num_batches=2)

# task B with the EWC penalty
for x, y in DataLoader(task_b, batch_size=16, shuffle=True):
    ewc.forward_backward_update(x, y)

for name, p in model.named_parameters():
    fisher = getattr(model, name.replace('.', '__') + '_estimated_fisher')
    print(name, 'fisher sum', round(fisher.sum().item(), 6), 'grad is None:', p.grad is None)
