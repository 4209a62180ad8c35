"""huggingface/transformers#11903, "Problem when freezing all GPT2 model except the LM head",
https://github.com/huggingface/transformers/issues/11903

The reporter freezes GPT-2's transformer (`for p in gpt2.transformer.parameters(): p.requires_grad = False`) to
train only the LM head, and finds `gpt2.lm_head` frozen too: with `tie_word_embeddings` (GPT-2's default) the LM
head's weight *is* `transformer.wte.weight`, so freezing the embeddings freezes the head, and `lm_head` does not even
appear in `named_parameters()`. Nothing trainable is left: the loss has no graph and `loss.backward()` raises
"element 0 of tensors does not require grad and does not have a grad_fn". The maintainer's answer: the head is
tied to the embeddings; set `tie_word_embeddings=False` to give the head its own (newly initialised) weight.
A small GPT-2 written in plain torch stands in for the pretrained one.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class GPT2Config:
    def __init__(self, vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=4, tie_word_embeddings=True):
        self.vocab_size, self.n_positions, self.n_embd = vocab_size, n_positions, n_embd
        self.n_layer, self.n_head, self.tie_word_embeddings = n_layer, n_head, tie_word_embeddings


class GPT2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        layer = nn.TransformerEncoderLayer(config.n_embd, config.n_head, 4 * config.n_embd, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.h = nn.TransformerEncoder(layer, config.n_layer, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(config.n_embd)

    def forward(self, input_ids):
        T = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe(torch.arange(T))
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        return self.ln_f(self.h(x, mask=mask))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight  # tie_weights()

    def forward(self, input_ids, labels):
        logits = self.lm_head(self.transformer(input_ids))
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


gpt2 = GPT2LMHeadModel(GPT2Config(tie_word_embeddings=False))

# freeze the transformer part, train only the LM head
for p in gpt2.transformer.parameters():
    p.requires_grad = False
print("lm_head.weight.requires_grad:", gpt2.lm_head.weight.requires_grad)
print("'lm_head' in named_parameters:", any(n.startswith("lm_head") for n, _ in gpt2.named_parameters()))

optimizer = torch.optim.Adam(gpt2.lm_head.parameters(), lr=1e-2)
head_before = gpt2.lm_head.weight.detach().clone()
wte_before = gpt2.transformer.wte.weight.detach().clone()
data = torch.randint(0, 50, (8, 12))
for step in range(5):
    loss = gpt2(data, labels=data)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))
print("lm_head changed:", not torch.equal(head_before, gpt2.lm_head.weight))
print("wte unchanged (frozen):", torch.equal(wte_before, gpt2.transformer.wte.weight))
