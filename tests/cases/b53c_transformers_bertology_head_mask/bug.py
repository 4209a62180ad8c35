# [examples] fix no grad in second pruning in run_bertology (huggingface/transformers)
# https://github.com/huggingface/transformers/pull/4479  (bug: issues #3895 / #4103)
# What went wrong: mask_heads() builds new_head_mask from the previous mask, which
# compute_heads_importance() had switched to requires_grad=True. The index assignment
# (written out-of-place here as index_fill, see meta caveats)
# turns new_head_mask into a non-leaf (it has history back to the old mask), so in the
# second masking round head_mask.grad stays None and
# `head_importance += head_mask.grad.abs().detach()` raises
# AttributeError: 'NoneType' object has no attribute 'abs'.
# Fix (PR #4479): `new_head_mask = new_head_mask.clone().detach()` after view_as.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class BertConfig:
    hidden_size = 16
    num_attention_heads = 4
    num_hidden_layers = 3
    num_labels = 2
    vocab_size = 30


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_attention_heads, self.head_size).transpose(1, 2)

    def forward(self, hidden_states, head_mask=None):
        q, k, v = self.split(self.query(hidden_states)), self.split(self.key(hidden_states)), self.split(self.value(hidden_states))
        attention_probs = F.softmax(q @ k.transpose(-1, -2) / self.head_size ** 0.5, dim=-1)
        if head_mask is not None:
            attention_probs = attention_probs * head_mask
        context = (attention_probs @ v).transpose(1, 2).reshape(hidden_states.shape)
        return context, attention_probs


class BertForSequenceClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layer = nn.ModuleList([BertSelfAttention(config) for _ in range(config.num_hidden_layers)])
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def get_head_mask(self, head_mask):
        # [num_layers, num_heads] -> [num_layers, 1, num_heads, 1, 1]
        return head_mask.unsqueeze(1).unsqueeze(-1).unsqueeze(-1)

    def forward(self, input_ids, attention_mask=None, labels=None, head_mask=None):
        head_mask = self.get_head_mask(head_mask) if head_mask is not None else [None] * len(self.layer)
        h = self.embeddings(input_ids)
        all_attentions = ()
        for i, layer_module in enumerate(self.layer):
            ctx, attn = layer_module(h, head_mask[i])
            h = h + ctx
            all_attentions = all_attentions + (attn,)
        logits = self.classifier(h[:, 0])
        loss = F.cross_entropy(logits, labels)
        return loss, logits, all_attentions


class Args:
    device = torch.device("cpu")
    masking_threshold = 0.9
    masking_amount = 0.1
    dont_normalize_importance_by_layer = False
    dont_normalize_global_importance = False


def print_2d_tensor(tensor):
    for row in tensor:
        print("\t".join(f"{x:.5f}" for x in row.tolist()))


def entropy(p):
    plogp = p * torch.log(p)
    plogp[p == 0] = 0
    return -plogp.sum(dim=-1)


def compute_heads_importance(args, model, eval_dataloader, compute_entropy=True, compute_importance=True, head_mask=None):
    n_layers, n_heads = model.config.num_hidden_layers, model.config.num_attention_heads
    head_importance = torch.zeros(n_layers, n_heads).to(args.device)
    attn_entropy = torch.zeros(n_layers, n_heads).to(args.device)

    if head_mask is None:
        head_mask = torch.ones(n_layers, n_heads).to(args.device)
    head_mask.requires_grad_(requires_grad=True)
    preds = None
    tot_tokens = 0.0

    for step, inputs in enumerate(eval_dataloader):
        outputs = model(**inputs, head_mask=head_mask)
        loss, logits, all_attentions = outputs[0], outputs[1], outputs[-1]
        loss.backward()  # Backpropagate to populate the gradients in the head mask

        if compute_entropy:
            for layer, attn in enumerate(all_attentions):
                masked_entropy = entropy(attn.detach()) * inputs["attention_mask"].float().unsqueeze(1)
                attn_entropy[layer] += masked_entropy.sum(-1).sum(0).detach()

        if compute_importance:
            head_importance += head_mask.grad.abs().detach()

        if preds is None:
            preds = logits.detach().cpu().numpy()
            labels = inputs["labels"].detach().cpu().numpy()
        else:
            preds = np.append(preds, logits.detach().cpu().numpy(), axis=0)
            labels = np.append(labels, inputs["labels"].detach().cpu().numpy(), axis=0)
        tot_tokens += inputs["attention_mask"].float().detach().sum().data

    attn_entropy /= tot_tokens
    head_importance /= tot_tokens
    if not args.dont_normalize_importance_by_layer:
        exponent = 2
        norm_by_layer = torch.pow(torch.pow(head_importance, exponent).sum(-1), 1 / exponent)
        head_importance /= norm_by_layer.unsqueeze(-1) + 1e-20
    if not args.dont_normalize_global_importance:
        head_importance = (head_importance - head_importance.min()) / (head_importance.max() - head_importance.min())
    print("Head importance scores")
    print_2d_tensor(head_importance)
    return attn_entropy, head_importance, preds, labels


def mask_heads(args, model, eval_dataloader):
    _, head_importance, preds, labels = compute_heads_importance(args, model, eval_dataloader, compute_entropy=False)
    original_score = (np.argmax(preds, axis=1) == labels).mean()

    new_head_mask = torch.ones_like(head_importance)
    num_to_mask = max(1, int(new_head_mask.numel() * args.masking_amount))

    current_score = original_score
    while current_score >= original_score * args.masking_threshold:
        head_mask = new_head_mask.clone()  # save current head mask
        head_importance[head_mask == 0.0] = float("Inf")
        current_heads_to_mask = head_importance.view(-1).sort()[1]

        if len(current_heads_to_mask) <= num_to_mask:
            break

        current_heads_to_mask = current_heads_to_mask[:num_to_mask]
        print("Heads to mask:", current_heads_to_mask.tolist())
        new_head_mask = new_head_mask.view(-1)
        new_head_mask = new_head_mask.index_fill(0, current_heads_to_mask, 0.0)
        new_head_mask = new_head_mask.view_as(head_mask)  # <- non_leaf_watched
        print_2d_tensor(new_head_mask)

        _, head_importance, preds, labels = compute_heads_importance(
            args, model, eval_dataloader, compute_entropy=False, head_mask=new_head_mask
        )
        current_score = (np.argmax(preds, axis=1) == labels).mean()
        print("Masking: current score: %f, remaining heads %d" % (current_score, new_head_mask.sum()))

    print("Final head mask")
    print_2d_tensor(head_mask)
    return head_mask


def main():
    args = Args()
    config = BertConfig()
    model = BertForSequenceClassification(config)
    eval_dataloader = [
        {
            "input_ids": torch.randint(0, config.vocab_size, (4, 6)),
            "attention_mask": torch.ones(4, 6, dtype=torch.long),
            "labels": torch.randint(0, config.num_labels, (4,)),
        }
        for _ in range(2)
    ]
    compute_heads_importance(args, model, eval_dataloader)
    head_mask = mask_heads(args, model, eval_dataloader)
    print("remaining heads:", int(head_mask.sum()))


if __name__ == "__main__":
    main()
