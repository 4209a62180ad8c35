"""The fixed twin: the updated image is detached, so it is a leaf again when the next step asks for its gradient (Harry24k/adversarial-attacks-pytorch#2)."""
import torch
from torch import nn


class DeepFool:
    def __init__(self, model, steps=3, overshoot=0.02):
        self.model, self.steps, self.overshoot = model, steps, overshoot

    def __call__(self, images):
        adv_images = []
        for b in range(images.shape[0]):
            image = images[b:b + 1].clone()
            for i in range(self.steps):
                image.requires_grad = True
                output = self.model(image)[0]
                _, pre = torch.max(output, 0)
                f_0 = output[pre]
                grad_f_0 = torch.autograd.grad(f_0, image, retain_graph=True)[0]
                best_pert, best_w = None, None
                for k in range(len(output)):
                    if k == pre:
                        continue
                    grad_f_k = torch.autograd.grad(output[k], image, retain_graph=True)[0]
                    w_k, f_k = grad_f_k - grad_f_0, (output[k] - f_0).detach()
                    pert_k = f_k.abs() / (w_k.norm() + 1e-8)
                    if best_pert is None or pert_k < best_pert:
                        best_pert, best_w = pert_k, w_k
                r = (best_pert + 1e-4) * best_w / (best_w.norm() + 1e-8)
                image = torch.clamp(image + (1 + self.overshoot) * r, min=0, max=1).detach()
            adv_images.append(image.detach())
        return torch.cat(adv_images)


torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 32), nn.ReLU(), nn.Linear(32, 5))
images = torch.rand(4, 3, 8, 8)
attack = DeepFool(model)
adv_images = attack(images)
print(f"clean predictions {model(images).argmax(1).tolist()}, adversarial {model(adv_images).argmax(1).tolist()}, "
      f"mean perturbation {(adv_images - images).abs().mean().item():.4f}")
