"""R-Drop for summarization in fairseq (dropreg/R-Drop#8): the R-Drop criterion already calls
`optimizer.backward(loss)` on the two-pass loss, and the task's train_step then runs `optimizer.backward(loss)`
again, which fails with "Trying to backward through the graph a second time, but the saved intermediate results
have already been freed" (the fix deletes the task's duplicate backward)."""
import torch
import torch.nn.functional as F
from torch import nn


class FairseqOptimizer:
    def __init__(self, params, lr=1e-3):
        self.optimizer = torch.optim.Adam(params, lr=lr)

    def backward(self, loss):
        loss.backward()

    def step(self):
        self.optimizer.step()

    def zero_grad(self):
        self.optimizer.zero_grad()


class RegLabelSmoothedCrossEntropyCriterion:
    def __init__(self, alpha=5.0):
        self.alpha = alpha

    def forward_reg(self, model, sample, optimizer, ignore_grad=False):
        logits = model(torch.cat([sample["src"], sample["src"]], 0))
        lprobs = F.log_softmax(logits, -1)
        nll = F.nll_loss(lprobs, torch.cat([sample["tgt"], sample["tgt"]], 0))
        p, q = lprobs.chunk(2)
        kl = (F.kl_div(p, q, log_target=True, reduction="batchmean")
              + F.kl_div(q, p, log_target=True, reduction="batchmean"))
        loss = nll + self.alpha * kl / 2
        if ignore_grad:
            loss *= 0
        optimizer.backward(loss)
        return loss


class RDropTranslationTask:
    def train_step(self, sample, model, criterion, optimizer, ignore_grad=False):
        model.train()
        loss = criterion.forward_reg(model, sample, optimizer, ignore_grad)
        if ignore_grad:
            loss *= 0
        optimizer.backward(loss)  # <- autograd_error
        return loss


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 10))
optimizer = FairseqOptimizer(model.parameters())
task, criterion = RDropTranslationTask(), RegLabelSmoothedCrossEntropyCriterion()
sample = {"src": torch.randn(8, 16), "tgt": torch.randint(0, 10, (8,))}
for update in range(2):
    optimizer.zero_grad()
    loss = task.train_step(sample, model, criterion, optimizer)
    optimizer.step()
    print(f"update {update}: loss {loss.item():.4f}")
