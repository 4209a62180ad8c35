"""The fixed twin: the loss takes the logits; the argmax is kept for the accuracy (php.bkmy88.com/faq/1835025.html)."""
import torch
from torch import nn


def accuracy(y_true, y_pred):
    return (y_true == y_pred).float().mean().item() * 100


torch.manual_seed(0)
X_train = torch.randn(120, 4)
y_train = (X_train[:, 0] > 0).type(torch.float32) + (X_train[:, 1] > 0).type(torch.float32)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
loss_fn = nn.CrossEntropyLoss()
optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
Epochs = 5
for epoch in range(Epochs):
    model.train()
    train_logits = model(X_train)
    train_preds_probs = torch.softmax(train_logits, dim=1).argmax(dim=1).type(torch.float32)
    loss = loss_fn(train_logits, y_train.long())
    train_accu = accuracy(y_train, train_preds_probs)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}, accuracy {train_accu:.1f}%")
