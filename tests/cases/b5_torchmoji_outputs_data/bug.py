"""Fine-tuning torchMoji's last layer (huggingface/torchMoji#21): TorchMoji.forward ends with
`outputs = outputs.data` whenever it is given a tensor, so the loss has no grad_fn and backward raises
"element 0 of tensors does not require grad" (wrapping the loss in Variable(..., requires_grad=True)
only hides it: nothing learns)."""
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable


class Attention(nn.Module):
    def __init__(self, attention_size):
        super().__init__()
        self.attention_vector = nn.Parameter(torch.empty(attention_size).uniform_(-0.05, 0.05))

    def forward(self, inputs):
        logits = inputs.matmul(self.attention_vector)
        attentions = torch.softmax(logits, dim=1)
        return (inputs * attentions.unsqueeze(-1)).sum(dim=1)


class TorchMoji(nn.Module):
    def __init__(self, nb_classes, nb_tokens, embedding_dim=8, hidden_size=8):
        super(TorchMoji, self).__init__()
        self.embed = nn.Embedding(nb_tokens, embedding_dim)
        self.lstm_0 = nn.LSTM(embedding_dim, hidden_size, batch_first=True, bidirectional=True)
        self.attention_layer = Attention(attention_size=2 * hidden_size)
        self.output_layer = nn.Sequential(nn.Linear(2 * hidden_size, nb_classes), nn.Sigmoid())

    def forward(self, input_seqs):
        return_numpy = False
        return_tensor = False
        if isinstance(input_seqs, (torch.LongTensor,)):
            input_seqs = Variable(input_seqs)
            return_tensor = True
        elif not isinstance(input_seqs, Variable):
            input_seqs = Variable(torch.from_numpy(input_seqs.astype('int64')).long())
            return_numpy = True
        x = self.embed(input_seqs)
        lstm_0_output, _ = self.lstm_0(x)
        x = self.attention_layer(lstm_0_output)
        outputs = self.output_layer(x)
        if return_tensor:
            outputs = outputs.data  # <- data_attr
        if return_numpy:
            outputs = outputs.data.numpy()
        return outputs


torch.manual_seed(0)
model = TorchMoji(nb_classes=1, nb_tokens=30)
for param in model.parameters():
    param.requires_grad = False
for param in model.output_layer.parameters():
    param.requires_grad = True
optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
X, y = torch.randint(0, 30, (8, 6)), torch.randint(0, 2, (8, 1)).float()
print("predictions:", np.round(model(X.numpy())[:3, 0], 3))
for epoch in range(2):
    loss = nn.functional.binary_cross_entropy(model(X), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: val loss {loss.item():.5f}")
