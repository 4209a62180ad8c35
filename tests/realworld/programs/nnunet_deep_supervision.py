"""UNet segmentation with deep supervision, reduced from nnU-Net v2's default trainer
(https://github.com/MIC-DKFZ/nnUNet: nnunetv2/training/nnUNetTrainer/nnUNetTrainer.py `_build_loss`, `train_step`,
`validation_step`, `on_train_epoch_start`, `set_deep_supervision_enabled`; nnunetv2/training/loss/deep_supervision.py
DeepSupervisionWrapper; nnunetv2/training/loss/compound_losses.py DC_and_CE_loss; nnunetv2/training/loss/dice.py
MemoryEfficientSoftDiceLoss; nnunetv2/training/lr_scheduler/polylr.py PolyLRScheduler) with the network from
dynamic_network_architectures (PlainConvUNet: PlainConvEncoder + UNetDecoder with one 1x1 `seg_layers` head per
decoder stage, InitWeights_He) written as small stand-ins. 2D, 1x32x32 random images with a blob-shaped label map,
3 classes.

Suspicious-but-correct patterns kept:
  - the decoder returns a list of logits at several resolutions (highest first); each auxiliary 1x1 seg head is only
    trained through its own term of the weighted sum `l = w0 * loss(out0, t0) + w1 * loss(out1, t1) + ...`
    (weights 1/2**i normalised to sum 1), and the per-scale targets are nearest-downsampled label maps built by the
    data pipeline under no_grad;
  - nnU-Net also produces a lowest-resolution output whose weight is set to 0 (`weights[-1] = 0`), so its seg conv
    never learns; that head is left out of this reduction (the weights are computed as nnU-Net does, and the
    zero-weighted scale is dropped);
  - the soft Dice builds its one-hot target under `torch.no_grad()` with `scatter_` and drops the background channel
    (`do_bg=False`) by slicing `x[:, 1:]`;
  - `InitWeights_He` reassigns `module.weight = nn.init.kaiming_normal_(module.weight, ...)` (same Parameter);
  - `optimizer.zero_grad(set_to_none=True)`, `clip_grad_norm_(..., 12)`, the loss returned as
    `l.detach().cpu().numpy()`; the PolyLR scheduler writes `param_group["lr"]` in place each epoch;
  - validation under `torch.no_grad()` uses only `output[0]` / `target[0]` for the pseudo-Dice (argmax + scatter_);
  - at the end deep supervision is switched off (`decoder.deep_supervision = False`) and the final prediction runs
    under `torch.inference_mode()`, only touching the highest-resolution head.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- dynamic_network_architectures (stand-in) ----
class ConvDropoutNormReLU(nn.Module):
    def __init__(self, input_channels, output_channels, kernel_size, stride):
        super().__init__()
        self.conv = nn.Conv2d(input_channels, output_channels, kernel_size, stride,
                              padding=(kernel_size - 1) // 2, bias=True)
        self.norm = nn.InstanceNorm2d(output_channels, eps=1e-5, affine=True)
        self.nonlin = nn.LeakyReLU(negative_slope=1e-2, inplace=True)
        self.all_modules = nn.Sequential(self.conv, self.norm, self.nonlin)

    def forward(self, x):
        return self.all_modules(x)


class StackedConvBlocks(nn.Module):
    def __init__(self, num_convs, input_channels, output_channels, kernel_size, initial_stride):
        super().__init__()
        self.convs = nn.Sequential(
            ConvDropoutNormReLU(input_channels, output_channels, kernel_size, initial_stride),
            *[ConvDropoutNormReLU(output_channels, output_channels, kernel_size, 1) for _ in range(1, num_convs)])

    def forward(self, x):
        return self.convs(x)


class PlainConvEncoder(nn.Module):
    def __init__(self, input_channels, features_per_stage, strides, n_conv_per_stage):
        super().__init__()
        stages = []
        for s in range(len(features_per_stage)):
            stages.append(StackedConvBlocks(n_conv_per_stage[s], input_channels, features_per_stage[s], 3,
                                            strides[s]))
            input_channels = features_per_stage[s]
        self.stages = nn.Sequential(*stages)
        self.output_channels = features_per_stage
        self.strides = strides
        self.return_skips = True

    def forward(self, x):
        ret = []
        for s in self.stages:
            x = s(x)
            ret.append(x)
        return ret if self.return_skips else ret[-1]


class UNetDecoder(nn.Module):
    def __init__(self, encoder, num_classes, n_conv_per_stage, deep_supervision, first_supervised_stage=1):
        super().__init__()
        self.deep_supervision = deep_supervision
        self.first_supervised_stage = first_supervised_stage
        n_stages_encoder = len(encoder.output_channels)
        stages, transpconvs, seg_layers = [], [], []
        for s in range(1, n_stages_encoder):
            input_features_below = encoder.output_channels[-s]
            input_features_skip = encoder.output_channels[-(s + 1)]
            stride_for_transpconv = encoder.strides[-s]
            transpconvs.append(nn.ConvTranspose2d(input_features_below, input_features_skip,
                                                  stride_for_transpconv, stride_for_transpconv, bias=True))
            stages.append(StackedConvBlocks(n_conv_per_stage[s - 1], 2 * input_features_skip,
                                            input_features_skip, 3, 1))
            # nnU-Net creates a seg layer for every decoder stage; the coarsest one only feeds the weight-0 loss term
            # and is left out here (see module docstring)
            if s - 1 >= first_supervised_stage:
                seg_layers.append(nn.Conv2d(input_features_skip, num_classes, 1, 1, 0, bias=True))
        self.stages = nn.ModuleList(stages)
        self.transpconvs = nn.ModuleList(transpconvs)
        self.seg_layers = nn.ModuleList(seg_layers)

    def forward(self, skips):
        lres_input = skips[-1]
        seg_outputs = []
        for s in range(len(self.stages)):
            x = self.transpconvs[s](lres_input)
            x = torch.cat((x, skips[-(s + 2)]), 1)
            x = self.stages[s](x)
            if self.deep_supervision and s >= self.first_supervised_stage:
                seg_outputs.append(self.seg_layers[s - self.first_supervised_stage](x))
            elif s == (len(self.stages) - 1):
                seg_outputs.append(self.seg_layers[-1](x))
            lres_input = x
        # invert seg outputs so that the largest segmentation prediction is returned first
        seg_outputs = seg_outputs[::-1]
        return seg_outputs if self.deep_supervision else seg_outputs[0]


class PlainConvUNet(nn.Module):
    def __init__(self, input_channels, features_per_stage, strides, n_conv_per_stage, num_classes,
                 n_conv_per_stage_decoder, deep_supervision=True):
        super().__init__()
        self.encoder = PlainConvEncoder(input_channels, features_per_stage, strides, n_conv_per_stage)
        self.decoder = UNetDecoder(self.encoder, num_classes, n_conv_per_stage_decoder, deep_supervision)

    def forward(self, x):
        skips = self.encoder(x)
        return self.decoder(skips)


class InitWeights_He:
    def __init__(self, neg_slope=1e-2):
        self.neg_slope = neg_slope

    def __call__(self, module):
        if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
            module.weight = nn.init.kaiming_normal_(module.weight, a=self.neg_slope)
            if module.bias is not None:
                module.bias = nn.init.constant_(module.bias, 0)


# ---- nnunetv2/training/loss (stand-in) ----
def softmax_helper_dim1(x):
    return torch.softmax(x, 1)


class MemoryEfficientSoftDiceLoss(nn.Module):
    def __init__(self, apply_nonlin=None, batch_dice=False, do_bg=True, smooth=1.):
        super().__init__()
        self.do_bg = do_bg
        self.batch_dice = batch_dice
        self.apply_nonlin = apply_nonlin
        self.smooth = smooth

    def forward(self, x, y, loss_mask=None):
        if self.apply_nonlin is not None:
            x = self.apply_nonlin(x)
        axes = tuple(range(2, x.ndim))
        with torch.no_grad():
            if x.ndim != y.ndim:
                y = y.view((y.shape[0], 1, *y.shape[1:]))
            if x.shape == y.shape:
                y_onehot = y
            else:
                y_onehot = torch.zeros(x.shape, device=x.device, dtype=torch.bool)
                y_onehot.scatter_(1, y.long(), 1)
            if not self.do_bg:
                y_onehot = y_onehot[:, 1:]
            sum_gt = y_onehot.sum(axes) if loss_mask is None else (y_onehot * loss_mask).sum(axes)
        if not self.do_bg:
            x = x[:, 1:]
        intersect = (x * y_onehot).sum(axes)
        sum_pred = x.sum(axes)
        if self.batch_dice:
            intersect = intersect.sum(0)
            sum_pred = sum_pred.sum(0)
            sum_gt = sum_gt.sum(0)
        dc = (2 * intersect + self.smooth) / (torch.clip(sum_gt + sum_pred + self.smooth, 1e-8))
        return -dc.mean()


class RobustCrossEntropyLoss(nn.CrossEntropyLoss):
    def forward(self, input, target):
        if target.ndim == input.ndim:
            assert target.shape[1] == 1
            target = target[:, 0]
        return super().forward(input, target.long())


class DC_and_CE_loss(nn.Module):
    def __init__(self, soft_dice_kwargs, ce_kwargs, weight_ce=1, weight_dice=1, ignore_label=None):
        super().__init__()
        self.weight_dice = weight_dice
        self.weight_ce = weight_ce
        self.ignore_label = ignore_label
        self.ce = RobustCrossEntropyLoss(**ce_kwargs)
        self.dc = MemoryEfficientSoftDiceLoss(apply_nonlin=softmax_helper_dim1, **soft_dice_kwargs)

    def forward(self, net_output, target):
        target_dice = target
        mask = None
        dc_loss = self.dc(net_output, target_dice, loss_mask=mask) if self.weight_dice != 0 else 0
        ce_loss = self.ce(net_output, target[:, 0]) if self.weight_ce != 0 else 0
        return self.weight_ce * ce_loss + self.weight_dice * dc_loss


class DeepSupervisionWrapper(nn.Module):
    def __init__(self, loss, weight_factors=None):
        super().__init__()
        self.weight_factors = weight_factors
        self.loss = loss

    def forward(self, *args):
        for i in args:
            assert isinstance(i, (tuple, list)), "all args must be either tuple or list, got %s" % type(i)
        weights = [1] * len(args[0]) if self.weight_factors is None else self.weight_factors
        l = weights[0] * self.loss(*[j[0] for j in args])
        for i, inputs in enumerate(zip(*args)):
            if i == 0:
                continue
            l += weights[i] * self.loss(*inputs)
        return l


class PolyLRScheduler:
    def __init__(self, optimizer, initial_lr, max_steps, exponent=0.9):
        self.optimizer = optimizer
        self.initial_lr = initial_lr
        self.max_steps = max_steps
        self.exponent = exponent

    def step(self, current_step):
        new_lr = self.initial_lr * (1 - current_step / self.max_steps) ** self.exponent
        for param_group in self.optimizer.param_groups:
            param_group["lr"] = new_lr


def downsample_seg_for_ds(seg, ds_scales):
    """DownsampleSegForDSTransform stand-in (data pipeline, no grad)."""
    with torch.no_grad():
        out = []
        for s in ds_scales:
            if all(i == 1 for i in s):
                out.append(seg)
            else:
                new_shape = [round(i * j) for i, j in zip(seg.shape[2:], s)]
                out.append(F.interpolate(seg.float(), new_shape, mode="nearest-exact").to(seg.dtype))
        return out


def make_batch(batch_size):
    data = torch.randn(batch_size, 1, 32, 32)
    seg = torch.zeros(batch_size, 1, 32, 32, dtype=torch.long)
    yy, xx = torch.meshgrid(torch.arange(32), torch.arange(32), indexing="ij")
    for b in range(batch_size):
        for c in (1, 2):
            cy, cx = torch.randint(6, 26, (2,)).tolist()
            blob = ((yy - cy) ** 2 + (xx - cx) ** 2) < 25
            seg[b, 0][blob] = c
            data[b, 0][blob] += 1.5 * c
    return data, seg


class nnUNetTrainer:
    def __init__(self):
        self.initial_lr = 1e-2
        self.weight_decay = 3e-5
        self.num_epochs = 2
        self.num_iterations_per_epoch = 3
        self.num_val_iterations_per_epoch = 1
        self.enable_deep_supervision = True
        self.batch_size = 2
        self.pool_op_kernel_sizes = [[1, 1], [2, 2], [2, 2], [2, 2]]
        self.network = PlainConvUNet(1, [8, 16, 32, 32], [1, 2, 2, 2], [2, 2, 2, 2], 3, [1, 1, 1],
                                     deep_supervision=self.enable_deep_supervision)
        self.network.apply(InitWeights_He(1e-2))
        self.optimizer = torch.optim.SGD(self.network.parameters(), self.initial_lr, weight_decay=self.weight_decay,
                                         momentum=0.99, nesterov=True)
        self.lr_scheduler = PolyLRScheduler(self.optimizer, self.initial_lr, self.num_epochs)
        self.loss = self._build_loss()
        self.current_epoch = 0
        self.step = 0

    def _get_deep_supervision_scales(self):
        # nnU-Net: list(list(i) for i in 1 / np.cumprod(np.vstack(pool_op_kernel_sizes), axis=0))[:-1]
        cum = torch.cumprod(torch.tensor(self.pool_op_kernel_sizes, dtype=torch.float64), dim=0)
        return [list(i) for i in (1 / cum).tolist()][:-1]

    def _build_loss(self):
        loss = DC_and_CE_loss({"batch_dice": True, "smooth": 1e-5, "do_bg": False}, {}, weight_ce=1, weight_dice=1)
        if self.enable_deep_supervision:
            deep_supervision_scales = self._get_deep_supervision_scales()
            weights = torch.tensor([1 / (2 ** i) for i in range(len(deep_supervision_scales))])
            weights[-1] = 0
            weights = weights / weights.sum()
            # reduction: the weight-0 lowest-resolution output (and its seg conv) are not built
            self.deep_supervision_scales = deep_supervision_scales[:-1]
            loss = DeepSupervisionWrapper(loss, weights[:-1].tolist())
        return loss

    def get_batch(self):
        data, seg = make_batch(self.batch_size)
        return {"data": data, "target": downsample_seg_for_ds(seg, self.deep_supervision_scales)}

    def on_train_epoch_start(self):
        self.network.train()
        self.lr_scheduler.step(self.current_epoch)

    def train_step(self, batch):
        data = batch["data"]
        target = batch["target"]
        self.optimizer.zero_grad(set_to_none=True)
        output = self.network(data)
        l = self.loss(output, target)
        l.backward()
        torch.nn.utils.clip_grad_norm_(self.network.parameters(), 12)
        self.optimizer.step()
        return {"loss": l.detach().cpu().numpy()}

    def validation_step(self, batch):
        data = batch["data"]
        target = batch["target"]
        with torch.no_grad():
            output = self.network(data)
            del data
            l = self.loss(output, target)
            output = output[0]
            target = target[0]
            axes = [0] + list(range(2, output.ndim))
            output_seg = output.argmax(1)[:, None]
            predicted_segmentation_onehot = torch.zeros(output.shape, dtype=torch.float32)
            predicted_segmentation_onehot.scatter_(1, output_seg, 1)
            target_onehot = torch.zeros(output.shape, dtype=torch.float32)
            target_onehot.scatter_(1, target, 1)
            tp = (predicted_segmentation_onehot * target_onehot).sum(axes)[1:]
            fp = (predicted_segmentation_onehot * (1 - target_onehot)).sum(axes)[1:]
            fn = ((1 - predicted_segmentation_onehot) * target_onehot).sum(axes)[1:]
        return {"loss": l.detach().cpu().numpy(), "tp_hard": tp, "fp_hard": fp, "fn_hard": fn}

    def set_deep_supervision_enabled(self, enabled):
        self.network.decoder.deep_supervision = enabled

    def run_training(self):
        for epoch in range(self.current_epoch, self.num_epochs):
            self.current_epoch = epoch
            self.on_train_epoch_start()
            for batch_id in range(self.num_iterations_per_epoch):
                out = self.train_step(self.get_batch())
                print(f"step {self.step} loss {float(out['loss']):.6f}")
                self.step += 1
            self.network.eval()
            outs = [self.validation_step(self.get_batch()) for _ in range(self.num_val_iterations_per_epoch)]
            tp = sum(o["tp_hard"] for o in outs)
            fp = sum(o["fp_hard"] for o in outs)
            fn = sum(o["fn_hard"] for o in outs)
            dice = 2 * tp / torch.clamp(2 * tp + fp + fn, min=1e-8)
            print(f"epoch {epoch} val loss {float(outs[0]['loss']):.4f} pseudo dice {[round(d, 4) for d in dice.tolist()]}")

    def perform_actual_validation(self):
        self.set_deep_supervision_enabled(False)
        self.network.eval()
        data, seg = make_batch(2)
        with torch.inference_mode():
            prediction = self.network(data)
            pred_seg = prediction.argmax(1)
        print(f"final voxel accuracy {(pred_seg == seg[:, 0]).float().mean().item():.4f}")


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    trainer = nnUNetTrainer()
    trainer.run_training()
    trainer.perform_actual_validation()
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"network": trainer.network.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
