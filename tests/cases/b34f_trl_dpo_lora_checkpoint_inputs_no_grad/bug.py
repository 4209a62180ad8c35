"""huggingface/trl issue #801 "DPO and accelerate", https://github.com/huggingface/trl/issues/801
(duplicates #731 and #814): DPO training of a LoRA policy (peft) with gradient checkpointing on dies in
loss.backward() with "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn".
Why: get_peft_model freezes every base weight, the input embeddings included, so the hidden states that enter
the first checkpointed decoder layer do not require grad. The (reentrant) checkpoint runs the layer under
no_grad and only attaches a graph to its output when one of its inputs requires grad, so the LoRA adapters
inside the layers are cut off, the frozen lm_head adds nothing, and the DPO loss has no graph at all.
(The workaround posted in the thread, losses.requires_grad_(True), only hides the error: the policy never learns.)
Fix (trl PR #927 "fix DPO + GC issues", closing the issue): when gradient checkpointing is on, DPOTrainer calls
model.enable_input_require_grads(), i.e. registers a forward hook on the input embeddings that makes their
output require grad. The Llama/peft model is a tiny hand-written causal LM with LoRA linears; data are random
token ids; the reference model is the same model with its adapters disabled, as DPOTrainer does for peft."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
torch.set_num_threads(1)
VOCAB, D, T = 32, 16, 10


class LoraLinear(nn.Module):
    def __init__(self, d_in, d_out, r=4):
        super().__init__()
        self.base_layer = nn.Linear(d_in, d_out)
        self.lora_A = nn.Parameter(torch.randn(r, d_in) * 0.1)
        self.lora_B = nn.Parameter(torch.zeros(d_out, r))
        self.disable_adapters = False

    def forward(self, x):
        out = self.base_layer(x)
        if self.disable_adapters:
            return out
        return out + (x @ self.lora_A.t()) @ self.lora_B.t()


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(D)
        self.mlp = LoraLinear(D, D)

    def forward(self, h):
        return h + torch.tanh(self.mlp(self.input_layernorm(h)))


class TinyCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(2)])
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        self.gradient_checkpointing = False

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                h = checkpoint(layer, h, use_reentrant=True)  # <- no_grad
            else:
                h = layer(h)
        return self.lm_head(h)


def get_peft_model(model):
    for name, p in model.named_parameters():
        p.requires_grad_("lora_" in name)
    return model


def set_adapters(model, disabled):
    for m in model.modules():
        if isinstance(m, LoraLinear):
            m.disable_adapters = disabled


def get_batch_logps(logits, labels):
    logits, labels = logits[:, :-1, :], labels[:, 1:]
    per_token_logps = torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
    return per_token_logps.sum(-1)


def dpo_loss(pc, pr, rc, rr, beta=0.1):
    logits = (pc - pr) - (rc - rr)
    return -F.logsigmoid(beta * logits).mean()


model = get_peft_model(TinyCausalLM())
gradient_checkpointing = True
if gradient_checkpointing:
    model.gradient_checkpointing = True
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-2)
lora_B0 = model.layers[0].mlp.lora_B.detach().clone()

model.train()
chosen = torch.randint(0, VOCAB, (4, T))
rejected = torch.randint(0, VOCAB, (4, T))
batch = torch.cat([chosen, rejected])
for step in range(4):
    all_logps = get_batch_logps(model(batch), batch)
    with torch.no_grad():
        set_adapters(model, True)
        ref_logps = get_batch_logps(model(batch), batch)
        set_adapters(model, False)
    loss = dpo_loss(all_logps[:4], all_logps[4:], ref_logps[:4], ref_logps[4:])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} dpo loss {loss.item():.4f}")

print("lora_B of layer 0 changed:", not torch.equal(lora_B0, model.layers[0].mlp.lora_B.detach()))
