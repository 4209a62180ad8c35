"""jadore801120/attention-is-all-you-need-pytorch,
https://github.com/jadore801120/attention-is-all-you-need-pytorch/issues/33

What the user saw: the encoder's position table is an nn.Embedding (initialised with the sinusoid table
through ``.weight.data``) and a commenter took it for a trainable positional encoding; it never changes.
Why (answer in the thread): the training script builds the optimizer from
``transformer.get_trainable_parameters()``, which filters the position_enc parameters out, so they get a
gradient on every step but no optimizer ever steps them.
Fix for a learned positional encoding: give the optimizer all of ``transformer.parameters()``.
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


def position_encoding_init(n_position, d_pos_vec):
    position_enc = np.array([[pos / np.power(10000, 2 * i / d_pos_vec) for i in range(d_pos_vec)]
                             if pos != 0 else np.zeros(d_pos_vec) for pos in range(n_position)])
    position_enc[1:, 0::2] = np.sin(position_enc[1:, 0::2])
    position_enc[1:, 1::2] = np.cos(position_enc[1:, 1::2])
    return torch.from_numpy(position_enc).type(torch.FloatTensor)


class Transformer(nn.Module):
    def __init__(self, n_vocab, n_max_seq, d_model=16):
        super().__init__()
        self.position_enc = nn.Embedding(n_max_seq + 1, d_model, padding_idx=0)
        self.position_enc.weight.data = position_encoding_init(n_max_seq + 1, d_model)
        self.src_word_emb = nn.Embedding(n_vocab, d_model, padding_idx=0)
        self.layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0,
                                                batch_first=True)
        self.tgt_word_proj = nn.Linear(d_model, n_vocab, bias=False)

    def get_trainable_parameters(self):
        ''' Avoid updating the position encoding '''
        freezed_param_ids = set(map(id, self.position_enc.parameters()))
        return (p for p in self.parameters() if id(p) not in freezed_param_ids)

    def forward(self, src_seq, src_pos):
        enc_input = self.src_word_emb(src_seq) + self.position_enc(src_pos)
        return self.tgt_word_proj(self.layer(enc_input))


transformer = Transformer(n_vocab=10, n_max_seq=6)
optimizer = torch.optim.Adam(transformer.parameters(), lr=1e-2)
src_seq = torch.randint(1, 10, (4, 6))
src_pos = torch.arange(1, 7).expand(4, 6)
before = transformer.position_enc.weight.detach().clone()
for step in range(5):
    optimizer.zero_grad()
    logits = transformer(src_seq, src_pos)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 10), src_seq.reshape(-1))
    loss.backward()
    optimizer.step()
    print(step, round(loss.item(), 4))
print("position_enc grad is None:", transformer.position_enc.weight.grad is None)
print("position_enc changed:", not torch.equal(before, transformer.position_enc.weight))
