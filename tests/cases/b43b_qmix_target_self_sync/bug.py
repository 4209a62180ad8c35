# QMIX learner: eval/target agent RNNs and eval/target mixing networks.
# Periodic hard sync of the target networks.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N_AGENTS, OBS, N_ACT, STATE, HID, EMB = 3, 8, 4, 6, 16, 8


class DRQN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(OBS, HID)
        self.rnn = nn.GRUCell(HID, HID)
        self.fc2 = nn.Linear(HID, N_ACT)

    def forward(self, obs, h):
        x = F.relu(self.fc1(obs))
        h = self.rnn(x, h.reshape(-1, HID))
        return self.fc2(h), h


class QMIXNET(nn.Module):
    def __init__(self):
        super().__init__()
        self.hyper_w1 = nn.Linear(STATE, N_AGENTS * EMB)
        self.hyper_b1 = nn.Linear(STATE, EMB)
        self.hyper_w2 = nn.Linear(STATE, EMB)
        self.hyper_b2 = nn.Sequential(nn.Linear(STATE, EMB), nn.ReLU(), nn.Linear(EMB, 1))

    def forward(self, q, s):
        bs = q.size(0)
        w1 = torch.abs(self.hyper_w1(s)).view(bs, N_AGENTS, EMB)
        b1 = self.hyper_b1(s).view(bs, 1, EMB)
        hidden = F.elu(torch.bmm(q.view(bs, 1, N_AGENTS), w1) + b1)
        w2 = torch.abs(self.hyper_w2(s)).view(bs, EMB, 1)
        b2 = self.hyper_b2(s).view(bs, 1, 1)
        return (torch.bmm(hidden, w2) + b2).view(bs, 1)


eval_drqn, target_drqn = DRQN(), DRQN()
eval_qmix, target_qmix = QMIXNET(), QMIXNET()
target_drqn.load_state_dict(eval_drqn.state_dict())
target_qmix.load_state_dict(eval_qmix.state_dict())
eval_parameters = list(eval_qmix.parameters()) + list(eval_drqn.parameters())
optimizer = torch.optim.RMSprop(eval_parameters, lr=5e-3)
init_target_w = target_qmix.hyper_w1.weight.detach().clone()

B, UPDATE_TARGET = 16, 5
for train_step in range(1, 11):
    o = torch.randn(B * N_AGENTS, OBS)
    o_ = torch.randn(B * N_AGENTS, OBS)
    u = torch.randint(0, N_ACT, (B, N_AGENTS, 1))
    s, s_ = torch.randn(B, STATE), torch.randn(B, STATE)
    r = torch.randn(B, 1)
    h0 = torch.zeros(B * N_AGENTS, HID)

    q_eval, _ = eval_drqn(o, h0)
    q_target, _ = target_drqn(o_, h0)
    q_eval = torch.gather(q_eval.view(B, N_AGENTS, -1), dim=2, index=u).squeeze(2)
    q_target = q_target.view(B, N_AGENTS, -1).max(dim=2)[0]

    q_total_eval = eval_qmix(q_eval, s)
    q_total_target = target_qmix(q_target, s_)
    targets = r + 0.99 * q_total_target
    loss = ((q_total_eval - targets.detach()) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    if train_step % UPDATE_TARGET == 0:
        target_drqn.load_state_dict(eval_drqn.state_dict())
        target_qmix.load_state_dict(target_qmix.state_dict())  # <- no_update
        same_as_eval = torch.equal(target_qmix.hyper_w1.weight, eval_qmix.hyper_w1.weight)
        unchanged = torch.equal(target_qmix.hyper_w1.weight, init_target_w)
        print(f"step {train_step}: target mixer synced to eval={same_as_eval}, "
              f"target mixer unchanged since init={unchanged}")
