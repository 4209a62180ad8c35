# PyTorch reimplementation of the Keras Low-rank Multimodal Fusion (LMF) model.
# The optimizer is built from positional slices of model.parameters().
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn import Parameter

torch.manual_seed(0)


class SubNet(nn.Module):
    def __init__(self, in_size, hidden_size):
        super().__init__()
        self.linear_1 = nn.Linear(in_size, hidden_size)
        self.linear_2 = nn.Linear(hidden_size, hidden_size)

    def forward(self, x):
        return F.relu(self.linear_2(F.relu(self.linear_1(x))))


class LMF(nn.Module):
    def __init__(self, input_dims, hidden_dims, output_dim, rank):
        super().__init__()
        self.audio_subnet = SubNet(input_dims[0], hidden_dims[0])
        self.video_subnet = SubNet(input_dims[1], hidden_dims[1])
        self.text_subnet = SubNet(input_dims[2], hidden_dims[2])
        self.audio_factor = Parameter(torch.Tensor(rank, hidden_dims[0] + 1, output_dim))
        self.video_factor = Parameter(torch.Tensor(rank, hidden_dims[1] + 1, output_dim))
        self.text_factor = Parameter(torch.Tensor(rank, hidden_dims[2] + 1, output_dim))
        self.fusion_weights = Parameter(torch.Tensor(1, rank))
        self.fusion_bias = Parameter(torch.Tensor(1, output_dim))
        nn.init.xavier_normal_(self.audio_factor)
        nn.init.xavier_normal_(self.video_factor)
        nn.init.xavier_normal_(self.text_factor)
        nn.init.xavier_normal_(self.fusion_weights)
        self.fusion_bias.data.fill_(0)
        self.output_dim = output_dim

    def forward(self, audio_x, video_x, text_x):
        audio_h = self.audio_subnet(audio_x)
        video_h = self.video_subnet(video_x)
        text_h = self.text_subnet(text_x)
        ones = torch.ones(audio_h.shape[0], 1)
        _audio_h = torch.cat((ones, audio_h), dim=1)
        _video_h = torch.cat((ones, video_h), dim=1)
        _text_h = torch.cat((ones, text_h), dim=1)
        fusion_zy = (torch.matmul(_audio_h, self.audio_factor)
                     * torch.matmul(_video_h, self.video_factor)
                     * torch.matmul(_text_h, self.text_factor))
        output = torch.matmul(self.fusion_weights, fusion_zy.permute(1, 0, 2)).squeeze() + self.fusion_bias
        return output.view(-1, self.output_dim)


model = LMF((5, 6, 7), (4, 4, 8), output_dim=1, rank=4)
criterion = nn.L1Loss()
factors = list(model.parameters())[:3]
other = list(model.parameters())[3:]
optimizer = optim.Adam([{"params": factors, "lr": 1e-3}, {"params": other, "lr": 1e-3}], weight_decay=0.0)

before = model.fusion_weights.detach().clone()
for step in range(5):
    model.zero_grad()
    x_a, x_v, x_t = torch.randn(8, 5), torch.randn(8, 6), torch.randn(8, 7)
    y = torch.randn(8, 1)
    loss = criterion(model(x_a, x_v, x_t), y)
    loss.backward()
    optimizer.step()

print("fusion_weights has grad:", model.fusion_weights.grad is not None)
print("fusion_weights changed:", not torch.equal(before, model.fusion_weights))
