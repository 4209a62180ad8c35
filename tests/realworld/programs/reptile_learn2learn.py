"""Reptile (Nichol, Achiam & Schulman 2018) few-shot classification, reduced from learn2learn's official
example examples/vision/reptile_miniimagenet.py
(https://github.com/learnables/learn2learn/blob/master/examples/vision/reptile_miniimagenet.py).

Each meta-iteration: `p.grad = torch.zeros_like(p.data)` for every meta-parameter; for each task a
`learner = copy.deepcopy(model)` gets its OWN Adam (`adapt_opt`) whose state is carried from task to task
through `adapt_opt.load_state_dict(adapt_opt_state)` / `adapt_opt_state = adapt_opt.state_dict()`; the
learner is adapted with ordinary backward/step on the support set, evaluated on the query set, and then
`p.grad.data.add_(l.data, alpha=-1.0)` accumulates the NEGATIVE adapted weights into the meta-gradient.
Finally `p.grad.data.mul_(1.0 / meta_bsz).add_(p.data)` turns the buffer into `theta - mean(phi)` and the
outer SGD (meta_lr) steps the meta-model: theta <- theta + meta_lr * (mean(phi) - theta).

Suspicious-but-correct patterns kept: the meta-model `model` never runs backward itself; its `.grad` is
written by hand through `.data` from the weights of deep copies, and `opt.step()` consumes it; the first
`adapt_opt` is built over `model.parameters()` only to obtain an initial optimizer state_dict and is never
stepped; the query-set loss is divided in place (`valid_error /= len(...)`) and only logged via `.item()`;
the query evaluation's graph is discarded; learn2learn's CNN uses BatchNorm with track_running_stats=False.
"""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- stand-in for learn2learn.vision.models.MiniImagenetCNN (ConvBase of ConvBlocks + linear head) ---
class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.max_pool = nn.MaxPool2d(kernel_size=2, stride=2, ceil_mode=False)
        self.normalize = nn.BatchNorm2d(out_channels, affine=True, eps=1e-3, momentum=0.999,
                                        track_running_stats=False)
        nn.init.uniform_(self.normalize.weight)
        self.relu = nn.ReLU()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=1, padding=1, bias=True)
        nn.init.xavier_uniform_(self.conv.weight.data, gain=1.0)
        nn.init.constant_(self.conv.bias.data, 0.0)

    def forward(self, x):
        x = self.conv(x)
        x = self.normalize(x)
        x = self.relu(x)
        x = self.max_pool(x)
        return x


class MiniImagenetCNN(nn.Module):
    def __init__(self, output_size, hidden_size=8, layers=2):
        super().__init__()
        blocks = [ConvBlock(3, hidden_size)] + [ConvBlock(hidden_size, hidden_size) for _ in range(layers - 1)]
        self.features = nn.Sequential(*blocks)
        self.classifier = nn.Linear(hidden_size * 2 * 2, output_size, bias=True)
        self.classifier.weight.data.normal_()
        self.classifier.bias.data.mul_(0.0)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(x.reshape(x.size(0), -1))


def accuracy(predictions, targets):
    predictions = predictions.argmax(dim=1).view(targets.shape)
    return (predictions == targets).sum().float() / targets.size(0)


def fast_adapt(batch, learner, adapt_opt, loss, adaptation_steps, shots, ways, batch_size):
    data, labels = batch
    # Separate data into adaptation/evaluation sets
    adaptation_indices = torch.zeros(data.size(0), dtype=torch.bool)
    adaptation_indices[torch.arange(shots * ways) * 2] = True
    evaluation_indices = ~adaptation_indices
    adaptation_data, adaptation_labels = data[adaptation_indices], labels[adaptation_indices]
    evaluation_data, evaluation_labels = data[evaluation_indices], labels[evaluation_indices]

    # Adapt the model
    for _ in range(adaptation_steps):
        idx = torch.randint(adaptation_data.size(0), size=(batch_size,))
        adapt_X = adaptation_data[idx]
        adapt_y = adaptation_labels[idx]
        adapt_opt.zero_grad()
        error = loss(learner(adapt_X), adapt_y)
        error.backward()
        adapt_opt.step()

    # Evaluate the adapted model
    predictions = learner(evaluation_data)
    valid_error = loss(predictions, evaluation_labels)
    valid_error /= len(evaluation_data)
    valid_accuracy = accuracy(predictions, evaluation_labels)
    return valid_error, valid_accuracy


def sample_task(prototypes, ways, shots):
    # stand-in for train_tasks.sample(): 2*shots images per class, labels remapped to 0..ways-1
    classes = torch.randperm(prototypes.size(0))[:ways]
    labels = torch.arange(ways).repeat_interleave(2 * shots)
    data = prototypes[classes[labels]] + 0.5 * torch.randn(labels.size(0), 3, 8, 8)
    return data, labels


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ways, train_shots, meta_lr, meta_bsz, fast_lr = 3, 2, 1.0, 2, 0.01
    train_bsz, train_steps, iterations = 4, 3, 5
    prototypes = torch.randn(10, 3, 8, 8)

    # Create model
    model = MiniImagenetCNN(ways)
    opt = torch.optim.SGD(model.parameters(), meta_lr)
    adapt_opt = torch.optim.Adam(model.parameters(), lr=fast_lr, betas=(0.0, 0.999))
    adapt_opt_state = adapt_opt.state_dict()
    loss = nn.CrossEntropyLoss(reduction='mean')

    for iteration in range(iterations):
        opt.zero_grad()
        meta_train_error = 0.0
        meta_train_accuracy = 0.0

        # anneal meta-lr
        frac_done = float(iteration) / iterations
        new_lr = frac_done * meta_lr + (1 - frac_done) * meta_lr
        for pg in opt.param_groups:
            pg['lr'] = new_lr

        # zero-grad the parameters
        for p in model.parameters():
            p.grad = torch.zeros_like(p.data)

        for task in range(meta_bsz):
            # Compute meta-training loss
            learner = copy.deepcopy(model)
            adapt_opt = torch.optim.Adam(learner.parameters(), lr=fast_lr, betas=(0.0, 0.999))
            adapt_opt.load_state_dict(adapt_opt_state)
            batch = sample_task(prototypes, ways, train_shots)
            evaluation_error, evaluation_accuracy = fast_adapt(batch, learner, adapt_opt, loss, train_steps,
                                                               train_shots, ways, train_bsz)
            adapt_opt_state = adapt_opt.state_dict()
            for p, l in zip(model.parameters(), learner.parameters()):
                p.grad.data.add_(l.data, alpha=-1.0)

            meta_train_error += evaluation_error.item()
            meta_train_accuracy += evaluation_accuracy.item()

        # Average the accumulated gradients and optimize
        for p in model.parameters():
            p.grad.data.mul_(1.0 / meta_bsz).add_(p.data)
        opt.step()

        loss_value = torch.tensor(meta_train_error / meta_bsz)
        print(f"step {iteration} loss {loss_value.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
