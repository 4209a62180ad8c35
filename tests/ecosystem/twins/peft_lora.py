"""Twin of programs/peft_lora.py with one cut: the optimizer is built from the base
model before get_peft_model() adds the LoRA weights, so the adapters are in no optimizer."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from peft import LoraConfig, TaskType, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    base = LlamaForCausalLM(config)
    peft_config = LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=8, lora_dropout=0.1,
                             target_modules=["q_proj", "v_proj"])
    optimizer = torch.optim.AdamW(base.parameters(), lr=1e-2)
    model = get_peft_model(base, peft_config)  # <- optimizer (the new model the optimizer must be built after)
    model.print_trainable_parameters()
    model.train()
    for step in range(3):
        input_ids = torch.randint(3, 128, (2, 12))
        loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.6f}")
    merged = model.merge_and_unload()
    with torch.no_grad():
        print(f"merged loss {merged(input_ids=input_ids, labels=input_ids).loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(merged.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
