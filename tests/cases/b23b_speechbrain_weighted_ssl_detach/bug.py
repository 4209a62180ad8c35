"""SpeechBrain (speechbrain/speechbrain#2759, https://github.com/speechbrain/speechbrain/issues/2759):
"Weighted SSL model not unfreezable". WeightedSSLModel(hub, freeze=False) is meant to fine-tune the SSL
encoder (wav2vec2/HuBERT/WavLM) together with the learnable layer weights, but the encoder's weights are never
updated: their .grad stays None.
Why: forward() stacks the encoder's hidden states with torch.stack(feats.hidden_states, dim=0).detach(), so the
loss reaches only the layer weights (self.weights) and the downstream head, never the encoder.
Fix: drop the .detach() (PR #2760) so gradients flow back into the SSL encoder when freeze=False."""
import torch
import torch.nn.functional as F
from torch import nn


class TinyWav2Vec2(nn.Module):
    """Stand-in for transformers' Wav2Vec2Model with config.output_hidden_states = True."""

    def __init__(self, num_hidden_layers=3, hidden=16):
        super().__init__()
        self.feature_extractor = nn.Conv1d(1, hidden, kernel_size=10, stride=5)
        self.layers = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_hidden_layers))

    def forward(self, wav):
        h = self.feature_extractor(wav[:, None]).transpose(1, 2)
        hidden_states = (h,)
        for layer in self.layers:
            h = torch.tanh(layer(h))
            hidden_states = hidden_states + (h,)
        return type("Wav2Vec2BaseModelOutput", (), {"hidden_states": hidden_states})()


class WeightedSSLModel(nn.Module):
    """speechbrain/lobes/models/huggingface_transformers/weighted_ssl.py, in short."""

    def __init__(self, num_hidden_layers=3, layernorm=False, freeze=False):
        super().__init__()
        self.model = TinyWav2Vec2(num_hidden_layers)
        self.freeze = freeze
        self.num_layers = num_hidden_layers + 1
        # Initializing the learnable weights
        zero_init = torch.cat([torch.zeros(self.num_layers)])
        self.weights = torch.nn.Parameter(zero_init, requires_grad=True)
        self.layernorm = layernorm

    def forward(self, wav, wav_lens=None):
        feats = self.model(wav)
        hidden_states = torch.stack(feats.hidden_states, dim=0).detach()  # <- detach
        # First dimension should be equal to the number of layers in the hparams
        assert self.num_layers == hidden_states.shape[0], "Num layers not equal to num hidden states"
        norm_weights = torch.nn.functional.softmax(self.weights, dim=-1)
        # Summing the weighted layers
        weighted_feats = (hidden_states * norm_weights[:, None, None, None]).sum(axis=0)
        return weighted_feats


torch.manual_seed(0)
ssl = WeightedSSLModel(num_hidden_layers=3, freeze=False)
classifier = nn.Linear(16, 4)
optimizer = torch.optim.Adam(list(ssl.parameters()) + list(classifier.parameters()), lr=1e-2)
wavs, labels = torch.randn(8, 400), torch.randint(0, 4, (8,))
before = ssl.model.layers[0].weight.detach().clone()
for step in range(5):
    feats = ssl(wavs)
    loss = F.cross_entropy(classifier(feats.mean(dim=1)), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("encoder grad is None:", ssl.model.layers[0].weight.grad is None)
print("layer weights grad is None:", ssl.weights.grad is None)
print("encoder weights changed:", not torch.equal(before, ssl.model.layers[0].weight))
