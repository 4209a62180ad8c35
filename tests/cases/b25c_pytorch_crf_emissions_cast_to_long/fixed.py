"""kmkurn/pytorch-crf issue #102 "Transition parameters do not update",
https://github.com/kmkurn/pytorch-crf/issues/102: a BERT + CRF tagger; the user computes the per-token scores
with `model.forwardCRF(...)` and then calls the CRF on `scores.long()` (and decodes `scores.long()` too), and
reports that training does not change the CRF. Casting the emission scores to an integer dtype is not
differentiable: `.long()` returns a tensor with no autograd history, so the negative log-likelihood reaches only
the CRF's own transition tables, and the emission network (the BERT encoder and the token classifier on top of
it) gets grad None at every step and never learns; the emissions the CRF sees are the truncated integer parts of
the logits. (The CRF's transition tables do get a gradient here; the user read them as not updating, which with
a BERT-sized learning rate is hard to tell from no change.)
Fix: pass the float scores to the CRF, `-model.crf(scores, ...)` (and decode `scores`). BERT is a small
embedding + linear stand-in; torchcrf.CRF is a short stand-in with the same forward/decode semantics."""
import torch
import torch.nn as nn

torch.set_num_threads(1)


# --- torchcrf stand-in -----------------------------------------------------------------------
class CRF(nn.Module):
    def __init__(self, num_tags, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.start_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))

    def forward(self, emissions, tags, mask, reduction='mean'):
        if self.batch_first:
            emissions, tags, mask = emissions.transpose(0, 1), tags.transpose(0, 1), mask.transpose(0, 1)
        llh = self._compute_score(emissions, tags, mask) - self._compute_normalizer(emissions, mask)
        return llh.mean() if reduction == 'mean' else llh.sum()

    def _compute_score(self, emissions, tags, mask):
        seq_length, batch_size = tags.shape
        ar = torch.arange(batch_size)
        score = self.start_transitions[tags[0]] + emissions[0, ar, tags[0]]
        for i in range(1, seq_length):
            score = score + (self.transitions[tags[i - 1], tags[i]] + emissions[i, ar, tags[i]]) * mask[i]
        last_tags = tags[mask.long().sum(0) - 1, ar]
        return score + self.end_transitions[last_tags]

    def _compute_normalizer(self, emissions, mask):
        score = self.start_transitions + emissions[0]
        for i in range(1, emissions.size(0)):
            nxt = torch.logsumexp(score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1), dim=1)
            score = torch.where(mask[i].unsqueeze(1), nxt, score)
        return torch.logsumexp(score + self.end_transitions, dim=1)

    @torch.no_grad()
    def decode(self, emissions, mask):
        if self.batch_first:
            emissions, mask = emissions.transpose(0, 1), mask.transpose(0, 1)
        score, history = self.start_transitions + emissions[0], []
        for i in range(1, emissions.size(0)):
            nxt, idx = (score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)).max(dim=1)
            score = torch.where(mask[i].unsqueeze(1), nxt, score)
            history.append(idx)
        best = [(score + self.end_transitions).argmax(dim=1)]
        for idx in reversed(history):
            best.append(idx.gather(1, best[-1].unsqueeze(1)).squeeze(1))  # full-length backtrace (no padding here)
        return torch.stack(best[::-1], dim=1).tolist()


# --- the user's model: BERT (stand-in) + token classifier + CRF --------------------------------
class BertCRF(nn.Module):
    def __init__(self, vocab_size=50, hidden=16, num_tags=2):
        super().__init__()
        self.bert_embeddings = nn.Embedding(vocab_size, hidden)  # BERT stand-in
        self.bert_encoder = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, num_tags)
        self.crf = CRF(num_tags, batch_first=True)

    def forwardCRF(self, input_ids, attention_mask=None, token_type_ids=None):
        sequence_output = torch.tanh(self.bert_encoder(self.bert_embeddings(input_ids)))
        return self.classifier(sequence_output)  # (batch, max_seq_length, 2)


torch.manual_seed(0)
model = BertCRF()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
train_data = {i: {'input_ids': torch.randint(0, 50, (4, 7)), 'attention_mask': torch.ones(4, 7, dtype=torch.long),
                  'token_type_ids': torch.zeros(4, 7, dtype=torch.long)} for i in range(3)}
train_labels = {'Tags': {i: torch.randint(0, 2, (4, 7)) for i in range(3)}}
classifier_before = model.classifier.weight.detach().clone()
epochs = 2
for epoch_i in range(epochs):
    model.train()
    for i, v in train_data.items():
        model.zero_grad()
        optimizer.zero_grad()
        train_input_ids = train_data[i]['input_ids']
        train_input_mask = train_data[i]['attention_mask']
        train_input_type = train_data[i]['token_type_ids']
        token_train_label = train_labels['Tags'][i]
        scores = model.forwardCRF(train_input_ids.long(), attention_mask=train_input_mask.long(),
                                  token_type_ids=train_input_type.long())  # (batch, max_seq_length, 2)
        log_lik = -model.crf(scores, token_train_label.long(), train_input_mask.bool(), reduction='mean')
        prediction = model.crf.decode(scores, train_input_mask.bool())
        log_lik.backward()
        optimizer.step()
print("classifier.weight.grad is None:", model.classifier.weight.grad is None)
print("bert_embeddings.weight.grad is None:", model.bert_embeddings.weight.grad is None)
print("classifier changed:", not torch.equal(classifier_before, model.classifier.weight))
