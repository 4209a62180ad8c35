# Shape of pyannote/pyannote-audio#1789: ToTaToNet (joint diarization + separation, PixIT task)
# hard-codes `self.automatic_optimization = False` in its __init__ because fine-tuning WavLM
# needs two optimizers and manual stepping. When the user disables WavLM fine-tuning, the
# PixIT training_step only computes and returns the loss; the (Lightning-like) trainer, seeing
# manual optimization, neither calls backward nor steps: the model's weights never change.
# Fixed: automatic optimization is turned off only when WavLM is fine-tuned (manual stepping).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class LightningModuleStandIn(nn.Module):
    """Minimal stand-in for pytorch_lightning.LightningModule's optimization switch."""
    automatic_optimization = True


class ToTaToNet(LightningModuleStandIn):
    def __init__(self, n_filters=8, n_sources=3, finetune_wavlm=False):
        super().__init__()
        self.n_sources = n_sources
        self.encoder = nn.Conv1d(1, n_filters, kernel_size=16, stride=8)
        self.masker = nn.Conv1d(n_filters, n_filters * n_sources, kernel_size=1)
        self.classifier = nn.Linear(n_filters, 1)
        # manual optimization only when WavLM is fine-tuned with its own optimizer
        self.automatic_optimization = not finetune_wavlm

    def forward(self, waveforms):
        tf_rep = self.encoder(waveforms)                     # (B, F, T)
        masks = torch.relu(self.masker(tf_rep))
        masks = masks.view(waveforms.shape[0], self.n_sources, -1, tf_rep.shape[-1])
        masked = masks * tf_rep.unsqueeze(1)                 # (B, S, F, T)
        scores = torch.sigmoid(self.classifier(masked.transpose(2, 3)))  # (B, S, T, 1)
        return scores.squeeze(-1).transpose(1, 2)            # (B, T, S)


class PixIT:
    def __init__(self, model, finetune_wavlm=False):
        self.model = model
        self.finetune_wavlm = finetune_wavlm

    def training_step(self, batch, optimizers):
        if self.finetune_wavlm:
            for opt in optimizers:
                opt.zero_grad()
        diarization = self.model(batch["X"])
        loss = F.binary_cross_entropy(diarization, batch["y"])
        if self.finetune_wavlm:  # manual stepping only in the fine-tuning branch
            loss.backward()
            for opt in optimizers:
                opt.step()
        return {"loss": loss}


def fit(task, batches, optimizer):
    """What Lightning's loop does with the returned loss."""
    for batch in batches:
        out = task.training_step(batch, [optimizer])
        if task.model.automatic_optimization:
            optimizer.zero_grad()
            out["loss"].backward()
            optimizer.step()
        print("loss", round(out["loss"].item(), 4))


model = ToTaToNet(finetune_wavlm=False)
task = PixIT(model, finetune_wavlm=False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [{"X": torch.randn(4, 1, 256), "y": torch.randint(0, 2, (4, 31, 3)).float()} for _ in range(3)]

before = model.classifier.weight.detach().clone()
fit(task, batches, optimizer)
print("classifier weight changed:", not torch.equal(before, model.classifier.weight))
print("classifier weight grad:", model.classifier.weight.grad)
