"""Adversarial domain adaptation for segmentation, GTA5 -> Cityscapes (MyeongJin-Kim/Learning-Texture-Invariant-
Representation#11): optimizer.step() runs right after the source segmentation loss, before loss_adv.backward(), so
the adversarial gradients land in .grad after the only step and are zeroed at the next iteration; lambda_adv has no
effect on the segmentation network."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
images_src, labels = torch.randn(2, 3, 8, 8), torch.randint(0, 4, (2, 8, 8))
images_tgt = torch.randn(2, 3, 8, 8)
bce_loss = nn.BCEWithLogitsLoss()
source_label, target_label = 0.0, 1.0
trained = {}
for lambda_adv in (0.0, 0.01):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 1))
    model_D = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=2.5e-2, momentum=0.9)
    optimizer_D = torch.optim.Adam(model_D.parameters(), lr=1e-4, betas=(0.9, 0.99))
    for i_iter in range(3):
        optimizer.zero_grad()
        optimizer_D.zero_grad()
        for param in model_D.parameters():
            param.requires_grad = False
        pred = model(images_src)
        loss_seg = F.cross_entropy(pred, labels)
        loss_seg.backward()
        optimizer.step()  # <- optimizer
        pred_target = model(images_tgt)
        D_out = model_D(F.softmax(pred_target, dim=1))
        loss_adv = bce_loss(D_out, torch.full_like(D_out, source_label)) * lambda_adv
        loss_adv.backward()
        for param in model_D.parameters():
            param.requires_grad = True
        pred, pred_target = pred.detach(), pred_target.detach()
        D_out_s = model_D(F.softmax(pred, dim=1))
        loss_D = bce_loss(D_out_s, torch.full_like(D_out_s, source_label)) / 2
        D_out_t = model_D(F.softmax(pred_target, dim=1))
        loss_D = loss_D + bce_loss(D_out_t, torch.full_like(D_out_t, target_label)) / 2
        loss_D.backward()
        optimizer_D.step()
    trained[lambda_adv] = model[0].weight.detach().clone()
    print(f"lambda_adv {lambda_adv}: loss_seg {loss_seg.item():.4f} loss_adv {loss_adv.item():.5f}")
print("the adversarial loss changes the segmentation network:", not torch.equal(trained[0.0], trained[0.01]))
