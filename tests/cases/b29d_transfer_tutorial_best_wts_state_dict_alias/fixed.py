"""PyTorch tutorials PR #188 "Fixed deep copying model.state_dict()",
https://github.com/pytorch/tutorials/pull/188: in the Transfer Learning tutorial (a ResNet-18 whose `fc` is replaced
by a 2-class nn.Linear, fine-tuned with SGD + StepLR over train/val phases), train_model kept the best weights as
`best_model_wts = model.state_dict()`. A state_dict holds the live parameter and buffer tensors, so the snapshot keeps
changing with every optimizer step ("otherwise best_model_wts changes always to last epoch's state") and
`model.load_state_dict(best_model_wts)` at the end returns the last epoch's weights, not the best epoch's.
Fix (merged): `best_model_wts = copy.deepcopy(model.state_dict())`, at the start and when a better val accuracy is seen.
Stand-ins: resnet18 built without weights, random 32x32 "ants/bees" tensors instead of the hymenoptera ImageFolder."""
import copy
import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torchvision import models

torch.manual_seed(0)
torch.set_num_threads(1)
class_names = ["ants", "bees"]
dataloaders = {
    "train": [(torch.randn(8, 3, 32, 32), torch.randint(0, 2, (8,))) for _ in range(2)],
    "val": [(torch.randn(16, 3, 32, 32), torch.randint(0, 2, (16,)))],
}
dataset_sizes = {"train": 16, "val": 16}


def evaluate(model):
    model.eval()
    inputs, labels = dataloaders["val"][0]
    with torch.no_grad():
        return (model(inputs).argmax(1) == labels).double().mean().item()


def train_model(model, criterion, optimizer, scheduler, num_epochs=6):
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    best_epoch = -1

    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            running_loss, running_corrects = 0.0, 0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == "train":
                scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            print(f"epoch {epoch} {phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}")

            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_epoch = epoch
                best_model_wts = copy.deepcopy(model.state_dict())

    print(f"Best val Acc: {best_acc:.4f} (epoch {best_epoch})")
    model.load_state_dict(best_model_wts)
    return model, best_acc


model_ft = models.resnet18(weights=None)
num_ftrs = model_ft.fc.in_features
model_ft.fc = nn.Linear(num_ftrs, len(class_names))
criterion = nn.CrossEntropyLoss()
optimizer_ft = optim.SGD(model_ft.parameters(), lr=0.01, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=7, gamma=0.1)

model_ft, best_acc = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler)
restored_acc = evaluate(model_ft)
print(f"val Acc of the restored 'best' model: {restored_acc:.4f}")
print("restored model is the best epoch's:", abs(restored_acc - best_acc.item()) < 1e-9)
