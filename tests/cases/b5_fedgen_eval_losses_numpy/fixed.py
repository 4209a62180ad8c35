"""The fixed twin: the test losses are detached before NumPy sums them."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 3)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


class User:
    def __init__(self, user_id, model, data):
        self.id, self.model, self.data = user_id, copy.deepcopy(model), data
        self.train_samples = len(data[1])
        self.loss = nn.NLLLoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def set_parameters(self, model):
        for param, new_param in zip(self.model.parameters(), model.parameters()):
            param.data = new_param.data.clone()

    def train(self, epochs=2):
        x, y = self.data
        for _ in range(epochs):
            self.optimizer.zero_grad()
            self.loss(self.model(x), y).backward()
            self.optimizer.step()

    def test(self):
        self.model.eval()
        x, y = self.data
        output = self.model(x)
        test_acc = torch.sum(torch.argmax(output, dim=1) == y).item()
        loss = self.loss(output, y)
        return test_acc, loss, y.shape[0]


class Server:
    def __init__(self, model, users):
        self.model, self.users = copy.deepcopy(model), users

    def aggregate_parameters(self):
        for param in self.model.parameters():
            param.data = torch.zeros_like(param.data)
        total_train = sum(user.train_samples for user in self.users)
        for user in self.users:
            for server_param, user_param in zip(self.model.parameters(), user.model.parameters()):
                server_param.data = server_param.data + user_param.data.clone() * user.train_samples / total_train

    def test(self):
        num_samples, tot_correct, losses = [], [], []
        for c in self.users:
            ct, c_loss, ns = c.test()
            tot_correct.append(ct * 1.0)
            num_samples.append(ns)
            losses.append(c_loss)
        return [c.id for c in self.users], num_samples, tot_correct, losses

    def evaluate(self):
        test_ids, test_samples, test_accs, test_losses = self.test()
        glob_acc = np.sum(test_accs) * 1.0 / np.sum(test_samples)
        glob_loss = np.sum([x * y.detach() for (x, y) in zip(test_samples, test_losses)]).item() / np.sum(test_samples)
        print("Average Global Accurancy = {:.4f}, Loss = {:.2f}.".format(glob_acc, glob_loss))


torch.manual_seed(0)
model = Net()
users = [User(i, model, (torch.randn(10, 8), torch.randint(0, 3, (10,)))) for i in range(3)]
server = Server(model, users)
for glob_iter in range(2):
    for user in users:
        user.set_parameters(server.model)
        user.train()
    server.aggregate_parameters()
    server.evaluate()
