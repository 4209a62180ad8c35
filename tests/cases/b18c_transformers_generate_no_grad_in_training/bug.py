"""huggingface/transformers, https://github.com/huggingface/transformers/issues/30713

What the user saw: training a LoRA-wrapped causal LM works when the embeddings come from the model's
forward (encode_general), but when the training step takes the outputs of ``model.generate(...)`` instead,
backward fails with "element 0 of tensors does not require grad and does not have a grad_fn".
Why: generate() is decorated with @torch.no_grad() (it is for inference only, as the maintainers say in
the thread and in #28319), so nothing it returns has a graph back to the trainable weights.
Fix: compute the training outputs with the model's forward call, not generate().
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=12, dim=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids):
        hidden, _ = self.rnn(self.embed_tokens(input_ids))
        return hidden, self.lm_head(hidden)

    @torch.no_grad()
    def generate(self, input_ids, max_new_tokens=2):
        for _ in range(max_new_tokens):
            hidden, logits = self(input_ids)
            input_ids = torch.cat([input_ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        return hidden


class Retriever(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = TinyCausalLM()

    def encode_general(self, input_ids):
        hidden = self.encoder.generate(input_ids)  # <- no_grad
        return nn.functional.normalize(hidden[:, -1], dim=-1)


model = Retriever()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
qry = torch.randint(0, 12, (4, 5))
psg = torch.randint(0, 12, (4, 5))
for step in range(3):
    optimizer.zero_grad()
    q_reps, p_reps = model.encode_general(qry), model.encode_general(psg)
    scores = q_reps @ p_reps.T / 0.05
    loss = nn.functional.cross_entropy(scores, torch.arange(4))
    loss.backward()
    optimizer.step()
    print(step, round(loss.item(), 4))
