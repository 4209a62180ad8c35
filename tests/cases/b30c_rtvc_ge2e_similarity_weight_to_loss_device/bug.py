"""Real-Time-Voice-Cloning (CorentinJ/Real-Time-Voice-Cloning#237, "Fixed the None grad of the encoder on GPU",
https://github.com/CorentinJ/Real-Time-Voice-Cloning/issues/237): encoder/train.py carried
`# FIXME: currently, the gradient is None if loss_device is cuda`. The GE2E speaker encoder builds its similarity
scale as `nn.Parameter(torch.tensor([10.])).to(loss_device)`: when the move copies, the attribute holds the copy
(a non-leaf plain tensor, not a registered Parameter), the gradient goes to the unnamed leaf behind it, and
do_gradient_ops() (`self.similarity_weight.grad *= 0.01`) finds None. The reporter's fix: move the tensor first
and wrap the result, `nn.Parameter(torch.tensor([10.]).to(loss_device))`.
The reporter ran with loss_device = cuda, where `.to()` copies; this CPU script writes `.to(loss_device, copy=True)`
so the call returns the same kind of copy. The EER computation (sklearn) is left out."""
import numpy as np
import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_

torch.manual_seed(0)
mel_n_channels, model_hidden_size, model_embedding_size, model_num_layers = 8, 16, 8, 2
speakers_per_batch, utterances_per_speaker, n_frames = 4, 3, 12


class SpeakerEncoder(nn.Module):
    def __init__(self, device, loss_device):
        super().__init__()
        self.loss_device = loss_device
        self.lstm = nn.LSTM(input_size=mel_n_channels, hidden_size=model_hidden_size,
                            num_layers=model_num_layers, batch_first=True).to(device)
        self.linear = nn.Linear(in_features=model_hidden_size, out_features=model_embedding_size).to(device)
        self.relu = torch.nn.ReLU().to(device)
        # Cosine similarity scaling (with fixed initial parameter values)
        self.similarity_weight = nn.Parameter(torch.tensor([10.])).to(loss_device, copy=True)  # <- non_leaf_watched
        self.similarity_bias = nn.Parameter(torch.tensor([-5.])).to(loss_device, copy=True)
        self.loss_fn = nn.CrossEntropyLoss().to(loss_device)

    def do_gradient_ops(self):
        # Gradient scale
        self.similarity_weight.grad *= 0.01
        self.similarity_bias.grad *= 0.01
        # Gradient clipping
        clip_grad_norm_(self.parameters(), 3, norm_type=2)

    def forward(self, utterances, hidden_init=None):
        out, (hidden, cell) = self.lstm(utterances, hidden_init)
        embeds_raw = self.relu(self.linear(hidden[-1]))
        return embeds_raw / (torch.norm(embeds_raw, dim=1, keepdim=True) + 1e-5)

    def similarity_matrix(self, embeds):
        speakers_per_batch, utterances_per_speaker = embeds.shape[:2]
        centroids_incl = torch.mean(embeds, dim=1, keepdim=True)
        centroids_incl = centroids_incl.clone() / (torch.norm(centroids_incl, dim=2, keepdim=True) + 1e-5)
        centroids_excl = (torch.sum(embeds, dim=1, keepdim=True) - embeds)
        centroids_excl /= (utterances_per_speaker - 1)
        centroids_excl = centroids_excl.clone() / (torch.norm(centroids_excl, dim=2, keepdim=True) + 1e-5)
        sim_matrix = torch.zeros(speakers_per_batch, utterances_per_speaker,
                                 speakers_per_batch).to(self.loss_device)
        mask_matrix = 1 - np.eye(speakers_per_batch, dtype=int)
        for j in range(speakers_per_batch):
            mask = np.where(mask_matrix[j])[0]
            sim_matrix[mask, :, j] = (embeds[mask] * centroids_incl[j]).sum(dim=2)
            sim_matrix[j, :, j] = (embeds[j] * centroids_excl[j]).sum(dim=1)
        return sim_matrix * self.similarity_weight + self.similarity_bias

    def loss(self, embeds):
        speakers_per_batch, utterances_per_speaker = embeds.shape[:2]
        sim_matrix = self.similarity_matrix(embeds)
        sim_matrix = sim_matrix.reshape((speakers_per_batch * utterances_per_speaker, speakers_per_batch))
        ground_truth = np.repeat(np.arange(speakers_per_batch), utterances_per_speaker)
        target = torch.from_numpy(ground_truth).long().to(self.loss_device)
        return self.loss_fn(sim_matrix, target)


device = torch.device("cpu")
loss_device = torch.device("cpu")  # the FIXME's case: loss_device = torch.device("cuda")
model = SpeakerEncoder(device, loss_device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
w_before = model.similarity_weight.item()

for step in range(1, 4):
    inputs = torch.randn(speakers_per_batch * utterances_per_speaker, n_frames, mel_n_channels).to(device)
    embeds = model(inputs)
    embeds_loss = embeds.view((speakers_per_batch, utterances_per_speaker, -1)).to(loss_device)
    loss = model.loss(embeds_loss)
    model.zero_grad()
    loss.backward()
    print("step", step, "loss %.4f" % loss.item())
    model.do_gradient_ops()
    optimizer.step()

print("similarity_weight:", w_before, "->", model.similarity_weight.item())
