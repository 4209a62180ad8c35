# DeepSVDD loss is commented  (pyod issue #606; fixed by PR #704 "Fix DeepSVDD not
# training due to disabled backward pass")
# https://github.com/yzhao062/pyod/issues/606  /  https://github.com/yzhao062/pyod/pull/704
# What went wrong: DeepSVDD.fit() built the weight-decay term w_d ONCE, before the epoch
# loop, and added that same tensor to every batch's loss. Its graph (the norms of the
# weights) is freed by the first loss.backward(), so the second backward raises
# "Trying to backward through the graph a second time". Upstream had papered over it by
# commenting out loss.backward() (so the net never trained); the reporter uncommented it
# and got this error.
# Fix (PR #704): recompute w_d inside the batch loop, so it belongs to each batch's graph.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class InnerDeepSVDD(nn.Module):
    def __init__(self, n_features, hidden_neurons=(64, 32), hidden_activation="relu",
                 dropout_rate=0.2):
        super().__init__()
        self.n_features = n_features
        self.hidden_neurons = list(hidden_neurons)
        self.dropout_rate = dropout_rate
        self.c = None
        self.model = self._build_model()

    def _init_c(self, X_norm, eps=0.1):
        intermediate_output = {}
        hook_handle = self.model._modules.get("net_output").register_forward_hook(
            lambda module, input, output: intermediate_output.update({"net_output": output}))
        output = self.model(X_norm)
        out = intermediate_output["net_output"]
        hook_handle.remove()
        self.c = torch.mean(out, dim=0)
        self.c[(torch.abs(self.c) < eps) & (self.c < 0)] = -eps
        self.c[(torch.abs(self.c) < eps) & (self.c > 0)] = eps

    def _build_model(self):
        layers = nn.Sequential()
        layers.add_module("input_layer", nn.Linear(self.n_features, self.hidden_neurons[0], bias=False))
        layers.add_module("hidden_activation_e0", nn.ReLU())
        for i in range(1, len(self.hidden_neurons) - 1):
            layers.add_module(f"hidden_layer_e{i}", nn.Linear(self.hidden_neurons[i - 1], self.hidden_neurons[i], bias=False))
            layers.add_module(f"hidden_activation_e{i}", nn.ReLU())
            layers.add_module(f"hidden_dropout_e{i}", nn.Dropout(self.dropout_rate))
        layers.add_module("net_output", nn.Linear(self.hidden_neurons[-2], self.hidden_neurons[-1], bias=False))
        layers.add_module("hidden_activation_e_last", nn.ReLU())
        return layers

    def forward(self, x):
        return self.model(x)


class DeepSVDD:
    def __init__(self, n_features, c=None, hidden_neurons=None, epochs=2, batch_size=32,
                 l2_regularizer=0.1, random_state=0):
        self.n_features = n_features
        self.c = c
        self.hidden_neurons = hidden_neurons or [64, 32]
        self.epochs = epochs
        self.batch_size = batch_size
        self.l2_regularizer = l2_regularizer
        torch.manual_seed(random_state)
        self.model_ = InnerDeepSVDD(n_features, hidden_neurons=self.hidden_neurons)

    def fit(self, X, y=None):
        X_norm = torch.tensor(X, dtype=torch.float32)
        if self.c is None:
            self.c = 0.0
            self.model_._init_c(X_norm)

        dataset = TensorDataset(X_norm, X_norm)
        dataloader = DataLoader(dataset, batch_size=self.batch_size, shuffle=True)

        best_loss = float("inf")
        best_model_dict = None
        optimizer = torch.optim.Adam(self.model_.parameters(), weight_decay=self.l2_regularizer)
        for epoch in range(self.epochs):
            self.model_.train()
            epoch_loss = 0
            for batch_x, _ in dataloader:
                outputs = self.model_(batch_x)
                dist = torch.sum((outputs - self.c) ** 2, dim=-1)
                w_d = 1e-6 * sum([torch.linalg.norm(w) for w in self.model_.parameters()])
                loss = torch.mean(dist) + w_d

                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                epoch_loss += loss.item()
            epoch_loss /= len(dataloader)
            print(f"Epoch {epoch + 1}/{self.epochs}, Loss: {epoch_loss}")
            if epoch_loss < best_loss:
                best_loss = epoch_loss
                best_model_dict = self.model_.state_dict()
        self.best_model_dict = best_model_dict
        return self


X_train = torch.randn(128, 10).numpy()
clf = DeepSVDD(n_features=10)
w_before = clf.model_.model.input_layer.weight.detach().clone()
clf.fit(X_train)
print("input_layer weight changed:", not torch.equal(w_before, clf.model_.model.input_layer.weight))
