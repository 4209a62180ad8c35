"""Federated averaging (McMahan et al. 2017), reduced from shaoxiongji/federated-learning
(https://github.com/shaoxiongji/federated-learning: main_fed.py, models/Update.py `LocalUpdate.train`,
models/Fed.py `FedAvg`, models/Nets.py `MLP`).

Each round, a few clients each get `copy.deepcopy(net_glob)`, build their OWN local SGD optimizer on that
copy, train it for a few local steps (`net.zero_grad()` before each step, losses logged with `.item()`),
and return `net.state_dict()`. The server averages the clients' state_dicts key by key
(`w_avg = copy.deepcopy(w[0])`, `w_avg[k] += w[i][k]`, `torch.div(w_avg[k], len(w))`) and
`net_glob.load_state_dict(w_glob)`.

Suspicious-but-correct patterns kept: the global model `net_glob` is never given an optimizer, never runs a
backward pass and never holds a `.grad`: it learns only through `load_state_dict` of the averaged client
weights; every client is a throw-away deep copy whose optimizer is rebuilt each round; the averaged
state_dict is built from detached `state_dict()` tensors with in-place `+=`; the global model is
evaluated under `torch.no_grad()`; losses are accumulated as Python floats via `.item()`.
"""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    # models/Nets.py
    def __init__(self, dim_in, dim_hidden, dim_out):
        super().__init__()
        self.layer_input = nn.Linear(dim_in, dim_hidden)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout()
        self.layer_hidden = nn.Linear(dim_hidden, dim_out)

    def forward(self, x):
        x = x.view(-1, x.shape[1] * x.shape[-2] * x.shape[-1])
        x = self.layer_input(x)
        x = self.dropout(x)
        x = self.relu(x)
        x = self.layer_hidden(x)
        return x


class LocalUpdate:
    # models/Update.py
    def __init__(self, images, labels, local_ep=1, local_bs=8, lr=0.05):
        self.loss_func = nn.CrossEntropyLoss()
        self.images, self.labels = images, labels
        self.local_ep, self.local_bs, self.lr = local_ep, local_bs, lr

    def train(self, net):
        net.train()
        optimizer = torch.optim.SGD(net.parameters(), lr=self.lr, momentum=0.5)
        epoch_loss = []
        for _ in range(self.local_ep):
            batch_loss = []
            for start in range(0, len(self.images), self.local_bs):
                images = self.images[start:start + self.local_bs]
                labels = self.labels[start:start + self.local_bs]
                net.zero_grad()
                log_probs = net(images)
                loss = self.loss_func(log_probs, labels)
                loss.backward()
                optimizer.step()
                batch_loss.append(loss.item())
            epoch_loss.append(sum(batch_loss) / len(batch_loss))
        return net.state_dict(), sum(epoch_loss) / len(epoch_loss)


def FedAvg(w):
    # models/Fed.py
    w_avg = copy.deepcopy(w[0])
    for k in w_avg.keys():
        for i in range(1, len(w)):
            w_avg[k] += w[i][k]
        w_avg[k] = torch.div(w_avg[k], len(w))
    return w_avg


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_users, frac, num_classes = 6, 0.5, 4
    # tiny non-iid "MNIST": each user sees images drawn around two class prototypes
    prototypes = torch.randn(num_classes, 1, 6, 6)
    dict_users = []
    for u in range(num_users):
        labels = torch.tensor([u % num_classes, (u + 1) % num_classes]).repeat(8)
        images = prototypes[labels] + 0.3 * torch.randn(16, 1, 6, 6)
        dict_users.append((images, labels))

    net_glob = MLP(dim_in=36, dim_hidden=32, dim_out=num_classes)
    net_glob.train()
    w_glob = net_glob.state_dict()

    test_x = prototypes.repeat(4, 1, 1, 1) + 0.3 * torch.randn(16, 1, 6, 6)
    test_y = torch.arange(num_classes).repeat(4)
    loss_train = []
    for step in range(5):
        w_locals, loss_locals = [], []
        m = max(int(frac * num_users), 1)
        idxs_users = torch.randperm(num_users)[:m].tolist()
        for idx in idxs_users:
            local = LocalUpdate(*dict_users[idx])
            w, loss = local.train(net=copy.deepcopy(net_glob))
            w_locals.append(copy.deepcopy(w))
            loss_locals.append(copy.deepcopy(loss))
        # update global weights
        w_glob = FedAvg(w_locals)
        # copy weight to net_glob
        net_glob.load_state_dict(w_glob)
        loss_avg = sum(loss_locals) / len(loss_locals)
        loss_train.append(loss_avg)
        net_glob.eval()
        with torch.no_grad():
            loss = F.cross_entropy(net_glob(test_x), test_y)
        net_glob.train()
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"net_glob": net_glob.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
