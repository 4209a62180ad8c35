"""transformers causal-LM training with frozen input embeddings and *reentrant* activation checkpointing,
following the "Gradient checkpointing" section of
https://huggingface.co/docs/transformers/perf_train_gpu_one and the ``enable_input_require_grads``
docstring (https://huggingface.co/docs/transformers/main_classes/model#transformers.PreTrainedModel.enable_input_require_grads).

Patterns kept:
- a tiny ``LlamaForCausalLM`` from a config (random init, untied ``lm_head``), ``use_cache=False``;
- ``embed_tokens`` frozen with ``requires_grad_(False)``; Llama has no learned position embeddings, so the
  hidden states entering the first decoder layer do not require grad;
- ``activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": True})`` (the
  non-deprecated name of ``gradient_checkpointing_enable``): with reentrant checkpointing the decoder layers
  would get no gradient from inputs that do not require grad, so the method installs the
  ``enable_input_require_grads`` forward hook on the input embeddings (the hook marks their *output* as
  requiring grad; the embedding weight itself stays frozen);
- the optimizer only gets ``requires_grad`` parameters; ``labels=input_ids`` (the model shifts them).
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        tie_word_embeddings=False,
        use_cache=False,
    )
    model = LlamaForCausalLM(config)
    model.get_input_embeddings().requires_grad_(False)
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": True})
    model.train()

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    batches = [torch.randint(0, 64, (2, 12)) for _ in range(3)]
    for step, input_ids in enumerate(batches):
        outputs = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=input_ids)
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {outputs.loss.item():.6f}")

    if os.environ.get("REALWORLD_STATE"):
        trainable = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        torch.save(trainable, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
