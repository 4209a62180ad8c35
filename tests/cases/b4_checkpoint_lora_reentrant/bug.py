"""LoRA with gradient checkpointing (microsoft/LoRA#120, locuslab/open-unlearning#178): the frozen
embedding's output does not require grad, so the reentrant checkpoint runs each block without a graph
("None of the inputs have requires_grad=True. Gradients will be None"); lora_A and lora_B get no
gradient and only the classifier head trains."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class LoRALinear(nn.Module):
    def __init__(self, dim, r=2):
        super().__init__()
        self.base = nn.Linear(dim, dim)
        self.base.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.randn(r, dim) * 0.1)
        self.lora_B = nn.Parameter(torch.zeros(dim, r))

    def forward(self, x):
        return self.base(x) + x @ self.lora_A.T @ self.lora_B.T


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = LoRALinear(dim)

    def forward(self, h):
        return h + torch.tanh(self.attn(h))


class Classifier(nn.Module):
    def __init__(self, vocab=20, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.embed.requires_grad_(False)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(2))
        self.classifier = nn.Linear(dim, 2)

    def forward(self, ids):
        h = self.embed(ids)
        for block in self.blocks:
            h = checkpoint(block, h, use_reentrant=True)  # <- no_grad
        return self.classifier(h.mean(1))


torch.manual_seed(0)
model = Classifier()
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
ids, labels = torch.randint(0, 20, (4, 5)), torch.tensor([0, 1, 0, 1])
for step in range(2):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(ids), labels)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} lora_B grad {model.blocks[0].attn.lora_B.grad}")
