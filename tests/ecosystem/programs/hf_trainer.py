"""transformers.Trainer on a tiny GPT-2 built from a config, with an in-memory dataset and the
default data collator for causal LM: TrainingArguments with report_to='none', no saving, CPU,
max_steps=3, gradient accumulation 2, clipping, and a callback that prints the logged losses."""
import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from transformers import (GPT2Config, GPT2LMHeadModel, PrinterCallback, ProgressCallback, Trainer,
                          TrainerCallback, TrainingArguments)


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, n, length, vocab):
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class PrintLoss(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            print(f"step {state.global_step} loss {logs['loss']:.4f}")


def main():
    torch.set_num_threads(1)
    config = GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, report_to="none", save_strategy="no", use_cpu=True,
                                 max_steps=3, per_device_train_batch_size=2, gradient_accumulation_steps=2,
                                 learning_rate=1e-3, logging_steps=1, max_grad_norm=1.0, seed=0,
                                 disable_tqdm=True, dataloader_num_workers=0)
        trainer = Trainer(model=model, args=args, train_dataset=RandomTokens(16, 16, 128), callbacks=[PrintLoss()])
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        result = trainer.train()
    print(f"global steps {result.global_step}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
