# "Fix some bugs in openbackdoor" -- thunlp/OpenBackdoor pull request #3 (merged)
# https://github.com/thunlp/OpenBackdoor/pull/3
# openbackdoor/trainers/trainer.py, Trainer.train_one_epoch:
#     if self.gradient_accumulation_steps > 1:
#         loss = loss / self.gradient_accumulation_steps
#     else:
#         loss.backward()
# "Clearly, when gradient_accumulation_steps > 1, the loss would never backward": every
# optimizer.step() then runs with no gradients (.grad is None) and the victim model never
# learns, while loss values are still logged.
# Fix (PR #3): call loss.backward() unconditionally after the optional scaling.
# Miniature: tiny bag-of-embeddings "PLM" victim, random token ids, CPU, 2 epochs.
import torch
import torch.nn as nn
from types import SimpleNamespace
from typing import Optional

torch.manual_seed(0)


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) /
                   float(max(1, num_training_steps - num_warmup_steps)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


class PLMVictim(nn.Module):  # stands in for openbackdoor.victims.PLMVictim
    def __init__(self, vocab_size=50, hidden=16, num_classes=2):
        super().__init__()
        self.plm = nn.ModuleDict({
            'embeddings': nn.Embedding(vocab_size, hidden),
            'LayerNorm': nn.LayerNorm(hidden),
            'classifier': nn.Linear(hidden, num_classes),
        })

    def process(self, batch):
        batch_inputs = {'input_ids': batch['text']}
        batch_labels = batch['label']
        return batch_inputs, batch_labels

    def forward(self, inputs):
        h = self.plm['LayerNorm'](self.plm['embeddings'](inputs['input_ids']).mean(1))
        return SimpleNamespace(logits=self.plm['classifier'](h))


class Trainer(object):
    def __init__(self, name: Optional[str] = "Base", lr: Optional[float] = 2e-5,
                 weight_decay: Optional[float] = 0., epochs: Optional[int] = 10,
                 batch_size: Optional[int] = 4, gradient_accumulation_steps: Optional[int] = 1,
                 max_grad_norm: Optional[float] = 1.0, warm_up_epochs: Optional[int] = 3,
                 loss_function: Optional[str] = "ce", **kwargs):
        self.name = name
        self.lr = lr
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.batch_size = batch_size
        self.warm_up_epochs = warm_up_epochs
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.max_grad_norm = max_grad_norm
        if loss_function == "ce":
            self.loss_function = nn.CrossEntropyLoss()

    def register(self, model, dataloader, metrics):
        self.model = model
        self.metrics = metrics
        self.model.train()
        self.model.zero_grad()
        no_decay = ['bias', 'LayerNorm.weight']
        optimizer_grouped_parameters = [
            {'params': [p for n, p in self.model.named_parameters() if not any(nd in n for nd in no_decay)], 'weight_decay': self.weight_decay},
            {'params': [p for n, p in self.model.named_parameters() if any(nd in n for nd in no_decay)], 'weight_decay': 0.0}
        ]
        self.optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=self.lr)
        train_length = len(dataloader["train"])
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer,
                                                         num_warmup_steps=self.warm_up_epochs * train_length,
                                                         num_training_steps=(self.warm_up_epochs + self.epochs) * train_length)

    def train_one_epoch(self, epoch: int, epoch_iterator):
        self.model.train()
        total_loss = 0
        for step, batch in enumerate(epoch_iterator):
            batch_inputs, batch_labels = self.model.process(batch)
            output = self.model(batch_inputs)
            logits = output.logits
            loss = self.loss_function(logits, batch_labels)

            if self.gradient_accumulation_steps > 1:
                loss = loss / self.gradient_accumulation_steps

            loss.backward()

            if (step + 1) % self.gradient_accumulation_steps == 0:
                cls_grad = self.model.plm['classifier'].weight.grad  # gradient the step is about to apply
                if cls_grad is None:
                    print('  epoch %d step %d: classifier.weight.grad is None at optimizer.step()' % (epoch, step))
                nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
                self.optimizer.step()
                self.scheduler.step()
                total_loss += loss.item()
                self.model.zero_grad()

        avg_loss = total_loss / len(epoch_iterator)
        return avg_loss

    def train(self, model, dataset, metrics=["accuracy"]):
        dataloader = {"train": [dataset[i:i + self.batch_size] for i in range(0, len(dataset), self.batch_size)]}
        dataloader["train"] = [{'text': torch.stack([d['text'] for d in b]),
                                'label': torch.stack([d['label'] for d in b])} for b in dataloader["train"]]
        self.register(model, dataloader, metrics)
        for epoch in range(self.epochs):
            epoch_loss = self.train_one_epoch(epoch, dataloader["train"])
            print('Epoch: {}, avg loss: {:.4f}'.format(epoch + 1, epoch_loss))
        return self.model


dataset = [{'text': torch.randint(0, 50, (12,)), 'label': torch.randint(0, 2, ())} for _ in range(16)]
victim = PLMVictim()
before = victim.plm['classifier'].weight.detach().clone()
trainer = Trainer(lr=1e-2, epochs=2, batch_size=4, gradient_accumulation_steps=2, warm_up_epochs=0)
trainer.train(victim, dataset)
print('classifier weights changed:', not torch.equal(before, victim.plm['classifier'].weight))
