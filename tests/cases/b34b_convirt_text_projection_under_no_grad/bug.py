"""ConVIRT-pytorch (edreisMD/ConVIRT-pytorch) issue #7 "Text encoder in 'no_grad' block?",
https://github.com/edreisMD/ConVIRT-pytorch/issues/7: in models/model.py, ModelCLR.text_encoder runs the mean
pooling and the text projection MLP (bert_l1, bert_l2) under `with torch.no_grad():`, so the image-text NT-Xent
loss sends no gradient into the text tower: the freshly initialised projection head and the unfrozen BERT layers
stay as they are although train.py gives model.parameters() to Adam. A commenter removed the no_grad block and the
loss "go down quickly"; another asked why the FC head after the text embeddings is wrapped. Fix: compute the text
projection outside no_grad. BERT and ResNet are small stand-ins; the tokenised reports and images are random, and
the `.half()` cast (apex O2 on GPU) is left out so the script runs on CPU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class TinyBert(nn.Module):  # stand-in for AutoModel.from_pretrained(bert_base_model)
    def __init__(self, vocab=50, dim=32):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, dim)
        self.layer = nn.ModuleList([nn.Linear(dim, dim) for _ in range(2)])

    def forward(self, input_ids, attention_mask):
        h = self.embeddings(input_ids)
        for lin in self.layer:
            h = torch.tanh(lin(h))
        return (h,)


class ModelCLR(nn.Module):
    def __init__(self, out_dim=16, freeze_layers=(0,)):
        super().__init__()
        self.bert_model = TinyBert()
        for layer_idx in freeze_layers:
            for param in self.bert_model.layer[layer_idx].parameters():
                param.requires_grad = False
        self.bert_l1 = nn.Linear(32, 32)
        self.bert_l2 = nn.Linear(32, out_dim)
        self.res_features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.res_l1 = nn.Linear(8, 8)
        self.res_l2 = nn.Linear(8, out_dim)

    def mean_pooling(self, model_output, attention_mask):
        token_embeddings = model_output[0]
        mask = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
        return torch.sum(token_embeddings * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)

    def image_encoder(self, xis):
        h = self.res_features(xis).squeeze()
        x = self.res_l2(F.relu(self.res_l1(h)))
        return h, x

    def text_encoder(self, encoded_inputs):
        outputs = self.bert_model(**encoded_inputs)
        with torch.no_grad():  # <- no_grad
            sentence_embeddings = self.mean_pooling(outputs, encoded_inputs['attention_mask'])
            x = self.bert_l1(sentence_embeddings)
            x = F.relu(x)
            out_emb = self.bert_l2(x)
        return out_emb

    def forward(self, xis, encoded_inputs):
        h, zis = self.image_encoder(xis)
        zls = self.text_encoder(encoded_inputs)
        return zis, zls


def nt_xent(zis, zls, temperature=0.1, alpha=0.75):  # loss/nt_xent.py, image->text and text->image terms
    zis, zls = F.normalize(zis, dim=1), F.normalize(zls, dim=1)
    logits = zis @ zls.t() / temperature
    labels = torch.arange(len(zis))
    return alpha * F.cross_entropy(logits, labels) + (1 - alpha) * F.cross_entropy(logits.t(), labels)


model = ModelCLR()
optimizer = torch.optim.Adam(model.parameters(), 1e-3, weight_decay=1e-6)
bert_l2_before = model.bert_l2.weight.detach().clone()

for n_iter in range(5):
    optimizer.zero_grad()
    xis = torch.randn(8, 3, 16, 16)
    xls = {"input_ids": torch.randint(0, 50, (8, 12)), "attention_mask": torch.ones(8, 12, dtype=torch.long)}
    zis, zls = model(xis, xls)
    loss = nt_xent(zis, zls)
    loss.backward()
    optimizer.step()

print("loss:", round(loss.item(), 4))
print("bert_l2.weight.grad is None:", model.bert_l2.weight.grad is None)
print("bert_model.layer[1].weight.grad is None:", model.bert_model.layer[1].weight.grad is None)
print("text projection changed:", not torch.equal(bert_l2_before, model.bert_l2.weight))
