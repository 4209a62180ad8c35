"""open-mmlab/mmcv issue #1379, "RuntimeError: Trying to backward through the graph a second time",
https://github.com/open-mmlab/mmcv/issues/1379: to get gradient accumulation the reporter added
GradientCumulativeOptimizerHook to the config's custom_hooks. Training an mmdet detector then raised
"RuntimeError: Trying to backward through the graph a second time". Why (the maintainer's answer): the base schedule
config already sets optimizer_config = dict(grad_clip=None), so the runner registers an OptimizerHook as well; after
each iteration OptimizerHook calls runner.outputs['loss'].backward() (freeing the graph) and then the cumulative hook
calls backward on the same loss again. Fix (the thread's): do not add the hook to custom_hooks; make it the optimizer
hook instead, optimizer_config = dict(type="GradientCumulativeOptimizerHook", cumulative_iters=4).
The mmcv runner, hooks and registry are reduced to a few lines; the detector to a small CNN. Raises the RuntimeError."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class OptimizerHook:
    def __init__(self, grad_clip=None):
        self.grad_clip = grad_clip

    def after_train_iter(self, runner):
        runner.optimizer.zero_grad()
        runner.outputs['loss'].backward()
        runner.optimizer.step()


class GradientCumulativeOptimizerHook(OptimizerHook):
    def __init__(self, grad_clip=None, cumulative_iters=1):
        super().__init__(grad_clip)
        self.cumulative_iters = cumulative_iters

    def after_train_iter(self, runner):
        loss = runner.outputs['loss'] / self.cumulative_iters
        loss.backward()
        if (runner.iter + 1) % self.cumulative_iters == 0:
            runner.optimizer.step()
            runner.optimizer.zero_grad()


HOOKS = {"OptimizerHook": OptimizerHook, "GradientCumulativeOptimizerHook": GradientCumulativeOptimizerHook}


class Runner:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.hooks, self.iter, self.outputs = [], 0, None

    def register_hook(self, hook, priority):
        hook.priority = priority
        self.hooks.append(hook)
        self.hooks.sort(key=lambda h: h.priority)

    def register_training_hooks(self, optimizer_config, custom_hooks):
        cfg = dict(optimizer_config)
        self.register_hook(HOOKS[cfg.pop("type", "OptimizerHook")](**cfg), priority=1)  # ABOVE_NORMAL
        for c in custom_hooks:
            c = dict(c)
            self.register_hook(HOOKS[c.pop("type")](**c), priority=2)  # NORMAL

    def run(self, data_loader, max_epochs):
        self.model.train()
        for _ in range(max_epochs):
            for img, gt_label in data_loader:
                logits = self.model(img)
                self.outputs = {"loss": nn.functional.cross_entropy(logits, gt_label)}
                for hook in self.hooks:
                    hook.after_train_iter(self)
                self.iter += 1


# configs/_base_/schedules/schedule_1x.py
optimizer_config = dict(type="GradientCumulativeOptimizerHook", cumulative_iters=4)
# the reporter's config
custom_hooks = []

model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(8, 5))
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
data_loader = [(torch.randn(2, 3, 16, 16), torch.randint(0, 5, (2,))) for _ in range(8)]
w_before = model[4].weight.detach().clone()

runner = Runner(model, optimizer)
runner.register_training_hooks(optimizer_config, custom_hooks)
runner.run(data_loader, max_epochs=1)
print("head weight changed:", not torch.equal(w_before, model[4].weight))
