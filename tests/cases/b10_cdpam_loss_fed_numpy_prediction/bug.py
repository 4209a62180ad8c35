"""CDPAM as a training loss for speech enhancement (pranaymanocha/PerceptualAudio#14): the packaged CDPAM.forward
expects NumPy arrays ("expected np.ndarray (got Tensor)") and turns them back into tensors, so the reporter passes
`prediction.detach().cpu().numpy()`; the distance is then computed from constants ("When I transform to numpy I am
loosing the gradient which I need for training") and backward raises (the fix rewrites forward to take tensors). A
small frozen conv encoder stands in for CDPAM's pretrained model."""
import torch
from torch import nn


class CDPAM(nn.Module):
    def __init__(self):
        super().__init__()
        self.base_encoder = nn.Sequential(nn.Conv1d(1, 8, 9, stride=4), nn.ReLU(), nn.Conv1d(8, 8, 9, stride=4))
        self.base_encoder.requires_grad_(False)

    def forward(self, wav_in, wav_out):
        wav_in = torch.from_numpy(wav_in).float().unsqueeze(1)
        wav_out = torch.from_numpy(wav_out).float().unsqueeze(1)
        return (self.base_encoder(wav_in) - self.base_encoder(wav_out)).abs().mean()


torch.manual_seed(0)
model = nn.Sequential(nn.Conv1d(1, 8, 9, padding=4), nn.ReLU(), nn.Conv1d(8, 1, 9, padding=4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = CDPAM()
clean = torch.randn(4, 1024)
noisy = clean + 0.3 * torch.randn(4, 1024)
for step in range(3):
    x, y = noisy.unsqueeze(1), clean
    prediction = model(x).squeeze(1)
    loss = loss_fn.forward(prediction.detach().cpu().numpy(), y.cpu().numpy())  # <- numpy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: cdpam loss {loss.item():.4f}")
