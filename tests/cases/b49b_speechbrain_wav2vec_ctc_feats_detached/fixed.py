# LibriSpeech Wav2Vec 2.0 recipe: why do we need detach()?
# https://github.com/speechbrain/speechbrain/issues/1077  (fix: PR #1080 "Fixed freezing wav2vec at LibriSpeech CTC recipe")
#
# recipes/LibriSpeech/ASR/ctc/train_with_wav2vec.py fed the wav2vec2 output to the DNN encoder as
# `self.modules.enc(feats.detach())`. The yaml sets `freeze_wav2vec: False` and the recipe builds a
# separate `wav2vec_optimizer` for the wav2vec2 parameters, but because the features are detached the
# CTC loss never reaches wav2vec2: its parameters get no gradient and the encoder is never fine-tuned
# (only enc/ctc_lin learn). Fix: pass `feats` without .detach() (freezing is the job of the
# HuggingFaceWav2Vec2 `freeze` flag, which already runs the model under torch.no_grad()).
#
# Reconstruction: a tiny randomly initialised wav2vec2 stands in for the HuggingFace checkpoint, a
# minimal Brain stands in for sb.Brain, and one random batch stands in for LibriSpeech.
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Stage:
    TRAIN, VALID, TEST = "train", "valid", "test"


# ---- speechbrain/lobes/models/huggingface_wav2vec.py (shape kept, HF model built from a tiny config) ----
class Wav2Vec2EncoderLayer(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(hidden, hidden) for _ in range(3))
        self.layer_norm = nn.LayerNorm(hidden)
        self.feed_forward = nn.Sequential(nn.Linear(hidden, 64), nn.GELU(), nn.Linear(64, hidden))
        self.final_layer_norm = nn.LayerNorm(hidden)

    def forward(self, x):
        attn = torch.softmax(self.q_proj(x) @ self.k_proj(x).transpose(1, 2) / x.shape[-1] ** 0.5, dim=-1)
        x = self.layer_norm(x + attn @ self.v_proj(x))
        return self.final_layer_norm(x + self.feed_forward(x))


class TinyWav2Vec2Model(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.feature_extractor = nn.Sequential(
            nn.Conv1d(1, 16, 10, stride=5), nn.GELU(), nn.Conv1d(16, 16, 3, stride=2), nn.GELU()
        )
        self.feature_projection = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, hidden))
        self.encoder = Wav2Vec2EncoderLayer(hidden)

    def forward(self, wav):
        x = self.feature_extractor(wav.unsqueeze(1)).transpose(1, 2)
        x = self.feature_projection(x)
        return (self.encoder(x),)


class HuggingFaceWav2Vec2(nn.Module):
    def __init__(self, source, save_path, output_norm=True, freeze=True, freeze_feature_extractor=False):
        super().__init__()
        self.model = TinyWav2Vec2Model()
        self.output_norm = output_norm
        self.freeze = freeze
        self.freeze_feature_extractor = freeze_feature_extractor
        if self.freeze:
            self.model.eval()
        else:
            self.model.train()

    def forward(self, wav):
        # If we freeze, we simply remove all grads and features from the graph.
        if self.freeze:
            with torch.no_grad():
                return self.extract_features(wav).detach()
        return self.extract_features(wav)

    def extract_features(self, wav):
        out = self.model(wav)[0]
        if self.output_norm:
            out = F.layer_norm(out, out.shape)
        return out


def ctc_loss(log_probs, targets, input_lens, target_lens, blank_index, reduction="mean"):
    """speechbrain.nnet.losses.ctc_loss: relative lengths -> absolute lengths."""
    input_lens = (input_lens * log_probs.shape[1]).round().int()
    target_lens = (target_lens * targets.shape[1]).round().int()
    log_probs = log_probs.transpose(0, 1)
    return F.ctc_loss(log_probs, targets, input_lens, target_lens, blank_index, zero_infinity=True,
                      reduction=reduction)


# ---- hparams/train_with_wav2vec.yaml ----
output_neurons = 10
blank_index = 0
freeze_wav2vec = False
wav2vec2 = HuggingFaceWav2Vec2("facebook/wav2vec2-large-lv60", "save", output_norm=True, freeze=freeze_wav2vec)
enc = nn.Sequential(nn.Linear(32, 32), nn.LeakyReLU(), nn.Linear(32, 32), nn.LeakyReLU())
ctc_lin = nn.Linear(32, output_neurons)
model = nn.ModuleList([enc, ctc_lin])
hparams = types.SimpleNamespace(
    log_softmax=nn.LogSoftmax(dim=-1),
    ctc_cost=lambda p, t, pl, tl: ctc_loss(p, t, pl, tl, blank_index),
    blank_index=blank_index,
    wav2vec_opt_class=lambda params: torch.optim.Adam(params, lr=1e-4),
    model_opt_class=lambda params: torch.optim.Adadelta(params, lr=0.9, rho=0.95, eps=1e-8),
    model=model,
)
modules = nn.ModuleDict({"wav2vec2": wav2vec2, "enc": enc, "ctc_lin": ctc_lin})


class Brain:
    def __init__(self, modules, hparams):
        self.modules = modules
        self.hparams = hparams
        self.init_optimizers()

    def check_gradients(self, loss):
        return torch.isfinite(loss)


# ---- recipes/LibriSpeech/ASR/ctc/train_with_wav2vec.py ----
class ASR(Brain):
    def compute_forward(self, batch, stage):
        """Forward computations from the waveform batches to the output probabilities."""
        wavs, wav_lens = batch.sig

        # Forward pass
        feats = self.modules.wav2vec2(wavs)
        x = self.modules.enc(feats)

        # Compute outputs
        logits = self.modules.ctc_lin(x)
        p_ctc = self.hparams.log_softmax(logits)
        return p_ctc, wav_lens, None

    def compute_objectives(self, predictions, batch, stage):
        p_ctc, wav_lens, predicted_tokens = predictions
        tokens, tokens_lens = batch.tokens
        loss_ctc = self.hparams.ctc_cost(p_ctc, tokens, wav_lens, tokens_lens)
        return loss_ctc

    def fit_batch(self, batch):
        """Train the parameters given a single batch in input"""
        predictions = self.compute_forward(batch, Stage.TRAIN)
        loss = self.compute_objectives(predictions, batch, Stage.TRAIN)
        loss.backward()
        if self.check_gradients(loss):
            self.wav2vec_optimizer.step()
            self.model_optimizer.step()

        self.wav2vec_optimizer.zero_grad()
        self.model_optimizer.zero_grad()

        return loss.detach()

    def init_optimizers(self):
        "Initializes the wav2vec2 optimizer and model optimizer"
        self.wav2vec_optimizer = self.hparams.wav2vec_opt_class(self.modules.wav2vec2.parameters())
        self.model_optimizer = self.hparams.model_opt_class(self.hparams.model.parameters())


if __name__ == "__main__":
    batch = types.SimpleNamespace(
        sig=(torch.randn(4, 1600), torch.ones(4)),
        tokens=(torch.randint(1, output_neurons, (4, 12)), torch.ones(4)),
    )
    asr_brain = ASR(modules=modules, hparams=hparams)
    for step in range(3):
        loss = asr_brain.fit_batch(batch)
        print(f"step {step}: ctc loss {loss.item():.4f}")

    # one more forward/backward to look at the gradients the optimizers would step with
    predictions = asr_brain.compute_forward(batch, Stage.TRAIN)
    asr_brain.compute_objectives(predictions, batch, Stage.TRAIN).backward()
    print("ctc_lin.weight.grad is None:", asr_brain.modules.ctc_lin.weight.grad is None)
    w2v_grad = asr_brain.modules.wav2vec2.model.feature_projection[1].weight.grad
    print("wav2vec2 feature_projection.weight.grad:", None if w2v_grad is None else w2v_grad.norm().item())
    if w2v_grad is None:
        print("BUG: freeze_wav2vec=False but wav2vec2 got no gradient -> it is never fine-tuned")
