"""pytorch/pytorch#74158 "torch.no_grad() removes requires_grad from weight tensor while updating it by
non-compound-operation", https://github.com/pytorch/pytorch/issues/74158
Symptom: a hand-written linear-regression loop updates its weight inside torch.no_grad() with
w = w - lr * w.grad; afterwards w prints as tensor(0.3000) without requires_grad, and the reported script stops
at w.grad.zero_() (AttributeError: 'NoneType' object has no attribute 'zero_'). The reporter filed it as
no_grad stripping requires_grad from the weight.
Why: under no_grad, w - lr * w.grad builds a NEW tensor that does not require grad, and the name w is rebound
to it; the leaf that received the gradient is dropped and never updated, and the new w has no .grad.
Fix (the reporter's own comment in the script): update the leaf in place, w -= lr * w.grad."""
import torch

torch.manual_seed(0)

X = torch.tensor([1, 2, 3, 4], dtype=torch.float32)
Y = torch.tensor([2, 4, 6, 8], dtype=torch.float32)

w = torch.tensor(0.0, dtype=torch.float32, requires_grad=True)

# Prediction
def predict(x):
        return w * x

# Loss
def loss1(y, y_pred):
        return ((y_pred - y)**2).mean()

# Training
epochs = 100
lr = 0.01
for epoch in range(1, epochs+1):

    y_pred = predict(X)
    l = loss1(Y, y_pred)
    l.backward()

    with torch.no_grad():
        # If the following line changed to w -= lr * w.grad; it will work
        w -= lr * w.grad

    w.grad.zero_()

    if epoch % 20 == 0:
        print(f"Epoch {epoch}: w = {w:.3f}, loss = {l:.8f}")
