"""pytorch/pytorch#727 "F.relu(inplace) followed by F.dropout(inplace) breaks backward pass",
https://github.com/pytorch/pytorch/issues/727
Symptom: x is a leaf Variable with requires_grad=True; x = F.relu(x, inplace=True) then
x = F.dropout(x, p=0.1, inplace=True) and result.backward() fails. The reporter filed it as a backward bug.
Today's PyTorch refuses already at the relu line: "a leaf Variable that requires grad is being used in an
in-place operation."
Why (apaszke): "that is expected. You can't apply in-place operations to leaf Variables."
Fix (apaszke): "Just remove the inplace flag". The write into the leaf is the relu line; the dropout must lose
its inplace flag too, since it would overwrite relu's output, which relu saved for its backward."""
import torch
import torch.nn as nn
from torch.autograd import Variable
import numpy as np
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

x = Variable(torch.from_numpy(np.random.randn(4, 6, 10,10)).float(), requires_grad=True)
x = F.relu(x)
x = F.dropout(x,p=0.1)
result = torch.sum(x)
result.backward()
