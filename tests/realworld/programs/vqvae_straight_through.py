"""VQ-VAE with a learned (non-EMA) codebook, reduced from zalandoresearch/pytorch-vq-vae
(https://github.com/zalandoresearch/pytorch-vq-vae/blob/master/vq-vae.ipynb, class VectorQuantizer),
itself a port of DeepMind Sonnet's vqvae.py.

Patterns kept (each looks like a cut but is right):
- ``encoding_indices = torch.argmin(distances, dim=1)``: the code choice is discrete on purpose; the
  codebook still learns because ``quantized = encodings @ self._embedding.weight`` is differentiable
  with respect to the embedding weight.
- ``encodings = torch.zeros(...); encodings.scatter_(1, encoding_indices, 1)``: an in-place write into a
  fresh one-hot tensor that needs no gradient.
- ``q_latent_loss = F.mse_loss(quantized, inputs.detach())`` and
  ``e_latent_loss = F.mse_loss(quantized.detach(), inputs)``: the two stop-gradients split the VQ loss so
  the codebook term moves only the codebook and the commitment term moves only the encoder.
- ``quantized = inputs + (quantized - inputs).detach()``: the straight-through estimator copies the
  decoder's gradient onto the encoder output.
- ``self._embedding.weight.data.uniform_(...)``: a one-time initialisation before any graph exists.
- perplexity is computed from the one-hot codes for logging only and never backpropagated.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class VectorQuantizer(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.uniform_(-1 / self._num_embeddings, 1 / self._num_embeddings)
        self._commitment_cost = commitment_cost

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True)
                     + torch.sum(self._embedding.weight ** 2, dim=1)
                     - 2 * torch.matmul(flat_input, self._embedding.weight.t()))
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings, device=inputs.device)
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        q_latent_loss = F.mse_loss(quantized, inputs.detach())
        loss = q_latent_loss + self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class Residual(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_hiddens):
        super().__init__()
        self._block = nn.Sequential(
            nn.ReLU(True), nn.Conv2d(in_channels, num_residual_hiddens, 3, 1, 1, bias=False),
            nn.ReLU(True), nn.Conv2d(num_residual_hiddens, num_hiddens, 1, 1, bias=False))

    def forward(self, x):
        return x + self._block(x)


class Model(nn.Module):
    def __init__(self, num_hiddens=16, num_residual_hiddens=8, num_embeddings=32, embedding_dim=8,
                 commitment_cost=0.25):
        super().__init__()
        self._encoder = nn.Sequential(
            nn.Conv2d(3, num_hiddens // 2, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(num_hiddens // 2, num_hiddens, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(num_hiddens, num_hiddens, 3, 1, 1),
            Residual(num_hiddens, num_hiddens, num_residual_hiddens), nn.ReLU())
        self._pre_vq_conv = nn.Conv2d(num_hiddens, embedding_dim, 1, 1)
        self._vq_vae = VectorQuantizer(num_embeddings, embedding_dim, commitment_cost)
        self._decoder = nn.Sequential(
            nn.Conv2d(embedding_dim, num_hiddens, 3, 1, 1),
            Residual(num_hiddens, num_hiddens, num_residual_hiddens), nn.ReLU(),
            nn.ConvTranspose2d(num_hiddens, num_hiddens // 2, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(num_hiddens // 2, 3, 4, 2, 1))

    def forward(self, x):
        z = self._pre_vq_conv(self._encoder(x))
        loss, quantized, perplexity, _ = self._vq_vae(z)
        x_recon = self._decoder(quantized)
        return loss, x_recon, perplexity


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Model()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, amsgrad=False)
    data = torch.rand(16, 3, 16, 16) - 0.5
    data_variance = data.var().item()
    model.train()
    for i in range(8):
        batch = data[torch.randperm(16)[:8]]
        optimizer.zero_grad()
        vq_loss, data_recon, perplexity = model(batch)
        recon_error = F.mse_loss(data_recon, batch) / data_variance
        loss = recon_error + vq_loss
        loss.backward()
        optimizer.step()
        print(f"step {i} recon {recon_error.item():.6f} vq {vq_loss.item():.6f} "
              f"perplexity {perplexity.item():.3f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
