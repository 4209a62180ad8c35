"""PyG heterogeneous link prediction with ``to_hetero``, following the "Link Prediction on MovieLens"
tutorial linked from https://pytorch-geometric.readthedocs.io/en/latest/get_started/colabs.html and the
heterogeneous-graph guide (https://pytorch-geometric.readthedocs.io/en/latest/notes/heterogeneous.html),
full batch (no pyg-lib / torch-sparse here, so no ``LinkNeighborLoader``).

Patterns kept:
- a homogeneous ``GNN`` (two ``SAGEConv`` with *lazy* ``(-1, -1)`` input sizes) converted with
  ``to_hetero(gnn, metadata, aggr="sum")`` into one copy per edge type; the lazy parameters are
  materialised by one forward pass under ``no_grad`` *before* the optimizer is built, as the guide says;
- node types without features get a learned ``Embedding`` looked up by ``node_id`` (users), movies have a
  ``Linear`` over their features plus an id embedding;
- ``ToUndirected`` adds the reverse edge type ``(movie, rev_rates, user)`` so messages reach both node
  types and every converted conv is used; ``RandomLinkSplit`` hides the supervision edges from message
  passing (``disjoint_train_ratio``) and adds sampled negatives;
- the classifier is a dot product of the two endpoint embeddings (no parameters of its own).
"""
import os
import warnings

# torch_geometric's own import calls the deprecated torch.jit.script on this torch version.
warnings.filterwarnings("ignore", message=".*torch.jit.script.*is deprecated", category=FutureWarning)

import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from torch import nn
from torch_geometric.data import HeteroData
from torch_geometric import seed_everything
from torch_geometric.nn import SAGEConv, to_hetero


class GNN(nn.Module):
    def __init__(self, hidden_channels):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden_channels)
        self.conv2 = SAGEConv((-1, -1), hidden_channels)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        return self.conv2(x, edge_index)


class Classifier(nn.Module):
    def forward(self, x_user, x_movie, edge_label_index):
        return (x_user[edge_label_index[0]] * x_movie[edge_label_index[1]]).sum(dim=-1)


class Model(nn.Module):
    def __init__(self, hidden_channels, data):
        super().__init__()
        self.movie_lin = nn.Linear(data["movie"].x.size(1), hidden_channels)
        self.user_emb = nn.Embedding(data["user"].num_nodes, hidden_channels)
        self.movie_emb = nn.Embedding(data["movie"].num_nodes, hidden_channels)
        self.gnn = to_hetero(GNN(hidden_channels), metadata=data.metadata(), aggr="sum")
        self.classifier = Classifier()

    def forward(self, data):
        x_dict = {
            "user": self.user_emb(data["user"].node_id),
            "movie": self.movie_lin(data["movie"].x) + self.movie_emb(data["movie"].node_id),
        }
        x_dict = self.gnn(x_dict, data.edge_index_dict)
        return self.classifier(
            x_dict["user"], x_dict["movie"], data["user", "rates", "movie"].edge_label_index
        )


def make_graph(num_users=12, num_movies=10, num_ratings=60):
    g = torch.Generator().manual_seed(0)
    data = HeteroData()
    data["user"].node_id = torch.arange(num_users)
    data["movie"].node_id = torch.arange(num_movies)
    data["movie"].x = torch.randn(num_movies, 6, generator=g)
    edges = torch.stack([torch.randint(0, num_users, (num_ratings,), generator=g),
                         torch.randint(0, num_movies, (num_ratings,), generator=g)])
    data["user", "rates", "movie"].edge_index = torch.unique(edges, dim=1)
    return T.ToUndirected()(data)


def main():
    torch.manual_seed(0)
    seed_everything(0)  # negative sampling draws from Python's `random`
    torch.set_num_threads(1)
    data = make_graph()
    transform = T.RandomLinkSplit(
        num_val=0.1,
        num_test=0.1,
        disjoint_train_ratio=0.3,
        neg_sampling_ratio=2.0,
        add_negative_train_samples=True,
        edge_types=("user", "rates", "movie"),
        rev_edge_types=("movie", "rev_rates", "user"),
    )
    train_data, val_data, _ = transform(data)

    model = Model(hidden_channels=16, data=train_data)
    with torch.no_grad():  # initialise the lazy SAGEConv parameters
        model(train_data)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    for epoch in range(3):
        model.train()
        optimizer.zero_grad()
        pred = model(train_data)
        ground_truth = train_data["user", "rates", "movie"].edge_label
        loss = F.binary_cross_entropy_with_logits(pred, ground_truth)
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.6f}")

    model.eval()
    with torch.no_grad():
        val_pred = model(val_data).sigmoid()
        val_acc = ((val_pred > 0.5).float() == val_data["user", "rates", "movie"].edge_label).float().mean()
    print(f"val accuracy {val_acc.item():.3f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
