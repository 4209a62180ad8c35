"""HiMol (ZangXuan/HiMol) issue #3 "loss_weight is randomly re-initialized at each step",
https://github.com/ZangXuan/HiMol/issues/3: the paper learns the weights of the five pre-training losses (bond
existence, bond type, atom type, atom count, bond count), but Model_decoder.forward creates them anew on every call:
`loss_weight = create_var(torch.rand(5), self.device, requires_grad=True)`. The tensor is a fresh random leaf each
step: it receives a .grad from loss.backward(), but it is not a registered parameter, so it is in no optimizer and
the next forward throws it away and draws new random weights. The loss weights are never learned; each step mixes
the five losses with random weights.
Fix (the one the issue proposes): create the weights once in __init__ as a learnable parameter and use it in
forward, so that model.parameters() (and the optimizer) contain it.
Reduced: the molecule encoder (a GNN) is a Linear stand-in on random node features, topo_pred keeps one head per
loss; the unused `self.loss_linear` of the original is left out. `seen_loss_weights` is added to observe them."""
import torch
import torch.nn as nn
from torch.autograd import Variable

MAX_BOND_TYPE = 4
MAX_ATOM_TYPE = 118
seen_loss_weights = []  # added to observe the weights


def create_var(tensor, device, requires_grad=None):
    if requires_grad is None:
        return Variable(tensor).to(device)
    else:
        return Variable(tensor, requires_grad=requires_grad).to(device)


class Model_decoder(nn.Module):

    def __init__(self, hidden_size, device):
        super(Model_decoder, self).__init__()
        self.hidden_size = hidden_size
        self.device = device
        # five loss weights, learned jointly with the decoder (as the paper describes)
        self.bond_if_s = nn.Sequential(nn.Linear(2 * hidden_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, 1))
        self.bond_type_s = nn.Sequential(nn.Linear(2 * hidden_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, MAX_BOND_TYPE))
        self.atom_type_s = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, MAX_ATOM_TYPE))
        self.atom_num_s = nn.Sequential(nn.Linear(hidden_size, hidden_size // 4), nn.Softplus(), nn.Linear(hidden_size // 4, 1))
        self.bond_num_s = nn.Sequential(nn.Linear(hidden_size, hidden_size // 4), nn.Softplus(), nn.Linear(hidden_size // 4, 1))

    def topo_pred(self, node_rep, super_rep, batch):
        start, end = node_rep[batch["edge_src"]], node_rep[batch["edge_dst"]]
        bond_if_loss = nn.functional.binary_cross_entropy_with_logits(
            self.bond_if_s(torch.cat([start, end], dim=1)).squeeze(-1), batch["bond_if"])
        bond_type_loss = nn.functional.cross_entropy(self.bond_type_s(torch.cat([start, end], dim=1)), batch["bond_type"])
        atom_type_loss = nn.functional.cross_entropy(self.atom_type_s(node_rep), batch["atom_type"])
        atom_num_loss = nn.functional.smooth_l1_loss(self.atom_num_s(super_rep).squeeze(-1), batch["atom_num"])
        bond_num_loss = nn.functional.smooth_l1_loss(self.bond_num_s(super_rep).squeeze(-1), batch["bond_num"])
        return [bond_if_loss, bond_type_loss, atom_type_loss, atom_num_loss, bond_num_loss]

    def forward(self, node_rep, super_rep, batch):
        loss_tur = self.topo_pred(node_rep, super_rep, batch)
        loss = 0
        loss_weight = create_var(torch.rand(5), self.device, requires_grad=True)  # <- optimizer
        seen_loss_weights.append(loss_weight)
        loss_wei = torch.softmax(loss_weight, dim=-1)
        for index in range(len(loss_tur)):
            loss += loss_tur[index] * loss_wei[index]
        return loss


torch.manual_seed(0)
torch.set_num_threads(1)
device = torch.device("cpu")
hidden = 16
encoder = nn.Linear(8, hidden)  # --- GNN encoder stand-in ---
decoder = Model_decoder(hidden, device)
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-2)

for step in range(4):
    x = torch.randn(12, 8)  # 12 atoms
    batch = {
        "edge_src": torch.randint(0, 12, (20,)), "edge_dst": torch.randint(0, 12, (20,)),
        "bond_if": torch.randint(0, 2, (20,)).float(), "bond_type": torch.randint(0, MAX_BOND_TYPE, (20,)),
        "atom_type": torch.randint(0, MAX_ATOM_TYPE, (12,)),
        "atom_num": torch.tensor([12.0, 12.0]), "bond_num": torch.tensor([20.0, 20.0]),
    }
    node_rep = encoder(x)
    super_rep = torch.stack([node_rep[:6].mean(0), node_rep[6:].mean(0)])
    loss = decoder(node_rep, super_rep, batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

last = seen_loss_weights[-1]
print("loss_weight got a grad:", last.grad is not None)
print("loss_weight is in the optimizer:", any(p is last for g in optimizer.param_groups for p in g["params"]))
print("same loss_weight tensor at every step:", all(w is last for w in seen_loss_weights))
