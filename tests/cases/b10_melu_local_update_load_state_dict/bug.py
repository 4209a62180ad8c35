"""MeLU's local update (hoyeoplee/MeLU#9): the support loss's gradients are taken with create_graph=True, the fast
weights are computed as weight - local_lr * grad, written into the model with
self.model.load_state_dict(self.fast_weights) for the query prediction, and the kept weights are loaded back;
"load_state_dict() will erase (break) the gradient", so the global update cannot see the local update, and with
today's PyTorch the copies into the parameters the graph saved make losses_q.backward() raise "one of the
variables needed for gradient computation has been modified by an inplace operation" (the fix evaluates the model
at the fast weights with torch.func.functional_call)."""
import copy
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call


class user_preference_estimator(nn.Module):
    def __init__(self, n_items=30, n_users=20, embedding_dim=8):
        super().__init__()
        self.item_emb = nn.Embedding(n_items, embedding_dim)
        self.user_emb = nn.Embedding(n_users, embedding_dim)
        self.fc1 = nn.Linear(2 * embedding_dim, 16)
        self.fc2 = nn.Linear(16, 8)
        self.linear_out = nn.Linear(8, 1)

    def forward(self, x):
        x = torch.cat((self.item_emb(x[:, 0]), self.user_emb(x[:, 1])), 1)
        return self.linear_out(F.relu(self.fc2(F.relu(self.fc1(x)))))


class MeLU(nn.Module):
    def __init__(self, local_lr=5e-2, lr=5e-3):
        super().__init__()
        self.model = user_preference_estimator()
        self.local_lr = local_lr
        self.store_parameters()
        self.meta_optim = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.local_update_target_weight_name = ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias',
                                                'linear_out.weight', 'linear_out.bias']

    def store_parameters(self):
        self.keep_weight = copy.deepcopy(self.model.state_dict())
        self.weight_name = list(self.keep_weight.keys())
        self.weight_len = len(self.keep_weight)
        self.fast_weights = OrderedDict()

    def forward(self, support_set_x, support_set_y, query_set_x):
        weight_for_local_update = list(self.model.state_dict().values())
        support_set_y_pred = self.model(support_set_x)
        loss = F.mse_loss(support_set_y_pred, support_set_y.view(-1, 1))
        self.model.zero_grad()
        grad = torch.autograd.grad(loss, self.model.parameters(), create_graph=True)
        for i in range(self.weight_len):
            if self.weight_name[i] in self.local_update_target_weight_name:
                self.fast_weights[self.weight_name[i]] = weight_for_local_update[i] - self.local_lr * grad[i]
            else:
                self.fast_weights[self.weight_name[i]] = weight_for_local_update[i]
        self.model.load_state_dict(self.fast_weights)  # <- state_dict_reload
        query_set_y_pred = self.model(query_set_x)
        self.model.load_state_dict(self.keep_weight)
        return query_set_y_pred

    def global_update(self, support_set_xs, support_set_ys, query_set_xs, query_set_ys):
        losses_q = []
        for i in range(len(support_set_xs)):
            query_set_y_pred = self.forward(support_set_xs[i], support_set_ys[i], query_set_xs[i])
            losses_q.append(F.mse_loss(query_set_y_pred, query_set_ys[i].view(-1, 1)))
        losses_q = torch.stack(losses_q).mean(0)
        self.meta_optim.zero_grad()
        losses_q.backward()
        self.meta_optim.step()
        self.store_parameters()
        return losses_q.item()


def user_task():
    x = torch.stack([torch.randint(0, 30, (10,)), torch.randint(0, 20, (10,))], 1)
    return x[:6], torch.rand(6) * 5, x[6:], torch.rand(4) * 5


torch.manual_seed(0)
melu = MeLU()
for epoch in range(3):
    tasks = [user_task() for _ in range(4)]
    loss = melu.global_update(*(list(t) for t in zip(*tasks)))
    print(f"epoch {epoch}: query loss {loss:.4f}")
