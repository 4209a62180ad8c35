"""The char-RNN name classification tutorial switched to torch.optim (spro/practical-pytorch#9): the notebook
builds the RNN once after the class, makes the optimizer from it, and builds it again before the training loop;
train() uses the second RNN, whose parameters the optimizer does not hold, so the loss never goes down."""
import torch
from torch import nn

n_letters, n_hidden, n_categories = 10, 16, 3


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)

    def forward(self, inp, hidden):
        combined = torch.cat((inp, hidden), 1)
        return torch.log_softmax(self.i2o(combined), dim=1), torch.tanh(self.i2h(combined))


torch.manual_seed(0)
rnn = RNN(n_letters, n_hidden, n_categories)
learning_rate = 0.05
optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)
criterion = nn.NLLLoss()


def train(category_tensor, line_tensor):
    hidden = torch.zeros(1, rnn.hidden_size)
    optimizer.zero_grad()
    for i in range(line_tensor.size(0)):
        output, hidden = rnn(line_tensor[i], hidden)
    loss = criterion(output, category_tensor)
    loss.backward()
    optimizer.step()
    return loss.item()


rnn = RNN(n_letters, n_hidden, n_categories)  # <- optimizer
lines = [torch.randn(5, 1, n_letters) for _ in range(6)]
categories = [torch.tensor([i % n_categories]) for i in range(6)]
for epoch in range(4):
    total = sum(train(c, line) for c, line in zip(categories, lines))
    print(f"epoch {epoch}: loss {total / len(lines):.4f}")
