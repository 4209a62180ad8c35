# Variational parameters: the variances must stay positive, so they are
# reparameterised through a softplus of an unconstrained tensor rho, and rho
# is what the optimizer updates.
import torch

torch.manual_seed(0)

# rho is my dummy variable
rho_init = torch.ones(100)
rho = rho_init.clone().requires_grad_(True)
# Here the variances are reparameterized to always be positive
variances = torch.log(1.0 + torch.exp(rho))  # <- autograd_error

# Do optimization
optimizer = torch.optim.Adam([rho], lr=0.01)

for i in range(10):
    optimizer.zero_grad()
    x = torch.sum(variances)
    x.backward()
    optimizer.step()
    print(i, x.item())
