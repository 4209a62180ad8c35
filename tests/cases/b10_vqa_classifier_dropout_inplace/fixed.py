"""The fixed twin: the classifier's dropout is not in place (BierOne/bottom-up-attention-vqa#6)."""
import torch
import torch.nn.functional as F
from torch import nn


class SimpleClassifier(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, dropout):
        super().__init__()
        layers = [
            nn.Linear(in_dim, hid_dim),
            nn.ReLU(),
            nn.Dropout(dropout, inplace=False),
            nn.Linear(hid_dim, out_dim),
        ]
        self.main = nn.Sequential(*layers)

    def forward(self, x):
        return self.main(x)


class BaseModel(nn.Module):
    def __init__(self, ntoken=100, v_dim=16, num_hid=32, num_ans=10):
        super().__init__()
        self.w_emb = nn.Embedding(ntoken, 16)
        self.q_emb = nn.GRU(16, num_hid, batch_first=True)
        self.v_att = nn.Linear(v_dim + num_hid, 1)
        self.q_net = nn.Sequential(nn.Linear(num_hid, num_hid), nn.ReLU())
        self.v_net = nn.Sequential(nn.Linear(v_dim, num_hid), nn.ReLU())
        self.classifier = SimpleClassifier(num_hid, 2 * num_hid, num_ans, 0.5)

    def forward(self, v, q):
        _, q_emb = self.q_emb(self.w_emb(q))
        q_emb = q_emb[0]
        logits = self.v_att(torch.cat([v, q_emb.unsqueeze(1).expand(-1, v.size(1), -1)], 2))
        v_emb = (F.softmax(logits, 1) * v).sum(1)
        return self.classifier(self.q_net(q_emb) * self.v_net(v_emb))


torch.manual_seed(0)
model = BaseModel()
optim = torch.optim.Adamax(model.parameters())
v, q = torch.randn(8, 6, 16), torch.randint(0, 100, (8, 7))
answers = torch.rand(8, 10)
for i in range(3):
    pred = model(v, q)
    loss = F.binary_cross_entropy_with_logits(pred, answers) * answers.size(1)
    loss.backward()
    optim.step()
    optim.zero_grad()
    print(f"iter {i}: loss {loss.item():.4f}")
