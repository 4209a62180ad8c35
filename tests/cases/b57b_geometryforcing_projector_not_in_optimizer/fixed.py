# Report: "Learnable parameters are not added to the optimizer, no real training can happen!"
#   https://github.com/CIntellifusion/GeometryForcing/issues/13
# What went wrong: Geometry Forcing aligns the video diffusion model's intermediate
#   features to a frozen VGGT teacher through learnable projectors
#   (VGGTAlignmentLoss.projectors). DFoTGeometryForcing inherited configure_optimizers
#   from DFoTVideo, which builds AdamW from self.diffusion_model.parameters() only, so
#   the projectors got gradients but were never stepped: they stayed at their random init.
# Fix (maintainer, in the thread): override configure_optimizers in DFoTGeometryForcing
#   with transition_params = list(self.parameters()) so the projectors are optimized.
# Plain-torch reconstruction: Lightning's LightningModule/Trainer, the U-ViT backbone and
#   VGGT are tiny stand-ins with the project's names; data are random tensors.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def mean_flat(x):
    return torch.mean(x, dim=list(range(1, len(x.size()))))


class VGGT(nn.Module):
    """Stand-in for the frozen VGGT-1B teacher: returns one token map per layer."""

    def __init__(self, num_layers=4, tokens=16, embed_dim=8):
        super().__init__()
        self.tokens, self.embed_dim = tokens, embed_dim
        self.blocks = nn.ModuleList(nn.Conv2d(3, embed_dim, 3, padding=1) for _ in range(num_layers))

    def shortcut_forward(self, images):
        b, t = images.shape[:2]
        x = images.flatten(0, 1)
        side = int(self.tokens ** 0.5)
        out = []
        for blk in self.blocks:
            f = F.adaptive_avg_pool2d(blk(x), side)                 # [BT, D, s, s]
            out.append(f.flatten(2).transpose(1, 2).reshape(b, t, self.tokens, self.embed_dim))
        return out, 1


class ConvProjector(nn.Module):
    def __init__(self, in_channels, in_h, in_w, out_h, out_w, mid_channels=16, out_channels=4):
        super().__init__()
        self.out_h, self.out_w = out_h, out_w
        self.conv1 = nn.Conv2d(in_channels, mid_channels, 3, padding=1)
        self.conv2 = nn.Conv2d(mid_channels, out_channels, 1)

    def forward(self, x):
        x = F.silu(self.conv1(x))
        x = F.interpolate(x, size=(self.out_h, self.out_w), mode="bilinear", align_corners=False)
        return self.conv2(x)


class VGGTAlignmentLoss(nn.Module):
    def __init__(self, alignment_context_length=4, latents_info=None, encoder_info=(4, 16, 8), mid_channels=16):
        super().__init__()
        self.alignment_context_length = alignment_context_length
        self.vggt_model = VGGT(num_layers=encoder_info[0], tokens=encoder_info[1], embed_dim=encoder_info[2])
        self.vggt_model.eval()
        for p in self.vggt_model.parameters():
            p.requires_grad = False
        self.latents_info = latents_info
        self.encoder_info = encoder_info
        self.projectors = nn.ModuleList()
        for c, h, w in self.latents_info:
            self.projectors.append(ConvProjector(c, h, w, encoder_info[1], encoder_info[2], mid_channels, encoder_info[0]))

    def forward(self, latents, images):
        images = images[:, :self.alignment_context_length]
        with torch.no_grad():
            aggregated_tokens_list, patch_start_idx = self.vggt_model.shortcut_forward(images)
            target_feats = torch.stack(aggregated_tokens_list, dim=2)  # [B, T, L, tokens, D]
        alignment_loss = 0.
        for latent, projector in zip(latents, self.projectors):
            latent = latent[:, :self.alignment_context_length].flatten(0, 1)
            target_feat = target_feats.flatten(0, 1)
            latent_proj = projector(latent)
            latent_proj_norm = F.normalize(latent_proj.flatten(2), p=2, dim=-1)
            target_feat_norm = F.normalize(target_feat.flatten(2), p=2, dim=-1)
            alignment_loss += mean_flat(-(latent_proj_norm * target_feat_norm)).sum(dim=-1)
        alignment_loss /= len(latents)
        return alignment_loss


class Diffusion(nn.Module):
    """Stand-in for the DFoT diffusion model with a small U-ViT-like backbone."""

    def __init__(self, channels=3, width=8):
        super().__init__()
        self.enc = nn.Conv2d(channels + 1, width, 3, padding=1)
        self.mid = nn.Conv2d(width, width, 3, padding=1)
        self.out = nn.Conv2d(width, channels, 3, padding=1)

    def forward_with_alignment_loss(self, xs, conditions, k):
        b, t = xs.shape[:2]
        noise = torch.randn_like(xs)
        alpha = (1 - k.float() / 10).view(b, t, 1, 1, 1)
        x_noisy = alpha * xs + (1 - alpha) * noise
        h = torch.cat([x_noisy, conditions], dim=2).flatten(0, 1)
        h1 = F.silu(self.enc(h))
        h2 = F.silu(self.mid(h1))
        xs_pred = self.out(h2).view_as(xs)
        loss = F.mse_loss(xs_pred, xs, reduction="none")
        latents_list = [h2.view(b, t, *h2.shape[1:])]
        return xs_pred, loss, latents_list


class DFoTVideo(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.diffusion_model = Diffusion()

    def _get_training_noise_levels(self, xs, masks):
        return torch.randint(0, 10, xs.shape[:2]), masks

    def _reweight_loss(self, loss, masks):
        return loss.mean()

    def configure_optimizers(self):
        transition_params = list(self.diffusion_model.parameters())
        optimizer_dynamics = torch.optim.AdamW(
            transition_params,
            lr=self.cfg["lr"],
            weight_decay=self.cfg["weight_decay"],
            betas=self.cfg["optimizer_beta"],
        )
        return optimizer_dynamics


class DFoTVideoPose(DFoTVideo):
    def _process_conditions(self, conditions, noise_levels=None):
        b, t = conditions.shape[:2]
        return conditions[..., :1].view(b, t, 1, 1, 1).expand(b, t, 1, 8, 8)


class DFoTGeometryForcing(DFoTVideoPose):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.build_alignment_module(cfg)

    def build_alignment_module(self, cfg):
        alignment_dict = dict(cfg["alignment"])
        self.alignment_coeff = alignment_dict.pop("alignment_coeff", 0.5)
        self.vggt_alignment_loss = VGGTAlignmentLoss(**alignment_dict)

    def alignment_loss(self, latents_list, context_images):
        return self.vggt_alignment_loss(latents_list, context_images)

    def training_step(self, batch, batch_idx):
        xs, conditions, masks = batch
        noise_levels, masks = self._get_training_noise_levels(xs, masks)
        xs_pred, loss, latents_list = self.diffusion_model.forward_with_alignment_loss(
            xs, self._process_conditions(conditions), k=noise_levels)
        diffusion_loss_mean = self._reweight_loss(loss, masks)
        alignment_loss = self.alignment_loss(latents_list, xs.clamp(0, 1))
        alignment_loss_mean = alignment_loss.mean()
        loss = diffusion_loss_mean + alignment_loss_mean * self.alignment_coeff
        return {"loss": loss}

    def configure_optimizers(self):
        transition_params = list(self.parameters())
        print(f"[DFoTGeometryForcing] PUT Projector Into OPtimizer")
        print(f"[DFoTGeometryForcing] Number of trainable parameters: {sum(p.numel() for p in transition_params if p.requires_grad)}")
        optimizer_dynamics = torch.optim.AdamW(
            transition_params,
            lr=self.cfg["lr"],
            weight_decay=self.cfg["weight_decay"],
            betas=self.cfg["optimizer_beta"],
        )
        return optimizer_dynamics


class Trainer:
    """Minimal stand-in for Lightning's automatic optimization loop."""

    def fit(self, module, batches):
        optimizer = module.configure_optimizers()
        for batch_idx, batch in enumerate(batches):
            out = module.training_step(batch, batch_idx)
            optimizer.zero_grad()
            out["loss"].backward()
            optimizer.step()
        return optimizer


cfg = {
    "lr": 1e-2, "weight_decay": 0.0, "optimizer_beta": (0.9, 0.99),
    "alignment": {"alignment_coeff": 0.5, "alignment_context_length": 4,
                  "latents_info": [[8, 8, 8]], "encoder_info": (4, 16, 8), "mid_channels": 16},
}
model = DFoTGeometryForcing(cfg)
batches = [(torch.rand(2, 4, 3, 8, 8), torch.randn(2, 4, 12), None) for _ in range(5)]

projector_before = model.vggt_alignment_loss.projectors[0].conv1.weight.detach().clone()
backbone_before = model.diffusion_model.mid.weight.detach().clone()
Trainer().fit(model, batches)
print("diffusion_model.mid.weight change:", (model.diffusion_model.mid.weight - backbone_before).abs().max().item())
print("projectors[0].conv1.weight change:", (model.vggt_alignment_loss.projectors[0].conv1.weight - projector_before).abs().max().item())
