"""torchvision issue #302 "Failed in fine-tuning inception_v3", https://github.com/pytorch/vision/issues/302:
in training mode the Inception/GoogLeNet models return their auxiliary classifiers' logits next to the main
output. The advice first given in the thread was to unpack the tuple (`output, aux = model(input_var)`) and keep
computing the loss on `output`; a reporter training GoogLeNet from scratch (no pretrained weights) did so and got
a low accuracy. The auxiliary classifiers aux1/aux2 are then run at every step but reach no loss: they get no
gradient and never learn. The thread settled on adding their losses with GoogLeNet's weighting:
`loss = loss1 + 0.3 * (loss2 + loss3)` (output order fixed by fmassa: `output, aux2, aux1`).
Stand-ins: torchvision googlenet built without weights for 10 classes, random 64x64 images, SGD for a few steps."""
import torch
import torch.nn as nn
from torchvision import models

torch.manual_seed(0)
torch.set_num_threads(1)

model = models.googlenet(weights=None, aux_logits=True, init_weights=True, num_classes=10)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
aux1_before = model.aux1.fc2.weight.detach().clone()

model.train()
for step in range(3):
    inputs = torch.randn(4, 3, 64, 64)
    target = torch.randint(0, 10, (4,))
    output, aux2, aux1 = model(inputs)
    loss = criterion(output, target) + 0.3 * (criterion(aux1, target) + criterion(aux2, target))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

print("aux1.fc2.weight.grad is None:", model.aux1.fc2.weight.grad is None)
print("aux2.conv.conv.weight.grad is None:", model.aux2.conv.conv.weight.grad is None)
print("aux1 classifier changed:", not torch.equal(model.aux1.fc2.weight, aux1_before))
