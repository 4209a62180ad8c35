"""LSQplus (ZouJiu1/LSQplus, LSQ / LSQ+ quantization-aware training of a CIFAR-10 ResNet), issue #1
"关于scale参数是否学习的问题" (does the scale parameter learn?), https://github.com/ZouJiu1/LSQplus/issues/1:
in lsqquantize_V1.py the quantizer keeps its step size self.s as a plain tensor, initialised from the weight
statistics during the first batch_init forwards, and only at forward number batch_init turns it into
torch.nn.Parameter(self.s). trains.py builds SGD from [p for p in model.parameters() if p.requires_grad] before
training starts, so the step sizes are not in it: they get gradients from FunLSQ's backward but stay constant.
The author fixed it ("torch.nn.Parameter add parameters to autograd automaticly"): self.s is created as an
nn.Parameter in __init__ and the initialisation writes self.s.data in forward.
Reduction: ResNet-18 on CIFAR-10 -> two QuantConv2d and a QuantLinear on random batches; only the weight quantizer
is kept (the activation quantizer has the same code); per-tensor step size; Round's STE as in the repo."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function

torch.manual_seed(0)
torch.set_num_threads(1)


class Round(Function):
    @staticmethod
    def forward(self, input):
        sign = torch.sign(input)
        return sign * torch.floor(torch.abs(input) + 0.5)

    @staticmethod
    def backward(self, grad_output):
        return grad_output.clone()


class FunLSQ(Function):
    @staticmethod
    def forward(ctx, weight, alpha, g, Qn, Qp):
        ctx.save_for_backward(weight, alpha)
        ctx.other = g, Qn, Qp
        w_q = Round.apply(torch.div(weight, alpha).clamp(Qn, Qp))
        return w_q * alpha

    @staticmethod
    def backward(ctx, grad_weight):
        weight, alpha = ctx.saved_tensors
        g, Qn, Qp = ctx.other
        q_w = weight / alpha
        smaller = (q_w < Qn).float()
        bigger = (q_w > Qp).float()
        between = 1.0 - smaller - bigger
        grad_alpha = ((smaller * Qn + bigger * Qp + between * Round.apply(q_w) - between * q_w)
                      * grad_weight * g).sum().unsqueeze(dim=0)
        return between * grad_weight, grad_alpha, None, None, None


class LSQWeightQuantizer(nn.Module):
    def __init__(self, w_bits, batch_init=2):
        super(LSQWeightQuantizer, self).__init__()
        self.w_bits = w_bits
        self.batch_init = batch_init
        self.Qn = - 2 ** (w_bits - 1)
        self.Qp = 2 ** (w_bits - 1) - 1
        self.s = torch.nn.Parameter(torch.ones(1))
        self.init_state = 0

    def forward(self, weight):
        if self.init_state == 0:
            self.g = 1.0 / math.sqrt(weight.numel() * self.Qp)
            self.s.data = torch.mean(torch.abs(weight.detach())) * 2 / (math.sqrt(self.Qp))
            self.init_state += 1
        elif self.init_state < self.batch_init:
            self.s.data = 0.9 * self.s.data + 0.1 * torch.mean(torch.abs(weight.detach())) * 2 / (math.sqrt(self.Qp))
            self.init_state += 1
        elif self.init_state == self.batch_init:
            # self.s = torch.nn.Parameter(self.s)
            self.init_state += 1
        return FunLSQ.apply(weight, self.s, self.g, self.Qn, self.Qp)


class QuantConv2d(nn.Conv2d):
    def __init__(self, *args, w_bits=4, batch_init=2, **kwargs):
        super(QuantConv2d, self).__init__(*args, **kwargs)
        self.weight_quantizer = LSQWeightQuantizer(w_bits=w_bits, batch_init=batch_init)

    def forward(self, input):
        quant_weight = self.weight_quantizer(self.weight)
        return F.conv2d(input, quant_weight, self.bias, self.stride, self.padding)


class QuantLinear(nn.Linear):
    def __init__(self, *args, w_bits=4, batch_init=2, **kwargs):
        super(QuantLinear, self).__init__(*args, **kwargs)
        self.weight_quantizer = LSQWeightQuantizer(w_bits=w_bits, batch_init=batch_init)

    def forward(self, input):
        return F.linear(input, self.weight_quantizer(self.weight), self.bias)


model = nn.Sequential(QuantConv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      QuantConv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      QuantLinear(16, 10))
params = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(params, lr=0.01, momentum=0.97, nesterov=True)
criterion = nn.CrossEntropyLoss()

steps = []
for stepiters in range(8):
    image, label = torch.randn(6, 3, 16, 16), torch.randint(0, 10, (6,))
    optimizer.zero_grad()
    outputs = model(image)
    loss = criterion(outputs, label)
    loss.backward()
    optimizer.step()
    if stepiters == 3:
        s_after_init = model[0].weight_quantizer.s.detach().clone()

s = model[0].weight_quantizer.s
print("step size s is a Parameter:", isinstance(s, nn.Parameter), "| s.grad:", s.grad)
print("s in the optimizer:", any(p is s for g in optimizer.param_groups for p in g["params"]))
print("s unchanged over the last 4 steps:", torch.equal(s_after_init, s.detach()))
