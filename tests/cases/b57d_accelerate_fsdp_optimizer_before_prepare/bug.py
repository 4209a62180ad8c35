# [BUG] [Fix-Suggested] Model Training Stalls with FSDP when `fsdp_use_orig_params=False`
# due to inconsistent model-optimizer state
# https://github.com/huggingface/accelerate/issues/3256  (root cause of accelerate#2665,
# "FSDP Model not learning during training, loss stays constant")
#
# What went wrong: the training script built `torch.optim.AdamW(optimizer_grouped_parameters)`
# BEFORE the model was wrapped with FSDP inside `accelerator.prepare(model, optimizer, ...)`.
# With use_orig_params=False, FSDP flattens the module's parameters into a new FlatParameter and
# the forward runs on views of it; the optimizer still holds the original (now unused) parameters.
# Their .grad stays None, optimizer.step() does nothing, and the loss stays constant every epoch.
# Fix (user-side workaround given in the issue): wrap the model first
# (`model = accelerator.prepare(model)`), then create the optimizer from the wrapped model's
# parameters and prepare the rest.
#
# accelerate / FSDP are rewritten below as small plain torch (Accelerator, AcceleratedOptimizer,
# FullyShardedDataParallelPlugin, FullyShardedDataParallel keep their names).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ----------------------------------------------------------------- minimal FSDP (flat params)
class FullyShardedDataParallelPlugin:
    def __init__(self, use_orig_params=False):
        self.use_orig_params = use_orig_params


class FullyShardedDataParallel(nn.Module):
    """use_orig_params=False: the wrapped module's parameters are flattened into one FlatParameter;
    the original nn.Parameters are removed from the module and replaced by views at forward time."""

    def __init__(self, module, use_orig_params=False):
        super().__init__()
        self._fsdp_wrapped_module = module
        self._param_infos = []
        flat = []
        for mod in module.modules():
            for pname, p in list(mod.named_parameters(recurse=False)):
                self._param_infos.append((mod, pname, p.shape, p.numel()))
                flat.append(p.detach().reshape(-1))
                delattr(mod, pname)
        self.flat_param = nn.Parameter(torch.cat(flat))

    def _unflatten_params(self):
        offset = 0
        for mod, pname, shape, numel in self._param_infos:
            setattr(mod, pname, self.flat_param[offset:offset + numel].view(shape))
            offset += numel

    def forward(self, *args, **kwargs):
        self._unflatten_params()
        return self._fsdp_wrapped_module(*args, **kwargs)


class AcceleratedOptimizer:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self):
        self.optimizer.step()


class Accelerator:
    def __init__(self, fsdp_plugin):
        self.state_fsdp_plugin = fsdp_plugin

    def prepare(self, *args):
        out = []
        for obj in args:
            if isinstance(obj, nn.Module):
                out.append(FullyShardedDataParallel(obj, use_orig_params=self.state_fsdp_plugin.use_orig_params))
            elif isinstance(obj, torch.optim.Optimizer):
                out.append(AcceleratedOptimizer(obj))  # optimizer is not re-pointed at the flat params
            else:
                out.append(obj)
        return out[0] if len(out) == 1 else tuple(out)

    def backward(self, loss):
        loss.backward()


# ----------------------------------------------------------------- tiny model + data
class TinyModelForSequenceClassification(nn.Module):
    def __init__(self, vocab=50, hidden=16, num_labels=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden)
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, input_ids, labels):
        h = self.embed(input_ids).mean(1)
        h = self.LayerNorm(torch.tanh(self.dense(h)))
        logits = self.classifier(h)
        return F.cross_entropy(logits, labels)


def main():
    learning_rate, weight_decay, num_train_epochs = 1e-2, 0.01, 3
    accelerator = Accelerator(fsdp_plugin=FullyShardedDataParallelPlugin(use_orig_params=False))

    model = TinyModelForSequenceClassification()
    train_dataloader = [(torch.randint(0, 50, (8, 6)), torch.randint(0, 3, (8,))) for _ in range(4)]

    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=learning_rate)  # <- optimizer

    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)

    for epoch in range(num_train_epochs):
        total = 0.0
        for step, (input_ids, labels) in enumerate(train_dataloader):
            loss = model(input_ids, labels)
            accelerator.backward(loss)
            if epoch == 0 and step == 0:
                print("grad of first optimizer param:", optimizer.param_groups[0]["params"][0].grad)
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item()
        print(f"epoch {epoch}: train loss {total / len(train_dataloader):.6f}")


if __name__ == "__main__":
    main()
