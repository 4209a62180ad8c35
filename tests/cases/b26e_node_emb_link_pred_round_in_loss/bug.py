"""Stack Overflow question "the loss in GNN doesn't decrease", as republished with its answer at
https://procomputingproducts.co.uk/post/the-loss-in-gnn-doesnt-decrease : a user doing the CS224W node-embedding
exercise (an nn.Embedding of the karate-club nodes trained for link prediction: the dot product of the two end
nodes' embeddings, a sigmoid, BCE against positive/negative edge labels) saw the loss never decrease. The train()
loop rounds the sigmoid output before the loss (`round()`), and round has a zero derivative everywhere, so the BCE
gradient reaching the embedding table is exactly zero: emb.weight.grad is all zeros and SGD never moves it.
Fix (the answer): remove the round() from the path to the loss (round only when measuring accuracy). The graph is a
small random one instead of networkx's karate club; the embedding is initialised with nn.init.uniform_ instead of the
exercise's `emb.weight.data = torch.rand(...)`."""
import torch
import torch.nn as nn
from torch.optim import SGD

torch.manual_seed(1)
torch.set_num_threads(1)
num_node, embedding_dim = 34, 16


def create_node_emb(num_node=34, embedding_dim=16):
    emb = nn.Embedding(num_node, embedding_dim)
    nn.init.uniform_(emb.weight, 0.0, 1.0)
    return emb


def accuracy(pred, label):
    return round(((pred > 0.5).float() == label).sum().item() / pred.shape[0], 4)


def train(emb, loss_fn, sigmoid, train_label, train_edge):
    epochs = 50
    learning_rate = 0.1
    optimizer = SGD(emb.parameters(), lr=learning_rate, momentum=0.9)
    for i in range(epochs):
        optimizer.zero_grad()
        node_list_fir, node_list_sec = train_edge[0], train_edge[1]
        emb_list_fir, emb_list_sec = emb(node_list_fir), emb(node_list_sec)
        emb_torch = torch.sum(emb_list_fir * emb_list_sec, dim=1)
        emb_torch = sigmoid(emb_torch)
        emb_torch = emb_torch.round()  # <- non_differentiable
        loss = loss_fn(emb_torch, train_label)
        loss.backward()
        optimizer.step()
        if i % 10 == 0:
            print("epoch", i, "loss", round(loss.item(), 4), "acc", accuracy(emb_torch, train_label))


emb = create_node_emb(num_node, embedding_dim)
pos_edge_index = torch.randint(0, num_node, (2, 78))
neg_edge_index = torch.randint(0, num_node, (2, 78))
pos_label = torch.ones(pos_edge_index.shape[1])
neg_label = torch.zeros(neg_edge_index.shape[1])
train_label = torch.cat([pos_label, neg_label], dim=0)
train_edge = torch.cat([pos_edge_index, neg_edge_index], dim=1)

loss_fn = nn.BCELoss()
sigmoid = nn.Sigmoid()
emb_before = emb.weight.detach().clone()
train(emb, loss_fn, sigmoid, train_label, train_edge)
print("emb.weight.grad is all zero:", bool((emb.weight.grad == 0).all()))
print("embedding changed:", not torch.equal(emb_before, emb.weight))
