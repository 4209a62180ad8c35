"""Gradient accumulation the Accelerate way: Accelerator(gradient_accumulation_steps=2), each step
inside `with accelerator.accumulate(model):`, where the prepared optimizer skips step() and
zero_grad() until gradients are synced; a Hugging Face model (tiny DistilBERT) trained on
random token ids."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import DistilBertConfig, DistilBertForSequenceClassification


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
    config = DistilBertConfig(vocab_size=100, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                              max_position_embeddings=32, num_labels=2)
    model = DistilBertForSequenceClassification(config)
    samples = [{"input_ids": torch.randint(0, 100, (12,)), "labels": torch.tensor(i % 2)} for i in range(16)]
    dataloader = DataLoader(samples, batch_size=4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer, dataloader = accelerator.prepare(model, optimizer, dataloader)
    model.train()
    for step, batch in enumerate(dataloader):
        with accelerator.accumulate(model):
            outputs = model(**batch)
            loss = outputs.loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.6f} synced {accelerator.sync_gradients}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(accelerator.unwrap_model(model).state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
