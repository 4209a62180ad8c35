"""Two-phase training: warm up the head with backward(inputs=[...]) while the encoder waits, then
rebind the optimizer variable (Adam for phase 1, SGD for phase 2) and train everything."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    encoder = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
    head = nn.Linear(16, 2)
    x, y = torch.randn(24, 6), torch.randint(0, 2, (24,))
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    for step in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(head(encoder(x)), y)
        loss.backward(inputs=list(head.parameters()))
        opt.step()
        print(f"phase 1 step {step} loss {loss.item():.6f}")
    opt = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.05, momentum=0.9)
    for step in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(head(encoder(x)), y)
        loss.backward()
        opt.step()
        print(f"phase 2 step {step} loss {loss.item():.6f}")
    opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
    opt.zero_grad()
    loss = F.cross_entropy(head(encoder(x)), y)
    loss.backward()
    opt.step()
    print(f"fine-tune loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"encoder": encoder.state_dict(), "head": head.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
