"""The fixed twin: the loop also steps at the last batch of the epoch, the condition proposed in
huggingface/transformers#2995, so an epoch shorter than the accumulation still updates the model."""
import argparse

import torch
import torch.nn.functional as F
from torch import nn

args = argparse.Namespace(num_train_epochs=3, gradient_accumulation_steps=8, learning_rate=5e-3, max_grad_norm=1.0)
torch.manual_seed(0)
model = nn.Sequential(nn.Embedding(50, 16), nn.Flatten(), nn.Linear(16 * 6, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
train_dataloader = [(torch.randint(0, 50, (4, 6)), torch.randint(0, 2, (4,))) for _ in range(5)]
global_step, tr_loss = 0, 0.0
model.zero_grad()
for epoch in range(args.num_train_epochs):
    for step, (input_ids, labels) in enumerate(train_dataloader):
        loss = F.cross_entropy(model(input_ids), labels) / args.gradient_accumulation_steps
        loss.backward()
        tr_loss += loss.item()
        if (step + 1) % args.gradient_accumulation_steps == 0 or (step + 1) == len(train_dataloader):
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            model.zero_grad()
            global_step += 1
    print(f"epoch {epoch}: optimizer steps so far {global_step}, loss {tr_loss:.4f}")
