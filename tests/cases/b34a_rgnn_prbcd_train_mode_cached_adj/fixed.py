"""robustness_of_gnns_at_scale (sigeisler/robustness_of_gnns_at_scale#4): a user changing PRBCD's loss needs
`self.attacked_model.train()`, and then utils.grad_with_checkpoint's backward raises "Trying to backward through the
graph a second time"; with retain_graph=True, "the grad of self.perturbed_edge_weight after backward() is None".
Why: the repo's GCN caches its preprocessed (normalized) adjacency in training mode (`_cache_if_option_is_set`,
do_cache_adj_prep=True by default): the first attack epoch stores the edge weights normalized from that epoch's
perturbed_edge_weight on the module, and every later epoch gets that stale, already-backpropagated adjacency back.
Fix (the author's answer, confirmed by the reporter): switch the caching off (do_cache_adj_prep=False).
GCNConv is written with index_add instead of torch_geometric; sizes are small; the attacked model is random here."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class ChainableGCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, arguments):
        x, edge_idx, edge_weight = arguments
        h = self.lin(x)
        msg = edge_weight.unsqueeze(-1) * h[edge_idx[0]]
        return torch.zeros_like(h).index_add(0, edge_idx[1], msg) + self.bias


class GCN(nn.Module):
    def __init__(self, n_features, n_classes, n_filters=16, dropout=0.5,
                 do_cache_adj_prep: bool = False):
        super().__init__()
        self.do_cache_adj_prep = do_cache_adj_prep
        self.adj_preped = None
        self.layers = nn.ModuleList([
            nn.Sequential(ChainableGCNConv(n_features, n_filters), nn.ReLU(), nn.Dropout(dropout)),
            nn.Sequential(ChainableGCNConv(n_filters, n_classes), nn.LogSoftmax(dim=1)),
        ])

    def forward(self, data, adj):
        x, (edge_idx, edge_weight) = data, adj
        edge_idx, edge_weight = self._cache_if_option_is_set(self._convert_and_normalize, x, edge_idx, edge_weight)
        for layer in self.layers:
            x = layer((x, edge_idx, edge_weight))
        return x

    def _cache_if_option_is_set(self, callable, *inputs):
        if self.training and self.adj_preped is not None:
            return self.adj_preped
        adj_preped = callable(*inputs)
        if self.training and self.do_cache_adj_prep:
            self.adj_preped = adj_preped
        return adj_preped

    def _convert_and_normalize(self, x, edge_idx, edge_weight):
        n = x.shape[0]
        loops = torch.arange(n)
        edge_idx = torch.cat([edge_idx, torch.stack([loops, loops])], dim=1)
        edge_weight = torch.cat([edge_weight, torch.ones(n)])
        row, col = edge_idx
        deg = torch.zeros(n).index_add(0, col, edge_weight)
        deg_inv_sqrt = deg.pow(-0.5).masked_fill(deg == 0, 0)
        return edge_idx, deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]


def grad_with_checkpoint(outputs, inputs):
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    torch.autograd.backward(outputs)
    grad_outputs = []
    for input in inputs:
        grad_outputs.append(input.grad.clone())
        input.grad.zero_()
    return grad_outputs


class PRBCD:
    def __init__(self, attacked_model, attr, edge_index, labels, block_size=40, epochs=4, lr=0.5):
        self.attacked_model = attacked_model
        for p in self.attacked_model.parameters():
            p.requires_grad = False
        self.attr, self.edge_index, self.labels = attr, edge_index, labels
        self.n, self.block_size, self.epochs, self.lr = attr.shape[0], block_size, epochs, lr

    def sample_random_block(self):
        self.current_search_space = torch.randint(0, self.n, (2, self.block_size))
        self.perturbed_edge_weight = torch.full((self.block_size,), 1e-3, requires_grad=True)

    def get_modified_adj(self):
        edge_index = torch.cat([self.edge_index, self.current_search_space], dim=1)
        edge_weight = torch.cat([torch.ones(self.edge_index.shape[1]), self.perturbed_edge_weight])
        return edge_index, edge_weight

    def attack(self):
        self.attacked_model.train()  # the reporter's change, needed for the new loss
        self.sample_random_block()
        for epoch in range(self.epochs):
            edge_index, edge_weight = self.get_modified_adj()
            logits = self.attacked_model(self.attr, (edge_index, edge_weight))
            loss = -F.nll_loss(logits, self.labels)
            gradient = grad_with_checkpoint(loss, self.perturbed_edge_weight)[0]
            with torch.no_grad():
                self.perturbed_edge_weight.add_(self.lr * gradient).clamp_(0, 1)
            print(f"epoch {epoch}: loss {loss.item():.4f}, |grad| {gradient.abs().sum().item():.2e}")


n, d, c = 30, 8, 3
attr, labels = torch.randn(n, d), torch.randint(0, c, (n,))
edge_index = torch.randint(0, n, (2, 80))
model = GCN(n_features=d, n_classes=c)
attack = PRBCD(model, attr, edge_index, labels)
attack.attack()
print("perturbed_edge_weight moved:", bool((attack.perturbed_edge_weight != 1e-3).any()))
