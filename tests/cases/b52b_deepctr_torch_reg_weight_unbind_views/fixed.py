# Pytorch 1.7.0 RuntimeError
# https://github.com/shenweichen/DeepCTR-Torch/issues/130
# What went wrong: deepctr-torch 0.2.3 stores the tensors to regularize at model construction:
# add_regularization_weight() does `weight_list = list(weight_list)`. DeepFM passes a single
# Parameter (self.dnn_linear.weight), so list() iterates the Parameter itself and stores its rows,
# i.e. views of the weight made once, under grad mode, at __init__. Since PyTorch 1.7
# Tensor.__iter__ is unbind(), so those rows are outputs of UnbindBackward (a multi-view op).
# After the first optim.step() updates the weight in place, the next get_regularization_loss()
# uses the stale views and PyTorch raises "Output 0 of UnbindBackward is a view and its base ...
# has been modified inplace", so training stops at the second batch.
# Fix (deepctr-torch v0.2.4, maintainer zanshuxun's answer in the thread): in
# add_regularization_weight(), put a Parameter into a list (`weight_list = [weight_list]`)
# and only call list() on generators/filters/ParameterLists.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class FM(nn.Module):
    def forward(self, inputs):
        fm_input = inputs
        square_of_sum = torch.pow(torch.sum(fm_input, dim=1, keepdim=True), 2)
        sum_of_square = torch.sum(fm_input * fm_input, dim=1, keepdim=True)
        cross_term = square_of_sum - sum_of_square
        cross_term = 0.5 * torch.sum(cross_term, dim=2, keepdim=False)
        return cross_term


class DNN(nn.Module):
    def __init__(self, inputs_dim, hidden_units, init_std=0.0001):
        super(DNN, self).__init__()
        hidden_units = [inputs_dim] + list(hidden_units)
        self.linears = nn.ModuleList(
            [nn.Linear(hidden_units[i], hidden_units[i + 1]) for i in range(len(hidden_units) - 1)])
        for name, tensor in self.linears.named_parameters():
            if 'weight' in name:
                nn.init.normal_(tensor, mean=0, std=init_std)

    def forward(self, inputs):
        deep_input = inputs
        for fc in self.linears:
            deep_input = F.relu(fc(deep_input))
        return deep_input


def create_embedding_matrix(sparse_feats, vocab_size, embedding_dim, init_std=0.0001):
    embedding_dict = nn.ModuleDict({feat: nn.Embedding(vocab_size, embedding_dim) for feat in sparse_feats})
    for tensor in embedding_dict.values():
        nn.init.normal_(tensor.weight, mean=0, std=init_std)
    return embedding_dict


class Linear(nn.Module):
    def __init__(self, sparse_feats, n_dense, vocab_size, init_std=0.0001):
        super(Linear, self).__init__()
        self.sparse_feats = sparse_feats
        self.embedding_dict = create_embedding_matrix(sparse_feats, vocab_size, 1, init_std)
        self.weight = nn.Parameter(torch.Tensor(n_dense, 1))
        torch.nn.init.normal_(self.weight, mean=0, std=init_std)

    def forward(self, X_sparse, X_dense):
        sparse_embedding_list = [self.embedding_dict[feat](X_sparse[:, i:i + 1])
                                 for i, feat in enumerate(self.sparse_feats)]
        sparse_embedding_cat = torch.cat(sparse_embedding_list, dim=-1)
        linear_logit = torch.sum(sparse_embedding_cat, dim=-1, keepdim=False)
        linear_logit = linear_logit + X_dense.matmul(self.weight)
        return linear_logit


class BaseModel(nn.Module):
    def __init__(self, sparse_feats, n_dense, vocab_size, embedding_dim=4, l2_reg_linear=1e-5,
                 l2_reg_embedding=1e-5, init_std=0.0001, device='cpu'):
        super(BaseModel, self).__init__()
        self.device = device
        self.sparse_feats = sparse_feats
        self.embedding_dict = create_embedding_matrix(sparse_feats, vocab_size, embedding_dim, init_std)
        self.linear_model = Linear(sparse_feats, n_dense, vocab_size, init_std)
        self.regularization_weight = []
        self.add_regularization_weight(self.embedding_dict.parameters(), l2=l2_reg_embedding)
        self.add_regularization_weight(self.linear_model.parameters(), l2=l2_reg_linear)
        self.aux_loss = torch.zeros((1,), device=device)

    def add_regularization_weight(self, weight_list, l1=0.0, l2=0.0):
        # For a Parameter, put it in a list to keep Compatible with get_regularization_loss()
        if isinstance(weight_list, torch.nn.parameter.Parameter):
            weight_list = [weight_list]
        # For generators, filters and ParameterLists, convert them to a list of tensors to avoid bugs.
        # e.g., we can't pickle generator objects when we save the model.
        else:
            weight_list = list(weight_list)
        self.regularization_weight.append((weight_list, l1, l2))

    def get_regularization_loss(self, ):
        total_reg_loss = torch.zeros((1,), device=self.device)
        for weight_list, l1, l2 in self.regularization_weight:
            for w in weight_list:
                if isinstance(w, tuple):
                    parameter = w[1]  # named_parameters
                else:
                    parameter = w
                if l1 > 0:
                    total_reg_loss += torch.sum(l1 * torch.abs(parameter))
                if l2 > 0:
                    try:
                        total_reg_loss += torch.sum(l2 * torch.square(parameter))
                    except AttributeError:
                        total_reg_loss += torch.sum(l2 * parameter * parameter)
        return total_reg_loss

    def compile(self, optimizer, loss=None):
        self.optim = torch.optim.Adam(self.parameters(), lr=0.001) if optimizer == "adam" else optimizer
        self.loss_func = F.binary_cross_entropy

    def fit(self, x, y, batch_size=32, epochs=1):
        model = self.train()
        loss_func = self.loss_func
        optim = self.optim
        steps_per_epoch = (len(x[0]) - 1) // batch_size + 1
        for epoch in range(epochs):
            total_loss_epoch = 0
            for index in range(steps_per_epoch):
                x_sparse = x[0][index * batch_size:(index + 1) * batch_size]
                x_dense = x[1][index * batch_size:(index + 1) * batch_size]
                y_batch = y[index * batch_size:(index + 1) * batch_size]
                y_pred = model(x_sparse, x_dense).squeeze()
                optim.zero_grad()
                loss = loss_func(y_pred, y_batch.squeeze(), reduction='sum')
                reg_loss = self.get_regularization_loss()
                total_loss = loss + reg_loss + self.aux_loss
                total_loss_epoch += total_loss.item()
                total_loss.backward()
                optim.step()
            print("Epoch {0}/{1} - loss: {2: .4f}".format(epoch + 1, epochs, total_loss_epoch / len(x[0])))


class DeepFM(BaseModel):
    def __init__(self, sparse_feats, n_dense, vocab_size, embedding_dim=4, dnn_hidden_units=(32, 16),
                 l2_reg_linear=0.00001, l2_reg_embedding=0.00001, l2_reg_dnn=0.00001, init_std=0.0001,
                 device='cpu'):
        super(DeepFM, self).__init__(sparse_feats, n_dense, vocab_size, embedding_dim, l2_reg_linear,
                                     l2_reg_embedding, init_std, device)
        self.fm = FM()
        self.dnn = DNN(len(sparse_feats) * embedding_dim + n_dense, dnn_hidden_units, init_std=init_std)
        self.dnn_linear = nn.Linear(dnn_hidden_units[-1], 1, bias=False).to(device)
        self.add_regularization_weight(
            filter(lambda x: 'weight' in x[0] and 'bn' not in x[0], self.dnn.named_parameters()), l2=l2_reg_dnn)
        self.add_regularization_weight(self.dnn_linear.weight, l2=l2_reg_dnn)
        self.to(device)

    def forward(self, X_sparse, X_dense):
        sparse_embedding_list = [self.embedding_dict[feat](X_sparse[:, i:i + 1])
                                 for i, feat in enumerate(self.sparse_feats)]
        logit = self.linear_model(X_sparse, X_dense)
        fm_input = torch.cat(sparse_embedding_list, dim=1)
        logit += self.fm(fm_input)
        dnn_input = torch.cat([torch.flatten(torch.cat(sparse_embedding_list, dim=-1), start_dim=1), X_dense],
                              dim=-1)
        dnn_output = self.dnn(dnn_input)
        dnn_logit = self.dnn_linear(dnn_output)
        logit += dnn_logit
        y_pred = torch.sigmoid(logit)
        return y_pred


sparse_features = ['C' + str(i) for i in range(1, 5)]
n_dense = 3
vocab_size = 20
n_samples = 128
x_sparse = torch.randint(0, vocab_size, (n_samples, len(sparse_features)))
x_dense = torch.rand(n_samples, n_dense)
y = torch.randint(0, 2, (n_samples,)).float()

model = DeepFM(sparse_features, n_dense, vocab_size, device='cpu')
model.compile("adam", "binary_crossentropy")
model.fit([x_sparse, x_dense], y, batch_size=32, epochs=2)
print("dnn_linear.weight.grad norm:", model.dnn_linear.weight.grad.norm().item())
