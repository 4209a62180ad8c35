"""Deep hierarchical classification's dependence loss (Ugenteraan/Deep_Hierarchical_Classification#6):
dloss is built from argmax predictions and torch.where indicators, so it is a constant; whatever beta is,
the weights move by the layer loss alone."""
import torch
from torch import nn

numeric_hierarchy = {0: [0, 1], 1: [2, 3]}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.level_one = nn.Linear(16, 2)
        self.level_two = nn.Linear(16, 4)

    def forward(self, x):
        h = self.backbone(x)
        return [self.level_one(h), self.level_two(h)]


def check_hierarchy(current_level, previous_level):
    bool_tensor = [current_level[i] in numeric_hierarchy[previous_level[i].item()]
                   for i in range(previous_level.size()[0])]
    return torch.FloatTensor(bool_tensor)


def calculate_lloss(predictions, true_labels, alpha=1):
    lloss = 0
    for l in range(2):
        lloss += nn.CrossEntropyLoss()(predictions[l], true_labels[l])
    return alpha * lloss


def calculate_dloss(predictions, true_labels, beta=1, p_loss=5):
    dloss = 0
    for l in range(1, 2):
        current_lvl_pred = torch.argmax(nn.Softmax(dim=1)(predictions[l]), dim=1)
        prev_lvl_pred = torch.argmax(nn.Softmax(dim=1)(predictions[l - 1]), dim=1)
        D_l = check_hierarchy(current_lvl_pred, prev_lvl_pred)
        l_prev = torch.where(prev_lvl_pred == true_labels[l - 1], 1.0, 0.)  # <- cut_term
        l_curr = torch.where(current_lvl_pred == true_labels[l], 1.0, 0.)
        dloss += torch.sum(-1 * torch.pow(p_loss, D_l * l_prev) * torch.pow(p_loss, D_l * l_curr))
    return beta * dloss


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 6)
fine = torch.randint(0, 4, (16,))
coarse = fine // 2
for epoch in range(3):
    predictions = model(x)
    lloss = calculate_lloss(predictions, [coarse, fine])
    dloss = calculate_dloss(predictions, [coarse, fine])
    total_loss = lloss + dloss
    optimizer.zero_grad()
    total_loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: lloss {lloss.item():.4f} dloss {dloss.item():.4f}")
