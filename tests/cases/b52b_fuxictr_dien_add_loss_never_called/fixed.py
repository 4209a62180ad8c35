# [Bug] add_loss() is not working after renaming to compute_loss() in BaseModel
# https://github.com/reczoo/FuxiCTR/issues/122
# What went wrong: FuxiCTR v2.0.2 renamed the loss hook of BaseModel to compute_loss(), and
# train_step() calls self.compute_loss(return_dict, y_true). Models such as DIEN, DMIN, DMR,
# FinalNet and DCNv3 still override the old add_loss(inputs), which nothing calls any more, so
# their extra loss terms are silently dropped. For DIEN the auxiliary loss is the only thing
# that uses self.aux_net, so aux_net never receives a gradient and never trains.
# Fix (FuxiCTR v2.3.4, "Fix add_loss() issue that does not work after renaming to
# compute_loss() (#122)"): BaseModel gets add_loss(return_dict, y_true) again and
# compute_loss() calls self.add_loss(return_dict, y_true) + self.regularization_loss();
# the models override add_loss(self, return_dict, y_true).
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class MLP_Block(nn.Module):
    def __init__(self, input_dim, hidden_units=[], hidden_activations="ReLU",
                 output_dim=None, output_activation=None):
        super(MLP_Block, self).__init__()
        dense_layers = []
        hidden_units = [input_dim] + hidden_units
        for idx in range(len(hidden_units) - 1):
            dense_layers.append(nn.Linear(hidden_units[idx], hidden_units[idx + 1]))
            dense_layers.append(getattr(nn, hidden_activations)())
        if output_dim is not None:
            dense_layers.append(nn.Linear(hidden_units[-1], output_dim))
        if output_activation is not None:
            dense_layers.append(getattr(nn, output_activation)())
        self.mlp = nn.Sequential(*dense_layers)

    def forward(self, inputs):
        return self.mlp(inputs)


class BaseModel(nn.Module):
    def __init__(self, feature_map, model_id="BaseModel", embedding_regularizer=None,
                 net_regularizer=None, **kwargs):
        super(BaseModel, self).__init__()
        self.feature_map = feature_map
        self.model_id = model_id
        self._embedding_regularizer = embedding_regularizer
        self._net_regularizer = net_regularizer
        self.output_activation = nn.Sigmoid()

    def compile(self, optimizer, loss, lr):
        self.optimizer = getattr(torch.optim, optimizer)(self.parameters(), lr=lr)
        self.loss_fn = getattr(F, loss)

    def regularization_loss(self):
        reg_term = 0
        if self._net_regularizer:
            for name, param in self.named_parameters():
                if param.requires_grad:
                    reg_term += (self._net_regularizer / 2) * torch.norm(param, 2) ** 2
        return reg_term

    def add_loss(self, return_dict, y_true):
        loss = self.loss_fn(return_dict["y_pred"], y_true, reduction='mean')
        return loss

    def compute_loss(self, return_dict, y_true):
        loss = self.add_loss(return_dict, y_true) + self.regularization_loss()
        return loss

    def get_labels(self, inputs):
        labels = self.feature_map["labels"]
        return inputs[labels[0]].float().view(-1, 1)

    def train_step(self, batch_data):
        self.optimizer.zero_grad()
        return_dict = self.forward(batch_data)
        y_true = self.get_labels(batch_data)
        loss = self.compute_loss(return_dict, y_true)
        loss.backward()
        nn.utils.clip_grad_norm_(self.parameters(), 10.)
        self.optimizer.step()
        return loss


class DIEN(BaseModel):
    def __init__(self, feature_map, model_id="DIEN", learning_rate=1e-3, embedding_dim=8,
                 dnn_hidden_units=[16, 8], aux_hidden_units=[16, 8], aux_loss_alpha=0.5,
                 **kwargs):
        super(DIEN, self).__init__(feature_map, model_id=model_id, **kwargs)
        self.aux_loss_alpha = aux_loss_alpha
        self.embedding_layer = nn.Embedding(feature_map["vocab_size"], embedding_dim, padding_idx=0)
        model_dim = embedding_dim
        self.extraction_modules = nn.ModuleList([nn.GRU(model_dim, model_dim, batch_first=True)])
        self.evolving_modules = nn.ModuleList([nn.GRU(model_dim, model_dim, batch_first=True)])
        self.dnn = MLP_Block(input_dim=model_dim * 2, output_dim=1, hidden_units=dnn_hidden_units,
                             output_activation="Sigmoid")
        if self.aux_loss_alpha > 0:
            self.model_dim = model_dim
            self.aux_net = MLP_Block(input_dim=model_dim * 2, output_dim=1,
                                     hidden_units=aux_hidden_units, output_activation="Sigmoid")
        self.compile(kwargs["optimizer"], kwargs["loss"], learning_rate)

    def forward(self, inputs):
        target_emb = self.embedding_layer(inputs["item_id"])
        sequence_emb = self.embedding_layer(inputs["click_history"])
        neg_emb = self.embedding_layer(inputs["neg_click_history"]) if self.aux_loss_alpha > 0 else None
        pad_mask = inputs["click_history"].long() > 0  # padding_idx = 0 required
        interest_emb, _ = self.extraction_modules[0](sequence_emb)
        _, h_out = self.evolving_modules[0](interest_emb)
        final_out = h_out.squeeze(0)
        y_pred = self.dnn(torch.cat([final_out, target_emb], dim=-1))
        return_dict = {"y_pred": y_pred, "interest_emb": interest_emb,
                       "neg_emb": neg_emb, "pad_mask": pad_mask, "pos_emb": sequence_emb}
        return return_dict

    def add_loss(self, return_dict, y_true):
        loss = self.loss_fn(return_dict["y_pred"], y_true, reduction='mean')
        if self.aux_loss_alpha > 0:
            # padding post required
            interest_emb, pos_emb, neg_emb, pad_mask = return_dict["interest_emb"], \
                                                       return_dict["pos_emb"], \
                                                       return_dict["neg_emb"], \
                                                       return_dict["pad_mask"]
            pos_prob = self.aux_net(torch.cat([interest_emb[:, :-1, :], pos_emb[:, 1:, :]],
                                    dim=-1).view(-1, self.model_dim * 2))
            neg_prob = self.aux_net(torch.cat([interest_emb[:, :-1, :], neg_emb[:, 1:, :]],
                                    dim=-1).view(-1, self.model_dim * 2))
            aux_prob = torch.cat([pos_prob, neg_prob], dim=0).view(-1, 1)
            aux_label = torch.cat([torch.ones_like(pos_prob), torch.zeros_like(neg_prob)], dim=0).view(-1, 1)
            aux_loss = F.binary_cross_entropy(aux_prob, aux_label, reduction='none')
            pad_mask = pad_mask[:, 1:].reshape(-1, 1).repeat(2, 1).float()
            aux_loss = torch.sum(aux_loss * pad_mask) / (torch.sum(pad_mask) + 1.e-9)
            loss += self.aux_loss_alpha * aux_loss
        return loss


def make_batch(batch_size=16, seq_len=6, vocab_size=50):
    lengths = torch.randint(2, seq_len + 1, (batch_size,))
    pos = torch.arange(seq_len).unsqueeze(0) < lengths.unsqueeze(1)
    click = torch.randint(1, vocab_size, (batch_size, seq_len)) * pos
    neg = torch.randint(1, vocab_size, (batch_size, seq_len)) * pos
    return {"item_id": torch.randint(1, vocab_size, (batch_size,)),
            "click_history": click, "neg_click_history": neg,
            "label": torch.randint(0, 2, (batch_size,))}


feature_map = {"vocab_size": 50, "labels": ["label"]}
model = DIEN(feature_map, optimizer="Adam", loss="binary_cross_entropy",
             aux_loss_alpha=0.5)
for step in range(3):
    loss = model.train_step(make_batch())
    print("step", step, "loss", round(loss.item(), 4))

print("dnn.mlp[0].weight.grad is None:", model.dnn.mlp[0].weight.grad is None)
aux_grad = model.aux_net.mlp[0].weight.grad
print("aux_net.mlp[0].weight.grad:", None if aux_grad is None else aux_grad.norm().item())
