"""zhangyu2234/Deep-learning-by-hand, notebook "1.3 Problems I encountered"
(https://github.com/zhangyu2234/Deep-learning-by-hand, file
"Chapter 1-Let's start with the simplest full connection/1.3 Problems I encountered.ipynb"): a blog-style
notebook where the author trains a hand-written fully connected layer on synthetic data and hits
"RuntimeError: Trying to backward through the graph a second time" at l.backward() on the second batch.
Why (the author's own diagnosis): the synthetic labels Y were computed from true_W/true_b created with
requires_grad=True, so every label batch the DataLoader hands out is a slice of that one graph; the first
l.backward() frees it, the second batch backpropagates into it again.
Fix: make the labels constants, Y = (torch.mm(X, true_W) + true_b).detach() (creating true_W/true_b without
requires_grad works as well)."""
import random

import torch

torch.manual_seed(0)
random.seed(0)


# utils/Common.py of the same repository
class DataLoader:
    def __init__(self, data, labels, batch_size, shuffle=False):
        self.data = data
        self.batch_size = batch_size
        self.labels = labels
        self.indexes = list(range(len(self.data)))
        self.shuffle = shuffle
    def __iter__(self):
        self.start = 0
        if self.shuffle is True:
            random.shuffle(self.indexes)
        return self
    def __next__(self):
        start = self.start
        self.end = min(start+self.batch_size, len(self.data))
        if start >= self.end:
            raise StopIteration
        self.start += self.batch_size
        index = self.indexes[start:self.end]
        return self.data[index], self.labels[index]


def loss(y_hat, y):
    return torch.mean((y_hat.reshape(y.shape) - y)**2 / 2)


def sgd(params, lr, batch_size):
    with torch.no_grad():
        for i in range(len(params)):
            params[i] -= lr * params[i].grad / batch_size
            params[i].grad.zero_()


def relu(x):
    a = torch.zeros(x.shape)
    return torch.max(a, x)


# Randomly generate our training samples and train labels
num_samples = 400
num_features = 2
num_hiddens = 2
X = torch.randn((num_samples, num_features), dtype=torch.float32)
true_W = torch.randn((num_hiddens, 1), requires_grad=True, dtype=torch.float32)
true_b = torch.randn(1, requires_grad=True, dtype=torch.float32)
Y = (torch.mm(X, true_W) + true_b).detach()


def fc(x, w, b):
    return relu(torch.mm(x, w) + b)


# Randomly generate W and b and attach gradients
W = torch.normal(0, 0.01, size=(num_hiddens, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)

batch_size = 20
lr = 0.01
num_epochs = 20
dataloader = DataLoader(X, Y, batch_size, shuffle=True)
W0 = W.detach().clone()
for epoch in range(num_epochs):
    for x, y in dataloader:
        l = loss(fc(x, W, b), y)
        l.backward()
        sgd([W, b], lr, batch_size)
    if (epoch+1) % 5 == 0:
        print('Epoch:{}, Loss:{:.4f}'.format(epoch+1, l))
print("W changed:", not torch.equal(W0, W.detach()))
