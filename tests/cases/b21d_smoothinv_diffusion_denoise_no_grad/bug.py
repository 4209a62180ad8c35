"""SmoothInv (locuslab/smoothinv#1, https://github.com/locuslab/smoothinv/issues/1): running
SmoothInv().synthesize() on the diffusion-smoothed model, delta.grad is None after loss.backward(), so the
"renorming gradient" line `delta.grad.view(...)` fails (AttributeError on None).
Why: DiffusionRobustModel.diffusion_denoise runs the one-step guided-diffusion denoiser under torch.no_grad(),
so the denoised image handed to the classifier has no history back to the input x = inputs + delta; the loss
still backpropagates into the classifier's weights, but nothing reaches delta.
Fix (the maintainer's): use `with torch.enable_grad():` instead of `with torch.no_grad():` in diffusion_denoise."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR


class GaussianDiffusion:
    """guided_diffusion's GaussianDiffusion in short: linear schedule, q_sample and a one-step p_sample."""
    def __init__(self, steps=1000):
        betas = torch.linspace(1e-4, 0.02, steps)
        alphas_cumprod = torch.cumprod(1 - betas, 0)
        self.sqrt_alphas_cumprod = alphas_cumprod.sqrt()
        self.sqrt_one_minus_alphas_cumprod = (1 - alphas_cumprod).sqrt()
        self.sqrt_recip_alphas_cumprod = (1 / alphas_cumprod).sqrt()
        self.sqrt_recipm1_alphas_cumprod = (1 / alphas_cumprod - 1).sqrt()

    def q_sample(self, x_start, t, noise):
        return (self.sqrt_alphas_cumprod[t].view(-1, 1, 1, 1) * x_start
                + self.sqrt_one_minus_alphas_cumprod[t].view(-1, 1, 1, 1) * noise)

    def p_sample(self, model, x, t, clip_denoised=True):
        eps = model(x, t)
        pred_xstart = (self.sqrt_recip_alphas_cumprod[t].view(-1, 1, 1, 1) * x
                       - self.sqrt_recipm1_alphas_cumprod[t].view(-1, 1, 1, 1) * eps)
        if clip_denoised:
            pred_xstart = pred_xstart.clamp(-1, 1)
        return {"sample": pred_xstart, "pred_xstart": pred_xstart}


class UNetModel(nn.Module):
    """Stand-in for the pretrained 256x256 unconditional guided-diffusion UNet (predicts the noise)."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x, t):
        return self.conv(x)


class DiffusionRobustModel(nn.Module):
    def __init__(self, classifier, noise_sd, num_noise_vec=4, no_diffusion=False, dataset="trojai"):
        super().__init__()
        model, diffusion = UNetModel(), GaussianDiffusion()
        model.eval()

        self.model = model
        self.diffusion = diffusion

        self.classifier = classifier
        self.dataset = dataset
        self.no_diffusion = no_diffusion
        self.num_noise_vec = num_noise_vec

        real_sigma = 0
        t = 0
        while real_sigma < noise_sd * 2:
            t += 1
            a = diffusion.sqrt_alphas_cumprod[t]
            b = diffusion.sqrt_one_minus_alphas_cumprod[t]
            real_sigma = b / a

        self.sigma = noise_sd
        self.t = t

    def forward(self, x):
        x = x.repeat((self.num_noise_vec, 1, 1, 1))

        if self.no_diffusion:  # w/o diffusion
            x += torch.randn_like(x) * self.sigma
        else:  # w diffusion
            x = x * 2 - 1
            x = self.diffusion_denoise(x, self.t)
            x = (x + 1) / 2

        out = self.classifier(x)

        if self.num_noise_vec == 1 and x.shape[0] != 1:
            return out
        out = F.softmax(out, dim=1)

        out = torch.mean(out, dim=0, keepdims=True)
        return out

    def diffusion_denoise(self, x_start, t, multistep=False):
        t_batch = torch.tensor([t] * len(x_start))

        noise = torch.randn_like(x_start)

        # Gaussian noise is added at this step
        x_t_start = self.diffusion.q_sample(x_start=x_start, t=t_batch, noise=noise)

        with torch.no_grad():  # <- no_grad
            out = self.diffusion.p_sample(
                self.model,
                x_t_start,
                t_batch,
                clip_denoised=True
            )['pred_xstart']

        return out


class SmoothInv():
    def __init__(self, max_steps, step_size, max_norm=None):
        self.max_steps = max_steps
        self.step_size = step_size
        self.max_norm = max_norm

    def synthesize(self, model, inputs, labels):
        batch_size = labels.shape[0]
        delta = torch.zeros((len(labels), *inputs.shape[1:]), dtype=inputs.dtype, requires_grad=True)

        optimizer = optim.SGD([delta], lr=self.step_size, momentum=0.9)
        scheduler = StepLR(optimizer, step_size=300, gamma=0.5)

        for i in range(self.max_steps):
            adv = inputs + delta

            y_prob = model(adv)
            logsoftmax = torch.log(y_prob.clamp(min=1e-20))
            ce_loss = F.nll_loss(logsoftmax, labels)
            loss = ce_loss

            optimizer.zero_grad()
            loss.backward()

            # renorming gradient
            grad_norms = delta.grad.view(batch_size, -1).norm(p=2, dim=1)
            delta.grad.div_(grad_norms.view(-1, 1, 1, 1))

            # avoid nan or inf if gradient is 0
            if (grad_norms == 0).any():
                delta.grad = torch.zeros_like(delta.grad)

            optimizer.step()
            scheduler.step()

            delta.data.add_(inputs)
            delta.data.clamp_(0, 1).sub_(inputs)

            delta.data.renorm_(p=2, dim=0, maxnorm=self.max_norm)

        return inputs + delta


torch.manual_seed(0)
classifier = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 5))
model = DiffusionRobustModel(classifier, noise_sd=0.25)
inputs = torch.rand(1, 3, 8, 8)
labels = torch.tensor([3])
attacker = SmoothInv(max_steps=5, step_size=0.1, max_norm=2.0)
adv = attacker.synthesize(model, inputs, labels)
print("delta changed:", not torch.equal(adv.detach(), inputs))
