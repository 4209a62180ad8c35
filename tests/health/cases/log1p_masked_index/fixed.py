import torch


def test_bug():
    a = torch.tensor([-1.0, 0.5, 1.0], requires_grad=True)
    keep = a > -1
    l = torch.log1p(a[keep]).sum()
    l.backward()
    print(a.grad)


test_bug()
