"""pinns-torch issue #12 "Output function cannot calculate gradient" (https://github.com/rezaakb/pinns-torch/issues/12):
running the Navier-Stokes inverse example (stream function psi -> u = dpsi/dy, v = -dpsi/dx in output_fn, learnable
l1, l2 in pde_fn) from a notebook, training ran but validation failed: the output function's gradient raised because
the network output "doesn't require gradient". The reporter's own answer: the Hydra config sets inference_mode: false,
but lightning.Trainer defaults to inference_mode=True, so validation ran under torch.inference_mode(); the fix is
Trainer(inference_mode=False). The small Trainer below stands in for Lightning's (same default, same wrapping of the
validation loop). The script raises "element 0 of tensors does not require grad"."""
import torch
import torch.nn as nn

torch.manual_seed(0)


def gradient(dy, dx):
    return torch.autograd.grad(dy, dx, grad_outputs=torch.ones_like(dy), create_graph=True)[0]


def output_fn(outputs, x, y, t):
    outputs["u"] = gradient(outputs["psi"], y)
    outputs["v"] = -gradient(outputs["psi"], x)
    return outputs


def pde_fn(outputs, x, y, t, extra_variables):
    u, v, p = outputs["u"], outputs["v"], outputs["p"]
    u_x, u_y, u_t = gradient(u, x), gradient(u, y), gradient(u, t)
    v_x, v_y, v_t = gradient(v, x), gradient(v, y), gradient(v, t)
    p_x, p_y = gradient(p, x), gradient(p, y)
    u_xx, u_yy, v_xx, v_yy = gradient(u_x, x), gradient(u_y, y), gradient(v_x, x), gradient(v_y, y)
    outputs["f_u"] = u_t + extra_variables["l1"] * (u * u_x + v * u_y) + p_x - extra_variables["l2"] * (u_xx + u_yy)
    outputs["f_v"] = v_t + extra_variables["l1"] * (u * v_x + v * v_y) + p_y - extra_variables["l2"] * (v_xx + v_yy)
    return outputs


class PINNModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))
        self.extra_variables = nn.ParameterDict({"l1": nn.Parameter(torch.tensor(0.0)), "l2": nn.Parameter(torch.tensor(0.0))})

    def forward(self, x, y, t):
        out = self.net(torch.cat([x, y, t], dim=1))
        return output_fn({"psi": out[:, 0:1], "p": out[:, 1:2]}, x, y, t)

    def training_step(self, batch):
        x, y, t, u, v = [b.clone().requires_grad_(True) for b in batch]
        outputs = pde_fn(self(x, y, t), x, y, t, self.extra_variables)
        return (((outputs["u"] - u) ** 2).mean() + ((outputs["v"] - v) ** 2).mean()
                + (outputs["f_u"] ** 2).mean() + (outputs["f_v"] ** 2).mean())

    def validation_step(self, batch):
        x, y, t, u, v = [b.clone().requires_grad_(True) for b in batch]
        outputs = self(x, y, t)
        return ((outputs["u"] - u) ** 2).mean().item()


class Trainer:  # stands in for lightning.Trainer: inference_mode=True by default wraps the validation loop
    def __init__(self, max_steps, val_check_interval, inference_mode=True):
        self.max_steps, self.val_check_interval, self.inference_mode = max_steps, val_check_interval, inference_mode

    def fit(self, model, train_batch, val_batch):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for step in range(1, self.max_steps + 1):
            optimizer.zero_grad()
            loss = model.training_step(train_batch)
            loss.backward()
            optimizer.step()
            if step % self.val_check_interval == 0:
                with torch.inference_mode(self.inference_mode):
                    val_loss = model.validation_step(val_batch)
                print("step %d train %.4f val %.4f" % (step, loss.item(), val_loss))


def make_batch(n):  # stands in for cylinder_nektar_wake.mat
    x, y, t = torch.rand(n, 1) * 8 + 1, torch.rand(n, 1) * 4 - 2, torch.rand(n, 1) * 20
    return x, y, t, 1.0 - 0.1 * torch.sin(y) * torch.cos(0.3 * t), 0.1 * torch.sin(x - 0.3 * t)


model = PINNModule()
trainer = Trainer(max_steps=6, val_check_interval=3, inference_mode=False)
trainer.fit(model, make_batch(64), make_batch(32))
print("l1 %.4f l2 %.4f" % (model.extra_variables["l1"].item(), model.extra_variables["l2"].item()))
