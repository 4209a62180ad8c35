# Couple of fixes (scratchai FGM attack)
# https://github.com/iArunava/scratchai/pull/39  (merged; follow-up PR #40 "updates to fgsm function to
# unsqueeze before enabling grad and freeze net before attack in tests")
# scratchai.attacks.fgm switched requires_grad on for the input image and only then unsqueezed a 3-D
# image to a batch: `x = x.unsqueeze(0)` rebinds x to a non-leaf, so after loss.backward() x.grad is None
# and optimize_linear(x.grad, ...) fails. PR text: "Move unsqueeze before switching requires_grad to True
# as it results in x.grad to be None if unsqueezed afterwards".
# scratchai's fgm / optimize_linear and the test (frozen net, single image) are reduced to plain torch.
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


# ---- scratchai/attacks/utils.py -------------------------------------------------------------
def optimize_linear(grads, eps, ordr):
  """Solves for optimal input to a linear function under a norm constraint."""
  red_ind = list(range(1, len(grads.size())))
  azdiv = torch.tensor(1e-12, dtype=grads.dtype, device=grads.device)
  if ordr == np.inf:
    opt_pert = torch.sign(grads)
  elif ordr == 2:
    square = torch.max(azdiv, torch.sum(grads ** 2, red_ind, keepdim=True))
    opt_pert = grads / torch.sqrt(square)
  else:
    raise NotImplementedError('Only L-inf and L2 norms are currently implemented.')
  return eps * opt_pert


# ---- scratchai/attacks/attacks/fast_gradient_method.py --------------------------------------
def fgm(x, net:nn.Module, eps:float=0.3, ordr=np.inf, y=None,
        clip_min=None, clip_max=None, targeted=False, sanity_checks=True):
  """Implementation of the Fast Gradient Method."""
  if ordr not in [np.inf, 1, 2]:
    raise ValueError('Norm order must be either np.inf, 1, or 2.')

  # x needs to have requires_grad set to True
  # for its grad to be computed and stored properly in a backward call
  x.requires_grad_(True)

  # Flag to indicate if the image has been unsqueezed
  usq = False
  if len(x.shape) == 3: x = x.unsqueeze(0); usq = True  # <- non_leaf_watched

  if y is None: _, y = torch.max(net(x), dim=1)

  # Compute loss
  crit = nn.CrossEntropyLoss()
  loss = crit(net(x), y)
  # If attack is targeted, minimize loss of target label rather than maximize
  # loss of correct label.
  if targeted: loss = -loss

  # Define gradient of loss wrt input
  loss.backward()
  opt_pert = optimize_linear(x.grad, eps, ordr)

  # Add perturbation to original example to obtain adversarial example
  adv_x = x + opt_pert

  # If clipping is needed, reset all values outside of [clip_min, clip_max]
  if (clip_min is not None) or (clip_max is not None):
    assert clip_min is not None and clip_max is not None
    adv_x = torch.clamp(adv_x, clip_min, clip_max)

  return adv_x if not usq else adv_x.squeeze()


# ---- test/test_attacks.py (reduced): attack a frozen net with one image ----------------------
def freeze(net):
  for p in net.parameters():
    p.requires_grad_(False)


net = nn.Sequential(
  nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10),
).eval()
freeze(net)

img = torch.rand(3, 16, 16)
adv = fgm(img, net, eps=0.1, clip_min=0.0, clip_max=1.0)
print("adv shape:", tuple(adv.shape), "max |adv - img|:", (adv.detach() - img.detach()).abs().max().item())
print("clean pred:", net(img.unsqueeze(0)).argmax(1).item(), "adv pred:", net(adv.unsqueeze(0)).argmax(1).item())
