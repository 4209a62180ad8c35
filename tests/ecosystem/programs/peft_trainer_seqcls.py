"""LoRA sequence classification through transformers.Trainer, as PEFT's examples do: a tiny RoBERTa
from a config, LoraConfig(task_type=SEQ_CLS) (the classifier head kept trainable through
modules_to_save), an in-memory list of dicts as the dataset, report_to='none', no saving."""
import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from peft import LoraConfig, TaskType, get_peft_model
from transformers import (PrinterCallback, ProgressCallback, RobertaConfig, RobertaForSequenceClassification,
                          Trainer, TrainerCallback, TrainingArguments)


class PrintLoss(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            print(f"step {state.global_step} loss {logs['loss']:.4f}")


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=40, num_labels=2, pad_token_id=1)
    model = RobertaForSequenceClassification(config)
    lora = LoraConfig(task_type=TaskType.SEQ_CLS, r=4, lora_alpha=16, lora_dropout=0.0, target_modules=["query", "value"])
    model = get_peft_model(model, lora)
    g = torch.Generator().manual_seed(1)
    train = [{"input_ids": torch.randint(3, 100, (10,), generator=g), "labels": i % 2} for i in range(12)]
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, report_to="none", save_strategy="no", use_cpu=True, max_steps=3,
                                 per_device_train_batch_size=4, learning_rate=5e-3, logging_steps=1, seed=0,
                                 disable_tqdm=True)
        trainer = Trainer(model=model, args=args, train_dataset=train, callbacks=[PrintLoss()])
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        trainer.train()
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
