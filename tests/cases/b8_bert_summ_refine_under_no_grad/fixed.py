"""The fixed twin of bert_summ_refine_under_no_grad (https://github.com/nayeon7lee/bert-summarization/issues/7)."""
import torch
import torch.nn.functional as F
from torch import nn


class Summarizer(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.draft_decoder = nn.Linear(dim, vocab)
        self.refine_decoder = nn.Linear(2 * dim, vocab)

    def generate_refinement_output(self, enc, draft_ids):
        return self.refine_decoder(torch.cat([enc, self.embed(draft_ids)], -1))

    def train_one_batch(self, src, tgt):
        enc = self.embed(src)
        draft_logits = self.draft_decoder(enc)
        loss_draft = F.cross_entropy(draft_logits.flatten(0, 1), tgt.flatten())
        refine_logits = self.generate_refinement_output(enc, draft_logits.argmax(-1))
        loss_refine = F.cross_entropy(refine_logits.flatten(0, 1), tgt.flatten())
        return loss_draft + loss_refine, loss_refine


torch.manual_seed(0)
model = Summarizer()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
src, tgt = torch.randint(0, 20, (4, 6)), torch.randint(0, 20, (4, 6))
for step in range(20):
    loss, loss_refine = model.train_one_batch(src, tgt)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"refine loss {loss_refine.item():.4f}")
