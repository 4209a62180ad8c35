"""runebook.dev (zh) "告别参数丢失!ModuleList 与 Python List 在 PyTorch 中的核心区别与应用",
https://runebook.dev/zh/docs/pytorch/generated/torch.nn.modulelist/torch.nn.ModuleList
The post's MyBadModel(input_size, hidden_size, num_layers) keeps its hidden layers in a plain Python list
(`self.layers = [nn.Linear(input_size, hidden_size)]`, then `.append(...)` in a loop). The post: the parameters of
modules in a standard list are not registered, so the external optimizer never sees them and they are not updated
during training ("这些模块的参数将不会被注册到外部的优化器中,导致它们在训练时参数不会更新"). Fix (the post's): store the
layers in nn.ModuleList.
The post's model has no other layer, so its optimizer would get an empty list; this script adds a registered output
head (self.head) so training runs and shows the symptom: the listed layers get gradients but never change."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class MyBadModel(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super(MyBadModel, self).__init__()
        self.layers = nn.ModuleList([nn.Linear(input_size, hidden_size)])
        for _ in range(num_layers - 1):
            self.layers.append(nn.Linear(hidden_size, hidden_size))
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


bad_model = MyBadModel(10, 20, 3)
print("registered parameters:", [n for n, _ in bad_model.named_parameters()])
optimizer = torch.optim.Adam(bad_model.parameters(), lr=1e-2)
criterion = nn.MSELoss()
x = torch.randn(64, 10)
y = x[:, :1] * 2.0 - x[:, 1:2]
first_before = bad_model.layers[0].weight.detach().clone()

for epoch in range(20):
    optimizer.zero_grad()
    loss = criterion(bad_model(x), y)
    loss.backward()
    optimizer.step()

print("final loss:", round(loss.item(), 4))
print("layers[0].weight has grad:", bad_model.layers[0].weight.grad is not None)
print("layers[0].weight changed:", not torch.equal(first_before, bad_model.layers[0].weight))
