"""PEFT prefix tuning of a causal LM, following the prefix-tuning guide
(https://huggingface.co/docs/peft/package_reference/prefix_tuning and
https://huggingface.co/docs/peft/task_guides/prompt_based_methods): ``PrefixTuningConfig`` +
``get_peft_model``, a plain PyTorch loop with AdamW over ``model.parameters()`` and a linear warm-up schedule.

Patterns kept:
- every base-model weight is frozen by ``get_peft_model``; the only trainable tensor is the prefix
  encoder's embedding (``prompt_encoder.default.embedding.weight``), which never touches ``input_ids``:
  its rows are reshaped into per-layer key/value tensors and handed to the frozen attention as
  ``past_key_values`` (a ``DynamicCache``), so the gradient reaches it only through the cache;
- the attention mask is extended by PEFT with ones for the virtual tokens;
- ``AdamW(model.parameters())`` is given frozen parameters too (as the guide does): they get no ``.grad``
  and AdamW skips them;
- ``model.print_trainable_parameters()``.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import warnings

import torch
from peft import PrefixTuningConfig, TaskType, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM, get_linear_schedule_with_warmup

# PEFT 0.21 itself still reads ``model.is_gradient_checkpointing`` and passes the prefix as
# ``past_key_values``; both names are deprecated aliases in transformers 5.x (library-internal calls).
warnings.filterwarnings("ignore", message=".*`is_gradient_checkpointing` is deprecated", category=FutureWarning)
warnings.filterwarnings("ignore", message=".*`past_key_values` is deprecated", category=FutureWarning)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
    )
    base = LlamaForCausalLM(config)
    peft_config = PrefixTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=5)
    model = get_peft_model(base, peft_config)
    model.print_trainable_parameters()

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=3)
    batches = [torch.randint(0, 64, (2, 10)) for _ in range(3)]
    model.train()
    for step, input_ids in enumerate(batches):
        batch = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": input_ids}
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.6f}")

    if os.environ.get("REALWORLD_STATE"):
        trainable = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        torch.save(trainable, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
