"""BERT_FP post-training (hanjanghoon/BERT_FP#2, https://github.com/hanjanghoon/BERT_FP/issues/2):
FPT/douban_final.py with --gradient_accumulation_steps > 1 prints a loss every step, but the model never
changes: loss.backward() is only executed when gradient_accumulation_steps == 1.
Why: the accumulation branch divides the loss and the backward sits in the `else:` of that same if, so with
accumulation on no backward ever runs; every optimizer.step() sees .grad None and updates nothing.
Fix: scale the loss when accumulating, then call loss.backward() unconditionally (maintainer: "the gradient
accumulation code is not implemented properly ... i will modify code soon")."""
import argparse

import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss


class BertForPreTraining(nn.Module):
    """transformers.BertForPreTraining in short: an encoder, an MLM head and a next-sentence head."""

    def __init__(self, vocab_size=30, hidden_size=16):
        super().__init__()
        self.config = argparse.Namespace(vocab_size=vocab_size, hidden_size=hidden_size)
        self.bert = nn.Sequential(nn.Embedding(vocab_size, hidden_size), nn.Linear(hidden_size, hidden_size), nn.Tanh())
        self.cls = nn.Module()
        self.cls.predictions = nn.Linear(hidden_size, vocab_size)
        self.cls.seq_relationship = nn.Linear(hidden_size, 2)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        sequence_output = self.bert(input_ids)
        return self.cls.predictions(sequence_output), self.cls.seq_relationship(sequence_output[:, 0])


torch.manual_seed(0)
args = argparse.Namespace(learning_rate=3e-3, gradient_accumulation_steps=2, warmup_proportion=0.01)
model = BertForPreTraining()
model.cls.seq_relationship = nn.Linear(16, 3)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
train_dataloader = [(torch.randint(0, 30, (4, 12)), torch.ones(4, 12), torch.zeros(4, 12, dtype=torch.long),
                     torch.randint(0, 30, (4, 12)), torch.randint(0, 3, (4,))) for _ in range(6)]
before = model.bert[1].weight.detach().clone()

global_step = 0
tr_loss = 0
for step, batch in enumerate(train_dataloader):
    input_ids, input_mask, segment_ids, lm_label_ids, is_next = batch
    model.train()
    optimizer.zero_grad()
    prediction_scores, seq_relationship_score = model(input_ids=input_ids, attention_mask=input_mask, token_type_ids=segment_ids)
    loss_fct = CrossEntropyLoss(ignore_index=-1)
    masked_lm_loss = loss_fct(prediction_scores.view(-1, model.config.vocab_size), lm_label_ids.view(-1))
    next_sentence_loss = loss_fct(seq_relationship_score.view(-1, 3), is_next.view(-1))
    total_loss = masked_lm_loss + next_sentence_loss

    model.zero_grad()
    loss = total_loss
    print('Batch[{}] - loss: {:.6f}'.format(step, loss.item()))
    if args.gradient_accumulation_steps > 1:
        loss = loss / args.gradient_accumulation_steps
    else:  # <- optimizer
        loss.backward()
    tr_loss += loss.item()

    if (step + 1) % args.gradient_accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
        global_step += 1

print("weights changed:", not torch.equal(before, model.bert[1].weight))
