# "alt_cuda_corr backward" https://github.com/princeton-vl/RAFT/issues/148
# fixed by "fix_altcorr" https://github.com/princeton-vl/RAFT/pull/186
# Training RAFT with --alternate_corr: AlternateCorrBlock.__call__ called the compiled kernel
# alt_cuda_corr.forward(...) directly. A raw extension call records nothing for autograd, so its
# backward was never called, the correlation carried no history back to fmap1/fmap2, and the
# feature encoder fnet got no gradient ("multi gpu run also reports unused parameter").
# Fix (PR #186): wrap the kernel in a torch.autograd.Function (AltCudaCorr) whose backward calls
# alt_cuda_corr.backward, and call AltCudaCorr.apply(...) in AlternateCorrBlock.
# The CUDA extension is emulated in plain torch: its forward runs outside autograd (no_grad),
# its backward returns the gradients the compiled kernel would.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class alt_cuda_corr:
    """Plain-torch stand-in for the compiled alt_cuda_corr extension."""

    @staticmethod
    def _corr(fmap1, fmap2, coords, r):
        # fmap1: B,H,W,C  fmap2: B,H2,W2,C  coords: B,1,H,W,2 -> corr: B,1,(2r+1)^2,H,W
        B, H, W, C = fmap1.shape
        H2, W2 = fmap2.shape[1:3]
        f2 = fmap2.permute(0, 3, 1, 2)
        out = []
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                x = coords[:, 0, :, :, 0] + dx
                y = coords[:, 0, :, :, 1] + dy
                grid = torch.stack([2 * x / max(W2 - 1, 1) - 1, 2 * y / max(H2 - 1, 1) - 1], dim=-1)
                sampled = F.grid_sample(f2, grid, align_corners=True).permute(0, 2, 3, 1)
                out.append((fmap1 * sampled).sum(-1))
        return torch.stack(out, dim=1).unsqueeze(1)

    @staticmethod
    def forward(fmap1, fmap2, coords, r):
        with torch.no_grad():  # a raw CUDA kernel: nothing is recorded for autograd
            return (alt_cuda_corr._corr(fmap1, fmap2, coords, r),)

    @staticmethod
    def backward(fmap1, fmap2, coords, corr_grad, r):
        with torch.enable_grad():
            inputs = [t.detach().requires_grad_() for t in (fmap1, fmap2, coords)]
            corr = alt_cuda_corr._corr(*inputs, r)
            return torch.autograd.grad(corr, inputs, corr_grad)


class AlternateCorrBlock:
    def __init__(self, fmap1, fmap2, num_levels=2, radius=1):
        self.num_levels = num_levels
        self.radius = radius

        self.pyramid = [(fmap1, fmap2)]
        for i in range(self.num_levels):
            fmap1 = F.avg_pool2d(fmap1, 2, stride=2)
            fmap2 = F.avg_pool2d(fmap2, 2, stride=2)
            self.pyramid.append((fmap1, fmap2))

    def __call__(self, coords):
        coords = coords.permute(0, 2, 3, 1)
        B, H, W, _ = coords.shape
        dim = self.pyramid[0][0].shape[1]

        corr_list = []
        for i in range(self.num_levels):
            r = self.radius
            fmap1_i = self.pyramid[0][0].permute(0, 2, 3, 1).contiguous()
            fmap2_i = self.pyramid[i][1].permute(0, 2, 3, 1).contiguous()

            coords_i = (coords / 2**i).reshape(B, 1, H, W, 2).contiguous()
            corr, = alt_cuda_corr.forward(fmap1_i, fmap2_i, coords_i, r)  # <- no_grad
            corr_list.append(corr.squeeze(1))

        corr = torch.stack(corr_list, dim=1)
        corr = corr.reshape(B, -1, H, W)
        return corr / torch.sqrt(torch.tensor(dim).float())


class SmallEncoder(nn.Module):
    def __init__(self, output_dim=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 7, stride=2, padding=3)
        self.layer1 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.layer2 = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, output_dim, 1)

    def forward(self, x):
        is_list = isinstance(x, (tuple, list))
        if is_list:
            batch_dim = x[0].shape[0]
            x = torch.cat(x, dim=0)
        x = F.relu(self.conv1(x))
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        x = self.conv2(x)
        if is_list:
            x = torch.split(x, [batch_dim, batch_dim], dim=0)
        return x


class SmallUpdateBlock(nn.Module):
    def __init__(self, corr_planes, hidden_dim=8, input_dim=8):
        super().__init__()
        self.encoder = nn.Conv2d(corr_planes + 2, 16, 3, padding=1)
        self.gru = nn.Conv2d(hidden_dim + input_dim + 16, hidden_dim, 3, padding=1)
        self.flow_head = nn.Conv2d(hidden_dim, 2, 3, padding=1)

    def forward(self, net, inp, corr, flow):
        motion_features = F.relu(self.encoder(torch.cat([corr, flow], dim=1)))
        net = torch.tanh(self.gru(torch.cat([net, inp, motion_features], dim=1)))
        delta_flow = self.flow_head(net)
        return net, None, delta_flow


def coords_grid(batch, ht, wd):
    coords = torch.meshgrid(torch.arange(ht), torch.arange(wd), indexing='ij')
    coords = torch.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)


def upflow8(flow, mode='bilinear'):
    new_size = (8 * flow.shape[2], 8 * flow.shape[3])
    return 8 * F.interpolate(flow, size=new_size, mode=mode, align_corners=True)


class RAFT(nn.Module):
    def __init__(self, corr_levels=2, corr_radius=1):
        super().__init__()
        self.hidden_dim = hdim = 8
        self.context_dim = cdim = 8
        self.corr_levels = corr_levels
        self.corr_radius = corr_radius
        self.fnet = SmallEncoder(output_dim=16)
        self.cnet = SmallEncoder(output_dim=hdim + cdim)
        self.update_block = SmallUpdateBlock(corr_levels * (2 * corr_radius + 1) ** 2, hdim, cdim)

    def initialize_flow(self, img):
        N, C, H, W = img.shape
        coords0 = coords_grid(N, H // 8, W // 8)
        coords1 = coords_grid(N, H // 8, W // 8)
        return coords0, coords1

    def forward(self, image1, image2, iters=3):
        hdim, cdim = self.hidden_dim, self.context_dim
        fmap1, fmap2 = self.fnet([image1, image2])
        corr_fn = AlternateCorrBlock(fmap1, fmap2, num_levels=self.corr_levels, radius=self.corr_radius)

        cnet = self.cnet(image1)
        net, inp = torch.split(cnet, [hdim, cdim], dim=1)
        net = torch.tanh(net)
        inp = torch.relu(inp)

        coords0, coords1 = self.initialize_flow(image1)
        flow_predictions = []
        for itr in range(iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1)  # index correlation volume
            flow = coords1 - coords0
            net, up_mask, delta_flow = self.update_block(net, inp, corr, flow)
            coords1 = coords1 + delta_flow
            flow_up = upflow8(coords1 - coords0)
            flow_predictions.append(flow_up)
        return flow_predictions


def sequence_loss(flow_preds, flow_gt, gamma=0.8):
    n_predictions = len(flow_preds)
    flow_loss = 0.0
    for i in range(n_predictions):
        i_weight = gamma ** (n_predictions - i - 1)
        i_loss = (flow_preds[i] - flow_gt).abs()
        flow_loss += i_weight * i_loss.mean()
    return flow_loss


model = RAFT()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
image1 = torch.randn(2, 3, 32, 32)
image2 = torch.randn(2, 3, 32, 32)
flow_gt = torch.randn(2, 2, 32, 32)

model.train()
optimizer.zero_grad()
flow_predictions = model(image1, image2, iters=3)
loss = sequence_loss(flow_predictions, flow_gt)
loss.backward()
print('loss', loss.item())
print('cnet.conv1.weight.grad is None:', model.cnet.conv1.weight.grad is None)
print('fnet.conv1.weight.grad is None:', model.fnet.conv1.weight.grad is None)
optimizer.step()
