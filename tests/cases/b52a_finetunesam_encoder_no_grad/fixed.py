# Report: "About the effect of args.if_update_encoder"
#   https://github.com/mazurowski-lab/finetune-SAM/issues/5
# What went wrong: in SingleGPU_train_finetune_noprompt.py the SAM image encoder is always
#   run inside `with torch.no_grad():`. With finetune_type='vanilla' and
#   if_update_encoder=True the encoder parameters keep requires_grad=True and are in the
#   AdamW optimizer, but no gradient ever reaches them: only the mask decoder is updated.
# Fix (maintainer's answer, then the script): run the encoder with grad when
#   args.if_update_encoder is set, keep torch.no_grad() only for the frozen-encoder case.
# Plain-torch reduction: a tiny SAM (image_encoder / prompt_encoder / mask_decoder) built
#   from a config, random images and masks, monai DiceLoss rewritten in torch.
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)

args = SimpleNamespace(arch="vit_t", finetune_type="vanilla", if_update_encoder=True, num_cls=3,
                       lr=1e-3, out_size=16, b=2, if_warmup=False, warmup_period=10)


class PatchEmbed(nn.Module):
    def __init__(self, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).permute(0, 2, 3, 1)  # B H W C


class ImageEncoderViT(nn.Module):
    def __init__(self, img_size=64, patch_size=4, embed_dim=32, out_chans=16):
        super().__init__()
        self.patch_embed = PatchEmbed(patch_size, 3, embed_dim)
        self.block = nn.Sequential(nn.LayerNorm(embed_dim), nn.Linear(embed_dim, embed_dim), nn.GELU())
        self.neck = nn.Conv2d(embed_dim, out_chans, kernel_size=1, bias=False)

    def forward(self, x):
        x = self.patch_embed(x)
        x = x + self.block(x)
        return self.neck(x.permute(0, 3, 1, 2))


class PromptEncoder(nn.Module):
    def __init__(self, embed_dim=16, image_embedding_size=(16, 16)):
        super().__init__()
        self.image_embedding_size = image_embedding_size
        self.no_mask_embed = nn.Embedding(1, embed_dim)
        self.register_buffer("positional_encoding_gaussian_matrix", torch.randn(2, embed_dim // 2))
        self.embed_dim = embed_dim

    def get_dense_pe(self):
        h, w = self.image_embedding_size
        grid = torch.ones((h, w))
        y = (grid.cumsum(dim=0) - 0.5) / h
        x = (grid.cumsum(dim=1) - 0.5) / w
        coords = torch.stack([x, y], dim=-1) * 2 - 1
        coords = 2 * torch.pi * (coords @ self.positional_encoding_gaussian_matrix)
        pe = torch.cat([torch.sin(coords), torch.cos(coords)], dim=-1)
        return pe.permute(2, 0, 1).unsqueeze(0)

    def forward(self, points, boxes, masks):
        bs = 1
        sparse_embeddings = torch.empty((bs, 0, self.embed_dim))
        dense_embeddings = self.no_mask_embed.weight.reshape(1, -1, 1, 1).expand(bs, -1, *self.image_embedding_size)
        return sparse_embeddings, dense_embeddings


class MaskDecoder(nn.Module):
    def __init__(self, transformer_dim=16, num_multimask_outputs=3):
        super().__init__()
        self.mix = nn.Conv2d(transformer_dim, transformer_dim, kernel_size=3, padding=1)
        self.output_hypernetworks = nn.Conv2d(transformer_dim, num_multimask_outputs, kernel_size=1)
        self.iou_prediction_head = nn.Linear(transformer_dim, num_multimask_outputs)

    def forward(self, image_embeddings, image_pe, sparse_prompt_embeddings, dense_prompt_embeddings,
                multimask_output):
        src = image_embeddings + dense_prompt_embeddings + image_pe
        src = F.gelu(self.mix(src))
        masks = self.output_hypernetworks(src)
        iou_pred = self.iou_prediction_head(src.mean(dim=(2, 3)))
        return masks, iou_pred


class Sam(nn.Module):
    def __init__(self, image_encoder, prompt_encoder, mask_decoder):
        super().__init__()
        self.image_encoder = image_encoder
        self.prompt_encoder = prompt_encoder
        self.mask_decoder = mask_decoder


def build_sam_vit_t(args, checkpoint=None, num_classes=3):
    return Sam(ImageEncoderViT(), PromptEncoder(), MaskDecoder(num_multimask_outputs=num_classes))


sam_model_registry = {"vit_t": build_sam_vit_t}


class DiceLoss(nn.Module):
    """monai.losses.DiceLoss(sigmoid=True, squared_pred=True, to_onehot_y=True, reduction='mean')"""

    def forward(self, input, target):
        input = torch.sigmoid(input)
        target = F.one_hot(target[:, 0].long(), input.shape[1]).permute(0, 3, 1, 2).float()
        reduce_axis = [2, 3]
        intersection = torch.sum(target * input, dim=reduce_axis)
        denominator = torch.sum(target ** 2, dim=reduce_axis) + torch.sum(input ** 2, dim=reduce_axis)
        f = 1.0 - (2.0 * intersection + 1e-5) / (denominator + 1e-5)
        return f.mean()


def train_model(trainloader, epochs):
    b_lr = args.lr
    sam = sam_model_registry[args.arch](args, checkpoint=None, num_classes=args.num_cls)
    if args.finetune_type == "vanilla" and args.if_update_encoder == False:
        for n, value in sam.image_encoder.named_parameters():
            value.requires_grad = False

    optimizer = optim.AdamW(sam.parameters(), lr=b_lr, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.1, amsgrad=False)
    optimizer.zero_grad()
    criterion1 = DiceLoss()
    criterion2 = nn.CrossEntropyLoss()

    for epoch in range(epochs):
        sam.train()
        for i, data in enumerate(trainloader):
            imgs = data["image"]
            msks = F.interpolate(data["mask"], size=(args.out_size, args.out_size), mode="nearest")

            if args.if_update_encoder:
                img_emb = sam.image_encoder(imgs)
            else:
                with torch.no_grad():
                    img_emb = sam.image_encoder(imgs)

            # get default embeddings
            sparse_emb, dense_emb = sam.prompt_encoder(
                points=None,
                boxes=None,
                masks=None,
            )
            pred, _ = sam.mask_decoder(
                image_embeddings=img_emb,
                image_pe=sam.prompt_encoder.get_dense_pe(),
                sparse_prompt_embeddings=sparse_emb,
                dense_prompt_embeddings=dense_emb,
                multimask_output=True,
            )
            loss_dice = criterion1(pred, msks.float())
            loss_ce = criterion2(pred, torch.squeeze(msks.long(), 1))
            loss = loss_dice + loss_ce

            loss.backward()
            print("image_encoder.patch_embed.proj.weight.grad is None:", sam.image_encoder.patch_embed.proj.weight.grad is None)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            print("epoch", epoch, "iter", i, "loss", loss.item())


trainloader = [
    {"image": torch.randn(args.b, 3, 64, 64), "mask": torch.randint(0, args.num_cls, (args.b, 1, 64, 64)).float()}
    for _ in range(2)
]
train_model(trainloader, epochs=1)
