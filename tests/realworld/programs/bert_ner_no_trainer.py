"""BERT token-classification (NER) fine-tuning in the shape of huggingface/transformers
examples/pytorch/token-classification/run_ner_no_trainer.py
(https://github.com/huggingface/transformers/blob/main/examples/pytorch/token-classification/run_ner_no_trainer.py),
with BertForTokenClassification from src/transformers/models/bert/modeling_bert.py written as a small
stand-in (transformers and accelerate are not imported).
Suspicious-but-correct patterns kept: BertForTokenClassification builds `BertModel(config,
add_pooling_layer=False)`, so the pretrained checkpoint's pooler (and MLM head) weights are "unexpected
keys" that from_pretrained skips (load_state_dict(strict=False)) while the new classifier is a "missing
key" left at its fresh init, i.e. the model that trains has no pooler at all rather than an unused one;
`_init_weights` applied through post_init writing `.data` in place; non-persistent buffers
`position_ids` / `token_type_ids` (sliced and expanded when no token_type_ids are passed, so only row 0
of token_type_embeddings is used); the additive attention mask built from `torch.finfo(dtype).min`;
labels set to -100 on special tokens, continuation sub-words and padding (ignored by CrossEntropyLoss);
AdamW over two groups split by name (`no_decay = ["bias", "LayerNorm.weight"]`); a linear warmup/decay
LambdaLR from get_scheduler; an Accelerator stand-in whose prepare() returns the same objects and whose
backward() calls loss.backward(); gradient accumulation with the script's own condition
`step % gradient_accumulation_steps == 0 or step == len(train_dataloader) - 1` (so the first batch
steps alone); `total_loss += loss.detach().float()`; evaluation under torch.no_grad() with
`outputs.logits.argmax(-1)` and `.detach().clone()` of predictions and labels."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class BertConfig:
    def __init__(self, vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=24, type_vocab_size=2, num_labels=5,
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, initializer_range=0.02,
                 layer_norm_eps=1e-12, pad_token_id=0):
        self.__dict__.update(locals())
        del self.__dict__["self"]


# ---- transformers/models/bert/modeling_bert.py (stand-in) ----
class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                             persistent=False)

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            buffered_token_type_ids = self.token_type_ids[:, :seq_length]
            token_type_ids = buffered_token_type_ids.expand(input_ids.size(0), seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):
        return x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        scores = scores + attention_mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.all_head_size,))


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask):
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def forward(self, hidden_states):
        return F.gelu(self.dense(hidden_states))


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertPreTrainedModel(nn.Module):
    base_model_prefix = "bert"

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def post_init(self):
        self.apply(self._init_weights)

    @classmethod
    def from_pretrained(cls, state_dict, config):
        model = cls(config)
        missing_keys, unexpected_keys = model.load_state_dict(state_dict, strict=False)
        if unexpected_keys:
            print(f"Some weights of the model checkpoint were not used when initializing {cls.__name__}: "
                  f"{unexpected_keys}")
        if missing_keys:
            print(f"Some weights of {cls.__name__} were not initialized from the model checkpoint and are "
                  f"newly initialized: {missing_keys}")
        return model


class BertModel(BertPreTrainedModel):
    def __init__(self, config, add_pooling_layer=True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.post_init()

    def forward(self, input_ids, attention_mask):
        extended_attention_mask = attention_mask[:, None, None, :].to(torch.float32)
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(torch.float32).min
        sequence_output = self.encoder(self.embeddings(input_ids), extended_attention_mask)
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
        return sequence_output, pooled_output


class BertForPreTraining(BertPreTrainedModel):
    """Only here to produce a 'bert-base-cased'-like checkpoint (pooler + MLM head included)."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = nn.ModuleDict(dict(transform=nn.Linear(config.hidden_size, config.hidden_size)))
        self.post_init()


class TokenClassifierOutput:
    def __init__(self, loss, logits):
        self.loss = loss
        self.logits = logits


class BertForTokenClassification(BertPreTrainedModel):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids, attention_mask, labels=None):
        sequence_output, _ = self.bert(input_ids, attention_mask)
        logits = self.classifier(self.dropout(sequence_output))
        loss = None
        if labels is not None:
            loss = nn.CrossEntropyLoss()(logits.view(-1, self.num_labels), labels.view(-1))
        return TokenClassifierOutput(loss, logits)


# ---- transformers.get_scheduler("linear") and accelerate.Accelerator (stand-ins) ----
def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) /
                   float(max(1, num_training_steps - num_warmup_steps)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


class Accelerator:
    device = torch.device("cpu")

    def prepare(self, *args):
        return args

    def backward(self, loss):
        loss.backward()


def make_batches(n_batches, batch_size, config):
    """Tokenised, label-aligned batches: [CLS] w1 w1' w2 ... [SEP] [PAD]..., labels -100 where ignored."""
    batches = []
    for _ in range(n_batches):
        seq_len = 12
        input_ids = torch.randint(3, config.vocab_size, (batch_size, seq_len))
        labels = torch.randint(0, config.num_labels, (batch_size, seq_len))
        attention_mask = torch.ones(batch_size, seq_len, dtype=torch.long)
        input_ids[:, 0] = 1  # [CLS]
        labels[:, 0] = -100
        for b in range(batch_size):
            n = int(torch.randint(6, seq_len, ()).item())
            input_ids[b, n] = 2  # [SEP]
            input_ids[b, n + 1:] = config.pad_token_id
            labels[b, n:] = -100
            attention_mask[b, n + 1:] = 0
        labels[:, 3] = -100  # a continuation word piece (label_all_tokens=False)
        batches.append(dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels))
    return batches


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = BertConfig()
    accelerator = Accelerator()
    # "bert-base-cased": a pretraining checkpoint with pooler and MLM head weights
    checkpoint = BertForPreTraining(config).state_dict()
    model = BertForTokenClassification.from_pretrained(checkpoint, config)

    train_dataloader = make_batches(7, 4, config)
    eval_dataloader = make_batches(2, 4, config)
    learning_rate, weight_decay, gradient_accumulation_steps, num_train_epochs = 5e-3, 0.01, 2, 1

    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=learning_rate)
    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / gradient_accumulation_steps)
    max_train_steps = num_train_epochs * num_update_steps_per_epoch
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1,
                                                   num_training_steps=max_train_steps + 1)
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler)

    completed_steps = 0
    for epoch in range(num_train_epochs):
        model.train()
        total_loss = 0
        for step, batch in enumerate(train_dataloader):
            outputs = model(**batch)
            loss = outputs.loss
            total_loss += loss.detach().float()
            print(f"step {step} loss {loss.item():.6f}")
            loss = loss / gradient_accumulation_steps
            accelerator.backward(loss)
            if step % gradient_accumulation_steps == 0 or step == len(train_dataloader) - 1:
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
                completed_steps += 1
            if completed_steps >= max_train_steps:
                break

        model.eval()
        correct, seen = 0, 0
        for step, batch in enumerate(eval_dataloader):
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
            y_pred = predictions.detach().clone()
            y_true = batch["labels"].detach().clone()
            keep = y_true != -100
            correct += (y_pred[keep] == y_true[keep]).sum().item()
            seen += keep.sum().item()
        print(f"epoch {epoch}: accuracy {correct / seen:.4f} train_loss {total_loss.item() / len(train_dataloader):.4f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
