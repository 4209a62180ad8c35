"""MoCo (facebookresearch/moco#21, https://github.com/facebookresearch/moco/issues/21): a user asks whether the
copy in `l_neg = torch.einsum('nc,ck->nk', [q, self.queue.clone().detach()])` (moco/builder.py) is needed at all;
the maintainer answers that self.queue is modified in place by self._dequeue_and_enqueue, so without the clone
"you should see an error raised by pytorch". This script is the variant without the clone: loss.backward() raises
"one of the variables needed for gradient computation has been modified by an inplace operation".
Why: einsum saves the queue to compute q's gradient; _dequeue_and_enqueue then writes the new keys into the same
storage (self.queue[:, ptr:ptr + batch_size] = keys.T) before backward; .detach() shares the version counter.
Fix (the maintainer's): give einsum a copy, self.queue.clone().detach()."""
import torch
import torch.nn.functional as F
from torch import nn


class MoCo(nn.Module):
    """moco/builder.py in short (one process, so concat_all_gather and the batch shuffle are left out)."""

    def __init__(self, base_encoder, dim=8, K=16, m=0.999, T=0.07):
        super(MoCo, self).__init__()
        self.K = K
        self.m = m
        self.T = T
        self.encoder_q = base_encoder(num_classes=dim)
        self.encoder_k = base_encoder(num_classes=dim)
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)  # initialize
            param_k.requires_grad = False  # not update by gradient
        self.register_buffer("queue", torch.randn(dim, K))
        self.queue = nn.functional.normalize(self.queue, dim=0)
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * self.m + param_q.data * (1. - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        assert self.K % batch_size == 0  # for simplicity
        # replace the keys at ptr (dequeue and enqueue)
        self.queue[:, ptr:ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K  # move pointer
        self.queue_ptr[0] = ptr

    def forward(self, im_q, im_k):
        q = self.encoder_q(im_q)  # queries: NxC
        q = nn.functional.normalize(q, dim=1)
        with torch.no_grad():  # no gradient to keys
            self._momentum_update_key_encoder()  # update the key encoder
            k = self.encoder_k(im_k)  # keys: NxC
            k = nn.functional.normalize(k, dim=1)
        l_pos = torch.einsum('nc,nc->n', [q, k]).unsqueeze(-1)
        l_neg = torch.einsum('nc,ck->nk', [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1)
        logits /= self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        self._dequeue_and_enqueue(k)
        return logits, labels


def resnet50(num_classes):
    """torchvision's resnet50 stand-in: a small MLP with an fc output of num_classes."""
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, num_classes))


torch.manual_seed(0)
model = MoCo(resnet50)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
for i in range(3):
    images = torch.randn(4, 3, 4, 4)
    im_q, im_k = images + 0.1 * torch.randn_like(images), images + 0.1 * torch.randn_like(images)
    output, target = model(im_q=im_q, im_k=im_k)
    loss = criterion(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {i} loss {loss.item():.4f}")
