"""Student-teacher distillation with a recurrent student in rsl_rl (leggedrobotics/rsl_rl#94): the Distillation
algorithm builds its optimizer from `self.policy.student.parameters()`, but the recurrent student's GRU lives in
`policy.memory_s`; the behaviour-cloning loss back-propagates into the memory, which is in no optimizer and stays at
its initialisation (the fix adds the RNN parameters to the optimizer)."""
import torch
import torch.nn.functional as F
from torch import nn


class StudentTeacherRecurrent(nn.Module):
    def __init__(self, num_obs=12, num_actions=4, hidden=16):
        super().__init__()
        self.memory_s = nn.GRU(num_obs, hidden)
        self.student = nn.Sequential(nn.Linear(hidden, 32), nn.ELU(), nn.Linear(32, num_actions))
        self.teacher = nn.Sequential(nn.Linear(num_obs, 32), nn.ELU(), nn.Linear(32, num_actions))
        self.teacher.requires_grad_(False)

    def act_inference(self, obs_seq):
        hidden, _ = self.memory_s(obs_seq)
        return self.student(hidden)

    def evaluate(self, obs_seq):
        with torch.no_grad():
            return self.teacher(obs_seq)


class Distillation:
    def __init__(self, policy, lr=1e-3):
        self.policy = policy
        self.optimizer = torch.optim.Adam(self.policy.student.parameters(), lr=lr)  # <- optimizer

    def update(self, obs_seq):
        actions = self.policy.act_inference(obs_seq)
        behavior_loss = F.mse_loss(actions, self.policy.evaluate(obs_seq))
        self.optimizer.zero_grad()
        behavior_loss.backward()
        self.optimizer.step()
        return behavior_loss.item()


torch.manual_seed(0)
policy = StudentTeacherRecurrent()
alg = Distillation(policy, lr=3e-3)
memory_before = policy.memory_s.weight_ih_l0.detach().clone()
for it in range(15):
    loss = alg.update(torch.randn(8, 16, 12))
print(f"behavior loss {loss:.4f}; memory grad set: {policy.memory_s.weight_ih_l0.grad is not None}; "
      f"memory changed: {not torch.equal(policy.memory_s.weight_ih_l0, memory_before)}")
