# Lightning-style module whose training_step only logs the loss and never returns it.
# A plain-torch copy of Lightning's automatic optimization loop skips backward when
# training_step returns None, so the classifier head never receives a gradient.
import warnings
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TinyEncoder(nn.Module):
    def __init__(self, vocab=50, hidden=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        h = self.proj(self.emb(input_ids)) * attention_mask.unsqueeze(-1)
        return h


class ColaModel(nn.Module):
    def __init__(self, lr=1e-2):
        super().__init__()
        self.hparams = {"lr": lr}
        self.bert = TinyEncoder()
        self.W = nn.Linear(16, 2)
        self.logged = {}

    def log(self, name, value, prog_bar=False):
        self.logged[name] = value.detach()

    def forward(self, input_ids, attention_mask):
        outputs = self.bert(input_ids=input_ids, attention_mask=attention_mask)
        h_cls = outputs[:, 0]
        logits = self.W(h_cls)
        return logits

    def training_step(self, batch, batch_idx):
        logits = self.forward(batch["input_ids"], batch["attention_mask"])
        loss = F.cross_entropy(logits, batch["label"])
        self.log("train_loss", loss, prog_bar=True)  # <- optimizer

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams["lr"])


def fit(model, batches):
    # what Trainer.fit does with automatic optimization
    optimizer = model.configure_optimizers()
    model.train()
    for batch_idx, batch in enumerate(batches):
        def closure():
            out = model.training_step(batch, batch_idx)
            if out is None:
                warnings.warn("`training_step` returned `None`. If this was on purpose, ignore this warning...")
                return None
            optimizer.zero_grad()
            out.backward()
            return out
        optimizer.step(closure=closure)


batches = [
    {
        "input_ids": torch.randint(0, 50, (8, 12)),
        "attention_mask": torch.ones(8, 12),
        "label": torch.randint(0, 2, (8,)),
    }
    for _ in range(3)
]

model = ColaModel()
before = model.W.weight.detach().clone()
fit(model, batches)
print("W.weight.grad:", model.W.weight.grad)
print("W changed:", not torch.equal(before, model.W.weight.detach()))
