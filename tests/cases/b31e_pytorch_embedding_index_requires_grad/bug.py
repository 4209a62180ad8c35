"""PyTorch issue #7021 "Backproping through Embedding in 0.4.0 fails",
https://github.com/pytorch/pytorch/issues/7021: the reporter backpropagated through an nn.Embedding whose index
tensor they had marked with requires_grad_():
    embedding(torch.LongTensor([0]).requires_grad_())[0, 0].backward()
In 0.4.0 this failed in backward ("No grad accumulator for a saved leaf!"); the maintainers answered that one cannot
backprop to the indices and made requires_grad_() on a non-floating-point tensor an error, which is what current
PyTorch raises at that line: "only Tensors of floating point dtype can require gradients".
Fix (t-vi's answer): do not ask for gradients on the indices; the embedding table is what gets the gradient.
The snippet is put in a small training loop (an optimizer over the table, a few steps) so the fixed twin shows the
table learning."""
import torch

torch.manual_seed(0)

embedding = torch.nn.Embedding(10, 3)
optimizer = torch.optim.SGD(embedding.parameters(), lr=0.1)
weight_before = embedding.weight.detach().clone()
targets = torch.randn(4)

for step in range(4):
    optimizer.zero_grad()
    idx = torch.LongTensor([step % 3]).requires_grad_()  # <- autograd_error
    out = embedding(idx)[0, 0]
    loss = (out - targets[step]) ** 2
    loss.backward()
    optimizer.step()

print("embedding.weight.grad is None:", embedding.weight.grad is None)
print("embedding rows changed:", (embedding.weight != weight_before).any(dim=1).nonzero().flatten().tolist())
