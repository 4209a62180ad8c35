# Report: hiyoung123/SoftMaskedBert issue #16 "loss.backward(retain_graph=True) 报错"
#   https://github.com/hiyoung123/SoftMaskedBert/issues/16
#   (see also #15 "why retain_graph=True in backward? won't GPU memory explode?")
# What went wrong: SoftMaskedBert.__init__ computes the [MASK] embedding ONCE,
#   self.mask_e = self.embedding(mask_token_id), through the BERT embedding layer
#   (word/pos/type embeddings + LayerNorm). That tensor carries a graph built in
#   __init__, and every forward mixes it into e_ = p * mask_e + (1 - p) * e. The first
#   loss.backward() frees that shared graph; the second iteration's backward walks
#   into it again and raises "Trying to backward through the graph a second time".
#   The repo papered over it with loss.backward(retain_graph=True), which then fails
#   on torch>=1.5 with "modified by an inplace operation" (Adam updated the LayerNorm
#   weight [768] saved in that old graph) -- the error reported in #16.
# Fix (comment in #16): build the mask embedding without a graph,
#   self.mask_e = self.embedding(mask_token_id).detach()
#   and drop retain_graph.
import torch
import torch.nn as nn

torch.manual_seed(0)


class BertConfig:
    vocab_size = 50
    hidden_size = 32
    num_hidden_layers = 2
    num_attention_heads = 4
    intermediate_size = 64
    max_position_embeddings = 64
    type_vocab_size = 2
    hidden_dropout_prob = 0.1
    is_decoder = False

    def to_dict(self):
        return {'hidden_size': self.hidden_size, 'vocab_size': self.vocab_size}


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)
        token_type_ids = torch.zeros_like(input_ids)
        embeddings = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
                      + self.token_type_embeddings(token_type_ids))
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([
            nn.TransformerEncoderLayer(config.hidden_size, config.num_attention_heads,
                                       config.intermediate_size, dropout=0.0, batch_first=True)
            for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None, head_mask=None,
                encoder_hidden_states=None, encoder_attention_mask=None):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states)
        return (hidden_states,)


class BertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)


class Tokenizer:
    mask_token_id = 3


class BiGRU(nn.Module):
    def __init__(self, embedding_size, hidden, n_layers, dropout=0.0):
        super(BiGRU, self).__init__()
        self.rnn = nn.GRU(embedding_size, hidden, num_layers=n_layers,
                          bidirectional=True, dropout=dropout, batch_first=True)
        self.linear = nn.Linear(hidden * 2, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        out, _ = self.rnn(x)
        prob = self.sigmoid(self.linear(out))
        return prob


class SoftMaskedBert(nn.Module):
    def __init__(self, bert, tokenizer, hidden, layer_n, device):
        super(SoftMaskedBert, self).__init__()
        self.bert = bert
        self.tokenizer = tokenizer
        self.embedding = bert.embeddings.to(device)
        self.config = bert.config
        self.embedding_size = self.config.to_dict()['hidden_size']

        self.detector = BiGRU(self.embedding_size, hidden, layer_n)
        self.corrector = bert.encoder
        mask_token_id = torch.tensor([[tokenizer.mask_token_id]]).to(device)
        self.mask_e = self.embedding(mask_token_id).detach()
        self.linear = nn.Linear(self.embedding_size, self.config.vocab_size)
        self.softmax = nn.LogSoftmax(dim=-1)

    def forward(self, input_ids):
        e = self.embedding(input_ids)
        p = self.detector(e)
        e_ = p * self.mask_e + (1 - p) * e
        h = self.corrector(e_)
        h = h[0] + e
        out = self.softmax(self.linear(h))
        return out, p


class SoftMaskedBertTrainer():
    def __init__(self, bert, tokenizer, device, hidden=16, layer_n=1, lr=2e-5, gama=0.8):
        self.device = device
        self.model = SoftMaskedBert(bert, tokenizer, hidden, layer_n, device).to(device)
        self.optim = torch.optim.Adam(self.model.parameters(), lr=lr, betas=(0.9, 0.999),
                                      weight_decay=0.01)
        self.criterion_c = nn.NLLLoss()
        self.criterion_d = nn.BCELoss()
        self.gama = gama

    def iteration(self, data_loader):
        self.model.train()
        for i, data in enumerate(data_loader):
            out, prob = self.model(data["random_text"])
            prob = prob.reshape(-1, prob.shape[1])
            loss_d = self.criterion_d(prob, data['label'].float())
            loss_c = self.criterion_c(out.transpose(1, 2), data["origin_text"])
            loss = self.gama * loss_c + (1 - self.gama) * loss_d

            self.optim.zero_grad()
            loss.backward()
            self.optim.step()
            print('iter', i, 'loss', round(loss.item(), 4))


def make_batches(n, batch_size=4, seq_len=12, vocab=50):
    batches = []
    for _ in range(n):
        origin = torch.randint(5, vocab, (batch_size, seq_len))
        label = (torch.rand(batch_size, seq_len) < 0.15).long()
        random_text = torch.where(label.bool(), torch.randint(5, vocab, origin.shape), origin)
        batches.append({'origin_text': origin, 'random_text': random_text, 'label': label})
    return batches


if __name__ == '__main__':
    device = torch.device('cpu')
    config = BertConfig()
    bert = BertModel(config)
    trainer = SoftMaskedBertTrainer(bert, Tokenizer(), device)
    trainer.iteration(make_batches(3))
    print('word_embeddings grad norm:', trainer.model.embedding.word_embeddings.weight.grad.norm().item())
