# Ingredient decoder of an image-to-recipe model: the decoder's autoregressive
# sample() collects per-step logits and returns them through `.data` (a
# PyTorch 0.3-era idiom), and the training losses are computed on those logits.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, C, NPIX, VOCAB, MAXLBL = 4, 16, 5, 12, 6
PAD = VOCAB - 1


class ImageEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, C)

    def forward(self, img):                        # img: B x NPIX x 8
        return self.proj(img).permute(0, 2, 1)     # B x C x NPIX


class IngrDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, C)
        self.attn_q = nn.Linear(C, C)
        self.linear = nn.Linear(C, VOCAB - 1)

    def forward(self, captions, img_features):
        x = self.embed_tokens(captions)[:, -1:]                    # B x 1 x C
        kv = img_features.permute(0, 2, 1)                         # B x NPIX x C
        att = torch.softmax(self.attn_q(x) @ kv.transpose(1, 2), -1)
        x = x + att @ kv
        return self.linear(x)

    def sample(self, img_features, first_token_value=0):
        fs = img_features.size(0)
        sampled_ids = [torch.full((fs,), first_token_value, dtype=torch.long)]
        logits = []
        for i in range(MAXLBL):
            outputs = self.forward(torch.stack(sampled_ids, 1), img_features)
            outputs = outputs.squeeze(1)
            if i == 0:
                predicted_mask = torch.zeros(outputs.shape)
            else:
                batch_ind = [j for j in range(fs) if sampled_ids[i][j] != 0]
                predicted_mask[batch_ind, sampled_ids[i][batch_ind]] = float('-inf')
            outputs += predicted_mask
            logits.append(outputs)
            _, predicted = F.softmax(outputs, dim=-1).max(1)
            sampled_ids.append(predicted.detach())
        sampled_ids = torch.stack(sampled_ids[1:], 1)
        logits = torch.stack(logits, 1)
        return sampled_ids, logits


def label2onehot(labels):
    one_hot = torch.zeros(labels.size(0), labels.size(1), PAD + 1)
    one_hot.scatter_(2, labels.unsqueeze(2), 1)
    one_hot, _ = one_hot.max(dim=1)
    one_hot = one_hot[:, :-1]
    one_hot[:, 0] = 0
    return one_hot


image_encoder, ingr_decoder = ImageEncoder(), IngrDecoder()
params = list(image_encoder.parameters()) + list(ingr_decoder.parameters())
optimizer = torch.optim.Adam(params, lr=1e-3)
crit_ingr = nn.BCELoss(reduction='none')
crit_eos = nn.BCELoss(reduction='none')

img = torch.randn(B, NPIX, 8)
target_ingrs = torch.randint(1, PAD, (B, MAXLBL))
target_ingrs[:, 4] = 0                                   # eos
target_ingrs[:, 5] = PAD

for step in range(2):
    img_features = image_encoder(img)
    target_one_hot = label2onehot(target_ingrs)
    ingr_ids, ingr_logits = ingr_decoder.sample(img_features)
    ingr_logits = F.softmax(ingr_logits, dim=-1)
    eos = ingr_logits[:, :, 0]
    target_eos = ((target_ingrs == 0) ^ (target_ingrs == PAD)).float()
    mask_perminv = (torch.cumsum((target_ingrs == 0).long(), 1) == 0).float()
    mask_perminv[:, 0] = 1
    ingr_probs, _ = torch.max(ingr_logits * mask_perminv.unsqueeze(-1), dim=1)
    ingr_loss = crit_ingr(ingr_probs, target_one_hot).mean(-1)
    card_penalty = torch.abs((ingr_probs * target_one_hot).sum(1) - target_one_hot.sum(1))
    eos_loss = crit_eos(eos, target_eos).mean(1)
    loss = 1000.0 * ingr_loss.mean() + 1.0 * eos_loss.mean() + 1.0 * card_penalty.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item(), ingr_decoder.linear.weight.grad.abs().sum().item())
