# FACIL's Learning without Memorizing (LwM), class-incremental learning: the attention
# distillation loss compares Grad-CAM maps of the current and the old model. The GradCAM
# helper stores the hooked layer's activations detached and builds the map under no_grad,
# so the current model's map has no graph and the attention term never trains anything.
import torch
import torch.nn.functional as F
from copy import deepcopy
from torch import nn

torch.manual_seed(0)


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.layer3 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())

    def forward(self, x):
        return self.layer3(self.layer1(x)).mean((2, 3))


class LLL_Net(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model, self.heads = model, nn.ModuleList()

    def add_head(self, n):
        self.heads.append(nn.Linear(8, n))

    def forward(self, x):
        f = self.model(x)
        return [h(f) for h in self.heads]


class GradCAM:
    def __init__(self, model, layer_name, retain_graph=False):
        self.model = model
        self.model_layer = getattr(self.model.model, layer_name)
        self.activations, self.gradients, self.retain_graph = None, None, retain_graph

    def __enter__(self):
        def forward_hook(module, input, output):
            self.activations = output.detach()  # <- cut_term

        def backward_hook(module, grad_input, grad_output):
            self.gradients = grad_output[0].detach()
        self.fhandle = self.model_layer.register_forward_hook(forward_hook)
        self.bhandle = self.model_layer.register_backward_hook(backward_hook)
        return self

    def __exit__(self, *args):
        self.fhandle.remove()
        self.bhandle.remove()

    def __call__(self, input, return_outputs=False):
        self.model.eval()
        model_output = self.model(input)
        logits = torch.cat(model_output, dim=1)
        score = logits[:, logits.argmax(dim=1)].squeeze()
        self.model.zero_grad()
        score.mean().backward(retain_graph=self.retain_graph)
        model_output = [o.detach() for o in model_output]
        with torch.no_grad():
            weights = F.adaptive_avg_pool2d(self.gradients, 1)
            att_map = F.relu((weights * self.activations).sum(dim=1, keepdim=True))
            return (att_map, model_output) if return_outputs else att_map


def attention_distillation_loss(a1, a2):
    a1 = F.normalize(a1.view(a1.size(0), -1), p=2, dim=1)
    a2 = F.normalize(a2.view(a1.size(0), -1), p=2, dim=1)
    return torch.norm(a2 - a1, p=1, dim=1).mean()


def criterion(t, outputs, targets, outputs_old, attmap, attmap_old, beta=1.0, gamma=1.0):
    loss_kd = beta * F.kl_div(F.log_softmax(torch.cat(outputs[:t], 1), 1),
                              F.softmax(torch.cat(outputs_old[:t], 1), 1), reduction="batchmean")
    loss_atn = gamma * attention_distillation_loss(attmap, attmap_old)
    loss_ce = F.cross_entropy(outputs[t], targets)
    return loss_kd + loss_atn + loss_ce, loss_atn


model = LLL_Net(Backbone())
model.add_head(2)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(3):  # task 0
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 2, (8,))
    opt.zero_grad()
    F.cross_entropy(model(x)[0], y).backward()
    opt.step()

model_old = deepcopy(model)  # post_train_process
model.add_head(2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
with GradCAM(model_old, "layer3") as gradcam_old:  # train_epoch for task 1
    for step in range(3):
        images, targets = torch.randn(8, 3, 8, 8), torch.randint(0, 2, (8,))
        attmap_old, outputs_old = gradcam_old(images, return_outputs=True)
        with GradCAM(model, "layer3") as gradcam:
            attmap = gradcam(images)
        model.zero_grad()
        model.train()
        outputs = model(images)
        loss, loss_atn = criterion(1, outputs, targets, outputs_old, attmap, attmap_old)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print("step", step, "attention loss", round(loss_atn.item(), 4),
              "requires_grad", loss_atn.requires_grad)  # <- symptom
