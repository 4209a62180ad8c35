# Grad-CAM (pytorch-grad-cam style: forward hook + tensor hook on the target
# layer's output, then a backward from the class score) computed in a
# Lightning-style validation_epoch_end. The trainer runs the validation loop
# with gradients disabled, as Lightning does.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ActivationsAndGradients:
    def __init__(self, model, target_layers):
        self.model, self.gradients, self.activations = model, [], []
        for layer in target_layers:
            layer.register_forward_hook(self.save_activation)
            layer.register_forward_hook(self.save_gradient)

    def save_activation(self, module, input, output):
        self.activations.append(output.cpu().detach())

    def save_gradient(self, module, input, output):
        if not hasattr(output, "requires_grad") or not output.requires_grad:
            return  # can only register hooks on tensors that require grad

        def _store_grad(grad):
            self.gradients = [grad.cpu().detach()] + self.gradients
        output.register_hook(_store_grad)

    def __call__(self, x):
        self.gradients, self.activations = [], []
        return self.model(x)


class GradCAM:
    def __init__(self, model, target_layers):
        self.model = model.eval()
        self.activations_and_grads = ActivationsAndGradients(model, target_layers)

    def __call__(self, input_tensor, targets):
        outputs = self.activations_and_grads(input_tensor)
        self.model.zero_grad()
        loss = sum(outputs[i, t] for i, t in enumerate(targets))
        loss.backward(retain_graph=True)
        acts, grads = self.activations_and_grads.activations[0], self.activations_and_grads.gradients[0]
        weights = grads.mean(dim=(2, 3), keepdim=True)
        return F.relu((weights * acts).sum(dim=1))


class LitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16, 4)
        self.targets = [1, 2]

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc(x.mean(dim=(2, 3)))

    def training_step(self, batch):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_epoch_end(self, img_tensor):
        cam = GradCAM(model=self, target_layers=[self.conv2])
        grayscale_cam = cam(input_tensor=img_tensor, targets=self.targets)  # <- no_grad
        print("cam", grayscale_cam.shape, grayscale_cam.mean().item())
        self.train()


model = LitClassifier()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 4, (8,))
val_imgs = torch.randn(2, 3, 16, 16)

for epoch in range(2):
    opt.zero_grad()
    loss = model.training_step((x, y))
    loss.backward()
    opt.step()
    with torch.no_grad():  # trainer's validation loop
        model.validation_epoch_end(val_imgs)
    print(epoch, loss.item())
