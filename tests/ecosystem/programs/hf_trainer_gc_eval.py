"""transformers.Trainer with gradient_checkpointing=True in TrainingArguments and periodic evaluation
(eval_strategy='steps'): Trainer enables checkpointing on a tiny BERT masked-LM built from a config,
trains on an in-memory dataset and runs evaluate() under no_grad between steps; report_to='none',
no saving, CPU."""
import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from transformers import (BertConfig, BertForMaskedLM, PrinterCallback, ProgressCallback, Trainer, TrainerCallback,
                          TrainingArguments)


def masked(n, length, vocab, mask_id, generator):
    rows = []
    for _ in range(n):
        ids = torch.randint(5, vocab, (length,), generator=generator)
        labels = torch.full((length,), -100)
        where = torch.randperm(length, generator=generator)[:3]
        labels[where] = ids[where]
        ids[where] = mask_id
        rows.append({"input_ids": ids, "attention_mask": torch.ones(length, dtype=torch.long), "labels": labels})
    return rows


class PrintLogs(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        for key in ("loss", "eval_loss"):
            if logs and key in logs:
                print(f"step {state.global_step} {key} {logs[key]:.4f}")


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
    model = BertForMaskedLM(config)
    g = torch.Generator().manual_seed(1)
    train, evaluation = masked(12, 12, 64, 4, g), masked(4, 12, 64, 4, g)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, report_to="none", save_strategy="no", use_cpu=True, max_steps=4,
                                 per_device_train_batch_size=4, per_device_eval_batch_size=4, learning_rate=1e-3,
                                 logging_steps=1, eval_strategy="steps", eval_steps=2, gradient_checkpointing=True,
                                 seed=0, disable_tqdm=True)
        trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=evaluation, callbacks=[PrintLogs()])
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        trainer.train()
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
