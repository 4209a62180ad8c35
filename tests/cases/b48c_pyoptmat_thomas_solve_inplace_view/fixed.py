# Report: Argonne-National-Laboratory/pyoptmat PR #26 "Adds time-chunked adjoint passes"
#   https://github.com/Argonne-National-Laboratory/pyoptmat/pull/26
# pyoptmat integrates material-model ODEs with an implicit scheme over chunks of time steps;
# the chunk's block-bidiagonal system is solved in place with a Thomas sweep
# (chunktime.py, thomas_solve / BidiagonalThomasFactorization). Each step reads the previous
# block v[i - 1] (a view of v) into torch.bmm, which saves it for the gradient of B, and then
# writes v[i] = ... into the same storage. The write bumps the version of the saved view, so
# loss.backward() raises "one of the variables needed for gradient computation has been
# modified by an inplace operation". In the PR review ("why clone()?") the author explains:
# "It should not be necessary but `torch.autograd` throws an 'in place' operation complaint
# without it" -- the fix is `v[i - 1].clone()`.
# The sweep and the factorization class are inlined; a linear Crank-Nicolson model with a
# learnable rate matrix K stands in for the material model, random data for experiments.
import torch
import torch.nn as nn

torch.manual_seed(0)


def thomas_solve(lu, pivots, B, v):
    """Simple function implementing a Thomas solve

    Solves in place of v
    """
    i = 0
    v[i] = torch.linalg.lu_solve(lu[i], pivots[i], v[i])
    for i in range(1, lu.shape[0]):
        v[i] = torch.linalg.lu_solve(
            lu[i], pivots[i], v[i] - torch.bmm(B[i - 1], v[i - 1].clone())
        )

    return v


class BidiagonalThomasFactorization(nn.Module):
    def __init__(self, A, B):
        super().__init__()
        self.A = A
        self.B = B
        self.nblk = A.shape[0]
        self.sbat = A.shape[1]
        self.sblk = A.shape[2]
        self.lu, self.pivots, _ = torch.linalg.lu_factor_ex(self.A)

    def forward(self, v):
        return (
            self.matvec(
                v.reshape((self.sbat, self.nblk, self.sblk))
                .transpose(0, 1)
                .unsqueeze(-1)
                .contiguous()
            )
            .squeeze(-1)
            .transpose(0, 1)
            .flatten(start_dim=1)
        )

    def matvec(self, v):
        return thomas_solve(self.lu, self.pivots, self.B, v)


class LinearModel(nn.Module):
    """y' = -K y + f, integrated with Crank-Nicolson over one chunk of nblk steps."""

    def __init__(self, sblk):
        super().__init__()
        self.K = nn.Parameter(torch.eye(sblk) + 0.1 * torch.randn(sblk, sblk))

    def forward(self, y0, f, dt):
        sbat, nblk, sblk = f.shape
        eye = torch.eye(sblk)
        A = (eye + dt / 2 * self.K).expand(nblk, sbat, sblk, sblk)
        B = (-(eye - dt / 2 * self.K)).expand(nblk - 1, sbat, sblk, sblk)
        rhs = dt * f.clone()
        rhs[:, 0] = rhs[:, 0] + y0 @ (eye - dt / 2 * self.K).T
        solver = BidiagonalThomasFactorization(A, B)
        return solver(rhs.flatten(start_dim=1)).view(sbat, nblk, sblk)


sbat, nblk, sblk, dt = 4, 6, 3, 0.1
model = LinearModel(sblk)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
y0 = torch.randn(sbat, sblk)
f = torch.randn(sbat, nblk, sblk)
target = torch.randn(sbat, nblk, sblk)

for it in range(3):
    optimizer.zero_grad()
    pred = model(y0, f, dt)
    loss = ((pred - target) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(it, loss.item())

print("K.grad:", model.K.grad)
