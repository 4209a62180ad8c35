"""DualPrompt in LAMDA-PILOT, class-incremental learning with a prompt pool (LAMDA-CL/LAMDA-PILOT#38): from the second
task on, `_init_prompt` copies the previous task's prompts into the new slots and then sets
`optimizer.param_groups[0]['params'] = model.parameters()`, a generator that the first zero_grad() exhausts, so with
reinit_optimizer off nothing is updated after the first task (accuracy 87% -> 28.5%). The fix drops the re-link (the
optimizer already holds the prompt Parameters the in-place copy wrote into)."""
import torch
import torch.nn.functional as F
from torch import nn, optim


class EPrompt(nn.Module):
    def __init__(self, size=4, length=2, dim=8):
        super().__init__()
        self.prompt = nn.Parameter(torch.randn(size, length, dim) * 0.1)
        self.prompt_key = nn.Parameter(torch.randn(size, dim) * 0.1)


class PromptViT(nn.Module):
    def __init__(self, dim=8, num_classes=6):
        super().__init__()
        self.patch_embed = nn.Linear(12, dim)
        self.e_prompt = EPrompt(dim=dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x, cls_features, task_id, top_k=1):
        sim = F.normalize(cls_features, dim=-1) @ F.normalize(self.e_prompt.prompt_key, dim=-1).t()
        idx = torch.full((x.shape[0], top_k), task_id) if self.training else sim.topk(top_k, dim=1).indices
        prompts = self.e_prompt.prompt[idx].flatten(1, 2)
        tokens = torch.cat([prompts, self.patch_embed(x)], dim=1)
        reduce_sim = sim.gather(1, idx).mean()
        return {"logits": self.head(tokens.mean(1)), "reduce_sim": reduce_sim}


class PromptVitNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.original_backbone = nn.Linear(12, 8)  # frozen query function
        self.backbone = PromptViT()

    def forward(self, x, task_id):
        with torch.no_grad():
            cls_features = self.original_backbone(x).mean(1)
        return self.backbone(x, cls_features, task_id)


class Learner:
    def __init__(self, args):
        self.args, self._cur_task, self._known_classes = args, -1, 0
        self._network = PromptVitNet()
        for p in self._network.original_backbone.parameters():
            p.requires_grad = False

    def get_optimizer(self):
        return optim.SGD(filter(lambda p: p.requires_grad, self._network.parameters()), momentum=0.9, lr=0.05)

    def incremental_train(self, x, y):
        self._cur_task += 1
        self._total_classes = self._known_classes + 3
        optimizer = self.get_optimizer()
        if self._cur_task > 0:
            self._init_prompt(optimizer)
        if self._cur_task > 0 and self.args["reinit_optimizer"]:
            optimizer = self.get_optimizer()
        self._init_train(x, y, optimizer)
        self._known_classes = self._total_classes

    def _init_prompt(self, optimizer):
        model, task_id, top_k = self._network.backbone, self._cur_task, self.args["top_k"]
        prev_idx = slice((task_id - 1) * top_k, task_id * top_k)
        cur_idx = slice(task_id * top_k, (task_id + 1) * top_k)
        with torch.no_grad():
            model.e_prompt.prompt.grad.zero_()
            model.e_prompt.prompt[cur_idx] = model.e_prompt.prompt[prev_idx]
            optimizer.param_groups[0]['params'] = model.parameters()  # <- optimizer

    def _init_train(self, x, y, optimizer):
        self._network.backbone.train()
        for epoch in range(self.args["tuned_epoch"]):
            output = self._network(x, task_id=self._cur_task)
            logits = output["logits"][:, :self._total_classes]
            logits[:, :self._known_classes] = float("-inf")
            loss = F.cross_entropy(logits, y) - 0.1 * output["reduce_sim"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"task {self._cur_task}: loss {loss.item():.4f}")


torch.manual_seed(0)
learner = Learner({"reinit_optimizer": False, "top_k": 1, "tuned_epoch": 3})
tasks = [(torch.randn(16, 5, 12), torch.randint(3 * t, 3 * t + 3, (16,))) for t in range(2)]
learner.incremental_train(*tasks[0])
head_before = learner._network.backbone.head.weight.detach().clone()
key_before = learner._network.backbone.e_prompt.prompt_key.detach().clone()
learner.incremental_train(*tasks[1])
print(f"task 1 changed the head: {not torch.equal(head_before, learner._network.backbone.head.weight)}, "
      f"the prompt keys: {not torch.equal(key_before, learner._network.backbone.e_prompt.prompt_key)}")
