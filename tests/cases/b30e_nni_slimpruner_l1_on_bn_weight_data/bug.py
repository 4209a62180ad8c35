"""NNI (microsoft/nni) PR #4307 "[Compression v2] bugfix & improvement", https://github.com/microsoft/nni/pull/4307:
"The criterion patch in SlimPruner V2 is invalid, fix it." SlimPruner (network slimming) trains the model with the
user's trainer and a patched criterion that adds scale * sum |gamma| over the BatchNorm2d weights it wraps, so the
gammas are pushed towards zero before channels are ranked by |gamma| and pruned. The patch summed
torch.norm(wrapper.module.weight.data, p=1): .data has no autograd history, so the L1 term is a constant, it
changes the printed loss but not a single gradient, and the BatchNorm weights are never sparsified (training
with the patch gives exactly the weights that plain training gives). In the review the author shows that
`weight` has a grad_fn and `weight.data` has none. Fix (the PR): torch.norm(wrapper.module.weight, p=1).
Reduction: the pruner's wrapper / data collector in short, a small VGG-style net on random CIFAR-sized batches,
the user's trainer as in NNI's examples."""
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class PrunerModuleWrapper(nn.Module):
    def __init__(self, module, module_name, config):
        super().__init__()
        self.module = module
        self.name = module_name
        self.config = config


class SlimPruner:
    def __init__(self, model, config_list, trainer, optimizer, criterion, training_epochs, scale=0.0001):
        self.bound_model = model
        self.trainer = trainer
        self.optimizer = optimizer
        self.criterion = criterion
        self.training_epochs = training_epochs
        self._scale = scale
        self._wrappers = {name: PrunerModuleWrapper(m, name, config_list[0]) for name, m in model.named_modules()
                          if type(m).__name__ in config_list[0]['op_types']}

    def get_modules_wrapper(self):
        return self._wrappers

    def criterion_patch(self, criterion):
        def patched_criterion(input_tensor, target):
            sum_l1 = 0
            for _, wrapper in self.get_modules_wrapper().items():
                sum_l1 += torch.norm(wrapper.module.weight.data, p=1)  # <- cut_term
            return criterion(input_tensor, target) + self._scale * sum_l1
        return patched_criterion

    def compress(self):
        # WeightTrainerBasedDataCollector: train with the patched criterion, then collect the BN weights
        patched = self.criterion_patch(self.criterion)
        for _ in range(self.training_epochs):
            self.trainer(self.bound_model, self.optimizer, patched)
        metrics = {name: w.module.weight.detach().abs() for name, w in self._wrappers.items()}
        return self.bound_model, metrics


class VGG(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(32, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


train_loader = [(torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))) for _ in range(4)]


def trainer(model, optimizer, criterion):
    model.train()
    for data, target in train_loader:
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()


base = VGG()
# plain training, no sparsity term, for comparison
plain = copy.deepcopy(base)
plain_optimizer = torch.optim.SGD(plain.parameters(), lr=0.01, momentum=0.9)
trainer(plain, plain_optimizer, F.cross_entropy)

model = copy.deepcopy(base)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
config_list = [{'sparsity': 0.5, 'op_types': ['BatchNorm2d']}]
pruner = SlimPruner(model, config_list, trainer, optimizer, F.cross_entropy, training_epochs=1, scale=0.01)
_, metrics = pruner.compress()

same = torch.equal(model.features[1].weight, plain.features[1].weight)
print("BN gamma after slimming training identical to plain training:", same)
print("L1 of BN gammas, slimming vs plain: %.6f vs %.6f" % (
    model.features[1].weight.abs().sum().item(), plain.features[1].weight.abs().sum().item()))
