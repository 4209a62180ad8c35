# treelstm.pytorch (SICK relatedness) after the PyTorch 0.4 port: the GloVe
# vectors are plugged into the (trainable) embedding inside the model's
# __init__ with an in-place copy_ on the leaf weight.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
PAD = 0


class Tree:
    def __init__(self, idx, children=()):
        self.idx, self.children, self.state = idx, list(children), None


class ChildSumTreeLSTM(nn.Module):
    def __init__(self, in_dim, mem_dim):
        super().__init__()
        self.mem_dim = mem_dim
        self.ioux = nn.Linear(in_dim, 3 * mem_dim)
        self.iouh = nn.Linear(mem_dim, 3 * mem_dim)
        self.fx = nn.Linear(in_dim, mem_dim)
        self.fh = nn.Linear(mem_dim, mem_dim)

    def node_forward(self, inputs, child_c, child_h):
        child_h_sum = torch.sum(child_h, dim=0, keepdim=True)
        iou = self.ioux(inputs) + self.iouh(child_h_sum)
        i, o, u = torch.split(iou, iou.size(1) // 3, dim=1)
        i, o, u = torch.sigmoid(i), torch.sigmoid(o), torch.tanh(u)
        f = torch.sigmoid(self.fh(child_h) + self.fx(inputs).repeat(len(child_h), 1))
        c = i * u + torch.sum(f * child_c, dim=0, keepdim=True)
        return c, o * torch.tanh(c)

    def forward(self, tree, inputs):
        for child in tree.children:
            self.forward(child, inputs)
        if not tree.children:
            child_c = inputs.new_zeros(1, self.mem_dim)
            child_h = inputs.new_zeros(1, self.mem_dim)
        else:
            child_c = torch.cat([ch.state[0] for ch in tree.children], dim=0)
            child_h = torch.cat([ch.state[1] for ch in tree.children], dim=0)
        tree.state = self.node_forward(inputs[tree.idx].unsqueeze(0), child_c, child_h)
        return tree.state


class SimilarityTreeLSTM(nn.Module):
    def __init__(self, vocab_size, in_dim, mem_dim, hidden_dim, num_classes, init_emb, freeze=False):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, in_dim, padding_idx=PAD)
        self.emb.weight.copy_(init_emb)  # <- autograd_error
        if freeze:
            self.emb.weight.requires_grad = False
        self.childsumtreelstm = ChildSumTreeLSTM(in_dim, mem_dim)
        self.wh = nn.Linear(2 * mem_dim, hidden_dim)
        self.wp = nn.Linear(hidden_dim, num_classes)

    def forward(self, ltree, linputs, rtree, rinputs):
        lstate, _ = self.childsumtreelstm(ltree, self.emb(linputs))
        rstate, _ = self.childsumtreelstm(rtree, self.emb(rinputs))
        vec = torch.cat([lstate * rstate, torch.abs(lstate - rstate)], dim=1)
        return F.log_softmax(self.wp(torch.sigmoid(self.wh(vec))), dim=1)


VOCAB, IN_DIM = 30, 16
glove = torch.randn(VOCAB, IN_DIM) * 0.05  # stands in for sick_embed.pth
glove[PAD].zero_()

model = SimilarityTreeLSTM(VOCAB, IN_DIM, 12, 8, 5, glove)
criterion = nn.KLDivLoss(reduction="batchmean")
optimizer = torch.optim.Adagrad(filter(lambda p: p.requires_grad, model.parameters()), lr=0.05)

ltree = Tree(0, [Tree(1), Tree(2, [Tree(3)])])
rtree = Tree(0, [Tree(1), Tree(2)])
linputs, rinputs = torch.tensor([4, 7, 9, 11]), torch.tensor([5, 7, 12])
target = torch.tensor([[0.0, 0.1, 0.6, 0.3, 0.0]])

before = model.emb.weight[7].detach().clone()
for epoch in range(3):
    optimizer.zero_grad()
    loss = criterion(model(ltree, linputs, rtree, rinputs), target)
    loss.backward()
    optimizer.step()
    print(epoch, round(loss.item(), 4))
print("embedding row changed:", not torch.equal(before, model.emb.weight[7]))
