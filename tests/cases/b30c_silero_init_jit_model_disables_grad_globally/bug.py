"""silero-models (snakers4/silero-models#40, "cannot use this model as a layer of other model",
https://github.com/snakers4/silero-models/issues/40): utils.init_jit_model(), the loader the examples use for the
Silero speech-to-text model, starts with `torch.set_grad_enabled(False)` and never turns it back on. A user who
loads the STT model as a frozen (non-trainable) front end and trains a small head on its outputs gets no graph at
all -- grad mode is off for the whole process -- so loss.backward() raises "element 0 of tensors does not require
grad and does not have a grad_fn". The reporter: "I have to manually enable it to make it work"; the maintainer:
the utils were written for inference, "you can just override the init_jit_model function in your use case".
TinySTT stands in for the downloaded TorchScript model (torch.jit.load of model_url); the audio is random."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TinySTT(nn.Module):  # stand-in for the Silero en_v2 jit model: wav -> per-frame label logits
    labels = ["_", " ", "a", "b", "c", "2"]

    def __init__(self, hop=160):
        super().__init__()
        self.hop = hop
        self.conv = nn.Conv1d(1, 16, kernel_size=400, stride=hop, padding=120)
        self.out = nn.Conv1d(16, len(self.labels), kernel_size=1)

    def forward(self, x):
        return self.out(torch.relu(self.conv(x.unsqueeze(1)))).transpose(1, 2)  # (batch, frames, labels)


class Decoder():
    def __init__(self, labels):
        self.labels = labels
        self.blank_idx = self.labels.index('_')


def init_jit_model(model_url, device=torch.device('cpu')):
    torch.set_grad_enabled(False)  # <- no_grad
    model = TinySTT().to(device)  # utils.py: download model_url to a temp file, torch.jit.load(f.name, map_location=device)
    model.eval()
    return model, Decoder(model.labels)


class IntentClassifier(nn.Module):  # the user's model: the STT net as a frozen layer, a trainable head on top
    def __init__(self, stt, n_intents=3):
        super().__init__()
        self.stt = stt
        self.head = nn.Sequential(nn.Linear(len(stt.labels), 32), nn.ReLU(), nn.Linear(32, n_intents))

    def forward(self, wav):
        feats = self.stt(wav).softmax(dim=-1).mean(dim=1)
        return self.head(feats)


stt, decoder = init_jit_model("https://models.silero.ai/models/en/en_v2_jit.model")
for p in stt.parameters():
    p.requires_grad = False
model = IntentClassifier(stt)
optimizer = torch.optim.Adam(model.head.parameters(), lr=1e-3)
head_before = model.head[0].weight.detach().clone()

for step in range(3):
    wav = torch.randn(4, 16000)  # 1 s of 16 kHz audio per example
    intents = torch.randint(0, 3, (4,))
    loss = F.cross_entropy(model(wav), intents)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")

print("head changed:", not torch.equal(head_before, model.head[0].weight))
