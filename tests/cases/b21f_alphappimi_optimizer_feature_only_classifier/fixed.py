"""AlphaPPIMI (Bigrock-dd/AlphaPPIMI#1, https://github.com/Bigrock-dd/AlphaPPIMI/issues/1): in domain-adaptation
training the feature extractor (modulator_proj / fingerprint_proj / ppi_proj, the cross-attention layers,
feature_fusion) never changes: only the classifier and the domain discriminator learn, so the gradient reversal
layer cannot make the features domain-invariant.
Why: main.py builds optimizer_feature from list(PPIMI_model.classifier.parameters()) only; the feature extractor's
parameters get gradients (from ce_loss and, reversed by the GRL, from domain_loss) but are in no optimizer.
Fix (the reporter): give optimizer_feature the whole backbone (every parameter except the domain discriminator's).
Stand-ins: dimensions cut down, one cross-attention layer per branch, random tensors instead of the PPIMI datasets."""
import torch
import torch.nn as nn

FLOOD_LEVEL = 0.13


class GradientReversalFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambda_):
        ctx.lambda_ = lambda_
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.lambda_, None


class GradientReversalLayer(nn.Module):
    def __init__(self, lambda_=1.0):
        super().__init__()
        self.lambda_ = lambda_

    def forward(self, x):
        return GradientReversalFunction.apply(x, self.lambda_)


class DomainDiscriminator(nn.Module):
    def __init__(self, in_dim):
        super().__init__()
        self.disc = nn.Sequential(nn.Linear(in_dim, in_dim // 2), nn.ReLU(), nn.Linear(in_dim // 2, 1), nn.Sigmoid())

    def forward(self, x):
        return self.disc(x)


class CrossAttentionFeatureFusion(nn.Module):
    def __init__(self, hidden_dim, dropout=0.1):
        super().__init__()
        self.gate = nn.Sequential(nn.Linear(hidden_dim * 2, hidden_dim), nn.Sigmoid())
        self.fusion = nn.Sequential(nn.Linear(hidden_dim * 2, hidden_dim), nn.LayerNorm(hidden_dim), nn.ReLU(), nn.Dropout(dropout))

    def forward(self, x1, x2):
        combined = torch.cat([x1, x2], dim=-1)
        gate = self.gate(combined)
        fused = self.fusion(combined)
        return gate * x1 + (1 - gate) * fused


class CrossAttentionLayer(nn.Module):
    def __init__(self, hidden_dim, nhead, dropout=0.1):
        super().__init__()
        self.cross_attention = nn.MultiheadAttention(hidden_dim, nhead, dropout=dropout)
        self.norm = nn.LayerNorm(hidden_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key_value):
        attn_output, _ = self.cross_attention(query, key_value, key_value)
        return self.norm(query + self.dropout(attn_output))


class CrossAttentionPPIMI(nn.Module):
    def __init__(self, modulator_emb_dim, ppi_emb_dim, fingerprint_dim, nhead=2, dropout=0.2, grl_lambda=1.0):
        super().__init__()
        hidden_dim = 16
        self.modulator_proj = nn.Sequential(nn.Linear(modulator_emb_dim, hidden_dim), nn.LayerNorm(hidden_dim))
        self.fingerprint_proj = nn.Sequential(nn.Linear(fingerprint_dim, hidden_dim), nn.LayerNorm(hidden_dim))
        self.ppi_proj = nn.Sequential(nn.Linear(ppi_emb_dim, hidden_dim), nn.LayerNorm(hidden_dim))
        self.mod_fp_cross_attention = CrossAttentionLayer(hidden_dim, nhead, dropout)
        self.mod_ppi_cross_attention = CrossAttentionLayer(hidden_dim, nhead, dropout)
        self.feature_fusion = CrossAttentionFeatureFusion(hidden_dim, dropout)
        self.classifier = nn.Sequential(nn.Linear(hidden_dim, 8), nn.LayerNorm(8), nn.GELU(), nn.Dropout(dropout), nn.Linear(8, 2))
        self.grl = GradientReversalLayer(lambda_=grl_lambda)
        self.domain_discriminator = DomainDiscriminator(hidden_dim)

    def forward(self, modulator, fingerprints, ppi_feats, domain_label=False):
        mod_feats = self.modulator_proj(modulator).unsqueeze(0)
        fp_feats = self.fingerprint_proj(fingerprints).unsqueeze(0)
        ppi_feats = self.ppi_proj(ppi_feats).unsqueeze(0)
        mod_feats = self.mod_fp_cross_attention(mod_feats, fp_feats)
        mod_feats = self.mod_ppi_cross_attention(mod_feats, ppi_feats)
        mod_feats, fp_feats, ppi_feats = mod_feats.squeeze(0), fp_feats.squeeze(0), ppi_feats.squeeze(0)
        fused_mod = self.feature_fusion(mod_feats, fp_feats)
        fused_feats = self.feature_fusion(fused_mod, ppi_feats)
        logits = self.classifier(fused_feats)
        if domain_label:
            reversed_feats = self.grl(fused_feats)
            domain_pred = self.domain_discriminator(reversed_feats)
            return logits, domain_pred
        else:
            l2_loss = 0.0
            for param in self.parameters():
                l2_loss += torch.norm(param)
            return logits, 0.0001 * l2_loss


def train_with_domain_adaptation(PPIMI_model, source_batches, target_batches, optimizer_feature, optimizer_domain,
                                 criterion, domain_criterion, domain_lambda=0.1):
    PPIMI_model.train()
    for source_batch, target_batch in zip(source_batches, target_batches):
        s_fingerprint, s_protein_feats, s_atomic_reprs, s_label = source_batch
        t_fingerprint, t_protein_feats, t_atomic_reprs = target_batch
        s_domain_label = torch.ones(s_fingerprint.size(0), 1)
        t_domain_label = torch.zeros(t_fingerprint.size(0), 1)

        # 1. Train domain discriminator
        optimizer_domain.zero_grad()
        s_logits, s_domain_pred = PPIMI_model(modulator=s_atomic_reprs, fingerprints=s_fingerprint, ppi_feats=s_protein_feats, domain_label=True)
        t_logits, t_domain_pred = PPIMI_model(modulator=t_atomic_reprs, fingerprints=t_fingerprint, ppi_feats=t_protein_feats, domain_label=True)
        domain_pred = torch.cat([s_domain_pred, t_domain_pred], dim=0)
        domain_label = torch.cat([s_domain_label, t_domain_label], dim=0)
        d_loss = domain_criterion(domain_pred, domain_label)
        d_loss.backward()
        optimizer_domain.step()

        # 2. Train feature extractor and classifier
        optimizer_feature.zero_grad()
        s_logits, s_domain_pred = PPIMI_model(modulator=s_atomic_reprs, fingerprints=s_fingerprint, ppi_feats=s_protein_feats, domain_label=True)
        t_logits, t_domain_pred = PPIMI_model(modulator=t_atomic_reprs, fingerprints=t_fingerprint, ppi_feats=t_protein_feats, domain_label=True)
        ce_loss = criterion(s_logits.view(-1, 2), s_label.view(-1))
        domain_pred = torch.cat([s_domain_pred, t_domain_pred], dim=0)
        domain_loss = domain_criterion(domain_pred, domain_label)
        total_main_loss = ce_loss + domain_lambda * domain_loss
        flooded_loss = torch.abs(total_main_loss - FLOOD_LEVEL) + FLOOD_LEVEL
        final_loss = flooded_loss
        final_loss.backward()
        optimizer_feature.step()
        print(f"ce_loss={ce_loss.item():.4f} domain_loss={domain_loss.item():.4f} d_loss={d_loss.item():.4f}")


torch.manual_seed(36)
learning_rate = 0.0005
PPIMI_model = CrossAttentionPPIMI(modulator_emb_dim=12, fingerprint_dim=10, ppi_emb_dim=14, grl_lambda=1.0)
criterion = nn.CrossEntropyLoss()
domain_criterion = nn.BCELoss()
optimizer_feature = torch.optim.AdamW([p for n, p in PPIMI_model.named_parameters() if not n.startswith("domain_discriminator")], lr=learning_rate)
optimizer_domain = torch.optim.AdamW(PPIMI_model.domain_discriminator.parameters(), lr=learning_rate * 10)

source_batches = [(torch.randn(4, 10), torch.randn(4, 14), torch.randn(4, 12), torch.randint(0, 2, (4,))) for _ in range(3)]
target_batches = [(torch.randn(4, 10), torch.randn(4, 14), torch.randn(4, 12)) for _ in range(3)]
before = PPIMI_model.modulator_proj[0].weight.detach().clone()
train_with_domain_adaptation(PPIMI_model, source_batches, target_batches, optimizer_feature, optimizer_domain,
                             criterion, domain_criterion, domain_lambda=0.1)
print("modulator_proj has grad:", PPIMI_model.modulator_proj[0].weight.grad is not None)
print("modulator_proj changed:", not torch.equal(before, PPIMI_model.modulator_proj[0].weight))
