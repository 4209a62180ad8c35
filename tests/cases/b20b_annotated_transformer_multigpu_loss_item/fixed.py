"""discuss.pytorch.org thread ".grad is None - autograd through list of Variables (MultiGPU, transformer)"
(https://discuss.pytorch.org/t/grad-is-none-autograd-through-list-of-variables-multigpu-transformer/26372):
a user adapting harvardNLP's Annotated Transformer MultiGPULossCompute ported `l = l.sum()[0] / normalize`
to `l = l.sum().item() / normalize.float()`; after l.backward() nothing reaches out_column (its .grad is None),
so the transformer below it never learns. On current PyTorch l.backward() raises
"element 0 of tensors does not require grad and does not have a grad_fn".
Why: .item() turns the summed loss into a Python float; dividing by normalize makes a fresh tensor with no
history, so the chunk loss is cut from out_column, the generator and the transformer.
Fix: keep the loss a tensor, `l = l.sum() / normalize.float()`, and call .item() only for the running total."""
import torch
import torch.nn as nn
from torch.autograd import Variable


class parallel:
    """torch.nn.parallel stand-in (its scatter/replicate need CUDA devices): one CPU "device", same call shapes."""
    replicate = staticmethod(lambda module, devices: [module for _ in devices])
    scatter = staticmethod(lambda t, target_gpus: [t for _ in target_gpus])
    parallel_apply = staticmethod(lambda modules, inputs: [m(*i) for m, i in zip(modules, inputs)])
    gather = staticmethod(lambda outs, target_device: torch.cat([o.reshape(-1) if o.dim() == 0 else o for o in outs]))


class NoamOpt:
    """Annotated Transformer's NoamOpt in short: wraps an optimizer, exposes .optimizer and step()."""
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def step(self):
        self.optimizer.step()


class MultiGPULossCompute:
    "A multi-gpu loss compute and train function."
    def __init__(self, generator, criterion, devices, opt=None, chunk_size=5):
        # Send out to different gpus.
        self.generator = generator
        self.criterion = parallel.replicate(criterion, devices=devices)
        self.opt = opt
        self.devices = devices
        self.chunk_size = chunk_size

    def __call__(self, out, targets, normalize):
        total = 0.0
        generator = parallel.replicate(self.generator, devices=self.devices)
        out_scatter = parallel.scatter(out, target_gpus=self.devices)
        out_grad = [[] for _ in out_scatter]
        targets = parallel.scatter(targets, target_gpus=self.devices)

        # Divide generating into chunks.
        chunk_size = self.chunk_size
        for i in range(0, out_scatter[0].size(1), chunk_size):
            # Predict distributions
            out_column = [[Variable(o[:, i:i+chunk_size].data, requires_grad=self.opt is not None)]
                          for o in out_scatter]
            gen = parallel.parallel_apply(generator, out_column)

            # Compute loss.
            y = [(g.contiguous().view(-1, g.size(-1)), t[:, i:i+chunk_size].contiguous().view(-1))
                 for g, t in zip(gen, targets)]
            loss = parallel.parallel_apply(self.criterion, y)

            # Sum and normalize loss
            l = parallel.gather(loss, target_device=self.devices[0])
            l = l.sum() / normalize.float()
            total += l.item()

            # Backprop loss to output of transformer
            if self.opt is not None:
                l.backward()
                for j, l in enumerate(loss):
                    out_grad[j].append(out_column[j][0].grad.data.clone())

        # Backprop all loss through transformer.
        if self.opt is not None:
            out_grad = [Variable(torch.cat(og, dim=1)) for og in out_grad]
            o1 = out
            o2 = parallel.gather(out_grad, target_device=self.devices[0])
            o1.backward(gradient=o2)
            self.opt.step()
            self.opt.optimizer.zero_grad()
        return total * normalize


torch.manual_seed(0)
d_model, vocab = 8, 11
model = nn.Sequential(nn.Embedding(vocab, d_model), nn.Linear(d_model, d_model))  # the transformer, in short
generator = nn.Sequential(nn.Linear(d_model, vocab), nn.LogSoftmax(dim=-1))
criterion = nn.NLLLoss(reduction="sum")  # stand-in for the tutorial's LabelSmoothing (KLDivLoss, sum)
opt = NoamOpt(torch.optim.Adam(list(model.parameters()) + list(generator.parameters()), lr=0.01))
loss_compute = MultiGPULossCompute(generator, criterion, devices=[0], opt=opt, chunk_size=5)

before = model[1].weight.detach().clone()
for step in range(3):
    src = torch.randint(1, vocab, (2, 10))
    out = model(src)
    ntokens = torch.tensor(src.numel())
    print("loss", float(loss_compute(out, src, ntokens)) / float(ntokens))
print("transformer weights changed:", not torch.equal(before, model[1].weight))
