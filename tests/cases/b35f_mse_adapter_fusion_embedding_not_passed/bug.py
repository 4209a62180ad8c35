# MSE-Adapter style: a frozen causal LM is fine-tuned only through a small
# multimodal adapter whose output ("fusion embedding") is meant to be prepended
# to the token embeddings via the LM's `input_fusion` argument.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, HID, PREFIX = 50, 32, 4


class TinyCausalLM(nn.Module):
    """Stand-in for the re-written ChatGLM3 forward that accepts input_fusion."""

    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HID)
        self.encoder = nn.GRU(HID, HID, batch_first=True)
        self.output_layer = nn.Linear(HID, VOCAB, bias=False)

    def forward(self, input_ids, input_fusion=None, labels=None):
        h = self.word_embeddings(input_ids)
        if input_fusion is not None:
            h = torch.cat([input_fusion, h], dim=1)
        h, _ = self.encoder(h)
        logits = self.output_layer(h)[:, -input_ids.size(1):]
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), labels[:, 1:].reshape(-1))
        return loss


class MultimodalAdapter(nn.Module):
    def __init__(self, a_dim=12, v_dim=20):
        super().__init__()
        self.audio_proj = nn.Linear(a_dim, HID)
        self.video_proj = nn.Linear(v_dim, HID)
        self.fuse = nn.Linear(2 * HID, PREFIX * HID)

    def forward(self, audio, video):
        z = torch.cat([self.audio_proj(audio), self.video_proj(video)], dim=-1)
        return self.fuse(torch.tanh(z)).view(-1, PREFIX, HID)


class TextModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = TinyCausalLM()
        for p in self.model.parameters():  # the LLM stays frozen
            p.requires_grad = False
        self.adapter = MultimodalAdapter()

    def forward(self, opt_tokens, labels, audio, video):
        fusion_embedding = self.adapter(audio, video)
        output = self.model(input_ids=opt_tokens, labels=labels)  # <- unused_parameter
        return output


net = TextModel()
optimizer = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=1e-3)

tokens = torch.randint(0, VOCAB, (8, 10))
audio, video = torch.randn(8, 12), torch.randn(8, 20)

for step in range(3):
    optimizer.zero_grad()
    loss = net(tokens, tokens, audio, video)
    loss.backward()
    optimizer.step()
    print(step, loss.item(), net.adapter.fuse.weight.grad.abs().sum().item())
