"""Federated LoRA fine-tuning of a BERT classifier (TNI-playground/Fed_HeLLo#2): making only the LoRA modules
trainable also freezes the newly initialized classification head, so clients train and the server aggregates the
LoRA weights, while every evaluation uses the randomly initialized classifier."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base, r=2):
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(torch.randn(r, base.in_features) * 0.1)
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r))

    def forward(self, x):
        return self.base(x) + x @ self.lora_A.t() @ self.lora_B.t()


class TinyBert(nn.Module):
    def __init__(self, vocab=30, hidden=16, num_labels=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.query = LoRALinear(nn.Linear(hidden, hidden))
        self.value = LoRALinear(nn.Linear(hidden, hidden))
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, input_ids):
        h = self.embeddings(input_ids)
        attn = torch.softmax(self.query(h) @ h.transpose(1, 2) / 4.0, dim=-1)
        return self.classifier((attn @ self.value(h)).mean(1))


def mark_only_lora_as_trainable(model):
    for n, p in model.named_parameters():
        p.requires_grad = "lora_" in n  # <- no_update


torch.manual_seed(0)
net_glob = TinyBert()
mark_only_lora_as_trainable(net_glob)
clients = [(torch.randint(0, 30, (8, 5)), torch.randint(0, 2, (8,))) for _ in range(3)]
classifier_before = net_glob.classifier.weight.detach().clone()
for rnd in range(2):
    local_states = []
    for input_ids, labels in clients:
        local = copy.deepcopy(net_glob)
        optimizer = torch.optim.SGD([p for p in local.parameters() if p.requires_grad], lr=0.5)
        for _ in range(2):
            loss = F.cross_entropy(local(input_ids), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        local_states.append({n: p.detach() for n, p in local.named_parameters() if p.requires_grad})
    with torch.no_grad():
        for n, p in net_glob.named_parameters():
            if p.requires_grad:
                p.copy_(torch.stack([s[n] for s in local_states]).mean(0))
    print(f"round {rnd}: last client loss {loss.item():.4f}")
print("global classifier changed:", not torch.equal(classifier_before, net_glob.classifier.weight))
