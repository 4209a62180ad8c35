"""PyTorch tutorial "Classifying Names with a Character-Level RNN" (char_rnn_classification_tutorial, also
spro/practical-pytorch), pytorch/tutorials PR #86 "rnn was initialized twice",
https://github.com/pytorch/tutorials/pull/86, filed after the same reader's report
https://github.com/spro/practical-pytorch/issues/21: the reader replaced the tutorial's hand-written update
(`p.data.add_(-learning_rate, p.grad.data)`) by `optimizer = optim.SGD(rnn.parameters(), lr=0.005)` and
`optimizer.step()`, and the model stopped learning (loss stuck near log(n_categories), almost every name
misclassified). The tutorial builds `rnn = RNN(...)` once after the class and then again just before the training
loop; the optimizer was created from the first instance, while train() uses the global `rnn`, i.e. the second one.
Its weights get gradients every step (they are never zeroed either) but belong to no optimizer, so they never change;
the optimizer steps the first instance, which gets no gradient. Fix (the PR): drop the second `rnn = RNN(...)`.
Reduction: random one-hot "names" and categories instead of the names dataset, Variable/loss.data[0] replaced by
their current equivalents, 200 iterations."""
import torch
import torch.nn as nn
import torch.optim as optim

torch.set_num_threads(1)
torch.manual_seed(0)

n_letters = 57
n_categories = 18


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()

        self.hidden_size = hidden_size

        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


n_hidden = 128
rnn = RNN(n_letters, n_hidden, n_categories)


def randomTrainingExample():
    category = torch.randint(0, n_categories, (1,))
    length = int(torch.randint(3, 8, (1,)))
    letters = torch.randint(0, n_letters, (length,))
    line_tensor = torch.zeros(length, 1, n_letters)
    line_tensor[torch.arange(length), 0, letters] = 1
    return category, line_tensor


criterion = nn.NLLLoss()
optimizer = optim.SGD(rnn.parameters(), lr=0.005)


def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()
    optimizer.zero_grad()

    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)

    loss = criterion(output, category_tensor)
    loss.backward()
    optimizer.step()

    return output, loss.item()


n_iters = 200

rnn = RNN(n_letters, n_hidden, n_categories)  # <- optimizer

i2h_before = rnn.i2h.weight.detach().clone()
for iter in range(1, n_iters + 1):
    category_tensor, line_tensor = randomTrainingExample()
    output, loss = train(category_tensor, line_tensor)

print("rnn.i2h.weight.grad is None:", rnn.i2h.weight.grad is None)
print("rnn.i2h.weight in the optimizer:", any(p is rnn.i2h.weight for g in optimizer.param_groups for p in g["params"]))
print("rnn.i2h.weight changed during training:", not torch.equal(i2h_before, rnn.i2h.weight))
