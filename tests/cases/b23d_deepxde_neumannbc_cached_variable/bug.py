"""DeepXDE (lululxvi/deepxde#1612, https://github.com/lululxvi/deepxde/issues/1612): an inverse problem whose
unknown C1 = dde.Variable(0.1) appears only in a Neumann boundary condition,
bc = dde.icbc.NeumannBC(geom, lambda x: C1/(2*D), boundary). With the PyTorch backend, model.train raises
"RuntimeError: Trying to backward through the graph a second time" at the second iteration.
Why: with backend pytorch, DeepXDE wraps the BC function in npfunc_range_autocache, which evaluates
func(X[beg:end]) once and caches the result by id(X). The cached values = C1/(2*D) carry the graph of the first
iteration; the first total_loss.backward() frees it, and the second iteration's loss reuses the cached tensor.
Fix (what the maintainers point to, and PR #2077 documents): put the trainable variable into an OperatorBC,
whose function is re-evaluated from (inputs, outputs) every iteration."""
import torch
from torch import nn

# --- stand-in for deepxde (pytorch backend), shaped like deepxde/icbc/boundary_conditions.py and model.py ---
class dde:
    @staticmethod
    def Variable(value):
        return torch.tensor(value, requires_grad=True)

    class grad:
        @staticmethod
        def jacobian(y, x, i=0, j=0):
            return torch.autograd.grad(y[:, i:i + 1].sum(), x, create_graph=True)[0][:, j:j + 1]

        @staticmethod
        def hessian(y, x):
            return dde.grad.jacobian(dde.grad.jacobian(y, x), x)

    class utils:
        @staticmethod
        def isclose(a, b):
            return abs(float(a) - b) < 1e-6


def npfunc_range_autocache(func):
    cache = {}

    def wrapper_cache(X, beg, end, _):
        key = (id(X), beg, end)
        if key not in cache:
            cache[key] = func(X[beg:end])
        return cache[key]
    return wrapper_cache


class NeumannBC:
    def __init__(self, geom, func, on_boundary):
        self.on_boundary, self.func = on_boundary, npfunc_range_autocache(func)

    def error(self, X, inputs, outputs, beg, end):
        values = self.func(X, beg, end, None)
        return -dde.grad.jacobian(outputs, inputs)[beg:end] - values  # outward normal at x=0 is -1


class OperatorBC:
    def __init__(self, geom, func, on_boundary):
        self.on_boundary, self.func = on_boundary, func

    def error(self, X, inputs, outputs, beg, end):
        return self.func(inputs, outputs, X)[beg:end]


dde.icbc = type("icbc", (), {"NeumannBC": NeumannBC, "OperatorBC": OperatorBC})


class Model:
    def __init__(self, pde, bc, x_bc, x_dom, ob_x, ob_y, net):
        self.pde, self.bc, self.net, self.ob_x, self.ob_y = pde, bc, net, ob_x, ob_y
        self.train_x = torch.cat([x_bc, x_dom])  # one fixed array, as data.PDE.train_x
        self.n_bc = len(x_bc)

    def compile(self, optimizer, lr, external_trainable_variables):
        self.opt = torch.optim.Adam(list(self.net.parameters()) + external_trainable_variables, lr=lr)

    def train(self, iterations, callbacks=()):
        for _ in range(iterations):
            inputs = self.train_x.clone().requires_grad_()
            outputs = self.net(inputs)
            f = self.pde(inputs, outputs)[self.n_bc:]
            e_bc = self.bc.error(self.train_x, inputs, outputs, 0, self.n_bc)
            e_ob = self.net(self.ob_x) - self.ob_y
            total_loss = (f ** 2).mean() + (e_bc ** 2).mean() + (e_ob ** 2).mean()
            self.opt.zero_grad()
            total_loss.backward()
            self.opt.step()
# --- end of stand-in ---


torch.manual_seed(0)
L, D = 1.0, 0.5
C1 = dde.Variable(0.1)  # The parameter to be solved


def pde(x, y):
    dy_xx = dde.grad.hessian(y, x)
    return dy_xx - y / L**2


def boundary(x, on_boundary):
    return on_boundary and dde.utils.isclose(x[0], 0)


geom = None
bc = dde.icbc.NeumannBC(geom, lambda x: C1 / (2 * D), boundary)  # <- autograd_error

ob_x = torch.linspace(0, 1, 8).unsqueeze(1)
ob_y = 0.3 * torch.exp(-ob_x / L)  # data from the true solution, C1 = 0.3
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
model = Model(pde, bc, torch.zeros(1, 1), torch.rand(32, 1), ob_x, ob_y, net)
external_trainable_variables = [C1]
model.compile("adam", lr=0.01, external_trainable_variables=external_trainable_variables)
model.train(iterations=30)
print("C1 after training:", C1.item())
