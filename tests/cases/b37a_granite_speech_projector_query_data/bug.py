"""huggingface/transformers PR #38833, "Granite speech - minor fixes to support training with the HF trainer",
https://github.com/huggingface/transformers/pull/38833: GraniteSpeechEncoderProjector keeps its learned Q-Former
queries in `self.query = nn.Parameter(...)`, but forward() hands the Q-Former `query_embeds=self.query.data`.
`.data` is a plain tensor without autograd history, so the language-model loss never reaches the queries:
after loss.backward() every other projector / encoder weight has a gradient and `projector.query.grad` is None.
The PR: "ensure all trainable parameters have gradients (bugfix) - remove `.data` from a forward call",
i.e. `query_embeds=self.query`. Tiny stand-ins: a 2-layer linear "CTC encoder" (the conformer blocks are left
out), a one-layer cross-attention Q-Former (Blip2QFormerModel) and an embedding + GRU + linear "LLM"; the PR's other
two changes (processor padding, melspec renaming) do not touch gradients and are left out."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class QFormer(nn.Module):  # stand-in for Blip2QFormerModel: queries cross-attend to the audio windows
    def __init__(self, hidden_size, encoder_hidden_size):
        super().__init__()
        self.layernorm = nn.LayerNorm(hidden_size)
        self.crossattention = nn.MultiheadAttention(hidden_size, 2, kdim=encoder_hidden_size,
                                                    vdim=encoder_hidden_size, batch_first=True)
        self.output = nn.Linear(hidden_size, hidden_size)

    def forward(self, query_embeds, encoder_hidden_states):
        queries = self.layernorm(query_embeds).expand(encoder_hidden_states.size(0), -1, -1)
        attn, _ = self.crossattention(queries, encoder_hidden_states, encoder_hidden_states)
        return self.output(attn + queries)


class GraniteSpeechEncoderProjector(nn.Module):
    def __init__(self, hidden_size=16, encoder_dim=24, llm_dim=32, window_size=8, downsample_rate=4):
        super().__init__()
        self.window_size = window_size
        self.downsample_rate = downsample_rate
        self.num_queries = window_size // downsample_rate
        self.query = nn.Parameter(torch.zeros(1, self.num_queries, hidden_size))
        self.query.data.normal_(mean=0.0, std=1.0)
        self.qformer = QFormer(hidden_size, encoder_dim)
        self.linear = nn.Linear(hidden_size, llm_dim)

    def forward(self, hidden_states):
        batch_size, seq_len, dim = hidden_states.size()
        nblocks = math.ceil(seq_len / self.window_size)
        pad = nblocks * self.window_size - seq_len
        hidden_states = F.pad(hidden_states, (0, 0, 0, pad), "constant", 0)
        hidden_states = hidden_states.view(batch_size * nblocks, self.window_size, dim)
        last_hidden_state = self.qformer(
            query_embeds=self.query.data,  # <- data_attr
            encoder_hidden_states=hidden_states,
        )
        return self.linear(last_hidden_state.reshape(batch_size, nblocks * self.window_size // self.downsample_rate, -1))


class GraniteSpeechForConditionalGeneration(nn.Module):
    def __init__(self, input_dim=20, encoder_dim=24, llm_dim=32, vocab=50):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(input_dim, encoder_dim), nn.SiLU(), nn.Linear(encoder_dim, encoder_dim))
        self.projector = GraniteSpeechEncoderProjector(encoder_dim=encoder_dim, llm_dim=llm_dim)
        self.embed_tokens = nn.Embedding(vocab, llm_dim)
        self.decoder = nn.GRU(llm_dim, llm_dim, batch_first=True)  # causal stand-in for the Granite LLM
        self.lm_head = nn.Linear(llm_dim, vocab)

    def forward(self, input_features, input_ids, labels):
        audio_embeds = self.projector(self.encoder(input_features))
        inputs_embeds = torch.cat([audio_embeds, self.embed_tokens(input_ids)], dim=1)  # audio tokens first
        logits = self.lm_head(self.decoder(inputs_embeds)[0])
        logits = logits[:, audio_embeds.size(1):-1]
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


model = GraniteSpeechForConditionalGeneration()
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
input_features = torch.randn(2, 30, 20)  # (batch, frames, mel bins)
input_ids = torch.randint(0, 50, (2, 6))

loss = model(input_features, input_ids, labels=input_ids)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("loss:", loss.item())
print("projector.linear.weight.grad is None:", model.projector.linear.weight.grad is None)
print("encoder[0].weight.grad is None:", model.encoder[0].weight.grad is None)
print("projector.query.grad:", model.projector.query.grad)
