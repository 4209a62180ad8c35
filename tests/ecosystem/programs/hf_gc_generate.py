"""A tiny Llama trained with gradient checkpointing on (gradient_checkpointing_enable(), as memory-bound
fine-tuning scripts do), then evaluated the usual way: model.eval() and generate() under no_grad,
with the checkpointing still enabled."""
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
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = LlamaForCausalLM(config)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for step in range(3):
        input_ids = torch.randint(3, 128, (2, 16))
        loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.6f}")
    model.eval()
    model.config.use_cache = True
    prompt = torch.randint(3, 128, (1, 5))
    with torch.no_grad():
        generated = model.generate(prompt, max_new_tokens=6, do_sample=False, pad_token_id=0)
        eval_loss = model(input_ids=generated, labels=generated).loss
    print("generated", generated.tolist(), f"eval loss {eval_loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
