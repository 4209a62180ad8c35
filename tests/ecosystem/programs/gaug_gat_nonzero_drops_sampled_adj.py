"""GAug issue #6 "Possible Bug with GAugO-GAT: Gradients cannot backprop through indexing",
https://github.com/zhao-tong/GAug/issues/6: GAugO samples a graph from the edge predictor (VGAE ep_net) with a
relaxed-Bernoulli straight-through sample, so that the node-classification loss can train the edge predictor
through the sampled adjacency. With the GCN layer (adj @ x) that works, but GAug's GATLayer only reads the sampled
adjacency through `adj.nonzero()`: the integer edge indices carry no gradient and the sampled edge values are never
used, so the classification loss sends nothing back to ep_net (it only learns from its own reconstruction loss) and
the Gumbel trick is meaningless. The mistake is in GAug's models/GAug.py (the repository's code, used as is).
Fixed twin: the sampled edge values are kept with the indices (edge_w = adj[rows, cols]) and weight the attention,
so the aggregation depends on the sampled adjacency differentiably (forward values unchanged: edge_w is 1).
pyro's RelaxedBernoulliStraightThrough is a short stand-in; no pretraining, no warm-up, 3 epochs on a random graph."""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- pyro stand-in: pyro.distributions.RelaxedBernoulliStraightThrough --------------------------
class QuantizeRelaxedBernoulli(torch.autograd.Function):
    @staticmethod
    def forward(ctx, soft_sample):
        return soft_sample.round()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class RelaxedBernoulliStraightThrough:
    def __init__(self, temperature, probs):
        self.dist = torch.distributions.RelaxedBernoulli(torch.tensor(temperature), probs=probs)

    def rsample(self):
        return QuantizeRelaxedBernoulli.apply(self.dist.rsample())


# --- GAug models/GAug.py (reduced) --------------------------------------------------------------
class GAug_model(nn.Module):
    def __init__(self, dim_feats, dim_h, dim_z, n_classes, n_layers, activation, dropout, temperature=1, gae=False):
        super(GAug_model, self).__init__()
        self.temperature = temperature
        # edge prediction network
        self.ep_net = VGAE(dim_feats, dim_h, dim_z, activation, gae=gae)
        # node classification network
        self.nc_net = GNN(dim_feats, dim_h, n_classes, n_layers, activation, dropout, gnnlayer_type='gat')

    def sample_adj(self, adj_logits):
        """ sample an adj from the predicted edge probabilities of ep_net """
        edge_probs = adj_logits / torch.max(adj_logits)
        # sampling
        adj_sampled = RelaxedBernoulliStraightThrough(temperature=self.temperature, probs=edge_probs).rsample()
        # making adj_sampled symmetric
        adj_sampled = adj_sampled.triu(1)
        adj_sampled = adj_sampled + adj_sampled.T
        return adj_sampled

    def normalize_adj(self, adj):
        adj.fill_diagonal_(1)
        return adj

    def forward(self, adj, adj_orig, features):
        adj_logits = self.ep_net(adj, features)
        adj_new = self.sample_adj(adj_logits)
        adj_new_normed = self.normalize_adj(adj_new)
        nc_logits = self.nc_net(adj_new_normed, features)
        return nc_logits, adj_logits


class VGAE(nn.Module):
    """ GAE/VGAE as edge prediction model """
    def __init__(self, dim_feats, dim_h, dim_z, activation, gae=False):
        super(VGAE, self).__init__()
        self.gae = gae
        self.gcn_base = GCNLayer(dim_feats, dim_h, 1, None, 0, bias=False)
        self.gcn_mean = GCNLayer(dim_h, dim_z, 1, activation, 0, bias=False)

    def forward(self, adj, features):
        # GCN encoder
        hidden = self.gcn_base(adj, features)
        self.mean = self.gcn_mean(adj, hidden)
        # GAE (no sampling at bottleneck)
        Z = self.mean
        # inner product decoder
        adj_logits = Z @ Z.T
        return adj_logits


class GNN(nn.Module):
    """ GNN as node classification model """
    def __init__(self, dim_feats, dim_h, n_classes, n_layers, activation, dropout, gnnlayer_type='gat'):
        super(GNN, self).__init__()
        gnnlayer = GATLayer
        heads = [8] * n_layers + [1]
        dim_h = int(dim_h / 8)
        dropout = 0.6
        activation = F.elu
        self.layers = nn.ModuleList()
        # input layer
        self.layers.append(gnnlayer(dim_feats, dim_h, heads[0], activation, 0))
        # output layer
        self.layers.append(gnnlayer(dim_h*heads[-2], n_classes, heads[-1], None, dropout))

    def forward(self, adj, features):
        h = features
        for layer in self.layers:
            h = layer(adj, h)
        return h


class GCNLayer(nn.Module):
    """ one layer of GCN """
    def __init__(self, input_dim, output_dim, n_heads, activation, dropout, bias=True):
        super(GCNLayer, self).__init__()
        self.W = nn.Parameter(torch.FloatTensor(input_dim, output_dim))
        self.activation = activation
        self.b = nn.Parameter(torch.FloatTensor(output_dim)) if bias else None
        nn.init.xavier_uniform_(self.W)
        if self.b is not None:
            nn.init.constant_(self.b, 0.0)

    def forward(self, adj, h):
        x = h @ self.W
        x = adj @ x
        if self.b is not None:
            x = x + self.b
        if self.activation:
            x = self.activation(x)
        return x


class GATLayer(nn.Module):
    """ one layer of GAT """
    def __init__(self, input_dim, output_dim, n_heads, activation, dropout, bias=True):
        super(GATLayer, self).__init__()
        self.W = nn.Parameter(torch.FloatTensor(input_dim, output_dim))
        self.activation = activation
        self.n_heads = n_heads
        self.attn_l = nn.Linear(output_dim, self.n_heads, bias=False)
        self.attn_r = nn.Linear(output_dim, self.n_heads, bias=False)
        self.attn_drop = nn.Dropout(p=0.6)
        self.dropout = nn.Dropout(p=dropout) if dropout else 0
        self.b = nn.Parameter(torch.FloatTensor(output_dim)) if bias else None
        for param in self.parameters():
            if len(param.size()) == 2:
                nn.init.xavier_uniform_(param)
            else:
                nn.init.constant_(param, 0.0)

    def forward(self, adj, h):
        if self.dropout:
            h = self.dropout(h)
        x = h @ self.W
        # calculate attentions, both el and er are n_nodes by n_heads
        el = self.attn_l(x)
        er = self.attn_r(x)
        if adj.is_sparse:
            nz_indices = adj._indices()
        else:
            nz_indices = adj.nonzero().T; edge_w = adj[nz_indices[0], nz_indices[1]]
        attn = el[nz_indices[0]] + er[nz_indices[1]]
        attn = F.leaky_relu(attn, negative_slope=0.2).squeeze()
        # reconstruct adj with attentions, exp for softmax next
        attn = torch.exp(attn) * (edge_w if attn.dim() == 1 else edge_w.unsqueeze(-1))
        if self.n_heads == 1:
            adj_attn = torch.zeros(size=(adj.size(0), adj.size(1)), device=adj.device)
            adj_attn.index_put_((nz_indices[0], nz_indices[1]), attn)
        else:
            adj_attn = torch.zeros(size=(adj.size(0), adj.size(1), self.n_heads), device=adj.device)
            adj_attn.index_put_((nz_indices[0], nz_indices[1]), attn)
            adj_attn.transpose_(1, 2)
        # edge softmax (only softmax with non-zero entries)
        adj_attn = F.normalize(adj_attn, p=1, dim=-1)
        adj_attn = self.attn_drop(adj_attn)
        # message passing
        x = adj_attn @ x
        if self.b is not None:
            x = x + self.b
        if self.activation:
            x = self.activation(x)
        if self.n_heads > 1:
            x = x.flatten(start_dim=1)
        return x


class MultipleOptimizer():
    """ a class that wraps multiple optimizers """
    def __init__(self, *op):
        self.optimizers = op

    def zero_grad(self):
        for op in self.optimizers:
            op.zero_grad()

    def step(self):
        for op in self.optimizers:
            op.step()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    n, dim_feats, n_classes = 20, 16, 3
    a = (torch.rand(n, n) < 0.2).float().triu(1)
    adj_orig = a + a.T
    adj_orig.fill_diagonal_(1)
    deg_inv_sqrt = adj_orig.sum(1).pow(-0.5)
    adj_norm = deg_inv_sqrt[:, None] * adj_orig * deg_inv_sqrt[None, :]
    features = F.normalize(torch.rand(n, dim_feats), p=1, dim=1)
    labels = torch.randint(0, n_classes, (n,))
    train_nid = torch.arange(0, 12)
    lr, weight_decay, beta = 1e-2, 5e-4, 0.5

    model = GAug_model(dim_feats, 16, 8, n_classes, 1, F.relu, 0.5, temperature=0.2, gae=True)
    norm_w = adj_orig.shape[0]**2 / float((adj_orig.shape[0]**2 - adj_orig.sum()) * 2)
    pos_weight = torch.FloatTensor([float(adj_orig.shape[0]**2 - adj_orig.sum()) / adj_orig.sum()])
    optims = MultipleOptimizer(torch.optim.Adam(model.ep_net.parameters(), lr=lr),
                               torch.optim.Adam(model.nc_net.parameters(), lr=lr, weight_decay=weight_decay))
    nc_criterion = nn.CrossEntropyLoss()
    for epoch in range(3):
        model.train()
        nc_logits, adj_logits = model(adj_norm, adj_orig, features)
        loss = nc_loss = nc_criterion(nc_logits[train_nid], labels[train_nid])
        ep_loss = norm_w * F.binary_cross_entropy_with_logits(adj_logits, adj_orig, pos_weight=pos_weight)
        loss = loss + beta * ep_loss
        optims.zero_grad()
        loss.backward()
        optims.step()
        print(f"epoch {epoch + 1}: ep loss {ep_loss.item():.4f}, nc loss {nc_loss.item():.4f}")

    # what the classification loss sends back to the edge predictor
    nc_logits, adj_logits = model(adj_norm, adj_orig, features)
    nc_loss = nc_criterion(nc_logits[train_nid], labels[train_nid])
    grads = torch.autograd.grad(nc_loss, list(model.ep_net.parameters()), allow_unused=True)
    print("ep_net grad from the nc loss is None:", all(g is None for g in grads))
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
