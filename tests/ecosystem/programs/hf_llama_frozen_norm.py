"""Partial fine-tuning of a tiny Llama built inside main(): every RMSNorm weight and the embeddings
frozen on purpose with requires_grad_(False) (a common recipe for small-budget tuning), the optimizer
built from the parameters that still require grad, bf16-free CPU training for a few steps."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    for name, param in model.named_parameters():
        if "norm" in name or "embed_tokens" in name:
            param.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    print(f"trainable tensors {len(trainable)} of {len(list(model.parameters()))}")
    optimizer = torch.optim.AdamW(trainable, lr=1e-3, weight_decay=0.0)
    model.train()
    for step in range(3):
        input_ids = torch.randint(3, 128, (2, 16))
        attention_mask = torch.ones_like(input_ids)
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} loss {out.loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
