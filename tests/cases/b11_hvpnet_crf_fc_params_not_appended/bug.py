"""HVPNeT's multimodal NER trainer (zjunlp/HVPNeT#5): before_train builds the optimizer's parameter groups one by
one, `params = {'lr': ..., 'params': []}` and `parameters.append(params)` for the BERT and the visual encoder, but
the group collected for the crf and fc layers is never appended, so "the parameters for crf and fc are not added to
the optimizer" and never trained ("The parameters.append(params) should be added after line 499")."""
import torch
import torch.nn.functional as F
from torch import nn


class HMNeTNERModel(nn.Module):
    def __init__(self, vocab=100, hidden=16, num_labels=5):
        super().__init__()
        self.bert = nn.Embedding(vocab, hidden)
        self.vision = nn.Linear(32, hidden)
        self.fc = nn.Linear(hidden, num_labels)
        self.crf = nn.Parameter(torch.zeros(num_labels, num_labels))

    def forward(self, input_ids, images):
        h = self.bert(input_ids) + self.vision(images).unsqueeze(1)
        emissions = self.fc(h)
        return emissions + self.crf.logsumexp(0)


torch.manual_seed(0)
model = HMNeTNERModel()
parameters = []
params = {'lr': 3e-5, 'weight_decay': 1e-2, 'params': []}
for name, param in model.named_parameters():
    if 'bert' in name:
        params['params'].append(param)
parameters.append(params)
params = {'lr': 1e-3, 'weight_decay': 1e-2, 'params': []}
for name, param in model.named_parameters():
    if 'vision' in name:
        params['params'].append(param)
parameters.append(params)
params = {'lr': 5e-2, 'weight_decay': 1e-2, 'params': []}
for name, param in model.named_parameters():
    if 'crf' in name or name.startswith('fc'):
        params['params'].append(param)  # <- optimizer
optimizer = torch.optim.AdamW(parameters)
input_ids, images, labels = torch.randint(0, 100, (4, 7)), torch.randn(4, 32), torch.randint(0, 5, (4, 7))
fc_before = model.fc.weight.detach().clone()
for step in range(3):
    loss = F.cross_entropy(model(input_ids, images).reshape(-1, 5), labels.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"fc grad set: {model.fc.weight.grad is not None}; fc changed: {not torch.equal(model.fc.weight, fc_before)}")
