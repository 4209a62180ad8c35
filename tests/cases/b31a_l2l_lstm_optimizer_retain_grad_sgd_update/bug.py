"""yangsenius/learning-to-learn-by-pytorch issue #5, "bug",
https://github.com/yangsenius/learning-to-learn-by-pytorch/issues/5

"Learning to learn by gradient descent by gradient descent": a coordinate-wise LSTM optimizer is meta-trained by
unrolling it on random quadratics, then `evaluate()` runs the same `Learner` with the hand-crafted SGD (and RMS)
optimizers for comparison. Running learning_to_learn.py stops with "RuntimeError: can't retain_grad on Tensor that
has requires_grad=False" (three more users report the same; nobody answered in the thread). The Learner's unrolled
loop calls `update.retain_grad()` after every step: for the LSTM the update comes out of the LSTM's weights and
requires grad, but the hand-crafted SGD computes it from `x.grad.clone().detach()`, so it is a constant, and current
PyTorch refuses retain_grad on it. The update's gradient is never read. Fix: only retain it when it is part of the
graph (`if update.requires_grad:`). Shapes are shrunk (batchsize 8, short unrolls); the rest follows the file.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
DIM = 10
batchsize = 8


def f(W, Y, x):
    """quadratic function : f(\\theta) = \\|W\\theta - y\\|_2^2"""
    return ((torch.matmul(W, x.unsqueeze(-1)).squeeze() - Y) ** 2).sum(dim=1).mean(dim=0)


def SGD(gradients, state, learning_rate=0.001):
    return -gradients * learning_rate, state


class LSTM_optimizer_Model(nn.Module):
    def __init__(self, input_size, output_size, hidden_size, num_stacks, output_scale=1):
        super(LSTM_optimizer_Model, self).__init__()
        self.output_scale = output_scale
        self.lstm = nn.LSTM(input_size, hidden_size, num_stacks)
        self.Linear = nn.Linear(hidden_size, output_size)

    def forward(self, input_gradients, prev_state):
        gradients = input_gradients.unsqueeze(0)
        if prev_state is None:
            prev_state = (torch.zeros(Layers, batchsize, Hidden_nums), torch.zeros(Layers, batchsize, Hidden_nums))
        update, next_state = self.lstm(gradients, prev_state)
        update = self.Linear(update) * self.output_scale
        return update.squeeze().squeeze(), next_state


Layers, Hidden_nums = 2, 20
LSTM_optimizer = LSTM_optimizer_Model(DIM, DIM, Hidden_nums, Layers)


class Learner(object):
    def __init__(self, f, optimizer, train_steps, retain_graph_flag=False):
        self.f, self.optimizer, self.train_steps = f, optimizer, train_steps
        self.retain_graph_flag = retain_graph_flag
        self.losses = []

    def __call__(self, num_roll=0):
        W = torch.randn(batchsize, DIM, DIM)
        Y = torch.randn(batchsize, DIM)
        x = torch.zeros(batchsize, DIM).requires_grad_(True)
        state = None
        global_loss_graph = 0
        for i in range(self.train_steps):
            loss = self.f(W, Y, x)
            global_loss_graph += loss
            loss.backward(retain_graph=self.retain_graph_flag)
            update, state = self.optimizer(x.grad.clone().detach(), state)
            self.losses.append(loss.item())
            x = x + update
            x.retain_grad()
            update.retain_grad()  # <- autograd_error
        return self.losses, global_loss_graph


def Learning_to_learn_global_training(optimizer, global_training_steps, UnRoll_STEPS, optimizer_lr=0.01):
    adam_global_optimizer = torch.optim.Adam(optimizer.parameters(), lr=optimizer_lr)
    LSTM_Learner = Learner(f, optimizer, UnRoll_STEPS, retain_graph_flag=True)
    for i in range(global_training_steps):
        _, global_loss = LSTM_Learner(i)
        adam_global_optimizer.zero_grad()
        global_loss.backward()
        adam_global_optimizer.step()
        print("global step", i, "Global_Loss = {:.1f}".format(global_loss.item()))


def evaluate(STEPS=10):
    SGD_Learner = Learner(f, SGD, STEPS)
    LSTM_learner = Learner(f, LSTM_optimizer, STEPS, retain_graph_flag=True)
    sgd_losses, sgd_sum_loss = SGD_Learner()
    lstm_losses, lstm_sum_loss = LSTM_learner()
    print("sum_loss: sgd={:.1f}, lstm={:.1f}".format(sgd_sum_loss.item(), lstm_sum_loss.item()))


lstm_w_before = LSTM_optimizer.Linear.weight.detach().clone()
Learning_to_learn_global_training(LSTM_optimizer, global_training_steps=3, UnRoll_STEPS=5)
print("LSTM optimizer trained:", not torch.equal(lstm_w_before, LSTM_optimizer.Linear.weight))
evaluate()
