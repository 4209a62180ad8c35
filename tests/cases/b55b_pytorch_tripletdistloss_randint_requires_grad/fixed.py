# TripletMarginWithDistanceLoss example code doesn't work correctly
# https://github.com/pytorch/pytorch/issues/45210  (fixed by https://github.com/pytorch/pytorch/pull/46853)
# The docstring example of nn.TripletMarginWithDistanceLoss built the embedding
# lookup ids with torch.randint(..., requires_grad=True). Integer index tensors
# cannot require grad, so the example died with
#   RuntimeError: Only Tensors of floating point and complex dtype can require gradients
# before nn.Embedding's weight could ever receive a gradient.
# Fix (PR #46853): drop requires_grad=True from all the randint calls; the
# gradient flows to embedding.weight through the lookup, not through the ids.
import torch
import torch.nn as nn

torch.manual_seed(1)

# Initialize embeddings
embedding = nn.Embedding(1000, 128)
anchor_ids = torch.randint(0, 1000, (1,))
positive_ids = torch.randint(0, 1000, (1,))
negative_ids = torch.randint(0, 1000, (1,))
anchor = embedding(anchor_ids)
positive = embedding(positive_ids)
negative = embedding(negative_ids)

# Built-in Distance Function
triplet_loss = nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance())
output = triplet_loss(anchor, positive, negative)
output.backward()
print("embedding.weight.grad nonzero rows:",
      int((embedding.weight.grad.abs().sum(1) > 0).sum()))
