"""Word2vec skip-gram with negative sampling in the shape of Andras7/word2vec-pytorch
(https://github.com/Andras7/word2vec-pytorch, word2vec/model.py, word2vec/trainer.py,
word2vec/data_reader.py): two nn.Embedding(sparse=True) tables (u = center words, v = context words)
trained by SparseAdam, the loss `-logsigmoid(clamp(u.v)) - sum logsigmoid(-clamp(u.v_neg))`.
Suspicious-but-correct patterns kept: the context table v is initialised to constant 0 through
`nn.init.constant_(self.v_embeddings.weight.data, 0)`, so on the very first step the center table u receives an
all-zero (sparse) gradient and only starts moving once v has been updated; both inits write through
`.weight.data`; scores clamped to [-10, 10] before logsigmoid; negatives drawn from a shuffled unigram^0.5
table with a moving read pointer and frequent words subsampled (the discard threshold t scaled up for a
tiny corpus); a fresh SparseAdam and CosineAnnealingLR are built at the start of every epoch
("iteration"), so the Adam state is thrown away each epoch; `scheduler.step()` is called before
`optimizer.step()` as in the repo (the last batch of each epoch therefore runs at lr 0); a running loss
from `loss.item()`; the embedding read back with `.weight.cpu().data` for saving."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class SkipGramModel(nn.Module):
    def __init__(self, emb_size, emb_dimension):
        super().__init__()
        self.emb_size = emb_size
        self.emb_dimension = emb_dimension
        self.u_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
        self.v_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
        initrange = 1.0 / self.emb_dimension
        nn.init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
        nn.init.constant_(self.v_embeddings.weight.data, 0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        emb_v = self.v_embeddings(pos_v)
        emb_neg_v = self.v_embeddings(neg_v)
        score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
        score = torch.clamp(score, max=10, min=-10)
        score = -F.logsigmoid(score)
        neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)
        return torch.mean(score + neg_score)

    def save_embedding(self):
        return self.u_embeddings.weight.cpu().data.clone()


class DataReader:
    NEGATIVE_TABLE_SIZE = 2000

    def __init__(self, sentences, vocab_size):
        self.sentences = sentences
        self.negpos = 0
        counts = torch.zeros(vocab_size)
        for s in sentences:
            counts += torch.bincount(s, minlength=vocab_size).float()
        self.token_count = counts.sum()
        # initTableNegatives: word ids repeated proportionally to frequency ** 0.5, shuffled
        pow_frequency = counts ** 0.5
        ratio = pow_frequency / pow_frequency.sum()
        count = torch.round(ratio * DataReader.NEGATIVE_TABLE_SIZE).long()
        negatives = torch.repeat_interleave(torch.arange(vocab_size), count)
        self.negatives = negatives[torch.randperm(len(negatives))]
        # initTableDiscards (t = 1e-4 in the repo; scaled for a 20-word vocabulary)
        t = 0.05
        f = counts / self.token_count
        self.discards = torch.sqrt(t / f) + (t / f)

    def getNegatives(self, target, size):
        response = self.negatives[self.negpos:self.negpos + size]
        self.negpos = (self.negpos + size) % len(self.negatives)
        if len(response) != size:
            return torch.cat((response, self.negatives[0:self.negpos]))
        return response


class Word2vecDataset(torch.utils.data.Dataset):
    def __init__(self, data, window_size):
        self.data = data
        self.window_size = window_size

    def __len__(self):
        return len(self.data.sentences)

    def __getitem__(self, idx):
        words = self.data.sentences[idx].tolist()
        word_ids = [w for w in words if torch.rand(()).item() < self.data.discards[w].item()]
        boundary = int(torch.randint(1, self.window_size, ()).item())
        return [(u, v, self.data.getNegatives(v, 5)) for i, u in enumerate(word_ids)
                for j, v in enumerate(word_ids[max(i - boundary, 0):i + boundary]) if u != v]

    @staticmethod
    def collate(batches):
        all_u = [u for batch in batches for u, _, _ in batch if len(batch) > 0]
        all_v = [v for batch in batches for _, v, _ in batch if len(batch) > 0]
        all_neg_v = [neg_v for batch in batches for _, _, neg_v in batch if len(batch) > 0]
        return torch.LongTensor(all_u), torch.LongTensor(all_v), torch.stack(all_neg_v)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vocab_size, emb_dimension, window_size = 20, 16, 4
    # a tiny generated corpus: Zipf-like word ids, 12 sentences of 10 words
    zipf = 1.0 / torch.arange(1, vocab_size + 1).float()
    sentences = [torch.multinomial(zipf, 10, replacement=True) for _ in range(12)]
    data = DataReader(sentences, vocab_size)
    dataset = Word2vecDataset(data, window_size)
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=False, num_workers=0,
                                             collate_fn=dataset.collate)
    skip_gram_model = SkipGramModel(vocab_size, emb_dimension)
    initial_lr, iterations = 0.01, 2
    step = 0
    for iteration in range(iterations):
        optimizer = torch.optim.SparseAdam(skip_gram_model.parameters(), lr=initial_lr)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, len(dataloader))
        running_loss = 0.0
        for i, sample_batched in enumerate(dataloader):
            if len(sample_batched[0]) > 1:
                pos_u, pos_v, neg_v = sample_batched
                scheduler.step()
                optimizer.zero_grad()
                loss = skip_gram_model.forward(pos_u, pos_v, neg_v)
                loss.backward()
                optimizer.step()
                running_loss = running_loss * 0.9 + loss.item() * 0.1
                print(f"step {step} loss {loss.item():.6f}")
                step += 1
        embedding = skip_gram_model.save_embedding()
        print(f"iteration {iteration} running loss {running_loss:.4f} emb norm {embedding.norm():.4f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"skip_gram_model": skip_gram_model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
