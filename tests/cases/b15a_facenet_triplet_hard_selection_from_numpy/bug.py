"""facenet_pytorch (liorshk/facenet_pytorch#6, https://github.com/liorshk/facenet_pytorch/issues/6): train() in
train_triplet.py picks the hard triplets and then rebuilds the selected embeddings as
`Variable(torch.from_numpy(out_a.cpu().data.numpy()[hard_triplets]))`, so the triplet loss is computed on constants:
"it should be out_a[hard_triplets]. Otherwise, grad won't be caculated." The cross-entropy term still trains the
network, so training runs, but the triplet term never moves the embedding. Fix: index the embeddings directly."""
import numpy as np
import torch
import torch.nn as nn
from torch.nn import PairwiseDistance, TripletMarginLoss


class FaceModel(nn.Module):
    def __init__(self, embedding_size=8, num_classes=5):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, embedding_size))
        self.classifier = nn.Linear(embedding_size, num_classes)

    def forward(self, x):
        return nn.functional.normalize(self.model(x), dim=1)

    def forward_classifier(self, x):
        return self.classifier(self.forward(x))


def train(model, optimizer, batches, margin=0.5):
    l2_dist = PairwiseDistance(2)
    for batch_idx, (data_a, data_p, data_n, label_p, label_n) in enumerate(batches):
        out_a, out_p, out_n = model(data_a), model(data_p), model(data_n)
        d_p = l2_dist.forward(out_a, out_p)
        d_n = l2_dist.forward(out_a, out_n)
        all = (d_n - d_p < margin).cpu().data.numpy().flatten()
        hard_triplets = np.where(all == 1)
        if len(hard_triplets[0]) == 0:
            continue
        out_selected_a = torch.from_numpy(out_a.cpu().data.numpy()[hard_triplets])  # <- cut_term
        out_selected_p = torch.from_numpy(out_p.cpu().data.numpy()[hard_triplets])
        out_selected_n = torch.from_numpy(out_n.cpu().data.numpy()[hard_triplets])
        selected_data_a, selected_data_p, selected_data_n = (data_a[hard_triplets], data_p[hard_triplets],
                                                             data_n[hard_triplets])
        selected_label_p, selected_label_n = label_p[hard_triplets], label_n[hard_triplets]
        triplet_loss = TripletMarginLoss(margin).forward(out_selected_a, out_selected_p, out_selected_n)
        predicted_labels = torch.cat([model.forward_classifier(selected_data_a),
                                      model.forward_classifier(selected_data_p),
                                      model.forward_classifier(selected_data_n)])
        true_labels = torch.cat([selected_label_p, selected_label_p, selected_label_n])
        cross_entropy_loss = nn.CrossEntropyLoss()(predicted_labels, true_labels)
        loss = cross_entropy_loss + triplet_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"batch {batch_idx}: triplet {triplet_loss.item():.4f} (requires grad: {triplet_loss.requires_grad}), "
              f"cross entropy {cross_entropy_loss.item():.4f}, hard triplets {len(hard_triplets[0])}")


torch.manual_seed(0)
model = FaceModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
batches = [(torch.randn(8, 16), torch.randn(8, 16), torch.randn(8, 16), torch.randint(0, 5, (8,)),
            torch.randint(0, 5, (8,))) for _ in range(3)]
train(model, optimizer, batches)
