# Report: leggedrobotics/rsl_rl pull request #94 (merged, label "bug")
#   "Adds the RNN parameters to the optimizer for Distillation"
#   https://github.com/leggedrobotics/rsl_rl/pull/94
# Distillation.__init__ built its optimizer from `self.policy.student.parameters()`.
# With StudentTeacherRecurrent the student is split in two sibling modules: the recurrent
# encoder `memory_s` and the MLP head `student`. act_inference() runs both, so the
# behaviour-cloning loss gives `memory_s` gradients, but no optimizer holds it: the
# student's RNN keeps its random initial weights for the whole distillation.
# Fix (the PR): put the RNN's parameters in the optimizer too.
# Structure of rsl_rl 2.3.0 (algorithms/distillation.py, modules/student_teacher_recurrent.py,
# networks/memory.py), reduced: tiny sizes, random observations, no env, no multi-GPU,
# no episode resets.
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class Memory(nn.Module):
    def __init__(self, input_size, type="lstm", num_layers=1, hidden_size=256):
        super().__init__()
        rnn_cls = nn.GRU if type.lower() == "gru" else nn.LSTM
        self.rnn = rnn_cls(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        self.hidden_states = None

    def forward(self, input):
        out, self.hidden_states = self.rnn(input.unsqueeze(0), self.hidden_states)
        return out

    def reset(self, hidden_states=None):
        self.hidden_states = hidden_states

    def detach_hidden_states(self):
        if self.hidden_states is not None:
            if isinstance(self.hidden_states, tuple):
                self.hidden_states = tuple(hidden_state.detach() for hidden_state in self.hidden_states)
            else:
                self.hidden_states = self.hidden_states.detach()


def MLP(input_dim, output_dim, hidden_dims):
    layers, dim = [], input_dim
    for h in hidden_dims:
        layers += [nn.Linear(dim, h), nn.ELU()]
        dim = h
    layers.append(nn.Linear(dim, output_dim))
    return nn.Sequential(*layers)


class StudentTeacherRecurrent(nn.Module):
    is_recurrent = True

    def __init__(self, num_student_obs, num_teacher_obs, num_actions, rnn_hidden_dim=16):
        super().__init__()
        # student
        self.memory_s = Memory(num_student_obs, type="lstm", num_layers=1, hidden_size=rnn_hidden_dim)
        self.student = MLP(rnn_hidden_dim, num_actions, [32, 32])
        # teacher
        self.teacher = MLP(num_teacher_obs, num_actions, [32, 32])
        self.teacher.eval()

    def reset(self, hidden_states=None):
        if hidden_states is None:
            hidden_states = (None, None)
        self.memory_s.reset(hidden_states[0])

    def act_inference(self, obs):
        out_mem = self.memory_s(obs).squeeze(0)
        return self.student(out_mem)

    def evaluate(self, teacher_obs):
        with torch.no_grad():
            return self.teacher(teacher_obs)

    def get_hidden_states(self):
        return self.memory_s.hidden_states, None

    def detach_hidden_states(self):
        self.memory_s.detach_hidden_states()


class Distillation:
    def __init__(self, policy, num_learning_epochs=1, gradient_length=4, learning_rate=1e-3):
        self.policy = policy
        self.storage = None
        self.optimizer = optim.Adam(self.policy.student.parameters(), lr=learning_rate)  # <- optimizer
        self.last_hidden_states = None
        self.num_learning_epochs = num_learning_epochs
        self.gradient_length = gradient_length
        self.loss_fn = nn.functional.mse_loss

    def update(self):
        mean_behavior_loss = 0
        loss = 0
        cnt = 0
        for epoch in range(self.num_learning_epochs):
            self.policy.reset(hidden_states=self.last_hidden_states)
            self.policy.detach_hidden_states()
            for obs, privileged_actions in self.storage:
                # inference the student for gradient computation
                actions = self.policy.act_inference(obs)
                # behavior cloning loss
                behavior_loss = self.loss_fn(actions, privileged_actions)
                # total loss
                loss = loss + behavior_loss
                mean_behavior_loss += behavior_loss.item()
                cnt += 1
                # gradient step
                if cnt % self.gradient_length == 0:
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                    self.policy.detach_hidden_states()
                    loss = 0
        mean_behavior_loss /= cnt
        self.storage = None
        self.last_hidden_states = self.policy.get_hidden_states()
        self.policy.detach_hidden_states()
        return {"behavior": mean_behavior_loss}


num_envs, num_steps = 8, 8
policy = StudentTeacherRecurrent(num_student_obs=6, num_teacher_obs=10, num_actions=3)
alg = Distillation(policy)
rnn_weight_before = policy.memory_s.rnn.weight_hh_l0.detach().clone()
mlp_weight_before = policy.student[0].weight.detach().clone()

for it in range(3):
    # rollout: the student observes a part of what the teacher sees
    storage = []
    for step in range(num_steps):
        teacher_obs = torch.randn(num_envs, 10)
        student_obs = teacher_obs[:, :6]
        storage.append((student_obs, policy.evaluate(teacher_obs)))
    alg.storage = storage
    print("iteration", it, alg.update())

print("student MLP changed:", not torch.equal(mlp_weight_before, policy.student[0].weight))
print("student RNN grad is None:", policy.memory_s.rnn.weight_hh_l0.grad is None)
print("student RNN changed:", not torch.equal(rnn_weight_before, policy.memory_s.rnn.weight_hh_l0))
