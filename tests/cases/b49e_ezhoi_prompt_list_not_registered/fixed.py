# Report: ChelsieLei/EZ-HOI issue #9 "Issue about model parameters"
#   https://github.com/ChelsieLei/EZ-HOI/issues/9
# What went wrong: MultiModalPromptLearner keeps the learnable text-class prompts
#   txtcls_ctx_pt in a plain Python list of nn.Parameter. nn.Module does not register
#   parameters held in a list, so they are missing from named_parameters() (and the
#   reporter found them missing from the released checkpoints / state_dict). The
#   training script builds the AdamW groups from clip_head.named_parameters(), so the
#   prompts get a .grad every step but are never updated: they stay at their random
#   init, in training and at inference.
# Fix (maintainer, ChelsieLei): "a more precise way for the initialization should be
#   self.txtcls_ctx_pt = nn.ParameterList([nn.Parameter(torch.randn(n_ctx, ctx_dim)) ...])"
import copy
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def _get_clones(module, N):
    return nn.ModuleList([copy.deepcopy(module) for i in range(N)])


class Adapter(nn.Module):
    """Prompt adapter: prompts attend to a prior (text-class features)."""
    def __init__(self, input_size, pt_tune=False, prior_size=None, down_size=16):
        super().__init__()
        self.n_embd = input_size
        self.down_size = down_size
        self.down_proj_mem = nn.Linear(self.n_embd, self.down_size)
        self.non_linear_func = nn.ReLU()
        self.up_proj_mem = nn.Linear(self.down_size, self.n_embd)
        self.down_proj_prior = nn.Linear(prior_size or input_size, self.down_size)
        self.mhsa = nn.MultiheadAttention(self.down_size, 2)
        with torch.no_grad():
            if pt_tune is False:
                nn.init.kaiming_uniform_(self.down_proj_mem.weight, a=math.sqrt(5))
                nn.init.zeros_(self.down_proj_mem.bias)

    def forward(self, x, prior=None):
        tempa = self.down_proj_mem(x)                     # L x bs x d
        prior, mask = prior
        context = self.down_proj_prior(prior).transpose(0, 1)
        tempa = self.non_linear_func(tempa)
        tempa = tempa + self.mhsa(tempa, context, context)[0]
        up = self.up_proj_mem(tempa)
        return up + x


class Args:
    N_CTX = 2
    tune_LY = 3
    txtcls_pt = True
    de_txtcls = False
    seperate_pre_pt = False
    emb_dim = 16


class MultiModalPromptLearner(nn.Module):
    def __init__(self, args, n_cls, ctx_dim=32, vis_dim=48):
        super().__init__()
        n_ctx = args.N_CTX
        self.compound_prompts_depth = args.tune_LY
        self.proj = nn.Linear(ctx_dim, vis_dim)

        self.txtcls_pt = args.txtcls_pt
        self.de_txtcls = args.de_txtcls
        self.compound_prompts_text = []
        single_layer = nn.Linear(ctx_dim, vis_dim)
        self.compound_prompt_proj_vis = _get_clones(single_layer, self.compound_prompts_depth - 1)

        if self.txtcls_pt is True:
            self.txtcls_pt_adapter = Adapter(ctx_dim, pt_tune=True, down_size=args.emb_dim)
            self.txtcls_ctx_pt = nn.ParameterList([nn.Parameter(torch.randn(n_ctx, ctx_dim))
                                                   for _ in range(self.compound_prompts_depth)])

        self.register_buffer("token_prompts", torch.randn(n_cls, 6, ctx_dim))
        self.n_cls = n_cls
        self.n_ctx = n_ctx

    def forward(self, txtcls_feat=None, select_HOI_index=None):
        visual_deep_prompts = []
        for index, layer in enumerate(self.compound_prompt_proj_vis):
            temp_vis_pt = layer(self.txtcls_ctx_pt[index + 1].to(self.proj.weight.device))
            visual_deep_prompts.append(temp_vis_pt)
        first_ly_vis_pt = self.proj(self.txtcls_ctx_pt[0].to(self.proj.weight.device))

        txtcls_pt_list = []
        for index in range(len(self.txtcls_ctx_pt)):
            temp_pt = self.txtcls_pt_adapter(
                self.txtcls_ctx_pt[index].to(self.proj.weight.device).unsqueeze(1).repeat(1, len(select_HOI_index), 1),
                (txtcls_feat[select_HOI_index].to(self.proj.weight.device).unsqueeze(1)
                 .repeat(1, len(self.txtcls_ctx_pt[index]), 1), None))
            txtcls_pt_list.append(temp_pt)

        prompts = self.token_prompts
        origin_ctx = prompts[:, -(self.n_ctx):, :].clone().detach()
        prompts = torch.cat([prompts[:, :-(self.n_ctx), :], txtcls_pt_list[0].permute(1, 0, 2)], dim=1)
        return prompts, first_ly_vis_pt, self.compound_prompts_text, visual_deep_prompts, txtcls_pt_list[1:], origin_ctx


class CustomCLIP(nn.Module):
    """Stand-in for the CLIP text/image towers that consume the deep prompts."""
    def __init__(self, args, n_cls, ctx_dim=32, vis_dim=48, embed_dim=24):
        super().__init__()
        self.prompt_learner = MultiModalPromptLearner(args, n_cls, ctx_dim, vis_dim)
        self.text_encoder = nn.Linear(ctx_dim, embed_dim)   # frozen CLIP text tower
        self.image_encoder = nn.Linear(vis_dim, embed_dim)  # frozen CLIP visual tower
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, image_feat, txtcls_feat, select_HOI_index):
        prompts, first_vis, _, deep_vis, deep_txt, _ = self.prompt_learner(txtcls_feat, select_HOI_index)
        text = prompts.mean(1) + sum(t.mean(0) for t in deep_txt)
        text_features = F.normalize(self.text_encoder(text), dim=-1)
        vis_prompt = first_vis.mean(0) + sum(v.mean(0) for v in deep_vis)
        image_features = F.normalize(self.image_encoder(image_feat + vis_prompt), dim=-1)
        return self.logit_scale.exp() * image_features @ text_features.t()


class UPT(nn.Module):
    def __init__(self, args, n_cls):
        super().__init__()
        self.detector = nn.Linear(8, 8)   # frozen DETR stand-in
        self.clip_head = CustomCLIP(args, n_cls)


if __name__ == '__main__':
    n_cls = 6
    upt = UPT(Args(), n_cls)

    # main_tip_finetune.py: freeze everything except prompt learner / adapters
    for p in upt.detector.parameters():
        p.requires_grad = False
    for n, p in upt.clip_head.named_parameters():
        if 'adaptermlp' in n or "prompt_learner" in n:
            p.requires_grad = True
        else:
            p.requires_grad = False
    param_dicts = [
        {"params": [p for n, p in upt.clip_head.named_parameters() if p.requires_grad]},
        {"params": [p for n, p in upt.named_parameters() if p.requires_grad and 'clip_head' not in n],
         "lr": 1e-3},
    ]
    optim = torch.optim.AdamW(param_dicts, lr=1e-2, weight_decay=1e-4)

    image_feat = torch.randn(4, 48)
    txtcls_feat = torch.randn(n_cls, 32)
    select_HOI_index = list(range(n_cls))
    labels = F.one_hot(torch.tensor([0, 2, 3, 5]), n_cls).float()

    pl = upt.clip_head.prompt_learner
    init_prompt = pl.txtcls_ctx_pt[0].detach().clone()
    for step in range(5):
        logits = upt.clip_head(image_feat, txtcls_feat, select_HOI_index)
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        optim.zero_grad()
        loss.backward()
        optim.step()
        print('step', step, 'loss', round(loss.item(), 4))

    print('txtcls_ctx_pt in state_dict:', any('txtcls_ctx_pt' in k for k in upt.state_dict()))
    print('txtcls_ctx_pt[0] changed after training:', not torch.equal(init_prompt, pl.txtcls_ctx_pt[0].detach()))
