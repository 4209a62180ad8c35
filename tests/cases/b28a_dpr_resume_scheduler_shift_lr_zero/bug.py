"""facebookresearch/DPR issue #99, "zero learning rate when resume training",
https://github.com/facebookresearch/DPR/issues/99: fine-tuning the bi-encoder from a saved DPR checkpoint on
one's own (smaller) dataset, the log shows lr=0 from the first step and the loss never moves. The maintainer:
the checkpoint's learning-rate schedule is loaded from the saved state and already thinks it should be zero;
run with ignore_checkpoint_optimizer=true. train_dense_encoder.py rebuilds its linear schedule with
steps_shift = the saved scheduler's last_epoch, so the new, shorter run starts past its own total_updates and
max(0, (total - step) / (total - warmup)) is 0 at every step. Fix: ignore_checkpoint_optimizer=True (the flag line).
BERT encoders are shrunk to embedding bags; the NQ checkpoint is made in memory by a short first run."""
from types import SimpleNamespace
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

torch.manual_seed(0)
cfg = SimpleNamespace(learning_rate=2e-3, warmup_steps=2, batch_size=8, num_train_epochs=2)
cfg.ignore_checkpoint_optimizer = False  # <- no_update


def get_schedule_linear(optimizer, warmup_steps, training_steps, steps_shift=0, last_epoch=-1):
    def lr_lambda(current_step):
        current_step += steps_shift
        if current_step < warmup_steps:
            return float(current_step) / float(max(1, warmup_steps))
        return max(0.0, float(training_steps - current_step) / float(max(1, training_steps - warmup_steps)))
    return LambdaLR(optimizer, lr_lambda, last_epoch)


class BiEncoder(nn.Module):
    def __init__(self, vocab=200, dim=32):
        super().__init__()
        self.question_model = nn.EmbeddingBag(vocab, dim)
        self.ctx_model = nn.EmbeddingBag(vocab, dim)

    def forward(self, q_ids, ctx_ids):
        return self.question_model(q_ids), self.ctx_model(ctx_ids)


def make_batches(n):
    return [(torch.randint(0, 200, (cfg.batch_size, 6)), torch.randint(0, 200, (cfg.batch_size, 12))) for _ in range(n)]


class BiEncoderTrainer:
    def __init__(self, saved_state=None):
        self.biencoder = BiEncoder()
        self.optimizer = torch.optim.AdamW(self.biencoder.parameters(), lr=cfg.learning_rate)
        self.scheduler_state = None
        if saved_state:
            self._load_saved_state(saved_state)

    def run_train(self, batches):
        total_updates = len(batches) * cfg.num_train_epochs
        if self.scheduler_state:
            shift = int(self.scheduler_state["last_epoch"])
            scheduler = get_schedule_linear(self.optimizer, cfg.warmup_steps, total_updates, steps_shift=shift)
        else:
            scheduler = get_schedule_linear(self.optimizer, cfg.warmup_steps, total_updates)
        for epoch in range(cfg.num_train_epochs):
            for i, (q_ids, ctx_ids) in enumerate(batches):
                q_vec, ctx_vec = self.biencoder(q_ids, ctx_ids)
                scores = q_vec @ ctx_vec.T                      # in-batch negatives
                loss = F.cross_entropy(scores, torch.arange(len(q_ids)))
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.biencoder.parameters(), 2.0)
                self.optimizer.step()
                scheduler.step()
                self.biencoder.zero_grad()
                if i == 0:
                    print(f"Epoch: {epoch}: Step: {i}, loss={loss.item():.4f}, lr={self.optimizer.param_groups[0]['lr']:f}")
        return {"model_dict": self.biencoder.state_dict(), "optimizer_dict": self.optimizer.state_dict(),
                "scheduler_dict": scheduler.state_dict()}

    def _load_saved_state(self, saved_state):
        self.biencoder.load_state_dict(saved_state["model_dict"])
        if not cfg.ignore_checkpoint_optimizer:
            if saved_state["optimizer_dict"]:
                self.optimizer.load_state_dict(saved_state["optimizer_dict"])
            if saved_state["scheduler_dict"]:
                self.scheduler_state = saved_state["scheduler_dict"]


nq_checkpoint = BiEncoderTrainer().run_train(make_batches(12))   # the released NQ checkpoint: 24 updates
print("--- resume on own dataset ---")
trainer = BiEncoderTrainer(saved_state=nq_checkpoint)
q_before = trainer.biencoder.question_model.weight.detach().clone()
trainer.run_train(make_batches(4))                                # own dataset: 8 updates
print("question encoder changed:", not torch.equal(q_before, trainer.biencoder.question_model.weight))
