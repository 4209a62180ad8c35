"""ViTPose_pytorch (jaehyunnn/ViTPose_pytorch#20, https://github.com/jaehyunnn/ViTPose_pytorch/issues/20):
the learning rate warms up to the preset value, then quickly becomes 0 while training goes on.
Why: LayerDecayOptimizer.step multiplies each group's lr by its layer-decay rate (0.75) on every step
instead of once, so after the warm-up the lr decays geometrically (0.75**step; the log prints 0.000000)
and within a few dozen steps the updates are too small to change the float32 weights at all.
Fix (commit 0a2848e): apply the layer-wise decay once, in LayerDecayOptimizer.__init__."""
import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_
from torch.optim import AdamW
from torch.optim.lr_scheduler import LambdaLR, MultiStepLR


class LayerDecayOptimizer:
    def __init__(self, optimizer, layerwise_decay_rate):
        self.optimizer = optimizer
        self.layerwise_decay_rate = layerwise_decay_rate
        self.param_groups = optimizer.param_groups
        for i, group in enumerate(self.optimizer.param_groups):
            group['lr'] *= layerwise_decay_rate[i]

    def step(self, *args, **kwargs):
        self.optimizer.step(*args, **kwargs)

    def zero_grad(self, *args, **kwargs):
        self.optimizer.zero_grad(*args, **kwargs)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))  # backbone + keypoint_head, in short
optimizer = AdamW(model.parameters(), lr=5e-4, betas=(0.9, 0.999), weight_decay=0.1)
layerwise_optimizer = LayerDecayOptimizer(optimizer, [0.75] * 12)
scheduler = MultiStepLR(optimizer, [170, 200], 0.1)
num_warmup_steps, warmup_factor = 5, 0.001
warmup_scheduler = LambdaLR(optimizer, lr_lambda=lambda step: warmup_factor + (1.0 - warmup_factor) * step / num_warmup_steps)
images, targets = torch.randn(4, 8), torch.randn(4, 4)
global_step = 0
for epoch in range(2):
    for batch_idx in range(100):
        layerwise_optimizer.zero_grad()
        loss = ((model(images) - targets) ** 2).mean()
        loss.backward()
        clip_grad_norm_(model.parameters(), max_norm=1.0)
        layerwise_optimizer.step()
        if global_step < num_warmup_steps:
            warmup_scheduler.step()
        global_step += 1
        if global_step == 100:
            weight_at_100 = model[2].weight.detach().clone()
    scheduler.step()
    print(f"Epoch {epoch} | Loss {loss.item():.4f} | LR {optimizer.param_groups[0]['lr']}")
print("head changed over the last 100 steps:", not torch.equal(weight_at_100, model[2].weight))
