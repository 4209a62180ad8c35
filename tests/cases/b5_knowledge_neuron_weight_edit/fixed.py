"""The fixed twin: the knowledge-neuron edit writes the FFN weight under torch.no_grad()."""
import torch
import torch.nn as nn


class BertOutput(nn.Module):
    def __init__(self, intermediate, hidden):
        super().__init__()
        self.dense = nn.Linear(intermediate, hidden)


class BertLayer(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = BertOutput(intermediate, hidden)

    def forward(self, h):
        return h + self.output.dense(torch.relu(self.intermediate(h)))


class TinyBertForMaskedLM(nn.Module):
    def __init__(self, vocab=20, hidden=8, intermediate=16, num_layers=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.layer = nn.ModuleList([BertLayer(hidden, intermediate) for _ in range(num_layers)])

    def forward(self, input_ids):
        h = self.word_embeddings(input_ids)
        for layer in self.layer:
            h = layer(h)
        return h @ self.word_embeddings.weight.T


torch.manual_seed(0)
model = TinyBertForMaskedLM()
prompt = torch.tensor([[3, 7, 5, 0]])
ori_pred = model(prompt)[0, -1].argmax().item()
tgt_id = (ori_pred + 1) % 20
ori_pred_emb = model.word_embeddings.weight[ori_pred]
tgt_emb = model.word_embeddings.weight[tgt_id]
kn_bag = [(1, 4), (1, 9)]
lambda_list_1, lambda_list_2 = [1.0, 1.0], [2.0, 2.0]
for i, (layer, pos) in enumerate(kn_bag):
    with torch.no_grad():
        model.layer[layer].output.dense.weight[:, pos] -= ori_pred_emb * lambda_list_1[i]
        model.layer[layer].output.dense.weight[:, pos] += tgt_emb * lambda_list_2[i]
logits = model(prompt)[0, -1].softmax(-1)
print(f"original answer {ori_pred}: p={logits[ori_pred]:.3f}; target answer {tgt_id}: p={logits[tgt_id]:.3f}")
