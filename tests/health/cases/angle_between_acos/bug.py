import torch


def unit_vector(v):
    return v / v.norm()


def angle_between(vector0, vector1):
    unit_vector0 = unit_vector(vector0)
    unit_vector1 = unit_vector(vector1)
    return unit_vector0.dot(unit_vector1).clamp(-1.0, 1.0).acos()  # <- nan


direction = torch.tensor([1.0, 0.0], requires_grad=True)
opt = torch.optim.SGD([direction], lr=0.1)
loss = angle_between(direction, torch.tensor([2.0, 0.0]))
loss.backward()
print(direction.grad)
opt.step()
