"""Graph attention network in plain PyTorch, reduced from Diego999/pyGAT
(https://github.com/Diego999/pyGAT: layers.py ``GraphAttentionLayer``, models.py ``GAT``, train.py, utils.py).

Patterns kept (each looks like a cut but is right):
- ``nn.init.xavier_uniform_(self.W.data, gain=1.414)`` and the same for ``self.a.data``: initialisation
  through ``.data`` at construction, before any graph exists.
- ``zero_vec = -9e15 * torch.ones_like(e)`` with ``torch.where(adj > 0, e, zero_vec)``: non-edges are
  masked with a constant; the attention logits of real edges keep their gradient.
- ``Wh1 = torch.matmul(Wh, self.a[:self.out_features, :])``: slicing a Parameter is differentiable, so both
  halves of ``a`` learn.
- heads are registered with ``self.add_module('attention_{}'.format(i), attention)`` while also kept in a
  plain Python list ``self.attentions``: registration makes their parameters visible to ``parameters()``.
- the loss uses ``output[idx_train]`` only (semi-supervised node classification); validation runs the
  same forward in ``model.eval()`` with its loss used for model selection, not backpropagated.
- early stopping saves ``model.state_dict()`` at the best epoch (the repo writes ``{epoch}.pkl``; here a
  deep copy in memory) and ``model.load_state_dict(best_state)`` restores it at the end: the restored
  weights are a post-step snapshot of the trained model, so nothing learned is lost but later epochs.
"""
import copy
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features, out_features, dropout, alpha, concat=True):
        super().__init__()
        self.dropout, self.in_features, self.out_features = dropout, in_features, out_features
        self.alpha, self.concat = alpha, concat
        self.W = nn.Parameter(torch.empty(size=(in_features, out_features)))
        nn.init.xavier_uniform_(self.W.data, gain=1.414)
        self.a = nn.Parameter(torch.empty(size=(2 * out_features, 1)))
        nn.init.xavier_uniform_(self.a.data, gain=1.414)
        self.leakyrelu = nn.LeakyReLU(self.alpha)

    def forward(self, h, adj):
        Wh = torch.mm(h, self.W)
        e = self._prepare_attentional_mechanism_input(Wh)
        zero_vec = -9e15 * torch.ones_like(e)
        attention = torch.where(adj > 0, e, zero_vec)
        attention = F.softmax(attention, dim=1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = torch.matmul(attention, Wh)
        return F.elu(h_prime) if self.concat else h_prime

    def _prepare_attentional_mechanism_input(self, Wh):
        Wh1 = torch.matmul(Wh, self.a[:self.out_features, :])
        Wh2 = torch.matmul(Wh, self.a[self.out_features:, :])
        e = Wh1 + Wh2.T
        return self.leakyrelu(e)


class GAT(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
        super().__init__()
        self.dropout = dropout
        self.attentions = [GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True)
                           for _ in range(nheads)]
        for i, attention in enumerate(self.attentions):
            self.add_module('attention_{}'.format(i), attention)
        self.out_att = GraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False)

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
        x = F.dropout(x, self.dropout, training=self.training)
        x = F.elu(self.out_att(x, adj))
        return F.log_softmax(x, dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    return correct.sum() / len(labels)


def normalize_features(mx):
    rowsum = np.array(mx.sum(1))
    r_inv = np.power(rowsum, -1).flatten()
    r_inv[np.isinf(r_inv)] = 0.
    return np.diag(r_inv).dot(mx)


def normalize_adj(mx):
    rowsum = np.array(mx.sum(1))
    r_inv_sqrt = np.power(rowsum, -0.5).flatten()
    r_inv_sqrt[np.isinf(r_inv_sqrt)] = 0.
    d = np.diag(r_inv_sqrt)
    return mx.dot(d).transpose().dot(d)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.RandomState(0)
    n, nfeat, nclass = 30, 12, 3
    labels_np = rng.randint(0, nclass, n)
    features_np = (rng.rand(n, nfeat) < 0.05).astype(np.float32) + 2 * np.eye(nclass, nfeat)[labels_np]
    adj_np = (rng.rand(n, n) < 0.1).astype(np.float32)
    adj_np = np.maximum(adj_np, (labels_np[:, None] == labels_np[None, :]) * (rng.rand(n, n) < 0.2))
    adj_np = np.maximum(adj_np, adj_np.T)
    features = torch.FloatTensor(normalize_features(features_np))
    adj = torch.FloatTensor(normalize_adj(adj_np + np.eye(n)))
    labels = torch.LongTensor(labels_np)
    idx_train, idx_val = torch.arange(0, 12), torch.arange(12, 22)

    model = GAT(nfeat=nfeat, nhid=8, nclass=nclass, dropout=0.6, alpha=0.2, nheads=4)
    optimizer = optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)

    loss_values, bad_counter, best, best_epoch, best_state, patience = [], 0, float('inf'), 0, None, 8
    for epoch in range(20):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        model.eval()
        output = model(features, adj)
        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        acc_val = accuracy(output[idx_val], labels[idx_val])
        print(f"Epoch {epoch + 1:04d} loss_train {loss_train.data.item():.4f} acc_train {acc_train.data.item():.4f} "
              f"loss_val {loss_val.data.item():.4f} acc_val {acc_val.data.item():.4f}")
        loss_values.append(loss_val.data.item())
        if loss_values[-1] < best:
            best, best_epoch, bad_counter = loss_values[-1], epoch, 0
            best_state = copy.deepcopy(model.state_dict())  # torch.save(model.state_dict(), '{}.pkl'.format(epoch))
        else:
            bad_counter += 1
        if bad_counter == patience:
            break
    print(f"Loading {best_epoch}th epoch")
    model.load_state_dict(best_state)
    model.eval()
    output = model(features, adj)
    idx_test = torch.arange(22, 30)
    print(f"Test set results: loss {F.nll_loss(output[idx_test], labels[idx_test]).item():.4f} "
          f"accuracy {accuracy(output[idx_test], labels[idx_test]).item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
