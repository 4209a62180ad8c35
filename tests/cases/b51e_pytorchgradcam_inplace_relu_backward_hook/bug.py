# Getting error when using Densenet: 'Output 0 of BackwardHookFunctionBackward is a view and is being
# modified inplace'   https://github.com/jacobgil/pytorch-grad-cam/issues/147
# (fixed by PR https://github.com/jacobgil/pytorch-grad-cam/pull/183 "Use forward hook instead of
# backward hook to avoid error")
# GradCAM on densenet121 with target layer model.features[-1] (norm5). ActivationsAndGradients put a
# module full backward hook on the target layer; DenseNet.forward then runs F.relu(features, inplace=True)
# on that layer's output, which autograd forbids (pytorch/pytorch#61519), so no gradient is collected.
# Fix: register a forward hook that calls output.register_hook(...) on the layer's output tensor.
# pytorch_grad_cam (ActivationsAndGradients, BaseCAM/GradCAM) and torchvision's DenseNet are reduced
# to plain torch below, keeping their names.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ---- pytorch_grad_cam/activations_and_gradients.py ------------------------------------------
class ActivationsAndGradients:
    """ Class for extracting activations and
    registering gradients from targetted intermediate layers """

    def __init__(self, model, target_layers, reshape_transform):
        self.model = model
        self.gradients = []
        self.activations = []
        self.reshape_transform = reshape_transform
        self.handles = []
        for target_layer in target_layers:
            self.handles.append(
                target_layer.register_forward_hook(self.save_activation))
            self.handles.append(
                target_layer.register_full_backward_hook(self.save_gradient))  # <- autograd_error

    def save_activation(self, module, input, output):
        activation = output
        if self.reshape_transform is not None:
            activation = self.reshape_transform(activation)
        self.activations.append(activation.cpu().detach())

    def save_gradient(self, module, grad_input, grad_output):
        # Gradients are computed in reverse order
        grad = grad_output[0]
        if self.reshape_transform is not None:
            grad = self.reshape_transform(grad)
        self.gradients = [grad.cpu().detach()] + self.gradients

    def __call__(self, x):
        self.gradients = []
        self.activations = []
        return self.model(x)

    def release(self):
        for handle in self.handles:
            handle.remove()


# ---- pytorch_grad_cam/base_cam.py + grad_cam.py (reduced) -----------------------------------
class GradCAM:
    def __init__(self, model, target_layers, reshape_transform=None):
        self.model = model.eval()
        self.target_layers = target_layers
        self.activations_and_grads = ActivationsAndGradients(self.model, target_layers, reshape_transform)

    def get_cam_weights(self, grads):
        return np.mean(grads, axis=(2, 3))

    def forward(self, input_tensor, target_category=None):
        output = self.activations_and_grads(input_tensor)
        if target_category is None:
            target_category = np.argmax(output.cpu().data.numpy(), axis=-1)
        self.model.zero_grad()
        loss = sum(output[i, c] for i, c in enumerate(target_category))
        loss.backward(retain_graph=True)
        activations = self.activations_and_grads.activations[-1].numpy()
        grads = self.activations_and_grads.gradients[-1].numpy()
        weights = self.get_cam_weights(grads)
        cam = np.maximum((weights[:, :, None, None] * activations).sum(axis=1), 0)
        return cam

    def __call__(self, input_tensor, target_category=None):
        return self.forward(input_tensor, target_category)


# ---- torchvision.models.densenet (tiny) -------------------------------------------------------
class DenseNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.Conv2d(8, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),  # "norm5"
        )
        self.classifier = nn.Linear(16, num_classes)

    def forward(self, x):
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        out = torch.flatten(out, 1)
        out = self.classifier(out)
        return out


model = DenseNet()
target_layers = [model.features[-1]]
input_tensor = torch.randn(1, 3, 16, 16)

cam = GradCAM(model=model, target_layers=target_layers)
grayscale_cam = cam(input_tensor=input_tensor)
print("cam shape:", grayscale_cam.shape, "max:", float(grayscale_cam.max()))
print("gradient at target layer:", cam.activations_and_grads.gradients[-1].abs().sum().item())
