"""Twin of programs/hf_manual_loop.py with one cut: the loss is rebuilt from its
.item() "to make it require grad", so backward reaches none of the weights."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from transformers import BertConfig, BertForSequenceClassification, get_scheduler


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, num_labels=3)
    model = BertForSequenceClassification(config)
    batches = [{"input_ids": torch.randint(0, 100, (4, 12)), "attention_mask": torch.ones(4, 12, dtype=torch.long),
                "labels": torch.randint(0, 3, (4,))} for _ in range(3)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    lr_scheduler = get_scheduler("linear", optimizer=optimizer, num_warmup_steps=0, num_training_steps=len(batches))
    model.train()
    for step, batch in enumerate(batches):
        outputs = model(**batch)
        loss = torch.tensor(outputs.loss.item(), requires_grad=True)  # <- item
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.6f}")
    model.eval()
    correct = 0
    for batch in batches:
        with torch.no_grad():
            outputs = model(**batch)
        predictions = torch.argmax(outputs.logits, dim=-1)
        correct += (predictions == batch["labels"]).sum().item()
    print(f"accuracy {correct}/{4 * len(batches)}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
