"""PCGrad / gradient surgery (Yu et al. 2020) on Multi-MNIST, reduced from WeiChengTseng/Pytorch-PCGrad
(https://github.com/WeiChengTseng/Pytorch-PCGrad: pcgrad.py `PCGrad`, main_multi_mnist.py, net/lenet.py
`MultiLeNetR` / `MultiLeNetO`, themselves taken from intel-isl/MultiObjectiveOptimization).

A shared LeNet encoder and two task heads (left digit, right digit) under ONE Adam wrapped by `PCGrad`.
`pc_backward(losses)`: for each task loss, `zero_grad(set_to_none=True)` then
`obj.backward(retain_graph=True)` and collect `p.grad.clone()` (zeros plus a has_grad mask where a head
got no gradient from that task); flatten, project each task gradient onto the normal plane of every
conflicting one, average the shared part and sum the task-specific part, unflatten and write it back with
`p.grad = grads[idx]`; then the wrapped optimizer steps.

Suspicious-but-correct patterns kept: `.grad` is cleared (set to None) between the per-task backward
passes on purpose and finally REPLACED by a freshly built tensor assigned to `p.grad`; the per-task grads
are cloned, deep-copied and modified in place (`g_i -= ...`); each task head gets no gradient from the other
task's loss (handled by the has_grad mask); the optimizer is hidden behind a wrapper that only forwards
`step`/`zero_grad`; the channel-dropout masks are sampled with `torch.bernoulli` outside autograd.
(Python's random.shuffle of the task order is replaced by a torch.randperm order.)
"""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class PCGrad():
    def __init__(self, optimizer, reduction='mean'):
        self._optim, self._reduction = optimizer, reduction

    @property
    def optimizer(self):
        return self._optim

    def zero_grad(self):
        return self._optim.zero_grad(set_to_none=True)

    def step(self):
        return self._optim.step()

    def pc_backward(self, objectives):
        grads, shapes, has_grads = self._pack_grad(objectives)
        pc_grad = self._project_conflicting(grads, has_grads)
        pc_grad = self._unflatten_grad(pc_grad, shapes[0])
        self._set_grad(pc_grad)
        return

    def _project_conflicting(self, grads, has_grads, shapes=None):
        shared = torch.stack(has_grads).prod(0).bool()
        pc_grad, num_task = copy.deepcopy(grads), len(grads)
        for g_i in pc_grad:
            order = torch.randperm(num_task).tolist()  # random.shuffle(grads)
            for j in order:
                g_j = grads[j]
                g_i_g_j = torch.dot(g_i, g_j)
                if g_i_g_j < 0:
                    g_i -= (g_i_g_j) * g_j / (g_j.norm() ** 2)
        merged_grad = torch.zeros_like(grads[0]).to(grads[0].device)
        if self._reduction == 'mean':
            merged_grad[shared] = torch.stack([g[shared] for g in pc_grad]).mean(dim=0)
        elif self._reduction == 'sum':
            merged_grad[shared] = torch.stack([g[shared] for g in pc_grad]).sum(dim=0)
        else:
            exit('invalid reduction method')
        merged_grad[~shared] = torch.stack([g[~shared] for g in pc_grad]).sum(dim=0)
        return merged_grad

    def _set_grad(self, grads):
        idx = 0
        for group in self._optim.param_groups:
            for p in group['params']:
                # if p.grad is None: continue
                p.grad = grads[idx]
                idx += 1
        return

    def _pack_grad(self, objectives):
        grads, shapes, has_grads = [], [], []
        for obj in objectives:
            self._optim.zero_grad(set_to_none=True)
            obj.backward(retain_graph=True)
            grad, shape, has_grad = self._retrieve_grad()
            grads.append(self._flatten_grad(grad, shape))
            has_grads.append(self._flatten_grad(has_grad, shape))
            shapes.append(shape)
        return grads, shapes, has_grads

    def _unflatten_grad(self, grads, shapes):
        unflatten_grad, idx = [], 0
        for shape in shapes:
            length = shape.numel()
            unflatten_grad.append(grads[idx:idx + length].view(shape).clone())
            idx += length
        return unflatten_grad

    def _flatten_grad(self, grads, shapes):
        flatten_grad = torch.cat([g.flatten() for g in grads])
        return flatten_grad

    def _retrieve_grad(self):
        grad, shape, has_grad = [], [], []
        for group in self._optim.param_groups:
            for p in group['params']:
                if p.grad is None:
                    shape.append(p.shape)
                    grad.append(torch.zeros_like(p).to(p.device))
                    has_grad.append(torch.zeros_like(p).to(p.device))
                    continue
                shape.append(p.grad.shape)
                grad.append(p.grad.clone())
                has_grad.append(torch.ones_like(p).to(p.device))
        return grad, shape, has_grad


class MultiLeNetR(nn.Module):
    def __init__(self):
        super().__init__()
        self._conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self._conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self._fc = nn.Linear(320, 50)

    def dropout2dwithmask(self, x, mask):
        channel_size = x.shape[1]
        if mask is None:
            mask = torch.bernoulli(torch.ones(1, channel_size, 1, 1) * 0.5).to(x.device)
        mask = mask.expand(x.shape)
        return mask

    def forward(self, x, mask):
        x = F.relu(F.max_pool2d(self._conv1(x), 2))
        x = self._conv2(x)
        mask = self.dropout2dwithmask(x, mask)
        if self.training:
            x = x * mask
        x = F.relu(F.max_pool2d(x, 2))
        x = x.view(-1, 320)
        x = F.relu(self._fc(x))
        return x, mask


class MultiLeNetO(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(50, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x, mask):
        x = F.relu(self.fc1(x))
        if mask is None:
            mask = torch.bernoulli(x.data.new(x.data.size()).fill_(0.5))
        if self.training:
            x = x * mask
        x = self.fc2(x)
        return F.log_softmax(x, dim=1), mask


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = MultiLeNetR()
    net_l = MultiLeNetO()
    net_r = MultiLeNetO()
    param = [p for p in net.parameters() if p.requires_grad]
    param.extend([p for p in net_l.parameters() if p.requires_grad])
    param.extend([p for p in net_r.parameters() if p.requires_grad])
    optimizer = torch.optim.Adam(param, lr=5e-4)
    optimizer = PCGrad(optimizer)

    # tiny "Multi-MNIST": two overlapping digit prototypes, one at top-left, one at bottom-right
    digits = torch.randn(10, 1, 20, 20)
    for step in range(5):
        net.train()
        net_l.train()
        net_r.train()
        label_l, label_r = torch.randint(0, 10, (16,)), torch.randint(0, 10, (16,))
        img = torch.zeros(16, 1, 28, 28)
        img[:, :, :20, :20] += digits[label_l]
        img[:, :, 8:, 8:] += digits[label_r]
        img = img + 0.1 * torch.randn_like(img)

        mask = None
        optimizer.zero_grad()
        rep, mask = net(img, mask)
        out_l, mask_l = net_l(rep, None)
        out_r, mask_r = net_r(rep, None)
        losses = [F.nll_loss(out_l, label_l), F.nll_loss(out_r, label_r)]
        optimizer.pc_backward(losses)
        optimizer.step()
        loss = losses[0] + losses[1]
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"net": net.state_dict(), "net_l": net_l.state_dict(), "net_r": net_r.state_dict(),
                    "optimizer": optimizer.optimizer.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
