import torch

torch.manual_seed(0)

# Extract an intermediate gradient with a tensor hook, then differentiate a
# function of that gradient (a gradient-norm penalty) inside the same hook.
penalty_grads = []


def extract_and_grad(V):
    def hook(grad):
        V.grad = grad
        V.grad.requires_grad_(True)
        print("V.grad:", V.grad)
        U = V.grad.pow(2).sum()  # <- no_grad
        print("U:", U)
        dU_dV_grad = torch.autograd.grad(U, V.grad)
        print("V.grad.grad:", dU_dV_grad)
        penalty_grads.append(dU_dV_grad[0])
    return hook


X = torch.ones(5, requires_grad=True)
V = X.pow(3)
Y = V.sum()

V.register_hook(extract_and_grad(V))
Y.backward()

print("X.grad:", X.grad)
print("d|V.grad|^2 / dV.grad:", penalty_grads[0])
