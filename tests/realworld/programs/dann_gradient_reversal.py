"""Domain-adversarial training (DANN, Ganin & Lempitsky 2015), reduced from fungtion/DANN
(https://github.com/fungtion/DANN: models/functions.py, models/model.py, train/main.py).

Patterns kept (each looks like a cut but is right):
- ``ReverseLayerF`` is a custom ``torch.autograd.Function`` whose forward is ``x.view_as(x)`` and whose
  backward returns ``grad_output.neg() * ctx.alpha, None``: the feature extractor gets the *reversed*
  domain gradient on purpose, and ``alpha`` is a Python float that needs no gradient.
- ``alpha = 2. / (1. + np.exp(-10 * p)) - 1`` is recomputed from the training progress each step with numpy;
  it is a schedule, not a learned quantity.
- domain labels are built with ``torch.zeros(batch_size).long()`` / ``torch.ones(...)``: constant targets.
- target-domain class labels are never used in the loss: only the domain head sees target images (the
  unsupervised adaptation setting), so the class head learns from source images only.
- ``input_data.expand(input_data.data.shape[0], 3, 28, 28)``: ``.data`` is read only for its shape; the
  grey source images are broadcast to three channels and the input needs no gradient anyway.
- at the very first step ``alpha`` is exactly 0, so the reversed domain gradient reaching the features is
  zero there; the domain head itself still learns, and later steps have alpha > 0.
- ``for p in my_net.parameters(): p.requires_grad = True`` at the start of training, kept from main.py.
"""
import os

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Function


class ReverseLayerF(Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        output = grad_output.neg() * ctx.alpha
        return output, None


class CNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature = nn.Sequential()
        self.feature.add_module('f_conv1', nn.Conv2d(3, 8, kernel_size=5))
        self.feature.add_module('f_bn1', nn.BatchNorm2d(8))
        self.feature.add_module('f_pool1', nn.MaxPool2d(2))
        self.feature.add_module('f_relu1', nn.ReLU(True))
        self.feature.add_module('f_conv2', nn.Conv2d(8, 12, kernel_size=5))
        self.feature.add_module('f_bn2', nn.BatchNorm2d(12))
        self.feature.add_module('f_drop1', nn.Dropout2d())
        self.feature.add_module('f_pool2', nn.MaxPool2d(2))
        self.feature.add_module('f_relu2', nn.ReLU(True))

        self.class_classifier = nn.Sequential()
        self.class_classifier.add_module('c_fc1', nn.Linear(12 * 4 * 4, 32))
        self.class_classifier.add_module('c_bn1', nn.BatchNorm1d(32))
        self.class_classifier.add_module('c_relu1', nn.ReLU(True))
        self.class_classifier.add_module('c_fc2', nn.Linear(32, 10))
        self.class_classifier.add_module('c_softmax', nn.LogSoftmax(dim=1))

        self.domain_classifier = nn.Sequential()
        self.domain_classifier.add_module('d_fc1', nn.Linear(12 * 4 * 4, 32))
        self.domain_classifier.add_module('d_bn1', nn.BatchNorm1d(32))
        self.domain_classifier.add_module('d_relu1', nn.ReLU(True))
        self.domain_classifier.add_module('d_fc2', nn.Linear(32, 2))
        self.domain_classifier.add_module('d_softmax', nn.LogSoftmax(dim=1))

    def forward(self, input_data, alpha):
        input_data = input_data.expand(input_data.data.shape[0], 3, 28, 28)
        feature = self.feature(input_data)
        feature = feature.view(-1, 12 * 4 * 4)
        reverse_feature = ReverseLayerF.apply(feature, alpha)
        class_output = self.class_classifier(feature)
        domain_output = self.domain_classifier(reverse_feature)
        return class_output, domain_output


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    lr, batch_size, n_epoch = 1e-3, 8, 2
    # source: grey digits-like images; target: coloured, shifted versions (MNIST -> MNIST-M in the repo)
    src_x = torch.rand(32, 1, 28, 28)
    src_y = torch.randint(0, 10, (32,))
    tgt_x = (torch.rand(32, 3, 28, 28) + src_x) / 2
    my_net = CNNModel()
    optimizer = torch.optim.Adam(my_net.parameters(), lr=lr)
    loss_class = nn.NLLLoss()
    loss_domain = nn.NLLLoss()
    for p in my_net.parameters():
        p.requires_grad = True
    len_dataloader = src_x.size(0) // batch_size
    for epoch in range(n_epoch):
        for i in range(len_dataloader):
            p = float(i + epoch * len_dataloader) / n_epoch / len_dataloader
            alpha = 2. / (1. + np.exp(-10 * p)) - 1
            # training model using source data
            s_img = src_x[i * batch_size:(i + 1) * batch_size]
            s_label = src_y[i * batch_size:(i + 1) * batch_size]
            my_net.zero_grad()
            domain_label = torch.zeros(batch_size).long()
            class_output, domain_output = my_net(input_data=s_img, alpha=alpha)
            err_s_label = loss_class(class_output, s_label)
            err_s_domain = loss_domain(domain_output, domain_label)
            # training model using target data
            t_img = tgt_x[i * batch_size:(i + 1) * batch_size]
            domain_label = torch.ones(batch_size).long()
            _, domain_output = my_net(input_data=t_img, alpha=alpha)
            err_t_domain = loss_domain(domain_output, domain_label)
            err = err_t_domain + err_s_domain + err_s_label
            err.backward()
            optimizer.step()
            print(f"epoch {epoch} iter {i} alpha {alpha:.4f} err_s_label {err_s_label.item():.6f} "
                  f"err_s_domain {err_s_domain.item():.6f} err_t_domain {err_t_domain.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": my_net.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
