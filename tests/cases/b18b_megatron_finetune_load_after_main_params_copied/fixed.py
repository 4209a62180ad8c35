"""Megatron-LM (NVIDIA/Megatron-LM#174, https://github.com/NVIDIA/Megatron-LM/issues/174): fine-tuning
with --finetune loads the model weights but not the optimizer, and after the first update the model is back
at its random initialization.
Why: setup_model_and_optimizer builds the Float16Optimizer before load_checkpoint; the optimizer keeps fp32
main copies of the randomly initialized bf16 weights and steps those, then copies them over the model, so
the loaded weights are discarded.
Fix (NVIDIA/Megatron-LM#240): after loading a checkpoint without the optimizer, call
optimizer.reload_model_params() so the main copies are taken from the loaded weights."""
import torch
import torch.nn.functional as F
from torch import nn


class Float16OptimizerWithFloat16Params:
    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.float16_groups, self.fp32_from_float16_groups = [], []
        for param_group in self.optimizer.param_groups:
            float16_params, fp32_from_float16_params = [], []
            for i, param in enumerate(param_group['params']):
                main_param = param.detach().clone().float()
                float16_params.append(param)
                fp32_from_float16_params.append(main_param)
                param_group['params'][i] = main_param
            self.float16_groups.append(float16_params)
            self.fp32_from_float16_groups.append(fp32_from_float16_params)

    def reload_model_params(self):
        with torch.no_grad():
            for model_group, main_group in zip(self.float16_groups, self.fp32_from_float16_groups):
                for model_param, main_param in zip(model_group, main_group):
                    main_param.copy_(model_param.float())

    def zero_grad(self):
        for group in self.float16_groups:
            for param in group:
                param.grad = None

    def step(self):
        for model_group, main_group in zip(self.float16_groups, self.fp32_from_float16_groups):
            for model_param, main_param in zip(model_group, main_group):
                main_param.grad = model_param.grad.float()
        self.optimizer.step()
        with torch.no_grad():
            for model_group, main_group in zip(self.float16_groups, self.fp32_from_float16_groups):
                for model_param, main_param in zip(model_group, main_group):
                    model_param.copy_(main_param)


def load_checkpoint(model, optimizer, checkpoint, finetune=True):
    model.load_state_dict(checkpoint['model'])
    if not finetune:  # --finetune / --no-load-optim: the optimizer state is not restored
        optimizer.optimizer.load_state_dict(checkpoint['optimizer'])


torch.manual_seed(0)
pretrained = nn.Linear(16, 4).to(torch.bfloat16)
with torch.no_grad():
    pretrained.weight.mul_(20)
checkpoint = {'model': pretrained.state_dict()}
model = nn.Linear(16, 4).to(torch.bfloat16)
optimizer = Float16OptimizerWithFloat16Params(torch.optim.Adam(model.parameters(), lr=1e-2))
load_checkpoint(model, optimizer, checkpoint, finetune=True)
optimizer.reload_model_params()
x, y = torch.randn(8, 16, dtype=torch.bfloat16), torch.randint(0, 4, (8,))
for iteration in range(3):
    loss = F.cross_entropy(model(x).float(), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    drift = (model.weight.float() - checkpoint['model']['weight'].float()).abs().max().item()
    print(f"iteration {iteration}: loss {loss.item():.4f}, max distance from loaded weights {drift:.4f}")
