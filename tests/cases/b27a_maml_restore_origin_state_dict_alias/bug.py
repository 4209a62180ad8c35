"""dragen1860/MAML-Pytorch issue #9 "Pytorch implementation of meta updating",
https://github.com/dragen1860/MAML-Pytorch/issues/9. The reporter writes MAML with an ordinary module and two
optimizers: for each task he saves `parameters_origin = model.state_dict()`, takes an inner SGD step on the
support set, computes the query loss with the adapted weights, and restores the weights with
`model.load_state_dict(parameters_origin)` before the meta update with the summed query loss. Accuracy
"waved around 20" (no learning). state_dict() returns tensors that share storage with the live parameters,
so the inner `step()` also changes `parameters_origin`; loading it back restores nothing and every task
starts from the previous task's adapted weights. (The maintainer only said state_dict() does not fit his
own model class; the thread does not name the aliasing, so this cause is our reading of the code.)
Fix: snapshot a real copy, `copy.deepcopy(model.state_dict())`."""
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)

n_way, k_shot, k_query, batchsz = 5, 2, 4, 4
net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, n_way))
inner_optim = torch.optim.SGD(net.parameters(), lr=0.4)
meta_optim = torch.optim.Adam(net.parameters(), lr=1e-3)


def sample_tasks():
    xs = torch.randn(batchsz, n_way * k_shot, 16)
    ys = torch.arange(n_way).repeat(k_shot).expand(batchsz, -1)
    xq = torch.randn(batchsz, n_way * k_query, 16)
    yq = torch.arange(n_way).repeat(k_query).expand(batchsz, -1)
    return xs, ys, xq, yq


restored = []
for it in range(3):
    support_x, support_y, query_x, query_y = sample_tasks()
    meta_grads = [torch.zeros_like(p) for p in net.parameters()]
    for i in range(batchsz):
        parameters_origin = net.state_dict()  # <- state_dict_alias
        w_before = net[0].weight.detach().clone()
        # 1. inner update on the support set
        inner_optim.zero_grad()
        loss = F.cross_entropy(net(support_x[i]), support_y[i])
        loss.backward()
        inner_optim.step()
        # 2. query loss with the adapted weights (first-order meta gradient)
        inner_optim.zero_grad()
        loss_q = F.cross_entropy(net(query_x[i]), query_y[i])
        loss_q.backward()
        for g, p in zip(meta_grads, net.parameters()):
            g += p.grad
        # 3. regain the weights from before the inner update
        net.load_state_dict(parameters_origin)
        restored.append(torch.equal(net[0].weight, w_before))
    # 4. meta update with the summed query gradients
    for p, g in zip(net.parameters(), meta_grads):
        p.grad = g / batchsz
    meta_optim.step()

print("weights restored to the pre-update values after each task:", all(restored))
