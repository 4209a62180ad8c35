"""A polynomial-decay-with-warmup LambdaLR counted in steps but stepped once per epoch, as Lightning's default
interval does (huggingface/transformers#20916): the factor is 0 for the whole first epoch, so nothing trains."""
import torch
import torch.nn.functional as F
from torch import nn


def polynomial_decay_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return current_step / max(1, num_warmup_steps)
        return max(0.0, 1 - (current_step - num_warmup_steps) / max(1, num_training_steps - num_warmup_steps))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


torch.manual_seed(0)
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
num_epochs, batches = 1, [(torch.randn(16, 8), torch.randint(0, 2, (16,))) for _ in range(8)]
scheduler = polynomial_decay_with_warmup(optimizer, num_warmup_steps=4, num_training_steps=num_epochs * len(batches))
before = model.weight.clone()
for epoch in range(num_epochs):
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()  # <- no_update
print("weights changed:", not torch.equal(before, model.weight), "loss", round(loss.item(), 4))
