"""litgpt's Lightning tutorial (Lightning-AI/litgpt#2151,
https://github.com/Lightning-AI/litgpt/issues/2151): tutorials/examples/ptl-trainer/litgpt_ptl_small.py
fine-tunes pythia-160m, but the log shows lr=[0.0] at every step and the weights never change.
Why: configure_optimizers returns the warmup LambdaLR (factor step / warmup_steps) as a bare scheduler, so
Lightning steps it once per epoch ('interval': 'epoch'); the factor is 0 for the whole first epoch.
Fix: return the scheduler as {"scheduler": scheduler, "interval": "step"} so it steps every optimizer step."""
import torch
import torch.nn.functional as F
from torch import nn


class LitLLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Embedding(32, 16), nn.Linear(16, 32))

    def training_step(self, batch):
        input_ids, targets = batch["input_ids"], batch["labels"]
        logits = self.model(input_ids)
        return F.cross_entropy(logits[..., :-1, :].reshape(-1, 32), targets[..., 1:].reshape(-1))

    def configure_optimizers(self):
        warmup_steps = 10
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=0.0002, weight_decay=0.0, betas=(0.9, 0.95))
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: step / warmup_steps)
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]


def fit(module, batches, max_epochs=1):
    """Lightning's automatic optimization in short: a bare scheduler steps once per epoch."""
    optimizers, schedulers = module.configure_optimizers()
    schedulers = [s if isinstance(s, dict) else {"scheduler": s, "interval": "epoch"} for s in schedulers]
    for epoch in range(max_epochs):
        for batch in batches:
            loss = module.training_step(batch)
            optimizers[0].zero_grad()
            loss.backward()
            optimizers[0].step()
            [s["scheduler"].step() for s in schedulers if s["interval"] == "step"]
            print(f"lr={schedulers[0]['scheduler'].get_last_lr()} train_loss={loss.item():.4f}")
        [s["scheduler"].step() for s in schedulers if s["interval"] == "epoch"]


torch.manual_seed(0)
module = LitLLM()
batches = [{"input_ids": (ids := torch.randint(0, 32, (1, 12))), "labels": ids} for _ in range(6)]
before = module.model[1].weight.detach().clone()
fit(module, batches)
print("weights changed:", not torch.equal(before, module.model[1].weight))
