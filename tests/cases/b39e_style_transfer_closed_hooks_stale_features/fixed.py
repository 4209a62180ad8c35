# Gatys style transfer with forward hooks on a frozen VGG (shape of the fastai
# courses/dl2/style-transfer notebook): "style match" run, hooks closed, then the
# "style transfer" run re-uses the closed SaveFeatures objects.
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

torch.manual_seed(0)

m_vgg = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
).eval()
for p in m_vgg.parameters():  # set_trainable(m_vgg, False)
    p.requires_grad = False
children = list(m_vgg.children())
block_ends = [i - 1 for i, o in enumerate(children) if isinstance(o, nn.MaxPool2d)]

img_tfm = torch.rand(3, 32, 32)
style_tfm = torch.rand(3, 32, 32)


class SaveFeatures():
    features = None
    def __init__(self, m): self.hook = m.register_forward_hook(self.hook_fn)
    def hook_fn(self, module, input, output): self.features = output
    def close(self): self.hook.remove()


def get_opt():
    opt_img = torch.rand(1, 3, 32, 32) / 2
    opt_img_v = opt_img.requires_grad_(True)
    return opt_img_v, optim.LBFGS([opt_img_v], max_iter=3)


def step(loss_fn):
    global n_iter
    optimizer.zero_grad()
    loss = loss_fn(opt_img_v)
    loss.backward()
    n_iter += 1
    return loss


def gram(input):
    b, c, h, w = input.size()
    x = input.view(b * c, -1)
    return torch.mm(x, x.t()) / input.numel() * 1e6


def gram_mse_loss(input, target): return F.mse_loss(gram(input), gram(target))


max_iter = 3

# ## Style match
opt_img_v, optimizer = get_opt()
sfs = [SaveFeatures(children[idx]) for idx in block_ends]
with torch.no_grad():
    m_vgg(img_tfm[None])
targ_vs = [o.features.clone() for o in sfs]
with torch.no_grad():
    m_vgg(style_tfm[None])
targ_styles = [o.features.clone() for o in sfs]


def style_loss(x):
    m_vgg(opt_img_v)
    outs = [o.features for o in sfs]
    losses = [gram_mse_loss(o, s) for o, s in zip(outs, targ_styles)]
    return sum(losses)


n_iter = 0
while n_iter <= max_iter: optimizer.step(partial(step, style_loss))
print("style match done, n_iter", n_iter)

for sf in sfs: sf.close()

# ## Style transfer
opt_img_v, optimizer = get_opt()
sfs = [SaveFeatures(children[idx]) for idx in block_ends]


def comb_loss(x):
    m_vgg(opt_img_v)
    outs = [o.features for o in sfs]
    losses = [gram_mse_loss(o, s) for o, s in zip(outs, targ_styles)]
    cnt_loss = F.mse_loss(outs[3], targ_vs[3]) * 1000000
    style_loss = sum(losses)
    return cnt_loss + style_loss


n_iter = 0
while n_iter <= max_iter: optimizer.step(partial(step, comb_loss))
print("style transfer done; opt_img_v.grad is None:", opt_img_v.grad is None)
