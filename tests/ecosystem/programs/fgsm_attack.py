"""PyTorch's FGSM tutorial: a trained-elsewhere classifier only attacked, never optimized: model.eval(),
data.requires_grad = True, model.zero_grad(), loss.backward(), data.grad.data.sign() perturbs the
input, and the prediction on the perturbed input is counted. No optimizer anywhere."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 5 * 5, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


def fgsm_attack(image, epsilon, data_grad):
    sign_data_grad = data_grad.sign()
    perturbed_image = image + epsilon * sign_data_grad
    return torch.clamp(perturbed_image, 0, 1)


def test(model, test_loader, epsilon):
    correct = 0
    for data, target in test_loader:
        data.requires_grad = True
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]
        if init_pred.item() != target.item():
            continue
        loss = F.nll_loss(output, target)
        model.zero_grad()
        loss.backward()
        data_grad = data.grad.data
        perturbed_data = fgsm_attack(data, epsilon, data_grad)
        output = model(perturbed_data)
        final_pred = output.max(1, keepdim=True)[1]
        if final_pred.item() == target.item():
            correct += 1
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {len(test_loader)}")


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net()
    model.eval()
    test_loader = [(torch.rand(1, 1, 12, 12), torch.randint(0, 10, (1,))) for _ in range(20)]
    for epsilon in (0.0, 0.1, 0.3):
        test(model, test_loader, epsilon)


if __name__ == "__main__":
    main()
