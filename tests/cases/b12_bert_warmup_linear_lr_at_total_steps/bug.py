"""BERT fine-tuning with pytorch-pretrained-BERT's warmup schedule (huggingface/transformers#587): the loop sets the
learning rate by hand each step, `lr_this_step = args.learning_rate * warmup_linear.get_lr(num_train_optimization_steps,
args.warmup_proportion)`, passing the total number of steps where the examples pass `global_step`. The schedule is then
always at its end: "WARNING - Training beyond specified 't_total'. Learning rate multiplier set to 0.0", every step, so
the model gets gradients and never changes."""
import warnings
import torch
import torch.nn.functional as F
from torch import nn


class WarmupLinearSchedule:
    def __init__(self, warmup=0.1, t_total=-1):
        self.warmup, self.t_total = warmup, t_total

    def get_lr(self, step, nowarn=False):
        progress = float(step) / self.t_total
        if progress >= 1.0 and not nowarn:
            warnings.warn("Training beyond specified 't_total'. Learning rate multiplier set to 0.0.")
        if progress < self.warmup:
            return progress / self.warmup
        return max((progress - 1.) / (self.warmup - 1.), 0.)


torch.manual_seed(0)
model = nn.Sequential(nn.EmbeddingBag(100, 32), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))
learning_rate, warmup_proportion, num_train_optimization_steps = 5e-5, 0.1, 4
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
warmup_linear = WarmupLinearSchedule(warmup=warmup_proportion, t_total=num_train_optimization_steps)
input_ids, labels = torch.randint(0, 100, (8, 12)), torch.randint(0, 2, (8,))
before = model[1].weight.detach().clone()
global_step = 0
with warnings.catch_warnings(record=True):
    for step in range(num_train_optimization_steps):
        loss = F.cross_entropy(model(input_ids), labels)
        loss.backward()
        lr_this_step = learning_rate * warmup_linear.get_lr(num_train_optimization_steps)  # <- no_update
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr_this_step
        optimizer.step()
        optimizer.zero_grad()
        global_step += 1
print(f"lr: {optimizer.param_groups[0]['lr']}; weights changed: {not torch.equal(model[1].weight, before)}")
