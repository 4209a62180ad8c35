# Report: thuml/Anomaly-Transformer issue #1 "loss2.backward(): runtime error"
#   https://github.com/thuml/Anomaly-Transformer/issues/1
#   (same bug reported again in #5, #8, #10, #11 of the same repository)
# The minimax training step in solver.py backpropagates loss1 (retain_graph=True),
# then calls self.optimizer.step(), then backpropagates loss2 through the SAME graph.
# optimizer.step() rewrites the weights in place, and the graph of loss2 still holds
# those weights (saved by the Linear layers for backward), so loss2.backward() raises
# "one of the variables needed for gradient computation has been modified by an
# inplace operation" (PyTorch >= 1.5). The fix (reporter's, adopted in the repository's
# solver.py): drop the first optimizer.step(), step once after both backwards.
# Tiny model and random data stand in for the real AnomalyTransformer and SMD/MSL data.
import math
from math import sqrt

import torch
import torch.nn as nn

torch.manual_seed(0)


def my_kl_loss(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=1)


class AnomalyAttention(nn.Module):
    def __init__(self, win_size, mask_flag=True, scale=None, attention_dropout=0.0, output_attention=False):
        super(AnomalyAttention, self).__init__()
        self.scale = scale
        self.mask_flag = mask_flag
        self.output_attention = output_attention
        self.dropout = nn.Dropout(attention_dropout)
        window_size = win_size
        i = torch.arange(window_size).view(-1, 1)
        j = torch.arange(window_size).view(1, -1)
        self.distances = torch.abs(i - j)

    def forward(self, queries, keys, values, sigma, attn_mask):
        B, L, H, E = queries.shape
        _, S, _, D = values.shape
        scale = self.scale or 1. / sqrt(E)
        scores = torch.einsum("blhe,bshe->bhls", queries, keys)
        attn = scale * scores

        sigma = sigma.transpose(1, 2)  # B L H ->  B H L
        window_size = attn.shape[-1]
        sigma = torch.sigmoid(sigma * 5) + 1e-5
        sigma = torch.pow(3, sigma) - 1
        sigma = sigma.unsqueeze(-1).repeat(1, 1, 1, window_size)  # B H L L
        prior = self.distances.unsqueeze(0).unsqueeze(0).repeat(sigma.shape[0], sigma.shape[1], 1, 1)
        prior = 1.0 / (math.sqrt(2 * math.pi) * sigma) * torch.exp(-prior ** 2 / 2 / (sigma ** 2))

        series = self.dropout(torch.softmax(attn, dim=-1))
        V = torch.einsum("bhls,bshd->blhd", series, values)
        return (V.contiguous(), series, prior, sigma)


class AttentionLayer(nn.Module):
    def __init__(self, attention, d_model, n_heads):
        super(AttentionLayer, self).__init__()
        d_keys = d_model // n_heads
        d_values = d_model // n_heads
        self.inner_attention = attention
        self.query_projection = nn.Linear(d_model, d_keys * n_heads)
        self.key_projection = nn.Linear(d_model, d_keys * n_heads)
        self.value_projection = nn.Linear(d_model, d_values * n_heads)
        self.sigma_projection = nn.Linear(d_model, n_heads)
        self.out_projection = nn.Linear(d_values * n_heads, d_model)
        self.n_heads = n_heads

    def forward(self, queries, keys, values, attn_mask):
        B, L, _ = queries.shape
        _, S, _ = keys.shape
        H = self.n_heads
        x = queries
        queries = self.query_projection(queries).view(B, L, H, -1)
        keys = self.key_projection(keys).view(B, S, H, -1)
        values = self.value_projection(values).view(B, S, H, -1)
        sigma = self.sigma_projection(x).view(B, L, H)
        out, series, prior, sigma = self.inner_attention(queries, keys, values, sigma, attn_mask)
        out = out.view(B, L, -1)
        return self.out_projection(out), series, prior, sigma


class AnomalyTransformer(nn.Module):
    def __init__(self, win_size, enc_in, c_out, d_model=16, n_heads=2, e_layers=2):
        super(AnomalyTransformer, self).__init__()
        self.embedding = nn.Linear(enc_in, d_model)
        self.attn_layers = nn.ModuleList([
            AttentionLayer(AnomalyAttention(win_size, False, output_attention=True), d_model, n_heads)
            for _ in range(e_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.projection = nn.Linear(d_model, c_out)

    def forward(self, x):
        enc_out = self.embedding(x)
        series_list, prior_list, sigma_list = [], [], []
        for attn_layer in self.attn_layers:
            new_x, series, prior, sigma = attn_layer(enc_out, enc_out, enc_out, attn_mask=None)
            enc_out = enc_out + new_x
            series_list.append(series)
            prior_list.append(prior)
            sigma_list.append(sigma)
        enc_out = self.projection(self.norm(enc_out))
        return enc_out, series_list, prior_list, sigma_list


class Solver(object):
    def __init__(self, win_size=8, input_c=4, output_c=4, k=3, lr=1e-3, batch_size=4):
        self.win_size, self.input_c, self.output_c = win_size, input_c, output_c
        self.k, self.lr, self.batch_size = k, lr, batch_size
        self.train_loader = [(torch.randn(batch_size, win_size, input_c), None) for _ in range(3)]
        self.build_model()
        self.criterion = nn.MSELoss()

    def build_model(self):
        self.model = AnomalyTransformer(win_size=self.win_size, enc_in=self.input_c, c_out=self.output_c, e_layers=2)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)

    def train(self):
        self.model.train()
        for i, (input_data, labels) in enumerate(self.train_loader):
            self.optimizer.zero_grad()
            input = input_data.float()
            output, series, prior, _ = self.model(input)

            # calculate Association discrepancy
            series_loss = 0.0
            prior_loss = 0.0
            for u in range(len(prior)):
                norm_prior = prior[u] / torch.unsqueeze(torch.sum(prior[u], dim=-1), dim=-1).repeat(1, 1, 1, self.win_size)
                series_loss += (torch.mean(my_kl_loss(series[u], norm_prior.detach()))
                                + torch.mean(my_kl_loss(norm_prior.detach(), series[u])))
                prior_loss += (torch.mean(my_kl_loss(norm_prior, series[u].detach()))
                               + torch.mean(my_kl_loss(series[u].detach(), norm_prior)))
            series_loss = series_loss / len(prior)
            prior_loss = prior_loss / len(prior)

            rec_loss = self.criterion(output, input)
            loss1 = rec_loss - self.k * series_loss
            loss2 = rec_loss + self.k * prior_loss

            # Minimax strategy
            loss1.backward(retain_graph=True)
            self.optimizer.step()  # <- inplace_saved
            loss2.backward()
            self.optimizer.step()
            print("iter", i, "loss1", loss1.item(), "loss2", loss2.item())


solver = Solver()
solver.train()
