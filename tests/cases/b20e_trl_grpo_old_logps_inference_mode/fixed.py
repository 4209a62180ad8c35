"""TRL GRPOTrainer with num_iterations > 1 (huggingface/trl#2953, https://github.com/huggingface/trl/issues/2953;
fixed by PR #2987): with DeepSpeed ZeRO-3, setting num_iterations > 1 makes the first training step fail inside
the policy's forward (at a decoder layer's input_layernorm) with "RuntimeError: Inference tensors cannot be saved
for backward"; num_iterations = 1 runs fine.
Why: _generate_and_score_completions computes old_per_token_logps with the policy model itself (only when
num_iterations > 1) inside torch.inference_mode(). Under ZeRO-3 that forward is what gathers the partitioned
parameters, and small parameters (norm weights, here all of them) stay gathered: their data is now made of
inference tensors, which the next, gradient-tracked forward must save for backward.
Fix (PR #2987, "inference_mode to no_grad when computing old_per_token_logps"): use torch.no_grad() there.
The ZeRO-3 gather below is a stand-in for DeepSpeed's partitioned parameters (persistence threshold)."""
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn


# --- DeepSpeed ZeRO-3, in short: parameters live in shards; a pre-forward hook all-gathers them into param.data.
# Parameters below stage3_param_persistence_threshold stay gathered after that (all of this small model's).
def _fetch_sub_module_params(module, args):
    for p in module.parameters(recurse=False):
        if p.numel() == 0:  # ds_status NOT_AVAILABLE
            p.data = p.ds_tensor.clone().view(p.ds_shape)  # all_gather into a fresh buffer


def zero3_init(model):
    for p in model.parameters():
        p.ds_tensor, p.ds_shape = p.detach().clone().flatten(), p.shape
        p.data = torch.empty(0)
    for m in model.modules():
        m.register_forward_pre_hook(_fetch_sub_module_params)
    return model


@contextmanager
def unwrap_model_for_generation(model):
    """trl.models.unwrap_model_for_generation under ZeRO-3 (deepspeed.zero.GatheredParameters), in short."""
    gathered = [p for p in model.parameters() if p.numel() == 0]
    for p in gathered:
        p.data = p.ds_tensor.clone().view(p.ds_shape)
    yield model
    for p in gathered:  # partitioned again on exit
        p.ds_tensor = p.detach().clone().flatten()
        p.data = torch.empty(0)


# --- a tiny Qwen2-like causal LM (transformers), in short
class Qwen2RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(hidden_size)), eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class Qwen2DecoderLayer(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.input_layernorm = Qwen2RMSNorm(hidden_size)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, 2 * hidden_size), nn.SiLU(), nn.Linear(2 * hidden_size, hidden_size))

    def forward(self, hidden_states):
        return hidden_states + self.mlp(self.input_layernorm(hidden_states))


class Qwen2ForCausalLM(nn.Module):
    def __init__(self, vocab_size=20, hidden_size=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList([Qwen2DecoderLayer(hidden_size) for _ in range(2)])
        self.norm = Qwen2RMSNorm(hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids, attention_mask=None, logits_to_keep=0):
        hidden_states = self.embed_tokens(input_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return self.lm_head(self.norm(hidden_states)[:, -logits_to_keep:, :])

    @torch.no_grad()
    def generate(self, input_ids, max_new_tokens=6):
        for _ in range(max_new_tokens):
            next_token = torch.multinomial(F.softmax(self(input_ids)[:, -1], dim=-1), 1)
            input_ids = torch.cat([input_ids, next_token], dim=1)
        return input_ids


# --- trl's GRPOTrainer (0.16), in short
class GRPOTrainer:
    def __init__(self, model, reward_func, num_generations=4, num_iterations=2, beta=0.0, epsilon=0.2):
        self.model, self.ref_model, self.reward_func = model, None, reward_func
        self.num_generations, self.num_iterations, self.beta, self.epsilon = num_generations, num_iterations, beta, epsilon
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def _get_per_token_logps(self, model, input_ids, attention_mask, logits_to_keep):
        logits = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=logits_to_keep + 1)
        logits = logits[:, :-1, :]
        input_ids = input_ids[:, -logits_to_keep:]
        return torch.gather(logits.log_softmax(-1), 2, input_ids.unsqueeze(-1)).squeeze(-1)

    def _generate_and_score_completions(self, prompt_ids):
        prompt_ids = prompt_ids.repeat_interleave(self.num_generations, dim=0)
        with unwrap_model_for_generation(self.model) as unwrapped_model:
            prompt_completion_ids = unwrapped_model.generate(prompt_ids)
        completion_ids = prompt_completion_ids[:, prompt_ids.size(1):]
        attention_mask = torch.ones_like(prompt_completion_ids)
        logits_to_keep = completion_ids.size(1)
        with torch.no_grad():
            if self.num_iterations > 1:
                old_per_token_logps = self._get_per_token_logps(self.model, prompt_completion_ids, attention_mask, logits_to_keep)
            else:
                old_per_token_logps = None
            if self.beta == 0.0:
                ref_per_token_logps = None
            else:
                ref_per_token_logps = self._get_per_token_logps(self.ref_model, prompt_completion_ids, attention_mask, logits_to_keep)
        rewards = self.reward_func(completion_ids)
        mean_grouped = rewards.view(-1, self.num_generations).mean(dim=1).repeat_interleave(self.num_generations)
        std_grouped = rewards.view(-1, self.num_generations).std(dim=1).repeat_interleave(self.num_generations)
        advantages = (rewards - mean_grouped) / (std_grouped + 1e-4)
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "old_per_token_logps": old_per_token_logps,
                "ref_per_token_logps": ref_per_token_logps, "advantages": advantages}

    def compute_loss(self, inputs):
        prompt_ids, completion_ids = inputs["prompt_ids"], inputs["completion_ids"]
        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.ones_like(input_ids)
        logits_to_keep = completion_ids.size(1)
        per_token_logps = self._get_per_token_logps(self.model, input_ids, attention_mask, logits_to_keep)
        advantages = inputs["advantages"]
        old_per_token_logps = inputs["old_per_token_logps"] if self.num_iterations > 1 else per_token_logps.detach()
        coef_1 = torch.exp(per_token_logps - old_per_token_logps)
        coef_2 = torch.clamp(coef_1, 1 - self.epsilon, 1 + self.epsilon)
        per_token_loss = -torch.min(coef_1 * advantages.unsqueeze(1), coef_2 * advantages.unsqueeze(1))
        return per_token_loss.mean()

    def train(self, prompts, steps=2):
        for step in range(steps):
            inputs = self._generate_and_score_completions(prompts)
            for iteration in range(self.num_iterations):
                loss = self.compute_loss(inputs)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                print(f"step {step} iteration {iteration} loss {loss.item():.4f}")


def reward_num_unique_tokens(completion_ids):
    return torch.tensor([float(len(set(c.tolist()))) for c in completion_ids])


torch.manual_seed(0)
model = zero3_init(Qwen2ForCausalLM())
trainer = GRPOTrainer(model, reward_num_unique_tokens, num_iterations=2)
prompts = torch.randint(0, 20, (2, 5))
trainer.train(prompts)
before = model.lm_head.weight.detach().clone()
trainer.train(prompts, steps=1)
print("lm_head changed:", not torch.equal(before, model.lm_head.weight))
