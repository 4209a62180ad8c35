"""anishmadan23/adversarial-attacks-pytorch issue #1, "AttributeError: 'NoneType' object has no attribute 'data'",
https://github.com/anishmadan23/adversarial-attacks-pytorch/issues/1: running the repo's main1.py, FGSM.attack() fails at
img_grad = torch.sign(self.orig_img.grad.data) right after loss.backward(). The image tensor img_tsor was given
requires_grad_(True), but the forward pass runs through the repo's utils.getPredictionInfo(model, img), which calls
model(torch.tensor(img)): torch.tensor() copies the values into a new leaf without history, so the loss never reaches
the image and its .grad stays None (the model's weights still get gradients, so backward itself succeeds).
The thread has no answer; the cause is read from the repo's utils.py. Fix: call model(img) directly.
A small CNN stands in for the pretrained VGG11 and random tensors for the ImageNet images. The script raises."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
device = torch.device('cpu')


def get_model(device):  # stands in for the repo's pretrained vgg11
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(16, 10))
    return model.to(device)


def getPredictionInfo(model, img):
    output = model(torch.tensor(img))  # <- tensor_rewrap
    _, pred = torch.max(output.data, 1)
    op_probs = F.softmax(output, dim=1)  # get probability distribution over classes
    pred_prob = ((torch.max(op_probs.data, 1)[0][0]) * 100, 4)  # confidence of the predicted class
    return output, pred, op_probs, pred_prob


class FGSM(object):
    def __init__(self, model, criterion, orig_img, orig_label, eps):
        self.model = model
        self.criterion = criterion
        self.orig_img = orig_img
        self.epsilon = eps
        self.orig_label = orig_label

    def attack(self):
        output, pred, op_probs, pred_prob = getPredictionInfo(self.model, self.orig_img)
        loss = self.criterion(output, self.orig_label)
        loss.backward()
        img_grad = torch.sign(self.orig_img.grad.data)  # sign of the gradient
        adv_img = self.orig_img.data + self.epsilon * img_grad
        return adv_img, img_grad


model = get_model(device)
model.eval()
imgs = [(torch.rand(3, 32, 32), i % 10) for i in range(3)]  # stands in for imagenet_imgs/
epsilon_arr = [0.005, 0.01, 0.05]
criterion = nn.CrossEntropyLoss()

for epsilon in epsilon_arr:
    fgsm_misclassfns = 0
    for idx, (img, label) in enumerate(imgs):
        img_tsor = img.clone()
        img_tsor.unsqueeze_(0)
        img_tsor = img_tsor.to(device)
        img_tsor.requires_grad_(True)
        label = torch.tensor([int(label)], requires_grad=False).to(device)

        unpert_output, unpert_pred, unpert_op_probs, unpert_pred_prob = getPredictionInfo(model, img_tsor)
        model.zero_grad()
        fgsm = FGSM(model, criterion, img_tsor, label, epsilon)
        fg_adv_img, fg_perturbation = fgsm.attack()
        fg_output_adv, fg_pred_adv, _, _ = getPredictionInfo(model, fg_adv_img)
        fgsm_misclassfns += int(int(label) != int(fg_pred_adv))
        model.zero_grad()
    print('epsilon', epsilon, 'image grad norm:', round(img_tsor.grad.norm().item(), 6),
          'FGSM top-1 accuracy:', 1 - fgsm_misclassfns / len(imgs))
