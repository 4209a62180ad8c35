"""sicara/easy-few-shot-learning pull request #129 "Adding deepcopy to best_state deriving",
https://github.com/sicara/easy-few-shot-learning/pull/129
The episodic-training notebook keeps the best model with `best_state = few_shot_classifier.state_dict()` whenever
the validation accuracy improves, and reloads it after training with `load_state_dict(best_state)`. But
state_dict() returns the live parameter tensors (detached views sharing storage), not a copy: every later
optimizer step changes `best_state` too, so the "best" model that is restored is just the last epoch's model.
Fix (the PR's): `best_state = copy.deepcopy(few_shot_classifier.state_dict())`. easyfsl's PrototypicalNetworks and
evaluate() are short stand-ins; the episodes are small random tensors, and the training schedule ends with a
few epochs at a too-large learning rate so the last epoch is worse than the best one."""
import copy
from statistics import mean

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
DEVICE = "cpu"


# --- easyfsl stand-in ---------------------------------------------------------------------------
class PrototypicalNetworks(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone

    def process_support_set(self, support_images, support_labels):
        z = self.backbone(support_images)
        self.prototypes = torch.stack([z[support_labels == c].mean(0) for c in support_labels.unique()])

    def forward(self, query_images):
        return -torch.cdist(self.backbone(query_images), self.prototypes)


def evaluate(model, data_loader, device="cpu", tqdm_prefix=None):
    correct, total = 0, 0
    model.eval()
    with torch.no_grad():
        for support_images, support_labels, query_images, query_labels, _ in data_loader:
            model.process_support_set(support_images.to(device), support_labels.to(device))
            predictions = model(query_images.to(device)).argmax(1)
            correct += (predictions == query_labels.to(device)).sum().item()
            total += len(query_labels)
    return correct / total


# --- data: 3-way episodes drawn from fixed class centres -----------------------------------------
centres = torch.randn(3, 16) * 0.5


def episode():
    support_labels = torch.arange(3).repeat_interleave(5)
    query_labels = torch.arange(3).repeat_interleave(10)
    support = centres[support_labels] + torch.randn(15, 16)
    query = centres[query_labels] + torch.randn(30, 16)
    return support, support_labels, query, query_labels, None


train_loader = [episode() for _ in range(8)]
val_loader = [episode() for _ in range(4)]

# --- the notebook's training code ----------------------------------------------------------------
convolutional_network = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
few_shot_classifier = PrototypicalNetworks(convolutional_network).to(DEVICE)
LOSS_FUNCTION = nn.CrossEntropyLoss()
n_epochs = 8
learning_rates = [0.05] * 5 + [1.0] * 3
train_optimizer = torch.optim.SGD(few_shot_classifier.parameters(), lr=learning_rates[0], momentum=0.9)


def training_epoch(model, data_loader, optimizer):
    all_loss = []
    model.train()
    for support_images, support_labels, query_images, query_labels, _ in data_loader:
        optimizer.zero_grad()
        model.process_support_set(support_images.to(DEVICE), support_labels.to(DEVICE))
        classification_scores = model(query_images.to(DEVICE))
        loss = LOSS_FUNCTION(classification_scores, query_labels.to(DEVICE))
        loss.backward()
        optimizer.step()
        all_loss.append(loss.item())
    return mean(all_loss)


best_state = few_shot_classifier.state_dict()
best_validation_accuracy = 0.0
for epoch in range(n_epochs):
    for group in train_optimizer.param_groups:
        group["lr"] = learning_rates[epoch]
    average_loss = training_epoch(few_shot_classifier, train_loader, train_optimizer)
    validation_accuracy = evaluate(few_shot_classifier, val_loader, device=DEVICE, tqdm_prefix="Validation")
    print(f"Epoch {epoch} loss {average_loss:.4f} val acc {validation_accuracy:.3f}")

    if validation_accuracy > best_validation_accuracy:
        best_validation_accuracy = validation_accuracy
        best_state = copy.deepcopy(few_shot_classifier.state_dict())
        print("Ding ding ding! We found a new best model!")

few_shot_classifier.load_state_dict(best_state)
restored_accuracy = evaluate(few_shot_classifier, val_loader, device=DEVICE)
print("best validation accuracy:", best_validation_accuracy)
print("accuracy of the restored 'best' model:", restored_accuracy)
