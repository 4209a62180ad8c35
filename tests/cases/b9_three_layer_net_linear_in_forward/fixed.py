"""The fixed twin: the layers are instance attributes built in __init__ (pytorch/pytorch#1291)."""
import torch

D_in, H, D_out = 20, 16, 4


class ThreeLayerNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.linear1 = torch.nn.Linear(D_in, H)
        self.linear2 = torch.nn.Linear(H, H)
        self.linear3 = torch.nn.Linear(H, D_out)

    def forward(self, x):
        h_relu = self.linear1(x).clamp(min=0)
        h_relu = self.linear2(h_relu).clamp(min=0)
        return self.linear3(h_relu)


torch.manual_seed(0)
model = ThreeLayerNet(D_in, H, D_out)
print("parameters:", len(list(model.parameters())))
x, y = torch.randn(32, D_in), torch.randn(32, D_out)
for t in range(20):
    loss = ((model(x) - y) ** 2).mean()
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 1e-1 * p.grad
    if t % 5 == 0 or t == 19:
        print(f"iteration {t}: loss {loss.item():.4f}")
