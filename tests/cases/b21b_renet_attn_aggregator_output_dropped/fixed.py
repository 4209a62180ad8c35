"""RE-Net (INK-USC/RE-Net#6, https://github.com/INK-USC/RE-Net/issues/6): "The weights in attention layer never
change throughout training!!!" -- AttnAggregator.attn_s (and v_s) of the temporal knowledge-graph model never
receive gradients.
Why: AttnAggregator.forward computes the attention weights and the weighted neighbour mean (embeds_split2), but then
builds s_embed_seq_tensor with torch.zeros(...) and never writes the aggregated embeddings into it (the fill loop
that MeanAggregator has is missing), so the GRU only ever sees zeros and attn_s / v_s are cut off from the loss.
Fix: fill s_embed_seq_tensor from embeds_split2 (plus the subject and relation embeddings) right after creating it,
as MeanAggregator does."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttnAggregator(nn.Module):
    def __init__(self, h_dim, dropout, seq_len=10):
        super(AttnAggregator, self).__init__()
        self.h_dim = h_dim
        self.dropout = nn.Dropout(dropout)
        self.seq_len = seq_len
        self.attn_s = nn.Linear(3 * h_dim, h_dim)
        self.v_s = nn.Parameter(torch.Tensor(h_dim, 1))
        nn.init.xavier_uniform_(self.v_s, gain=nn.init.calculate_gain('relu'))

    def forward(self, s_hist, s, r, ent_embeds, rel_embeds):
        s_len_non_zero, s_tem, r_tem, embeds_stack, len_s = get_sorted_s_r_embed(s_hist, s, r, ent_embeds)

        ss_all = None
        rr_all = None
        curr = 0
        for i, s_l in enumerate(s_len_non_zero):
            ss = ent_embeds[s_tem[i]]
            rr = rel_embeds[r_tem[i]]
            total_num = sum(len_s[curr:curr+s_l])
            curr += s_l
            ss = ss.repeat(total_num, 1)
            rr = rr.repeat(total_num, 1)
            if i == 0:
                ss_all = ss
                rr_all = rr
            else:
                ss_all = torch.cat([ss_all, ss], dim=0)
                rr_all = torch.cat([rr_all, rr], dim=0)

        embeds_ss_rr = torch.cat([embeds_stack, ss_all, rr_all], dim=1)
        weights = torch.tanh(self.attn_s(embeds_ss_rr)) @ self.v_s
        weights_split = torch.split(weights, len_s)
        weights = torch.cat(list(map(lambda x: F.softmax(x, dim=0), weights_split)))

        curr = 0
        rows = []
        cols = []
        for i, leng in enumerate(len_s):
            rows.extend([i] * leng)
            cols.extend(list(range(curr, curr+leng)))
            curr += leng
        rows = torch.LongTensor(rows)
        cols = torch.LongTensor(cols)
        idxes = torch.stack([rows, cols], dim=0)

        mask_tensor = torch.sparse_coo_tensor(idxes, weights.view(-1), (len(len_s), len(embeds_stack)),
                                              check_invariants=False)
        embeds_mean = torch.sparse.mm(mask_tensor, embeds_stack)

        embeds_split2 = torch.split(embeds_mean, s_len_non_zero.tolist())
        s_embed_seq_tensor = torch.zeros(len(s_len_non_zero), self.seq_len, 3 * self.h_dim)
        for i, embeds in enumerate(embeds_split2):
            s_embed_seq_tensor[i, torch.arange(len(embeds)), :] = torch.cat(
                (embeds, ent_embeds[s_tem[i]].repeat(len(embeds), 1),
                 rel_embeds[r_tem[i]].repeat(len(embeds), 1)), dim=1)

        s_embed_seq_tensor = self.dropout(s_embed_seq_tensor)

        s_packed_input = torch.nn.utils.rnn.pack_padded_sequence(s_embed_seq_tensor,
                                                                 s_len_non_zero,
                                                                 batch_first=True)

        return s_packed_input


def get_sorted_s_r_embed(s_hist, s, r, ent_embeds):
    """Get sorted s and r to make batch for RNN (sorted by length)."""
    s_hist_len = torch.LongTensor(list(map(len, s_hist)))
    s_len, s_idx = s_hist_len.sort(0, descending=True)
    num_non_zero = len(torch.nonzero(s_len))
    s_len_non_zero = s_len[:num_non_zero]

    s_hist_sorted = []
    for idx in s_idx:
        s_hist_sorted.append(s_hist[idx.item()])
    flat_s = []
    len_s = []
    s_hist_sorted = s_hist_sorted[:num_non_zero]
    for hist in s_hist_sorted:
        for neighs in hist:
            len_s.append(len(neighs))
            for neigh in neighs:
                flat_s.append(neigh)
    s_tem = s[s_idx]
    r_tem = r[s_idx]
    embeds = ent_embeds[torch.LongTensor(flat_s)]
    return s_len_non_zero, s_tem, r_tem, embeds, len_s


class RENet(nn.Module):
    """RE-Net's model.py, subject direction only."""
    def __init__(self, in_dim, h_dim, num_rels, dropout=0, seq_len=10):
        super(RENet, self).__init__()
        self.h_dim = h_dim
        self.num_rels = num_rels
        self.rel_embeds = nn.Parameter(torch.Tensor(num_rels, h_dim))
        nn.init.xavier_uniform_(self.rel_embeds, gain=nn.init.calculate_gain('relu'))
        self.ent_embeds = nn.Parameter(torch.Tensor(in_dim, h_dim))
        nn.init.xavier_uniform_(self.ent_embeds, gain=nn.init.calculate_gain('relu'))
        self.dropout = nn.Dropout(dropout)
        self.sub_encoder = nn.GRU(3 * h_dim, h_dim, batch_first=True)
        self.aggregator_s = AttnAggregator(h_dim, dropout, seq_len)
        self.linear_sub = nn.Linear(3 * h_dim, in_dim)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, triplets, s_hist):
        s = triplets[:, 0]
        r = triplets[:, 1]
        o = triplets[:, 2]
        s_hist_len = torch.LongTensor(list(map(len, s_hist)))
        s_len, s_idx = s_hist_len.sort(0, descending=True)
        s_packed_input = self.aggregator_s(s_hist, s, r, self.ent_embeds, self.rel_embeds[:self.num_rels])
        tt, s_h = self.sub_encoder(s_packed_input)
        s_h = s_h.squeeze(0)
        s_h = torch.cat((s_h, torch.zeros(len(s) - len(s_h), self.h_dim)), dim=0)
        ob_pred = self.linear_sub(
            self.dropout(torch.cat((self.ent_embeds[s[s_idx]], s_h, self.rel_embeds[r[s_idx]]), dim=1)))
        loss_sub = self.criterion(ob_pred, o[s_idx])
        return loss_sub


torch.manual_seed(0)
num_ents, num_rels, h_dim, seq_len = 12, 3, 8, 4
model = RENet(num_ents, h_dim, num_rels, dropout=0, seq_len=seq_len)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
triplets = torch.tensor([[0, 1, 2], [3, 0, 4], [5, 2, 6], [7, 1, 8]])
# s_hist[i]: up to seq_len past time steps, each a list of neighbour entity ids of subject i under relation r
s_hist = [[[1, 2], [3]], [[4, 5, 6]], [[7], [8, 9], [10]], []]
before = model.aggregator_s.attn_s.weight.detach().clone()
for epoch in range(3):
    loss = model(triplets, s_hist)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
g = model.aggregator_s.attn_s.weight.grad
print("attn_s.weight.grad:", None if g is None else f"norm {g.norm():.2e}")
print("attn_s weights changed:", not torch.equal(before, model.aggregator_s.attn_s.weight))
