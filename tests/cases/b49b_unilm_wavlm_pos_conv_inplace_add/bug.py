# WavLM: One of the variables needed for gradient computation has been modified by an inplace operation
# https://github.com/microsoft/unilm/issues/806  (fixed by PR #1060 "fix inplace op for BEATs and WavLM")
#
# Fine-tuning WavLM (wavlm/WavLM.py) for a downstream task: loss.backward() raises
# "one of the variables needed for gradient computation has been modified by an inplace operation".
# In TransformerEncoder.extract_features the positional conv is run on `x.transpose(1, 2)` (a view of x,
# which the weight-normed Conv1d saves for its weight gradient), and then its output is added back with
# the in-place `x += x_conv`, bumping the version of the saved input. Fix: out-of-place `x = x + x_conv`.
#
# Reconstruction: the WavLM classes are cut down (tiny config instead of the WavLM-Large checkpoint,
# a plain self-attention instead of the gated relative-position MultiheadAttention, no masking), the
# reporter's barebones snippet is kept as the main block.
import math
from typing import List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import LayerNorm

torch.manual_seed(0)
np.random.seed(0)


# ---- modules.py (trimmed) ----
class SamePad(nn.Module):
    def __init__(self, kernel_size, causal=False):
        super().__init__()
        self.remove = kernel_size - 1 if causal else (1 if kernel_size % 2 == 0 else 0)

    def forward(self, x):
        if self.remove > 0:
            x = x[:, :, : -self.remove]
        return x


class MultiheadAttention(nn.Module):
    """Stand-in for WavLM's MultiheadAttention (no relative position bias)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, self_attention=True, **kwargs):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=False, attn_mask=None,
                position_bias=None):
        T, B, C = query.shape
        q = self.q_proj(query).view(T, B * self.num_heads, self.head_dim).transpose(0, 1)
        k = self.k_proj(key).view(T, B * self.num_heads, self.head_dim).transpose(0, 1)
        v = self.v_proj(value).view(T, B * self.num_heads, self.head_dim).transpose(0, 1)
        attn = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.head_dim), dim=-1)
        out = (attn @ v).transpose(0, 1).reshape(T, B, C)
        return self.out_proj(out), None, position_bias


class WavLMConfig:
    def __init__(self, cfg=None):
        self.extractor_mode: str = "default"
        self.encoder_layers: int = 1
        self.encoder_embed_dim: int = 32
        self.encoder_ffn_embed_dim: int = 64
        self.encoder_attention_heads: int = 4
        self.activation_fn: str = "gelu"
        self.layer_norm_first: bool = False
        self.conv_feature_layers: str = "[(24,10,5)] + [(24,3,2)] * 2"
        self.conv_bias: bool = False
        self.feature_grad_mult: float = 1.0
        self.dropout: float = 0.1
        self.attention_dropout: float = 0.1
        self.activation_dropout: float = 0.0
        self.encoder_layerdrop: float = 0.0
        self.dropout_input: float = 0.0
        self.dropout_features: float = 0.0
        self.conv_pos: int = 16
        self.conv_pos_groups: int = 4
        self.relative_position_embedding: bool = False
        self.num_buckets: int = 320
        self.max_distance: int = 1280
        self.gru_rel_pos: bool = False
        if cfg is not None:
            self.update(cfg)

    def update(self, cfg: dict):
        self.__dict__.update(cfg)


# ---- WavLM.py ----
class WavLM(nn.Module):
    def __init__(self, cfg: WavLMConfig) -> None:
        super().__init__()
        self.cfg = cfg
        feature_enc_layers = eval(cfg.conv_feature_layers)
        self.embed = feature_enc_layers[-1][0]

        self.feature_extractor = ConvFeatureExtractionModel(
            conv_layers=feature_enc_layers, dropout=0.0, mode=cfg.extractor_mode, conv_bias=cfg.conv_bias,
        )
        self.post_extract_proj = (
            nn.Linear(self.embed, cfg.encoder_embed_dim) if self.embed != cfg.encoder_embed_dim else None
        )
        self.dropout_input = nn.Dropout(cfg.dropout_input)
        self.feature_grad_mult = cfg.feature_grad_mult
        self.encoder = TransformerEncoder(cfg)
        self.layer_norm = LayerNorm(self.embed)

    def extract_features(self, source, padding_mask=None, mask=False, ret_conv=False, output_layer=None,
                         ret_layer_results=False):
        if self.feature_grad_mult > 0:
            features = self.feature_extractor(source)
        else:
            with torch.no_grad():
                features = self.feature_extractor(source)

        features = features.transpose(1, 2)
        features = self.layer_norm(features)

        if self.post_extract_proj is not None:
            features = self.post_extract_proj(features)

        features = self.dropout_input(features)
        x = features

        x, layer_results = self.encoder(
            x, padding_mask=padding_mask, layer=None if output_layer is None else output_layer - 1
        )
        res = {"x": x, "padding_mask": padding_mask, "features": features, "layer_results": layer_results}
        feature = res["features"] if ret_conv else res["x"]
        if ret_layer_results:
            feature = (feature, res["layer_results"])
        return feature, res["padding_mask"]


class ConvFeatureExtractionModel(nn.Module):
    def __init__(self, conv_layers: List[Tuple[int, int, int]], dropout: float = 0.0, mode: str = "default",
                 conv_bias: bool = False):
        super().__init__()

        def block(n_in, n_out, k, stride, is_group_norm=False, conv_bias=False):
            conv = nn.Conv1d(n_in, n_out, k, stride=stride, bias=conv_bias)
            nn.init.kaiming_normal_(conv.weight)
            if is_group_norm:
                return nn.Sequential(conv, nn.Dropout(p=dropout), nn.GroupNorm(n_out, n_out, affine=True),
                                     nn.GELU())
            return nn.Sequential(conv, nn.Dropout(p=dropout), nn.GELU())

        in_d = 1
        self.conv_layers = nn.ModuleList()
        for i, (dim, k, stride) in enumerate(conv_layers):
            self.conv_layers.append(block(in_d, dim, k, stride, is_group_norm=mode == "default" and i == 0,
                                          conv_bias=conv_bias))
            in_d = dim

    def forward(self, x, mask=None):
        # BxT -> BxCxT
        x = x.unsqueeze(1)
        for conv in self.conv_layers:
            x = conv(x)
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.dropout = args.dropout
        self.embedding_dim = args.encoder_embed_dim

        self.pos_conv = nn.Conv1d(
            self.embedding_dim, self.embedding_dim, kernel_size=args.conv_pos, padding=args.conv_pos // 2,
            groups=args.conv_pos_groups,
        )
        dropout = 0
        std = math.sqrt((4 * (1.0 - dropout)) / (args.conv_pos * self.embedding_dim))
        nn.init.normal_(self.pos_conv.weight, mean=0, std=std)
        nn.init.constant_(self.pos_conv.bias, 0)

        self.pos_conv = nn.utils.weight_norm(self.pos_conv, name="weight", dim=2)
        self.pos_conv = nn.Sequential(self.pos_conv, SamePad(args.conv_pos), nn.GELU())

        self.layers = nn.ModuleList(
            [
                TransformerSentenceEncoderLayer(
                    embedding_dim=self.embedding_dim,
                    ffn_embedding_dim=args.encoder_ffn_embed_dim,
                    num_attention_heads=args.encoder_attention_heads,
                    dropout=self.dropout,
                    attention_dropout=args.attention_dropout,
                    activation_dropout=args.activation_dropout,
                    layer_norm_first=args.layer_norm_first,
                )
                for i in range(args.encoder_layers)
            ]
        )
        self.layer_norm_first = args.layer_norm_first
        self.layer_norm = LayerNorm(self.embedding_dim)
        self.layerdrop = args.encoder_layerdrop

    def forward(self, x, padding_mask=None, streaming_mask=None, layer=None):
        x, layer_results = self.extract_features(x, padding_mask, streaming_mask, layer)
        if self.layer_norm_first and layer is None:
            x = self.layer_norm(x)
        return x, layer_results

    def extract_features(self, x, padding_mask=None, streaming_mask=None, tgt_layer=None):

        if padding_mask is not None:
            x[padding_mask] = 0

        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x += x_conv  # <- inplace_saved

        if not self.layer_norm_first:
            x = self.layer_norm(x)

        x = F.dropout(x, p=self.dropout, training=self.training)

        # B x T x C -> T x B x C
        x = x.transpose(0, 1)

        layer_results = []
        pos_bias = None
        for i, layer in enumerate(self.layers):
            dropout_probability = np.random.random()
            if not self.training or (dropout_probability > self.layerdrop):
                x, z, pos_bias = layer(x, self_attn_padding_mask=padding_mask, need_weights=False,
                                       self_attn_mask=streaming_mask, pos_bias=pos_bias)

        # T x B x C -> B x T x C
        x = x.transpose(0, 1)
        return x, layer_results


class TransformerSentenceEncoderLayer(nn.Module):
    def __init__(self, embedding_dim=768, ffn_embedding_dim=3072, num_attention_heads=8, dropout=0.1,
                 attention_dropout=0.1, activation_dropout=0.1, layer_norm_first=False):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.activation_fn = F.gelu
        self.self_attn = MultiheadAttention(self.embedding_dim, num_attention_heads, dropout=attention_dropout,
                                            self_attention=True)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(activation_dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.layer_norm_first = layer_norm_first
        self.self_attn_layer_norm = LayerNorm(self.embedding_dim)
        self.fc1 = nn.Linear(self.embedding_dim, ffn_embedding_dim)
        self.fc2 = nn.Linear(ffn_embedding_dim, self.embedding_dim)
        self.final_layer_norm = LayerNorm(self.embedding_dim)

    def forward(self, x, self_attn_mask=None, self_attn_padding_mask=None, need_weights=False, pos_bias=None):
        residual = x
        x, attn, pos_bias = self.self_attn(query=x, key=x, value=x, key_padding_mask=self_attn_padding_mask,
                                           need_weights=need_weights, attn_mask=self_attn_mask,
                                           position_bias=pos_bias)
        x = self.dropout1(x)
        x = residual + x
        x = self.self_attn_layer_norm(x)

        residual = x
        x = self.activation_fn(self.fc1(x))
        x = self.dropout2(x)
        x = self.fc2(x)
        x = self.dropout3(x)
        x = residual + x
        x = self.final_layer_norm(x)
        return x, attn, pos_bias


# ---- reporter's barebones snippet (checkpoint replaced by a tiny random config) ----
if __name__ == "__main__":
    torch.autograd.set_detect_anomaly(True)

    cfg = WavLMConfig()
    model = WavLM(cfg)
    model.train()

    wav_input_16khz = torch.randn(2, 2000)
    y_hat, _ = model.extract_features(wav_input_16khz)

    D = cfg.encoder_embed_dim
    loss = F.cross_entropy(y_hat.reshape(-1, D), torch.ones((y_hat.reshape(-1, D).size(0)), dtype=torch.long))
    loss.backward()
    print("pos_conv weight_v grad norm:", model.encoder.pos_conv[0].weight_v.grad.norm().item())
