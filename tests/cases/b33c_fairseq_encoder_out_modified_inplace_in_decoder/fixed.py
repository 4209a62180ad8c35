"""facebookresearch/fairseq issue #251, "Problem About Changing the encoder_out",
https://github.com/facebookresearch/fairseq/issues/251: in a fairseq encoder-decoder the user changes the encoder's
output inside the decoder, `encoder_out[0][:,:,j] = do_something(encoder_out[0][:,:,j])`, and training fails with
"RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation".
encoder_out[0] is a tensor the encoder's last op saved for its backward (here the tanh of the output projection,
which saves its result); writing a slice of it in place bumps its version, so loss.backward() refuses.
The answer (huihuifan): "You can't modify it in place like this ... You should copy the variable and modify it";
encoder_out does take part in the gradient. The author confirmed. The script is a small GRU encoder / attention
GRU decoder trained with teacher forcing on random token pairs; do_something halves channel j. It raises."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
SRC_VOCAB, TGT_VOCAB, EMB, HID = 20, 20, 16, 32


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(SRC_VOCAB, EMB)
        self.rnn = nn.GRU(EMB, HID, batch_first=True)
        self.fc2 = nn.Linear(HID, HID)

    def forward(self, src_tokens):
        input_embedding = self.embed_tokens(src_tokens)
        x, _ = self.rnn(input_embedding)
        x = torch.tanh(self.fc2(x))  # B x T x C
        y = x + input_embedding.mean(-1, keepdim=True)
        return {"encoder_out": (x, y)}


def do_something(channel):
    return channel * 0.5


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(TGT_VOCAB, EMB)
        self.rnn = nn.GRUCell(EMB + HID, HID)
        self.fc_out = nn.Linear(2 * HID, TGT_VOCAB)

    def forward(self, prev_output_tokens, encoder_out_dict, j=3):
        encoder_out = encoder_out_dict["encoder_out"]
        x = encoder_out[0].clone()
        x[:, :, j] = do_something(x[:, :, j])
        encoder_out = (x, encoder_out[1])
        keys, values = encoder_out
        bsz, tgt_len = prev_output_tokens.shape
        h = keys.mean(1)
        ctx = torch.zeros(bsz, HID)
        outs = []
        for t in range(tgt_len):  # teacher forcing: the gold previous token is fed at every step
            emb = self.embed_tokens(prev_output_tokens[:, t])
            h = self.rnn(torch.cat([emb, ctx], -1), h)
            attn = F.softmax(torch.bmm(keys, h.unsqueeze(2)).squeeze(2), dim=1)
            ctx = torch.bmm(attn.unsqueeze(1), values).squeeze(1)
            outs.append(self.fc_out(torch.cat([h, ctx], -1)))
        return torch.stack(outs, 1)


encoder, decoder = Encoder(), Decoder()
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-3)
batches = [(torch.randint(1, SRC_VOCAB, (8, 7)), torch.randint(1, TGT_VOCAB, (8, 6))) for _ in range(3)]
w_before = encoder.fc2.weight.detach().clone()

for epoch in range(2):
    for src_tokens, target in batches:
        prev_output_tokens = torch.cat([torch.zeros(8, 1, dtype=torch.long), target[:, :-1]], 1)
        optimizer.zero_grad()
        logits = decoder(prev_output_tokens, encoder(src_tokens))
        loss = F.cross_entropy(logits.reshape(-1, TGT_VOCAB), target.reshape(-1))
        loss.backward()
        optimizer.step()

print("loss:", loss.item())
print("encoder fc2 changed:", not torch.equal(w_before, encoder.fc2.weight))
