"""Sparse mixture-of-experts language model with top-2 routing and the Switch-Transformer load-balancing
auxiliary loss, reduced from Hugging Face transformers' Mixtral
(huggingface/transformers src/transformers/models/mixtral/modeling_mixtral.py: MixtralSparseMoeBlock,
MixtralBlockSparseTop2MLP, load_balancing_loss_func, and MixtralForCausalLM.forward adding
router_aux_loss_coef * aux_loss to the LM loss). The transformers classes are written here as small
stand-ins shaped like the library code; the loop is a plain causal-LM fine-tuning loop.

Suspicious-but-correct patterns kept: router jitter multiplies the hidden states IN PLACE
(hidden_states *= uniform noise) in training; torch.topk over the softmax, then the top-k weights are
renormalised with an in-place `/=`; expert outputs are scattered into a zeros buffer with the in-place
final_hidden_states.index_add_ (so the output is built by in-place writes into a tensor that did not
require grad); tokens reach each expert through torch.where on a one-hot mask (integer indices, no
gradient) - every expert gets tokens each step; the aux loss rebuilds the mask from topk indices and
one_hot(...).float() (no gradient through the counts, only through the router probabilities); the
router_logits of every layer are returned as a tuple and concatenated; aux loss logged with .item().
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:  # transformers.MixtralConfig stand-in
    vocab_size = 32
    hidden_size = 16
    intermediate_size = 32
    num_hidden_layers = 2
    num_attention_heads = 2
    num_local_experts = 4
    num_experts_per_tok = 2
    router_jitter_noise = 0.01
    router_aux_loss_coef = 0.02
    rms_norm_eps = 1e-6


class MixtralRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class MixtralAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, hidden_states):
        bsz, q_len, _ = hidden_states.size()
        shape = (bsz, q_len, self.num_heads, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        attn_output = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)


class MixtralBlockSparseTop2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.w1 = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.w2 = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.w3 = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)

    def forward(self, hidden_states):
        current_hidden_states = F.silu(self.w1(hidden_states)) * self.w3(hidden_states)
        return self.w2(current_hidden_states)


class MixtralSparseMoeBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_dim = config.hidden_size
        self.num_experts = config.num_local_experts
        self.top_k = config.num_experts_per_tok
        # gating
        self.gate = nn.Linear(self.hidden_dim, self.num_experts, bias=False)
        self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP(config) for _ in range(self.num_experts)])
        # Jitter parameters
        self.jitter_noise = config.router_jitter_noise

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        hidden_states = hidden_states.view(-1, hidden_dim)
        # router_logits: (batch * sequence_length, n_experts)
        router_logits = self.gate(hidden_states)

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        # we cast back to the input dtype
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros(
            (batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype, device=hidden_states.device
        )
        # One hot encode the selected experts to create an expert mask
        # this will be used to easily index which expert is going to be sollicitated
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)

        # Loop over all available experts in the model and perform the computation on each expert
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            # Index the correct hidden states and compute the expert hidden state for
            # the current expert. We need to make sure to multiply the output hidden
            # states by `routing_weights` on the corresponding tokens (top-1 and top-2)
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            # However `index_add_` only support torch tensors for indexing so we'll use
            # the `top_x` tensor here.
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class MixtralDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = MixtralAttention(config)
        self.block_sparse_moe = MixtralSparseMoeBlock(config)
        self.input_layernorm = MixtralRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = MixtralRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states)
        hidden_states = residual + hidden_states
        # Fully Connected
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states, router_logits = self.block_sparse_moe(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states, router_logits


def load_balancing_loss_func(gate_logits, num_experts, top_k):
    # transformers.models.mixtral.modeling_mixtral.load_balancing_loss_func (attention_mask=None branch)
    if gate_logits is None or not isinstance(gate_logits, tuple):
        return 0
    compute_device = gate_logits[0].device
    concatenated_gate_logits = torch.cat([layer_gate.to(compute_device) for layer_gate in gate_logits], dim=0)
    routing_weights = F.softmax(concatenated_gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    # Compute the percentage of tokens routed to each experts
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    # Compute the average probability of routing to these experts
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


class MixtralForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([MixtralDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = MixtralRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, labels):
        hidden_states = self.embed_tokens(input_ids)
        all_router_logits = ()
        for decoder_layer in self.layers:
            hidden_states, router_logits = decoder_layer(hidden_states)
            all_router_logits += (router_logits,)
        logits = self.lm_head(self.norm(hidden_states)).float()
        # Shift so that tokens < n predict n
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        loss = F.cross_entropy(shift_logits.view(-1, self.config.vocab_size), shift_labels.view(-1))
        aux_loss = load_balancing_loss_func(all_router_logits, self.config.num_local_experts,
                                            self.config.num_experts_per_tok)
        loss += self.config.router_aux_loss_coef * aux_loss.to(loss.device)  # make sure to reside in the same device
        return loss, aux_loss, logits


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = Config()
    model = MixtralForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    model.train()
    for step in range(6):
        input_ids = torch.randint(0, config.vocab_size, (4, 12))
        loss, aux_loss, _ = model(input_ids, labels=input_ids)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} aux {aux_loss.item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
