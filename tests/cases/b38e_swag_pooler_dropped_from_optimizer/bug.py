# SWAG multiple-choice fine-tuning (pytorch-pretrained-BERT examples/run_swag.py):
# the optimizer setup drops every parameter whose name contains 'pooler'
# ("hack to remove pooler, which is not used"), but BertForMultipleChoice
# classifies from pooled_output, so the pooler does get gradients and is never stepped.
import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss

torch.manual_seed(0)


class BertPooler(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        return self.activation(self.dense(first_token_tensor))


class TinyBert(nn.Module):
    def __init__(self, vocab=50, hidden=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden)
        self.encoder = nn.Linear(hidden, hidden)
        self.pooler = BertPooler(hidden)

    def forward(self, input_ids):
        h = self.LayerNorm(self.embeddings(input_ids))
        h = torch.tanh(self.encoder(h))
        pooled_output = self.pooler(h)
        return h, pooled_output


class BertForMultipleChoice(nn.Module):
    def __init__(self, num_choices=4, hidden=16):
        super().__init__()
        self.num_choices = num_choices
        self.bert = TinyBert(hidden=hidden)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(hidden, 1)

    def forward(self, input_ids, labels=None):
        flat_input_ids = input_ids.view(-1, input_ids.size(-1))
        _, pooled_output = self.bert(flat_input_ids)
        pooled_output = self.dropout(pooled_output)
        logits = self.classifier(pooled_output)
        reshaped_logits = logits.view(-1, self.num_choices)
        if labels is not None:
            return CrossEntropyLoss()(reshaped_logits, labels)
        return reshaped_logits


model = BertForMultipleChoice(num_choices=4)

# Prepare optimizer
param_optimizer = list(model.named_parameters())

# hack to remove pooler, which is not used
# thus it produce None grad that break apex
param_optimizer = [n for n in param_optimizer if 'pooler' not in n[0]]  # <- optimizer

no_decay = ['bias', 'LayerNorm.bias', 'LayerNorm.weight']
optimizer_grouped_parameters = [
    {'params': [p for n, p in param_optimizer if not any(nd in n for nd in no_decay)], 'weight_decay': 0.01},
    {'params': [p for n, p in param_optimizer if any(nd in n for nd in no_decay)], 'weight_decay': 0.0}
]
optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=1e-2)

input_ids = torch.randint(0, 50, (8, 4, 6))   # batch x choices x seq_len
label_ids = torch.randint(0, 4, (8,))
pooler_before = model.bert.pooler.dense.weight.detach().clone()

model.train()
for step in range(5):
    loss = model(input_ids, label_ids)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()

changed = not torch.equal(pooler_before, model.bert.pooler.dense.weight.detach())
print("loss:", round(loss.item(), 4))
print("pooler.dense.weight changed after training:", changed)
