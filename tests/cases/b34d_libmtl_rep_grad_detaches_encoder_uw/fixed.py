"""LibMTL issue #83, https://github.com/median-research-group/LibMTL/issues/83: with multi_input=True and
rep_grad=True, the encoder's output for each task is cached and a detached copy is fed to the decoder; a
weighting method that only weights the losses and calls backward (here UW, uncertainty weights) sends the
gradient no further than that detached copy, so the shared encoder is never updated.
Maintainer: rep_grad only applies to some gradient-based weighting methods (MGDA-UB style), not to UW/EW.
Fix: build the model with rep_grad=False for a loss-weighting method."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
task_name = ['segment', 'depth']


class MTLmodel(nn.Module):
    def __init__(self, task_name, rep_grad, multi_input):
        super().__init__()
        self.task_name = task_name
        self.task_num = len(task_name)
        self.rep_grad = rep_grad
        self.multi_input = multi_input
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))
        self.decoders = nn.ModuleDict({t: nn.Linear(16, 1) for t in task_name})
        self.loss_scale = nn.Parameter(torch.tensor([-0.5] * self.task_num))  # UW.init_param
        if self.rep_grad:
            self.rep_tasks = {}
            self.rep = {}

    def _prepare_rep(self, rep, task, same_rep=None):
        if self.rep_grad:
            if not same_rep:
                self.rep[task] = rep
            else:
                self.rep = rep
            self.rep_tasks[task] = rep.detach().clone()
            self.rep_tasks[task].requires_grad = True
            return self.rep_tasks[task]
        else:
            return rep

    def forward(self, inputs, task_name=None):
        out = {}
        s_rep = self.encoder(inputs)
        same_rep = True if not isinstance(s_rep, list) and not self.multi_input else False
        for tn, task in enumerate(self.task_name):
            if task_name is not None and task != task_name:
                continue
            ss_rep = self._prepare_rep(s_rep, task, same_rep)
            out[task] = self.decoders[task](ss_rep)
        return out

    def backward(self, losses):  # UW.backward
        loss = (losses / (2 * self.loss_scale.exp()) + self.loss_scale / 2).sum()
        loss.backward()
        return (1 / (2 * torch.exp(self.loss_scale))).detach().numpy()


model = MTLmodel(task_name, rep_grad=False, multi_input=True)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
data = {t: (torch.randn(32, 8), torch.randn(32, 1)) for t in task_name}
enc_before = model.encoder[0].weight.detach().clone()

for batch_index in range(5):
    train_losses = torch.zeros(model.task_num)
    for tn, task in enumerate(task_name):
        train_input, train_gt = data[task]
        train_pred = model(train_input, task)[task]
        train_losses[tn] = F.mse_loss(train_pred, train_gt)
    optimizer.zero_grad(set_to_none=True)
    w = model.backward(train_losses)
    optimizer.step()
    print(f"iter {batch_index} losses={train_losses.tolist()} w={w.tolist()}")

g = model.encoder[0].weight.grad
print("encoder.0.weight.grad:", None if g is None else f"norm {g.norm():.4f}")
print("encoder changed:", not torch.equal(enc_before, model.encoder[0].weight))
print("decoder 'depth' grad is None:", model.decoders['depth'].weight.grad is None)
