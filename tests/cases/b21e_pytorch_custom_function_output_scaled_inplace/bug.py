"""pytorch/pytorch#30454 "backward not called with custom op", https://github.com/pytorch/pytorch/issues/30454
Symptom: a custom torch.autograd.Function CustomOp (forward: x *= 2.0; return x) is applied to the output of
self.fc, and forward then scales its result in place, logits *= self.s; x.mean().backward() never runs
CustomOp.backward (no 'Running in backward...'), so the reporter (PyTorch 1.3) filed it as autograd skipping
the custom backward. The reporter's own commented-out line, logits = logits * self.s, is the working variant.
Why: forward returns its input as-is, so the output counts as a view created inside the custom Function; the
in-place logits *= self.s then makes autograd's view+inplace logic rewrite the view's history, which overrides
CustomOpBackward. Today's PyTorch refuses that write: "Output 0 of CustomOp is a view and is being modified
inplace ... would override the custom backward ... You can fix this by cloning the output of the custom
Function."
Fix: scale out of place, logits = logits * self.s (the reporter's commented line)."""
import torch
import torch.nn as nn

torch.manual_seed(0)

class CustomOp(torch.autograd.Function):
  @staticmethod
  def forward(ctx, x):
    x *= 2.0
    return x

  @staticmethod
  def backward(ctx, grad_output):
    print('Running in backward...')
    grad_output *= 2.0
    return grad_output

def custom_op(x):
  return CustomOp.apply(x)

class Net(nn.Module):
  def __init__(self, in_channel, out_channel, scale=400.0):
    super(Net, self).__init__()
    self.fc = nn.Linear(in_channel, out_channel)
    self.s = scale

  def forward(self, input):
    x = self.fc(input)
    logits = custom_op(x)
#    logits = logits * self.s
    logits *= self.s  # <- autograd_error
    return logits

bs = 32
in_channel = 128
out_channel = 512
dummy_x = torch.rand(bs, in_channel)

net = Net(in_channel, out_channel)
x = net(dummy_x)
x.mean().backward()
print('fc.weight.grad is None:', net.fc.weight.grad is None)
