# `build_optimizer()` assign all parameters
# https://github.com/ultralytics/ultralytics/pull/2855
#
# What went wrong: BaseTrainer.build_optimizer() sorted parameters into the three
# optimizer groups by looking only at module attributes called `.weight` / `.bias`
# (`hasattr(v, 'weight') and isinstance(v.weight, nn.Parameter)`). Parameters that
# are not named exactly `weight`/`bias` -- e.g. nn.MultiheadAttention's
# `in_proj_weight` / `in_proj_bias` used by the RT-DETR AIFI transformer encoder
# layer -- were put in no parameter group, so they got gradients but never changed.
# Fix (PR #2855): iterate `model.named_modules()` and each module's
# `named_parameters(recurse=False)` and put *every* parameter into a group.
import torch
import torch.nn as nn

torch.manual_seed(0)


def colorstr(s):
    return s


class Conv(nn.Module):
    """ultralytics.nn.modules.conv.Conv: conv + bn + SiLU."""

    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class TransformerEncoderLayer(nn.Module):
    """ultralytics.nn.modules.transformer.TransformerEncoderLayer (post-norm path)."""

    def __init__(self, c1, cm=64, num_heads=2, dropout=0.0, act=nn.GELU()):
        super().__init__()
        self.ma = nn.MultiheadAttention(c1, num_heads, dropout=dropout, batch_first=True)
        self.fc1 = nn.Linear(c1, cm)
        self.fc2 = nn.Linear(cm, c1)
        self.norm1 = nn.LayerNorm(c1)
        self.norm2 = nn.LayerNorm(c1)
        self.act = act

    @staticmethod
    def with_pos_embed(tensor, pos=None):
        return tensor if pos is None else tensor + pos

    def forward(self, src, pos=None):
        q = k = self.with_pos_embed(src, pos)
        src2 = self.ma(q, k, value=src)[0]
        src = self.norm1(src + src2)
        src2 = self.fc2(self.act(self.fc1(src)))
        return self.norm2(src + src2)


class AIFI(TransformerEncoderLayer):
    """RT-DETR attention-based intra-scale feature interaction."""

    def forward(self, x):
        c, h, w = x.shape[1:]
        pos_embed = self.build_2d_sincos_position_embedding(w, h, c)
        x = super().forward(x.flatten(2).permute(0, 2, 1), pos=pos_embed.to(device=x.device, dtype=x.dtype))
        return x.permute(0, 2, 1).view([-1, c, h, w]).contiguous()

    @staticmethod
    def build_2d_sincos_position_embedding(w, h, embed_dim=256, temperature=10000.0):
        grid_w = torch.arange(int(w), dtype=torch.float32)
        grid_h = torch.arange(int(h), dtype=torch.float32)
        grid_w, grid_h = torch.meshgrid(grid_w, grid_h, indexing='ij')
        pos_dim = embed_dim // 4
        omega = torch.arange(pos_dim, dtype=torch.float32) / pos_dim
        omega = 1. / (temperature ** omega)
        out_w = grid_w.flatten()[..., None] @ omega[None]
        out_h = grid_h.flatten()[..., None] @ omega[None]
        return torch.cat([torch.sin(out_w), torch.cos(out_w), torch.sin(out_h), torch.cos(out_h)], 1)[None]


class RTDETRDetectionModel(nn.Module):
    """Tiny stand-in: backbone convs -> AIFI encoder -> 1x1 prediction conv."""

    def __init__(self, nc=4):
        super().__init__()
        self.model = nn.Sequential(Conv(3, 16, 3, 2), Conv(16, 32, 3, 2), AIFI(32, 64, 2), nn.Conv2d(32, nc + 4, 1))

    def forward(self, x):
        return self.model(x)


class BaseTrainer:

    @staticmethod
    def build_optimizer(model, name='Adam', lr=0.001, momentum=0.9, decay=1e-5):
        g = [], [], []  # optimizer parameter groups
        bn = tuple(v for k, v in nn.__dict__.items() if 'Norm' in k)  # normalization layers, i.e. BatchNorm2d()
        for module_name, module in model.named_modules():
            for param_name, param in module.named_parameters(recurse=False):
                fullname = f'{module_name}.{param_name}' if module_name else param_name
                if 'bias' in fullname:  # bias (no decay)
                    g[2].append(param)
                elif isinstance(module, bn):  # weight (no decay)
                    g[1].append(param)
                else:  # weight (with decay)
                    g[0].append(param)

        if name == 'Adam':
            optimizer = torch.optim.Adam(g[2], lr=lr, betas=(momentum, 0.999))  # adjust beta1 to momentum
        elif name == 'SGD':
            optimizer = torch.optim.SGD(g[2], lr=lr, momentum=momentum, nesterov=True)
        else:
            raise NotImplementedError(f'Optimizer {name} not implemented.')

        optimizer.add_param_group({'params': g[0], 'weight_decay': decay})  # add g0 with weight_decay
        optimizer.add_param_group({'params': g[1], 'weight_decay': 0.0})  # add g1 (BatchNorm2d weights)
        print(f"{colorstr('optimizer:')} {type(optimizer).__name__}(lr={lr}) with parameter groups "
              f'{len(g[1])} weight(decay=0.0), {len(g[0])} weight(decay={decay}), {len(g[2])} bias')
        return optimizer


model = RTDETRDetectionModel()
optimizer = BaseTrainer.build_optimizer(model, name='Adam', lr=1e-3, momentum=0.9, decay=5e-4)
print('model parameters:', len(list(model.parameters())),
      '| in optimizer:', sum(len(g['params']) for g in optimizer.param_groups))

aifi = model.model[2]
w0 = aifi.ma.in_proj_weight.detach().clone()

imgs = torch.randn(2, 3, 32, 32)
target = torch.randn(2, 8, 8, 8)
for i in range(5):
    optimizer.zero_grad()
    preds = model(imgs)
    loss = (preds - target).pow(2).mean()
    loss.backward()
    optimizer.step()
    print(f'iter {i} loss {loss.item():.4f}')

print('AIFI ma.in_proj_weight grad norm:', aifi.ma.in_proj_weight.grad.norm().item())
print('AIFI ma.in_proj_weight max change after 5 steps:', (aifi.ma.in_proj_weight.detach() - w0).abs().max().item())
