# zero for second residual grad  (lucidrains/vector-quantize-pytorch)
# Report: https://github.com/lucidrains/vector-quantize-pytorch/issues/33
# Fix:    commit ecf2f7c7c7701029488500b6b3d46b7c895063bf (maintainer: "i do believe you are correct!")
#         (also reported downstream as https://github.com/facebookresearch/encodec/issues/25)
#
# What went wrong: in ResidualVQ.forward every VectorQuantize layer returns the
# straight-through output  quantized = x + (q - x).detach(),  whose derivative
# w.r.t. its input residual is the identity. The next residual is computed as
# residual - quantized, so d(residual_next)/d(residual) = I - I = 0: every
# quantizer after the first sees an input that is (to autograd) a constant,
# and its commitment loss sends an all-zero gradient back to the encoder
# output / input. The reporter backpropagated each layer's loss separately and
# found input.grad == 0 for layers 2..4.
# Fix: `residual = residual - quantized.detach()`.
# Plain-torch reduction of vector_quantize_pytorch (v0.9/0.10 era, Nov 2022):
# einops rearrange replaced by permute/reshape; dims shrunk from 256 to 16.
from functools import partial

import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


# ------------------------------------------------- vector_quantize_pytorch.py
def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def noop(*args, **kwargs):
    pass


def log(t, eps=1e-20):
    return torch.log(t.clamp(min=eps))


def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -log(-log(noise))


def gumbel_sample(t, temperature=1., dim=-1):
    if temperature == 0:
        return t.argmax(dim=dim)
    return ((t / temperature) + gumbel_noise(t)).argmax(dim=dim)


def ema_inplace(moving_avg, new, decay):
    moving_avg.data.mul_(decay).add_(new, alpha=(1 - decay))


def laplace_smoothing(x, n_categories, eps=1e-5):
    return (x + eps) / (x.sum() + n_categories * eps)


def sample_vectors(samples, num):
    num_samples, device = samples.shape[0], samples.device
    if num_samples >= num:
        indices = torch.randperm(num_samples, device=device)[:num]
    else:
        indices = torch.randint(0, num_samples, (num,), device=device)
    return samples[indices]


def kmeans(samples, num_clusters, num_iters=10):
    dim, dtype = samples.shape[-1], samples.dtype
    means = sample_vectors(samples, num_clusters)
    for _ in range(num_iters):
        diffs = samples[:, None, :] - means[None, :, :]
        dists = -(diffs ** 2).sum(dim=-1)
        buckets = dists.max(dim=-1).indices
        bins = torch.bincount(buckets, minlength=num_clusters)
        zero_mask = bins == 0
        bins_min_clamped = bins.masked_fill(zero_mask, 1)
        new_means = buckets.new_zeros(num_clusters, dim, dtype=dtype)
        new_means.scatter_add_(0, buckets[:, None].expand(-1, dim), samples)
        new_means = new_means / bins_min_clamped[..., None]
        means = torch.where(zero_mask[..., None], means, new_means)
    return means, bins


class EuclideanCodebook(nn.Module):
    def __init__(self, dim, codebook_size, kmeans_init=False, kmeans_iters=10, decay=0.8,
                 eps=1e-5, threshold_ema_dead_code=2, use_ddp=False, sample_codebook_temp=0):
        super().__init__()
        self.decay = decay
        init_fn = torch.randn if not kmeans_init else torch.zeros
        embed = init_fn(codebook_size, dim)
        self.codebook_size = codebook_size
        self.kmeans_iters = kmeans_iters
        self.eps = eps
        self.threshold_ema_dead_code = threshold_ema_dead_code
        self.sample_codebook_temp = sample_codebook_temp
        self.all_reduce_fn = noop
        self.register_buffer('initted', torch.Tensor([not kmeans_init]))
        self.register_buffer('cluster_size', torch.zeros(codebook_size))
        self.register_buffer('embed_avg', embed.clone())
        self.register_buffer('embed', embed)

    def init_embed_(self, data):
        if self.initted:
            return
        embed, cluster_size = kmeans(data, self.codebook_size, self.kmeans_iters)
        self.embed.data.copy_(embed)
        self.embed_avg.data.copy_(embed.clone())
        self.cluster_size.data.copy_(cluster_size)
        self.initted.data.copy_(torch.Tensor([True]))

    def replace(self, samples, mask):
        modified_codebook = torch.where(mask[..., None],
                                        sample_vectors(samples, self.codebook_size), self.embed)
        self.embed.data.copy_(modified_codebook)

    def expire_codes_(self, batch_samples):
        if self.threshold_ema_dead_code == 0:
            return
        expired_codes = self.cluster_size < self.threshold_ema_dead_code
        if not torch.any(expired_codes):
            return
        batch_samples = batch_samples.reshape(-1, batch_samples.shape[-1])
        self.replace(batch_samples, mask=expired_codes)

    def forward(self, x):
        shape, dtype = x.shape, x.dtype
        flatten = x.reshape(-1, shape[-1])
        self.init_embed_(flatten)
        embed = self.embed.t()
        dist = -(flatten.pow(2).sum(1, keepdim=True)
                 - 2 * flatten @ embed
                 + embed.pow(2).sum(0, keepdim=True))
        embed_ind = gumbel_sample(dist, dim=-1, temperature=self.sample_codebook_temp)
        embed_onehot = F.one_hot(embed_ind, self.codebook_size).type(dtype)
        embed_ind = embed_ind.view(*shape[:-1])
        quantize = F.embedding(embed_ind, self.embed)

        if self.training:
            cluster_size = embed_onehot.sum(0)
            self.all_reduce_fn(cluster_size)
            ema_inplace(self.cluster_size, cluster_size, self.decay)
            embed_sum = flatten.t() @ embed_onehot
            self.all_reduce_fn(embed_sum)
            ema_inplace(self.embed_avg, embed_sum.t(), self.decay)
            cluster_size = laplace_smoothing(self.cluster_size, self.codebook_size, self.eps) * self.cluster_size.sum()
            embed_normalized = self.embed_avg / cluster_size.unsqueeze(1)
            self.embed.data.copy_(embed_normalized)
            self.expire_codes_(x)

        return quantize, embed_ind


class VectorQuantize(nn.Module):
    def __init__(self, dim, codebook_size, codebook_dim=None, decay=0.8, eps=1e-5,
                 kmeans_init=False, kmeans_iters=10, threshold_ema_dead_code=0,
                 channel_last=True, commitment_weight=1., sample_codebook_temp=0.):
        super().__init__()
        codebook_dim = default(codebook_dim, dim)
        requires_projection = codebook_dim != dim
        self.project_in = nn.Linear(dim, codebook_dim) if requires_projection else nn.Identity()
        self.project_out = nn.Linear(codebook_dim, dim) if requires_projection else nn.Identity()
        self.eps = eps
        self.commitment_weight = commitment_weight
        self._codebook = EuclideanCodebook(dim=codebook_dim, codebook_size=codebook_size,
                                           kmeans_init=kmeans_init, kmeans_iters=kmeans_iters,
                                           decay=decay, eps=eps,
                                           threshold_ema_dead_code=threshold_ema_dead_code,
                                           sample_codebook_temp=sample_codebook_temp)
        self.codebook_size = codebook_size
        self.channel_last = channel_last

    def forward(self, x):
        device = x.device
        need_transpose = not self.channel_last
        if need_transpose:
            x = x.permute(0, 2, 1)  # 'b d n -> b n d'

        x = self.project_in(x)
        quantize, embed_ind = self._codebook(x)

        if self.training:
            quantize = x + (quantize - x).detach()

        loss = torch.tensor([0.], device=device, requires_grad=self.training)

        if self.training:
            if self.commitment_weight > 0:
                commit_loss = F.mse_loss(quantize.detach(), x)
                loss = loss + commit_loss * self.commitment_weight

        quantize = self.project_out(quantize)
        if need_transpose:
            quantize = quantize.permute(0, 2, 1)  # 'b n d -> b d n'

        return quantize, embed_ind, loss


# ------------------------------------------------------------ residual_vq.py
class ResidualVQ(nn.Module):
    """ Follows Algorithm 1. in https://arxiv.org/pdf/2107.03312.pdf """
    def __init__(self, *, num_quantizers, **kwargs):
        super().__init__()
        self.num_quantizers = num_quantizers
        self.layers = nn.ModuleList([VectorQuantize(**kwargs) for _ in range(num_quantizers)])

    def forward(self, x):
        quantized_out = 0.
        residual = x

        all_losses = []
        all_indices = []

        for layer in self.layers:
            quantized, indices, loss = layer(residual)
            residual = residual - quantized.detach()
            quantized_out = quantized_out + quantized

            all_indices.append(indices)
            all_losses.append(loss)

        all_losses, all_indices = map(partial(torch.stack, dim=-1), (all_losses, all_indices))
        return quantized_out, all_indices, all_losses


# -------------------------------------------------- reporter's verification
if __name__ == "__main__":
    quantizer = ResidualVQ(
        num_quantizers=4, dim=16, codebook_size=16,
        kmeans_init=True, kmeans_iters=10, threshold_ema_dead_code=2, channel_last=False,
    )

    for i in range(4):
        input = torch.rand((2, 16, 30), requires_grad=True)
        quantized, indices, losses = quantizer(input)
        print(quantized.shape, indices.shape, losses.shape)

        losses[0, i].backward()
        print(f"commit loss of quantizer {i}: |input.grad| = {input.grad.abs().sum().item():.6f}")
