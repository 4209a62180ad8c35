"""Aaditya-Prasad/consistency-policy issue #4, "CTM Loss Not Actually Used in the Student Training?",
https://github.com/Aaditya-Prasad/consistency-policy/issues/4: CTMPPUnetHybridImagePolicy.compute_loss builds the
CTM term from the student's jump t -> s, pred = self._forward(self.model, noise_traj, times, stops, ...), and the EMA
student's jump from the teacher-solved point u -> s, then takes both back to time_min with the frozen model_ema, but
it does so inside `with torch.no_grad():`, rebinding pred there. The reporter: "The pred and target are both inside
torch.no_grad(), and this loss variable is not going to have grad_fn for backpropagation"; total_loss["ctm"] is summed
with the DSM term, which alone trains the student. Fix: map the student's pred back to time_min outside no_grad
(model_ema stays frozen, so the gradient reaches self.model through pred); only the target stays under no_grad."""
import copy
import torch
import torch.nn as nn

torch.manual_seed(0)
HORIZON, ACTION_DIM, OBS_DIM, COND_DIM = 8, 2, 10, 16
TIME_MIN, TIME_MAX = 0.002, 80.0


class CTMConditionalUnet1D(nn.Module):  # the student: (x, t, s, global_cond) -> x
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(HORIZON * ACTION_DIM + 2 + COND_DIM, 64), nn.Mish(),
                                 nn.Linear(64, HORIZON * ACTION_DIM))

    def forward(self, x, t, s, local_cond=None, global_cond=None):
        h = torch.cat([x.flatten(1), t.log()[:, None] / 4, s.log()[:, None] / 4, global_cond], dim=1)
        return self.net(h).view_as(x)


class ConditionalUnet1D(nn.Module):  # the EDM teacher: (x, t, global_cond) -> x
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(HORIZON * ACTION_DIM + 1 + COND_DIM, 64), nn.Mish(),
                                 nn.Linear(64, HORIZON * ACTION_DIM))

    def forward(self, x, t, local_cond=None, global_cond=None):
        return self.net(torch.cat([x.flatten(1), t.log()[:, None] / 4, global_cond], dim=1)).view_as(x)


class CTM_Scheduler:
    def sample_times(self, x):
        t = TIME_MIN * (TIME_MAX / TIME_MIN) ** torch.rand(x.shape[0])
        u = t * (0.5 + 0.4 * torch.rand(x.shape[0]))
        return t, (u * torch.rand(x.shape[0])).clamp(min=TIME_MIN), u

    def add_noise(self, x, t):
        return x + t[:, None, None] * torch.randn_like(x)

    def step(self, denoise, x, t, next_t):  # one Euler step of the teacher ODE
        return x + (next_t - t)[:, None, None] * (x - denoise(x, t)) / t[:, None, None]

    def CTM_calc_out(self, denoise, x, t, s):
        ratio = (s / t)[:, None, None]
        return ratio * x + (1 - ratio) * denoise(x, t, s)


def Huber_Loss(pred, target, delta=0.1):
    return (torch.sqrt((pred - target) ** 2 + delta ** 2) - delta).mean()


class CTMPPUnetHybridImagePolicy(nn.Module):
    def __init__(self, losses=(("ctm", "dsm"), (1.0, 1.0)), delta=0.1, initial_ema_decay=0.9):
        super().__init__()
        self.obs_encoder = nn.Linear(OBS_DIM, COND_DIM)
        self.model = CTMConditionalUnet1D()
        self.model_ema = copy.deepcopy(self.model).requires_grad_(False)
        self.teacher = ConditionalUnet1D().requires_grad_(False)
        self.noise_scheduler = CTM_Scheduler()
        self.losses = dict(zip(*losses))
        self.delta, self.ema_decay = delta, initial_ema_decay

    def _forward(self, model, sample, timestep, stop_time, local_cond=None, global_cond=None):
        denoise = lambda x, t, s: model(x, t, s, local_cond=local_cond, global_cond=global_cond)
        return self.noise_scheduler.CTM_calc_out(denoise, sample, timestep, stop_time)

    def compute_loss(self, batch):
        total_loss = {}
        trajectory, global_cond = batch["action"], self.obs_encoder(batch["obs"])
        if "ctm" in self.losses:
            times, stops, u_times = self.noise_scheduler.sample_times(trajectory)
            noise_traj = self.noise_scheduler.add_noise(trajectory, times)
            denoise = lambda x, t: self.teacher(x, t, global_cond=global_cond)
            u_noise_traj = self.noise_scheduler.step(denoise, noise_traj, times, u_times)
            # t -> s
            pred = self._forward(self.model, noise_traj, times, stops, global_cond=global_cond)
            # u -> s
            with torch.no_grad():
                target = self._forward(self.model_ema, u_noise_traj, u_times, stops, global_cond=global_cond)
            # now we take both back to 0
            with torch.no_grad():
                start = torch.full_like(times, TIME_MIN)
                pred = self._forward(self.model_ema, pred, stops, start, global_cond=global_cond)  # <- cut_term
                target = self._forward(self.model_ema, target, stops, start, global_cond=global_cond)
            loss = Huber_Loss(pred, target, delta=self.delta)
            total_loss["ctm"] = loss * self.losses["ctm"]
        if "dsm" in self.losses:
            times, _, _ = self.noise_scheduler.sample_times(trajectory)
            noisy_trajectory = self.noise_scheduler.add_noise(trajectory, times)
            stop = torch.full_like(times, TIME_MIN)
            pred = self._forward(self.model, noisy_trajectory, times, stop, global_cond=global_cond)
            total_loss["dsm"] = Huber_Loss(pred, trajectory, delta=self.delta) * self.losses["dsm"]
        return total_loss

    @torch.no_grad()
    def ema_update(self):
        for p_ema, p in zip(self.model_ema.parameters(), self.model.parameters()):
            p_ema.mul_(self.ema_decay).add_(p, alpha=1 - self.ema_decay)


policy = CTMPPUnetHybridImagePolicy()
optimizer = torch.optim.AdamW(list(policy.model.parameters()) + list(policy.obs_encoder.parameters()), lr=1e-3)
batch = {"action": torch.randn(16, HORIZON, ACTION_DIM), "obs": torch.randn(16, OBS_DIM)}
for step in range(4):
    raw_loss = policy.compute_loss(batch)
    loss = sum(raw_loss.values())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    policy.ema_update()
    print(f"step {step}: ctm {raw_loss['ctm'].item():.4f} dsm {raw_loss['dsm'].item():.4f} "
          f"ctm loss carries a gradient: {raw_loss['ctm'].requires_grad}")
