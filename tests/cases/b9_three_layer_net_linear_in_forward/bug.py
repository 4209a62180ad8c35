"""`list(model.parameters())` of a custom module is empty (pytorch/pytorch#1291): ThreeLayerNet calls
torch.nn.Linear(...)(x) inside forward instead of building the layers in __init__, so each call makes three new
layers, the model has no parameters and nothing is trained."""
import torch

D_in, H, D_out = 20, 16, 4


class ThreeLayerNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()

    def forward(self, x):
        h_relu = torch.nn.Linear(D_in, H)(x).clamp(min=0)  # <- module_in_forward
        h_relu = torch.nn.Linear(H, H)(h_relu).clamp(min=0)
        return torch.nn.Linear(H, D_out)(h_relu)


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
