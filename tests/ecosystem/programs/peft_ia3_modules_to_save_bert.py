"""PEFT (IA)^3 on a sequence classifier with ``modules_to_save``, following
https://huggingface.co/docs/peft/package_reference/ia3 and the (IA)^3 conceptual guide
(https://huggingface.co/docs/peft/conceptual_guides/ia3): ``IA3Config`` with ``target_modules`` /
``feedforward_modules``, ``get_peft_model``, a plain PyTorch loop.

Patterns kept:
- all BERT weights frozen by ``get_peft_model``; the (IA)^3 vectors are learned rescalings: the key/value
  ones multiply the *output* of ``key``/``value``, the feed-forward one multiplies the *input* of
  ``intermediate.dense`` (it is in ``feedforward_modules``), all initialised to ones;
- ``modules_to_save=["pooler", "classifier"]``: PEFT wraps those modules in ``ModulesToSaveWrapper``; the
  forward uses a trainable deep copy (``modules_to_save.default``) while the ``original_module`` stays
  frozen and unused in the forward pass on purpose;
- the optimizer only gets ``requires_grad`` parameters; ``print_trainable_parameters()``.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import warnings

import torch
from peft import IA3Config, TaskType, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

# PEFT 0.21 itself still reads ``model.is_gradient_checkpointing``, a deprecated alias in transformers 5.x.
warnings.filterwarnings("ignore", message=".*`is_gradient_checkpointing` is deprecated", category=FutureWarning)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = BertConfig(
        vocab_size=50,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=3,
    )
    base = BertForSequenceClassification(config)
    peft_config = IA3Config(
        task_type=TaskType.SEQ_CLS,
        target_modules=["key", "value", "intermediate.dense"],
        feedforward_modules=["intermediate.dense"],
        modules_to_save=["pooler", "classifier"],
    )
    model = get_peft_model(base, peft_config)
    model.print_trainable_parameters()

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    data = [(torch.randint(1, 50, (4, 10)), torch.randint(0, 3, (4,))) for _ in range(3)]
    model.train()
    for step, (input_ids, labels) in enumerate(data):
        outputs = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels)
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {outputs.loss.item():.6f}")

    if os.environ.get("REALWORLD_STATE"):
        trainable = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        torch.save(trainable, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
