"""T2I-Adapter CoAdapter training with PyTorch Lightning (TencentARC/T2I-Adapter#109,
https://github.com/TencentARC/T2I-Adapter/issues/109): the user wanted only the adapters trained, so set
requires_grad = False on every parameter of the UNet; training then fails in backward with
"RuntimeError: One of the differentiated Tensors does not require grad".
Why: the UNet (use_checkpoint: True) wraps each ResBlock in LDM's CheckpointFunction, whose backward calls
torch.autograd.grad(outputs, input_tensors + input_params) with the block's parameters: once the adapter
features make the block input require grad, its backward runs and autograd refuses the frozen parameters.
Fix (the maintainers' answer): leave requires_grad on for the UNet so the gradient reaches the adapters; the
UNet still does not change because configure_optimizers only hands the adapters and the fuser to AdamW."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def checkpoint(func, inputs, params, flag):
    """ldm/modules/diffusionmodules/util.py"""
    if flag:
        args = tuple(inputs) + tuple(params)
        return CheckpointFunction.apply(func, len(inputs), *args)
    else:
        return func(*inputs)


class CheckpointFunction(torch.autograd.Function):
    """ldm/modules/diffusionmodules/util.py"""

    @staticmethod
    def forward(ctx, run_function, length, *args):
        ctx.run_function = run_function
        ctx.input_tensors = list(args[:length])
        ctx.input_params = list(args[length:])
        with torch.no_grad():
            output_tensors = ctx.run_function(*ctx.input_tensors)
        return output_tensors

    @staticmethod
    def backward(ctx, *output_grads):
        ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
        with torch.enable_grad():
            shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
            output_tensors = ctx.run_function(*shallow_copies)
        input_grads = torch.autograd.grad(output_tensors, ctx.input_tensors + ctx.input_params, output_grads,
                                          allow_unused=True)
        return (None, None) + input_grads


class ResBlock(nn.Module):
    """ldm/modules/diffusionmodules/openaimodel.py ResBlock in short."""

    def __init__(self, channels, emb_channels, use_checkpoint=False):
        super().__init__()
        self.use_checkpoint = use_checkpoint
        self.in_layers = nn.Sequential(nn.SiLU(), nn.Conv2d(channels, channels, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, channels))
        self.out_layers = nn.Sequential(nn.SiLU(), nn.Conv2d(channels, channels, 3, padding=1))

    def forward(self, x, emb):
        return checkpoint(self._forward, (x, emb), self.parameters(), self.use_checkpoint)

    def _forward(self, x, emb):
        h = self.in_layers(x)
        h = h + self.emb_layers(emb)[..., None, None]
        return x + self.out_layers(h)


class UNetModel(nn.Module):
    """openaimodel.UNetModel in short: adapter features are added after every third input block."""

    def __init__(self, in_channels=4, model_channels=8, use_checkpoint=True):
        super().__init__()
        self.time_embed = nn.Sequential(nn.Linear(1, 16), nn.SiLU(), nn.Linear(16, 16))
        self.conv_in = nn.Conv2d(in_channels, model_channels, 3, padding=1)
        self.input_blocks = nn.ModuleList([ResBlock(model_channels, 16, use_checkpoint) for _ in range(3)])
        self.middle_block = ResBlock(model_channels, 16, use_checkpoint)
        self.out = nn.Conv2d(model_channels, in_channels, 3, padding=1)

    def forward(self, x, timesteps, features_adapter=None):
        emb = self.time_embed(timesteps.float().view(-1, 1) / 1000)
        h = self.conv_in(x)
        adapter_idx = 0
        for id, module in enumerate(self.input_blocks):
            h = module(h, emb)
            if ((id + 1) % 3 == 0) and features_adapter is not None:
                h = h + features_adapter[adapter_idx]
                adapter_idx += 1
        h = self.middle_block(h, emb)
        return self.out(h)


class DiffusionWrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.diffusion_model = UNetModel()


class Adapter(nn.Module):
    """ldm/modules/encoders/adapter.Adapter in short: condition image -> one feature map per UNet scale."""

    def __init__(self, cin, channels):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(cin, channels, 3, padding=1), nn.ReLU(), nn.Conv2d(channels, channels, 1))

    def forward(self, x):
        return [self.body(x)]


class CoAdapterFuser(nn.Module):
    def __init__(self, n_adapters, unet_channels):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(n_adapters, unet_channels, 1, 1))

    def forward(self, features):
        feats = [f[0] * self.gamma[i] for i, f in enumerate(features.values())]
        return [sum(feats)], None


class CoAdapter(nn.Module):
    """adapters/coadapters.py CoAdapter(LatentDiffusion) in short."""

    def __init__(self):
        super().__init__()
        self.model = DiffusionWrapper()
        self.learning_rate = 1e-3
        self.adapters = nn.ModuleDict({'canny': Adapter(1, 8), 'sketch': Adapter(1, 8)})
        self.coadapter_fuser = CoAdapterFuser(2, 8)
        self.training_adapters = list(self.adapters.keys())
        for param in self.model.diffusion_model.parameters():
            param.requires_grad = False  # <- autograd_error
        self.alphas_cumprod = torch.linspace(0.99, 0.01, 1000)

    def get_adapter_features(self, batch, keep_conds):
        features = dict()
        for cond_name in keep_conds:
            if cond_name in batch:
                features[cond_name] = self.adapters[cond_name](batch[cond_name])
        return features

    def shared_step(self, batch):
        x = batch['jpg']
        features = self.get_adapter_features(batch, self.training_adapters)
        features_adapter, append_to_context = self.coadapter_fuser(features)
        t = torch.randint(0, 1000, (x.size(0),))
        noise = torch.randn_like(x)
        a = self.alphas_cumprod[t].view(-1, 1, 1, 1)
        x_noisy = a.sqrt() * x + (1 - a).sqrt() * noise
        model_output = self.model.diffusion_model(x_noisy, t, features_adapter=features_adapter)
        loss = F.mse_loss(model_output, noise)
        return loss, {'train/loss': loss.item()}

    def training_step(self, batch, batch_idx):
        loss, loss_dict = self.shared_step(batch)
        return loss

    def configure_optimizers(self):
        lr = self.learning_rate
        params = list(self.adapters.parameters()) + list(self.coadapter_fuser.parameters())
        opt = torch.optim.AdamW(params, lr=lr)
        return opt


def fit(module, batches):
    """Lightning's automatic optimization in short."""
    opt = module.configure_optimizers()
    for batch_idx, batch in enumerate(batches):
        loss = module.training_step(batch, batch_idx)
        opt.zero_grad()
        loss.backward()
        opt.step()


torch.manual_seed(0)
model = CoAdapter()
batches = [{'jpg': torch.randn(2, 4, 8, 8), 'canny': torch.rand(2, 1, 8, 8), 'sketch': torch.rand(2, 1, 8, 8)}
           for _ in range(3)]
adapter_before = model.adapters['canny'].body[0].weight.detach().clone()
unet_before = model.model.diffusion_model.out.weight.detach().clone()
fit(model, batches)
print("adapter changed:", not torch.equal(adapter_before, model.adapters['canny'].body[0].weight))
print("unet unchanged:", torch.equal(unet_before, model.model.diffusion_model.out.weight))
