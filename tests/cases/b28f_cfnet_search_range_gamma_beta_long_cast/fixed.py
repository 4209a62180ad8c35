"""CFNet issue #21 "Gamma, Beta in the model weight", https://github.com/gallenszl/CFNet/issues/21:
the released CFNet weights hold gamma_s3, beta_s3, gamma_s2, beta_s2 all still at their init value 0; later
commenters found their gradients are None and that they never update during training.
Why (from the repository's models/cfnet.py; the thread itself gives no cause): gamma/beta widen the
uncertainty-based disparity search range, mindisparity = pred - (gamma + 1) * std - beta. The range goes
through generate_disparity_samples, which ends in `.long()` (after floor/ceil), so the samples handed to the
cost volume and to the disparity regression (sum(prob * samples)) are integer constants and nothing flows
back into gamma/beta. Fix: keep the samples floating point (drop the `.long()`; the warp casts its own
indices), so the regression sum(prob * samples) carries gradient to the search range. Shrunk to one refinement stage."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class UniformSampler(nn.Module):
    def forward(self, min_disparity, max_disparity, number_of_samples=10):
        multiplier = (max_disparity - min_disparity) / (number_of_samples + 1)
        range_multiplier = torch.arange(1.0, number_of_samples + 1, 1).view(number_of_samples, 1, 1)
        return min_disparity + range_multiplier * multiplier


class TinyCFNet(nn.Module):
    def __init__(self, maxdisp=16):
        super().__init__()
        self.maxdisp = maxdisp
        self.sample_count_s3 = 6
        self.uniform_sampler = UniformSampler()
        self.feat_coarse = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 1, 1))
        self.feat_fine = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 1, 1))
        self.classif2 = nn.Conv3d(1, 1, 3, 1, 1)
        self.confidence_classif1_s3 = nn.Conv3d(9, 1, 3, 1, 1)
        self.gamma_s3 = nn.Parameter(torch.zeros(1))
        self.beta_s3 = nn.Parameter(torch.zeros(1))

    def generate_search_range(self, sample_count, input_min_disparity, input_max_disparity):
        min_disparity = torch.clamp(input_min_disparity - torch.clamp((
            sample_count - input_max_disparity + input_min_disparity), min=0) / 2.0, min=0, max=self.maxdisp)
        max_disparity = torch.clamp(input_max_disparity + torch.clamp(
            sample_count - input_max_disparity + input_min_disparity, min=0) / 2.0, min=0, max=self.maxdisp)
        return min_disparity, max_disparity

    def generate_disparity_samples(self, min_disparity, max_disparity, sample_count=12):
        disparity_samples = self.uniform_sampler(min_disparity, max_disparity, sample_count).squeeze(2)
        disparity_samples = torch.cat((torch.floor(min_disparity), disparity_samples,
                                       torch.ceil(max_disparity)), dim=1)
        return disparity_samples

    def cost_volume_generator(self, left_input, right_input, disparity_samples):
        B, C, H, W = left_input.shape
        x = torch.arange(W).view(1, 1, 1, W).float()
        right_x = (x - disparity_samples).clamp(0, W - 1).long()            # warp indices
        right = right_input.unsqueeze(2).expand(B, C, disparity_samples.shape[1], H, W)
        warped = torch.gather(right, 4, right_x.unsqueeze(1).expand(B, C, -1, H, W))
        left = left_input.unsqueeze(2).expand_as(warped)
        return (left * warped), disparity_samples.unsqueeze(1).float()

    def forward(self, left, right):
        fl, fr = self.feat_coarse(left), self.feat_coarse(right)
        D = self.maxdisp // 2
        cost = torch.stack([F.pad((fl[..., d:] * fr[..., :fl.shape[-1] - d]).mean(1), (d, 0))
                            for d in range(D)], 1)
        cost2_s4 = self.classif2(cost.unsqueeze(1)).squeeze(1)
        pred2_possibility_s4 = F.softmax(cost2_s4, dim=1)
        disp_values = torch.arange(D).float().view(1, D, 1, 1)
        pred2_s4 = torch.sum(pred2_possibility_s4 * disp_values, 1, keepdim=True)
        pred2_s4_cur = pred2_s4.detach()
        pred2_v_s4 = torch.sum(pred2_possibility_s4 * (disp_values - pred2_s4_cur) ** 2, 1, keepdim=True).sqrt()
        mindisparity_s3 = pred2_s4_cur - (self.gamma_s3 + 1) * pred2_v_s4 - self.beta_s3
        maxdisparity_s3 = pred2_s4_cur + (self.gamma_s3 + 1) * pred2_v_s4 + self.beta_s3
        maxdisparity_s3 = F.interpolate(maxdisparity_s3 * 2, left.shape[2:], mode='bilinear', align_corners=True)
        mindisparity_s3 = F.interpolate(mindisparity_s3 * 2, left.shape[2:], mode='bilinear', align_corners=True)

        mindisparity_s3_1, maxdisparity_s3_1 = self.generate_search_range(self.sample_count_s3 + 1,
                                                                          mindisparity_s3, maxdisparity_s3)
        disparity_samples_s3 = self.generate_disparity_samples(mindisparity_s3_1, maxdisparity_s3_1,
                                                               self.sample_count_s3).float()
        volume, samples_channel = self.cost_volume_generator(self.feat_fine(left), self.feat_fine(right),
                                                             disparity_samples_s3)
        confidence_v_s3 = torch.cat((volume, samples_channel), dim=1)
        cost1_s3 = self.confidence_classif1_s3(confidence_v_s3).squeeze(1)
        cost1_s3_possibility = F.softmax(cost1_s3, dim=1)
        pred1_s3 = torch.sum(cost1_s3_possibility * disparity_samples_s3, dim=1)
        pred2_up = F.interpolate(pred2_s4 * 2, left.shape[2:], mode='bilinear', align_corners=True).squeeze(1)
        return [pred2_up, pred1_s3]


model = TinyCFNet(maxdisp=16)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.999))
for step in range(4):
    imgL, imgR = torch.randn(2, 3, 16, 32), torch.randn(2, 3, 16, 32)
    disp_gt = torch.rand(2, 16, 32) * 12
    optimizer.zero_grad()
    disp_ests = model(imgL, imgR)
    loss = sum(w * F.smooth_l1_loss(est, disp_gt) for w, est in zip([0.5, 1.0], disp_ests))
    loss.backward()
    optimizer.step()

print("gamma_s3.grad:", model.gamma_s3.grad)
print("beta_s3.grad:", model.beta_s3.grad)
print("gamma_s3, beta_s3 after training:", model.gamma_s3.item(), model.beta_s3.item())
