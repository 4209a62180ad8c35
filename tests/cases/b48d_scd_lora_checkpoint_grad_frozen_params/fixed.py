# Report: alexdenker/SteerableConditionalDiffusion issue #1 "Really use lora?"
# https://github.com/alexdenker/SteerableConditionalDiffusion/issues/1
# What goes wrong: adapt/adaptation.py freezes the score UNet (`score.requires_grad_(False)`), injects
# LoRA convs (cloneofsimo-style `inject_trainable_lora_extended`) and then called `score.requires_grad_(True)`,
# which silently made "LoRA" a full fine-tune. The reporter noted that removing that line makes training
# fail: the guided-diffusion ResBlocks run through `checkpoint(self._forward, (x, emb), self.parameters(),
# use_checkpoint)`, and CheckpointFunction.backward asks `th.autograd.grad` for the gradient of *every*
# parameter, including the frozen ones -> "RuntimeError: One of the differentiated Tensors does not
# require grad". This script is the LoRA-only version (the unfreeze line removed, as the reporter did).
# Fix (maintainer, commit 46164e0, models/guided_diffusion/nn.py): differentiate only the params that
# require grad and return None for the others; the unfreeze line is dropped.
# The UNet is reduced to two ResBlocks; CheckpointFunction is guided-diffusion's (old backward, kept
# commented in the repo's nn.py); the LoRA injection is cut down to Conv2d.
import itertools
import torch as th
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def checkpoint(func, inputs, params, flag):
    if flag:
        args = tuple(inputs) + tuple(params)
        return CheckpointFunction.apply(func, len(inputs), *args)
    else:
        return func(*inputs)


class CheckpointFunction(th.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, length, *args):
        ctx.run_function = run_function
        ctx.input_tensors = list(args[:length])
        ctx.input_params = list(args[length:])
        with th.no_grad():
            output_tensors = ctx.run_function(*ctx.input_tensors)
        return output_tensors

    @staticmethod
    def backward(ctx, *output_grads):
        ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
        with th.enable_grad():
            shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
            output_tensors = ctx.run_function(*shallow_copies)
        grads = th.autograd.grad(
            output_tensors,
            ctx.input_tensors + [x for x in ctx.input_params if x.requires_grad],
            output_grads,
            allow_unused=True,
        )
        grads = list(grads)
        input_grads = []
        for tensor in ctx.input_tensors + ctx.input_params:
            if tensor.requires_grad:
                input_grads.append(grads.pop(0))
            else:
                input_grads.append(None)
        del ctx.input_tensors
        del ctx.input_params
        del output_tensors
        return (None, None) + tuple(input_grads)


class ResBlock(nn.Module):
    def __init__(self, channels, emb_channels, use_checkpoint=True):
        super().__init__()
        self.use_checkpoint = use_checkpoint
        self.in_layers = nn.Sequential(nn.GroupNorm(4, channels), nn.SiLU(), nn.Conv2d(channels, channels, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, channels))
        self.out_layers = nn.Sequential(nn.GroupNorm(4, channels), nn.SiLU(), nn.Conv2d(channels, channels, 3, padding=1))

    def forward(self, x, emb):
        return checkpoint(self._forward, (x, emb), self.parameters(), self.use_checkpoint)

    def _forward(self, x, emb):
        h = self.in_layers(x)
        h = h + self.emb_layers(emb)[..., None, None]
        h = self.out_layers(h)
        return x + h


class TinyUNet(nn.Module):
    def __init__(self, ch=8, emb=16):
        super().__init__()
        self.inp = nn.Conv2d(1, ch, 3, padding=1)
        self.time_embed = nn.Linear(1, emb)
        self.input_blocks = nn.ModuleList([ResBlock(ch, emb), ResBlock(ch, emb)])
        self.out = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, x, t):
        emb = self.time_embed(t[:, None].float())
        h = self.inp(x)
        for block in self.input_blocks:
            h = block(h, emb)
        return self.out(h)


class LoraInjectedConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True, r=4, scale=1.0):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=bias)
        self.lora_down = nn.Conv2d(in_channels, r, kernel_size, stride=stride, padding=padding, bias=False)
        self.lora_up = nn.Conv2d(r, out_channels, 1, bias=False)
        self.scale = scale
        nn.init.normal_(self.lora_down.weight, std=1 / r)
        nn.init.zeros_(self.lora_up.weight)

    def forward(self, input):
        return self.conv(input) + self.lora_up(self.lora_down(input)) * self.scale


def inject_trainable_lora_extended(model, r=4):
    require_grad_params = []
    for block in model.input_blocks:
        for seq in (block.in_layers, block.out_layers):
            _child_module = seq[2]
            _tmp = LoraInjectedConv2d(_child_module.in_channels, _child_module.out_channels,
                                      _child_module.kernel_size, _child_module.stride, _child_module.padding,
                                      _child_module.bias is not None, r=r)
            _tmp.conv.weight = _child_module.weight
            assert not _tmp.conv.weight.requires_grad
            _tmp.conv.bias = _child_module.bias
            seq._modules['2'] = _tmp
            seq[2].lora_up.weight.requires_grad = True
            seq[2].lora_down.weight.requires_grad = True
            require_grad_params.append(seq[2].parameters())
    return require_grad_params


def _score_model_adpt(score, method='lora', r=4):
    if method == 'lora':
        score.requires_grad_(False)

        for name, param in score.named_parameters():
            if "bias" in name and not "emb_layers" in name:
                param.requires_grad = True

        inject_trainable_lora_extended(score, r=r)

        new_num_params = sum([p.numel() for p in score.parameters()])
        trainable_params = sum([p.numel() for p in score.parameters() if p.requires_grad])
        print(f'% of trainable params: {trainable_params/new_num_params*100}')

        # score.requires_grad_(True)   # removed: LoRA only
    return score


score = TinyUNet()
_score_model_adpt(score, method='lora', r=2)
optim = torch.optim.Adam([p for p in score.parameters() if p.requires_grad], lr=1e-3)

xt = torch.randn(2, 1, 8, 8)
y = torch.randn(2, 1, 8, 8)
t = torch.tensor([10, 10])
lora_up = score.input_blocks[0].in_layers[2].lora_up.weight
for _ in range(3):
    optim.zero_grad()
    x0_pred = score(xt, t)
    loss = torch.mean((x0_pred - y) ** 2)
    loss.backward()
    optim.step()
print('lora_up grad norm:', lora_up.grad.norm().item())
