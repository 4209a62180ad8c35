# Report: "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn"
#   https://github.com/Lightning-AI/pytorch-lightning/issues/8281
#   fixed by https://github.com/Lightning-AI/pytorch-lightning/pull/8284
#   ("fix missing call to untoggle_optimizer when accumulating gradients")
# What went wrong: a GAN LightningModule with two optimizers and Trainer(accumulate_grad_batches=2).
#   With several optimizers the training loop calls toggle_optimizer() before each optimizer's
#   training_step (it sets requires_grad=False on every parameter of the *other* optimizers and
#   records the previous state), and untoggle_optimizer() afterwards.  In the accumulation branch of
#   TrainingBatchLoop._run_optimization the untoggle call was missing, so after the generator's turn
#   the discriminator's parameters stayed requires_grad=False.  The next toggle_optimizer() recorded
#   that False as the "original" state and restored it, so for optimizer 1 every parameter is frozen,
#   the discriminator loss has no grad_fn and backward raises.
# Fix (PR #8284): call untoggle_optimizer(opt_idx) also after the closure in the accumulation branch
#   ("Every toggle_optimizer() call needs a matching untoggle_optimizer() call").
# The Lightning machinery (LightningModule.toggle/untoggle_optimizer, TrainingBatchLoop) is rewritten
# here as small plain-torch code with Lightning's names, following pytorch_lightning at the time.
import torch
import torch.nn as nn
import torch.nn.functional as F
from functools import partial

torch.manual_seed(0)


# ----------------------------------------------------------------- pytorch_lightning (mini)
class LightningModule(nn.Module):
    automatic_optimization = True

    def optimizers(self, use_pl_optimizer=False):
        return self.trainer.optimizers

    def toggle_optimizer(self, optimizer, optimizer_idx):
        # Iterate over all optimizer parameters to preserve their `requires_grad` information
        param_requires_grad_state = {}
        for opt in self.optimizers(use_pl_optimizer=False):
            for group in opt.param_groups:
                for param in group["params"]:
                    # If a param already appear in param_requires_grad_state, continue
                    if param in param_requires_grad_state:
                        continue
                    param_requires_grad_state[param] = param.requires_grad
                    param.requires_grad = False
        # Then iterate over the current optimizer's parameters and set its `requires_grad`
        for group in optimizer.param_groups:
            for param in group["params"]:
                param.requires_grad = param_requires_grad_state[param]
        self._param_requires_grad_state = param_requires_grad_state

    def untoggle_optimizer(self, optimizer_idx):
        for opt_idx, opt in enumerate(self.optimizers(use_pl_optimizer=False)):
            if optimizer_idx != opt_idx:
                for group in opt.param_groups:
                    for param in group["params"]:
                        if param in self._param_requires_grad_state:
                            param.requires_grad = self._param_requires_grad_state[param]
        # save memory
        self._param_requires_grad_state = dict()

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_idx, optimizer_closure):
        optimizer.step(closure=optimizer_closure)


class TrainingBatchLoop:
    def __init__(self, trainer):
        self.trainer = trainer
        self.batch_idx = 0

    def run(self, batch, batch_idx):
        self.batch_idx = batch_idx
        for opt_idx, optimizer in enumerate(self.trainer.optimizers):
            self._run_optimization(batch_idx, batch, opt_idx, optimizer)

    def _run_optimization(self, batch_idx, split_batch, opt_idx, optimizer):
        # toggle model params
        self.run_optimization_start(opt_idx, optimizer)

        closure = partial(self.training_step_and_backward, split_batch, batch_idx, opt_idx, optimizer)

        if self.should_accumulate():
            # For gradient accumulation: calculate loss (train step + backward), no optimizer step
            closure()  # <- autograd_error

        # gradient update with accumulated gradients
        else:
            self.optimizer_step(optimizer, opt_idx, batch_idx, closure)
            if len(self.trainer.optimizers) > 1:
                # revert back to previous state
                self.trainer.lightning_module.untoggle_optimizer(opt_idx)

    def run_optimization_start(self, opt_idx, optimizer):
        # make sure only the gradients of the current optimizer's parameters are calculated
        # in the training step to prevent dangling gradients in multiple-optimizer setup.
        if self.trainer.lightning_module.automatic_optimization and len(self.trainer.optimizers) > 1:
            model = self.trainer.lightning_module
            model.toggle_optimizer(optimizer, opt_idx)

    def training_step_and_backward(self, split_batch, batch_idx, opt_idx, optimizer):
        model = self.trainer.lightning_module
        loss = model.training_step(split_batch, batch_idx, opt_idx)
        closure_loss = loss / self.trainer.accumulate_grad_batches
        is_first_batch_to_accumulate = batch_idx % self.trainer.accumulate_grad_batches == 0
        if is_first_batch_to_accumulate:
            optimizer.zero_grad()
        self.backward(closure_loss, optimizer, opt_idx)
        return closure_loss

    def backward(self, closure_loss, optimizer, opt_idx):
        closure_loss.backward()

    def optimizer_step(self, optimizer, opt_idx, batch_idx, train_step_and_backward_closure):
        model_ref = self.trainer.lightning_module
        model_ref.optimizer_step(self.trainer.current_epoch, batch_idx, optimizer, opt_idx,
                                 train_step_and_backward_closure)

    def _accumulated_batches_reached(self):
        return (self.batch_idx + 1) % self.trainer.accumulate_grad_batches == 0

    def _num_training_batches_reached(self):
        return (self.batch_idx + 1) == self.trainer.num_training_batches

    def should_accumulate(self):
        accumulation_done = self._accumulated_batches_reached()
        is_final_batch = self._num_training_batches_reached()
        return not (accumulation_done or is_final_batch)


class Trainer:
    def __init__(self, max_epochs=1, accumulate_grad_batches=1):
        self.max_epochs = max_epochs
        self.accumulate_grad_batches = accumulate_grad_batches
        self.current_epoch = 0

    def fit(self, model, train_dataloader):
        self.lightning_module = model
        model.trainer = self
        self.optimizers = list(model.configure_optimizers())
        self.num_training_batches = len(train_dataloader)
        batch_loop = TrainingBatchLoop(self)
        for self.current_epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(train_dataloader):
                batch_loop.run(batch, batch_idx)


# ----------------------------------------------------------------- user code (GAN, as in the report)
class Generator(nn.Module):
    def __init__(self, latent_dim=8, out_dim=16):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(latent_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, out_dim))

    def forward(self, z):
        return self.model(z)


class Discriminator(nn.Module):
    def __init__(self, in_dim=16):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(in_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.model(x)


class GAN(LightningModule):
    def __init__(self, latent_dim=8):
        super().__init__()
        self.latent_dim = latent_dim
        self.generator = Generator(latent_dim)
        self.discriminator = Discriminator()

    def forward(self, z):
        return self.generator(z)

    def adversarial_loss(self, y_hat, y):
        return F.binary_cross_entropy_with_logits(y_hat, y)

    def training_step(self, batch, batch_idx, optimizer_idx):
        real = batch
        z = torch.randn(real.shape[0], self.latent_dim)
        valid = torch.ones(real.size(0), 1)
        fake = torch.zeros(real.size(0), 1)

        # train generator
        if optimizer_idx == 0:
            g_loss = self.adversarial_loss(self.discriminator(self(z)), valid)
            return g_loss

        # train discriminator
        if optimizer_idx == 1:
            real_loss = self.adversarial_loss(self.discriminator(real), valid)
            fake_loss = self.adversarial_loss(self.discriminator(self(z).detach()), fake)
            d_loss = (real_loss + fake_loss) / 2
            return d_loss

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
        return [opt_g, opt_d]


model = GAN()
train_dataloader = [torch.randn(4, 16) for _ in range(4)]
trainer = Trainer(max_epochs=1, accumulate_grad_batches=2)
trainer.fit(model, train_dataloader)
print("discriminator grad norm:", model.discriminator.model[0].weight.grad.norm().item())
