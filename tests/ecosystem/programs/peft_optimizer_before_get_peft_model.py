"""PEFT PR #676 "FEAT: Make LoRA work with custom models", comment by a user fine-tuning AdaSpeech,
https://github.com/huggingface/peft/pull/676: the user's `load_pretrain(args, configs, device, train=True)` builds
the model AND its optimizer, and only afterwards wraps the model with nn.DataParallel and
`peft.get_peft_model(model, LoraConfig(r=8, target_modules=["module.speaker_emb"]))`. They saw
`model.base_model.model.module.speaker_emb.lora_embedding_A` stay all zeros: "Its value will not be updated".
Why: get_peft_model injects NEW parameters (lora_embedding_A/B) into the model and freezes every base weight, but the
optimizer was built before, from the base weights only. The LoRA tensors get gradients at every backward, yet they are
in no optimizer, so they never change; the base weights the optimizer holds are frozen and get no gradient, so
nothing is trained at all.
Fix (this twin): build the optimizer after get_peft_model, from the wrapped model's parameters.
The AdaSpeech model is a tiny stand-in (speaker embedding + encoder/decoder linears); load_pretrain mirrors the
repo's get_model helper without the checkpoint restore."""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import peft
import torch
import torch.nn as nn


# --- AdaSpeech (FastSpeech2-style repo) stand-in ----------------------------------------------
class AdaSpeech(nn.Module):
    def __init__(self, n_vocab=20, n_speakers=6, d_model=16, n_mel=8):
        super().__init__()
        self.src_emb = nn.Embedding(n_vocab, d_model)
        self.speaker_emb = nn.Embedding(n_speakers, d_model)
        self.encoder = nn.Linear(d_model, d_model)
        self.decoder = nn.Linear(d_model, n_mel)

    def forward(self, speakers, texts):
        x = torch.relu(self.encoder(self.src_emb(texts)))
        x = x + self.speaker_emb(speakers).unsqueeze(1)
        return self.decoder(x)


class AdaSpeechLoss(nn.Module):
    def forward(self, mel_pred, mel_target):
        return nn.functional.l1_loss(mel_pred, mel_target)


def load_pretrain(args, configs, device, train=False):
    model = AdaSpeech().to(device)
    # (the real helper restores args.restore_step's checkpoint into the model here)
    if train:
        optimizer = None  # built in main() once get_peft_model has added the LoRA weights
        model.train()
        return model, optimizer
    model.eval()
    return model, None


def get_param_num(model):
    return sum(p.numel() for p in model.parameters())


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device("cpu")
    args, configs = None, {"lr": 1e-2}

    # Prepare model
    model, optimizer = load_pretrain(args, configs, device, train=True)
    model = nn.DataParallel(model)
    model = model.to(device)
    peft_config = peft.LoraConfig(r=8, target_modules=["module.speaker_emb"])
    model = peft.get_peft_model(model, peft_config)
    model.print_trainable_parameters()
    optimizer = torch.optim.Adam(model.parameters(), lr=configs["lr"], betas=(0.9, 0.98))
    num_param = get_param_num(model)
    Loss = AdaSpeechLoss().to(device)
    print("Number of AdaSpeech Parameters:", num_param)

    batches = [(torch.randint(0, 6, (4,)), torch.randint(0, 20, (4, 5)), torch.randn(4, 5, 8)) for _ in range(3)]
    lora_A = model.base_model.model.module.speaker_emb.lora_embedding_A["default"]
    before = lora_A.detach().clone()
    lora_B = model.base_model.model.module.speaker_emb.lora_embedding_B["default"]
    before_B = lora_B.detach().clone()
    for step, (speakers, texts, mels) in enumerate(batches, 1):
        output = model(speakers, texts)
        total_loss = Loss(output, mels)
        total_loss.backward()
        saw_grad = lora_A.grad is not None
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {total_loss.item():.6f} lora_embedding_A.grad is None: {not saw_grad}")

    print("lora_embedding_A changed:", not torch.equal(before, lora_A.detach()))
    print("lora_embedding_A still all zeros:", bool((lora_A == 0).all()))
    print("lora_embedding_B changed:", not torch.equal(before_B, lora_B.detach()))
    if os.environ.get("REALWORLD_STATE"):
        torch.save({n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
