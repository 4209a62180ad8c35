"""Robust FGSM against a deepfake detector (paarthneekhara/AdversarialDeepFakes#23): the attacked image requires
grad and goes through the detector's preprocessing, whose Normalize does `for t, m, s in zip(tensor, mean, std):
t.sub_(m).div_(s)`; iterating a tensor unbinds it, and the in-place update of that view raises "Output 0 of
UnbindBackward is a view and is being modified inplace. This view is the output of a function that returns
multiple views" (the fix: normalise out of place)."""
import torch
import torch.nn.functional as F
from torch import nn


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, tensor):
        for t, m, s in zip(tensor, self.mean, self.std):
            t.sub_(m).div_(s)  # <- autograd_error
        return tensor


norm_transform = Normalize([0.5] * 3, [0.5] * 3)


def predict_with_model(image, model):
    resized_image = F.interpolate(image, size=(32, 32), mode="bilinear", align_corners=False)[0]
    normalized_image = norm_transform(resized_image)
    logits = model(normalized_image.unsqueeze(0))
    return logits.argmax(1), logits


def robust_fgsm(input_img, model, eps=0.02, steps=3):
    input_var = input_img.clone().requires_grad_(True)
    target_var = torch.tensor([0])
    for _ in range(steps):
        _, logits = predict_with_model(input_var, model)
        loss = F.cross_entropy(logits, target_var)
        loss.backward()
        with torch.no_grad():
            input_var -= eps * input_var.grad.sign()
            input_var.grad.zero_()
    return input_var.detach()


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
processed_image = torch.rand(1, 3, 48, 48)
perturbed_image = robust_fgsm(processed_image, model)
print(f"perturbation max: {(perturbed_image - processed_image).abs().max().item():.4f}")
