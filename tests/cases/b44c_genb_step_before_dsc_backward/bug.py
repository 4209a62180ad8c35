# GenB (bias-generator + discriminator) training step: the generator's optimizer
# steps right after g_loss.backward(retain_graph=True), then the discriminator
# loss (built on the same, not detached, generator output) is backpropagated.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N_ANS, HID, B = 16, 8, 4


class VQAModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.v_proj = nn.Linear(12, HID)
        self.q_emb = nn.Embedding(20, HID)
        self.classifier = nn.Linear(HID, N_ANS)

    def forward(self, v, q):
        h = torch.relu(self.v_proj(v)) * self.q_emb(q).mean(1)
        return self.classifier(h)


class GenB(VQAModel):
    def forward(self, v, q, gen=True):
        h = torch.relu(self.v_proj(v)) * self.q_emb(q).mean(1)
        if gen:
            h = h + torch.randn_like(h)
        return self.classifier(h)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_ANS, HID), nn.ReLU(), nn.Linear(HID, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


def calc_genb_loss(logits, bias, labels):
    gen_grad = torch.clamp(2 * labels * torch.sigmoid(-2 * labels * bias.detach()), 0, 1)
    return F.binary_cross_entropy_with_logits(logits, gen_grad) * labels.size(1)


model, genb, discriminator = VQAModel(), GenB(), Discriminator()
optim = torch.optim.Adamax(model.parameters(), lr=0.001)
optim_G = torch.optim.Adamax(genb.parameters(), lr=0.001)
optim_D = torch.optim.Adamax(discriminator.parameters(), lr=0.001)
kld = nn.KLDivLoss(reduction='batchmean')
bce = nn.BCELoss()

v = torch.randn(B, 12).requires_grad_()
q = torch.randint(0, 20, (B, 5))
a = (torch.rand(B, N_ANS) > 0.8).float()
valid = torch.ones(B, 1)
fake = torch.zeros(B, 1)

w0 = genb.classifier.weight.detach().clone()
optim.zero_grad()
pred = model(v, q)

# train genb
optim_G.zero_grad()
optim_D.zero_grad()
pred_g = genb(v, q, gen=True)
g_loss = F.binary_cross_entropy_with_logits(pred_g, a, reduction='none').mean()
g_loss *= a.size(1)
vae_preds = discriminator(pred_g)
main_preds = discriminator(pred)
g_distill = kld(pred_g, pred.detach())
dsc_loss = bce(vae_preds, valid) + bce(main_preds, valid)
g_loss += dsc_loss + g_distill * 5
g_loss.backward(retain_graph=True)
nn.utils.clip_grad_norm_(genb.parameters(), 0.25)
optim_G.step()  # <- inplace_saved

# train the discriminator
dsc_loss = bce(vae_preds, fake) + bce(main_preds, valid)
dsc_loss.backward(retain_graph=True)
optim_D.step()

# use genb to train the robust model
genb.train(False)
pred_g = genb(v, q, gen=False)
genb_loss = calc_genb_loss(pred, pred_g, a)
genb_loss.backward()
nn.utils.clip_grad_norm_(model.parameters(), 0.25)
optim.step()
print("genb classifier grad:", genb.classifier.weight.grad.abs().sum().item())
print("genb_loss:", genb_loss.item())
print("genb weights changed:", not torch.equal(w0, genb.classifier.weight))
