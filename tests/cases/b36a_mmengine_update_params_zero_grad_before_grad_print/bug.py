"""mmdetection issue #11234 (Chinese): to watch the gradients, the user added prints of name / weight / requires_grad /
grad around optim_wrapper.update_params(parsed_losses) in mmengine's BaseModel.train_step. After the update the
printed grad is always None. As the follow-up comment found, update_params runs backward, then step, then
immediately zero_grad (set_to_none), so by the time the print runs the gradients have been wiped. Reading them needs
optim_wrapper.backward(loss), the prints, then optim_wrapper.step() and zero_grad(). mmengine's OptimWrapper and
BaseModel are reproduced in plain torch."""
import torch
from torch import nn


class OptimWrapper:  # mmengine.optim.OptimWrapper (no accumulation)
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def backward(self, loss):
        loss.backward()

    def step(self):
        self.optimizer.step()

    def zero_grad(self):
        self.optimizer.zero_grad()

    def update_params(self, loss):
        self.backward(loss)
        self.step()
        self.zero_grad()


class TinyDetector(nn.Module):  # stands in for the mmdet model (BaseModel subclass)
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
        self.cls_head = nn.Conv2d(8, 4, 1)

    def loss(self, imgs, labels):
        logits = self.cls_head(self.backbone(imgs)).mean((2, 3))
        return {"loss_cls": nn.functional.cross_entropy(logits, labels), "acc": (logits.argmax(1) == labels).float().mean()}

    def parse_losses(self, losses):
        loss = sum(v for k, v in losses.items() if "loss" in k)
        return loss, {k: v.item() for k, v in losses.items()}

    def train_step(self, data, optim_wrapper):
        losses = self.loss(*data)
        parsed_losses, log_vars = self.parse_losses(losses)

        for name, parms in self.named_parameters():
            print("-->name:", name)
            print("-->para:", parms[0, 0, 0, :])
            print("-->grad_requirs:", parms.requires_grad)
            print("-->grad_value:", parms.grad)
            break

        optim_wrapper.update_params(parsed_losses)  # <- optimizer

        for name, parms in self.named_parameters():
            print("-->name:", name)
            print("-->para:", parms[0, 0, 0, :])
            print("-->grad_requirs:", parms.requires_grad)
            print("-->grad_value:", parms.grad)  # None here
            break
        return log_vars


torch.manual_seed(0)
model = TinyDetector()
optim_wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9))
for it in range(2):
    data = (torch.randn(4, 3, 16, 16), torch.randint(0, 4, (4,)))
    print(f"iter {it}:", model.train_step(data, optim_wrapper))
