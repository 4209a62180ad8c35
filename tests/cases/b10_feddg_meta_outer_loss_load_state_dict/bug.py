"""FedDG's episodic meta step in a federated run (JeremyCJM/CCST#10): each client computes an inner loss, takes a
differentiable step, loads the stepped weights into a copy with model_tmp.load_state_dict(...) and adds the copy's
loss on the outer (frequency-augmented) batch to the total; load_state_dict copies values, not the graph, so the
outer term sends no gradient back to the client model's parameters (the fix evaluates the model at the stepped
weights with torch.func.functional_call)."""
import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call


def train_meta(model, x_inner, y_inner, x_outer, y_outer, optimizer, meta_step_size=0.1):
    model_tmp = copy.deepcopy(model)
    loss_inner = F.cross_entropy(model(x_inner), y_inner)
    grads = torch.autograd.grad(loss_inner, list(model.parameters()), create_graph=True)
    fast_weights = {name: p - meta_step_size * g for (name, p), g in zip(model.named_parameters(), grads)}
    model_tmp.load_state_dict(fast_weights)  # <- cut_term
    loss_outer = F.cross_entropy(model_tmp(x_outer), y_outer)
    outer_grads = torch.autograd.grad(loss_outer, list(model.parameters()), retain_graph=True, allow_unused=True)
    total_loss = loss_inner + loss_outer
    optimizer.zero_grad()
    total_loss.backward()
    optimizer.step()
    return loss_inner.item(), loss_outer.item(), any(g is not None for g in outer_grads)


torch.manual_seed(0)
clients = [nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3)) for _ in range(2)]
for client_idx, model in enumerate(clients):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x_inner, y_inner = torch.randn(32, 10), torch.randint(0, 3, (32,))
    x_outer, y_outer = x_inner + 0.3 * torch.randn(32, 10), y_inner
    for step in range(15):
        inner, outer, reaches = train_meta(model, x_inner, y_inner, x_outer, y_outer, optimizer)
    print(f"client {client_idx}: inner loss {inner:.4f}, outer loss {outer:.4f}, outer loss reaches the model: {reaches}")
