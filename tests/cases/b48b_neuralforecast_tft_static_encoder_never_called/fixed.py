# Report: Nixtla/neuralforecast issue #1110 "AutoTFT can't be trained on multiple GPUs"
#   https://github.com/Nixtla/neuralforecast/issues/1110  (fixed by PR #1114,
#   "fix(tft): only define static encoder when applicable")
# TFT.__init__ always built self.static_encoder (a StaticCovariateEncoder), but forward()
# only calls it when static exogenous inputs exist (`if s_inp is not None`). Without
# static features its parameters never get a gradient; under DDP Lightning reported
# "Parameter: static_encoder.context_grns.3.glu.lin.bias did not get gradient in
# backwards pass" and training failed. Fix: create the static encoder only when
# self.stat_exog_size > 0.
# Reconstructed: TFT cut down to embedding + static encoder + LSTM encoders + output
# adapter (no attention decoder, no Lightning/DDP); the parameters left without a
# gradient are printed the way DDP's reducer listed them.
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.nn import LayerNorm

torch.manual_seed(0)


class MaybeLayerNorm(nn.Module):
    def __init__(self, output_size, hidden_size, eps):
        super().__init__()
        if output_size and output_size == 1:
            self.ln = nn.Identity()
        else:
            self.ln = LayerNorm(output_size if output_size else hidden_size, eps=eps)

    def forward(self, x):
        return self.ln(x)


class GLU(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.lin = nn.Linear(hidden_size, output_size * 2)

    def forward(self, x: Tensor) -> Tensor:
        return F.glu(self.lin(x))


class GRN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size=None, context_hidden_size=None, dropout=0):
        super().__init__()
        self.layer_norm = MaybeLayerNorm(output_size, hidden_size, eps=1e-3)
        self.lin_a = nn.Linear(input_size, hidden_size)
        if context_hidden_size is not None:
            self.lin_c = nn.Linear(context_hidden_size, hidden_size, bias=False)
        self.lin_i = nn.Linear(hidden_size, hidden_size)
        self.glu = GLU(hidden_size, output_size if output_size else hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(input_size, output_size) if output_size else None

    def forward(self, a: Tensor, c: Optional[Tensor] = None):
        x = self.lin_a(a)
        if c is not None:
            x = x + self.lin_c(c).unsqueeze(1)
        x = F.elu(x)
        x = self.lin_i(x)
        x = self.dropout(x)
        x = self.glu(x)
        y = a if not self.out_proj else self.out_proj(a)
        x = x + y
        x = self.layer_norm(x)
        return x


class VariableSelectionNetwork(nn.Module):
    def __init__(self, hidden_size, num_inputs, dropout):
        super().__init__()
        self.joint_grn = GRN(input_size=hidden_size * num_inputs, hidden_size=hidden_size,
                             output_size=num_inputs, context_hidden_size=hidden_size)
        self.var_grns = nn.ModuleList(
            [GRN(input_size=hidden_size, hidden_size=hidden_size, dropout=dropout) for _ in range(num_inputs)])

    def forward(self, x: Tensor, context: Optional[Tensor] = None):
        Xi = x.reshape(*x.shape[:-2], -1)
        grn_outputs = self.joint_grn(Xi, c=context)
        sparse_weights = F.softmax(grn_outputs, dim=-1)
        transformed_embed = torch.stack([m(x[..., i, :]) for i, m in enumerate(self.var_grns)], dim=-1)
        variable_ctx = torch.matmul(transformed_embed, sparse_weights.unsqueeze(-1)).squeeze(-1)
        return variable_ctx, sparse_weights


class StaticCovariateEncoder(nn.Module):
    def __init__(self, hidden_size, num_static_vars, dropout):
        super().__init__()
        self.vsn = VariableSelectionNetwork(hidden_size=hidden_size, num_inputs=num_static_vars, dropout=dropout)
        self.context_grns = nn.ModuleList(
            [GRN(input_size=hidden_size, hidden_size=hidden_size, dropout=dropout) for _ in range(4)])

    def forward(self, x: Tensor):
        variable_ctx, sparse_weights = self.vsn(x)
        cs, ce, ch, cc = tuple(m(variable_ctx) for m in self.context_grns)
        return cs, ce, ch.unsqueeze(0), cc.unsqueeze(0), sparse_weights


class TFT(nn.Module):
    def __init__(self, h, input_size, stat_exog_list=None, hidden_size=8, dropout=0.1):
        super().__init__()
        self.h, self.input_size = h, input_size
        self.stat_exog_size = len(stat_exog_list) if stat_exog_list else 0
        self.tgt_embedding_vectors = nn.Parameter(torch.randn(1, hidden_size) * 0.1)
        self.tgt_embedding_bias = nn.Parameter(torch.zeros(1, hidden_size))
        # ------------------------------- Encoders -----------------------------#
        if self.stat_exog_size > 0:
            self.static_encoder = StaticCovariateEncoder(
                hidden_size=hidden_size,
                num_static_vars=self.stat_exog_size,
                dropout=dropout,
            )
        self.history_encoder = nn.LSTM(input_size=hidden_size, hidden_size=hidden_size, batch_first=True)
        self.future_encoder = nn.LSTM(input_size=hidden_size, hidden_size=hidden_size, batch_first=True)
        self.output_adapter = nn.Linear(in_features=hidden_size, out_features=1)

    def forward(self, windows_batch):
        y_insample = windows_batch["insample_y"]  # <- [B,T,1]
        stat_exog = windows_batch["stat_exog"]
        t_observed_tgt = y_insample * self.tgt_embedding_vectors + self.tgt_embedding_bias  # [B,T,H]
        s_inp = None if stat_exog is None else stat_exog.unsqueeze(-1) * self.tgt_embedding_vectors

        # Static context
        if s_inp is not None:
            cs, ce, ch, cc, static_encoder_sparse_weights = self.static_encoder(s_inp)
        else:
            # If None add zeros
            batch_size, example_length, hidden_size = t_observed_tgt.shape
            ch = torch.zeros(size=(1, batch_size, hidden_size))
            cc = torch.zeros(size=(1, batch_size, hidden_size))

        history, state = self.history_encoder(t_observed_tgt, (ch, cc))
        future_inputs = t_observed_tgt[:, -1:, :].repeat(1, self.h, 1)
        future, _ = self.future_encoder(future_inputs, state)
        return self.output_adapter(future)


model = TFT(h=4, input_size=12, stat_exog_list=None)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
series = torch.sin(torch.arange(200, dtype=torch.float32) / 5)
for step in range(5):
    idx = torch.randint(0, 200 - 16, (8,))
    window = torch.stack([series[i:i + 16] for i in idx]).unsqueeze(-1)
    windows_batch = {"insample_y": window[:, :12], "stat_exog": None}
    y_hat = model(windows_batch)
    loss = (y_hat - window[:, 12:]).abs().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", loss.item())

for name, p in model.named_parameters():
    if p.grad is None:
        print(f"Parameter: {name} did not get gradient in backwards pass.")
