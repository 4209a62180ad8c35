# Report: s3prl/s3prl issue #369 "RuntimeError while distilling Hubert"
#   https://github.com/s3prl/s3prl/issues/369
# Training DistilHuBERT (upstream/distiller), loss.backward() raised
#   "one of the variables needed for gradient computation has been modified by an
#    inplace operation: [torch.cuda.FloatTensor [12, 768, 499]], which is output 0 of
#    AsStridedBackward0 ..."
# TransformerEncoder.extract_features() feeds x.transpose(1, 2) (a view of x) to the
# positional conv, which saves it for backward, then adds the conv output back into x in
# place: `x += x_conv`. The fix (reporter's comment, now in the repository):
# `x = x + x_conv`.
# Tiny model and random "waveforms"; the teacher is a frozen random network.
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class SamePad(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.remove = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        if self.remove > 0:
            x = x[:, :, : -self.remove]
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, embedding_dim=16, conv_pos=4, conv_pos_groups=4):
        super().__init__()
        self.dropout = 0.1
        self.embedding_dim = embedding_dim
        self.pos_conv = nn.Conv1d(
            self.embedding_dim,
            self.embedding_dim,
            kernel_size=conv_pos,
            padding=conv_pos // 2,
            groups=conv_pos_groups,
        )
        self.pos_conv = nn.Sequential(self.pos_conv, SamePad(conv_pos), nn.GELU())
        self.layers = nn.ModuleList(
            [nn.TransformerEncoderLayer(embedding_dim, 2, 32, dropout=0.0)]
        )
        self.layer_norm = nn.LayerNorm(self.embedding_dim)

    def forward(self, x, padding_mask=None):
        return self.extract_features(x, padding_mask)

    def extract_features(self, x, padding_mask=None):
        if padding_mask is not None:
            x[padding_mask] = 0

        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x = x + x_conv

        x = self.layer_norm(x)
        x = F.dropout(x, p=self.dropout, training=self.training)

        # B x T x C -> T x B x C
        x = x.transpose(0, 1)
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding_mask)
        # T x B x C -> B x T x C
        x = x.transpose(0, 1)
        return x


class DistillerModel(nn.Module):
    def __init__(self, feat_emb_dim=8, encoder_embed_dim=16, final_dim=12):
        super().__init__()
        self.feature_extractor = nn.Sequential(nn.Conv1d(1, feat_emb_dim, 10, 5), nn.GELU())
        self.post_extract_proj = nn.Linear(feat_emb_dim, encoder_embed_dim)
        self.encoder = TransformerEncoder(encoder_embed_dim)
        self.output_layer = nn.Linear(encoder_embed_dim, final_dim)

    def forward(self, wave, pad_mask):
        feat = self.feature_extractor(wave.unsqueeze(1))
        feat = feat.transpose(1, 2)  # B x T x D
        feat_final = self.post_extract_proj(feat)
        hidden = self.encoder(feat_final, ~pad_mask.bool())
        pred = self.output_layer(hidden)
        return feat, feat_final, pred, pad_mask


student = DistillerModel()
teacher = nn.Sequential(nn.Conv1d(1, 12, 10, 5), nn.GELU())  # frozen teacher
for p in teacher.parameters():
    p.requires_grad = False
optimizer = torch.optim.AdamW(student.parameters(), lr=2e-4)

wave = torch.randn(2, 105)
for step in range(2):
    pad_mask = torch.ones(2, 20)
    pad_mask[1, 15:] = 0
    with torch.no_grad():
        teacher_hidden = teacher(wave.unsqueeze(1)).transpose(1, 2)
    feat, feat_final, pred, pad_mask = student(wave, pad_mask)
    rec_loss = F.l1_loss(pred, teacher_hidden)
    sim_loss = -F.logsigmoid(F.cosine_similarity(pred, teacher_hidden, dim=-1)).mean()
    loss = rec_loss + sim_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", loss.item())
