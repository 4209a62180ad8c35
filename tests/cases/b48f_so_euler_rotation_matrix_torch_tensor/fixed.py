# Report: Stack Overflow "Construct a rotation matrix in Pytorch" (question 59387182)
# https://stackoverflow.com/questions/59387182/construct-a-rotation-matrix-in-pytorch
# The reporter wants to regress unknown Euler angles, so builds the three axis
# rotation matrices RX, RY, RZ from roll/pitch/yaw with torch.tensor([...]).
# torch.tensor copies the *values* of cos(roll), sin(roll), ... into a new leaf
# (the requires_grad=True only makes RX itself a leaf), so the graph back to the
# angles is cut: "There isn't any gradient value" -- roll.grad stays None.
# Accepted answer: build the matrices with torch.stack instead of torch.tensor.
import torch
from torch import cos, sin

torch.manual_seed(0)

roll = torch.randn(1, requires_grad=True)
yaw = torch.randn(1, requires_grad=True)
pitch = torch.randn(1, requires_grad=True)

tensor_0 = torch.zeros(1)
tensor_1 = torch.ones(1)

RX = torch.stack([
    torch.stack([tensor_1, tensor_0, tensor_0]),
    torch.stack([tensor_0, cos(roll), -sin(roll)]),
    torch.stack([tensor_0, sin(roll), cos(roll)])]).reshape(3, 3)
RY = torch.stack([
    torch.stack([cos(pitch), tensor_0, sin(pitch)]),
    torch.stack([tensor_0, tensor_1, tensor_0]),
    torch.stack([-sin(pitch), tensor_0, cos(pitch)])]).reshape(3, 3)
RZ = torch.stack([
    torch.stack([cos(yaw), -sin(yaw), tensor_0]),
    torch.stack([sin(yaw), cos(yaw), tensor_0]),
    torch.stack([tensor_0, tensor_0, tensor_1])]).reshape(3, 3)
R = torch.mm(RZ, RY).requires_grad_()
R = torch.mm(R, RX).requires_grad_()
R = R.mean().requires_grad_()
R.backward()

print("roll.grad:", roll.grad)
