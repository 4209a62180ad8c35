# Report: "add sparse fused_optimizer to the CombinedOptimizer used to optimize dlrm"
#   https://github.com/meta-pytorch/torchrec/pull/148
# What went wrong: examples/dlrm/dlrm_main.py built its optimizer from
#   dict(model.named_parameters()). Under DistributedModelParallel the embedding
#   tables of batched_fused sharded modules are not in named_parameters(); they are
#   owned by model.fused_optimizer. dlrm_main never called that fused optimizer, so
#   the sparse (embedding) weights were never updated by the training loop.
# Fix (PR #148): keep the dense KeyedOptimizerWrapper and wrap it together with
#   model.fused_optimizer in a CombinedOptimizer, which is what the loop steps.
# Plain-torch reconstruction: DistributedModelParallel/KeyedOptimizerWrapper/
#   CombinedOptimizer are tiny stand-ins with torchrec's names.
import torch
import torch.nn as nn

torch.manual_seed(0)


class EmbeddingBagCollection(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, num_features):
        super().__init__()
        self.embedding_bags = nn.ModuleDict({
            f"t_cat_{i}": nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum")
            for i in range(num_features)
        })

    def forward(self, sparse_features):
        return torch.stack([
            self.embedding_bags[f"t_cat_{i}"](sparse_features[:, i:i + 1])
            for i in range(sparse_features.shape[1])
        ], dim=1)


class DLRM(nn.Module):
    def __init__(self, num_dense, num_sparse, num_embeddings, embedding_dim):
        super().__init__()
        self.sparse_arch = EmbeddingBagCollection(num_embeddings, embedding_dim, num_sparse)
        self.dense_arch = nn.Sequential(nn.Linear(num_dense, embedding_dim), nn.ReLU())
        n_inter = (num_sparse + 1) * num_sparse // 2
        self.over_arch = nn.Sequential(nn.Linear(embedding_dim + n_inter, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, dense_features, sparse_features):
        d = self.dense_arch(dense_features)
        s = self.sparse_arch(sparse_features)
        combined = torch.cat([d.unsqueeze(1), s], dim=1)
        inter = torch.bmm(combined, combined.transpose(1, 2))
        i, j = torch.triu_indices(combined.shape[1], combined.shape[1], offset=1)
        return self.over_arch(torch.cat([d, inter[:, i, j]], dim=1))


class DLRMTrain(nn.Module):
    def __init__(self, dlrm_module):
        super().__init__()
        self.model = dlrm_module
        self.loss_fn = nn.BCEWithLogitsLoss()

    def forward(self, dense, sparse, labels):
        logits = self.model(dense, sparse).squeeze(-1)
        return self.loss_fn(logits, labels), logits


class KeyedOptimizerWrapper:
    def __init__(self, params, optim_factory):
        self.params = params
        self._optimizer = optim_factory(list(params.values()))

    def step(self):
        self._optimizer.step()

    def zero_grad(self):
        self._optimizer.zero_grad()


class CombinedOptimizer:
    def __init__(self, optims):
        self.optims = optims

    def step(self):
        for o in self.optims:
            o.step()

    def zero_grad(self):
        for o in self.optims:
            o.zero_grad()


class DistributedModelParallel(nn.Module):
    """Tables sharded with a batched_fused kernel are owned by fused_optimizer
    and are not reported by named_parameters()."""

    def __init__(self, module, learning_rate):
        super().__init__()
        self._dmp_wrapped_module = module
        fused = {n: p for n, p in module.named_parameters() if ".sparse_arch." in n}
        self.fused_optimizer = KeyedOptimizerWrapper(
            fused, lambda params: torch.optim.SGD(params, lr=learning_rate))

    def named_parameters(self, *args, **kwargs):
        for n, p in self._dmp_wrapped_module.named_parameters(*args, **kwargs):
            if ".sparse_arch." not in n:
                yield n, p

    def forward(self, *args):
        return self._dmp_wrapped_module(*args)


def main():
    learning_rate = 0.5
    dlrm_model = DLRM(num_dense=4, num_sparse=3, num_embeddings=20, embedding_dim=8)
    train_model = DLRMTrain(dlrm_model)
    model = DistributedModelParallel(module=train_model, learning_rate=learning_rate)

    optimizer = KeyedOptimizerWrapper(dict(model.named_parameters()), lambda params: torch.optim.SGD(params, lr=learning_rate))  # <- optimizer

    table = dlrm_model.sparse_arch.embedding_bags["t_cat_0"].weight
    before = table.detach().clone()
    for _ in range(5):
        dense = torch.randn(16, 4)
        sparse = torch.randint(0, 20, (16, 3))
        labels = torch.randint(0, 2, (16,)).float()
        optimizer.zero_grad()
        loss, _ = model(dense, sparse, labels)
        loss.backward()
        optimizer.step()
    print("loss", loss.item())
    print("t_cat_0 weight change:", (table.detach() - before).abs().max().item())


if __name__ == "__main__":
    main()
