"""espnet/espnet PR #5159, "fix the gradient backward issue when joint training with s3prl frontend",
https://github.com/espnet/espnet/pull/5159 (final form merged as PR #5297): ESPnet's S3prlFrontend wraps an S3PRL
upstream (WavLM) so that it can be fine-tuned jointly with the ASR encoder and CTC head. S3PRL builds the WavLM
model with `feature_grad_mult = 0.0`, and WavLM.extract_features then runs the convolutional feature extractor
under `with torch.no_grad():` whenever feature_grad_mult is not > 0. The CTC loss reaches the WavLM transformer
but never the CNN feature extractor: its weights get no gradient in joint training. The PR: "In s3prl,
`feature_grad_mult` was set to 0. Thus the forward is in the context of `torch.no_grad()` ... It will stop the
gradient back-propagation in joint training. To fix it, just set it to be 1 manually" in S3prlFrontend.__init__.
Tiny stand-ins: 2 conv layers for the 7-layer extractor, one TransformerEncoderLayer for WavLM's encoder, a linear
ASR encoder; the weighted-sum Featurizer, masking and relative position bias are left out."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ConvFeatureExtractionModel(nn.Module):
    def __init__(self, conv_layers=((16, 10, 5), (16, 3, 2))):
        super().__init__()
        in_d, layers = 1, []
        for dim, k, stride in conv_layers:
            layers.append(nn.Sequential(nn.Conv1d(in_d, dim, k, stride=stride, bias=False), nn.GELU()))
            in_d = dim
        self.conv_layers = nn.ModuleList(layers)

    def forward(self, x):  # (B, T) -> (B, C, T')
        x = x.unsqueeze(1)
        for conv in self.conv_layers:
            x = conv(x)
        return x


class WavLM(nn.Module):
    def __init__(self, feature_grad_mult):
        super().__init__()
        self.feature_extractor = ConvFeatureExtractionModel()
        self.feature_grad_mult = feature_grad_mult
        self.layer_norm = nn.LayerNorm(16)
        self.post_extract_proj = nn.Linear(16, 32)
        self.encoder = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)

    def extract_features(self, source):
        if self.feature_grad_mult > 0:
            features = self.feature_extractor(source)
        else:
            with torch.no_grad():
                features = self.feature_extractor(source)  # <- no_grad
        features = features.transpose(1, 2)
        features = self.layer_norm(features)
        features = self.post_extract_proj(features)
        return self.encoder(features)


class S3PRLUpstreamExpert(nn.Module):  # s3prl's upstream/wavlm/expert.py: builds the model from its checkpoint cfg
    def __init__(self):
        super().__init__()
        self.model = WavLM(feature_grad_mult=0.0)  # what S3PRL sets for downstream use

    def forward(self, wavs):
        return self.model.extract_features(wavs)


class S3PRLUpstream(nn.Module):
    def __init__(self):
        super().__init__()
        self.upstream = S3PRLUpstreamExpert()

    def forward(self, wavs):
        return self.upstream(wavs)


class S3prlFrontend(nn.Module):
    def __init__(self):
        super().__init__()
        upstream = S3PRLUpstream()
        upstream.eval()
        self.upstream = upstream

    def forward(self, input, input_lengths):
        feats = self.upstream(input)
        feats_lens = torch.full((feats.size(0),), feats.size(1), dtype=torch.long)
        return feats, feats_lens


class ESPnetASRModel(nn.Module):
    def __init__(self, vocab_size=12):
        super().__init__()
        self.frontend = S3prlFrontend()
        self.encoder = nn.Sequential(nn.Linear(32, 32), nn.ReLU())
        self.ctc_lo = nn.Linear(32, vocab_size)

    def forward(self, speech, speech_lengths, text, text_lengths):
        feats, feats_lens = self.frontend(speech, speech_lengths)
        ys_hat = self.ctc_lo(self.encoder(feats)).log_softmax(-1).transpose(0, 1)  # (T, B, V)
        return F.ctc_loss(ys_hat, text, feats_lens, text_lengths, zero_infinity=True)


model = ESPnetASRModel()
model.train()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
speech = torch.randn(2, 800)  # raw 16 kHz waveform chunks
speech_lengths = torch.tensor([800, 800])
text = torch.randint(1, 12, (2, 5))
text_lengths = torch.tensor([5, 5])

loss = model(speech, speech_lengths, text, text_lengths)
optimizer.zero_grad()
loss.backward()
optimizer.step()
wavlm = model.frontend.upstream.upstream.model
print("ctc loss:", loss.item())
print("wavlm.post_extract_proj.weight.grad is None:", wavlm.post_extract_proj.weight.grad is None)
print("wavlm.feature_extractor conv0 grad:", wavlm.feature_extractor.conv_layers[0][0].weight.grad)
