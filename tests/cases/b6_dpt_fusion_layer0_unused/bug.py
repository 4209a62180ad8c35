"""DPT's feature fusion stage (huggingface/transformers#30633): every DPTFeatureFusionLayer builds a
residual_layer1, but the stage calls its first layer without a residual, so layer 0's residual_layer1 never takes
part in the forward; its parameters never get a gradient ("Parameters which did not receive grad ...
neck.fusion_stage.layers.0.residual_layer1 ..." under DDP)."""
import torch
import torch.nn.functional as F
from torch import nn


class DPTPreActResidualLayer(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.convolution1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.convolution2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, hidden_state):
        residual = hidden_state
        hidden_state = self.convolution1(F.relu(hidden_state))
        return self.convolution2(F.relu(hidden_state)) + residual


class DPTFeatureFusionLayer(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.projection = nn.Conv2d(channels, channels, 1)
        self.residual_layer1 = DPTPreActResidualLayer(channels)  # <- unused_parameter
        self.residual_layer2 = DPTPreActResidualLayer(channels)

    def forward(self, hidden_state, residual=None):
        if residual is not None:
            if hidden_state.shape != residual.shape:
                residual = F.interpolate(residual, size=hidden_state.shape[2:], mode="bilinear", align_corners=False)
            hidden_state = hidden_state + self.residual_layer1(residual)
        hidden_state = self.residual_layer2(hidden_state)
        hidden_state = F.interpolate(hidden_state, scale_factor=2, mode="bilinear", align_corners=True)
        return self.projection(hidden_state)


class DPTFeatureFusionStage(nn.Module):
    def __init__(self, channels, num_layers=3):
        super().__init__()
        self.layers = nn.ModuleList(DPTFeatureFusionLayer(channels) for _ in range(num_layers))

    def forward(self, hidden_states):
        hidden_states = hidden_states[::-1]
        fused_hidden_state = None
        for hidden_state, layer in zip(hidden_states, self.layers):
            if fused_hidden_state is None:
                fused_hidden_state = layer(hidden_state)
            else:
                fused_hidden_state = layer(fused_hidden_state, hidden_state)
        return fused_hidden_state


torch.manual_seed(0)
fusion_stage = DPTFeatureFusionStage(channels=4)
head = nn.Conv2d(4, 1, 1)
optimizer = torch.optim.AdamW(list(fusion_stage.parameters()) + list(head.parameters()), lr=1e-3)
features = [torch.randn(2, 4, 8, 8), torch.randn(2, 4, 4, 4), torch.randn(2, 4, 2, 2)]
depth = torch.rand(2, 1, 16, 16)
for step in range(2):
    predicted_depth = head(fusion_stage(features))
    loss = F.l1_loss(predicted_depth, depth)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("parameters which did not receive grad:",
      [n for n, p in fusion_stage.named_parameters() if p.grad is None])
