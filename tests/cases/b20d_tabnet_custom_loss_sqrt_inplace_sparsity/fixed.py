"""pytorch-tabnet (dreamquark-ai/tabnet#312, https://github.com/dreamquark-ai/tabnet/issues/312): a
TabNetRegressor fitted with a user-defined RMSELoss (torch.sqrt of nn.MSELoss) fails at the first batch with
"RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation:
[torch.FloatTensor []], which is output 0 of SqrtBackward, is at version 1; expected version 0 instead."
Why: TabModel._train_batch (pytorch_tabnet 3.1.1) adds the sparsity regulariser with `loss -= self.lambda_sparse
* M_loss`, an in-place subtraction on the tensor the loss function returned. With the default MSELoss that is
harmless, but sqrt saves its output for backward, so the in-place write invalidates it and backward raises.
Fix (PR #323, "fix: custom loss using inplace operations"): `loss = loss - self.lambda_sparse * M_loss`."""
import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_


class RMSELoss(torch.nn.Module):
    def __init__(self):
        super(RMSELoss, self).__init__()

    def forward(self, x, y):
        criterion = nn.MSELoss()
        eps = 1e-6
        loss = torch.sqrt(criterion(x, y) + eps)
        return loss


class TabNet(nn.Module):
    """pytorch_tabnet.tab_network.TabNet in short: an attentive mask over the features, an encoder, and the
    sparsity term M_loss (entropy of the masks) returned beside the output."""

    def __init__(self, input_dim, output_dim, n_d=8, epsilon=1e-15):
        super().__init__()
        self.epsilon = epsilon
        self.attentive = nn.Linear(input_dim, input_dim)
        self.encoder = nn.Linear(input_dim, n_d)
        self.final_mapping = nn.Linear(n_d, output_dim)

    def forward(self, x):
        M = torch.softmax(self.attentive(x), dim=-1)
        M_loss = torch.mean(torch.sum(torch.mul(M, torch.log(M + self.epsilon)), dim=1))
        out = self.final_mapping(torch.relu(self.encoder(M * x)))
        return out, M_loss


class TabNetRegressor:
    """pytorch_tabnet.abstract_model.TabModel (3.1.1) in short: fit() builds the network and the optimizer and
    runs _train_batch over the batches."""

    def __init__(self, lambda_sparse=1e-3, clip_value=1, optimizer_fn=torch.optim.Adam,
                 optimizer_params=dict(lr=2e-2)):
        self.lambda_sparse = lambda_sparse
        self.clip_value = clip_value
        self.optimizer_fn = optimizer_fn
        self.optimizer_params = optimizer_params

    def compute_loss(self, y_pred, y_true):
        return self.loss_fn(y_pred, y_true)

    def fit(self, X_train, y_train, loss_fn=None, max_epochs=3, batch_size=32):
        self.loss_fn = loss_fn if loss_fn is not None else torch.nn.functional.mse_loss
        self.network = TabNet(X_train.shape[1], y_train.shape[1])
        self._optimizer = self.optimizer_fn(self.network.parameters(), **self.optimizer_params)
        for epoch in range(max_epochs):
            for i in range(0, len(X_train), batch_size):
                batch_logs = self._train_batch(X_train[i:i + batch_size], y_train[i:i + batch_size])
            print(f"epoch {epoch} | loss: {batch_logs['loss']:.5f}")

    def _train_batch(self, X, y):
        batch_logs = {"batch_size": X.shape[0]}

        X = X.float()
        y = y.float()

        for param in self.network.parameters():
            param.grad = None

        output, M_loss = self.network(X)

        loss = self.compute_loss(output, y)
        # Add the overall sparsity loss
        loss = loss - self.lambda_sparse * M_loss

        # Perform backward pass and optimization
        loss.backward()
        if self.clip_value:
            clip_grad_norm_(self.network.parameters(), self.clip_value)
        self._optimizer.step()

        batch_logs["loss"] = loss.cpu().detach().numpy().item()

        return batch_logs


torch.manual_seed(0)
X_train = torch.randn(128, 6)
y_train = X_train[:, :1] * 2.0 - X_train[:, 1:2]
clf = TabNetRegressor()
clf.fit(X_train=X_train, y_train=y_train, max_epochs=3, batch_size=32, loss_fn=RMSELoss())
