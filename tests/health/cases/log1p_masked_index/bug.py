import torch


def test_bug():
    a = torch.tensor([-1.0, 0.5, 1.0], requires_grad=True)
    l = torch.log1p(a)[a > -1].sum()  # <- nan
    l.backward()
    print(a.grad)


test_bug()
