# Word2Vec skip-gram (full softmax) from scratch, as in the course notebook
# "01 - Word2Vec (Skipgram).ipynb" (the same model node2vec-style embedding training
# runs on random walks). The model owns two tables: center vectors v_c and outside
# vectors u_o / u_w, but forward looks up all three with the center table.
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)
np.random.seed(0)

corpus = ["apple banana fruit", "banana apple fruit", "banana fruit apple",
          "dog cat animal", "cat dog animal", "cat animal dog"]
corpus_tokenized = [sent.split(" ") for sent in corpus]
flatten = lambda l: [item for sublist in l for item in sublist]
vocabs = sorted(set(flatten(corpus_tokenized)))
vocabs.append('<UNK>')
word2index = {v: idx for idx, v in enumerate(vocabs)}


def random_batch(batch_size, corpus):
    skip_grams = []
    for sent in corpus:
        for i in range(1, len(sent) - 1):
            target = word2index[sent[i]]
            context = [word2index[sent[i - 1]], word2index[sent[i + 1]]]
            for w in context:
                skip_grams.append([target, w])
    random_inputs, random_labels = [], []
    random_index = np.random.choice(range(len(skip_grams)), batch_size, replace=False)
    for i in random_index:
        random_inputs.append([skip_grams[i][0]])
        random_labels.append([skip_grams[i][1]])
    return np.array(random_inputs), np.array(random_labels)


class Skipgram(nn.Module):

    def __init__(self, voc_size, emb_size):
        super(Skipgram, self).__init__()
        self.embedding_center = nn.Embedding(voc_size, emb_size)
        self.embedding_outside = nn.Embedding(voc_size, emb_size)

    def forward(self, center, outside, all_vocabs):
        center_embedding = self.embedding_center(center)  # (batch_size, 1, emb_size)
        outside_embedding = self.embedding_center(outside)  # <- unused_parameter
        all_vocabs_embedding = self.embedding_center(all_vocabs)  # (batch_size, voc_size, emb_size)

        top_term = torch.exp(outside_embedding.bmm(center_embedding.transpose(1, 2)).squeeze(2))
        lower_term = all_vocabs_embedding.bmm(center_embedding.transpose(1, 2)).squeeze(2)
        lower_term_sum = torch.sum(torch.exp(lower_term), 1)
        loss = -torch.mean(torch.log(top_term / lower_term_sum))
        return loss


def prepare_sequence(seq, word2index):
    idxs = list(map(lambda w: word2index[w] if word2index.get(w) is not None else word2index["<UNK>"], seq))
    return torch.LongTensor(idxs)


batch_size = 2
emb_size = 2
voc_size = len(vocabs)
all_vocabs = prepare_sequence(list(vocabs), word2index).expand(batch_size, voc_size)

model = Skipgram(voc_size, emb_size)
optimizer = optim.Adam(model.parameters(), lr=0.001)
outside_before = model.embedding_outside.weight.detach().clone()

num_epochs = 60
for epoch in range(num_epochs):
    input_batch, label_batch = random_batch(batch_size, corpus_tokenized)
    input_batch = torch.LongTensor(input_batch)
    label_batch = torch.LongTensor(label_batch)

    loss = model(input_batch, label_batch, all_vocabs)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    if (epoch + 1) % 20 == 0:
        print(f"Epoch: {epoch + 1} | cost: {loss:.6f}")

print("embedding_outside grad:", model.embedding_outside.weight.grad)  # <- symptom
print("embedding_outside changed:",
      not torch.equal(outside_before, model.embedding_outside.weight.detach()))
