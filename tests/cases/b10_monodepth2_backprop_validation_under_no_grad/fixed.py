"""The fixed twin: the batch the modified val() trains on is processed with gradients (nianticlabs/monodepth2#24)."""
import torch
import torch.nn.functional as F
from torch import nn


def get_smooth_loss(disp, img):
    grad_disp_x = torch.abs(disp[:, :, :, :-1] - disp[:, :, :, 1:])
    grad_img_x = torch.mean(torch.abs(img[:, :, :, :-1] - img[:, :, :, 1:]), 1, keepdim=True)
    return (grad_disp_x * torch.exp(-grad_img_x)).mean()


class Trainer:
    def __init__(self):
        self.depth = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ELU(), nn.Conv2d(16, 1, 3, padding=1), nn.Sigmoid())
        self.model_optimizer = torch.optim.Adam(self.depth.parameters(), lr=1e-3)
        self.train_batches = [{"color": torch.rand(2, 3, 16, 16), "target": torch.rand(2, 1, 16, 16)} for _ in range(3)]
        self.val_batch = {"color": torch.rand(2, 3, 16, 16), "target": torch.rand(2, 1, 16, 16)}

    def process_batch(self, inputs):
        outputs = {"disp": self.depth(inputs["color"])}
        reprojection = torch.abs(outputs["disp"] - inputs["target"]).mean()
        losses = {"loss": reprojection + 1e-3 * get_smooth_loss(outputs["disp"], inputs["color"])}
        return outputs, losses

    def run_epoch(self):
        for inputs in self.train_batches:
            outputs, losses = self.process_batch(inputs)
            self.model_optimizer.zero_grad()
            losses["loss"].backward()
            self.model_optimizer.step()
        self.val()

    def val(self):
        inputs = self.val_batch
        outputs, losses = self.process_batch(inputs)
        self.model_optimizer.zero_grad()
        losses["loss"].backward()
        self.model_optimizer.step()
        print(f"val loss {losses['loss'].item():.4f}")


torch.manual_seed(0)
trainer = Trainer()
for epoch in range(2):
    trainer.run_epoch()
