"""Sequence-to-sequence fine-tuning the way the translation/summarization examples do it without
Trainer: a tiny T5ForConditionalGeneration from a config, labels with -100 padding, Adafactor from
transformers.optimization (its step is transformers' own code), and a greedy generate() under
no_grad for evaluation."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from transformers import T5Config, T5ForConditionalGeneration
from transformers.optimization import Adafactor


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = T5Config(vocab_size=96, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                      num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(config)
    optimizer = Adafactor(model.parameters(), lr=1e-3, relative_step=False, scale_parameter=False, warmup_init=False)
    model.train()
    for step in range(3):
        input_ids = torch.randint(2, 96, (2, 10))
        labels = torch.randint(2, 96, (2, 6))
        labels[1, 4:] = -100
        loss = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.6f}")
    model.eval()
    with torch.no_grad():
        out = model.generate(torch.randint(2, 96, (1, 10)), max_new_tokens=5, do_sample=False)
    print("generated", out.tolist())
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
