# Mamba `slow_forward` uses inplace operations causing errors in the backward pass
# https://github.com/huggingface/transformers/issues/29526  (fix: PR #29563 "Mamba `slow_forward` gradient fix")
# What went wrong: training MambaForCausalLM on the pure-PyTorch path (slow_forward) with the default
#   use_cache=True. MambaMixer.slow_forward takes the initial SSM state straight from the cache
#   (ssm_state = cache_params.ssm_states[layer_idx]); the first recurrence step saves that tensor for
#   backward, and the end of slow_forward writes the final state back into the same cache tensor with
#   .copy_(). loss.backward() then fails: "one of the variables needed for gradient computation has been
#   modified by an inplace operation".
# Fix (PR #29563): clone the initial ssm_state obtained from the cache:
#   ssm_state = cache_params.ssm_states[self.layer_idx].clone()
# Plain-torch rewrite of transformers' modeling_mamba.py (v4.39.0.dev0) keeping its class/function names.
import torch
import torch.nn as nn

torch.manual_seed(0)


class MambaConfig:
    def __init__(self, vocab_size=50, hidden_size=16, state_size=8, num_hidden_layers=2, expand=2,
                 conv_kernel=4, use_bias=False, use_conv_bias=True, use_cache=True):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.state_size = state_size
        self.num_hidden_layers = num_hidden_layers
        self.intermediate_size = expand * hidden_size
        self.conv_kernel = conv_kernel
        self.time_step_rank = max(1, hidden_size // 16)
        self.use_bias = use_bias
        self.use_conv_bias = use_conv_bias
        self.use_cache = use_cache


class MambaCache:
    def __init__(self, config, batch_size, dtype=torch.float32, device=None):
        self.seqlen_offset = 0
        self.dtype = dtype
        self.conv_states = {
            i: torch.zeros(batch_size, config.intermediate_size, config.conv_kernel, device=device, dtype=dtype)
            for i in range(config.num_hidden_layers)
        }
        self.ssm_states = {
            i: torch.zeros(batch_size, config.intermediate_size, config.state_size, device=device, dtype=dtype)
            for i in range(config.num_hidden_layers)
        }


class MambaMixer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.ssm_state_size = config.state_size
        self.conv_kernel_size = config.conv_kernel
        self.intermediate_size = config.intermediate_size
        self.time_step_rank = config.time_step_rank
        self.layer_idx = layer_idx
        self.use_conv_bias = config.use_conv_bias
        self.conv1d = nn.Conv1d(self.intermediate_size, self.intermediate_size, bias=config.use_conv_bias,
                                kernel_size=config.conv_kernel, groups=self.intermediate_size,
                                padding=config.conv_kernel - 1)
        self.act = nn.SiLU()
        self.in_proj = nn.Linear(self.hidden_size, self.intermediate_size * 2, bias=config.use_bias)
        self.x_proj = nn.Linear(self.intermediate_size, self.time_step_rank + self.ssm_state_size * 2, bias=False)
        self.dt_proj = nn.Linear(self.time_step_rank, self.intermediate_size, bias=True)
        A = torch.arange(1, self.ssm_state_size + 1, dtype=torch.float32)[None, :]
        A = A.expand(self.intermediate_size, -1).contiguous()
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(self.intermediate_size))
        self.out_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=config.use_bias)

    def slow_forward(self, input_states, cache_params=None):
        batch_size, seq_len, _ = input_states.shape
        dtype = input_states.dtype
        # 1. Gated MLP's linear projection
        projected_states = self.in_proj(input_states).transpose(1, 2)
        hidden_states, gate = projected_states.chunk(2, dim=1)

        # 2. Convolution sequence transformation
        if cache_params is not None:
            ssm_state = cache_params.ssm_states[self.layer_idx].clone()
            if cache_params.seqlen_offset > 0:
                conv_state = cache_params.conv_states[self.layer_idx]
                conv_state = torch.roll(conv_state, shifts=-1, dims=-1)
                conv_state[:, :, -1] = hidden_states[:, :, 0]
                cache_params.conv_states[self.layer_idx].copy_(conv_state)
                hidden_states = torch.sum(conv_state * self.conv1d.weight[:, 0, :], dim=-1)
                if self.use_conv_bias:
                    hidden_states += self.conv1d.bias
                hidden_states = self.act(hidden_states).to(dtype).unsqueeze(-1)
            else:
                conv_state = nn.functional.pad(hidden_states, (self.conv_kernel_size - hidden_states.shape[-1], 0))
                cache_params.conv_states[self.layer_idx].copy_(conv_state)
                hidden_states = self.act(self.conv1d(hidden_states)[..., :seq_len])
        else:
            ssm_state = torch.zeros((batch_size, self.intermediate_size, self.ssm_state_size),
                                    device=hidden_states.device, dtype=dtype)
            hidden_states = self.act(self.conv1d(hidden_states)[..., :seq_len])

        # 3. State Space Model sequence transformation
        ssm_parameters = self.x_proj(hidden_states.transpose(1, 2))
        time_step, B, C = torch.split(ssm_parameters, [self.time_step_rank, self.ssm_state_size, self.ssm_state_size], dim=-1)
        discrete_time_step = self.dt_proj(time_step)
        discrete_time_step = nn.functional.softplus(discrete_time_step).transpose(1, 2)
        A = -torch.exp(self.A_log.float())
        discrete_A = torch.exp(A[None, :, None, :] * discrete_time_step[:, :, :, None])
        discrete_B = discrete_time_step[:, :, :, None] * B[:, None, :, :].float()
        deltaB_u = discrete_B * hidden_states[:, :, :, None].float()

        scan_outputs = []
        for i in range(seq_len):
            ssm_state = discrete_A[:, :, i, :] * ssm_state + deltaB_u[:, :, i, :]
            scan_output = torch.matmul(ssm_state.to(dtype), C[:, i, :].unsqueeze(-1))
            scan_outputs.append(scan_output[:, :, 0])
        scan_output = torch.stack(scan_outputs, dim=-1)
        scan_output = scan_output + (hidden_states * self.D[None, :, None])
        scan_output = (scan_output * self.act(gate))

        if cache_params is not None:
            cache_params.ssm_states[self.layer_idx].copy_(ssm_state)

        # 4. Final linear projection
        contextualized_states = self.out_proj(scan_output.transpose(1, 2))
        return contextualized_states

    def forward(self, hidden_states, cache_params=None):
        # cuda_kernels_forward is unavailable (no mamba-ssm / causal-conv1d): the slow path is used
        return self.slow_forward(hidden_states, cache_params)


class MambaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class MambaBlock(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.norm = MambaRMSNorm(config.hidden_size)
        self.mixer = MambaMixer(config, layer_idx=layer_idx)

    def forward(self, hidden_states, cache_params=None):
        residual = hidden_states
        hidden_states = self.norm(hidden_states)
        hidden_states = self.mixer(hidden_states, cache_params=cache_params)
        return residual + hidden_states


class MambaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([MambaBlock(config, layer_idx=idx) for idx in range(config.num_hidden_layers)])
        self.norm_f = MambaRMSNorm(config.hidden_size)

    def forward(self, input_ids, cache_params=None, use_cache=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        inputs_embeds = self.embeddings(input_ids)
        if cache_params is None and use_cache:
            cache_params = MambaCache(self.config, inputs_embeds.size(0), device=inputs_embeds.device,
                                      dtype=inputs_embeds.dtype)
        hidden_states = inputs_embeds
        for mixer_block in self.layers:
            hidden_states = mixer_block(hidden_states, cache_params=cache_params)
        if use_cache:
            cache_params.seqlen_offset += inputs_embeds.shape[1]
        hidden_states = self.norm_f(hidden_states)
        return hidden_states, cache_params


class MambaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.backbone = MambaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.lm_head.weight = self.backbone.embeddings.weight

    def forward(self, input_ids, labels=None, cache_params=None, use_cache=None):
        hidden_states, cache_params = self.backbone(input_ids, cache_params=cache_params, use_cache=use_cache)
        logits = self.lm_head(hidden_states).float()
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = nn.functional.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return loss, logits, cache_params


config = MambaConfig()
model = MambaForCausalLM(config)
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

input_ids = torch.randint(0, config.vocab_size, (2, 12))
loss, logits, _ = model(input_ids, labels=input_ids)
print("loss:", loss.item())
loss.backward()
optimizer.step()
print("A_log grad norm:", model.backbone.layers[0].mixer.A_log.grad.norm().item())
