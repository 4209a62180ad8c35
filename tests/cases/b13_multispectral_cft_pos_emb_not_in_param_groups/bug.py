"""Cross-Modality Fusion Transformer detection (DocF/multispectral-object-detection#77): train.py builds YOLOv5's
optimizer groups from each module's `.weight` and `.bias`; the fusion transformer's learnable position embedding
`self.pos_emb` is an nn.Parameter named neither, so it is in no group: it gets a gradient and is never updated."""
import torch
import torch.nn.functional as F
from torch import nn


class SelfAttentionBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.que, self.val, self.out = (nn.Linear(d, d) for _ in range(3))
        self.key = nn.Linear(d, d, bias=False)  # a key bias cancels in the softmax
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        att = torch.softmax(self.que(h) @ self.key(h).transpose(1, 2) / h.shape[-1] ** 0.5, dim=-1)
        x = x + self.out(att @ self.val(h))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, d=16, anchors=4):
        super().__init__()
        self.pos_emb = nn.Parameter(torch.zeros(1, 2 * anchors * anchors, d))
        self.trans_blocks, self.anchors = SelfAttentionBlock(d), anchors

    def forward(self, rgb, ir):
        n, c, h, w = rgb.shape
        tokens = torch.cat([rgb.flatten(2), ir.flatten(2)], dim=2).transpose(1, 2)
        x = self.trans_blocks(tokens + self.pos_emb)
        rgb_out, ir_out = x.transpose(1, 2).split(h * w, dim=2)
        return rgb + rgb_out.reshape(n, c, h, w), ir + ir_out.reshape(n, c, h, w)


class TwoStreamYolo(nn.Module):
    def __init__(self):
        super().__init__()
        self.rgb, self.ir = (nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU())
                             for _ in range(2))
        self.fusion, self.detect = GPT(), nn.Conv2d(16, 18, 1)

    def forward(self, rgb, ir):
        r, i = self.fusion(self.rgb(rgb), self.ir(ir))
        return self.detect(r + i)

torch.manual_seed(0)
model = TwoStreamYolo()
pg0, pg1, pg2 = [], [], []  # optimizer parameter groups
for k, v in model.named_modules():
    if hasattr(v, 'bias') and isinstance(v.bias, nn.Parameter):
        pg2.append(v.bias)  # biases
    if isinstance(v, nn.BatchNorm2d):
        pg0.append(v.weight)  # no decay
    elif hasattr(v, 'weight') and isinstance(v.weight, nn.Parameter):
        pg1.append(v.weight)  # apply decay
optimizer = torch.optim.SGD(pg0, lr=0.01, momentum=0.937, nesterov=True)  # <- optimizer
optimizer.add_param_group({'params': pg1, 'weight_decay': 5e-4})
optimizer.add_param_group({'params': pg2})
rgb, ir, target = torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8), torch.randn(2, 18, 4, 4)
pos_emb_before = model.fusion.pos_emb.detach().clone()
for step in range(3):
    loss = F.mse_loss(model(rgb, ir), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"pos_emb grad norm {model.fusion.pos_emb.grad.norm():.4f}, "
      f"changed: {not torch.equal(pos_emb_before, model.fusion.pos_emb)}")
