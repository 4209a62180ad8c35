# Report: "lora error in stage 1" (DeepSpeed-Chat step1 SFT with --lora_dim 8 --only_optimize_lora)
# URL: https://github.com/deepspeedai/DeepSpeed/issues/3339
# What went wrong: the run on a LLaMA-style model passed --lora_dim 8 --only_optimize_lora but kept the
#   default --lora_module_name "decoder.layers." (OPT naming). convert_linear_layer_to_lora() matches module
#   names by substring, so no nn.Linear was turned into a LoRA layer; only_optimize_lora_parameters() then froze
#   every parameter, the loss had no grad_fn and model.backward(loss) raised
#   "element 0 of tensors does not require grad and does not have a grad_fn".
# Fix (thread answer): set --lora_module_name to the model's own module path ("layers." for LLaMA), found with
#   print(list(model.named_modules())).
# Plain-torch rewrite of DeepSpeed-Chat step1 main.py + utils/module/lora.py with a tiny LLaMA-like model.
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1234)


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Finetune a transformers model on a causal language modeling task")
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--weight_decay", type=float, default=0.0)
    parser.add_argument("--lora_dim", type=int, default=0, help="If > 0, use LoRA for efficient training.")
    parser.add_argument("--lora_module_name", type=str, default="decoder.layers.", help="The scope of LoRA.")
    parser.add_argument("--only_optimize_lora", action="store_true", help="Only optimize the LoRA parameters.")
    return parser.parse_args(argv)


# ---- dschat/utils/module/lora.py ----
class LinearLayer_LoRA(nn.Module):
    # an simple implementation of LoRA
    def __init__(self, weight, lora_dim=0, lora_scaling=1, lora_droppout=0, bias=None):
        super(LinearLayer_LoRA, self).__init__()
        self.weight = weight
        self.bias = bias
        if lora_dim <= 0:
            raise ValueError("You are training to use LoRA, whose reduced dim should be larger than 1")
        rows, columns = weight.shape
        self.lora_right_weight = nn.Parameter(torch.zeros(columns, lora_dim))
        self.lora_left_weight = nn.Parameter(torch.zeros(lora_dim, rows))
        self.lora_scaling = lora_scaling / lora_dim
        if lora_droppout > 0:
            self.lora_dropout = nn.Dropout(lora_droppout)
        else:
            self.lora_dropout = nn.Identity()
        self.reset_parameters()
        # disable the original weight gradient
        self.weight.requires_grad = False
        self.fuse_lora = False

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.lora_right_weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_left_weight)

    def forward(self, input):
        if self.fuse_lora:
            return F.linear(input, self.weight, self.bias)
        return F.linear(input, self.weight, self.bias) + (
            self.lora_dropout(input) @ self.lora_right_weight @ self.lora_left_weight) * self.lora_scaling


def recursive_getattr(model, module_name):
    output = model
    for name in module_name.split("."):
        output = getattr(output, name)
    return output


def recursive_setattr(model, module_name, module):
    split_list = module_name.split(".")
    output = model
    for name in split_list[:-1]:
        output = getattr(output, name)
    setattr(output, split_list[-1], module)


def convert_linear_layer_to_lora(model, part_module_name, lora_dim=0, lora_scaling=1, lora_droppout=0):
    replace_name = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and part_module_name in name:
            replace_name.append(name)
    for name in replace_name:
        module = recursive_getattr(model, name)
        tmp = LinearLayer_LoRA(module.weight, lora_dim, lora_scaling, lora_droppout, module.bias)
        recursive_setattr(model, name, tmp)
    return model


def only_optimize_lora_parameters(model):
    # turn off the gradient of all the parameters except the LoRA parameters
    for name, param in model.named_parameters():
        if "lora_right_weight" in name or "lora_left_weight" in name:
            param.requires_grad = True
        else:
            param.requires_grad = False
    return model


# ---- dschat/utils/utils.py ----
def get_optimizer_grouped_parameters(model, weight_decay, no_decay_name_list=["bias", "norm.weight"]):
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters()
                    if (not any(nd in n for nd in no_decay_name_list) and p.requires_grad)],
         "weight_decay": weight_decay},
        {"params": [p for n, p in model.named_parameters()
                    if (any(nd in n for nd in no_decay_name_list) and p.requires_grad)],
         "weight_decay": 0.0},
    ]
    return optimizer_grouped_parameters


# ---- tiny LlamaForCausalLM (module names as in transformers: model.layers.N.self_attn.q_proj ...) ----
class LlamaAttention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x):
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(att)


class LlamaMLP(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(hidden)
        self.self_attn = LlamaAttention(hidden)
        self.post_attention_layernorm = nn.LayerNorm(hidden)
        self.mlp = LlamaMLP(hidden, inter)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, vocab, hidden, inter, n_layers):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([LlamaDecoderLayer(hidden, inter) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(hidden)

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h)
        return self.norm(h)


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab=64, hidden=32, inter=64, n_layers=2):
        super().__init__()
        self.model = LlamaModel(vocab, hidden, inter, n_layers)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, labels):
        logits = self.lm_head(self.model(input_ids))
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))
        return loss


def main():
    args = parse_args(["--lora_dim", "8", "--only_optimize_lora"])  # <- autograd_error

    model = LlamaForCausalLM()
    if args.lora_dim > 0:
        model = convert_linear_layer_to_lora(model, args.lora_module_name, args.lora_dim)
        if args.only_optimize_lora:
            model = only_optimize_lora_parameters(model)

    optimizer_grouped_parameters = get_optimizer_grouped_parameters(model, args.weight_decay)
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=args.learning_rate, betas=(0.9, 0.95))

    input_ids = torch.randint(0, 64, (4, 16))
    batch = {"input_ids": input_ids, "labels": input_ids}
    model.train()
    for step in range(3):
        loss = model(**batch)
        print(f"step {step}, loss = {loss.item():.4f}")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    lora = model.model.layers[0].self_attn.q_proj
    print("lora_left_weight norm:", lora.lora_left_weight.norm().item())


if __name__ == "__main__":
    main()
