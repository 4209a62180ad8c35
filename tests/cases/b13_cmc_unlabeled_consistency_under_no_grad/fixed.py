"""CMC, semi-supervised CT/MRI cardiac segmentation (med-air/CMC#24): from start_fusion_epoch the unlabeled CT and MRI
volumes are passed through the two-branch model inside `torch.no_grad()` (and model.eval()), and the cross-modal
semantic (CSC) and anatomical (CAC) consistency losses computed from those outputs are added to the supervised loss;
they carry no gradient, so only the supervised term trains the model (the fix: run the unlabeled forward with grad)."""
import torch
import torch.nn.functional as F
from torch import nn


class CrossModalUNet(nn.Module):
    def __init__(self, n_classes=4, ch=8):
        super().__init__()
        self.enc_ct = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(), nn.Conv2d(ch, ch, 3, 2, 1), nn.ReLU())
        self.enc_mri = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(), nn.Conv2d(ch, ch, 3, 2, 1), nn.ReLU())
        self.decoder = nn.Sequential(nn.ConvTranspose2d(ch, ch, 2, 2), nn.ReLU(), nn.Conv2d(ch, n_classes, 1))

    def forward(self, ct, mri):
        f_ct, f_mri = self.enc_ct(ct), self.enc_mri(mri)
        return f_ct, f_mri, self.decoder(f_ct), self.decoder(f_mri)


def csc_loss_func(f_ct, f_mri):
    return 1 - F.cosine_similarity(f_ct.flatten(1), f_mri.flatten(1)).mean()


def cac_loss_func(out_ct, out_mri):
    return F.mse_loss(out_ct.softmax(1), out_mri.softmax(1))


torch.manual_seed(0)
model = CrossModalUNet()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
ct, mri = torch.randn(2, 1, 16, 16), torch.randn(2, 1, 16, 16)
ct_label, mri_label = torch.randint(0, 4, (2, 16, 16)), torch.randint(0, 4, (2, 16, 16))
ct_unlabeled_data, mri_unlabeled_data = torch.randn(2, 1, 16, 16), torch.randn(2, 1, 16, 16)
for epoch in range(350, 352):
    model.train()
    _, _, ct_out, mri_out = model(ct, mri)
    sup_loss = F.cross_entropy(ct_out, ct_label) + F.cross_entropy(mri_out, mri_label)
    model.eval()
    ct_f, mri_f, ct_unlabeled_output, mri_unlabeled_output = model(ct_unlabeled_data, mri_unlabeled_data)
    CSC_loss = csc_loss_func(ct_f, mri_f)
    CAC_loss = cac_loss_func(ct_unlabeled_output, mri_unlabeled_output)
    loss = sup_loss + 0.1 * CSC_loss + 0.1 * CAC_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: sup {sup_loss.item():.4f} CSC {CSC_loss.item():.4f} CAC {CAC_loss.item():.2e} "
          f"(consistency requires_grad={CSC_loss.requires_grad})")
cons_grads = torch.autograd.grad(csc_loss_func(*model(ct_unlabeled_data, mri_unlabeled_data)[:2]),
                                 list(model.enc_ct.parameters()) + list(model.enc_mri.parameters()))
print("consistency reaches both encoders:", all(g.abs().sum() > 0 for g in cons_grads))
