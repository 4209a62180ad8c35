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

roll = yaw = pitch = torch.randn(1, requires_grad=True)
RX = torch.tensor([  # <- tensor_rewrap
    [1, 0, 0],
    [0, cos(roll), -sin(roll)],
    [0, sin(roll), cos(roll)]
], requires_grad=True)
RY = torch.tensor([
    [cos(pitch), 0, sin(pitch)],
    [0, 1, 0],
    [-sin(pitch), 0, cos(pitch)]
], requires_grad=True)
RZ = torch.tensor([
    [cos(yaw), -sin(yaw), 0],
    [sin(yaw), cos(yaw), 0],
    [0, 0, 1]
], requires_grad=True)
R = torch.mm(RZ, RY).requires_grad_()
R = torch.mm(R, RX).requires_grad_()
R = R.mean().requires_grad_()
R.backward()

print("roll.grad:", roll.grad)
