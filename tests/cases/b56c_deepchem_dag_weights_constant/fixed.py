# Fix directed acyclic graph network bug  (deepchem/deepchem PR #2228, issue #2226)
# https://github.com/deepchem/deepchem/pull/2228
# DeepChem's DAGModel (DAGLayer -> DAGGather -> output dense) built its layer weights in
# build() as `self.W_list.append(init([prev_layer_size, layer_size]))` and
# `self.b_list.append(backend.zeros(...))`: plain tensors that the framework never registered
# as weights, so they were "treated as just constant" (layer.get_weights() returned []),
# never trained (only the last dense layer trained) and were not saved/reloaded.
# Fix (merged): create them as registered trainable weights (Keras add_weight; here
# nn.Parameter in an nn.ParameterList).
# The original is TensorFlow/Keras; the layer is rewritten in plain torch with the same names.
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def glorot_uniform(shape):
    return nn.init.xavier_uniform_(torch.empty(*shape))


def _DAGgraph_step(batch_inputs, W_list, b_list, activation_fn, dropouts, training):
    outputs = batch_inputs
    for idx, W in enumerate(W_list):
        outputs = outputs @ W + b_list[idx]
        outputs = activation_fn(outputs)
    return outputs


class DAGGather(nn.Module):
    def __init__(self, n_graph_feat=30, n_outputs=30, max_atoms=50, layer_sizes=[100], init="glorot_uniform",
                 activation="relu", dropout=None):
        super().__init__()
        self.init = init
        self.activation_fn = F.relu
        self.layer_sizes = layer_sizes
        self.dropout = dropout
        self.max_atoms = max_atoms
        self.n_graph_feat = n_graph_feat
        self.n_outputs = n_outputs
        self.build()

    def build(self):
        self.W_list = nn.ParameterList()
        self.b_list = nn.ParameterList()
        self.dropouts = []
        init = glorot_uniform
        prev_layer_size = self.n_graph_feat
        for layer_size in self.layer_sizes + [self.n_outputs]:
            self.W_list.append(nn.Parameter(init([prev_layer_size, layer_size])))
            self.b_list.append(nn.Parameter(torch.zeros(layer_size)))
            self.dropouts.append(None)
            prev_layer_size = layer_size
        self.built = True

    def forward(self, inputs, training=True):
        atom_features, membership = inputs
        n_mols = int(membership.max()) + 1
        graph_features = torch.zeros(n_mols, atom_features.shape[1]).index_add(0, membership, atom_features)
        return _DAGgraph_step(graph_features, self.W_list, self.b_list, self.activation_fn, self.dropouts, training)


class _DAG(nn.Module):
    """DAGModel's network: atom embedding -> DAGGather -> regression head."""

    def __init__(self, n_tasks=1, n_atom_feat=75, n_graph_feat=30, n_outputs=30, layer_sizes_gather=[100]):
        super().__init__()
        self.atom_layer = nn.Linear(n_atom_feat, n_graph_feat)
        self.dag_gather = DAGGather(n_graph_feat=n_graph_feat, n_outputs=n_outputs, layer_sizes=layer_sizes_gather)
        self.dense = nn.Linear(n_outputs, n_tasks)

    def forward(self, atom_features, membership):
        h = F.relu(self.atom_layer(atom_features))
        return self.dense(self.dag_gather([h, membership]))


n_atoms, n_mols = 40, 8
atom_features = torch.randn(n_atoms, 75)
membership = torch.arange(n_mols).repeat_interleave(n_atoms // n_mols)
labels = torch.randn(n_mols, 1)

model = _DAG(n_tasks=1)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(5):
    optimizer.zero_grad()
    loss = F.mse_loss(model(atom_features, membership), labels)
    loss.backward()
    optimizer.step()
print("loss", loss.item())
print("dense.weight.grad is None:", model.dense.weight.grad is None)
print("dag_gather.W_list[0].grad:", model.dag_gather.W_list[0].grad)
