# Make `Pretrained` inherit from `torch.nn.Module`  (speechbrain/speechbrain#1040)
# https://github.com/speechbrain/speechbrain/issues/1040
#
# What went wrong: the reporter loaded the pretrained ECAPA speaker-verification
# interface (SpeakerRecognition.from_hparams) and tried to train it further in a
# plain PyTorch loop on a downstream objective. loss.backward() raised
#   RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
# because Pretrained.__init__ defaults to freeze_params=True, which calls
# .eval() and sets requires_grad=False on every parameter of self.mods.
# Fix (maintainer, Gastron): pass freeze_params=False to from_hparams (it is
# forwarded to the class constructor through **kwargs).
#
# The SpeechBrain classes are rewritten here as small plain-torch code; the
# "pretrained" model is built from a tiny in-script config, nothing is downloaded.
import torch
import torch.nn as nn
from types import SimpleNamespace

torch.manual_seed(0)


# ---- speechbrain.lobes.features.Fbank (fixed filterbank, no parameters) ----
class Fbank(nn.Module):
    def __init__(self, n_mels=20, win_length=64, hop_length=32):
        super().__init__()
        self.win_length = win_length
        self.hop_length = hop_length
        self.register_buffer("fbank_matrix", torch.rand(win_length, n_mels))

    def forward(self, wavs):
        frames = wavs.unfold(1, self.win_length, self.hop_length)  # [B, T, win]
        return torch.log1p((frames @ self.fbank_matrix) ** 2)  # [B, T, n_mels]


# ---- speechbrain.processing.features.InputNormalization (sentence-level) ----
class InputNormalization(nn.Module):
    def forward(self, x, lengths=None):
        return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)


# ---- speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN (tiny stand-in) ----
class ECAPA_TDNN(nn.Module):
    def __init__(self, input_size=20, channels=32, lin_neurons=16):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv1d(input_size, channels, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.BatchNorm1d(channels),
        )
        self.fc = nn.Linear(2 * channels, lin_neurons)

    def forward(self, x, lengths=None):
        x = self.block(x.transpose(1, 2))  # [B, C, T]
        stats = torch.cat([x.mean(dim=2), x.std(dim=2)], dim=1)  # attentive stat pooling stand-in
        return self.fc(stats).unsqueeze(1)  # [B, 1, lin_neurons]


def load_hparams(source):
    """Stands in for fetching hyperparams.yaml + embedding_model.ckpt from `source`."""
    modules = {
        "compute_features": Fbank(n_mels=20),
        "mean_var_norm": InputNormalization(),
        "embedding_model": ECAPA_TDNN(input_size=20, channels=32, lin_neurons=16),
        "mean_var_norm_emb": nn.Identity(),
    }
    return {"modules": modules, "source": source}


# ---- speechbrain.pretrained.interfaces ----
class Pretrained:
    def __init__(self, modules=None, hparams=None, run_opts=None, freeze_params=True):
        self.device = "cpu"
        # Put modules on the right device, accessible with dot notation
        self.mods = torch.nn.ModuleDict(modules).to(self.device)
        if hparams is not None:
            self.hparams = SimpleNamespace(**hparams)
        self.freeze_params = freeze_params
        # If we don't want to backprop, freeze the pretrained parameters
        if self.freeze_params:
            self.mods.eval()
            for p in self.mods.parameters():
                p.requires_grad = False

    @classmethod
    def from_hparams(cls, source, hparams_file="hyperparams.yaml", savedir=None, **kwargs):
        hparams = load_hparams(source)
        return cls(hparams["modules"], hparams, **kwargs)


class EncoderClassifier(Pretrained):
    def encode_batch(self, wavs, wav_lens=None, normalize=False):
        feats = self.mods.compute_features(wavs)
        feats = self.mods.mean_var_norm(feats, wav_lens)
        embeddings = self.mods.embedding_model(feats, wav_lens)
        if normalize:
            embeddings = self.mods.mean_var_norm_emb(embeddings)
        return embeddings


class SpeakerRecognition(EncoderClassifier):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.similarity = torch.nn.CosineSimilarity(dim=-1, eps=1e-6)

    def verify_batch(self, wavs1, wavs2, wav1_lens=None, wav2_lens=None, threshold=0.25):
        emb1 = self.encode_batch(wavs1, wav1_lens, normalize=True)
        emb2 = self.encode_batch(wavs2, wav2_lens, normalize=True)
        score = self.similarity(emb1, emb2)
        return score, score > threshold


# ---- the reporter's downstream fine-tuning loop ----
verification = SpeakerRecognition.from_hparams(source="speechbrain/spkrec-ecapa-voxceleb", savedir="pretrained_models/spkrec-ecapa-voxceleb", freeze_params=False)
optimizer = torch.optim.Adam(verification.mods.parameters(), lr=1e-3)

wavs1 = torch.randn(4, 1024)
wavs2 = torch.randn(4, 1024)
same_speaker = torch.tensor([1.0, 0.0, 1.0, 0.0])

for step in range(3):
    optimizer.zero_grad()
    score, decision = verification.verify_batch(wavs1, wavs2)
    loss = ((score.squeeze(1) - same_speaker) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")

print("embedding_model.fc.weight.grad is None:", verification.mods.embedding_model.fc.weight.grad is None)
