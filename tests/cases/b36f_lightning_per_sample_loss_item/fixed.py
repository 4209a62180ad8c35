# Lightning-style CNN whose training_step loops over the samples of a batch and
# accumulates the per-sample loss with `tr_loss += loss.item()`. The returned loss is
# a plain tensor with no history, so the trainer's backward raises
# "element 0 of tensors does not require grad and does not have a grad_fn".
import torch
import torch.nn as nn

torch.manual_seed(0)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.maxpool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(8 * 4 * 4, 2)
        self.dropout = nn.Dropout(0.25)
        self.leakyrelu = nn.LeakyReLU()
        self.loss = nn.CrossEntropyLoss(weight=torch.tensor([0.05, 0.95]))

    def forward(self, x):
        x = self.maxpool(self.leakyrelu(self.conv1(x)))
        x = self.maxpool(self.leakyrelu(self.conv2(x)))
        x = self.dropout(torch.flatten(x, 1))
        return self.fc1(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        tr_loss = torch.zeros(())
        for i in range(x.shape[0]):
            logits = self(x[i].unsqueeze(0))
            print(logits.requires_grad, y[i].requires_grad)
            loss = self.loss(logits, y[i].unsqueeze(0))
            tr_loss = tr_loss + loss
        return tr_loss / x.shape[0]

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def fit(model, loader, max_epochs=1):
    # what Trainer.fit does with automatic optimization
    optimizer = model.configure_optimizers()
    model.train()
    for epoch in range(max_epochs):
        for batch_idx, batch in enumerate(loader):
            def closure():
                loss = model.training_step(batch, batch_idx)
                optimizer.zero_grad()
                loss.backward()
                return loss
            optimizer.step(closure=closure)


loader = [(torch.randn(4, 1, 16, 16), torch.randint(0, 2, (4,))) for _ in range(2)]
model = CNN()
before = model.fc1.weight.detach().clone()
fit(model, loader)
print("fc1 changed:", not torch.equal(before, model.fc1.weight.detach()))
