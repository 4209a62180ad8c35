"""Sine-wave sequence prediction with LBFGS and a closure, in the shape of pytorch/examples
time_sequence_prediction (LSTMCell unrolled, future predictions under no_grad)."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 12)
        self.lstm2 = nn.LSTMCell(12, 12)
        self.linear = nn.Linear(12, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 12, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 12, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 12, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 12, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def main():
    np.random.seed(0)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = np.empty((6, 20), "int64")
    x[:] = np.array(range(20)) + np.random.randint(-20, 20, 6).reshape(6, 1)
    data = np.sin(x / 1.0 / 5).astype("float64")
    input = torch.from_numpy(data[2:, :-1])
    target = torch.from_numpy(data[2:, 1:])
    test_input = torch.from_numpy(data[:2, :-1])
    test_target = torch.from_numpy(data[:2, 1:])
    seq = Sequence().double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4)
    for i in range(3):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print("loss:", f"{loss.item():.8f}")
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            future = 5
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print("test loss:", f"{loss.item():.8f}")
            y = pred.detach().numpy()
        print("prediction tail", np.round(y[0, -1], 6))
    if os.environ.get("REALWORLD_STATE"):
        torch.save(seq.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
