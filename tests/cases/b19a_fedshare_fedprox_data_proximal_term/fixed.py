"""FedShare (yjlee22/FedShare PR #2, https://github.com/yjlee22/FedShare/pull/2): src/update.py adds the
FedProx proximal term mu/2 * ||w - w_t||^2 to the client loss, but builds it from `w.data - w_t.data`.
Symptom: the proximal term changes the printed loss, yet training with mu=1.0 gives exactly the same client
weights as mu=0.0: FedProx silently degrades to FedAvg.
Why: `.data` gives tensors without autograd history, so the term is a constant: it adds nothing to the gradient
of net's parameters while the cross-entropy term keeps training them.
Fix (the PR): compute the term from the parameters themselves, torch.norm(w - w_t)."""
import copy

import torch
from torch import nn


class ModelUpdate(object):
    def __init__(self, mu, local_ep=3):
        self.mu = mu
        self.local_ep = local_ep
        self.loss_func = nn.CrossEntropyLoss()
        g = torch.Generator().manual_seed(1)
        self.ldr_train = [(torch.randn(8, 10, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(4)]

    def train(self, local_net, net):
        net.train()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
        epoch_loss = []
        for iter in range(self.local_ep):
            batch_loss = []
            for batch_idx, (images, labels) in enumerate(self.ldr_train):
                net.zero_grad()
                log_probs = net(images)
                loss = self.loss_func(log_probs, labels)

                # FedProx: https://arxiv.org/abs/1812.06127
                if iter > 0:
                    for w, w_t in zip(local_net.parameters(), net.parameters()):
                        loss += self.mu / 2. * torch.pow(torch.norm(w - w_t), 2)

                loss.backward()
                optimizer.step()
                batch_loss.append(loss.item())
            epoch_loss.append(sum(batch_loss) / len(batch_loss))
        return net.state_dict(), sum(epoch_loss) / len(epoch_loss)


torch.manual_seed(0)
net_glob = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
results = {}
for mu in (0.0, 1.0):
    local = ModelUpdate(mu=mu)
    w, loss = local.train(local_net=copy.deepcopy(net_glob), net=copy.deepcopy(net_glob))
    results[mu] = w
    print(f"mu={mu}: client loss {loss:.4f}")
print("proximal term changed the client weights:",
      not all(torch.equal(results[0.0][k], results[1.0][k]) for k in results[0.0]))
