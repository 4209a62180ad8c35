# BERT configured with position_embedding_type="relative_key": the attention
# adds a learned distance embedding to its scores, while the embeddings module
# still builds the absolute position table that only the "absolute" type reads.
import math
import torch
import torch.nn as nn

torch.manual_seed(0)


class Config:
    vocab_size = 50
    hidden_size = 32
    num_attention_heads = 4
    max_position_embeddings = 16
    type_vocab_size = 2
    layer_norm_eps = 1e-12
    position_embedding_type = "relative_key"


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)  # <- unused_parameter
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.position_embedding_type = config.position_embedding_type
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)))

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        if self.position_embedding_type == "absolute":
            embeddings += self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.position_embedding_type = config.position_embedding_type
        if self.position_embedding_type in ("relative_key", "relative_key_query"):
            self.max_position_embeddings = config.max_position_embeddings
            self.distance_embedding = nn.Embedding(2 * config.max_position_embeddings - 1, self.head_size)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        q, k, v = (self.split(f(hidden_states)) for f in (self.query, self.key, self.value))
        scores = torch.matmul(q, k.transpose(-1, -2))
        if self.position_embedding_type in ("relative_key", "relative_key_query"):
            t = hidden_states.size(1)
            pos_l = torch.arange(t).view(-1, 1)
            pos_r = torch.arange(t).view(1, -1)
            distance = pos_l - pos_r
            positional = self.distance_embedding(distance + self.max_position_embeddings - 1)
            scores = scores + torch.einsum("bhld,lrd->bhlr", q, positional)
        probs = torch.softmax(scores / math.sqrt(self.head_size), dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).flatten(2)
        return ctx


class TinyBert(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = BertEmbeddings(config)
        self.attention = BertSelfAttention(config)
        self.classifier = nn.Linear(config.hidden_size, 2)

    def forward(self, input_ids, token_type_ids):
        h = self.embeddings(input_ids, token_type_ids)
        h = h + self.attention(h)
        return self.classifier(h[:, 0])


config = Config()
model = TinyBert(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
input_ids = torch.randint(0, config.vocab_size, (4, 10))
token_type_ids = torch.zeros_like(input_ids)
labels = torch.randint(0, 2, (4,))

optimizer.zero_grad()
loss = nn.functional.cross_entropy(model(input_ids, token_type_ids), labels)
loss.backward()
for name, p in model.named_parameters():
    if p.grad is None:
        print(f"{name}: grad is None")
optimizer.step()
print("loss", loss.item())
