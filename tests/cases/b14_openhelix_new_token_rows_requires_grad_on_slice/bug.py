"""OpenHelix, a dual-system vision-language-action model (OpenHelix-Team/OpenHelix#2): after freezing the multimodal LLM,
the training script re-enables the action heads by name and, for the embeddings of the added special tokens, writes
`p[32003:].requiers_grad = True`, an attribute set on a temporary slice (and misspelt), so embed_tokens stays frozen:
the new <ACT> token rows never learn. The fix sets requires_grad on the Parameter itself."""
import torch
import torch.nn.functional as F
from torch import nn


class TinyLlavaForAction(nn.Module):
    def __init__(self, vocab=32008, hidden=16, act_dim=7):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.text_hidden_fcs = nn.Linear(hidden, hidden)
        self.pred_act_mlps = nn.Linear(hidden, hidden)
        self.pred_pos_act = nn.Linear(hidden, 3)
        self.pred_rot_act = nn.Linear(hidden, 3)
        self.pred_gripper_act = nn.Linear(hidden, 1)

    def forward(self, input_ids, act_token_id=32004):
        hidden_states = self.layers(self.embed_tokens(input_ids))
        act_hidden = hidden_states[input_ids == act_token_id]
        h = F.relu(self.pred_act_mlps(self.text_hidden_fcs(act_hidden)))
        return torch.cat([self.pred_pos_act(h), self.pred_rot_act(h), torch.sigmoid(self.pred_gripper_act(h))], -1)


torch.manual_seed(0)
model = TinyLlavaForAction()
model.requires_grad_(False)
for n, p in model.named_parameters():
    if any([x in n for x in ["text_hidden_fcs", "pred_act_mlps", "pred_pos_act", "pred_rot_act", "pred_gripper_act"]]):
        p.requires_grad = True
    if "embed_tokens.weight" in n:
        p[32003:].requiers_grad = True  # <- no_update
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
input_ids = torch.randint(0, 32000, (4, 6))
input_ids[:, -1] = 32004  # the <ACT> token
target_actions = torch.rand(4, 7)
act_rows_before = model.embed_tokens.weight[32003:].detach().clone()
for step in range(3):
    loss = F.mse_loss(model(input_ids), target_actions)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print(f"new token rows require grad: {model.embed_tokens.weight.requires_grad}; "
      f"changed: {not torch.equal(act_rows_before, model.embed_tokens.weight[32003:])}")
