"""pt-dec (vlukiyanov/pt-dec, a PyTorch re-implementation of Deep Embedded Clustering with an MNIST example), issue
#18 "cluster_centers not updating", https://github.com/vlukiyanov/pt-dec/issues/18: a new user printed the
parameters before and after `optimizer.step()` and saw the encoder change but the cluster centres never change,
although they had a gradient; the maintainer confirmed it ("must be another issue when I converted everything to
1.0.0 from 0.4.0") and pushed a fix. The user builds the optimizer from `model.parameters()` and passes it to
`ptdec.model.train`; train() then initialises the centres from k-means with
`model.assignment.cluster_centers = torch.nn.Parameter(cluster_centers)`, which replaces the registered Parameter by a
brand-new one that the optimizer has never seen. The new centres get a .grad at every backward (never zeroed), but
no optimizer steps them, so they stay at the k-means values; the old Parameter in the optimizer gets no gradient.
Fix (in the library's train(), not in the user's script): copy the k-means centres into the existing Parameter,
`with torch.no_grad(): model.assignment.cluster_centers.copy_(cluster_centers)`.
Reduction: ptdec's DEC/ClusterAssignment and train() in short, a few torch Lloyd iterations stand in for
sklearn's KMeans, random data instead of MNIST, no tqdm/DataLoader."""
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)


# --- ptdec.cluster / ptdec.dec stand-in ------------------------------------------------------
class ClusterAssignment(nn.Module):
    def __init__(self, cluster_number, embedding_dimension, alpha=1.0):
        super(ClusterAssignment, self).__init__()
        self.embedding_dimension = embedding_dimension
        self.cluster_number = cluster_number
        self.alpha = alpha
        initial_cluster_centers = torch.zeros(self.cluster_number, self.embedding_dimension, dtype=torch.float)
        nn.init.xavier_uniform_(initial_cluster_centers)
        self.cluster_centers = nn.Parameter(initial_cluster_centers)

    def forward(self, batch):
        norm_squared = torch.sum((batch.unsqueeze(1) - self.cluster_centers) ** 2, 2)
        numerator = 1.0 / (1.0 + (norm_squared / self.alpha))
        power = float(self.alpha + 1) / 2
        numerator = numerator ** power
        return numerator / torch.sum(numerator, dim=1, keepdim=True)


class DEC(nn.Module):
    def __init__(self, cluster_number, hidden_dimension, encoder, alpha=1.0):
        super(DEC, self).__init__()
        self.encoder = encoder
        self.hidden_dimension = hidden_dimension
        self.cluster_number = cluster_number
        self.alpha = alpha
        self.assignment = ClusterAssignment(cluster_number, self.hidden_dimension, alpha)

    def forward(self, batch):
        return self.assignment(self.encoder(batch))


def target_distribution(batch):
    weight = (batch ** 2) / torch.sum(batch, 0)
    return (weight.t() / torch.sum(weight, 1)).t()


# --- sklearn.cluster.KMeans stand-in (a few Lloyd iterations) --------------------------------
class KMeans:
    def __init__(self, n_clusters, n_init=20):
        self.n_clusters = n_clusters

    def fit_predict(self, features):
        centers = features[:self.n_clusters].clone()
        for _ in range(10):
            labels = torch.cdist(features, centers).argmin(1)
            centers = torch.stack([features[labels == k].mean(0) if (labels == k).any() else centers[k]
                                   for k in range(self.n_clusters)])
        self.cluster_centers_ = centers.numpy()
        return labels.numpy()


# --- ptdec/model.py: train(), in short -------------------------------------------------------
def train(dataset, model, epochs, batch_size, optimizer):
    kmeans = KMeans(n_clusters=model.cluster_number, n_init=20)
    model.train()
    features = []
    # form initial cluster centres
    for index in range(0, len(dataset), batch_size):
        batch = dataset[index:index + batch_size]
        features.append(model.encoder(batch).detach().cpu())
    predicted = kmeans.fit_predict(torch.cat(features))
    cluster_centers = torch.tensor(kmeans.cluster_centers_, dtype=torch.float)
    with torch.no_grad(): model.assignment.cluster_centers.copy_(cluster_centers)
    loss_function = nn.KLDivLoss(reduction='sum')
    for epoch in range(epochs):
        model.train()
        for index in range(0, len(dataset), batch_size):
            batch = dataset[index:index + batch_size]
            output = model(batch)
            target = target_distribution(output).detach()
            loss = loss_function(output.log(), target) / output.shape[0]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step(closure=None)


# --- the user's script (ptdec/examples/mnist, in short) ---------------------------------------
dataset = torch.cat([torch.randn(32, 20) + 3 * torch.randn(1, 20) for _ in range(3)])
encoder = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
model = DEC(cluster_number=3, hidden_dimension=4, encoder=encoder)
dec_optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

train(dataset, model, epochs=1, batch_size=32, optimizer=dec_optimizer)
a = list(model.parameters())[-2].clone()  # encoder's last bias
b = list(model.parameters())[-1].clone()  # cluster centers
train_step_batch = dataset[:32]
output = model(train_step_batch)
loss = nn.KLDivLoss(reduction='sum')(output.log(), target_distribution(output).detach()) / output.shape[0]
dec_optimizer.zero_grad()
loss.backward()
dec_optimizer.step(closure=None)
print("cluster_centers.grad is None:", model.assignment.cluster_centers.grad is None)
print("cluster_centers in the optimizer:",
      any(p is model.assignment.cluster_centers for g in dec_optimizer.param_groups for p in g["params"]))
print("unchanged after step (encoder, centers):",
      torch.equal(a, list(model.parameters())[-2]), torch.equal(b, list(model.parameters())[-1]))
