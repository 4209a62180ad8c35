"""PyPOTS' training loop keeps the best model as `self.model.state_dict()` (WenjieDu/PyPOTS#667): the dict
holds references to the live weights, so the "best" checkpoint restored after training is the last
epoch's weights."""
import torch
import torch.nn as nn


class _SAITSLike(nn.Module):
    def __init__(self, n_features=4, d_model=16):
        super().__init__()
        self.embedding = nn.Linear(n_features * 2, d_model)
        self.reduce_dim = nn.Linear(d_model, n_features)

    def forward(self, X, missing_mask):
        return self.reduce_dim(torch.relu(self.embedding(torch.cat([X * missing_mask, missing_mask], dim=-1))))


class SAITS:
    def __init__(self, epochs=6, lr=0.5):
        self.model = _SAITSLike()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.epochs = epochs
        self.best_loss = float("inf")
        self.best_model_dict = None

    def _calc_loss(self, X, mask, target):
        return ((self.model(X, mask) - target) ** 2 * (1 - mask)).sum() / (1 - mask).sum()

    def _train_model(self, train_set, val_set):
        for epoch in range(self.epochs):
            self.model.train()
            loss = self._calc_loss(*train_set)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.model.eval()
            with torch.no_grad():
                mean_val_loss = self._calc_loss(*val_set).item()
            print(f"epoch {epoch}: training loss {loss.item():.4f}, validating loss {mean_val_loss:.4f}")
            if mean_val_loss < self.best_loss:
                self.best_loss = mean_val_loss
                self.best_model_dict = self.model.state_dict()  # <- state_dict_alias

    def fit(self, train_set, val_set):
        self._train_model(train_set, val_set)
        self.model.load_state_dict(self.best_model_dict)
        self.model.eval()
        with torch.no_grad():
            print(f"best validating loss {self.best_loss:.4f}; restored model's validating loss {self._calc_loss(*val_set).item():.4f}")


torch.manual_seed(0)
X = torch.randn(64, 6, 4)
mask = (torch.rand(64, 6, 4) > 0.3).float()
train_set, val_set = (X[:48], mask[:48], X[:48]), (X[48:], mask[48:], X[48:])
SAITS().fit(train_set, val_set)
