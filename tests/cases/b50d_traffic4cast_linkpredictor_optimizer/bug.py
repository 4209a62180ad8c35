# cleanup exploration/example_torch_geometric_dummy_GNN.ipynb: ... add LinkPredictor to optimizer
# https://github.com/iarai/NeurIPS2022-traffic4cast/pull/12
# The Traffic4cast 2022 GNN starter notebook trains a node encoder (CongestioNN, a stack of
# MessagePassing layers) plus an edge classifier (LinkPredictor) on the congestion classes of
# road segments. The optimizer was built from model.parameters() only, so the LinkPredictor
# got gradients on every backward() but its weights were never updated (it stayed at its
# random init). The PR builds AdamW with two param groups: model.parameters() and
# predictor.parameters().
import torch
import torch.nn.functional as F
from torch import nn


class Swish(nn.Module):
    def __init__(self, beta=1):
        super(Swish, self).__init__()
        self.beta = beta

    def forward(self, x):
        return x * torch.sigmoid(self.beta * x)


class MessagePassing(nn.Module):
    """Minimal stand-in for torch_geometric.nn.MessagePassing (flow source_to_target)."""

    def __init__(self, node_dim=-2, aggr="mean"):
        super().__init__()
        self.aggr = aggr

    def propagate(self, edge_index, x):
        x_j = torch.index_select(x, 0, edge_index[0])
        x_i = torch.index_select(x, 0, edge_index[1])
        msg = self.message(x_i, x_j)
        out = torch.zeros(x.size(0), msg.size(1)).index_add(0, edge_index[1], msg)
        count = torch.zeros(x.size(0)).index_add(0, edge_index[1], torch.ones(edge_index.size(1)))
        out = out / count.clamp(min=1).unsqueeze(-1)
        return self.update(out, x)


class GNN_Layer(MessagePassing):
    def __init__(self, in_features, out_features, hidden_features):
        super(GNN_Layer, self).__init__(node_dim=-2, aggr="mean")

        self.message_net = nn.Sequential(
            nn.Linear(2 * in_features, hidden_features), Swish(), nn.BatchNorm1d(hidden_features), nn.Linear(hidden_features, out_features), Swish()
        )
        self.update_net = nn.Sequential(nn.Linear(in_features + hidden_features, hidden_features), Swish(), nn.Linear(hidden_features, out_features), Swish())

    def forward(self, x, edge_index, batch):
        """Propagate messages along edges."""
        x = self.propagate(edge_index, x=x)
        return x

    def message(self, x_i, x_j):
        """Message update."""
        message = self.message_net(torch.cat((x_i, x_j), dim=-1))
        return message

    def update(self, message, x):
        """Node update."""
        x += self.update_net(torch.cat((x, message), dim=-1))
        return x


class CongestioNN(torch.nn.Module):
    def __init__(self, in_features=4, out_features=32, hidden_features=32, hidden_layer=1):
        super(CongestioNN, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.hidden_features = hidden_features
        self.hidden_layer = hidden_layer

        self.cgnn = torch.nn.ModuleList(modules=[GNN_Layer(self.out_features, self.out_features, self.hidden_features) for _ in range(self.hidden_layer)])

        self.head_pre_pool = nn.Sequential(nn.Linear(self.out_features, self.hidden_features), Swish(), nn.Linear(self.hidden_features, self.hidden_features))
        self.head_post_pool = nn.Sequential(nn.Linear(self.hidden_features, self.hidden_features), Swish(), nn.Linear(hidden_features, 1))

        self.embedding_mlp = nn.Sequential(nn.Linear(self.in_features, self.out_features))

    def forward(self, data):
        batch = data["batch"]
        x = data["x"]
        edge_index = data["edge_index"]

        x = self.embedding_mlp(x)
        for i in range(self.hidden_layer):
            x = self.cgnn[i](x, edge_index, batch)

        return x


class LinkPredictor(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, num_layers, dropout):
        super(LinkPredictor, self).__init__()

        self.lins = torch.nn.ModuleList()
        self.lins.append(torch.nn.Linear(in_channels, hidden_channels))
        for _ in range(num_layers - 2):
            self.lins.append(torch.nn.Linear(hidden_channels, hidden_channels))
        self.lins.append(torch.nn.Linear(hidden_channels, out_channels))

        self.swish = Swish()

        self.dropout = dropout

    def reset_parameters(self):
        for lin in self.lins:
            lin.reset_parameters()

    def forward(self, x_i, x_j):
        x = x_i * x_j
        for lin in self.lins[:-1]:
            x = lin(x)
            x = self.swish(x)
            x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.lins[-1](x)

        return x


def make_graph(num_nodes=40, num_edges=120, num_features=4):
    # stand-in for T4c22GeometricDataset.get(i): node features with NaNs, per-edge class or NaN
    x = torch.randn(num_nodes, num_features)
    x[torch.rand(num_nodes, num_features) < 0.1] = float("nan")
    edge_index = torch.randint(num_nodes, (2, num_edges))
    y = torch.randint(0, 3, (num_edges,)).float()
    y[torch.rand(num_edges) < 0.2] = float("nan")
    return {"x": x, "edge_index": edge_index, "y": y, "batch": torch.zeros(num_nodes, dtype=torch.long)}


city_class_weights = torch.tensor([0.6210, 0.9486, 2.9807])


def train(model, predictor, dataset, optimizer, batch_size, device):
    model.train()

    losses = []
    optimizer.zero_grad()

    for data in dataset:
        data["x"] = data["x"].nan_to_num(-1)

        h = model(data)
        assert (h.isnan()).sum() == 0, h
        x_i = torch.index_select(h, 0, data["edge_index"][0])
        x_j = torch.index_select(h, 0, data["edge_index"][1])

        y_hat = predictor(x_i, x_j)

        y = data["y"].nan_to_num(-1)
        y = y.long()

        loss_f = torch.nn.CrossEntropyLoss(weight=city_class_weights, ignore_index=-1)
        loss = loss_f(y_hat, y)

        loss.backward()

        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.cpu().item())

    return losses


torch.manual_seed(0)
hidden_channels = 16
num_layers = 3
batch_size = 1
epochs = 3
runs = 1
dropout = 0.0
num_edge_classes = 3
num_features = 4
device = torch.device("cpu")

train_dataset = [make_graph() for _ in range(4)]

model = CongestioNN(num_features, hidden_channels, hidden_channels, num_layers)
predictor = LinkPredictor(hidden_channels, hidden_channels, num_edge_classes, num_layers, dropout)

for run in range(runs):
    predictor.reset_parameters()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)  # <- optimizer

    w_before = predictor.lins[-1].weight.detach().clone()
    for epoch in range(1, 1 + epochs):
        losses = train(model, predictor, dataset=train_dataset, optimizer=optimizer, batch_size=batch_size, device=device)
        print(f"epoch {epoch}: mean train loss {sum(losses) / len(losses):.4f}")
    print("LinkPredictor last layer change:", (predictor.lins[-1].weight - w_before).abs().max().item())
