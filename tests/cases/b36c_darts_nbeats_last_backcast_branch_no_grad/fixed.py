"""darts' N-BEATS (unit8co/darts PR #347, "Fix/nbeats logtensorboard"): every block forks into a forecast branch and
a backcast branch, and the backcast is subtracted from the block input to feed the next block; after the last
block of the last stack that residual goes nowhere, so the last backcast_linear_layer and backcast_g never reach
the loss and keep grad None. With log_tensorboard=True the training loop logs `param.grad.data` for every
parameter and crashes on them (the fix marks that last backcast branch requires_grad_(False) and skips
parameters that do not require grad when logging)."""
import numpy as np
import torch
import torch.nn as nn


class _Block(nn.Module):
    def __init__(self, num_layers, layer_width, expansion_coefficient_dim, input_chunk_length, target_length):
        super().__init__()
        self.relu = nn.ReLU()
        self.linear_layer_stack_list = [nn.Linear(input_chunk_length, layer_width)]
        self.linear_layer_stack_list += [nn.Linear(layer_width, layer_width) for _ in range(num_layers - 1)]
        self.fc_stack = nn.ModuleList(self.linear_layer_stack_list)
        self.backcast_linear_layer = nn.Linear(layer_width, expansion_coefficient_dim)
        self.forecast_linear_layer = nn.Linear(layer_width, expansion_coefficient_dim)
        self.backcast_g = nn.Linear(expansion_coefficient_dim, input_chunk_length)
        self.forecast_g = nn.Linear(expansion_coefficient_dim, target_length)

    def forward(self, x):
        for layer in self.linear_layer_stack_list:
            x = self.relu(layer(x))
        theta_backcast = self.backcast_linear_layer(x)
        theta_forecast = self.forecast_linear_layer(x)
        return self.backcast_g(theta_backcast), self.forecast_g(theta_forecast)


class _Stack(nn.Module):
    def __init__(self, num_blocks, num_layers, layer_width, expansion_coefficient_dim, input_chunk_length,
                 target_length):
        super().__init__()
        self.target_length = target_length
        self.blocks_list = [_Block(num_layers, layer_width, expansion_coefficient_dim, input_chunk_length,
                                   target_length) for _ in range(num_blocks)]
        self.blocks = nn.ModuleList(self.blocks_list)

    def forward(self, x):
        stack_forecast = torch.zeros(x.shape[0], self.target_length)
        for block in self.blocks_list:
            x_hat, y_hat = block(x)
            stack_forecast = stack_forecast + y_hat
            x = x - x_hat
        return x, stack_forecast


class _NBEATSModule(nn.Module):
    def __init__(self, input_chunk_length, output_chunk_length, num_stacks=3, num_blocks=1, num_layers=2,
                 layer_width=32, expansion_coefficient_dim=5):
        super().__init__()
        self.target_length = output_chunk_length
        self.stacks_list = [_Stack(num_blocks, num_layers, layer_width, expansion_coefficient_dim,
                                   input_chunk_length, output_chunk_length) for _ in range(num_stacks)]
        self.stacks = nn.ModuleList(self.stacks_list)
        self.stacks_list[-1].blocks[-1].backcast_linear_layer.requires_grad_(False)
        self.stacks_list[-1].blocks[-1].backcast_g.requires_grad_(False)

    def forward(self, x):
        y = torch.zeros(x.shape[0], self.target_length)
        for stack in self.stacks_list:
            stack_residual, stack_forecast = stack(x)
            y = y + stack_forecast
            x = stack_residual
        return y


def log_histogram(tag, values, epoch):
    counts, _ = np.histogram(values, bins=10)
    return counts


torch.manual_seed(0)
model = _NBEATSModule(input_chunk_length=12, output_chunk_length=4)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()
series = torch.sin(torch.arange(200, dtype=torch.float32) / 5) + 0.1 * torch.randn(200)
windows = series.unfold(0, 16, 1)
train_x, train_y = windows[:, :12], windows[:, 12:]
log_tensorboard = True
for epoch in range(2):
    for i in range(0, len(train_x), 32):
        optimizer.zero_grad()
        output = model(train_x[i:i + 32])
        loss = criterion(output, train_y[i:i + 32])
        loss.backward()
        optimizer.step()
    if log_tensorboard:
        for name, param in model.named_parameters():
            if param.requires_grad:
                log_histogram(name + "/gradients", param.grad.data.cpu().numpy(), epoch)
    print(f"epoch {epoch}: loss {loss.item():.4f}")
