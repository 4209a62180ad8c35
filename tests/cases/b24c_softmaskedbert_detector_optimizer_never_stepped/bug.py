"""quantum00549/SoftMaskedBert issue #7 "detector_model的参数没有更新？",
https://github.com/quantum00549/SoftMaskedBert/issues/7: in model/train.py the Soft-Masked BERT trainer builds the
bi-GRU error detector with its own optimizer, `self.detector_optimizer = torch.optim.Adam(self.detector_model
.parameters())`, but the training loop only calls `self.optimizer.zero_grad()` / `self.optimizer.step()`, and
`self.optimizer` holds only softMaskedBert's parameters. The reporter (in Chinese) points out that the detector's
parameters are therefore never updated. The joint loss (gama * corrector NLL + (1 - gama) * detector BCE) does
reach the detector (its .grad is filled on every backward, and keeps accumulating since nothing zeroes it), but no
optimizer that holds it ever steps, so the detector stays at its initialisation.
Fix: step (and zero) the detector's optimizer together with the model's; here both calls are put on the lines that
already zero and step self.optimizer, so line numbers stay the same.
transformers' BertModel/BertTokenizer and the config are small stand-ins; the stand-in's word-embedding table is a
frozen lookup (see NOTES.md), and the CSV data set is replaced by random token ids."""
import torch
import torch.nn as nn


# --- transformers (BertModel, BertTokenizer) stand-in -----------------------------------------
class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.register_buffer('word_embeddings', torch.randn(vocab_size, hidden) * 0.5)

    def forward(self, input_ids):
        return self.word_embeddings[input_ids]


class BertEncoder(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)

    def forward(self, hidden_states, attention_mask=None):
        return (hidden_states + torch.tanh(self.dense(hidden_states)),)


class BertModel(nn.Module):
    def __init__(self, vocab_size=30, hidden=16):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab_size, hidden)
        self.encoder = BertEncoder(hidden)

    @classmethod
    def from_pretrained(cls, path):
        return cls()

    def get_extended_attention_mask(self, attention_mask, input_shape, device):
        return (1.0 - attention_mask[:, None, None, :].float()) * -10000.0


class BertTokenizer:
    mask_token_id, vocab_size = 3, 30

    @classmethod
    def from_pretrained(cls, path):
        return cls()


class Config:
    bert_path = vocab_file = 'chinese-bert-wwm-ext'
    embedding_size, hidden_size, batch_size, lr, epoch, device = 16, 8, 4, 1e-3, 3, 'cpu'


# --- model/model.py ----------------------------------------------------------------------------
class bert:
    def __init__(self, config):
        self.config = config
        self.bert = BertModel.from_pretrained(self.config.bert_path)
        self.embedding = self.bert.embeddings
        self.bert_encoder = self.bert.encoder
        self.tokenizer = BertTokenizer.from_pretrained(self.config.vocab_file)
        self.masked_e = self.embedding(torch.tensor([[self.tokenizer.mask_token_id]], dtype=torch.long))
        self.vocab_size = self.tokenizer.vocab_size


class biGruDetector(nn.Module):
    def __init__(self, input_size, hidden_size, num_layer=1):
        super(biGruDetector, self).__init__()
        self.rnn = nn.GRU(input_size, hidden_size, num_layers=num_layer, bidirectional=True, batch_first=True)
        self.linear = nn.Linear(hidden_size * 2, 1)

    def forward(self, inp):
        rnn_output, _ = self.rnn(inp)
        output = nn.Sigmoid()(self.linear(rnn_output))
        return output


class softMaskedBert(nn.Module):
    def __init__(self, config, **kwargs):
        super(softMaskedBert, self).__init__()
        self.config = config
        self.vocab_size = kwargs['vocab_size']
        self.masked_e = kwargs['masked_e']
        self.bert_encoder = kwargs['bert_encoder']
        self.linear = nn.Linear(self.config.embedding_size, self.vocab_size)
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, bert_embedding, p, input_mask=None):
        soft_bert_embedding = p * self.masked_e + (1 - p) * bert_embedding
        bert_out = self.bert_encoder(hidden_states=soft_bert_embedding, attention_mask=input_mask)
        h = bert_out[0] + bert_embedding
        out = self.log_softmax(self.linear(h))
        return out


# --- model/train.py ----------------------------------------------------------------------------
class engines(bert):
    def __init__(self, config, batches):
        super(engines, self).__init__(config)
        self.train_data_loader = batches

        self.detector_model = biGruDetector(self.config.embedding_size, self.config.hidden_size)
        self.detector_optimizer = torch.optim.Adam(self.detector_model.parameters(), lr=self.config.lr)
        self.detector_criterion = nn.BCELoss()

        self.model = softMaskedBert(
            self.config,
            vocab_size=self.vocab_size,
            masked_e=self.masked_e.to(self.config.device),
            bert_encoder=self.bert_encoder)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.config.lr)
        self.criterion = nn.NLLLoss()
        self.gama = 0.7
        self.device = self.config.device

    def train_model(self):
        self.detector_model.to(self.device)
        self.model.to(self.device)
        self.detector_model.train()
        self.model.train()
        for epoch in range(self.config.epoch):
            total_loss = 0
            for i, batch_data in enumerate(self.train_data_loader):
                batch_inp_ids, batch_out_ids, batch_labels, batch_mask = batch_data
                batch_inp_embedding = self.embedding(batch_inp_ids).to(self.config.device)
                prob = self.detector_model(batch_inp_embedding)
                detector_loss = self.detector_criterion(prob.squeeze() * batch_mask, batch_labels.float())
                out = self.model(
                    batch_inp_embedding,
                    prob,
                    self.bert.get_extended_attention_mask(batch_mask, batch_out_ids.shape, batch_inp_ids.device))
                model_loss = self.criterion((out * batch_mask.unsqueeze(-1)).reshape(-1, out.shape[-1]),
                                            batch_out_ids.reshape(-1))
                loss = self.gama * model_loss + (1 - self.gama) * detector_loss
                self.optimizer.zero_grad()
                loss.backward(retain_graph=True)
                self.optimizer.step()  # <- optimizer
                total_loss += loss.item()
            print(f'epoch: {epoch + 1}, train loss: {total_loss / (i + 1)}')


torch.manual_seed(0)
torch.set_num_threads(1)
batches = []
for _ in range(4):
    out_ids = torch.randint(5, 30, (4, 10))
    labels = (torch.rand(4, 10) < 0.2).long()
    inp_ids = torch.where(labels.bool(), torch.randint(5, 30, (4, 10)), out_ids)
    batches.append((inp_ids, out_ids, labels, torch.ones(4, 10)))
handler = engines(Config(), batches)
detector_before = handler.detector_model.linear.weight.detach().clone()
handler.train_model()
print("detector grad is None:", handler.detector_model.linear.weight.grad is None)
print("detector changed:", not torch.equal(detector_before, handler.detector_model.linear.weight))
