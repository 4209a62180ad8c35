# "Fix wav2vec2 target grad bug"
# https://github.com/facebookresearch/fairseq2/pull/731
#
# In wav2vec 2.0 pretraining the feature-extractor output is used twice: masked
# and fed to the context network, and (unmasked) as the contrastive *targets*
# that go through the vector quantizer. fairseq2's Wav2Vec2Model.run_frontend
# built the targets with `seqs.detach().clone()`, so the contrastive loss could
# not send gradient back through the quantizer branch into the frontend (as the
# original fairseq wav2vec2 does, `unmasked_features = features.clone()`).
# Training still runs and the frontend still learns through the encoder branch,
# so nothing crashes -- the gradient of one branch is silently cut.
# Fix (merged PR): `targets = seqs.clone()` (later made the default of the
# `quantizer_encoder_grad=True` option).
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.nn.functional import cross_entropy

torch.manual_seed(0)


def extract_masked_elements(seqs: Tensor, temporal_mask: Tensor) -> Tensor:
    batch_size = seqs.size(0)
    seqs = seqs[temporal_mask]
    return seqs.unflatten(0, (batch_size, -1))


class Wav2Vec2FeatureExtractor(nn.Module):
    def __init__(self, layer_descs=((16, 5, 3), (16, 3, 2), (16, 3, 2))):
        super().__init__()
        layers, in_ch = [], 1
        for out_ch, k, s in layer_descs:
            layers.append(nn.Sequential(nn.Conv1d(in_ch, out_ch, k, s, bias=False), nn.GELU()))
            in_ch = out_ch
        self.layers = nn.ModuleList(layers)
        self.feature_dim = in_ch

    def forward(self, seqs):
        seqs = seqs.unsqueeze(1)            # (N, S) -> (N, 1, S)
        for layer in self.layers:
            seqs = layer(seqs)
        return seqs.transpose(1, 2)         # (N, C, S') -> (N, S', C)


class Wav2Vec2Masker(nn.Module):
    def __init__(self, model_dim, mask_prob=0.5):
        super().__init__()
        self.mask_prob = mask_prob
        self.temporal_mask_embed = nn.Parameter(torch.empty(model_dim).uniform_())

    def forward(self, seqs):
        batch_size, seq_len, _ = seqs.shape
        num_masked = int(seq_len * self.mask_prob)
        temporal_mask = torch.zeros(batch_size, seq_len, dtype=torch.bool)
        for b in range(batch_size):
            temporal_mask[b, torch.randperm(seq_len)[:num_masked]] = True
        seqs = torch.where(temporal_mask.unsqueeze(-1), self.temporal_mask_embed, seqs)
        return seqs, temporal_mask


class Wav2Vec2Frontend(nn.Module):
    def __init__(self, model_dim, feature_extractor):
        super().__init__()
        self.feature_extractor = feature_extractor
        self.feature_dim = feature_extractor.feature_dim
        self.post_extract_layer_norm = nn.LayerNorm(self.feature_dim)
        self.model_dim_proj = nn.Linear(self.feature_dim, model_dim)
        self.first_pass_dropout = None
        self.layer_norm = nn.LayerNorm(model_dim)

    def extract_features(self, seqs, padding_mask):
        seqs = self.feature_extractor(seqs)
        seqs = self.post_extract_layer_norm(seqs)
        raw_features = seqs.clone()
        return seqs, padding_mask, raw_features

    def process_features(self, seqs, padding_mask, masker):
        seqs = self.model_dim_proj(seqs)
        seqs, temporal_mask = masker(seqs)
        seqs = self.layer_norm(seqs)
        return seqs, padding_mask, temporal_mask


@dataclass
class VectorQuantizerOutput:
    quantized_vectors: Tensor
    cb: Tensor
    num_codebooks: int
    num_codebook_entries: int

    def compute_loss(self):
        num_entries = self.num_codebooks * self.num_codebook_entries
        return (num_entries - self.compute_prob_perplexity()) / num_entries

    def compute_prob_perplexity(self):
        probs = self.cb.float().softmax(-1).mean(0)
        return torch.exp(-torch.sum(probs * torch.log(probs + 1e-7), dim=-1)).sum()


class GumbelVectorQuantizer(nn.Module):
    def __init__(self, input_dim, output_dim, num_codebooks=2, num_codebook_entries=8, codebook_sampling_temperature=2.0):
        super().__init__()
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.num_codebooks = num_codebooks
        self.num_codebook_entries = num_codebook_entries
        self.temperature = codebook_sampling_temperature
        num_total = num_codebooks * num_codebook_entries
        self.entries = nn.Parameter(torch.empty(1, num_total, output_dim // num_codebooks).uniform_())
        self.entry_proj = nn.Linear(input_dim, num_total)

    def forward(self, x):
        bsz, tsz, fsz = x.shape
        x = self.entry_proj(x)
        x = x.view(bsz * tsz * self.num_codebooks, -1)
        cb = x.view(bsz * tsz, self.num_codebooks, -1)
        x = F.gumbel_softmax(x.float(), tau=self.temperature, hard=True).type_as(x)
        x = x.view(bsz * tsz, -1)
        x = x.unsqueeze(-1) * self.entries
        x = x.view(bsz * tsz, self.num_codebooks, self.num_codebook_entries, -1)
        x = x.sum(-2)
        x = x.view(bsz, tsz, -1)
        return VectorQuantizerOutput(x, cb, self.num_codebooks, self.num_codebook_entries)


@dataclass
class Wav2Vec2Features:
    seqs: Tensor
    padding_mask: object
    targets: Tensor
    temporal_mask: Tensor
    raw: Tensor


@dataclass
class Wav2Vec2Output:
    logits: Tensor
    quantized_targets: Tensor
    temporal_mask: Tensor
    quantizer_output: VectorQuantizerOutput
    raw_features: Tensor

    def compute_loss(self, diversity_loss_weight=0.1, penalty_weight=10.0):
        contrastive_loss = self.compute_contrastive_loss()
        diversity_loss = self.compute_diversity_loss()
        penalty = self.compute_penalty()
        return contrastive_loss + diversity_loss_weight * diversity_loss + penalty_weight * penalty

    def compute_contrastive_loss(self):
        batch_size, seq_len, num_logits = self.logits.shape
        logits = self.logits.transpose(0, 1).reshape(-1, num_logits).float()
        target_indices = logits.new_zeros((batch_size * seq_len,), dtype=torch.int64)
        return cross_entropy(logits, target_indices, reduction="sum")

    def compute_diversity_loss(self):
        batch_size, seq_len = self.logits.shape[:2]
        return self.quantizer_output.compute_loss() * batch_size * seq_len

    def compute_penalty(self):
        batch_size, seq_len = self.logits.shape[:2]
        return self.raw_features.float().pow(2).mean() * batch_size * seq_len


class Wav2Vec2Model(nn.Module):
    def __init__(self, encoder_frontend, encoder, masker, quantizer, final_dim, num_distractors=4, logit_temp=0.1):
        super().__init__()
        model_dim = encoder.layers[0].linear1.in_features
        self.encoder_frontend = encoder_frontend
        self.encoder = encoder
        self.masker = masker
        self.quantizer = quantizer
        self.final_proj = nn.Linear(model_dim, final_dim)
        self.final_target_proj = nn.Linear(quantizer.output_dim, final_dim)
        self.num_distractors = num_distractors
        self.logit_temp = logit_temp

    def forward(self, seqs, padding_mask=None):
        features = self.extract_features(seqs, padding_mask)
        return self.quantize_and_contrast(features)

    def extract_features(self, seqs, padding_mask):
        features = self.run_frontend(seqs, padding_mask)
        features.seqs = self.encoder(features.seqs)
        return features

    def run_frontend(self, seqs, padding_mask):
        frontend = self.encoder_frontend

        seqs, padding_mask, raw_features = frontend.extract_features(seqs, padding_mask)

        # We use the extracted features as context network targets after masking
        # and quantization.
        targets = seqs.clone()

        if frontend.first_pass_dropout is not None:
            targets = frontend.first_pass_dropout(targets)

        seqs, padding_mask, temporal_mask = frontend.process_features(seqs, padding_mask, self.masker)

        targets = extract_masked_elements(targets, temporal_mask)

        return Wav2Vec2Features(seqs, padding_mask, targets, temporal_mask, raw_features)

    def quantize_and_contrast(self, features):
        encoder_output, targets, temporal_mask = features.seqs, features.targets, features.temporal_mask

        seqs = extract_masked_elements(encoder_output, temporal_mask)
        seqs = self.final_proj(seqs)

        quantizer_output = self.quantizer(targets)
        targets = self.final_target_proj(quantizer_output.quantized_vectors)

        distractors = self._sample_distractors(targets)
        logits = self._compute_logits(seqs, targets, distractors)

        return Wav2Vec2Output(logits, targets, temporal_mask, quantizer_output, features.raw)

    def _sample_distractors(self, targets):
        batch_size, seq_len, model_dim = targets.shape
        targets = targets.view(-1, model_dim)
        indices = torch.arange(seq_len).repeat_interleave(self.num_distractors)
        rand_indices = torch.randint(0, seq_len - 1, (batch_size, seq_len * self.num_distractors))
        rand_indices[rand_indices >= indices] += 1
        rand_indices += torch.arange(batch_size).unsqueeze(1) * seq_len
        distractors = targets[rand_indices.view(-1)]
        return distractors.view(batch_size, seq_len, self.num_distractors, model_dim)

    def _compute_logits(self, seqs, targets, distractors):
        seqs, targets = seqs.unsqueeze(2), targets.unsqueeze(2)
        candidates = torch.cat([targets, distractors], dim=2)
        logits = torch.cosine_similarity(seqs.float(), candidates.float(), dim=-1)
        if self.logit_temp != 1.0:
            logits = logits / self.logit_temp
        distractor_is_target = (targets == distractors).all(-1)
        if distractor_is_target.any():
            logits[:, :, 1:][distractor_is_target] = -torch.inf
        return logits


def create_wav2vec2_model(model_dim=32, final_dim=16):
    feature_extractor = Wav2Vec2FeatureExtractor()
    frontend = Wav2Vec2Frontend(model_dim, feature_extractor)
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(model_dim, nhead=2, dim_feedforward=64, dropout=0.0, batch_first=True),
        num_layers=1, enable_nested_tensor=False)
    masker = Wav2Vec2Masker(model_dim)
    quantizer = GumbelVectorQuantizer(frontend.feature_dim, output_dim=model_dim)
    return Wav2Vec2Model(frontend, encoder, masker, quantizer, final_dim)


model = create_wav2vec2_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

waveforms = torch.randn(2, 400)  # (N, S) raw audio

for step in range(3):
    optimizer.zero_grad()
    output = model(waveforms)
    loss = output.compute_loss()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
