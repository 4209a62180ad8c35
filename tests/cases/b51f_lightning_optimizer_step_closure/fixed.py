# Report: "In 1.0.4, training_step is never called when optimizer_step is overriden"
#   https://github.com/Lightning-AI/pytorch-lightning/issues/4447
#   (docs/fix: https://github.com/Lightning-AI/pytorch-lightning/pull/4455)
# What went wrong: since Lightning 1.0.4 the training loop no longer runs training_step + backward
#   itself before the optimizer step; it wraps them in `train_step_and_backward_closure` and hands that
#   closure to LightningModule.optimizer_step(..., optimizer_closure, ...), whose default calls
#   optimizer.step(closure=optimizer_closure).  The user's override (the LR warm-up recipe from the
#   docs) called `optimizer.step()` without the closure, so training_step was never executed, no
#   backward ran, every .grad stayed None and the optimizer step changed nothing.
# Fix (reporter confirmed, docs updated in PR #4455): pass the closure,
#   `optimizer.step(closure=optimizer_closure)`.
# The Lightning machinery (Trainer / TrainLoop.run_training_batch / LightningModule.optimizer_step)
# is rewritten here as small plain-torch code with Lightning's names, following pytorch_lightning 1.0.4.
import torch
import torch.nn as nn

torch.manual_seed(0)


# ----------------------------------------------------------------- pytorch_lightning 1.0.4 (mini)
class LightningModule(nn.Module):
    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_idx, optimizer_closure=None,
                       on_tpu=False, using_native_amp=False, using_lbfgs=False):
        optimizer.step(closure=optimizer_closure)

    def optimizer_zero_grad(self, epoch, batch_idx, optimizer, optimizer_idx):
        optimizer.zero_grad()


class TrainLoop:
    def __init__(self, trainer):
        self.trainer = trainer

    def run_training_batch(self, batch, batch_idx):
        for opt_idx, optimizer in enumerate(self.trainer.optimizers):

            def train_step_and_backward_closure():
                result = self.training_step_and_backward(batch, batch_idx, opt_idx, optimizer)
                return None if result is None else result

            # optimizer step
            self.optimizer_step(optimizer, opt_idx, batch_idx, train_step_and_backward_closure)

            # hook + clear gradients
            self.zero_grad_handler(batch_idx, optimizer, opt_idx)

    def training_step_and_backward(self, split_batch, batch_idx, opt_idx, optimizer):
        """wrap the forward step in a closure so second order methods work"""
        model_ref = self.trainer.get_model()
        loss = model_ref.training_step(split_batch, batch_idx)
        # backward pass
        self.backward(loss, optimizer, opt_idx)
        return loss

    def backward(self, loss, optimizer, opt_idx):
        loss.backward()

    def optimizer_step(self, optimizer, opt_idx, batch_idx, train_step_and_backward_closure):
        model_ref = self.trainer.get_model()
        is_lbfgs = isinstance(optimizer, torch.optim.LBFGS)
        # model hook
        model_ref.optimizer_step(
            epoch=self.trainer.current_epoch,
            batch_idx=batch_idx,
            optimizer=optimizer,
            optimizer_idx=opt_idx,
            optimizer_closure=train_step_and_backward_closure,
            on_tpu=False,
            using_native_amp=False,
            using_lbfgs=is_lbfgs,
        )
        self.trainer.global_step += 1

    def zero_grad_handler(self, batch_idx, optimizer, opt_idx):
        model_ref = self.trainer.get_model()
        model_ref.optimizer_zero_grad(self.trainer.current_epoch, batch_idx, optimizer, opt_idx)


class Trainer:
    def __init__(self, max_epochs=1):
        self.max_epochs = max_epochs
        self.current_epoch = 0
        self.global_step = 0

    def get_model(self):
        return self.model

    def fit(self, model, train_dataloader):
        self.model = model
        model.trainer = self
        optim_conf = model.configure_optimizers()
        self.optimizers = optim_conf if isinstance(optim_conf, list) else [optim_conf]
        train_loop = TrainLoop(self)
        model.train()
        for self.current_epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(train_dataloader):
                train_loop.run_training_batch(batch, batch_idx)


# ----------------------------------------------------------------- user code (BoringModel + LR warm-up)
class BoringModel(LightningModule):
    def __init__(self, learning_rate=0.1):
        super().__init__()
        self.learning_rate = learning_rate
        self.layer = nn.Linear(32, 2)

    def forward(self, x):
        return self.layer(x)

    def loss(self, batch, prediction):
        # An arbitrary loss to have a loss that updates the model weights during `Trainer.fit` calls
        return nn.functional.mse_loss(prediction, torch.ones_like(prediction))

    def training_step(self, batch, batch_idx):
        print("training_step", batch_idx)
        output = self.layer(batch)
        loss = self.loss(batch, output)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.layer.parameters(), lr=self.learning_rate)

    # learning rate warm-up, as in the Lightning docs ("Step optimizers at arbitrary intervals")
    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_idx, optimizer_closure=None,
                       on_tpu=False, using_native_amp=False, using_lbfgs=False):
        # warm up lr
        if self.trainer.global_step < 500:
            lr_scale = min(1., float(self.trainer.global_step + 1) / 500.)
            for pg in optimizer.param_groups:
                pg['lr'] = lr_scale * self.learning_rate

        # update params
        optimizer.step(closure=optimizer_closure)
        optimizer.zero_grad()


model = BoringModel()
w0 = model.layer.weight.detach().clone()
train_dataloader = [torch.randn(8, 32) for _ in range(8)]
trainer = Trainer(max_epochs=1)
trainer.fit(model, train_dataloader)
print("weight change after fit:", (model.layer.weight.detach() - w0).abs().max().item())
